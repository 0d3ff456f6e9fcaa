"""`pytest --verifidx-rules rules/` turns every rule into a test item."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

GOOD = "rule add_zero: x + 0 => x\nrule mod_one: x mod 1 => 0\n"
BAD = "\n\nrule mod_wrong: x mod c0 => x\n  if c0 > 0 and lo(x) >= 0 and hi(x) <= c0\n"


def pytest_run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """pytest in a subprocess; the plugin comes from the package's pytest11 entry point."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rA", *args],
        cwd=cwd, capture_output=True, text=True, timeout=120)


def test_each_rule_is_a_test_item(tmp_path: Path) -> None:
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "good.rules").write_text(GOOD)
    (tmp_path / "rules" / "bad.rules").write_text(BAD)
    (tmp_path / "conftest.py").write_text("")
    proc = pytest_run(tmp_path, "--verifidx-rules", "rules/")
    out = proc.stdout
    assert proc.returncode == 1, out + proc.stderr
    assert "2 passed" in out and "1 failed" in out
    assert "PASSED rules/good.rules::add_zero" in out
    assert "FAILED rules/bad.rules::mod_wrong" in out
    assert "rules/bad.rules:3: mod_wrong: refuted" in out
    assert "counterexample: x = 1, c0 = 1, lo(x) = 0, hi(x) = 1" in out


def test_without_the_option_nothing_is_added(tmp_path: Path) -> None:
    (tmp_path / "test_x.py").write_text("def test_x():\n    pass\n")
    proc = pytest_run(tmp_path)
    assert proc.returncode == 0 and "1 passed" in proc.stdout


def test_a_parse_error_fails_one_item(tmp_path: Path) -> None:
    (tmp_path / "broken.rules").write_text("rule a: x mod c0 => y\n")
    proc = pytest_run(tmp_path, "--verifidx-rules", "broken.rules")
    assert proc.returncode == 1
    assert "broken.rules:1:21: 'y' does not occur on the left side" in proc.stdout


def test_the_documented_command_works_with_the_package_installed(tmp_path: Path) -> None:
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "good.rules").write_text(GOOD)
    proc = pytest_run(tmp_path, "-p", "verifidx.rules.pytest_plugin", "--verifidx-rules",
                      "rules/")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 passed" in proc.stdout and "already registered" not in proc.stderr


def test_only_the_rule_files_asked_for_are_collected(tmp_path: Path) -> None:
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "good.rules").write_text(GOOD)
    (tmp_path / "other.rules").write_text(BAD)
    (tmp_path / "test_x.py").write_text("def test_x():\n    pass\n")
    proc = pytest_run(tmp_path, "--verifidx-rules", "rules/")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 passed" in proc.stdout and "test_x" not in proc.stdout
    # with a test path given too, both are collected
    proc = pytest_run(tmp_path, "--verifidx-rules", "rules/", "test_x.py")
    assert proc.returncode == 0 and "3 passed" in proc.stdout


def test_a_run_without_the_option_loads_neither_verifidx_nor_z3(tmp_path: Path) -> None:
    (tmp_path / "test_x.py").write_text(
        "import sys\n\ndef test_x():\n"
        "    assert 'z3' not in sys.modules and 'verifidx' not in sys.modules\n")
    proc = pytest_run(tmp_path)
    assert proc.returncode == 0 and "1 passed" in proc.stdout, proc.stdout
