"""XLA's indexing-map text: parser and printer (and MLIR `affine_map<...>` in and out).

The printer writes XLA's canonical one-line form:
`(d0, d1)[s0]{rt0} -> (d0 floordiv 8, d0 mod 8 + s0), domain: d0 in [0, 31], s0 in [0, 7],
rt0 in [0, 3], d0 + s0 in [0, 20]` with the constraints sorted by their printed text. The parser
accepts that, XLA's multi-line form, `/`, `floordiv`, `floorDiv`, `ceildiv`, `min(a, b)`,
`max(a, b)` and custom variable names. Unary minus binds tightest: `-d0 mod 2` is `(-d0) mod 2`.

Maps are read on first sight by `_MapReader` (tokens as plain strings, one loop without
recursion, the printed domain read entry by entry); text it does not accept goes to `_Parser`,
which builds the same map or reports the error with line and column.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from .errors import DepthError, DivisorError, EvaluationError, ParseError, locate
from .expr import (
    FOLDING_BINARY,
    MAX_DEPTH,
    RAW_BINARY,
    Add,
    CeilDiv,
    Const,
    Dim,
    Expr,
    ExprLike,
    FloorDiv,
    Max,
    Min,
    Mod,
    Mul,
    RtVar,
    Size,
    Symbol,
    Variable,
    add,
    add_fold,
    ceildiv,
    floordiv,
    has_index_variable,
    is_constant_valued,
    is_size_expr,
    is_size_name,
    is_value_name,
    maximum,
    minimum,
    mod,
    mul,
    neg,
    raw_add,
    register_cache,
    release_if_grown,
)
from .expr import register_printer as register_expr_printer
from .indexing_map import AffineMap, IndexingMap, SizeVar, Var
from .indexing_map import register_printer as register_map_printer
from .interval import Interval, range_of

# -- lexer -------------------------------------------------------------------------------------

_TOKEN: Final = re.compile(
    r"(?P<int>\d+)|(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<punct>->|[-+*/(),\[\]{}:<>=])"
)


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # "int", "name", "punct", "end"
    text: str
    offset: int

    def __init__(self, kind: str, text: str, offset: int) -> None:
        # written out, as Interval's: the generated one would run interpreted per token
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "text", text)
        object.__setattr__(self, "offset", offset)

    def __reduce__(self) -> tuple[object, ...]:
        return (Token, (self.kind, self.text, self.offset))  # see Interval.__reduce__


def tokenize(text: str, source: str = "<string>", pattern: re.Pattern[str] = _TOKEN
             ) -> list[Token]:
    """Tokens of `pattern`'s groups (`int`, `name`, `punct`), each with its offset."""
    tokens: list[Token] = []
    pos, n = 0, len(text)
    while True:
        while pos < n and text[pos].isspace():
            pos += 1
        if pos >= n:
            break
        m = pattern.match(text, pos)
        if m is None:
            line, col = locate(text, pos)
            raise ParseError(f"unexpected character {text[pos]!r}", line, col, source)
        kind = m.lastgroup or "punct"
        tokens.append(Token(kind, m.group(kind), pos))
        pos = m.end()
    tokens.append(Token("end", "", n))
    return tokens


# -- parser ------------------------------------------------------------------------------------

_OPERATOR_WORDS: Final = {"floordiv": "floordiv", "floorDiv": "floordiv", "/": "floordiv",
                          "ceildiv": "ceildiv", "mod": "mod", "*": "*"}


class _Parser:
    """Recursive descent over the token list; every error carries line and column."""

    def __init__(self, text: str, source: str) -> None:
        self.text = text
        self.source = source
        self.tokens = tokenize(text, source)
        self.pos = 0
        self.names: dict[str, Expr] = {}
        self.pattern_name: Callable[[str, Token], Expr | None] | None = None
        # fold=False builds exactly the tree that was written (rule patterns)
        self.fold = True
        # extra function-call syntax `name(args)` (rule conditions: gcd, lo, hi, ...)
        self.functions: Callable[[str, list[Expr], Token], Expr] | None = None
        # the sizes of the map being read (`<N, M>`), and its divisors that are size
        # expressions, with where they start (checked against the sizes' intervals at the end)
        self.size_names: list[str] = []
        self.size_divisors: list[tuple[Expr, str, Token]] = []

    def binary(self, op: str, a: Expr, b: Expr) -> Expr:
        return (FOLDING_BINARY if self.fold else RAW_BINARY)[op](a, b)

    def plus(self, a: Expr, b: Expr) -> Expr:
        return add(a, b) if self.fold else raw_add(a, b)

    def negate(self, a: Expr) -> Expr:
        return neg(a) if self.fold else Mul(a, Const(-1))

    # token helpers
    @property
    def tok(self) -> Token:
        return self.tokens[self.pos]

    def error(self, message: str, tok: Token | None = None) -> ParseError:
        t = tok or self.tok
        line, col = locate(self.text, t.offset)
        found = "end of input" if t.kind == "end" else repr(t.text)
        return ParseError(f"{message}, found {found}", line, col, self.source)

    def fail(self, message: str, tok: Token) -> ParseError:
        """An error at `tok` whose message already says what was found."""
        line, col = locate(self.text, tok.offset)
        return ParseError(message, line, col, self.source)

    def undeclared(self, t: Token) -> ParseError:
        """A name that is no variable: say which names are (the name itself is what was
        found)."""
        if self.pattern_name is _default_variable:
            return self.fail(f"unknown variable {t.text!r}: variables are d<k>, s<k> and rt<k>",
                             t)
        declared = ", ".join(self.names) or "none"
        return self.fail(f"unknown variable {t.text!r}: not in the variable lists "
                         f"(declared: {declared})", t)

    def at(self, text: str) -> bool:
        return self.tok.text == text and self.tok.kind != "end"

    def accept(self, text: str) -> bool:
        if self.at(text):
            self.pos += 1
            return True
        return False

    def expect(self, text: str, what: str | None = None) -> Token:
        if not self.at(text):
            raise self.error(f"expected {what or repr(text)}")
        t = self.tok
        self.pos += 1
        return t

    def integer(self) -> int:
        sign = -1 if self.accept("-") else 1
        if self.tok.kind != "int":
            raise self.error("expected an integer")
        v = int(self.tok.text)
        self.pos += 1
        return sign * v

    # expressions
    nesting = 0
    #: Maps and rules divide by constants only (docs/semantics.md); `parse_expr` allows more.
    constant_divisors = True

    def nest(self, tok: Token) -> None:
        """One more level of `(`, unary minus or min/max: bounded like the expressions built
        from it (MAX_DEPTH), so that this recursive parser never meets the recursion limit."""
        self.nesting += 1
        if self.nesting > MAX_DEPTH:
            line, col = locate(self.text, tok.offset)
            raise ParseError(f"expected an expression nested at most {MAX_DEPTH} levels deep",
                             line, col, self.source)

    def expr(self) -> Expr:
        start = self.tok
        try:
            e = self.term()
            while self.at("+") or self.at("-"):
                op_tok = self.tok
                self.pos += 1
                rhs = self.term()
                try:
                    e = self.plus(e, rhs) if op_tok.text == "+" else \
                        self.plus(e, self.negate(rhs))
                except DepthError as err:
                    raise self.depth_error(err, op_tok) from None
            return e
        except EvaluationError as err:
            raise self.error(str(err), start) from None

    def depth_error(self, err: DepthError, tok: Token) -> ParseError:
        line, col = locate(self.text, tok.offset)
        return ParseError(f"expected an expression nested at most {MAX_DEPTH} levels deep "
                          f"(this one reaches {err.depth})", line, col, self.source)

    def term(self) -> Expr:
        e = self.unary()
        while self.tok.text in _OPERATOR_WORDS and self.tok.kind != "end":
            op_tok = self.tok
            self.pos += 1
            divisor = self.tok
            rhs = self.unary()
            op = _OPERATOR_WORDS[op_tok.text]
            if self.size_names:
                self.check_sized_operands(op, e, rhs, op_tok, divisor)
            elif self.constant_divisors and op != "*" and not is_constant_valued(rhs):
                raise self.divisor_error(op, divisor)
            try:
                e = self.binary(op, e, rhs)
            except DivisorError:
                raise self.divisor_error(op, divisor) from None
            except DepthError as err:
                raise self.depth_error(err, op_tok) from None
            except EvaluationError as err:
                raise self.error(str(err), op_tok) from None
        return e

    def check_sized_operands(self, op: str, lhs: Expr, rhs: Expr, op_tok: Token,
                             divisor: Token) -> None:
        """In a map with sizes (docs/semantics.md, Sizes): a product has at most one factor
        with an index variable; a divisor is a constant or a size expression (its interval
        is checked once the sizes' intervals are read)."""
        if op == "*":
            if has_index_variable(lhs) and has_index_variable(rhs):
                line, col = locate(self.text, op_tok.offset)
                raise ParseError("expected a size expression or a constant as a factor: a "
                                 "product of two index variables is not allowed in a map with "
                                 "sizes", line, col, self.source)
        elif is_size_expr(rhs):
            self.size_divisors.append((rhs, op, divisor))
        elif not is_constant_valued(rhs):
            need = "a positive" if op == "mod" else "a nonzero"
            written = " ".join(self.text[divisor.offset : self.tok.offset].split())
            line, col = locate(self.text, divisor.offset)
            raise ParseError(f"expected {need} integer constant or a size expression as the "
                             f"divisor of {op}, found {written!r}", line, col, self.source)

    def divisor_error(self, op: str, start: Token) -> ParseError:
        """Divisors are integer constants (docs/semantics.md): say so where the divisor is."""
        need = "a positive" if op == "mod" else "a nonzero"
        extra = " or a constant of the rule (c0)" if not self.fold else ""
        written = " ".join(self.text[start.offset : self.tok.offset].split()) or "end of input"
        line, col = locate(self.text, start.offset)
        return ParseError(f"expected {need} integer constant{extra} as the divisor of {op}, "
                          f"found {written!r}", line, col, self.source)

    def unary(self) -> Expr:
        t = self.tok
        if self.accept("-"):
            self.nest(t)
            inner = self.unary()
            self.nesting -= 1
            try:
                return Const(-inner.value) if isinstance(inner, Const) else self.negate(inner)
            except DepthError as err:
                raise self.depth_error(err, t) from None
        return self.atom()

    def atom(self) -> Expr:
        t = self.tok
        if t.kind == "int":
            self.pos += 1
            return Const(int(t.text))
        if self.accept("("):
            self.nest(t)
            e = self.expr()
            self.expect(")", "')' to close '('")
            self.nesting -= 1
            return e
        if t.kind == "name":
            if self.tokens[self.pos + 1].text == "(" and (
                t.text in ("min", "max") or self.functions is not None
            ):
                self.pos += 2
                self.nest(t)
                args = [self.expr()]
                while self.accept(","):
                    args.append(self.expr())
                self.expect(")", f"')' to close {t.text}(")
                self.nesting -= 1
                if t.text in ("min", "max") and len(args) == 2:
                    try:
                        return self.binary(t.text, args[0], args[1])
                    except DepthError as err:
                        raise self.depth_error(err, t) from None
                if self.functions is None:
                    raise self.error(f"{t.text} takes two operands", t)
                return self.functions(t.text, args, t)
            self.pos += 1
            if self.pattern_name is not None:
                hit = self.pattern_name(t.text, t)
                if hit is not None:
                    return hit
            v = self.names.get(t.text)
            if v is None:
                raise self.undeclared(t)
            return v
        raise self.error("expected an expression")

    # maps
    def name_list(self, close: str, make: Callable[[int], Variable]) -> list[str | None]:
        names: list[str | None] = []
        if self.accept(close):
            return names
        while True:
            t = self.tok
            if t.kind != "name":
                raise self.error("expected a variable name")
            if t.text in self.names:
                raise self.error(f"variable {t.text!r} declared twice", t)
            v = make(len(names))
            self.names[t.text] = v
            names.append(t.text)
            self.pos += 1
            if self.accept(close):
                return names
            self.expect(",", f"',' or {close!r} in the variable list")

    def indexing_map(self) -> IndexingMap:
        if self.tok.text == "UNDEFINED":
            self.pos += 1
            self.expect_end()
            return IndexingMap.undefined()
        if self.tok.text == "KNOWN" and self.tokens[self.pos + 1].text == "EMPTY":
            self.pos += 2
            self.expect_end()
            return IndexingMap((), (), is_known_empty=True)
        affine = self.affine_header()
        dims, syms, rts = self.header_names
        bounds: dict[str, Interval] = {}
        bound_tokens: dict[str, Token] = {}
        constraints: list[tuple[Expr, Interval, Token]] = []
        if self.accept(","):
            t = self.tok
            if not (t.kind == "name" and t.text == "domain"):
                raise self.error("expected 'domain:'")
            self.pos += 1
            self.expect(":", "':' after 'domain'")
            while True:
                start = self.tok
                is_var = (
                    start.kind == "name"
                    and start.text in self.names
                    and self.tokens[self.pos + 1].text == "in"
                )
                e = self.expr()
                if not (self.tok.kind == "name" and self.tok.text == "in"):
                    raise self.error("expected 'in' after the expression")
                self.pos += 1
                iv = self.interval()
                if is_var and start.text not in bounds:
                    bounds[start.text] = iv
                    bound_tokens[start.text] = start
                else:  # as in XLA, a repeated bare variable intersects its bounds
                    constraints.append((e, iv, start))
                if not self.accept(","):
                    break
        self.expect_end()
        sizes = self.sized(bounds, bound_tokens)
        all_names = [n for n in dims + syms + rts if n is not None]
        missing = [n for n in all_names if n not in bounds]
        if missing:
            if bounds or constraints:
                raise self.error(f"no bounds given for variable {missing[0]!r}")
            raise self.error("expected ', domain:' with the bounds of every variable")

        def var_list(names: list[str | None], default: str) -> list[Var]:
            return [
                Var(bounds[n], None if n == f"{default}{i}" else n)  # type: ignore[index]
                for i, n in enumerate(names)
            ]

        m = IndexingMap(
            affine.results, tuple(var_list(dims, "d")), tuple(var_list(syms, "s")),
            tuple(var_list(rts, "rt")), {}, sizes=sizes,
        )
        for e, iv, tok in constraints:
            try:
                m = m.add_constraint(e, iv)
            except ValueError as err:
                raise self.error(str(err), tok) from None
        return m._mark_empty()

    header_names: tuple[list[str | None], list[str | None], list[str | None]]

    def sized(self, bounds: dict[str, Interval], tokens: dict[str, Token]
              ) -> tuple[SizeVar, ...]:
        """The sizes of the header with their intervals (the default where none is given; a
        value symbol's, `arg<N>`, may reach 0 and below); every divisor that is a size
        expression must be positive over them."""
        sizes: list[SizeVar] = []
        table: dict[Variable, Interval] = {}
        for name in self.size_names:
            iv = bounds.get(name)
            if iv is not None and iv.lo < 1 and not is_value_name(name):
                line, col = locate(self.text, tokens[name].offset)
                raise ParseError(f"expected an interval of positive values for size {name!r}, "
                                 f"found [{iv.lo}, {iv.hi}]", line, col, self.source)
            z = SizeVar(name, iv)
            sizes.append(z)
            table[Size(name)] = z.bounds
        for divisor, op, tok in self.size_divisors:
            iv = range_of(divisor, table)
            if iv.lo < 1:
                line, col = locate(self.text, tok.offset)
                raise ParseError(f"expected a divisor of {op} that is positive for every size "
                                 f"in its interval, found {print_expr(divisor)} in "
                                 f"[{iv.lo}, {iv.hi}]", line, col, self.source)
        return tuple(sizes)

    def size_list(self) -> None:
        """`<N, M>`: the sizes of a map, after its variable lists."""
        if self.accept(">"):
            return
        while True:
            t = self.tok
            if t.kind != "name" or not is_size_name(t.text):
                raise self.error("expected a size name (an identifier other than d<k>, s<k>, "
                                 "rt<k> and the words of the grammar)")
            if t.text in self.names:
                raise self.error(f"variable {t.text!r} declared twice", t)
            self.names[t.text] = Size(t.text)
            self.size_names.append(t.text)
            self.pos += 1
            if self.accept(">"):
                return
            self.expect(",", "',' or '>' in the size list")

    def affine_header(self) -> AffineMap:
        self.expect("(", "'(' to start the dimension list")
        dims = self.name_list(")", Dim)
        syms: list[str | None] = []
        rts: list[str | None] = []
        if self.accept("["):
            syms = self.name_list("]", Symbol)
        if self.accept("{"):
            rts = self.name_list("}", RtVar)
        if self.accept("<"):
            self.size_list()
        self.header_names = (dims, syms, rts)
        self.expect("->", "'->' after the variable lists")
        self.expect("(", "'(' to start the results")
        results: list[Expr] = []
        if not self.accept(")"):
            while True:
                results.append(self.expr())
                if self.accept(")"):
                    break
                self.expect(",", "',' or ')' in the results")
        return AffineMap(len(dims), len(syms) + len(rts), tuple(results))

    def interval(self) -> Interval:
        self.expect("[", "'[' to start an interval")
        lo = self.integer()
        self.expect(",", "',' in the interval")
        hi = self.integer()
        self.expect("]", "']' to close the interval")
        return Interval(lo, hi)

    def expect_end(self) -> None:
        if self.tok.kind != "end":
            raise self.error("expected end of map")


def parse_map(text: str, source: str = "<string>") -> IndexingMap:
    """Parse XLA's map text (one-line or multi-line), `KNOWN EMPTY` or `UNDEFINED`."""
    release_if_grown()  # a safe point to bound memory (verifidx.core.expr)
    try:
        return _MapReader(text).indexing_map()
    except Exception:  # noqa: BLE001 - any doubt: the full parser decides, and reports errors
        pass
    stripped = text.strip()
    if stripped.startswith("affine_map<"):
        with_domain = _affine_map_with_domain(text)
        if with_domain is not None:
            return _Parser(with_domain, source).indexing_map()
        affine = parse_affine_map(text, source)
        if affine.num_dims == affine.num_symbols == 0:  # nothing to bound
            return IndexingMap.from_tensor_sizes(affine, (), ())
        raise ParseError(
            f"an affine_map has no bounds: add `// domain: ...` after it, or give the sizes of "
            f"its {affine.num_dims} dims and {affine.num_symbols} symbols (--dim-sizes and "
            f"--symbol-sizes; IndexingMap.from_tensor_sizes)", 1, 1, source)
    return _Parser(text, source).indexing_map()


_AFFINE_DOMAIN: Final = re.compile(r">(\s*)//(\s*)domain:")


def _affine_map_with_domain(text: str) -> str | None:
    """`affine_map<H -> (R)>  // domain: D` (what `print_affine_map(m, domain=True)` writes) as
    the map text `H -> (R), domain: D`, padded so that every line and column stays where the
    user wrote it (errors point into the original text); None without a domain comment."""
    found = _AFFINE_DOMAIN.search(text)
    if found is None:
        return None
    start = text.index("affine_map<")
    gap1, gap2 = found.group(1), found.group(2)
    bridge = " " + gap1 + "," + " " + gap2 + "domain:"  # the same length as the match
    return (text[:start] + " " * len("affine_map<") + text[start + len("affine_map<"):found.start()]
            + bridge + text[found.end():])


# -- fast reader ---------------------------------------------------------------------------------

# Tokens as plain strings. `_words` pads the punctuation of the map grammar with spaces and
# splits on whitespace (`str.split` skips the characters `str.isspace` names, as `tokenize`
# does): a few C-level passes, cheaper than a regex. Unlike `tokenize`, it leaves any other
# character glued to its neighbours (`d0é`, `1_000`, `x<2`), so a token may be a run that
# `tokenize` would cut in several; the reader refuses every such run: it accepts only whole
# names of `tokenize` (ASCII identifiers), integers of decimal digits, and the exact words of
# the grammar.
_DIGITS: Final = frozenset("0123456789")
_NAME_START: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_DIVISIONS: Final[dict[str, Callable[[ExprLike, ExprLike], Expr]]] = {
    "floordiv": floordiv, "floorDiv": floordiv, "/": floordiv, "ceildiv": ceildiv, "mod": mod}
_END: Final = " "  # after the last token: never a token (tokens hold no whitespace)
# so that the reader may look ahead past the end without a bounds check
_PADDING: Final = [_END] * 3


class _Reject(Exception):
    """The fast reader stops at the first thing it does not expect."""


def _words(text: str) -> list[str]:
    """The tokens of `text` for `_MapReader` (see above), followed by `_PADDING`."""
    text = (text.replace("(", " ( ").replace(")", " ) ").replace(",", " , ")
            .replace("*", " * ").replace("+", " + ").replace("[", " [ ").replace("]", " ] ")
            .replace("{", " { ").replace("}", " } ").replace("/", " / ").replace(":", " : "))
    if "-" in text:  # `->` is one token, `- >` two
        text = text.replace("-", " - ").replace(" - >", " -> ")
    return text.split() + _PADDING


# Bounds repeat from map to map: share the (immutable) values instead of building each again.
_INTERVALS: Final[dict[tuple[int, int], Interval]] = {}
_VARS: Final[dict[tuple[int, int, str | None], Var]] = {}
_SHARED_LIMIT: Final = 10_000


def _interval(lo: int, hi: int) -> Interval:
    iv = _INTERVALS.get((lo, hi))
    if iv is None:
        if len(_INTERVALS) > _SHARED_LIMIT:
            _INTERVALS.clear()
        iv = _INTERVALS[lo, hi] = Interval(lo, hi)
    return iv


def _var(bounds: Interval, name: str | None) -> Var:
    key = (bounds.lo, bounds.hi, name)
    v = _VARS.get(key)
    if v is None:
        if len(_VARS) > _SHARED_LIMIT:
            _VARS.clear()
        v = _VARS[key] = Var(bounds, name)
    return v


# Integer tokens -> their constants, positive and negated: checked once per spelling (decimal
# digits only, as `tokenize`'s `\d+`; `int` alone would take `1_000`).
_LITERALS: Final[dict[str, Const]] = register_cache({})
_NEGATED: Final[dict[str, Const]] = register_cache({})


def _literal(t: str, table: dict[str, Const], sign: int) -> Const:
    if not t.isdecimal():
        raise _Reject
    if len(table) > _SHARED_LIMIT:
        table.clear()
    c = table[t] = Const(sign * int(t))
    return c


# What `_read_expr` does when a nested sum ends: close a parenthesis, or read the second
# argument of min/max, or close min/max.
_PAREN, _FIRST_ARG, _SECOND_ARG = 0, 1, 2
_NO_TERMS: Final[list[Expr]] = []  # `rest` of a sum with one term so far; never appended to

_Frame = tuple[int, str, "Expr | None", "Expr | None", list[Expr], bool, "Expr | None",
               "Callable[[ExprLike, ExprLike], Expr] | None", int, int]


def _read_expr(toks: list[str], i: int, names: dict[str, Expr]) -> tuple[Expr, int]:
    """The expression starting at token `i`, and the index after it: `_Parser.expr`, `term`,
    `unary` and `atom` in one loop, with an explicit stack for `(...)`, `min(..., ...)` and
    `max(..., ...)` instead of recursion. Each node is built by the same smart constructor, on
    the same operands, as `_Parser` builds it; a sum is `_Parser`'s term-by-term sum
    (`add_fold`) without its partial sums. Nesting (parentheses, unary minus, min/max) is
    bounded by MAX_DEPTH as in `_Parser.nest`."""
    stack: list[_Frame] = []
    x: Expr
    depth = 0  # nesting of the sum being read
    first: Expr | None = None  # its first term, once a `+` or `-` follows it
    rest: list[Expr] = _NO_TERMS  # its later terms, negated where they follow a `-` (a new
    # list once `first` is set: a parenthesised product allocates none)
    minus = False  # the term being read follows a `-`
    term: Expr | None = None  # the product or quotient read so far
    op: Callable[[ExprLike, ExprLike], Expr] | None = None  # what joins `term` and the operand
    negs = 0  # unary minuses before the operand being read
    while True:
        # one operand: a constant, a variable, or the start of a nested sum
        t = toks[i]
        known = names.get(t) or _LITERALS.get(t)
        if known is not None and not (toks[i + 1] == "(" and (t == "min" or t == "max")):
            x = known
            i += 1  # a variable, or an integer seen before
        elif t[0] in _DIGITS:
            x = _literal(t, _LITERALS, 1)
            i += 1
        elif t[0] in _NAME_START:
            if (t == "min" or t == "max") and toks[i + 1] == "(":
                if depth + negs >= MAX_DEPTH:
                    raise _Reject
                stack.append((_FIRST_ARG, t, None, first, rest, minus, term, op, negs, depth))
                depth += negs + 1
                first, minus, op, negs = None, False, None, 0
                i += 2
                continue
            x = names[t]
            i += 1
        elif depth + negs >= MAX_DEPTH:
            raise _Reject
        elif t == "(":
            stack.append((_PAREN, t, None, first, rest, minus, term, op, negs, depth))
            depth += negs + 1
            first, minus, op, negs = None, False, None, 0
            i += 1
            continue
        elif t == "-":
            written = toks[i + 1]
            if written[0] not in _DIGITS:  # a unary minus, applied once its operand is read
                negs += 1
                i += 1
                continue
            negative = _NEGATED.get(written)
            # a negative constant: no node for its absolute value
            x = negative if negative is not None else _literal(written, _NEGATED, -1)
            i += 2
        else:
            raise _Reject
        while True:
            # `x` is a whole operand: apply its unary minuses (innermost first), join it to the
            # term, and look at what follows
            while negs:
                x = Const(-x.value) if isinstance(x, Const) else neg(x)
                negs -= 1
            if op is None:
                term = x
            elif op is mul:
                term = mul(term, x)  # type: ignore[arg-type]
            else:
                if not isinstance(x, Const) and not is_constant_valued(x):
                    raise _Reject
                term = op(term, x)  # type: ignore[arg-type]
            t = toks[i]
            if t == "*":
                op = mul
                i += 1
                break
            if t == "+" or t == "-":
                i += 1
                if first is None:
                    first, rest = term, []
                else:
                    rest.append(neg(term) if minus else term)  # type: ignore[arg-type]
                minus = t == "-"
                op = None
                break
            op = _DIVISIONS.get(t)
            if op is not None:
                i += 1
                break
            # the sum ends here
            if first is None:
                value: Expr = term  # type: ignore[assignment]
            else:
                rest.append(neg(term) if minus else term)  # type: ignore[arg-type]
                value = add_fold(first, rest)
            if not stack:
                return value, i
            kind, word, held, first, rest, minus, term, op, negs, depth = stack.pop()
            if kind == _FIRST_ARG:
                if toks[i] != ",":
                    raise _Reject
                stack.append((_SECOND_ARG, word, value, first, rest, minus, term, op, negs,
                              depth))
                depth += negs + 1
                first, minus, op, negs = None, False, None, 0
                i += 1
                break
            if toks[i] != ")":
                raise _Reject
            i += 1
            if kind == _PAREN:
                x = value
            elif word == "min":
                x = minimum(held, value)  # type: ignore[arg-type]
            else:
                x = maximum(held, value)  # type: ignore[arg-type]


def _read_names(toks: list[str], i: int, close: str, make: Callable[[int], Variable],
                names: dict[str, Expr], out: list[str]) -> int:
    """A variable list up to `close` (its first token at `i`); returns the index after it."""
    if toks[i] == close:
        return i + 1
    while True:
        t = toks[i]
        if t in names or not (t.isascii() and t.isidentifier()):  # a whole name of `tokenize`
            raise _Reject
        names[t] = make(len(out))
        out.append(t)
        t = toks[i + 1]
        if t == close:
            return i + 2
        if t != ",":
            raise _Reject
        i += 2


def _read_bound(toks: list[str], i: int) -> tuple[int, int]:
    """An integer, possibly negative, at token `i`; and the index after it."""
    t = toks[i]
    if t == "-":
        t = toks[i + 1]
        if t[0] not in _DIGITS or not t.isdecimal():
            raise _Reject
        return -int(t), i + 2
    if t[0] not in _DIGITS or not t.isdecimal():
        raise _Reject
    return int(t), i + 1


# Interval texts of a printed domain (`0, 7` of `d0 in [0, 7]`) -> their intervals: checked
# once per spelling, as the literals above.
_BOUNDS_TEXT: Final[dict[str, Interval]] = {}


def _bounds_text(lo_hi: str) -> Interval:
    lo, comma, hi = lo_hi.partition(", ")
    if not comma:
        raise _Reject
    iv = _interval(_bound_value(lo), _bound_value(hi))
    if len(_BOUNDS_TEXT) > _SHARED_LIMIT:
        _BOUNDS_TEXT.clear()
    _BOUNDS_TEXT[lo_hi] = iv
    return iv


def _bound_value(t: str) -> int:
    """The integer written `t` in a domain read as text (`-` and decimal digits, as the token
    path reads them)."""
    digits = t[1:] if t[:1] == "-" else t
    if not digits or digits[0] not in _DIGITS or not digits.isdecimal():
        raise _Reject
    return int(t)


def _read_domain_text(tail: str, names: dict[str, Expr], bounds: dict[str, Interval],
                      constraints: list[tuple[Expr, Interval]]) -> bool:
    """The domain after `, domain: `, spelled as printed (`d0 in [0, 7], d0 + s0 in [-1, 3]`),
    into the empty `bounds` and `constraints` as `_MapReader._read_domain` reads its tokens;
    each entry's expression is read from its own tokens. False, with both left empty, for
    anything else (the token path reads that domain)."""
    entries = tail.rstrip().split("], ")
    last = entries[-1]
    if not last.endswith("]"):
        return False
    entries[-1] = last[:-1]
    try:
        for entry in entries:
            written, sep, lo_hi = entry.partition(" in [")
            if not sep:
                raise _Reject
            iv = _BOUNDS_TEXT.get(lo_hi) or _bounds_text(lo_hi)
            e = names.get(written)
            if e is None:  # an expression up to ` in [`, which no expression holds
                toks = _words(written)
                e, i = _read_expr(toks, 0, names)
                if toks[i] != _END:
                    raise _Reject
                if i == 1 and toks[0] in names:  # a lone name, spaced otherwise
                    written = toks[0]
            if written in names and written not in bounds:
                bounds[written] = iv
            else:  # as in XLA, a repeated bare variable intersects its bounds
                constraints.append((e, iv))
    except _Reject:
        bounds.clear()
        constraints.clear()
        return False
    return True


class _MapReader:
    """The map grammar of `_Parser`, for well-formed text only, with no per-token objects.

    Maps are read on every first sight, so this is the path that must be fast. It builds each
    node with the same smart constructors, in the same order, as `_Parser`; at anything unusual
    (an error, `UNDEFINED`, non-ASCII text) it raises and `parse_map` hands the text to `_Parser`,
    which gives the result or the error with its line and column. `tests/test_syntax.py` checks
    that both agree."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def indexing_map(self) -> IndexingMap:
        # A printed map ends with `, domain: ` and its bounds: the part before it is split into
        # tokens, and the domain is read entry by entry (`_read_domain_text`).
        head, domain, tail = self.text.partition(", domain: ")
        toks = _words(head)
        names: dict[str, Expr] = {}
        dims: list[str] = []
        syms: list[str] = []
        rts: list[str] = []
        if toks[0] != "(":
            raise _Reject
        i = _read_names(toks, 1, ")", Dim, names, dims)
        if toks[i] == "[":
            i = _read_names(toks, i + 1, "]", Symbol, names, syms)
        if toks[i] == "{":
            i = _read_names(toks, i + 1, "}", RtVar, names, rts)
        if toks[i] != "->" or toks[i + 1] != "(":
            raise _Reject
        i += 2
        results: list[Expr] = []
        if toks[i] == ")":
            i += 1
        else:
            while True:
                e, i = _read_expr(toks, i, names)
                results.append(e)
                t = toks[i]
                i += 1
                if t == ")":
                    break
                if t != ",":
                    raise _Reject
        bounds: dict[str, Interval] = {}
        constraints: list[tuple[Expr, Interval]] = []
        if domain and _read_domain_text(tail, names, bounds, constraints):
            if toks[i] != _END:  # the head is the header and the results, nothing more
                raise _Reject
        else:
            if domain:  # the tokens of the whole text, from the `,` before `domain`
                if toks[i] != _END:
                    raise _Reject
                toks = _words(domain + tail)
                i = 0
            if toks[i] == ",":
                i = self._read_domain(toks, i, names, bounds, constraints)
            if toks[i] != _END:
                raise _Reject
        m = IndexingMap(tuple(results), _var_list(dims, "d", bounds),
                        _var_list(syms, "s", bounds) if syms else (),
                        _var_list(rts, "rt", bounds) if rts else (), {})
        return m.add_constraints(constraints) if constraints else m._mark_empty()

    @staticmethod
    def _read_domain(toks: list[str], i: int, names: dict[str, Expr],
                     bounds: dict[str, Interval],
                     constraints: list[tuple[Expr, Interval]]) -> int:
        """`, domain: ...` from the `,` at token `i`, one entry at a time, into `bounds` and
        `constraints`; returns the index after it."""
        if toks[i + 1] != "domain" or toks[i + 2] != ":":
            raise _Reject
        i += 3
        while True:
            start = toks[i]
            is_var = start in names and toks[i + 1] == "in"
            e, i = _read_expr(toks, i, names)
            if toks[i] != "in" or toks[i + 1] != "[":
                raise _Reject
            low, i = _read_bound(toks, i + 2)
            if toks[i] != ",":
                raise _Reject
            high, i = _read_bound(toks, i + 1)
            if toks[i] != "]":
                raise _Reject
            i += 1
            iv = _interval(low, high)
            if is_var and start not in bounds:
                bounds[start] = iv
            else:  # as in XLA, a repeated bare variable intersects its bounds
                constraints.append((e, iv))
            if toks[i] != ",":
                return i
            i += 1


def _var_list(written: list[str], default: str, bounds: dict[str, Interval]) -> tuple[Var, ...]:
    """The variables of one list, with their bounds; a name other than XLA's default is kept."""
    return tuple([_var(bounds[n], None if n == f"{default}{k}" else n)
                  for k, n in enumerate(written)])


def parse_expr(text: str, names: Mapping[str, Expr] | None = None,
               source: str = "<string>") -> Expr:
    """Parse one expression; variables are `d<i>`, `s<i>`, `rt<i>` unless `names` is given."""
    p = _Parser(text, source)
    p.constant_divisors = False  # an expression (a tile constraint) may divide by a variable
    if names is None:
        p.pattern_name = _default_variable
    else:
        p.names = dict(names)
    e = p.expr()
    if p.tok.kind != "end":
        raise p.error("expected end of expression")
    return e


def _default_variable(name: str, tok: Token) -> Expr | None:
    m = re.fullmatch(r"(d|s|rt)(\d+)", name)
    if m is None:
        return None
    cls = {"d": Dim, "s": Symbol, "rt": RtVar}[m.group(1)]
    return cls(int(m.group(2)))


def parse_affine_map(text: str, source: str = "<string>") -> AffineMap:
    """MLIR's `affine_map<(d0)[s0] -> (...)>` (or the bare `(d0)[s0] -> (...)`)."""
    body = text.strip()
    offset = 0
    if body.startswith("affine_map<"):
        if not body.endswith(">"):
            line, col = locate(text, len(text))
            raise ParseError("expected '>' to close affine_map<", line, col, source)
        offset = text.index("affine_map<") + len("affine_map<")
        body = text[offset : text.rindex(">")]
    p = _Parser(" " * offset + body, source)
    p.text = text
    am = p.affine_header()
    if p.tok.kind != "end":
        raise p.error("expected end of affine map")
    if p.size_names:
        line, col = locate(text, offset)
        raise ParseError("an affine_map has no sizes", line, col, source)
    return am


# -- printer -----------------------------------------------------------------------------------

_LEVEL2: Final = (Mul, FloorDiv, CeilDiv, Mod)
_MAP_VARIABLES: Final = frozenset((Dim, Symbol, RtVar))


class _Printer:
    """XLA's text of expressions. `top` prints a sum's terms with their signs, `level2` a
    product or division (operands parenthesised where XLA's parser would group otherwise)."""

    def __init__(self, names: Mapping[Variable, str], div: str = "floordiv") -> None:
        self.names = names
        self.div = div
        self.words: dict[type[Expr], str] = {FloorDiv: div, CeilDiv: "ceildiv", Mod: "mod"}
        # text per node, for this printer's names: a map repeats its sums (x floordiv c, x mod c)
        self.tops: dict[Expr, str] = {}
        self.level2s: dict[Expr, str] = {}

    def name(self, v: Variable) -> str:
        if type(v) is Size:
            return v.name  # type: ignore[attr-defined, no-any-return]
        return self.names.get(v) or f"{v.prefix}{v.index}"

    def top(self, e: Expr) -> str:
        out = self.tops.get(e)
        if out is None:
            if isinstance(e, Add):
                terms = e.terms
                out = self.top_term(terms[0])
                for t in terms[1:]:
                    out += self.later_term(t)
            else:
                out = self.top_term(e)
            self.tops[e] = out
        return out

    def top_term(self, e: Expr) -> str:
        kind = type(e)
        if kind is Mul and type(e.rhs) is Const and e.rhs.value == -1:  # type: ignore[attr-defined]
            return "-" + self.atomic(e.lhs)  # type: ignore[attr-defined]
        if kind in _MAP_VARIABLES:  # what `level2` gives, without its table
            return self.names.get(e) or f"{e.prefix}{e.index}"  # type: ignore[attr-defined, call-overload]
        return self.level2(e)

    def later_term(self, t: Expr) -> str:
        kind = type(t)
        if kind is Const:
            value = t.value  # type: ignore[attr-defined]
            return f" - {-value}" if value < 0 else f" + {value}"
        if kind is Mul and type(t.rhs) is Const and t.rhs.value < 0:  # type: ignore[attr-defined]
            c = -t.rhs.value  # type: ignore[attr-defined]
            if c == 1:
                return " - " + self.operand(t.lhs, left_of=None)  # type: ignore[attr-defined]
            return f" - {self.operand(t.lhs, Mul)} * {c}"  # type: ignore[attr-defined]
        return " + " + self.top_term(t)

    def atomic(self, e: Expr) -> str:
        if isinstance(e, Const):
            return str(e.value) if e.value >= 0 else f"({e.value})"
        if not isinstance(e, (Add, *_LEVEL2, Min, Max)):
            return self.level2(e)  # variables, pattern leaves, function calls
        return f"({self.top(e)})"

    def operand(self, e: Expr, left_of: type[Expr] | None) -> str:
        """Print a child of a `*`/`floordiv`/`mod` node (or of a subtracted term)."""
        kind = type(e)
        if kind is Add:
            return f"({self.top(e)})"
        if kind is Mul:
            if type(e.rhs) is Const and e.rhs.value == -1:  # type: ignore[attr-defined]
                return "-" + self.atomic(e.lhs)  # type: ignore[attr-defined]
            return self.level2(e) if left_of is Mul else f"({self.level2(e)})"
        if kind in self.words:  # a division
            return self.level2(e) if kind is left_of else f"({self.level2(e)})"
        if kind is Const:  # what `level2` gives, without its table
            return str(e.value)  # type: ignore[attr-defined]
        if kind in _MAP_VARIABLES:
            return self.names.get(e) or f"{e.prefix}{e.index}"  # type: ignore[attr-defined, call-overload]
        return self.level2(e)

    def level2(self, e: Expr) -> str:
        out = self.level2s.get(e)
        if out is None:
            out = self.level2s[e] = self._level2(e)
        return out

    def _level2(self, e: Expr) -> str:
        kind = type(e)
        if kind is Mul:
            if type(e.rhs) is Const and e.rhs.value == -1:  # type: ignore[attr-defined]
                return "-" + self.atomic(e.lhs)  # type: ignore[attr-defined]
            # products group to the left when parsed: a product on the right keeps its parentheses
            return f"{self.operand(e.lhs, Mul)} * {self.operand(e.rhs, None)}"  # type: ignore[attr-defined]
        word = self.words.get(kind)
        if word is not None:
            lhs = self.operand(e.lhs, kind)  # type: ignore[attr-defined]
            return f"{lhs} {word} {self.operand(e.rhs, None)}"  # type: ignore[attr-defined]
        if kind is Const:
            return str(e.value)  # type: ignore[attr-defined]
        if isinstance(e, Variable):
            return self.name(e)
        if kind is Add:
            return f"({self.top(e)})"
        if kind is Min or kind is Max:
            word = "min" if kind is Min else "max"
            return f"{word}({self.top(e.lhs)}, {self.top(e.rhs)})"  # type: ignore[attr-defined]
        return str(e)  # pattern leaves and function calls of the rule language


def _head(labels: Sequence[str], nd: int, nr: int, nt: int) -> str:
    """`(d0, d1)[s0]{rt0}`: the variable lists of a map's text."""
    head = f"({', '.join(labels[:nd])})"
    if nr:
        head += f"[{', '.join(labels[nd : nd + nr])}]"
    if nt:
        head += f"{{{', '.join(labels[nd + nr :])}}}"
    return head


# XLA's names (`d0, ..., s0, ..., rt0, ...`) and the variable lists they print, per count of
# dimensions, range and runtime variables: shared, callers do not change them.
_DEFAULT_HEADS: Final[dict[tuple[int, int, int], tuple[list[str], str]]] = {}


def _default_head(nd: int, nr: int, nt: int) -> tuple[list[str], str]:
    labels = [f"d{i}" for i in range(nd)] + [f"s{i}" for i in range(nr)] + \
        [f"rt{i}" for i in range(nt)]
    out = (labels, _head(labels, nd, nr, nt))
    if len(_DEFAULT_HEADS) < 1024:
        _DEFAULT_HEADS[nd, nr, nt] = out
    return out


def variable_names(m: IndexingMap) -> dict[Variable, str]:
    """Custom names where they are unambiguous; all defaults if any two names would clash."""
    names: dict[Variable, str] = {}
    for v, info in zip(m.variables, m.all_vars):
        names[v] = info.name or f"{v.prefix}{v.index}"
    taken = set(names.values())
    if len(taken) != len(names) or any(z.name in taken for z in m.sizes):
        return {v: f"{v.prefix}{v.index}" for v in m.variables}
    return names


def print_point(point: Mapping[str, object]) -> str:
    """A point as the tool writes one, `d0 = 3, s0 = 1`, in the point's own order (a JSON
    document keeps the object)."""
    return ", ".join(f"{name} = {value}" for name, value in point.items())


def print_values(values: Sequence[object]) -> str:
    """A map's results at a point as map text writes them: `(3, 1)`, `(3)`, `()`."""
    return "(" + ", ".join(map(str, values)) + ")"


def print_expr(e: Expr, names: Mapping[Variable, str] | None = None,
               div: str = "floordiv") -> str:
    return _Printer(names or {}, div).top(e)


def print_map(m: IndexingMap, div: str = "floordiv", multiline: bool = False) -> str:
    """XLA's canonical text; `div="/"` prints floor division as XLA does since mid-2026."""
    if m.is_undefined:
        return "UNDEFINED"
    if m.is_known_empty:
        return "KNOWN EMPTY"
    all_vars = m.all_vars
    nd, nr, nt = len(m.dims), len(m.range_vars), len(m.rt_vars)
    for info in all_vars:
        if info.name is not None:
            names = variable_names(m)
            labels = [names[v] for v in m.variables]
            head = _head(labels, nd, nr, nt)
            break
    else:  # XLA's names: the printer's default for every variable
        names = {}
        labels, head = _DEFAULT_HEADS.get((nd, nr, nt)) or _default_head(nd, nr, nt)
    p = _Printer(names, div)
    if m.sizes:
        head += f"<{', '.join([z.name for z in m.sizes])}>"
    text = f"{head} -> ({', '.join([p.top(r) for r in m.results])})"
    # `[lo, hi]` is `str(Interval)`, written out here: one call less per variable
    items = [f"{label} in [{info.bounds.lo}, {info.bounds.hi}]"
             for label, info in zip(labels, all_vars)]
    if m.sizes:
        items += [f"{z.name} in [{z.bounds.lo}, {z.bounds.hi}]" for z in m.sizes]
    if m.constraints:
        items += sorted([f"{p.top(e)} in {iv}" for e, iv in m.constraints.items()])
    if not items:
        return text
    if multiline:
        return text + ",\ndomain:\n" + ",\n".join(items)
    return text + ", domain: " + ", ".join(items)


def print_affine_map(m: IndexingMap | AffineMap, domain: bool = False) -> str:
    """MLIR's `affine_map<...>` text; runtime variables become trailing symbols. `domain` keeps
    the bounds and constraints, which MLIR's attribute cannot hold, in a trailing comment
    (`// domain: d0 in [0, 9], ...`, in the affine map's own names) that `parse_map` reads back."""
    if isinstance(m, IndexingMap):
        if m.is_undefined or m.is_known_empty:
            raise ValueError("an UNDEFINED or KNOWN EMPTY map has no affine_map form")
        if m.sizes:
            raise ValueError("a map with sizes has no affine_map form")
        nr = m.num_range_vars
        rename: dict[Expr, Expr] = {RtVar(i): Symbol(nr + i) for i in range(m.num_rt_vars)}
        am = AffineMap(m.num_dims, nr + m.num_rt_vars,
                       tuple(r.substitute(rename) for r in m.results))
    else:
        am = m
    for r in am.results:
        if any(isinstance(n, (Min, Max)) for n in r.walk()):
            raise ValueError("min/max have no affine_map form")
    p = _Printer({})
    head = f"({', '.join(f'd{i}' for i in range(am.num_dims))})"
    if am.num_symbols:
        head += f"[{', '.join(f's{i}' for i in range(am.num_symbols))}]"
    text = f"affine_map<{head} -> ({', '.join(p.top(r) for r in am.results)})>"
    if domain and isinstance(m, IndexingMap):
        nr = m.num_range_vars
        rename = {RtVar(i): Symbol(nr + i) for i in range(m.num_rt_vars)}
        constraints = {e.substitute(rename): iv for e, iv in m.constraints.items()}
        printed = print_map(IndexingMap(am.results, m.dims, m.range_vars + m.rt_vars, (),
                                        constraints))
        _, sep, items = printed.partition(", domain: ")
        if sep:
            text += "  // domain: " + items
    return text


def strip_whitespace(text: str) -> str:
    return "".join(text.split())


def same_text(a: str, b: str) -> bool:
    """XLA's matchers compare map text ignoring all whitespace."""
    return strip_whitespace(a) == strip_whitespace(b)


def names_for(m: IndexingMap) -> dict[str, Expr]:
    """Name -> variable table of a map (for parsing expressions over its variables)."""
    return {name: v for v, name in variable_names(m).items()}


# `str(expr)` and `str(map)` print through these seams (the core values sit below this module).
register_expr_printer(print_expr)
register_map_printer(print_map)

__all__: Sequence[str] = [
    "parse_map", "parse_expr", "parse_affine_map", "print_map", "print_expr",
    "print_affine_map", "print_point", "print_values", "same_text", "Token", "tokenize",
]
