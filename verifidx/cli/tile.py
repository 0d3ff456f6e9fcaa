"""`verifidx tile`: symbolic tiles of a map, or the tiles of every value of a fusion, proven.

    verifidx tile "(d0) -> (d0 floordiv 8, d0 mod 8), domain: d0 in [0, 63]"
    verifidx tile fusion.hlo --tile-sizes 1,10 [--computation NAME] [--json] [--no-prove]

docs/tiling.md has the JSON contract.

`tile MAP` prints the symbolic tile (XLA's layout) and its proofs; exit 0 with a tile, 1 when no
tile exists (the reason is printed). `tile FILE.hlo` prints every value's tile; a fusion that cannot
be tiled with those sizes is one `error:` line and exit 2.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..hlo import parse_hlo
from ..syntax import parse_map
from ..tiling.proof import UNKNOWN, TileProof, prove_exact, prove_sound
from ..tiling.propagation import propagate
from ..tiling.symbolic_tile import NoTile, SymbolicTile, symbolic_tile
from ..work import show_progress
from .common import EXIT_FAILED, Subparsers, UsageError, add_command, read_file, read_text


def register(sub: Subparsers) -> None:
    p = add_command(sub, "tile", "symbolic tiles of a map, or the tiles of every value of a "
                                 "fusion, proven", _run)
    p.add_argument("input", help="map text (or @file), or an HLO file (.hlo / starting with "
                                 "HloModule)")
    p.add_argument("--tile-sizes", help="tile sizes of the root, comma-separated (HLO input); a "
                                        "dot root takes its contracting sizes first")
    p.add_argument("--computation", help="the fused computation to tile (default: the one the "
                                         "entry's root fusion calls)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--no-prove", action="store_true",
                   help="skip the Z3 proofs (every proof is reported as unknown)")
    p.add_argument("--timeout-ms", type=int, default=5000, help="per solver query")


def _sizes(text: str | None) -> list[int]:
    if text is None:
        raise UsageError("an HLO input needs --tile-sizes, e.g. --tile-sizes 1,10")
    try:
        sizes = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UsageError(f"--tile-sizes takes comma-separated integers, got {text!r}") from None
    if not sizes or any(s < 1 for s in sizes):
        raise UsageError(f"--tile-sizes must be positive integers, got {text!r}")
    return sizes


def _is_hlo(text: str) -> bool:
    return text.lstrip().startswith("HloModule")


def _proof_json(p: TileProof) -> dict[str, Any]:
    return {"verdict": p.verdict, "counterexample": p.counterexample, "message": p.message}


def _tile_json(tile: SymbolicTile, sound: TileProof, exact: TileProof) -> dict[str, Any]:
    return {
        "offset_map": tile.offset_map_text, "size_map": tile.size_map_text,
        "stride_map": tile.stride_map_text,
        "rt_vars": [[v.bounds.lo, v.bounds.hi] for v in tile.rt_vars],
        "constraints": tile.constraints.to_text(), "text": tile.to_text(),
        "high_padding_ignored": tile.ignored_constraints,
        "proof": sound.verdict, "exact": exact.proved,
        "soundness": _proof_json(sound), "exactness": _proof_json(exact),
    }


def _run_map(text: str, source: str, args: argparse.Namespace) -> int:
    m = parse_map(text, source)
    tile = symbolic_tile(m)
    if isinstance(tile, NoTile):
        if args.json:
            print(json.dumps({"tile": None, "reason": tile.reason}))
        else:
            print(f"no tile: {tile.reason}")
        return EXIT_FAILED
    if args.no_prove:
        sound = exact = TileProof(UNKNOWN, message="not proven (--no-prove)")
    else:
        sound, exact = prove_sound(tile, args.timeout_ms), prove_exact(tile, args.timeout_ms)
    if args.json:
        print(json.dumps({"tile": _tile_json(tile, sound, exact)}, indent=2))
        return 0
    print(tile.to_text())
    for label, p in (("soundness", sound), ("exactness", exact)):
        extra = f": {p.message}" if p.message else ""
        print(f"{label}: {p.verdict}{extra}")
    return 0


def _run_hlo(text: str, source: str, args: argparse.Namespace) -> int:
    module = parse_hlo(text, source)
    try:
        tiled = propagate(module, args.computation, _sizes(args.tile_sizes),
                          prove=not args.no_prove, timeout_ms=args.timeout_ms,
                          progress=show_progress("json" if args.json else "text"))
    except KeyError as err:
        raise UsageError(f"{source}: no computation {err.args[0]!r}") from None
    if args.json:
        print(json.dumps(tiled.to_json(), indent=2))
        return 0
    print(f"computation {tiled.computation}, tile sizes {list(tiled.tile_sizes)}, "
          f"{tiled.num_programs} programs")
    print(f"constraints: {tiled.constraints.to_text()}")
    for t in tiled.instructions:
        print(f"{t.name} = {t.opcode} {t.shape}: sizes {list(t.tile_sizes)}, strides "
              f"{list(t.tile_strides)}, offsets {t.tile_offsets_indexing}, "
              f"exact {str(t.exact).lower()}, proof {t.proof.verdict}")
    return 0


def _run(args: argparse.Namespace) -> int:
    arg = args.input
    if arg.endswith(".hlo") and not arg.startswith("@"):
        text, source = read_file(arg)
    else:
        text, source = read_text(arg)
    if _is_hlo(text):
        return _run_hlo(text, source, args)
    if args.tile_sizes or args.computation:
        raise UsageError("--tile-sizes and --computation apply to HLO input only")
    return _run_map(text, source, args)
