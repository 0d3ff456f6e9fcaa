"""The `verifidx` command: one module per subcommand, one error and exit-code path (here).

Exit codes: 0 success; 1 a check, proof or comparison failed; 2 bad input or usage, with one line
`error: <file>:<line>:<column>: <what was expected>` on stderr and never a traceback; 3 the solver
could not decide; 70 an internal error (a bug; the message asks for a report).

Adding a subcommand is one new module in this package with `register(sub)` (see
`verifidx.cli.common.add_command`) and one entry in `COMMANDS` below; docs/architecture.md
says more. A run imports only the module of its command (`verifidx simplify` never loads Z3,
numpy or the HLO front end); `--help` and unknown words import them all.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Sequence
from importlib import import_module
from types import ModuleType
from typing import TextIO

from ..core.errors import VerifidxError
from ..core.native import build
from ..core.version import __version__
from .common import EXIT_ERROR, EXIT_INTERNAL, Parser

COMMANDS: dict[str, str] = {
    "map": "map", "simplify": "simplify", "prove": "rules", "check": "rules",
    "indexing": "indexing", "graph": "graph", "layout": "layout", "tile": "tile",
    "coalescing": "coalescing", "subst": "subst", "optimize": "subst", "validate": "validate",
    "range": "range",
}
"""Every command word and the module of this package that registers it, in the order
`verifidx --help` lists them."""

#: Modules that must load beside a command's own: the substitution gate (`cli.subst`) joins
#: `prove` and `check` when it is imported, and a check without it would pass unchecked files.
COMPANIONS: dict[str, tuple[str, ...]] = {"rules": ("subst",)}


def subcommands(names: Sequence[str] | None = None) -> tuple[ModuleType, ...]:
    """The subcommand modules (imported now) of the given modules names, default all."""
    wanted = dict.fromkeys(COMMANDS.values() if names is None else names)
    return tuple(import_module(f"{__name__}.{name}") for name in wanted)


def __getattr__(name: str) -> object:
    if name == "SUBCOMMANDS":  # every subcommand module, imported (tests, docs)
        return subcommands()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _command_word(argv: Sequence[str]) -> str | None:
    """The command of a command line when it is plainly given (the first word, after no
    option), else None."""
    return argv[0] if argv and argv[0] in COMMANDS else None


def build_parser(argv: Sequence[str] | None = None) -> Parser:
    """The parser of every subcommand, or, given the command line, of its command only."""
    parser = Parser(prog="verifidx", description="Indexing maps, proven.")
    parser.add_argument("--version", action="version",
                        version=f"verifidx {__version__}, {build().describe()}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    word = None if argv is None else _command_word(argv)
    names = None if word is None else [COMMANDS[word], *COMPANIONS.get(COMMANDS[word], ())]
    for module in subcommands(names):
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
        if argv is None:
            argv = sys.argv[1:]
        args = build_parser(argv).parse_args(argv)
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


__all__ = ["COMMANDS", "build_parser", "main", "subcommands"]
