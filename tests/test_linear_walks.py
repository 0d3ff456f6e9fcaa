"""Passes over a module are linear in its instructions: who calls whom is computed once per
module, not once per computation (issue 25)."""

from __future__ import annotations

import pytest

from verifidx.analysis import computation_maps
from verifidx.analysis.computation_maps import computation_indexing, reported_computations
from verifidx.hlo import parse_hlo


def _chain_of_fusions(n: int) -> str:
    """An entry that runs `n` fusions one after the other, each with its own body."""
    bodies = [f"f{k} {{\n  p0 = f32[8] parameter(0)\n  ROOT n = f32[8] negate(p0)\n}}\n"
              for k in range(n)]
    entry = ["ENTRY e {", "  x0 = f32[8] parameter(0)"]
    for k in range(n):
        root = "ROOT " if k == n - 1 else ""
        entry.append(f"  {root}x{k + 1} = f32[8] fusion(x{k}), kind=kLoop, calls=f{k}")
    return "HloModule chain\n\n" + "".join(bodies) + "\n".join(entry) + "\n}\n"


def _reads_of_callees(monkeypatch: pytest.MonkeyPatch, n: int) -> tuple[int, int]:
    """How many instructions the maps of every computation look at for the computations they
    call (each look goes over the attributes that name computations once), and how many
    instructions the module has. (Counted there rather than on the instructions, whose class
    the compiled build cannot patch.)"""
    module = parse_hlo(_chain_of_fusions(n))
    instructions = sum(len(c.instructions) for c in module.computations.values())
    reads = 0

    class Counted(tuple):  # type: ignore[type-arg]
        def __iter__(self):  # type: ignore[no-untyped-def]
            nonlocal reads
            reads += 1
            return super().__iter__()

    monkeypatch.setattr(computation_maps, "COMPUTATION_ATTRIBUTES",
                        Counted(computation_maps.COMPUTATION_ATTRIBUTES))
    for comp in reported_computations(module):
        ci = computation_indexing(module, comp)
        assert ci.role == ("entry" if comp is module.entry else "fusion")
    monkeypatch.undo()
    assert reads >= instructions  # (every instruction looked at: the count counts)
    return reads, instructions


def test_roles_are_found_in_one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    # Before: every computation's role scanned every instruction of the module (n^2 reads).
    reads, instructions = _reads_of_callees(monkeypatch, 80)
    assert reads <= 4 * instructions, (reads, instructions)


def test_work_grows_linearly(monkeypatch: pytest.MonkeyPatch) -> None:
    small, n_small = _reads_of_callees(monkeypatch, 20)
    large, n_large = _reads_of_callees(monkeypatch, 80)
    assert large / small <= 1.5 * n_large / n_small, (small, large)
