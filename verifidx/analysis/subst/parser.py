"""The text format of graph substitutions (`rules/*.subst`, docs/substitutions.md).

    # transposing twice is transposing once by the composed permutation
    subst transpose_transpose:
      inputs x[a...]
      perms p, q
      transpose(transpose(x, perm=p), perm=q) => transpose(x, perm=compose(p, q))

A block starts with `subst NAME:` and holds clauses: `inputs` (names with size lists),
`perms` (permutation parameters), `if` conditions joined by `and`, and one `LHS => RHS`. Errors
carry the file, line and column.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from pathlib import Path

from verifidx.analysis.subst.model import (
    OPS,
    AttrValue,
    Condition,
    Node,
    PermExpr,
    SizeExpr,
    SizeList,
    Substitution,
    names_in,
)
from verifidx.core.errors import ParseError, decode_text

__all__ = ["load_substitution_file", "parse_substitutions", "substitution_files"]

_TOKEN = re.compile(r"\s+|#[^\n]*|(?P<tok>\.\.\.|=>|<=|>=|==|!=|[A-Za-z_][A-Za-z0-9_]*|-?\d+|"
                    r"[()\[\],:=+\-*<>])")
_KEYWORDS = {"subst", "inputs", "perms", "if", "and", "compose", "inverse"}
_SIZE_LIST_ATTRS = {"shape", "start", "limit", "stride", "low", "high", "interior", "dims"}


class _Tokens:
    def __init__(self, text: str, source: str) -> None:
        self.source = source
        self.toks: list[tuple[str, int, int]] = []
        line, line_start, pos = 1, 0, 0
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if m is None:
                raise ParseError(f"unexpected character {text[pos]!r}", line,
                                 pos - line_start + 1, source)
            if m.group("tok"):
                self.toks.append((m.group("tok"), line, pos - line_start + 1))
            for k in range(pos, m.end()):
                if text[k] == "\n":
                    line, line_start = line + 1, k + 1
            pos = m.end()
        self.toks.append(("", line, pos - line_start + 1))
        self.i = 0

    def fail(self, message: str, line: int | None = None, col: int | None = None) -> None:
        if line is None:
            _, line, col = self.toks[self.i]
        raise ParseError(message, line, col or 1, self.source)

    @property
    def peek(self) -> str:
        return self.toks[self.i][0]

    @property
    def where(self) -> tuple[int, int]:
        return self.toks[self.i][1], self.toks[self.i][2]

    def take(self) -> str:
        tok = self.toks[self.i][0]
        self.i += 1
        return tok

    def accept(self, tok: str) -> bool:
        if self.peek == tok:
            self.i += 1
            return True
        return False

    def expect(self, tok: str, what: str) -> None:
        if not self.accept(tok):
            got = repr(self.peek) if self.peek else "the end of the file"
            self.fail(f"expected {what}, got {got}")

    def name(self, what: str) -> str:
        tok = self.peek
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", tok or "-") or tok in _KEYWORDS:
            self.fail(f"expected {what}, got {tok!r}" if tok else f"expected {what}")
        return self.take()


def _expr(t: _Tokens) -> SizeExpr:
    e = _term(t)
    while t.peek in ("+", "-"):
        op = t.take()
        e = (op, e, _term(t))
    return e


def _term(t: _Tokens) -> SizeExpr:
    e = _factor(t)
    while t.peek == "*":
        t.take()
        e = ("*", e, _factor(t))
    return e


def _factor(t: _Tokens) -> SizeExpr:
    if t.accept("("):
        e = _expr(t)
        t.expect(")", "')'")
        return e
    if re.fullmatch(r"-?\d+", t.peek or "x"):
        return int(t.take())
    if t.accept("-"):
        return ("-", 0, _factor(t))
    return t.name("a size expression")


def _size_list(t: _Tokens) -> SizeList:
    t.expect("[", "'['")
    if t.accept("]"):
        return SizeList(())
    if re.fullmatch(r"[A-Za-z_]\w*", t.peek) and t.toks[t.i + 1][0] == "...":
        name = t.name("a size list name")
        t.take()
        t.expect("]", "']' after '...'")
        return SizeList((), name)
    items = [_expr(t)]
    while t.accept(","):
        items.append(_expr(t))
    t.expect("]", "',' or ']'")
    return SizeList(tuple(items))


def _perm(t: _Tokens) -> PermExpr:
    if t.peek == "[":
        return _size_list(t)
    if t.peek in ("compose", "inverse"):
        fn = t.take()
        t.expect("(", f"'(' after {fn}")
        args = [_perm(t)]
        if fn == "compose":
            t.expect(",", "',' between the permutations of compose")
            args.append(_perm(t))
        t.expect(")", "')'")
        return (fn, *args)
    return t.name("a permutation")


def _graph(t: _Tokens) -> Node:
    line, col = t.where
    name = t.name("an op or an input name")
    if not t.accept("("):
        return Node("input", name=name)
    if name not in OPS:
        t.fail(f"unknown op '{name}' (expected one of {', '.join(sorted(OPS))})", line, col)
    n_args, required, optional = OPS[name]
    args: list[Node] = []
    attrs: dict[str, AttrValue] = {}
    while not t.accept(")"):
        if args or attrs:
            t.expect(",", "',' or ')'")
        if t.toks[t.i + 1][0] == "=":
            key_line, key_col = t.where
            key = t.name("an attribute name")
            t.take()
            if key not in required + optional:
                t.fail(f"{name} has no attribute '{key}'", key_line, key_col)
            if key == "perm":
                attrs[key] = _perm(t)
            elif key in _SIZE_LIST_ATTRS:
                attrs[key] = _size_list(t)
            else:
                if not re.fullmatch(r"\d+", t.peek or "x"):
                    t.fail(f"{key}= takes a non-negative integer")
                attrs[key] = int(t.take())
        else:
            if attrs:
                t.fail("operands come before attributes")
            args.append(_graph(t))
    if (n_args is not None and len(args) != n_args) or not args:
        t.fail(f"{name} takes {n_args or 'one or more'} operand(s), got {len(args)}", line, col)
    missing = [k for k in required if k not in attrs]
    if missing:
        t.fail(f"{name} needs the attribute '{missing[0]}'", line, col)
    return Node(name, tuple(args), tuple((k, attrs[k]) for k in required + optional
                                         if k in attrs))


def _conditions(t: _Tokens) -> list[Condition]:
    out: list[Condition] = []
    while True:
        left = _expr(t)
        if t.peek not in ("==", "!=", "<", "<=", ">", ">="):
            t.fail("expected a comparison (== != < <= > >=)")
        while t.peek in ("==", "!=", "<", "<=", ">", ">="):
            op = t.take()
            right = _expr(t)
            out.append(Condition(op, left, right))
            left = right
        if not t.accept("and"):
            return out


def _block(t: _Tokens, text_lines: Sequence[str]) -> Substitution:
    line, _ = t.where
    t.expect("subst", "'subst'")
    name = t.name("a substitution name")
    t.expect(":", f"':' after 'subst {name}'")
    inputs: dict[str, SizeList] = {}
    perms: list[str] = []
    conds: list[Condition] = []
    sides: tuple[Node, Node] | None = None
    sides_at = t.where
    while t.peek and t.peek != "subst":
        if t.accept("inputs"):
            while True:
                at = t.where
                n = t.name("an input name")
                if n in inputs:
                    t.fail(f"input '{n}' declared twice", *at)
                inputs[n] = _size_list(t)
                if not t.accept(","):
                    break
        elif t.accept("perms"):
            perms.append(t.name("a permutation name"))
            while t.accept(","):
                perms.append(t.name("a permutation name"))
        elif t.accept("if"):
            conds += _conditions(t)
        else:
            if sides is not None:
                t.fail(f"substitution '{name}' already has its 'LHS => RHS'")
            sides_at = t.where
            lhs = _graph(t)
            t.expect("=>", "'=>' between the two graphs")
            sides = (lhs, _graph(t))
    if sides is None:
        t.fail(f"substitution '{name}' needs a clause 'LHS => RHS'", line, 1)
    assert sides is not None
    end_line = t.where[0] - 1 if t.peek else len(text_lines)
    sub = Substitution(name, tuple(inputs.items()), tuple(perms), tuple(conds), sides[0],
                       sides[1], t.source, line, "\n".join(text_lines[line - 1:end_line]))
    _validate(sub, t, sides_at)
    return sub


def _validate(sub: Substitution, t: _Tokens, at: tuple[int, int]) -> None:
    declared = sub.input_shapes
    size_names: set[str] = set()
    variadic: set[str] = set()
    for shape in declared.values():
        if shape.variadic:
            variadic.add(shape.variadic)
        for e in shape.items:
            size_names |= names_in(e)

    def uses(n: Node) -> tuple[set[str], set[str], set[str], set[str]]:
        inputs, names, lists, perm_names = set(), set(), set(), set()
        for node in n.nodes():
            if node.op == "input":
                if node.name not in declared:
                    t.fail(f"'{node.name}' is not a declared input", *at)
                inputs.add(node.name)
            for _k, v in node.attrs:
                stack: list[object] = [v]
                while stack:
                    x = stack.pop()
                    if isinstance(x, SizeList):
                        if x.variadic:
                            lists.add(x.variadic)
                        for e in x.items:
                            names.update(names_in(e))
                    elif isinstance(x, tuple):
                        stack.extend(x[1:])
                    elif isinstance(x, str):
                        perm_names.add(x)
        return inputs, names, lists, perm_names

    li, ln, ll, lp = uses(sub.lhs)
    ri, rn, rl, rp = uses(sub.rhs)
    for n in sorted((lp | rp) - set(sub.perms)):
        t.fail(f"permutation '{n}' is not declared with 'perms'", *at)
    if ri - li:
        t.fail(f"the right side reads '{sorted(ri - li)[0]}', which the left side does not", *at)
    known = size_names | ln
    for n in sorted(rn - known):
        t.fail(f"'{n}' on the right side is bound neither by an input shape nor by the left "
               "side", *at)
    for n in sorted(rl - (variadic | ll)):
        t.fail(f"size list '{n}...' on the right side is not bound on the left", *at)
    for c in sub.conditions:
        for n in sorted((names_in(c.lhs) | names_in(c.rhs)) - known):
            t.fail(f"condition uses '{n}', which no input shape or left-side attribute binds",
                   *at)


def parse_substitutions(text: str, source: str = "<string>") -> list[Substitution]:
    """Every substitution of a file, in order; names must be unique."""
    t = _Tokens(text, source)
    lines = text.splitlines()
    out: list[Substitution] = []
    seen: dict[str, int] = {}
    while t.peek:
        at = t.where
        sub = _block(t, lines)
        if sub.name in seen:
            t.fail(f"substitution '{sub.name}' already defined on line {seen[sub.name]}", *at)
        seen[sub.name] = sub.line
        out.append(sub)
    return out


def parse_one(text: str, file: str = "<generated>", line: int = 1) -> Substitution:
    """A substitution that travelled as its normalized text (a work item), with the file and
    line it came from, so that messages about it point where the user wrote it."""
    (sub,) = parse_substitutions(text + "\n", file)
    return dataclasses.replace(sub, line=line)


def parse_graph(text: str, source: str = "<string>") -> Node:
    """One graph (`transpose(x, perm=[1, 0])`), as `str(Node)` prints it."""
    t = _Tokens(text, source)
    graph = _graph(t)
    if t.peek:
        t.fail(f"unexpected '{t.peek}' after the graph")
    return graph


def load_substitution_file(path: str | Path) -> list[Substitution]:
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as err:
        raise ParseError(f"cannot read: {err.strerror}", 1, 1, str(p)) from None
    return parse_substitutions(decode_text(data, str(p)), str(p))


def substitution_files(paths: Sequence[str | Path]) -> list[Path]:
    """`*.subst` files named by `paths` (files, or directories searched for `*.subst`)."""
    out: dict[Path, Path] = {}
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found = sorted(p.glob("*.subst"))
        elif p.is_file():
            found = [p]
        else:
            raise ParseError("no such substitution file or directory", 1, 1, str(raw))
        for f in found:
            out.setdefault(f.resolve(), f)
    return list(out.values())
