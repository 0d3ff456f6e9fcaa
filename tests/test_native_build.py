"""The compiled core (mypyc, setup.py) and the pure-Python source it is compiled from: a default
install runs compiled, a stale or partial build never runs, and both builds give the same
simplified maps, text for text."""

from __future__ import annotations

import hashlib
import importlib
import importlib.machinery
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

from verifidx.core import native

SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]


def test_a_default_install_runs_the_compiled_core() -> None:
    if native.pure_requested():
        pytest.skip(f"{native.PURE_ENV} is set: the source runs on purpose")
    build = native.build()
    if build.detail.startswith("stale"):
        pytest.skip(f"an edited checkout: {build.detail}")
    assert build.compiled, build.detail
    for part in ("engine", "maps", "expressions", "rule_engine", "prefilters", "instantiate"):
        assert f"verifidx.simplifier.{part}" in build.modules, part
    for name in build.modules:
        assert importlib.import_module(name).__file__.endswith(tuple(
            importlib.machinery.EXTENSION_SUFFIXES)), name


def _run(code: str, pure: bool) -> str:
    env = {k: v for k, v in os.environ.items() if k != native.PURE_ENV}
    if pure:
        env[native.PURE_ENV] = "1"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=600, cwd=REPO)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_pure_python_switch_loads_every_module_from_source() -> None:
    out = json.loads(_run(
        "import importlib, json, verifidx\n"
        "b = verifidx.core.native.build()\n"
        "print(json.dumps([b.compiled, b.detail,"
        " [importlib.import_module(m).__file__ for m in b.modules]]))", pure=True))
    compiled, detail, files = out
    assert not compiled
    assert files == [] or native.PURE_ENV in detail
    assert all(f.endswith(".py") for f in files), files


_SIMPLIFIED = f"""
import json, sys
sys.path.insert(0, {str(REPO / "benchmarks")!r})
from families import FAMILIES, corpus
import verifidx
from verifidx.simplifier.engine import default_simplifier
from verifidx.core.syntax import parse_map, print_map
simp = default_simplifier()
out = [print_map(simp.simplify(parse_map(t))) for f in FAMILIES for t in corpus(f, 120, seed=5)]
print(json.dumps([verifidx.core.native.build().compiled, out]))
"""


def test_compiled_and_pure_builds_simplify_to_the_same_text() -> None:
    if not native.build().compiled:
        pytest.skip(f"only the source is installed: {native.build().detail}")
    compiled, ours = json.loads(_run(_SIMPLIFIED, pure=False))
    pure, theirs = json.loads(_run(_SIMPLIFIED, pure=True))
    assert compiled and not pure
    assert len(ours) == 480
    assert ours == theirs


def _fake_install(tmp_path: Path, source: str = "x = 1\n") -> Path:
    """A package `pkg` with one compiled module `pkg.core`, its group library and a record."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "core.py").write_text(source)
    (package / f"core{SUFFIX}").write_bytes(b"")
    (tmp_path / f"abc__mypyc{SUFFIX}").write_bytes(b"")
    record = {"compiler": "mypyc 9", "group": "abc__mypyc",
              "modules": {"pkg.core": hashlib.sha256(source.encode()).hexdigest()}}
    (package / native.RECORD).write_text(json.dumps(record))
    return package


def test_a_current_build_is_used_and_an_edited_source_is_not(tmp_path: Path) -> None:
    package = _fake_install(tmp_path)
    build, from_source = native.inspect_build(package, pure=False)
    assert build.compiled and build.detail == "mypyc 9" and from_source == ()
    (package / "core.py").write_text("x = 2\n")
    build, from_source = native.inspect_build(package, pure=False)
    assert not build.compiled and build.detail.startswith("stale: pkg.core changed")
    assert from_source == ("pkg.core",)


def test_a_partial_build_or_the_switch_runs_the_source(tmp_path: Path) -> None:
    package = _fake_install(tmp_path)
    build, from_source = native.inspect_build(package, pure=True)
    assert not build.compiled and from_source == ("pkg.core",)
    (tmp_path / f"abc__mypyc{SUFFIX}").unlink()
    build, from_source = native.inspect_build(package, pure=False)
    assert not build.compiled and "abc__mypyc is missing" in build.detail
    assert from_source == ("pkg.core",)


def test_no_record_or_a_broken_one_means_the_source(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    assert native.inspect_build(package, pure=False) == (
        native.Build(False, "not compiled at install"), ())
    (package / native.RECORD).write_text("{not json")
    (package / "sub").mkdir()
    (package / "sub" / f"core{SUFFIX}").write_bytes(b"")
    build, from_source = native.inspect_build(package, pure=False)
    assert not build.compiled and "unreadable build record" in build.detail
    assert from_source == ("pkg.sub.core",)  # compiled, but vouched for by no record
