"""What the gate and the simplifier believe, tried the way an attacker would (issue 22).

A bounded certificate forged to a bound below the prover's minimum, or to one whose cases are
all vacuous; a user rule whose certificate was edited to `proved`; a user rule named like a
bundled one; a proof-cache entry dropped next to a forged certificate; the pre-commit hook on
a `.subst` edit. And the verdicts of the provers and the gate on a loaded machine: the same
answers, and the same Z3 resource counts, as on an idle one.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import REPO

import verifidx as vx
from verifidx.cli import main
from verifidx.rules.base import UnprovenRuleWarning

WRONG_MOD = "rule bad: x mod c0 => 0 if c0 > 0\n"
# true, but its conditions admit no constant |c0| <= 100: a bounded proof below that is vacuous
HIGH_MOD = "rule high: (x mod c0) mod c0 => x mod c0 if c0 > 100\n"
WRONG_DIV = "rule fd_mul: (x floordiv c0) * c0 => x\n  if c0 > 0\n"
GOOD_MOD = "rule my_twice: (x mod c0) mod c0 => x mod c0 if c0 > 0\n"


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "rules").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("VERIFIDX_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def _forge(cert: Path, name: str, change: dict[str, object]) -> None:
    """Edit one entry by hand as an attacker would: a verdict, a strength, no counterexample."""
    doc = json.loads(cert.read_text())
    entry = doc["rules"][name]
    for k in ("counterexample", "lhs_value", "rhs_value", "subterms", "reproducer", "message"):
        entry.pop(k, None)
    entry.update(change)
    cert.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")


def _bounded(rule_text: str, n: int) -> dict[str, object]:
    from verifidx.rules.parser import parse_rules
    from verifidx.rules.prover import bounded_base

    rule = parse_rules(rule_text)[0]
    return {"verdict": "proved", "strength": f"bounded: |c| <= {n}", "strategy": "bounded",
            "smtlib": bounded_base(rule), "enumerated": ["c0"], "rlimit": 3_000_000}


# -- 3. bounded certificates -------------------------------------------------------------------


@pytest.mark.parametrize("n", [0, 1, 2])
def test_a_bound_below_the_provers_minimum_fails_the_gate(work: Path, n: int, capsys) -> None:  # type: ignore[no-untyped-def]
    (work / "rules" / "m.rules").write_text(WRONG_MOD)
    code, out, _ = _run(["prove"], capsys)
    assert code == 1 and "bad: refuted" in out
    # |c| <= 0 has no case with c0 > 0 (vacuous); |c| <= 1 only x mod 1 = 0 (true)
    _forge(work / "proofs" / "m.json", "bad", _bounded(WRONG_MOD, n))
    code, out, _ = _run(["check", "--no-cache"], capsys)
    assert code == 1 and "bad: error" in out, out
    assert f"|c| <= {n} is below the prover's minimum, |c| <= 8" in out


def test_a_bound_whose_cases_are_all_vacuous_fails_the_gate(work: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    (work / "rules" / "m.rules").write_text(HIGH_MOD)
    assert _run(["prove"], capsys)[0] == 0
    _forge(work / "proofs" / "m.json", "high", _bounded(HIGH_MOD, 64))
    code, out, _ = _run(["check", "--no-cache"], capsys)
    assert code == 1 and "high: error" in out, out
    assert "no instance with the enumerated constants in [-64, 64]" in out
    # the prover never writes one either
    from verifidx.rules.parser import parse_rules
    from verifidx.rules.prover import ProverConfig, bounded_vacuity

    rule = parse_rules(HIGH_MOD)[0]
    assert bounded_vacuity(rule, 64, ProverConfig()) is not None
    assert bounded_vacuity(rule, 101, ProverConfig()) is None


def test_the_gates_refutation_does_not_call_a_defined_side_undefined(work: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    (work / "rules" / "m.rules").write_text(WRONG_MOD)
    _run(["prove"], capsys)
    _forge(work / "proofs" / "m.json", "bad", _bounded(WRONG_MOD, 9))
    code, out, _ = _run(["check", "--no-cache"], capsys)
    assert code == 1 and "bad: refuted" in out and "satisfiable" in out, out
    assert "undefined" not in out


# -- 4. user rules, their names, and the proof cache -----------------------------------------


def _forged_user_rules(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (work / "rules" / "mine.rules").write_text(WRONG_DIV + GOOD_MOD)
    code, out, _ = _run(["prove", "--rules", "rules"], capsys)
    assert code == 1 and "fd_mul: refuted" in out and "my_twice: proved" in out
    good = json.loads((work / "proofs" / "mine.json").read_text())["rules"]["my_twice"]
    _forge(work / "proofs" / "mine.json", "fd_mul",
           {"verdict": "proved", "strength": "all", "rlimit": good["rlimit"]})


MAP = "(d0) -> ((d0 floordiv 4) * 4 + (d0 mod 3) mod 3), domain: d0 in [0, 99]"


@pytest.mark.parametrize("bundled", [True, False])
def test_a_user_rule_with_a_forged_certificate_is_never_applied(work: Path, bundled: bool,
                                                                 capsys) -> None:  # type: ignore[no-untyped-def]
    _forged_user_rules(work, capsys)
    extra = [] if bundled else ["--no-bundled-rules"]
    code, out, err = _run(["simplify", "--rules", "rules", MAP, *extra], capsys)
    assert code == 0
    assert "(d0 floordiv 4) * 4" in out and "d0 mod 3 mod 3" not in out, out
    # one clean line, no Python warning text or source line
    assert err == ("warning: rules/mine.rules:1: rule fd_mul is not used by the simplifier: "
                   "refuted (the certificate says proved, but Z3 finds its query satisfiable: "
                   "the rule does not hold; run verifidx prove for a counterexample)\n"), err
    from verifidx.simplifier import engine as simplifier

    simplifier._CUSTOM.clear()  # a process warns once per rule set: forget the CLI's
    with pytest.warns(UnprovenRuleWarning, match="fd_mul is not used"):
        got = vx.simplify(vx.parse_map(MAP), rules=["rules"], bundled=bundled)
    assert "(d0 floordiv 4) * 4" in str(got)


def test_a_user_rule_named_like_a_bundled_one_is_an_error(work: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    (work / "rules" / "mine.rules").write_text(
        GOOD_MOD + "rule mod_noop: x mod c0 => x if c0 > 0 and lo(x) >= 0 and hi(x) < c0\n")
    assert _run(["prove", "--rules", "rules"], capsys)[0] == 0
    code, out, err = _run(["simplify", "--rules", "rules", MAP], capsys)
    assert code == 2 and out == ""
    assert re.fullmatch(r"error: rules/mine\.rules:2:1: rule 'mod_noop' is already defined in "
                        r"\S*mod\.rules:\d+\n", err), err
    # without the bundled rule base the name is free
    code, out, _ = _run(["simplify", "--rules", "rules", MAP, "--no-bundled-rules"], capsys)
    assert code == 0 and "d0 mod 3 mod 3" not in out


def test_a_dropped_cache_entry_does_not_stand_in_for_a_proof(work: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    from verifidx.rules.parser import load_rule_file
    from verifidx.rules.prover import Z3_VERSION, recheck_query_for
    from verifidx.rules.store import verifier_version

    _forged_user_rules(work, capsys)
    rule = load_rule_file(work / "rules" / "mine.rules")[0]
    rlimit = json.loads((work / "proofs" / "mine.json").read_text())["rules"]["fd_mul"]["rlimit"]
    query = recheck_query_for(rule, "direct", "all")
    assert query is not None
    # the key is public: anyone can compute it, as the gate does
    from verifidx.rules.proof_cache import cache_key

    key = cache_key(query, rule.normalized_text, rlimit, Z3_VERSION, verifier_version())
    entry = work / "cache" / "rechecked" / key[:2] / key
    entry.parent.mkdir(parents=True)
    for text in ("unsat\n", "0" * 64 + "\n"):
        entry.write_text(text)
        code, out, _ = _run(["check", "rules"], capsys)
        assert code == 1 and "fd_mul: refuted" in out, out
        assert "proof cache" not in out.split("fd_mul")[1].split("\n")[0]
    # what the cache does hold is the user's own re-checks, which a warm check reuses
    code, out, _ = _run(["check", "rules"], capsys)
    assert ("my_twice: proved (all), reducing, not re-run (the proof cache holds unsat for "
            "this exact query)") in out


def test_check_says_what_a_proof_cache_hit_stands_in_for(work: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    (work / "rules" / "mine.rules").write_text(GOOD_MOD)
    assert _run(["prove", "--rules", "rules"], capsys)[0] == 0
    cold = _run(["check", "rules"], capsys)[1]  # the prover's runs are not the gate's
    assert "my_twice: proved (all), reducing, re-checked" in cold and "note:" not in cold, cold
    code, warm, _ = _run(["check", "rules"], capsys)
    assert code == 0
    line = next(x for x in warm.splitlines() if "my_twice" in x)
    assert line.endswith("not re-run (the proof cache holds unsat for this exact query)"), line
    note = next(x for x in warm.splitlines() if x.startswith("note:"))
    # what was still done now, what the record is, where it is and what it is keyed on
    for part in ("1 query was not run again", "rebuilt from its rule's or substitution's text "
                 "and matched its certificate in this run", f"({work / 'cache'})",
                 "an earlier run holding that secret", "(when is not recorded)",
                 "the query, that text, the resource limit and the Z3 and verifidx versions",
                 "--no-cache runs them"):
        assert part in note, note
    uncached = _run(["check", "--no-cache", "rules"], capsys)[1]
    assert "note:" not in uncached and "proof cache" not in uncached, uncached


def test_the_readme_claims_no_more_trust_than_the_gate_has() -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    assert "trusts no stored verdict" not in " ".join(readme.split())
    gate = " ".join(readme.split("## The two commands")[1].split("```")[0].split())
    assert "proof cache" in gate and "--no-cache" in gate, gate


@pytest.mark.skipif(os.name != "posix", reason="file modes")
def test_a_cache_secret_others_can_read_turns_the_cache_off(work: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    from verifidx.rules.proof_cache import ProofCache

    cache = ProofCache(work / "c")
    assert cache.problem is None
    secret = work / "c" / "secret"
    assert secret.stat().st_mode & 0o777 == 0o600
    cache.add("k")
    assert "k" in cache and "k" in ProofCache(work / "c")
    secret.chmod(0o644)
    other = ProofCache(work / "c")
    assert other.problem is not None and "0600" in other.problem
    assert "k" not in other


# -- the pre-commit hook -----------------------------------------------------------------------


def test_the_pre_commit_check_hook_runs_on_every_file_the_gate_reads() -> None:
    text = (REPO / ".pre-commit-hooks.yaml").read_text()
    hook = text.split("- id: verifidx-check")[1].split("- id:")[0]
    m = re.search(r"^\s*files:\s*(\S+)\s*$", hook, re.M)
    assert m is not None
    pattern = re.compile(m.group(1))
    gated = [p.relative_to(REPO).as_posix() for d in ("rules", "proofs")
             for p in (REPO / d).iterdir() if p.suffix in (".rules", ".subst", ".json")]
    assert any(p.endswith(".subst") for p in gated)
    assert [p for p in gated if not pattern.search(p)] == []


# -- 6. verdicts under load --------------------------------------------------------------------


@contextmanager
def _loaded_cpu(busy: int = 3) -> Iterator[None]:
    """This process and `busy` spinning processes share one CPU: the solver gets at most a
    quarter of it, a machine four times slower (or more) than an idle one."""
    cpu = min(os.sched_getaffinity(0))
    before = os.sched_getaffinity(0)
    spin = f"import os\nos.sched_setaffinity(0, {{{cpu}}})\nwhile True:\n    pass\n"
    procs = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(busy)]
    try:
        os.sched_setaffinity(0, {cpu})
        yield
    finally:
        os.sched_setaffinity(0, before)
        for p in procs:
            p.kill()
            p.wait()


def _prover_steps() -> list[tuple[str, list[str], int]]:
    """The substitution prover's Z3 step on two instances of `reshape_reshape` (one answered
    near its resource limit) and the rule prover on two rules: answers and resource counts."""
    from verifidx.analysis.subst.parser import load_substitution_file
    from verifidx.analysis.subst.prove import DEFAULT_RLIMIT, instances, obligation_query
    from verifidx.rules.parser import parse_rules
    from verifidx.rules.prover import ScriptRun, prove_rule

    sub = {s.name: s for s in load_substitution_file(REPO / "rules" / "data_movement.subst")
           }["reshape_reshape"]
    out: list[tuple[str, list[str], int]] = []
    for inst in instances(sub, 3):
        ranks = tuple(len(v) for v in inst.lists.values())
        if ranks in ((1, 2, 3), (1, 3, 3)):
            query = obligation_query(sub, inst, None)
            assert query is not None
            run = ScriptRun(DEFAULT_RLIMIT)
            out.append((f"reshape_reshape {ranks}", run.run(query), run.spent()))
    for rule in parse_rules(GOOD_MOD + WRONG_DIV):
        res = prove_rule(rule)
        out.append((rule.name, [res.verdict, str(res.strength), res.strategy or ""], 0))
    return out


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs CPU affinity")
def test_provers_give_the_same_answers_under_load() -> None:
    idle = _prover_steps()
    assert [a for _, a, _ in idle][-2:] == [["proved", "all", "direct"],
                                           ["refuted", "None", "direct"]]
    with _loaded_cpu():
        loaded = _prover_steps()
    assert loaded == idle


def test_bounded_cases_written_as_text_are_the_bytes_of_their_z3_terms() -> None:
    """`check` writes a bounded query's cases as text (thousands for three constants, rebuilt
    by every warm check to find it in the proof cache); they are the bytes the Z3 terms print."""
    from verifidx.rules.parser import parse_rules
    from verifidx.rules.prover import (
        _bounded_cases,
        bounded_query,
        build_obligation,
        nonlinear_constants,
        render_query,
    )

    for text in (HIGH_MOD, "rule two: (x mod c0) mod c1 => x mod c1 if c0 > 0 and c1 > 0 "
                           "and c0 mod c1 == 0\n"):
        rule = parse_rules(text)[0]
        ob = build_obligation(rule, quotients=True)
        names = nonlinear_constants(rule)
        cases = [c for m in range(4) for c in _bounded_cases(ob, names, m)]
        assert bounded_query(rule, 3) == render_query(ob, "bounded", True, cases)


WRONG_SUBST = """\
subst transposes_vanish:
  inputs x[a...]
  perms p, q
  transpose(transpose(x, perm=p), perm=q) => x
"""

TWO_TRANSPOSES = """\
HloModule m
ENTRY e {
  p = f32[2,3] parameter(0)
  t = f32[3,2] transpose(p), dimensions={1,0}
  ROOT u = f32[2,3] transpose(t), dimensions={1,0}
}
"""


def test_optimize_never_applies_a_substitution_whose_certificate_was_forged(
        work: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    (work / "rules" / "mine.subst").write_text(WRONG_SUBST)
    code, out, _ = _run(["subst", "prove", "rules/mine.subst"], capsys)
    assert code == 1 and "refuted" in out, out
    cert = work / "proofs" / "mine.subst.json"
    doc = json.loads(cert.read_text())
    entry = doc["substitutions"]["transposes_vanish"]
    assert entry["verdict"] == "refuted"
    entry.update(verdict="proved", counterexample=None)
    cert.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    (work / "m.hlo").write_text(TWO_TRANSPOSES)
    code, out, err = _run(["optimize", "m.hlo", "--rules", "rules/mine.subst"], capsys)
    # the forged one is never tried (here it would even pass translation validation: these two
    # transposes do cancel), and the error says why
    assert code == 2 and out == "", out
    assert err.startswith("error: no proven substitutions to apply (rules/mine.subst:1: "
                          "substitution transposes_vanish is not used: "), err
