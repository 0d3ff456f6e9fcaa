"""Issue 14 benchmark: `verifidx indexing` on StableHLO text vs on the HLO text of the same program.

The program is a 12-layer transformer (multi-head attention with reshape/transpose/dot, layer
norm, GELU MLP) lowered by JAX; the peer is the same module's HLO text, read by verifidx's HLO
parser, measured in the same run. A third row is a 2-layer version exported by `jax.export` with
symbolic batch and sequence sizes (StableHLO only: HLO text has no symbolic sizes).
Each row runs the whole `verifidx indexing FILE --json` command in-process (parse, convert,
per-computation maps with proven deduplication, JSON), median of 3 runs, every cache
(computations, solver verdicts) cleared before each run.

Run: .venv/bin/python benchmarks/bench_stablehlo.py  (needs: pip install -e '.[stablehlo]')
Target: StableHLO within 2x of the HLO text.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # this checkout's verifidx

from common import print_table  # noqa: E402

LAYERS = 12
DYNAMIC_LAYERS = 2
"""The symbolic row is smaller: deduplication compares maps over 2^31-element dimensions for
every size (isl decides those linear in their sizes; the others go to the solver)."""


def transformer_texts(layers: int = LAYERS) -> tuple[str, str, str]:
    """(StableHLO text, HLO text, symbolic StableHLO text) of a transformer."""
    import jax
    import jax.numpy as jnp
    from jax import export

    emb, heads, ff = 32, 4, 64

    def layer_norm(x, g):
        mean = jnp.mean(x, axis=-1, keepdims=True)
        var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
        return (x - mean) * jax.lax.rsqrt(var + 1e-5) * g

    def block(x, p):
        b, s, e = x.shape
        h = layer_norm(x, p["g1"])
        q = (h @ p["wq"]).reshape(b, s, heads, e // heads).transpose(0, 2, 1, 3)
        k = (h @ p["wk"]).reshape(b, s, heads, e // heads).transpose(0, 2, 1, 3)
        v = (h @ p["wv"]).reshape(b, s, heads, e // heads).transpose(0, 2, 1, 3)
        a = jax.nn.softmax(jnp.einsum("bhqd,bhkd->bhqk", q, k) / 4.0, axis=-1)
        o = jnp.einsum("bhqk,bhkd->bhqd", a, v).transpose(0, 2, 1, 3).reshape(b, s, e)
        x = x + o @ p["wo"]
        h = layer_norm(x, p["g2"])
        return x + jax.nn.gelu(h @ p["w1"], approximate=False) @ p["w2"]

    def model(x, params):
        for p in params:
            x = block(x, p)
        return x

    f32 = jnp.float32

    def spec(*shape):
        return jax.ShapeDtypeStruct(shape, f32)

    params = [{"g1": spec(emb), "g2": spec(emb), "wq": spec(emb, emb), "wk": spec(emb, emb),
               "wv": spec(emb, emb), "wo": spec(emb, emb), "w1": spec(emb, ff),
               "w2": spec(ff, emb)} for _ in range(layers)]
    lowered = jax.jit(model).lower(spec(2, 16, emb), params)
    b, s = export.symbolic_shape("b, s")
    exported = export.export(jax.jit(model))(jax.ShapeDtypeStruct((b, s, emb), f32), params)
    return lowered.as_text(), lowered.as_text(dialect="hlo"), exported.mlir_module()


def indexing_seconds(path: str) -> tuple[float, int]:
    """Median seconds of `verifidx indexing PATH --json` in-process, and the JSON's size."""
    from verifidx.analysis import computation_maps as cm
    from verifidx.analysis import dedup
    from verifidx.cli import main

    times, size = [], 0
    for _ in range(3):
        cm._CACHE.clear()  # every run from scratch, as a fresh process would
        dedup._VERDICTS.clear()
        out = io.StringIO()
        start = time.perf_counter()
        with contextlib.redirect_stdout(out):
            code = main(["indexing", path, "--json"])
        times.append(time.perf_counter() - start)
        assert code == 0, code
        size = len(out.getvalue())
    times.sort()
    return times[1], size


def main() -> int:
    try:
        shlo, hlo, _ = transformer_texts()
        _, _, dynamic = transformer_texts(DYNAMIC_LAYERS)
    except ImportError:
        print("bench_stablehlo needs jax: pip install -e '.[stablehlo]'")
        return 2
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for name, text in (("mlir", shlo), ("hlo", hlo), ("dyn.mlir", dynamic)):
            paths[name] = os.path.join(tmp, f"transformer.{name}")
            Path(paths[name]).write_text(text)
        t_hlo, n_hlo = indexing_seconds(paths["hlo"])
        t_shlo, n_shlo = indexing_seconds(paths["mlir"])
        t_dyn, n_dyn = indexing_seconds(paths["dyn.mlir"])
    rows.append([f"{LAYERS}-layer transformer, HLO text (peer)", f"{len(hlo) // 1024} KiB",
                 f"{t_hlo:.2f} s", "1.00x", f"{n_hlo // 1024} KiB"])
    rows.append([f"{LAYERS}-layer transformer, StableHLO text", f"{len(shlo) // 1024} KiB",
                 f"{t_shlo:.2f} s", f"{t_shlo / t_hlo:.2f}x", f"{n_shlo // 1024} KiB"])
    rows.append([f"{DYNAMIC_LAYERS}-layer transformer, jax.export symbolic (b, s)",
                 f"{len(dynamic) // 1024} KiB", f"{t_dyn:.2f} s", f"{t_dyn / t_hlo:.2f}x",
                 f"{n_dyn // 1024} KiB"])
    print_table(["input", "text", "verifidx indexing --json (median of 3)", "vs HLO", "JSON"],
                rows)
    print(f"\ntarget: StableHLO within 2x of HLO: {'met' if t_shlo <= 2 * t_hlo else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
