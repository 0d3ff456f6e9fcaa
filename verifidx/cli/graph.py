"""`verifidx graph FILE.hlo --computation NAME --format dot|png`: a computation's graph with
edges labelled by their indexing maps (png through Graphviz's `dot` when it is installed)."""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys

from ..analysis.fusion import to_dot
from ..stablehlo import parse_module
from .common import Subparsers, UsageError, add_command, add_opcode_option, read_text


def register(sub: Subparsers) -> None:
    p = add_command(sub, "graph", "draw a computation's graph, edges labelled by indexing maps",
                    _run)
    p.add_argument("file", help="HLO or StableHLO (MLIR) module text; - for stdin")
    p.add_argument("--computation", metavar="NAME", help="default: the entry computation")
    p.add_argument("--format", choices=("dot", "png"), default="dot")
    p.add_argument("-o", "--output", metavar="PATH",
                   help="where to write (default: stdout for dot; required for png)")
    add_opcode_option(p)


def _run(args: argparse.Namespace) -> int:
    text, source = read_text(args.file, "HLO module")
    module = parse_module(text, source, check_shapes=True,  # validated as `indexing` does
                          allow_unknown_opcodes=args.allow_unknown_opcodes)
    name = args.computation.removeprefix("%") if args.computation else None
    if name is not None and name not in module.computations:
        raise UsageError(f"no computation {args.computation!r} in the module")
    dot = to_dot(module, name)
    if args.format == "dot":
        if args.output:
            _write_new(args.output, dot.encode())
        else:
            sys.stdout.write(dot)
        return 0
    if not args.output:
        raise UsageError("--format png needs -o PATH")
    exe = shutil.which("dot")
    if exe is None:
        raise UsageError("png output needs Graphviz's `dot` on PATH (apt-get install graphviz); "
                         "--format dot prints the graph text instead")
    png = subprocess.run([exe, "-Tpng"], input=dot.encode(), capture_output=True, check=False)
    if png.returncode != 0:
        raise UsageError(f"dot failed: {png.stderr.decode(errors='replace').strip()}")
    _write_new(args.output, png.stdout)
    return 0


def _write_new(path: str, data: bytes) -> None:
    """Never overwrite what the user has: refuse an existing file."""
    try:
        with open(path, "xb") as fh:
            fh.write(data)
    except FileExistsError:
        raise UsageError(f"{path} exists; choose another name or remove it") from None
    except OSError as err:
        raise UsageError(f"cannot write {path}: {err.strerror}") from None
