"""Dump JAX programs as StableHLO text and as HLO text into tests/data/stablehlo/.

The pairs let the tests check that both front ends give equal maps for the same program; the
programs exported with symbolic dimensions (`jax.export`) give the parametric (dynamic) modules.
jax and jaxlib come with the `stablehlo` extra:

    .venv/bin/pip install -e '.[stablehlo]' && .venv/bin/python tools/dump_jax_stablehlo.py

For every static program it writes `<name>.mlir` (`jax.jit(f).lower(*args).as_text()`) and
`<name>.hlo` (`.as_text(dialect="hlo")`); for every symbolic one `<name>.dyn.mlir`
(`jax.export.export(jax.jit(f))(*symbolic args).mlir_module()`) plus the static texts at three
sizes, `<name>.at<N>.mlir` and `.hlo`. MANIFEST.json records program, inputs and versions.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax
import jax.numpy as jnp
import jaxlib
from jax import export, lax

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dump_jax_hlo import (  # noqa: E402
    attention,
    concat_slice,
    conv2d_same,
    dynamic_slice,
    embedding,
    layer_norm,
    softmax,
    transpose_reshape,
)

jax.config.update("jax_hlo_source_file_canonicalization_regex", r".*/")

REPO = Path(__file__).resolve().parents[1]
F32 = jnp.float32
I32 = jnp.int32


def scatter_add(x, idx, upd):
    return x.at[idx].add(upd)


def pad_concat(a, b):
    p = jnp.pad(a, ((1, 2), (0, 3)))
    return jnp.concatenate([p, b], axis=0) * 2.0


def gelu_mlp(x, w):
    return jax.nn.gelu(x @ w, approximate=False)


def multi_head_attention(x, wq, wk, wv):
    b, s, e = x.shape
    h = 2
    q = (x @ wq).reshape(b, s, h, e // h).transpose(0, 2, 1, 3)
    k = (x @ wk).reshape(b, s, h, e // h).transpose(0, 2, 1, 3)
    v = (x @ wv).reshape(b, s, h, e // h).transpose(0, 2, 1, 3)
    scores = jnp.einsum("bhqd,bhkd->bhqk", q, k) / jnp.sqrt(jnp.float32(e // h))
    p = jax.nn.softmax(scores, axis=-1)
    out = jnp.einsum("bhqk,bhkd->bhqd", p, v)
    return out.transpose(0, 2, 1, 3).reshape(b, s, e)


def add_one(x):
    return x + 1.0


def batched_layer_norm(x, scale):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
    return (x - mean) * lax.rsqrt(var + 1e-5) * scale


def _spec(shape, dtype=F32):
    return jax.ShapeDtypeStruct(shape, dtype)


STATIC = [
    ("softmax", softmax, [_spec((8, 16))]),
    ("layer_norm", layer_norm, [_spec((16, 32)), _spec((32,)), _spec((32,))]),
    ("attention", attention, [_spec((8, 16)), _spec((8, 16)), _spec((8, 16))]),
    ("mha", multi_head_attention,
     [_spec((2, 4, 8)), _spec((8, 8)), _spec((8, 8)), _spec((8, 8))]),
    ("conv2d", conv2d_same, [_spec((1, 8, 8, 2)), _spec((3, 3, 2, 4))]),
    ("gather", embedding, [_spec((20, 8)), _spec((6,), I32)]),
    ("scatter", scatter_add, [_spec((20, 8)), _spec((6,), I32), _spec((6, 8))]),
    ("pad_concat", pad_concat, [_spec((4, 5)), _spec((3, 8))]),
    ("concat_slice", concat_slice, [_spec((8, 16)), _spec((8, 8))]),
    ("dynamic_slice", dynamic_slice, [_spec((16, 32)), _spec((), I32), _spec((), I32)]),
    ("transpose_reshape", transpose_reshape, [_spec((4, 6, 8))]),
    ("gelu_mlp", gelu_mlp, [_spec((4, 8)), _spec((8, 6))]),
]

SYMBOLIC = [
    ("add_one", add_one, ["b"], lambda b: [_spec((b,))]),
    ("softmax", softmax, ["b"], lambda b: [_spec((b, 16))]),
    ("layer_norm", batched_layer_norm, ["b, s"], lambda b, s: [_spec((b, s, 8)), _spec((8,))]),
    ("mha", multi_head_attention, ["b, s"],
     lambda b, s: [_spec((b, s, 8)), _spec((8, 8)), _spec((8, 8)), _spec((8, 8))]),
]
SIZES = [(1, 2), (3, 5), (7, 4)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=REPO / "tests" / "data" / "stablehlo")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    entries = []
    for name, fn, specs in STATIC:
        lowered = jax.jit(fn).lower(*specs)
        (args.out / f"{name}.mlir").write_text(lowered.as_text())
        (args.out / f"{name}.hlo").write_text(lowered.as_text(dialect="hlo"))
        entries.append({"program": name, "kind": "static",
                        "inputs": [[list(s.shape), str(s.dtype)] for s in specs]})
    for name, fn, dims, make in SYMBOLIC:
        syms = export.symbolic_shape(dims[0])
        exported = export.export(jax.jit(fn))(*make(*syms))
        (args.out / f"{name}.dyn.mlir").write_text(exported.mlir_module())
        for sizes in SIZES:
            concrete = make(*sizes[: len(syms)])
            lowered = jax.jit(fn).lower(*concrete)
            tag = "x".join(str(n) for n in sizes[: len(syms)])
            (args.out / f"{name}.at{tag}.mlir").write_text(lowered.as_text())
            (args.out / f"{name}.at{tag}.hlo").write_text(lowered.as_text(dialect="hlo"))
        entries.append({"program": name, "kind": "symbolic", "dims": dims[0],
                        "sizes": [list(s[: len(syms)]) for s in SIZES]})
    manifest = {"generator": "tools/dump_jax_stablehlo.py", "jax_version": jax.__version__,
                "jaxlib_version": jaxlib.__version__, "programs": entries}
    (args.out / "MANIFEST.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
