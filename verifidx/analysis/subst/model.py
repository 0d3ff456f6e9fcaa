"""A graph substitution: two small graphs of data-movement ops over the same inputs.

Sizes are integer expressions over named size variables (`a`, `a + b`, `a * b`); a size list
is either written out (`[a, b * c]`) or *variadic* (`[a...]`: a list of any rank whose sizes are
`a0, a1, ...`). Permutations are literals (`[1, 0]`), names declared with `perms` (any
permutation of the right rank), `compose(p, q)` (the permutation of transposing by p, then by q:
`r[k] = p[q[k]]`) or `inverse(p)`. Conditions compare size expressions.

The meaning: for every rank of the variadic lists, every permutation and every value of the size
variables that satisfies the conditions and makes the left graph well formed, the right graph is
well formed, has the same output shape, and reads, at every output index, the same element of
the same input (or the same padding scalar). `verifidx.analysis.subst.prove` decides it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Union

# int, a name, or (op, lhs, rhs) with op in + - *
SizeExpr = Union[int, str, tuple]  # noqa: UP007
"""An integer expression over size variables and integer parameters."""

OPS: dict[str, tuple[int | None, tuple[str, ...], tuple[str, ...]]] = {
    # opcode: (number of array operands (None: one or more), required attrs, optional attrs)
    "transpose": (1, ("perm",), ()),
    "reshape": (1, ("shape",), ()),
    "slice": (1, ("start", "limit"), ("stride",)),
    "concatenate": (None, ("dim",), ()),
    "pad": (2, ("low", "high"), ("interior",)),
    "reverse": (1, ("dims",), ()),
    "broadcast": (1, ("shape", "dims"), ()),
    "copy": (1, (), ()),
}
"""The data-movement ops a substitution may use, with their attributes."""


@dataclass(frozen=True)
class SizeList:
    """`[e, ...]` (items) or `[name...]` (variadic, `items` empty)."""

    items: tuple[SizeExpr, ...] = ()
    variadic: str | None = None

    def __str__(self) -> str:
        if self.variadic is not None:
            return f"[{self.variadic}...]"
        return "[" + ", ".join(show(e) for e in self.items) + "]"


# A permutation: a literal list, a declared name, or ("compose" | "inverse", ...).
PermExpr = Union[SizeList, str, tuple]  # noqa: UP007
AttrValue = Union[SizeList, int, PermExpr]  # noqa: UP007


@dataclass(frozen=True)
class Node:
    """An op applied to argument nodes, or (op == "input") a named input."""

    op: str
    args: tuple[Node, ...] = ()
    attrs: tuple[tuple[str, AttrValue], ...] = ()
    name: str = ""

    def attr(self, key: str, default: AttrValue | None = None) -> AttrValue | None:
        return dict(self.attrs).get(key, default)

    def nodes(self) -> Iterator[Node]:
        """Every node below and including this one, operands first."""
        for a in self.args:
            yield from a.nodes()
        yield self

    def op_count(self) -> int:
        return sum(1 for n in self.nodes() if n.op != "input")

    def __str__(self) -> str:
        if self.op == "input":
            return self.name
        parts = [str(a) for a in self.args] + [f"{k}={show_attr(v)}" for k, v in self.attrs]
        return f"{self.op}({', '.join(parts)})"


@dataclass(frozen=True)
class Condition:
    """`lhs op rhs` with op in == != < <= > >=."""

    op: str
    lhs: SizeExpr
    rhs: SizeExpr

    def __str__(self) -> str:
        return f"{show(self.lhs)} {self.op} {show(self.rhs)}"


@dataclass(frozen=True)
class Substitution:
    name: str
    inputs: tuple[tuple[str, SizeList], ...]
    perms: tuple[str, ...]
    conditions: tuple[Condition, ...]
    lhs: Node
    rhs: Node
    file: str = "<string>"
    line: int = 1
    text: str = field(default="", compare=False)

    @property
    def input_shapes(self) -> Mapping[str, SizeList]:
        return dict(self.inputs)

    @property
    def normalized_text(self) -> str:
        """What the certificate hash covers: the substitution without comments or layout."""
        body = [f"subst {self.name}:",
                "inputs " + ", ".join(f"{n}{s}" for n, s in self.inputs)]
        if self.perms:
            body.append("perms " + ", ".join(self.perms))
        body += [f"if {c}" for c in self.conditions]
        body.append(f"{self.lhs} => {self.rhs}")
        return "\n".join(body)

    def __str__(self) -> str:
        return self.normalized_text


def show(e: SizeExpr) -> str:
    if isinstance(e, tuple):
        op, a, b = e
        left = f"({show(a)})" if isinstance(a, tuple) and op == "*" and a[0] != "*" else show(a)
        right = f"({show(b)})" if isinstance(b, tuple) and (op != "+" or b[0] == "-") \
            else show(b)
        return f"{left} {op} {right}"
    return str(e)


def show_attr(v: AttrValue) -> str:
    if isinstance(v, tuple):
        return f"{v[0]}({', '.join(show_attr(x) for x in v[1:])})"
    return str(v)


def names_in(e: SizeExpr) -> set[str]:
    if isinstance(e, tuple):
        return names_in(e[1]) | names_in(e[2])
    return {e} if isinstance(e, str) else set()


def evaluate(e: SizeExpr, env: Mapping[str, object]) -> object:
    """Value of a size expression; `env` values may be ints or solver terms (operators are
    the only thing used)."""
    if isinstance(e, int):
        return e
    if isinstance(e, str):
        return env[e]
    op, a, b = e
    x, y = evaluate(a, env), evaluate(b, env)
    if op == "+":
        return x + y  # type: ignore[operator]
    if op == "-":
        return x - y  # type: ignore[operator]
    return x * y  # type: ignore[operator]
