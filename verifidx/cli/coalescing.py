"""`verifidx coalescing FILE.hlo`: whether each fusion operand's reads coalesce.

    verifidx coalescing module.hlo [--json] [--warp-size 32] [--transaction-bytes 128] [--unroll 1]
    verifidx coalescing --batch DIR|FILE|@LIST ... -o OUT.jsonl [--workers N]

docs/tiling.md has the JSON contract and the thread order used. The module is validated as
`verifidx indexing` validates it (`common.read_hlo`).
"""

from __future__ import annotations

import argparse
import json

from ..analysis.tiling.coalescing import TRANSACTION_BYTES, WARP_SIZE, coalescing, loop_thread_order
from .batch import coalescing_options
from .common import (
    Subparsers,
    UsageError,
    add_batch_flags,
    add_command,
    add_opcode_option,
    engine,
    read_file,
    read_hlo,
    run_batch,
)


def register(sub: Subparsers) -> None:
    p = add_command(sub, "coalescing", "whether each fusion operand's reads coalesce "
                                       "(loop-emitter thread order)", _run)
    p.add_argument("hlo", nargs="+", metavar="FILE",
                   help="an HLO module file (with --batch: files, directories, @LIST)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--warp-size", type=int, default=WARP_SIZE)
    p.add_argument("--transaction-bytes", type=int, default=TRANSACTION_BYTES)
    p.add_argument("--unroll", type=int, default=1,
                   help="output elements per thread in the loop emitter's order")
    add_opcode_option(p)
    add_batch_flags(p)


def _run(args: argparse.Namespace) -> int:
    for name, v in (("--warp-size", args.warp_size),
                    ("--transaction-bytes", args.transaction_bytes), ("--unroll", args.unroll)):
        if v < 1:
            raise UsageError(f"{name} must be at least 1, got {v}")
    if args.batch:
        return run_batch(args, args.hlo, coalescing_options(
            args.warp_size, args.transaction_bytes, args.unroll, args.allow_unknown_opcodes))
    if len(args.hlo) != 1 or args.output:
        raise UsageError("give one FILE, or --batch (with --output) to analyse several")
    engine(args)  # a usage check only: one module is one item, analysed here
    text, source = read_file(args.hlo[0])
    module = read_hlo(text, source, args.allow_unknown_opcodes)
    results = coalescing(module, args.warp_size, args.transaction_bytes,
                         loop_thread_order(args.unroll))
    if args.json:
        print(json.dumps({"fusions": [f.to_json() for f in results]}, indent=2))
        return 0
    if not results:
        print("no fusions")
    for f in results:
        print(f"{f.name} (calls {f.computation}):")
        for o in f.operands:
            state = "coalesced" if o.coalesced else "not coalesced"
            print(f"  operand {o.operand_index} ({o.parameter_name}): {state}, "
                  f"{o.transactions_per_warp} transactions per warp load "
                  f"(ideal {o.ideal_transactions})")
    return 0
