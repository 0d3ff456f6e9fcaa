"""Builds verifidx's hot core as C extensions with mypyc: the same source, compiled at install
time, about twice as fast on first sight (benchmarks/bench_simplify.py). `VERIFIDX_PURE_PYTHON=1`
at install time skips the compilation (no C compiler needed). The build writes
`verifidx/_build.json`, the hash of every compiled source, so that the package can tell at import
whether the compiled modules still match their sources and runs the sources when they do not
(verifidx/core/native.py)."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

# The core that every simplification runs through; a module compiled here must compile as a
# whole group (the compiled classes call each other natively, so it is all of them or none).
COMPILED = [
    "verifidx/core/expr.py",
    "verifidx/core/interval.py",
    "verifidx/core/laws.py",
    "verifidx/core/canonical.py",
    "verifidx/core/implied_bounds.py",
    "verifidx/core/indexing_map.py",
    "verifidx/core/syntax.py",
    "verifidx/rules/model.py",
    "verifidx/rules/guard.py",
    "verifidx/rules/matcher.py",
    # subclasses syntax's parser: an interpreted class cannot inherit from a compiled one
    "verifidx/rules/parser.py",
    # the simplifier, top down: entry points, map phases, expressions, rule engine, prefilters,
    # instantiation
    "verifidx/simplifier/engine.py",
    "verifidx/simplifier/maps.py",
    "verifidx/simplifier/expressions.py",
    "verifidx/simplifier/rule_engine.py",
    "verifidx/simplifier/prefilters.py",
    "verifidx/simplifier/instantiate.py",
    # walks every sympy tree Inductor hands over (sympy stays untyped, imported lazily)
    "verifidx/clients/sympy_bridge.py",
    # pass-by-pass validation reads each snapshot of a dump and hash-conses each module
    # (the data model of a module first: every walk over one reads its instructions' fields)
    "verifidx/hlo/shape.py",
    "verifidx/hlo/module.py",
    "verifidx/hlo/parser.py",
    "verifidx/clients/pass_region.py",
]

PURE = os.environ.get("VERIFIDX_PURE_PYTHON", "") not in ("", "0")
RECORD = "_build.json"
#: The hash of each source as mypyc read it (taken just before it does): a source edited while
#: the C code compiles must not be recorded as what the binary was built from.
COMPILED_HASHES: dict[str, str] = {}


def _module_name(path: str) -> str:
    return path.removesuffix(".py").replace("/", ".")


class BuildWithRecord(build_ext):
    """build_ext that also records what it compiled, beside the package it built into."""

    def run(self) -> None:
        super().run()
        package_dir = Path(self.get_ext_fullpath("verifidx._record")).parent
        groups = [ext.name for ext in self.extensions if ext.name.endswith("__mypyc")]
        record = {
            "compiler": f"mypyc {_mypy_version()}",
            "group": groups[0] if groups else None,
            # (nothing compiled in this process: the sources as they are, no binary beside them)
            "modules": {_module_name(p): COMPILED_HASHES.get(p) or
                        hashlib.sha256(Path(p).read_bytes()).hexdigest() for p in COMPILED},
        }
        package_dir.mkdir(parents=True, exist_ok=True)
        (package_dir / RECORD).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")


def _mypy_version() -> str:
    from mypy.version import __version__

    return __version__


# Commands that only write metadata: pip runs setup.py for these before the build, and
# mypycify type-checks the whole package each time it is called.
METADATA_ONLY = {"egg_info", "dist_info", "sdist"}


def _extensions() -> list:
    if PURE or (len(sys.argv) > 1 and sys.argv[1] in METADATA_ONLY):
        return []
    from mypyc.build import mypycify

    COMPILED_HASHES.update({p: hashlib.sha256(Path(p).read_bytes()).hexdigest()
                            for p in COMPILED})
    # numpy and the like are not in the build environment; the compiled core does not use them
    return mypycify(["--ignore-missing-imports", *COMPILED], opt_level="3", debug_level="0")


setup(ext_modules=_extensions(), cmdclass={"build_ext": BuildWithRecord})
