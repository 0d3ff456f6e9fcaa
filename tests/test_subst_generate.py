"""`subst generate`: TASO-style enumeration whose substitutions are all proven, whose pruning
accounts for every candidate, and whose rediscovery of hand-written substitutions is decided by
instance matching (and cross-checked here with `optimize`'s independent matcher)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from subst_oracle import Oracle

from verifidx.analysis.subst.apply import optimize
from verifidx.analysis.subst.generate import Generated, fingerprint, generate, report
from verifidx.analysis.subst.instances import Instance, has_instance, sample
from verifidx.analysis.subst.model import Node
from verifidx.analysis.subst.parser import load_substitution_file, parse_substitutions
from verifidx.analysis.subst.prove import PROVED, prove
from verifidx.analysis.subst.semantics import INTS, Graph
from verifidx.cli import main
from verifidx.core.errors import UnsupportedError

REPO = Path(__file__).resolve().parents[1]
HAND = {s.name: s for s in load_substitution_file(REPO / "rules" / "data_movement.subst")}
SMALL_OPS = ["transpose", "reverse", "copy", "broadcast"]


@pytest.fixture(scope="module")
def small() -> Generated:
    return generate(SMALL_OPS, 2, compare=[REPO / "rules"])


def _oracle_equal(inst: Instance) -> bool:
    o = Oracle(dict(inst.shapes), {}, {}, {})
    left, right = o.run(inst.lhs), o.run(inst.rhs)
    return left.shape == right.shape and bool(np.array_equal(left, right))


def _hlo(inst: Instance) -> str:
    """An HLO module computing the instance's left side (a negate keeps it off the root)."""
    from verifidx.analysis.subst.apply import _attr_text, _attrs_for
    from verifidx.analysis.subst.model import SizeList

    g = Graph(INTS, {}, {}, {n: SizeList(s) for n, s in inst.shapes.items()}, {})
    lines = [f"  {n} = f32[{','.join(map(str, s))}] parameter({k})"
             for k, (n, s) in enumerate(inst.shapes.items())]
    names: dict[int, str] = {}

    def emit(n: Node) -> str:
        if n.op == "input":
            return n.name
        args = [emit(a) for a in n.args]
        names[id(n)] = f"t{len(names)}"
        shape = ",".join(map(str, g.shape(n)))
        lines.append(f"  {names[id(n)]} = f32[{shape}] {n.op}({', '.join(args)})"
                     f"{_attr_text(n.op, _attrs_for(n, g))}")
        return names[id(n)]

    root = emit(inst.lhs)
    lines.append(f"  ROOT out = f32[{','.join(map(str, g.shape(inst.lhs)))}] negate({root})")
    return "HloModule g\nENTRY e {\n" + "\n".join(lines) + "\n}\n"


def test_every_candidate_is_accounted_for_and_nothing_unproven_is_kept(small: Generated) -> None:
    g = small
    assert g.graphs > 0 and g.classes > 0 and g.groups > 0
    assert g.candidates == (g.pruned_transitive + g.pruned_renaming + g.pruned_common
                            + g.pruned_same_size + g.instances_generalized)
    assert g.refuted == 0 and g.unknown == 0  # equal fingerprints are equal maps here
    assert len(g.proven) == g.proven_general + g.proven_concrete - g.pruned_duplicate
    assert len(g.kept) == len(g.proven) - g.pruned_subsumed
    for sub in parse_substitutions(g.text(), "<kept>"):
        assert prove(sub).verdict == PROVED, sub.name
        assert sub.lhs.op_count() >= sub.rhs.op_count()


def test_each_kept_substitution_has_its_instances_and_they_are_equal(small: Generated) -> None:
    for sub in small.kept:
        for inst in small.covers[sub.name]:
            assert has_instance(sub, inst), (sub.name, str(inst))
            assert _oracle_equal(inst), str(inst)


def test_rediscovery_is_computed_and_cross_checked(small: Generated) -> None:
    g = small
    found = {r.name: r for r in g.rediscovered}
    assert set(found) == set(HAND)
    assert g.rediscovered_count == sum(r.by is not None for r in g.rediscovered)
    # what these four ops must give back: transposes, reversals, copies, identity broadcasts
    expected = {"transpose_transpose", "transpose_inverse", "copy_noop", "reverse_reverse",
                "reverse_reverse_last_2d", "reverse_reverse_last_3d", "reverse_reverse_3d",
                "broadcast_identity_1d", "broadcast_identity_2d", "broadcast_identity_3d",
                "transpose_broadcast_vector", "transpose_broadcast_scalar_2d"}
    assert expected <= {n for n, r in found.items() if r.by}
    by_name = {s.name: s for s in g.proven}
    for r in g.rediscovered:
        if r.by is None:
            assert r.reason  # every miss says why
            continue
        witness = by_name[r.by]
        insts = sample(HAND[r.name])
        assert insts and all(has_instance(witness, i) for i in insts)
        # independently: optimize's own matcher applies the witness to one instance's module
        # and leaves exactly the hand-written right side's number of ops
        inst = insts[-1]
        if inst.lhs.op_count() > inst.rhs.op_count():
            res = optimize(_hlo(inst), "<instance>", [witness])
            assert res.ops_after == inst.rhs.op_count(), (r.name, r.by, res.summary())
    for r in g.rediscovered:
        if r.by is None and "not among the generated ops" not in r.reason:
            assert "sampled instances" in r.reason or "depth" in r.reason, r


def test_instances_are_decided_exactly() -> None:
    tt = HAND["transpose_transpose"]
    for inst in sample(tt):
        assert has_instance(tt, inst) and _oracle_equal(inst)
    (wrong,) = parse_substitutions("subst w:\n  inputs x[2, 3]\n"
                                   "  transpose(transpose(x, perm=[1, 0]), perm=[1, 0]) => "
                                   "transpose(x, perm=[1, 0])\n")
    inst = Instance(wrong.lhs, wrong.rhs, {"x": (2, 3)})
    assert not has_instance(tt, inst)  # compose([1, 0], [1, 0]) is the identity
    first = HAND["slice_concat_first"]
    (crossing,) = parse_substitutions(
        "subst c:\n  inputs x[2, 3], y[2, 3]\n  slice(concatenate(x, y, dim=0), start=[1, 0], "
        "limit=[3, 3]) => slice(x, start=[1, 0], limit=[3, 3])\n")
    assert not has_instance(first, Instance(crossing.lhs, crossing.rhs,
                                            {"x": (2, 3), "y": (2, 3)}))  # l <= a fails
    renamed = sample(first)[0]
    swapped = {"x": "y", "y": "x"}

    def rename(n: Node) -> Node:
        if n.op == "input":
            return Node("input", name=swapped[n.name])
        return Node(n.op, tuple(rename(a) for a in n.args), n.attrs)

    assert has_instance(first, Instance(rename(renamed.lhs), rename(renamed.rhs),
                                        {"x": (2, 3), "y": (2, 3)}))


def test_fingerprints_are_composed_maps() -> None:
    (sub,) = parse_substitutions("subst s:\n  inputs x[2, 3, 4]\n"
                                 "  transpose(transpose(x, perm=[1, 2, 0]), perm=[2, 0, 1]) => x\n")
    assert fingerprint(sub.lhs) == fingerprint(sub.rhs)
    (other,) = parse_substitutions(
        "subst s:\n  inputs x[2, 3, 4]\n"
        "  transpose(transpose(x, perm=[1, 2, 0]), perm=[1, 2, 0]) => x\n")
    assert fingerprint(other.lhs) != fingerprint(other.rhs)


def test_report_and_cli(small: Generated, capsys: pytest.CaptureFixture[str]) -> None:
    text = report(small)
    assert "743 substitutions from 44" in text
    assert f"graphs enumerated:                    {small.graphs}" in text
    assert f"rediscovered: {small.rediscovered_count} of {len(HAND)}" in text
    assert main(["subst", "generate", "--ops", "transpose,copy", "--ranks", "2",
                 "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["ranks"] == [2] and out["rediscovered_count"] >= 2
    assert main(["subst", "generate", "--ranks", "4"]) == 2


def test_unsupported_ops_are_refused() -> None:
    with pytest.raises(UnsupportedError, match="not yet supported"):
        generate(["gather"], 2)
