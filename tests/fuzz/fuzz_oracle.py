"""An independent reading of XLA's indexing-map text, for differential testing of verifidx.

Nothing here imports verifidx: the tokenizer, the parser (iterative, so any depth parses), the
evaluator (expressions compiled to straight-line Python) and the enumerator are written from
the semantics alone (docs/semantics.md): `floordiv` rounds down, `ceildiv` rounds up, `mod` by a
positive constant lies in [0, b-1]; intervals are inclusive; a map denotes the set of
(runtime values, dimension values, results) over the points of its box that satisfy every
constraint, range variables projected away.

A map with sizes (`(d0)<N> -> ...`, docs/semantics.md, Sizes) is read as a family: `relation`
takes one value per size and enumerates the static map at those values, so a claim for every
size is checked size by size; `divisor_status` and `products_linear` read the grammar's rules
for such maps (divisors over sizes only, positive on their naive intervals; index variables
not multiplied together).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field

Node = tuple  # ("c", value) | ("v", index) | ("neg", a) | (op, a, b)


class OracleError(Exception):
    """Text the oracle cannot read (malformed for this small grammar)."""


class Undefined(Exception):
    """An operation without a value at a point (a divisor outside the contract)."""


_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z0-9_]*)|(->|[-+*/(),\[\]{}:<>]))")
_BINARY = {"+": 1, "-": 1, "*": 2, "floordiv": 2, "/": 2, "ceildiv": 2, "mod": 2}
_OPNAME = {"+": "+", "-": "-", "*": "*", "floordiv": "fd", "/": "fd", "ceildiv": "cd",
           "mod": "mod"}


def tokenize(text: str) -> list[str]:
    out: list[str] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise OracleError(f"bad character at {pos}: {text[pos:pos + 10]!r}")
        out.append(m.group(1) or m.group(2) or m.group(3))
        pos = m.end()
    return out


@dataclass
class OMap:
    dims: list[tuple[int, int]] = field(default_factory=list)
    syms: list[tuple[int, int]] = field(default_factory=list)
    rts: list[tuple[int, int]] = field(default_factory=list)
    #: (name, lo, hi) per size, in the order of the header; their leaves follow the runtime
    #: variables' (`("v", len(boxes) + k)`)
    sizes: list[tuple[str, int, int]] = field(default_factory=list)
    results: list[Node] = field(default_factory=list)
    constraints: list[tuple[Node, int, int]] = field(default_factory=list)
    known_empty: bool = False
    undefined: bool = False
    #: `member_function(self)`, compiled once
    member: object = field(default=None, repr=False, compare=False)

    @property
    def boxes(self) -> list[tuple[int, int]]:
        return self.dims + self.syms + self.rts

    def box_size(self) -> int:
        n = 1
        for lo, hi in self.boxes:
            n *= max(0, hi - lo + 1)
        return n


class _Reader:
    def __init__(self, text: str) -> None:
        self.toks = tokenize(text)
        self.i = 0
        self.names: dict[str, int] = {}

    def peek(self, k: int = 0) -> str | None:
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else None

    def take(self, want: str | None = None) -> str:
        t = self.peek()
        if t is None or (want is not None and t != want):
            raise OracleError(f"expected {want!r}, found {t!r} at token {self.i}")
        self.i += 1
        return t

    def names_list(self, close: str) -> list[str]:
        out: list[str] = []
        if self.peek() == close:
            self.take()
            return out
        while True:
            out.append(self.take())
            if self.peek() == close:
                self.take()
                return out
            self.take(",")

    def integer(self) -> int:
        sign = -1 if self.peek() == "-" else 1
        if sign < 0:
            self.take()
        t = self.take()
        if not t.isdigit():
            raise OracleError(f"expected an integer, found {t!r}")
        return sign * int(t)

    def expr(self) -> Node:
        """Shunting-yard: explicit stacks, so nesting depth is unlimited."""
        out: list[Node] = []
        ops: list[tuple[str, int]] = []  # (operator or marker, argument count for calls)
        expect_operand = True

        def reduce_one() -> None:
            op, _ = ops.pop()
            if op == "neg":
                out.append(("neg", out.pop()))
            else:
                b, a = out.pop(), out.pop()
                out.append((_OPNAME[op], a, b))

        def reduce_to_marker() -> None:
            while ops and ops[-1][0] not in ("(", "min", "max"):
                reduce_one()

        while True:
            t = self.peek()
            if expect_operand:
                if t is None:
                    raise OracleError("expression ended early")
                if t == "-":
                    self.take()
                    ops.append(("neg", 0))
                    continue
                if t == "(":
                    self.take()
                    ops.append(("(", 0))
                    continue
                if t in ("min", "max") and self.peek(1) == "(":
                    self.take()
                    self.take()
                    ops.append((t, 1))
                    continue
                self.take()
                if t.isdigit():
                    out.append(("c", int(t)))
                elif t in self.names:
                    out.append(("v", self.names[t]))
                else:
                    raise OracleError(f"unknown name {t!r}")
                expect_operand = False
                continue
            if t in _BINARY:
                prec = _BINARY[t]
                while ops and (ops[-1][0] == "neg" or (ops[-1][0] in _BINARY
                                                        and _BINARY[ops[-1][0]] >= prec)):
                    reduce_one()
                self.take()
                ops.append((t, 0))
                expect_operand = True
                continue
            if t == ")" and any(o[0] in ("(", "min", "max") for o in ops):
                reduce_to_marker()
                self.take()
                marker, count = ops.pop()
                if marker in ("min", "max"):
                    if count != 2:
                        raise OracleError(f"{marker} with {count} operands")
                    b, a = out.pop(), out.pop()
                    out.append((marker, a, b))
                continue
            if t == "," and ops and any(o[0] in ("min", "max") for o in ops):
                reduce_to_marker()
                if ops[-1][0] == "(":
                    raise OracleError("',' inside parentheses")
                self.take()
                marker, count = ops.pop()
                ops.append((marker, count + 1))
                expect_operand = True
                continue
            break  # ',', ')', 'in' or the end belong to the enclosing construct
        while ops:
            if ops[-1][0] in ("(", "min", "max"):
                raise OracleError("unclosed parenthesis")
            reduce_one()
        if len(out) != 1:
            raise OracleError("malformed expression")
        return out[0]

    def read_map(self) -> OMap:
        if self.peek() == "UNDEFINED":
            return OMap(undefined=True)
        if self.peek() == "KNOWN" and self.peek(1) == "EMPTY":
            return OMap(known_empty=True)
        self.take("(")
        dims = self.names_list(")")
        syms = rts = []
        if self.peek() == "[":
            self.take()
            syms = self.names_list("]")
        if self.peek() == "{":
            self.take()
            rts = self.names_list("}")
        size_names: list[str] = []
        if self.peek() == "<":
            self.take()
            size_names = self.names_list(">")
        order = dims + syms + rts + size_names
        if len(set(order)) != len(order):
            raise OracleError("a name is declared twice")
        self.names = {n: i for i, n in enumerate(order)}
        self.take("->")
        self.take("(")
        results: list[Node] = []
        if self.peek() == ")":
            self.take()
        else:
            while True:
                results.append(self.expr())
                if self.take() == ")":
                    break
        bounds: dict[int, tuple[int, int]] = {}
        constraints: list[tuple[Node, int, int]] = []
        if self.peek() == ",":
            self.take()
            self.take("domain")
            self.take(":")
            while True:
                e = self.expr()
                self.take("in")
                self.take("[")
                lo = self.integer()
                self.take(",")
                hi = self.integer()
                self.take("]")
                if e[0] == "v" and e[1] not in bounds:
                    bounds[e[1]] = (lo, hi)
                else:
                    constraints.append((e, lo, hi))
                if self.peek() != ",":
                    break
                self.take()
        if self.peek() is not None:
            raise OracleError(f"trailing {self.peek()!r}")
        if len(bounds) != len(order):
            raise OracleError("a variable has no bounds")
        boxes = [bounds[i] for i in range(len(order))]
        nd, ns, nr = len(dims), len(syms), len(rts)
        sizes = [(n, *b) for n, b in zip(size_names, boxes[nd + ns + nr:])]
        return OMap(boxes[:nd], boxes[nd:nd + ns], boxes[nd + ns:nd + ns + nr], sizes, results,
                    constraints)


def parse(text: str) -> OMap:
    return _Reader(text).read_map()


# -- evaluation ----------------------------------------------------------------------------------


def _fd(a: int, b: int) -> int:
    if b == 0:
        raise Undefined("floordiv by 0")
    return a // b


def _cd(a: int, b: int) -> int:
    if b == 0:
        raise Undefined("ceildiv by 0")
    return -((-a) // b)


def _md(a: int, b: int) -> int:
    if b <= 0:
        raise Undefined("mod by a non-positive value")
    return a % b


_PY = {"+": "{} + {}", "-": "{} - {}", "*": "{} * {}", "fd": "_fd({}, {})", "cd": "_cd({}, {})",
       "mod": "_md({}, {})", "min": "min({}, {})", "max": "max({}, {})"}


def compile_map(m: OMap, member: bool = False):  # type: ignore[no-untyped-def]
    """A Python function of the flat point returning (constraint values, results). Each node
    becomes one assignment (post-order, iterative), so deep expressions compile too.
    `member`: instead, the results at a point that satisfies every constraint, else None
    (each constraint tested as soon as it is computed; results only in the domain)."""
    lines: list[str] = []
    names: dict[int, str] = {}

    def emit(root: Node) -> str:
        stack: list[tuple[Node, bool]] = [(root, False)]
        while stack:
            node, ready = stack.pop()
            if id(node) in names:
                continue
            kids = [] if node[0] in ("c", "v") else list(node[1:])
            if not ready and kids:
                stack.append((node, True))
                stack.extend((k, False) for k in kids)
                continue
            name = f"t{len(names)}"
            if node[0] == "c":
                code = str(node[1])
            elif node[0] == "v":
                code = f"p[{node[1]}]"
            elif node[0] == "neg":
                code = f"-{names[id(kids[0])]}"
            else:
                code = _PY[node[0]].format(*(names[id(k)] for k in kids))
            lines.append(f"    {name} = {code}")
            names[id(node)] = name
        return names[id(root)]

    keep = [m.results, m.constraints]  # node ids stay valid while compiling
    cons = []
    for e, lo, hi in m.constraints:
        cons.append(emit(e))
        if member:
            lines.append(f"    if not {lo} <= {cons[-1]} <= {hi}: return None")
    res = [emit(e) for e in m.results]
    body = "\n".join(lines) or "    pass"
    if member:
        src = f"def f(p):\n{body}\n    return ({''.join(r + ', ' for r in res)})\n"
    else:
        src = (f"def f(p):\n{body}\n    return ({''.join(c + ', ' for c in cons)}), "
               f"({''.join(r + ', ' for r in res)})\n")
    scope = {"_fd": _fd, "_cd": _cd, "_md": _md}
    exec(src, scope)  # noqa: S102 - code generated from the parsed tree above
    del keep
    return scope["f"]


def relation(m: OMap, limit: int = 50_000, sizes: dict[str, int] | None = None
             ) -> set[tuple[tuple[int, ...], ...]] | None:
    """{(runtime values, dimension values, results)} by enumeration; None if the box is over
    `limit` points. Raises Undefined if an operation is undefined at a point of the domain. A
    map with sizes needs a value for each in `sizes` (one member of the family; a value
    outside the size's interval is an OracleError: the map says nothing there)."""
    if m.undefined:
        raise OracleError("UNDEFINED has no relation")
    if m.known_empty:
        return set()
    fixed: list[int] = []
    for name, lo, hi in m.sizes:
        value = (sizes or {}).get(name)
        if value is None or not lo <= value <= hi:
            raise OracleError(f"size {name} = {value} is not in [{lo}, {hi}]")
        fixed.append(value)
    if m.box_size() > limit:
        return None
    if m.member is None:
        m.member = compile_map(m, member=True)
    f = m.member
    nd, ns, nv = len(m.dims), len(m.syms), len(m.boxes)
    out: set[tuple[tuple[int, ...], ...]] = set()
    for p in itertools.product(*[range(lo, hi + 1) for lo, hi in m.boxes],
                               *[(v,) for v in fixed]):
        res = f(p)  # type: ignore[operator]
        if res is not None:
            out.add((p[nd + ns:nv], p[:nd], res))
    return out


def compose_relation(first: set, second: set) -> set:  # type: ignore[type-arg]
    """Relation of `apply first, then second`: runtime values are second's, then first's."""
    by_input: dict[tuple[int, ...], list[tuple[tuple[int, ...], tuple[int, ...]]]] = {}
    for rt2, y, z in second:
        by_input.setdefault(y, []).append((rt2, z))
    out = set()
    for rt1, d, y in first:
        for rt2, z in by_input.get(y, ()):
            out.add((rt2 + rt1, d, z))
    return out


def depth(node: Node) -> int:
    """Operator levels (a leaf is 1), iteratively."""
    best = 0
    stack = [(node, 1)]
    while stack:
        n, d = stack.pop()
        best = max(best, d)
        if n[0] not in ("c", "v"):
            stack.extend((k, d + 1) for k in n[1:])
    return best


def _constant_value(node: Node) -> int | None:
    """The value of a divisor without variables (None if it has one or is undefined)."""
    stack = [node]
    while stack:
        n = stack.pop()
        if n[0] == "v":
            return None
        if n[0] != "c":
            stack.extend(n[1:])
    m = OMap(results=[node])
    try:
        return int(compile_map(m)(())[1][0])
    except Undefined:
        return None


def divisors_valid(node: Node) -> bool:
    """Every divisor an integer constant, nonzero, positive for mod (docs/semantics.md)."""
    stack = [node]
    while stack:
        n = stack.pop()
        if n[0] in ("fd", "cd", "mod"):
            value = _constant_value(n[2])
            if value is None or value == 0 or (n[0] == "mod" and value < 0):
                return False
        if n[0] not in ("c", "v"):
            stack.extend(n[1:])
    return True


# -- maps with sizes -----------------------------------------------------------------------------


def _leaves(node: Node) -> set[int]:
    out = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if n[0] == "v":
            out.add(n[1])
        elif n[0] != "c":
            stack.extend(n[1:])
    return out


def _mentions_index(node: Node, m: OMap) -> bool:
    return any(i < len(m.boxes) for i in _leaves(node))


def _naive_interval(node: Node, m: OMap) -> tuple[int, int] | None:
    """Interval arithmetic of a size expression from the sizes' intervals (+, -, *, min, max;
    None for anything else), the bound the grammar asks of a divisor."""
    kind = node[0]
    if kind == "c":
        return node[1], node[1]
    if kind == "v":
        k = node[1] - len(m.boxes)
        return (m.sizes[k][1], m.sizes[k][2]) if k >= 0 else None
    parts = [_naive_interval(k, m) for k in node[1:]]
    if any(p is None for p in parts):
        return None
    if kind == "neg":
        lo, hi = parts[0]  # type: ignore[misc]
        return -hi, -lo
    (a, b), (c, d) = parts  # type: ignore[misc]
    if kind == "+":
        return a + c, b + d
    if kind == "-":
        return a - d, b - c
    if kind == "*":
        corners = [a * c, a * d, b * c, b * d]
        return min(corners), max(corners)
    if kind == "min":
        return min(a, c), min(b, d)
    if kind == "max":
        return max(a, c), max(b, d)
    return None


def size_points(m: OMap, limit: int) -> list[dict[str, int]] | None:
    """Every assignment of the sizes within their intervals, or None if there are more than
    `limit`."""
    n = 1
    for _name, lo, hi in m.sizes:
        n *= max(0, hi - lo + 1)
    if n > limit:
        return None
    names = [name for name, _lo, _hi in m.sizes]
    return [dict(zip(names, values)) for values in
            itertools.product(*[range(lo, hi + 1) for _n, lo, hi in m.sizes])]


def _value_at(node: Node, m: OMap, sizes: dict[str, int]) -> int | None:
    """A size expression's value at `sizes` (None if undefined there)."""
    f = compile_map(OMap(results=[node]))
    p = tuple([0] * len(m.boxes) + [sizes[name] for name, _lo, _hi in m.sizes])
    try:
        return int(f(p)[1][0])
    except Undefined:
        return None


def divisor_status(m: OMap, samples: list[dict[str, int]]) -> str:
    """For a map with sizes: "valid" when every divisor is a constant XLA accepts, or over
    sizes and constants only and positive on its naive interval, so it must be accepted; "invalid"
    when one mentions an index variable or is below 1 at one of `samples` (a size assignment;
    the map would be undefined there), so it must be rejected; "unclear" otherwise (the
    grammar's interval test may go either way)."""
    status = "valid"
    nodes = m.results + [e for e, _lo, _hi in m.constraints]
    stack = list(nodes)
    while stack:
        n = stack.pop()
        if n[0] in ("fd", "cd", "mod"):
            d = n[2]
            if _mentions_index(d, m):
                return "invalid"
            if not _leaves(d):  # a constant: XLA's rule (nonzero; positive for mod)
                value = _constant_value(d)
                if value is None or value == 0 or (n[0] == "mod" and value < 0):
                    return "invalid"
                stack.extend(n[1:])
                continue
            iv = _naive_interval(d, m)
            if iv is None or iv[0] < 1:
                values = [_value_at(d, m, at) for at in samples]
                if any(v is None or v < 1 for v in values):
                    return "invalid"
                status = "unclear"  # positive at the samples, not on its naive interval
        if n[0] not in ("c", "v"):
            stack.extend(n[1:])
    return status


def products_linear(m: OMap) -> bool:
    """No product of two factors that both mention an index variable (the grammar of maps
    with sizes: linear in the index variables)."""
    stack = m.results + [e for e, _lo, _hi in m.constraints]
    while stack:
        n = stack.pop()
        if n[0] == "*" and _mentions_index(n[1], m) and _mentions_index(n[2], m):
            return False
        if n[0] not in ("c", "v"):
            stack.extend(n[1:])
    return True
