"""Range variables pinned by a constraint (`s1 - d0 in [0, 0]`) are substituted away by the
simplifier (`verifidx.simplifier.maps.substitute_pinned`).

The oracle is tests/fuzz/fuzz_oracle.py, which shares no code with verifidx: it reads the
printed maps and enumerates their relations (runtime values, dimensions, results), at each
value of a size for maps with sizes. Whether a printed map still holds a pinning constraint
is read from the oracle's parse tree by a linear reading written here."""

from __future__ import annotations

import random
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

import verifidx as vx

sys.path.insert(0, str(Path(__file__).parent / "fuzz"))
import fuzz_cases  # noqa: E402  (random expression text)
import fuzz_oracle as oracle  # noqa: E402  (shares no code with verifidx)

Linear = tuple[dict[object, int], int]


def _linear(node: tuple) -> Linear:  # type: ignore[type-arg]
    """`node` as {base: coefficient} plus a constant; a base is a leaf ("v", i) or, for a
    subtree that is not a scaled sum, the subtree itself."""
    op = node[0]
    if op == "c":
        return {}, node[1]
    if op == "v":
        return {node: 1}, 0
    if op == "neg":
        c, k = _linear(node[1])
        return {b: -v for b, v in c.items()}, -k
    if op in ("+", "-"):
        (ca, ka), (cb, kb) = _linear(node[1]), _linear(node[2])
        sign = 1 if op == "+" else -1
        out = dict(ca)
        for b, v in cb.items():
            out[b] = out.get(b, 0) + sign * v
        return {b: v for b, v in out.items() if v}, ka + sign * kb
    if op == "*":
        (ca, ka), (cb, kb) = _linear(node[1]), _linear(node[2])
        if not ca or not cb:
            (c, k), f = ((cb, kb), ka) if not ca else ((ca, ka), kb)
            return {b: v * f for b, v in c.items() if v * f}, k * f
    return {node: 1}, 0


def _leaves(node: tuple) -> set[int]:  # type: ignore[type-arg]
    if node[0] == "v":
        return {node[1]}
    if node[0] == "c":
        return set()
    return set().union(*(_leaves(k) for k in node[1:]))


def pinning_constraints(om: oracle.OMap) -> list[int]:
    """The range variables (their leaf numbers) that a width-0 constraint pins with a
    coefficient of 1 or -1 and that occur in no other base of it."""
    first, end = len(om.dims), len(om.dims) + len(om.syms)
    found = []
    for e, lo, hi in om.constraints:
        if lo != hi:
            continue
        coeffs, _k = _linear(e)
        if len(coeffs) < 2:
            continue
        for b, v in coeffs.items():
            if b[0] == "v" and first <= b[1] < end and v in (1, -1) and all(
                    o == b or b[1] not in _leaves(o) for o in coeffs):
                found.append(b[1])
    return found


def _term(rng: random.Random, names: list[str], sized: bool) -> str:
    """A summand of the value a variable is pinned to: a scaled variable, a size, or (static
    maps only) a quasi-affine term."""
    pick = rng.random()
    if sized and pick < 0.25:
        return "N"
    if not sized and pick < 0.3:
        return f"({fuzz_cases._expr(rng, names, 2)})"
    return f"{rng.choice(names)} * {rng.choice([1, 1, -1, 2, -2, 3])}"


def pinned_map(rng: random.Random, sized: bool) -> str:
    """A small map whose first constraint pins a range variable to a function of the others;
    its constraints' intervals hold the values at one point of the box, so the domain is
    not empty (at one value of the size, for a map with sizes)."""
    nd, ns, nrt = rng.randint(1, 2), rng.randint(1, 3), rng.choice([0, 0, 1])
    names = ([f"d{i}" for i in range(nd)] + [f"s{i}" for i in range(ns)]
             + [f"rt{i}" for i in range(nrt)])
    width = {1: 9, 2: 6, 3: 4, 4: 3}.get(len(names), 2)
    bounds = [(lo, lo + rng.randint(0, width)) for lo in (rng.randint(-3, 3) for _ in names)]
    pinned = rng.choice([n for n in names if n.startswith("s")])
    others = [n for n in names if n != pinned]
    value = " + ".join(_term(rng, others, sized) for _ in range(rng.randint(1, 3)))
    exprs = [f"{rng.choice(['', '-'])}{pinned} + {value}"]
    if rng.random() < 0.5:
        exprs.append(f"({fuzz_cases._expr(rng, names, 2)})")
    every = names + (["N"] if sized else [])
    results = [fuzz_cases._expr(rng, every, rng.randint(1, 3)) for _ in range(rng.randint(1, 2))]
    head = f"({', '.join(names[:nd])})[{', '.join(names[nd:nd + ns])}]"
    if nrt:
        head += "{" + ", ".join(names[nd + ns:]) + "}"
    if sized:
        head += "<N>"
    items = [f"{n} in [{lo}, {hi}]" for n, (lo, hi) in zip(names, bounds)]
    if sized:
        items.append("N in [1, 4]")
    point = [rng.randint(lo, hi) for lo, hi in bounds] + ([rng.randint(1, 4)] if sized else [])
    probe = oracle.parse(f"{head} -> ({', '.join(exprs)}), domain: " + ", ".join(items))
    at = oracle.compile_map(probe)(point)[1]
    items.append(f"{exprs[0]} in [{at[0]}, {at[0]}]")
    if len(exprs) > 1:
        items.append(f"{exprs[1]} in [{at[1] - rng.randint(0, 3)}, {at[1] + rng.randint(0, 3)}]")
    return f"{head} -> ({', '.join(results)}), domain: " + ", ".join(items)


def _relations(text: str, sized: bool) -> list[object]:
    om = oracle.parse(text)
    if not sized:
        return [oracle.relation(om)]
    return [oracle.relation(om, sizes={"N": n}) for n in range(1, 5)]


def _check(seed: int, sized: bool) -> tuple[vx.IndexingMap, vx.IndexingMap]:
    text = pinned_map(random.Random(seed), sized)
    try:
        m = vx.parse_map(text)
    except vx.ParseError:  # a divisor over sizes or a product the grammar rejects
        return vx.parse_map("(d0) -> (d0), domain: d0 in [0, 0]"), vx.parse_map(
            "(d0) -> (d0), domain: d0 in [0, 0]")
    s = m.simplify()
    assert _relations(str(s), sized) == _relations(text, sized), f"{text}\n  simplified: {s}"
    return m, s


@settings(derandomize=True)
@given(seed=st.integers(0, 2**63 - 1))
def test_substituting_a_pinned_range_variable_keeps_the_relation(seed: int) -> None:
    m, s = _check(seed, sized=False)
    if not s.is_known_empty:
        assert not pinning_constraints(oracle.parse(str(s))), f"{m}\n  simplified: {s}"


@settings(derandomize=True)
@given(seed=st.integers(0, 2**63 - 1))
def test_substituting_a_pinned_range_variable_with_sizes_keeps_every_size(seed: int) -> None:
    _check(seed, sized=True)


def test_the_phase_removes_range_variables_in_most_generated_maps() -> None:
    """The generator gives the phase work: most maps lose a range variable."""
    rng = random.Random(35)
    removed = total = 0
    for _ in range(200):
        text = pinned_map(rng, sized=False)
        m = vx.parse_map(text)
        s = m.simplify()
        if s.is_known_empty:
            continue
        total += 1
        removed += s.num_range_vars < m.num_range_vars
    assert removed >= 0.8 * total


def test_dimensions_and_runtime_variables_stay() -> None:
    """A pinned dimension is expressed by substituting the range variable; a runtime variable
    is a parameter of the relation and is never substituted; a coefficient of 2 on the only
    range variable needs divisibility and is left as it is."""
    cases = {
        "(d0)[s0] -> (s0 * 3), domain: d0 in [0, 9], s0 in [0, 5], d0 - s0 in [0, 0]": 0,
        "(d0){rt0} -> (rt0), domain: d0 in [0, 9], rt0 in [0, 5], rt0 - d0 in [0, 0]": 0,
        "(d0, d1)[s0] -> (s0 + d1), domain: d0 in [0, 9], d1 in [0, 9], s0 in [0, 5], "
        "s0 * 2 - d1 in [4, 4]": 1,
        "(d0)[s0]{rt0} -> (s0), domain: d0 in [0, 3], s0 in [0, 5], rt0 in [0, 4], "
        "s0 - rt0 - d0 in [0, 0]": 0,
    }
    for text, range_vars in cases.items():
        m = vx.parse_map(text)
        s = m.simplify()
        assert (s.num_dims, s.num_rt_vars, s.num_range_vars) == \
            (m.num_dims, m.num_rt_vars, range_vars), f"{text}\n  simplified: {s}"
        assert _relations(str(s), False) == _relations(text, False)


def test_the_trace_names_the_substitution() -> None:
    m = vx.parse_map("(d0)[s0, s1] -> (s1, s0), domain: d0 in [0, 2], s0 in [0, 3], "
                     "s1 in [0, 2], s1 - d0 in [0, 0]")
    trace: list[object] = []
    out = vx.simplify(m, trace=trace)
    steps = [str(t) for t in trace if "pinned_range_variable" in str(t)]
    assert len(steps) == 1 and "s1" in steps[0] and "d0" in steps[0], steps
    assert out.num_range_vars == 1
