"""`verifidx check` re-checks substitution certificates instead of believing them.

Each failure mode of a certificate is shown on a small substitution file: a tampered entry
(query, strength, instances, method), an edited substitution (with and without its hash
forged), a deliberately wrong substitution with a forged `proved` certificate (refuted by the
re-run query, or by the re-run enumeration), and a proof step that does not re-check within
its resource limit (unknown). Proving is deterministic (the same bytes twice), every committed
query re-checks with the stock `z3` executable, and the summary counts rules and
substitutions apart, in text and JSON alike.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

from verifidx.analysis.subst.certificates import subst_hash
from verifidx.analysis.subst.parser import load_substitution_file, parse_substitutions
from verifidx.analysis.subst.prove import (
    DEFAULT_RLIMIT,
    Obligation,
    exhaustive,
    instances,
    obligation_query,
)
from verifidx.cli import main
from verifidx.rules.prover import z3_binary

SMALL = """\
subst copy_any:
  inputs x[a...]
  copy(x) => x

# Z3 gives up on these products of sizes within its resource limit: sizes <= 4 are enumerated
subst reshape_twice:
  inputs x[a, b, c]
  reshape(reshape(x, shape=[d, e]), shape=[f, g]) => reshape(x, shape=[f, g])
"""

WRONG_Z3 = """\
subst reverse_wrong_dim:
  inputs x[a, b]
  reverse(reverse(x, dims=[0]), dims=[1]) => x
"""

# wrong, and only enumeration can tell within the budgets: the right side reshapes the
# transposed operand, which differs from the left side unless d == 1 or e == 1
WRONG_ENUM = """\
subst reshape_ignores_transpose:
  inputs x[a, b, c]
  reshape(transpose(reshape(x, shape=[d, e]), perm=[1, 0]), shape=[f, g])
    => reshape(x, shape=[f, g])
"""


def _setup(tmp_path: Path, text: str, prove: bool = True) -> tuple[Path, Path]:
    rules = tmp_path / "rules"
    rules.mkdir(exist_ok=True)
    path = rules / "dm.subst"
    path.write_text(text)
    if prove:
        assert main(["subst", "prove", "--force", str(path)]) in (0, 1)
    return path, tmp_path / "proofs" / "dm.subst.json"


def _check(path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["check", "--no-cache", *extra, str(path)])
    return code, capsys.readouterr().out


def _edit(cert: Path, name: str, change) -> None:
    doc = json.loads(cert.read_text())
    change(doc["substitutions"][name])
    cert.write_text(json.dumps(doc, indent=1, sort_keys=True))


def test_check_reruns_the_certificate_and_the_cache_remembers(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    path, cert = _setup(tmp_path, SMALL)
    doc = json.loads(cert.read_text())["substitutions"]
    assert doc["copy_any"]["strength"] == "all sizes, ranks <= 3"
    assert [o["method"] for o in doc["copy_any"]["obligations"]] == ["z3"] * 3
    assert doc["reshape_twice"]["strength"] == "sizes <= 4"
    assert [(o["method"], o["bound"]) for o in doc["reshape_twice"]["obligations"]] == \
        [("enumeration", 4)]
    monkeypatch.setenv("VERIFIDX_CACHE_DIR", str(tmp_path / "cache"))
    capsys.readouterr()
    assert main(["check", str(path)]) == 0
    out = capsys.readouterr().out
    assert "copy_any: proved (all sizes, ranks <= 3), re-checked" in out
    assert "reshape_twice: proved (sizes <= 4), re-checked" in out
    assert out.rstrip().endswith("0 rules: 0 proved; 2 substitutions: 2 proved")
    assert main(["check", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.count(", not re-run (the proof cache holds unsat for this exact query)") == 2


@pytest.mark.parametrize("tamper, why", [
    (lambda e: e["obligations"][0].update(smtlib=e["obligations"][0]["smtlib"].replace(
        "(>= a0 1)", "(>= a0 2)")), "query is not the obligation"),
    (lambda e: e.update(strength="all sizes, ranks <= 4"), "strength"),
    (lambda e: e["obligations"].pop(), "instances are not those"),
    (lambda e: e.update(max_rank=2), "instances are not those"),
    (lambda e: e["obligations"][0].update(method="trust me"), "unknown proof step"),
    (lambda e: e["obligations"][1].update(method="ill-formed left side"), "nothing to prove"),
], ids=["query", "strength", "dropped-instance", "rank-bound", "method", "vacuous"])
def test_a_tampered_certificate_fails_the_gate(tmp_path: Path, capsys, tamper, why) -> None:
    path, cert = _setup(tmp_path, SMALL)
    assert _check(path, capsys)[0] == 0
    _edit(cert, "copy_any", tamper)
    code, out = _check(path, capsys)
    assert code == 1
    assert "copy_any: error" in out and why in out, out
    assert "reshape_twice: proved" in out
    assert "2 substitutions: 1 proved, 1 error" in out


def test_a_bound_raised_by_hand_fails_the_gate(tmp_path: Path, capsys) -> None:
    path, cert = _setup(tmp_path, SMALL)

    def claim_more(e: dict) -> None:  # enumerate "up to 50": far beyond any budget
        e["obligations"][0]["bound"] = 50
        e["strength"] = "sizes <= 50"

    _edit(cert, "reshape_twice", claim_more)
    code, out = _check(path, capsys)
    assert code == 1 and "reshape_twice: error" in out and "needs more than" in out


def test_an_edited_substitution_is_stale_and_a_forged_hash_does_not_help(
        tmp_path: Path, capsys) -> None:
    path, cert = _setup(tmp_path, SMALL)
    edited = SMALL.replace("copy(x) => x", "reverse(x, dims=[0]) => x")
    path.write_text(edited)
    code, out = _check(path, capsys)
    assert code == 1 and "copy_any: stale" in out and "text changed" in out
    # a forger updates the hash but keeps the old proof: the queries rebuilt from the new text
    # are not the certificate's
    new = parse_substitutions(edited, str(path))[0]
    _edit(cert, "copy_any", lambda e: e.update(sha256=subst_hash(new)))
    code, out = _check(path, capsys)
    assert code == 1 and "copy_any: error" in out and "query is not the obligation" in out


def _forge(cert: Path, text: str, method: str, strength: str, index: int = 0) -> None:
    """A certificate that claims `proved` for the index-th substitution of `text`, made the
    way a forger would: the right hash and versions, and the queries rebuilt from the
    substitution's text."""
    doc = json.loads(cert.read_text())
    sub = parse_substitutions(text)[index]
    entry = doc["substitutions"][sub.name]
    obligations = []
    for inst in instances(sub, 3):
        if method == "z3":
            ob = Obligation.of(inst, "z3", None, obligation_query(sub, inst, None) or "",
                               DEFAULT_RLIMIT)
        else:
            ob = Obligation.of(inst, "enumeration", 4)
        obligations.append(ob.to_json())
    entry.update(verdict="proved", strength=strength, counterexample=None,
                 obligations=obligations)
    cert.write_text(json.dumps(doc, indent=1, sort_keys=True))


def test_a_wrong_substitution_with_a_forged_certificate_is_refuted_by_its_query(
        tmp_path: Path, capsys) -> None:
    path, cert = _setup(tmp_path, WRONG_Z3)
    assert json.loads(cert.read_text())["substitutions"]["reverse_wrong_dim"]["verdict"] == \
        "refuted"
    code, out = _check(path, capsys)
    assert code == 1 and "reverse_wrong_dim: refuted" in out
    _forge(cert, WRONG_Z3, "z3", "all sizes")
    code, out = _check(path, capsys)
    assert code == 1 and "reverse_wrong_dim: refuted" in out
    assert "Z3 finds one of its queries satisfiable" in out


def test_a_wrong_substitution_with_a_forged_certificate_is_refuted_by_its_enumeration(
        tmp_path: Path, capsys) -> None:
    path, cert = _setup(tmp_path, WRONG_ENUM)
    _forge(cert, WRONG_ENUM, "enumeration", "sizes <= 4")
    code, out = _check(path, capsys)
    assert code == 1 and "reshape_ignores_transpose: refuted" in out, out
    assert "the enumeration of sizes <= 4 finds at shapes x:" in out
    assert "the two sides read different elements" in out


HARD = """\
subst reshape_332:
  inputs x[a, b, c]
  reshape(reshape(x, shape=[d, e, f]), shape=[g, h]) => reshape(x, shape=[g, h])
"""


def test_a_step_that_does_not_re_run_within_its_budget_is_unknown(tmp_path: Path, capsys
                                                                   ) -> None:
    # proven by enumeration (sizes <= 4); a certificate claiming that Z3 proved it for all
    # sizes, with the right query and the prover's resource limit, is re-run under that limit,
    # and Z3 does not answer unsat within it (a claim that does re-check would be true, and
    # pass): the same verdict on any machine, the wall clock plays no part
    path, cert = _setup(tmp_path, HARD)
    entry = json.loads(cert.read_text())["substitutions"]["reshape_332"]
    assert entry["strength"] == "sizes <= 4"
    _forge(cert, HARD, "z3", "all sizes")
    code, out = _check(path, capsys)
    assert code == 1 and "reshape_332: unknown" in out, out
    assert "did not answer unsat at every check" in out
    _edit(cert, "reshape_332", lambda e: e["obligations"][0].pop("rlimit"))
    code, out = _check(path, capsys)
    assert code == 1 and "query has no resource limit" in out, out


def test_proving_twice_gives_the_same_bytes(tmp_path: Path) -> None:
    path, cert = _setup(tmp_path, SMALL + "\n" + WRONG_Z3)
    first = cert.read_bytes()
    assert b"seconds" not in first
    assert main(["subst", "prove", "--force", str(path)]) == 1
    assert cert.read_bytes() == first


def test_proving_the_shipped_substitutions_in_a_fresh_process_gives_the_committed_bytes(
        tmp_path: Path) -> None:
    """The committed certificate is current and deterministic: another process proving every
    shipped substitution again writes the same bytes (about 15 s: reshape_reshape)."""
    shutil.copytree(REPO / "rules", tmp_path / "rules")
    exe = str(Path(sys.executable).parent / "verifidx")
    out = subprocess.run([exe, "subst", "prove", "--force"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    committed = REPO / "proofs" / "data_movement.subst.json"
    assert (tmp_path / "proofs" / committed.name).read_bytes() == committed.read_bytes()


def test_the_vectorized_filter_of_the_enumeration_changes_no_answer(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """`exhaustive` sorts out, all at once, the assignments where the conditions or the left
    side's well-formedness fail; evaluating every assignment one by one instead gives the same
    answer (True, or the same first counterexample) on every instance of the shipped and the
    deliberately wrong substitutions."""
    import itertools

    import verifidx.analysis.subst.prove as prover

    subs = [*load_substitution_file(REPO / "rules" / "data_movement.subst"),
            *load_substitution_file(REPO / "tests" / "data" / "subst_wrong.subst"),
            *parse_substitutions(WRONG_ENUM)]
    cases = [(sub, inst) for sub in subs for inst in instances(sub, 2)]
    assert len(cases) > 60
    fast = [exhaustive(sub, inst, 3) for sub, inst in cases]
    monkeypatch.setattr(prover, "_candidates",
                        lambda sub, inst, names, ranges: itertools.product(*ranges))
    slow = [exhaustive(sub, inst, 3) for sub, inst in cases]
    def show(a: object) -> object:  # None: more assignments than the enumeration's limit
        return a.to_json() if hasattr(a, "to_json") else a

    assert [show(a) for a in fast] == [show(b) for b in slow]
    assert sum(hasattr(a, "to_json") for a in fast) >= 7  # wrong ones found either way
    assert sum(a is True for a in fast) >= 50


SHIPPED = json.loads((REPO / "proofs" / "data_movement.subst.json").read_text())
QUERIES = [(name, [o["smtlib"] for o in entry["obligations"] if o["method"] == "z3"])
           for name, entry in sorted(SHIPPED["substitutions"].items())]


@pytest.mark.parametrize(("name", "queries"), QUERIES, ids=[n for n, _ in QUERIES])
def test_every_committed_substitution_query_rechecks_with_the_z3_executable(
        name: str, queries: list[str]) -> None:
    exe = z3_binary()
    assert exe is not None
    entry = SHIPPED["substitutions"][name]
    assert entry["verdict"] == "proved"
    assert len(entry["obligations"]) == entry["instances"]
    rlimits = [o["rlimit"] for o in entry["obligations"] if o["method"] == "z3"]
    for query, rlimit in zip(queries, rlimits, strict=True):
        # under the certificate's own resource limit, as the gate runs it: the same answer
        # as the prover's on any machine (the wall-clock cap only guards against a hang)
        assert "(check-sat-using " in query and "(check-sat)" not in query
        out = subprocess.run([exe, "-T:300", "-in"], input=f"(set-option :rlimit {rlimit})\n"
                             + query, capture_output=True, text=True, timeout=360)
        assert out.stdout.split() == ["unsat"], (name, query[:300])


def test_the_shipped_certificates_recheck_without_the_z3_executable(monkeypatch) -> None:
    """Where no `z3` executable of this Z3 version is found (a wheel installed beside another
    environment's z3-solver), the gate runs the queries in this process: same verdicts. Failed
    before each query got a context of its own: reshape_reshape's 13th query ran out of its
    resource limit after twelve others in one context, and the installed wheel's gate said
    unknown."""
    from verifidx.analysis.subst import certificates

    monkeypatch.setattr(certificates, "z3_binary", lambda: None)
    results = certificates.check_files([REPO / "rules" / "data_movement.subst"], recheck=True)
    assert len(results) == len(SHIPPED["substitutions"])
    assert {(r.name, r.verdict) for r in results if r.verdict != "proved"} == set()
    assert all(r.recheck == "re-run" for r in results)


def test_check_json_lists_rules_and_substitutions_apart(tmp_path: Path, capsys) -> None:
    path, _ = _setup(tmp_path, SMALL)
    (path.parent / "m.rules").write_text("rule add_zero: x + 0 => x\n")
    assert main(["prove", str(path.parent / "m.rules")]) == 0
    capsys.readouterr()
    assert main(["check", "--format", "json", str(path.parent)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in doc["rules"]] == ["add_zero"]
    assert [r["name"] for r in doc["substitutions"]] == ["copy_any", "reshape_twice"]
    assert doc["summary"]["proved"] == 3 and doc["summary"]["accepted"] == 3
    assert doc["by_kind"]["rules"]["proved"] == 1
    assert doc["by_kind"]["substitutions"]["proved"] == 2
    assert main(["check", str(path.parent)]) == 0
    assert capsys.readouterr().out.rstrip().endswith(
        "1 rules: 1 proved; 2 substitutions: 2 proved")
