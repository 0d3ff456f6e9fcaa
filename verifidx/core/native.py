"""Which build of verifidx's core runs: the C extensions mypyc compiled at install time
(setup.py), or the pure-Python source they were compiled from.

Both run the same source. The compiled modules are used only while every one of them still
matches, hash for hash, the source it was built from; otherwise (an edited checkout, a failed or
partial build, or `VERIFIDX_PURE_PYTHON=1`) all of them load from source, so stale code never
runs and compiled and interpreted classes never mix. This module is never compiled itself."""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import json
import os
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

PURE_ENV = "VERIFIDX_PURE_PYTHON"
RECORD = "_build.json"
_PACKAGE = Path(__file__).resolve().parents[1]  # verifidx/, above core/


@dataclass(frozen=True)
class Build:
    """`compiled`: the core runs compiled; `detail` says by what, or why not."""

    compiled: bool
    detail: str
    modules: tuple[str, ...] = ()

    def describe(self) -> str:
        return f"compiled ({self.detail})" if self.compiled else f"pure Python ({self.detail})"


def pure_requested() -> bool:
    """Whether `VERIFIDX_PURE_PYTHON` asks for the source (at install: no compile)."""
    return os.environ.get(PURE_ENV, "") not in ("", "0")


def _source(module: str, root: Path) -> Path:
    return root.joinpath(*module.split(".")).with_suffix(".py")


def _has_extension(module: str, root: Path) -> bool:
    stem = root.joinpath(*module.split("."))
    return any(stem.with_name(stem.name + suffix).exists()
               for suffix in importlib.machinery.EXTENSION_SUFFIXES)


def inspect_build(package: Path = _PACKAGE, pure: bool | None = None
                  ) -> tuple[Build, tuple[str, ...]]:
    """The build to use for the package installed at `package`, and the modules that must load
    from source (all those its build record names, unless the compiled ones are current)."""
    if pure is None:
        pure = pure_requested()
    root = package.parent
    try:
        record: dict[str, Any] = json.loads((package / RECORD).read_text())
        hashes: dict[str, str] = record["modules"]
    except FileNotFoundError:
        return Build(False, "not compiled at install"), _unrecorded_extensions(package)
    except (OSError, ValueError, KeyError, TypeError) as err:
        return (Build(False, f"unreadable build record {RECORD}: {err}"),
                _unrecorded_extensions(package))
    modules = tuple(sorted(hashes))
    if pure:
        return Build(False, f"{PURE_ENV} is set", modules), modules
    group = record.get("group")
    missing = [m for m in (*modules, *([group] if group else [])) if not _has_extension(m, root)]
    if missing:
        return Build(False, f"compiled module {missing[0]} is missing", modules), modules
    for module in modules:
        try:
            digest = hashlib.sha256(_source(module, root).read_bytes()).hexdigest()
        except OSError:
            digest = ""
        if digest != hashes[module]:
            return Build(False, f"stale: {module} changed since it was compiled; reinstall "
                                "to rebuild", modules), modules
    return Build(True, str(record.get("compiler", "mypyc")), modules), ()


def _unrecorded_extensions(package: Path) -> tuple[str, ...]:
    """Compiled modules that no record vouches for (built by hand, or by a build that failed
    before writing its record): they load from source like stale ones."""
    suffixes = sorted(importlib.machinery.EXTENSION_SUFFIXES, key=len, reverse=True)
    names = []
    for path in package.rglob("*"):
        suffix = next((s for s in suffixes if path.name.endswith(s)), None)
        if suffix is not None:
            parts = path.relative_to(package.parent).parts
            names.append(".".join((*parts[:-1], parts[-1].removesuffix(suffix))))
    return tuple(sorted(names))


class _SourceFinder:
    """A meta path finder (the protocol needs only `find_spec`) that loads the named modules
    from their .py files although a compiled one sits beside them (the import system prefers
    extension modules)."""

    def __init__(self, modules: tuple[str, ...], root: Path) -> None:
        self.modules = frozenset(modules)
        self.root = root

    def find_spec(self, fullname: str, path: object = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self.modules:
            return None
        return importlib.util.spec_from_file_location(fullname, _source(fullname, self.root))


def _activate() -> Build:
    """Decides the build, before any core module is imported (`verifidx/__init__.py`)."""
    build, from_source = inspect_build()
    if from_source:
        sys.meta_path.insert(0, _SourceFinder(from_source, _PACKAGE.parent))
        if build.detail.startswith(("stale", "compiled module")):
            warnings.warn(f"verifidx runs its pure-Python source: {build.detail}",
                          RuntimeWarning, stacklevel=3)
    return build


# Importing this module decides, once; `verifidx/__init__.py` imports it before any other module.
_BUILD = _activate()


def build() -> Build:
    """The build in use (compiled or pure Python), for reports and benchmarks."""
    return _BUILD
