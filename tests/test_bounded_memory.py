"""Memory levels off when many distinct maps are simplified (issue 25): the intern table and
the caches keyed by expressions let go of what nothing refers to, and identity (which is how
expressions compare) survives it."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Iterator

import pytest

import verifidx as vx
from verifidx.core import expr


def _distinct_maps(start: int, count: int) -> Iterator[str]:
    for i in range(start, start + count):
        a, b, c = 3 + i % 97, 5 + (i // 97) % 89, 7 + i // (97 * 89)
        yield (f"(d0, d1)[s0] -> ((d0 * {a} + d1) floordiv {b} + s0 mod {c}, d1 mod {a + b}), "
               f"domain: d0 in [0, {a * 2}], d1 in [0, {b}], s0 in [0, {c}]")


@pytest.fixture
def small_table() -> Iterator[None]:
    before = expr.TABLE_GROWTH
    expr.set_table_growth(1500)
    yield
    expr.set_table_growth(before)


def test_memory_levels_off(small_table: None) -> None:
    def simplify_many(start: int) -> int:
        for text in _distinct_maps(start, 150):
            vx.simplify(vx.parse_map(text))
        gc.collect()
        return tracemalloc.get_traced_memory()[0]

    simplify_many(0)  # warm: rule base, compiled guards
    tracemalloc.start()
    try:
        levels = [simplify_many(150 * k) for k in range(1, 7)]
    finally:
        tracemalloc.stop()
    # Before: every map kept about 10 KiB (the table and the caches only grew), 900 maps
    # about 9 MiB. Now what stays is bounded by the table's growth between sweeps.
    assert max(levels[3:]) < 1.5 * max(levels[:3]) + (1 << 20), levels
    assert expr.table_size() < 3 * 1500, expr.table_size()


def test_a_held_expression_stays_the_one(small_table: None) -> None:
    held = vx.parse_map("(d0) -> (d0 * 12345 + 678), domain: d0 in [0, 9]").results[0]
    text = str(held)
    for source in _distinct_maps(5000, 100):
        vx.parse_map(source)
    assert expr.release_unused() > 0
    again = vx.parse_map("(d0) -> (d0 * 12345 + 678), domain: d0 in [0, 9]").results[0]
    assert again is held and str(again) == text
    rebuilt = expr.add(expr.mul(expr.Dim(0), 12345), 678)
    assert rebuilt is held


def test_simplification_is_the_same_after_a_sweep() -> None:
    sources = list(_distinct_maps(9000, 60))
    first = [str(vx.simplify(vx.parse_map(s))) for s in sources]
    expr.release_unused()
    again = [str(vx.simplify(vx.parse_map(s))) for s in sources]
    assert again == first
