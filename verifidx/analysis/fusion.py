"""Fusion indexing: per-op maps composed along a networkx graph of a computation.

A fused computation reads its parameters through the composition of every op between the root
and the parameter. `grouped_output_to_input` walks the graph users-first from a start value,
composing, simplifying (proven rules) and deduplicating at every node (`verifidx.analysis.dedup`:
identical maps and maps Z3 proves equal count once), so that the work follows the number of distinct
maps, not the number of paths (a diamond lattice with 2^20 paths stays cheap). The result maps every
value the start reads, directly or not, to its set of access patterns, like XLA's
ComputeGroupedOutputToInputIndexing; `fusion_output_to_input` keeps the parameters.

Nested fusions and calls resolve to their bodies (through the per-op maps of `fusion`/`call`),
tuple roots give one set per output leaf, and every merge is recorded for `--explain-dedup`.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

import networkx as nx

from ..core.errors import UnsupportedError
from ..core.indexing_map import IndexingMap
from ..hlo.indexing import output_to_input as instruction_output_to_input
from ..hlo.module import HloComputation, HloInstruction, HloModule
from ..hlo.runtime import OperandIndexing, compose_indexing
from .computation_maps import ComputationWalker, simplify_indexing
from .dedup import Merge


def computation_graph(computation: HloComputation) -> nx.MultiDiGraph:
    """Producer -> consumer edges, one per operand use (`operand` = its position); nodes carry
    the instruction."""
    g = nx.MultiDiGraph(name=computation.name)
    for inst in computation.instructions:
        g.add_node(inst.name, instruction=inst)
    for inst in computation.instructions:
        for j, operand in enumerate(inst.operands):
            g.add_edge(operand, inst.name, operand=j)
    return g


def users_first(computation: HloComputation, graph: nx.MultiDiGraph | None = None
                ) -> list[HloInstruction]:
    """A reverse topological order of the graph (every user before its operands)."""
    g = graph if graph is not None else computation_graph(computation)
    order = list(nx.lexicographical_topological_sort(
        g, key=lambda n: _position(computation)[n]))
    return [computation.instruction(n) for n in reversed(order)]


def _position(computation: HloComputation) -> dict[str, int]:
    return {inst.name: i for i, inst in enumerate(computation.instructions)}


@dataclass(frozen=True)
class GroupedIndexing:
    """Access patterns of every value reached from `start`: `maps[name]` (leaf 0 of the value;
    other leaves under `leaf_maps[(name, leaf)]`) and the merges made on the way."""

    start: str
    leaf_maps: dict[tuple[str, int], tuple[OperandIndexing, ...]]
    merges: tuple[Merge, ...] = field(default=(), compare=False)
    notes: tuple[str, ...] = field(default=(), compare=False)

    @property
    def maps(self) -> dict[str, tuple[OperandIndexing, ...]]:
        out: dict[str, list[OperandIndexing]] = {}
        for (name, _leaf), ms in self.leaf_maps.items():
            out.setdefault(name, []).extend(ms)
        return {k: tuple(v) for k, v in out.items()}

    def __getitem__(self, name: str) -> tuple[OperandIndexing, ...]:
        return self.maps[name]


def _resolve(module: HloModule | None, computation: HloComputation | str | None
             ) -> tuple[HloModule | None, HloComputation]:
    if isinstance(computation, HloComputation):
        return module, computation
    if module is None:
        raise ValueError("a computation name needs its module")
    if computation is None:
        return module, module.entry
    return module, module.computation(computation)


def grouped_output_to_input(
    module: HloModule | None,
    computation: HloComputation | str | None = None,
    *,
    start: str | None = None,
    output_leaf: int = 0,
    members: Collection[str] | None = None,
) -> GroupedIndexing:
    """Maps from leaf `output_leaf` of `start` (default: the root) to every value it reads.

    `members` restricts the walk to a group of instructions (XLA's fusion adaptor): the values
    they read from outside the group are reported but not expanded. Parameters always end the
    walk. A fusion or call instruction inside the walk reads its operands through its body."""
    module, comp = _resolve(module, computation)
    g = computation_graph(comp)
    first = comp.instruction(start) if start is not None else comp.root
    walker = ComputationWalker(module, comp)
    reached = walker.walk_output_to_input(first, output_leaf, members, users_first(comp, g))
    return GroupedIndexing(first.name, {k: tuple(v) for k, v in reached.items()},
                           tuple(walker.merges), tuple(dict.fromkeys(walker.notes)))


def group_by_producers(module: HloModule | None, computation: HloComputation | str | None,
                       instruction: str, output_leaf: int = 0
                       ) -> dict[str, tuple[OperandIndexing, ...]]:
    """The per-op maps of one instruction, grouped by the instruction that produces each
    operand (XLA's GroupIndexingMapsByProducers): `{producer name: maps}`."""
    module, comp = _resolve(module, computation)
    inst = comp.instruction(instruction)
    per_op = instruction_output_to_input(inst, comp, output_leaf, module=module)
    grouped: dict[str, list[OperandIndexing]] = {}
    for operand, maps in zip(inst.operands, per_op.maps):
        bucket = grouped.setdefault(operand, [])
        for m in maps:
            if m not in bucket:
                bucket.append(m)
    return {k: tuple(v) for k, v in grouped.items()}


def fusion_output_to_input(module: HloModule | None,
                           computation: HloComputation | str | None = None,
                           output_leaf: int = 0) -> dict[str, tuple[OperandIndexing, ...]]:
    """`{parameter name: distinct maps}` from one root output of a computation."""
    module, comp = _resolve(module, computation)
    grouped = grouped_output_to_input(module, comp, output_leaf=output_leaf)
    out: dict[str, tuple[OperandIndexing, ...]] = {}
    for p in comp.parameters:
        maps: list[OperandIndexing] = []
        for (name, _leaf), ms in grouped.leaf_maps.items():
            if name == p.name:
                maps.extend(ms)
        out[p.name] = tuple(maps)
    return out


def epilogue_input_to_output(module: HloModule | None, computation: HloComputation | str | None,
                             parent: str, root: str) -> tuple[OperandIndexing, ...]:
    """Maps from an index of `parent`'s output to the indices of `root`'s output it feeds, along
    the chain of single-use instructions between them (XLA's epilogue indexing). The identity
    when `parent` is `root`."""
    module, comp = _resolve(module, computation)
    first = comp.instruction(parent)
    identity = OperandIndexing(IndexingMap.identity(first.shape.dims))
    current: tuple[OperandIndexing, ...] = (identity,)
    if parent == root:
        return current
    g = computation_graph(comp)
    walker = ComputationWalker(module, comp)
    node = first
    while node.name != root:
        users = list(g.successors(node.name))
        if len(users) != 1:
            raise UnsupportedError(
                f"epilogue from {parent} to {root}: {node.name} has {len(users)} users")
        user = comp.instruction(users[0])
        j = user.operands.index(node.name)
        step: list[OperandIndexing] = []
        for _k, maps in walker.edges_i2o(user, j, 0):
            for f in current:
                for m in maps:
                    composed = compose_indexing(f, m)
                    if composed not in step:
                        step.append(composed)
        current = tuple(step)
        node = user
    return tuple(simplify_indexing(m) for m in current)


# -- drawing -------------------------------------------------------------------------------------


def to_dot(module: HloModule | None, computation: HloComputation | str | None = None) -> str:
    """Graphviz text of a computation; each edge is labelled by the per-op output-to-input maps
    of the consumer for that operand."""
    module, comp = _resolve(module, computation)
    lines = [f'digraph "{_escape(comp.name)}" {{', "  rankdir=BT;",
             '  node [shape=box, fontname="monospace"];',
             '  edge [fontname="monospace", fontsize=9];']
    for inst in comp.instructions:
        style = ", style=bold" if inst is comp.root else ""
        label = f"{inst.name}\\n{inst.opcode} {_escape(str(inst.shape))}"
        lines.append(f'  "{_escape(inst.name)}" [label="{label}"{style}];')
    for inst in comp.instructions:
        if not inst.operands:
            continue
        per_op = instruction_output_to_input(inst, comp, 0, module=module)
        for j, operand in enumerate(inst.operands):
            maps = per_op.maps[j] if j < len(per_op.maps) else ()
            text = "\\n".join(_escape(m.to_text()) for m in maps) or "(not read)"
            lines.append(f'  "{_escape(operand)}" -> "{_escape(inst.name)}" [label="{text}"];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


