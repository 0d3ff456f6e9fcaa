"""The data model of a parsed HLO module: modules, computations, instructions, attribute values.

Everything here is immutable plain data. The parser guarantees the invariants the indexing code
relies on: names are unique within a computation, every operand names an instruction defined
earlier in the same computation (so `instructions` is in topological order), every computation
has exactly one root, parameter numbers are 0..n-1, and every called computation exists.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import cast

from verifidx.hlo.attribute_values import (
    AttributeValue,
    ConvolutionDimLabels,
    DotDimensionNumbers,
    GatherDimensionNumbers,
    IotaReplicaGroups,
    PadDim,
    ScatterDimensionNumbers,
    SliceDim,
    WindowDim,
)
from verifidx.hlo.shape import Shape

COMPUTATION_ATTRIBUTES = (
    "calls",
    "to_apply",
    "condition",
    "body",
    "true_computation",
    "false_computation",
    "branch_computations",
    "called_computations",
    "select",
    "scatter",
)
"""Attributes whose values name computations of the module."""


_CALLING = frozenset(COMPUTATION_ATTRIBUTES)


@dataclass(frozen=True, init=False)
class HloInstruction:
    """One instruction: `[ROOT] name = shape opcode(operands), attribute=value, ...`.

    `operands` are instruction names in the same computation. `attributes` holds parsed values
    where the indexing analysis needs them and raw text otherwise; `raw_attributes` holds the
    text of every attribute as written. `parameter_number` is set for `parameter(N)`; `literal`
    is the raw payload of a `constant(...)` and `literal_value` its value when it is a scalar
    number or boolean. Unknown opcodes are kept as written.
    """

    name: str
    opcode: str
    shape: Shape
    operands: tuple[str, ...] = ()
    attributes: Mapping[str, AttributeValue] = field(default_factory=dict, hash=False)
    raw_attributes: Mapping[str, str] = field(default_factory=dict, hash=False)
    is_root: bool = False
    line: int = 0
    column: int = 0
    parameter_number: int | None = None
    literal: str | None = None
    literal_value: int | float | bool | None = None
    _called: tuple[str, ...] | None = field(default=None, init=False, repr=False,
                                            compare=False, hash=False)

    def __init__(self, name: str, opcode: str, shape: Shape, operands: tuple[str, ...] = (),
                 attributes: Mapping[str, AttributeValue] | None = None,
                 raw_attributes: Mapping[str, str] | None = None, is_root: bool = False,
                 line: int = 0, column: int = 0, parameter_number: int | None = None,
                 literal: str | None = None,
                 literal_value: int | float | bool | None = None) -> None:
        # written out with the names as literals (the dataclass's would be interpreted code):
        # compiled by mypyc, each is a write of the native slot
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "opcode", opcode)
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "operands", operands)
        object.__setattr__(self, "attributes", {} if attributes is None else attributes)
        object.__setattr__(self, "raw_attributes",
                           {} if raw_attributes is None else raw_attributes)
        object.__setattr__(self, "is_root", is_root)
        object.__setattr__(self, "line", line)
        object.__setattr__(self, "column", column)
        object.__setattr__(self, "parameter_number", parameter_number)
        object.__setattr__(self, "literal", literal)
        object.__setattr__(self, "literal_value", literal_value)
        object.__setattr__(self, "_called", None)

    def __reduce__(self) -> tuple[object, ...]:
        # pickled through the constructor: compiled, a frozen dataclass's default unpickling
        # would assign its fields, which it forbids
        return (HloInstruction, (self.name, self.opcode, self.shape, self.operands,
                                 dict(self.attributes), dict(self.raw_attributes), self.is_root,
                                 self.line, self.column, self.parameter_number, self.literal,
                                 self.literal_value))

    def at(self, line: int, column: int) -> HloInstruction:
        """The same instruction written at `line`, `column` (a line a later snapshot moved):
        every other field is the same object."""
        moved = HloInstruction(self.name, self.opcode, self.shape, self.operands,
                               self.attributes, self.raw_attributes, self.is_root, line, column,
                               self.parameter_number, self.literal, self.literal_value)
        object.__setattr__(moved, "_called", self._called)
        return moved

    def _ints(self, name: str) -> tuple[int, ...] | None:
        return cast("tuple[int, ...] | None", self.attributes.get(name))

    def _int(self, name: str) -> int | None:
        return cast("int | None", self.attributes.get(name))

    def _str(self, name: str) -> str | None:
        return cast("str | None", self.attributes.get(name))

    @property
    def dimensions(self) -> tuple[int, ...] | None:
        """`dimensions={...}` (broadcast, transpose, reduce, reverse, concatenate, all-gather)."""
        return self._ints("dimensions")

    @property
    def called_computations(self) -> tuple[str, ...]:
        """Names of the computations this instruction calls, in attribute order (found once:
        every walk over a module asks)."""
        if self._called is not None:
            return self._called
        if _CALLING.isdisjoint(self.attributes):  # (most instructions: a glance at the keys)
            object.__setattr__(self, "_called", ())
            return ()
        names: list[str] = []
        for key in COMPUTATION_ATTRIBUTES:
            value = self.attributes.get(key)
            if isinstance(value, str):
                names.append(value)
            elif isinstance(value, tuple):
                names.extend(cast("tuple[str, ...]", value))
        object.__setattr__(self, "_called", tuple(names))
        return tuple(names)

    @property
    def tuple_index(self) -> int | None:
        """`index=N` of a get-tuple-element."""
        return self._int("index")

    @property
    def slice_dims(self) -> tuple[SliceDim, ...] | None:
        return cast("tuple[SliceDim, ...] | None", self.attributes.get("slice"))

    @property
    def padding(self) -> tuple[PadDim, ...] | None:
        return cast("tuple[PadDim, ...] | None", self.attributes.get("padding"))

    @property
    def window(self) -> tuple[WindowDim, ...] | None:
        return cast("tuple[WindowDim, ...] | None", self.attributes.get("window"))

    @property
    def dim_labels(self) -> ConvolutionDimLabels | None:
        return cast("ConvolutionDimLabels | None", self.attributes.get("dim_labels"))

    @property
    def feature_group_count(self) -> int:
        return self._int("feature_group_count") or 1

    @property
    def batch_group_count(self) -> int:
        return self._int("batch_group_count") or 1

    @property
    def iota_dimension(self) -> int | None:
        return self._int("iota_dimension")

    @property
    def dynamic_slice_sizes(self) -> tuple[int, ...] | None:
        return self._ints("dynamic_slice_sizes")

    @property
    def slice_sizes(self) -> tuple[int, ...] | None:
        """`slice_sizes={...}` of a gather."""
        return self._ints("slice_sizes")

    @property
    def fusion_kind(self) -> str | None:
        """`kind=kLoop` etc. of a fusion."""
        return self._str("kind")

    @property
    def custom_call_target(self) -> str | None:
        return self._str("custom_call_target")

    @property
    def comparison_direction(self) -> str | None:
        """`direction=GE` of a compare (`comparison_direction` is accepted too)."""
        return self._str("direction") or self._str("comparison_direction")

    @property
    def replica_groups(self) -> tuple[tuple[int, ...], ...] | None:
        """Explicit replica groups, expanding the iota form."""
        value = self.attributes.get("replica_groups")
        if isinstance(value, IotaReplicaGroups):
            return value.groups()
        return cast("tuple[tuple[int, ...], ...] | None", value)

    @property
    def dot_dimension_numbers(self) -> DotDimensionNumbers:
        return DotDimensionNumbers(
            lhs_batch=self._ints("lhs_batch_dims") or (),
            rhs_batch=self._ints("rhs_batch_dims") or (),
            lhs_contracting=self._ints("lhs_contracting_dims") or (),
            rhs_contracting=self._ints("rhs_contracting_dims") or (),
        )

    @property
    def gather_dimension_numbers(self) -> GatherDimensionNumbers:
        return GatherDimensionNumbers(
            offset_dims=self._ints("offset_dims") or (),
            collapsed_slice_dims=self._ints("collapsed_slice_dims") or (),
            start_index_map=self._ints("start_index_map") or (),
            index_vector_dim=self._int("index_vector_dim"),
            operand_batching_dims=self._ints("operand_batching_dims") or (),
            start_indices_batching_dims=self._ints("start_indices_batching_dims") or (),
        )

    @property
    def scatter_dimension_numbers(self) -> ScatterDimensionNumbers:
        return ScatterDimensionNumbers(
            update_window_dims=self._ints("update_window_dims") or (),
            inserted_window_dims=self._ints("inserted_window_dims") or (),
            scatter_dims_to_operand_dims=self._ints("scatter_dims_to_operand_dims") or (),
            index_vector_dim=self._int("index_vector_dim"),
            input_batching_dims=self._ints("input_batching_dims") or (),
            scatter_indices_batching_dims=self._ints("scatter_indices_batching_dims") or (),
        )


@dataclass(frozen=True, init=False)
class HloComputation:
    """A named list of instructions in definition (hence topological) order.

    `signature` holds the parameter names and shapes of the older header form
    `%name (p0: f32[2]) -> f32[2]` and `result_shape` its result; both are empty when the
    header has no signature. `attributes` holds header attributes such as `execution_thread`
    as raw text.
    """

    name: str
    instructions: tuple[HloInstruction, ...]
    is_entry: bool = False
    signature: tuple[tuple[str, Shape], ...] = ()
    result_shape: Shape | None = None
    attributes: Mapping[str, str] = field(default_factory=dict, hash=False)
    line: int = 0
    _by_name: Mapping[str, HloInstruction] = field(
        init=False, repr=False, compare=False, hash=False
    )
    _root: HloInstruction = field(init=False, repr=False, compare=False, hash=False)
    _parameters: tuple[HloInstruction, ...] = field(init=False, repr=False, compare=False,
                                                    hash=False)
    #: what analyses found of this computation, kept with it (`memo`)
    _memo: dict[object, object] = field(init=False, repr=False, compare=False, hash=False)

    def __init__(self, name: str, instructions: tuple[HloInstruction, ...],
                 is_entry: bool = False, signature: tuple[tuple[str, Shape], ...] = (),
                 result_shape: Shape | None = None, attributes: Mapping[str, str] | None = None,
                 line: int = 0) -> None:
        object.__setattr__(self, "name", name)  # (written out: see HloInstruction)
        object.__setattr__(self, "instructions", instructions)
        object.__setattr__(self, "is_entry", is_entry)
        object.__setattr__(self, "signature", signature)
        object.__setattr__(self, "result_shape", result_shape)
        object.__setattr__(self, "attributes", {} if attributes is None else attributes)
        object.__setattr__(self, "line", line)
        object.__setattr__(self, "_by_name", {i.name: i for i in instructions})
        params = [i for i in instructions if i.parameter_number is not None]
        object.__setattr__(self, "_parameters", tuple(sorted(
            params, key=lambda i: cast(int, i.parameter_number))))
        roots = [i for i in instructions if i.is_root]
        if len(roots) != 1:
            raise ValueError(f"computation {name!r} needs exactly one root instruction")
        object.__setattr__(self, "_root", roots[0])
        object.__setattr__(self, "_memo", {})

    def __reduce__(self) -> tuple[object, ...]:
        return (HloComputation, (self.name, self.instructions, self.is_entry, self.signature,
                                 self.result_shape, dict(self.attributes), self.line))

    @property
    def memo(self) -> dict[object, object]:
        """Facts the analyses derive from this computation (see `HloModule.memo`)."""
        return self._memo

    @property
    def root(self) -> HloInstruction:
        return self._root

    @property
    def parameters(self) -> tuple[HloInstruction, ...]:
        """The parameter instructions, sorted by parameter number."""
        return self._parameters

    def instruction(self, name: str) -> HloInstruction:
        """The instruction called `name` (a leading `%` is ignored); KeyError if none."""
        found = self._by_name.get(name.removeprefix("%"))
        if found is None:
            raise KeyError(f"no instruction {name!r} in computation {self.name!r}")
        return found

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.removeprefix("%") in self._by_name

    def __iter__(self) -> Iterator[HloInstruction]:
        return iter(self.instructions)

    def __len__(self) -> int:
        return len(self.instructions)


@dataclass(frozen=True, init=False)
class HloModule:
    """A parsed module: its computations in text order and the raw header attributes.

    `entry` is the computation marked `ENTRY`, or the last one when none is marked (XLA's
    convention). `sections` keeps trailing debug tables (`FileNames`, `StackFrames`, ...) as
    raw text. `name` is empty when the text has no `HloModule` header.
    """

    name: str
    computations: Mapping[str, HloComputation] = field(hash=False)
    attributes: Mapping[str, str] = field(default_factory=dict, hash=False)
    sections: Mapping[str, str] = field(default_factory=dict, hash=False)
    source: str = field(default="<string>", compare=False)

    _entry: HloComputation = field(init=False, repr=False, compare=False, hash=False)
    #: what analyses found of this module, kept with it (`memo`)
    _memo: dict[object, object] = field(init=False, repr=False, compare=False, hash=False)

    def __init__(self, name: str, computations: Mapping[str, HloComputation],
                 attributes: Mapping[str, str] | None = None,
                 sections: Mapping[str, str] | None = None, source: str = "<string>") -> None:
        if not computations:
            raise ValueError("a module needs at least one computation")
        object.__setattr__(self, "name", name)  # (written out: see HloInstruction)
        object.__setattr__(self, "computations", computations)
        object.__setattr__(self, "attributes", {} if attributes is None else attributes)
        object.__setattr__(self, "sections", {} if sections is None else sections)
        object.__setattr__(self, "source", source)
        marked = [c for c in computations.values() if c.is_entry]
        object.__setattr__(self, "_entry",
                           marked[0] if marked else list(computations.values())[-1])
        object.__setattr__(self, "_memo", {})

    def __reduce__(self) -> tuple[object, ...]:
        return (HloModule, (self.name, dict(self.computations), dict(self.attributes),
                            dict(self.sections), self.source))

    @property
    def memo(self) -> dict[object, object]:
        """Facts the analyses derive from this module, by their own keys: the module is
        immutable, so they hold as long as it lives, and go with it (compiled, the module
        cannot be weakly referenced)."""
        return self._memo

    @property
    def entry(self) -> HloComputation:
        """Found once, when the module is made (every pass over the module asks for it)."""
        return self._entry

    def computation(self, name: str) -> HloComputation:
        """The computation called `name` (a leading `%` is ignored); KeyError if none."""
        found = self.computations.get(name.removeprefix("%"))
        if found is None:
            raise KeyError(f"no computation {name!r} in module {self.name!r}")
        return found
