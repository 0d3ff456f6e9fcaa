"""Certificates of substitution files (`proofs/<stem>.subst.json`) and their part of the gate.

Same contract as the rule certificates (docs/rules.md): one JSON file per substitution file,
sorted keys, nothing that depends on the clock; an entry is current when the sha256 of the
substitution's normalized text, the Z3 version and the verifidx version all match. A proved
entry lists every instance (ranks and permutations) with the step that proved it: a Z3 query
(stored as SMT-LIB2) or an exhaustive evaluation up to a bound.

`verifidx check` believes none of it. Through the hook in the check command (`gate_results`)
it rebuilds every instance and query from the substitution's text, requires them to be the
certificate's and the stated strength to be what they prove, runs the queries again with the
`z3` executable, each under the resource limit that proved it (so the answers are the prover's,
on any machine and under any load), and the enumerations in this process, and remembers what
re-checked in the proof cache (`$VERIFIDX_CACHE_DIR`), like the rules' queries: a later check
rebuilds and compares them again but does not re-run what the cache records. Missing,
stale, tampered, refuted or unknown fails CI exactly like a rule would.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verifidx.analysis.subst.model import Substitution
from verifidx.analysis.subst.parser import load_substitution_file, parse_one, substitution_files
from verifidx.analysis.subst.prove import (
    DEFAULT_TIMEOUT_MS,
    ENUMERATION,
    ENUMERATION_LIMIT,
    PROVED,
    REFUTED,
    UNKNOWN,
    VACUOUS,
    Z3_METHOD,
    Counterexample,
    Instance,
    Obligation,
    SubstProof,
    describe,
    enumeration_size,
    exhaustive,
    instances,
    obligation_query,
    prove,
    strength_of,
)
from verifidx.core.errors import VerifidxError
from verifidx.core.version import __version__
from verifidx.core.work import Engine, Progress, run
from verifidx.rules.proof_cache import ProofCache, cache_key
from verifidx.rules.prover import RESET, ProofResult, run_query, z3_binary
from verifidx.rules.results import budgeted
from verifidx.solve.smt_terms import Z3_VERSION, safety_net_ms

FORMAT = 3  # 3: each Z3 obligation records its resource limit, and its query an explicit tactic
ERROR = "error"


class CertificateError(VerifidxError):
    """A substitution certificate file that cannot be read."""


def _version() -> str:
    return __version__


def subst_hash(sub: Substitution) -> str:
    return hashlib.sha256(sub.normalized_text.encode("utf-8")).hexdigest()


def certificate_path(subst_file: Path, proofs: str | Path | None = None) -> Path:
    """`--proofs DIR` when given; else `proofs/` beside a `rules/` directory; else ./proofs."""
    if proofs is not None:
        base = Path(proofs)
    else:
        parent = subst_file.resolve().parent
        base = parent.parent / "proofs" if parent.name == "rules" else Path("proofs")
    return base / f"{subst_file.stem}.subst.json"


def _display(p: Path) -> str:
    try:
        return os.path.relpath(p)
    except ValueError:
        return str(p)


def load_certificates(path: Path) -> dict[str, dict[str, object]]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise CertificateError(f"{_display(path)}: corrupt certificate file ({err})") from None
    if not isinstance(data, dict) or not isinstance(data.get("substitutions"), dict):
        raise CertificateError(f"{_display(path)}: not a verifidx substitution certificate")
    if data.get("format") != FORMAT:
        raise CertificateError(f"{_display(path)}: certificate format {data.get('format')}, "
                               f"this verifidx reads format {FORMAT}; run verifidx subst prove")
    return data["substitutions"]  # type: ignore[no-any-return]


def staleness(sub: Substitution, entry: dict[str, object] | None) -> str | None:
    if entry is None:
        return "no certificate"
    if entry.get("sha256") != subst_hash(sub):
        return "the substitution's text changed since it was proven"
    if entry.get("verifier_version") != _version():
        return f"proven by verifidx {entry.get('verifier_version')}, this is {_version()}"
    if entry.get("z3_version") != Z3_VERSION:
        return f"proven with Z3 {entry.get('z3_version')}, this is Z3 {Z3_VERSION}"
    return None


def _entry(sub: Substitution, res: SubstProof) -> dict[str, object]:
    """The certificate entry: deterministic (no timing), so that proving again gives the same
    bytes."""
    doc = res.to_json()
    for k in ("file", "line", "name", "seconds"):
        doc.pop(k)
    doc.update(sha256=subst_hash(sub), z3_version=Z3_VERSION, verifier_version=_version(),
               max_rank=res.max_rank, obligations=[o.to_json() for o in res.obligations])
    return doc


def prove_files(paths: Sequence[str | Path], proofs: str | Path | None = None,
                force: bool = False, write: bool = True, **options: int
                ) -> list[SubstProof]:
    """`verifidx subst prove`: prove what has no current certificate (all with `force`) and
    write the certificate files."""
    results: list[SubstProof] = []
    for f in substitution_files(paths):
        subs = load_substitution_file(f)
        cert = certificate_path(f, proofs)
        try:
            old = load_certificates(cert)
        except CertificateError:
            old = {}
        entries: dict[str, object] = {}
        for sub in subs:
            entry = old.get(sub.name)
            if not force and entry is not None and staleness(sub, entry) is None and \
                    entry.get("verdict") in (PROVED, REFUTED):
                results.append(_from_entry(sub, entry))
                entries[sub.name] = entry
                continue
            res = prove(sub, **options)
            results.append(res)
            entries[sub.name] = _entry(sub, res)
        if write:
            rel = os.path.relpath(f.resolve(), cert.resolve().parent.parent).replace(os.sep, "/")
            text = json.dumps({"format": FORMAT, "file": rel, "substitutions": entries},
                              indent=1, sort_keys=True) + "\n"
            if not cert.exists() or cert.read_text(encoding="utf-8") != text:
                cert.parent.mkdir(parents=True, exist_ok=True)
                cert.write_text(text, encoding="utf-8")
    return results


def _from_entry(sub: Substitution, entry: dict[str, object]) -> SubstProof:
    return SubstProof(sub.name, sub.file, sub.line, str(entry.get("verdict")),
                      strength=entry.get("strength"),  # type: ignore[arg-type]
                      message=str(entry.get("message", "")),
                      instances=int(entry.get("instances", 0)))  # type: ignore[call-overload]


# -- the gate ------------------------------------------------------------------------------------


@dataclass
class _Recheck:
    """What must run again to believe one certificate's `proved`."""

    result: SubstProof
    sub: Substitution
    script: str  # the Z3 queries, each under its resource limit, separated by (reset)
    checks: int  # how many check-sat the script holds
    budget: int  # the sum of their resource limits
    enumerations: list[tuple[Instance, int]]
    key: str  # in the proof cache
    entry: dict[str, object]  # the certificate's, from which a worker rebuilds the plan


def _plan(sub: Substitution, entry: dict[str, object]) -> tuple[str, int, int, list[tuple[
        Instance, int]]] | str:
    """Rebuild the proof's steps from the substitution's text and compare them with the
    certificate's: (script, checks, budget, enumerations), or why the certificate is
    refused."""
    max_rank = entry.get("max_rank")
    if not isinstance(max_rank, int) or max_rank < 1:
        return "the certificate has no rank bound"
    stored = entry.get("obligations")
    if not isinstance(stored, list):
        return "the certificate lists no obligations"
    try:
        obligations = [Obligation.from_json(d) for d in stored]
    except (ValueError, KeyError, TypeError, AttributeError):
        return "the certificate's obligations are malformed"
    insts = list(instances(sub, max_rank))
    if [o.key for o in obligations] != [Obligation.of(i, "").key for i in insts]:
        return (f"the certificate's instances are not those of this substitution at ranks <= "
                f"{max_rank}")
    queries: list[str] = []
    budget = 0
    enumerations: list[tuple[Instance, int]] = []
    for o, inst in zip(obligations, insts):
        if o.method == VACUOUS:
            if obligation_query(sub, inst, None) is not None:
                return f"{describe(inst)}: the certificate says nothing to prove, but there is"
        elif o.method == Z3_METHOD:
            query = obligation_query(sub, inst, o.bound)
            if query is None or query != o.smtlib:
                return (f"{describe(inst)}: the certificate's query is not the obligation of "
                        "this substitution")
            if o.rlimit is None or o.rlimit < 1:
                return f"{describe(inst)}: the certificate's query has no resource limit"
            queries.append(budgeted(query, o.rlimit))
            budget += o.rlimit
        elif o.method == ENUMERATION:
            if o.bound is None or o.bound < 1 or \
                    enumeration_size(sub, inst, o.bound) > ENUMERATION_LIMIT:
                return (f"{describe(inst)}: the certificate's enumeration bound is missing or "
                        f"needs more than {ENUMERATION_LIMIT} assignments")
            enumerations.append((inst, o.bound))
        else:
            return f"{describe(inst)}: unknown proof step {o.method!r}"
    if not queries and not enumerations:
        return "the certificate proves no instance"
    if entry.get("strength") != strength_of(sub, obligations, max_rank):
        return (f"the certificate's strength {entry.get('strength')!r} is not what its "
                f"obligations prove ({strength_of(sub, obligations, max_rank)!r})")
    script = RESET.join(queries)  # (reset) also resets the options: each query sets its own
    return script, len(queries), budget, enumerations


def _enumeration_text(enumerations: Sequence[tuple[Instance, int]]) -> str:
    return "".join(f"; enumerate {describe(i)}, sizes <= {b}\n" for i, b in enumerations)


def _run(job: _Recheck, timeout_ms: int | None, exe: str | None) -> None:
    """Run the job's queries (in a `z3` process, or a Z3 context of their own) while its
    enumerations run here (plain integers, no solver); on success the verdict stays `proved`."""
    start = time.perf_counter()
    res = job.result
    with ThreadPoolExecutor(max_workers=1) as pool:
        net = timeout_ms or safety_net_ms(job.budget)
        answers = pool.submit(run_query, job.script, net, exe) if job.checks else None
        failed: tuple[Instance, int, bool | Counterexample | None] | None = None
        for inst, bound in job.enumerations:
            found = exhaustive(job.sub, inst, bound)
            if found is not True:
                failed = (inst, bound, found)
                break
        got = answers.result() if answers is not None else []
    res.seconds = time.perf_counter() - start
    if got != ["unsat"] * job.checks:
        res.verdict, res.strength = (REFUTED if "sat" in got else UNKNOWN), None
        res.message = ("the certificate says proved, but Z3 finds one of its queries "
                       "satisfiable: run verifidx subst prove for a counterexample"
                       if "sat" in got else
                       f"re-checking the certificate's queries did not answer unsat at every "
                       f"check ({', '.join(got) or 'no answer'})")
    elif failed is not None:
        inst, bound, found = failed
        res.verdict, res.strength = (REFUTED if found else UNKNOWN), None
        res.counterexample = found if isinstance(found, Counterexample) else None
        res.message = (f"{describe(inst)}: the enumeration of sizes <= {bound} "
                       f"{'finds ' + str(found) if found else 'did not run'}")
    else:
        res.recheck = "re-run"


def check_files(paths: Sequence[str | Path], proofs: str | Path | None = None,
                reprove: bool = False, recheck: bool = False, cache: ProofCache | None = None,
                jobs: int = 1, timeout_ms: int | None = DEFAULT_TIMEOUT_MS,
                engine: Engine | None = None, progress: bool = False) -> list[SubstProof]:
    """Every substitution must have a current certificate saying `proved`. With `recheck` (the
    gate), its queries and enumerations, rebuilt from the substitution's text, must prove it
    again now (or the proof cache records that an earlier run holding its secret saw them do
    so), `jobs` at a time
    here or on `engine` when it is a Dask cluster; with `reprove`, the whole proof runs again
    instead."""
    results: list[SubstProof] = []
    todo: list[_Recheck] = []
    for f in substitution_files(paths):
        subs = load_substitution_file(f)
        if reprove:
            results += [prove(s) for s in subs]
            continue
        cert = certificate_path(f, proofs)
        try:
            entries = load_certificates(cert)
        except CertificateError as err:
            results += [SubstProof(s.name, s.file, s.line, ERROR, message=str(err))
                        for s in subs]
            continue
        for s in subs:
            entry = entries.get(s.name)
            why = staleness(s, entry)
            if why is not None:
                verdict = "missing" if entry is None else "stale"
                results.append(SubstProof(s.name, s.file, s.line, verdict,
                                          message=f"{why}; run verifidx subst prove"))
                continue
            assert entry is not None
            res = _from_entry(s, entry)
            results.append(res)
            if not recheck or res.verdict != PROVED:
                continue
            job = _recheck_job(res, s, entry)
            if job is None:
                continue
            if cache is not None and job.key in cache:
                res.recheck = "cache"
                continue
            todo.append(job)
    with Progress(len(todo), "check substitutions", progress) as bar:
        if engine is not None and engine.on_dask:
            _on_engine(todo, timeout_ms, engine, bar)
        elif todo:
            exe = z3_binary()

            def one(job: _Recheck) -> None:
                _run(job, timeout_ms, exe)
                bar.advance()

            with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
                list(pool.map(one, todo))
    for job in todo:
        if cache is not None and job.result.recheck == "re-run":
            cache.add(job.key)
    return results


def _recheck_job(res: SubstProof, sub: Substitution, entry: dict[str, object]
                 ) -> _Recheck | None:
    """What must run again to believe the certificate's `proved` (None: the certificate is
    refused, `res` says why)."""
    plan = _plan(sub, entry)
    if isinstance(plan, str):
        res.verdict, res.strength = ERROR, None
        res.message = f"{plan}; run verifidx subst prove --force"
        return None
    script, checks, budget, enumerations = plan
    key = cache_key(script + _enumeration_text(enumerations), sub.normalized_text, 0,
                    Z3_VERSION, _version())
    return _Recheck(res, sub, script, checks, budget, enumerations, key, entry)


def recheck_in_process(sub: Substitution, entry: dict[str, object], timeout_ms: int | None
                       ) -> SubstProof:
    """One certificate re-checked here, from the substitution and the certificate entry (the
    worker side of a re-check on a cluster)."""
    res = _from_entry(sub, entry)
    job = _recheck_job(res, sub, entry) if res.verdict == PROVED else None
    if job is not None:
        _run(job, timeout_ms, z3_binary())
    return res


def _on_engine(todo: Sequence[_Recheck], timeout_ms: int | None, engine: Engine,
               bar: Progress) -> None:
    """The re-checks as work items (`run_recheck` below); one no worker finished is
    unknown with the reason, never proved."""
    items = [recheck_item(job.sub, job.entry, timeout_ms) for job in todo]
    for o in run(run_recheck, items, engine, bar):
        res = todo[o.index].result
        if o.text is None:
            res.verdict, res.strength = UNKNOWN, None
            res.message = f"re-checking the certificate did not finish (every try failed): " \
                          f"{o.error or 'no answer'}"
            continue
        doc = json.loads(o.text)
        res.verdict, res.strength, res.message = doc["verdict"], doc["strength"], doc["message"]
        res.recheck, res.seconds = doc["recheck"], doc["seconds"]
        res.counterexample = _counterexample(doc["counterexample"])


def gate_results(paths: Sequence[str | Path], proofs: str | Path | None, reprove: bool,
                 cache: ProofCache | None = None, jobs: int = 1,
                 timeout_ms: int | None = DEFAULT_TIMEOUT_MS, engine: Engine | None = None,
                 progress: bool = False) -> list[ProofResult]:
    """The substitution files among `paths` (and in its directories), re-checked, as the rule
    gate's ProofResult records (the hook `verifidx check` calls)."""
    found = [p for p in paths if Path(p).is_dir() or str(p).endswith(".subst")]
    out: list[ProofResult] = []
    for r in check_files(found, proofs, reprove, recheck=True, cache=cache, jobs=jobs,
                         timeout_ms=timeout_ms, engine=engine, progress=progress):
        out.append(ProofResult(r.name, _display(Path(r.file)), r.line, r.verdict,
                               strength=r.strength, seconds=r.seconds,
                               message="" if r.verdict == PROVED else r.message,
                               recheck={"re-run": "z3", "cache": "cache"}.get(str(r.recheck)),
                               strategy="substitution"))
    return out


# -- re-checks as work items (`verifidx.core.work`) ------------------------------------------------


def recheck_item(sub: Substitution, entry: dict[str, object], timeout_ms: int | None) -> str:
    return json.dumps({"text": sub.normalized_text, "file": sub.file, "line": sub.line,
                       "entry": entry, "timeout_ms": timeout_ms})


def run_recheck(item: str) -> str:
    """Worker side of a re-check: the plan rebuilt from the text and the certificate entry,
    run; the verdict and what `verifidx check` reports of it."""
    job = json.loads(item)
    sub = parse_one(job["text"], job["file"], job["line"])
    start = time.perf_counter()
    res = recheck_in_process(sub, job["entry"], job["timeout_ms"])
    cx = res.counterexample
    return json.dumps({"verdict": res.verdict, "strength": res.strength,
                       "message": res.message, "recheck": res.recheck,
                       "seconds": time.perf_counter() - start,
                       "counterexample": None if cx is None else cx.to_json()})


def _counterexample(doc: dict[str, Any] | None) -> Counterexample | None:
    if doc is None:
        return None

    def read(r: list[Any] | None) -> tuple[str, tuple[int, ...]] | None:
        return None if r is None else (r[0], tuple(r[1]))

    return Counterexample(dict(doc["sizes"]), {k: tuple(v) for k, v in doc["perms"].items()},
                          {k: tuple(v) for k, v in doc["shapes"].items()},
                          None if doc["index"] is None else tuple(doc["index"]),
                          read(doc["lhs_read"]), read(doc["rhs_read"]), doc["reason"])
