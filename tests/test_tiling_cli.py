"""`verifidx tile` and `verifidx coalescing`: text, the JSON contracts of docs/tiling.md, and
one-line errors with exit 2."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

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


def test_untileable_fusion_lists_each_value_with_its_reason(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A valid fusion that cannot be tiled with these sizes is an answer, not bad input: every
    value that gets no tile is listed with its reason (exit 1), the others keep their tiles."""
    p = tmp_path / "split.hlo"
    p.write_text(SPLIT)
    # p0's rows are d0 * 12 + d1: two output rows of a partial 5 columns are not one strided
    # range, so the tile needs d0 = 1 or d1 in {1, 12}
    code, out, err = run(capsys, "tile", str(p), "--tile-sizes", "2,5,4", "--json", "--no-prove")
    assert code == 1 and err == ""
    doc = json.loads(out)
    assert [i["name"] for i in doc["instructions"]] == ["reshape"]
    (untiled,) = doc["untiled"]
    assert untiled["name"] == "p0" and untiled["shape"] == "f32[48,4]"
    assert "violate its constraints" in untiled["reason"]
    code, out, _ = run(capsys, "tile", str(p), "--tile-sizes", "2,5,4", "--no-prove")
    assert code == 1 and "p0 = parameter f32[48,4]: no tile: " in out
    code, out, _ = run(capsys, "tile", str(p), "--tile-sizes", "2,12,4", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["constraints"] != "always satisfied" and doc["untiled"] == []


REVERSED_RESHAPE = """HloModule m

fusion {
  p0 = f32[4,6] parameter(0)
  r = f32[24] reshape(p0)
  ROOT rev = f32[24] reverse(r), dimensions={0}
}

ENTRY main {
  p0 = f32[4,6] parameter(0)
  ROOT fusion = f32[24] fusion(p0), kind=kLoop, calls=fusion
}
"""


def test_value_without_symbolic_tile_is_no_tile(capsys: pytest.CaptureFixture[str],
                                                 tmp_path: Path) -> None:
    p = tmp_path / "rev.hlo"
    p.write_text(REVERSED_RESHAPE)
    code, out, err = run(capsys, "tile", str(p), "--tile-sizes", "4", "--json", "--no-prove")
    assert code == 1 and err == ""
    doc = json.loads(out)
    assert {i["name"] for i in doc["instructions"]} == {"rev", "r"}
    (untiled,) = doc["untiled"]
    assert untiled["name"] == "p0" and "floordiv of something other than a dimension" in \
        untiled["reason"]


SCALAR_ROOT = """HloModule m

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

fusion {
  p0 = f32[8] parameter(0)
  zero = f32[] constant(0)
  ROOT r = f32[] reduce(p0, zero), dimensions={0}, to_apply=add
}

ENTRY main {
  p0 = f32[8] parameter(0)
  ROOT fusion = f32[] fusion(p0), kind=kLoop, calls=fusion
}
"""


@pytest.mark.parametrize("sizes", [[], ["--tile-sizes", ""]])
def test_scalar_root_takes_no_tile_sizes(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                         sizes: list[str]) -> None:
    p = tmp_path / "scalar.hlo"
    p.write_text(SCALAR_ROOT)
    code, out, err = run(capsys, "tile", str(p), *sizes, "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["tile_sizes"] == []
    (p0,) = [i for i in doc["instructions"] if i["name"] == "p0"]
    assert p0["tile_sizes"] == [8] and p0["exact"] and p0["proof"] == "proved"
    code, _, err = run(capsys, "tile", str(p), "--tile-sizes", "1")
    assert code == 2 and "needs 0 tile sizes" in err


ROOT_1_2_1_4 = """HloModule m

fusion {
  p0 = f32[2,4] parameter(0)
  ROOT r = f32[1,2,1,4] reshape(p0)
}

ENTRY main {
  p0 = f32[2,4] parameter(0)
  ROOT fusion = f32[1,2,1,4] fusion(p0), kind=kLoop, calls=fusion
}
"""


def test_tile_sizes_past_the_dimensions_are_not_claimed_exact(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Tile sizes 1,3,1,5 on a [1,2,1,4] root: p0's [3, 5] tile holds (2, 4), which no output
    element reads (p0 is f32[2,4]); the proofs must cover those sizes, not stop at 2 and 4."""
    p = tmp_path / "r.hlo"
    p.write_text(ROOT_1_2_1_4)
    code, out, err = run(capsys, "tile", str(p), "--tile-sizes", "1,3,1,5", "--json")
    assert code == 0, err
    (p0,) = [i for i in json.loads(out)["instructions"] if i["name"] == "p0"]
    assert p0["tile_sizes"] == [3, 5]
    held = {(r, c) for r in range(3) for c in range(5)}
    read = {(r, c) for r in range(2) for c in range(4)}  # the whole of p0, by its shape
    assert held - read  # the tile is not exact ...
    assert p0["exact"] is False and p0["proof"] == "proved"  # ... and is not claimed to be
    code, out, _ = run(capsys, "tile", str(p), "--tile-sizes", "1,2,1,4", "--json")
    (p0,) = [i for i in json.loads(out)["instructions"] if i["name"] == "p0"]
    assert p0["tile_sizes"] == [2, 4] and p0["exact"] is True


@pytest.mark.parametrize("text, size, unread", [
    ("(d0) -> (d0 * 2 + 3), domain: d0 in [0, 8], d0 * 2 + 3 in [0, 11]", 6, 13),
    ("(d0) -> (-d0), domain: d0 in [0, 1], -d0 in [0, 1]", 2, -1),
])
def test_map_exactness_covers_the_declared_extent(capsys: pytest.CaptureFixture[str],
                                                  text: str, size: int, unread: int) -> None:
    code, out, _ = run(capsys, "tile", text, "--json")
    assert code == 0
    tile = json.loads(out)["tile"]
    assert tile["exact"] is False and tile["exactness"]["verdict"] == "refuted"
    assert tile["soundness"]["verdict"] == "proved"
    # the witness of the issue, by hand: the tile of `size` holds `unread`, which is never read
    offset, stride = (3, 2) if "* 2" in text else (0, -1)
    held = {offset + stride * k for k in range(size)}
    reads = {offset + stride * d for d in range(size)
             if 0 <= offset + stride * d <= (11 if "* 2" in text else 1)}
    assert unread in held - reads


def test_huge_extent_is_no_crash(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "tile", "--timeout-ms", "100", "--json",
                         "(d0) -> (d0), domain: d0 in [0, 9223372036854775807]")
    assert code == 0, err
    tile = json.loads(out)["tile"]
    assert tile["size_map"] == "(d0) -> (d0)"
    assert tile["soundness"]["verdict"] in ("proved", "unknown")


PRIMES = [2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71]


@pytest.fixture
def counted_merges(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the merges of constraint conjunctions (work, not time) and stops a runaway."""
    from verifidx.analysis.tiling import constraints

    count = [0]
    real = constraints._merge

    def merge(a: Any, b: Any) -> Any:
        count[0] += 1
        assert count[0] < 100_000, "the constraint disjunction grew without bound"
        return real(a, b)

    monkeypatch.setattr(constraints, "_merge", merge)
    return count


def test_sum_of_twenty_mods_is_quick(capsys: pytest.CaptureFixture[str],
                                     counted_merges: list[int]) -> None:
    text = "(d0) -> (" + " + ".join(f"d0 mod {p}" for p in PRIMES) + "), domain: d0 in [0, 99]"
    code, out, _ = run(capsys, "tile", "--no-prove", text)
    assert code == 1 and out.startswith("no tile: ")
    assert counted_merges[0] < 10_000


def test_twenty_mod_results_are_too_complex(capsys: pytest.CaptureFixture[str],
                                            counted_merges: list[int]) -> None:
    text = "(d0) -> (" + ", ".join(f"d0 mod {p}" for p in PRIMES) + "), domain: d0 in [0, 99]"
    code, out, _ = run(capsys, "tile", "--no-prove", "--json", text)
    assert code == 1
    assert json.loads(out)["reason"].startswith("constraints too complex: ")
    assert counted_merges[0] < 10_000


def test_hlo_with_leading_comments_is_hlo(capsys: pytest.CaptureFixture[str],
                                          tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[1]
    code, out, err = run(capsys, "tile", str(root / "examples" / "seed_fusion_softmax.hlo"),
                         "--tile-sizes", "1,1,125", "--json", "--no-prove")
    assert code == 0, err
    assert json.loads(out)["computation"] == "softmax"
    # the same text given as @file (no .hlo suffix) is recognised by its content
    p = tmp_path / "softmax.txt"
    p.write_text("/* a block comment */\n// a line comment\n" + SOFTMAX)
    code, out, err = run(capsys, "tile", "@" + str(p), "--tile-sizes", "1,10", "--no-prove")
    assert code == 0, err
    assert out.startswith("computation fusion")


NOT_A_FUSION = """HloModule m
ENTRY e {
  p = f32[4] parameter(0)
  ROOT a = f32[4] negate(p)
}
"""


def test_root_not_a_fusion_error_has_its_place(capsys: pytest.CaptureFixture[str],
                                                tmp_path: Path) -> None:
    p = tmp_path / "nf.hlo"
    p.write_text(NOT_A_FUSION)
    code, _, err = run(capsys, "tile", str(p), "--tile-sizes", "2")
    assert code == 2
    assert err == f"error: {p}:4:3: the entry's root a is not a fusion; name the computation " \
                  "to tile with --computation\n"


MALFORMED_OUTSIDE_THE_FUSION = """HloModule m
fusion {
  p0 = f32[4,6] parameter(0)
  ROOT n = f32[4,6] negate(p0)
}
ENTRY e {
  p0 = f32[4,6] parameter(0)
  t = f32[4,6] transpose(p0), dimensions={1,0}
  ROOT fusion = f32[4,6] fusion(t), kind=kLoop, calls=fusion
}
"""


@pytest.mark.parametrize("command", [["coalescing"], ["tile", "--tile-sizes", "1,2"],
                                     ["indexing"]])
@pytest.mark.parametrize("text, place, what", [
    (MALFORMED_OUTSIDE_THE_FUSION, "8:3", "is declared as f32[4,6]"),
    (MALFORMED_OUTSIDE_THE_FUSION.replace("transpose(p0), dimensions={1,0}", "negat(p0)"),
     "8:16", "'negat' is not an HLO opcode"),
])
def test_malformed_module_is_refused_like_indexing(capsys: pytest.CaptureFixture[str],
                                                   tmp_path: Path, command: list[str],
                                                   text: str, place: str, what: str) -> None:
    p = tmp_path / "bad.hlo"
    p.write_text(text)
    code, out, err = run(capsys, command[0], str(p), *command[1:])
    assert code == 2 and out == ""
    assert err.startswith(f"error: {p}:{place}: ") and what in err and err.count("\n") == 1


def test_coalescing_undefined_map_error_has_its_place() -> None:
    import verifidx as vx
    from verifidx.analysis.tiling import coalescing
    from verifidx.core.errors import UnsupportedError

    # read without the shape check, the transpose's map is undefined
    module = vx.parse_hlo(MALFORMED_OUTSIDE_THE_FUSION.replace(
        "ROOT n = f32[4,6] negate(p0)", "ROOT n = f32[4,6] transpose(p0), dimensions={1,0}"),
        "m.hlo")
    with pytest.raises(UnsupportedError, match=r"^m\.hlo:9:3: operand 0 \(p0\) of fusion: "):
        coalescing(module)


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


VARIADIC = """HloModule m

argmax {
  a0 = f32[] parameter(0)
  a1 = s32[] parameter(1)
  b0 = f32[] parameter(2)
  b1 = s32[] parameter(3)
  ge = pred[] compare(a0, b0), direction=GE
  m0 = f32[] select(ge, a0, b0)
  m1 = s32[] select(ge, a1, b1)
  ROOT t = (f32[], s32[]) tuple(m0, m1)
}

fusion {
  p0 = f32[6,5] parameter(0)
  p1 = s32[6,5] parameter(1)
  c0 = f32[] constant(-inf)
  c1 = s32[] constant(0)
  ROOT r = (f32[5], s32[5]) reduce(p0, p1, c0, c1), dimensions={0}, to_apply=argmax
}

ENTRY main {
  p0 = f32[6,5] parameter(0)
  p1 = s32[6,5] parameter(1)
  ROOT fusion = (f32[5], s32[5]) fusion(p0, p1), kind=kLoop, calls=fusion
}
"""


@pytest.mark.parametrize("size", [1, 2, 3, 5])
def test_variadic_reduce_root_tiles_cover_what_every_output_reads(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, size: int) -> None:
    """Brute force, apart from the maps: output element j of either output of the reduce over
    dimension 0 reads column j of both operands and both init values. Every program's tile of
    each operand holds exactly what its output tile reads (the last tile clipped)."""
    p = tmp_path / "variadic.hlo"
    p.write_text(VARIADIC)
    code, out, err = run(capsys, "tile", str(p), "--tile-sizes", str(size), "--json")
    assert code == 0 and err == "", out
    doc = json.loads(out)
    assert doc["untiled"] == []
    programs = -(-5 // size)
    for t in doc["instructions"]:
        assert t["proof"] == "proved" and t["exact"], t
        offsets = t["tile_offsets_indexing"]
        for pid in range(programs):
            columns = set(range(pid * size, min(5, (pid + 1) * size)))
            want = {(i, j) for i in range(6) for j in columns} if t["name"] in ("p0", "p1") \
                else {(j,) for j in columns} if t["name"] == "r" else {()}
            start = _evaluate(offsets, pid)
            held = {tuple(o + s * k for o, s, k in zip(start, t["tile_strides"], ks))
                    for ks in itertools.product(*(range(n) for n in t["tile_sizes"]))}
            assert want <= held, (t["name"], pid)
            assert {x for x in held if all(0 <= a < n for a, n in
                                           zip(x, (6, 5) if len(x) == 2 else (5,)))} == want


def _evaluate(offsets: str, pid: int) -> tuple[int, ...]:
    from verifidx.core.syntax import parse_map
    return tuple(parse_map(offsets).evaluate([pid]))


SORT_ROOT = """HloModule m

cmp {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ROOT lt = pred[] compare(a, b), direction=LT
}

fusion {
  p0 = f32[8] parameter(0)
  p1 = s32[8] parameter(1)
  ROOT s = (f32[8], s32[8]) sort(p0, p1), dimensions={0}, to_apply=cmp
}

ENTRY main {
  p0 = f32[8] parameter(0)
  p1 = s32[8] parameter(1)
  ROOT fusion = (f32[8], s32[8]) fusion(p0, p1), kind=kLoop, calls=fusion
}
"""


def test_an_unsupported_root_is_one_no_tile_and_nothing_else(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A root of tuple shape other than a variadic reduce is not analysed: its reason, and no
    program count or constraints (none were computed; JSON `constraints` is null)."""
    p = tmp_path / "sort.hlo"
    p.write_text(SORT_ROOT)
    code, out, err = run(capsys, "tile", str(p), "--tile-sizes", "4")
    assert code == 1 and err == ""
    assert out.splitlines() == [
        "computation fusion, tile sizes [4]",
        "s = sort (f32[8], s32[8]): no tile: fusion: a root of tuple shape (sort s) is not yet "
        "supported (only a variadic reduce is)"]
    code, out, _ = run(capsys, "tile", str(p), "--json")
    doc = json.loads(out)
    assert code == 1 and doc["constraints"] is None and doc["instructions"] == []
    assert [u["name"] for u in doc["untiled"]] == ["s"]


WINDOWS = {
    "padded reduce-window": ("f32[16,8] reduce-window(p0, z), window={size=3x1 pad=1_1x0_0}, "
                             "to_apply=add", "f32[16,8]", "4,8",
                             "the map has constraints a tile cannot express: d0 + s0 in [1, 16]"),
    "sliding reduce-window": ("f32[14,8] reduce-window(p0, z), window={size=3x1}, to_apply=add",
                              "f32[14,8]", "4,8", "do not nest"),
}


@pytest.mark.parametrize("case", sorted(WINDOWS))
def test_window_operands_are_no_tile_with_the_reason(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, case: str) -> None:
    """A window of more than one element, padded or not, has no symbolic tile (nor in XLA): the
    operand is an untiled entry with the reason; the root and the init value keep theirs."""
    root, shape, sizes, why = WINDOWS[case]
    p = tmp_path / "window.hlo"
    p.write_text("HloModule m\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
                 "  ROOT c = f32[] add(a, b)\n}\nfusion {\n  p0 = f32[16,8] parameter(0)\n"
                 f"  z = f32[] constant(0)\n  ROOT r = {root}\n}}\nENTRY main {{\n"
                 f"  p0 = f32[16,8] parameter(0)\n  ROOT f = {shape} fusion(p0), kind=kLoop, "
                 "calls=fusion\n}\n")
    code, out, err = run(capsys, "tile", str(p), "--tile-sizes", sizes, "--json")
    assert code == 1 and err == ""
    doc = json.loads(out)
    assert {i["name"] for i in doc["instructions"]} == {"r", "z"}
    (untiled,) = doc["untiled"]
    assert untiled["name"] == "p0" and why in untiled["reason"]


def _fusion(body: str, params: list[str], root: str) -> str:
    """A module whose entry calls `body` (the fused computation `fused`) on its parameters."""
    entry = "\n".join(f"  a{i} = {s} parameter({i})" for i, s in enumerate(params))
    args = ", ".join(f"a{i}" for i in range(len(params)))
    return (f"HloModule m\n\nfused {{\n{body}\n}}\n\nENTRY e {{\n{entry}\n"
            f"  ROOT f = {root} fusion({args}), kind=kLoop, calls=fused\n}}\n")


EMPTY_ROOT = _fusion("  p0 = f32[2,0] parameter(0)\n  ROOT n = f32[2,0] negate(p0)",
                     ["f32[2,0]"], "f32[2,0]")


@pytest.mark.parametrize("sizes", [[], ["--tile-sizes", "1,1"], ["--tile-sizes", "2,5"]])
def test_a_root_without_elements_has_no_programs(capsys: pytest.CaptureFixture[str],
                                                 tmp_path: Path, sizes: list[str]) -> None:
    """Issue 38 (6): a fusion over f32[2,0] was "the divisor of floordiv must be a nonzero
    integer constant, not 0" without a place (or "needs 2 tile sizes, got 0" without sizes).
    Its root has no elements: no program runs and no value is read, so nothing is tiled."""
    p = tmp_path / "empty.hlo"
    p.write_text(EMPTY_ROOT)
    code, out, err = run(capsys, "tile", str(p), *sizes)
    assert (code, err) == (0, "")
    assert "0 programs" in out and "the root has no elements" in out
    code, out, err = run(capsys, "tile", str(p), *sizes, "--json")
    assert (code, err) == (0, "")
    doc = json.loads(out)
    assert (doc["instructions"], doc["untiled"]) == ([], [])
    assert doc["constraints"] == "always satisfied"


def test_a_root_without_elements_still_checks_the_number_of_tile_sizes(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    p = tmp_path / "empty.hlo"
    p.write_text(EMPTY_ROOT)
    code, _, err = run(capsys, "tile", str(p), "--tile-sizes", "1")
    assert code == 2
    assert err == ("error: --tile-sizes: fused needs 2 tile sizes (its root is [2, 0]), "
                   "got 1\n")


def test_a_root_without_elements_through_the_api() -> None:
    from verifidx.analysis.tiling.propagation import propagate
    from verifidx.hlo import parse_hlo

    module = parse_hlo(EMPTY_ROOT)
    for sizes in ([], [1, 1]):
        tiled = propagate(module, None, sizes)
        assert (tiled.num_programs, tiled.instructions, tiled.untiled) == (0, (), ())


def test_an_operand_without_elements_is_never_read(capsys: pytest.CaptureFixture[str],
                                                   tmp_path: Path) -> None:
    """An empty operand of a concatenate is read by no program: it needs no tile (it was
    `no tile: the map is known to be empty`, exit 1); the other operand is tiled as before."""
    p = tmp_path / "concat.hlo"
    p.write_text(_fusion("  p0 = f32[2,0] parameter(0)\n  p1 = f32[2,3] parameter(1)\n"
                         "  ROOT c = f32[2,3] concatenate(p0, p1), dimensions={1}",
                         ["f32[2,0]", "f32[2,3]"], "f32[2,3]"))
    code, out, err = run(capsys, "tile", str(p), "--tile-sizes", "1,3", "--json")
    assert (code, err) == (0, "")
    doc = json.loads(out)
    assert doc["untiled"] == []
    tiles = {t["name"]: t for t in doc["instructions"]}
    assert set(tiles) == {"c", "p1"}
    # program pid writes row pid of the root, which is row pid of p1 (p0 adds no column)
    assert [_evaluate(tiles["p1"]["tile_offsets_indexing"], pid) for pid in (0, 1)] == \
        [(0, 0), (1, 0)]
    assert tiles["p1"]["tile_sizes"] == [1, 3] and tiles["p1"]["proof"] == "proved"


def test_an_empty_contraction_is_no_crash(capsys: pytest.CaptureFixture[str],
                                          tmp_path: Path) -> None:
    """A dot root contracting a dimension of size 0 reads no element of its operands (the
    programs of the contraction were built with a division by 0)."""
    p = tmp_path / "dot.hlo"
    p.write_text(_fusion("  p0 = f32[2,0] parameter(0)\n  p1 = f32[0,3] parameter(1)\n"
                         "  ROOT d = f32[2,3] dot(p0, p1), lhs_contracting_dims={1}, "
                         "rhs_contracting_dims={0}", ["f32[2,0]", "f32[0,3]"], "f32[2,3]"))
    code, out, err = run(capsys, "tile", str(p), "--tile-sizes", "1,1,3", "--json")
    assert (code, err) == (0, "")
    doc = json.loads(out)
    assert [t["name"] for t in doc["instructions"]] == ["d"] and doc["untiled"] == []
