"""Concrete instances of substitutions, and whether a concrete pair is an instance of one.

Rediscovery is decided with these: a hand-written substitution is sampled at the generator's
input shapes (sizes fixed by those shapes, its other parameters and permutations drawn at
random among the values that satisfy its conditions and make its left side well formed), and a
generated substitution *has* a concrete pair when its left side matches the pair's left side
(inputs renamed consistently, sizes, parameters and permutations bound, equations and
conditions true) and its right side, instantiated with that binding, is the pair's right side.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Mapping
from dataclasses import dataclass

from verifidx.analysis.subst.binding import Binding
from verifidx.analysis.subst.enumeration import RANK_SHAPES
from verifidx.analysis.subst.model import Node, SizeList, Substitution, evaluate, names_in
from verifidx.analysis.subst.semantics import INTS, Graph, IllFormed, perm_value

_DEFAULTS = {"stride": 1, "interior": 0}
_RESHAPE_SIZES = (1, 2, 3, 4, 6, 8, 12, 24)


@dataclass
class Instance:
    """A concrete pair over named inputs of concrete shapes."""

    lhs: Node
    rhs: Node
    shapes: dict[str, tuple[int, ...]]

    def __str__(self) -> str:
        shapes = ", ".join(f"{n}: {list(s)}" for n, s in self.shapes.items())
        return f"{self.lhs} => {self.rhs} (at {shapes})"


def normalized(n: Node) -> Node:
    """Attributes sorted, default strides and interior paddings dropped."""
    if n.op == "input":
        return n
    attrs = []
    for k, v in sorted(n.attrs, key=lambda kv: kv[0]):
        if k in _DEFAULTS and isinstance(v, SizeList) and not v.variadic and \
                all(e == _DEFAULTS[k] for e in v.items):
            continue
        attrs.append((k, v))
    return Node(n.op, tuple(normalized(a) for a in n.args), tuple(attrs))


def _match(p: Node, c: Node, pattern: Substitution, shapes: Mapping[str, tuple[int, ...]],
           b: Binding) -> bool:
    if p.op == "input":
        if c.op != "input":
            return False
        if p.name in b.inputs:
            return b.inputs[p.name] == c.name
        b.inputs[p.name] = c.name
        return b.unify(pattern.input_shapes[p.name], shapes[c.name])
    if p.op != c.op or len(p.args) != len(c.args):
        return False
    pa, ca = dict(p.attrs), dict(c.attrs)
    if set(pa) != set(ca):
        return False
    for key, value in pa.items():
        concrete = ca[key]
        if key == "perm":
            assert isinstance(concrete, SizeList)
            lit = tuple(e for e in concrete.items if isinstance(e, int))
            if isinstance(value, str) and value not in b.perms:
                b.perms[value] = lit
            else:
                b.equations.append((("perm", value), lit))
        elif key == "dim":
            if value != concrete:
                return False
        elif not b.unify(value, [int(e) for e in concrete.items]):  # type: ignore[union-attr,arg-type,call-overload]
            return False
    return all(_match(x, y, pattern, shapes, b) for x, y in zip(p.args, c.args))


def _instantiate(n: Node, env: Mapping[str, int], lists: Mapping[str, tuple[str, ...]],
                 perms: Mapping[str, tuple[int, ...]], inputs: Mapping[str, str]) -> Node:
    if n.op == "input":
        return Node("input", name=inputs.get(n.name, n.name))
    attrs: list[tuple[str, object]] = []
    for k, v in n.attrs:
        if k == "perm":
            attrs.append((k, SizeList(perm_value(v, perms))))
        elif isinstance(v, SizeList):
            vals = [env[x] for x in lists[v.variadic]] if v.variadic else \
                [int(evaluate(e, env)) for e in v.items]  # type: ignore[call-overload]
            attrs.append((k, SizeList(tuple(vals))))
        else:
            attrs.append((k, v))
    return Node(n.op, tuple(_instantiate(a, env, lists, perms, inputs) for a in n.args),
                tuple(attrs))  # type: ignore[arg-type]


_OPS = {"==": int.__eq__, "!=": int.__ne__, "<": int.__lt__, "<=": int.__le__,
        ">": int.__gt__, ">=": int.__ge__}


def has_instance(pattern: Substitution, inst: Instance) -> bool:
    """Is `inst` an instance of `pattern` (see the module docstring)?"""
    b = Binding()
    if not _match(normalized(pattern.lhs), normalized(inst.lhs), pattern, inst.shapes, b):
        return False
    env, lists = b.env()
    try:
        for e, v in b.equations:
            if isinstance(e, tuple) and e[0] == "perm":
                if perm_value(e[1], b.perms) != v:
                    return False
            elif evaluate(e, env) != v:  # type: ignore[arg-type]
                return False
        if not all(_OPS[c.op](int(evaluate(c.lhs, env)), int(evaluate(c.rhs, env)))  # type: ignore[call-overload]
                   for c in pattern.conditions):
            return False
        rhs = _instantiate(pattern.rhs, env, lists, b.perms, b.inputs)
    except (KeyError, IllFormed, IndexError):
        return False
    return normalized(rhs) == normalized(inst.rhs)


# -- sampling the instances of a substitution --------------------------------------------------


def _free_names(sub: Substitution) -> tuple[list[str], list[str]]:
    """Integer names not fixed by input shapes, and variadic attribute lists."""
    bound: set[str] = set()
    variadic_inputs = set()
    for _n, s in sub.inputs:
        for e in s.items:
            bound |= names_in(e)
        if s.variadic:
            variadic_inputs.add(s.variadic)
    free: list[str] = []
    lists: list[str] = []
    for n in sub.lhs.nodes():
        for _k, v in n.attrs:
            if isinstance(v, SizeList):
                if v.variadic and v.variadic not in variadic_inputs and v.variadic not in lists:
                    lists.append(v.variadic)
                for e in v.items:
                    free += sorted(names_in(e) - bound - set(free))
    return free, lists


def sample(sub: Substitution, count: int = 12, tries: int = 200, seed: int = 0
           ) -> list[Instance]:
    """Up to `count` distinct instances at the generator's input shapes (RANK_SHAPES)."""
    rng = random.Random(seed)
    free, attr_lists = _free_names(sub)
    variadic_inputs = sorted({s.variadic for _n, s in sub.inputs if s.variadic})
    out: dict[str, Instance] = {}
    for ranks in itertools.product(sorted(RANK_SHAPES), repeat=len(variadic_inputs)):
        base = Binding()
        base.lists.update({v: RANK_SHAPES[r] for v, r in zip(variadic_inputs, ranks)})
        shapes: dict[str, tuple[int, ...]] = {}
        ok = True
        for name, s in sub.inputs:
            rank = len(base.lists[s.variadic]) if s.variadic else len(s.items)
            if rank and rank not in RANK_SHAPES:
                ok = False
                break
            shapes[name] = RANK_SHAPES[rank] if rank else ()
            ok = ok and base.unify(s, shapes[name]) and not base.equations
        if not ok:
            continue
        here: dict[str, Instance] = {}
        rank = max((len(s) for s in shapes.values()), default=0)
        limit = max(max(s, default=1) for s in shapes.values()) + 1

        def draw(limit: int = limit) -> int:
            return rng.randint(0, limit) if rng.random() > 0.05 else -1

        def violations(b: Binding, perms: dict[str, tuple[int, ...]]) -> int:
            env, names = b.env()
            try:
                bad = sum(not _OPS[c.op](int(evaluate(c.lhs, env)), int(evaluate(c.rhs, env)))  # type: ignore[call-overload]
                          for c in sub.conditions)
                g = Graph(INTS, env, names, sub.input_shapes, perms)
                return bad + sum(not w for w in g.well_formed(sub.lhs))
            except (KeyError, IllFormed, IndexError, ZeroDivisionError):
                return 10**6

        for _ in range(tries):
            b = Binding(dict(base.inputs), dict(base.values), dict(base.lists))
            for n in free:
                b.values[n] = draw()
            for v in attr_lists:
                b.lists[v] = tuple(rng.choice(_RESHAPE_SIZES) for _ in range(rng.randint(1, 3)))
            perms = {p: tuple(rng.sample(range(rank), rank)) for p in sub.perms}
            bad = violations(b, perms)
            for _step in range(50 * len(free) + 50 * len(attr_lists)):
                # repair: redraw one parameter or list at a time, keep it unless worse
                if bad == 0 or bad >= 10**6:
                    break
                n = rng.choice(free + attr_lists)
                store: dict = b.values if n in free else b.lists  # type: ignore[type-arg]
                old = store[n]
                store[n] = draw() if n in free else tuple(
                    rng.choice(_RESHAPE_SIZES) for _ in range(rng.randint(1, 3)))
                now = violations(b, perms)
                if now <= bad:
                    bad = now
                else:
                    store[n] = old
            if bad:
                continue
            env, names = b.env()
            inputs = {n: n for n, _s in sub.inputs}
            try:
                lhs = _instantiate(sub.lhs, env, names, perms, inputs)
                rhs = _instantiate(sub.rhs, env, names, perms, inputs)
            except (KeyError, IllFormed, IndexError, ZeroDivisionError):
                continue
            inst = Instance(lhs, rhs, shapes)
            here.setdefault(str(inst), inst)
            if len(here) >= count:
                break
        out.update(here)
    return list(out.values())
