"""`verifidx.analysis.refinement.witness`: the point a refinement is refuted at holds for every
value of the runtime variables (issue 38 item 1).

The oracle enumerates each map's relation (`IndexingMap.relation`, not the evaluator the witness
uses) and checks the claim directly: at the point, the union of what one side's maps read
differs from the other side's for every assignment of every map's runtime variables, each
map's drawn independently (the programs' actual values are one such assignment).
"""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from verifidx import parse_map
from verifidx.analysis.refinement import witness
from verifidx.core.indexing_map import IndexingMap


@st.composite
def maps(draw: st.DrawFn, rt: bool) -> IndexingMap:
    """(d0)[s0]{rt0} -> (a*d0 + b*s0 + c*rt0 + e), with small boxes and maybe a constraint."""
    n = draw(st.integers(1, 4))
    a, b, c, e = (draw(st.integers(-2, 2)) for _ in range(4))
    has_s = draw(st.booleans())
    has_rt = rt and draw(st.booleans())
    head = "(d0)" + ("[s0]" if has_s else "") + ("{rt0}" if has_rt else "")
    terms = [f"{a} * d0", f"{b} * s0" if has_s else "0", f"{c} * rt0" if has_rt else "0", str(e)]
    domain = [f"d0 in [0, {n - 1}]"]
    if has_s:
        domain.append(f"s0 in [0, {draw(st.integers(0, 2))}]")
    if has_rt:
        domain.append(f"rt0 in [0, {draw(st.integers(0, 3))}]")
        if draw(st.booleans()):
            lo = draw(st.integers(0, 3))
            domain.append(f"d0 + rt0 in [{lo}, {lo + draw(st.integers(0, 3))}]")
    return parse_map(f"{head} -> ({' + '.join(terms)}), domain: {', '.join(domain)}")


def reads(m: IndexingMap, point: tuple[int, ...], rts: tuple[int, ...]) -> frozenset:
    return frozenset(res for r, d, res in m.relation() if d == point and r == rts)


def differ_for_every_value(xs: list[IndexingMap], ys: list[IndexingMap],
                           point: tuple[int, ...]) -> bool:
    def unions(side: list[IndexingMap]):
        boxes = [itertools.product(*(range(v.bounds.lo, v.bounds.hi + 1) for v in m.rt_vars))
                 for m in side]
        for values in itertools.product(*(list(b) for b in boxes)):
            yield frozenset().union(*(reads(m, point, t) for m, t in zip(side, values)))
    ours, theirs = set(unions(xs)), set(unions(ys))
    return not ours & theirs


def sides(rt: bool) -> st.SearchStrategy:
    return st.tuples(st.lists(maps(rt), min_size=1, max_size=2),
                     st.lists(maps(rt), min_size=1, max_size=2))


@settings(max_examples=150, deadline=None)
@given(sides(rt=True))
def test_a_witness_holds_for_every_value_of_the_runtime_variables(pair) -> None:
    xs, ys = pair
    found = witness(xs, ys, [])
    if found is not None:
        point, which = found
        assert which in ("first", "second")
        assert differ_for_every_value(xs, ys, (point["d0"],)), (xs, ys, point)


@settings(max_examples=100, deadline=None)
@given(sides(rt=False))
def test_without_runtime_variables_every_difference_has_a_witness(pair) -> None:
    """Not vacuous: without runtime variables the witness is exactly a point where the unions
    differ (the output box is small, so every point is tried)."""
    xs, ys = pair
    points = sorted({(d,) for m in (*xs, *ys) for d in range(m.dims[0].bounds.lo,
                                                               m.dims[0].bounds.hi + 1)})
    differs = any(differ_for_every_value(xs, ys, p) for p in points)
    assert (witness(xs, ys, []) is not None) == differs, (xs, ys)


def test_the_reversal_kept_as_a_gather_index_has_no_witness() -> None:
    """Issue 38's x[::-1] at b = 5: the index rt0 is 4 - d0 in the program, so the maps agree."""
    parametric = parse_map("(d0, d1) -> (-d0 + 4, d1), domain: d0 in [0, 4], d1 in [0, 7]")
    refined = parse_map("(d0, d1){rt0} -> (rt0, d1), domain: d0 in [0, 4], d1 in [0, 7], "
                        "rt0 in [0, 4]")
    assert witness([parametric], [refined], [{"d0": 0, "d1": 0}]) is None
    # a row outside the refined program's output is read whatever the index: refuted there
    wider = parse_map("(d0, d1){rt0} -> (rt0, d1), domain: d0 in [0, 5], d1 in [0, 7], "
                      "rt0 in [0, 4]")
    assert witness([wider], [refined], []) == ({"d0": 5, "d1": 0}, "first")
