"""Proof certificates (`proofs/<rule file stem>.json`) and the CI gate built on them.

A certificate entry records what was proven about one rule: the sha256 of the rule's normalized
text, the verdict and its strength, the termination verdict, the SMT-LIB2 text of the obligation
(so any solver can re-check it), and the Z3 and verifidx versions. A certificate is current only
when all three of hash, Z3 version and verifidx version match; otherwise the rule is `stale`.
Files are plain JSON with sorted keys, rewritten only where something changed: nothing in them
depends on the clock, so proving twice gives the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import VerifidxError
from ..core.syntax import print_point
from ..core.version import __version__
from ..core.work import Engine, Progress
from .model import Rule
from .parser import load_rule_file, rule_files
from .proof_cache import ProofCache, cache_key
from .results import (
    ERROR,
    PROVED,
    REFUTED,
    UNKNOWN,
    ProofResult,
    ProverConfig,
    bounded_limit,
    budgeted,
    logic,
    nonlinear_constants,
    rule_leaves,
)
from .results import INSTALLED_Z3_VERSION as Z3_VERSION

# The prover (and Z3) load only where a query is built or run: reading certificates, as the
# simplifier's rule gate does at start-up, needs neither.

FORMAT = 3  # 2: the proving query, its resource limit and logic, no timings; 3: a bounded
# proof stores its base query and the enumerated constants, not every case
STALE, MISSING = "stale", "missing"
VERDICTS = ("proved", "refuted", "unknown", "stale", "missing", "error")
_STORED = ("verdict", "strength", "order", "strategy", "counterexample", "lhs_value",
           "rhs_value", "subterms", "reproducer", "message")
_MULTI_CASE = ("sign splits", "bounded")


class CertificateError(VerifidxError):
    """A certificate file that cannot be read or is not a verifidx certificate."""


class ForeignCertificate(CertificateError):
    """The certificate file at this path belongs to another rule file with the same stem."""


def verifier_version() -> str:
    return __version__


def rule_hash(rule: Rule) -> str:
    return hashlib.sha256(rule.normalized_text.encode("utf-8")).hexdigest()


def proofs_dir_for(rule_file: Path, explicit: str | Path | None = None) -> Path:
    """`--proofs` when given; else `proofs/` beside a `rules/` directory; else `./proofs`."""
    if explicit is not None:
        return Path(explicit)
    parent = rule_file.resolve().parent
    if parent.name == "rules":
        return parent.parent / "proofs"
    return Path("proofs")


def certificate_path(rule_file: Path, proofs: str | Path | None = None) -> Path:
    return proofs_dir_for(rule_file, proofs) / f"{rule_file.stem}.json"


def display_path(p: Path) -> str:
    """Paths as the user would type them: relative to the working directory when inside it."""
    try:
        return os.path.relpath(p)
    except ValueError:
        return str(p)


# -- reading and writing -----------------------------------------------------------------------


def _recorded_path(path: Path, rule_file: Path) -> str:
    """How a certificate names its rule file: relative to the directory holding `proofs/`."""
    return os.path.relpath(rule_file.resolve(), path.resolve().parent.parent).replace(os.sep,
                                                                                       "/")


def load_certificates(path: Path, rule_file: Path | None = None
                      ) -> dict[str, dict[str, object]]:
    """Entries by rule name; {} when the file does not exist. Raises CertificateError (one
    clear line) for anything that is not a well-formed certificate file, and
    ForeignCertificate when it certifies another rule file than `rule_file`."""
    if not path.exists():
        return {}
    where = display_path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as err:
        raise CertificateError(f"{where}: cannot read certificate file: {err}") from None
    except json.JSONDecodeError as err:
        raise CertificateError(f"{where}:{err.lineno}:{err.colno}: corrupt certificate file "
                               f"(not JSON: {err.msg})") from None
    if not isinstance(data, dict) or not isinstance(data.get("rules"), dict):
        raise CertificateError(f"{where}: not a verifidx certificate file (no 'rules' table)")
    if data.get("format") != FORMAT:
        raise CertificateError(f"{where}: unknown certificate format {data.get('format')!r} "
                               f"(this verifidx writes format {FORMAT})")
    entries: dict[str, dict[str, object]] = {}
    for name, entry in data["rules"].items():
        if not isinstance(entry, dict) or not all(
                isinstance(entry.get(k), str) for k in ("sha256", "verdict", "z3_version",
                                                        "verifier_version")):
            raise CertificateError(f"{where}: corrupt entry for rule {name!r}")
        entries[name] = entry
    if not isinstance(data.get("file"), str):
        raise CertificateError(f"{where}: corrupt certificate file (no 'file' name)")
    if rule_file is not None and data["file"] != _recorded_path(path, rule_file):
        raise ForeignCertificate(f"{where} holds the certificates of {data['file']}, not "
                                 f"of {display_path(rule_file)}; pass --proofs DIR")
    return entries


def proof_rlimit(strategy: object, config: ProverConfig) -> int:
    """The resource limit of each check of a proof's query: what the prover gave it."""
    return config.case_rlimit if strategy in _MULTI_CASE else config.rlimit


def entry_for(result: ProofResult, rule: Rule, config: ProverConfig) -> dict[str, object]:
    """A certificate entry. Nothing in it depends on the clock or the machine: same rule text,
    same Z3 and verifidx versions, same bytes (docs/contracts.md, Certificates)."""
    entry: dict[str, object] = {k: getattr(result, k) for k in _STORED
                                if getattr(result, k) not in (None, "")}
    entry.update(sha256=rule_hash(rule), z3_version=Z3_VERSION,
                 verifier_version=verifier_version(), smtlib=result.smtlib,
                 logic=logic(rule))
    if result.verdict == PROVED:
        entry["rlimit"] = result.rlimit or proof_rlimit(result.strategy, config)
        if result.strategy == "bounded":  # the cases `check` appends: these, in [-N, N]
            entry["enumerated"] = nonlinear_constants(rule)
        if result.seed:
            entry["seed"] = result.seed
    return entry


def write_certificates(path: Path, rule_file: Path, rules: Sequence[Rule],
                       fresh: dict[str, ProofResult], old: dict[str, dict[str, object]],
                       config: ProverConfig | None = None) -> bool:
    """Write the file for `rules`: new entries for the `fresh` results, the `old` entries of
    the others as they were; rules that no longer exist lose their entry. Returns whether the
    bytes changed."""
    entries: dict[str, object] = {}
    for r in rules:
        if r.name in fresh:
            entries[r.name] = entry_for(fresh[r.name], r, config or ProverConfig())
        elif r.name in old:
            entries[r.name] = old[r.name]
    doc = {"format": FORMAT, "file": _recorded_path(path, rule_file), "rules": entries}
    text = json.dumps(doc, indent=1, sort_keys=True) + "\n"
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return True


# -- the state of a rule against its certificate -----------------------------------------------


def staleness(rule: Rule, entry: dict[str, object] | None) -> str | None:
    """Why the certificate does not cover the rule as written (None: it does)."""
    if entry is None:
        return "no certificate"
    if entry.get("sha256") != rule_hash(rule):
        return "the rule's text changed since it was proven"
    if entry.get("verifier_version") != verifier_version():
        return (f"proven by verifidx {entry.get('verifier_version')}, "
                f"this is {verifier_version()}")
    if entry.get("z3_version") != Z3_VERSION:
        return f"proven with Z3 {entry.get('z3_version')}, this is Z3 {Z3_VERSION}"
    return None


def result_from_entry(rule: Rule, entry: dict[str, object]) -> ProofResult:
    """What a current certificate says, as a ProofResult (no solver call)."""
    res = ProofResult(rule.name, display_path(Path(rule.file)), rule.line,
                      str(entry.get("verdict")), rule=rule, cached=True)
    for k in _STORED:
        if k in entry and k != "verdict":
            setattr(res, k, entry[k])
    if isinstance(res.counterexample, dict):  # JSON sorted the keys; restore the rule's order
        cx = res.counterexample
        res.counterexample = {k: cx[k] for k in rule_leaves(rule) if k in cx}
    res.smtlib = str(entry.get("smtlib", ""))
    return res


def gate_failure(res: ProofResult, rule: Rule) -> str | None:
    """Why `check` fails on this rule, or None. The order never changes the verdict, but the
    gate rejects a rule base rule that violates it (docs/rules.md, Termination)."""
    if res.verdict != PROVED:
        return res.verdict
    if res.order == "violates":
        return "violates the reduction order"
    return None


def result_text(r: ProofResult, failure: str | None = None) -> str:
    """One rule's verdict as `verifidx prove`/`check` and the pytest plugin print it:
    `file:line: name: verdict`, then the failure, message and counterexample lines."""
    verdict = f"proved ({r.strength})" if r.verdict == PROVED and r.strength else r.verdict
    head = f"{r.file}:{r.line}: {r.name}: {verdict}"
    if r.order:
        head += f", {r.order}"
    if r.recheck == "cache":
        head += ", not re-run (the proof cache holds unsat for this exact query)"
    elif r.recheck == "z3":
        head += f", re-checked {r.seconds:.2f}s"
    elif r.cached:
        head += " (certificate)"
    elif r.verdict in (PROVED, REFUTED, "unknown"):
        head += f", {r.seconds:.2f}s"
    lines = [head]
    if failure and r.verdict == PROVED:
        lines.append(f"    FAIL: {failure}")
    if r.message and (r.verdict != PROVED or failure or r.strength != "all"):
        lines.append(f"    {r.message}")
    if r.verdict == REFUTED:
        if r.counterexample:
            lines.append(f"    counterexample: {print_point(r.counterexample)}")
        if r.subterms:
            subs = ", ".join(f"{k} = {_show(v)}" for k, v in r.subterms.items())
            lines.append(f"    subterms: {subs}")
        if r.reproducer:
            lines.append(f"    reproduce: {r.reproducer}")
        elif r.counterexample and (r.lhs_value is None or r.rhs_value is None):
            # only a counterexample evaluated by `prover.recheck` has side values; the gate's
            # refutation (its query turned out satisfiable) has none to explain
            side = "left" if r.lhs_value is None else "right"
            lines.append(f"    {side} side undefined here (no map reproduces an undefined "
                         "value)")
    return "\n".join(lines)


def _show(v: object) -> str:
    return "undefined" if v is None else str(v).lower() if isinstance(v, bool) else str(v)


# -- the two commands --------------------------------------------------------------------------


@dataclass
class RuleFile:
    path: Path
    rules: list[Rule]
    certificate: Path
    entries: dict[str, dict[str, object]]
    problem: str | None  # why the certificate file could not be read
    foreign: bool = False  # it certifies another rule file: never overwrite it


def load_files(paths: Sequence[str | Path], proofs: str | Path | None) -> list[RuleFile]:
    """Parse every rule file (ParseError propagates) and read its certificates (a broken
    certificate file is recorded, not raised: the gate reports it rule by rule)."""
    out: list[RuleFile] = []
    for f in rule_files(paths):
        rules = load_rule_file(f)
        cert = certificate_path(f, proofs)
        try:
            out.append(RuleFile(f, rules, cert, load_certificates(cert, f), None))
        except CertificateError as err:
            out.append(RuleFile(f, rules, cert, {}, str(err),
                                isinstance(err, ForeignCertificate)))
    return out


def _with_place(res: ProofResult, rule: Rule) -> ProofResult:
    res.file, res.line, res.rule = display_path(Path(rule.file)), rule.line, rule
    return res


def prove_files(files: Sequence[RuleFile], config: ProverConfig, jobs: int = 1,
                force: bool = False, write: bool = True, log: bool = True,
                engine: Engine | None = None, progress: bool = False,
                each: Callable[[ProofResult], None] | None = None) -> list[ProofResult]:
    """`verifidx prove`: re-prove rules whose certificate is not current (all with `force`),
    keep the rest, and write the certificate files. The proofs run on `engine` when it is a
    Dask cluster, else in `jobs` processes; `each` gets every result, in the order of the
    files, as soon as it and the ones before it are known."""
    from .items import prove_on

    for rf in files:
        if rf.foreign and write:
            raise CertificateError(str(rf.problem))
    todo: list[Rule] = []
    cached: dict[tuple[str, str], ProofResult] = {}
    for rf in files:
        for r in rf.rules:
            entry = rf.entries.get(r.name)
            if force or entry is None or staleness(r, entry) is not None or \
                    entry.get("verdict") in ("unknown", ERROR):  # undecided: try again
                todo.append(r)
            else:
                cached[(r.file, r.name)] = _with_place(result_from_entry(r, entry), r)
        if rf.problem and log:
            print(f"warning: {rf.problem}; it will be rewritten", file=sys.stderr)
    total = sum(len(rf.rules) for rf in files)
    where = engine if engine is not None and engine.on_dask else Engine(processes=jobs)
    if log:
        print(f"proving {len(todo)} of {total} rules ({total - len(todo)} unchanged) on "
              f"{where.describe()}", file=sys.stderr)
    order = [(r.file, r.name) for rf in files for r in rf.rules]
    fresh: dict[tuple[str, str], ProofResult] = {}
    shown = 0
    with Progress(len(todo), "prove", progress) as bar:
        for r, res in zip(todo, prove_on(todo, config, where, bar)):
            fresh[(r.file, r.name)] = _with_place(res, r)
            while each is not None and shown < len(order) and \
                    (order[shown] in fresh or order[shown] in cached):
                each(fresh.get(order[shown]) or cached[order[shown]])
                shown += 1
    for key in order[shown:] if each is not None else ():
        each(fresh.get(key) or cached[key])  # type: ignore[misc]
    results: list[ProofResult] = []
    for rf in files:
        new = {r.name: fresh[(r.file, r.name)] for r in rf.rules if (r.file, r.name) in fresh}
        results += [fresh.get((r.file, r.name)) or cached[(r.file, r.name)] for r in rf.rules]
        if write and write_certificates(rf.certificate, rf.path, rf.rules, new, rf.entries,
                                        config) and log:
            print(f"wrote {display_path(rf.certificate)}", file=sys.stderr)
    return results


def check_files(files: Sequence[RuleFile], config: ProverConfig, jobs: int = 1,
                reprove: bool = False, cache: ProofCache | None = None,
                engine: Engine | None = None, progress: bool = False) -> list[ProofResult]:
    """`verifidx check`: a rule passes only when its certificate is current and its query,
    rebuilt from the rule's text, answers `unsat` again now (or the proof cache records that an
    earlier run holding its secret saw it do so). With `reprove`, the whole proof search runs
    again instead."""
    if reprove:
        from .items import prove_on

        rules = [r for rf in files for r in rf.rules]
        where = engine if engine is not None and engine.on_dask else Engine(processes=jobs)
        with Progress(len(rules), "prove", progress) as bar:
            return [_with_place(res, r)
                    for r, res in zip(rules, prove_on(rules, config, where, bar))]
    from .order import classify

    results: list[ProofResult] = []
    todo: list[tuple[ProofResult, str, int, str]] = []  # (result, query, rlimit, cache key)
    for rf in files:
        for r in rf.rules:
            entry = rf.entries.get(r.name)
            if rf.problem is not None:
                res = ProofResult(r.name, r.file, r.line, ERROR, message=rf.problem)
            elif entry is None:
                res = ProofResult(r.name, r.file, r.line, MISSING,
                                  message=f"no certificate in {display_path(rf.certificate)};"
                                          " run verifidx prove")
            elif (why := staleness(r, entry)) is not None:
                res = ProofResult(r.name, r.file, r.line, STALE, order=None,
                                  message=f"{why}; run verifidx prove")
            else:
                res = result_from_entry(r, entry)
                res.order = classify(r).verdict  # computed, never read from the certificate
                if res.verdict == PROVED:
                    job = _recheck_job(res, r, entry, config, cache)
                    if job is not None:
                        todo.append((res, *job))
            results.append(_with_place(res, r))
    with Progress(len(todo), "check", progress) as bar:
        _run_rechecks(todo, config, jobs, cache, engine, bar)
    return results


def _recheck_job(res: ProofResult, rule: Rule, entry: dict[str, object],
                 config: ProverConfig, cache: ProofCache | None
                 ) -> tuple[str, int, str] | None:
    """What must run to believe the certificate's `proved`; None when nothing must (the
    certificate was refused, or this machine re-checked the same query before)."""
    from .prover import query_for, recheck_query_for

    res.cached = False
    seed = entry.get("seed", 0)
    query = query_for(rule, res.strategy, res.strength, seed if isinstance(seed, int) else -1)
    if query is None or query != entry.get("smtlib"):
        res.verdict, res.strength = ERROR, None
        res.message = (f"the certificate's query is not the obligation of this rule under "
                       f"strategy {res.strategy!r}; run verifidx prove --force")
        return None
    full = recheck_query_for(rule, res.strategy, res.strength, seed if isinstance(seed, int)
                             else -1)
    assert full is not None  # query_for answered, so the strategy and strength are known
    if res.strategy == "bounded":
        from .prover import bounded_vacuity  # a Z3 query: loaded where a bound is re-checked

        why = ("the certificate's enumerated constants are not this rule's"
               if entry.get("enumerated") != nonlinear_constants(rule) else
               bounded_vacuity(rule, bounded_limit(res.strength) or 0, config))
        if why is not None:
            res.verdict, res.strength = ERROR, None
            res.message = f"{why}; run verifidx prove --force"
            return None
    query = full
    rlimit = entry.get("rlimit")
    if not isinstance(rlimit, int) or rlimit <= 0:
        res.verdict, res.strength = ERROR, None
        res.message = "the certificate has no resource limit; run verifidx prove --force"
        return None
    key = cache_key(query, rule.normalized_text, rlimit, Z3_VERSION, verifier_version())
    if cache is not None and key in cache:
        res.recheck = "cache"
        return None
    return query, rlimit, key


def _run_rechecks(todo: Sequence[tuple[ProofResult, str, int, str]], config: ProverConfig,
                  jobs: int, cache: ProofCache | None, engine: Engine | None = None,
                  bar: Progress | None = None) -> None:
    """Run the queries, `jobs` at a time, each in its own `z3` process (in this process, one at
    a time, when the executable of this Z3 version is not installed), or on `engine` when it
    is a Dask cluster (a query no worker answered is unknown)."""
    from concurrent.futures import ThreadPoolExecutor

    from ..solve.smt_terms import safety_net_ms  # Z3 loads where a query runs
    from .prover import run_query, z3_binary

    if not todo:
        return
    exe = z3_binary()

    def prepared(job: tuple[ProofResult, str, int, str]) -> tuple[str, int]:
        """The query under its budget, and the wall-clock net of its run."""
        _, query, rlimit, _ = job
        net = config.timeout_ms or safety_net_ms(rlimit * query.count("(check-sat"))
        return budgeted(query, rlimit), net

    def one(job: tuple[ProofResult, str, int, str]) -> tuple[list[str], float]:
        query, net = prepared(job)
        start = time.perf_counter()
        return run_query(query, net, exe), time.perf_counter() - start

    outcomes: list[tuple[list[str], float]] = []
    if engine is not None and engine.on_dask:
        from .items import recheck_on

        outcomes = recheck_on([prepared(job) for job in todo], engine, bar)
    else:
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            for outcome in pool.map(one, todo):
                outcomes.append(outcome)
                if bar is not None:
                    bar.advance()
    for (res, query, _, key), (answers, seconds) in zip(todo, outcomes):
        res.seconds = seconds
        checks = query.count("(check-sat")
        if answers == ["unsat"] * checks:
            res.recheck = "z3"
            if cache is not None:
                cache.add(key)
        elif "sat" in answers:
            res.verdict, res.strength = REFUTED, None
            res.message = ("the certificate says proved, but Z3 finds its query satisfiable: "
                           "the rule does not hold; run verifidx prove for a counterexample")
        else:
            res.verdict, res.strength = UNKNOWN, None
            res.message = (f"re-checking the certificate's query did not answer unsat at every"
                           f" check ({', '.join(answers) or 'no answer'})")


def summary(results: Iterable[ProofResult]) -> dict[str, int]:
    counts = {v: 0 for v in VERDICTS}
    for r in results:
        counts[r.verdict] = counts.get(r.verdict, 0) + 1
    return counts
