"""The `verifidx` command. Errors are one line on stderr and exit code 2, never a traceback.

Subcommands register themselves in `COMMANDS` (name -> (configure parser, run)); each module that
owns a feature adds its own, so this file stays a thin dispatcher.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence

from .errors import EvaluationError, ParseError, UnsupportedError, VerifidxError
from .indexing_map import IndexingMap
from .syntax import print_map

Configure = Callable[[argparse.ArgumentParser], None]
Run = Callable[[argparse.Namespace], int]
COMMANDS: dict[str, tuple[str, Configure, Run]] = {}


def command(name: str, help_text: str) -> Callable[[Configure], Callable[[Run], Run]]:
    """Register a subcommand: `@command("x", "...")(configure)(run)`."""

    def with_configure(configure: Configure) -> Callable[[Run], Run]:
        def with_run(run: Run) -> Run:
            COMMANDS[name] = (help_text, configure, run)
            return run

        return with_run

    return with_configure


class UsageError(VerifidxError):
    """Bad command-line usage (exit 2)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message}")


def read_text(arg: str | None, what: str = "map") -> tuple[str, str]:
    """Text from an argument, a file path (`@path` or an existing file), or stdin (`-`/none)."""
    import os

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


def decode_utf8(data: bytes, source: str) -> str:
    """UTF-8 text, or a ParseError at the line and column of the first byte that is not."""
    from .errors import ParseError

    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        column = err.start - (data.rfind(b"\n", 0, err.start) + 1) + 1
        raise ParseError(f"not UTF-8 text (byte 0x{data[err.start]:02x})", line, column,
                         source) from None


def load_map(arg: str | None) -> IndexingMap:
    from .syntax import parse_map

    text, source = read_text(arg)
    return parse_map(text, source)


# -- verifidx map ... ---------------------------------------------------------------------------


def _configure_map(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", required=True, parser_class=_Parser)
    pr = sub.add_parser("print", help="parse and print canonically")
    pr.add_argument("map", nargs="?", help="map text, a file, or - for stdin")
    pr.add_argument("--slash", action="store_true", help="print floor division as '/'")
    pr.add_argument("--mlir", action="store_true", help="print as MLIR affine_map<...>")
    pr.add_argument("--multiline", action="store_true", help="XLA's multi-line layout")
    eq = sub.add_parser("equal", help="decide whether two maps denote the same relation")
    eq.add_argument("first")
    eq.add_argument("second")
    eq.add_argument("--timeout-ms", type=int, default=2000)
    em = sub.add_parser("empty", help="decide whether a map's domain is empty")
    em.add_argument("map", nargs="?")
    em.add_argument("--timeout-ms", type=int, default=2000)
    ev = sub.add_parser("eval", help="evaluate a map at a point")
    ev.add_argument("map")
    ev.add_argument("--dims", default="", help="comma-separated dimension values")
    ev.add_argument("--symbols", default="", help="range then runtime variable values")
    for s in (pr, eq, em, ev):
        s.add_argument("--json", action="store_true", help="machine-readable output")


def _ints(text: str, what: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UsageError(f"--{what} takes comma-separated integers, got {text!r}") from None


def _verdict_json(v: object) -> dict[str, object]:
    from .smt import Verdict

    assert isinstance(v, Verdict)
    return {"holds": v.holds, "counterexample": v.counterexample, "lhs_value": v.lhs_value,
            "rhs_value": v.rhs_value, "message": v.message, "seconds": round(v.seconds, 6)}


def _run_map(args: argparse.Namespace) -> int:
    from . import smt
    from .syntax import print_affine_map

    if args.action == "print":
        m = load_map(args.map)
        if args.mlir:
            text = print_affine_map(m)
        else:
            text = print_map(m, div="/" if args.slash else "floordiv", multiline=args.multiline)
        print(json.dumps({"map": text}) if args.json else text)
        return 0
    if args.action == "eval":
        m = load_map(args.map)
        dims, syms = _ints(args.dims, "dims"), _ints(args.symbols, "symbols")
        try:
            values = m.evaluate(dims, syms)
        except ValueError as err:
            raise UsageError(str(err)) from None
        inside = m.constraints_satisfied(dims, syms) and all(
            x in info.bounds for x, info in zip([*dims, *syms], m.all_vars))
        from .syntax import print_expr, variable_names

        names = variable_names(m)
        point = {names[v]: x for v, x in zip(m.variables, [*dims, *syms])}
        if args.json:
            print(json.dumps({"results": list(values), "in_domain": inside, "point": point}))
        else:
            # the values first (scripts read this line), then, as Alive2 reports a
            # counterexample, the point and each result expression with its value
            print(f"({', '.join(map(str, values))})" + ("" if inside else "  # outside domain"))
            if point:
                print("  at " + ", ".join(f"{k} = {v}" for k, v in point.items()))
            for i, (e, v) in enumerate(zip(m.results, values)):
                print(f"  result {i}: {print_expr(e, names)} = {v}")
        return 0
    if args.action == "equal":
        verdict = smt.equal(load_map(args.first), load_map(args.second), args.timeout_ms)
    else:
        verdict = smt.is_empty(load_map(args.map), args.timeout_ms)
    if args.json:
        print(json.dumps(_verdict_json(verdict)))
    else:
        word = {"equal": ("equal", "not equal"), "empty": ("empty", "not empty")}[args.action]
        label = {True: word[0], False: word[1], None: "unknown"}[verdict.holds]
        print(label + (f": {verdict.message}" if verdict.message else ""))
        if verdict.counterexample and verdict.holds is False:
            print(f"  at {verdict.counterexample}")
    return {True: 0, False: 1, None: 3}[verdict.holds]


COMMANDS["map"] = ("parse, print, compare and evaluate indexing maps", _configure_map, _run_map)


def _load_plugins() -> None:
    """Feature modules register their subcommands on import; missing ones are skipped."""
    import importlib

    for mod in ("verifidx.rules.cli", "verifidx.simplify_cli", "verifidx.hlo.cli",
                "verifidx.layout_cli", "verifidx.fusion_cli"):
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as err:
            if err.name != mod and not mod.startswith(str(err.name)):
                raise


def build_parser() -> argparse.ArgumentParser:
    _load_plugins()
    parser = _Parser(prog="verifidx", description="Indexing maps, proven.")
    from . import __version__

    parser.add_argument("--version", action="version", version=f"verifidx {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name, (help_text, configure, _run) in COMMANDS.items():
        configure(sub.add_parser(name, help=help_text, description=help_text))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        return COMMANDS[args.command][2](args)
    except ParseError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except (UsageError, UnsupportedError, EvaluationError, VerifidxError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as err:  # noqa: BLE001 - the CLI never shows a traceback
        print(f"internal error: {type(err).__name__}: {err} (please report this)",
              file=sys.stderr)
        return 70


if __name__ == "__main__":
    # run through the package module so that subcommands register on the imported copy
    from verifidx.cli import main as _main

    sys.exit(_main())
