"""Seeded random HLO modules made of data-movement chains (test and benchmark data).

Chains mix single ops with the patterns substitutions target (a transpose pair, a reshape pair,
a slice of a concatenate, a reversal pair, a pad sliced away), so that `verifidx optimize` has
work to do, but also produce patterns no substitution removes.
"""

from __future__ import annotations

import math
import random


def _factorizations(n: int, rank: int, rng: random.Random) -> list[int]:
    dims = []
    for _ in range(rank - 1):
        divisors = [d for d in range(1, n + 1) if n % d == 0]
        d = rng.choice(divisors)
        dims.append(d)
        n //= d
    return [*dims, n]


class _Builder:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.lines: list[str] = []
        self.params: list[str] = []
        self.k = 0

    def param(self, shape: list[int]) -> str:
        name = f"p{len(self.params)}"
        self.params.append(f"  {name} = f32[{','.join(map(str, shape))}] parameter("
                           f"{len(self.params)})")
        return name

    def emit(self, shape: list[int], text: str) -> str:
        self.k += 1
        name = f"v{self.k}"
        self.lines.append(f"  {name} = f32[{','.join(map(str, shape))}] {text}")
        return name


def random_module(seed: int, steps: int = 6) -> str:
    rng = random.Random(seed)
    b = _Builder(rng)
    shape = [rng.randint(2, 5) for _ in range(rng.randint(2, 3))]
    cur = b.param(shape)
    for _ in range(steps):
        kind = rng.choice(["transpose", "transpose_pair", "reshape", "reshape_pair", "slice",
                           "concat_slice", "reverse_pair", "pad_slice", "broadcast_id", "copy"])
        r = len(shape)
        if kind in ("transpose", "transpose_pair"):
            for _ in range(2 if kind == "transpose_pair" else 1):
                perm = list(range(r))
                rng.shuffle(perm)
                shape = [shape[p] for p in perm]
                cur = b.emit(shape, f"transpose({cur}), dimensions={{{','.join(map(str, perm))}}}")
        elif kind in ("reshape", "reshape_pair"):
            for _ in range(2 if kind == "reshape_pair" else 1):
                shape = _factorizations(math.prod(shape), rng.randint(1, 3), rng)
                cur = b.emit(shape, f"reshape({cur})")
        elif kind == "slice":
            starts = [rng.randint(0, n - 1) for n in shape]
            limits = [rng.randint(s + 1, n) for s, n in zip(starts, shape)]
            shape = [lim - s for s, lim in zip(starts, limits)]
            cur = b.emit(shape, "slice(" + cur + "), slice={" +
                         ", ".join(f"[{s}:{lim}]" for s, lim in zip(starts, limits)) + "}")
        elif kind == "concat_slice":
            d = rng.randrange(r)
            other = list(shape)
            other[d] = rng.randint(1, 4)
            q = b.param(other)
            both = list(shape)
            both[d] += other[d]
            cat = b.emit(both, f"concatenate({cur}, {q}), dimensions={{{d}}}")
            if rng.random() < 0.5:
                lo, hi = [0] * r, list(shape)
            else:
                lo, hi = [0] * r, list(both)
                lo[d] = shape[d]
                shape = other
            cur = b.emit(shape, "slice(" + cat + "), slice={" +
                         ", ".join(f"[{s}:{lim}]" for s, lim in zip(lo, hi)) + "}")
        elif kind == "reverse_pair":
            dims = sorted(rng.sample(range(r), rng.randint(1, r)))
            text = ",".join(map(str, dims))
            cur = b.emit(shape, f"reverse({cur}), dimensions={{{text}}}")
            cur = b.emit(shape, f"reverse({cur}), dimensions={{{text}}}")
        elif kind == "pad_slice":
            zero = b.emit([], "constant(0)")
            lows = [rng.randint(0, 2) for _ in shape]
            highs = [rng.randint(0, 2) for _ in shape]
            padded = [lo + n + hi for lo, n, hi in zip(lows, shape, highs)]
            pad = b.emit(padded, f"pad({cur}, {zero}), padding=" +
                         "x".join(f"{lo}_{hi}" for lo, hi in zip(lows, highs)))
            cur = b.emit(shape, "slice(" + pad + "), slice={" +
                         ", ".join(f"[{lo}:{lo + n}]" for lo, n in zip(lows, shape)) + "}")
        elif kind == "broadcast_id":
            cur = b.emit(shape, f"broadcast({cur}), dimensions={{{','.join(map(str, range(r)))}}}")
        else:
            cur = b.emit(shape, f"copy({cur})")
    if rng.random() < 0.5:
        b.lines.append(f"  ROOT out = f32[{','.join(map(str, shape))}] negate({cur})")
    else:
        b.lines[-1] = b.lines[-1].replace(f"  {cur} =", f"  ROOT {cur} =", 1) if b.lines \
            else b.lines[-1]
        if not b.lines[-1].lstrip().startswith("ROOT"):
            b.lines.append(f"  ROOT out = f32[{','.join(map(str, shape))}] negate({cur})")
    return f"HloModule gen{seed}\n\nENTRY main {{\n" + "\n".join(b.params + b.lines) + "\n}\n"
