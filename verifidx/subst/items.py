"""Generation groups and certificate re-checks of substitutions as work items (`verifidx.work`).

A generation group travels as its candidate pairs' text (the parser rebuilds the same graphs)
and comes back as the proven substitutions' normalized text, each with the positions of the
pairs it covers, and the group's counts. Every run goes through this text, in this process
too, and the group's budget counts prover calls, never seconds, so what `subst generate`
keeps is the same whatever ran where, how many workers there were and how loaded they were.

A re-check travels as the substitution's text, its certificate entry and the safety net; the
worker rebuilds the plan (the queries and enumerations) from them, as `verifidx check` does in
process, and answers the verdict. An item that fails on every try is unknown, never proved.
"""

from __future__ import annotations

import dataclasses
import json
import time
from typing import Any

from verifidx.subst.model import Node, Substitution
from verifidx.subst.parser import parse_graph, parse_substitutions
from verifidx.subst.prove import Counterexample


def _substitution(text: str, file: str = "<generated>", line: int = 1) -> Substitution:
    (sub,) = parse_substitutions(text + "\n", file)
    return dataclasses.replace(sub, line=line)


# -- generation groups ---------------------------------------------------------------------------

Pair = tuple[Node, Node]


def group_item(pairs: list[Pair], rank: int, name: str, enum_bound: int,
               group_proofs: int) -> str:
    return json.dumps({"pairs": [[str(lhs), str(rhs)] for lhs, rhs in pairs], "rank": rank,
                       "name": name, "enum_bound": enum_bound, "group_proofs": group_proofs})


def run_group(item: str) -> str:
    """Worker side: generalize and prove one group (`verifidx.subst.generalize`)."""
    from verifidx.subst.enumeration import input_shapes
    from verifidx.subst.generalize import generalize
    from verifidx.subst.generate import prover

    job = json.loads(item)
    pairs = [(parse_graph(lhs, "<work item>"), parse_graph(rhs, "<work item>"))
             for lhs, rhs in job["pairs"]]
    where = {p: k for k, p in reversed(list(enumerate(pairs)))}
    o = generalize(pairs, job["rank"], input_shapes(job["rank"]), job["name"],
                   prover(job["enum_bound"]), job["group_proofs"])

    def found(subs: list[tuple[Substitution, list[Pair]]]) -> list[list[Any]]:
        return [[s.normalized_text, [where[p] for p in ps]] for s, ps in subs]

    return json.dumps({"general": found(o.general), "concrete": found(o.concrete),
                       "refuted": o.refuted, "unknown": o.unknown, "proofs": o.proofs,
                       "seconds": o.seconds, "failures": o.failures})


def group_outcome(text: str | None, error: str | None, pairs: list[Pair], name: str) -> Any:
    """The group's `generalize.Outcome` from the worker's answer; a group no worker answered
    proves nothing: every pair of it is unknown."""
    from verifidx.subst.generalize import Outcome

    if text is None:
        return Outcome(unknown=len(pairs),
                       failures=[f"{name}: every try failed ({error or 'no answer'}); its "
                                 f"{len(pairs)} candidates are unknown"])
    doc = json.loads(text)

    def found(entries: list[list[Any]]) -> list[tuple[Substitution, list[Pair]]]:
        return [(_substitution(t), [pairs[k] for k in ks]) for t, ks in entries]

    return Outcome(general=found(doc["general"]), concrete=found(doc["concrete"]),
                   refuted=doc["refuted"], unknown=doc["unknown"], proofs=doc["proofs"],
                   seconds=doc["seconds"], failures=list(doc["failures"]))


# -- certificate re-checks -----------------------------------------------------------------------


def recheck_item(sub: Substitution, entry: dict[str, object], timeout_ms: int | None) -> str:
    return json.dumps({"text": sub.normalized_text, "file": sub.file, "line": sub.line,
                       "entry": entry, "timeout_ms": timeout_ms})


def run_recheck(item: str) -> str:
    """Worker side of a re-check: the plan rebuilt from the text and the certificate entry,
    run; the verdict and what `verifidx check` reports of it."""
    from verifidx.subst.certificates import recheck_in_process

    job = json.loads(item)
    sub = _substitution(job["text"], job["file"], job["line"])
    start = time.perf_counter()
    res = recheck_in_process(sub, job["entry"], job["timeout_ms"])
    cx = res.counterexample
    return json.dumps({"verdict": res.verdict, "strength": res.strength,
                       "message": res.message, "recheck": res.recheck,
                       "seconds": time.perf_counter() - start,
                       "counterexample": None if cx is None else cx.to_json()})


def counterexample(doc: dict[str, Any] | None) -> Counterexample | None:
    if doc is None:
        return None

    def read(r: list[Any] | None) -> tuple[str, tuple[int, ...]] | None:
        return None if r is None else (r[0], tuple(r[1]))

    return Counterexample(dict(doc["sizes"]), {k: tuple(v) for k, v in doc["perms"].items()},
                          {k: tuple(v) for k, v in doc["shapes"].items()},
                          None if doc["index"] is None else tuple(doc["index"]),
                          read(doc["lhs_read"]), read(doc["rhs_read"]), doc["reason"])
