"""Generation groups of `subst generate` as work items (`verifidx.core.work`).

A generation group travels as its candidate pairs' text (the parser rebuilds the same graphs)
and comes back as the proven substitutions' normalized text, each with the positions of the
pairs it covers, and the group's counts. Every run goes through this text, in this process
too, and the group's budget counts prover calls, never seconds, so what `subst generate`
keeps is the same whatever ran where, how many workers there were and how loaded they were.
"""

from __future__ import annotations

import json
from typing import Any

from verifidx.analysis.subst.model import Node, Substitution
from verifidx.analysis.subst.parser import parse_graph, parse_one
from verifidx.analysis.subst.prove import generation_prover

# -- generation groups ---------------------------------------------------------------------------

Pair = tuple[Node, Node]


def group_item(pairs: list[Pair], rank: int, name: str, enum_bound: int,
               group_proofs: int) -> str:
    return json.dumps({"pairs": [[str(lhs), str(rhs)] for lhs, rhs in pairs], "rank": rank,
                       "name": name, "enum_bound": enum_bound, "group_proofs": group_proofs})


def run_group(item: str) -> str:
    """Worker side: generalize and prove one group (`verifidx.analysis.subst.generalize`)."""
    from verifidx.analysis.subst.enumeration import input_shapes
    from verifidx.analysis.subst.generalize import generalize

    job = json.loads(item)
    pairs = [(parse_graph(lhs, "<work item>"), parse_graph(rhs, "<work item>"))
             for lhs, rhs in job["pairs"]]
    where = {p: k for k, p in reversed(list(enumerate(pairs)))}
    o = generalize(pairs, job["rank"], input_shapes(job["rank"]), job["name"],
                   generation_prover(job["enum_bound"]), job["group_proofs"])

    def found(subs: list[tuple[Substitution, list[Pair]]]) -> list[list[Any]]:
        return [[s.normalized_text, [where[p] for p in ps]] for s, ps in subs]

    return json.dumps({"general": found(o.general), "concrete": found(o.concrete),
                       "refuted": o.refuted, "unknown": o.unknown, "proofs": o.proofs,
                       "seconds": o.seconds, "failures": o.failures})


def group_outcome(text: str | None, error: str | None, pairs: list[Pair], name: str) -> Any:
    """The group's `generalize.Outcome` from the worker's answer; a group no worker answered
    proves nothing: every pair of it is unknown."""
    from verifidx.analysis.subst.generalize import Outcome

    if text is None:
        return Outcome(unknown=len(pairs),
                       failures=[f"{name}: every try failed ({error or 'no answer'}); its "
                                 f"{len(pairs)} candidates are unknown"])
    doc = json.loads(text)

    def found(entries: list[list[Any]]) -> list[tuple[Substitution, list[Pair]]]:
        return [(parse_one(t), [pairs[k] for k in ks]) for t, ks in entries]

    return Outcome(general=found(doc["general"]), concrete=found(doc["concrete"]),
                   refuted=doc["refuted"], unknown=doc["unknown"], proofs=doc["proofs"],
                   seconds=doc["seconds"], failures=list(doc["failures"]))
