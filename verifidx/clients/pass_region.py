"""The part of a module one compiler pass changed, as a pair of small programs: validating a
pass then costs what the change costs, not what the module costs (issue 36's pass-by-pass
validation of a 12-layer transformer, where a pass rewrites a few instructions of thousands).

Two entry computations are matched from both ends:
- *shared* values: instructions equal as whole subgraphs (the same op, shape, layout and
  attributes, metadata aside, with shared operands, called computations compared by their
  text up to names; a fusion or call is the subgraph of its computation, inlined), found by
  hash-consing both modules' instructions into one table;
- the *remainder*: from the roots down, pairs of instructions equal as ops whose operands are
  pairwise shared, remainder or changed.

What is neither is the *region*: its outputs are the changed operands of the remainder, its
inputs the shared values it reads (constants and iotas are copied in instead). Each region
becomes a module whose parameters are the inputs (numbered alike on both sides) and whose
root is the tuple of the outputs. If the two regions read the same, the two programs do: the
remainder is the same ops on the same positions, so it composes equal relations into equal
relations, provided its own reads do not depend on values the region computes. That is
checked: no region output reaches, through the remainder, an operand whose values choose
what an op reads (starts, indices, a loop's state, a selector, sort keys, a custom call).
Anything else (a root changed, a region that reads the remainder, a tuple-shaped boundary)
gives None and the caller validates the whole modules.

The region comes in *parts*, its outputs grouped where they share no instruction of the
region, each part a pair of modules with a key: its content up to names. Along one pipeline
(`PassChain`: each snapshot the AFTER of one pass and the BEFORE of the next) the table of
subgraphs is kept, so each module is hash-consed once, and a part whose key was proven before
is not proven again: a model's layers change alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from verifidx.hlo.module import COMPUTATION_ATTRIBUTES, HloComputation, HloInstruction, HloModule
from verifidx.hlo.shape import Shape

_COPIED = frozenset({"constant", "iota"})
"""Shared values the region takes in as they are rather than as parameters (their values
matter to the maps: a constant start, an iota of indices)."""

_VALUE_POSITIONS: Mapping[str, frozenset[int] | None] = {
    "dynamic-slice": None, "dynamic-update-slice": None, "gather": frozenset({1}),
    "scatter": None, "select-and-scatter": None, "sort": None, "while": None,
    "conditional": None, "custom-call": None, "rng-bit-generator": None,
}
"""Opcode -> the operand positions whose values choose which elements the op reads (None:
every position but the data operands named in `_DATA_POSITIONS`, or all of them)."""

_DATA_POSITIONS: Mapping[str, frozenset[int]] = {
    "dynamic-slice": frozenset({0}), "dynamic-update-slice": frozenset({0, 1})}


class Region:
    """The changed part of BEFORE and of AFTER as two modules with one signature (built when
    first asked for: validation proves the parts), and the count of instructions it holds on
    each side; no modules when the results are the same subgraph on both sides (the pass
    changed nothing they depend on). `parts` is the same region split where its outputs share
    no instruction."""

    def __init__(self, build: list[tuple[HloModule, Side, list[str]]] | None,
                 inputs: Mapping[object, tuple[int, Shape]], size: tuple[int, int],
                 parts: tuple[RegionPart, ...] = ()) -> None:
        self._whole = None if build is None else RegionPart(None, build, inputs)
        self.size = size
        self.parts = parts

    @property
    def before(self) -> HloModule | None:
        return None if self._whole is None else self._whole.before

    @property
    def after(self) -> HloModule | None:
        return None if self._whole is None else self._whole.after


class _ModuleState:
    """What the table knows of one module: computation ids, inlined values, the signatures
    of its instructions that call computations (they mean what *its* computations do), and
    its entry's values and kept signatures."""

    def __init__(self, module: HloModule) -> None:
        self.module = module
        self.computations: dict[str, int] = {}
        self.inlined: dict[tuple[Any, ...], int | None] = {}
        self.signatures: dict[int, tuple[HloInstruction, int]] = {}
        self.values: dict[str, int] | None = None
        self.kept: dict[str, int] = {}


class _Table:
    """One id per distinct subgraph, across the modules of one pipeline (`PassChain`): the
    ids are content, so a module's ids hold against any other module's. What is kept per
    module is kept for the last `window` modules; per instruction, by identity, with the
    object held (an id is never reused while it is a key)."""

    def __init__(self, window: int = 2) -> None:
        self.ids: dict[object, int] = {}
        self.states: dict[int, _ModuleState] = {}
        self.window = window
        self.signatures: dict[tuple[object, ...], tuple[object, Shape, int]] = {}
        # computations that call none, by identity: `leaves` holds each computation, so its
        # id stands for it in the other two while it is there (all cleared together, `trim`)
        self.leaves: dict[int, tuple[HloComputation, bool]] = {}
        self.leaf_keys: dict[int, int] = {}
        self.leaf_inlined: dict[tuple[Any, ...], int | None] = {}

    def intern(self, key: object) -> int:
        found = self.ids.get(key)
        if found is None:
            found = self.ids[key] = len(self.ids)
        return found

    def state(self, module: HloModule) -> _ModuleState:
        found = self.states.get(id(module))
        if found is not None and found.module is module:
            return found
        found = self.states[id(module)] = _ModuleState(module)
        while len(self.states) > self.window:
            del self.states[next(iter(self.states))]
        return found

    def trim(self) -> None:
        """Between pairs, never during one (an entry written after a clear would outlive the
        object its id stands for): the caches of objects of modules long gone."""
        if len(self.signatures) + len(self.leaf_inlined) > 200_000:
            for cache in (self.signatures, self.leaves, self.leaf_keys, self.leaf_inlined):
                cache.clear()

    def _leaf(self, comp: HloComputation) -> bool:
        """`comp` calls no computation: what it computes is its own text's (the same object
        in another module, as the parser hands over a computation left as it was, means the
        same there)."""
        found = self.leaves.get(id(comp))
        if found is None or found[0] is not comp:
            found = self.leaves[id(comp)] = (comp, not any(
                inst.called_computations for inst in comp.instructions))
        return found[1]

    def computation_key(self, module: HloModule, name: str) -> int:
        comp = module.computation(name)
        if self._leaf(comp):
            hit = self.leaf_keys.get(id(comp))
            if hit is None:
                hit = self.leaf_keys[id(comp)] = self._body_key(module, comp)
            return hit
        keys = self.state(module).computations
        if name in keys:
            return keys[name]
        keys[name] = -1  # a computation that calls itself matches nothing
        keys[name] = self._body_key(module, comp)
        return keys[name]

    def _body_key(self, module: HloModule, comp: HloComputation) -> int:
        position = {inst.name: k for k, inst in enumerate(comp.instructions)}
        body = tuple((self.signature(module, inst),
                      tuple(position.get(n, -1) for n in inst.operands), inst.is_root)
                     for inst in comp.instructions)
        return self.intern(("computation", body))

    def signature(self, module: HloModule, inst: HloInstruction) -> int:
        # One instruction object may stand in several modules (lines reused by the parser);
        # one that calls computations means what those computations of *this* module do.
        if inst.called_computations:
            mine = self.state(module).signatures
            hit = mine.get(id(inst))
            if hit is None:
                hit = mine[id(inst)] = (inst, self._signature(module, inst))
            return hit[1]
        # The rest by what the signature reads, the attributes' text and the shape by identity:
        # the parser moves an unchanged line's instruction to its new line as a copy sharing
        # them, and gives the lines that end alike one attribute table.
        raw, shape = inst.raw_attributes, inst.shape
        key = (id(raw), id(shape), inst.opcode, inst.parameter_number, inst.literal,
               len(inst.operands))
        found = self.signatures.get(key)
        if found is not None and found[0] is raw and found[1] is shape:
            return found[2]
        sig = self._signature(module, inst)
        if inst.literal is None or "..." not in inst.literal:  # (an elided one never matches)
            self.signatures[key] = (raw, shape, sig)  # (holding what the ids stand for)
        return sig

    def _signature(self, module: HloModule, inst: HloInstruction) -> int:
        called = tuple(self.computation_key(module, n) if n in module.computations else n
                       for n in inst.called_computations)
        attrs = tuple(sorted((k, v) for k, v in inst.raw_attributes.items()
                             if k != "metadata" and k not in COMPUTATION_ATTRIBUTES))
        literal: object = inst.literal
        if literal is not None and "..." in str(literal):
            literal = object()  # an elided literal (`{...}`) equals nothing, itself included
        return self.intern((inst.opcode, inst.shape, attrs, called, inst.parameter_number,
                            literal, len(inst.operands)))

    def values(self, module: HloModule) -> dict[str, int]:
        """The subgraph id of every entry instruction."""
        state = self.state(module)
        if state.values is not None:
            return state.values
        comp = module.entry
        deep: dict[str, int] = {}
        intern = self.intern
        for inst in comp.instructions:
            args = [deep.get(n, -1) for n in inst.operands]
            deep[inst.name] = self.value(module, comp, inst, args) if inst.opcode in (
                "fusion", "call") else intern(("value", self.signature(module, inst),
                                              tuple(args)))
        state.values = deep
        return deep

    def kept(self, module: HloModule, name: str) -> int:
        """The signature of entry instruction `name` with its operands' shapes and layouts:
        a kept instruction reads operands of the same shapes on both sides."""
        kept = self.state(module).kept
        found = kept.get(name)
        if found is None:
            comp = module.entry
            inst = comp.instruction(name)
            found = kept[name] = self.intern(("kept", self.signature(module, inst), tuple(
                comp.instruction(n).shape for n in inst.operands)))
        return found

    def value(self, module: HloModule, comp: HloComputation, inst: HloInstruction,
              args: list[int]) -> int:
        """The subgraph id of `inst` with operands `args`: a fusion or call is the value of
        its computation's root at those operands (inlined: a fusion pass, call inlining or
        call-graph flattening leaves the value as it was)."""
        if inst.opcode in ("fusion", "call") and len(inst.called_computations) == 1 and \
                inst.called_computations[0] in module.computations:
            shapes = tuple(comp.instruction(n).shape for n in inst.operands)
            found = self.inline(module, inst.called_computations[0], tuple(args), shapes,
                                inst.shape)
            if found is not None:
                return found
        return self.intern(("value", self.signature(module, inst), tuple(args)))

    def inline(self, module: HloModule, name: str, args: tuple[int, ...],
               shapes: tuple[Shape, ...], shape: Shape) -> int | None:
        """The value of computation `name` at `args` (None where its parameters or root do
        not have the call's shapes and layouts, or it calls itself)."""
        body = module.computation(name)
        if self._leaf(body):  # (by the computation's identity, `leaves` holding it)
            inlined: dict[Any, int | None] = self.leaf_inlined
            key: tuple[Any, ...] = (id(body), args, shapes, shape)
            if key in inlined:
                return inlined[key]
        else:
            inlined = self.state(module).inlined
            key = (name, args, shapes, shape)
            if key in inlined:
                return inlined[key]
        inlined[key] = None
        params = body.parameters
        if body.root.shape != shape or len(params) != len(args) or any(
                q.parameter_number != k or q.shape != shapes[k] for k, q in enumerate(params)):
            return None
        ids: dict[str, int] = {}
        for x in body.instructions:
            if x.opcode == "parameter" and x.parameter_number is not None:
                ids[x.name] = args[x.parameter_number]
            else:
                ids[x.name] = self.value(module, body, x, [ids.get(n, -1) for n in x.operands])
        inlined[key] = ids[body.root.name]
        return inlined[key]


class _NotApplicable(Exception):
    """Why the method does not apply to this pair."""


class PassChain:
    """What the pairs of one pipeline share, each snapshot the AFTER of one pass and the
    BEFORE of the next: the table of subgraphs (each module hash-consed once) and the verdict
    of each region part by its content (`RegionPart.key`): the layers of a model change
    alike, and a part proven once is the same part again."""

    def __init__(self) -> None:
        self.table = _Table()
        self.verdicts: dict[object, tuple[bool, int]] = {}


def changed_region(before: HloModule, after: HloModule, chain: PassChain | None = None
                   ) -> Region | str:
    """The region (module docstring), or why the method does not apply."""
    try:
        return _region(before, after, (chain or PassChain()).table)
    except _NotApplicable as why:
        return str(why)


def _region(before: HloModule, after: HloModule, table: _Table) -> Region:
    table.trim()
    ca, cb = before.entry, after.entry
    deep_a, deep_b = table.values(before), table.values(after)
    if deep_a[ca.root.name] == deep_b[cb.root.name]:
        return Region(None, {}, (0, 0))
    if table.kept(before, ca.root.name) != table.kept(after, cb.root.name):
        raise _NotApplicable("the pass changed the root")
    shared = set(deep_a.values()) & set(deep_b.values())
    pairs: dict[str, str] = {}  # the kept instructions, A -> B
    paired_b: dict[str, str] = {}
    outputs: dict[tuple[str, str], None] = {}  # the changed operands of kept ones, in order
    work = [(ca.root.name, cb.root.name)]
    # interior seeds: an instruction the pass left under its name, the same op on both sides
    # (whatever pairs them, the pairing is checked as the root's is)
    for inst in reversed(ca.instructions):
        y = inst.name
        if y in deep_b and deep_a[y] != deep_b[y] and inst.opcode not in _COPIED and \
                table.kept(before, y) == table.kept(after, y):
            work.append((y, y))
    work.reverse()
    while work:
        x, y = work.pop()
        if pairs.get(x) == y:
            continue
        if x in pairs or y in paired_b:
            outputs[(x, y)] = None  # kept twice over: read as it is, an input of the region
            continue
        pairs[x], paired_b[y] = y, x
        for u, v in zip(ca.instruction(x).operands, cb.instruction(y).operands):
            if deep_a[u] == deep_b[v]:
                continue  # one value on both sides
            if table.kept(before, u) == table.kept(after, v):
                work.append((u, v))
            else:
                outputs[(u, v)] = None
    for u, v in outputs:
        shape = ca.instruction(u).shape
        if shape != cb.instruction(v).shape or shape.is_tuple:
            # (a layout too: the rest may read it through a bitcast)
            raise _NotApplicable(f"a changed value {u} has another shape or layout, or is "
                                 "a tuple")
    # values that may differ: all not shared, and the changed operands even where shared
    # (`i` where the other program reads `i + 1`)
    for module, deep, ends in ((before, deep_a, {u for u, _ in outputs}),
                               (after, deep_b, {v for _, v in outputs})):
        hit = _value_dependent_read(module, {n for n, d in deep.items() if d not in shared}
                                    | ends)
        if hit:
            raise _NotApplicable(f"a changed value chooses what {hit} reads")
    inputs: dict[object, tuple[int, Shape]] = {}
    side_a = _side(ca, [u for u, _ in outputs], deep_a, shared, pairs, inputs)
    side_b = _side(cb, [v for _, v in outputs], deep_b, shared, paired_b, inputs, paired_b)
    if any(shape.is_tuple for _number, shape in inputs.values()):
        # (each side's input instructions are keyed in `inputs` with their shapes)
        raise _NotApplicable("an input of the changed part is a tuple")
    listed = list(outputs)
    cones = (_cones(side_a, [u for u, _ in listed]), _cones(side_b, [v for _, v in listed]))
    orders = tuple({inst.name: k for k, (_key, inst) in enumerate(side)}
                   for side in (side_a, side_b))
    parts = tuple(_part(table, (before, after), (side_a, side_b), orders, cones, listed, group)
                  for group in _components((side_a, side_b), cones))
    whole = [(before, side_a, [u for u, _ in outputs]), (after, side_b, [v for _, v in outputs])]
    return Region(whole, inputs, (sum(k is None for k, _ in side_a),
                                  sum(k is None for k, _ in side_b)), parts)


Side = list[tuple[object, HloInstruction]]
"""A region's instructions on one side, in definition order, each with its input key (None
inside the region)."""


def _cones(side: Side, outputs: Sequence[str]) -> list[set[str]]:
    """Per output, the region's instructions it is computed from (inputs not included)."""
    inside = {inst.name: inst for key, inst in side if key is None}
    cones = []
    for name in outputs:
        cone: set[str] = set()
        work = [name]
        while work:
            n = work.pop()
            if n in inside and n not in cone:
                cone.add(n)
                work.extend(inside[n].operands)
        cones.append(cone)
    return cones


def _components(sides: tuple[Side, Side], cones: tuple[list[set[str]], list[set[str]]]
                ) -> list[list[int]]:
    """The outputs in groups that share no instruction of the region on either side (only
    inputs, and what is computed from constants and iotas alone, which each group computes for
    itself): each group's reads follow from its own instructions alone."""
    parent = list(range(len(cones[0])))

    def find(k: int) -> int:
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    for side, per_output in zip(sides, cones):
        owner: dict[str, int] = {}
        leaves: set[str] = set()  # computed from no value: each group may compute its own
        for key, inst in side:
            if key is None and all(n in leaves for n in inst.operands):
                leaves.add(inst.name)
        for k, cone in enumerate(per_output):
            for n in cone - leaves:
                other = owner.setdefault(n, k)
                if other != k:
                    parent[find(other)] = find(k)
    groups: dict[int, list[int]] = {}
    for k in range(len(parent)):
        groups.setdefault(find(k), []).append(k)
    return list(groups.values())


class RegionPart:
    """One group of the region's outputs as two modules (inputs numbered in order of first
    use; built when first asked for), and its content (`key`): both sides' ops, shapes,
    layouts, attributes and literals with operands as positions and inputs as numbers (names
    and metadata aside). Two parts with one key are one pair of programs up to names, and
    read alike or not alike together."""

    def __init__(self, key: object, build: list[tuple[HloModule, Side, list[str]]],
                 inputs: Mapping[object, tuple[int, Shape]]) -> None:
        self.key = key
        self._build = build
        self._inputs = inputs
        self._modules: tuple[HloModule, HloModule] | None = None

    @property
    def modules(self) -> tuple[HloModule, HloModule]:
        if self._modules is None:
            built = [_module(m, sub, names, self._inputs) for m, sub, names in self._build]
            assert built[0] is not None and built[1] is not None  # (no tuple-shaped input:
            self._modules = built[0], built[1]                  # the region refused those)
        return self._modules

    @property
    def before(self) -> HloModule:
        return self.modules[0]

    @property
    def after(self) -> HloModule:
        return self.modules[1]


def _part(table: _Table, modules: tuple[HloModule, HloModule], sides: tuple[Side, Side],
          orders: tuple[dict[str, int], ...], cones: tuple[list[set[str]], list[set[str]]],
          outputs: Sequence[tuple[str, str]], group: Sequence[int]) -> RegionPart:
    build: list[tuple[HloModule, Side, list[str]]] = []
    for module, side, order, per_output, end in zip(modules, sides, orders, cones, (0, 1)):
        names = [outputs[k][end] for k in group]
        cone = set().union(*(per_output[k] for k in group))
        reads = set(cone)
        for n in cone:
            reads.update(side[order[n]][1].operands)
        reads.update(names)  # (an output that is an input as it is)
        build.append((module, [side[k] for k in sorted(order[n] for n in reads)], names))
    inputs: dict[object, tuple[int, Shape]] = {}
    for _m, sub, _names in build:
        for key, inst in sub:
            if key is not None:
                inputs.setdefault(key, (len(inputs), inst.shape))
    content = []
    for module, sub, names in build:
        position = {inst.name: k for k, (_key, inst) in enumerate(sub)}
        content.append((tuple(("input", inputs[key][0], inst.shape) if key is not None else
                              (table.signature(module, inst),
                               tuple(position[n] for n in inst.operands))
                              for key, inst in sub),
                        tuple(position[n] for n in names)))
    return RegionPart((tuple(content), len(inputs)), build, inputs)


def _side(comp: HloComputation, outputs: Sequence[str], deep: Mapping[str, int],
          shared: set[int], kept: Mapping[str, str], inputs: dict[object, tuple[int, Shape]],
          partner: Mapping[str, str] | None = None
          ) -> list[tuple[object, HloInstruction]]:
    """The region's instructions on one side in definition order, each with its input key
    (None inside the region): a shared value by its subgraph, a kept one by its name in A
    (`partner` maps B's names there); `inputs` numbers the keys for both sides."""
    keys: dict[str, object] = {}
    work = list(outputs)
    while work:
        name = work.pop()
        if name in keys:
            continue
        inst = comp.instruction(name)
        key: object = None
        if deep[name] in shared and inst.opcode not in _COPIED:
            key = ("shared", deep[name])
        elif name in kept:
            key = ("kept", partner[name] if partner is not None else name)
        keys[name] = key
        if key is not None:
            inputs.setdefault(key, (len(inputs), inst.shape))
        else:
            work.extend(inst.operands)
    return [(keys[inst.name], inst) for inst in comp.instructions if inst.name in keys]


def _module(module: HloModule, region: Sequence[tuple[object, HloInstruction]],
            outputs: Sequence[str], inputs: Mapping[object, tuple[int, Shape]]
            ) -> HloModule | None:
    body: list[HloInstruction] = []
    for key, inst in region:
        if key is not None:
            if inst.shape.is_tuple:
                return None
            body.append(HloInstruction(inst.name, "parameter", inst.shape,
                                       parameter_number=inputs[key][0]))
        else:
            body.append(HloInstruction(inst.name, inst.opcode, inst.shape, inst.operands,
                                       inst.attributes, inst.raw_attributes,
                                       parameter_number=inst.parameter_number,
                                       literal=inst.literal,
                                       literal_value=inst.literal_value,
                                       line=inst.line, column=inst.column))
    have = {inst.parameter_number for inst in body if inst.opcode == "parameter"}
    for number, shape in inputs.values():  # an input only the other side reads
        if number not in have:
            if shape.is_tuple:
                return None
            body.append(HloInstruction(f"region.input.{number}", "parameter", shape,
                                       parameter_number=number))
    shapes = [module.entry.instruction(n).shape for n in outputs]
    root = HloInstruction("region.root", "tuple", Shape.tuple_of(*shapes), tuple(outputs),
                          is_root=True)
    name = "region"
    while name in module.computations:  # (a computation of the module may be so named)
        name += "_"
    entry = HloComputation(name, (*body, root), is_entry=True)
    computations: dict[str, HloComputation] = {}  # those the region calls, and theirs
    work = [n for inst in body for n in inst.called_computations]
    while work:
        called = work.pop()
        if called not in computations and called in module.computations:
            computations[called] = module.computations[called]
            work.extend(n for inst in computations[called].instructions
                        for n in inst.called_computations)
    computations[entry.name] = entry
    return HloModule(module.name, computations, {}, {}, module.source)


def _value_dependent_read(module: HloModule, changed: set[str]) -> str | None:
    """An instruction that reads a value which may differ between the programs (`changed`:
    every value that is not shared) where its values choose what an op reads (fusions and
    calls followed into their bodies); None if there is none."""
    for inst in module.entry.instructions:
        hit = [k for k, n in enumerate(inst.operands) if n in changed]
        if hit and _chooses(module, inst, hit):
            return inst.name
    return None


def _chooses(module: HloModule, inst: HloInstruction, positions: Sequence[int]) -> bool:
    if inst.opcode in ("fusion", "call") and inst.called_computations:
        body = module.computation(inst.called_computations[0])
        tainted = {q.name for q in body.parameters if q.parameter_number in positions}
        for x in body.instructions:
            hit = [k for k, n in enumerate(x.operands) if n in tainted]
            if hit:
                if _chooses(module, x, hit):
                    return True
                tainted.add(x.name)
        return False
    if inst.opcode not in _VALUE_POSITIONS:
        return False
    chosen = _VALUE_POSITIONS[inst.opcode]
    data = _DATA_POSITIONS.get(inst.opcode, frozenset())
    return any(k not in data if chosen is None else k in chosen for k in positions)


__all__ = ["PassChain", "Region", "RegionPart", "changed_region"]
