"""Root-to-parameter (and parameter-to-root) maps of whole computations, by plain composition.

Output-to-input: starting from the identity on one leaf of the root, walk the computation in
reverse definition order (consumers before producers); at each instruction compose every map
that reached it with the instruction's per-op maps (`verifidx.hlo.indexing`) and hand the results
to its operands. Maps that reach the same value are deduplicated (`verifidx.analysis.dedup`):
identical maps, and maps Z3 proves equal, count once (`set_proven_dedup(False)` keeps XLA's textual
dedup). Input-to-output is the same walk forwards from one parameter, with the per-op
input-to-output maps. Tuples, get-tuple-element and opt-barrier only route maps between tuple
leaves.

After every composition the map goes through the simplifier hook (`set_simplifier`; by default
verifidx's proven simplifier), and constraints that interval arithmetic shows always hold are
dropped. Composition never loses soundness: an UNDEFINED map anywhere on a path makes the
parameter's map UNDEFINED ("unknown indexing").

A `while` routes maps between the leaves of its state with its maps across all iterations
(`verifidx.analysis.loop_maps`); a while body's own maps name the iteration number where the trip
count is known (`verifidx.hlo.ops.loops.per_iteration`). A `conditional` runs one branch, chosen at
run time: its maps are every branch's (`called_bodies`), and its selector is read everywhere.

Module level (`output_to_input(module)`): every computation that is the entry, a fusion body,
the target of a `call`, a `conditional` branch or a `while` body or condition, as
`{computation: {output_index: {parameter_name: [maps]}}}`.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Callable, Collection, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, cast

from verifidx.analysis.dedup import MapSet, Merge
from verifidx.analysis.loop_maps import loop_maps
from verifidx.core.indexing_map import IndexingMap
from verifidx.hlo.dynamic_dims import has_dynamic_sizes, leaf_sizes, start_indexing
from verifidx.hlo.indexing import (
    HloInstructionIndexing,
    Malformed,
    Maps,
    OpContext,
    register_called_computations,
)
from verifidx.hlo.indexing import input_to_output as instruction_input_to_output
from verifidx.hlo.indexing import output_to_input as instruction_output_to_input
from verifidx.hlo.module import COMPUTATION_ATTRIBUTES, HloComputation, HloInstruction, HloModule
from verifidx.hlo.ops.common import reads_exactly, static_dims, to_all, to_scalar
from verifidx.hlo.ops.loops import analyse_loop, loop_of_body, per_iteration
from verifidx.hlo.runtime import OperandIndexing, RuntimeVar, compose_indexing
from verifidx.hlo.shape import Shape
from verifidx.simplifier.engine import default_simplifier

__all__ = [
    "ComputationIndexing",
    "computation_indexing",
    "get_simplifier",
    "input_to_output",
    "output_to_input",
    "reported_computations",
    "set_proven_dedup",
    "set_simplifier",
]

Simplifier = Callable[[IndexingMap], IndexingMap]


def _identity_simplifier(m: IndexingMap) -> IndexingMap:
    return m


def proven_simplifier(m: IndexingMap) -> IndexingMap:
    """The default: verifidx's simplifier, which applies only proven rules."""
    return default_simplifier().simplify(m)


_simplifier: Simplifier = proven_simplifier


def set_simplifier(fn: Simplifier | None) -> None:
    """Choose the map simplifier applied to every composed map, its provenance maps and replica
    maps (default: `proven_simplifier`); None turns simplification off."""
    global _simplifier
    _simplifier = fn or _identity_simplifier


def get_simplifier() -> Simplifier:
    return _simplifier


def simplify_indexing(m: OperandIndexing) -> OperandIndexing:
    """The chosen simplifier applied to a map, its provenance maps and its replica map."""
    fn = _simplifier
    if fn is _identity_simplifier or m.is_undefined:
        return m
    return OperandIndexing(
        fn(m.map),
        tuple(RuntimeVar(rv.source, fn(rv.map)) for rv in m.runtime),
        None if m.replica is None else fn(m.replica),
        m.notes,
    )


# -- results -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ComputationIndexing:
    """Maps of one computation in one direction.

    `maps[(output_leaf, parameter_number, parameter_leaf)]` holds the deduplicated maps between
    leaf `output_leaf` of the root and leaf `parameter_leaf` of the parameter (0 for array
    parameters): root -> parameter for "out2in", parameter -> root for "in2out". A missing key
    means the parameter leaf does not reach that output."""

    computation: HloComputation
    role: str
    direction: str
    outputs: tuple[Shape, ...]
    maps: Mapping[tuple[int, int, int], tuple[OperandIndexing, ...]]
    notes: tuple[str, ...] = field(default=(), compare=False)
    merges: tuple[Merge, ...] = field(default=(), compare=False)

    @property
    def parameters(self) -> tuple[HloInstruction, ...]:
        return self.computation.parameters

    def maps_for(self, output: int, parameter: int, leaf: int | None = None
                 ) -> tuple[OperandIndexing, ...]:
        """Maps between `output` and `parameter` (all of its leaves when `leaf` is None)."""
        if leaf is not None:
            return self.maps.get((output, parameter, leaf), ())
        out: list[OperandIndexing] = []
        for (o, p, _l), ms in sorted(self.maps.items(), key=lambda kv: kv[0]):
            if o == output and p == parameter:
                out.extend(ms)
        return tuple(out)


# -- the walk ----------------------------------------------------------------------------------


def _leaves(shape: Shape) -> int:
    return len(shape.leaves())


def _leaf_offsets(shapes: list[Shape]) -> list[int]:
    out, start = [], 0
    for s in shapes:
        out.append(start)
        start += _leaves(s)
    return out


def _identity(shape: Shape) -> OperandIndexing:
    if shape.is_tuple or any(d < 0 for d in shape.dims):
        return OperandIndexing.undefined(f"no index space for {shape}")
    return OperandIndexing(IndexingMap.identity(shape.dims))


def _start(inst: HloInstruction, leaf: int) -> OperandIndexing:
    """The identity on one leaf where a walk starts, cut to its dynamic sizes if it has any."""
    shape = inst.shape.leaves()[leaf]
    if shape.is_tuple or any(d < 0 for d in shape.dims) or not has_dynamic_sizes(inst):
        return _identity(shape)
    return start_indexing(inst, leaf, shape)


_prove_dedup = True


def set_proven_dedup(prove: bool) -> None:
    """True (default): maps Z3 proves equal count once; False: textual identity only (XLA)."""
    global _prove_dedup
    _prove_dedup = prove


def _context(m: OperandIndexing) -> Hashable:
    """What must match besides the relation: runtime-variable provenance and the replica map."""
    return (tuple((rv.label, rv.map) for rv in m.runtime), m.replica)


class _Bucket:
    """Maps that reached one value, each relation once (verifidx.analysis.dedup), in arrival
    order."""

    def __init__(self, where: str, merges: list[Merge]) -> None:
        self.set: MapSet[OperandIndexing] = MapSet(where, prove=_prove_dedup)
        self.merges = merges

    def add(self, m: OperandIndexing) -> None:
        before = len(self.set.merges)
        self.set.add(m, m.map, _context(m))
        self.merges.extend(self.set.merges[before:])

    def values(self) -> list[OperandIndexing]:
        return self.set.values()


class ComputationWalker:
    def __init__(self, module: HloModule | None, comp: HloComputation) -> None:
        self.module = module
        self.comp = comp
        self.notes: list[str] = []
        self.merges: list[Merge] = []
        self._o2i: dict[tuple[str, int], HloInstructionIndexing] = {}
        self._i2o: dict[tuple[str, int], HloInstructionIndexing] = {}
        self._users: dict[str, list[tuple[HloInstruction, int]]] | None = None
        self._loops: dict[tuple[str, str], dict[tuple[int, int], list[OperandIndexing]]] = {}

    def shape_of(self, name: str) -> Shape:
        return self.comp.instruction(name).shape

    # output -> input edges: (operand position, operand leaf, maps)
    def edges_o2i(self, inst: HloInstruction, leaf: int) -> Iterator[tuple[int, int, Maps]]:
        out_leaf_shape = inst.shape.leaves()[leaf]
        if inst.opcode == "tuple":
            j, start = self._tuple_operand(inst, leaf)
            if j is not None:
                yield j, leaf - start, [_identity(out_leaf_shape)]
            return
        shapes = [self.shape_of(n) for n in inst.operands]
        if inst.opcode == "get-tuple-element" and shapes and shapes[0].is_tuple:
            index = inst.tuple_index
            elements = shapes[0].tuple_shapes
            if index is None or not 0 <= index < len(elements):
                yield 0, 0, [OperandIndexing.undefined("get-tuple-element index out of range")]
                return
            yield 0, _leaf_offsets(list(elements))[index] + leaf, [_identity(out_leaf_shape)]
            return
        if inst.opcode == "opt-barrier" and shapes and shapes[0].is_tuple:
            yield 0, leaf, [_identity(out_leaf_shape)]
            return
        if inst.opcode in _CALLERS and any(x.is_tuple for x in shapes):
            yield from self._callee_edges_o2i(inst, leaf, shapes)
            return
        if inst.opcode == "while":
            for (o, p), across in self.loop(inst, "out2in").items():
                if o == leaf:
                    yield 0, p, across
            return
        key = (inst.name, leaf)
        if key not in self._o2i:
            self._o2i[key] = instruction_output_to_input(inst, self.comp, leaf, module=self.module)
            self.notes.extend(self._o2i[key].notes)
        for j, maps in enumerate(self._o2i[key].maps):
            if shapes[j].is_tuple:  # only routing ops read tuple operands leaf by leaf
                for opleaf in range(_leaves(shapes[j])):
                    yield j, opleaf, [OperandIndexing.undefined(
                        f"{inst.opcode} reads a tuple operand")]
            else:
                yield j, 0, list(maps)

    _offsets: dict[str, list[int]] | None = None

    def _tuple_operand(self, inst: HloInstruction, leaf: int) -> tuple[int | None, int]:
        """(operand position, its first leaf) of the tuple operand holding `leaf`: a bisection
        in leaf offsets computed once per tuple, so a root of n elements costs O(n) for all its
        leaves, not O(n) each."""
        offsets = self._tuple_offsets(inst)
        j = bisect.bisect_right(offsets, leaf) - 1
        if not 0 <= j < len(offsets) - 1 or offsets[j] == offsets[j + 1]:
            return None, 0
        return j, offsets[j]

    def _tuple_offsets(self, inst: HloInstruction) -> list[int]:
        """The first leaf of each operand of a tuple, then its number of leaves (kept)."""
        if self._offsets is None:
            self._offsets = {}
        offsets = self._offsets.get(inst.name)
        if offsets is None:
            offsets = self._offsets[inst.name] = _leaf_offsets(
                [self.shape_of(n) for n in inst.operands]) + [_leaves(inst.shape)]
        return offsets

    # input -> output edges for operand position `j` of `user`: (user leaf, maps)
    def edges_i2o(self, user: HloInstruction, j: int, leaf: int) -> Iterator[tuple[int, Maps]]:
        src = self.shape_of(user.operands[j])
        leaf_shape = src.leaves()[leaf]
        if user.opcode == "tuple":
            yield self._tuple_offsets(user)[j] + leaf, [_identity(leaf_shape)]
            return
        shapes = [self.shape_of(n) for n in user.operands]
        if user.opcode == "get-tuple-element" and src.is_tuple:
            index = user.tuple_index
            elements = list(src.tuple_shapes)
            if index is None or not 0 <= index < len(elements):
                return
            start = _leaf_offsets(elements)[index]
            if start <= leaf < start + _leaves(elements[index]):
                yield leaf - start, [_identity(leaf_shape)]
            return
        if user.opcode == "opt-barrier" and src.is_tuple:
            yield leaf, [_identity(leaf_shape)]
            return
        n_out = _leaves(user.shape)
        if user.opcode in _CALLERS and any(x.is_tuple for x in shapes):
            yield from self._callee_edges_i2o(user, j, leaf, n_out, shapes)
            return
        if user.opcode == "while":
            for (p, o), across in self.loop(user, "in2out").items():
                if p == leaf:
                    yield o, across
            return
        if src.is_tuple:
            for k in range(n_out):
                yield k, [OperandIndexing.undefined(f"{user.opcode} reads a tuple operand")]
            return
        key = (user.name, j)
        if key not in self._i2o:
            self._i2o[key] = instruction_input_to_output(user, self.comp, j, module=self.module)
            self.notes.extend(self._i2o[key].notes)
        for k, maps in enumerate(self._i2o[key].maps):
            yield k, list(maps)

    def loop(self, inst: HloInstruction, direction: str
             ) -> dict[tuple[int, int], list[OperandIndexing]]:
        """A `while`'s maps between its state leaves across all iterations
        (`verifidx.analysis.loop_maps`), keyed (from, to) in walk order, once per direction."""
        key = (inst.name, direction)
        found = self._loops.get(key)
        if found is None:
            found = self._loops[key] = self._loop_maps(inst, direction)
        return found

    def _loop_maps(self, inst: HloInstruction, direction: str
                   ) -> dict[tuple[int, int], list[OperandIndexing]]:
        leaves = inst.shape.leaves()
        why = ""
        if self.module is None:
            why = f"while {inst.name}: its computations are not known"
        elif any(x.is_tuple for x in leaves) or not _keeps_sizes(inst, self.module):
            why = f"while {inst.name}: a state leaf has a dynamic shape"
        else:
            try:
                analysis = analyse_loop(inst, self.module)
                body = analysis.body
                if len(body.parameters) != 1 or not body.parameters[0].shape.compatible(
                        inst.shape) or not body.root.shape.compatible(inst.shape):
                    raise Malformed(f"{body.name} does not match the loop's state")
                ci = computation_indexing(self.module, body, direction)
                control = {pl for (_o, _p, pl) in computation_indexing(
                    self.module, analysis.condition, "out2in").maps}
            except (Malformed, ValueError, KeyError) as err:
                why = f"while {inst.name}: {err}"
        if why:
            self.notes.append(why)
            return {(a, b): [OperandIndexing.undefined(why)]
                    for a in range(len(leaves)) for b in range(len(leaves))}
        per_leaf: dict[tuple[int, int], tuple[OperandIndexing, ...]] = {}
        for (o, _p, pl), maps in ci.maps.items():
            per_leaf[(o, pl) if direction == "out2in" else (pl, o)] = maps
        self.notes.append(analysis.describe())
        return loop_maps(analysis, leaves, per_leaf, direction, simplify_indexing, control,
                         _prove_dedup, [leaf_sizes(inst, i) for i in range(len(leaves))])

    def _callee_maps(self, inst: HloInstruction, shapes: list[Shape], direction: str
                     ) -> list[tuple[int, ComputationIndexing]] | str:
        """The maps of each computation the instruction runs, with the position of the operand
        its parameter 0 receives (`called_bodies`), or why they cannot be used."""
        try:
            return [(first, computation_indexing(self.module, body, direction))
                    for first, body in called_bodies(self.module, inst, shapes)]
        except Malformed as err:
            return f"{inst.opcode} {inst.name}: {err}"

    def _callee_edges_o2i(self, inst: HloInstruction, leaf: int, shapes: list[Shape]
                          ) -> Iterator[tuple[int, int, Maps]]:
        """A call, fusion or conditional with tuple operands, leaf by leaf through the called
        computations' own maps (of every branch of a conditional, and its selector)."""
        called = self._callee_maps(inst, shapes, "out2in")
        selector: list[OperandIndexing] = []
        if isinstance(called, list) and inst.opcode == "conditional":
            try:
                selector = [_selector_o2i(inst, leaf)]
            except Malformed as err:
                called = f"{inst.opcode} {inst.name}: {err}"
        if isinstance(called, str):
            self.notes.append(called)
            for j, x in enumerate(shapes):
                for opleaf in range(_leaves(x)):
                    yield j, opleaf, [OperandIndexing.undefined(called)]
            return
        if selector:
            yield 0, 0, selector
        for first, ci in called:
            for (o, p, pl), maps in ci.maps.items():
                if o == leaf:
                    yield first + p, pl, list(maps)

    def _callee_edges_i2o(self, user: HloInstruction, j: int, leaf: int, n_out: int,
                          shapes: list[Shape]) -> Iterator[tuple[int, Maps]]:
        called = self._callee_maps(user, shapes, "in2out")
        if isinstance(called, list) and user.opcode == "conditional" and j == 0:
            for k in range(n_out):
                try:
                    yield k, [_selector_i2o(user, k)]
                except Malformed as err:
                    why = f"{user.opcode} {user.name}: {err}"
                    self.notes.append(why)
                    yield k, [OperandIndexing.undefined(why)]
            return
        if isinstance(called, str):
            self.notes.append(called)
            for k in range(n_out):
                yield k, [OperandIndexing.undefined(called)]
            return
        for first, ci in called:
            for (o, p, pl), maps in ci.maps.items():
                if first + p == j and pl == leaf:
                    yield o, list(maps)

    def users(self) -> dict[str, list[tuple[HloInstruction, int]]]:
        """Who reads each value, `{name: [(user, operand position)]}`, computed once."""
        if self._users is None:
            self._users = {}
            for inst in self.comp.instructions:
                for j, name in enumerate(inst.operands):
                    self._users.setdefault(name, []).append((inst, j))
        return self._users

    def bucket(self, where: str) -> _Bucket:
        return _Bucket(where, self.merges)

    def walk_output_to_input(self, start: HloInstruction, start_leaf: int = 0,
                             members: Collection[str] | None = None,
                             order: Sequence[HloInstruction] | None = None,
                             ) -> dict[tuple[str, int], list[OperandIndexing]]:
        """Maps from leaf `start_leaf` of `start`'s output to every value it reads, directly or
        through other instructions: `{(instruction, leaf): maps}`, each relation once. The walk
        goes users-first (`order`, default: the reverse of the text order, which is topological)
        and stops at parameters and at instructions outside `members` (None: all). Each value
        is expanded once, with its deduplicated maps, so the work follows the number of
        distinct maps, not the number of paths."""
        pending: dict[tuple[str, int], _Bucket] = {}
        heap: list[tuple[int, int]] = []
        position = self._positions() if order is None else None

        def bucket_of(name: str, leaf: int) -> _Bucket:
            found = pending.get((name, leaf))
            if found is None:
                found = pending[(name, leaf)] = self.bucket(name)
                if position is not None:
                    heapq.heappush(heap, (-position[name], leaf))
            return found

        bucket_of(start.name, start_leaf).add(_start(start, start_leaf))
        reached: dict[tuple[str, int], list[OperandIndexing]] = {}
        for inst, leaf in self._users_first(heap, order):
            bucket = pending.pop((inst.name, leaf), None)
            if bucket is None:
                continue
            arrived = bucket.values()
            reached[(inst.name, leaf)] = arrived
            inside = members is None or inst.name in members or inst is start
            if inst.parameter_number is not None or not inside:
                continue
            for j, opleaf, op_maps in self.edges_o2i(inst, leaf):
                target = bucket_of(inst.operands[j], opleaf)
                for f in arrived:
                    for g in op_maps:
                        target.add(simplify_indexing(compose_indexing(f, g)))
        return reached

    _position: dict[str, int] | None = None

    def _positions(self) -> dict[str, int]:
        if self._position is None:
            self._position = {inst.name: k for k, inst in enumerate(self.comp.instructions)}
        return self._position

    def _users_first(self, heap: list[tuple[int, int]], order: Sequence[HloInstruction] | None
                     ) -> Iterator[tuple[HloInstruction, int]]:
        """The (instruction, leaf) pairs to expand, users before operands. In text order
        (topological) only the pending pairs are visited, taken from a heap of their positions
        that the walk fills: a walk from one leaf of a wide tuple costs what it reaches, not
        the size of the computation (n walks, one per leaf, would otherwise be O(n^2))."""
        if order is not None:
            for inst in order:
                for leaf in range(_leaves(inst.shape)):
                    yield inst, leaf
            return
        instructions = self.comp.instructions
        while heap:
            at, leaf = heapq.heappop(heap)
            yield instructions[-at], leaf

    def output_to_input(self, out_leaf: int) -> dict[tuple[int, int], list[OperandIndexing]]:
        found: dict[tuple[int, int], list[OperandIndexing]] = {}
        for (name, leaf), maps in self.walk_output_to_input(self.comp.root, out_leaf).items():
            inst = self.comp.instruction(name)
            if inst.parameter_number is not None:
                found[(inst.parameter_number, leaf)] = maps
        return found

    def input_to_output(self, param: HloInstruction, leaf: int
                        ) -> dict[int, list[OperandIndexing]]:
        users = self.users()
        pending: dict[tuple[str, int], _Bucket] = {}
        start = self.bucket(param.name)
        start.add(_start(param, leaf))
        pending[(param.name, leaf)] = start
        found: dict[int, list[OperandIndexing]] = {}
        root = self.comp.root
        for inst in self.comp.instructions:
            for lf in range(_leaves(inst.shape)):
                bucket = pending.pop((inst.name, lf), None)
                if bucket is None:
                    continue
                arrived = bucket.values()
                if inst is root:
                    found[lf] = arrived
                for user, j in users.get(inst.name, []):
                    for k, op_maps in self.edges_i2o(user, j, lf):
                        target = pending.get((user.name, k))
                        if target is None:
                            target = pending[(user.name, k)] = self.bucket(user.name)
                        for f in arrived:
                            for g in op_maps:
                                target.add(simplify_indexing(compose_indexing(f, g)))
        return found


# -- cache -------------------------------------------------------------------------------------

#: What a computation is to its caller, by the attribute that names it; other attributes
#: (`to_apply`, `called_computations`, ...) give the caller's opcode ("reduce", "sort", ...).
_ROLE_OF_ATTRIBUTE: Final = {"condition": "loop condition", "body": "loop body",
                             "true_computation": "branch", "false_computation": "branch",
                             "branch_computations": "branch"}


def _roles(module: HloModule) -> dict[str, str]:
    """Who calls whom, once per module: each called computation's role for its first caller in
    text order ("fusion", "call", "loop body", "loop condition", "branch", else the caller's
    opcode), the entry's is "entry"."""
    hit = module.memo.get(_roles)
    if hit is not None:
        return cast("dict[str, str]", hit)
    roles: dict[str, str] = {}
    for c in module.computations.values():
        for inst in c.instructions:
            for key in COMPUTATION_ATTRIBUTES:
                value = inst.attributes.get(key)
                names = (value,) if isinstance(value, str) else \
                    value if isinstance(value, tuple) else ()
                for name in cast("tuple[str, ...]", names):
                    roles.setdefault(name, _ROLE_OF_ATTRIBUTE.get(key, inst.opcode))
    roles[module.entry.name] = "entry"
    module.memo[_roles] = roles
    return roles


def _role(module: HloModule | None, comp: HloComputation) -> str:
    if module is None:
        return "computation"
    if module.entry is comp:
        return "entry"
    return _roles(module).get(comp.name, "computation")


def computation_indexing(module: HloModule | None, computation: HloComputation | str,
                         direction: str = "out2in") -> ComputationIndexing:
    """All maps of one computation in one direction ("out2in" or "in2out")."""
    if direction not in ("out2in", "in2out"):
        raise ValueError(f"direction must be out2in or in2out, not {direction!r}")
    if isinstance(computation, str):
        if module is None:
            raise ValueError("a computation name needs its module")
        computation = module.computation(computation)
    # kept with the module (or the computation alone), so it goes when they do; the ids are
    # those of objects the entry holds, so none is reused while it is there
    memo = module.memo if module is not None else computation.memo
    key = (computation_indexing, id(computation), direction, id(_simplifier), reads_exactly(),
           _prove_dedup)
    hit = cast("tuple[HloComputation, Simplifier, ComputationIndexing] | None", memo.get(key))
    if hit is not None:
        return hit[2]
    progress = (id(module), *key[1:])
    if progress in _IN_PROGRESS:
        raise Malformed(f"computation {computation.name} calls itself")
    _IN_PROGRESS.add(progress)
    try:
        result = _compute(module, computation, direction)
    finally:
        _IN_PROGRESS.discard(progress)
    memo[key] = (computation, _simplifier, result)
    return result


_IN_PROGRESS: set[tuple[object, ...]] = set()


def _keeps_sizes(loop: HloInstruction, module: HloModule) -> bool:
    """Every dynamic dimension of the loop's state has a symbolic size, and the condition's and
    the body's parameter and the body's root the same ones: the size is the same in every
    iteration (the StableHLO reader converts the body with the initial sizes and keeps them
    only where it returns them). Elsewhere (XLA's bounded dimensions, whose sizes the body may
    change) the maps across iterations are not built."""
    leaves = loop.shape.leaves()
    if not any(x.is_dynamic for x in leaves):
        return True
    names = (loop.attributes.get("body"), loop.attributes.get("condition"))
    if not all(isinstance(n, str) and n in module.computations for n in names):
        return False
    body, cond = (module.computation(str(n)) for n in names)
    if len(body.parameters) != 1 or len(cond.parameters) != 1:
        return False
    ends = (body.parameters[0], cond.parameters[0], body.root)
    for i, leaf in enumerate(leaves):
        sizes = leaf_sizes(loop, i)
        if leaf.is_dynamic and (sizes is None or any(
                s is None for s, dyn in zip(sizes, leaf.dynamic) if dyn)):
            return False
        if any(leaf_sizes(end, i) != sizes for end in ends):
            return False
    return True


def _compute(module: HloModule | None, computation: HloComputation, direction: str
             ) -> ComputationIndexing:
    walker = ComputationWalker(module, computation)
    outputs = computation.root.shape.leaves()
    maps: dict[tuple[int, int, int], tuple[OperandIndexing, ...]] = {}
    if direction == "out2in":
        for o in range(len(outputs)):
            for (p, leaf), ms in walker.output_to_input(o).items():
                maps[(o, p, leaf)] = tuple(ms)
    else:
        for param in computation.parameters:
            assert param.parameter_number is not None
            for leaf in range(_leaves(param.shape)):
                for o, ms in walker.input_to_output(param, leaf).items():
                    maps[(o, param.parameter_number, leaf)] = tuple(ms)
    role = _role(module, computation)
    if role == "loop body" and module is not None:
        loop = loop_of_body(module, computation)
        if loop is not None:
            analysis = analyse_loop(loop, module)
            maps = {key: tuple(simplify_indexing(per_iteration(m, analysis, module)) for m in ms)
                    for key, ms in maps.items()}
            walker.notes.append(f"body of {analysis.describe()}")
    notes = tuple(dict.fromkeys(walker.notes))
    return ComputationIndexing(computation, role, direction, outputs, maps, notes,
                               tuple(walker.merges))


# -- called computations as per-op maps (fusion, call, conditional) ---------------------------

_CALLERS = ("fusion", "call", "conditional")
"""Ops whose maps compose through the computations they run."""


def called_bodies(module: HloModule | None, inst: HloInstruction, shapes: Sequence[Shape]
                  ) -> list[tuple[int, HloComputation]]:
    """The computations `inst` runs, each with the operand position its parameter 0 receives:
    a fusion's or call's one computation takes every operand; branch k of a conditional takes
    operand k + 1 (operand 0 selects the branch). Raises Malformed where they do not fit."""
    names = inst.called_computations
    if module is None:
        raise Malformed(f"{inst.opcode} needs the module to find its computations")
    missing = [n for n in names if n not in module.computations]
    if missing:
        raise Malformed(f"computation {missing[0]} is not in the module")
    if inst.opcode != "conditional":
        if len(names) != 1:
            raise Malformed(f"{inst.opcode} calls {len(names)} computations")
        wanted = [(0, module.computation(names[0]), tuple(shapes))]
    else:
        selector = shapes[0] if shapes else None
        if selector is None or selector.is_tuple or selector.dims or \
                selector.element_type not in ("pred", "s32"):
            raise Malformed("a conditional's operand 0 must be a pred[] or s32[] scalar")
        if not names or len(shapes) != len(names) + 1 or (
                selector.element_type == "pred" and len(names) != 2):
            raise Malformed(f"{len(names)} branch computations for {len(shapes) - 1} branch "
                            f"operands and a {selector.element_type} selector")
        wanted = [(k + 1, module.computation(n), (shapes[k + 1],)) for k, n in enumerate(names)]
    for _first, body, operands in wanted:
        params = body.parameters
        if len(params) != len(operands):
            raise Malformed(f"{body.name} has {len(params)} parameters for {len(operands)} "
                            "operands")
        for param, shape in zip(params, operands):
            if not param.shape.compatible(shape):
                raise Malformed(f"parameter {param.name} of {body.name} does not match its "
                                "operand")
        if not body.root.shape.compatible(inst.shape):
            raise Malformed(f"the root of {body.name} does not match {inst.name}'s shape")
    return [(first, body) for first, body, _ in wanted]


def _selector_o2i(inst: HloInstruction, leaf: int) -> OperandIndexing:
    """Every element of every output of a conditional reads its branch selector (a scalar)."""
    return to_scalar(static_dims(inst.shape.leaves()[leaf]))


def _selector_i2o(inst: HloInstruction, leaf: int) -> OperandIndexing:
    """The branch selector reaches every element of every output."""
    return to_all((), static_dims(inst.shape.leaves()[leaf]))


def _per_leaf(ctx: OpContext, j: int) -> str | None:
    """Why a called computation's operand `j` has no per-op map: a tuple's maps go to its
    leaves, which one list per operand cannot tell apart (the computation walk routes them leaf
    by leaf)."""
    if ctx.operand_shapes[j].is_tuple:
        return (f"operand {j} of {ctx.instruction.name} is a tuple: its maps are per leaf, in "
                "the maps of the computation that holds it")
    return None


def called_output_to_input(ctx: OpContext, output_id: int) -> list[Maps]:
    groups: list[Maps] = [[] for _ in range(ctx.num_operands)]
    if ctx.opcode == "conditional":
        groups[0] = [_selector_o2i(ctx.instruction, output_id)]
    for first, body in called_bodies(ctx.module, ctx.instruction, ctx.operand_shapes):
        ci = computation_indexing(ctx.module, body, "out2in")
        for p in range(len(body.parameters)):
            why = _per_leaf(ctx, first + p)
            groups[first + p] = [OperandIndexing.undefined(why)] if why else \
                list(ci.maps_for(output_id, p))
    return groups


def called_input_to_output(ctx: OpContext, input_id: int) -> list[Maps]:
    n_out = len(ctx.out_leaves)
    bodies = called_bodies(ctx.module, ctx.instruction, ctx.operand_shapes)
    if ctx.opcode == "conditional" and input_id == 0:
        return [[_selector_i2o(ctx.instruction, o)] for o in range(n_out)]
    why = _per_leaf(ctx, input_id)
    if why:
        return [[OperandIndexing.undefined(why)] for _ in range(n_out)]
    for first, body in bodies:
        if first <= input_id < first + len(body.parameters):
            ci = computation_indexing(ctx.module, body, "in2out")
            return [list(ci.maps_for(o, input_id - first)) for o in range(n_out)]
    raise Malformed(f"operand {input_id} is passed to no computation")


# The `fusion`, `call` and `conditional` rows of the per-op table compose through their
# computations with these.
register_called_computations({op: (called_output_to_input, called_input_to_output)
                              for op in _CALLERS})


# -- module level ------------------------------------------------------------------------------


def reported_computations(module: HloModule) -> list[HloComputation]:
    """The entry, every fusion body, `call` target, `conditional` branch and `while` body and
    condition, in text order."""
    wanted = {module.entry.name}
    for comp in module.computations.values():
        for inst in comp.instructions:
            if inst.opcode in (*_CALLERS, "while"):
                wanted.update(inst.called_computations)
    return [c for c in module.computations.values() if c.name in wanted]


def _module_level(module: HloModule, computation: HloComputation | str | None, direction: str
                  ) -> dict[str, dict[int, dict[str, list[IndexingMap]]]]:
    if computation is None:
        comps = reported_computations(module)
    elif isinstance(computation, str):
        comps = [module.computation(computation)]
    else:
        comps = [computation]
    out: dict[str, dict[int, dict[str, list[IndexingMap]]]] = {}
    for comp in comps:
        ci = computation_indexing(module, comp, direction)
        per_output: dict[int, dict[str, list[IndexingMap]]] = {}
        for o in range(len(ci.outputs)):
            per_output[o] = {
                p.name: [m.map for m in ci.maps_for(o, p.parameter_number or 0)]
                for p in comp.parameters
            }
        out[comp.name] = per_output
    return out


def output_to_input(
    target: HloModule | HloInstruction | str,
    computation: HloComputation | HloModule | str | None = None,
    output_id: int = 0,
    *,
    module: HloModule | None = None,
    use_physical_layout: bool = False,
) -> dict[str, dict[int, dict[str, list[IndexingMap]]]] | HloInstructionIndexing:
    """`output_to_input(module, computation=None)`: for every reported computation (or the one
    named), `{computation: {output_index: {parameter_name: [maps]}}}`.

    `output_to_input(instruction, computation_or_module, output_id=0)`: the per-op maps of one
    instruction (`verifidx.hlo.indexing.output_to_input`)."""
    if isinstance(target, HloModule):
        if isinstance(computation, HloModule):
            raise TypeError("pass the computation (or its name) as the second argument")
        return _module_level(target, computation, "out2in")
    if isinstance(computation, str):
        raise TypeError("pass the computation or module holding the instruction")
    return instruction_output_to_input(target, computation, output_id, module=module,
                                       use_physical_layout=use_physical_layout)


def input_to_output(
    target: HloModule | HloInstruction | str,
    computation: HloComputation | HloModule | str | None = None,
    input_id: int = 0,
    *,
    module: HloModule | None = None,
    use_physical_layout: bool = False,
) -> dict[str, dict[int, dict[str, list[IndexingMap]]]] | HloInstructionIndexing:
    """`input_to_output(module, computation=None)`: `{computation: {output_index:
    {parameter_name: [maps from the parameter to that output]}}}`.

    `input_to_output(instruction, computation_or_module, input_id=0)`: per-op maps."""
    if isinstance(target, HloModule):
        if isinstance(computation, HloModule):
            raise TypeError("pass the computation (or its name) as the second argument")
        return _module_level(target, computation, "in2out")
    if isinstance(computation, str):
        raise TypeError("pass the computation or module holding the instruction")
    return instruction_input_to_output(target, computation, input_id, module=module,
                                       use_physical_layout=use_physical_layout)
