#!/usr/bin/env python3
"""Moves verifidx's modules into one folder per layer (issue 35, first part), mechanically, so
that it can be replayed on a newer main.

Run from the root of a clean checkout of main (the base it was written on: beabab2):

    python3 tools/layer_move/move.py            # moves, rewrites, stages (git add); no commit
    RUFF=/path/to/ruff python3 .../move.py      # ruff for the import sorting (default: PATH,
                                                # then /tmp/ruffenv/bin/ruff)

What it does, in order:
  1. checks that every top-level entry of `verifidx/` has a place in MOVES or STAY (a module
     added on main since stops it here, naming the module: give it a folder in MOVES);
  2. `git mv` of every module and package to its folder; new packages get an `__init__.py`
     from templates/init_<folder>.py;
  3. rewrites module paths in every tracked .py under verifidx/, tests/, tools/, benchmarks/,
     and in verifidx_pytest.py, setup.py, pyproject.toml, README.md, tools/README.md,
     docs/*.md and the comments of rules/*.rules: dotted names (`verifidx.smt` ->
     `verifidx.solve.smt`, in code, strings and prose alike), file paths (`verifidx/smt.py`
     -> `verifidx/solve/smt.py`), and, in .py files, every `from ... import` statement (relative ones resolved from the module's old
     place and written relative to its new one; `from verifidx import smt` ->
     `from verifidx.solve import smt`);
  4. the hand-written parts: docs/architecture.md and the import-linter layers contract from
     templates/, and the small exact edits in EDITS (each must match exactly once);
  5. `ruff check --select I --fix` on the rewritten .py files (import order), then a plain
     `ruff check` on them to report what is left (long lines);
  6. `git add` of everything it touched.
It exits 1 (after doing everything it could) when an edit did not match or ruff complains, and
says which.
"""

from __future__ import annotations

import ast
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import tokenize
from pathlib import Path

HERE = Path(__file__).resolve().parent
TEMPLATES = HERE / "templates"

#: module or package under verifidx -> its new dotted place under verifidx
MOVES: dict[str, str] = {
    **{m: f"core.{m}" for m in (
        "errors", "expr", "interval", "canonical", "implied_bounds", "indexing_map", "syntax",
        "vectorised", "laws", "seams", "native", "work", "version")},
    **{m: f"solve.{m}" for m in ("smt", "smt_terms", "presburger")},
    "simplifier": "simplifier.engine",
    "equality": "simplifier.equality",
    "layout": "hlo.layout",
    **{m: f"analysis.{m}" for m in (
        "computation_maps", "loop_maps", "dedup", "fusion", "ranges", "refinement", "tiling",
        "subst")},
    **{m: f"clients.{m}" for m in ("sympy_bridge", "inductor", "validation")},
    "batch": "cli.batch",
}
#: top-level entries of verifidx/ that stay where they are
STAY = {"__init__.py", "py.typed", "cli", "hlo", "rules", "stablehlo"}
NEW_PACKAGES = ("core", "solve", "simplifier", "analysis", "clients")
#: the old names the package keeps answering (`from verifidx import fusion`); `simplifier` is a
#: folder now, and `native` is imported by name already
ALIASES = sorted(set(MOVES) - {"simplifier", "native"})

#: docs/architecture.md as the template was written against (beabab2): a different one on
#: main means someone edited it meanwhile, and the template may need their change too
ARCHITECTURE_BASE_SHA256 = "0fe920e229946fa8e3be4e5173b05d7c72508420d79ce9ddef77ec30948e2763"


def run(*cmd: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, check=check, capture_output=True, text=True)


def tracked(*patterns: str) -> list[str]:
    return run("git", "ls-files", "--", *patterns).stdout.split()


# -- module names ---------------------------------------------------------------------------------


def module_of(path: str) -> tuple[str, bool]:
    """Dotted name of a .py file and whether it is a package's __init__."""
    parts = path.removesuffix(".py").split("/")
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


def new_name(old: str) -> str:
    """The new dotted name of an old module name (or of an attribute path below one)."""
    parts = old.split(".")
    if len(parts) >= 2 and parts[0] == "verifidx" and parts[1] in MOVES:
        return ".".join(["verifidx", *MOVES[parts[1]].split("."), *parts[2:]])
    return old


def new_path(old: str) -> str:
    """The new file path of an old file path (a .py file or anything in a moved package)."""
    parts = old.split("/")
    if len(parts) >= 2 and parts[0] == "verifidx":
        head = parts[1].removesuffix(".py")
        if head in MOVES and (parts[1].endswith(".py") or len(parts) > 2):
            target = MOVES[head].split(".")
            if parts[1].endswith(".py"):
                return "/".join(["verifidx", *target[:-1], target[-1] + ".py"])
            return "/".join(["verifidx", *target, *parts[2:]])
    return old


# -- text rewriting -------------------------------------------------------------------------------

_NAMES = "|".join(sorted(MOVES, key=len, reverse=True))
_DOTTED = re.compile(rf"(?<![\w.])verifidx\.({_NAMES})(?!\w)")
_MODULE_FILES = "|".join(sorted((m for m in MOVES if m not in ("tiling", "subst")),
                                key=len, reverse=True))
_PATH = re.compile(rf"(?<![\w.-])verifidx/(?:({_MODULE_FILES})\.py\b|(tiling|subst)(?!\w))")


def rewrite_names(text: str) -> str:
    text = _DOTTED.sub(lambda m: new_name(m.group(0)), text)

    def path(m: re.Match[str]) -> str:
        if m.group(1):
            return new_path(m.group(0))
        return "verifidx/" + MOVES[m.group(2)].replace(".", "/")

    return _PATH.sub(path, text)


_NEW_NAMES = {new_name(f"verifidx.{m}"): f"verifidx.{m}" for m in MOVES}
_NEW_NAMES.update({new_path(f"verifidx/{m}.py"): f"verifidx/{m}.py" for m in MOVES})
_NEW_NAMES.update({"verifidx/" + MOVES[m].replace(".", "/"): f"verifidx/{m}"
                   for m in ("tiling", "subst")})
_NEW = re.compile("|".join(re.escape(n) for n in sorted(_NEW_NAMES, key=len, reverse=True)))


def old_spelling(line: str) -> str:
    """`line` with the module names spelled as before the move (to tell which lines the move
    made long)."""
    return _NEW.sub(lambda m: _NEW_NAMES[m.group(0)], line)


def relative(target: str, package: str) -> str:
    """`target` (a dotted module) as a relative import from inside `package`."""
    t, p = target.split("."), package.split(".")
    k = 0
    while k < min(len(t), len(p)) and t[k] == p[k]:
        k += 1
    return "." * (len(p) - k + 1) + ".".join(t[k:])


def _statement(indent: str, module: str, names: list[tuple[str, str | None]]) -> str:
    items = [n if a is None else f"{n} as {a}" for n, a in names]
    one = f"{indent}from {module} import {', '.join(items)}"
    if len(one) <= 100:
        return one
    inner = "".join(f"{indent}    {i},\n" for i in items)
    return f"{indent}from {module} import (\n{inner}{indent})"


def rewrite_imports(text: str, old_module: str | None, is_package: bool, new_module: str | None,
                    old_modules: set[str], where: str) -> str:
    """Every `from X import ...` whose target moved, written for the module's new place. Runs
    after `rewrite_names`, so absolute module names are new already; relative ones are still
    resolved from `old_module`, the file's place before the move."""
    tree = ast.parse(text, filename=where)
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    edits: list[tuple[int, int, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level == 0:
            if not (node.module or "").startswith("verifidx"):
                continue
            base = node.module or ""
            mapped_base = base  # already rewritten by rewrite_names
        else:
            if old_module is None:
                raise SystemExit(f"{where}: relative import outside verifidx/")
            package = old_module if is_package else old_module.rpartition(".")[0]
            up = package.split(".")
            if node.level > 1:
                up = up[: len(up) - (node.level - 1)]
            base = ".".join(up + ([node.module] if node.module else []))
            mapped_base = new_name(base)
        groups: dict[str, list[tuple[str, str | None]]] = {}
        for alias in node.names:
            full = f"{base}.{alias.name}"
            if full in old_modules and new_name(full) != full:
                parent, _, last = new_name(full).rpartition(".")
                asname = alias.asname or (alias.name if last != alias.name else None)
                groups.setdefault(parent, []).append((last, asname))
            else:
                groups.setdefault(mapped_base, []).append((alias.name, alias.asname))
        plain = list(groups) == [base] and all(
            (n, a) == (x.name, x.asname) for (n, a), x in zip(groups[base], node.names))
        if plain and (node.level == 0 or new_module is None):
            continue

        def spell(target: str) -> str:
            if node.level == 0:
                return target
            assert new_module is not None
            package = new_module if is_package else new_module.rpartition(".")[0]
            return relative(target, package)

        start = offsets[node.lineno - 1] + node.col_offset
        end = offsets[node.end_lineno - 1] + node.end_col_offset  # type: ignore[operator]
        segment = text[start:end]
        same_names = len(groups) == 1 and all(
            (n, a) == (x.name, x.asname) for (n, a), x in zip(next(iter(groups.values())),
                                                             node.names))
        if same_names:
            m = re.match(r"from\s+(\.*[\w.]*)\s+import", segment)
            assert m, (where, segment)
            spelled = spell(next(iter(groups)))
            if spelled != m.group(1):
                edits.append((start + m.start(1), start + m.end(1), spelled))
            continue
        line_start = offsets[node.lineno - 1]
        indent = text[line_start:start]
        if indent.strip():
            raise SystemExit(f"{where}:{node.lineno}: an import that must be split is not alone "
                             "on its line; split it by hand")
        new = "\n".join(_statement(indent, spell(t), names) for t, names in groups.items())
        edits.append((line_start, end, new))
    for start, end, new in sorted(edits, reverse=True):
        text = text[:start] + new + text[end:]
    return text


# -- the hand-written parts -----------------------------------------------------------------------

_INIT_MODULES = "".join(f'    "{n}": "{new_name("verifidx." + n)}",\n' for n in ALIASES)

#: (file, text that must occur exactly once after the mechanical rewrite, its replacement)
EDITS: list[tuple[str, str, str]] = [
    # native sits one folder down now; it still decides for the whole package
    ("verifidx/core/native.py",
     "_PACKAGE = Path(__file__).resolve().parent\n",
     "_PACKAGE = Path(__file__).resolve().parents[1]  # verifidx/, above core/\n"),
    # the old top-level names keep answering on the package
    ("verifidx/__init__.py",
     "\n\ndef __getattr__(name: str) -> object:\n",
     "\n#: The modules that sat at the top of the package before it had a folder per layer, by\n"
     "#: their old names (`from verifidx import fusion, layout, tiling`), loaded on first use.\n"
     "_MODULES = {\n" + _INIT_MODULES + "}\n"
     "\n\ndef __getattr__(name: str) -> object:\n"),
    ("verifidx/__init__.py",
     "    where = _LAZY.get(name)\n"
     "    if where is None:\n"
     "        raise AttributeError(f\"module 'verifidx' has no attribute {name!r}\")\n"
     "    value = getattr(_import_module(where[0]), where[1])\n",
     "    if name in _MODULES:\n"
     "        value: object = _import_module(_MODULES[name])\n"
     "    else:\n"
     "        where = _LAZY.get(name)\n"
     "        if where is None:\n"
     "            raise AttributeError(f\"module 'verifidx' has no attribute {name!r}\")\n"
     "        value = getattr(_import_module(where[0]), where[1])\n"),
    # files named relative to the package, and code inside strings
    ("tests/test_architecture.py", '_copy_with(tmp_path, "expr.py",',
     '_copy_with(tmp_path, "core/expr.py",'),
    ("tests/test_architecture.py", '_copy_with(tmp_path, "indexing_map.py",',
     '_copy_with(tmp_path, "core/indexing_map.py",'),
    ("tests/test_architecture.py", "    from verifidx import syntax\\n",
     "    from verifidx.core import syntax\\n"),
    ("tests/test_architecture.py", '["subst/prove.py", "tiling/proof.py", "hlo/indexing.py"]',
     '["analysis/subst/prove.py", "analysis/tiling/proof.py",\n'
     '                                    "hlo/indexing.py"]'),
    ("tests/test_architecture.py",
     '"\\n\\ndef _upward() -> None:\\n    from verifidx.simplifier.engine import simplify\\n")',
     '"\\n\\ndef _upward() -> None:\\n"\n'
     '                      "    from verifidx.simplifier.engine import simplify\\n")'),
    ("tests/test_architecture.py",
     '    assert any({"verifidx.core.indexing_map", "verifidx.core.syntax"} <= set(c) for c in '
     'cycles), cycles\n',
     '    assert any({"verifidx.core.indexing_map", "verifidx.core.syntax"} <= set(c)\n'
     '               for c in cycles), cycles\n'),
    ("verifidx/__init__.py",
     "from .core import native as native  # first: decides compiled or pure source "
     "(verifidx/core/native.py)\n",
     "from .core import native as native  # first: compiled or pure source (core/native.py)\n"),
    # the contracts: the folders, and the order inside three of them
    ("tests/test_architecture.py", '"2 kept, 0 broken"', '"5 kept, 0 broken"'),
    # batch sits in cli/ beside the subcommands, shared by them like common
    ("tests/test_architecture.py", 'shared = {"common", "__main__"}',
     'shared = {"common", "batch", "__main__"}'),
    ("tests/test_light_import.py", '"verifidx.cli.common", f"verifidx.cli.{argv[0]}"}',
     '"verifidx.cli.common", "verifidx.cli.batch", f"verifidx.cli.{argv[0]}"}'),
    ("README.md",
     "Layers, bottom to top ([docs/architecture.md](docs/architecture.md)); a module imports only "
     "from its\nown layer or lower ones,",
     "Layers, bottom to top, a folder each ([docs/architecture.md](docs/architecture.md)); a "
     "module\nimports only from its own folder or lower ones,"),
]

#: (file, template appended at its end)
APPENDS: list[tuple[str, str]] = [
    ("tests/test_light_import.py", "test_light_import_tail.py"),
]

_CONTRACT = re.compile(r"# The layers of docs/architecture\.md.*?\nid = \"layers\"\n.*?\n\]\n",
                       re.DOTALL)


def replace_contract(text: str) -> str:
    found = _CONTRACT.findall(text)
    if len(found) != 1:
        raise SystemExit("pyproject.toml: the layers contract (from '# The layers of "
                         "docs/architecture.md' to its `layers` list) not found once")
    listed = set(re.findall(r"[\w]+", found[0].split("layers = [", 1)[1]))
    unknown = listed - set(MOVES) - STAY - {"reserved"}
    if unknown:
        raise SystemExit(f"pyproject.toml: the layers contract names {sorted(unknown)}, which "
                         "MOVES does not place")
    return _CONTRACT.sub(lambda _: (TEMPLATES / "importlinter.toml").read_text(), text)


# -- long lines -----------------------------------------------------------------------------------

LIMIT = 100
_NOT_PROSE = re.compile(r"(-|\*|\d+\.|>>>|```|\|)(\s|$)")
_TRIPLE = re.compile("[rRbBuUfF]*(\"\"\"|''')")


def _split_at(line: str, floor: int) -> int | None:
    """Index of the last space that leaves at most LIMIT characters before it, outside
    backticks if there is such a space."""
    spaces = [i for i, ch in enumerate(line) if ch == " " and floor < i <= LIMIT]
    outside = [i for i in spaces if line[:i].count("`") % 2 == 0]
    return (outside or spaces or [None])[-1]


def _continues(nxt: str | None, prefix: str) -> bool:
    """Whether `nxt` carries on the paragraph of a line whose text starts after `prefix`."""
    if nxt is None or not nxt.startswith(prefix):
        return False
    rest = nxt[len(prefix):]
    return bool(rest.strip()) and not rest[0].isspace() and not _NOT_PROSE.match(rest) \
        and rest.strip() not in ('"""', "'''")


def reflow(text: str, lineno: int) -> str | None:
    """`text` with its line `lineno` (1-based, in a docstring or a comment) cut under LIMIT, the
    rest carried onto the next line of the same paragraph (or a new one); None when the line is
    code, which needs a hand."""
    lines = text.splitlines(keepends=True)
    line = lines[lineno - 1].rstrip("\n")
    stripped = line.lstrip()
    indent = line[: len(line) - len(stripped)]
    nxt = lines[lineno].rstrip("\n") if lineno < len(lines) else None
    if stripped.startswith("#"):
        header = re.match(r"(\s*# -- .*? )-+$", line)
        if header:
            dashes = "-" * max(2, LIMIT - len(header.group(1)))
            lines[lineno - 1] = header.group(1) + dashes + "\n"
            return "".join(lines)
        prefix = re.match(r"\s*#+ ?", line).group(0)  # type: ignore[union-attr]
        cont, floor, last = prefix, len(prefix), False
    else:
        docstring = None
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.STRING and tok.start[0] <= lineno <= tok.end[0] \
                    and _TRIPLE.match(tok.string):
                docstring = tok
                break
            if tok.start[0] > lineno:
                break
        if docstring is None:
            return None
        if docstring.start[0] == lineno:
            cont, floor = " " * docstring.start[1], len(indent) + 3
        else:
            cont, floor = indent, len(indent)
        last = docstring.end[0] == lineno
    cut = _split_at(line, floor)
    if cut is None:
        return None
    head, tail = line[:cut].rstrip(), line[cut + 1:]
    if not last and _continues(nxt, cont):
        assert nxt is not None
        lines[lineno - 1:lineno + 1] = [head + "\n", cont + tail + " " + nxt[len(cont):] + "\n"]
    else:
        lines[lineno - 1] = head + "\n" + cont + tail + "\n"
    return "".join(lines)


def reflow_markdown(text: str, before: str) -> str:
    """The prose lines of a document that the longer names pushed over LIMIT, cut and carried
    on as `reflow` does (code blocks, tables and headings stay as they are, and so do lines that
    were as long `before` the move)."""
    long_before = {line for line in before.splitlines() if len(line) > LIMIT}
    for _ in range(8):
        lines = text.splitlines(keepends=True)
        fence, changed = False, False
        inside = []  # which lines are in code blocks
        for line in lines:
            if line.lstrip().startswith("```"):
                fence = not fence
                inside.append(True)
            else:
                inside.append(fence)
        for i in range(len(lines) - 1, -1, -1):
            line = lines[i].rstrip("\n")
            if len(line) <= LIMIT or old_spelling(line) in long_before or inside[i] \
                    or line.lstrip().startswith(("|", "#")):
                continue  # short, long before the move, or not prose
            stripped = line.lstrip()
            indent = line[: len(line) - len(stripped)]
            marker = re.match(r"(-|\*|\d+\.) ", stripped)
            cont = indent + " " * len(marker.group(0)) if marker else indent
            cut = _split_at(line, len(cont) + (len(marker.group(0)) if marker else 0))
            if cut is None:
                continue
            head, tail = line[:cut].rstrip(), line[cut + 1:]
            nxt = lines[i + 1].rstrip("\n") if i + 1 < len(lines) else None
            if nxt is not None and not (i + 1 < len(inside) and inside[i + 1]) \
                    and _continues(nxt, cont) and not nxt.lstrip().startswith(("|", "#")):
                lines[i:i + 2] = [head + "\n", cont + tail + " " + nxt[len(cont):] + "\n"]
            else:
                lines[i] = head + "\n" + cont + tail + "\n"
            changed = True
        text = "".join(lines)
        if not changed:
            break
    return text


def fix_long_lines(ruff: str, files: list[str]) -> list[str]:
    """Reflows the docstring and comment lines that the longer names pushed over LIMIT; returns
    the long lines left (code, for a hand)."""
    left: list[str] = []
    for _ in range(8):
        out = run(ruff, "check", "--select", "E501", "--output-format", "concise", "--quiet",
                  *files, check=False).stdout
        found: dict[str, list[int]] = {}
        for entry in out.splitlines():
            m = re.match(r"(.+?):(\d+):\d+: E501", entry)
            if m:
                found.setdefault(m.group(1), []).append(int(m.group(2)))
        left, changed = [], False
        for path, numbers in found.items():
            text = Path(path).read_text(encoding="utf-8")
            for n in sorted(set(numbers), reverse=True):
                new = reflow(text, n)
                if new is None:
                    left.append(f"{path}:{n}")
                else:
                    text, changed = new, True
            Path(path).write_text(text, encoding="utf-8")
        if not changed:
            break
    return left


# -- the run --------------------------------------------------------------------------------------


def find_ruff() -> str | None:
    for candidate in (os.environ.get("RUFF"), shutil.which("ruff"), "/tmp/ruffenv/bin/ruff"):
        if candidate and Path(candidate).exists():
            return candidate
    return None


def main() -> int:
    root = Path.cwd()
    if not (root / "verifidx" / "__init__.py").exists() or not (root / "pyproject.toml").exists():
        raise SystemExit("run this from the root of a verifidx checkout")
    if not (root / "verifidx" / "simplifier.py").exists():
        raise SystemExit("verifidx/simplifier.py is gone: the move has run here already")
    if run("git", "status", "--porcelain", "--untracked-files=no").stdout.strip():
        raise SystemExit("the checkout has uncommitted changes; commit or stash them first")

    top = {p.split("/")[1] for p in tracked("verifidx")}
    unplaced = sorted(e for e in top if e not in STAY and e.removesuffix(".py") not in MOVES)
    if unplaced:
        raise SystemExit("no folder for " + ", ".join(f"verifidx/{e}" for e in unplaced)
                         + ": add it to MOVES (or STAY) in move.py")
    missing = sorted(m for m in MOVES if f"{m}.py" not in top and m not in top)
    if missing:
        raise SystemExit(f"MOVES names modules that are not there: {missing}")
    problems: list[str] = []
    arch = (root / "docs" / "architecture.md").read_bytes()
    if hashlib.sha256(arch).hexdigest() != ARCHITECTURE_BASE_SHA256:
        problems.append("docs/architecture.md changed on main since the template was written: "
                        "the template replaced it; carry the change over by hand "
                        "(git diff beabab2 HEAD -- docs/architecture.md)")
    stale = sorted(str(p) for p in (root / "verifidx").glob("**/*")
                   if p.suffix == ".so" or p.name == "_build.json")
    if stale:
        problems.append(f"compiled build artifacts in the checkout ({len(stale)}, e.g. "
                        f"{stale[0]}): they name the old modules; delete them or reinstall")

    sources = tracked("verifidx", "tests", "tools", "benchmarks")
    files = [p for p in sources if p.endswith(".py")] + [
        p for p in tracked("verifidx_pytest.py", "setup.py", "pyproject.toml", "README.md",
                           "tools/README.md", "docs", "rules")
        if p.endswith((".py", ".md", ".toml", ".rules", ".subst")) and p.count("/") <= 1]
    old_modules = {module_of(p)[0] for p in tracked("verifidx") if p.endswith(".py")}

    # 2. the move
    for package in NEW_PACKAGES:
        (root / "verifidx" / package).mkdir(exist_ok=True)
    for name, target in MOVES.items():
        old = f"verifidx/{name}.py"
        if (root / old).exists():
            run("git", "mv", old, new_path(old))
        else:
            run("git", "mv", f"verifidx/{name}", "verifidx/" + target.replace(".", "/"))
    for package in NEW_PACKAGES:
        init = root / "verifidx" / package / "__init__.py"
        init.write_text((TEMPLATES / f"init_{package}.py").read_text())
        run("git", "add", str(init))

    # 3. the rewriting
    touched: list[str] = []
    for old_path in files:
        path = new_path(old_path)
        text = (root / path).read_text(encoding="utf-8")
        new = rewrite_names(text)
        if path.endswith(".py"):
            old_module, is_package = module_of(old_path) if old_path.startswith("verifidx/") \
                else (None, False)
            new_module = module_of(path)[0] if path.startswith("verifidx/") else None
            new = rewrite_imports(new, old_module, is_package, new_module, old_modules, path)
        if path == "pyproject.toml":
            new = replace_contract(new)
        if path.endswith(".md"):
            new = reflow_markdown(new, text)
        if new != text:
            (root / path).write_text(new, encoding="utf-8")
            touched.append(path)

    # 4. the hand-written parts
    (root / "docs" / "architecture.md").write_text((TEMPLATES / "architecture.md").read_text())
    touched.append("docs/architecture.md")
    for path, old, new in EDITS:
        text = (root / path).read_text(encoding="utf-8")
        if text.count(old) != 1:
            problems.append(f"{path}: edit not applied, found {text.count(old)} times: "
                            f"{old.splitlines()[0]!r}")
            continue
        (root / path).write_text(text.replace(old, new), encoding="utf-8")
        touched.append(path)
    for path, template in APPENDS:
        text = (root / path).read_text(encoding="utf-8")
        (root / path).write_text(text.rstrip("\n") + "\n\n\n" + (TEMPLATES / template).read_text(),
                                 encoding="utf-8")
        touched.append(path)

    # 5. import order, then what is left
    py = sorted({p for p in touched if p.endswith(".py")} |
                {f"verifidx/{p}/__init__.py" for p in NEW_PACKAGES})
    ruff = find_ruff()
    if ruff is None:
        problems.append("ruff not found (RUFF=...): imports are not re-sorted")
    else:
        run(ruff, "check", "--select", "I", "--fix", "--quiet", *py, check=False)
        for where in fix_long_lines(ruff, py):
            problems.append(f"{where}: a code line over {LIMIT} characters; shorten it by hand")
        left = run(ruff, "check", "--quiet", *py, check=False)
        if left.returncode != 0:
            problems.append("ruff check:\n" + left.stdout.strip())

    # 6. stage (this one-off leaves with the move it makes, when it lives in the checkout)
    run("git", "add", "-A", "--", *sorted(set(touched)), "verifidx")
    if HERE.resolve().is_relative_to(root.resolve()):
        run("git", "rm", "-r", "-q", "-f", "--", str(HERE.resolve().relative_to(root.resolve())))
    print(f"moved {len(MOVES)} modules and packages, rewrote {len(set(touched))} files; "
          "staged, not committed")
    for p in problems:
        print("PROBLEM:", p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
