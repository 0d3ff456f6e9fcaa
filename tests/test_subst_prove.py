"""Substitutions: parsing, proofs of the shipped ones, and refutations of deliberately wrong ones
whose counterexamples an independent numpy oracle confirms."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import pytest
from subst_oracle import Oracle, OracleIllFormed

from verifidx import ParseError
from verifidx.analysis.subst.model import evaluate
from verifidx.analysis.subst.parser import load_substitution_file, parse_substitutions
from verifidx.analysis.subst.prove import PROVED, REFUTED, exhaustive, instances, prove

REPO = Path(__file__).resolve().parents[1]
SHIPPED = load_substitution_file(REPO / "rules" / "data_movement.subst")
WRONG = load_substitution_file(REPO / "tests" / "data" / "subst_wrong.subst")


def _cond_ok(sub, env) -> bool:
    ops = {"==": int.__eq__, "!=": int.__ne__, "<": int.__lt__, "<=": int.__le__,
           ">": int.__gt__, ">=": int.__ge__}
    return all(ops[c.op](int(evaluate(c.lhs, env)), int(evaluate(c.rhs, env)))
               for c in sub.conditions)


@pytest.mark.parametrize("sub", WRONG, ids=[s.name for s in WRONG])
def test_wrong_substitutions_are_refuted_and_the_oracle_confirms(sub) -> None:
    res = prove(sub)
    assert res.verdict == REFUTED, res.message
    cx = res.counterexample
    assert cx is not None and str(cx) in res.message
    lists = next(i.lists for i in instances(sub) if i.perms == cx.perms or not cx.perms
                 if all(len(v) == len([k for k in cx.sizes if k.startswith(n) and
                                       k[len(n):].isdigit()]) for n, v in i.lists.items()))
    assert _cond_ok(sub, cx.sizes)
    oracle = Oracle(cx.shapes, cx.sizes, lists, cx.perms)
    left = oracle.run(sub.lhs)  # the left side is well formed at the counterexample
    try:
        right = oracle.run(sub.rhs)
    except OracleIllFormed:
        assert cx.index is None and "ill formed" in cx.reason
        return
    if cx.index is None:
        assert left.shape != right.shape
        return
    assert left.shape == right.shape
    lhs_read, rhs_read = oracle.decode[int(left[cx.index])], oracle.decode[int(right[cx.index])]
    assert (lhs_read[0], tuple(lhs_read[1])) == cx.lhs_read
    assert (rhs_read[0], tuple(rhs_read[1])) == cx.rhs_read
    assert lhs_read != rhs_read


@pytest.mark.parametrize("sub", SHIPPED, ids=[s.name for s in SHIPPED])
def test_shipped_substitutions_agree_with_the_oracle_on_random_instances(sub) -> None:
    """Independent of the prover: random small instances where the left side is well formed
    compute the same array on both sides."""
    rng = random.Random(sub.name)
    insts = list(instances(sub, max_rank=3))
    checked = 0
    for _ in range(100_000):
        if checked >= 30:
            break
        inst = rng.choice(insts)
        names: set[str] = set()
        for node in (*sub.lhs.nodes(), *sub.rhs.nodes()):
            for _k, v in node.attrs:
                names |= _names(v, inst.lists)
        for _n, s in sub.inputs:
            names |= _names(s, inst.lists)
        env = {n: rng.randint(0, 4) if n[0] in "stulhkm" else rng.randint(1, 4)
               for n in sorted(names)}
        if not _cond_ok(sub, env):
            continue
        shapes = {}
        for n, s in sub.inputs:
            shapes[n] = tuple(env[k] for k in inst.lists[s.variadic]) if s.variadic else \
                tuple(int(evaluate(e, env)) for e in s.items)
        oracle = Oracle(shapes, env, inst.lists, inst.perms)
        try:
            left = oracle.run(sub.lhs)
        except OracleIllFormed:
            continue
        right = oracle.run(sub.rhs)
        assert left.shape == right.shape and (left == right).all(), (env, inst)
        checked += 1
    assert checked >= 5


def _names(v, lists) -> set[str]:
    from verifidx.analysis.subst.model import SizeList, names_in

    if isinstance(v, SizeList):
        out = set(lists[v.variadic]) if v.variadic else set()
        for e in v.items:
            out |= names_in(e)
        return out
    return set()


def test_shipped_substitutions_are_proven() -> None:
    for sub in SHIPPED:
        if sub.name == "reshape_reshape":
            continue  # exhaustive over sizes <= 4: a minute; the gate checks its certificate
        res = prove(sub)
        assert res.verdict == PROVED, (sub.name, res.message)
        assert res.strength and ("all sizes" in res.strength or "sizes <=" in res.strength)


def test_transpose_transpose_is_proven_for_every_permutation_pair() -> None:
    sub = next(s for s in SHIPPED if s.name == "transpose_transpose")
    res = prove(sub, max_rank=3)
    assert res.verdict == PROVED and res.strength == "all sizes, ranks <= 3"
    assert res.instances == 1 + 4 + 36  # 1!^2 + 2!^2 + 3!^2


@pytest.mark.parametrize("text, where, message", [
    ("subst a:\n  inputs x[n]\n  frob(x) => x", (3, 3), "unknown op 'frob'"),
    ("subst a:\n  inputs x[n]\n  copy(x) => y", (3, 3), "'y' is not a declared input"),
    ("subst a:\n  inputs x[n]\n  copy(x)", (3, 10), "expected '=>'"),
    ("subst a:\n  inputs x[n]\n  transpose(x, perm=p) => x", (3, 3), "not declared with"),
    ("subst a:\n  inputs x[n]\n  slice(x, start=[0]) => x", (3, 3), "needs the attribute"),
    ("subst a:\n  inputs x[n]\n  copy(x) => slice(x, start=[z], limit=[n])", (3, 3),
     "'z' on the right side"),
])
def test_parse_errors_name_the_place(text, where, message) -> None:
    with pytest.raises(ParseError) as info:
        parse_substitutions(text, "t.subst")
    assert (info.value.line, info.value.column) == where, str(info.value)
    assert message in str(info.value)


def test_permutation_instances_cover_every_rank() -> None:
    sub = next(s for s in SHIPPED if s.name == "transpose_inverse")
    seen = {len(i.perms["p"]) for i in instances(sub, 3)}
    assert seen == {1, 2, 3}
    assert sum(1 for _ in instances(sub, 3)) == sum(len(list(itertools.permutations(range(r))))
                                                    for r in (1, 2, 3))


def test_check_gates_substitutions(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from verifidx.cli import main

    # an empty proof cache of its own: another test may have re-checked these already
    monkeypatch.setenv("VERIFIDX_CACHE_DIR", str(tmp_path / "cache"))
    assert main(["check", str(REPO / "rules")]) == 0
    out = capsys.readouterr().out
    # re-checked, not believed: the certificate's queries ran again (tests/test_subst_gate.py)
    assert "transpose_transpose: proved (all sizes, ranks <= 3), re-checked" in out
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "dm.subst").write_text("subst a:\n  inputs x[n]\n  copy(x) => x\n")
    assert main(["check", str(rules / "dm.subst")]) == 1
    assert "a: missing" in capsys.readouterr().out
    assert main(["subst", "prove", str(rules / "dm.subst")]) == 0
    assert (tmp_path / "proofs" / "dm.subst.json").exists()
    capsys.readouterr()
    assert main(["check", str(rules)]) == 0
    (rules / "dm.subst").write_text("subst a:\n  inputs x[n]\n  reverse(x, dims=[0]) => x\n")
    assert main(["check", str(rules)]) == 1
    assert "a: stale" in capsys.readouterr().out
    assert main(["subst", "prove", str(rules)]) == 1
    assert "refuted" in capsys.readouterr().out


def test_enumeration_survives_a_stride_parameter_set_to_zero() -> None:
    """A stride parameter ranges over [-M, M] in the enumeration; stride 0 makes the slice ill
    formed, which must exclude the assignment, not raise ZeroDivisionError."""
    (sub,) = parse_substitutions(
        "subst strided:\n  inputs x[a]\n"
        "  slice(slice(x, start=[0], limit=[a], stride=[t]), start=[0], limit=[1])"
        " => slice(x, start=[0], limit=[1])\n")
    (inst,) = instances(sub, 1)
    assert exhaustive(sub, inst, 4) is True
    # and a wrong one with the same stride parameter is still refuted by the enumeration
    (bad,) = parse_substitutions(
        "subst strided_bad:\n  inputs x[a]\n"
        "  slice(slice(x, start=[0], limit=[a], stride=[t]), start=[1], limit=[2])"
        " => slice(x, start=[1], limit=[2])\n")
    (inst,) = instances(bad, 1)
    assert exhaustive(bad, inst, 4) not in (True, None)
