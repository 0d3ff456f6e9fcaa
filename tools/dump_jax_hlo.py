"""Dump real HLO modules produced by JAX into tests/data/jax/ (test data for the HLO parser).

Run with the pinned jax/jaxlib (the `test` or `stablehlo` extra installs them in .venv):

    .venv/bin/python tools/dump_jax_hlo.py [--out tests/data/jax]

For every program below it writes
  <name>.opt.hlo  jax.jit(f).lower(*args).compile().as_text()      optimized, with fusions
  <name>.raw.hlo  jax.jit(f).lower(*args).as_text(dialect="hlo")   unoptimized, as lowered
and records both in MANIFEST.json. The CPU backend is used. Source file names in the HLO metadata
are reduced to their base names (jax_hlo_source_file_canonicalization_regex) so that the dump does
not depend on where the checkout or the virtualenv lives.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import platform
import re
import sys
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax
import jax.numpy as jnp
import jaxlib
from jax import lax

# Strip directories from the file names JAX records in op metadata (keeps the dump reproducible).
jax.config.update("jax_hlo_source_file_canonicalization_regex", r".*/")

REPO = Path(__file__).resolve().parents[1]
F32 = jnp.float32
I32 = jnp.int32


# --------------------------------------------------------------------------------------------
# Programs. Every tensor is kept small (< 20k elements, most < 4k) so that tests enumerating
# elements stay cheap.
# --------------------------------------------------------------------------------------------


def softmax(x):
    m = jnp.max(x, axis=-1, keepdims=True)
    e = jnp.exp(x - m)
    return e / jnp.sum(e, axis=-1, keepdims=True)


def layer_norm(x, scale, bias):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
    return (x - mean) * lax.rsqrt(var + 1e-5) * scale + bias


def attention(q, k, v):
    d = q.shape[-1]
    scores = (q @ k.T) / jnp.sqrt(jnp.float32(d))
    scores = scores - jnp.max(scores, axis=-1, keepdims=True)
    p = jnp.exp(scores)
    p = p / jnp.sum(p, axis=-1, keepdims=True)
    return p @ v


def mlp(x, w1, b1, w2, b2):
    h = jax.nn.relu(x @ w1 + b1)
    return h @ w2 + b2


def conv2d_same(x, w):
    return lax.conv_general_dilated(
        x, w, window_strides=(1, 1), padding="SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
    )


def conv2d_stride2(x, w):
    return lax.conv_general_dilated(
        x, w, window_strides=(2, 2), padding="SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
    )


def embedding(table, idx):
    return jnp.take(table, idx, axis=0)


def embedding_index(table, idx):
    return table[idx]


def cumsum(x):
    return jnp.cumsum(x, axis=1)


def transpose_reshape(x):
    y = jnp.transpose(x, (2, 0, 1))  # (8, 4, 6)
    y = y.reshape(8, 24)
    y = y.T  # (24, 8)
    y = y.reshape(4, 6, 8)
    return jnp.transpose(y, (1, 2, 0)).reshape(48, 4) * 2.0


def concat_slice(a, b):
    c = jnp.concatenate([a, b, a], axis=1)  # (8, 40)
    return c[1:7, 4:36:2] + 1.0


def dynamic_slice(x, i, j):
    return lax.dynamic_slice(x, (i, j), (4, 8)) * 2.0


def center(x):
    return x - jnp.mean(x, axis=0, keepdims=True)


def _spec(shape, dtype):
    return jax.ShapeDtypeStruct(shape, dtype)


PROGRAMS = [
    ("softmax", softmax, [_spec((8, 128), F32)]),
    ("layer_norm", layer_norm, [_spec((16, 64), F32), _spec((64,), F32), _spec((64,), F32)]),
    ("attention", attention, [_spec((32, 16), F32), _spec((32, 16), F32), _spec((32, 16), F32)]),
    (
        "mlp",
        mlp,
        [
            _spec((8, 32), F32),
            _spec((32, 64), F32),
            _spec((64,), F32),
            _spec((64, 16), F32),
            _spec((16,), F32),
        ],
    ),
    ("conv2d_same", conv2d_same, [_spec((1, 16, 16, 4), F32), _spec((3, 3, 4, 8), F32)]),
    ("conv2d_stride2", conv2d_stride2, [_spec((1, 16, 16, 4), F32), _spec((3, 3, 4, 8), F32)]),
    ("embedding_take", embedding, [_spec((100, 16), F32), _spec((12,), I32)]),
    ("embedding_index", embedding_index, [_spec((100, 16), F32), _spec((12,), I32)]),
    ("cumsum", cumsum, [_spec((8, 64), F32)]),
    ("transpose_reshape", transpose_reshape, [_spec((4, 6, 8), F32)]),
    ("concat_slice", concat_slice, [_spec((8, 16), F32), _spec((8, 8), F32)]),
    ("dynamic_slice", dynamic_slice, [_spec((16, 32), F32), _spec((), I32), _spec((), I32)]),
    ("center", center, [_spec((16, 64), F32)]),
]

_FUSION_CALLS = re.compile(r"\bfusion\(.*?\bcalls=%?([\w.\-]+)")


_FUSION_KIND = re.compile(r"\bfusion\(.*?\bkind=(k\w+)")


def fusion_computations(text: str) -> int:
    """Distinct computations called by `fusion` instructions (including XLA's `wrapped_*` ones)."""
    return len(set(_FUSION_CALLS.findall(text)))


def fusion_kinds(text: str) -> dict[str, int]:
    """How many `fusion` instructions there are of each kind (kLoop, kInput, ...)."""
    kinds: dict[str, int] = {}
    for kind in _FUSION_KIND.findall(text):
        kinds[kind] = kinds.get(kind, 0) + 1
    return dict(sorted(kinds.items()))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=REPO / "tests" / "data" / "jax")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    entries = []
    for name, fn, specs in PROGRAMS:
        lowered = jax.jit(fn).lower(*specs)
        raw = lowered.as_text(dialect="hlo")
        opt = lowered.compile().as_text()
        common = {
            "program": name,
            "function": fn.__name__,
            "source": inspect.getsource(fn),
            "inputs": [{"shape": list(s.shape), "dtype": str(s.dtype)} for s in specs],
            "jax_version": jax.__version__,
            "jaxlib_version": jaxlib.__version__,
            "backend": jax.default_backend(),
        }
        for variant, text, api in (
            ("opt", opt, "jax.jit(f).lower(*args).compile().as_text()"),
            ("raw", raw, 'jax.jit(f).lower(*args).as_text(dialect="hlo")'),
        ):
            fname = f"{name}.{variant}.hlo"
            (args.out / fname).write_text(text)
            entry = {"file": fname, "variant": variant, "api": api, **common}
            entry["fusion_computations"] = fusion_computations(text)
            entry["fusion_instructions_by_kind"] = fusion_kinds(text)
            entries.append(entry)
            print(f"{fname}: {len(text)} chars, {entry['fusion_computations']} fusion computations")

    manifest = {
        "generator": "tools/dump_jax_hlo.py",
        "jax_version": jax.__version__,
        "jaxlib_version": jaxlib.__version__,
        "python_version": platform.python_version(),
        "backend": jax.default_backend(),
        "files": entries,
    }
    (args.out / "MANIFEST.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
