"""`conditional` (HLO, and StableHLO's `if`/`case`): the maps of each branch, over all branches,
and the selector read by every output element, checked against XLA and jax by perturbation.

Which branch runs is a runtime value, so each case runs from several base inputs, one per
selector value (out-of-range indices too: XLA runs the last branch), and the union of what
changed is the set of reads. Two oracles, both independent of the code under test:
- the op alone on XLA's CPU backend (`test_op_oracle_xla.against_xla`): branches drawn from a
  few exact ops, array operands, the pred form (true/false computations) and the index form
  (`branch_computations`); both directions, no missed read and no claimed read that never
  happens (the selector is the one documented over-approximation, where branches agree);
- jax programs (`lax.cond`, `lax.switch`, several results, a cond inside a switch branch and
  inside a scan) as lowered HLO, optimized HLO and StableHLO, run by jax: every element whose
  change changed an output is related to it by the entry's maps, both directions; and where
  the program is made of exact ops, every related pair was seen to change.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

xla = pytest.importorskip("xla_runner")

from test_op_oracle import hlo, shp  # noqa: E402
from test_op_oracle_xla import Change, against_xla, run  # noqa: E402

from verifidx.analysis.computation_maps import (  # noqa: E402
    input_to_output,
    output_to_input,
    reported_computations,
)
from verifidx.hlo import parse_hlo  # noqa: E402
from verifidx.hlo.indexing import output_to_input as op_output_to_input  # noqa: E402
from verifidx.hlo.module import HloModule  # noqa: E402
from verifidx.stablehlo import parse_stablehlo  # noqa: E402

jax = xla.jax
jnp = jax.numpy
lax = jax.lax

# -- the op alone, on XLA ----------------------------------------------------------------------

ADD64 = "add {\n  a = f64[] parameter(0)\n  b = f64[] parameter(1)\n  ROOT c = f64[] add(a, b)\n}\n"


def branch(name: str, kind: str, n: int) -> tuple[str, list[int]]:
    """A branch computation producing f64[n] from one array operand: (its text, operand dims)."""
    bodies = {
        "negate": ([n], f"ROOT r = f64[{n}] negate(a)"),
        "reverse": ([n], f"ROOT r = f64[{n}] reverse(a), dimensions={{0}}"),
        "slice": ([2 * n + 1], f"ROOT r = f64[{n}] slice(a), slice={{[1:{2 * n + 1}:2]}}"),
        "cumsum": ([n], f"z = f64[] constant(0)\n  ROOT r = f64[{n}] reduce-window(a, z), "
                        f"window={{size={n} pad={n - 1}_0}}, to_apply=add"),
        "broadcast": ([], f"ROOT r = f64[{n}] broadcast(a), dimensions={{}}"),
        "row_sums": ([n, 2], f"z = f64[] constant(0)\n  ROOT r = f64[{n}] reduce(a, z), "
                             "dimensions={1}, to_apply=add"),
    }
    dims, body = bodies[kind]
    return f"{name} {{\n  a = {shp(dims, 'f64')} parameter(0)\n  {body}\n}}\n", dims


def flip(v: np.ndarray) -> np.ndarray:
    """A change of one element: another branch for a selector, a step for data."""
    if v.dtype == np.bool_:
        return np.logical_not(v)
    return v + 1


def step_down(v: np.ndarray) -> np.ndarray:
    return np.logical_not(v) if v.dtype == np.bool_ else v - 1


KINDS = ["negate", "reverse", "slice", "cumsum", "broadcast", "row_sums"]


@settings(max_examples=15, deadline=None)
@given(st.booleans(), st.lists(st.sampled_from(KINDS), min_size=1, max_size=3),
       st.integers(1, 4))
def test_conditional_against_xla(pred: bool, kinds: list[str], n: int) -> None:
    """Output element d reads the selector and, for every branch k, what branch k reads of
    operand k + 1 to compute d: exactly, from bases that run every branch."""
    if pred:
        kinds = (kinds * 2)[:2]
    texts, operands = zip(*(branch(f"b{k}", kind, n) for k, kind in enumerate(kinds)))
    selector = "pred" if pred else "s32"
    called = ("true_computation=b0, false_computation=b1" if pred
              else "branch_computations={" + ", ".join(f"b{k}" for k in range(len(kinds))) + "}")
    args = ", ".join(f"p{j}" for j in range(len(kinds) + 1))
    text = hlo([shp([], selector), *(shp(d, "f64") for d in operands)],
               f"f64[{n}] conditional({args}), {called}", computations=ADD64 + "".join(texts))
    rng = np.random.default_rng(n)
    data = [rng.standard_normal(d) for d in operands]
    choices = [np.array(b) for b in (True, False)] if pred else \
        [np.array(k, np.int32) for k in range(-1, len(kinds) + 1)]
    changes: list[Change] = [flip, step_down]
    agree = [0] if len(kinds) == 1 else []  # one branch: the selector changes nothing
    against_xla(text, [[c, *data] for c in choices], changes, approx_o2i=agree, approx_i2o=agree)


MALFORMED = {
    "f32 selector": ("f32[]", "conditional(p0, p1, p1), branch_computations={b0, b1}",
                     "pred[] or s32[]"),
    "pred with three branches": ("pred[]", "conditional(p0, p1, p1, p1), "
                                 "branch_computations={b0, b1, b0}", "3 branch computations"),
    "an operand short": ("s32[]", "conditional(p0, p1), branch_computations={b0, b1}",
                         "1 branch operands"),
    "a parameter that does not fit": ("s32[]", "conditional(p0, p1, p0), "
                                      "branch_computations={b0, b1}", "does not match"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_conditional_is_unknown_with_its_reason(case: str) -> None:
    selector, root, why = MALFORMED[case]
    comps = branch("b0", "negate", 3)[0] + branch("b1", "reverse", 3)[0]
    module = parse_hlo(hlo([selector, "f64[3]"], f"f64[3] {root}", computations=comps))
    for direction in (output_to_input, input_to_output):
        ci = direction(module, module.entry)
        assert isinstance(ci, dict)
        maps = [m for per in ci["e"].values() for ms in per.values() for m in ms]
        assert maps and all(m.is_undefined for m in maps)
    ind = op_output_to_input("r", module, 0)
    assert all(g[0].is_undefined for g in ind.maps) and why in ind.notes[0], ind.notes


# -- jax programs ------------------------------------------------------------------------------


def cond(p: Any, x: Any, y: Any) -> Any:
    return lax.cond(p > 0, lambda a, b: a[::-1] * 2.0 + b[0], lambda a, b: a + b[1:4].sum(),
                    x, y)


def switch(i: Any, x: Any, y: Any) -> Any:
    return lax.switch(i, [lambda a, b: a * 2.0, lambda a, b: a[::-1] + b[2],
                          lambda a, b: jnp.cumsum(a + b[:3])], x, y)


def two_results(i: Any, x: Any, y: Any) -> Any:
    return lax.switch(i, [lambda a, b: (a * 2.0, b), lambda a, b: (a[::-1], b + 1.0),
                          lambda a, b: (a - b[1:4], b[::-1])], x, y)


def nested(i: Any, x: Any, y: Any) -> Any:
    """A cond inside a switch branch, on a value the branch computes."""
    inner = lambda a, b: lax.cond(b[4] > 0, lambda u: u[::-1] * 3.0, lambda u: u + b[0],  # noqa: E731
                                  a)
    return lax.switch(i, [lambda a, b: a * 2.0, inner], x, y)


def in_scan(x: Any, y: Any) -> Any:
    """A cond per row of a scan: which branch runs depends on the data, row by row."""
    def step(c: Any, r: Any) -> Any:
        c = lax.cond(r[0] > 0, lambda: c + r, lambda: c * 2.0)
        return c, c
    return lax.scan(step, y, x)[1]


F = np.float32
PROGRAMS: dict[str, tuple[Callable[..., Any], list[Any], list[tuple[int, ...]]]] = {
    # name: (program, selector values (None: no selector argument), data shapes)
    "cond": (cond, [F(1.0), F(-1.0)], [(3,), (5,)]),
    "switch": (switch, [np.int32(k) for k in range(-1, 4)], [(3,), (5,)]),
    "two_results": (two_results, [np.int32(k) for k in range(3)], [(3,), (5,)]),
    "nested": (nested, [np.int32(k) for k in range(2)], [(3,), (5,)]),
    "in_scan": (in_scan, [None], [(3, 2), (2,)]),
}
EXACT = ["cond", "switch", "two_results"]
"""Programs of exact ops whose branches differ at every element: their maps are the reads."""

Pairs = set[tuple[int, tuple[int, ...], tuple[int, ...]]]  # (parameter, out index, in index)


def _bases(name: str) -> list[list[np.ndarray]]:
    _fn, selectors, shapes = PROGRAMS[name]
    rng = np.random.default_rng(len(name))
    out = []
    for s in selectors:
        data = [np.asarray(rng.standard_normal(d) + 0.5, F) for d in shapes]
        if name == "nested":  # both ways of the inner cond, from each selector value
            for sign in (1.0, -1.0):
                y = data[1].copy()
                y[4] = sign
                out.append([np.asarray(s), data[0], y])
            continue
        if name == "in_scan":  # rows that take either branch
            data[0][:, 0] = [1.0, -1.0, 1.0]
            out.append(data)
            out.append([-data[0], data[1]])
            continue
        out.append([np.asarray(s), *data])
    return out


def _changes(v: np.ndarray) -> list[np.ndarray]:
    if np.issubdtype(v.dtype, np.integer):
        return [v + 1, v - 1]
    return [v + F(0.75), -v - F(0.5)]


def perturbation_pairs(name: str) -> dict[int, Pairs]:
    """Output leaf -> (parameter, output index, input index) where a change of the input
    element, from some base, changed the output element."""
    fn = jax.jit(PROGRAMS[name][0])
    seen: dict[int, Pairs] = {}
    for base in _bases(name):
        before = [np.asarray(y) for y in jax.tree_util.tree_leaves(fn(*base))]
        for p, a in enumerate(base):
            for idx in itertools.product(*(range(k) for k in a.shape)):
                for new in _changes(a[idx]):
                    changed = [x.copy() for x in base]
                    changed[p][idx] = new
                    after = [np.asarray(y) for y in jax.tree_util.tree_leaves(fn(*changed))]
                    for o, (y0, y1) in enumerate(zip(before, after)):
                        for d in zip(*np.nonzero(y0 != y1)):
                            seen.setdefault(o, set()).add((p, tuple(int(v) for v in d), idx))
    return seen


_MODULES: dict[tuple[str, str], HloModule] = {}


def program(name: str, form: str) -> HloModule:
    """The lowered HLO ("hlo"), the optimized HLO ("optimized") or the StableHLO."""
    if (name, form) not in _MODULES:
        lowered = jax.jit(PROGRAMS[name][0]).lower(*_bases(name)[0])
        if form == "stablehlo":
            _MODULES[(name, form)] = parse_stablehlo(lowered.as_text())
        else:
            text = lowered.compile().as_text() if form == "optimized" else \
                lowered.as_text(dialect="hlo")
            _MODULES[(name, form)] = parse_hlo(text)
    return _MODULES[(name, form)]


def claimed(m: HloModule, direction: str) -> dict[int, Pairs]:
    """What the entry's maps relate, as (parameter, output index, input index) per output."""
    entry = m.entry
    numbers = {p.name: p.parameter_number or 0 for p in entry.parameters}
    found = (output_to_input if direction == "out2in" else input_to_output)(m, entry)
    assert isinstance(found, dict)
    out: dict[int, Pairs] = {}
    for o, per_param in found[entry.name].items():
        pairs = out.setdefault(o, set())
        for name, maps in per_param.items():
            for mm in maps:
                assert not mm.is_undefined, f"output {o} <- {name}: unknown indexing"
                for rt, d, res in mm.relation():
                    assert rt == ()
                    pairs.add((numbers[name], d, res) if direction == "out2in"
                              else (numbers[name], res, d))
    return out


FORMS = ["hlo", "optimized", "stablehlo"]


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_jax_program_against_perturbation(name: str, form: str) -> None:
    m = program(name, form)
    assert any(i.opcode == "conditional" for c in m.computations.values() for i in c.instructions)
    seen = perturbation_pairs(name)
    assert any(seen.values())
    for direction in ("out2in", "in2out"):
        maps = claimed(m, direction)
        for o, pairs in seen.items():
            assert not pairs - maps[o], (direction, sorted(pairs - maps[o])[:5])
            if name in EXACT:
                assert not maps[o] - pairs, (direction, sorted(maps[o] - pairs)[:5])


def test_branches_are_reported_computations() -> None:
    m = program("switch", "hlo")
    (conditional,) = [i for i in m.entry.instructions if i.opcode == "conditional"]
    names = {c.name for c in reported_computations(m)}
    assert set(conditional.called_computations) <= names


# -- StableHLO's `if` --------------------------------------------------------------------------

IF_MLIR = """func.func @main(%p: tensor<i1>, %x: tensor<3xf64>, %y: tensor<4xf64>)
    -> (tensor<3xf64>, tensor<3xf64>) {
  %c = stablehlo.constant dense<2.0> : tensor<3xf64>
  %r:2 = "stablehlo.if"(%p) ({
    %n = stablehlo.negate %x : tensor<3xf64>
    %m = stablehlo.multiply %n, %c : tensor<3xf64>
    stablehlo.return %m, %x : tensor<3xf64>, tensor<3xf64>
  }, {
    %s = stablehlo.slice %y [1:4] : (tensor<4xf64>) -> tensor<3xf64>
    %v = stablehlo.reverse %x, dims = [0] : tensor<3xf64>
    %w = stablehlo.add %v, %c : tensor<3xf64>
    stablehlo.return %s, %w : tensor<3xf64>, tensor<3xf64>
  }) : (tensor<i1>) -> (tensor<3xf64>, tensor<3xf64>)
  return %r#0, %r#1 : tensor<3xf64>, tensor<3xf64>
}
"""


def test_stablehlo_if_against_xla() -> None:
    """`stablehlo.if` with captured values and a captured constant, two results: the maps of
    the converted module are what XLA's run of the same text shows, both directions, exactly."""
    from jax._src.lib import xla_client as xc
    from jax.extend import backend as jax_backend

    backend = jax_backend.get_backend()
    exe = backend.compile_and_load(IF_MLIR, backend.local_devices()[:1], xc.CompileOptions())
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal(3), rng.standard_normal(4)
    seen: dict[int, Pairs] = {}
    for p in (True, False):
        base = [np.array(p), x, y]
        before = run(exe, base)
        for j, a in enumerate(base):
            for idx in np.ndindex(*a.shape):
                changed = [v.copy() for v in base]
                changed[j][idx] = flip(a[idx])
                for o, (b0, b1) in enumerate(zip(before, run(exe, changed))):
                    for d in np.argwhere(b0 != b1):
                        seen.setdefault(o, set()).add((j, tuple(int(v) for v in d), idx))
    m = parse_stablehlo(IF_MLIR)
    (conditional,) = [i for i in m.entry.instructions if i.opcode == "conditional"]
    assert conditional.attributes.keys() >= {"true_computation", "false_computation"}
    for direction in ("out2in", "in2out"):
        assert claimed(m, direction) == seen


def test_a_tuple_operand_has_maps_per_leaf_only_in_the_computation() -> None:
    """One list of maps per operand cannot say which leaf of a tuple a map reads: the per-op
    maps of such an operand are unknown with the reason, the entry's maps (leaf by leaf) are
    known (`test_jax_program_against_perturbation`)."""
    m = program("cond", "hlo")
    (conditional,) = [i for i in m.entry.instructions if i.opcode == "conditional"]
    ind = op_output_to_input(conditional, m, 0)
    assert not ind.maps[0][0].is_undefined
    assert all(g[0].is_undefined for g in ind.maps[1:])
    assert any("is a tuple: its maps are per leaf" in n for n in ind.notes)


@pytest.mark.parametrize("form", FORMS)
def test_indexing_command_has_no_unknown_map(form: str, tmp_path: Any,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """`verifidx indexing --json` of the switch program: every computation (the entry, each
    branch) is reported with known maps."""
    from verifidx.cli import main

    lowered = jax.jit(switch).lower(*_bases("switch")[0])
    text = {"hlo": lowered.as_text(dialect="hlo"), "optimized": lowered.compile().as_text(),
            "stablehlo": lowered.as_text()}[form]
    path = tmp_path / ("main.mlir" if form == "stablehlo" else "main.hlo")
    path.write_text(text)
    assert main(["indexing", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    module = parse_stablehlo(text) if form == "stablehlo" else parse_hlo(text)
    (conditional,) = [i for c in module.computations.values() for i in c.instructions
                      if i.opcode == "conditional"]
    names = {c["name"] for c in doc["computations"]}
    assert len(conditional.called_computations) == 3
    assert {*conditional.called_computations, module.entry.name} <= names
    operands = [p for c in doc["computations"] for o in c["outputs"] for p in o["operands"]]
    assert operands and all(m != "UNDEFINED" for p in operands for m in p["maps"])


def test_stablehlo_case_of_symbolic_size_keeps_the_size() -> None:
    """`jax.export` with a symbolic size `b`: the branches' results have size `b`, so the
    conditional's has too (not a fresh size of its own), and the maps are known at every `b`."""
    from jax import export

    def f(p: Any, x: Any) -> Any:
        return lax.cond(p > 0, lambda a: a * 2.0, lambda a: a + 1.0, x)

    (b,) = export.symbolic_shape("b")
    exported = export.export(jax.jit(f))(jax.ShapeDtypeStruct((), F),
                                         jax.ShapeDtypeStruct((b,), F))
    m = parse_stablehlo(exported.mlir_module())
    found = output_to_input(m, m.entry)
    assert isinstance(found, dict)
    maps = [mm for ms in found[m.entry.name][0].values() for mm in ms]
    assert maps and not any(mm.is_undefined for mm in maps)
    assert all(str(mm).startswith("(d0)<b> -> ") for mm in maps), [str(mm) for mm in maps]
