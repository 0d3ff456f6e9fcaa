"""Derived sizes (`verifidx.hlo.dynamic_dims.Quotient`): `floor(P / k)` and `P mod k` of a size
polynomial by a constant, as `jax.export`'s `divmod` of a size computes them (`x[1::2]` has
`b // 2` elements). Checked against Python's `//` and `%` at random sizes, through every way
the reader and the maps read them: `value`, the interval, the map expression at instantiated
sizes, and the comparisons the reader decides on them."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from verifidx.core.expr import Dim
from verifidx.core.indexing_map import IndexingMap
from verifidx.hlo.dynamic_dims import SizeVar, SymSize, declare, instantiate_sizes
from verifidx.hlo.runtime import OperandIndexing

B = SizeVar("b", "test size b", 40)
S = SizeVar("s", "test size s, may be 0", 12, least=0)  # named `s+1` in maps (shifted)

Poly = tuple[int, int, int, int]  # const, coefficient of b, of s, of b * s


def _poly(p: Poly) -> SymSize:
    const, cb, cs, cbs = p
    b, s = SymSize.of(B), SymSize.of(S)
    return b.times(cb).plus(s.times(cs)).plus(b.mul(s).times(cbs)).plus(const)


def _python(p: Poly, b: int, s: int) -> int:
    const, cb, cs, cbs = p
    return const + cb * b + cs * s + cbs * b * s


def _in_map(size: SymSize, b: int, s: int) -> int:
    """`size` read as a map expression (`d0 -> (d0 + size)`), sizes instantiated as `--refine`
    does, at d0 = 0."""
    box = IndexingMap.build([], [(0, 0)])
    m = IndexingMap.build([Dim(0) + size.expr()], [(0, 0)], sizes=declare(box, [size]).sizes)
    fixed = instantiate_sizes(OperandIndexing(m), {"b": b, "s": s}).map
    assert not fixed.sizes
    ((_rt, _d, (r,)),) = fixed.relation()
    return r


polys = st.tuples(st.integers(-30, 30), st.integers(-6, 6), st.integers(-6, 6),
                  st.integers(-3, 3))
values = st.tuples(st.integers(1, 40), st.integers(0, 12))


@given(polys, st.integers(1, 7), values)
def test_a_quotient_of_a_size_evaluates_like_python(p: Poly, k: int, at: tuple[int, int]
                                                    ) -> None:
    b, s = at
    n = _python(p, b, s)
    size = _poly(p)
    for derived, expected in ((size.floordiv(k), n // k), (size.mod(k), n % k)):
        assert derived.value({"b": b, "s": s}) == expected
        assert derived.lo <= expected <= derived.hi
        assert _in_map(derived, b, s) == expected
        # no size of its own: only b and s are declared (s shifted by 1, as it may be 0)
        assert set(derived.variables) <= {B, S}
        declared = declare(IndexingMap.build([], [(0, 0)]), [derived]).sizes
        assert {z.name for z in declared} <= {"b", S.name}
        # the same quotient built again is the same value, key and all
        again = _poly(p).floordiv(k) if derived == size.floordiv(k) else _poly(p).mod(k)
        assert again == derived and hash(again) == hash(derived) and str(again) == str(derived)


@given(polys, st.integers(1, 5), st.integers(-3, 3), st.integers(1, 5), values)
def test_quotients_of_quotients_evaluate_like_python(p: Poly, k: int, c: int, k2: int,
                                                     at: tuple[int, int]) -> None:
    b, s = at
    n = _python(p, b, s)
    outer = _poly(p).floordiv(k).times(c).plus(_poly(p).mod(k)).floordiv(k2)
    expected = ((n // k) * c + n % k) // k2
    assert outer.value({"b": b, "s": s}) == expected
    assert outer.lo <= expected <= outer.hi
    assert _in_map(outer, b, s) == expected


def test_one_value_one_form() -> None:
    """A quotient is kept as `q + floor(r / k)` with `r`'s coefficients in `[0, k)`, so a
    slice's `ceil((b - 1) / 2)` and `divmod`'s `b // 2` are one size, and an exact quotient is
    no quotient."""
    b = SymSize.of(B)
    assert b.plus(-1).plus(2 - 1).floordiv(2) == b.floordiv(2)
    assert b.times(4).plus(3).floordiv(4) == b
    assert b.times(4).plus(3).mod(4) == SymSize(3)
    assert b.floordiv(1) == b and b.mod(1) == SymSize(0)
    assert "floordiv 2" in str(b.floordiv(2)) and "mod 2" in str(b.mod(2))


_DIRECTIONS = {"EQ": lambda x, y: x == y, "NE": lambda x, y: x != y,
               "LT": lambda x, y: x < y, "LE": lambda x, y: x <= y,
               "GT": lambda x, y: x > y, "GE": lambda x, y: x >= y}


@given(polys, st.integers(1, 4), polys, st.sampled_from(sorted(_DIRECTIONS)))
def test_comparisons_of_derived_sizes_are_decided_only_when_true_at_every_size(
        p: Poly, k: int, q: Poly, direction: str) -> None:
    """The reader decides a `compare` of two sizes only where it holds the same at every
    size, checked by brute force over every (b, s)."""
    from verifidx.stablehlo.convert import _decide

    lhs, rhs = _poly(p).floordiv(k), _poly(q).mod(k + 1)
    got = _decide("stablehlo.compare", [lhs, rhs], True, direction, True)
    if got is None:
        return
    test = _DIRECTIONS[direction]
    for b in range(1, 41):
        for s in range(13):
            x, y = _python(p, b, s) // k, _python(q, b, s) % (k + 1)
            assert int(test(x, y)) == got, (b, s, x, y)


def test_a_known_operand_decides_and_or_select_alone() -> None:
    """`x and 0`, `x or 1` and `select` of a known predicate are decided whatever the other
    operand is; with the deciding operand unknown, nothing is."""
    from verifidx.stablehlo.convert import _decide

    zero, one, b = SymSize(0), SymSize(1), SymSize.of(B)
    assert _decide("stablehlo.and", [None, zero], True, "", True) == 0
    assert _decide("stablehlo.or", [one, None], True, "", True) == 1
    assert _decide("stablehlo.and", [None, one], True, "", True) is None
    assert _decide("stablehlo.select", [zero, None, b], False, "", True) == b
    assert _decide("stablehlo.select", [one, None, b], False, "", True) is None
    assert _decide("stablehlo.select", [None, b, b], False, "", True) is None
