"""Certificates are evidence anyone can re-check, and the gate believes nothing else.

Every committed query is re-run here by tools other than verifidx's prover: the stock `z3`
executable and, for the linear ones, cvc5. A forged verdict fails `verifidx check`, and proving
twice gives the same bytes.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

from verifidx.cli import main
from verifidx.rules.prover import Z3_VERSION, z3_binary

# certificates of rule files (proofs/ also holds those of graph substitutions, *.subst.json)
PROOFS = sorted(p for p in (REPO / "proofs").glob("*.json")
                if json.loads(p.read_text())["file"].endswith(".rules"))
ENTRIES = [(f"{p.stem}:{name}", entry) for p in PROOFS
           for name, entry in json.loads(p.read_text())["rules"].items()]
CHECK_USING = re.compile(r"\(check-sat-using [^\n]*\)$", re.M)


def test_the_z3_executable_of_this_version_is_installed() -> None:
    exe = z3_binary()
    assert exe is not None, f"no z3 {Z3_VERSION} executable beside Python or on PATH"


def _script(entry: dict) -> str:
    """The script that proves the entry's rule. A bounded proof stores only its base query (no
    check) and the enumerated constants; its cases are written here from the strength alone,
    in this test's own order (a plain product over [-N, N]), not by the prover's code."""
    if entry.get("strategy") != "bounded":
        return entry["smtlib"]
    m = re.fullmatch(r"bounded: \|c\| <= (\d+)", entry["strength"])
    assert m is not None and "(check-sat" not in entry["smtlib"], entry["strength"]
    n, names = int(m.group(1)), entry["enumerated"]
    assert names and all(f"(declare-fun {c} () Int)" in entry["smtlib"] for c in names)
    lit = {v: str(v) if v >= 0 else f"(- {-v})" for v in range(-n, n + 1)}
    cases = "".join(
        "(push 1)\n(assert (and " + " ".join(f"(= {c} {lit[v]})" for c, v in zip(names, values))
        + "))\n(check-sat-using (then simplify solve-eqs smt))\n(pop 1)\n"
        for values in itertools.product(range(-n, n + 1), repeat=len(names)))
    return entry["smtlib"] + cases


@pytest.mark.parametrize(("name", "entry"), ENTRIES, ids=[n for n, _ in ENTRIES])
def test_every_committed_query_rechecks_with_the_z3_executable(name: str, entry: dict,
                                                                tmp_path: Path) -> None:
    assert entry["verdict"] == "proved", name
    exe = z3_binary()
    assert exe is not None
    query = tmp_path / "query.smt2"
    script = _script(entry)
    query.write_text(script)
    # the budget the certificate records, counted in Z3's resource units (per check), so the
    # verdict does not depend on how loaded the machine is; the timeout only guards a hang
    out = subprocess.run([exe, f"rlimit={entry['rlimit']}", str(query)], capture_output=True,
                         text=True, timeout=600)
    answers = out.stdout.split()
    checks = script.count("(check-sat")
    assert checks > 0 and answers == ["unsat"] * checks, (name, out.stdout[:500])


LINEAR = [(n, e) for n, e in ENTRIES if e["logic"] == "QF_LIA"]


def _cvc5(text: str) -> list[str]:
    cvc5 = pytest.importorskip("cvc5")  # in the test extra; never skipped there
    tm = cvc5.TermManager()
    solver = cvc5.Solver(tm)
    solver.setOption("rlimit-per", "2000000")  # per check, in cvc5's resource units
    parser = cvc5.InputParser(solver)
    # the logic the certificate claims: cvc5 rejects a non-linear term under QF_LIA
    script = "(set-logic QF_LIA)\n" + CHECK_USING.sub("(check-sat)", text)
    parser.setStringInput(cvc5.InputLanguage.SMT_LIB_2_6, script, "query")
    symbols = parser.getSymbolManager()
    out: list[str] = []
    while True:
        cmd = parser.nextCommand()
        if cmd.isNull():
            return "".join(out).split()
        out.append(cmd.invoke(solver, symbols))


def test_a_good_share_of_the_queries_is_linear() -> None:
    assert len(LINEAR) >= 20


@pytest.mark.parametrize(("name", "entry"), LINEAR, ids=[n for n, _ in LINEAR])
def test_linear_queries_recheck_with_cvc5(name: str, entry: dict) -> None:
    script = _script(entry)  # bounded proofs are non-linear (QF_NIA): none reach here so far
    answers = _cvc5(script)
    assert answers == ["unsat"] * script.count("(check-sat"), name


# -- the gate ----------------------------------------------------------------------------------

RULES = """\
rule good: x mod c0 => x
  if c0 > 0 and lo(x) >= 0 and hi(x) < c0
rule bad: x mod c0 => x
  if c0 > 0 and lo(x) >= 0 and hi(x) <= c0
"""


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "m.rules").write_text(RULES)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out + err


def _forge(work: Path, change: dict) -> None:
    cert = work / "proofs" / "m.json"
    doc = json.loads(cert.read_text())
    doc["rules"]["bad"].update(change)
    for k in ("counterexample", "lhs_value", "rhs_value", "subterms", "reproducer", "message"):
        doc["rules"]["bad"].pop(k, None)
    cert.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")


def test_a_forged_verdict_fails_the_gate(work: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    code, out = _run(["prove"], capsys)
    assert code == 1 and "bad: refuted" in out
    good = json.loads((work / "proofs" / "m.json").read_text())["rules"]["good"]
    # the refuted rule's own obligation, with the verdict edited by hand
    _forge(work, {"verdict": "proved", "strength": "all", "rlimit": good["rlimit"]})
    code, out = _run(["check"], capsys)
    assert code == 1, out
    assert "bad: refuted" in out and "Z3 finds its query satisfiable" in out
    assert "2 rules: 1 proved, 1 refuted" in out


def test_a_certificate_for_an_easier_formula_fails_the_gate(work: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    _run(["prove"], capsys)
    good = json.loads((work / "proofs" / "m.json").read_text())["rules"]["good"]
    easy = "(assert false)\n(check-sat)\n"
    _forge(work, {"verdict": "proved", "strength": "all", "rlimit": good["rlimit"],
                  "strategy": "direct", "smtlib": easy})
    code, out = _run(["check"], capsys)
    assert code == 1 and "not the obligation of this rule" in out
    # nor does a stronger claim than was proven: the bounded query is rebuilt from the strength
    _forge(work, {"verdict": "proved", "strength": "bounded: |c| <= 8", "strategy": "bounded",
                  "rlimit": good["rlimit"]})
    code, out = _run(["check"], capsys)
    assert code == 1


def test_a_bounded_certificate_is_its_base_query_and_check_runs_every_case(  # type: ignore[no-untyped-def]
        work: Path, capsys) -> None:
    from verifidx.rules.parser import load_rule_file
    from verifidx.rules.prover import bounded_base, nonlinear_constants

    _run(["prove"], capsys)
    bad = {r.name: r for r in load_rule_file(work / "rules" / "m.rules")}["bad"]
    assert nonlinear_constants(bad) == ["c0"]
    # the right base query of the refuted rule: only its cases (x = c0 = 1) can expose it
    forged = {"verdict": "proved", "strength": "bounded: |c| <= 8", "strategy": "bounded",
              "rlimit": 3_000_000, "smtlib": bounded_base(bad), "enumerated": ["c0"]}
    assert "(check-sat" not in forged["smtlib"]
    _forge(work, forged)
    code, out = _run(["check", "--no-cache"], capsys)
    assert code == 1 and "bad: refuted" in out and "satisfiable" in out, out
    _forge(work, {**forged, "enumerated": []})
    code, out = _run(["check", "--no-cache"], capsys)
    assert code == 1 and "enumerated constants are not this rule's" in out, out


def test_a_warm_check_uses_the_proof_cache(work: Path, capsys,  # type: ignore[no-untyped-def]
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VERIFIDX_CACHE_DIR", str(work / "cache"))
    (work / "rules" / "m.rules").write_text(RULES.split("rule bad")[0])
    _run(["prove"], capsys)
    code, out = _run(["check"], capsys)
    assert code == 0 and "good: proved (all), reducing, re-checked" in out
    assert any((work / "cache").rglob("*"))
    code, out = _run(["check"], capsys)
    assert code == 0 and ", not re-run (the proof cache holds unsat for this exact query)" in out
    code, out = _run(["check", "--no-cache"], capsys)
    assert code == 0 and "re-checked" in out and "proof cache" not in out
    code, out = _run(["check", "-q"], capsys)
    assert code == 0 and out.strip() == "1 rules: 1 proved"


def test_proving_again_gives_the_same_bytes_as_committed(tmp_path: Path) -> None:
    """`prove --force` in a fresh process, in parallel, reproduces the committed certificates
    (written by another process, on another machine) byte for byte: the certificates are
    deterministic, and the committed ones are current."""
    shutil.copytree(REPO / "rules", tmp_path / "rules")
    env = {**os.environ, "VERIFIDX_CACHE_DIR": str(tmp_path / "cache")}
    exe = [str(Path(sys.executable).parent / "verifidx")]
    out = subprocess.run([*exe, "prove", "--force", "-j", "2"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    for committed in PROOFS:
        assert (tmp_path / "proofs" / committed.name).read_bytes() == \
            committed.read_bytes(), committed.name
