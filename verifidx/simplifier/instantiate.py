"""A rule's side instantiated at a match: the pattern with its variables replaced and its
constant computations folded, by Python code generated once per pattern. Below the prefilters,
which rebuild a rule's sides (`_rebuild`) to find the constants at which it rewrites a term to
itself."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final, cast

from ..core.expr import Const, Expr
from ..core.interval import Interval
from ..rules.model import Call, ConstVar, TermVar

RangeFn = Callable[[Expr], Interval]


class _NoValue(Exception):
    """A rule mentions something the match site cannot give a value to."""


def _instantiate(pattern: Expr, env: Mapping[Expr, Expr], bound: Callable[[Expr], Interval]
                 ) -> Expr:
    """The pattern with its variables replaced, constant computations folded: `lo(t)`/`hi(t)`
    become the bounds of t's interval, `gcd` and the like are evaluated once their arguments
    are constants. Runs code generated once per pattern (`_instance_code`)."""
    code = _INSTANCES.get(pattern)
    if code is None:
        code = _INSTANCES[pattern] = _instance_code(pattern)
    return code(env, bound)


_INSTANCES: Final[dict[Expr, Callable[[Mapping[Expr, Expr], RangeFn], Expr]]] = {}


def _instance_code(pattern: Expr) -> Callable[[Mapping[Expr, Expr], RangeFn], Expr]:
    """One nested Python expression for the pattern. A subtree without variables or calls
    stays the pattern's own node (as `map_children` leaves it); any other node is rebuilt
    through its smart constructor unless no child changed."""
    nodes: list[Expr] = []

    def ref(p: Expr) -> str:
        nodes.append(p)
        return f"N[{len(nodes) - 1}]"

    def gen(p: Expr) -> str:
        if isinstance(p, (TermVar, ConstVar)):
            return f"_get(E, {ref(p)})"
        if not any(isinstance(n, (TermVar, ConstVar, Call)) for n in p.walk()):
            return ref(p)
        kids = ", ".join(gen(c) for c in p.children)
        if isinstance(p, Call):
            if p.fn in ("lo", "hi"):
                return f"Const(bound({kids}).{p.fn})"
            return f"_call({ref(p)}, [{kids}])"
        return f"_rebuild({ref(p)}, [{kids}])"

    body = gen(pattern)
    scope: dict[str, object] = {"N": nodes, "Const": Const, "_get": _get, "_call": _call,
                                "_rebuild": _rebuild}
    exec(f"def _f(E, bound):\n    return {body}\n", scope)  # noqa: S102 - generated
    return cast(Callable[[Mapping[Expr, Expr], RangeFn], Expr], scope["_f"])


def _get(env: Mapping[Expr, Expr], var: Expr) -> Expr:
    value = env.get(var)
    if value is None:
        raise _NoValue(str(var))
    return value


def _call(node: Expr, args: list[Expr]) -> Expr:
    if not all(isinstance(a, Const) for a in args):
        raise _NoValue(str(node))
    return Const(node.rebuild(args).evaluate({}))


def _rebuild(node: Expr, kids: list[Expr]) -> Expr:
    for a, b in zip(kids, node.children):
        if a is not b:
            return node.rebuild(kids)
    return node
