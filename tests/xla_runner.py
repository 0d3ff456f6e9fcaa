"""Run HLO text on XLA's CPU backend through the pinned jax (0.10.2), for round-trip tests.

jax 0.10.2 has no public "compile this HLO text" API. The route used: `hlo_module_from_text`
(XLA's HLO parser, in jaxlib's `_hlo` extension, reached as `jax._src.lib.xla_client.hlo`), the
module's proto converted to StableHLO with `xla_client._xla.mlir.hlo_to_stablehlo`, and the
result compiled with `jax.extend.backend.get_backend().compile_and_load`, which runs XLA's
verifier and its whole pipeline. Private modules: pinned to the jax version in pyproject.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("JAX_PLATFORMS", "cpu")
jax = pytest.importorskip("jax")

from jax._src.lib import xla_client as xc  # noqa: E402
from jax.extend import backend as jax_backend  # noqa: E402

from verifidx.hlo import parse_hlo  # noqa: E402

DTYPES = {"f32": np.float32, "f64": np.float64, "s32": np.int32, "s64": np.int64,
          "pred": np.bool_, "bf16": np.float32, "f16": np.float16, "u32": np.uint32,
          "s8": np.int8, "u8": np.uint8}


def compile_hlo(text: str):
    module = xc.hlo.hlo_module_from_text(text)
    mlir = xc._xla.mlir.hlo_to_stablehlo(module.as_serialized_hlo_module_proto())
    b = jax_backend.get_backend()
    return b.compile_and_load(mlir, b.local_devices()[:1], xc.CompileOptions())


def random_inputs(text: str, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for p in parse_hlo(text).entry.parameters:
        shape, dtype = p.shape.dims, DTYPES[p.shape.element_type]
        if dtype == np.bool_:
            out.append(rng.random(shape) < 0.5)
        elif np.issubdtype(dtype, np.integer):
            out.append(rng.integers(0, 4, size=shape).astype(dtype))
        else:
            out.append(rng.standard_normal(shape).astype(dtype))
    return out


def run_hlo(text: str, inputs: list[np.ndarray]) -> list[np.ndarray]:
    exe = compile_hlo(text)
    device = exe.local_devices()[0] if hasattr(exe, "local_devices") else None
    args = [jax.device_put(x, device) for x in inputs]
    return [np.asarray(r) for r in exe.execute(args)]


def transformer_hlo(layers: int = 12) -> str:
    """A small pre-norm transformer (multi-head attention with the usual reshapes and
    transposes, an MLP), lowered by jax without XLA's passes; None without jax."""
    import jax.numpy as jnp
    seq, dim, heads = 16, 64, 4

    def layer_norm(x):
        m = jnp.mean(x, axis=-1, keepdims=True)
        v = jnp.mean((x - m) ** 2, axis=-1, keepdims=True)
        return (x - m) * jax.lax.rsqrt(v + 1e-5)

    def block(x, w):
        h = layer_norm(x)
        qkv = h @ w["qkv"]
        q, k, v = jnp.split(qkv, 3, axis=-1)
        split = lambda t: t.reshape(seq, heads, dim // heads).transpose(1, 0, 2)  # noqa: E731
        q, k, v = split(q), split(k), split(v)
        a = jax.nn.softmax(q @ k.transpose(0, 2, 1) / 4.0, axis=-1) @ v
        x = x + a.transpose(1, 0, 2).reshape(seq, dim) @ w["out"]
        return x + jax.nn.relu(layer_norm(x) @ w["up"]) @ w["down"]

    def model(x, ws):
        for w in ws:
            x = block(x, w)
        return x

    key = jax.random.PRNGKey(0)
    ws = [{"qkv": jnp.zeros((dim, 3 * dim)), "out": jnp.zeros((dim, dim)),
           "up": jnp.zeros((dim, 4 * dim)), "down": jnp.zeros((4 * dim, dim))}
          for _ in range(layers)]
    x = jax.random.normal(key, (seq, dim))
    return jax.jit(model).lower(x, ws).as_text(dialect="hlo")
