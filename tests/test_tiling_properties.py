"""Property tests: random small fusions of the op kinds verifidx maps, random tile sizes.

The oracle is brute force, written apart from the derivation: evaluate the root-to-value map on
every point of an output tile and collect the operand elements read. Checked:

* the proofs agree with brute force over every tile size and every program of small shapes
  (a `proved` soundness verdict means no tile ever misses a read; `refuted` means one does;
  `proved` exactness means the tile at the origin holds exactly what is read);
* every tile `propagate` returns covers what its output tile reads, at every program, through
  the offset map it returns (sizes, strides and `tile_offsets_indexing` together), and exactly that
  where it says `exact`.
"""

from __future__ import annotations

import itertools
import os
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import verifidx as vx
from verifidx.analysis.tiling import NoTile, SymbolicTile, symbolic_tile
from verifidx.analysis.tiling.proof import prove_exact, prove_sound, read_set
from verifidx.analysis.tiling.propagation import TilingError, analyze, propagate
from verifidx.analysis.tiling.symbolic_tile import tile_from_text

EXAMPLES = 300 if os.environ.get("HYPOTHESIS_PROFILE") == "thorough" else 25
MAX_DIM = 4
TIMEOUT_MS = 2000


@st.composite
def fusions(draw: Any) -> str:
    """HLO text of a chain of ops on one f32 parameter (shapes kept small)."""
    rank = draw(st.integers(1, 3))
    shape = [draw(st.integers(1, MAX_DIM)) for _ in range(rank)]
    lines = [f"  p0 = f32[{','.join(map(str, shape))}] parameter(0)"]
    prev = "p0"
    for k in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["negate", "add", "broadcast", "transpose", "reshape", "slice",
                                   "reverse", "reduce", "pad", "concatenate"]))
        name = f"v{k}"
        args = prev
        attrs = ""
        new = list(shape)
        if op == "add":
            args = f"{prev}, {prev}"
        elif op == "broadcast":
            if len(shape) >= 3:
                op, args = "negate", prev
            else:
                pos = draw(st.integers(0, len(shape)))
                new = shape[:pos] + [draw(st.integers(1, 3))] + shape[pos:]
                dims = [i for i in range(len(new)) if i != pos]
                attrs = f", dimensions={{{','.join(map(str, dims))}}}"
        elif op == "transpose":
            perm = draw(st.permutations(list(range(len(shape)))))
            new = [shape[p] for p in perm]
            attrs = f", dimensions={{{','.join(map(str, perm))}}}"
        elif op == "reshape":
            total = 1
            for d in shape:
                total *= d
            factors = [f for f in range(1, total + 1) if total % f == 0]
            a = draw(st.sampled_from(factors))
            b = draw(st.sampled_from([f for f in factors if (total // a) % f == 0]))
            new = [x for x in (a, b, total // a // b)]
        elif op == "slice":
            parts = []
            new = []
            for d in shape:
                start = draw(st.integers(0, d - 1))
                stride = draw(st.integers(1, 2))
                limit = draw(st.integers(start + 1, d))
                parts.append(f"[{start}:{limit}:{stride}]")
                new.append(-(-(limit - start) // stride))
            attrs = f", slice={{{', '.join(parts)}}}"
        elif op == "reverse":
            dims = sorted(draw(st.sets(st.integers(0, len(shape) - 1), min_size=1)))
            attrs = f", dimensions={{{','.join(map(str, dims))}}}"
        elif op == "reduce":
            if len(shape) < 2:
                op, args = "negate", prev
            else:
                dim = draw(st.integers(0, len(shape) - 1))
                new = shape[:dim] + shape[dim + 1:]
                args = f"{prev}, zero"
                attrs = f", dimensions={{{dim}}}, to_apply=sum"
        elif op == "pad":
            cfg = []
            new = []
            for d in shape:
                lo, hi = draw(st.integers(0, 2)), draw(st.integers(0, 2))
                cfg.append(f"{lo}_{hi}")
                new.append(d + lo + hi)
            args = f"{prev}, zero"
            attrs = f", padding={'x'.join(cfg)}"
        elif op == "concatenate":
            dim = draw(st.integers(0, len(shape) - 1))
            new = list(shape)
            new[dim] *= 2
            args = f"{prev}, {prev}"
            attrs = f", dimensions={{{dim}}}"
        if max(new) > 3 * MAX_DIM:
            continue
        lines.append(f"  {name} = f32[{','.join(map(str, new))}] {op}({args}){attrs}")
        prev, shape = name, new
    lines[-1] = "  ROOT " + lines[-1].lstrip()
    if len(lines) == 1:
        lines[0] = "  ROOT p0.root = " + lines[0].split("= ", 1)[1]
    body = "\n".join(["  zero = f32[] constant(0)", *lines])
    top = shape
    return (f"HloModule m\n\nsum {{\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
            f"  ROOT s = f32[] add(a, b)\n}}\n\nfused {{\n{body}\n}}\n\nENTRY main {{\n"
            f"  p0 = f32[{','.join(map(str, _first_shape(lines)))}] parameter(0)\n"
            f"  ROOT f = f32[{','.join(map(str, top))}] fusion(p0), kind=kLoop, calls=fused\n}}\n")


def _first_shape(lines: list[str]) -> list[int]:
    text = lines[0].split("f32[", 1)[1].split("]", 1)[0]
    return [int(x) for x in text.split(",")]


def _all_tile_sizes(tile: SymbolicTile) -> list[tuple[int, ...]]:
    boxes = [range(b.lo, b.hi + 1) for b in tile.tile_size_bounds]
    return [t for t in itertools.product(*boxes) if tile.satisfied_by(t)]


def _origins(tile: SymbolicTile, sizes: tuple[int, ...]) -> list[list[int]]:
    return [list(o) for o in itertools.product(*(
        range(0, v.bounds.hi + 1, t) for v, t in zip(tile.source.dims, sizes)))]


def _brute_sound(tile: SymbolicTile) -> bool:
    for sizes in _all_tile_sizes(tile):
        for origin in _origins(tile, sizes):
            reads = read_set(tile, sizes, (), origin)
            assert reads is not None
            if not reads <= tile.elements_at(sizes, origin):
                return False
    return True


def _brute_exact(tile: SymbolicTile) -> bool:
    return all(read_set(tile, sizes) == tile.elements(sizes) for sizes in _all_tile_sizes(tile))


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(fusions())
def test_proofs_agree_with_brute_force(hlo: str) -> None:
    module = vx.parse_hlo(hlo)
    try:
        sym = analyze(module, "fused")
    except TilingError as err:
        assert "cannot be tiled" in str(err)
        return
    for entry in sym.entries:
        tile = entry.tile
        sound = prove_sound(tile, TIMEOUT_MS)
        if sound.verdict != "unknown":
            assert (sound.verdict == "proved") == _brute_sound(tile), (entry.name, sound, tile)
        exact = prove_exact(tile, TIMEOUT_MS)
        if exact.verdict != "unknown":
            assert (exact.verdict == "proved") == _brute_exact(tile), (entry.name, exact, tile)


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(fusions(), st.data())
def test_propagated_tiles_cover_what_is_read(hlo: str, data: st.DataObject) -> None:
    module = vx.parse_hlo(hlo)
    try:
        sym = analyze(module, "fused")
    except TilingError:
        return
    sizes = tuple(data.draw(st.integers(1, d)) for d in sym.output_dims)
    if not sym.satisfied_by(sizes):
        with pytest.raises(TilingError, match="violate"):
            propagate(module, "fused", sizes, prove=False)
        return
    tiled = propagate(module, "fused", sizes, prove=True, timeout_ms=TIMEOUT_MS, analysis=sym)
    for t in tiled.instructions:
        if t.proof.verdict != "proved":
            continue
        entry = next(e for e in sym.entries if e.tile is t.symbolic)
        for pid in range(tiled.num_programs):
            offsets = t.tile_offsets_indexing.evaluate([pid])
            axes = [[o + sd * k for k in range(sz)]
                    for o, sz, sd in zip(offsets, t.tile_sizes, t.tile_strides)]
            held = set(itertools.product(*axes))
            origin = [x for x in _root_origin(pid, sym.output_dims, sizes)]
            reads = read_set(entry.tile, sizes, (), origin)
            assert reads is not None and reads <= held, (t.name, pid, sorted(reads - held))
            if t.exact and pid == 0:
                assert reads == held


def _root_origin(pid: int, dims: tuple[int, ...], sizes: tuple[int, ...]) -> list[int]:
    counts = [-(-d // t) for d, t in zip(dims, sizes)]
    out = []
    for c, t in zip(reversed(counts), reversed(sizes)):
        out.append((pid % c) * t)
        pid //= c
    return out[::-1]


def test_xla_floordiv_without_constraint_misses_reads() -> None:
    """XLA derives `d0 floordiv 8` with no constraint; a tile of 3 at program 2 (origin 6)
    reads quotients 0 and 1 but its tile holds one. verifidx adds `8 mod d0 == 0 || d0 mod 8
    == 0`, and its tile is proven sound."""
    m = vx.parse_map("(d0) -> (d0 floordiv 8), domain: d0 in [0, 15]")
    xla = tile_from_text("Symbolic tile with offset_map: (d0) -> (0) "
                         "size_map: (d0) -> ((d0 + 7) floordiv 8) stride_map: (d0) -> (1)", m)
    refuted = prove_sound(xla)
    assert refuted.verdict == "refuted" and refuted.counterexample
    assert read_set(xla, [3], (), [6]) == {(0,), (1,)}
    assert xla.elements_at([3], [6]) == {(0,)}
    ours = symbolic_tile(m)
    assert not isinstance(ours, NoTile)
    assert str(ours.constraints) == "8 mod d0 in [0, 0] || d0 mod 8 in [0, 0]"
    assert prove_sound(ours).verdict == "proved"


def test_mixed_sign_sum_has_no_tile() -> None:
    m = vx.parse_map("(d0, d1) -> (d0 * 4 - d1), domain: d0 in [0, 1], d1 in [0, 3]")
    tile = symbolic_tile(m)
    assert isinstance(tile, NoTile) and "both signs" in tile.reason


# -- exactness over every declared tile size (issue 22) ------------------------------------------


@st.composite
def small_maps(draw: Any) -> tuple[str, str, list[int]]:
    """Map text with a constraint on one result (so simplification may narrow the domain), the
    same results and constraint as Python source, and the declared extents."""
    rank = draw(st.integers(1, 2))
    extents = [draw(st.integers(1, 8)) for _ in range(rank)]
    dims = [f"d{i}" for i in range(rank)]

    def result() -> tuple[str, str]:
        form = draw(st.sampled_from(["linear", "floordiv", "mod", "divmod", "merge"]))
        d = draw(st.sampled_from(dims))
        c = draw(st.integers(2, 4))
        if form == "floordiv":
            return f"{d} floordiv {c}", f"({d} // {c})"
        if form == "mod":
            return f"{d} mod {c}", f"({d} % {c})"
        if form == "divmod":
            m = draw(st.integers(2, 3))
            return f"({d} floordiv {c}) mod {m}", f"(({d} // {c}) % {m})"
        if form == "merge" and rank == 2:
            return f"d0 * {extents[1]} + d1", f"(d0 * {extents[1]} + d1)"
        coef = draw(st.sampled_from([-2, -1, 1, 2, 3]))
        const = draw(st.integers(-3, 4))
        text = f"{d} * {coef} + {const}" if coef > 0 else f"{const} - {d} * {-coef}"
        return text, f"({text})"

    results = [result() for _ in range(draw(st.integers(1, 2)))]
    domain = [f"d{i} in [0, {n - 1}]" for i, n in enumerate(extents)]
    py_cond = "True"
    if draw(st.booleans()):
        text, py = results[draw(st.integers(0, len(results) - 1))]
        hi = draw(st.integers(0, 12))
        domain.append(f"{text} in [0, {hi}]")
        py_cond = f"0 <= {py} <= {hi}"
        bare = re.fullmatch(r"d(\d) \* 1 \+ 0", text)
        if bare:  # a constraint on a bare dimension narrows its bounds, as XLA's constructor
            i = int(bare.group(1))  # does: that is the map's declared extent
            extents[i] = min(extents[i], hi + 1)
    map_text = f"({', '.join(dims)}) -> ({', '.join(t for t, _ in results)}), " \
               f"domain: {', '.join(domain)}"
    py = f"lambda {', '.join(dims)}: ({', '.join(p for _, p in results)},) if {py_cond} else None"
    return map_text, py, extents


def _read_by_python(py: str, sizes: tuple[int, ...], extents: list[int]) -> set[tuple[int, ...]]:
    """The elements the output tile of `sizes` at the origin reads, by Python's own arithmetic
    (floor division and a non-negative remainder, as in XLA's maps)."""
    f = eval(py)  # noqa: S307 - test-generated source
    out = set()
    for point in itertools.product(*(range(min(t, n)) for t, n in zip(sizes, extents))):
        r = f(*point)
        if r is not None:
            out.add(r)
    return out


@settings(max_examples=max(EXAMPLES, 40), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(small_maps())
@example(("(d0) -> (d0 * 2 + 3), domain: d0 in [0, 8], d0 * 2 + 3 in [0, 11]",
          "lambda d0: (d0 * 2 + 3,) if 0 <= d0 * 2 + 3 <= 11 else None", [9]))
@example(("(d0) -> (0 - d0 * 1), domain: d0 in [0, 1], 0 - d0 * 1 in [0, 1]",
          "lambda d0: (0 - d0,) if 0 <= 0 - d0 <= 1 else None", [2]))
@example(("(d0) -> (d0 * 1 + 0), domain: d0 in [0, 1], d0 * 1 + 0 in [0, 0]",
          "lambda d0: ((d0 * 1 + 0),) if 0 <= (d0 * 1 + 0) <= 0 else None", [1]))
def test_claimed_exact_tile_holds_only_read_elements(case: tuple[str, str, list[int]]) -> None:
    """For every tile size up to the declared extents (not the simplified map's), a tile proven
    exact holds only elements the output tile reads, and a tile proven sound holds them all."""
    text, py, extents = case
    tile = symbolic_tile(vx.parse_map(text))
    if isinstance(tile, NoTile):
        return
    sound, exact = prove_sound(tile, TIMEOUT_MS), prove_exact(tile, TIMEOUT_MS)
    for sizes in itertools.product(*(range(1, n + 1) for n in extents)):
        if not tile.satisfied_by(sizes):
            continue
        reads = _read_by_python(py, sizes, extents)
        held = tile.elements(sizes)
        if exact.proved:
            assert held <= reads, (text, sizes, sorted(held - reads))
        if sound.proved:
            assert reads <= held, (text, sizes, sorted(reads - held))
    # the proofs range over the declared extents
    assert [b.hi for b in tile.tile_size_bounds] == extents
