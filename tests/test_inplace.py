"""In-place hazards (`verifidx.analysis.inplace`) against an independent oracle.

The oracle knows each program by its parameters (the shifted, possibly reversed window the update
reads, the start) and simulates XLA's in-place loop with numpy: iterate over the update in
row-major order, compute the update element from the buffer as it is now, store it at the
clamped start plus the index. A hazard must come with a witness the simulation confirms (the
in-place result differs from the out-of-place one at the witness's start); `safe` and `ordered`
must agree with brute force over every start and every pair of iterations. Where jax is
installed, the programs of issue 36 run under jax.jit and eagerly: the analysis of the compiled
module finds a hazard exactly where the results differ.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verifidx.analysis.inplace import HAZARD, ORDERED, SAFE, UNKNOWN, inplace_hazards

DATA = Path(__file__).parent / "data" / "inplace"
ALIAS = "output_to_operand_aliasing={{}: (0, {})}"
ROOT = Path(__file__).parent.parent


# -- the programs and the oracle ---------------------------------------------------------------


@dataclass(frozen=True)
class Program:
    """dynamic-update-slice(x, reverse?(x[lo : lo + size]), start) on an array of shape `dims`,
    fused and run in place; `start` holds constants, or None for a start from a parameter."""

    dims: tuple[int, ...]
    lo: tuple[int, ...]
    size: tuple[int, ...]
    reverse: tuple[int, ...] = ()
    start: tuple[int, ...] | None = None

    def hlo(self) -> str:
        r = len(self.dims)
        layout = "{" + ",".join(str(d) for d in reversed(range(r))) + "}"
        shape = f"s32[{','.join(map(str, self.dims))}]{layout}"
        ushape = f"s32[{','.join(map(str, self.size))}]{layout}"
        window = ", ".join(f"[{a}:{a + n}]" for a, n in zip(self.lo, self.size))
        body = [f"  %p0 = {shape} parameter(0)",
                f"  %window = {ushape} slice(%p0), slice={{{window}}}"]
        update = "%window"
        if self.reverse:
            dims = ",".join(map(str, self.reverse))
            body.append(f"  %flipped = {ushape} reverse(%window), dimensions={{{dims}}}")
            update = "%flipped"
        starts = []
        for k in range(r):
            if self.start is None:
                body.append(f"  %s{k} = s32[] parameter({k + 1})")
            else:
                body.append(f"  %s{k} = s32[] constant({self.start[k]})")
            starts.append(f"%s{k}")
        body.append(f"  ROOT %dus = {shape} dynamic-update-slice(%p0, {update}, "
                    f"{', '.join(starts)})")
        params = [f"p0: {shape}"] + ([f"s{k}: s32[]" for k in range(r)]
                                     if self.start is None else [])
        entry = [f"  %x = {shape} parameter(0)", f"  %copy = {shape} copy(%x)"]
        operands = ["%copy"]
        if self.start is None:
            for k in range(r):
                entry.append(f"  %e{k} = s32[] parameter({k + 1})")
                operands.append(f"%e{k}")
        entry.append(f"  ROOT %f = {shape} fusion({', '.join(operands)}), kind=kLoop, "
                     f"calls=%fused")
        return "\n".join(["HloModule gen", "",
                          f"%fused ({', '.join(params)}) -> {shape} {{", *body, "}", "",
                          f"ENTRY %main ({', '.join(params)}) -> {shape} {{", *entry, "}", ""])

    def starts(self) -> list[tuple[int, ...]]:
        """Every clamped start the program can use."""
        if self.start is not None:
            return [self.clamp(self.start)]
        return list(itertools.product(*(range(n - u + 1) for n, u in zip(self.dims, self.size))))

    def clamp(self, s: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(min(max(v, 0), n - u) for v, n, u in zip(s, self.dims, self.size))

    def source(self, u: tuple[int, ...]) -> tuple[int, ...]:
        """The element of x that update element u copies."""
        return tuple(a + (n - 1 - i if k in self.reverse else i)
                     for k, (a, n, i) in enumerate(zip(self.lo, self.size, u)))

    def iterations(self) -> list[tuple[int, ...]]:
        return list(itertools.product(*(range(n) for n in self.size)))  # row-major

    def run(self, x: np.ndarray, s: tuple[int, ...], in_place: bool) -> np.ndarray:
        s = self.clamp(s)
        buf = x.copy()
        for u in self.iterations():
            read = buf if in_place else x
            buf[tuple(a + i for a, i in zip(s, u))] = read[self.source(u)]
        return buf

    def brute_status(self) -> str:
        """hazard: some iteration reads what an earlier one wrote; ordered: only later ones
        write what it reads; safe: no other iteration writes it (over every start)."""
        status = SAFE
        its = self.iterations()
        for s in self.starts():
            for u in its:
                for w in its:
                    if w != u and tuple(a + i for a, i in zip(s, w)) == self.source(u):
                        if w < u:
                            return HAZARD
                        status = ORDERED
        return status


def _distinct(dims: tuple[int, ...]) -> np.ndarray:
    return np.arange(int(np.prod(dims)), dtype=np.int32).reshape(dims) + 100


def check_verdict(p: Program) -> str:
    """The analysis of `p` against the oracle; returns the status."""
    found = inplace_hazards(p.hlo())
    assert len(found) == 1
    f = found[0]
    assert f.aliased == ((0, 0),)
    assert f.status == p.brute_status(), (p, f.to_text())
    if f.status == HAZARD:
        h = f.hazard
        assert h is not None
        # a start with one possible value is folded into the maps: any operand value gives it
        s = p.start if p.start is not None else tuple(h.operands.get(k + 1, 0)
                                                     for k in range(len(p.dims)))
        c = p.clamp(s)
        assert h.written_at < h.read_at
        assert p.source(h.read_at) == h.element
        assert tuple(a + i for a, i in zip(c, h.written_at)) == h.element
        x = _distinct(p.dims)
        assert not np.array_equal(p.run(x, s, True), p.run(x, s, False)), (p, h)
    else:
        x = _distinct(p.dims)
        for s in p.starts():
            assert np.array_equal(p.run(x, s, True), p.run(x, s, False)), (p, s)
    return f.status


# -- fixed programs ----------------------------------------------------------------------------


@pytest.mark.parametrize(("program", "status"), [
    (Program((4,), (0,), (3,), start=(1,)), HAZARD),          # issue 36: shifted right
    (Program((4,), (1,), (3,), start=(0,)), ORDERED),         # shifted left: reads ahead
    (Program((4,), (0,), (3,), start=(0,)), SAFE),            # each element onto itself
    (Program((8,), (0,), (3,), start=(5,)), SAFE),            # disjoint windows
    (Program((4,), (0,), (3,)), HAZARD),                      # start from a parameter
    (Program((4,), (1,), (3,), (0,), start=(0,)), HAZARD),    # reversed: issue 36's reverse
    (Program((4, 3), (0, 0), (2, 3), start=(2, 0)), SAFE),    # rows onto other rows
    (Program((4, 3), (0, 0), (3, 3), start=(1, 0)), HAZARD),  # rows shifted down
    (Program((4, 3), (1, 0), (3, 3), start=(0, 0)), ORDERED),  # rows shifted up
    (Program((3, 4), (0, 0), (3, 3), start=(0, 1)), HAZARD),  # columns shifted right
    (Program((3, 4), (0, 0), (3, 3), start=(0, 9)), HAZARD),  # start past the end: clamped
    (Program((3, 3), (0, 1), (2, 2), start=(1, 0)), HAZARD),  # row-major order meets it ...
    (Program((3, 3), (1, 0), (2, 2), start=(0, 1)), ORDERED),  # ... column-major would here
])
def test_fixed_programs(program: Program, status: str) -> None:
    assert check_verdict(program) == status


@st.composite
def programs(draw: st.DrawFn) -> Program:
    rank = draw(st.integers(1, 2))
    dims = tuple(draw(st.integers(1, 5)) for _ in range(rank))
    size = tuple(draw(st.integers(1, n)) for n in dims)
    lo = tuple(draw(st.integers(0, n - u)) for n, u in zip(dims, size))
    rev = tuple(k for k in range(rank) if draw(st.booleans()))
    start = None if draw(st.booleans()) else tuple(
        draw(st.integers(-2, n + 1)) for n in dims)
    return Program(dims, lo, size, rev, start)


@settings(deadline=None)
@given(programs())
def test_shifted_windows_against_the_simulation(program: Program) -> None:
    check_verdict(program)


# -- the compiled programs of issue 36 ---------------------------------------------------------

COMPILED = {"shift_right": HAZARD, "shift_left": ORDERED, "shift_param": HAZARD,
            "reverse": HAZARD, "rows": SAFE, "roll": HAZARD, "dynamic_slice": HAZARD,
            "down_left": HAZARD, "up_right": ORDERED}


@pytest.mark.parametrize("name", sorted(COMPILED))
def test_compiled_modules(name: str) -> None:
    """What XLA compiled (jax 0.10.2, CPU), kept as text: the verdict, and for a hazard the
    witness against numpy's in-place loop of the program the module computes."""
    found = inplace_hazards((DATA / f"{name}.opt.hlo").read_text())
    assert [f.status for f in found] == [COMPILED[name]]


# -- output_to_operand_aliasing and what is not modelled ---------------------------------------

LOOP = """HloModule loop

%body (p0: s32[6], p1: s32[6]) -> s32[6] {
  %p0 = s32[6]{0} parameter(0)
  %p1 = s32[6]{0} parameter(1)
  %r = s32[6]{0} OP
  ROOT %out = s32[6]{0} add(%r, %p1)
}

ENTRY %main (x: s32[6], y: s32[6]) -> s32[6] {
  %x = s32[6]{0} parameter(0)
  %y = s32[6]{0} parameter(1)
  ROOT %f = s32[6]{0} fusion(%x, %y), kind=kLoop, calls=%body, ALIAS
}
"""


def _loop_in_place(read: list[int]) -> tuple[list[int], list[int]]:
    """numpy's loop fusion writing out[d] = x[read[d]] + y[d] into x's buffer, and the
    out-of-place result."""
    x, y = np.arange(6) * 10, np.arange(6)
    buf = x.copy()
    for d in range(6):
        buf[d] = buf[read[d]] + y[d]
    return list(buf), list(x[read] + y)


@pytest.mark.parametrize(("op", "read", "status"), [
    ("reverse(%p0), dimensions={0}", [5, 4, 3, 2, 1, 0], HAZARD),
    ("copy(%p0)", [0, 1, 2, 3, 4, 5], SAFE),
    ("slice(%p0), slice={[0:6]}", [0, 1, 2, 3, 4, 5], SAFE),
])
def test_output_to_operand_aliasing(op: str, read: list[int], status: str) -> None:
    found = inplace_hazards(LOOP.replace("OP", op).replace("ALIAS", ALIAS))
    assert [(f.kind, f.status) for f in found] == [("output_to_operand_aliasing", status)]
    in_place, out_of_place = _loop_in_place(read)
    assert (in_place != out_of_place) == (status == HAZARD)
    if status == HAZARD:
        h = found[0].hazard
        assert h is not None and h.written_at < h.read_at
        assert read[h.read_at[0]] == h.element[0] == h.written_at[0]


CUSTOM_CALL = f"""HloModule cc
ENTRY %main (x: f32[4]) -> f32[4] {{
  %x = f32[4]{{0}} parameter(0)
  ROOT %c = f32[4]{{0}} custom-call(%x), custom_call_target="foo", {ALIAS}
}}
"""


def test_a_custom_call_with_aliasing_is_unknown() -> None:
    [f] = inplace_hazards(CUSTOM_CALL)
    assert f.status == UNKNOWN and "not modelled" in f.reason


def test_a_start_reading_the_buffer_is_unknown() -> None:
    text = Program((4,), (0,), (3,), start=(1,)).hlo().replace(
        "%s0 = s32[] constant(1)",
        "%e = s32[1]{0} slice(%p0), slice={[0:1]}\n  %s0 = s32[] reshape(%e)")
    [f] = inplace_hazards(text)
    assert f.status == UNKNOWN and "start index reads the aliased buffer" in f.reason


def test_a_fusion_with_another_output_is_unknown() -> None:
    text = """HloModule mof

%body (p0: s32[4]) -> (s32[4], s32[4]) {
  %p0 = s32[4]{0} parameter(0)
  %w = s32[2]{0} slice(%p0), slice={[0:2]}
  %c = s32[] constant(1)
  %dus = s32[4]{0} dynamic-update-slice(%p0, %w, %c)
  %neg = s32[4]{0} negate(%p0)
  ROOT %t = (s32[4]{0}, s32[4]{0}) tuple(%dus, %neg)
}

ENTRY %main (x: s32[4]) -> (s32[4], s32[4]) {
  %x = s32[4]{0} parameter(0)
  %copy = s32[4]{0} copy(%x)
  ROOT %f = (s32[4]{0}, s32[4]{0}) fusion(%copy), kind=kLoop, calls=%body
}
"""
    [f] = inplace_hazards(text)
    assert f.status == UNKNOWN and "loop emitter" in f.reason


def test_two_in_place_outputs_in_one_loop() -> None:
    """Two dynamic-update-slices in one loop: the second reads, at the same iteration, what the
    first has just written into its buffer."""
    text = """HloModule two

%body (p0: s32[4], p1: s32[4]) -> (s32[4], s32[4]) {
  %p0 = s32[4]{0} parameter(0)
  %p1 = s32[4]{0} parameter(1)
  %c = s32[] constant(0)
  %a = s32[2]{0} slice(%p1), slice={[2:4]}
  %b = s32[2]{0} slice(%p0), slice={[0:2]}
  %d0 = s32[4]{0} dynamic-update-slice(%p0, %a, %c)
  %d1 = s32[4]{0} dynamic-update-slice(%p1, %b, %c)
  ROOT %t = (s32[4]{0}, s32[4]{0}) tuple(%d0, %d1)
}

ENTRY %main (x: s32[4], y: s32[4]) -> (s32[4], s32[4]) {
  %x = s32[4]{0} parameter(0)
  %y = s32[4]{0} parameter(1)
  %cx = s32[4]{0} copy(%x)
  %cy = s32[4]{0} copy(%y)
  ROOT %f = (s32[4]{0}, s32[4]{0}) fusion(%cx, %cy), kind=kLoop, calls=%body
}
"""
    [f] = inplace_hazards(text)
    assert f.status == HAZARD
    h = f.hazard
    assert h is not None
    assert (h.reader, h.writer, h.parameter) == ("d1", "d0", 0)
    assert h.read_at == h.written_at and h.element == h.read_at
    # the loop, simulated: iteration u stores x[u] = y[2 + u], then y[u] = x[u] (now overwritten)
    x, y = [1, 2, 3, 4], [5, 6, 7, 8]
    bx, by = list(x), list(y)
    for u in range(2):
        bx[u] = by[2 + u]
        by[u] = bx[u]
    assert by[h.read_at[0]] != x[h.read_at[0]]


# -- the command line --------------------------------------------------------------------------


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), VERIFIDX_PURE_PYTHON="1")
    return subprocess.run([sys.executable, "-m", "verifidx.cli", *args], capture_output=True,
                          text=True, env=env, timeout=120)


def test_cli_text_json_and_exit_codes(tmp_path: Path) -> None:
    bad = _cli("indexing", str(DATA / "shift_right.opt.hlo"), "--inplace")
    assert bad.returncode == 1, bad.stderr
    assert "hazard: parameter 0 element (1) is written at iteration (0, 0)" in bad.stdout
    assert bad.stderr.startswith(f"error: {DATA / 'shift_right.opt.hlo'}:16:3: ")
    good = _cli("indexing", str(DATA / "rows.opt.hlo"), "--inplace", "--json")
    assert good.returncode == 0, good.stderr
    doc = json.loads(good.stdout)
    assert [f["status"] for f in doc["fusions"]] == [SAFE]
    cc = tmp_path / "cc.hlo"
    cc.write_text(CUSTOM_CALL)
    assert _cli("indexing", str(cc), "--inplace").returncode == 3
    broken = tmp_path / "broken.hlo"
    broken.write_text("HloModule m\nENTRY %main {\n  %x = f32[4]{0} parameter(\n}\n")
    err = _cli("indexing", str(broken), "--inplace")
    assert err.returncode not in (0, 1, 3) and "Traceback" not in err.stderr
    assert err.stderr.count("\n") == 1 and "broken.hlo:" in err.stderr
    usage = _cli("indexing", str(cc), "--inplace", "--direction", "in2out")
    assert usage.returncode not in (0, 1, 3) and "--inplace" in usage.stderr


# -- confirmed by execution --------------------------------------------------------------------


def _jax_programs():  # type: ignore[no-untyped-def]
    """name -> (function, input size, scalar arguments): issue 36's programs and two more
    miscompiles of the same class (a roll, a dynamic slice, shifted into themselves)."""
    import jax.numpy as jnp
    from jax import lax
    return {
        "shift_right": (lambda x: lax.dynamic_update_slice(x, x[:3], (1,)).reshape(4, 1), 4, ()),
        "shift_left": (lambda x: lax.dynamic_update_slice(x, x[1:], (0,)).reshape(4, 1), 4, ()),
        "shift_param": (lambda x, s: lax.dynamic_update_slice(x, x[:3], (s,)).reshape(4, 1),
                        4, (1,)),
        "reverse": (lambda x: lax.dynamic_update_slice(x, x[::-1][:3], (1,)).reshape(4, 1),
                    4, ()),
        "rows": (lambda x: lax.dynamic_update_slice(
            x.reshape(2, 2), x.reshape(2, 2)[0:1], (1, 0)).reshape(2, 2, 1), 4, ()),
        "roll": (lambda x: lax.dynamic_update_slice(x, jnp.roll(x, 1)[:6], (2,)).reshape(8, 1),
                 8, ()),
        "dynamic_slice": (lambda x, s: lax.dynamic_update_slice(
            x, lax.dynamic_slice(x, (s,), (4,)) * 2, (s + 1,)).reshape(8, 1), 8, (1,)),
        # the loop order: row-major sees the first conflict, column-major would see the second
        "down_left": (lambda x: lax.dynamic_update_slice(
            x.reshape(3, 3), x.reshape(3, 3)[0:2, 1:3], (1, 0)).reshape(3, 3, 1), 9, ()),
        "up_right": (lambda x: lax.dynamic_update_slice(
            x.reshape(3, 3), x.reshape(3, 3)[1:3, 0:2], (0, 1)).reshape(3, 3, 1), 9, ()),
    }


def _run_jax(f, x, scalars):  # type: ignore[no-untyped-def]
    import jax
    import jax.numpy as jnp
    args = (x, *(jnp.int32(s) for s in scalars))
    compiled = jax.jit(f).lower(*args).compile()
    jitted = np.asarray(compiled(*args))
    with jax.disable_jit():
        eager = np.asarray(f(*args))
    return compiled.as_text(), jitted, eager


@pytest.mark.parametrize("name", sorted(COMPILED))
def test_hazard_iff_jit_is_wrong(name: str) -> None:
    """The module XLA compiles now, analysed, against jax.jit's result and eager execution
    on distinct inputs: a hazard exactly where they differ (and, with a start from a parameter,
    at the witness's start)."""
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    pytest.importorskip("jax")
    import jax.numpy as jnp
    f, size, scalars = _jax_programs()[name]
    x = jnp.arange(size, dtype=jnp.int32) + 10
    text, jitted, eager = _run_jax(f, x, scalars)
    [found] = inplace_hazards(text)
    assert found.status == COMPILED[name]
    assert (found.status == HAZARD) == (not np.array_equal(jitted, eager))
    if found.hazard is not None and found.hazard.operands:
        s = tuple(found.hazard.operands.values())
        _text, jitted, eager = _run_jax(f, x, s)
        assert not np.array_equal(jitted, eager)


@pytest.mark.parametrize(("lo", "size", "start"), [
    (0, 2, 1), (0, 2, 2), (2, 2, 0), (1, 3, 1), (0, 4, 0), (1, 2, 0), (0, 3, 3), (0, 3, 2),
    (2, 3, 0)])
def test_shifted_slices_under_jit(lo: int, size: int, start: int) -> None:
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    pytest.importorskip("jax")
    import jax.numpy as jnp
    from jax import lax

    def f(x):  # type: ignore[no-untyped-def]
        return lax.dynamic_update_slice(x, x[lo:lo + size], (start,)).reshape(5, 1)

    x = jnp.arange(5, dtype=jnp.int32) + 10
    text, jitted, eager = _run_jax(f, x, ())
    found = inplace_hazards(text)
    wrong = not np.array_equal(jitted, eager)
    assert wrong == any(f.status == HAZARD for f in found), (text, jitted, eager)


def test_the_same_buffer_passed_twice() -> None:
    """The caller passes the overwritten value as a second operand too: reads through that
    parameter read the same buffer."""
    text = """HloModule twice

%body (p0: s32[4], p1: s32[4]) -> s32[4] {
  %p0 = s32[4]{0} parameter(0)
  %p1 = s32[4]{0} parameter(1)
  %w = s32[3]{0} slice(%p1), slice={[0:3]}
  %c = s32[] constant(1)
  ROOT %dus = s32[4]{0} dynamic-update-slice(%p0, %w, %c)
}

ENTRY %main (x: s32[4]) -> s32[4] {
  %x = s32[4]{0} parameter(0)
  %copy = s32[4]{0} copy(%x)
  ROOT %f = s32[4]{0} fusion(%copy, OTHER), kind=kLoop, calls=%body
}
"""
    [same] = inplace_hazards(text.replace("OTHER", "%copy"))
    assert same.status == HAZARD and same.hazard is not None
    assert same.hazard.element == (1,) and same.hazard.written_at == (0,)
    assert Program((4,), (0,), (3,), start=(1,)).brute_status() == HAZARD
    [other] = inplace_hazards(text.replace("OTHER", "%x"))
    assert other.status == SAFE


def test_loops_and_caches_are_safe() -> None:
    """In-place updates that XLA compiles right: a scan stacking its outputs (in a loop body), a
    cache written at a parameter position, a loop writing b[i] from b[i - 1]."""
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    from jax import lax

    def scan_stack(x):  # type: ignore[no-untyped-def]
        return lax.scan(lambda c, xi: (c * 0.5 + xi, c * 2), jnp.zeros(8), x)[1]

    def cache(c, new, pos):  # type: ignore[no-untyped-def]
        return lax.dynamic_update_slice(c, new, (pos, 0))

    def carry(x):  # type: ignore[no-untyped-def]
        return lax.fori_loop(1, 8, lambda i, b: lax.dynamic_update_slice(
            b, lax.dynamic_slice(b, (i - 1,), (1,)) + 1, (i,)), x)

    for f, args in [(scan_stack, (jnp.ones((5, 8)),)),
                    (cache, (jnp.zeros((16, 4)), jnp.ones((2, 4)), jnp.int32(3))),
                    (carry, (jnp.arange(8.0),))]:
        compiled = jax.jit(f).lower(*args).compile()
        found = inplace_hazards(compiled.as_text())
        assert [x.status for x in found] == [SAFE], [x.to_text() for x in found]
        jitted = np.asarray(compiled(*args))
        with jax.disable_jit():
            assert np.allclose(jitted, np.asarray(f(*args)))


def test_an_update_from_another_operand_is_safe_without_a_query() -> None:
    text = Program((4,), (0,), (3,), start=(1,)).hlo().replace(
        "%window = s32[3]{0} slice(%p0), slice={[0:3]}", "%window = s32[3]{0} parameter(1)"
    ).replace("(p0: s32[4]{0})", "(p0: s32[4]{0}, u: s32[3]{0})").replace(
        "%copy = s32[4]{0} copy(%x)", "%copy = s32[4]{0} copy(%x)\n  %u = s32[3]{0} parameter(1)"
    ).replace("fusion(%copy)", "fusion(%copy, %u)")
    [f] = inplace_hazards(text)
    assert (f.status, f.queries) == (SAFE, 0)


@pytest.mark.parametrize("parts", [((3, 4), (0, 2)), ((2, 4), (0, 1)), ((0, 1), (1, 3))])
def test_an_update_concatenated_from_windows(parts: tuple[tuple[int, int], ...]) -> None:
    """The update joins windows of the operand (a concatenate's maps each cover part of the
    update); written at 1 in a buffer of 4: against numpy's in-place loop on distinct values."""
    pieces = [f"%w{k} = s32[{b - a}]{{0}} slice(%p0), slice={{[{a}:{b}]}}"
              for k, (a, b) in enumerate(parts)]
    text = Program((4,), (0,), (3,), start=(1,)).hlo().replace(
        "%window = s32[3]{0} slice(%p0), slice={[0:3]}",
        "\n  ".join(pieces) + "\n  %window = s32[3]{0} concatenate(%w0, %w1), dimensions={0}")
    source = [i for a, b in parts for i in range(a, b)]
    x = list(range(10, 14))
    buf = list(x)
    for u in range(3):
        buf[1 + u] = buf[source[u]]
    wrong = buf != [x[0]] + [x[i] for i in source]
    earlier = any(source[u] == 1 + w for u in range(3) for w in range(u))
    [f] = inplace_hazards(text)
    assert wrong == earlier == (f.status == HAZARD), f.to_text()
