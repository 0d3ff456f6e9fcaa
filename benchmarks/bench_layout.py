"""Tiled layouts: time to build the maps, to enumerate every offset, and to prove a layout.

    .venv/bin/python benchmarks/bench_layout.py

The peer is a numpy reading of XLA's document (pad, reshape into (count, tile) pairs, transpose
the tiles minor, repeat), measured in the same run on the same shapes; the two offset lists are
also compared, so the table doubles as a check.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's verifidx

from verifidx.hlo.layout import TiledShape, check_layout, parse_shape  # noqa: E402

SHAPES = [
    "f32[3,5]{1,0:T(2,2)}",
    "f32[4,8]{1,0:T(2,4)(2,1)}",
    "f32[2,7,8,11,10]{4,3,2,1,0:T(*,*,2,*,3)}",
    "f32[1024,1024]{1,0:T(8,128)}",
    "bf16[1024,1000]{1,0:T(8,128)(2,1)}",
    "s8[64,33,517]{0,2,1:T(8,128)(4,1)}",
    "pred[1000,1000]{1,0:T(32,128)(32,1)}",
    "bf16[128,12,64,64]{3,1,2,0:T(8,128)(2,1)}",
]


def numpy_offsets(s: TiledShape) -> list[int]:
    arr = np.arange(s.num_elements, dtype=np.int64).reshape(s.dims)
    arr = arr.transpose(list(reversed(s.layout.minor_to_major)))
    for tile in s.layout.tiles:
        while arr.ndim < len(tile):
            arr = arr[np.newaxis]
        k = len(tile)
        lead = list(arr.shape[: arr.ndim - k])
        merged, sizes, acc = [], [], 1
        for size, t in zip(arr.shape[arr.ndim - k :], tile):
            acc *= size
            if t != -1:
                merged.append(acc)
                sizes.append(t)
                acc = 1
        arr = arr.reshape(lead + merged)
        counts = [-(-d // t) for d, t in zip(merged, sizes)]
        arr = np.pad(arr, [(0, 0)] * len(lead)
                     + [(0, c * t - d) for c, t, d in zip(counts, sizes, merged)],
                     constant_values=-1)
        arr = arr.reshape(lead + [x for c, t in zip(counts, sizes) for x in (c, t)])
        nl, g = len(lead), len(sizes)
        arr = arr.transpose(list(range(nl)) + [nl + 2 * j for j in range(g)]
                            + [nl + 2 * j + 1 for j in range(g)])
    flat = arr.reshape(-1)
    where = np.nonzero(flat >= 0)[0]
    out = np.empty(s.num_elements, dtype=np.int64)
    out[flat[where]] = where
    return out.tolist()  # type: ignore[no-any-return]


def timed(fn):  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def main() -> None:
    header = (f"{'shape':44} {'elements':>9} {'buffer':>9} {'maps ms':>8} {'offsets ms':>10} "
              f"{'numpy ms':>9} {'same':>5} {'proof ms':>9} {'proved':>6}")
    print(header)
    print("-" * len(header))
    for text in SHAPES:
        s = parse_shape(text)
        fresh = parse_shape(text)
        _, t_maps = timed(lambda f=fresh: (f.to_physical_map(), f.to_logical_map(),
                                           f.offset_map(), f.from_offset_map()))
        ours, t_ours = timed(s.offsets)
        ref, t_ref = timed(lambda s=s: numpy_offsets(s))
        proof, t_proof = timed(lambda s=s: check_layout(s, timeout_ms=60_000))
        print(f"{text:44} {math.prod(s.dims):>9} {s.buffer_elements:>9} {t_maps * 1e3:>8.1f} "
              f"{t_ours * 1e3:>10.1f} {t_ref * 1e3:>9.1f} {str(ours == ref):>5} "
              f"{t_proof * 1e3:>9.1f} {str(proof.holds):>6}")


if __name__ == "__main__":
    main()
