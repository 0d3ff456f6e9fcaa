"""`verifidx prove` (the rule author's loop) and `verifidx check` (the CI gate).

Exit codes: 0 every rule proven (and, for check, current and within the reduction order),
1 verification failed, 2 usage or parse error (one line on stderr, from `verifidx.cli.main`).
With `--format json` stdout holds only the DESIGN.md document; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence
from pathlib import Path

from ..core.syntax import print_point
from ..core.work import echo, shared, show_progress
from ..rules.model import Rule
from ..rules.parser import default_rule_dir, parse_rule
from ..rules.proof_cache import ProofCache
from ..rules.prover import PROVED, REFUTED, ProofResult, ProverConfig, explain
from ..rules.store import (
    check_files,
    gate_failure,
    load_files,
    prove_files,
    result_text,
    summary,
)
from ..rules.suggest import suggest
from .common import (
    EXIT_FAILED,
    EXIT_OK,
    Subparsers,
    UsageError,
    add_command,
    add_engine_flags,
    engine,
    github_escape,
    junit_document,
)


def register(sub: Subparsers) -> None:
    _configure_prove(add_command(
        sub, "prove", "prove rewrite rules with Z3 and write proof certificates", _run_prove))
    _configure_check(add_command(
        sub, "check", "CI gate: every rule has a current proof certificate and is proven",
        _run_check))


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="*", metavar="PATH",
                   help="rule files or directories of *.rules (default: the rule base, rules/)")
    p.add_argument("--rules", action="append", default=[], metavar="DIR", dest="rule_dirs",
                   help="a rule file or directory (repeatable), the same as a PATH")
    p.add_argument("--proofs", metavar="DIR",
                   help="certificate directory (default: proofs/ beside rules/, else ./proofs)")
    p.add_argument("-j", "--jobs", type=int, default=1, metavar="N",
                   help="prove in N worker processes")
    add_engine_flags(p)
    p.add_argument("--rlimit", type=int, default=ProverConfig.rlimit, metavar="N",
                   help="Z3 resource limit of each unbounded attempt (deterministic, about "
                        "2-3 million a second; default %(default)s)")
    p.add_argument("--timeout-ms", type=int, default=None,
                   help="wall-clock safety net of one Z3 run, for a runaway process only "
                        "(default: a minute plus a second per 50,000 resource units of its "
                        "budget; a net below the budget makes the verdict depend on the "
                        "machine's load)")
    p.add_argument("--bound", type=int, default=ProverConfig.bound, metavar="N",
                   help="enumerate constants in [-N, N] when Z3 alone cannot decide "
                        "(default %(default)s)")


def _configure_prove(p: argparse.ArgumentParser) -> None:
    _common(p)
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("--force", action="store_true", help="re-prove rules whose text is unchanged")
    p.add_argument("--no-write", action="store_true", help="write no certificates")
    p.add_argument("--suggest", action="store_true",
                   help="for a refuted rule, search for the weakest side condition that fixes it")
    p.add_argument("--explain", metavar="RULE",
                   help="print the SMT-LIB2 obligation of RULE (a name, or the rule's text)")


def _configure_check(p: argparse.ArgumentParser) -> None:
    _common(p)
    p.add_argument("--format", choices=("text", "json", "junit", "github"), default="text")
    p.add_argument("--reprove", action="store_true",
                   help="run the whole proof search again instead of re-checking each "
                        "certificate's query")
    p.add_argument("--no-cache", action="store_true",
                   help="re-check every query, ignoring the proof cache "
                        "($VERIFIDX_CACHE_DIR, else ~/.cache/verifidx)")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="text format: print only failing rules and the summary line")


def _config(args: argparse.Namespace) -> ProverConfig:
    if args.jobs < 1:
        raise UsageError("-j takes a positive number")
    if (args.timeout_ms is not None and args.timeout_ms < 1) or args.rlimit < 1 or \
            args.bound < 0:
        raise UsageError("--timeout-ms and --rlimit must be positive and --bound non-negative")
    return ProverConfig(timeout_ms=args.timeout_ms, rlimit=args.rlimit, bound=args.bound)


def _paths(args: argparse.Namespace, bundled: bool = False) -> list[str | Path]:
    """PATHs, else ./rules; for `check` (bundled=True) outside a checkout, the rule base
    installed with verifidx, so that `verifidx check` re-checks what the simplifier loads."""
    if args.paths or args.rule_dirs:
        return [*args.paths, *args.rule_dirs]
    d = default_rule_dir()
    if d.is_dir():
        return [d]
    if bundled:
        from ..rules.base import package_rule_dir

        shipped = package_rule_dir()
        if shipped.is_dir():
            if not getattr(args, "quiet", False):
                print(f"no rules/ here: checking the rule base installed with verifidx "
                      f"({shipped})", file=sys.stderr)
            return [shipped]
    raise UsageError("no PATH given and no rules/ directory here")


# -- verifidx prove ------------------------------------------------------------------------------


def _run_prove(args: argparse.Namespace) -> int:
    config = _config(args)
    files = load_files(_paths(args), args.proofs)
    if args.explain:
        return _explain(args.explain, [r for rf in files for r in rf.rules], args.format)
    if not any(rf.rules for rf in files):
        raise UsageError("no rules found")
    readable = args.format == "text"
    suggestions: dict[int, str] = {}
    printed: list[ProofResult] = []

    def each(res: ProofResult) -> None:
        """Text output, a rule at a time as its proof is done (in the files' order)."""
        if args.suggest and res.verdict == REFUTED and res.rule is not None:
            print(f"searching side conditions for {res.name}...", file=sys.stderr)
            suggestions[len(printed)] = suggest(res.rule, config).text
        if readable:
            echo(result_text(res, gate_failure(res, res.rule)))  # type: ignore[arg-type]
            if len(printed) in suggestions:
                echo(f"    suggestion: {suggestions[len(printed)]}")
        printed.append(res)

    results = prove_files(files, config, args.jobs, force=args.force,
                          write=not args.no_write, log=True, engine=engine(args),
                          progress=show_progress(args.format), each=each)
    failures = _failures(results)
    if args.format == "json":
        doc = _document({RULES: results}, failures)
        for i, text in suggestions.items():
            doc[RULES][i]["suggestion"] = text  # type: ignore[index]
        print(json.dumps(doc, indent=1))
    else:
        print(_summary_line({RULES: results}, failures))
    return EXIT_FAILED if failures else EXIT_OK


def _explain(which: str, rules: Sequence[Rule], form: str = "text") -> int:
    chosen = [r for r in rules if r.name == which]
    if not chosen:
        if "=>" not in which:
            raise UsageError(f"no rule named {which!r}")
        chosen = [parse_rule(which, "<argument>")]
    if form == "json":
        print(json.dumps({"rules": [{"name": r.name, "file": r.file, "line": r.line,
                                     "smtlib": explain(r)} for r in chosen]}, indent=1))
        return EXIT_OK
    for r in chosen:
        print(explain(r), end="")
    return EXIT_OK


# -- verifidx check ------------------------------------------------------------------------------


#: Other proven artefacts join the gate here (graph substitutions, `verifidx.cli.subst`): KIND
#: (a plural noun, for the summary) -> a hook that gets (paths, proofs dir, reprove) and the
#: keywords `cache`, `jobs`, `timeout_ms`, `engine` (where its re-checks run, `--workers` /
#: `--scheduler`) and `progress`, re-checks the files it owns, and returns their
#: ProofResult records; files with a suffix in CHECK_SUFFIXES are not read as rule files.
CHECK_HOOKS: dict[str, Callable[..., list[ProofResult]]] = {}
CHECK_SUFFIXES: set[str] = set()

#: The kind of the rule files' own results, first in every summary.
RULES = "rules"


def _run_check(args: argparse.Namespace) -> int:
    config = _config(args)
    paths = _paths(args, bundled=True)
    files = load_files([p for p in paths if Path(p).suffix not in CHECK_SUFFIXES], args.proofs)
    cache = None if args.no_cache else ProofCache()
    with shared(engine(args)) as where:
        extra = {kind: hook(paths, args.proofs, args.reprove, cache=cache, jobs=args.jobs,
                            timeout_ms=config.timeout_ms, engine=where,
                            progress=show_progress(args.format))
                 for kind, hook in CHECK_HOOKS.items()}
        if not any(rf.rules for rf in files) and not any(extra.values()):
            raise UsageError("no rules found")
        groups = {RULES: check_files(files, config, args.jobs, reprove=args.reprove,
                                     cache=cache, engine=where,
                                     progress=show_progress(args.format)),
                  **extra}
    results = [r for group in groups.values() for r in group]
    failures = _failures(results)
    if args.format == "json":
        print(json.dumps(_document(groups, failures), indent=1))
    elif args.format == "junit":
        print(_junit(results, failures))
    elif args.format == "github":
        for r in results:
            if id(r) in failures:
                print(_github(r, failures[id(r)]))
        print(_summary_line(groups, failures))
    else:
        for r in results:
            if not args.quiet or id(r) in failures:
                print(result_text(r, failures.get(id(r))))
        from_cache = sum(1 for r in results if r.recheck == "cache")
        if from_cache and cache is not None and not args.quiet:
            print(_cache_note(from_cache, cache))
        print(_summary_line(groups, failures))
    return EXIT_FAILED if failures else EXIT_OK


def _cache_note(count: int, cache: ProofCache) -> str:
    """What a proof cache hit stands in for (docs/contracts.md, the proof cache): Z3's run of
    a query that was still rebuilt and compared with its certificate in this run."""
    queries = "1 query was" if count == 1 else f"{count} queries were"
    return (f"note: {queries} not run again. Each was rebuilt from its rule's or "
            "substitution's text and matched its certificate in this run; in place of running "
            f"it, the proof cache ({cache.root.parent}) holds a record, signed with the "
            "cache's secret, that an earlier run holding that secret (when is not recorded) saw "
            "Z3 answer unsat at every check (and a substitution's enumerations find no "
            "difference), keyed by the sha256 of the query, that text, the resource limit and "
            "the Z3 and verifidx versions. --no-cache runs them.")


# -- output --------------------------------------------------------------------------------------


def _failures(results: Sequence[ProofResult]) -> dict[int, str]:
    """The one notion of acceptance, the same for `prove` and `check`: a rule is accepted when
    it is proved and within the reduction order (store.gate_failure); the rest, with why."""
    return {id(r): why for r in results
            if (why := gate_failure(r, r.rule)) is not None}  # type: ignore[arg-type]


def _counts(results: Sequence[ProofResult], failures: dict[int, str]) -> dict[str, int]:
    counts: dict[str, int] = dict(summary(results))
    counts["order_violations"] = sum(1 for r in results
                                     if r.verdict == PROVED and id(r) in failures)
    counts["accepted"] = sum(1 for r in results if id(r) not in failures)
    return counts


def _document(groups: dict[str, list[ProofResult]], failures: dict[int, str]
              ) -> dict[str, object]:
    """One list per kind (`rules`, and for check `substitutions`), the summary over all of
    them (what the gate decides), and with several kinds the same counts per kind."""
    results = [r for group in groups.values() for r in group]
    doc: dict[str, object] = {kind: [r.to_json() for r in group]
                              for kind, group in groups.items()}
    doc["summary"] = _counts(results, failures)
    if len(groups) > 1:
        doc["by_kind"] = {kind: _counts(group, failures) for kind, group in groups.items()}
    return doc


def _summary_line(groups: dict[str, list[ProofResult]], failures: dict[int, str]) -> str:
    """Counts by verdict for each kind (`153 rules: 153 proved; 33 substitutions: 33
    proved`), except that a proved rule the gate rejects (reduction order) is counted as that,
    not as proved: each part adds up to its number of entries. Kinds other than rules appear
    when they have entries."""
    parts: list[str] = []
    for kind, results in groups.items():
        if kind != RULES and not results:
            continue
        counts = dict(summary(results))
        violating = sum(1 for r in results if r.verdict == PROVED and id(r) in failures)
        counts[PROVED] -= violating
        counts["violating the reduction order"] = violating
        shown = ", ".join(f"{n} {k}" for k, n in counts.items() if n or k == PROVED)
        parts.append(f"{len(results)} {kind}: {shown}")
    return "; ".join(parts)


def _junit(results: Sequence[ProofResult], failures: dict[int, str]) -> str:
    """JUnit XML: one testsuite per rule file, one testcase per rule."""
    root = ET.Element("testsuites", name="verifidx check", tests=str(len(results)),
                      failures=str(len(failures)))
    suites: dict[str, ET.Element] = {}
    for r in results:
        suite = suites.get(r.file)
        if suite is None:
            suite = suites[r.file] = ET.SubElement(root, "testsuite", name=r.file, tests="0",
                                                   failures="0", errors="0")
        suite.set("tests", str(int(suite.get("tests", "0")) + 1))
        classname = os.path.splitext(r.file)[0].replace("/", ".").replace(os.sep, ".")
        case = ET.SubElement(suite, "testcase", classname=classname, name=r.name,
                             file=r.file, line=str(r.line), time=f"{r.seconds:.3f}")
        why = failures.get(id(r))
        if why is not None:
            suite.set("failures", str(int(suite.get("failures", "0")) + 1))
            fail = ET.SubElement(case, "failure", type=r.verdict,
                                 message=f"{why}: {r.message}" if r.message else why)
            fail.text = result_text(r, why)
    return junit_document(root)


def _github(r: ProofResult, why: str) -> str:
    """A GitHub Actions workflow command that annotates the rule's line."""
    title = github_escape(f"verifidx: {r.name} {why}", prop=True)
    body = f"rule {r.name} {why}" + (f": {r.message}" if r.message else "")
    if r.counterexample:
        body += f"\ncounterexample: {print_point(r.counterexample)}"
    if r.reproducer:
        body += f"\nreproduce: {r.reproducer}"
    return (f"::error file={github_escape(r.file, True)},line={r.line},title={title}::"
            f"{github_escape(body)}")

