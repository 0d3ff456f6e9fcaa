"""The `verifidx` command: one module per subcommand, one error and exit-code path (here).

Exit codes: 0 success; 1 a check, proof or comparison failed; 2 bad input or usage, with one line
`error: <file>:<line>:<column>: <what was expected>` on stderr and never a traceback; 3 the solver
could not decide; 70 an internal error (a bug; the message asks for a report).

Adding a subcommand is one new module in this package with `register(sub)` (see
`verifidx.cli.common.add_command`) and one entry in `SUBCOMMANDS` below; docs/architecture.md
says more.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Sequence
from types import ModuleType
from typing import TextIO

from ..errors import VerifidxError
from ..native import build
from ..version import __version__
from . import coalescing, graph, indexing, layout, map, rules, simplify, subst, tile
from .common import EXIT_ERROR, EXIT_INTERNAL, Parser

SUBCOMMANDS: tuple[ModuleType, ...] = (map, simplify, rules, indexing, graph, layout, tile,
                                        coalescing, subst)
"""Every subcommand module, in the order `verifidx --help` lists them."""


def build_parser() -> Parser:
    parser = Parser(prog="verifidx", description="Indexing maps, proven.")
    parser.add_argument("--version", action="version",
                        version=f"verifidx {__version__}, {build().describe()}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for module in SUBCOMMANDS:
        module.register(sub)
    return parser


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: TextIO | None = None, line: str | None = None) -> None:
    """verifidx's own warnings (a rule left out of the simplifier, ...) as one line, like the
    errors; other warnings as Python prints them."""
    if category.__module__.startswith("verifidx."):
        print(f"warning: {message}", file=file or sys.stderr)
    else:
        _python_show_warning(message, category, filename, lineno, file, line)


_python_show_warning = warnings.showwarning


def main(argv: Sequence[str] | None = None) -> int:
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    try:
        args = build_parser().parse_args(argv)
        code: int = args.run(args)
        return code
    except VerifidxError as err:  # ParseError, UsageError, UnsupportedError, EvaluationError
        print(f"error: {err}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as err:  # noqa: BLE001 - the CLI never shows a traceback
        print(f"internal error: {type(err).__name__}: {err} (please report this)",
              file=sys.stderr)
        return EXIT_INTERNAL


__all__ = ["SUBCOMMANDS", "build_parser", "main"]
