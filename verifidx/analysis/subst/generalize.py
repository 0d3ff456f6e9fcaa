"""From concrete equal-map pairs to proven shape-parametric substitutions.

Candidate pairs with the same *skeleton* (ops, operands, the literal attributes: reverse and
broadcast dimensions, concatenation dimension) form a group; the group is generalized at once,
by anti-unification over its instances:

1. input sizes become names (`x[a, b, c]`, `y[d, e, f]`, `z[g, h, i]`, a scalar `v[]`);
2. every integer of a left-side attribute list becomes a parameter (`s0`, `l1`, ...), except
   broadcast sizes of operand dimensions, which are the operand's sizes; permutations become
   `perms` (or `inverse(p)` / `compose(p, q)` of earlier ones, when every instance says so);
3. every right-side integer becomes the first expression (a parameter, a size, a constant,
   a sum or difference of two) that has the right value in *every* instance of the group,
   every right-side permutation the first of `p`, `compose(p, q)`, `inverse(p)`, ... that does;
4. side conditions come from the prover's counterexamples (CEGIS): while the substitution is
   refuted, add the first comparison that holds in every instance and is false in the
   counterexample; then drop conditions it can do without, and write `p == t` by putting `t`
   for `p`;
5. a proven substitution whose sizes only occur as whole lists is lifted to variadic shapes
   (`x[a...]`, `shape=[m...]`) and kept in that form when that is proven too (ranks <= 3).

When the group cannot be generalized with permutation parameters it is split by its
permutations and retried; a group that still fails is proven instance by instance at the
concrete shapes. Every substitution returned was proven by `verifidx.analysis.subst.prove` in
exactly the text returned.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from verifidx.analysis.subst.instances import has_instance, sample
from verifidx.analysis.subst.model import (
    Condition,
    Node,
    SizeExpr,
    SizeList,
    Substitution,
    evaluate,
    names_in,
)
from verifidx.analysis.subst.parser import parse_substitutions
from verifidx.analysis.subst.prove import PROVED, REFUTED, SubstProof
from verifidx.analysis.subst.semantics import IllFormed, perm_value
from verifidx.core.errors import ParseError

PARAMETRIC = {"perm", "shape", "start", "limit", "low", "high"}
"""Attributes whose values are generalized (the others, strides and interior paddings
included, are part of the skeleton)."""

SIZE_NAMES = {"x": ("a", "b", "c"), "y": ("d", "e", "f"), "z": ("g", "h", "i")}
_LIST_LETTERS = ("s", "l", "t", "u", "m", "k", "n", "w", "j", "o")
_PERM_NAMES = ("p", "q", "p1", "q1")
MAX_CONDITIONS = 12
GROUP_PROOFS = 150
"""The prover calls one group may spend generalizing (the concrete fallback is not limited): a
count, not seconds, so that the substitutions a group yields do not depend on the machine's
load or on where the group ran."""

Pair = tuple[Node, Node]
Prover = Callable[[Substitution], SubstProof]


def skeleton(n: Node) -> str:
    """The node with its generalized attributes blanked."""
    if n.op == "input":
        return n.name
    parts = [skeleton(a) for a in n.args]
    parts += [f"{k}={_blank(v) if k in PARAMETRIC else v}" for k, v in n.attrs]
    return f"{n.op}({', '.join(parts)})"


def _ints(v: object) -> list[int]:
    """The integers of a concrete attribute list."""
    assert isinstance(v, SizeList)
    return [e for e in v.items if isinstance(e, int)]


def _blank(v: object) -> str:
    return f"_{len(v.items)}" if isinstance(v, SizeList) else "_"


def perm_literals(pair: Pair) -> tuple[object, ...]:
    return tuple(str(m.attr("perm")) for side in pair for m in side.nodes() if m.op == "transpose")


@dataclass
class Outcome:
    """What became of one group: proven substitutions (with the instances each covers)."""

    general: list[tuple[Substitution, list[Pair]]] = field(default_factory=list)
    concrete: list[tuple[Substitution, list[Pair]]] = field(default_factory=list)
    refuted: int = 0
    unknown: int = 0
    proofs: int = 0  # prover calls
    seconds: float = 0.0
    failures: list[str] = field(default_factory=list)


# -- size expressions ------------------------------------------------------------------------


def add(a: SizeExpr, b: SizeExpr) -> SizeExpr:
    if a == 0:
        return b
    if b == 0:
        return a
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    return ("+", a, b)


def sub(a: SizeExpr, b: SizeExpr) -> SizeExpr:
    if b == 0:
        return a
    if isinstance(a, int) and isinstance(b, int):
        return a - b
    return ("-", a, b)


def substitute(e: SizeExpr, name: str, by: SizeExpr) -> SizeExpr:
    if isinstance(e, tuple):
        return (e[0], substitute(e[1], name, by), substitute(e[2], name, by))
    return by if e == name else e


def _sym_shape(n: Node, inputs: Mapping[str, list[SizeExpr]],
               memo: dict[int, list[SizeExpr] | None]) -> list[SizeExpr] | None:
    """The output sizes of a generalized node as size expressions (None: not expressible)."""
    if id(n) in memo:
        return memo[id(n)]
    out: list[SizeExpr] | None
    if n.op == "input":
        out = list(inputs[n.name])
    else:
        xs = _sym_shape(n.args[0], inputs, memo)
        out = None
        if xs is None:
            pass
        elif n.op in ("copy", "reverse"):
            out = xs
        elif n.op == "transpose":
            p = n.attr("perm")
            if isinstance(p, SizeList):
                out = [xs[k] for k in _ints(p)]
        elif n.op in ("reshape", "broadcast"):
            s = n.attr("shape")
            assert isinstance(s, SizeList)
            out = list(s.items)
        elif n.op == "slice" and n.attr("stride") is None:
            st, lim = n.attr("start"), n.attr("limit")
            assert isinstance(st, SizeList) and isinstance(lim, SizeList)
            out = [sub(b, a) for a, b in zip(st.items, lim.items)]
        elif n.op == "pad" and n.attr("interior") is None:
            lo, hi = n.attr("low"), n.attr("high")
            assert isinstance(lo, SizeList) and isinstance(hi, SizeList)
            out = [add(add(a, x), b) for a, x, b in zip(lo.items, xs, hi.items)]
        elif n.op == "concatenate":
            d = n.attr("dim")
            assert isinstance(d, int)
            others = [_sym_shape(a, inputs, memo) for a in n.args[1:]]
            if all(o is not None for o in others):
                out = list(xs)
                for o in others:
                    out[d] = add(out[d], o[d])  # type: ignore[index]
    memo[id(n)] = out
    return out


# -- the generalized substitution under construction -----------------------------------------


@dataclass
class _Draft:
    rank: int
    inputs: list[tuple[str, SizeList]]
    perms: list[str]
    lhs: Node
    rhs: Node
    conditions: list[Condition]
    envs: list[dict[str, int]]  # per instance: every size and parameter
    perm_envs: list[dict[str, tuple[int, ...]]]
    params: list[tuple[str, int]]  # integer parameters of the left side, with their dimension
    terms: list[tuple[SizeExpr, int]]  # expressions for right sides and conditions, with dims
    alternatives: list[Node] = field(default_factory=list)  # right sides to try, in order
    param_keys: dict[str, str] = field(default_factory=dict)  # parameter -> attribute name
    lhs_params: list[tuple[str, int]] = field(default_factory=list)
    lhs_original: Node | None = None

    def __post_init__(self) -> None:
        self.lhs_params = list(self.params)
        self.lhs_original = self.lhs

    def text(self, name: str) -> str:
        lines = [f"subst {name}:",
                 "  inputs " + ", ".join(f"{n}{s}" for n, s in self.inputs)]
        if self.perms:
            lines.append("  perms " + ", ".join(self.perms))
        if self.conditions:
            lines.append("  if " + " and ".join(str(c) for c in self.conditions))
        lines.append(f"  {self.lhs} => {self.rhs}")
        return "\n".join(lines) + "\n"

    def parse(self, name: str) -> Substitution:
        (s,) = parse_substitutions(self.text(name), "<generated>")
        return s


def _holds(op: str, a: int, b: int) -> bool:
    return {"==": a == b, "<=": a <= b, ">=": a >= b, "<": a < b, ">": a > b,
            "!=": a != b}[op]


def _draft(pairs: Sequence[Pair], rank: int, shapes: Mapping[str, tuple[int, ...]],
           lift_perms: bool) -> _Draft | None:
    """Steps 1-3 of the module docstring (None: a right side has no fitting expression)."""
    lhs0, rhs0 = pairs[0]
    used = [i for i in ("x", "y", "z", "v")
            if any(m.op == "input" and m.name == i for m in lhs0.nodes())]
    inputs = [(i, SizeList(SIZE_NAMES[i][:rank]) if i != "v" else SizeList(()))
              for i in used]
    size_of = {i: list(s.items) for i, s in inputs}
    envs: list[dict[str, int]] = [{} for _ in pairs]
    for env in envs:
        for i, s in inputs:
            env.update({str(name): v for name, v in zip(s.items, shapes[i])})
    perm_envs: list[dict[str, tuple[int, ...]]] = [{} for _ in pairs]
    perms: list[str] = []
    params: list[tuple[str, int]] = []
    param_keys: dict[str, str] = {}
    letters = iter(_LIST_LETTERS)
    instance_nodes = [list(p[0].nodes()) for p in pairs]
    memo: dict[int, list[SizeExpr] | None] = {}
    built: dict[int, Node] = {}

    def perm_expr(values: list[tuple[int, ...]]) -> object | None:
        for cand in _perm_candidates(perms, plain_first=False):
            try:
                if all(perm_value(cand, pe) == v for pe, v in zip(perm_envs, values)):
                    return cand
            except (IllFormed, KeyError):
                continue
        return None

    for pos, n in enumerate(lhs0.nodes()):
        if n.op == "input":
            built[id(n)] = n
            continue
        args = tuple(built[id(a)] for a in n.args)
        attrs: list[tuple[str, object]] = []
        for key, value in n.attrs:
            if key not in PARAMETRIC:
                attrs.append((key, value))
                continue
            values = [inst[pos].attr(key) for inst in instance_nodes]
            if key == "perm":
                lits = [tuple(_ints(v)) for v in values]
                if not lift_perms:
                    attrs.append((key, value))
                    continue
                expr = perm_expr(lits) if perms else None
                if expr is None:
                    expr = _PERM_NAMES[len(perms)]
                    perms.append(expr)  # type: ignore[arg-type]
                    for pe, v in zip(perm_envs, lits):
                        pe[expr] = v  # type: ignore[index]
                attrs.append((key, expr))
                continue
            ints = [_ints(v) for v in values]
            items: list[SizeExpr] = []
            letter = next(letters)
            operand = _sym_shape(args[0], size_of, memo) if n.op == "broadcast" else None
            dims = n.attr("dims") if n.op == "broadcast" else None
            for k in range(len(ints[0])):
                if operand is not None and isinstance(dims, SizeList) and k in dims.items:
                    items.append(operand[list(dims.items).index(k)])
                    continue
                name = f"{letter}{k}"
                items.append(name)
                params.append((name, k))
                param_keys[name] = key
                for env, row in zip(envs, ints):
                    env[name] = row[k]
            attrs.append((key, SizeList(tuple(items))))
        built[id(n)] = Node(n.op, args, tuple(attrs))  # type: ignore[arg-type]
    lhs = built[id(lhs0)]
    # terms: parameters, input sizes, sizes of the left side's nodes
    terms: list[tuple[SizeExpr, int]] = [(p, k) for p, k in params]
    terms += [(e, k) for _n, s in inputs for k, e in enumerate(s.items)]
    for m in lhs.nodes():
        shape = _sym_shape(m, size_of, memo)
        for k, e in enumerate(shape or ()):
            if isinstance(e, tuple) and (e, k) not in terms:
                terms.append((e, k))
    draft = _Draft(rank, inputs, perms, lhs, rhs0, [], envs, perm_envs, params, terms)
    draft.param_keys = param_keys
    draft.alternatives = _generalize_rhs(draft, [p[1] for p in pairs], lift_perms)
    return draft if draft.alternatives else None


def _perm_candidates(names: Sequence[str], plain_first: bool = True) -> Iterator[object]:
    """Permutation expressions over `names` (a left side prefers `inverse(p)` to `p`: at rank
    2 every permutation is its own inverse, and the inverse is the form that generalizes)."""
    if plain_first:
        yield from names
    for p in names:
        yield ("inverse", p)
    if not plain_first:
        yield from names
    for p, q in itertools.permutations(names, 2):
        yield ("compose", p, q)
    for p, q in itertools.permutations(names, 2):
        yield ("compose", ("inverse", p), q)
        yield ("compose", p, ("inverse", q))


def _expr_candidates(d: _Draft, dim: int, key: str, constant: int | None
                     ) -> Iterator[tuple[int, SizeExpr]]:
    """Expressions for a right-side integer at dimension `dim` of attribute `key`, with a
    rank: 0 for terms of that dimension and their sums and differences, 1 for parameters of
    the same attribute at other dimensions (a transposed broadcast moves sizes), 2 for a
    constant, 3 for other terms, their sums, differences and products. A term is never
    combined with itself."""
    near = [e for e, k in d.terms if k == dim]
    ordered = near + [e for e, k in d.terms if k != dim]
    for e in near:
        yield 0, e
    for a, b in itertools.product(near, repeat=2):
        if a != b:
            yield 0, add(a, b)
            yield 0, sub(a, b)
    for e, k in d.terms:
        if k != dim and isinstance(e, str) and d.param_keys.get(e) == key:
            yield 1, e
    if constant is not None:
        yield 2, constant
    for e in ordered:
        yield 3, e
    for a, b in itertools.product(ordered, repeat=2):
        if a != b:
            yield 3, add(a, b)
            yield 3, sub(a, b)
    for a, b in itertools.combinations(ordered, 2):
        yield 3, ("*", a, b)


MAX_RHS_CHOICES = 3
MAX_DRAFTS = 4
NEAR_SCAN = 400


def _generalize_rhs(d: _Draft, rhss: Sequence[Node], lift_perms: bool) -> list[Node]:
    """Right sides whose every attribute fits every instance: the first choice everywhere,
    then (up to MAX_DRAFTS) alternatives, fewest changes from the first choice first."""
    nodes = [list(r.nodes()) for r in rhss]
    slots: list[list[object]] = []  # per generalized position: fitting expressions

    def fitting_perm(lits: list[tuple[int, ...]]) -> list[object]:
        if not lift_perms or not d.perms:
            return [SizeList(lits[0])] if len(set(lits)) == 1 else []
        found: list[object] = []
        for cand in _perm_candidates(d.perms):
            try:
                if all(perm_value(cand, pe) == v for pe, v in zip(d.perm_envs, lits)):
                    found.append(cand)
            except (IllFormed, KeyError):
                continue
            if len(found) >= MAX_RHS_CHOICES:
                break
        return found

    plan: list[tuple[int, str, int | None]] = []  # (node position, key, list index)
    for pos, n in enumerate(rhss[0].nodes()):
        for key, _value in n.attrs:
            if key not in PARAMETRIC:
                continue
            values = [inst[pos].attr(key) for inst in nodes]
            if key == "perm":
                lits = [tuple(_ints(v)) for v in values]
                slots.append(fitting_perm(lits))
                plan.append((pos, key, None))
                continue
            ints = [_ints(v) for v in values]
            for k in range(len(ints[0])):
                column = [v[k] for v in ints]
                constant = column[0] if len(set(column)) == 1 else None
                found: list[tuple[int, SizeExpr]] = []
                for scanned, (where, e) in enumerate(_expr_candidates(d, k, key, constant)):
                    if scanned >= NEAR_SCAN and found:
                        break
                    if all(e != f for _w, f in found) and _fits(e, d.envs, column):
                        found.append((where, e))
                # among expressions of the same rank, those with the most parameters of the
                # same attribute first (ranks 0 and 1; a parameter that is 0 in every
                # instance, like the start of an unsliced dimension, still belongs), then
                # those not merely a node's size, then the smallest
                params = {p for p, _k in d.params}
                same = {p for p in params if d.param_keys.get(p) == key}
                node_sizes = {e for e, _k in d.terms if isinstance(e, tuple)}
                found.sort(key=lambda we: (we[0],
                                           -len(names_in(we[1]) & same) * (we[0] < 2),
                                           we[1] in node_sizes, _size(we[1])))
                slots.append([e for _w, e in found[:MAX_RHS_CHOICES]])
                plan.append((pos, key, k))
    if any(not s for s in slots):
        return []
    choices = sorted(itertools.product(*[range(len(s)) for s in slots]),
                     key=lambda c: (sum(x > 0 for x in c), sum(c)))[:MAX_DRAFTS]
    return [_build_rhs(rhss[0], plan, [s[i] for s, i in zip(slots, c)]) for c in choices]


def _size(e: SizeExpr) -> int:
    return 1 + _size(e[1]) + _size(e[2]) if isinstance(e, tuple) else 1


def _build_rhs(rhs: Node, plan: Sequence[tuple[int, str, int | None]], picks: Sequence[object]
               ) -> Node:
    chosen: dict[tuple[int, str], list[object]] = {}
    for (pos, key, _k), pick in zip(plan, picks):
        chosen.setdefault((pos, key), []).append(pick)
    built: dict[int, Node] = {}
    for pos, n in enumerate(rhs.nodes()):
        if n.op == "input":
            built[id(n)] = n
            continue
        attrs: list[tuple[str, object]] = []
        for key, value in n.attrs:
            got = chosen.get((pos, key))
            if got is None:
                attrs.append((key, value))
            elif key == "perm":
                attrs.append((key, got[0]))
            else:
                attrs.append((key, SizeList(tuple(got))))  # type: ignore[arg-type]
        built[id(n)] = Node(n.op, tuple(built[id(a)] for a in n.args), tuple(attrs))  # type: ignore[arg-type]
    return built[id(rhs)]


def _fits(e: SizeExpr, envs: Sequence[Mapping[str, int]], values: Sequence[int]) -> bool:
    try:
        return all(evaluate(e, env) == v for env, v in zip(envs, values))
    except KeyError:
        return False


def _atoms(d: _Draft, equalities_first: bool) -> list[Condition]:
    """Comparisons of a parameter with 0, a size, another parameter, a node size, a
    parameter plus a size, or (`==` only) 1, that hold in every instance, in this order of
    preference; within each, targets of the parameter's own dimension first, and `>=`, `<=`
    before `==` (non-negative bounds and bounds by a size are the usual need) unless
    `equalities_first`."""
    out: list[Condition] = []
    sizes: list[tuple[SizeExpr, int | None]] = [(e, k) for _n, s in d.inputs
                                                for k, e in enumerate(s.items)]
    categories: list[list[tuple[SizeExpr, int | None]]] = [
        [(0, None)], sizes, [(p, k) for p, k in d.params],
        [(e, k) for e, k in d.terms if isinstance(e, tuple)],
        [(add(p, e), k) for p, k in d.params for e, j in sizes if j == k], [(1, None)]]
    ops = ("==", ">=", "<=") if equalities_first else (">=", "<=", "==")
    for targets in categories:
        for op in ops:
            for same_dim in (True, False):
                for p, k in d.params:
                    for t, j in targets:
                        if (j is None or j == k) != same_dim or p in names_in(t) or \
                                (t == 1 and op != "=="):
                            continue
                        c = Condition(op, p, t)
                        try:
                            if all(_holds(op, int(evaluate(p, env)), int(evaluate(t, env)))  # type: ignore[call-overload]
                                   for env in d.envs):
                                out.append(c)
                        except KeyError:
                            continue
    return out


# -- proving ---------------------------------------------------------------------------------


class _Budget:
    """The prover, counted, with a budget of prover calls for generalizing one group."""

    def __init__(self, prover: Prover, outcome: Outcome, proofs: int) -> None:
        self.prover, self.outcome, self.proofs = prover, outcome, proofs

    @property
    def expired(self) -> bool:
        return self.outcome.proofs >= self.proofs

    def __call__(self, sub: Substitution) -> SubstProof:
        self.outcome.proofs += 1
        return self.prover(sub)


def _cegis(d: _Draft, run: _Budget, name: str, equalities_first: bool = False
           ) -> Substitution | None:
    atoms = _atoms(d, equalities_first)
    for _ in range(MAX_CONDITIONS + 1):
        if run.expired:
            return None
        res = run(d.parse(name))
        if res.verdict == PROVED:
            break
        cx = res.counterexample
        if res.verdict != REFUTED or cx is None:
            return None
        pick = None
        for c in atoms:
            if c in d.conditions:
                continue
            try:
                if not _holds(c.op, int(evaluate(c.lhs, cx.sizes)),  # type: ignore[call-overload]
                              int(evaluate(c.rhs, cx.sizes))):  # type: ignore[call-overload]
                    pick = c
                    break
            except KeyError:
                continue
        if pick is None:
            return None
        d.conditions.append(pick)
    else:
        return None
    # drop the conditions it can do without
    for c in list(d.conditions):
        d.conditions.remove(c)
        if run(d.parse(name)).verdict != PROVED:
            d.conditions.append(c)
    # `p <= t and p >= t` is `p == t`
    for c in list(d.conditions):
        if c.op == "<=" and Condition(">=", c.lhs, c.rhs) in d.conditions:
            d.conditions.remove(c)
            d.conditions.remove(Condition(">=", c.lhs, c.rhs))
            d.conditions.append(Condition("==", c.lhs, c.rhs))
    # `p == t`: put t for p
    while True:
        params = {p for p, _k in d.params}
        eq = next((c for c in d.conditions if c.op == "==" and isinstance(c.lhs, str)
                   and c.lhs in params and c.lhs not in names_in(c.rhs)), None)
        if eq is None:
            break
        c = eq
        _replace_param(d, c.lhs, c.rhs)  # type: ignore[arg-type]
        d.conditions = [Condition(x.op, substitute(x.lhs, c.lhs, c.rhs),  # type: ignore[arg-type]
                                  substitute(x.rhs, c.lhs, c.rhs))  # type: ignore[arg-type]
                        for x in d.conditions if x is not c]
    final = d.parse(name)
    return final if run(final).verdict == PROVED else None


def _map_lists(n: Node, f: Callable[[SizeList], SizeList]) -> Node:
    if n.op == "input":
        return n
    attrs = tuple((k, f(v) if isinstance(v, SizeList) and k in PARAMETRIC else v)
                  for k, v in n.attrs)
    return Node(n.op, tuple(_map_lists(a, f) for a in n.args), attrs)


def _replace_param(d: _Draft, name: str, by: SizeExpr) -> None:
    def f(s: SizeList) -> SizeList:
        return SizeList(tuple(substitute(e, name, by) for e in s.items), s.variadic)
    d.lhs, d.rhs = _map_lists(d.lhs, f), _map_lists(d.rhs, f)
    d.params = [(p, k) for p, k in d.params if p != name]


def _lifted(sub: Substitution) -> str | None:
    """The substitution with whole-list sizes written as variadic lists (None: some size or a
    literal list is rank-specific)."""
    lists: list[SizeList] = [s for _n, s in sub.inputs if s.items]
    all_lists: list[SizeList] = list(lists)
    for n in (*sub.lhs.nodes(), *sub.rhs.nodes()):
        for k, v in n.attrs:
            if isinstance(v, SizeList):
                if k == "dims":
                    if v.items and v.items != (0,):
                        return None
                    continue
                if k == "perm":
                    return None
                all_lists.append(v)
                lists.append(v)
            elif k == "perm" and not isinstance(v, str | tuple):
                return None
    if sub.conditions or not lists:
        return None
    names: dict[str, tuple[SizeExpr, ...]] = {}
    for s in lists:
        if not all(isinstance(e, str) for e in s.items) or len(set(s.items)) != len(s.items):
            return None
        for e in s.items:
            if names.setdefault(e, s.items) != s.items:  # type: ignore[arg-type]
                return None
    text = sub.normalized_text
    for items in sorted({s.items for s in lists}, key=len, reverse=True):
        text = text.replace("[" + ", ".join(map(str, items)) + "]", f"[{items[0]}...]")
    lines = text.split("\n")
    return "\n".join([lines[0]] + ["  " + line for line in lines[1:]]) + "\n"


def generalize(pairs: Sequence[Pair], rank: int, shapes: Mapping[str, tuple[int, ...]],
               name: str, prover: Prover, budget: int = GROUP_PROOFS) -> Outcome:
    """Steps 1-5 of the module docstring for one group, with its fallbacks."""
    out = Outcome()
    start = time.perf_counter()
    run = _Budget(prover, out, budget)
    has_perm = any(m.op == "transpose" for m in pairs[0][0].nodes())
    tries: list[tuple[bool, list[list[Pair]]]] = []
    if has_perm:
        tries.append((True, [list(pairs)]))
        split: dict[tuple[object, ...], list[Pair]] = {}
        for p in pairs:
            split.setdefault(perm_literals(p), []).append(p)
        tries.append((False, list(split.values())))
    else:
        tries.append((False, [list(pairs)]))
    remaining = list(pairs)
    for lift_perms, groups in tries:
        left: list[Pair] = []
        for k, group in enumerate(groups):
            if not any(p in remaining for p in group):
                continue
            d = _draft(group, rank, shapes, lift_perms)
            got = _generalize_draft(d, run, f"{name}_{k}") if d is not None else None
            if got is None:
                left += [p for p in group if p in remaining]
                continue
            lifted = _lifted(got)
            if lifted is not None and not run.expired:
                (v,) = parse_substitutions(lifted, "<generated>")
                if run(v).verdict == PROVED:
                    got = v
            out.general.append((got, list(group)))
        remaining = left
        if not remaining:
            out.seconds = time.perf_counter() - start
            return out
    for k, (lhs, rhs) in enumerate(remaining):
        spent = " (budget of prover calls spent)" if run.expired else ""
        out.failures.append(f"{name}: no general form{spent} for {lhs} => {rhs}")
        conc = _concrete(lhs, rhs, shapes, f"{name}_c{k}")
        res = run(conc)
        if res.verdict == PROVED:
            out.concrete.append((conc, [(lhs, rhs)]))
        elif res.verdict == REFUTED:
            out.refuted += 1
        else:
            out.unknown += 1
    out.seconds = time.perf_counter() - start
    return out


def _generalize_draft(d: _Draft, run: _Budget, name: str) -> Substitution | None:
    """Steps 3-4 for one draft: CEGIS over the right-side alternatives (inequalities first,
    then once equalities first), the most general result, tightened."""
    results: list[tuple[tuple[int, int], Substitution, Node]] = []

    def attempt(rhs: Node, equalities_first: bool) -> None:
        d.rhs, d.conditions = rhs, []
        d.params = list(d.lhs_params)
        d.lhs = d.lhs_original or d.lhs
        found = _cegis(d, run, name, equalities_first)
        if found is not None:  # fewer parameters fixed by `p == t`, then fewer conditions
            results.append(((len(d.lhs_params) - len(d.params), len(found.conditions)),
                            found, rhs))

    def clean() -> bool:
        return any(r[0] == (0, 0) for r in results)

    for rhs in d.alternatives:
        if run.expired or clean():
            break
        attempt(rhs, False)
    if not run.expired and not clean():
        attempt(min(results, key=lambda r: r[0])[2] if results else d.alternatives[0], True)
    got = _most_general([(score, sub) for score, sub, _rhs in results])
    return _tightened(got, d, run) if got is not None else None


def _with_param(sub: Substitution, p: str, t: SizeExpr) -> Substitution | None:
    """`sub` with t put for the parameter p (and a condition comparing p with t dropped)."""
    def f(sl: SizeList) -> SizeList:
        return SizeList(tuple(substitute(e, p, t) for e in sl.items), sl.variadic)

    conds = [Condition(c.op, substitute(c.lhs, p, t), substitute(c.rhs, p, t))
             for c in sub.conditions if {c.lhs, c.rhs} != {p, t}]
    lines = [f"subst {sub.name}:", "  inputs " + ", ".join(f"{n}{s}" for n, s in sub.inputs)]
    if sub.perms:
        lines.append("  perms " + ", ".join(sub.perms))
    if conds:
        lines.append("  if " + " and ".join(str(c) for c in conds))
    lines.append(f"  {_map_lists(sub.lhs, f)} => {_map_lists(sub.rhs, f)}")
    try:
        (out,) = parse_substitutions("\n".join(lines) + "\n", "<generated>")
    except ParseError:
        return None
    return out


def _tightened(sub: Substitution, d: _Draft, run: _Budget) -> Substitution:
    """Put t for a parameter p wherever p == t in every instance and the result is proven and
    has every sampled instance of `sub` (the shape rules already forced p == t): a bound
    `p >= t`, or a reshape size left free, becomes the size itself."""
    sizes_at: dict[int, list[SizeExpr]] = {}
    for _n, s in d.inputs:
        for k, e in enumerate(s.items):
            sizes_at.setdefault(k, []).append(e)
    pairs: list[tuple[str, SizeExpr]] = [(str(c.lhs), c.rhs) for c in sub.conditions
                                         if c.op in ("<=", ">=") and isinstance(c.lhs, str)]
    constrained = {p for p, _t in pairs}
    for p, k in d.params:
        if p not in constrained:
            pairs += [(p, t) for t in sizes_at.get(k, [])]
    params = {p for p, _k in d.params}
    pairs.sort(key=lambda pt: bool(names_in(pt[1]) & params))  # sizes and constants first
    for p, t in pairs:
        if run.expired:
            break
        if not _fits(t, d.envs, [env.get(p, -1) for env in d.envs]):
            continue
        names = {n for node in (*sub.lhs.nodes(), *sub.rhs.nodes()) for _k, v in node.attrs
                 if isinstance(v, SizeList) for e in v.items for n in names_in(e)}
        if p not in names:
            continue
        cand = _with_param(sub, p, t)
        if cand is None or run(cand).verdict != PROVED:
            continue
        evidence = sample(sub, count=6, tries=30)
        if evidence and all(has_instance(cand, i) for i in evidence):
            sub = cand
    return sub


def _most_general(results: list[tuple[tuple[int, int], Substitution]]) -> Substitution | None:
    """The proven form that has every sampled instance of the others (inequalities that the
    shape rules make equalities are then written as equalities), else the best scored."""
    if not results:
        return None
    ranked = [s for _score, s in sorted(results, key=lambda r: (r[0][1], r[0][0]))]
    evidence = {id(s): sample(s, count=6, tries=30) for s in ranked}
    for cand in ranked:
        if all(evidence[id(other)] and all(has_instance(cand, i) for i in evidence[id(other)])
               for other in ranked if other is not cand):
            return cand
    return min(results, key=lambda r: r[0])[1]


def _concrete(lhs: Node, rhs: Node, shapes: Mapping[str, tuple[int, ...]], name: str
              ) -> Substitution:
    used = [n for n in ("x", "y", "z", "v") if any(m.op == "input" and m.name == n
                                                   for m in lhs.nodes())]
    decl = ", ".join(f"{n}[{', '.join(map(str, shapes[n]))}]" for n in used)
    (s,) = parse_substitutions(f"subst {name}:\n  inputs {decl}\n  {lhs} => {rhs}\n",
                               "<generated>")
    return s
