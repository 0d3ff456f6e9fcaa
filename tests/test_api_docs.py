"""The API reference is generated from the docstrings with pdoc; building it here keeps it from
rotting (a module that fails to import or a broken docstring fails the build).

Build it yourself: `python -m pdoc -o docs/api verifidx` plus the submodules (as below)."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
from pathlib import Path

import verifidx
import verifidx.rules

# loaded on first use so that the simplifier never imports Z3; pdoc cannot follow that
LAZY = {f"verifidx.rules.{n}" for n in verifidx.rules._LAZY}


def modules() -> list[str]:
    """Every module (pdoc follows a package's `__all__`, which leaves some out); not the
    `__main__` entry points, which run the command line when imported."""
    found = (m.name for m in pkgutil.walk_packages(verifidx.__path__, "verifidx."))
    return ["verifidx", *sorted(n for n in found if not n.endswith("__main__"))]


def test_the_api_reference_builds(tmp_path: Path) -> None:
    out = tmp_path / "api"
    names = modules()
    proc = subprocess.run([sys.executable, "-m", "pdoc", "-o", str(out), *names],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    for name in names:
        assert (out / (name.replace(".", "/") + ".html")).is_file(), name
    index = (out / "verifidx.html").read_text()
    for name in ("parse_map", "compose", "simplify", "parse_hlo", "output_to_input"):
        assert name in index, name
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("Warn")
                and "has already been added" not in line  # listed and also found by pdoc
                and not any(f"'{n.rsplit('.', 1)[1]}' in {n.rsplit('.', 1)[0]}.__all__" in line
                            for n in LAZY)]
    assert not warnings, "\n".join(warnings)
