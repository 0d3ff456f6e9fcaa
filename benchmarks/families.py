"""Generated families of quasi-affine maps for the simplifier benchmark and property tests.

Each generator takes a `random.Random` and returns one map text, so the benchmark draws a
seeded corpus and the hypothesis tests draw from `st.randoms()`. The families are the shapes
issue 11 names: random quasi-affine sums (coefficients that are not multiples of the divisor,
negative coefficients and constants, `floordiv` and `mod` of one sum, constraints), digit
decompositions of 2 to 4 levels, reshape/transpose/bitcast chains, and nested divisions.
"""

from __future__ import annotations

import random
from collections.abc import Callable

_NAMES = ("d0", "d1", "d2", "d3")


def _sum(rnd: random.Random, names: list[str], divisor: int, designed: bool) -> str:
    """A linear sum. `designed`: coefficients close to multiples of the divisor, so that the
    remainder may fit one bucket (the case isl removes)."""
    terms = []
    for name in names:
        if designed:
            q = rnd.randint(-3, 4)
            r = rnd.choice([-2, -1, 1, 2])
            a = q * divisor + r
        else:
            a = rnd.randint(-100, 100)
        if a % divisor == 0:
            a += rnd.choice([-1, 1])
        terms.append(f"{name} * {a}")
    c = rnd.randint(-3 * divisor, 3 * divisor)
    return " + ".join(terms) + (f" + {c}" if c >= 0 else f" - {-c}")


def _domain(rnd: random.Random, names: list[str], small: bool = True) -> list[str]:
    out = []
    for name in names:
        lo = 0 if rnd.random() < 0.8 else rnd.randint(-4, 0)
        out.append(f"{name} in [{lo}, {lo + rnd.randint(1, 5 if small else 15)}]")
    return out


def quasi_affine(rnd: random.Random) -> str:
    n = rnd.randint(2, 4)
    names = list(_NAMES[:n])
    k = rnd.randint(2, 64)
    s = _sum(rnd, names, k, designed=rnd.random() < 0.7)
    shape = rnd.choice(["both", "div", "mod", "neg"])
    results = {"both": [f"({s}) floordiv {k}", f"({s}) mod {k}"],
               "div": [f"({s}) floordiv {k}"],
               "mod": [f"({s}) mod {k}"],
               "neg": [f"-(({s}) floordiv {k})"]}[shape]
    domain = _domain(rnd, names)
    if rnd.random() < 0.3:
        a, b = rnd.sample(names, 2)
        domain.append(f"{a} + {b} in [0, {rnd.randint(2, 8)}]")
    return f"({', '.join(names)}) -> ({', '.join(results)}), domain: {', '.join(domain)}"


def _digit(rnd: random.Random, x: str, inner: int, base: int, total: int) -> str:
    """The digit of weight `inner` (< `base` values), written one of the ways compilers do."""
    outer = inner * base
    styles = [f"(({x}) floordiv {inner}) mod {base}",
              f"(({x}) mod {outer}) floordiv {inner}"]
    if outer == total:
        styles.append(f"({x}) floordiv {inner}")
    if inner == 1:
        styles.append(f"({x}) mod {outer}")
    return rnd.choice(styles)


def digits(rnd: random.Random) -> str:
    """x == sum of its digits times their weights, for 2 to 4 digits (expected: x)."""
    levels = rnd.randint(2, 4)
    bases = [rnd.choice([2, 3, 4, 8]) for _ in range(levels)]
    total = 1
    for b in bases:
        total *= b
    if rnd.random() < 0.5:
        x, domain = "d0", f"d0 in [0, {total - 1}]"
        header = "(d0)"
    else:  # a linear index of two dimensions
        inner = rnd.choice([b for b in (2, 4, 8) if total % b == 0] or [1])
        x = f"d0 * {inner} + d1"
        domain = f"d0 in [0, {total // inner - 1}], d1 in [0, {inner - 1}]"
        header = "(d0, d1)"
    parts, weight = [], 1
    for b in bases:
        digit = _digit(rnd, x, weight, b, total)
        if rnd.random() < 0.3 and weight > 1:  # nested-mod style of issue 11's second example
            outer = weight * b
            digit = f"((({x}) mod {outer}) floordiv {weight})"
        parts.append(f"({digit}) * {weight}" if weight > 1 else f"({digit})")
        weight *= b
    rnd.shuffle(parts)
    return f"{header} -> ({' + '.join(parts)}), domain: {domain}"


def factorize(total: int, rnd: random.Random, primes: tuple[int, ...] = (2, 3, 5)) -> list[int]:
    """A random shape with `total` elements (primes other than `primes` are left out)."""
    dims: list[int] = []
    rest = total
    for p in primes:
        while rest % p == 0:
            dims.append(p)
            rest //= p
    rnd.shuffle(dims)
    out: list[int] = []
    for d in dims:
        if out and rnd.random() < 0.5:
            out[-1] *= d
        else:
            out.append(d)
    return out or [1]


def _linear(shape: list[int], names: list[str]) -> str:
    text = names[0]
    for n, name in zip(shape[1:], names[1:]):
        text = f"({text}) * {n} + {name}"
    return text


def chain(rnd: random.Random) -> str:
    """Output-to-input map of a chain reshape -> transpose -> bitcast(reshape), written as one
    composed map (the input index of each step substituted into the next)."""
    total = rnd.choice([24, 36, 48, 60, 64, 72, 96, 120, 128, 256])
    out_shape = factorize(total, rnd)
    names = [f"d{i}" for i in range(len(out_shape))]
    # the output index, linearised; a transpose permutes which names carry which strides
    perm = list(range(len(out_shape)))
    if rnd.random() < 0.6:
        rnd.shuffle(perm)
    shape = [out_shape[p] for p in perm]
    lin = _linear(shape, [names[p] for p in perm])
    # reshape (bitcast) to the input shape: each input index is a digit of the linear index
    in_shape = factorize(total, rnd)
    results, stride = [], 1
    for n in reversed(in_shape):
        if stride * n >= total:
            results.append(f"({lin}) floordiv {stride}")
        else:
            results.append(f"(({lin}) floordiv {stride}) mod {n}")
        stride *= n
    results.reverse()
    domain = ", ".join(f"{name} in [0, {n - 1}]" for name, n in zip(names, out_shape))
    return f"({', '.join(names)}) -> ({', '.join(results)}), domain: {domain}"


def nested(rnd: random.Random) -> str:
    n = rnd.randint(1, 3)
    names = list(_NAMES[:n])
    a, b = rnd.choice([2, 3, 4, 8, 16]), rnd.choice([2, 3, 4, 8])
    s = _sum(rnd, names, a, designed=rnd.random() < 0.5)
    shape = rnd.choice(["(({s}) floordiv {a}) floordiv {b}", "(({s}) mod {ab}) floordiv {a}",
                        "(({s}) floordiv {a}) mod {b}", "(({s}) mod {ab}) mod {a}",
                        "(({s}) mod {a}) floordiv {b}"])
    result = shape.format(s=s, a=a, b=b, ab=a * b)
    return f"({', '.join(names)}) -> ({result}), domain: {', '.join(_domain(rnd, names, False))}"


FAMILIES: dict[str, Callable[[random.Random], str]] = {
    "quasi-affine sums": quasi_affine,
    "digit decompositions": digits,
    "reshape/transpose/bitcast": chain,
    "nested divisions": nested,
}


def corpus(name: str, n: int, seed: int = 11) -> list[str]:
    rnd = random.Random(f"{name}:{seed}")
    return [FAMILIES[name](rnd) for _ in range(n)]
