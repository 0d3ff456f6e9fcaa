"""Real JAX modules (tests/data/jax, dumped by tools/dump_jax_hlo.py): every computation that is
the entry, a fusion body or a call target gets maps for every parameter, and at sampled output
points those maps contain every element the independent oracle (tests/fusion_oracle.py) says is
read: no read missed. Reads the maps allow but the oracle does not see are counted and
printed (over-approximation is sound, but it is reported)."""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path

import pytest
from fusion_oracle import Unsupported, all_reads, sample_points

from verifidx.analysis.computation_maps import computation_indexing, reported_computations
from verifidx.core.indexing_map import IndexingMap
from verifidx.hlo import parse_hlo

DATA = Path(__file__).resolve().parent / "data" / "jax"
FILES = sorted(DATA.glob("*.hlo"))


def _reads_of_map(m: IndexingMap, point: tuple[int, ...]) -> set[tuple[int, ...]] | None:
    """Every result of the map at dimension values `point` (range and runtime variables
    enumerated); None for an UNDEFINED map ("unknown indexing")."""
    if m.is_undefined:
        return None
    if m.is_known_empty:
        return set()
    if any(x not in v.bounds for x, v in zip(point, m.dims)):
        return set()
    boxes = [range(v.bounds.lo, v.bounds.hi + 1) for v in (*m.range_vars, *m.rt_vars)]
    out: set[tuple[int, ...]] = set()
    for symbols in itertools.product(*boxes):
        if m.constraints_satisfied(point, symbols):
            out.add(m.evaluate(point, symbols))
    return out


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_no_read_is_missed(path: Path) -> None:
    module = parse_hlo(path.read_text(), str(path))
    counts: Counter[str] = Counter()
    for comp in reported_computations(module):
        ci = computation_indexing(module, comp, "out2in")
        for o, shape in enumerate(ci.outputs):
            points = sample_points(shape.dims, 8, seed=o)
            try:
                truth = all_reads(module, comp, o, points=points)
            except Unsupported as err:
                counts[f"skipped: {err}"] += 1
                continue
            for point, reads in truth.items():
                for p in comp.parameters:
                    for leaf in range(len(p.shape.leaves())):
                        key = (p.parameter_number, leaf) if p.shape.is_tuple \
                            else p.parameter_number
                        want = reads.get(key, set())
                        maps = ci.maps_for(o, p.parameter_number or 0, leaf)
                        allowed: set[tuple[int, ...]] = set()
                        unknown = False
                        for m in maps:
                            got = _reads_of_map(m.map, point)
                            if got is None:
                                unknown = True
                            else:
                                allowed |= got
                        if unknown:
                            counts["unknown indexing (sound, not checked)"] += 1
                            continue
                        missed = want - allowed
                        assert not missed, (comp.name, o, point, p.name, sorted(missed)[:5])
                        counts["checked"] += 1
                        if allowed - want:
                            counts["with extra reads"] += 1
    print(f"\n{path.name}: {dict(counts)}")
    assert counts["checked"] > 0
