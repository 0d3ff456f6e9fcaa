"""`verifidx tile`: symbolic tiles of a map, or the tiles of every value of a fusion, proven.

    verifidx tile "(d0) -> (d0 floordiv 8, d0 mod 8), domain: d0 in [0, 63]"
    verifidx tile fusion.hlo --tile-sizes 1,10 [--computation NAME] [--json] [--no-prove]
    verifidx tile --batch DIR|FILE|@LIST ... --tile-sizes 1,10 -o OUT.jsonl [--workers N]

docs/tiling.md has the JSON contract.

`tile MAP` prints the symbolic tile (XLA's layout) and its proofs; exit 0 with a tile, 1 when no
tile exists (the reason is printed). `tile FILE.hlo` prints every value's tile, and every value that
gets none with the reason (`no tile: ...`, exit 1); bad input (malformed HLO, a wrong number of tile
sizes) is one `error:` line and exit 2.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..analysis.tiling.proof import UNKNOWN, TileProof, prove_exact, prove_sound
from ..analysis.tiling.propagation import SymbolicTiling, analyze, propagate
from ..analysis.tiling.symbolic_tile import NoTile, SymbolicTile, symbolic_tile
from ..core.syntax import parse_map
from ..core.work import show_progress
from .batch import tile_options
from .common import (
    EXIT_FAILED,
    Subparsers,
    UsageError,
    add_batch_flags,
    add_command,
    add_opcode_option,
    engine,
    looks_like_hlo,
    read_file,
    read_hlo,
    read_text,
    run_batch,
)


def register(sub: Subparsers) -> None:
    p = add_command(sub, "tile", "symbolic tiles of a map, or the tiles of every value of a "
                                 "fusion, proven", _run)
    p.add_argument("input", nargs="+", metavar="INPUT",
                   help="map text (or @file), or an HLO file (.hlo, or text that starts, after "
                        "comments, with HloModule or a computation); with --batch: HLO files, "
                        "directories, @LIST")
    p.add_argument("--tile-sizes", help="tile sizes of the root, comma-separated (HLO input); a "
                                        "dot root takes its contracting sizes first; empty (or "
                                        "left out) for a scalar root")
    p.add_argument("--computation", help="the fused computation to tile (default: the one the "
                                         "entry's root fusion calls)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--no-prove", action="store_true",
                   help="skip the Z3 proofs (every proof is reported as unknown)")
    p.add_argument("--timeout-ms", type=int, default=5000, help="per solver query")
    add_opcode_option(p)
    add_batch_flags(p)


def _sizes(text: str | None, sym: SymbolicTiling) -> list[int]:
    """The tile sizes the analysis needs: as many as its parameters, each at least 1."""
    need = sym.num_parameters
    if text is None:
        if need == 0 or not sym.entries:
            return []
        raise UsageError("an HLO input needs --tile-sizes, e.g. --tile-sizes 1,10")
    try:
        sizes = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UsageError(f"--tile-sizes takes comma-separated integers, got {text!r}") from None
    if any(s < 1 for s in sizes):
        raise UsageError(f"--tile-sizes must be positive integers, got {text!r}")
    if sym.analysed and len(sizes) != need:
        first = "the contracting sizes first, then the output's; " if sym.contracting_dims \
            else ""
        raise UsageError(f"--tile-sizes: {sym.computation} needs {need} tile sizes ({first}its "
                         f"root is {list(sym.output_dims)}), got {len(sizes)}")
    return sizes


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
    module = read_hlo(text, source, args.allow_unknown_opcodes)
    if args.computation and args.computation.removeprefix("%") not in module.computations:
        raise UsageError(f"{source}: no computation {args.computation!r}")
    sym = analyze(module, args.computation, keep_untiled=True)
    tiled = propagate(module, sym.computation, _sizes(args.tile_sizes, sym),
                      prove=not args.no_prove, timeout_ms=args.timeout_ms, analysis=sym,
                      keep_untiled=True,
                      progress=show_progress("json" if args.json else "text"))
    code = EXIT_FAILED if tiled.untiled else 0
    if args.json:
        print(json.dumps(tiled.to_json(), indent=2))
        return code
    if tiled.constraints is None:  # an unsupported root: only its reason below
        print(f"computation {tiled.computation}, tile sizes {list(tiled.tile_sizes)}")
    else:
        print(f"computation {tiled.computation}, tile sizes {list(tiled.tile_sizes)}, "
              f"{tiled.num_programs} programs")
        print(f"constraints: {tiled.constraints.to_text()}")
        if tiled.num_programs == 0:
            print("the root has no elements (a dimension of size 0): no programs, nothing "
                  "to tile")
    for t in tiled.instructions:
        print(f"{t.name} = {t.opcode} {t.shape}: sizes {list(t.tile_sizes)}, strides "
              f"{list(t.tile_strides)}, offsets {t.tile_offsets_indexing}, "
              f"exact {str(t.exact).lower()}, proof {t.proof.verdict}")
    for u in tiled.untiled:
        print(f"{u.name} = {u.opcode} {u.shape}: no tile: {u.reason}")
    return code


def _batch_sizes(text: str | None) -> list[int] | None:
    """--tile-sizes of a batch: the same for every file (a file that needs another number of
    them gets an error record)."""
    if text is None:
        return None
    try:
        sizes = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UsageError(f"--tile-sizes takes comma-separated integers, got {text!r}") from None
    if any(s < 1 for s in sizes):
        raise UsageError(f"--tile-sizes must be positive integers, got {text!r}")
    return sizes


def _run(args: argparse.Namespace) -> int:
    if args.timeout_ms < 1:
        raise UsageError("--timeout-ms must be positive")
    if args.batch:
        return run_batch(args, args.input, tile_options(
            _batch_sizes(args.tile_sizes), args.computation, not args.no_prove, args.timeout_ms,
            args.allow_unknown_opcodes))
    if len(args.input) != 1 or args.output:
        raise UsageError("give one INPUT, or --batch (with --output) to tile several files")
    engine(args)  # a usage check only: one input is one item, tiled here
    arg = args.input[0]
    is_file = arg.endswith(".hlo") and not arg.startswith("@")
    if is_file:
        text, source = read_file(arg)
    else:
        text, source = read_text(arg)
    if is_file or looks_like_hlo(text):
        return _run_hlo(text, source, args)
    if args.tile_sizes or args.computation:
        raise UsageError("--tile-sizes and --computation apply to HLO input only")
    return _run_map(text, source, args)
