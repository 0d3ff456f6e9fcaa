"""The values of an instruction's attributes that the parser reads (the rest stay raw text):
windows, slices, paddings, dimension numbers, replica groups. Plain immutable data, kept apart
from `verifidx.hlo.module` (whose classes are compiled) so that they stay ordinary dataclasses:
picklable and built by the generated constructors."""

from __future__ import annotations

from dataclasses import dataclass


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
