"""Indexing maps (or coalescing, or tiles) of many modules (a model zoo, a CI fleet's HLO dumps) as
JSON Lines.

One work item per file, text in and text out (`verifidx.core.work`): the item is the file's text and
the options, the answer one JSON record, the same wherever it ran. A record is keyed by the
SHA-256 of the file's bytes, the verifidx version and the options, so a rerun reuses every
record whose key still matches and recomputes only the rest. The record layout is in
docs/contracts.md; `computation_json` is also the layout of `verifidx indexing --json`.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ..analysis.computation_maps import (
    ComputationIndexing,
    computation_indexing,
    reported_computations,
    set_proven_dedup,
)
from ..core.errors import ParseError, UnsupportedError, VerifidxError, decode_text
from ..core.syntax import print_map
from ..core.version import __version__
from ..hlo.indexing import output_to_input
from ..hlo.module import HloModule
from ..hlo.runtime import OperandIndexing
from ..stablehlo import parse_module

#: Suffixes of the module files a directory argument contributes.
MODULE_SUFFIXES = (".hlo", ".mlir", ".stablehlo")


def is_hlo_snapshot(path: Path) -> bool:
    """Whether a `.txt` file of a directory is one of XLA's HLO module snapshots
    (`--xla_dump_to`: `module_NNNN.NAME.before_optimizations.txt`, `...after_optimizations.txt`,
    per-pass files), whose text starts with `HloModule`; the dump's other `.txt` files (buffer
    assignment, live ranges, memory reports) are not modules and are skipped."""
    try:
        with path.open("rb") as f:
            head = f.read(64)
    except OSError:
        return True  # named like a module: let the reader report why it cannot be read
    return head.lstrip().startswith(b"HloModule")
FORMAT = "verifidx-indexing-batch/1"


# -- the JSON of one computation's maps --------------------------------------------------------


def operand_json(maps: tuple[OperandIndexing, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {"maps": [print_map(m.map) for m in maps]}
    if any(m.runtime for m in maps):
        out["runtime_variables"] = [
            [{"rt": f"rt{k}", "source": rv.label, "instruction": rv.source.name,
              "map": print_map(rv.map)} for k, rv in enumerate(m.runtime)]
            for m in maps
        ]
    if any(m.map.sizes for m in maps):
        out["sizes"] = [[{"name": z.name, "interval": [z.bounds.lo, z.bounds.hi],
                          "source": z.provenance} for z in m.map.sizes] for m in maps]
    if any(m.replica is not None for m in maps):
        out["replica_ids"] = [None if m.replica is None else print_map(m.replica) for m in maps]
    if any(m.is_undefined for m in maps):
        out["reasons"] = [("; ".join(m.notes) or "no reason recorded") if m.is_undefined
                          else None for m in maps]
    return out


def computation_json(ci: ComputationIndexing) -> dict[str, Any]:
    comp = ci.computation
    outputs = []
    for o, shape in enumerate(ci.outputs):
        operands = []
        for p in comp.parameters:
            number = p.parameter_number or 0
            leaves = len(p.shape.leaves())
            for leaf in range(leaves):
                entry: dict[str, Any] = {"parameter_number": number, "parameter_name": p.name}
                if p.shape.is_tuple:
                    entry["tuple_index"] = leaf
                entry.update(operand_json(ci.maps_for(o, number, leaf)))
                operands.append(entry)
        outputs.append({"output_index": o, "shape": str(shape), "operands": operands})
    return {"name": comp.name, "role": ci.role, "root": comp.root.name, "outputs": outputs}


# -- one file ----------------------------------------------------------------------------------


def options_of(direction: str = "out2in", proven_dedup: bool = True, merges: bool = False,
               allow_unknown_opcodes: bool = False) -> dict[str, object]:
    """The options of `indexing --batch` (part of every record's key)."""
    return {"kind": "indexing", "direction": direction, "proven_dedup": proven_dedup,
            "merges": merges, "allow_unknown_opcodes": allow_unknown_opcodes}


def coalescing_options(warp_size: int, transaction_bytes: int, unroll: int,
                       allow_unknown_opcodes: bool = False) -> dict[str, object]:
    """The options of `coalescing --batch`."""
    return {"kind": "coalescing", "warp_size": warp_size,
            "transaction_bytes": transaction_bytes, "unroll": unroll,
            "allow_unknown_opcodes": allow_unknown_opcodes}


def tile_options(tile_sizes: Sequence[int] | None, computation: str | None, prove: bool,
                 timeout_ms: int, allow_unknown_opcodes: bool = False) -> dict[str, object]:
    """The options of `tile --batch` (the same tile sizes for every file)."""
    return {"kind": "tile", "tile_sizes": None if tile_sizes is None else list(tile_sizes),
            "computation": computation, "prove": prove, "timeout_ms": timeout_ms,
            "allow_unknown_opcodes": allow_unknown_opcodes}


def file_key(data: bytes, options: dict[str, object]) -> str:
    """What a record is current for: these bytes, this verifidx, these options."""
    h = hashlib.sha256(data)
    h.update(f"\0{__version__}\0{json.dumps(options, sort_keys=True)}".encode())
    return h.hexdigest()


def unknown_by_opcode(module: HloModule) -> dict[str, int]:
    """Instructions (in every computation) whose per-op output-to-input maps include an
    UNDEFINED map, counted by opcode: what the model zoo is missing."""
    counts: dict[str, int] = {}
    for comp in module.computations.values():
        for inst in comp.instructions:
            if not inst.operands:
                continue
            unknown = False
            for k in range(len(inst.shape.leaves())):
                r = output_to_input(inst, comp, k, module=module)
                if any(m.is_undefined for maps in r.maps for m in maps):
                    unknown = True
                    break
            if unknown:
                counts[inst.opcode] = counts.get(inst.opcode, 0) + 1
    return dict(sorted(counts.items()))


def _record(source: str, text: str, options: dict[str, Any]) -> dict[str, Any]:
    try:
        if options["kind"] == "coalescing":
            return _coalescing(source, text, options)
        if options["kind"] == "tile":
            return _tiles(source, text, options)
        return _indexing(source, text, options)
    except ParseError as err:
        return {"status": "error", "error": {"message": err.message, "line": err.line,
                                             "column": err.column}}
    except VerifidxError as err:  # unsupported input: an error of the file, without a place
        return {"status": "error", "error": {"message": str(err), "line": None,
                                             "column": None}}


def _ops(module: HloModule) -> int:
    return sum(len(c.instructions) for c in module.computations.values())


def _coalescing(source: str, text: str, options: dict[str, Any]) -> dict[str, Any]:
    from ..analysis.tiling.coalescing import coalescing, loop_thread_order
    from ..hlo import parse_hlo

    module = parse_hlo(text, source, check_shapes=True,  # validated as `coalescing FILE` does
                       allow_unknown_opcodes=bool(options["allow_unknown_opcodes"]))
    results = coalescing(module, options["warp_size"], options["transaction_bytes"],
                         loop_thread_order(options["unroll"]))
    return {"status": "ok", "module": module.name, "ops": _ops(module),
            "fusions": [f.to_json() for f in results]}


def _tiles(source: str, text: str, options: dict[str, Any]) -> dict[str, Any]:
    from ..analysis.tiling.propagation import analyze, propagate
    from ..hlo import parse_hlo

    module = parse_hlo(text, source, check_shapes=True,  # validated as `tile FILE` does
                       allow_unknown_opcodes=bool(options["allow_unknown_opcodes"]))
    name = options["computation"]
    if name and name.removeprefix("%") not in module.computations:
        raise UnsupportedError(f"no computation {name!r}")
    root = module.entry.root
    if name is None and (root.opcode != "fusion" or not root.called_computations):
        raise ParseError(f"the entry's root {root.name} is not a fusion; name the computation "
                         "to tile with --computation", root.line, root.column, source)
    sym = analyze(module, name, keep_untiled=True)
    sizes = options["tile_sizes"]
    if sizes is None and sym.num_parameters and sym.entries:
        raise UnsupportedError(f"{sym.computation} needs {sym.num_parameters} tile sizes "
                               "(--tile-sizes)")
    tiled = propagate(module, sym.computation, sizes or [], prove=bool(options["prove"]),
                      timeout_ms=int(options["timeout_ms"]), analysis=sym, keep_untiled=True)
    return {"status": "ok", "module": module.name, "ops": _ops(module),
            "tiles": tiled.to_json()}


def _indexing(source: str, text: str, options: dict[str, Any]) -> dict[str, Any]:
    set_proven_dedup(bool(options["proven_dedup"]))
    module = parse_module(text, source, check_shapes=True,
                          allow_unknown_opcodes=bool(options["allow_unknown_opcodes"]))
    results = [computation_indexing(module, c, str(options["direction"]))
               for c in reported_computations(module)]
    doc: dict[str, Any] = {
        "status": "ok", "module": module.name, "ops": _ops(module),
        "unknown_indexing": unknown_by_opcode(module),
        "computations": [computation_json(ci) for ci in results],
    }
    if options["merges"]:
        doc["merges"] = [{"computation": ci.computation.name, "at": mg.where, "kept": mg.kept,
                          "dropped": mg.dropped, "reason": mg.reason}
                         for ci in results for mg in ci.merges]
    return doc


def index_item(item: str) -> str:
    """The work item: `{"file", "key", "text", "options"}` in, the file's record out."""
    job = json.loads(item)
    record = {"file": job["file"], "key": job["key"]}
    record.update(_record(job["file"], job["text"], job["options"]))
    return dumps(record)


def dumps(record: dict[str, Any]) -> str:
    return json.dumps(record, separators=(",", ":"))


def unknown_record(file: str, key: str, reason: str) -> str:
    """The record of a file whose item failed on every try: nothing is claimed about it."""
    return dumps({"file": file, "key": key, "status": "unknown", "reason": reason})


# -- many files --------------------------------------------------------------------------------


def expand(paths: Sequence[str]) -> list[str]:
    """Files in order: a file as given, a directory's module files (sorted, recursively), and
    `@LIST` the paths in LIST, one a line (blank lines and `#` comments skipped)."""
    out: list[str] = []
    for arg in paths:
        if arg.startswith("@"):
            try:
                lines = decode_text(Path(arg[1:]).read_bytes(), arg[1:]).splitlines()
            except OSError as err:
                raise UnsupportedError(f"cannot read the list {arg[1:]}: {err.strerror}"
                                       ) from None
            out += [ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")]
        elif os.path.isdir(arg):
            out += sorted(str(p) for p in Path(arg).rglob("*")
                          if p.is_file() and (p.suffix in MODULE_SUFFIXES or
                                              p.suffix == ".txt" and is_hlo_snapshot(p)))
        else:
            out.append(arg)
    return list(dict.fromkeys(out))


def read_records(path: Path) -> dict[str, str] | None:
    """key -> record line of an earlier run's output (`ok` and `error` records: an `unknown`
    one is computed again); None when `path` holds something that is not such a file."""
    if not path.exists():
        return {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    out: dict[str, str] = {}
    for line in lines:
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            return None
        if not isinstance(rec, dict) or not {"file", "key", "status"} <= rec.keys():
            return None
        if rec["status"] in ("ok", "error"):
            out[rec["key"]] = line
    return out


def summarize(lines: Iterable[str], seconds: float, reused: int) -> dict[str, Any]:
    files = ops = 0
    status = {"ok": 0, "error": 0, "unknown": 0}
    unknown: dict[str, int] = {}
    for line in lines:
        rec = json.loads(line)
        files += 1
        status[rec["status"]] += 1
        ops += rec.get("ops", 0)
        for op, n in rec.get("unknown_indexing", {}).items():
            unknown[op] = unknown.get(op, 0) + n
    return {"files": files, **status, "reused": reused, "ops": ops,
            "unknown_indexing": dict(sorted(unknown.items())), "seconds": round(seconds, 3)}
