"""`verifidx layout SHAPE`: offsets, maps and proofs for a tiled layout.

    verifidx layout "f32[3,5]{1,0:T(2,2)}" --index 2,3 --map --check
    verifidx layout "f32[4,8]{1,0:T(2,4)(2,1)}" --json

Text output shows the physical shape, the buffer size, the offset of `--index`, the maps
(`--map`), the Z3 verdicts (`--check`) and, for 2-D shapes, a grid of offsets like the figures of
XLA's tiled-layout document. `--json` prints one JSON object with at least
`{"shape": ..., "buffer_elements": N}`; `--all-offsets` adds `"offsets": [...]` (the offset of
every element in row-major logical order), streamed, so that it works at real sizes. Nothing else
enumerates elements: the proofs of `--check` are symbolic. Exit code: 0, or 1 when a check or
comparison fails, 3 when the solver could not decide.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..hlo.layout import (
    TiledShape,
    bitcast_map,
    layouts_equivalent,
    parse_shape,
    physical_bitcast_map,
    prove_in_bounds,
    prove_injective,
)
from ..solve.smt import Verdict
from .common import Subparsers, UsageError, add_command, verdict_json, verdicts_exit

GRID_LIMIT = 64  # rows and columns of the offset grid
MEMORY_LIMIT = 512  # buffer elements shown in the memory view


def register(sub: Subparsers) -> None:
    p = add_command(sub, "layout", "offsets, indexing maps and proofs for a tiled memory layout",
                    _run)
    p.add_argument("shape", help="an array shape with a layout, e.g. 'f32[3,5]{1,0:T(2,2)}'")
    p.add_argument("--index", help="a logical index, e.g. 2,3: print its offset")
    p.add_argument("--map", action="store_true",
                   help="print the logical<->physical and logical<->offset indexing maps")
    p.add_argument("--check", action="store_true",
                   help="prove with Z3 that offsets are injective and inside the buffer")
    p.add_argument("--compare", metavar="SHAPE",
                   help="decide whether another layout of the same shape puts every element at "
                        "the same offset")
    p.add_argument("--bitcast-to", metavar="SHAPE",
                   help="print the bitcast map from this shape's index to SHAPE's index")
    p.add_argument("--timeout-ms", type=int, default=2000)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--all-offsets", action="store_true",
                   help="with --json: also list the offset of every element (streamed)")


def _index(text: str, shape: TiledShape) -> tuple[int, ...]:
    try:
        idx = tuple(int(x) for x in text.strip("()[] ").split(",") if x.strip())
    except ValueError:
        raise UsageError(f"--index takes comma-separated integers, got {text!r}") from None
    if len(idx) != shape.rank or not all(0 <= i < n for i, n in zip(idx, shape.dims)):
        raise UsageError(f"--index {text} is not an element of {list(shape.dims)}")
    return idx


def _word(v: Verdict, yes: str = "proved", no: str = "refuted") -> str:
    label = {True: yes, False: no, None: "unknown"}[v.holds]
    return f"{label} ({v.seconds:.3f} s)" + (f": {v.message}" if v.holds is not True else "")


def _fmt(values: tuple[int, ...] | list[int]) -> str:
    return "(" + ",".join(map(str, values)) + ")"


def grid(shape: TiledShape, offsets: list[int]) -> list[str]:
    """Rows of the offset of each element of a 2-D shape (row = dim 0, column = dim 1)."""
    rows, cols = shape.dims
    width = max(len(str(max(offsets, default=0))), len(str(cols - 1)))
    lead = len(str(rows - 1))
    lines = [" " * (lead + 2) + " ".join(f"{c:>{width}}" for c in range(cols))]
    for r in range(rows):
        cells = " ".join(f"{o:>{width}}" for o in offsets[r * cols : (r + 1) * cols])
        lines.append(f"{r:>{lead}}  {cells}")
    return lines


def memory(shape: TiledShape, offsets: list[int]) -> list[str]:
    """The buffer in offset order: which element sits at each offset (`.` for padding), one row
    per tile of the first tiling (or per most minor dimension when untiled), at most 16 wide."""
    import itertools

    at: dict[int, tuple[int, ...]] = {}
    indices = itertools.product(*[range(n) for n in shape.dims])
    for idx, off in zip(indices, offsets):
        at[off] = idx
    per_row = shape.physical_shape[-1] if shape.physical_shape else 1
    if shape.steps:
        per_row = 1
        for t in shape.steps[0].group_tiles:
            per_row *= t
    per_row = max(1, min(per_row, 16))
    cells = [_fmt(at[o]) if o in at else "." for o in range(shape.buffer_elements)]
    width = max((len(c) for c in cells), default=1)
    lead = len(str(max(shape.buffer_elements - 1, 0)))
    return [f"{start:>{lead}}: " + " ".join(f"{c:<{width}}" for c in cells[start : start + per_row])
            .rstrip() for start in range(0, len(cells), per_row)]


def _run(args: argparse.Namespace) -> int:
    shape = parse_shape(args.shape, "<argument>")
    verdicts: list[Verdict] = []
    out: dict[str, Any] = {"shape": str(shape), "buffer_elements": shape.buffer_elements}
    out["physical_shape"] = list(shape.physical_shape)
    out["element_size_in_bits"] = shape.element_bits
    out["buffer_bytes"] = shape.buffer_bytes
    text: list[str] = [
        f"shape:          {shape}",
        f"physical shape: {list(shape.physical_shape)}",
        f"buffer:         {shape.buffer_elements} elements ({shape.num_elements} used, "
        f"{shape.buffer_elements - shape.num_elements} padding), {shape.buffer_bytes} bytes "
        f"at {shape.element_bits} bits per element",
    ]
    sizes = [shape.dims[d] for d in shape.layout.major_to_minor]
    for st in shape.steps:
        tile = ",".join("*" if t < 0 else str(t) for t in st.tile)
        text.append(f"  tiling ({tile}): {sizes} -> {list(st.output_sizes)}")
        sizes = list(st.output_sizes)
    if args.index is not None:
        idx = _index(args.index, shape)
        phys, off = shape.physical_index(idx), shape.offset(idx)
        out["index"] = list(idx)
        out["physical_index"] = list(phys)
        out["offset"] = off
        text.append(f"element {_fmt(idx)}: physical index {_fmt(phys)}, offset {off}")
    if args.map:
        maps = {
            "logical_to_physical": shape.to_physical_map(),
            "physical_to_logical": shape.to_logical_map(),
            "logical_to_offset": shape.offset_map(),
            "offset_to_logical": shape.from_offset_map(),
        }
        out["maps"] = {k: str(m) for k, m in maps.items()}
        text.append("maps:")
        text += [f"  {k.replace('_', ' ')}: {m}" for k, m in maps.items()]
    if args.check:
        inj = prove_injective(shape, args.timeout_ms)
        inb = prove_in_bounds(shape, args.timeout_ms)
        verdicts += [inj, inb]
        out["checks"] = {"injective": verdict_json(inj), "in_bounds": verdict_json(inb)}
        text.append(f"injective: {_word(inj)}")
        text.append(f"offsets in [0, {shape.buffer_elements - 1}]: {_word(inb)}")
    if args.compare:
        other = parse_shape(args.compare, "--compare")
        v = layouts_equivalent(shape, other, args.timeout_ms)
        verdicts.append(v)
        out["compare"] = {"shape": str(other), **verdict_json(v)}
        text.append(f"same offsets as {other}: {_word(v, 'yes', 'no')}")
    if args.bitcast_to:
        other = parse_shape(args.bitcast_to, "--bitcast-to")
        logical, physical = bitcast_map(shape, other), physical_bitcast_map(shape, other)
        out["bitcast"] = {"shape": str(other), "logical": str(logical),
                          "physical": str(physical)}
        text.append(f"bitcast to {other}:")
        text.append(f"  logical:  {logical}")
        text.append(f"  physical: {physical}")
    if args.json:
        if args.all_offsets:
            _stream_with_offsets(out, shape)
        else:
            print(json.dumps(out))
        return verdicts_exit([v.holds for v in verdicts])
    show_grid = shape.rank == 2 and max(shape.dims) <= GRID_LIMIT and shape.num_elements > 0
    show_memory = 0 < shape.buffer_elements <= MEMORY_LIMIT
    offsets = shape.offsets() if show_grid or show_memory else []
    if show_grid:
        text.append("offsets (row = dim 0, column = dim 1):")
        text += ["  " + line for line in grid(shape, offsets)]
    if show_memory:
        text.append("memory (offset: element at each offset, '.' = padding):")
        text += ["  " + line for line in memory(shape, offsets)]
    print("\n".join(text))
    return verdicts_exit([v.holds for v in verdicts])


def _stream_with_offsets(out: dict[str, Any], shape: TiledShape, chunk: int = 1 << 14) -> None:
    """`out` as JSON with an `offsets` list written while it is computed."""
    import sys

    write = sys.stdout.write
    head = json.dumps(out)
    write(head[:-1] + (', "offsets": [' if len(head) > 2 else '"offsets": ['))
    buf: list[str] = []
    first = True
    for o in shape.iter_offsets():
        buf.append(str(o))
        if len(buf) >= chunk:
            write(("" if first else ", ") + ", ".join(buf))
            first, buf = False, []
    if buf:
        write(("" if first else ", ") + ", ".join(buf))
    write("]}\n")
