"""`verifidx prove` and `verifidx check`: certificates, staleness, tampering, output formats."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from verifidx.cli import main
from verifidx.rules.store import FORMAT, load_certificates

REPO = Path(__file__).resolve().parents[1]

SMALL = """\
# a small rule file
rule mod_noop: x mod c0 => x
  if c0 > 0 and lo(x) >= 0 and hi(x) < c0

rule div_noop: x floordiv c0 => 0
  if c0 > 0 and lo(x) >= 0 and hi(x) < c0
rule add_zero: x + 0 => x
"""
WRONG = "rule mod_wrong: x mod c0 => x\n  if c0 > 0 and lo(x) >= 0 and hi(x) <= c0\n"


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "small.rules").write_text(SMALL)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_prove_writes_certificates_and_check_passes(work: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    code, out, err = run(["prove"], capsys)
    assert code == 0, out + err
    assert "3 rules: 3 proved" in out
    cert = work / "proofs" / "small.json"
    data = json.loads(cert.read_text())
    assert data["format"] == FORMAT and data["file"] == "rules/small.rules"
    entry = data["rules"]["mod_noop"]
    # no "seconds" since certificate format 2: timings made committed files churn (issue 12)
    for key in ("sha256", "verdict", "strength", "order", "smtlib", "z3_version",
                "verifier_version", "rlimit", "logic"):
        assert key in entry
    assert "seconds" not in entry
    assert entry["verdict"] == "proved" and entry["strength"] == "all"
    assert "(check-sat-using smt)" in entry["smtlib"]
    code, out, _ = run(["check"], capsys)
    assert code == 0 and "3 rules: 3 proved" in out


def test_unchanged_rules_are_not_reproven_and_bytes_are_stable(work: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    run(["prove"], capsys)
    cert = work / "proofs" / "small.json"
    before = cert.read_bytes()
    code, out, err = run(["prove"], capsys)
    assert code == 0 and "proving 0 of 3 rules" in err and "(certificate)" in out
    assert cert.read_bytes() == before
    # one edited rule: only that one is re-proven
    (work / "rules" / "small.rules").write_text(SMALL.replace("x + 0 => x", "0 + x => x"))
    code, out, err = run(["prove"], capsys)
    assert "proving 1 of 3 rules" in err
    assert load_certificates(cert)["mod_noop"] == json.loads(before)["rules"]["mod_noop"]


def test_no_write_writes_nothing(work: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    code, _, _ = run(["prove", "--no-write"], capsys)
    assert code == 0 and not (work / "proofs").exists()


def test_editing_a_rule_without_reproving_fails_check_naming_rule_and_line(
        work: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    run(["prove"], capsys)
    text = SMALL.replace("lo(x) >= 0 and hi(x) < c0\n\nrule div_noop",
                         "lo(x) >= 0 and hi(x) <= c0\n\nrule div_noop")
    (work / "rules" / "small.rules").write_text(text)
    code, out, _ = run(["check"], capsys)
    assert code == 1
    assert "rules/small.rules:2: mod_noop: stale" in out
    assert "text changed" in out
    code, out, _ = run(["check", "--format", "github"], capsys)
    assert code == 1
    assert out.startswith("::error file=rules/small.rules,line=2,")
    # re-proving makes the gate see the refutation
    code, out, _ = run(["prove"], capsys)
    assert code == 1 and "mod_noop: refuted" in out
    code, out, _ = run(["check"], capsys)
    assert code == 1 and "mod_noop: refuted" in out and "counterexample: x = 1" in out


def test_version_change_makes_certificates_stale(work: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    run(["prove"], capsys)
    cert = work / "proofs" / "small.json"
    data = json.loads(cert.read_text())
    data["rules"]["div_noop"]["z3_version"] = "4.8.0"
    data["rules"]["add_zero"]["verifier_version"] = "0.0.1"
    cert.write_text(json.dumps(data))
    code, out, _ = run(["check"], capsys)
    assert code == 1
    assert "div_noop: stale" in out and "Z3 4.8.0" in out
    assert "add_zero: stale" in out and "verifidx 0.0.1" in out


@pytest.mark.parametrize("content", ["{not json", '{"rules": 5}', "[]",
                                     '{"format": 1, "rules": {"mod_noop": 3}}',
                                     '{"format": 99, "rules": {}}'])
def test_a_corrupt_certificate_is_a_clear_error_not_a_traceback(
        work: Path, capsys, content: str) -> None:  # type: ignore[no-untyped-def]
    (work / "proofs").mkdir()
    (work / "proofs" / "small.json").write_text(content)
    code, out, err = run(["check"], capsys)
    assert code == 1
    assert "Traceback" not in out + err
    assert "rules/small.rules:2: mod_noop: error" in out
    assert "proofs/small.json" in out
    # prove repairs it
    code, _, err = run(["prove"], capsys)
    assert code == 0 and "warning: proofs/small.json" in err
    assert run(["check"], capsys)[0] == 0


def test_missing_certificates_and_removed_rules(work: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = run(["check"], capsys)
    assert code == 1 and out.count(": missing") == 3
    run(["prove"], capsys)
    (work / "rules" / "small.rules").write_text(SMALL.split("\nrule div_noop")[0] + "\n")
    run(["prove"], capsys)
    assert set(load_certificates(work / "proofs" / "small.json")) == {"mod_noop"}


def test_json_output_is_only_the_document(work: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    (work / "rules" / "wrong.rules").write_text(WRONG)
    code, out, err = run(["prove", "--format", "json"], capsys)
    assert code == 1
    doc = json.loads(out)
    # the DESIGN.md counts by verdict, plus the gate's own two counts (issue 12)
    assert doc["summary"] == {"proved": 3, "refuted": 1, "unknown": 0, "stale": 0,
                              "missing": 0, "error": 0, "order_violations": 0, "accepted": 3}
    wrong = [r for r in doc["rules"] if r["name"] == "mod_wrong"][0]
    assert wrong["file"] == "rules/wrong.rules" and wrong["line"] == 1
    assert wrong["counterexample"] == {"x": 1, "c0": 1, "lo(x)": 0, "hi(x)": 1}
    assert (wrong["lhs_value"], wrong["rhs_value"]) == (0, 1)
    assert "proving" in err
    code, out, _ = run(["check", "--format", "json"], capsys)
    assert code == 1 and json.loads(out)["summary"]["refuted"] == 1


def test_junit_output(work: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    (work / "rules" / "wrong.rules").write_text(WRONG)
    run(["prove"], capsys)
    code, out, _ = run(["check", "--format", "junit"], capsys)
    assert code == 1
    root = ET.fromstring(out.split("\n", 1)[1])
    assert root.tag == "testsuites" and root.get("tests") == "4" and root.get("failures") == "1"
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert cases["mod_wrong"].find("failure") is not None
    assert cases["mod_wrong"].get("line") == "1"
    assert cases["mod_noop"].find("failure") is None


def test_parse_errors_exit_2_with_one_line(work: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    (work / "rules" / "broken.rules").write_text("rule a: x mod c0 => y\n")
    for cmd in ("prove", "check"):
        code, out, err = run([cmd], capsys)
        assert code == 2
        assert err.strip() == ("error: rules/broken.rules:1:21: 'y' does not occur on the "
                               "left side")
        assert out == ""


def test_usage_errors_exit_2(work: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert run(["prove", "nope.rules"], capsys)[0] == 2
    assert run(["check", "--format", "xml"], capsys)[0] == 2
    assert run(["prove", "--explain", "no_such_rule"], capsys)[0] == 2
    assert run(["prove", "-j", "0"], capsys)[0] == 2


def test_explain_prints_the_obligation(work: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = run(["prove", "--explain", "mod_noop"], capsys)
    assert code == 0 and out.startswith("; verifidx obligation for rule mod_noop")
    assert "(check-sat-using smt)" in out
    code, out, _ = run(["prove", "--explain", "x mod 1 => 0"], capsys)
    assert code == 0 and "(check-sat-using smt)" in out
    assert not (work / "proofs").exists()


def test_suggest_finds_the_missing_condition(work: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    (work / "rules" / "wrong.rules").write_text(WRONG)
    code, out, _ = run(["prove", "--no-write", "--suggest", "rules/wrong.rules"], capsys)
    assert code == 1
    assert "suggestion: weakest side condition found: if hi(x) < c0" in out
    assert "added to the rule's own condition with `and`, not replacing it" in out


def test_parallel_proving_and_reprove(work: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    (work / "rules" / "wrong.rules").write_text(WRONG)
    code, out, _ = run(["prove", "-j", "2"], capsys)
    assert code == 1 and "4 rules: 3 proved, 1 refuted" in out
    shutil.rmtree(work / "proofs")
    code, out, _ = run(["check", "--reprove", "-j", "2", "rules/small.rules"], capsys)
    assert code == 0 and "3 rules: 3 proved" in out


def test_order_violations_fail_the_gate(work: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    (work / "rules" / "small.rules").write_text("rule comm: x + y => y + x\n")
    # One notion of acceptance (issue 12): the order never changes the verdict, but neither
    # prove nor check accepts the rule, and neither summary counts it as proved. (This test
    # used to expect prove to exit 0 here, which is what the issue reported as a bug.)
    for command in ("prove", "check"):
        code, out, _ = run([command], capsys)
        assert code == 1 and "comm: proved (all), violates" in out, command
        assert "FAIL: violates the reduction order" in out
        assert "1 rules: 0 proved, 1 violating the reduction order" in out
    code, out, _ = run(["check", "--format", "json"], capsys)
    summary = json.loads(out)["summary"]
    assert summary["order_violations"] == 1 and summary["accepted"] == 0


def test_the_bundled_rule_base_passes_the_gate(monkeypatch: pytest.MonkeyPatch, capsys
                                               ) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(REPO)
    code, out, err = run(["check"], capsys)
    assert code == 0, out + err


def test_a_certificate_of_another_rule_file_is_never_overwritten(work: Path, capsys  # type: ignore[no-untyped-def]
                                                                 ) -> None:
    run(["prove"], capsys)
    (work / "elsewhere").mkdir()
    (work / "elsewhere" / "small.rules").write_text("rule other: x * 1 => x\n")
    before = (work / "proofs" / "small.json").read_bytes()
    code, out, err = run(["prove", "elsewhere/small.rules"], capsys)
    assert code == 2
    assert "proofs/small.json holds the certificates of rules/small.rules" in err
    assert (work / "proofs" / "small.json").read_bytes() == before
    code, out, _ = run(["check", "elsewhere/small.rules"], capsys)
    assert code == 1 and "other: error" in out
    code, _, _ = run(["prove", "elsewhere/small.rules", "--proofs", "elsewhere_proofs"], capsys)
    assert code == 0 and (work / "elsewhere_proofs" / "small.json").exists()


def test_an_undefined_side_says_so_instead_of_a_failing_reproducer(work: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    (work / "rules" / "u.rules").write_text(
        "rule u: x + c0 * 0 => x floordiv c0 * c0 + x mod c0 if c0 != 0\n")
    code, out, _ = run(["prove", "--no-write", "rules/u.rules"], capsys)
    assert code == 1 and "u: refuted" in out
    assert "right side undefined here" in out and "reproduce:" not in out


def test_github_annotations_carry_the_reproducer(work: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    (work / "rules" / "wrong.rules").write_text(WRONG)
    run(["prove"], capsys)
    code, out, _ = run(["check", "--format", "github", "rules/wrong.rules"], capsys)
    assert code == 1 and "::error file=rules/wrong.rules" in out
    assert "%0Areproduce: verifidx map eval" in out


def test_explain_honours_json(work: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = run(["prove", "--explain", "mod_noop", "--format", "json"], capsys)
    assert code == 0
    doc = json.loads(out)
    assert doc["rules"][0]["name"] == "mod_noop"
    assert "(check-sat-using smt)" in doc["rules"][0]["smtlib"]


def test_a_map_file_that_is_not_utf8_is_one_line_with_its_position(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "bad.map"
    bad.write_bytes(b"(d0) -> (d0),\n domain: d0 in [0, \xff9]")
    code, out, err = run(["map", "print", str(bad)], capsys)
    assert code == 2 and out == ""
    assert err.strip() == (f"error: {bad}:2:20: expected UTF-8 text, found byte 0xff "
                           "(byte offset 33)")


@pytest.mark.parametrize("command,name", [(["prove"], "bad.rules"), (["check"], "bad.rules"),
                                          (["check"], "bad.subst")])
def test_a_rule_or_substitution_file_that_is_not_utf8_is_one_line_with_its_position(  # type: ignore[no-untyped-def]
        tmp_path: Path, capsys, command: list[str], name: str) -> None:
    # the column counts characters (é is one) and the offset bytes, as an editor and `xxd` do
    bad = tmp_path / name
    bad.write_bytes(b"# x\nr\xc3\xa9 \xff")
    code, out, err = run([*command, str(bad) if command == ["prove"] else str(tmp_path)], capsys)
    assert code == 2
    assert err.strip() == f"error: {bad}:2:4: expected UTF-8 text, found byte 0xff (byte offset 8)"


def test_stdin_that_is_not_utf8_is_one_line_with_its_position(  # type: ignore[no-untyped-def]
        monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"(d0) -> (d0)\n\x89PNG")))
    code, out, err = run(["map", "print", "-"], capsys)
    assert code == 2 and out == ""
    assert err.strip() == ("error: <stdin>:2:1: expected UTF-8 text, found byte 0x89 "
                           "(byte offset 13)")


def test_own_rule_directories_on_top_of_or_instead_of_the_bundled_base(  # type: ignore[no-untyped-def]
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    import verifidx as vx

    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "my.rules").write_text(
        "rule my_mod_twice: (x mod c0) mod c0 => x mod c0 if c0 > 0\n")
    code, out, _ = run(["prove", "--rules", "mine"], capsys)
    assert code == 0 and "1 rules: 1 proved" in out
    text = "(d0) -> ((d0 mod 4) mod 4), domain: d0 in [0, 100]"
    # instead of the bundled base: only my rule can fire
    code, out, _ = run(["simplify", text, "--no-bundled-rules", "--rules", "mine", "--trace"],
                       capsys)
    assert code == 0 and "my_mod_twice:" in out and out.strip().endswith(
        "(d0) -> (d0 mod 4), domain: d0 in [0, 100]")
    # on top of it: the bundled rules come first and already do the job
    code, out, _ = run(["simplify", text, "--rules", "mine", "--trace"], capsys)
    assert code == 0 and "(d0) -> (d0 mod 4), domain: d0 in [0, 100]" in out
    assert str(vx.simplify(vx.parse_map(text), rules=["mine"], bundled=False)) == \
        "(d0) -> (d0 mod 4), domain: d0 in [0, 100]"
    # a rule without a current proof never fires
    (tmp_path / "mine" / "my.rules").write_text(
        "rule my_mod_twice: (x mod c0) mod c0 => x mod c0 if c0 > 1\n")
    with pytest.warns(UserWarning, match="my_mod_twice is not used"):
        got = vx.simplify(vx.parse_map(text), rules=["mine"], bundled=False)
    assert "mod 4 mod 4" in str(got)
