"""Translation validation on short JAX programs: BEFORE (`lower(...).as_text(dialect="hlo")`)
against AFTER (`compile().as_text()`), with every `differ` checked by execution (eager, right
per issue 36, against `jax.jit`, at the counterexample's scalars, on an input of distinct
values) and the CPU time of validation beside XLA's compile of the 12-layer transformer.

    PYTHONPATH=. python benchmarks/bench_translation.py
"""

from __future__ import annotations

import os
import time
from collections import Counter

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

from verifidx.clients.translation import DIFFER, validate_programs  # noqa: E402

X = jnp.arange(1.0, 9.0)
M = jnp.arange(1.0, 13.0).reshape(3, 4)
S = jnp.int32(0)

PROGRAMS = {
    "slice": (lambda x: x[1:6:2], (X,)),
    "reverse": (lambda x: x[::-1], (X,)),
    "transpose": (lambda m: m.T[1:3], (M,)),
    "concatenate": (lambda x: jnp.concatenate([x[4:], x[:4]]), (X,)),
    "pad": (lambda x: jnp.pad(x, (2, 1)), (X,)),
    "roll": (lambda x: jnp.roll(x, 3), (X,)),
    "broadcast": (lambda x: jnp.broadcast_to(x[:3], (2, 3)), (X,)),
    "reshape": (lambda m: m.reshape(4, 3)[1], (M,)),
    "dynamic_slice": (lambda x, i: lax.dynamic_slice(x, (i,), (3,)), (X, S)),
    "nested dynamic_slice": (lambda x, i, j: lax.dynamic_slice(
        lax.dynamic_slice(x, (i,), (4,)), (j,), (2,)), (X, S, S)),
    "roll + dynamic_slice": (lambda x, i: lax.dynamic_slice(jnp.roll(x, 3), (i,), (2,)),
                             (X, S)),
    "dynamic roll + dynamic_slice": (lambda x, i: lax.dynamic_slice(jnp.roll(x, i), (i,), (2,)),
                                     (X, S)),
    "dynamic_slice 2-d": (lambda m, i, j: lax.dynamic_slice(m, (i, j), (2, 2)), (M, S, S)),
    "dynamic_update_slice": (lambda x, i: lax.dynamic_update_slice(x, x[:3], (i,)), (X, S)),
    "index by scalar": (lambda m, i: m[i], (M, S)),
    "take": (lambda x: x[jnp.array([3, 1, 4])], (X,)),
    "clamp start": (lambda x, i: lax.dynamic_slice(x, (jnp.clip(i, 1, 3),), (2,)), (X, S)),
    "start arithmetic": (lambda x, i: lax.dynamic_slice(x, (2 * i - 1,), (2,)), (X, S)),
    "start division": (lambda x, i: lax.dynamic_slice(x, (i // 3,), (2,)), (X, S)),
    "two outputs": (lambda x, i: (x[::-1], lax.dynamic_slice(x, (i,), (2,))), (X, S)),
    "take by an index array": (lambda x, idx: x[idx], (X, jnp.array([2, 0, 5], jnp.int32))),
    "fori_loop of dynamic_slice": (lambda x: lax.fori_loop(
        0, 3, lambda k, c: c + lax.dynamic_slice(x, (k,), (2,)), jnp.zeros(2)), (X,)),
    "where start": (lambda x, i: lax.dynamic_slice(
        x, (jnp.where(i > 3, i - 4, i + 2),), (2,)), (X, S)),
    "mod start": (lambda x, i: lax.dynamic_slice(x, (i % 5,), (2,)), (X, S)),
    "u8 start": (lambda x, i: lax.dynamic_slice(x, (i,), (2,)), (X, jnp.uint8(0))),
    "cumsum": (lambda x: jnp.cumsum(x), (X,)),
    "scan": (lambda x: lax.scan(lambda c, v: (c + v, c), 0.0, x)[1], (X,)),
}


def _confirmed(fn, args, cx) -> bool:  # type: ignore[no-untyped-def]
    """Eager and jit disagree at the counterexample's scalars, where it says they read
    differently."""
    call = [jnp.asarray(cx.values.get(f"arg{k}", 0), a.dtype) if np.ndim(a) == 0 else a
            for k, a in enumerate(args)]
    with jax.disable_jit():
        eager = np.asarray(fn(*call))
    jitted = np.asarray(jax.jit(fn)(*call))
    return bool(eager[cx.point] != jitted[cx.point])


def main() -> None:
    totals: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    for name, (fn, args) in PROGRAMS.items():
        lowered = jax.jit(fn).lower(*args)
        t = time.process_time()
        result = validate_programs(lowered.as_text(dialect="hlo"), lowered.compile().as_text())
        seconds = time.process_time() - t
        counts = Counter(p.verdict for p in result.pairs)
        totals.update(counts)
        notes = []
        for p in result.pairs:
            if p.verdict == DIFFER and p.counterexample is not None:
                ok = _confirmed(fn, args, p.counterexample)
                notes.append(("confirmed: " if ok else "NOT confirmed: ")
                             + p.counterexample.describe())
            elif p.verdict == "unknown":
                reasons[p.reason.split(":")[0][:90]] += 1
        print(f"{name:30s} {result.verdict():12s} {dict(counts)} {seconds:.2f}s")
        for n in notes:
            print("    " + n)
    print("pairs:", dict(totals))
    for r, n in reasons.most_common():
        print(f"  unknown x{n}: {r}")
    transformer(12)


def transformer(layers: int) -> None:
    """The pre-norm transformer of tests/xla_runner.py (attention, MLP), lowered and
    compiled here: XLA's compile CPU time against validation's."""
    seq, dim, heads = 16, 64, 4

    def layer_norm(x):  # type: ignore[no-untyped-def]
        m = jnp.mean(x, axis=-1, keepdims=True)
        return (x - m) * lax.rsqrt(jnp.mean((x - m) ** 2, axis=-1, keepdims=True) + 1e-5)

    def block(x, w):  # type: ignore[no-untyped-def]
        q, k, v = jnp.split(layer_norm(x) @ w["qkv"], 3, axis=-1)
        split = lambda t: t.reshape(seq, heads, dim // heads).transpose(1, 0, 2)  # noqa: E731
        q, k, v = split(q), split(k), split(v)
        a = jax.nn.softmax(q @ k.transpose(0, 2, 1) / 4.0, axis=-1) @ v
        x = x + a.transpose(1, 0, 2).reshape(seq, dim) @ w["out"]
        return x + jax.nn.relu(layer_norm(x) @ w["up"]) @ w["down"]

    def model(x, ws):  # type: ignore[no-untyped-def]
        for w in ws:
            x = block(x, w)
        return x

    ws = [{"qkv": jnp.zeros((dim, 3 * dim)), "out": jnp.zeros((dim, dim)),
           "up": jnp.zeros((dim, 4 * dim)), "down": jnp.zeros((4 * dim, dim))}
          for _ in range(layers)]
    lowered = jax.jit(model).lower(jnp.zeros((seq, dim)), ws)
    t = time.process_time()
    compiled = lowered.compile()
    compile_s = time.process_time() - t
    t = time.process_time()
    result = validate_programs(lowered.as_text(dialect="hlo"), compiled.as_text())
    validate_s = time.process_time() - t
    print(f"transformer, {layers} layers: XLA compile {compile_s:.2f} s CPU, validation "
          f"{validate_s:.2f} s CPU; {dict(Counter(p.verdict for p in result.pairs))}")


if __name__ == "__main__":
    main()
