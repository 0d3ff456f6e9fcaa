"""The wheel as a user gets it: built from this checkout, installed in a fresh virtual
environment in a temporary directory, `verifidx check` re-checks the rule base the wheel ships.

The wheel is built pure (`VERIFIDX_PURE_PYTHON=1`): compiling the core again with mypyc took
more than five minutes on CI's two loaded cores, and the editable install the rest of the suite
runs on already compiles it from the same `setup.py`. What this test adds is the packaging: the
rules, certificates and companions a wheel must carry, checked from outside the checkout.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

from conftest import REPO

from verifidx.rules.parser import load_rule_base


def test_an_installed_wheel_checks_the_rules_it_ships(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    pure = {**os.environ, "VERIFIDX_PURE_PYTHON": "1"}
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w",
                            str(dist), str(REPO)], capture_output=True, text=True, timeout=600,
                           env=pure)
    assert built.returncode == 0, built.stderr
    wheel = next(dist.glob("verifidx-*.whl"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    bindir = venv / ("Scripts" if os.name == "nt" else "bin")
    # the dependencies (z3-solver, networkx) come from this environment, verifidx from the wheel
    site = subprocess.run([str(bindir / "python"), "-c",
                           "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    Path(site, "deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    installed = subprocess.run([str(bindir / "python"), "-m", "pip", "install", "-q",
                                "--no-deps", "--no-index", str(wheel)],
                               capture_output=True, text=True, timeout=300)
    assert installed.returncode == 0, installed.stderr
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {**os.environ, "VERIFIDX_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("PYTHONPATH", None)
    where = subprocess.run([str(bindir / "python"), "-c",
                            "import verifidx; print(verifidx.__file__)"], cwd=work, env=env,
                           capture_output=True, text=True, check=True).stdout
    assert str(venv) in where, where  # the wheel's copy, not this checkout
    # a pure wheel says so (no compiled module claims to run)
    version = subprocess.run([str(bindir / "verifidx"), "--version"], cwd=work, env=env,
                             capture_output=True, text=True, check=True).stdout
    assert "pure Python" in version, version
    check = subprocess.run([str(bindir / "verifidx"), "check", "-j", "2"], cwd=work, env=env,
                           capture_output=True, text=True, timeout=600)
    assert check.returncode == 0, check.stdout + check.stderr
    total = len(load_rule_base([REPO / "rules"]))
    assert "checking the rule base installed with verifidx" in check.stderr
    assert "re-checked" in check.stdout
    # every rule the wheel ships is proved, and so is every shipped graph substitution
    # (counted apart: `N rules: N proved; M substitutions: M proved`)
    summary = re.search(r"^(\d+) rules: (\d+) proved(?:; (\d+) substitutions: (\d+) proved)?$",
                        check.stdout, re.M)
    assert summary is not None, check.stdout
    assert summary.group(1) == summary.group(2) and int(summary.group(1)) >= total
    assert summary.group(3) == summary.group(4)
