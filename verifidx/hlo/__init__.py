"""HLO text: parse modules as XLA and JAX print them into plain, immutable Python data."""

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
from verifidx.hlo.module import HloComputation, HloInstruction, HloModule
from verifidx.hlo.parser import parse_hlo, parse_shape
from verifidx.hlo.shape import ELEMENT_TYPE_BITS, UNBOUNDED, WILDCARD_TILE_DIM, Layout, Shape

__all__ = [
    "ELEMENT_TYPE_BITS",
    "UNBOUNDED",
    "WILDCARD_TILE_DIM",
    "AttributeValue",
    "ConvolutionDimLabels",
    "DotDimensionNumbers",
    "GatherDimensionNumbers",
    "HloComputation",
    "HloInstruction",
    "HloModule",
    "IotaReplicaGroups",
    "Layout",
    "PadDim",
    "ScatterDimensionNumbers",
    "Shape",
    "SliceDim",
    "WindowDim",
    "parse_hlo",
    "parse_shape",
]
