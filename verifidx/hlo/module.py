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

from verifidx.hlo.shape import Shape


@dataclass(frozen=True)
class SliceDim:
    """One dimension of `slice={[start:limit:stride], ...}`; `limit` is exclusive."""

    start: int
    limit: int
    stride: int = 1


@dataclass(frozen=True)
class PadDim:
    """One dimension of `padding=low_high_interior x ...`; low and high may be negative."""

    low: int
    high: int
    interior: int = 0


@dataclass(frozen=True)
class WindowDim:
    """One dimension of `window={size=.. stride=.. pad=.. lhs_dilate=.. rhs_dilate=..}`."""

    size: int
    stride: int = 1
    pad_low: int = 0
    pad_high: int = 0
    lhs_dilation: int = 1
    rhs_dilation: int = 1
    reversal: bool = False


@dataclass(frozen=True)
class ConvolutionDimLabels:
    """`dim_labels=b01f_01io->b01f`: where batch, feature and spatial dimensions sit.

    Each field is a position in the operand (lhs/rhs) or output shape; `*_spatial[k]` is the
    position of spatial dimension `k`.
    """

    text: str
    input_batch: int
    input_feature: int
    input_spatial: tuple[int, ...]
    kernel_input_feature: int
    kernel_output_feature: int
    kernel_spatial: tuple[int, ...]
    output_batch: int
    output_feature: int
    output_spatial: tuple[int, ...]

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class IotaReplicaGroups:
    """The compact replica group form `[groups,size]<=[reshape_dims]T(perm)`.

    It stands for iota(prod(reshape_dims)) reshaped to `reshape_dims`, transposed by `transpose`
    and cut into `group_dims[0]` groups of `group_dims[1]` devices.
    """

    group_dims: tuple[int, int]
    reshape_dims: tuple[int, ...]
    transpose: tuple[int, ...]

    def groups(self) -> tuple[tuple[int, ...], ...]:
        """The explicit groups, as `replica_groups={{...}, ...}` would list them."""
        shape = [self.reshape_dims[p] for p in self.transpose]
        strides = [1] * len(self.reshape_dims)
        for axis in range(len(self.reshape_dims) - 2, -1, -1):
            strides[axis] = strides[axis + 1] * self.reshape_dims[axis + 1]
        moved_strides = [strides[p] for p in self.transpose]
        devices: list[int] = []
        index = [0] * len(shape)
        total = self.group_dims[0] * self.group_dims[1]
        while len(devices) < total:
            devices.append(sum(i * s for i, s in zip(index, moved_strides, strict=True)))
            for axis in range(len(shape) - 1, -1, -1):
                index[axis] += 1
                if index[axis] < shape[axis]:
                    break
                index[axis] = 0
        size = self.group_dims[1]
        return tuple(tuple(devices[g * size : (g + 1) * size]) for g in range(self.group_dims[0]))

    def __str__(self) -> str:
        text = f"[{self.group_dims[0]},{self.group_dims[1]}]<=[{_ints(self.reshape_dims)}]"
        if self.transpose != tuple(range(len(self.transpose))):
            text += f"T({_ints(self.transpose)})"
        return text


def _ints(values: tuple[int, ...]) -> str:
    return ",".join(map(str, values))


@dataclass(frozen=True)
class DotDimensionNumbers:
    """Batch and contracting dimensions of both dot operands (empty when not given)."""

    lhs_batch: tuple[int, ...] = ()
    rhs_batch: tuple[int, ...] = ()
    lhs_contracting: tuple[int, ...] = ()
    rhs_contracting: tuple[int, ...] = ()


@dataclass(frozen=True)
class GatherDimensionNumbers:
    """The dimension attributes of a gather (empty when not given)."""

    offset_dims: tuple[int, ...] = ()
    collapsed_slice_dims: tuple[int, ...] = ()
    start_index_map: tuple[int, ...] = ()
    index_vector_dim: int | None = None
    operand_batching_dims: tuple[int, ...] = ()
    start_indices_batching_dims: tuple[int, ...] = ()


@dataclass(frozen=True)
class ScatterDimensionNumbers:
    """The dimension attributes of a scatter (empty when not given)."""

    update_window_dims: tuple[int, ...] = ()
    inserted_window_dims: tuple[int, ...] = ()
    scatter_dims_to_operand_dims: tuple[int, ...] = ()
    index_vector_dim: int | None = None
    input_batching_dims: tuple[int, ...] = ()
    scatter_indices_batching_dims: tuple[int, ...] = ()


AttributeValue = (
    str
    | int
    | bool
    | tuple[int, ...]
    | tuple[tuple[int, ...], ...]
    | tuple[str, ...]
    | tuple[SliceDim, ...]
    | tuple[PadDim, ...]
    | tuple[WindowDim, ...]
    | ConvolutionDimLabels
    | IotaReplicaGroups
)
"""A parsed attribute value. Attributes the parser does not interpret keep their raw text."""

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


@dataclass(frozen=True)
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


@dataclass(frozen=True)
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

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_name", {i.name: i for i in self.instructions})
        params = [i for i in self.instructions if i.parameter_number is not None]
        object.__setattr__(self, "_parameters", tuple(sorted(
            params, key=lambda i: cast(int, i.parameter_number))))
        roots = [i for i in self.instructions if i.is_root]
        if len(roots) != 1:
            raise ValueError(f"computation {self.name!r} needs exactly one root instruction")
        object.__setattr__(self, "_root", roots[0])

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


@dataclass(frozen=True)
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

    def __post_init__(self) -> None:
        if not self.computations:
            raise ValueError("a module needs at least one computation")
        marked = [c for c in self.computations.values() if c.is_entry]
        object.__setattr__(self, "_entry",
                           marked[0] if marked else list(self.computations.values())[-1])

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
