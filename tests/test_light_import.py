"""`import verifidx` and each command load only what they use (issue 25): Z3, numpy and
networkx load when a function that needs them first runs, and the seams still work then."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("z3", "numpy", "networkx", "jax")
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
MAP = "(d0, d1) -> (d0 * 4 + d1 floordiv 8, d1 mod 8), domain: d0 in [0, 15], d1 in [0, 31]"


def _loaded_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running `code`."""
    probe = code + "\nimport sys, json\nprint(json.dumps(sorted(sys.modules)))"
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=300, check=True)
    return set(json.loads(proc.stdout.splitlines()[-1]))


def _heavy(modules: set[str]) -> set[str]:
    return {m for m in modules if m.split(".")[0] in HEAVY}


def test_import_loads_only_the_values() -> None:
    loaded = _loaded_after("import verifidx")
    assert not _heavy(loaded)
    assert not {"verifidx.hlo", "verifidx.solve.smt"} & loaded
    assert not {m for m in loaded if m.startswith("verifidx.simplifier.")}  # none of its parts


@pytest.mark.parametrize("argv", [
    ["simplify", MAP],
    ["map", "print", MAP],
    ["map", "eval", MAP, "--dims", "1,2"],
    ["indexing", str(EXAMPLES / "seed_fusion_softmax.hlo"), "--textual-dedup"],
])
def test_a_command_loads_only_what_it_uses(argv: list[str]) -> None:
    loaded = _loaded_after(f"from verifidx.cli import main\nmain({argv!r})")
    assert not _heavy(loaded), argv
    assert not {m for m in loaded if m.startswith("verifidx.cli.")} - {
        "verifidx.cli.common", "verifidx.cli.batch", f"verifidx.cli.{argv[0]}"}


def test_the_solver_loads_when_asked() -> None:
    loaded = _loaded_after("import verifidx as vx\nm = vx.parse_map('(d0) -> (d0), domain: "
                           "d0 in [0, 3]')\nassert vx.is_empty(m).holds is False")
    assert "z3" in loaded


def test_seams_work_after_a_light_import() -> None:
    code = """
import verifidx as vx
m = vx.parse_map("(d0) -> (d0 floordiv 1 + 0), domain: d0 in [0, 3]")
assert str(m.simplify()) == "(d0) -> (d0), domain: d0 in [0, 3]", m.simplify()
module = vx.parse_hlo(open(PATH).read())
from verifidx.hlo.indexing import output_to_input
root = module.entry.root
r = output_to_input(root, module.entry, 0, module=module)
assert r.maps and all(not m.is_undefined for ms in r.maps for m in ms), r
"""
    _loaded_after(f"PATH = {str(EXAMPLES / 'seed_fusion_chained_reshapes.hlo')!r}\n" + code)


@pytest.mark.parametrize("word", ["check", "prove"])
def test_the_gate_loads_every_kind_it_checks(word: str) -> None:
    """`check` and `prove` alone in a fresh process still gate the graph substitutions: the
    lazy command loading once left `cli.subst` out, and `check` then passed without them."""
    code = (f"from verifidx.cli import build_parser, rules\nbuild_parser([{word!r}])\n"
            "print('HOOKS', sorted(rules.CHECK_HOOKS), sorted(rules.CHECK_SUFFIXES))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, check=True)
    assert "HOOKS ['substitutions'] ['.subst']" in proc.stdout, proc.stdout


#: The modules that sat at the top of the package before it had a folder per layer.
OLD_TOP_LEVEL = ("batch", "canonical", "computation_maps", "dedup", "equality", "errors", "expr",
                 "fusion", "implied_bounds", "indexing_map", "inductor", "interval", "laws",
                 "layout", "loop_maps", "native", "presburger", "ranges", "refinement", "seams",
                 "smt", "smt_terms", "subst", "sympy_bridge", "syntax", "tiling", "validation",
                 "vectorised", "version", "work")


def test_the_old_top_level_names_load_on_first_use() -> None:
    """`from verifidx import fusion, layout, tiling` (the README's) still works, as does every
    name that was a module at the top of the package, and `import verifidx` loads none of the
    analyses for it."""
    loaded = _loaded_after("import verifidx")
    assert not {m for m in loaded if m.startswith(("verifidx.analysis", "verifidx.hlo"))}
    names = _loaded_after("from verifidx import fusion, layout, tiling\n"
                          "print(fusion.__name__, layout.__name__, tiling.__name__)")
    assert {"verifidx.analysis.fusion", "verifidx.hlo.layout", "verifidx.analysis.tiling"} <= names
    import verifidx

    for name in OLD_TOP_LEVEL:
        module = getattr(verifidx, name)
        parts = module.__name__.split(".")
        assert parts[0] == "verifidx" and parts[2:] == [name], module.__name__
