"""`while` loops (`verifidx.hlo.ops.loops`, `verifidx.analysis.loop_maps`) on scan and fori programs
exported from JAX at test time.

Three checks, each independent of the code under test:
- the trip count against running the comparison (brute force over small affine cases);
- the loop program's maps (entry output -> parameter and back, unions enumerated exactly) equal
  those of the same program unrolled in Python, where the same ops read static indices, as
  lowered HLO, optimized HLO and StableHLO (`stablehlo.while`);
- a perturbation oracle: each input element is changed in turn and the jitted program rerun;
  every output element that changes must be related to it by the maps (no missed read), for the
  lowered and the optimized HLO.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
lax = jax.lax

from tests.fuzz import fuzz_oracle as oracle  # noqa: E402  (shares no code with verifidx)
from tests.test_simplify_pinned import pinning_constraints  # noqa: E402
from verifidx.analysis.computation_maps import (  # noqa: E402
    computation_indexing,
    input_to_output,
    output_to_input,
    reported_computations,
)
from verifidx.hlo import parse_hlo  # noqa: E402
from verifidx.hlo.module import HloModule  # noqa: E402
from verifidx.hlo.ops.loops import Affine, _Compare, _first_failure, analyse_loop  # noqa: E402
from verifidx.stablehlo import parse_stablehlo  # noqa: E402

Pairs = set[tuple[int, tuple[int, ...], tuple[int, ...]]]  # (parameter, out index, in index)

# -- programs ----------------------------------------------------------------------------------


def cumsum(x: Any) -> Any:
    return lax.scan(lambda c, v: (c + v, c + v), jnp.zeros(x.shape[1:], x.dtype), x)[1]


def cumsum_unrolled(x: Any) -> Any:
    c, ys = jnp.zeros(x.shape[1:], x.dtype), []
    for k in range(x.shape[0]):
        c = c + x[k]
        ys.append(c)
    return jnp.stack(ys)


def rev_cumsum(x: Any) -> Any:
    return lax.scan(lambda c, v: (c + v, c + v), jnp.zeros(x.shape[1:], x.dtype), x,
                    reverse=True)[1]


def rev_cumsum_unrolled(x: Any) -> Any:
    c, ys = jnp.zeros(x.shape[1:], x.dtype), []
    for k in reversed(range(x.shape[0])):
        c = c + x[k]
        ys.insert(0, c)
    return jnp.stack(ys)


def rnn(xs: Any, h0: Any, w: Any, u: Any) -> Any:
    def step(h: Any, x: Any) -> Any:
        h = jnp.tanh(h @ w + x @ u)
        return h, h
    return lax.scan(step, h0, xs)


def rnn_unrolled(xs: Any, h0: Any, w: Any, u: Any) -> Any:
    h, ys = h0, []
    for k in range(xs.shape[0]):
        h = jnp.tanh(h @ w + xs[k] @ u)
        ys.append(h)
    return h, jnp.stack(ys)


def _lstm_step(carry: Any, x: Any, wx: Any, wh: Any) -> Any:
    h, c = carry
    i, f, g, o = jnp.split(x @ wx + h @ wh, 4, axis=-1)
    c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
    h = jax.nn.sigmoid(o) * jnp.tanh(c)
    return (h, c), h


def lstm(xs: Any, h0: Any, c0: Any, wx: Any, wh: Any) -> Any:
    """Batched: the maps keep each batch row to its own inputs."""
    (h, c), ys = lax.scan(lambda carry, x: _lstm_step(carry, x, wx, wh), (h0, c0), xs)
    return ys, h, c


def lstm_unrolled(xs: Any, h0: Any, c0: Any, wx: Any, wh: Any) -> Any:
    carry, ys = (h0, c0), []
    for k in range(xs.shape[0]):
        carry, y = _lstm_step(carry, xs[k], wx, wh)
        ys.append(y)
    return jnp.stack(ys), carry[0], carry[1]


def _update(a: Any, i: Any) -> Any:
    """Row 2i+1 becomes row 2i doubled plus one: a slice read and a slice written per step."""
    row = lax.dynamic_slice(a, (2 * i, 0), (1, a.shape[1]))
    return lax.dynamic_update_slice(a, row * 2.0 + 1.0, (2 * i + 1, 0))


def fori(a: Any) -> Any:
    return lax.fori_loop(0, 4, lambda i, a: _update(a, i), a)


def fori_unrolled(a: Any) -> Any:
    for i in range(4):
        a = _update(a, i)
    return a


def row_sums(x: Any) -> Any:
    """`x[i]` with a traced `i`: JAX normalises it (`i < 0 ? i + n : i`) before slicing."""
    return lax.fori_loop(0, x.shape[0], lambda i, acc: acc + x[i] * (i + 1.0),
                         jnp.zeros(x.shape[1:], x.dtype))


def row_sums_unrolled(x: Any) -> Any:
    acc = jnp.zeros(x.shape[1:], x.dtype)
    for i in range(x.shape[0]):
        acc = acc + x[i] * (i + 1.0)
    return acc


def nested(x: Any) -> Any:
    """A fori loop over a row inside a scan over rows: running sums of row sums."""
    def row(c: Any, r: Any) -> Any:
        c = c + lax.fori_loop(0, r.shape[0], lambda j, acc: acc + r[j] * 2.0, 0.0)
        return c, c
    return lax.scan(row, jnp.zeros((), x.dtype), x)[1]


def nested_unrolled(x: Any) -> Any:
    c, ys = jnp.zeros((), x.dtype), []
    for k in range(x.shape[0]):
        for j in range(x.shape[1]):
            c = c + x[k, j] * 2.0
        ys.append(c)
    return jnp.stack(ys)


def data_loop(x: Any) -> Any:
    """A while loop whose condition reads data: its trip count is unknown."""
    def body(c: Any) -> Any:
        return c[0] + 1, c[1] * 2.0, lax.dynamic_update_slice(c[2], c[1][None], (c[0] % 3, 0))
    return lax.while_loop(lambda c: c[1].sum() < 100.0, body,
                          (0, x[0], jnp.zeros_like(x)))[2]


def data_scale(x: Any, n: Any) -> Any:
    """The trip count is a parameter and the carry's index map is the identity: the output
    still depends on `n`, through how many times it is halved."""
    return lax.while_loop(lambda c: c[0].astype(x.dtype) < n, lambda c: (c[0] + 1, c[1] * 0.5),
                          (0, x))[1]


F32 = np.float32
PROGRAMS: dict[str, tuple[Callable[..., Any], Callable[..., Any] | None,
                          tuple[tuple[int, ...], ...]]] = {
    "cumsum": (cumsum, cumsum_unrolled, ((5, 3),)),
    "rev_cumsum": (rev_cumsum, rev_cumsum_unrolled, ((4, 2),)),
    "rnn": (rnn, rnn_unrolled, ((5, 3), (4,), (4, 4), (3, 4))),
    "fori": (fori, fori_unrolled, ((9, 2),)),
    "lstm": (lstm, lstm_unrolled, ((3, 2, 2), (2, 2), (2, 2), (2, 8), (2, 8))),
    "row_sums": (row_sums, row_sums_unrolled, ((4, 3),)),
    "nested": (nested, nested_unrolled, ((3, 4),)),
    "data_loop": (data_loop, None, ((3, 2),)),
    "data_scale": (data_scale, None, ((3,), ())),
}


def _inputs(shapes: Sequence[tuple[int, ...]]) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [np.asarray(rng.standard_normal(s) * 0.3 + 0.5, dtype=F32) for s in shapes]


_MODULES: dict[tuple[Callable[..., Any], bool | str], HloModule] = {}


def module(fn: Callable[..., Any], shapes: Sequence[tuple[int, ...]],
           optimized: bool | str) -> HloModule:
    """The lowered HLO (False), the optimized HLO (True) or the StableHLO ("stablehlo")."""
    key = (fn, optimized)
    if key not in _MODULES:
        lowered = jax.jit(fn).lower(*_inputs(shapes))
        if optimized == "stablehlo":
            _MODULES[key] = parse_stablehlo(lowered.as_text())
        else:
            text = lowered.compile().as_text() if optimized else lowered.as_text(dialect="hlo")
            _MODULES[key] = parse_hlo(text)
    return _MODULES[key]


def maps_of(m: HloModule, direction: str = "out2in") -> dict[int, Pairs]:
    """Entry output leaf -> every (parameter, output index, parameter index) the maps relate
    (in either direction)."""
    entry = m.entry
    numbers = {p.name: p.parameter_number for p in entry.parameters}
    found = (output_to_input if direction == "out2in" else input_to_output)(m, entry)
    assert isinstance(found, dict)
    out: dict[int, Pairs] = {}
    for o, per_param in found[entry.name].items():
        pairs: Pairs = set()
        for name, maps in per_param.items():
            for mm in maps:
                assert not mm.is_undefined, f"output {o} <- {name}: unknown indexing"
                for rt, d, res in mm.relation():
                    assert rt == (), "entry maps of these programs have no runtime variable"
                    pairs.add((numbers[name] or 0, d, res) if direction == "out2in"
                              else (numbers[name] or 0, res, d))
        out[o] = pairs
    return out


def perturbation_reads(fn: Callable[..., Any], shapes: Sequence[tuple[int, ...]]
                       ) -> dict[int, Pairs]:
    """Output leaf -> (parameter, output index, input index) where changing the input element
    changes the output element."""
    args = _inputs(shapes)
    run = jax.jit(fn)
    base = [np.asarray(y) for y in jax.tree_util.tree_leaves(run(*args))]
    out: dict[int, Pairs] = {o: set() for o in range(len(base))}
    for p, a in enumerate(args):
        for idx in itertools.product(*(range(n) for n in a.shape)):
            changed = [x.copy() for x in args]
            changed[p][idx] += F32(0.75)
            after = [np.asarray(y) for y in jax.tree_util.tree_leaves(run(*changed))]
            for o, (y0, y1) in enumerate(zip(base, after)):
                for d in zip(*np.nonzero(y0 != y1)):
                    out[o].add((p, tuple(int(v) for v in d), idx))
    return out


# -- tests -------------------------------------------------------------------------------------


def test_first_failure_matches_running_the_comparison() -> None:
    for d in ("LT", "LE", "GT", "GE", "EQ", "NE"):
        for a1, b1, a2, b2 in itertools.product(range(-3, 4), range(-6, 7), range(-2, 3),
                                                range(-4, 5)):
            cond = _Compare(d, Affine(a1, b1), Affine(a2, b2))
            ran = next((k for k in range(100) if not cond.holds(k)), None)
            assert _first_failure(cond) == ran, (d, a1, b1, a2, b2)


@pytest.mark.parametrize("optimized", [False, True, "stablehlo"])
@pytest.mark.parametrize("name", ["cumsum", "rev_cumsum", "rnn", "fori", "lstm", "row_sums"])
def test_trip_count(name: str, optimized: bool | str) -> None:
    fn, _unrolled, shapes = PROGRAMS[name]
    m = module(fn, shapes, optimized)
    loops = [i for c in m.computations.values() for i in c.instructions if i.opcode == "while"]
    assert loops
    expected = 4 if name == "fori" else shapes[0][0]
    xla_counts = []
    for loop in loops:
        assert analyse_loop(loop, m).trips == expected
        config = loop.raw_attributes.get("backend_config")
        if config and "known_trip_count" in config:  # XLA's own while-loop analysis
            xla_counts.append(int(json.loads(config)["known_trip_count"]["n"]))
    assert xla_counts == ([expected] * len(loops) if optimized is True else [])


def test_unknown_trip_count_says_why() -> None:
    fn, _u, shapes = PROGRAMS["data_loop"]
    m = module(fn, shapes, False)
    loop = next(i for c in m.computations.values() for i in c.instructions
                if i.opcode == "while")
    analysis = analyse_loop(loop, m)
    assert analysis.trips is None
    assert "condition is not a comparison" in analysis.reason


@pytest.mark.parametrize("name", ["cumsum", "rev_cumsum", "rnn", "fori", "lstm", "row_sums",
                                  "nested"])
def test_loop_maps_equal_unrolled(name: str) -> None:
    fn, unrolled, shapes = PROGRAMS[name]
    assert unrolled is not None
    want = maps_of(module(unrolled, shapes, False))
    assert not any(i.opcode == "while" for c in module(unrolled, shapes, False)
                   .computations.values() for i in c.instructions)
    want_in2out = maps_of(module(unrolled, shapes, False), "in2out")
    for optimized in (False, True, "stablehlo"):
        assert maps_of(module(fn, shapes, optimized)) == want, f"optimized={optimized}"
        assert maps_of(module(fn, shapes, optimized), "in2out") == want_in2out


@pytest.mark.parametrize("optimized", [False, True])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_no_missed_read(name: str, optimized: bool) -> None:
    fn, _u, shapes = PROGRAMS[name]
    seen = perturbation_reads(fn, shapes)
    assert any(seen.values())
    for direction in ("out2in", "in2out"):
        claimed = maps_of(module(fn, shapes, optimized), direction)
        for o, pairs in seen.items():
            missed = pairs - claimed[o]
            assert not missed, (direction, sorted(missed)[:5])


@pytest.mark.parametrize("name", ["cumsum", "row_sums"])
def test_body_and_condition_are_reported_with_the_iteration_variable(name: str) -> None:
    """Every dynamic-slice start of these bodies follows from the counter (`row_sums` through
    JAX's negative-index normalisation), so the only runtime variable left is the iteration."""
    fn, _u, shapes = PROGRAMS[name]
    m = module(fn, shapes, False)
    loop = next(i for c in m.computations.values() for i in c.instructions
                if i.opcode == "while")
    names = {c.name for c in reported_computations(m)}
    assert {loop.attributes["body"], loop.attributes["condition"]} <= names
    body = computation_indexing(m, str(loop.attributes["body"]))
    labels = {rv.label for ms in body.maps.values() for ind in ms for rv in ind.runtime}
    assert labels == {f"iteration of {loop.name}"}
    assert any(f"{shapes[0][0]} iterations" in n for n in body.notes)


def _counter_loop(ty: str, init: int, step: int, direction: str, bound: int) -> str:
    """A loop stepping an integer counter of type `ty` (the step through a fusion, the initial
    value through a call, as optimized HLO has them)."""
    return f"""HloModule m
add_step {{
  a = {ty}[] parameter(0)
  s = {ty}[] constant({step})
  ROOT r = {ty}[] add(a, s)
}}
body {{
  p = ({ty}[], f32[3]) parameter(0)
  i = {ty}[] get-tuple-element(p), index=0
  x = f32[3] get-tuple-element(p), index=1
  next = {ty}[] fusion(i), kind=kLoop, calls=add_step
  ROOT t = ({ty}[], f32[3]) tuple(next, x)
}}
cond {{
  p = ({ty}[], f32[3]) parameter(0)
  i = {ty}[] get-tuple-element(p), index=0
  n = {ty}[] constant({bound})
  ROOT c = pred[] compare(i, n), direction={direction}
}}
run {{
  s = ({ty}[], f32[3]) parameter(0)
  ROOT w = ({ty}[], f32[3]) while(s), condition=cond, body=body
}}
ENTRY e {{
  x = f32[3] parameter(0)
  i0 = {ty}[] constant({init})
  s = ({ty}[], f32[3]) tuple(i0, x)
  ROOT r = ({ty}[], f32[3]) call(s), to_apply=run
}}
"""


def _simulate(ty: str, init: int, step: int, direction: str, bound: int) -> int | None:
    """Runs the counter with wrap-around in its type; None past 1000 steps or once it wraps
    (then the trip count is not what exact arithmetic says, and must be unknown)."""
    bits = int(ty[1:])
    lo, hi = (0, 2**bits - 1) if ty[0] == "u" else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    ops = {"LT": int.__lt__, "LE": int.__le__, "GT": int.__gt__, "GE": int.__ge__,
           "NE": int.__ne__}
    i, n = init, 0
    while ops[direction](i, bound):
        if not lo <= i + step <= hi or n > 1000:
            return None
        i, n = i + step, n + 1
    return n


@pytest.mark.parametrize("ty,init,step,direction,bound", [
    ("s32", 0, 1, "LT", 7), ("s32", 10, -3, "GT", 0), ("s32", 10, -3, "GE", 1),
    ("s32", 2, 4, "LE", 18), ("s32", 0, 3, "NE", 12), ("s32", 5, 1, "LT", 5),
    ("s32", 0, 3, "NE", 13), ("s32", 0, -1, "LT", 5), ("s8", 100, 10, "LT", 127),
    ("u8", 3, 1, "GE", 0), ("u8", 250, 2, "LE", 255), ("s64", -4, 2, "LT", 3),
])
def test_trip_count_of_a_counter_loop(ty: str, init: int, step: int, direction: str,
                                      bound: int) -> None:
    """Against running the counter with its type's wrap-around: equal where it never wraps,
    unknown where it does (or never stops)."""
    m = parse_hlo(_counter_loop(ty, init, step, direction, bound))
    loop = m.computation("run").root
    analysis = analyse_loop(loop, m)
    assert analysis.trips == _simulate(ty, init, step, direction, bound), analysis.describe()
    if analysis.trips is None:
        assert analysis.reason


@pytest.mark.parametrize("name", ["cumsum", "rev_cumsum", "rnn", "fori", "lstm", "row_sums",
                                  "nested"])
def test_loop_unions_have_no_member_another_contains(name: str) -> None:
    """The entry's maps through a loop are a union: a member inside another adds nothing (the
    union itself is checked against the unrolled program above). Inclusion by enumeration."""
    fn, _u, shapes = PROGRAMS[name]
    for optimized in (False, True):
        m = module(fn, shapes, optimized)
        found = output_to_input(m, m.entry)
        assert isinstance(found, dict)
        for o, per_param in found[m.entry.name].items():
            for pname, maps in per_param.items():
                relations = [set(mm.relation()) for mm in maps]
                for i, ri in enumerate(relations):
                    for j, rj in enumerate(relations):
                        assert i == j or not ri <= rj, (name, optimized, o, pname,
                                                        str(maps[i]), str(maps[j]))


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_loop_maps_keep_no_pinned_range_variable(name: str) -> None:
    """A loop's walks pin an event's iteration to an index (`s1 - d0 in [0, 0]`); the
    simplifier substitutes such a range variable away (the union is checked against the
    unrolled program above), read from the printed maps by an independent parser."""
    fn, _u, shapes = PROGRAMS[name]
    for direction in (output_to_input, input_to_output):
        found = direction(module(fn, shapes, False), module(fn, shapes, False).entry)
        assert isinstance(found, dict)
        for per_param in found[module(fn, shapes, False).entry.name].values():
            for maps in per_param.values():
                for mm in maps:
                    assert not pinning_constraints(oracle.parse(str(mm))), str(mm)


def test_a_scan_of_fori_loops_prints_without_the_pinned_iteration() -> None:
    """The example of the docs: output row i of `nested` reads row i through the inner loop
    (the outer iteration pinned to i, substituted away) and every earlier row."""
    m = module(nested, PROGRAMS["nested"][2], False)
    found = output_to_input(m, m.entry)
    assert isinstance(found, dict)
    (maps,) = found[m.entry.name][0].values()
    assert sorted(str(mm) for mm in maps) == [
        "(d0)[s0, s1] -> (s1, s0), domain: d0 in [0, 2], s0 in [0, 3], s1 in [0, 2], "
        "-s1 + d0 in [1, 2]",
        "(d0)[s0] -> (d0, s0), domain: d0 in [0, 2], s0 in [0, 3]",
    ]
