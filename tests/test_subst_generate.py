"""`subst generate`: TASO-style enumeration whose candidates are all proven, pruned consistently,
and which rediscovers hand-written substitutions."""

from __future__ import annotations

from pathlib import Path

import pytest

from verifidx.errors import UnsupportedError
from verifidx.subst.generate import fingerprint, generate, report
from verifidx.subst.parser import parse_substitutions
from verifidx.subst.prove import PROVED, prove

REPO = Path(__file__).resolve().parents[1]


def test_generation_over_transpose_and_reverse() -> None:
    g = generate(["transpose", "reverse"], 2, compare=[REPO / "rules"])
    assert g.graphs > 0 and g.classes > 0
    accounted = (g.pruned_transitive + g.pruned_renaming + g.pruned_common + g.proven_general
                 + g.proven_concrete + g.refuted + g.unknown)
    assert accounted == g.candidates
    assert g.refuted == 0 and g.unknown == 0  # equal fingerprints are equal maps at these shapes
    assert len(g.kept) == g.proven_general + g.proven_concrete - g.pruned_implied
    for name in ("transpose_transpose", "transpose_inverse", "reverse_reverse"):
        assert g.rediscovered[name] is not None, name
    kept_text = g.text()
    for sub in parse_substitutions(kept_text, "<kept>"):
        assert prove(sub).verdict == PROVED
        assert sub.lhs.op_count() > sub.rhs.op_count()
    text = report(g)
    assert "743 substitutions from 44" in text
    assert f"graphs enumerated:                 {g.graphs}" in text


def test_fingerprints_are_composed_maps() -> None:
    (sub,) = parse_substitutions("subst s:\n  inputs x[2, 3, 4]\n"
                                 "  transpose(transpose(x, perm=[1, 2, 0]), perm=[2, 0, 1]) => x\n")
    assert fingerprint(sub.lhs) == fingerprint(sub.rhs)
    (other,) = parse_substitutions(
        "subst s:\n  inputs x[2, 3, 4]\n"
        "  transpose(transpose(x, perm=[1, 2, 0]), perm=[1, 2, 0]) => x\n")
    assert fingerprint(other.lhs) != fingerprint(other.rhs)


def test_unsupported_ops_are_refused() -> None:
    with pytest.raises(UnsupportedError, match="not yet supported"):
        generate(["gather"], 2)
