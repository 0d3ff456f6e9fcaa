"""Translation validation (`verifidx.clients.translation`, `verifidx validate BEFORE AFTER`).

Oracles: a small interpreter of the HLO ops these programs use, written here (numpy, HLO's
semantics: starts clamped, s32 wrapping), runs both programs at a counterexample with an
input of distinct values, so the output element names the element it copies: a `differ` must
show there. For JAX programs the oracle is execution: eager (`jax.disable_jit`, right per the
issue) against `jax.jit` (the compiled AFTER), over a grid of scalar values; where they
differ the verdict must not be `same`.
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from verifidx.clients.translation import (
    DIFFER,
    FEWER,
    SAME,
    UNKNOWN,
    SignatureError,
    validate_programs,
)
from verifidx.hlo.parser import parse_hlo


def module(body: str, params: str = "") -> str:
    return f"HloModule m\nENTRY e {{\n{params}{body}\n}}"


P3 = "  p0 = f32[8] parameter(0)\n  p1 = s32[] parameter(1)\n  p2 = s32[] parameter(2)\n"

NESTED = module("""  a = f32[4] dynamic-slice(p0, p1), dynamic_slice_sizes={4}
  ROOT b = f32[2] dynamic-slice(a, p2), dynamic_slice_sizes={2}""", P3)
NESTED_FOLDED = module("""  s = s32[] add(p1, p2)
  ROOT b = f32[2] dynamic-slice(p0, s), dynamic_slice_sizes={2}""", P3)
"""The fold of nested dynamic slices without the inner clamp (XLA's miscompile class)."""


# -- the oracle: HLO's semantics for the ops used here -------------------------------------------


def run(text: str, args: list[object]) -> np.ndarray:
    m = parse_hlo(text)
    env: dict[str, object] = {}
    for inst in m.entry.instructions:
        ops = [env[n] for n in inst.operands]
        op, t = inst.opcode, inst.shape.element_type
        if op == "parameter":
            v = args[inst.parameter_number or 0]
        elif op == "constant":
            v = inst.literal_value
        elif op in ("add", "subtract", "multiply"):
            a, b = int(ops[0]), int(ops[1])  # type: ignore[call-overload]
            r = a + b if op == "add" else a - b if op == "subtract" else a * b
            v = (r + 2**31) % 2**32 - 2**31 if t == "s32" else r
        elif op == "compare":
            d = inst.comparison_direction
            a, b = ops
            v = {"LT": a < b, "LE": a <= b, "GT": a > b, "GE": a >= b,  # type: ignore[operator]
                 "EQ": a == b, "NE": a != b}[d or "EQ"]
        elif op == "select":
            v = np.where(ops[0], ops[1], ops[2]) if np.ndim(ops[1]) else \
                (ops[1] if ops[0] else ops[2])
        elif op == "clamp":
            v = min(max(ops[1], ops[0]), ops[2])  # type: ignore[type-var]
        elif op == "dynamic-slice":
            x = np.asarray(ops[0])
            sizes = inst.dynamic_slice_sizes or ()
            starts = [min(max(int(s), 0), n - k)  # type: ignore[call-overload]
                      for s, n, k in zip(ops[1:], x.shape, sizes)]
            v = x[tuple(slice(s, s + k) for s, k in zip(starts, sizes))]
        elif op == "slice":
            v = np.asarray(ops[0])[tuple(slice(d.start, d.limit, d.stride)
                                         for d in inst.slice_dims or ())]
        elif op == "transpose":
            v = np.transpose(np.asarray(ops[0]), inst.dimensions)
        elif op == "concatenate":
            v = np.concatenate([np.asarray(o) for o in ops], axis=(inst.dimensions or (0,))[0])
        elif op == "broadcast":
            v = np.broadcast_to(ops[0], inst.shape.dims)
        elif op == "copy":
            v = np.array(ops[0])
        elif op == "negate":
            v = -ops[0]  # type: ignore[operator]
        elif op == "reverse":
            v = np.flip(np.asarray(ops[0]), axis=inst.dimensions)
        elif op == "pad":
            cfg = inst.padding or ()
            v = np.pad(np.asarray(ops[0]), [(d.low, d.high) for d in cfg],
                       constant_values=ops[1])
        else:
            raise NotImplementedError(op)
        env[inst.name] = v
    return np.asarray(env[m.entry.root.name])


def check_counterexample(before: str, after: str, result) -> None:  # type: ignore[no-untyped-def]
    """Every counterexample shows in execution: inputs of distinct nonzero values (parameter
    k holds 1 + 100 * k + its element's flat position), the scalars at the counterexample's
    values; the program that reads the element copies its value to the point, the other does
    not."""
    m = parse_hlo(before)
    found = 0
    for pv in result.pairs:
        cx = pv.counterexample
        if pv.verdict != DIFFER:
            assert cx is None
            continue
        found += 1
        args: list[object] = []
        for q in sorted(m.entry.parameters, key=lambda q: q.parameter_number or 0):
            if q.shape.rank:
                n = int(np.prod(q.shape.dims))
                args.append((1 + 100 * (q.parameter_number or 0) +
                             np.arange(n, dtype=np.float64)).reshape(q.shape.dims))
            else:
                args.append(cx.values.get(f"arg{q.parameter_number}", 0))  # unread: any
        want = 1 + 100 * cx.parameter + int(np.ravel_multi_index(
            cx.element, m.entry.parameters[cx.parameter].shape.dims))
        reader, other = (before, after) if cx.read_by == "before" else (after, before)
        assert run(reader, args)[cx.point] == want
        assert run(other, args)[cx.point] != want
    assert found


# -- programs ------------------------------------------------------------------------------------


def test_nested_dynamic_slices_folded_without_the_inner_clamp_differ() -> None:
    result = validate_programs(NESTED, NESTED_FOLDED)
    assert result.verdict() == DIFFER
    pair = next(p for p in result.pairs if p.parameter == 0)
    cx = pair.counterexample
    assert pair.verdict == DIFFER and cx is not None
    # the difference needs a start the inner slice clamps: p1 outside [0, 4] or p2 outside
    # [0, 2] (inside both, the fold is right)
    assert not (0 <= cx.values["arg1"] <= 4 and 0 <= cx.values["arg2"] <= 2), cx
    check_counterexample(NESTED, NESTED_FOLDED, result)
    # the scalars are read the same way by both
    assert {p.parameter: p.verdict for p in result.pairs if p.parameter} == {1: SAME, 2: SAME}


def test_a_dropped_negative_index_normalisation_differs() -> None:
    before = module("""  z = s32[] constant(0)
  lt = pred[] compare(p1, z), direction=LT
  c8 = s32[] constant(8)
  w = s32[] add(p1, c8)
  s = s32[] select(lt, w, p1)
  ROOT b = f32[2] dynamic-slice(p0, s), dynamic_slice_sizes={2}""", P3)
    after = module("  ROOT b = f32[2] dynamic-slice(p0, p1), dynamic_slice_sizes={2}", P3)
    result = validate_programs(before, after)
    cx = result.pairs[0].counterexample
    assert result.pairs[0].verdict == DIFFER and cx is not None and cx.values["arg1"] < 0
    check_counterexample(before, after, result)


def test_identical_programs_are_the_same_and_a_copy_is_value_equality() -> None:
    result = validate_programs(NESTED, NESTED)
    assert result.verdict() == SAME
    assert [p.value_equality for p in result.pairs] == [True, False, False]


@pytest.mark.parametrize("before, after", [
    (module("""  t = f32[4,6] transpose(p0), dimensions={1,0}
  ROOT s = f32[2,6] slice(t), slice={[1:3], [0:6]}""", "  p0 = f32[6,4] parameter(0)\n"),
     module("""  s = f32[6,2] slice(p0), slice={[0:6], [1:3]}
  ROOT t = f32[2,6] transpose(s), dimensions={1,0}""", "  p0 = f32[6,4] parameter(0)\n")),
    (module("""  c = s32[] constant(3)
  ROOT d = f32[2] dynamic-slice(p0, c), dynamic_slice_sizes={2}""", P3),
     module("  ROOT s = f32[2] slice(p0), slice={[3:5]}", P3)),
    (module("  ROOT d = f32[2] dynamic-slice(p0, p1), dynamic_slice_sizes={2}", P3),
     module("""  z = s32[] constant(0)
  six = s32[] constant(6)
  c = s32[] clamp(z, p1, six)
  ROOT d = f32[2] dynamic-slice(p0, c), dynamic_slice_sizes={2}""", P3)),
])
def test_legal_rewrites_are_the_same(before: str, after: str) -> None:
    result = validate_programs(before, after)
    assert result.verdict() == SAME, result.to_json()
    assert result.pairs[0].value_equality


def test_a_read_that_does_not_reach_the_value_dropped_is_fewer_reads() -> None:
    params = "  p0 = f32[8] parameter(0)\n  p1 = f32[8] parameter(1)\n"
    before = module("""  t = pred[] constant(true)
  b = pred[8] broadcast(t), dimensions={}
  ROOT s = f32[8] select(b, p0, p1)""", params)
    after = module("  ROOT c = f32[8] copy(p0)", params)
    result = validate_programs(before, after)
    verdicts = {p.parameter: p.verdict for p in result.pairs}
    assert verdicts == {0: SAME, 1: FEWER}, result.to_json()
    assert result.verdict() == FEWER


def _shifted_start(params: str, start: str) -> tuple[str, str]:
    before = module(start + "  ROOT d = f32[2] dynamic-slice(p0, r), "
                    "dynamic_slice_sizes={2}", params)
    after = module(start + "  one = s32[] constant(1)\n  r1 = s32[] add(r, one)\n"
                   "  ROOT d = f32[2] dynamic-slice(p0, r1), dynamic_slice_sizes={2}", params)
    return before, after


def test_an_unfollowed_start_is_unknown_never_same() -> None:
    # a start converted from a float is not followed: a runtime variable on both sides
    before, after = _shifted_start("  p0 = f32[8] parameter(0)\n  p1 = f32[] parameter(1)\n",
                                   "  r = s32[] convert(p1)\n")
    result = validate_programs(before, after)
    assert result.pairs[0].verdict == UNKNOWN and result.verdict() == UNKNOWN


def test_a_start_read_from_an_integer_array_is_an_element_symbol() -> None:
    before, after = _shifted_start("  p0 = f32[8] parameter(0)\n  p1 = s32[2] parameter(1)\n",
                                   "  q = s32[1] slice(p1), slice={[0:1]}\n"
                                   "  r = s32[] reshape(q)\n")
    result = validate_programs(before, after)
    assert result.pairs[0].verdict == DIFFER
    cx = result.pairs[0].counterexample
    assert cx is not None and set(cx.values) == {"arg1[0]"}
    # the shift shows where the start is in range: before reads the start, after the next
    start = cx.values["arg1[0]"]
    assert 0 <= start <= 6 and cx.element in ((start,), (start + 1,))


def test_signatures_must_agree() -> None:
    other = module("  ROOT d = f32[2] dynamic-slice(p0, p1), dynamic_slice_sizes={2}",
                   "  p0 = f32[9] parameter(0)\n  p1 = s32[] parameter(1)\n"
                   "  p2 = s32[] parameter(2)\n")
    with pytest.raises(SignatureError, match="parameter 0 is f32\\[8\\] in BEFORE, f32\\[9\\]"):
        validate_programs(NESTED, other)


# -- the command ---------------------------------------------------------------------------------


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """`verifidx validate ARGS` in this process: exit code, stdout, stderr."""
    import verifidx.cli

    code = verifidx.cli.main(["validate", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_the_command_exits_by_verdict(tmp_path, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    files = {}
    for name, text in (("nested", NESTED), ("folded", NESTED_FOLDED)):
        files[name] = tmp_path / f"{name}.hlo"
        files[name].write_text(text)
    bad = tmp_path / "bad.hlo"
    bad.write_text("HloModule m\nENTRY e {\n  p0 = f32[8] parameter(0)\n  ROOT x = f32[8] "
                   "frobnicate(p0)\n}\n")
    nested, folded = str(files["nested"]), str(files["folded"])
    # no runtime here: tests/test_xla_runtime.py and test_xla_dump.py run the real one
    monkeypatch.setattr("verifidx.clients.xla_runtime.available", lambda: False)
    code, out, _ = cli(capsys, nested, nested)
    assert code == 0 and "3 pairs: 3 same" in out
    code, out, _ = cli(capsys, nested, folded, "--format", "json")
    assert code == 1
    found = json.loads(out)
    row = found["pairs"][0]
    assert found["verdict"] == DIFFER and row["verdict"] == DIFFER
    assert row["confirmation"] == "not confirmed (no runtime)"
    assert set(row["counterexample"]) == {"output", "parameter", "point", "element", "read_by",
                                          "values", "sizes"}
    code, out, _ = cli(capsys, nested, folded)
    assert code == 1 and "reads parameter 0 element" in out and "at arg1 = " in out
    code, out, _ = cli(capsys, nested, folded, "--format", "junit")
    suite = ET.fromstring(out.split("\n", 1)[1]).find("testsuite")
    assert code == 1 and suite is not None and suite.get("failures") == "1"
    code, out, _ = cli(capsys, nested, folded, "--format", "github")
    assert code == 1 and out.startswith("::error file=")
    code, out, err = cli(capsys, nested, str(bad))
    assert code == 2 and out == ""
    line = err.strip()
    assert "\n" not in line and "bad.hlo:4" in line and "Traceback" not in line
    code, _, err = cli(capsys, nested, str(tmp_path / "missing.hlo"))
    assert code == 2 and "cannot read" in err
    unknown = tmp_path / "u.hlo"
    shifted = tmp_path / "s.hlo"
    texts = _shifted_start("  p0 = f32[8] parameter(0)\n  p1 = f32[] parameter(1)\n",
                           "  r = s32[] convert(p1)\n")
    unknown.write_text(texts[0])
    shifted.write_text(texts[1])
    code, out, _ = cli(capsys, str(unknown), str(shifted))
    assert code == 3 and "verdict: unknown" in out


# -- JAX programs --------------------------------------------------------------------------------


def _jax_cases():  # type: ignore[no-untyped-def]
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    jax = pytest.importorskip("jax")
    jnp, lax = jax.numpy, jax.lax

    def nested(x, i, j):  # type: ignore[no-untyped-def]
        return lax.dynamic_slice(lax.dynamic_slice(x, (i,), (4,)), (j,), (2,))

    def roll_const(x, i):  # type: ignore[no-untyped-def]
        return lax.dynamic_slice(jnp.roll(x, 3), (i,), (2,))

    def roll_dynamic(x, i):  # type: ignore[no-untyped-def]
        return lax.dynamic_slice(jnp.roll(x, i), (i,), (2,))

    return jax, [(nested, 2), (roll_const, 1), (roll_dynamic, 1)]


@pytest.mark.parametrize("which", [0, 1, 2])
def test_jax_programs_never_same_where_execution_differs(which: int) -> None:
    jax, cases = _jax_cases()
    jnp = jax.numpy
    fn, scalars = cases[which]
    x = jnp.arange(8.0)
    zero = [jnp.int32(0)] * scalars
    lowered = jax.jit(fn).lower(x, *zero)
    after = lowered.compile().as_text()
    result = validate_programs(lowered.as_text(dialect="hlo"), after)
    # BEFORE as StableHLO (what jax hands XLA) reads the same
    from_stablehlo = validate_programs(lowered.as_text(), after)
    assert [p.verdict for p in from_stablehlo.pairs] == [p.verdict for p in result.pairs]
    grid = range(-8, 9)
    compiled = jax.jit(fn)
    mismatch = []
    for values in (np.array(v) for v in np.ndindex(*([len(grid)] * scalars))):
        args = [jnp.int32(grid[k]) for k in values]
        with jax.disable_jit():
            want = np.asarray(fn(x, *args))
        got = np.asarray(compiled(x, *args))
        if not (want == got).all():
            mismatch.append([grid[k] for k in values])
    pair = next(p for p in result.pairs if p.parameter == 0)
    if mismatch:
        assert pair.verdict != SAME, (fn.__name__, mismatch[:3])
    if pair.verdict == DIFFER:  # confirmed by execution at the counterexample
        cx = pair.counterexample
        assert cx is not None
        args = [jnp.int32(cx.values[f"arg{k + 1}"]) for k in range(scalars)]
        with jax.disable_jit():
            eager = np.asarray(fn(x, *args))
        jitted = np.asarray(compiled(x, *args))
        reader, other = (eager, jitted) if cx.read_by == "before" else (jitted, eager)
        assert reader[cx.point] == cx.element[0] and other[cx.point] != cx.element[0]
    # what this pinned jax does, measured: the nested and the dynamic roll miscompile
    assert bool(mismatch) == (pair.verdict == DIFFER), (fn.__name__, pair, mismatch[:3])


# -- mutants -------------------------------------------------------------------------------------

MP = "  p0 = f32[4,4] parameter(0)\n  p1 = f32[4,4] parameter(1)\n  i = s32[] parameter(2)\n"
Z = "  z = s32[] constant(0)\n"
MUTANTS = {
    "transpose permutation": ("  ROOT t = f32[4,4] transpose(p0), dimensions={1,0}",
                              "  ROOT t = f32[4,4] copy(p0)"),
    "slice window": ("  ROOT s = f32[2,4] slice(p0), slice={[1:3], [0:4]}",
                     "  ROOT s = f32[2,4] slice(p0), slice={[2:4], [0:4]}"),
    "concatenate swapped": ("  ROOT c = f32[8,4] concatenate(p0, p1), dimensions={0}",
                            "  ROOT c = f32[8,4] concatenate(p1, p0), dimensions={0}"),
    "pad edges swapped": ("  y = f32[] constant(0)\n  ROOT p = f32[4,7] pad(p0, y), "
                          "padding=0_0x1_2",
                          "  y = f32[] constant(0)\n  ROOT p = f32[4,7] pad(p0, y), "
                          "padding=0_0x2_1"),
    "start off by one": (Z + "  ROOT d = f32[2,4] dynamic-slice(p0, i, z), "
                         "dynamic_slice_sizes={2,4}",
                         Z + "  o = s32[] constant(1)\n  j = s32[] add(i, o)\n"
                         "  ROOT d = f32[2,4] dynamic-slice(p0, j, z), dynamic_slice_sizes={2,4}"),
    "clamp bound changed": (Z + "  h = s32[] constant(2)\n  c = s32[] clamp(z, i, h)\n"
                            "  ROOT d = f32[2,4] dynamic-slice(p0, c, z), "
                            "dynamic_slice_sizes={2,4}",
                            Z + "  h = s32[] constant(1)\n  c = s32[] clamp(z, i, h)\n"
                            "  ROOT d = f32[2,4] dynamic-slice(p0, c, z), "
                            "dynamic_slice_sizes={2,4}"),
    "clamp dropped": (Z + "  h = s32[] constant(1)\n  c = s32[] clamp(z, i, h)\n"
                      "  ROOT d = f32[2,4] dynamic-slice(p0, c, z), dynamic_slice_sizes={2,4}",
                      Z + "  ROOT d = f32[2,4] dynamic-slice(p0, i, z), "
                      "dynamic_slice_sizes={2,4}"),
    "reverse dropped": ("  ROOT r = f32[4,4] reverse(p0), dimensions={0}",
                        "  ROOT r = f32[4,4] copy(p0)"),
    "start negated": (Z + "  ROOT d = f32[1,4] dynamic-slice(p0, i, z), "
                      "dynamic_slice_sizes={1,4}",
                      Z + "  n = s32[] negate(i)\n  ROOT d = f32[1,4] dynamic-slice(p0, n, z), "
                      "dynamic_slice_sizes={1,4}"),
}


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_a_mutant_that_changes_the_results_differs(name: str) -> None:
    before, after = (module(b, MP) for b in MUTANTS[name])
    inputs = [np.arange(16.0).reshape(4, 4), 100 + np.arange(16.0).reshape(4, 4)]
    changes = any(not np.array_equal(run(before, [*inputs, i]), run(after, [*inputs, i]))
                  for i in range(-6, 7))
    assert changes  # each mutant changes the results (the oracle says so, not the list)
    result = validate_programs(before, after)
    assert result.verdict() == DIFFER and not any(
        p.verdict == SAME for p in result.pairs if p.parameter < 2 and p.counterexample), name
    check_counterexample(before, after, result)


def test_maps_larger_than_the_reads_never_prove_same() -> None:
    """Pad's map of its padding value holds every output element: two pads that pad
    different elements have equal such maps, but read the value at different elements."""
    params = "  p0 = f32[4] parameter(0)\n  p1 = f32[] parameter(1)\n"
    before = module("  ROOT p = f32[7] pad(p0, p1), padding=1_2", params)
    after = module("  ROOT p = f32[7] pad(p0, p1), padding=2_1", params)
    assert not np.array_equal(run(before, [np.arange(1.0, 5.0), 0.0]),
                              run(after, [np.arange(1.0, 5.0), 0.0]))
    verdicts = {p.parameter: p.verdict for p in validate_programs(before, after).pairs}
    assert verdicts == {0: DIFFER, 1: UNKNOWN}


@pytest.mark.parametrize("indices, same", [("{ {3}, {1}, {4} }", True),
                                           ("{ {3}, {2}, {4} }", False)])
def test_a_gather_by_a_constant_index_array(indices: str, same: bool) -> None:
    def take(idx: str) -> str:
        return module(f"  c = s32[3,1] constant({idx})\n  ROOT g = f32[3] gather(p0, c), "
                      "offset_dims={}, collapsed_slice_dims={0}, start_index_map={0}, "
                      "index_vector_dim=1, slice_sizes={1}", "  p0 = f32[8] parameter(0)\n")
    before, after = take("{ {3}, {1}, {4} }"), take(indices)
    result = validate_programs(before, after)
    assert result.verdict() == (SAME if same else DIFFER)
    if not same:  # numpy's take as the oracle: x[[3, 1, 4]] against x[[3, 2, 4]]
        cx = result.pairs[0].counterexample
        assert cx is not None
        reads = {"before": [3, 1, 4], "after": [3, 2, 4]}
        other = "after" if cx.read_by == "before" else "before"
        assert reads[cx.read_by][cx.point[0]] == cx.element[0] != reads[other][cx.point[0]]


def test_fewer_reads_for_every_value_of_the_starts() -> None:
    """Before reads the window at p1 and the one at p2 (a select that always takes the
    first); after only the first: a subset for every p1, p2 (the interpreter agrees that the
    results are the same, so the dropped reads do not reach the value)."""
    before = module("""  a = f32[2] dynamic-slice(p0, p1), dynamic_slice_sizes={2}
  b = f32[2] dynamic-slice(p0, p2), dynamic_slice_sizes={2}
  t = pred[] constant(true)
  k = pred[2] broadcast(t), dimensions={}
  ROOT s = f32[2] select(k, a, b)""", P3)
    after = module("  ROOT a = f32[2] dynamic-slice(p0, p1), dynamic_slice_sizes={2}", P3)
    x = np.arange(8.0)
    assert all(np.array_equal(run(before, [x, i, j]), run(after, [x, i, j]))
               for i in range(-3, 10) for j in range(-3, 10))
    verdicts = {p.parameter: p.verdict for p in validate_programs(before, after).pairs}
    assert verdicts == {0: FEWER, 1: SAME, 2: FEWER}, verdicts
