"""Dump a 12-layer transformer compiled by JAX (CPU backend) for benchmarks/bench_tiling.py.

Run with the pinned jax/jaxlib (the `test` or `stablehlo` extra installs them in .venv):

    .venv/bin/python tools/dump_jax_transformer.py

Writes benchmarks/data/transformer12.opt.hlo (`jax.jit(f).lower(*args).compile().as_text()`) and
transformer12.json (versions, shapes, the model's source). Pre-layer-norm blocks: multi-head
self-attention (4 heads) and a GELU MLP, residual connections, a final layer norm. Sizes are
small (sequence 32, width 64, MLP 256) so that the module is quick to analyse.
"""

from __future__ import annotations

import inspect
import json
import os
import platform
import time
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax
import jax.numpy as jnp
import jaxlib

jax.config.update("jax_hlo_source_file_canonicalization_regex", r".*/")

REPO = Path(__file__).resolve().parents[1]
LAYERS, SEQ, WIDTH, HEADS, HIDDEN = 12, 32, 64, 4, 256


def layer_norm(x, scale, bias):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + 1e-5) * scale + bias


def block(x, p):
    h = layer_norm(x, p["ln1_s"], p["ln1_b"])
    q = (h @ p["wq"]).reshape(SEQ, HEADS, WIDTH // HEADS).transpose(1, 0, 2)
    k = (h @ p["wk"]).reshape(SEQ, HEADS, WIDTH // HEADS).transpose(1, 0, 2)
    v = (h @ p["wv"]).reshape(SEQ, HEADS, WIDTH // HEADS).transpose(1, 0, 2)
    scores = jnp.einsum("hqd,hkd->hqk", q, k) / jnp.sqrt(jnp.float32(WIDTH // HEADS))
    mask = jnp.tril(jnp.ones((SEQ, SEQ), bool))
    scores = jnp.where(mask, scores, -1e9)
    att = jax.nn.softmax(scores, axis=-1)
    o = jnp.einsum("hqk,hkd->hqd", att, v).transpose(1, 0, 2).reshape(SEQ, WIDTH)
    x = x + o @ p["wo"]
    h = layer_norm(x, p["ln2_s"], p["ln2_b"])
    return x + jax.nn.gelu(h @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]


def transformer(x, params):
    for p in params:
        x = block(x, p)
    return layer_norm(x, jnp.ones((WIDTH,)), jnp.zeros((WIDTH,)))


def _params(layers: int = LAYERS):
    f32 = jnp.float32
    spec = jax.ShapeDtypeStruct
    one = {"ln1_s": (WIDTH,), "ln1_b": (WIDTH,), "wq": (WIDTH, WIDTH), "wk": (WIDTH, WIDTH),
           "wv": (WIDTH, WIDTH), "wo": (WIDTH, WIDTH), "ln2_s": (WIDTH,), "ln2_b": (WIDTH,),
           "w1": (WIDTH, HIDDEN), "b1": (HIDDEN,), "w2": (HIDDEN, WIDTH), "b2": (WIDTH,)}
    return [{k: spec(s, f32) for k, s in one.items()} for _ in range(layers)]


def compiled(layers: int = LAYERS) -> tuple[str, float, float]:
    """The optimized HLO text of the model with `layers` blocks, and the CPU seconds (all
    threads of this process) that `lower` and XLA's `compile` took."""
    x = jax.ShapeDtypeStruct((SEQ, WIDTH), jnp.float32)
    start = time.process_time()
    lowered = jax.jit(transformer).lower(x, _params(layers))
    lowered_at = time.process_time()
    text = lowered.compile().as_text()
    return text, lowered_at - start, time.process_time() - lowered_at


def main() -> None:
    out = REPO / "benchmarks" / "data"
    out.mkdir(parents=True, exist_ok=True)
    text = compiled()[0]
    (out / "transformer12.opt.hlo").write_text(text)
    meta = {
        "generator": "tools/dump_jax_transformer.py",
        "api": "jax.jit(f).lower(*args).compile().as_text()",
        "jax_version": jax.__version__, "jaxlib_version": jaxlib.__version__,
        "python_version": platform.python_version(), "backend": jax.default_backend(),
        "layers": LAYERS, "sequence": SEQ, "width": WIDTH, "heads": HEADS, "hidden": HIDDEN,
        "source": inspect.getsource(block) + "\n" + inspect.getsource(transformer),
    }
    (out / "transformer12.json").write_text(json.dumps(meta, indent=2) + "\n")
    print(f"transformer12.opt.hlo: {len(text)} chars")


if __name__ == "__main__":
    main()
