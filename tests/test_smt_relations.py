"""Equality of unions of maps (`smt.equal_relations`, `vx.equal` on lists) agrees with
brute-force enumeration of the relations, and its counterexamples are real."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from strategies import maps

import verifidx as vx
from verifidx.solve.smt import equal_relations


def _union(ms) -> set:
    out: set = set()
    for m in ms:
        out |= m.relation()
    return out


def _lists(n_dims: int, n_results: int):
    one = maps(max_syms=1, max_rts=0, num_dims=n_dims, num_results=n_results, minmax=False)
    return st.lists(one, min_size=1, max_size=3)


@st.composite
def _pairs(draw):
    nd, nr = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    lhs = draw(_lists(nd, nr))
    if draw(st.booleans()):  # cut the same relation differently: a map and its two halves
        rhs = list(lhs)
    else:
        rhs = draw(_lists(nd, nr))
    return lhs, rhs


@given(_pairs())
def test_union_equality_agrees_with_enumeration(pair) -> None:
    lhs, rhs = pair
    v = equal_relations(lhs, rhs)
    assert v.holds is not None, v.message
    assert v.holds == (_union(lhs) == _union(rhs))
    if v.holds is False:
        owner, other = (lhs, rhs) if v.message.startswith("lhs") else (rhs, lhs)
        m = owner[int(v.message[4])]
        point = v.counterexample
        dims = [point[f"d{i}"] for i in range(m.num_dims)]
        syms = [point[f"s{i}"] for i in range(m.num_range_vars)]
        tup = ((), tuple(dims), m.evaluate(dims, syms))
        assert tup in m.relation() and tup not in _union(other)


def test_concatenate_pieces_equal_one_shifted_map() -> None:
    # reading [0, 9] through two pieces [0, 4] and [5, 9] is the identity on [0, 9]
    whole = vx.parse_map("(d0) -> (d0), domain: d0 in [0, 9]")
    low = vx.parse_map("(d0) -> (d0), domain: d0 in [0, 4]")
    high = vx.parse_map("(d0) -> (d0), domain: d0 in [5, 9]")
    assert vx.equal([low, high], whole).holds is True
    assert vx.equal([low], whole).holds is False
    assert vx.equal(low, whole).holds is False  # single maps still go to smt.equal
    wrong = vx.parse_map("(d0) -> (d0 + 1), domain: d0 in [5, 9]")
    v = vx.equal([low, wrong], [whole])
    assert v.holds is False and v.counterexample is not None
