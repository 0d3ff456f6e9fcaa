"""The layers of docs/architecture.md hold: `lint-imports` keeps the contract in pyproject.toml
and fails, naming the import, when a module reaches up; no import cycle among verifidx modules;
the seams that replace upward imports are wired after `import verifidx` and fail clearly when
they are not; every command-line module is registered."""

from __future__ import annotations

import json
import os
import pkgutil
import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import networkx as nx
import pytest

import verifidx
import verifidx.cli
from verifidx import Dim, IndexingMap, UnsupportedError, parse_hlo, parse_map
from verifidx.hlo.indexing import output_to_input

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path(verifidx.__file__).resolve().parent


def _lint_imports(cwd: Path, pythonpath: Path | None = None) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("lint-imports")
    cmd = [str(exe)] if exe.exists() else [shutil.which("lint-imports") or "lint-imports"]
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    return subprocess.run([*cmd, "--no-cache", "--config", str(ROOT / "pyproject.toml")],
                          cwd=cwd, env=env, capture_output=True, text=True, check=False)


def _copy_with(tmp_path: Path, module: str, extra: str) -> Path:
    """A copy of the package with `extra` appended to one of its modules."""
    copy = tmp_path / "verifidx"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    target = copy / module
    target.write_text(target.read_text(encoding="utf-8") + extra, encoding="utf-8")
    return tmp_path


# -- the layers contract -------------------------------------------------------------------------


def test_lint_imports_keeps_the_layers_contract() -> None:
    run = _lint_imports(ROOT)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "5 kept, 0 broken" in run.stdout


def test_an_upward_import_breaks_the_contract_and_is_named(tmp_path: Path) -> None:
    # a function-level import from the core values up to the simplifier: exactly what the
    # seams replace, and what a lazy import would hide from a reader
    root = _copy_with(tmp_path, "core/expr.py",
                      "\n\ndef _upward() -> None:\n"
                      "    from verifidx.simplifier.engine import simplify\n")
    run = _lint_imports(tmp_path, pythonpath=root)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "BROKEN" in run.stdout
    assert "verifidx.core.expr -> verifidx.simplifier.engine" in run.stdout


def test_a_new_module_outside_the_layers_breaks_the_contract(tmp_path: Path) -> None:
    copy = tmp_path / "verifidx"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "stray.py").write_text('"""Nobody placed me in a layer."""\n', encoding="utf-8")
    run = _lint_imports(tmp_path, pythonpath=tmp_path)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "verifidx.stray" in run.stdout


# -- z3 only in the solver layer and the rule prover --------------------------------------------


@pytest.mark.parametrize("module", ["analysis/subst/prove.py", "analysis/tiling/proof.py",
                                    "hlo/indexing.py"])
def test_importing_z3_outside_the_solver_layer_breaks_the_contract(tmp_path: Path,
                                                                   module: str) -> None:
    # a function-level import: as invisible to a reader as it is visible to the contract
    root = _copy_with(tmp_path, module, "\n\ndef _direct() -> None:\n    import z3  # noqa\n")
    run = _lint_imports(tmp_path, pythonpath=root)
    assert run.returncode == 1, run.stdout + run.stderr
    importer = "verifidx." + module.removesuffix(".py").replace("/", ".")
    assert "z3 only in the solver layer and the rule prover BROKEN" in run.stdout
    assert f"{importer} -> z3" in run.stdout
    assert "verifidx layers (docs/architecture.md) KEPT" in run.stdout


def test_the_substitution_package_reaches_z3_only_through_the_solver_layer() -> None:
    graph = grimp.build_graph("verifidx", include_external_packages=True, cache_dir=None)
    subst = {m for m in graph.modules if m.startswith("verifidx.analysis.subst")}
    assert "verifidx.analysis.subst.prove" in subst
    assert not [m for m in subst if graph.direct_import_exists(importer=m, imported="z3")]
    assert graph.direct_import_exists(importer="verifidx.analysis.subst.semantics",
                                      imported="verifidx.solve.smt_terms")


# -- no cycles -----------------------------------------------------------------------------------

_CYCLES = """
import json, grimp, networkx as nx
g = grimp.build_graph("verifidx", cache_dir=None)
edges = [(m, i) for m in g.modules for i in g.find_modules_directly_imported_by(m)]
print(json.dumps([sorted(c) for c in nx.strongly_connected_components(nx.DiGraph(edges))
                  if len(c) > 1]))
"""


def _cycles_in(pythonpath: Path) -> list[list[str]]:
    """Strongly connected groups of modules (every import statement, at module level or inside
    functions) of the `verifidx` package found first on `pythonpath`."""
    env = dict(os.environ, PYTHONPATH=str(pythonpath))
    run = subprocess.run([sys.executable, "-c", _CYCLES], cwd=pythonpath, env=env,
                         capture_output=True, text=True, check=True)
    cycles: list[list[str]] = json.loads(run.stdout)
    return cycles


def test_no_import_cycle_among_verifidx_modules() -> None:
    graph = grimp.build_graph("verifidx", cache_dir=None)
    # the graph holds function-level imports too (prover -> order is one)
    assert graph.direct_import_exists(importer="verifidx.rules.prover",
                                      imported="verifidx.rules.order")
    assert "verifidx.hlo.ops.reductions" in graph.modules
    digraph = nx.DiGraph([(m, i) for m in graph.modules
                          for i in graph.find_modules_directly_imported_by(m)])
    cycles = [sorted(c) for c in nx.strongly_connected_components(digraph) if len(c) > 1]
    assert cycles == []


def test_the_cycle_check_finds_a_lazy_cycle(tmp_path: Path) -> None:
    root = _copy_with(tmp_path, "core/indexing_map.py",
                      "\n\ndef _lazy() -> None:\n    from verifidx.core import syntax\n")
    cycles = _cycles_in(root)
    assert any({"verifidx.core.indexing_map", "verifidx.core.syntax"} <= set(c)
               for c in cycles), cycles


# -- seams ---------------------------------------------------------------------------------------


def test_seams_are_wired_after_import_verifidx() -> None:
    assert str(Dim(0) * 4 + 1) == "d0 * 4 + 1"
    m = parse_map("(d0) -> (d0 mod 16), domain: d0 in [0, 9]")
    assert str(m) == "(d0) -> (d0 mod 16), domain: d0 in [0, 9]"
    assert str(m.simplify()) == "(d0) -> (d0), domain: d0 in [0, 9]"


def test_an_unregistered_printer_or_simplifier_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    import verifidx.core.expr
    import verifidx.core.indexing_map

    m = IndexingMap.build([Dim(0)], [(0, 3)])
    monkeypatch.setattr(verifidx.core.expr, "_printer", None)
    monkeypatch.setattr(verifidx.core.indexing_map, "_printer", None)
    monkeypatch.setattr(verifidx.core.indexing_map, "_simplifier", None)
    with pytest.raises(UnsupportedError, match="verifidx.core.syntax"):
        str(Dim(0) + 1)
    with pytest.raises(UnsupportedError, match="verifidx.core.syntax"):
        str(m)
    with pytest.raises(UnsupportedError, match="simplifier"):
        m.simplify()
    assert "expression" in repr(Dim(0) + 1)  # repr never raises
    assert "IndexingMap" in repr(m)


FUSION = """
HloModule m
fused {
  p = f32[4,6] parameter(0)
  ROOT t = f32[6,4] transpose(p), dimensions={1,0}
}
ENTRY e {
  x = f32[4,6] parameter(0)
  ROOT f = f32[6,4] fusion(x), kind=kLoop, calls=fused
}
"""


def test_called_computations_reach_the_analysis_through_their_seam(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import verifidx.hlo.ops.called

    module = parse_hlo(FUSION)
    got = output_to_input("f", module)
    assert [str(m.map) for m in got[0]] == ["(d0, d1) -> (d1, d0), domain: d0 in [0, 5], "
                                            "d1 in [0, 3]"]
    monkeypatch.setattr(verifidx.hlo.ops.called, "_called", {})
    unknown = output_to_input("f", module)
    assert unknown[0][0].is_undefined
    assert any("verifidx.analysis.computation_maps" in n for n in unknown.notes)


# -- the command line ----------------------------------------------------------------------------


def test_every_cli_module_is_a_registered_subcommand() -> None:
    shared = {"common", "batch", "__main__"}
    modules = {m.name for m in pkgutil.iter_modules(verifidx.cli.__path__)} - shared
    registered = {m.__name__.rsplit(".", 1)[1] for m in verifidx.cli.SUBCOMMANDS}
    assert modules == registered
    assert all(callable(getattr(m, "register", None)) for m in verifidx.cli.SUBCOMMANDS)


def test_one_exit_path_for_errors(monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert verifidx.cli.main(["map", "print", "(d0) -> (d0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: <argument>:1:") and err.count("\n") == 1

    def broken(_args: object) -> int:
        raise RuntimeError("a bug")

    monkeypatch.setattr(verifidx.cli.map, "_run", broken)
    assert verifidx.cli.main(["map", "print", "(d0) -> (d0)"]) == 70
    assert "internal error: RuntimeError: a bug" in capsys.readouterr().err
