"""What every subcommand shares: input reading, usage errors, verdict output and exit codes.

Subcommand modules raise `VerifidxError`s (`ParseError`, `UsageError`, ...) and return an exit
code; `verifidx.cli.main` is the one place that turns errors into `error: ...` lines and codes.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..errors import ParseError, VerifidxError
from ..indexing_map import IndexingMap
from ..smt import Verdict
from ..syntax import parse_map
from ..work import Engine, engine_for

EXIT_OK = 0
EXIT_FAILED = 1  # a check, proof or comparison failed
EXIT_ERROR = 2  # bad input or usage: one `error: ...` line on stderr
EXIT_UNKNOWN = 3  # the solver could not decide
EXIT_INTERNAL = 70  # a bug in verifidx (EX_SOFTWARE)

Run = Callable[[argparse.Namespace], int]

if TYPE_CHECKING:
    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]
else:
    Subparsers = argparse._SubParsersAction


class UsageError(VerifidxError):
    """Bad command-line usage (exit 2)."""


class Parser(argparse.ArgumentParser):
    """argparse, but a usage mistake is a UsageError (one line, exit 2), not argparse's exit."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message}")


def add_command(sub: Subparsers, name: str, help_text: str, run: Run) -> argparse.ArgumentParser:
    """A subcommand parser whose `run(args) -> exit code` the dispatcher calls."""
    p = sub.add_parser(name, help=help_text, description=help_text)
    p.set_defaults(run=run)
    return p


def read_text(arg: str | None, what: str = "map") -> tuple[str, str]:
    """Text from an argument, a file path (`@path` or an existing file), or stdin (`-`/none)."""
    if arg is None or arg == "-":
        if sys.stdin is None or sys.stdin.isatty():
            raise UsageError(f"no {what} given (pass it as an argument or on stdin)")
        return sys.stdin.read(), "<stdin>"
    path = arg[1:] if arg.startswith("@") else arg
    if arg.startswith("@") or ("\n" not in arg and len(arg) < 4096 and os.path.isfile(path)):
        try:
            with open(path, "rb") as fh:
                return decode_utf8(fh.read(), path), path
        except OSError as err:
            raise UsageError(f"cannot read {path}: {err.strerror}") from None
    return arg, "<argument>"


def read_file(path: str) -> tuple[str, str]:
    """A whole input file (`-` is stdin) as UTF-8 text, with the name errors should cite."""
    if path == "-":
        return sys.stdin.read(), "<stdin>"
    try:
        with open(path, "rb") as fh:
            return decode_utf8(fh.read(), path), path
    except OSError as err:
        raise UsageError(f"cannot read {path}: {err.strerror}") from None


def decode_utf8(data: bytes, source: str) -> str:
    """UTF-8 text, or a ParseError at the line and column of the first byte that is not."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        column = err.start - (data.rfind(b"\n", 0, err.start) + 1) + 1
        raise ParseError(f"not UTF-8 text (byte 0x{data[err.start]:02x})", line, column,
                         source) from None


def load_map(arg: str | None) -> IndexingMap:
    text, source = read_text(arg)
    return parse_map(text, source)


def ints(text: str, what: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UsageError(f"--{what} takes comma-separated integers, got {text!r}") from None


def verdict_json(v: Verdict) -> dict[str, object]:
    return {"holds": v.holds, "counterexample": v.counterexample, "lhs_value": v.lhs_value,
            "rhs_value": v.rhs_value, "message": v.message, "seconds": round(v.seconds, 6)}


def verdicts_exit(holds: list[bool | None]) -> int:
    """1 when any answer is no, else 3 when any is unknown, else 0."""
    if any(h is False for h in holds):
        return EXIT_FAILED
    if any(h is None for h in holds):
        return EXIT_UNKNOWN
    return EXIT_OK


def add_engine_flags(p: argparse.ArgumentParser) -> None:
    """Where independent work items run (`verifidx.work`): in this process by default."""
    p.add_argument("--workers", type=int, metavar="N",
                   help="run the work items on a local Dask cluster of N worker processes "
                        "(needs verifidx[distributed])")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="run the work items on the Dask scheduler at ADDRESS (default: "
                        "$DASK_SCHEDULER_ADDRESS when set; needs verifidx[distributed])")


def engine(args: argparse.Namespace) -> Engine:
    return engine_for(getattr(args, "workers", None), getattr(args, "scheduler", None))
