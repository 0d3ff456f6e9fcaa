"""Random maps with sizes as text, and the differential check of one such case.

A map with sizes (`(d0, d1)<N, M> -> (d0 * N + d1), domain: ..., N in [1, 8], ...`) denotes
one relation per assignment of its sizes, and verifidx's claims about it hold for every
assignment (docs/semantics.md, Sizes). `generate(rng)` writes one: random expressions over
index variables and sizes (products by size expressions, divisions by positive size
expressions, offsets), the shapes the front ends give (reshapes `d0 * N + d1` with `d1 < N`,
splits `d0 floordiv N` / `d0 mod N`, reverses `N - 1 - d0`, offsets of concatenations,
digits of products of sizes), bounds by sizes (`d0 - N in [.., -1]`) and constraints on sizes
alone; now and then a divisor that may be 0 or mentions an index variable, or a product of
two index variables, which must be rejected.

`check(rng, text, report)` instantiates the sizes at several assignments (every one when the
intervals are small, else corners and random values) and compares verifidx's answers with
`fuzz_oracle`'s enumeration at each: parsing (accept / reject), printing, `with_sizes`, and
one of simplify, equal, is_empty, compose, rescale_symbols, remove_unused_symbols. A True
verdict must hold at every assignment tried; a False one must come with sizes at which the
oracle sees the difference (or the point).
"""

from __future__ import annotations

import functools
import random
import traceback

import fuzz_cases
import fuzz_oracle as oracle

import verifidx as vx
from verifidx.core.expr import MAX_DEPTH

#: Points of one map's box (each assignment of the sizes enumerates it once).
BOX_LIMIT = 600
#: Size assignments checked per case; below this many in the grid, every one.
ASSIGNMENTS = 8
#: Size grids up to this many assignments decide a divisor's validity exhaustively.
GRID_LIMIT = 4096
SIZE_NAMES = ("N", "M", "b")
SIZE_INTERVALS = [(1, 1), (1, 2), (1, 3), (1, 4), (2, 5), (1, 8), (3, 6), (4, 4), (2, 3),
                  (1, 16), (2, 64), (1, 2147483647)]
#: Most negative lower end written for a bound by a size (`d0 - N in [-BIG, -1]`).
BIG = 2147483647
OPERATIONS = fuzz_cases.OPERATIONS

Sizes = dict[str, tuple[int, int]]
Assignment = dict[str, int]
Relation = set[tuple[tuple[int, ...], ...]]
#: the input's relation per assignment (keyed by `_key`)
Rels = dict[tuple[tuple[str, int], ...], Relation]


# -- generation --------------------------------------------------------------------------------


def _size_leaf(rng: random.Random, sizes: Sizes) -> str:
    return rng.choice(sorted(sizes))


def _size_expr(rng: random.Random, sizes: Sizes, positive: bool = True) -> str:
    """A size expression, positive on its naive interval unless `positive` is False (then it
    may reach 0 or below: `N - lo(N)`)."""
    n = _size_leaf(rng, sizes)
    lo = sizes[n][0]
    if not positive:
        return rng.choice([f"({n} - {lo})", f"({n} - {lo + 1})",
                           f"({n} - {_size_leaf(rng, sizes)})"])
    kind = rng.choices(["n", "nc", "nm", "plus", "minus", "nn"], [6, 2, 2, 2, 1, 1])[0]
    if kind == "n":
        return n
    if kind == "nc":
        return f"({n} * {rng.choice([2, 3, 4])})"
    if kind == "nm":
        return f"({n} * {_size_leaf(rng, sizes)})"
    if kind == "plus":
        return f"({n} + {rng.choice([1, 2, 3])})"
    if kind == "minus" and lo > 1:
        return f"({n} - {rng.randint(1, lo - 1)})"
    return f"({n} * {n})" if kind == "nn" else n


def _expr(rng: random.Random, names: list[str], sizes: Sizes, depth: int, bad: bool) -> str:
    if depth <= 0 or rng.random() < 0.25:
        r = rng.random()
        if names and r < 0.6:
            return rng.choice(names)
        if r < 0.8:
            return _size_leaf(rng, sizes)
        return fuzz_cases._const(rng)
    kind = rng.choices(["add", "sub", "mulc", "mulz", "mulv", "neg", "div", "min", "max"],
                       [5, 3, 3, 3, 1 if bad else 0, 1, 6, 1, 1])[0]
    a = _expr(rng, names, sizes, depth - 1, bad)
    if kind == "add":
        return f"({a} + {_expr(rng, names, sizes, depth - 1, bad)})"
    if kind == "sub":
        return f"({a} - {_expr(rng, names, sizes, depth - 1, bad)})"
    if kind == "mulc":
        return f"({a}) * {fuzz_cases._const(rng)}"
    if kind == "mulz":
        z = _size_expr(rng, sizes)
        return f"({a}) * {z}" if rng.random() < 0.5 else f"{z} * ({a})"
    if kind == "mulv":  # outside the grammar of maps with sizes when both mention index vars
        return f"({a}) * ({_expr(rng, names, sizes, depth - 1, bad)})"
    if kind == "neg":
        return f"-({a})"
    if kind in ("min", "max"):
        return f"{kind}({a}, {_expr(rng, names, sizes, depth - 1, bad)})"
    op = rng.choices(["floordiv", "mod", "ceildiv"], [4, 4, 2])[0]
    if bad and rng.random() < 0.5:
        divisor = rng.choice([_size_expr(rng, sizes, positive=False),
                              *(names[:1] or ["0"]), f"({names[0]} + N)" if names and "N" in
                              sizes else "0"])
    elif rng.random() < 0.6:
        divisor = _size_expr(rng, sizes)
    else:
        divisor = fuzz_cases._divisor(rng, op, names, False)
    return f"({a}) {op} {divisor}"


def _pattern(rng: random.Random, dims: list[str], sizes: Sizes
             ) -> tuple[list[str], list[tuple[str, int, int]]]:
    """Results and constraints of a shape the front ends give, over the first dimensions."""
    n, m = rng.choice(sorted(sizes)), rng.choice(sorted(sizes))
    d0 = dims[0]
    d1 = dims[1] if len(dims) > 1 else d0
    below = (-BIG if rng.random() < 0.5 else -rng.randint(1, 20), -1)
    kind = rng.choice(["reshape", "split", "reverse", "offset", "digits", "cancel", "cancel2",
                       "mod2", "tile", "below", "clamp", "shift", "cancel3", "flat3"])
    if kind == "below":  # a quotient and a remainder that a bound by the size decides
        return [rng.choice([f"{d0} floordiv {n}", f"{d0} mod {n}", f"{d0} ceildiv {n}",
                            f"({n} - 1 - {d0}) floordiv {n}", f"({d0} - {n}) floordiv {n}"])], \
            [(f"{d0} - {n}", *below)]
    if kind == "clamp":
        return [rng.choice([f"min({d0}, {n} - 1)", f"max({n} - 1 - {d0}, 0)",
                            f"min({d0} + {m}, {n} + {m} - 1)"])], [(f"{d0} - {n}", *below)]
    if kind == "shift":
        return [rng.choice([f"({d0} + {n}) mod {n}", f"({d0} + {n} * {d1}) mod {n}",
                            f"({d0} - {n}) mod {n}", f"(-{d0}) mod {n}"])], []
    if kind == "cancel3":
        c = rng.choice(["1", "2"])
        return [f"({d0} * ({n} + {c})) floordiv ({n} + {c})",
                f"({d0} * ({n} + {c}) + {d1}) mod ({n} + {c})"], [(f"{d1} - {n} - {c}", *below)]
    if kind == "flat3":  # a row-major index over N x M, split back
        flat = f"{d0} * ({n} * {m}) + {d1} * {m}"
        return [f"({flat}) floordiv {m}", f"(({flat}) floordiv {m}) mod {n}",
                f"({flat}) floordiv ({n} * {m})"], [(f"{d1} - {n}", *below)]
    if kind == "reshape":
        return [f"{d0} * {n} + {d1}"], [(f"{d1} - {n}", *below)]
    if kind == "split":
        return [f"{d0} floordiv {n}", f"{d0} mod {n}"], [(f"{d0} - {n} * {m}", *below)]
    if kind == "reverse":
        return [f"{n} - 1 - {d0}"], [(f"{d0} - {n}", *below)]
    if kind == "offset":
        return [f"{d0} - {n}"], [(f"{d0} - {n}", 0, rng.choice([3, 10, BIG]))]
    if kind == "digits":
        return [f"({d0} floordiv ({n} * {m})) * {n} + ({d0} floordiv {m}) mod {n}"], []
    if kind == "cancel":
        return [f"({d0} * {n}) floordiv {n}"], []
    if kind == "cancel2":
        return [f"({d0} * {n} + {d1}) floordiv {n}", f"({d0} * {n} + {d1}) mod {n}"], \
            [(f"{d1} - {n}", *below)]
    if kind == "mod2":
        return [f"({d0} mod ({n} * {m})) mod {n}", f"({d0} mod ({n} * {m})) floordiv {n}"], []
    c = rng.choice([2, 4])  # a tile: d0 * c + d1 with d1 < c, read back over N
    return [f"(({d0} * {c} + {d1}) floordiv {n}) * {n} + ({d0} * {c} + {d1}) mod {n}"], \
        [(f"{d1}", 0, c - 1)]


def _mutated(rng: random.Random, results: list[str], constraints: list[tuple[str, int, int]],
             sizes: Sizes) -> tuple[list[str], list[tuple[str, int, int]]]:
    """The shape with one occurrence of a size replaced by another size or a constant, or
    its bound by a size dropped (held at some sizes only, or at none)."""
    if constraints and rng.random() < 0.3:
        return results, []
    texts = results + [e for e, _lo, _hi in constraints]
    spots = [(i, j) for i, t in enumerate(texts) for j in range(len(t))
             if t[j] in sizes and (j == 0 or not t[j - 1].isalnum())
             and (j + 1 == len(t) or not t[j + 1].isalnum())]
    if not spots:
        return results, constraints
    i, j = rng.choice(spots)
    new = rng.choice([z for z in sizes if z != texts[i][j]] or ["2"]) if rng.random() < 0.6 \
        else str(rng.choice([1, 2, 3, 4]))
    texts[i] = texts[i][:j] + new + texts[i][j + 1:]
    k = len(results)
    return texts[:k], [(e, lo, hi) for e, (_e, lo, hi) in zip(texts[k:], constraints)]


def generate(rng: random.Random, nd: int | None = None, clean: bool = False,
             sizes: Sizes | None = None) -> str:
    """A random map's text with one to three sizes (`clean`: inside the grammar; `sizes`: use
    these names and intervals)."""
    if nd is None:
        nd = rng.choice([1, 1, 2, 2, 2, 3])
    ns, nrt = rng.choice([0, 0, 0, 1]), rng.choice([0, 0, 0, 0, 1])
    sig = fuzz_cases._Sig(nd, ns, nrt)
    names = sig.names()
    if sizes is None:
        chosen = rng.sample(SIZE_NAMES, rng.choice([1, 1, 2, 2, 3]))
        sizes = {z: rng.choice(SIZE_INTERVALS) for z in chosen}
    bounds = []
    for _ in names:  # small boxes: each assignment of the sizes enumerates them
        lo = 0 if rng.random() < 0.7 else rng.randint(-3, 3)
        width = rng.choice([0, 1, 2, 3, 4, 5, 7, 9, 11])
        while width and (width + 1) * max(1, len(bounds)) > BOX_LIMIT // 4:
            width //= 2
        bounds.append((lo, lo + width))
    bad = not clean and rng.random() < 0.04
    results: list[str] = []
    constraints: list[tuple[str, int, int]] = []
    if nd and rng.random() < 0.45:
        results, constraints = _pattern(rng, names[:nd], sizes)
        if rng.random() < 0.35:  # one size of the shape replaced: its rule's condition may
            results, constraints = _mutated(rng, results, constraints, sizes)  # fail
        if rng.random() < 0.3:  # wrapped in one more operation
            i = rng.randrange(len(results))
            results[i] = rng.choice([f"({results[i]}) floordiv {_size_expr(rng, sizes)}",
                                     f"({results[i]}) mod {_size_expr(rng, sizes)}",
                                     f"({results[i]}) + {_expr(rng, names, sizes, 1, bad)}",
                                     f"({results[i]}) * {_size_expr(rng, sizes)}",
                                     f"({results[i]}) floordiv 2"])
    if not results or rng.random() < 0.3:
        for _ in range(rng.randint(1, 2)):
            results.append(_expr(rng, names, sizes, rng.randint(1, 4), bad))
    for _ in range(rng.choice([0, 0, 1, 1, 2, 3])):
        pick = rng.random()
        if pick < 0.25 and names:
            v = rng.choice(names)
            c = rng.choice([2, 3, 4])
            k = rng.randint(0, c - 1)
            constraints.append((f"{v} mod {c}", k, k))
        elif pick < 0.5 and names:  # a bound by a size expression
            v = rng.choice(names)
            z = _size_expr(rng, sizes)
            if rng.random() < 0.5:
                constraints.append((f"{v} - {z}", -BIG if rng.random() < 0.5 else -12, -1))
            else:
                constraints.append((f"{v} - {z}", rng.randint(-4, 0), rng.randint(0, 6)))
        elif pick < 0.65:  # on sizes alone: empty at the sizes that violate it
            a, b = rng.choice(sorted(sizes)), rng.choice(sorted(sizes))
            constraints.append(rng.choice([(f"{a} - {b}", 0, 0), (f"{a} mod 2", 0, 0),
                                           (f"{a}", 2, 3), (f"{a} + {b}", 2, 6)]))
        else:
            e = _expr(rng, names, sizes, rng.randint(1, 3), bad)
            if e in names or e in sizes:
                e = f"({e})"  # a bare name would be read as its bounds
            lo = rng.randint(-8, 8)
            constraints.append((e, lo, lo + rng.randint(0, 12)))
    return _text(sig, bounds, sizes, results, constraints)


def _text(sig: fuzz_cases._Sig, bounds: list[tuple[int, int]], sizes: Sizes,
          results: list[str], constraints: list[tuple[str, int, int]]) -> str:
    names = sig.names()
    head = f"({', '.join(names[:sig.nd])})"
    if sig.ns:
        head += f"[{', '.join(names[sig.nd:sig.nd + sig.ns])}]"
    if sig.nrt:
        head += "{" + ", ".join(names[sig.nd + sig.ns:]) + "}"
    head += "<" + ", ".join(sizes) + ">"
    items = [f"{n} in [{lo}, {hi}]" for n, (lo, hi) in zip(names, bounds)]
    items += [f"{z} in [{lo}, {hi}]" for z, (lo, hi) in sizes.items()]
    items += [f"{e} in [{lo}, {hi}]" for e, lo, hi in constraints]
    return f"{head} -> ({', '.join(results)}), domain: " + ", ".join(items)


def assignments(rng: random.Random, intervals: Sizes, count: int = ASSIGNMENTS
                ) -> tuple[list[dict[str, int]], bool]:
    """Size assignments to check, and whether they are every one of the grid: all of a small
    grid, else every size at its lower end, at its upper end, at lo + 1, and random values
    (small ones more often: the corners of a reshape live there)."""
    names = sorted(intervals)
    grid = 1
    for lo, hi in intervals.values():
        grid *= hi - lo + 1
    if grid <= count:
        out = [{}]  # type: list[dict[str, int]]
        for n in names:
            lo, hi = intervals[n]
            out = [{**a, n: v} for a in out for v in range(lo, hi + 1)]
        return out, True
    picks = [{n: intervals[n][0] for n in names}, {n: intervals[n][1] for n in names},
             {n: min(intervals[n][0] + 1, intervals[n][1]) for n in names}]
    while len(picks) < count:
        a = {}
        for n in names:
            lo, hi = intervals[n]
            a[n] = rng.randint(lo, min(hi, lo + 9)) if rng.random() < 0.7 else rng.randint(lo, hi)
        picks.append(a)
    unique = []
    for a in picks:
        if a not in unique:
            unique.append(a)
    return unique, False


# -- checking ----------------------------------------------------------------------------------


class _Skip(Exception):
    pass


#: The oracle's reading of a text, kept while a case checks it (its compiled form with it).
_parse = functools.lru_cache(maxsize=64)(oracle.parse)


class _Narrowed(Exception):
    """A map verifidx produced does not declare a size assignment its input covers."""


def _intervals(om: oracle.OMap) -> Sizes:
    return {name: (lo, hi) for name, lo, hi in om.sizes}


def _relation(om: oracle.OMap, at: Assignment) -> Relation:
    """The member of the family at `at` (restricted to the sizes `om` declares)."""
    mine = {name: at[name] for name, _lo, _hi in om.sizes if name in at}
    for name, lo, hi in om.sizes:
        if name not in mine or not lo <= mine[name] <= hi:
            raise _Narrowed(f"{name} = {at.get(name)} is outside the declared [{lo}, {hi}]")
    r = oracle.relation(om, BOX_LIMIT * 8, mine)
    if r is None:
        raise _Skip("box too large to enumerate")
    return r


def _rel_text(text: str, at: Assignment) -> Relation:
    return _relation(_parse(text), at)


def check(rng: random.Random, text: str, report: fuzz_cases.Report, op: str | None = None
          ) -> None:
    """One differential case over a map with sizes; appends to `report`."""
    report.cases += 1
    op = op or rng.choice(OPERATIONS)
    try:
        _check(rng, text, report, op)
    except _Skip:
        report.counts["sized: skipped (box)"] += 1
    except _Narrowed as err:
        report.wrong.append(f"sized {op}: a result declares fewer sizes than its input ({err}):"
                            f" {text}")
    except Exception:  # noqa: BLE001 - every other exception is a finding
        report.crashes.append(f"sized {op}: {text}\n{traceback.format_exc(limit=6)}")


def _check(rng: random.Random, text: str, report: fuzz_cases.Report, op: str) -> None:
    omap = _parse(text)
    intervals = _intervals(omap)
    grid = oracle.size_points(omap, GRID_LIMIT)
    samples, every = assignments(rng, intervals)
    status = oracle.divisor_status(omap, grid if grid is not None else samples)
    linear = oracle.products_linear(omap)
    nodes = omap.results + [e for e, _lo, _hi in omap.constraints]
    deep = max((oracle.depth(n) for n in nodes), default=1) > MAX_DEPTH // 2
    try:
        m = vx.parse_map(text)
    except vx.ParseError as err:
        if status == "valid" and linear and not deep:
            report.wrong.append(f"sized: parse rejected a valid map ({err}): {text}")
        else:
            why = ("divisor" if status != "valid" else "product" if not linear else "depth")
            report.counts[f"sized: rejected: {why}"] += 1
        return
    if status == "invalid":
        report.wrong.append(f"sized: parse accepted a divisor below 1 at some size or over "
                            f"an index variable: {text}")
        return
    if not linear:
        report.counts["sized: accepted: product of index variables (canonicalized)"] += 1
    if [(z.name, z.bounds.lo, z.bounds.hi) for z in m.sizes] != sorted(omap.sizes):
        report.wrong.append(f"sized: parse changed the sizes ({m.sizes}): {text}")
        return
    rels: Rels = {}
    printed = str(m)
    if vx.parse_map(printed) != m:
        report.wrong.append(f"sized: parse(print(m)) != m: {text}\n  printed: {printed}")
    printed_map = _parse(printed)
    for at in samples:
        key = tuple(sorted(at.items()))
        rels[key] = _relation(omap, at)
        if _relation(printed_map, at) != rels[key]:
            report.wrong.append(f"sized: printing changed the relation at {at}: {text}\n"
                                f"  printed: {printed}")
            return
        fixed = m.with_sizes(at)
        if fixed.sizes or oracle.relation(_parse(str(fixed)), BOX_LIMIT * 8) != rels[key]:
            report.wrong.append(f"sized: with_sizes({at}) is wrong: {text}\n  got: {fixed}")
            return
    report.counts[f"sized: {op}"] += 1
    report.counts["sized: assignments checked"] += len(samples)
    _OPS[op](rng, text, m, samples, every, rels, report)


def _key(at: Assignment) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(at.items()))


def _same_family(name: str, text: str, got: vx.IndexingMap, samples: list[Assignment],
                 rels: Rels, report: fuzz_cases.Report, drop_rt: bool = False) -> None:
    om = _parse(str(got))
    for at in samples:
        r = _relation(om, at)
        want = rels[_key(at)]
        if drop_rt:
            r, want = fuzz_cases._drop_rt(r), fuzz_cases._drop_rt(want)
        if r != want:
            report.wrong.append(f"sized: {name} changed the relation at sizes {at}: {text}\n"
                                f"  got: {got}")
            return


def _simplify(rng: random.Random, text: str, m: vx.IndexingMap, samples: list[Assignment],
              every: bool, rels: Rels, report: fuzz_cases.Report) -> None:
    s = m.simplify()
    _same_family("simplify", text, s, samples, rels, report)
    if s != m:
        report.counts["sized: simplify changed the map"] += 1


def _variant(rng: random.Random, text: str, m: vx.IndexingMap) -> str:
    """Often the simplified map, a size renamed in the results, or one integer perturbed."""
    pick = rng.random()
    if pick < 0.3:
        return str(m.simplify())
    if pick < 0.45 and len(m.sizes) > 1:
        a, b = rng.sample([z.name for z in m.sizes], 2)
        head, sep, rest = text.partition(" -> ")
        body, sep2, domain = rest.partition(", domain: ")
        swapped = body.replace(a, "\0").replace(b, a).replace("\0", b)
        return head + sep + swapped + sep2 + domain
    return fuzz_cases.variant(rng, text)


def _equal(rng: random.Random, text: str, m: vx.IndexingMap, samples: list[Assignment],
           every: bool, rels: Rels, report: fuzz_cases.Report) -> None:
    other_text = _variant(rng, text, m)
    try:
        other = vx.parse_map(other_text)
    except vx.ParseError:
        report.counts["sized: equal: variant rejected"] += 1
        return
    if rng.random() < 0.3:
        other = other.simplify()
    oo = _parse(str(other))
    shared = [at for at in samples if _covers(oo, at)]
    differ = []
    for at in shared:
        try:
            if _relation(oo, at) != rels[_key(at)]:
                differ.append(at)
        except _Narrowed:
            pass
    v = vx.equal(m, other, fuzz_cases.TIMEOUT_MS)
    report.counts[f"sized: equal: {v.label}"] += 1
    if v.holds is None:
        report.unknown += 1
    elif v.holds and differ:
        report.wrong.append(f"sized: equal said True, enumeration differs at sizes {differ[0]}: "
                            f"{text}\n  other: {other}\n  {v.message}")
    elif v.holds is False:
        at = {z.name: (v.counterexample or {}).get(z.name) for z in (*m.sizes, *other.sizes)}
        if None in at.values():
            if not differ and every and len(shared) == len(samples):
                report.wrong.append(f"sized: equal said False without sizes, and the maps agree"
                                    f" at every size: {text}\n  other: {other}\n  {v.message}")
            else:
                report.counts["sized: equal: False without sizes (unconfirmed)"] += 1
            return
        try:
            same = _rel_text(text, at) == _relation(oo, at)
        except _Narrowed:
            report.wrong.append(f"sized: equal's counterexample sizes {at} are outside a map's "
                                f"intervals: {text}\n  other: {other}")
            return
        if same:
            report.wrong.append(f"sized: equal said False at sizes {at}, where the maps agree: "
                                f"{text}\n  other: {other}\n  {v.message}")


def _covers(om: oracle.OMap, at: dict[str, int]) -> bool:
    return all(name in at and lo <= at[name] <= hi for name, lo, hi in om.sizes)


def _is_empty(rng: random.Random, text: str, m: vx.IndexingMap, samples: list[Assignment],
              every: bool, rels: Rels, report: fuzz_cases.Report) -> None:
    v = vx.is_empty(m, fuzz_cases.TIMEOUT_MS)
    some = [at for at in samples if rels[_key(at)]]
    report.counts[f"sized: is_empty: {v.label}"] += 1
    if v.holds is None:
        report.unknown += 1
    elif v.holds and some:
        report.wrong.append(f"sized: is_empty said True, enumeration finds points at sizes "
                            f"{some[0]}: {text}")
    elif v.holds is False:
        at = {z.name: (v.counterexample or {}).get(z.name) for z in m.sizes}
        if None in at.values():
            if not some and every:
                report.wrong.append(f"sized: is_empty said False without sizes, empty at every "
                                    f"size: {text}")
            else:
                report.counts["sized: is_empty: False without sizes (unconfirmed)"] += 1
            return
        if not _rel_text(text, at):
            report.wrong.append(f"sized: is_empty said False at sizes {at}, where the map is "
                                f"empty: {text}\n  {v.message}")


def _compose(rng: random.Random, text: str, m: vx.IndexingMap, samples: list[Assignment],
             every: bool, rels: Rels, report: fuzz_cases.Report) -> None:
    if not m.num_results or m.is_known_empty or m.is_undefined:
        report.counts["sized: compose: skipped"] += 1
        return
    mine = {z.name: (z.bounds.lo, z.bounds.hi) for z in m.sizes}
    theirs = {}
    for name in rng.sample(sorted(mine), rng.randint(0, len(mine))):
        lo, hi = mine[name]
        if rng.random() < 0.3:  # an overlapping interval: the composition intersects them
            lo, hi = max(1, lo - 1), min(hi, lo + 2)
        theirs[name] = (lo, hi)
    if theirs:
        second_text = generate(rng, m.num_results, clean=True, sizes=theirs)
    else:
        second_text = fuzz_cases.generate(rng, fuzz_cases._Sig(m.num_results, 0, 0), clean=True)
    second = vx.parse_map(second_text)
    try:
        composed = vx.compose(m, second)
    except vx.DepthError:
        report.counts["sized: compose: rejected: depth"] += 1
        return
    except ValueError as err:
        # a static second map may multiply index variables, which a map with sizes cannot
        # hold: compose refuses (with a ValueError from the constructor, not a clear error)
        if "product of two index variables" not in str(err):
            raise
        report.counts["sized: compose: refused: product of index variables"] += 1
        return
    so = _parse(second_text)
    both = {n: (max(lo, theirs.get(n, (lo, hi))[0]), min(hi, theirs.get(n, (lo, hi))[1]))
            for n, (lo, hi) in mine.items()}
    declared = {z.name: (z.bounds.lo, z.bounds.hi) for z in composed.sizes}
    if not composed.is_known_empty and declared != both:
        report.wrong.append(f"sized: compose declares sizes {declared}, not the intersection "
                            f"{both}: {text}\n  second {second_text}")
        return
    co, simplified = _parse(str(composed)), composed.simplify()
    cs = _parse(str(simplified))
    for at in samples:
        if not _covers(so, at):
            continue
        expected = oracle.compose_relation(rels[_key(at)], _relation(so, at))
        if _relation(co, at) != expected:
            report.wrong.append(f"sized: compose is wrong at sizes {at}: first {text}\n"
                                f"  second {second_text}\n  got {composed}")
            return
        if _relation(cs, at) != expected:
            report.wrong.append(f"sized: simplify of a composition is wrong at sizes {at}: "
                                f"{composed}\n  simplified: {simplified}")
            return


def _rescale(rng: random.Random, text: str, m: vx.IndexingMap, samples: list[Assignment],
             every: bool, rels: Rels, report: fuzz_cases.Report) -> None:
    try:
        r = m.rescale_symbols()
    except vx.DepthError:
        report.counts["sized: rescale: rejected: depth"] += 1
        return
    _same_family("rescale_symbols", text, r, samples, rels, report)


def _remove_unused(rng: random.Random, text: str, m: vx.IndexingMap,
                   samples: list[Assignment], every: bool, rels: Rels,
                   report: fuzz_cases.Report) -> None:
    r = m.remove_unused_symbols()
    _same_family("remove_unused_symbols", text, r, samples, rels, report,
                 drop_rt=r.num_rt_vars != m.num_rt_vars)


_OPS = {"simplify": _simplify, "equal": _equal, "is_empty": _is_empty, "compose": _compose,
        "rescale": _rescale, "remove_unused": _remove_unused}
