"""Symbolic tiles in isolation: constraint algebra and text, tile text round trips, reasons for
no tile, and the prover refuting deliberately broken tiles (so a `proved` means something)."""

from __future__ import annotations

from dataclasses import replace

import pytest

import verifidx as vx
from verifidx.analysis.tiling import NoTile, SymbolicTile, symbolic_tile
from verifidx.analysis.tiling.constraints import ConstraintExpression as CE
from verifidx.analysis.tiling.proof import equivalent, prove_exact, prove_sound
from verifidx.analysis.tiling.symbolic_tile import parse_constraints, tile_from_text
from verifidx.core.expr import Const, Dim, add

D0, D1 = Dim(0), Dim(1)


def test_constraint_algebra_and_text() -> None:
    a, b = CE.of(D0, 1, 1), CE.of(D1, 4, 4)
    assert str(CE.always()) == "always satisfied" and str(CE.never()) == "unsatisfiable"
    both = (a | b) & (b | a)
    assert str(both.simplified()) == "d0 in [1, 1] || d1 in [4, 4]"  # absorption
    assert str((a & b) | a) == "d0 in [1, 1] || d0 in [1, 1] && d1 in [4, 4]"  # sorted
    assert str(((a & b) | a).simplified()) == "d0 in [1, 1]"
    assert (CE.of(D0, 0, 3) & CE.of(D0, 5, 9)).is_unsatisfiable
    assert (CE.of(Const(3), 0, 5) & a).simplified() == a
    assert (CE.of(Const(7), 0, 5) | a).simplified() == a
    assert (a | CE.always()).is_always_satisfied
    assert both.holds({D0: 1, D1: 2}) and not both.holds({D0: 2, D1: 2})


def test_constraint_text_round_trip() -> None:
    text = "6 mod d0 in [0, 0] && 8 mod d1 in [0, 0] || d0 mod 6 in [0, 0] && d1 mod 8 in [0, 0]"
    assert parse_constraints(text).to_text() == text
    with pytest.raises(vx.ParseError):
        parse_constraints("d0 in 1..2")


@pytest.mark.parametrize("text", [
    "(d0) -> (d0 floordiv 8, d0 mod 8), domain: d0 in [0, 63]",
    "(d0, d1, d2, d3) -> (d0 * 48 + d1 * 6 + d2, d3), domain: d0 in [0, 3], d1 in [0, 7], "
    "d2 in [0, 5], d3 in [0, 3]",
    "(d0, d1){rt0} -> (d0 + rt0, d1), domain: d0 in [0, 3], d1 in [0, 7], rt0 in [0, 4]",
])
def test_tile_text_round_trip(text: str) -> None:
    m = vx.parse_map(text)
    tile = symbolic_tile(m)
    assert isinstance(tile, SymbolicTile)
    again = tile_from_text(tile.to_text(), tile.source)
    assert again.to_text() == tile.to_text()
    assert equivalent(tile, again).verdict == "proved"


def test_a_map_dividing_by_a_variable_never_reaches_the_tiler() -> None:
    """Maps divide by constants only (docs/semantics.md, issue 10): the parser rejects this map,
    which the tiler used to answer with a "non-constant" NoTile."""
    with pytest.raises(vx.ParseError, match="positive integer constant as the divisor of mod"):
        vx.parse_map("(d0, d1) -> (d0 mod (d1 + 1)), domain: d0 in [0, 7], d1 in [0, 3]")


@pytest.mark.parametrize(("text", "reason"), [
    ("(d0) -> ((d0 * 5) floordiv 6), domain: d0 in [0, 11]", "floordiv of something"),
    ("(d0, d1) -> (d0 * d1), domain: d0 in [0, 3], d1 in [0, 3]", "product"),
    ("(d0)[s0] -> (d0 + s0), domain: d0 in [0, 7], s0 in [0, 2]", "do not nest"),
    ("(d0, d1) -> (d0 * 4 - d1), domain: d0 in [0, 1], d1 in [0, 3]", "both signs"),
    ("(d0) -> (d0), domain: d0 in [0, 7], d0 mod 2 in [0, 0]", "constraints"),
])
def test_no_tile_says_why(text: str, reason: str) -> None:
    tile = symbolic_tile(vx.parse_map(text))
    assert isinstance(tile, NoTile)
    assert reason in tile.reason


def test_strides_are_evaluated_with_clamped_sizes() -> None:
    tile = symbolic_tile(vx.parse_map("(d0, d1) -> (d0 * 4 + d1), domain: d0 in [0, 1], "
                                      "d1 in [0, 3]"))
    assert isinstance(tile, SymbolicTile)
    assert tile.evaluate_strides([1, 4]) == (1,)
    assert tile.evaluate_strides([2, 1]) == (4,)
    assert tile.evaluate_strides([2, 9]) == tile.evaluate_strides([2, 4])


@pytest.mark.parametrize("text", [
    "(d0) -> (d0 floordiv 8, d0 mod 8), domain: d0 in [0, 31]",
    "(d0, d1) -> (d1, d0 * 2 + 3), domain: d0 in [0, 5], d1 in [0, 4]",
    "(d0)[s0] -> (d0 * 4 + s0), domain: d0 in [0, 7], s0 in [0, 3]",
])
def test_broken_tiles_are_refuted(text: str) -> None:
    tile = symbolic_tile(vx.parse_map(text))
    assert isinstance(tile, SymbolicTile)
    assert prove_sound(tile).verdict == "proved" and prove_exact(tile).verdict == "proved"
    for j in range(tile.rank):
        smaller = replace(tile, sizes=tuple(add(s, -1) if i == j else s
                                            for i, s in enumerate(tile.sizes)))
        verdict = prove_sound(smaller)
        assert verdict.verdict == "refuted" and verdict.counterexample, (j, verdict)
        assert "[" not in verdict.message, verdict.message  # points as maps write them: (3, 1)
        larger = replace(tile, sizes=tuple(add(s, 1) if i == j else s
                                           for i, s in enumerate(tile.sizes)))
        assert prove_sound(larger).verdict == "proved"
        exact = prove_exact(larger)
        assert exact.verdict == "refuted" and "[" not in exact.message, exact.message
    shifted = replace(tile, offsets=tuple(add(o, 1) for o in tile.offsets))
    assert prove_sound(shifted).verdict == "refuted"
