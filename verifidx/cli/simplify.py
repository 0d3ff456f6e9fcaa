"""`verifidx simplify MAP [--verify] [--trace]`: simplify a map with the proven rule base."""

from __future__ import annotations

import argparse
import json

from ..core.syntax import print_map
from ..simplifier.engine import SimplifyResult, simplify
from ..simplifier.rule_engine import Step
from .common import EXIT_FAILED, EXIT_OK, Subparsers, UsageError, add_command, load_map


def register(sub: Subparsers) -> None:
    p = add_command(sub, "simplify", "simplify a map with the proven rule base", _run)
    p.add_argument("map", nargs="?", help="map text, @file, a file name, or - for stdin")
    p.add_argument("--verify", action="store_true",
                   help="ask Z3 whether the result equals the input (translation validation)")
    p.add_argument("--trace", action="store_true",
                   help="print every rule applied, with the intervals that justified it")
    p.add_argument("--preserve-point-dims", action="store_true",
                   help="keep dimensions whose interval is a single point")
    p.add_argument("--slash", action="store_true", help="print floor division as '/'")
    p.add_argument("--timeout-ms", type=int, default=5000, help="for --verify")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--rules", action="append", default=[], metavar="DIR",
                   help="your own rule file or directory (repeatable), used on top of the "
                        "bundled rule base; each rule needs a proof from verifidx prove, which "
                        "is re-checked before first use, and a name the bundled base does not "
                        "use")
    p.add_argument("--no-bundled-rules", action="store_true",
                   help="use only the --rules given, not the bundled rule base")


def _run(args: argparse.Namespace) -> int:
    m = load_map(args.map)
    steps: list[Step] = []
    point_dims = "preserve" if args.preserve_point_dims else "replace"
    if args.no_bundled_rules and not args.rules:
        raise UsageError("--no-bundled-rules needs at least one --rules DIR")
    out = simplify(m, verify=args.verify, point_dims=point_dims, trace=steps,
                   timeout_ms=args.timeout_ms, rules=args.rules,
                   bundled=not args.no_bundled_rules)
    verdict = None
    if isinstance(out, SimplifyResult):
        verdict, out = out.verdict, out.map
    text = print_map(out, div="/" if args.slash else "floordiv")
    if args.json:
        doc: dict[str, object] = {"input": print_map(m), "map": text}
        if args.trace:
            doc["trace"] = [{"rule": s.rule, "before": str(s.before), "after": str(s.after),
                             "bounds": {k: [v.lo, v.hi] for k, v in s.bounds.items()},
                             **({"note": s.note} if s.note else {})}
                            for s in steps]
        if verdict is not None:
            doc["verified"] = getattr(verdict, "holds", None)
            doc["message"] = getattr(verdict, "message", "")
        print(json.dumps(doc))
    else:
        if args.trace:
            for s in steps:
                print(f"  {s}")
        print(text)
        if verdict is not None:
            holds = getattr(verdict, "holds", None)
            word = {True: "verified: equal to the input (Z3)",
                    False: "VERIFICATION FAILED: not equal to the input",
                    None: "verification unknown"}[holds]
            message = getattr(verdict, "message", "")
            print(word + (f" ({message})" if message and holds is not True else ""))
    if verdict is not None and getattr(verdict, "holds", None) is False:
        return EXIT_FAILED
    return EXIT_OK
