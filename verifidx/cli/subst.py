"""`verifidx subst prove|generate` and `verifidx optimize`; substitution files join `check`.

    verifidx subst prove [FILES] [--force] [--no-write] [--max-rank R] [--bound N]
    verifidx subst generate [--ops OPS] [--depth 2] [--ranks 1,2,3] [--group-proofs N]
                            [--jobs N | --workers N | --scheduler ADDRESS] [-o FILE]
    verifidx optimize FILE.hlo [--rules FILES] > optimized.hlo

Exit codes: 0 success (every substitution proven), 1 a substitution is not proven, 2 usage or
parse errors (one line on stderr).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..analysis.subst.certificates import gate_results, prove_files
from ..analysis.subst.generalize import GROUP_PROOFS
from ..analysis.subst.prove import (
    DEFAULT_BOUND,
    DEFAULT_BOUNDED_RLIMIT,
    DEFAULT_ENUM_BOUND,
    DEFAULT_MAX_RANK,
    DEFAULT_RLIMIT,
    PROVED,
)
from ..core.work import Engine, show_progress
from ..rules.parser import default_rule_dir
from . import rules as rules_cli
from .common import (
    Parser,
    Subparsers,
    UsageError,
    add_command,
    add_engine_flags,
    add_opcode_option,
    engine,
    read_text,
)


def _default_paths(paths: list[str]) -> list[str | Path]:
    if paths:
        return list(paths)
    d = default_rule_dir()
    if not d.is_dir():
        raise UsageError("no FILE given and no rules/ directory here")
    return [d]


def _configure_subst(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", required=True, parser_class=Parser)
    pr = sub.add_parser("prove", help="prove substitution files and write certificates")
    pr.add_argument("paths", nargs="*", metavar="FILE",
                    help="*.subst files or directories (default: rules/)")
    pr.add_argument("--proofs", metavar="DIR", help="certificate directory")
    pr.add_argument("--force", action="store_true", help="re-prove unchanged substitutions")
    pr.add_argument("--no-write", action="store_true", help="write no certificates")
    pr.add_argument("--max-rank", type=int, default=DEFAULT_MAX_RANK,
                    help="largest rank of a variadic size list (default %(default)s)")
    pr.add_argument("--bound", type=int, default=DEFAULT_BOUND,
                    help="size bound of the bounded Z3 attempt (default %(default)s)")
    pr.add_argument("--enum-bound", type=int, default=DEFAULT_ENUM_BOUND,
                    help="size bound of the exhaustive attempt (default %(default)s)")
    pr.add_argument("--rlimit", type=int, default=DEFAULT_RLIMIT, metavar="N",
                    help="Z3 resource limit of the unbounded query of one instance "
                         "(deterministic; default %(default)s)")
    pr.add_argument("--bounded-rlimit", type=int, default=DEFAULT_BOUNDED_RLIMIT, metavar="N",
                    help="Z3 resource limit of the bounded query (default %(default)s)")
    pr.add_argument("--format", choices=("text", "json"), default="text")
    ge = sub.add_parser("generate", help="enumerate small graphs, propose, prove and prune "
                                         "substitutions (TASO-style)")
    ge.add_argument("--ops", help="comma-separated data-movement ops (default: transpose, "
                                  "reshape, slice, concatenate, reverse, pad, broadcast, copy)")
    ge.add_argument("--ranks", default="1,2,3",
                    help="input ranks to enumerate over (default: %(default)s)")
    ge.add_argument("--jobs", "-j", type=int, default=1,
                    help="local processes generalizing and proving groups (default 1)")
    add_engine_flags(ge)
    ge.add_argument("--group-proofs", type=int, default=GROUP_PROOFS, metavar="N",
                    help="prover calls one group may spend generalizing before its candidates "
                         "are proven at their concrete shapes (a count, so the result does not "
                         "depend on the machine; default %(default)s)")
    ge.add_argument("--depth", type=int, default=2, help="ops per graph (default 2)")
    ge.add_argument("--compare", metavar="FILE", action="append",
                    help="substitution files to rediscover (default: rules/*.subst)")
    ge.add_argument("-o", "--output", metavar="FILE", help="write the kept substitutions")
    ge.add_argument("--format", choices=("text", "json"), default="text")


def _run_subst(args: argparse.Namespace) -> int:
    if args.action == "prove":
        if min(args.max_rank, args.bound, args.enum_bound, args.rlimit,
               args.bounded_rlimit) < 1:
            raise UsageError("--max-rank, --bound, --enum-bound and the resource limits must "
                             "be positive")
        results = prove_files(_default_paths(args.paths), args.proofs, force=args.force,
                              write=not args.no_write, max_rank=args.max_rank,
                              bound=args.bound, enum_bound=args.enum_bound,
                              rlimit=args.rlimit, bounded_rlimit=args.bounded_rlimit)
        if not results:
            raise UsageError("no substitutions found")
        if args.format == "json":
            print(json.dumps({"substitutions": [r.to_json() for r in results]}, indent=1))
        else:
            for r in results:
                verdict = f"proved ({r.strength})" if r.verdict == PROVED else r.verdict
                print(f"{r.file}:{r.line}: {r.name}: {verdict}, {r.seconds:.2f}s")
                if r.verdict != PROVED and r.message:
                    print(f"    {r.message}")
            ok = sum(r.verdict == PROVED for r in results)
            print(f"{len(results)} substitutions: {ok} proved, {len(results) - ok} not")
        return 0 if all(r.verdict == PROVED for r in results) else 1
    from ..analysis.subst.generate import DEFAULT_OPS, generate, report

    ops = [o.strip() for o in args.ops.split(",") if o.strip()] if args.ops else \
        list(DEFAULT_OPS)
    if args.depth < 1 or args.depth > 3:
        raise UsageError("--depth takes 1, 2 or 3")
    if args.jobs < 1 or args.group_proofs < 1:
        raise UsageError("--jobs and --group-proofs must be positive")
    where = engine(args)
    if not where.on_dask:
        where = Engine(processes=args.jobs)
    try:
        ranks = [int(r) for r in args.ranks.split(",") if r.strip()]
    except ValueError:
        raise UsageError("--ranks takes a comma-separated list of 1, 2, 3") from None
    if not ranks or not set(ranks) <= {1, 2, 3}:
        raise UsageError("--ranks takes a comma-separated list of 1, 2, 3")
    result = generate(ops, args.depth, compare=args.compare or _default_paths([]),
                      log=sys.stderr, engine=where, ranks=ranks,
                      group_proofs=args.group_proofs, progress=show_progress(args.format),
                      per_group=args.format == "text")
    if args.output:
        Path(args.output).write_text(result.text(), encoding="utf-8")
    if args.format == "json":
        print(json.dumps(result.to_json(), indent=1))
    else:
        print(report(result))
    return 0


def _configure_optimize(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE.hlo", help="an HLO module (or - for stdin)")
    p.add_argument("--rules", metavar="FILE", action="append",
                   help="substitution files (default: the proven ones in rules/)")
    add_opcode_option(p)


def _run_optimize(args: argparse.Namespace) -> int:
    from ..analysis.subst.apply import optimize

    text, source = read_text(args.file, "HLO module")
    result = optimize(text, source, _default_paths(args.rules or []),
                      allow_unknown_opcodes=args.allow_unknown_opcodes)
    sys.stdout.write(result.text if result.text.endswith("\n") else result.text + "\n")
    sys.stdout.flush()
    print(result.summary(), file=sys.stderr)
    return 0


def register(sub: Subparsers) -> None:
    _configure_subst(add_command(
        sub, "subst", "prove and generate graph substitutions of data-movement ops",
        _run_subst))
    _configure_optimize(add_command(
        sub, "optimize", "rewrite an HLO module with proven substitutions (stdout: the module)",
        _run_optimize))


# substitution files join `verifidx check`
rules_cli.CHECK_HOOKS["substitutions"] = gate_results
rules_cli.CHECK_SUFFIXES.add(".subst")
