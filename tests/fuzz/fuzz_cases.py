"""Random indexing maps as text, and the differential check of one case.

`generate(rng)` writes a random map (constraints; dimension, range and runtime variables; nested
floordiv / ceildiv / mod / min / max; negative coefficients and constants; now and then a very
deep expression or a divisor outside the contract). `check(rng, text)` runs verifidx on it (the
system under test) and compares every answer with `fuzz_oracle` by full enumeration: printing,
simplify, equal, is_empty, compose, rescale_symbols, remove_unused_symbols. It returns the
findings: a wrong result or a crash (any exception other than a clear ParseError for input
outside the contract).
"""

from __future__ import annotations

import random
import traceback
from collections import Counter
from dataclasses import dataclass, field

import fuzz_oracle as oracle

import verifidx as vx
from verifidx.core.expr import MAX_DEPTH

#: Enumeration limit for one map's box (the oracle is exact up to here).
BOX_LIMIT = 6_000
#: Solver budget per query: verifidx may answer unknown, never wrongly.
TIMEOUT_MS = 2_000
OPERATIONS = ("simplify", "equal", "is_empty", "compose", "rescale", "remove_unused")


# -- generation --------------------------------------------------------------------------------


@dataclass
class _Sig:
    nd: int
    ns: int
    nrt: int

    def names(self) -> list[str]:
        return ([f"d{i}" for i in range(self.nd)] + [f"s{i}" for i in range(self.ns)]
                + [f"rt{i}" for i in range(self.nrt)])


def _box(rng: random.Random, count: int, budget: int) -> list[tuple[int, int]]:
    out = []
    for _ in range(count):
        lo = rng.randint(-6, 6)
        width = rng.choice([0, 1, 2, 3, 4, 5, 7, 9, 12])
        while width and (width + 1) * max(1, len(out)) > budget:
            width //= 2
        if rng.random() < 0.02:
            width = -1  # an empty interval
        out.append((lo, lo + width))
    return out


def _const(rng: random.Random) -> str:
    v = rng.choice([0, 1, 2, 3, 4, 5, 6, 7, 8, 12, 16, -1, -2, -3, -5, -8])
    return str(v) if v >= 0 else f"({v})" if rng.random() < 0.5 else f"-{-v}"


def _divisor(rng: random.Random, op: str, names: list[str], bad: bool) -> str:
    if bad:
        return rng.choice([*names, "0", "(1 - 1)", "(d0 + 1)" if "d0" in names else "0",
                           "-3" if op == "mod" else "0"])
    if op == "mod":
        return str(rng.choice([1, 2, 3, 4, 5, 6, 7, 8, 12]))
    v = rng.choice([1, 2, 3, 4, 5, 7, 8, -1, -2, -3, -4])
    return str(v) if v > 0 else f"({v})" if rng.random() < 0.5 else f"-{-v}"


def _expr(rng: random.Random, names: list[str], depth: int, bad: bool = False) -> str:
    if depth <= 0 or rng.random() < 0.25:
        if names and rng.random() < 0.75:
            return rng.choice(names)
        return _const(rng)
    kind = rng.choices(["add", "sub", "mulc", "mulv", "neg", "div", "min", "max"],
                       [5, 3, 4, 1, 1, 6, 1, 1])[0]
    a = _expr(rng, names, depth - 1, bad)
    if kind == "add":
        return f"{a} + {_expr(rng, names, depth - 1, bad)}" if rng.random() < 0.5 else \
            f"({a} + {_expr(rng, names, depth - 1, bad)})"
    if kind == "sub":
        return f"({a} - {_expr(rng, names, depth - 1, bad)})"
    if kind == "mulc":
        return f"({a}) * {_const(rng)}" if rng.random() < 0.5 else f"{_const(rng)} * ({a})"
    if kind == "mulv":
        return f"({a}) * ({_expr(rng, names, depth - 1, bad)})"
    if kind == "neg":
        return f"-({a})"
    if kind in ("min", "max"):
        return f"{kind}({a}, {_expr(rng, names, depth - 1, bad)})"
    op = rng.choices(["floordiv", "mod", "ceildiv", "/"], [4, 4, 2, 1])[0]
    return f"({a}) {op} {_divisor(rng, op, names, bad and rng.random() < 0.5)}"


def _deep(rng: random.Random, names: list[str], levels: int) -> str:
    e = rng.choice(names) if names else "1"
    for _ in range(levels):
        step = rng.choice(["mod", "div", "neg", "min", "add"])
        if step == "mod":
            e = f"({e} * 3 + 1) mod 7"
        elif step == "div":
            e = f"({e} + 1) floordiv 2"
        elif step == "neg":
            e = f"-({e})"
        elif step == "min":
            e = f"min({e}, {rng.randint(-3, 9)})"
        else:
            e = f"({e} + {rng.choice(names) if names else 1})"
    return e


def _map_text(sig: _Sig, bounds: list[tuple[int, int]], results: list[str],
              constraints: list[tuple[str, int, int]]) -> str:
    names = sig.names()
    head = f"({', '.join(names[:sig.nd])})"
    if sig.ns:
        head += f"[{', '.join(names[sig.nd:sig.nd + sig.ns])}]"
    if sig.nrt:
        head += "{" + ", ".join(names[sig.nd + sig.ns:]) + "}"
    items = [f"{n} in [{lo}, {hi}]" for n, (lo, hi) in zip(names, bounds)]
    items += [f"{e} in [{lo}, {hi}]" for e, lo, hi in constraints]
    text = f"{head} -> ({', '.join(results)})"
    return text + (", domain: " + ", ".join(items) if items else "")


def generate(rng: random.Random, sig: _Sig | None = None, clean: bool = False) -> str:
    """A random map's text (`clean`: no divisor outside the contract, no very deep term)."""
    if sig is None:
        sig = _Sig(rng.randint(0, 2), rng.choice([0, 0, 1, 1, 2]), rng.choice([0, 0, 0, 1]))
        if sig.nd + sig.ns + sig.nrt == 0:
            sig.nd = 1
    names = sig.names()
    bounds = _box(rng, len(names), BOX_LIMIT)
    bad = not clean and rng.random() < 0.02
    results = []
    for _ in range(rng.randint(0, 2) or 1):
        if not clean and rng.random() < 0.03:
            results.append(_deep(rng, names, rng.randint(8, 40)))
        else:
            results.append(_expr(rng, names, rng.randint(1, 4), bad))
    constraints: list[tuple[str, int, int]] = []
    for _ in range(rng.choice([0, 0, 1, 1, 2, 3, 4])):
        pick = rng.random()
        if pick < 0.35 and names:  # residue constraints exercise the merge of mod constraints
            v = rng.choice(names)
            c = rng.choice([2, 3, 4, 6, 12])
            k = rng.randint(0, c - 1)
            constraints.append((f"{v} mod {c}", k, k if rng.random() < 0.8 else
                                rng.randint(k, c - 1)))
        else:
            e = _expr(rng, names, rng.randint(1, 3), bad)
            if e in names:
                e = f"({e})"  # a bare name would give the variable's bounds a second time
            lo = rng.randint(-8, 8)
            constraints.append((e, lo, lo + rng.randint(0, 10)))
    return _map_text(sig, bounds, results, constraints)


def variant(rng: random.Random, text: str) -> str:
    """A map of the same signature to compare with `text`: often equal, often not."""
    if rng.random() < 0.3:
        return text
    for _ in range(3):  # perturb one integer of the text
        spots = [i for i, ch in enumerate(text) if ch.isdigit() and not text[i - 1].isalpha()
                 and not text[i - 1].isdigit()]
        if spots:
            i = rng.choice(spots)
            j = i
            while j < len(text) and text[j].isdigit():
                j += 1
            return text[:i] + str(int(text[i:j]) + rng.choice([-1, 1, 2])) + text[j:]
    return text


# -- checking ----------------------------------------------------------------------------------


@dataclass
class Report:
    cases: int = 0
    wrong: list[str] = field(default_factory=list)
    crashes: list[str] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)
    #: verdicts that are neither True nor False (allowed: never a claim)
    unknown: int = 0

    def merge(self, other: Report) -> None:
        self.cases += other.cases
        self.unknown += other.unknown
        self.wrong += other.wrong
        self.crashes += other.crashes
        self.counts.update(other.counts)


class _Skip(Exception):
    pass


def _relation(text: str) -> set:  # type: ignore[type-arg]
    m = oracle.parse(text)
    r = oracle.relation(m, BOX_LIMIT * 4)
    if r is None:
        raise _Skip("box too large to enumerate")
    return r


def _drop_rt(rel: set) -> set:  # type: ignore[type-arg]
    return {(d, res) for _rt, d, res in rel}


def check(rng: random.Random, text: str, report: Report, op: str | None = None) -> None:
    """One differential case; appends to `report`."""
    report.cases += 1
    op = op or rng.choice(OPERATIONS)
    try:
        omap = oracle.parse(text)
        nodes = omap.results + [e for e, _lo, _hi in omap.constraints]
        valid = all(oracle.divisors_valid(n) for n in nodes)
        deep = max((oracle.depth(n) for n in nodes), default=1) > MAX_DEPTH // 2
        try:
            m = vx.parse_map(text)
        except vx.ParseError as err:
            if not valid and "divisor" in err.message:
                report.counts["rejected: divisor"] += 1
                return
            if deep and "nested" in err.message:
                report.counts["rejected: depth"] += 1
                return
            report.wrong.append(f"parse rejected a valid map ({err}): {text}")
            return
        if not valid:
            report.wrong.append(f"parse accepted a divisor outside the contract: {text}")
            return
        rel = _relation(text)
        printed = str(m)
        if _relation(printed) != rel:
            report.wrong.append(f"printing changed the relation: {text}\n  printed: {printed}")
        if vx.parse_map(printed) != m:
            report.wrong.append(f"parse(print(m)) != m: {text}\n  printed: {printed}")
        report.counts[op] += 1
        _OPS[op](rng, text, m, rel, report)
    except _Skip:
        report.counts["skipped (box)"] += 1
    except Exception:  # noqa: BLE001 - every other exception is a finding
        report.crashes.append(f"{op}: {text}\n{traceback.format_exc(limit=6)}")


def _simplify(rng: random.Random, text: str, m: vx.IndexingMap, rel: set, report: Report
              ) -> None:
    s = m.simplify()
    got = _relation(str(s))
    if got != rel:
        report.wrong.append(f"simplify changed the relation: {text}\n  simplified: {s}")


def _equal(rng: random.Random, text: str, m: vx.IndexingMap, rel: set, report: Report) -> None:
    other_text = variant(rng, text)
    try:
        other = vx.parse_map(other_text)
    except vx.ParseError:
        report.counts["equal: variant rejected"] += 1
        return
    if rng.random() < 0.3:
        other = other.simplify()
    truth = _relation(str(other)) == rel
    v = vx.equal(m, other, TIMEOUT_MS)
    report.counts[f"equal: {'same' if truth else 'different'} relations"] += 1
    if v.holds is None:
        report.counts["equal: unknown"] += 1
        report.unknown += 1
    elif v.holds != truth:
        report.wrong.append(f"equal said {v.holds}, enumeration says {truth}: {text}\n"
                            f"  other: {other}\n  {v.message}")


def _is_empty(rng: random.Random, text: str, m: vx.IndexingMap, rel: set, report: Report
              ) -> None:
    v = vx.is_empty(m, TIMEOUT_MS)
    report.counts["is_empty: " + ("empty" if not rel else "not empty")] += 1
    if v.holds is None:
        report.counts["is_empty: unknown"] += 1
        report.unknown += 1
    elif v.holds != (not rel):
        report.wrong.append(f"is_empty said {v.holds}, enumeration found {len(rel)} tuples: "
                            f"{text}")


def _compose(rng: random.Random, text: str, m: vx.IndexingMap, rel: set, report: Report
             ) -> None:
    if not m.num_results or m.is_known_empty or m.is_undefined:
        report.counts["compose: skipped"] += 1
        return
    sig = _Sig(m.num_results, rng.choice([0, 0, 1]), rng.choice([0, 0, 1]))
    second_text = generate(rng, sig, clean=True)
    second = vx.parse_map(second_text)
    try:
        composed = vx.compose(m, second)
    except vx.DepthError:  # the documented limit (docs/semantics.md), a clear error
        report.counts["compose: rejected: depth"] += 1
        return
    expected = oracle.compose_relation(rel, _relation(second_text))
    if _relation(str(composed)) != expected:
        report.wrong.append(f"compose is wrong: first {text}\n  second {second_text}\n"
                            f"  got {composed}")
    simplified = composed.simplify()
    if _relation(str(simplified)) != expected:
        report.wrong.append(f"simplify of a composition is wrong: {composed}\n"
                            f"  simplified: {simplified}")


def _rescale(rng: random.Random, text: str, m: vx.IndexingMap, rel: set, report: Report
             ) -> None:
    try:
        r = m.rescale_symbols()
    except vx.DepthError:  # `s -> s' * c + k` nests two levels deeper: the documented limit
        report.counts["rescale: rejected: depth"] += 1
        return
    if _relation(str(r)) != rel:
        report.wrong.append(f"rescale_symbols changed the relation: {text}\n  got: {r}")


def _remove_unused(rng: random.Random, text: str, m: vx.IndexingMap, rel: set, report: Report
                   ) -> None:
    r = m.remove_unused_symbols()
    got = _relation(str(r))
    if r.num_rt_vars == m.num_rt_vars:
        ok = got == rel
    else:  # runtime variables left: compare (dims, results), the tuples every rt value gives
        ok = _drop_rt(got) == _drop_rt(rel)
    if not ok:
        report.wrong.append(f"remove_unused_symbols changed the relation: {text}\n  got: {r}")


_OPS = {"simplify": _simplify, "equal": _equal, "is_empty": _is_empty, "compose": _compose,
        "rescale": _rescale, "remove_unused": _remove_unused}


def run(seed: int, cases: int) -> Report:
    report = Report()
    rng = random.Random(seed)
    for _ in range(cases):
        check(rng, generate(rng), report)
    return report
