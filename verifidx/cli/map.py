"""`verifidx map print|compose|equal|empty|eval`: parse, print, compose, compare and evaluate
indexing maps.

`equal` and `empty` exit 0 (yes), 1 (no, with a counterexample) or 3 (the solver could not
decide).
"""

from __future__ import annotations

import argparse
import json

from ..core.syntax import print_affine_map, print_map, print_point
from .common import (
    Parser,
    Subparsers,
    UsageError,
    add_affine_sizes,
    add_command,
    ints,
    load_map,
    verdict_json,
    verdicts_exit,
)


def register(sub: Subparsers) -> None:
    p = add_command(sub, "map", "parse, print, compare and evaluate indexing maps", _run)
    actions = p.add_subparsers(dest="action", required=True, parser_class=Parser)
    pr = actions.add_parser("print", help="parse and print canonically")
    pr.add_argument("map", nargs="?", help="map text, a file, or - for stdin")
    pr.add_argument("--slash", action="store_true", help="print floor division as '/'")
    pr.add_argument("--mlir", action="store_true",
                    help="print as MLIR affine_map<...>, the domain in a trailing comment")
    pr.add_argument("--multiline", action="store_true", help="XLA's multi-line layout")
    co = actions.add_parser("compose", help="apply FIRST, then SECOND (XLA's ComposeIndexingMaps)")
    co.add_argument("first")
    co.add_argument("second")
    co.add_argument("--simplify", action="store_true", help="simplify the result (proven rules)")
    eq = actions.add_parser("equal", help="decide whether two maps denote the same relation")
    eq.add_argument("first")
    eq.add_argument("second")
    eq.add_argument("--timeout-ms", type=int, default=2000)
    em = actions.add_parser("empty", help="decide whether a map's domain is empty")
    em.add_argument("map", nargs="?")
    em.add_argument("--timeout-ms", type=int, default=2000)
    ev = actions.add_parser("eval", help="evaluate a map at a point")
    ev.add_argument("map")
    ev.add_argument("--dims", default="", help="comma-separated dimension values")
    ev.add_argument("--symbols", default="", help="range then runtime variable values")
    ev.add_argument("--sizes", default="", help="size values of a map with sizes: N=16,M=4")
    for s in (pr, co, eq, em, ev):
        s.add_argument("--json", action="store_true", help="machine-readable output")
    for s in (pr, em, ev):
        add_affine_sizes(s)


def _sizes(text: str) -> dict[str, int]:
    """`N=16,M=4` -> {"N": 16, "M": 4}."""
    out: dict[str, int] = {}
    for item in filter(None, (t.strip() for t in text.split(","))):
        name, eq, value = item.partition("=")
        if not eq or not value.strip():
            raise UsageError(f"--sizes: expected NAME=VALUE, found {item!r}")
        out[name.strip()] = ints(value, "sizes")[0]
    return out


def _run(args: argparse.Namespace) -> int:
    if args.action == "print":
        m = load_map(args.map, args)
        if args.mlir:
            try:
                text = print_affine_map(m, domain=True)
            except ValueError as err:  # UNDEFINED, KNOWN EMPTY, min/max or sizes
                raise UsageError(f"--mlir: {err}") from None
        else:
            text = print_map(m, div="/" if args.slash else "floordiv", multiline=args.multiline)
        print(json.dumps({"map": text}) if args.json else text)
        return 0
    if args.action == "compose":
        return _compose(args)
    if args.action == "eval":
        m = load_map(args.map, args)
        dims, syms = ints(args.dims, "dims"), ints(args.symbols, "symbols")
        sizes = _sizes(args.sizes)
        try:
            values = m.evaluate(dims, syms, sizes)
        except ValueError as err:
            raise UsageError(str(err)) from None
        inside = m.constraints_satisfied(dims, syms, sizes) and all(
            x in info.bounds for x, info in zip([*dims, *syms], m.all_vars)) and all(
            sizes[z.name] in z.bounds for z in m.sizes)
        from ..core.syntax import print_expr, variable_names

        names = variable_names(m)
        point = {names[v]: x for v, x in zip(m.variables, [*dims, *syms])}
        point.update(sizes)
        if args.json:
            print(json.dumps({"results": list(values), "in_domain": inside, "point": point}))
        else:
            # the values first (scripts read this line), then, as Alive2 reports a
            # counterexample, the point and each result expression with its value
            print(f"({', '.join(map(str, values))})" + ("" if inside else "  # outside domain"))
            if point:
                print(f"  at {print_point(point)}")
            for i, (e, v) in enumerate(zip(m.results, values)):
                print(f"  result {i}: {print_expr(e, names)} = {v}")
        return 0
    from ..solve import smt  # only the questions for the solver load it

    if args.action == "equal":
        verdict = smt.equal(load_map(args.first), load_map(args.second), args.timeout_ms)
    else:
        verdict = smt.is_empty(load_map(args.map, args), args.timeout_ms)
    if args.json:
        print(json.dumps(verdict_json(verdict)))
    else:
        word = {"equal": ("equal", "not equal"), "empty": ("empty", "not empty")}[args.action]
        label = {True: word[0], False: word[1], None: "unknown"}[verdict.holds]
        print(label + (f": {verdict.message}" if verdict.message else ""))
        if verdict.counterexample and verdict.holds is False:
            print(f"  at {print_point(verdict.counterexample)}")
    return verdicts_exit([verdict.holds])


def _compose(args: argparse.Namespace) -> int:
    from ..core.indexing_map import compose

    first, second = load_map(args.first), load_map(args.second)
    try:
        m = compose(first, second)
    except ValueError as err:  # results of FIRST do not match the dimensions of SECOND
        raise UsageError(str(err)) from None
    if args.simplify:
        m = m.simplify()
    text = print_map(m)
    print(json.dumps({"map": text}) if args.json else text)
    return 0
