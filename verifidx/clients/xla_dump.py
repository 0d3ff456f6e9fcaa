"""Read XLA's per-pass snapshots (`--xla_dump_to=DIR --xla_dump_hlo_pass_re=.*`) as ordered pairs.

XLA writes `module_NNNN.NAME.before_optimizations.txt`, then one file per pass that changed the
module, `module_NNNN.NAME.SSSS.PIPELINE.after_PASS.before_NEXT.txt` (SSSS its sequence number;
a pass that writes several snapshots, as copy-insertion does, ends `after_STEP.txt`). Per module
the snapshots are ordered by sequence number, the one before optimizations first; a snapshot
whose text equals the previous one is skipped; each remaining one is paired with the one before.
The other files of a dump (buffer assignment, LLVM IR, debug options) are not HLO and are not read.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from verifidx.hlo import HloModule, parse_hlo
from verifidx.hlo.parser import Reused

_SNAPSHOT = re.compile(r"^module_(\d+)\.(.+)\.(\d{4})\.(.+?)\.after_(.+?)(?:\.before_(.+))?\.txt$")
_START = re.compile(r"^module_(\d+)\.(.+)\.before_optimizations\.txt$")


@dataclass(frozen=True)
class Snapshot:
    """One HLO text of the dump: the module it belongs to, where it falls in the pass order,
    the pass that produced it (`before_optimizations` for the input) and its pipeline."""

    module_id: int
    module_name: str
    sequence: int
    pipeline: str
    after_pass: str
    path: str


@dataclass(frozen=True)
class PassPair:
    """A pass's input and output: the snapshot before and the snapshot it wrote."""

    before: Snapshot
    after: Snapshot
    before_text: str
    after_text: str


def parse_snapshot_name(filename: str, directory: str = "") -> Snapshot | None:
    """The snapshot a dump file name describes; None for a file that is not one."""
    path = os.path.join(directory, filename)
    m = _START.match(filename)
    if m:
        return Snapshot(int(m.group(1)), m.group(2), -1, "", "before_optimizations", path)
    m = _SNAPSHOT.match(filename)
    if m:
        return Snapshot(int(m.group(1)), m.group(2), int(m.group(3)), m.group(4), m.group(5),
                        path)
    return None


def read_dump(directory: str) -> dict[tuple[int, str], list[Snapshot]]:
    """The snapshots of every module, ordered; raises OSError for an unreadable directory and
    ValueError when it holds no snapshot at all."""
    snapshots: dict[tuple[int, str], list[Snapshot]] = {}
    for name in sorted(os.listdir(directory)):
        s = parse_snapshot_name(name, directory)
        if s is not None:
            snapshots.setdefault((s.module_id, s.module_name), []).append(s)
    if not snapshots:
        raise ValueError(f"{directory}: no XLA pass snapshots (files module_NNNN.NAME.SSSS."
                         "PIPELINE.after_PASS.before_NEXT.txt; dump with XLA_FLAGS="
                         "--xla_dump_to=DIR --xla_dump_hlo_pass_re=.*)")
    for key in snapshots:
        snapshots[key].sort(key=lambda s: s.sequence)
    return dict(sorted(snapshots.items()))


def pass_pairs(snapshots: list[Snapshot]) -> list[PassPair]:
    """Each snapshot that changed the text against the last one before it."""
    pairs: list[PassPair] = []
    prev: Snapshot | None = None
    prev_text = prev_body = ""
    for s in snapshots:
        with open(s.path, encoding="utf-8") as f:
            text = f.read()
        if prev is not None and text == prev_text:
            continue
        body = _body(text)
        if prev is not None and body != prev_body:
            pairs.append(PassPair(prev, s, prev_text, text))
        if prev is None or body != prev_body:
            prev, prev_text, prev_body = s, text, body
    return pairs


def _body(text: str) -> str:
    """The text without blanks at the ends of its lines and of the file: a pass that changes
    nothing else has changed nothing."""
    return "\n".join([line.rstrip(" \t\r\f\v") for line in text.strip().split("\n")])


VERDICTS = ("same", "differ", "fewer reads", "unknown")


@dataclass
class PassResult:
    """One pass validated: its verdict over all output leaves and parameters (`unknown` with
    the reason when verifidx could not read a snapshot), the first differing pair, and what
    running it said."""

    pair: PassPair
    verdict: str
    reason: str
    validation: Any
    difference: Any
    confirmation: str | None
    seconds: float

    @property
    def name(self) -> str:
        a = self.pair.after
        return f"{a.pipeline}.{a.after_pass}" if a.pipeline else a.after_pass

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"pass": self.pair.after.after_pass,
                               "pipeline": self.pair.after.pipeline,
                               "sequence": self.pair.after.sequence,
                               "before": os.path.basename(self.pair.before.path),
                               "after": os.path.basename(self.pair.after.path),
                               "verdict": self.verdict, "reason": self.reason,
                               "seconds": round(self.seconds, 3)}
        if self.validation is not None:
            out["validation"] = self.validation.to_json()
        if self.confirmation is not None:
            out["confirmation"] = self.confirmation
        return out


@dataclass
class ModuleResult:
    module_id: int
    name: str
    passes: list[PassResult]

    @property
    def first_difference(self) -> PassResult | None:
        return next((p for p in self.passes if p.verdict == "differ"), None)


def validate_dump(directory: str, *, timeout_ms: int = 2000, rlimit: int | None = None,
                  confirm: Callable[[str, str, Any], str] | None = None) -> list[ModuleResult]:
    """Every pass of every module of the dump against its input (`validate_programs`); the
    first differing pair of a differing pass is run through `confirm` when one is given."""
    modules = read_dump(directory)
    from verifidx.clients.pass_region import PassChain
    from verifidx.clients.translation import validate_programs
    from verifidx.core.errors import VerifidxError

    cache: dict[str, HloModule] = {}
    reuse = Reused()
    chain = PassChain()

    def parsed(snapshot: Snapshot, text: str) -> HloModule:
        """Each snapshot parsed once: it is the output of one pass and the input of the next;
        the lines a pass left as they were are taken from the snapshot before."""
        if snapshot.path not in cache:
            cache.clear()  # the pairs come in order: only the last one is needed again
            cache[snapshot.path] = parse_hlo(text, source=snapshot.path, reuse=reuse)
        return cache[snapshot.path]

    results = []
    for (module_id, name), snapshots in modules.items():
        passes = []
        for pair in pass_pairs(snapshots):
            start = time.process_time()
            validation, difference, confirmation = None, None, None
            try:
                validation = validate_programs(parsed(pair.before, pair.before_text),
                                               parsed(pair.after, pair.after_text),
                                               timeout_ms=timeout_ms, rlimit=rlimit,
                                               chain=chain)
                verdict, reason = validation.verdict(), ""
            except VerifidxError as e:  # a snapshot verifidx cannot read: no claim
                verdict, reason = "unknown", str(e).splitlines()[0]
            if verdict == "differ" and validation is not None:
                difference = next(p for p in validation.pairs if p.verdict == "differ")
                if confirm is not None and difference.counterexample is not None:
                    confirmation = confirm(pair.before_text, pair.after_text,
                                           difference.counterexample)
            passes.append(PassResult(pair, verdict, reason, validation, difference,
                                     confirmation, time.process_time() - start))
        results.append(ModuleResult(module_id, name, passes))
    return results
