"""Proofs and re-checks as work items (`verifidx.core.work`): text in, text out.

A rule travels as its text with its file and line (the parser rebuilds the same `Rule`, and Z3
objects are built inside the worker from it); the answer is the `ProofResult` as JSON, whose
fields are plain values, so the certificate written from it is the one a proof in this process
writes. A re-check travels as its SMT-LIB2 query. An item that fails on every try (its worker
lost each time, or the prover raised) is unknown with the reason, never proved.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Iterator, Sequence

from ..core.work import Engine, Progress, run
from .model import Rule
from .parser import parse_rule
from .results import UNKNOWN, ProofResult, ProverConfig


def rule_item(rule: Rule, config: ProverConfig) -> str:
    return json.dumps({"text": rule.text, "file": rule.file, "line": rule.line,
                       "config": dataclasses.asdict(config)})


def prove_item(item: str) -> str:
    """Worker side of a proof: the rule from its text, the ProofResult as JSON."""
    from .prover import prove_rule  # Z3 loads in the worker

    job = json.loads(item)
    rule = dataclasses.replace(parse_rule(job["text"], job["file"]), line=job["line"])
    result = prove_rule(rule, ProverConfig(**job["config"]))
    fields = {f.name: getattr(result, f.name) for f in dataclasses.fields(result)
              if f.name != "rule"}
    return json.dumps(fields)


def result_from_text(text: str, rule: Rule) -> ProofResult:
    result = ProofResult(**json.loads(text))
    result.rule = rule
    return result


def unknown_result(rule: Rule, reason: str) -> ProofResult:
    return ProofResult(rule.name, rule.file, rule.line, UNKNOWN, rule=rule,
                       message=f"the proof did not finish (every try failed): {reason}")


def prove_on(rules: Sequence[Rule], config: ProverConfig, engine: Engine,
             progress: Progress | None = None) -> Iterator[ProofResult]:
    """Every rule proven on `engine`; results in the order of `rules`, each as soon as it and
    every rule before it are done."""
    items = [rule_item(r, config) for r in rules]
    for o in run(prove_item, items, engine, progress):
        yield result_from_text(o.text, rules[o.index]) if o.text is not None \
            else unknown_result(rules[o.index], o.error or "no answer")


def recheck_item(item: str) -> str:
    """Worker side of a re-check: the answers of Z3 to the query, and the time it took."""
    from .prover import run_query, z3_binary

    job = json.loads(item)
    start = time.perf_counter()
    answers = run_query(job["query"], job["timeout_ms"], z3_binary())
    return json.dumps({"answers": answers, "seconds": time.perf_counter() - start})


def recheck_on(jobs: Sequence[tuple[str, int]], engine: Engine,
               progress: Progress | None = None) -> list[tuple[list[str], float]]:
    """(answers, seconds) of each (query, wall-clock safety net in ms); a query no worker
    answered has the answer `error: <reason>`, which is no `unsat` (so it proves nothing)."""
    items = [json.dumps({"query": q, "timeout_ms": ms}) for q, ms in jobs]
    out: list[tuple[list[str], float]] = []
    for o in run(recheck_item, items, engine, progress):
        if o.text is None:
            out.append(([f"error: {o.error or 'no answer'}"], 0.0))
        else:
            doc = json.loads(o.text)
            out.append((list(doc["answers"]), float(doc["seconds"])))
    return out
