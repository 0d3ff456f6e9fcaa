"""Rule files: `rule NAME [markers]: LHS => RHS` blocks with `if` conditions (docs/rules.md).

Patterns are parsed with the map parser in raw mode (`fold=False`), so the tree of a rule is the
tree its text shows: `x + 0 => x` stays a claim about `x + 0`. Every error names the file, the
line and the column, and every name a rule uses on its right side or in a condition must be bound
by its left side, so that a matcher can always instantiate the rule.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Final

from ..core.errors import ParseError, decode_text, locate
from ..core.expr import Const, Expr, Mul
from ..core.syntax import Token, _Parser, tokenize
from .model import (
    FUNCTIONS,
    BoolOp,
    Call,
    Compare,
    Condition,
    ConstVar,
    Membership,
    Not,
    Rule,
    TermVar,
    Truth,
    condition_exprs,
)

_TOKEN: Final = re.compile(
    r"(?P<int>\d+)|(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<punct>=>|==|!=|<=|>=|->|[-+*/(),\[\]{}:<>])"
)
_COMPARISONS: Final = ("==", "!=", "<=", ">=", "<", ">")
_ARITHMETIC = ("+", "-", "*", "/", "floordiv", "ceildiv", "mod")
_OPERATORS: Final = (*_COMPARISONS, *_ARITHMETIC)
KEYWORDS: Final = frozenset({"rule", "if", "and", "or", "not", "in", "true", "false",
                             # words of the map grammar, so that counterexamples print as map text
                             "floordiv", "floorDiv", "ceildiv", "mod", "min", "max", "domain"})
MARKERS: Final = frozenset({"expand", "ordered", "split", "trial"})
_CONSTANT: Final = re.compile(r"c\d+")
_TERM: Final = re.compile(r"[a-z_][a-z0-9_]*")


def _strip_comments(text: str) -> str:
    """Blank out `#` comments, keeping every offset (and so every line and column) intact."""
    return re.sub(r"#[^\n]*", lambda m: " " * len(m.group(0)), text)


def _tokenize(text: str, source: str) -> list[Token]:
    return tokenize(text, source, _TOKEN)


class _RuleParser(_Parser):
    """The map parser's expression grammar plus rule blocks and conditions."""

    def __init__(self, text: str, source: str) -> None:
        super().__init__("", source)
        self.text = _strip_comments(text)
        self.tokens = _tokenize(self.text, source)
        self.fold = False
        self.pattern_name = self._leaf
        self.functions = self._call

    # -- hooks of the expression grammar ------------------------------------------------------
    def negate(self, a: Expr) -> Expr:
        # a written `- 1` is the constant -1, as in folded expressions, so that it can match
        return Const(-a.value) if isinstance(a, Const) else Mul(a, Const(-1))

    def _leaf(self, name: str, tok: Token) -> Expr | None:
        if name in KEYWORDS:
            raise self.fail(f"expected an expression, found the keyword {name!r}", tok)
        if _CONSTANT.fullmatch(name):
            return ConstVar(name)
        if _TERM.fullmatch(name):
            return TermVar(name)
        raise self.fail(f"{name!r}: term variables are lower-case names, constants are "
                        "c<digits>", tok)

    def _call(self, name: str, args: list[Expr], tok: Token) -> Expr:
        if name in ("min", "max"):
            raise self.fail(f"{name} takes two operands", tok)
        arity = FUNCTIONS.get(name)
        if arity is None:
            known = ", ".join(sorted({*FUNCTIONS, "min", "max"}))
            raise self.fail(f"unknown function {name!r} (known: {known})", tok)
        if arity != len(args):
            raise self.fail(f"{name} takes {arity} operand{'s' if arity > 1 else ''}", tok)
        return Call(name, args)

    # -- helpers ------------------------------------------------------------------------------
    def at_word(self, word: str) -> bool:
        return self.tok.kind == "name" and self.tok.text == word

    def accept_word(self, word: str) -> bool:
        if self.at_word(word):
            self.pos += 1
            return True
        return False

    def end_of(self, index: int) -> int:
        t = self.tokens[index]
        return t.offset + len(t.text)

    # -- rule files ---------------------------------------------------------------------------
    def rules(self) -> list[Rule]:
        out: list[Rule] = []
        seen: dict[str, int] = {}
        while self.tok.kind != "end":
            if not self.at_word("rule"):
                raise self.error("expected 'rule'")
            rule = self.rule()
            if rule.name in seen:
                raise ParseError(f"rule {rule.name!r} is already defined on line "
                                 f"{seen[rule.name]}", rule.line, 6, self.source)
            seen[rule.name] = rule.line
            out.append(rule)
        return out

    def rule(self) -> Rule:
        start = self.tok
        self.pos += 1
        name_tok = self.tok
        if name_tok.kind != "name" or name_tok.text in KEYWORDS:
            raise self.error("expected the rule's name")
        self.pos += 1
        markers = self.markers()
        self.expect(":", "':' after the rule's name")
        lhs_tok = self.tok
        lhs = self.side()
        self.expect("=>", "'=>' between the two sides")
        rhs_tok = self.tok
        rhs = self.side()
        conditions: list[tuple[Condition, Token]] = []
        while self.accept_word("if"):
            cond_tok = self.tok
            conditions.append((self.condition(), cond_tok))
        if self.tok.kind != "end" and not self.at_word("rule"):
            raise self.error("expected 'if', the next 'rule' or the end of the file")
        line, _ = locate(self.text, start.offset)
        text = self.text[start.offset : self.end_of(self.pos - 1)]
        conds: list[Condition] = []
        for c, _ in conditions:
            conds.extend(c.args if isinstance(c, BoolOp) and c.op == "and" else (c,))
        condition: Condition = (
            Truth(True) if not conds else conds[0] if len(conds) == 1
            else BoolOp("and", tuple(conds)))
        self.validate(lhs, lhs_tok, rhs, rhs_tok, conditions)
        return Rule(
            name=name_tok.text, kind="constraint" if isinstance(lhs, Membership) else "expr",
            lhs=lhs, rhs=rhs, condition=condition, file=self.source, line=line, text=text,
            expansion=bool(markers & {"expand", "trial"}), ordered="ordered" in markers,
            trial="trial" in markers, split="split" in markers)

    def markers(self) -> set[str]:
        found: set[str] = set()
        if not self.accept("["):
            return found
        while True:
            t = self.tok
            if t.kind != "name" or t.text not in MARKERS:
                raise self.error(f"expected a marker ({', '.join(sorted(MARKERS))})")
            found.add(t.text)
            self.pos += 1
            if self.accept("]"):
                return found
            self.expect(",", "',' or ']' after a marker")

    def side(self) -> Expr | Membership:
        e = self.expr()
        if not self.accept_word("in"):
            return e
        self.expect("[", "'[' to start the interval")
        lo = self.expr()
        self.expect(",", "',' in the interval")
        hi = self.expr()
        self.expect("]", "']' to close the interval")
        return Membership(e, lo, hi)

    # -- conditions ---------------------------------------------------------------------------
    def condition(self) -> Condition:
        args = [self.conjunction()]
        while self.accept_word("or"):
            args.append(self.conjunction())
        return args[0] if len(args) == 1 else BoolOp("or", tuple(args))

    def conjunction(self) -> Condition:
        args = [self.negation()]
        while self.accept_word("and"):
            args.append(self.negation())
        return args[0] if len(args) == 1 else BoolOp("and", tuple(args))

    def negation(self) -> Condition:
        if self.accept_word("not"):
            return Not(self.negation())
        if self.accept_word("true"):
            return Truth(True)
        if self.accept_word("false"):
            return Truth(False)
        if self.at("("):
            # `(a > 0 or b > 0)` groups conditions, `(c0 + 1) > 0` groups arithmetic
            saved = self.pos
            grouped: ParseError | None = None
            try:
                self.pos += 1
                inner = self.condition()
                self.expect(")", "')' to close '('")
                if self.tok.text not in _OPERATORS or self.tok.kind == "end":
                    return inner
            except ParseError as err:
                grouped = err
            self.pos = saved
            try:
                return self.comparison()
            except ParseError as err:
                # report whichever reading got further into the text
                if grouped is not None and (grouped.line, grouped.column) > (err.line,
                                                                            err.column):
                    raise grouped from None
                raise
        return self.comparison()

    def comparison(self) -> Condition:
        left = self.expr()
        if self.tok.text not in _COMPARISONS or self.tok.kind == "end":
            raise self.error("expected a comparison (==, !=, <, <=, >, >=)")
        parts: list[Condition] = []
        while self.tok.text in _COMPARISONS and self.tok.kind != "end":
            op = self.tok.text
            self.pos += 1
            right = self.expr()
            parts.append(Compare(op, left, right))
            left = right
        return parts[0] if len(parts) == 1 else BoolOp("and", tuple(parts))

    # -- static checks ------------------------------------------------------------------------
    def validate(self, lhs: Expr | Membership, lhs_tok: Token, rhs: Expr | Membership,
                 rhs_tok: Token, conditions: Sequence[tuple[Condition, Token]]) -> None:
        """A matcher must be able to instantiate everything from the left side alone."""
        if isinstance(lhs, Membership) != isinstance(rhs, Membership):
            raise self.fail("both sides must be expressions, or both memberships "
                            "'e in [lo, hi]'", rhs_tok)
        lhs_expr = lhs.expr if isinstance(lhs, Membership) else lhs
        if any(isinstance(n, Call) for n in lhs_expr.walk()):
            raise self.fail("functions (lo, hi, gcd, lcm, abs) are not patterns; "
                            "use them in conditions or on the right side", lhs_tok)
        if isinstance(lhs, Membership):
            for b in (lhs.lo, lhs.hi):
                if not isinstance(b, (ConstVar, Const)):
                    raise self.fail("the bounds of the left membership must be constants "
                                    "(c1) or integers", lhs_tok)
        elif isinstance(lhs, (TermVar, ConstVar, Const)):
            raise self.fail("the left side must be an operation, not a single leaf", lhs_tok)
        bound = _leaves(lhs_expr) | (_leaves(lhs.lo) | _leaves(lhs.hi)
                                     if isinstance(lhs, Membership) else set())
        if isinstance(rhs, Membership):
            _check_bound(_leaves(rhs.expr), bound, self.fail, rhs_tok)
            for b in (rhs.lo, rhs.hi):
                _check_bound(_leaves(b), bound, self.fail, rhs_tok)
                if any(isinstance(n, TermVar) for n in _outside_calls(b)):
                    raise self.fail("interval bounds may use constants, lo() and hi() only",
                                    rhs_tok)
        else:
            _check_bound(_leaves(rhs), bound, self.fail, rhs_tok)
        for cond, tok in conditions:
            _check_bound(condition_uses(cond), bound, self.fail, tok)
            for e in condition_exprs(cond):
                seen = [n for n in _outside_calls(e) if isinstance(n, TermVar)]
                if seen:
                    raise self.fail(f"conditions see a term ({seen[0]}) only through lo() "
                                    "and hi(): its value is unknown at the match site", tok)


def _leaves(e: Expr) -> set[Expr]:
    return {n for n in e.walk() if isinstance(n, (TermVar, ConstVar))}


def _outside_calls(e: Expr) -> Iterable[Expr]:
    """Nodes of `e` that are not inside a `lo`/`hi` call (whose argument is a matched term)."""
    stack = [e]
    while stack:
        n = stack.pop()
        yield n
        if not (isinstance(n, Call) and n.fn in ("lo", "hi")):
            stack.extend(n.children)


def condition_uses(cond: Condition) -> set[Expr]:
    out: set[Expr] = set()
    for e in condition_exprs(cond):
        out |= _leaves(e)
    return out


def _check_bound(used: set[Expr], bound: set[Expr], fail: object, tok: Token) -> None:
    free = sorted(str(v) for v in used - bound)
    if free:
        raise fail(f"{free[0]!r} does not occur on the left side", tok)  # type: ignore[operator]


# -- public entry points -----------------------------------------------------------------------


def parse_rules(text: str, source: str = "<string>") -> list[Rule]:
    """All rules of a rule file's text; raises ParseError with file, line and column."""
    return _RuleParser(text, source).rules()


def parse_rule(text: str, source: str = "<string>") -> Rule:
    """One rule; the leading `rule NAME:` may be left out (`x mod 1 => 0`)."""
    stripped = text.lstrip()
    if not re.match(r"rule\b", stripped):
        text = "rule adhoc: " + stripped
    rules = parse_rules(text, source)
    if len(rules) != 1:
        raise ParseError(f"expected one rule, found {len(rules)}", 1, 1, source)
    return rules[0]


def load_rule_file(path: str | Path) -> list[Rule]:
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as err:
        raise ParseError(f"cannot read rule file: {err.strerror}", 1, 1, str(path)) from None
    return parse_rules(decode_text(data, str(path)), str(path))


def rule_files(paths: Sequence[str | Path]) -> list[Path]:
    """Files named by `paths`: `*.rules` files, and the `*.rules` files of directories; each
    file once, in the order given."""
    out: dict[Path, Path] = {}
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found = sorted(p.glob("*.rules"))
        elif p.is_file():
            found = [p]
        else:
            raise ParseError("no such rule file or directory", 1, 1, str(raw))
        for f in found:
            out.setdefault(f.resolve(), f)
    return list(out.values())


def default_rule_dir() -> Path:
    """`rules/` of the current directory when present, else the rule base of this checkout."""
    here = Path("rules")
    if here.is_dir():
        return here
    return Path(__file__).resolve().parents[2] / "rules"


def load_rule_base(paths: Sequence[str | Path] | None = None) -> list[Rule]:
    """Every rule of the given files and directories (default: the rule base), in file order.
    Rule names are unique across the whole base: the simplifier reports them by name."""
    files = rule_files(list(paths) if paths else [default_rule_dir()])
    rules: list[Rule] = []
    seen: dict[str, Rule] = {}
    for f in files:
        for r in load_rule_file(f):
            other = seen.get(r.name)
            if other is not None:
                raise ParseError(f"rule {r.name!r} is already defined in "
                                 f"{other.file}:{other.line}", r.line, 1, r.file)
            seen[r.name] = r
            rules.append(r)
    return rules



def parse_condition(text: str, source: str = "<string>") -> Condition:
    """One condition in the rule language (`c0 > 0 and lo(x) >= 0`)."""
    p = _RuleParser(text, source)
    cond = p.condition()
    if p.tok.kind != "end":
        raise p.error("expected the end of the condition")
    return cond
