"""`verifidx tile` and `verifidx coalescing`: text, the JSON contracts of docs/tiling.md, and
one-line errors with exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from verifidx.cli import main

SOFTMAX = """HloModule m

max {
  p1 = f32[] parameter(1)
  p0 = f32[] parameter(0)
  ROOT m = f32[] maximum(p0, p1)
}

fusion {
  p0 = f32[2,97]{1,0} parameter(0)
  constant = f32[] constant(-inf)
  reduce = f32[2] reduce(p0, constant), dimensions={1}, to_apply=max
  broadcast = f32[2,97]{1,0} broadcast(reduce), dimensions={0}
  ROOT subtract = f32[2,97]{1,0} subtract(p0, broadcast)
}

ENTRY main {
  p0 = f32[2,97]{1,0} parameter(0)
  ROOT fusion = f32[2,97]{1,0} fusion(p0), kind=kLoop, calls=fusion
}
"""

SPLIT = """HloModule m

fusion {
  p0 = f32[48,4] parameter(0)
  ROOT reshape = f32[4,12,4] reshape(p0)
}

ENTRY main {
  p0 = f32[48,4] parameter(0)
  ROOT fusion = f32[4,12,4] fusion(p0), kind=kLoop, calls=fusion
}
"""


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def softmax(tmp_path: Path) -> Path:
    p = tmp_path / "softmax.hlo"
    p.write_text(SOFTMAX)
    return p


def test_tile_json_contract(capsys: pytest.CaptureFixture[str], softmax: Path) -> None:
    code, out, err = run(capsys, "tile", str(softmax), "--tile-sizes", "1,10", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["computation"] == "fusion" and doc["tile_sizes"] == [1, 10]
    assert doc["constraints"] == "always satisfied"
    keys = {"name", "opcode", "shape", "tile_sizes", "tile_strides", "tile_offsets_indexing",
            "exact", "proof"}
    assert all(set(i) == keys for i in doc["instructions"])
    p0 = [i for i in doc["instructions"] if i["name"] == "p0"]
    # read twice: elementwise (a [1, 10] tile) and through the reduce (the whole row)
    assert sorted(i["tile_sizes"] for i in p0) == [[1, 10], [1, 97]]
    assert all(i["proof"] == "proved" for i in doc["instructions"])
    assert {i["tile_offsets_indexing"] for i in p0} == {
        "(pid_0) -> (pid_0 floordiv 10, (pid_0 mod 10) * 10), domain: pid_0 in [0, 19]",
        "(pid_0) -> (pid_0 floordiv 10, 0), domain: pid_0 in [0, 19]"}


def test_no_prove_reports_unknown(capsys: pytest.CaptureFixture[str], softmax: Path) -> None:
    code, out, _ = run(capsys, "tile", str(softmax), "--tile-sizes", "1,10", "--json",
                       "--no-prove")
    assert code == 0
    doc = json.loads(out)
    assert {i["proof"] for i in doc["instructions"]} == {"unknown"}
    assert not any(i["exact"] for i in doc["instructions"])


def test_untileable_fusion_is_one_line_exit_2(capsys: pytest.CaptureFixture[str],
                                              tmp_path: Path) -> None:
    p = tmp_path / "split.hlo"
    p.write_text(SPLIT)
    # p0's rows are d0 * 12 + d1: two output rows of a partial 5 columns are not one strided
    # range, so the tile needs d0 = 1 or d1 in {1, 12}
    code, out, err = run(capsys, "tile", str(p), "--tile-sizes", "2,5,4")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: ") and "constraints" in err
    code, out, _ = run(capsys, "tile", str(p), "--tile-sizes", "2,12,4", "--json")
    assert code == 0 and json.loads(out)["constraints"] != "always satisfied"


@pytest.mark.parametrize("argv", [
    ["tile", "SOFTMAX"],                                   # no tile sizes
    ["tile", "SOFTMAX", "--tile-sizes", "1"],              # wrong rank
    ["tile", "SOFTMAX", "--tile-sizes", "0,4"],            # not positive
    ["tile", "SOFTMAX", "--tile-sizes", "a,b"],
    ["tile", "SOFTMAX", "--tile-sizes", "1,1", "--computation", "nope"],
    ["tile", "(d0) -> (d0 floordiv, domain: d0 in [0, 3]"],  # bad map text
    ["coalescing", "/nonexistent.hlo"],
    ["coalescing", "SOFTMAX", "--warp-size", "0"],
])
def test_bad_input_is_one_line(capsys: pytest.CaptureFixture[str], softmax: Path,
                               argv: list[str]) -> None:
    argv = [str(softmax) if a == "SOFTMAX" else a for a in argv]
    code, out, err = run(capsys, *argv)
    assert code == 2, (out, err)
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err


def test_tile_map_text_and_proofs(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "tile", "(d0) -> (d0 floordiv 8, d0 mod 8), domain: d0 in [0, 63]")
    assert code == 0
    assert "size_map: (d0) -> ((d0 + 7) floordiv 8, d0 - ((d0 - 1) floordiv 8) * 8)" in out
    assert "constraints: 8 mod d0 in [0, 0] || d0 mod 8 in [0, 0]" in out
    assert "soundness: proved" in out and "exactness: proved" in out


def test_tile_map_without_tile_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "tile", "--json",
                       "(d0) -> ((d0 * 5) floordiv 6), domain: d0 in [0, 11]")
    assert code == 1
    doc = json.loads(out)
    assert doc["tile"] is None and doc["reason"]


def test_coalescing_json_contract(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    p = tmp_path / "t.hlo"
    p.write_text("""HloModule m
fusion {
  p0 = f32[100,200]{1,0} parameter(0)
  p1 = f32[100,200]{0,1} parameter(1)
  ROOT add = f32[100,200]{1,0} add(p0, p1)
}
ENTRY e {
  p0 = f32[100,200]{1,0} parameter(0)
  p1 = f32[100,200]{0,1} parameter(1)
  ROOT fusion = f32[100,200]{1,0} fusion(p0, p1), kind=kLoop, calls=fusion
}
""")
    code, out, err = run(capsys, "coalescing", str(p), "--json")
    assert code == 0, err
    doc = json.loads(out)
    (f,) = doc["fusions"]
    assert f["name"] == "fusion" and f["computation"] == "fusion"
    assert [(o["operand_index"], o["parameter_name"], o["coalesced"],
             o["transactions_per_warp"]) for o in f["operands"]] == [
        (0, "p0", True, 1), (1, "p1", False, 32)]
    # 4-byte elements, 64-byte transactions: a warp's 128 contiguous bytes need 2
    code, out, _ = run(capsys, "coalescing", str(p), "--json", "--transaction-bytes", "64")
    assert json.loads(out)["fusions"][0]["operands"][0]["transactions_per_warp"] == 2
