"""Declared shapes that contradict a data-movement op's shape rules are rejected at parse time
(with `check_shapes`) and by `verifidx indexing`; inference agrees with numpy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from verifidx import ParseError
from verifidx.cli import main
from verifidx.hlo import parse_hlo
from verifidx.hlo.shape_check import infer_dims

REPO = Path(__file__).resolve().parents[1]

BAD = [
    "f32[7,3] pad(p0, p1), padding=1_1x0_0",
    "f32[4,3] pad(p0, p1), padding=1_1",
    "f32[4,3] transpose(p0), dimensions={1,0}",
    "f32[3,4] transpose(p0), dimensions={0,0}",
    "f32[2,3] slice(p0), slice={[0:3:1], [0:3:1]}",
    "f32[9,3] slice(p0), slice={[0:9:1], [0:3:1]}",
    "f32[8,4] concatenate(p0, p0), dimensions={0}",
    "f32[5] reshape(p0)",
    "f32[4,3,2] broadcast(p0), dimensions={0,2}",
    "f32[4,4] reverse(p0), dimensions={0}",
    "f32[3,4] copy(p0)",
]


def _module(root: str) -> str:
    return ("HloModule m\nENTRY e {\n p0 = f32[4,3] parameter(0)\n p1 = f32[] parameter(1)\n"
            f" ROOT r = {root}\n}}\n")


@pytest.mark.parametrize("root", BAD)
def test_contradicting_shapes_are_rejected_at_the_instruction(root: str) -> None:
    text = _module(root)
    parse_hlo(text)  # lenient by default: the per-op maps report unknown indexing
    with pytest.raises(ParseError) as info:
        parse_hlo(text, "m.hlo", check_shapes=True)
    assert (info.value.line, info.value.column) == (5, 2)
    assert "'r'" in str(info.value) and "\n" not in str(info.value)


def test_indexing_cli_exits_2_on_a_wrong_pad_shape(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "bad.hlo"
    f.write_text(_module(BAD[0]))
    assert main(["indexing", str(f)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {f}:5:2: pad 'r' is declared as f32[7,3]")
    assert "f32[6,3]" in err and len(err.splitlines()) == 1


def test_every_shipped_module_passes() -> None:
    files = sorted((REPO / "examples").glob("*.hlo")) + sorted((REPO / "tests/data").rglob("*.hlo"))
    assert len(files) > 20
    for f in files:
        parse_hlo(f.read_text(), str(f), check_shapes=True)


def _inst(text: str):
    module = parse_hlo(text)
    r = module.entry.root
    return r, [module.entry.instruction(o).shape for o in r.operands]


@given(st.lists(st.integers(1, 4), min_size=1, max_size=3), st.data())
def test_inference_agrees_with_numpy(dims, data) -> None:
    x = np.zeros(dims)
    rank = len(dims)
    shape = f"f32[{','.join(map(str, dims))}]"
    perm = data.draw(st.permutations(range(rank)))
    lows = data.draw(st.lists(st.integers(0, 2), min_size=rank, max_size=rank))
    highs = data.draw(st.lists(st.integers(0, 2), min_size=rank, max_size=rank))
    starts = [data.draw(st.integers(0, n)) for n in dims]
    limits = [data.draw(st.integers(s, n)) for s, n in zip(starts, dims)]
    strides = data.draw(st.lists(st.integers(1, 3), min_size=rank, max_size=rank))
    cases = {
        f"transpose(p0), dimensions={{{','.join(map(str, perm))}}}": np.transpose(x, perm),
        "pad(p0, p1), padding=" + "x".join(f"{a}_{b}" for a, b in zip(lows, highs)):
            np.pad(x, list(zip(lows, highs))),
        "slice(p0), slice={" + ", ".join(f"[{a}:{b}:{c}]" for a, b, c in
                                         zip(starts, limits, strides)) + "}":
            x[tuple(slice(a, b, c) for a, b, c in zip(starts, limits, strides))],
        "concatenate(p0, p0), dimensions={0}": np.concatenate([x, x], 0),
        "reverse(p0), dimensions={0}": x[::-1],
    }
    for call, expected in cases.items():
        text = (f"ENTRY e {{\n p0 = {shape} parameter(0)\n p1 = f32[] parameter(1)\n"
                f" ROOT r = f32[] {call}\n}}")
        inst, ops = _inst(text)
        assert infer_dims(inst, ops) == expected.shape, call


def _elementwise_module(operands: list[str], root: str) -> str:
    params = "".join(f" p{i} = {s} parameter({i})\n" for i, s in enumerate(operands))
    return f"HloModule m\nENTRY e {{\n{params} ROOT r = {root}\n}}\n"


# (operand shapes, root): HLO broadcasts nothing implicitly (XLA's verifier, "Implicit broadcast
# is not allowed in HLO"); shape inference lets select take a scalar predicate and clamp scalar
# bounds, not a scalar operand between array bounds (xla/service/shape_inference_test.cc:
# SelectScalarPredBetweenArrays, ClampMinScalar, ClampMaxScalar, ClampOperandScalar,
# ClampMinMatrix, ClampMaxMatrix, ClampBadShapes).
ELEMENTWISE_BAD = [
    (["f32[4]", "f32[5]"], "f32[4] add(p0, p1)"),
    (["f32[4]", "f32[5]"], "f32[5] add(p0, p1)"),
    (["f32[4]", "f32[]"], "f32[4] multiply(p0, p1)"),
    (["f32[1,3]", "f32[4,3]"], "f32[4,3] subtract(p0, p1)"),  # no size-1 broadcast either
    (["f32[4,3]", "f32[4,3]"], "pred[4] compare(p0, p1), direction=LT"),
    (["f32[4]"], "f32[5] negate(p0)"),
    (["f32[4]"], "s32[2,2] convert(p0)"),
    (["f32[3]", "f32[3]", "f32[4]"], "f32[3] map(p0, p1, p2), dimensions={0}, to_apply=f"),
    (["pred[4]", "f32[4]", "f32[5]"], "f32[4] select(p0, p1, p2)"),
    (["pred[5]", "f32[4]", "f32[4]"], "f32[4] select(p0, p1, p2)"),
    (["pred[]", "f32[4]", "f32[]"], "f32[4] select(p0, p1, p2)"),
    (["f32[4]", "f32[]", "f32[4]"], "f32[] clamp(p0, p1, p2)"),  # ClampOperandScalar
    (["f32[4]", "f32[]", "f32[]"], "f32[] clamp(p0, p1, p2)"),  # ClampMinMatrix
    (["f32[]", "f32[]", "f32[4]"], "f32[] clamp(p0, p1, p2)"),  # ClampMaxMatrix
    (["f32[4]", "f32[5]", "f32[]"], "f32[5] clamp(p0, p1, p2)"),
    (["f32[]", "f32[4]", "f32[]"], "f32[5] clamp(p0, p1, p2)"),
    # element types (XLA's verifier): one type, or floating point types mixed
    (["f32[4]", "s32[4]"], "f32[4] add(p0, p1)"),
    (["s32[4]", "s32[4]"], "f32[4] multiply(p0, p1)"),
    (["s32[4]", "u32[4]"], "s32[4] maximum(p0, p1)"),
    (["f32[4]", "s32[4]"], "pred[4] compare(p0, p1), direction=LT"),
    (["f32[4]", "f32[4]"], "f32[4] compare(p0, p1), direction=LT"),
    (["s32[4]", "f32[4]", "f32[4]"], "f32[4] select(p0, p1, p2)"),
    (["pred[4]", "f32[4]", "s32[4]"], "f32[4] select(p0, p1, p2)"),
    (["s32[]", "f32[4]", "f32[]"], "f32[4] clamp(p0, p1, p2)"),
]

ELEMENTWISE_GOOD = [
    (["f32[4]", "f32[4]"], "f32[4] add(p0, p1)"),
    (["f32[4,3]", "f32[4,3]"], "pred[4,3] compare(p0, p1), direction=LT"),
    (["f32[4]"], "s32[4] convert(p0)"),
    (["f32[3]", "f32[3]", "f32[3]"], "f32[3] map(p0, p1, p2), dimensions={0}, to_apply=f"),
    (["pred[4]", "f32[4]", "f32[4]"], "f32[4] select(p0, p1, p2)"),
    (["pred[]", "f32[4]", "f32[4]"], "f32[4] select(p0, p1, p2)"),  # a scalar predicate
    (["f32[]", "f32[4]", "f32[]"], "f32[4] clamp(p0, p1, p2)"),  # ClampOperandMatrix
    (["f32[]", "f32[4]", "f32[4]"], "f32[4] clamp(p0, p1, p2)"),  # ClampMinScalar
    (["f32[4]", "f32[4]", "f32[]"], "f32[4] clamp(p0, p1, p2)"),  # ClampMaxScalar
    (["f32[]", "f32[]", "f32[]"], "f32[] clamp(p0, p1, p2)"),
    (["f32[4]", "bf16[4]"], "f32[4] add(p0, p1)"),  # mixed precision (allow_mixed_precision)
    (["s32[4]", "s32[4]"], "s32[4] shift-left(p0, p1)"),
    (["f32[4]"], "f32[4] acos(p0)"),
    (["f32[4]"], "f32[4] sinh(p0)"),
]

_MAP_BODY = ("HloModule m\nf {\n a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
             " c = f32[] parameter(2)\n ROOT s = f32[] add(a, b)\n}\n")


def _with_map_body(text: str) -> str:
    return _MAP_BODY + text.removeprefix("HloModule m\n") if "to_apply=f" in text else text


@pytest.mark.parametrize("operands, root", ELEMENTWISE_BAD)
def test_elementwise_shape_mismatches_are_rejected(operands: list[str], root: str) -> None:
    """Issue 38 (7): `add(f32[4], f32[5])` was accepted, with unknown indexing."""
    text = _with_map_body(_elementwise_module(operands, root))
    with pytest.raises(ParseError) as info:
        parse_hlo(text, "m.hlo", check_shapes=True)
    line = text.splitlines().index(f" ROOT r = {root}") + 1
    assert (info.value.line, info.value.column) == (line, 2)
    assert "'r'" in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("operands, root", ELEMENTWISE_GOOD)
def test_elementwise_shapes_hlo_allows_pass(operands: list[str], root: str) -> None:
    parse_hlo(_with_map_body(_elementwise_module(operands, root)), check_shapes=True)


ADD_4_5 = _elementwise_module(["f32[4]", "f32[5]"], "f32[4] add(p0, p1)")


@pytest.mark.parametrize("argv", [["indexing"], ["optimize"], ["coalescing"], ["graph"],
                                  ["tile", "--computation", "e", "--tile-sizes", "4"]])
def test_every_hlo_command_refuses_add_of_4_and_5(argv: list[str], tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """`indexing` exited 0 (unknown indexing) and `optimize` printed the module back."""
    f = tmp_path / "add.hlo"
    f.write_text(ADD_4_5)
    assert main([*argv[:1], str(f), *argv[1:]]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (f"error: {f}:5:2: add 'r': operand 1 is f32[5] and operand 0 f32[4]: the "
                   "operands of an elementwise op have one shape (HLO broadcasts nothing "
                   "implicitly)\n")
