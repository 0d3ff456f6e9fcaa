"""Mutation testing of `validate_programs`: short JAX programs (every data-movement op, starts
from scalar parameters), the HLO jax gives XLA (BEFORE) and the HLO XLA compiled (AFTER), and
faults seeded in AFTER. `python tests/translation_corpus.py` regenerates
tests/data/translation/corpus.json: for every mutant, whether it changes the results on XLA's
CPU backend (run by `verifidx.clients.xla_runtime` on inputs whose elements are distinct, at
scalar values in range, past either end and negative, and integer arrays filled with each of
them), so the verdict tests run without jax.
"""

from __future__ import annotations

import itertools
import json
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).parent / "data" / "translation" / "corpus.json"
SCALARS = (*range(-10, 11), 100, 2**31 - 1, -(2**31))
"""The values a lone scalar integer parameter takes in turn when a mutant is run: in range,
past either end, negative, the type's extremes."""
PAIRED = (-7, -4, -1, 0, 1, 2, 4, 7, 100)
"""The values of each of two or more scalar parameters, every combination."""


def programs() -> dict[str, tuple[Callable[..., Any], tuple[Any, ...]]]:
    """Name -> (function, example arguments); jax imported here only."""
    import jax.numpy as jnp
    from jax import lax

    x8 = jnp.zeros(8, jnp.float32)
    m44 = jnp.zeros((4, 4), jnp.float32)
    m46 = jnp.zeros((4, 6), jnp.float32)
    t234 = jnp.zeros((2, 3, 4), jnp.float32)
    i = jnp.int32(0)
    idx = jnp.zeros(3, jnp.int32)
    ds, dus = lax.dynamic_slice, lax.dynamic_update_slice
    return {
        "slice": (lambda x: x[2:6], (x8,)),
        "slice_stride": (lambda x: x[1::2], (x8,)),
        "slice_2d": (lambda x: x[1:3, 2:5], (m46,)),
        "reverse": (lambda x: x[::-1], (x8,)),
        "reverse_2d": (lambda x: x[::-1, ::-1], (m46,)),
        "transpose": (lambda x: x.T, (m46,)),
        "transpose_square": (lambda x: x.T, (m44,)),
        "transpose_3d": (lambda x: x.transpose(2, 0, 1), (t234,)),
        "reshape": (lambda x: x.reshape(2, 4), (x8,)),
        "reshape_transpose": (lambda x: x.reshape(2, 4).T, (x8,)),
        "broadcast": (lambda x: jnp.broadcast_to(x, (3, 8)), (x8,)),
        "broadcast_col": (lambda x: jnp.broadcast_to(x[:, None], (8, 3)), (x8,)),
        "pad": (lambda x: jnp.pad(x, (1, 2)), (x8,)),
        "pad_2d": (lambda x: jnp.pad(x, ((1, 0), (0, 2))), (m44,)),
        "pad_interior": (lambda x: lax.pad(x, 0.0, ((1, 2, 1),)), (x8,)),
        "concatenate": (lambda x, y: jnp.concatenate([x, y]), (x8, x8)),
        "concatenate_2d": (lambda x, y: jnp.concatenate([x, y], axis=1), (m44, m44)),
        "concatenate_self": (lambda x: jnp.concatenate([x[:4], x[4:]][::-1]), (x8,)),
        "roll": (lambda x: jnp.roll(x, 3), (x8,)),
        "roll_2d": (lambda x: jnp.roll(x, (1, 2), axis=(0, 1)), (m46,)),
        "dynamic_slice": (lambda x, i: ds(x, (i,), (3,)), (x8, i)),
        "dynamic_slice_2d": (lambda x, i, j: ds(x, (i, j), (2, 3)), (m46, i, i)),
        "dynamic_slice_nested": (lambda x, i: ds(ds(x, (i,), (6,)), (i,), (3,)), (x8, i)),
        "dynamic_slice_nested_2": (lambda x, i, j: ds(ds(x, (i,), (6,)), (j,), (2,)),
                                   (x8, i, i)),
        "dynamic_slice_offset": (lambda x, i: ds(x, (i + 2,), (3,)), (x8, i)),
        "dynamic_slice_scaled": (lambda x, i: ds(x, (2 * i,), (2,)), (x8, i)),
        "dynamic_slice_of_slice": (lambda x, i: ds(x[2:], (i,), (3,)), (x8, i)),
        "dynamic_slice_of_roll": (lambda x, i: ds(jnp.roll(x, 2), (i,), (3,)), (x8, i)),
        "dynamic_slice_of_reverse": (lambda x, i: ds(x[::-1], (i,), (3,)), (x8, i)),
        "dynamic_slice_of_transpose": (lambda x, i: ds(x.T, (i, 0), (2, 4)), (m46, i)),
        "dynamic_slice_of_pad": (lambda x, i: ds(jnp.pad(x, (2, 2)), (i,), (4,)), (x8, i)),
        "dynamic_slice_of_concat": (lambda x, y, i: ds(jnp.concatenate([x, y]), (i,), (4,)),
                                    (x8, x8, i)),
        "dynamic_update_slice": (lambda x, y, i: dus(x, y[:3], (i,)), (x8, x8, i)),
        "dynamic_update_slice_2d": (lambda x, y, i: dus(x, y[:2, :2], (i, i)), (m44, m44, i)),
        "dynamic_update_slice_self": (lambda x: dus(x, x[:3], (1,)).reshape(2, 4), (x8,)),
        "dynamic_update_slice_nested": (lambda x, y, i: dus(x, dus(y[:4], y[4:6], (i,)), (i,)),
                                        (x8, x8, i)),
        "dynamic_update_then_slice": (lambda x, y, i: dus(x, y[:2], (i,))[1:5], (x8, x8, i)),
        "gather": (lambda x, j: x[j], (x8, idx)),
        "gather_2d_rows": (lambda x, j: x[j, :], (m46, idx)),
        "gather_clamped": (lambda x, j: jnp.take(x, j, mode="clip"), (x8, idx)),
        "index_scalar": (lambda x, i: x[i], (x8, i)),
        "fusion_slice_reverse_pad": (lambda x: jnp.pad(x[1:7][::-1], (1, 1)), (x8,)),
        "fusion_transpose_reshape": (lambda x: x.T.reshape(24), (m46,)),
        "fusion_concat_reverse": (lambda x, y: jnp.concatenate([x[::-1], y[2:]]), (x8, x8)),
        "fusion_broadcast_slice": (lambda x: jnp.broadcast_to(x, (4, 8))[1:3, 2:6], (x8,)),
    }


# -- faults seeded in AFTER text -------------------------------------------------------------

_INT_CONST = re.compile(r"(s32\[\]\{?\}?\s+constant\()(-?\d+)(\))")
_CLAMP = re.compile(r"s32\[\]\s+clamp\(([^,()]+),\s*([^,()]+),\s*([^,()]+)\)")
_TRANSPOSE = re.compile(r"(transpose\([^)]*\),\s*dimensions=\{)([\d,]+)(\})")
_SLICE = re.compile(r"slice=\{\[(\d+):(\d+)(:\d+)?\]")
_BITCAST = re.compile(r"(\[[\d,]+\])\{(\d+(?:,\d+)+)\}(\s+bitcast\()")
_CONCAT = re.compile(r"concatenate\(([^,()]+),\s*([^,()]+)\)")
_PAD = re.compile(r"padding=(\d+)_(\d+)")
_DIRECTION = re.compile(r"direction=(LT|GE|GT|LE)")
_FLIP = {"LT": "GE", "GE": "LT", "GT": "LE", "LE": "GT"}


def mutants(after: str) -> Iterator[tuple[str, str]]:
    """(kind, mutated text) for every fault site of `after`, one fault per mutant."""
    for m in _INT_CONST.finditer(after):
        yield "start off by one", _at(after, m, f"{m.group(1)}{int(m.group(2)) + 1}{m.group(3)}")
    for m in _CLAMP.finditer(after):
        lo, x, hi = m.group(1), m.group(2), m.group(3)
        yield "clamp upper bound dropped", _at(after, m, f"s32[] maximum({lo}, {x})")
        yield "clamp lower bound dropped", _at(after, m, f"s32[] minimum({x}, {hi})")
    for m in _TRANSPOSE.finditer(after):
        perm = m.group(2).split(",")
        if len(perm) >= 2:
            perm[0], perm[1] = perm[1], perm[0]
            yield "transpose permutation changed", _at(after, m,
                                                       m.group(1) + ",".join(perm) + m.group(3))
    for m in _SLICE.finditer(after):
        a, b, stride = int(m.group(1)), int(m.group(2)), m.group(3) or ""
        yield "slice window shifted", _at(after, m, f"slice={{[{a + 1}:{b + 1}{stride}]")
        if a > 0:
            yield "slice window shifted back", _at(after, m, f"slice={{[{a - 1}:{b - 1}{stride}]")
    for m in _BITCAST.finditer(after):
        order = m.group(2).split(",")
        order[0], order[1] = order[1], order[0]
        yield "bitcast layout changed", _at(after, m,
                                            f"{m.group(1)}{{{','.join(order)}}}{m.group(3)}")
    for m in _CONCAT.finditer(after):
        yield "concatenate operands swapped", _at(after, m,
                                                  f"concatenate({m.group(2)}, {m.group(1)})")
    for m in _PAD.finditer(after):
        if m.group(1) != m.group(2):
            yield "pad edges swapped", _at(after, m, f"padding={m.group(2)}_{m.group(1)}")
    for m in _DIRECTION.finditer(after):
        yield "comparison flipped", _at(after, m, f"direction={_FLIP[m.group(1)]}")


def _at(text: str, m: re.Match[str], new: str) -> str:
    return text[:m.start()] + new + text[m.end():]


# -- generation (jax) --------------------------------------------------------------------------


def _input_sets(text: str) -> list[list[Any]]:
    import numpy as np

    from verifidx.clients.xla_runtime import _entry_parameters, distinct_inputs

    params = _entry_parameters(text)
    integer = [p for p in params if p.shape.element_type.startswith(("s", "u"))]
    scalars = [p.parameter_number for p in integer if not p.shape.dims]
    arrays = [p.parameter_number for p in integer if p.shape.dims]
    if not scalars:
        sets = [distinct_inputs(text)]
    else:
        values = [(v,) for v in SCALARS] if len(scalars) == 1 else \
            list(itertools.product(PAIRED, repeat=len(scalars)))
        sets = [distinct_inputs(text, dict(zip((f"arg{n}" for n in scalars), vs)))
                for vs in values]
    if not arrays:
        return sets
    # an integer array (gather indices) as made (1, 2, ...), and every element at each value
    # of SCALARS (types' extremes, past either end, negative)
    out = list(sets)
    for base in sets:
        for v in SCALARS:
            filled = [np.full_like(x, v) if k in arrays else x for k, x in enumerate(base)]
            out.append(filled)
    return out


def _same(a: list[list[Any]], b: list[list[Any]]) -> bool:
    import numpy as np

    return len(a) == len(b) and all(
        len(x) == len(y) and all(np.array_equal(u, v, equal_nan=True) for u, v in zip(x, y))
        for x, y in zip(a, b))


def generate() -> dict[str, Any]:
    import jax

    from verifidx.clients.xla_runtime import run_faithful

    out: dict[str, Any] = {"jax": jax.__version__, "scalars": list(SCALARS),
                           "paired": list(PAIRED), "programs": []}
    for name, (f, args) in programs().items():
        lowered = jax.jit(f).lower(*args)
        before, after = lowered.as_text(dialect="hlo"), lowered.compile().as_text()
        sets = _input_sets(before)
        found = list(dict.fromkeys(mutants(after)))  # one mutant per distinct text
        texts = [before, after] + [t for _, t in found]
        runs = run_faithful([(t, sets) for t in texts])
        ref = runs[0][0]
        if isinstance(ref, str):
            print(f"{name}: the reference does not run: {ref}", file=sys.stderr)
            continue
        entry: dict[str, Any] = {"name": name, "before": before, "after": after,
                                 "after_changes_results": _changes(ref, runs[1][0]),
                                 "mutants": []}
        for (kind, text), (res, _) in zip(found, runs[2:]):
            if isinstance(res, str):  # rejected by XLA's verifier or its emitters
                continue
            entry["mutants"].append({"kind": kind, "text": text,
                                     "changes_results": _changes(ref, res)})
        out["programs"].append(entry)
        print(f"{name}: {len(entry['mutants'])} mutants, "
              f"{sum(m['changes_results'] for m in entry['mutants'])} change the results",
              file=sys.stderr)
    return out


def _changes(ref: list[list[Any]], res: list[list[Any]] | str) -> bool | None:
    return None if isinstance(res, str) else not _same(ref, res)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    corpus = generate()
    CORPUS.parent.mkdir(parents=True, exist_ok=True)
    CORPUS.write_text(json.dumps(corpus, indent=1) + "\n", encoding="utf-8")
    n = sum(len(p["mutants"]) for p in corpus["programs"])
    print(f"{len(corpus['programs'])} programs, {n} mutants -> {CORPUS}", file=sys.stderr)
