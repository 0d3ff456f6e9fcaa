"""Brute-force, element-level dependency oracle for HLO computations.

For ONE element of a computation's output this module lists, exactly, the elements of the
computation's parameters that the element's value depends on, by following the HLO semantics
op by op backwards from the root. It is the ground truth that verifidx's indexing maps are checked
against ("no read missed; extra reads reported"), so it is written independently of the map code:
it imports only the HLO parser and data model (`verifidx.hlo`), never `verifidx.hlo.indexing`,
`computation_maps` or `runtime`, and nothing from `verifidx.core.indexing_map`.

API
---
- `reads(module, computation, output_leaf, point, values=None)`: one output element.
- `all_reads(module, computation, output_leaf, points=None, values=None)`: many elements
  (`points=None`: every element when the leaf has at most `ALL_POINTS_LIMIT` elements, otherwise
  `sample_points(shape, SAMPLE_POINTS, 0)`).
- `sample_points(shape, k, seed)`: at most k points, the corners first, then distinct random ones.
- `Oracle(module, computation, values=None)`: the evaluator behind both (keeps its memo between
  calls; `reads`/`all_reads` reuse the last few oracles for the same module/computation/values).
- `default_values(computation, seed=0)` / `default_value(computation, number, seed=0)`: the
  default parameter values; `evaluate(module, computation, values=None)`: the root's value.
- `Unsupported`: raised (with a message naming the op) for constructs the oracle does not model.

Answers
-------
`reads` returns `{key: set of index tuples}` with ONE ENTRY FOR EVERY PARAMETER LEAF of the
computation (empty set when nothing of it is read). The key of an array parameter is its
parameter number; a tuple-shaped parameter has one key per leaf, `(parameter number, leaf)`, with
leaves numbered depth first (the order of `Shape.leaves()`). Output leaves are numbered the same
way over the root's shape (an array root has the single leaf 0). Scalars are indexed by `()`.

Dependencies are computed per (call frame, instruction, leaf, element) and memoized as frozensets
of integer element ids, so sweeping a whole small output is cheap.

Conventions (each a deliberate choice, matching what XLA's indexing analysis calls "reads")
-----------------------------------------------------------------------------------------
- Data-dependent choices read every candidate: `select` reads the predicate AND both branches at
  the same index (a scalar predicate at `()`); `compare`, `clamp` (scalar bounds at `()`) and all
  other elementwise ops read every operand at the same index. Reducer, comparator and combiner
  computations (`to_apply` of reduce/reduce-window/scatter/sort/map) are treated as opaque: they
  are assumed to use all of their arguments.
- `reduce` (variadic too): every output leaf reads, for every input, all elements whose kept
  dimensions match, and every init value at `()` (the fold starts from the init value).
- `reduce-window`: every output leaf reads every input at the window positions that fall on real
  (non-padding, non-dilation-hole) elements, and every init value.
- `dot`: every contracting position of both operands. `convolution`: every kernel tap that lands
  on a real input element (stride, padding, lhs/rhs dilation, window reversal,
  feature_group_count, batch_group_count exactly as XLA's HloEvaluator: feature group
  f // (out_features / fgc); batch group f // (out_features / bgc) reads input batch
  b + group * (input_batch / bgc)).
- `sort`: output k is operand k's row permuted by an order that only the comparator's results
  decide: it reads, along the sort dimension (the same row), operand k and every operand whose
  parameters (2i, 2i + 1) the comparator uses.
- `pad`: an output element on an operand element reads only that element; one on padding (edge,
  interior or negative-cut) reads only the padding value at `()`.
- Index operands are evaluated concretely (numpy) for the given parameter values:
  * `dynamic-slice`: start indices clamped to [0, dim - size] (XLA); every start index operand is
    read by every output element.
  * `dynamic-update-slice`: starts clamped to [0, dim - update dim]; an output element inside
    the (clamped) update window reads the update element, any other reads the operand element;
    every output element reads every start index operand (whether it is overwritten depends on
    them).
  * `gather`: the start index vector of the output's batch position is read (all its
    components, none for batching dimensions); starts clamped to [0, dim - slice size] per
    `start_index_map` dimension (XLA); operand batching dims take the index's batch position.
  * `scatter`: an output element reads the operand element at the same index and EVERY element of
    the scatter indices (any index vector could land on it); an update window is applied only
    when it fits entirely in the operand (no clamping; XLA's evaluator skips windows that do not
    fit); when at least one update element lands, the element also reads those update elements,
    and with several operands (variadic) it reads all operands and updates at those positions.
  Both the elements read through the index AND the index operand elements themselves (with their
  own dependencies) are reported.
- `bitcast` reinterprets the physical buffer: logical index -> linear offset via the output's
  `minor_to_major` (the default layout, descending dims, when none is printed) -> logical index of
  the operand via its layout. Tiled layouts and changes of element width raise `Unsupported`.
  `copy` is a layout change only: same logical element. `reshape` is logical (row-major).
- `bitcast-convert` to a narrower type adds a minor dimension (output (..., k) reads operand
  (...)); to a wider type it reads every element of the operand's last dimension.
- `iota`, `constant`, `partition-id`, `replica-id` read nothing. `rng` reads its scalar operands.
- `fusion`, `call` (nested to any depth), `tuple`, `get-tuple-element`, `optimization-barrier`
  route elements through without reading anything themselves.
- Unsupported (raise `Unsupported`): `custom-call`, `while`, `conditional`, collectives and
  async ops, `select-and-scatter`, `fft`, `triangular-solve`, `cholesky`, `rng-bit-generator`,
  dynamic shapes, tiled layouts in a bitcast, and any opcode not listed above.

Default parameter values (`default_values`): numpy `default_rng(seed * 1009 + parameter number)`;
integer types uniform in [-3, 24] (unsigned [0, 24]), so index operands hit negative, in-range and
clamped starts; `pred` uniform booleans; floating types multiples of 1/8 in [-2, 2]. Values given
for some parameters are used as given (checked against the shapes); the others get defaults,
made only when an index computation needs them.

The value evaluator (for index operands) covers parameters, constants, iota, broadcast, reshape,
transpose, bitcast, copy, convert, slice, pad, concatenate, reverse, the elementwise ops, compare,
select, clamp, tuple/get-tuple-element, fusion/call, dynamic-slice, dynamic-update-slice, gather,
reduce, dot, convolution and reduce-window (one input, an add/multiply/max/min/and/or reducer);
an index computed by anything else raises `Unsupported`. Floating types narrower than f32 are
evaluated in f32 (only integer index values matter here). `evaluate(module, computation,
values)` exposes it; the tests use it for independent cross-checks (tagged data movement and
perturbation of single parameter elements).
"""

from __future__ import annotations

import bisect
import itertools
import math
import re
import sys
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from verifidx.hlo import HloComputation, HloInstruction, HloModule, Shape

Index = tuple[int, ...]
ParamKey = int | tuple[int, int]
Reads = dict[ParamKey, set[Index]]

ALL_POINTS_LIMIT = 4096
SAMPLE_POINTS = 256

_EMPTY: frozenset[int] = frozenset()


class Unsupported(Exception):
    """An HLO construct the oracle does not model (the message names it)."""


# -- shapes ------------------------------------------------------------------------------------


def _size(dims: Sequence[int]) -> int:
    n = 1
    for d in dims:
        n *= d
    return n


def _leaf_count(shape: Shape) -> int:
    return len(shape.leaves())


def _element_first_leaf(shape: Shape, element: int) -> int:
    """Number (depth first) of the first leaf of tuple element `element` of `shape`."""
    if not shape.is_tuple:
        raise Unsupported(f"get-tuple-element of the non-tuple shape {shape}")
    return sum(_leaf_count(s) for s in shape.tuple_shapes[:element])


def _leaf_shape(shape: Shape, leaf: int) -> Shape:
    return shape.leaves()[leaf]


def _check_static(shape: Shape, what: str) -> None:
    if shape.is_dynamic:
        raise Unsupported(f"{what}: dynamic shape {shape}")


def _linear(idx: Index, dims: Sequence[int]) -> int:
    off = 0
    for i, n in zip(idx, dims):
        off = off * n + i
    return off


def _unlinear(off: int, dims: Sequence[int]) -> Index:
    out = [0] * len(dims)
    for k in range(len(dims) - 1, -1, -1):
        n = dims[k]
        off, out[k] = divmod(off, n) if n else (off, 0)
    return tuple(out)


def _minor_to_major(shape: Shape, what: str) -> tuple[int, ...]:
    layout = shape.layout
    if layout is None or (not layout.minor_to_major and shape.rank):
        return tuple(range(shape.rank - 1, -1, -1))
    if layout.tiles:
        raise Unsupported(f"{what}: tiled layout {layout} is not modelled")
    return layout.minor_to_major


def _physical_offset(idx: Index, shape: Shape, what: str) -> int:
    order = tuple(reversed(_minor_to_major(shape, what)))  # major to minor
    return _linear(tuple(idx[d] for d in order), [shape.dims[d] for d in order])


def _from_physical(off: int, shape: Shape, what: str) -> Index:
    order = tuple(reversed(_minor_to_major(shape, what)))
    phys = _unlinear(off, [shape.dims[d] for d in order])
    out = [0] * shape.rank
    for pos, d in enumerate(order):
        out[d] = phys[pos]
    return tuple(out)


# -- points ------------------------------------------------------------------------------------


def sample_points(shape: Shape | Sequence[int], k: int, seed: int = 0) -> list[Index]:
    """At most `k` distinct points of `shape`: every corner first (if k allows), then random ones.

    When the shape has at most k elements, every element is returned (row-major order)."""
    dims = tuple(shape.dims) if isinstance(shape, Shape) else tuple(shape)
    total = _size(dims)
    if total == 0 or k <= 0:
        return []
    if total <= k:
        return [tuple(int(x) for x in p) for p in np.ndindex(*dims)]
    corners = sorted(set(itertools.product(*({0, n - 1} for n in dims))))
    out: list[Index] = corners[:k]
    seen = set(out)
    rng = np.random.default_rng(seed)
    while len(out) < k:
        p = tuple(int(rng.integers(0, n)) for n in dims)
        if p not in seen:
            seen.add(p)
            out.append(p)
    return out


# -- values ------------------------------------------------------------------------------------

_NP_TYPES: dict[str, Any] = {
    "pred": np.bool_,
    "s1": np.int8, "s2": np.int8, "s4": np.int8, "s8": np.int8, "s16": np.int16,
    "s32": np.int32, "s64": np.int64,
    "u1": np.uint8, "u2": np.uint8, "u4": np.uint8, "u8": np.uint8, "u16": np.uint16,
    "u32": np.uint32, "u64": np.uint64,
    "f16": np.float32, "bf16": np.float32, "f32": np.float32, "f64": np.float64,
    "c64": np.complex64, "c128": np.complex128,
}


def _np_type(element_type: str) -> Any:
    if element_type in _NP_TYPES:
        return _NP_TYPES[element_type]
    if element_type.startswith("f"):
        return np.float32  # the f8/f4 formats
    raise Unsupported(f"values of element type {element_type}")


def _is_int(element_type: str) -> bool:
    return element_type[0] in "su" and element_type[1:].isdigit()


def _default_array(shape: Shape, rng: np.random.Generator) -> np.ndarray:
    return np.asarray(_default_draw(shape, rng))


def _default_draw(shape: Shape, rng: np.random.Generator) -> Any:
    ty = shape.element_type
    dims = shape.dims
    if ty == "pred":
        return rng.integers(0, 2, size=dims).astype(np.bool_)
    if _is_int(ty):
        lo = 0 if ty.startswith("u") else -3
        return rng.integers(lo, 25, size=dims).astype(_np_type(ty))
    if ty.startswith("c"):
        return (rng.integers(-16, 17, size=dims) / 8).astype(_np_type(ty))
    return (rng.integers(-16, 17, size=dims) / 8).astype(_np_type(ty))


def _default_value(shape: Shape, rng: np.random.Generator) -> Any:
    if shape.is_tuple:
        return tuple(_default_value(s, rng) for s in shape.tuple_shapes)
    return _default_array(shape, rng)


def default_value(computation: HloComputation, number: int, seed: int = 0) -> Any:
    """The default value of parameter `number` (see the module docstring)."""
    rng = np.random.default_rng(seed * 1009 + number)
    return _default_value(computation.parameters[number].shape, rng)


def default_values(computation: HloComputation, seed: int = 0) -> dict[int, Any]:
    """Deterministic pseudo-random values for every parameter (see the module docstring)."""
    return {k: default_value(computation, k, seed) for k in range(len(computation.parameters))}


_LITERAL_TOKEN = re.compile(
    r"-?inf|-?nan|true|false|[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?", re.IGNORECASE
)


def _literal_array(inst: HloInstruction) -> np.ndarray:
    shape = inst.shape
    ty = _np_type(shape.element_type)
    if inst.literal_value is not None:
        return np.full(shape.dims, inst.literal_value, dtype=ty)
    text = inst.literal or ""
    tokens = _LITERAL_TOKEN.findall(text)
    if len(tokens) != _size(shape.dims):
        raise Unsupported(f"constant {inst.name}: cannot read the literal {text[:40]!r}")

    def conv(t: str) -> Any:
        low = t.lower()
        if low in ("true", "false"):
            return low == "true"
        return float(low) if any(c in low for c in ".einn") else int(low)

    return np.array([conv(t) for t in tokens], dtype=object).astype(ty).reshape(shape.dims)


def _as_int(x: Any) -> int:
    return int(np.asarray(x).reshape(()))


def _saturating_convert(x: np.ndarray, ty: str) -> np.ndarray:
    target = _np_type(ty)
    if ty == "pred":
        return x != 0
    if _is_int(ty) and x.dtype.kind in "fc":
        info = np.iinfo(target)
        r = np.nan_to_num(np.trunc(np.real(x)).astype(np.float64), nan=0.0)
        return np.clip(r, info.min, info.max).astype(target)
    return x.astype(target)


def _int_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    safe = np.where(b64 == 0, 1, b64)
    q = np.trunc(a64 / safe).astype(np.int64)
    q = np.where(b64 == 0, -1, q)
    return q.astype(a.dtype)


def _int_remainder(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    safe = np.where(b64 == 0, 1, b64)
    r = np.fmod(a64, safe)
    return np.where(b64 == 0, a64, r).astype(a.dtype)


def _logistic(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


_UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "abs": np.abs,
    "negate": np.negative,
    "exponential": np.exp,
    "exponential-minus-one": np.expm1,
    "log": np.log,
    "log-plus-one": np.log1p,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x),
    "cbrt": np.cbrt,
    "tanh": np.tanh,
    "tan": np.tan,
    "sine": np.sin,
    "cosine": np.cos,
    "floor": np.floor,
    "ceil": np.ceil,
    "sign": np.sign,
    "is-finite": np.isfinite,
    "round-nearest-even": np.rint,
    "round-nearest-afz": lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5),
    "logistic": _logistic,
    "real": np.real,
    "imag": np.imag,
    "copy": lambda x: x.copy(),
    "reduce-precision": lambda x: x.copy(),  # values only feed index computations
    "erf": np.vectorize(math.erf, otypes=[np.float64]),
}

_BINARY_FLOAT_OR_INT: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "power": np.power,
    "atan2": np.arctan2,
    "xor": np.bitwise_xor,
    "shift-left": np.left_shift,
    "shift-right-arithmetic": np.right_shift,
}

_COMPARE: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "EQ": np.equal, "NE": np.not_equal, "LT": np.less, "LE": np.less_equal,
    "GT": np.greater, "GE": np.greater_equal,
}

ELEMENTWISE = frozenset({
    "abs", "add", "and", "atan2", "cbrt", "ceil", "clamp", "clz", "compare", "complex", "convert",
    "cosine", "divide", "erf", "exponential", "exponential-minus-one", "floor", "imag",
    "is-finite", "log", "log-plus-one", "logistic", "map", "maximum", "minimum", "multiply",
    "negate", "not", "or", "popcnt", "power", "real", "reduce-precision", "remainder",
    "round-nearest-afz", "round-nearest-even", "rsqrt", "select", "shift-left",
    "shift-right-arithmetic", "shift-right-logical", "sign", "sine", "sqrt", "stochastic-convert",
    "subtract", "tan", "tanh", "xor", "rng",
})
"""Ops whose output element reads every operand at the same index (`()` for scalar operands).
`copy` has its own handler (same logical element, leaf by leaf for tuple-shaped copies)."""

NO_READS = frozenset({"constant", "iota", "partition-id", "replica-id"})

UNSUPPORTED = {
    "custom-call": "custom-call targets are opaque",
    "while": "while loops are not modelled",
    "conditional": "conditionals are not modelled",
    "select-and-scatter": "select-and-scatter is not modelled",
    "fft": "fft is not modelled",
    "triangular-solve": "triangular-solve is not modelled",
    "cholesky": "cholesky is not modelled",
    "rng-bit-generator": "rng-bit-generator is not modelled",
    "rng-get-and-update-state": "rng state is not modelled",
    "all-reduce": "collectives read other devices",
    "all-gather": "collectives read other devices",
    "all-to-all": "collectives read other devices",
    "reduce-scatter": "collectives read other devices",
    "collective-permute": "collectives read other devices",
    "collective-broadcast": "collectives read other devices",
    "send": "send/recv are not modelled",
    "recv": "send/recv are not modelled",
    "infeed": "infeed/outfeed are not modelled",
    "outfeed": "infeed/outfeed are not modelled",
}


class _Env:
    """Lazy, memoized numpy values of the instructions of one computation instance."""

    def __init__(self, module: HloModule, comp: HloComputation,
                 param: Callable[[int], Any]) -> None:
        self.module = module
        self.comp = comp
        self.param = param
        self.cache: dict[str, Any] = {}
        self.children: dict[str, _Env] = {}

    def get(self, name: str) -> Any:
        found = self.cache.get(name)
        if found is None:
            inst = self.comp.instruction(name)
            found = self.cache[name] = self._evaluate(inst)
        return found

    def child(self, inst: HloInstruction) -> _Env:
        env = self.children.get(inst.name)
        if env is None:
            callee = self.module.computation(inst.called_computations[0])
            ops = inst.operands

            def param(p: int) -> Any:
                return self.get(ops[p])

            env = self.children[inst.name] = _Env(self.module, callee, param)
        return env

    def _evaluate(self, inst: HloInstruction) -> Any:
        op = inst.opcode
        shape = inst.shape
        _check_static(shape, inst.name)
        args = inst.operands
        if op == "parameter":
            return self.param(int(inst.parameter_number))  # type: ignore[arg-type]
        if op in ("fusion", "call"):
            env = self.child(inst)
            return env.get(env.comp.root.name)
        if op == "tuple":
            return tuple(self.get(a) for a in args)
        if op == "get-tuple-element":
            return self.get(args[0])[int(inst.tuple_index)]  # type: ignore[arg-type]
        if op == "optimization-barrier":
            return self.get(args[0])
        if op == "constant":
            return _literal_array(inst)
        if op == "iota":
            dim = int(inst.iota_dimension)  # type: ignore[arg-type]
            ar = np.arange(shape.dims[dim]).reshape(
                [shape.dims[dim] if k == dim else 1 for k in range(shape.rank)])
            return np.broadcast_to(ar, shape.dims).astype(_np_type(shape.element_type))
        if op in ("partition-id", "replica-id"):
            return np.zeros((), dtype=np.uint32)
        vals = [self.get(a) for a in args]
        with np.errstate(all="ignore"):
            return self._array_op(inst, vals)

    def _array_op(self, inst: HloInstruction, v: list[Any]) -> np.ndarray:
        op = inst.opcode
        shape = inst.shape
        ty = shape.element_type
        out_t = _np_type(ty)
        if op == "broadcast":
            dims = tuple(inst.dimensions or ())
            x = np.asarray(v[0])
            order = sorted(range(len(dims)), key=lambda k: dims[k])
            x = np.transpose(x, order) if order else x
            sorted_dims = sorted(dims)
            expanded = [1] * shape.rank
            for k, d in enumerate(sorted_dims):
                expanded[d] = x.shape[k]
            return np.broadcast_to(x.reshape(expanded), shape.dims).copy()
        if op == "reshape":
            return np.asarray(v[0]).reshape(shape.dims)
        if op == "transpose":
            return np.transpose(v[0], inst.dimensions).copy()
        if op == "bitcast":
            src_shape = self.comp.instruction(inst.operands[0]).shape
            if src_shape.element_bits != shape.element_bits:
                raise Unsupported(f"bitcast {inst.name} changes the element width")
            src_order = list(reversed(_minor_to_major(src_shape, inst.name)))
            dst_order = list(reversed(_minor_to_major(shape, inst.name)))
            flat = np.transpose(v[0], src_order).reshape(-1)
            phys = flat.reshape([shape.dims[d] for d in dst_order])
            res = np.transpose(phys, np.argsort(dst_order))
            return res.view(out_t) if res.dtype != out_t and res.dtype.itemsize == np.dtype(
                out_t).itemsize else res
        if op == "convert":
            return _saturating_convert(np.asarray(v[0]), ty)
        if op == "slice":
            sl = tuple(slice(s.start, s.limit, s.stride) for s in inst.slice_dims or ())
            return np.asarray(v[0])[sl].copy()
        if op == "pad":
            return _numpy_pad(np.asarray(v[0]), v[1], inst.padding or ())
        if op == "concatenate":
            return np.concatenate(v, axis=(inst.dimensions or (0,))[0])
        if op == "reverse":
            dims = tuple(inst.dimensions or ())
            return np.flip(v[0], axis=dims).copy() if dims else np.asarray(v[0]).copy()
        if op == "select":
            return np.where(v[0], v[1], v[2]).astype(out_t)
        if op == "clamp":
            return np.minimum(np.maximum(v[1], v[0]), v[2]).astype(out_t)
        if op == "compare":
            direction = inst.comparison_direction
            if direction not in _COMPARE:
                raise Unsupported(f"compare direction {direction}")
            return _COMPARE[direction](v[0], v[1])
        if op in _UNARY:
            return np.asarray(_UNARY[op](np.asarray(v[0]))).astype(out_t)
        if op == "not":
            x = np.asarray(v[0])
            return np.logical_not(x) if x.dtype == np.bool_ else np.invert(x)
        if op in ("and", "or"):
            x, y = np.asarray(v[0]), np.asarray(v[1])
            if x.dtype == np.bool_:
                return np.logical_and(x, y) if op == "and" else np.logical_or(x, y)
            return np.bitwise_and(x, y) if op == "and" else np.bitwise_or(x, y)
        if op == "divide":
            if _is_int(ty):
                return _int_divide(np.asarray(v[0]), np.asarray(v[1]))
            return np.divide(v[0], v[1]).astype(out_t)
        if op == "remainder":
            if _is_int(ty):
                return _int_remainder(np.asarray(v[0]), np.asarray(v[1]))
            return np.fmod(v[0], v[1]).astype(out_t)
        if op == "shift-right-logical":
            x = np.asarray(v[0])
            unsigned = x.astype(np.dtype(f"u{x.dtype.itemsize}"))
            return np.right_shift(unsigned, np.asarray(v[1]).astype(unsigned.dtype)).astype(
                x.dtype)
        if op in _BINARY_FLOAT_OR_INT:
            return np.asarray(_BINARY_FLOAT_OR_INT[op](v[0], v[1])).astype(out_t)
        if op == "dynamic-slice":
            return self._dynamic_slice(inst, v)
        if op == "dynamic-update-slice":
            return self._dynamic_update_slice(inst, v)
        if op == "gather":
            return self._gather(inst, v)
        if op == "reduce":
            return self._reduce(inst, v)
        if op == "dot":
            return self._dot(inst, v)
        if op == "convolution":
            return self._convolution(inst, v)
        if op == "reduce-window":
            return self._reduce_window(inst, v)
        raise Unsupported(f"value of {op} ({inst.name}) is needed for an index but not modelled")

    def _starts(self, inst: HloInstruction, v: list[Any], first: int) -> list[int]:
        rest = v[first:]
        if len(rest) == 1 and np.asarray(rest[0]).ndim == 1:
            return [int(x) for x in np.asarray(rest[0])]
        return [_as_int(x) for x in rest]

    def _dynamic_slice(self, inst: HloInstruction, v: list[Any]) -> np.ndarray:
        x = np.asarray(v[0])
        sizes = inst.dynamic_slice_sizes or ()
        starts = self._starts(inst, v, 1)
        cl = [min(max(s, 0), n - z) for s, n, z in zip(starts, x.shape, sizes)]
        return x[tuple(slice(c, c + z) for c, z in zip(cl, sizes))].copy()

    def _dynamic_update_slice(self, inst: HloInstruction, v: list[Any]) -> np.ndarray:
        x = np.array(v[0], copy=True)
        u = np.asarray(v[1])
        starts = self._starts(inst, v, 2)
        cl = [min(max(s, 0), n - z) for s, n, z in zip(starts, x.shape, u.shape)]
        x[tuple(slice(c, c + z) for c, z in zip(cl, u.shape))] = u
        return x

    def _gather(self, inst: HloInstruction, v: list[Any]) -> np.ndarray:
        operand, indices = np.asarray(v[0]), np.asarray(v[1])
        g = inst.gather_dimension_numbers
        sizes = inst.slice_sizes or ()
        ivd = indices.ndim if g.index_vector_dim is None else g.index_vector_dim
        if ivd == indices.ndim:
            indices = indices[..., None]
        idx = np.moveaxis(indices, ivd, -1)  # batch dims..., vector
        out_rank = inst.shape.rank
        batch_out = [d for d in range(out_rank) if d not in g.offset_dims]
        dropped = set(g.collapsed_slice_dims) | set(g.operand_batching_dims)
        result = np.empty(inst.shape.dims, dtype=operand.dtype)
        batch_dims_of_indices = [d for d in range(indices.ndim) if d != ivd]
        for b in np.ndindex(*idx.shape[:-1]):
            vec = idx[b]
            start = [0] * operand.ndim
            for k, d in enumerate(g.start_index_map):
                start[d] = min(max(int(vec[k]), 0), operand.shape[d] - sizes[d])
            for od, sd in zip(g.operand_batching_dims, g.start_indices_batching_dims):
                start[od] = b[batch_dims_of_indices.index(sd)]
            window = operand[tuple(slice(s, s + z) for s, z in zip(start, sizes))]
            window = window.reshape([z for d, z in enumerate(sizes) if d not in dropped])
            where: list[Any] = [slice(None)] * out_rank
            for pos, bd in zip(batch_out, b):
                where[pos] = bd
            result[tuple(where)] = window
        return result

    def _reduce(self, inst: HloInstruction, v: list[Any]) -> Any:
        n = len(v) // 2
        dims = tuple(inst.dimensions or ())
        reducer = self.module.computation(inst.called_computations[0])
        fast = _simple_reducer(reducer) if n == 1 else None
        if fast is not None:
            x = np.asarray(v[0])
            init = np.asarray(v[1])
            red = fast.reduce(x, axis=dims) if dims else x
            return fast(red, init).astype(x.dtype)
        # generic: fold with the reducer, element by element
        inputs = [np.asarray(a) for a in v[:n]]
        inits = [np.asarray(a) for a in v[n:]]
        kept = [d for d in range(inputs[0].ndim) if d not in dims]
        out_dims = [inputs[0].shape[d] for d in kept]
        outs = [np.empty(out_dims, dtype=a.dtype) for a in inputs]
        for o in np.ndindex(*out_dims):
            acc = [init.reshape(()) for init in inits]
            for r in np.ndindex(*[inputs[0].shape[d] for d in dims]):
                full = [0] * inputs[0].ndim
                for d, x in zip(kept, o):
                    full[d] = x
                for d, x in zip(dims, r):
                    full[d] = x
                args = acc + [a[tuple(full)] for a in inputs]
                res = _call_scalar(self.module, reducer, args)
                acc = list(res) if isinstance(res, tuple) else [res]
            for out, a in zip(outs, acc):
                out[o] = a
        return tuple(outs) if n > 1 else outs[0]

    def _dot(self, inst: HloInstruction, v: list[Any]) -> np.ndarray:
        a, b = np.asarray(v[0]), np.asarray(v[1])
        dn = inst.dot_dimension_numbers
        letters = iter("abcdefghijklmnopqrstuvwxyz")
        la = [""] * a.ndim
        lb = [""] * b.ndim
        for x, y in zip(dn.lhs_batch, dn.rhs_batch):
            la[x] = lb[y] = next(letters)
        for x, y in zip(dn.lhs_contracting, dn.rhs_contracting):
            la[x] = lb[y] = next(letters)
        out = [la[x] for x in dn.lhs_batch]
        for k in range(a.ndim):
            if not la[k]:
                la[k] = next(letters)
                out.append(la[k])
        for k in range(b.ndim):
            if not lb[k]:
                lb[k] = next(letters)
                out.append(lb[k])
        spec = f"{''.join(la)},{''.join(lb)}->{''.join(out)}"
        return np.einsum(spec, a, b).astype(_np_type(inst.shape.element_type))


    def _convolution(self, inst: HloInstruction, v: list[Any]) -> np.ndarray:
        """Dilate and pad the input, then add up one shifted, strided view per kernel tap."""
        lab = inst.dim_labels
        if lab is None:
            raise Unsupported(f"convolution {inst.name} without dim_labels")
        window = inst.window or ()
        out_t = _np_type(inst.shape.element_type)
        wide = np.complex128 if np.dtype(out_t).kind == "c" else (
            np.float64 if np.dtype(out_t).kind == "f" else np.int64)
        lhs = np.transpose(np.asarray(v[0]), [lab.input_batch, lab.input_feature,
                                              *lab.input_spatial]).astype(wide)
        rhs = np.transpose(np.asarray(v[1]), [lab.kernel_input_feature,
                                              lab.kernel_output_feature,
                                              *lab.kernel_spatial]).astype(wide)
        for k, w in enumerate(window):
            if w.reversal:
                rhs = np.flip(rhs, axis=2 + k)
        lhs = _numpy_pad(lhs, np.zeros((), wide), [_Pad(0, 0, 0), _Pad(0, 0, 0)] + [
            _Pad(w.pad_low, w.pad_high, w.lhs_dilation - 1) for w in window])
        out_sp = [inst.shape.dims[d] for d in lab.output_spatial]
        fgc, bgc = inst.feature_group_count, inst.batch_group_count
        n, c = lhs.shape[:2]
        o = rhs.shape[1]
        nb = n // bgc
        acc = np.zeros([nb, o, *out_sp], dtype=wide)
        for taps in itertools.product(*(range(w.size) for w in window)):
            view = lhs[(slice(None), slice(None), *(
                slice(t * w.rhs_dilation, t * w.rhs_dilation + (m - 1) * w.stride + 1, w.stride)
                for t, w, m in zip(taps, window, out_sp)))]
            tap_index: tuple[Any, ...] = (slice(None), slice(None), *taps)
            kernel = rhs[tap_index]
            if bgc > 1:
                ob = o // bgc
                for g in range(bgc):
                    acc[:, g * ob:(g + 1) * ob] += np.einsum(
                        "nc...,co->no...", view[g * nb:(g + 1) * nb],
                        kernel[:, g * ob:(g + 1) * ob])
            else:
                cg, og = c // fgc, o // fgc
                for g in range(fgc):
                    acc[:, g * og:(g + 1) * og] += np.einsum(
                        "nc...,co->no...", view[:, g * cg:(g + 1) * cg],
                        kernel[:, g * og:(g + 1) * og])
        order = [lab.output_batch, lab.output_feature, *lab.output_spatial]
        return np.transpose(acc, np.argsort(order)).astype(out_t)

    def _reduce_window(self, inst: HloInstruction, v: list[Any]) -> np.ndarray:
        reducer = self.module.computation(inst.called_computations[0])
        fast = _simple_reducer(reducer) if len(v) == 2 else None
        if fast is None:
            raise Unsupported(f"value of reduce-window {inst.name} with a general reducer")
        window = inst.window or ()
        x, init = np.asarray(v[0]), np.asarray(v[1]).reshape(())
        padded = _numpy_pad(x, init, [_Pad(w.pad_low, w.pad_high, w.lhs_dilation - 1)
                                      for w in window])
        out = np.full(inst.shape.dims, init, dtype=x.dtype)
        for taps in itertools.product(*(range(w.size) for w in window)):
            view = padded[tuple(
                slice(t * w.rhs_dilation, t * w.rhs_dilation + (m - 1) * w.stride + 1, w.stride)
                for t, w, m in zip(taps, window, inst.shape.dims))]
            out = fast(out, view).astype(x.dtype)
        return out


class _Pad:
    """A padding triple for `_numpy_pad` (the shape of `verifidx.hlo.PadDim`)."""

    def __init__(self, low: int, high: int, interior: int) -> None:
        self.low, self.high, self.interior = low, high, interior


def _simple_reducer(comp: HloComputation) -> np.ufunc | None:
    """The ufunc of a reducer `ROOT r = op(p0, p1)` over its two parameters, if it is one."""
    root = comp.root
    params = {i.name for i in comp.parameters}
    if len(comp.parameters) != 2 or set(root.operands) != params or len(root.operands) != 2:
        return None
    boolean = root.shape.element_type == "pred"
    table = {
        "add": np.add, "multiply": np.multiply, "maximum": np.maximum, "minimum": np.minimum,
        "and": np.logical_and if boolean else np.bitwise_and,
        "or": np.logical_or if boolean else np.bitwise_or,
    }
    return table.get(root.opcode)


def _call_scalar(module: HloModule, comp: HloComputation, args: Sequence[Any]) -> Any:
    env = _Env(module, comp, lambda p: np.asarray(args[p]))
    return env.get(comp.root.name)


def _numpy_pad(x: np.ndarray, value: Any, cfg: Sequence[Any]) -> np.ndarray:
    """XLA pad with numpy: interior padding, then edge padding (negative edges cut)."""
    value = np.asarray(value).reshape(())
    for axis, p in enumerate(cfg):
        lo, hi, interior = p.low, p.high, p.interior
        n = x.shape[axis]
        size = n + max(0, n - 1) * interior
        shape = list(x.shape)
        shape[axis] = size
        y = np.full(shape, value, dtype=x.dtype)
        idx: list[Any] = [slice(None)] * x.ndim
        idx[axis] = slice(0, size, interior + 1)
        y[tuple(idx)] = x
        widths = [(0, 0)] * x.ndim
        widths[axis] = (max(lo, 0), max(hi, 0))
        y = np.pad(y, widths, constant_values=value)
        cut: list[Any] = [slice(None)] * x.ndim
        cut[axis] = slice(max(-lo, 0), y.shape[axis] - max(-hi, 0))
        x = y[tuple(cut)]
    return x


def evaluate(module: HloModule, computation: HloComputation | str,
             values: Mapping[int, Any] | None = None) -> Any:
    """The value of a computation's root for the given (or default) parameter values.

    Only the ops of the value evaluator (module docstring) are supported."""
    comp = module.computation(computation) if isinstance(computation, str) else computation
    vals = _LazyValues(comp, values)
    env = _Env(module, comp, vals.get)
    return env.get(comp.root.name)


class _LazyValues:
    """The given parameter values (checked against the shapes); defaults made on first use."""

    def __init__(self, comp: HloComputation, values: Mapping[int, Any] | None) -> None:
        self.comp = comp
        self.values: dict[int, Any] = {}
        numbers = {int(p.parameter_number) for p in comp.parameters}  # type: ignore[arg-type]
        for number, value in (values or {}).items():
            if number not in numbers:
                raise ValueError(f"computation {comp.name} has no parameter {number}")
            shape = comp.parameters[number].shape
            self.values[number] = _coerce(value, shape, f"parameter {number}")

    def get(self, number: int) -> Any:
        if number not in self.values:
            self.values[number] = default_value(self.comp, number)
        return self.values[number]


def _coerce(value: Any, shape: Shape, what: str) -> Any:
    if shape.is_tuple:
        if len(value) != len(shape.tuple_shapes):
            raise ValueError(f"{what}: expected a tuple of {len(shape.tuple_shapes)} values")
        return tuple(_coerce(v, s, f"{what}.{k}")
                     for k, (v, s) in enumerate(zip(value, shape.tuple_shapes)))
    arr = np.asarray(value)
    if tuple(arr.shape) != tuple(shape.dims):
        raise ValueError(f"{what}: value has shape {arr.shape}, expected {shape.dims}")
    return arr


# -- dependencies ------------------------------------------------------------------------------


def _union(sets: Iterable[frozenset[int]]) -> frozenset[int]:
    nonempty = [s for s in sets if s]
    if not nonempty:
        return _EMPTY
    first = nonempty[0]
    if all(s is first for s in nonempty):
        return first
    return first.union(*nonempty[1:])


class _Frame:
    """One instance of a computation: the top computation, or a callee at one call site."""

    __slots__ = ("call", "children", "comp", "env", "extra", "memo", "parent")

    def __init__(self, comp: HloComputation, parent: _Frame | None,
                 call: HloInstruction | None, env: _Env) -> None:
        self.comp = comp
        self.parent = parent
        self.call = call
        self.env = env
        self.memo: dict[tuple[str, int, Index], frozenset[int]] = {}
        self.children: dict[str, _Frame] = {}
        self.extra: dict[Any, Any] = {}


class Oracle:
    """Dependency evaluator for one computation and one set of parameter values."""

    def __init__(self, module: HloModule, computation: HloComputation | str,
                 values: Mapping[int, Any] | None = None) -> None:
        self.module = module
        self.comp = (module.computation(computation) if isinstance(computation, str)
                     else computation)
        self.values = _LazyValues(self.comp, values)
        sys.setrecursionlimit(max(sys.getrecursionlimit(), 20000))
        # element ids: one contiguous range per parameter leaf
        self._bases: list[int] = []
        self._keys: list[tuple[ParamKey, tuple[int, ...]]] = []
        self._base_of: dict[tuple[int, int], int] = {}
        base = 0
        for p in self.comp.parameters:
            number = int(p.parameter_number)  # type: ignore[arg-type]
            leaves = p.shape.leaves()
            for leaf, s in enumerate(leaves):
                _check_static(s, f"parameter {number}")
                key: ParamKey = (number, leaf) if p.shape.is_tuple else number
                self._bases.append(base)
                self._keys.append((key, tuple(s.dims)))
                self._base_of[(number, leaf)] = base
                base += _size(s.dims)
        env = _Env(module, self.comp, self.values.get)
        self.top = _Frame(self.comp, None, None, env)
        self.output_leaves = self.comp.root.shape.leaves()

    # public ------------------------------------------------------------------------------

    def reads(self, output_leaf: int, point: Sequence[int]) -> Reads:
        if not 0 <= output_leaf < len(self.output_leaves):
            raise IndexError(f"{self.comp.name} has {len(self.output_leaves)} output leaves")
        shape = self.output_leaves[output_leaf]
        idx = tuple(int(x) for x in point)
        if len(idx) != shape.rank or any(not 0 <= i < n for i, n in zip(idx, shape.dims)):
            raise IndexError(f"point {idx} is outside {shape}")
        ids = self._dep(self.top, self.comp.root.name, output_leaf, idx)
        return self._decode(ids)

    def ids(self, output_leaf: int, point: Sequence[int]) -> frozenset[int]:
        """The raw element ids (for fast comparisons); `decode` turns them into reads."""
        return self._dep(self.top, self.comp.root.name, output_leaf, tuple(point))

    def _decode(self, ids: Iterable[int]) -> Reads:
        out: Reads = {key: set() for key, _dims in self._keys}
        for e in ids:
            k = bisect.bisect_right(self._bases, e) - 1
            key, dims = self._keys[k]
            out[key].add(_unlinear(e - self._bases[k], dims))
        return out

    # core --------------------------------------------------------------------------------

    def _dep(self, frame: _Frame, name: str, leaf: int, idx: Index) -> frozenset[int]:
        key = (name, leaf, idx)
        found = frame.memo.get(key)
        if found is not None:
            return found
        inst = frame.comp.instruction(name)
        op = inst.opcode
        if op in ELEMENTWISE:
            result = self._elementwise(frame, inst, idx)
        elif op in NO_READS:
            result = _EMPTY
        else:
            handler = _HANDLERS.get(op)
            if handler is None:
                reason = UNSUPPORTED.get(op, "opcode not modelled")
                raise Unsupported(f"{op} ({inst.name} in {frame.comp.name}): {reason}")
            result = handler(self, frame, inst, leaf, idx)
        frame.memo[key] = result
        return result

    def _operand(self, frame: _Frame, inst: HloInstruction, k: int) -> HloInstruction:
        return frame.comp.instruction(inst.operands[k])

    def _child(self, frame: _Frame, inst: HloInstruction) -> _Frame:
        child = frame.children.get(inst.name)
        if child is None:
            callee = self.module.computation(inst.called_computations[0])
            child = frame.children[inst.name] = _Frame(callee, frame, inst,
                                                       frame.env.child(inst))
        return child

    def _elementwise(self, frame: _Frame, inst: HloInstruction, idx: Index) -> frozenset[int]:
        _check_static(inst.shape, inst.name)
        parts = []
        for name in inst.operands:
            rank = frame.comp.instruction(name).shape.rank
            parts.append(self._dep(frame, name, 0, () if rank == 0 else idx))
        return _union(parts)

    def _parameter(self, frame: _Frame, inst: HloInstruction, leaf: int,
                   idx: Index) -> frozenset[int]:
        number = int(inst.parameter_number)  # type: ignore[arg-type]
        if frame.parent is None:
            base = self._base_of[(number, leaf)]
            return frozenset((base + _linear(idx, _leaf_shape(inst.shape, leaf).dims),))
        assert frame.call is not None
        return self._dep(frame.parent, frame.call.operands[number], leaf, idx)

    def _call(self, frame: _Frame, inst: HloInstruction, leaf: int,
              idx: Index) -> frozenset[int]:
        if inst.opcode == "call" and len(inst.called_computations) != 1:
            raise Unsupported(f"call {inst.name} with {len(inst.called_computations)} callees")
        child = self._child(frame, inst)
        return self._dep(child, child.comp.root.name, leaf, idx)

    def _tuple(self, frame: _Frame, inst: HloInstruction, leaf: int,
               idx: Index) -> frozenset[int]:
        for name in inst.operands:
            n = _leaf_count(frame.comp.instruction(name).shape)
            if leaf < n:
                return self._dep(frame, name, leaf, idx)
            leaf -= n
        raise IndexError(f"tuple {inst.name} has no leaf {leaf}")

    def _gte(self, frame: _Frame, inst: HloInstruction, leaf: int,
             idx: Index) -> frozenset[int]:
        src = self._operand(frame, inst, 0)
        first = _element_first_leaf(src.shape, int(inst.tuple_index))  # type: ignore[arg-type]
        return self._dep(frame, src.name, first + leaf, idx)

    def _barrier(self, frame: _Frame, inst: HloInstruction, leaf: int,
                 idx: Index) -> frozenset[int]:
        if len(inst.operands) != 1:
            raise Unsupported(f"optimization-barrier {inst.name} with several operands")
        return self._dep(frame, inst.operands[0], leaf, idx)

    def _copy(self, frame: _Frame, inst: HloInstruction, leaf: int,
              idx: Index) -> frozenset[int]:
        return self._dep(frame, inst.operands[0], leaf, idx)

    def _broadcast(self, frame: _Frame, inst: HloInstruction, leaf: int,
                   idx: Index) -> frozenset[int]:
        dims = inst.dimensions or ()
        return self._dep(frame, inst.operands[0], 0, tuple(idx[d] for d in dims))

    def _transpose(self, frame: _Frame, inst: HloInstruction, leaf: int,
                   idx: Index) -> frozenset[int]:
        perm = inst.dimensions or ()
        src = [0] * len(perm)
        for i, p in enumerate(perm):
            src[p] = idx[i]
        return self._dep(frame, inst.operands[0], 0, tuple(src))

    def _reshape(self, frame: _Frame, inst: HloInstruction, leaf: int,
                 idx: Index) -> frozenset[int]:
        src = self._operand(frame, inst, 0)
        _check_static(inst.shape, inst.name)
        off = _linear(idx, inst.shape.dims)
        return self._dep(frame, src.name, 0, _unlinear(off, src.shape.dims))

    def _bitcast(self, frame: _Frame, inst: HloInstruction, leaf: int,
                 idx: Index) -> frozenset[int]:
        src = self._operand(frame, inst, 0)
        if src.shape.is_tuple or inst.shape.is_tuple:
            raise Unsupported(f"bitcast {inst.name} of a tuple")
        if src.shape.element_bits != inst.shape.element_bits:
            raise Unsupported(f"bitcast {inst.name} changes the element width")
        if _size(src.shape.dims) != _size(inst.shape.dims):
            raise Unsupported(f"bitcast {inst.name} changes the number of elements")
        off = _physical_offset(idx, inst.shape, inst.name)
        return self._dep(frame, src.name, 0, _from_physical(off, src.shape, inst.name))

    def _bitcast_convert(self, frame: _Frame, inst: HloInstruction, leaf: int,
                         idx: Index) -> frozenset[int]:
        src = self._operand(frame, inst, 0)
        a, b = src.shape.element_bits, inst.shape.element_bits
        if a == b:
            return self._dep(frame, src.name, 0, idx)
        if a > b:  # narrower output: an extra minor dimension
            return self._dep(frame, src.name, 0, idx[:-1])
        n = src.shape.dims[-1]
        return _union(self._dep(frame, src.name, 0, (*idx, k)) for k in range(n))

    def _slice(self, frame: _Frame, inst: HloInstruction, leaf: int,
               idx: Index) -> frozenset[int]:
        sl = inst.slice_dims or ()
        return self._dep(frame, inst.operands[0], 0,
                         tuple(s.start + i * s.stride for s, i in zip(sl, idx)))

    def _pad(self, frame: _Frame, inst: HloInstruction, leaf: int,
             idx: Index) -> frozenset[int]:
        src = self._operand(frame, inst, 0)
        out = []
        for o, p, n in zip(idx, inst.padding or (), src.shape.dims):
            q = o - p.low
            if q < 0 or q % (p.interior + 1):
                return self._dep(frame, inst.operands[1], 0, ())
            q //= p.interior + 1
            if q >= n:
                return self._dep(frame, inst.operands[1], 0, ())
            out.append(q)
        return self._dep(frame, src.name, 0, tuple(out))

    def _concatenate(self, frame: _Frame, inst: HloInstruction, leaf: int,
                     idx: Index) -> frozenset[int]:
        axis = (inst.dimensions or (0,))[0]
        pos = idx[axis]
        for name in inst.operands:
            n = frame.comp.instruction(name).shape.dims[axis]
            if pos < n:
                return self._dep(frame, name, 0, idx[:axis] + (pos,) + idx[axis + 1:])
            pos -= n
        raise IndexError(f"concatenate {inst.name}: {idx} out of range")

    def _reverse(self, frame: _Frame, inst: HloInstruction, leaf: int,
                 idx: Index) -> frozenset[int]:
        dims = set(inst.dimensions or ())
        n = inst.shape.dims
        return self._dep(frame, inst.operands[0], 0,
                         tuple(n[k] - 1 - i if k in dims else i for k, i in enumerate(idx)))

    def _reduce(self, frame: _Frame, inst: HloInstruction, leaf: int,
                idx: Index) -> frozenset[int]:
        n = len(inst.operands) // 2
        red = tuple(inst.dimensions or ())
        src_shape = self._operand(frame, inst, 0).shape
        kept = [d for d in range(src_shape.rank) if d not in red]
        parts = [self._dep(frame, inst.operands[n + j], 0, ()) for j in range(n)]
        ranges = [range(src_shape.dims[d]) for d in red]
        for r in itertools.product(*ranges):
            full = [0] * src_shape.rank
            for d, x in zip(kept, idx):
                full[d] = x
            for d, x in zip(red, r):
                full[d] = x
            t = tuple(full)
            for j in range(n):
                parts.append(self._dep(frame, inst.operands[j], 0, t))
        return _union(parts)

    def _reduce_window(self, frame: _Frame, inst: HloInstruction, leaf: int,
                       idx: Index) -> frozenset[int]:
        n = len(inst.operands) // 2
        src_shape = self._operand(frame, inst, 0).shape
        window = inst.window or ()
        if len(window) != src_shape.rank:
            raise Unsupported(f"reduce-window {inst.name}: window rank != operand rank")
        per_dim = [[q for _k, q in _window_taps(o, size, w)]
                   for o, size, w in zip(idx, src_shape.dims, window)]
        parts = [self._dep(frame, inst.operands[n + j], 0, ()) for j in range(n)]
        for t in itertools.product(*per_dim):
            for j in range(n):
                parts.append(self._dep(frame, inst.operands[j], 0, t))
        return _union(parts)

    def _dot(self, frame: _Frame, inst: HloInstruction, leaf: int,
             idx: Index) -> frozenset[int]:
        lhs, rhs = self._operand(frame, inst, 0), self._operand(frame, inst, 1)
        dn = inst.dot_dimension_numbers
        nb = len(dn.lhs_batch)
        lhs_free = [d for d in range(lhs.shape.rank)
                    if d not in dn.lhs_batch and d not in dn.lhs_contracting]
        rhs_free = [d for d in range(rhs.shape.rank)
                    if d not in dn.rhs_batch and d not in dn.rhs_contracting]
        li, ri = [0] * lhs.shape.rank, [0] * rhs.shape.rank
        for k, (a, b) in enumerate(zip(dn.lhs_batch, dn.rhs_batch)):
            li[a] = ri[b] = idx[k]
        for k, d in enumerate(lhs_free):
            li[d] = idx[nb + k]
        for k, d in enumerate(rhs_free):
            ri[d] = idx[nb + len(lhs_free) + k]
        parts = []
        for c in itertools.product(*(range(lhs.shape.dims[d]) for d in dn.lhs_contracting)):
            for a, b, x in zip(dn.lhs_contracting, dn.rhs_contracting, c):
                li[a] = ri[b] = x
            parts.append(self._dep(frame, lhs.name, 0, tuple(li)))
            parts.append(self._dep(frame, rhs.name, 0, tuple(ri)))
        return _union(parts)

    def _convolution(self, frame: _Frame, inst: HloInstruction, leaf: int,
                     idx: Index) -> frozenset[int]:
        lhs, rhs = self._operand(frame, inst, 0), self._operand(frame, inst, 1)
        lab = inst.dim_labels
        if lab is None:
            raise Unsupported(f"convolution {inst.name} without dim_labels")
        window = inst.window or ()
        fgc, bgc = inst.feature_group_count, inst.batch_group_count
        input_z = lhs.shape.dims[lab.input_feature]
        input_batch = lhs.shape.dims[lab.input_batch]
        output_z = rhs.shape.dims[lab.kernel_output_feature]
        in_group = input_z // fgc
        f = idx[lab.output_feature]
        b = idx[lab.output_batch]
        feature_group = f // (output_z // fgc)
        batch_group = f // (output_z // bgc)
        lhs_batch = b + batch_group * (input_batch // bgc)
        taps = [_window_taps(idx[lab.output_spatial[k]], lhs.shape.dims[lab.input_spatial[k]], w)
                for k, w in enumerate(window)]
        parts = []
        li, ri = [0] * lhs.shape.rank, [0] * rhs.shape.rank
        li[lab.input_batch] = lhs_batch
        ri[lab.kernel_output_feature] = f
        for combo in itertools.product(*taps):
            for k, ((kk, q), w) in enumerate(zip(combo, window)):
                li[lab.input_spatial[k]] = q
                ri[lab.kernel_spatial[k]] = w.size - 1 - kk if w.reversal else kk
            for z in range(in_group):
                li[lab.input_feature] = feature_group * in_group + z
                ri[lab.kernel_input_feature] = z
                parts.append(self._dep(frame, lhs.name, 0, tuple(li)))
                parts.append(self._dep(frame, rhs.name, 0, tuple(ri)))
        return _union(parts)

    def _sort(self, frame: _Frame, inst: HloInstruction, leaf: int,
              idx: Index) -> frozenset[int]:
        axis = (inst.dimensions or (0,))[0]
        n = self._operand(frame, inst, 0).shape.dims[axis]
        cmp = self.module.computation(inst.called_computations[0])
        used: set[int] = set()
        todo = [cmp.root.name]
        while todo:  # the comparator's parameters reachable from its root
            node = cmp.instruction(todo.pop())
            if node.parameter_number is not None:
                used.add(node.parameter_number // 2)
            todo.extend(node.operands)
        parts = []
        for k in range(n):
            t = idx[:axis] + (k,) + idx[axis + 1:]
            for j, name in enumerate(inst.operands):
                if j == leaf or j in used:
                    parts.append(self._dep(frame, name, 0, t))
        return _union(parts)

    # data dependent ----------------------------------------------------------------------

    def _start_operands(self, frame: _Frame, inst: HloInstruction,
                        first: int) -> tuple[list[int], frozenset[int]]:
        """Start index values and the dependencies of the start index operands."""
        names = inst.operands[first:]
        if len(names) == 1 and frame.comp.instruction(names[0]).shape.rank == 1:
            vec = np.asarray(frame.env.get(names[0]))
            starts = [int(x) for x in vec]
            dep = _union(self._dep(frame, names[0], 0, (k,)) for k in range(len(starts)))
            return starts, dep
        starts = [_as_int(frame.env.get(n)) for n in names]
        return starts, _union(self._dep(frame, n, 0, ()) for n in names)

    def _dynamic_slice(self, frame: _Frame, inst: HloInstruction, leaf: int,
                       idx: Index) -> frozenset[int]:
        src = self._operand(frame, inst, 0)
        cached = frame.extra.get(inst.name)
        if cached is None:
            starts, dep = self._start_operands(frame, inst, 1)
            sizes = inst.dynamic_slice_sizes or inst.shape.dims
            starts = [min(max(s, 0), n - z) for s, n, z in zip(starts, src.shape.dims, sizes)]
            cached = frame.extra[inst.name] = (starts, dep)
        starts, dep = cached
        return _union([dep, self._dep(frame, src.name, 0,
                                      tuple(s + i for s, i in zip(starts, idx)))])

    def _dynamic_update_slice(self, frame: _Frame, inst: HloInstruction, leaf: int,
                              idx: Index) -> frozenset[int]:
        src, upd = self._operand(frame, inst, 0), self._operand(frame, inst, 1)
        cached = frame.extra.get(inst.name)
        if cached is None:
            starts, dep = self._start_operands(frame, inst, 2)
            starts = [min(max(s, 0), n - z)
                      for s, n, z in zip(starts, src.shape.dims, upd.shape.dims)]
            cached = frame.extra[inst.name] = (starts, dep)
        starts, dep = cached
        rel = tuple(i - s for i, s in zip(idx, starts))
        if all(0 <= r < n for r, n in zip(rel, upd.shape.dims)):
            return _union([dep, self._dep(frame, upd.name, 0, rel)])
        return _union([dep, self._dep(frame, src.name, 0, idx)])

    def _gather(self, frame: _Frame, inst: HloInstruction, leaf: int,
                idx: Index) -> frozenset[int]:
        src, ind = self._operand(frame, inst, 0), self._operand(frame, inst, 1)
        g = inst.gather_dimension_numbers
        sizes = inst.slice_sizes or ()
        ind_rank = ind.shape.rank
        ivd = ind_rank if g.index_vector_dim is None else g.index_vector_dim
        batch_out = [d for d in range(inst.shape.rank) if d not in g.offset_dims]
        batch = [idx[d] for d in batch_out]
        batch_dims_of_indices = [d for d in range(ind_rank) if d != ivd]
        values = np.asarray(frame.env.get(ind.name))
        start = [0] * src.shape.rank
        parts = []
        for k, d in enumerate(g.start_index_map):
            pos = list(batch)
            if ivd < ind_rank:
                pos.insert(ivd, k)
            t = tuple(pos)
            parts.append(self._dep(frame, ind.name, 0, t))
            start[d] = min(max(int(values[t]), 0), src.shape.dims[d] - sizes[d])
        for od, sd in zip(g.operand_batching_dims, g.start_indices_batching_dims):
            start[od] = batch[batch_dims_of_indices.index(sd)]
        window_dims = [d for d in range(src.shape.rank)
                       if d not in g.collapsed_slice_dims and d not in g.operand_batching_dims]
        full = list(start)
        for o, w in zip(sorted(g.offset_dims), window_dims):
            full[w] += idx[o]
        parts.append(self._dep(frame, src.name, 0, tuple(full)))
        return _union(parts)

    def _scatter_landing(self, frame: _Frame, inst: HloInstruction
                         ) -> tuple[dict[Index, list[Index]], frozenset[int]]:
        cached = frame.extra.get(inst.name)
        if cached is not None:
            return cached
        n = len(inst.operands) // 2 if len(inst.operands) % 2 == 1 else None
        if n is None:
            raise Unsupported(f"scatter {inst.name}: odd operand structure")
        src = self._operand(frame, inst, 0)
        ind = self._operand(frame, inst, n)
        upd = self._operand(frame, inst, n + 1)
        s = inst.scatter_dimension_numbers
        ind_rank = ind.shape.rank
        ivd = ind_rank if s.index_vector_dim is None else s.index_vector_dim
        values = np.asarray(frame.env.get(ind.name))
        scatter_dims = [d for d in range(upd.shape.rank) if d not in s.update_window_dims]
        batch_dims_of_indices = [d for d in range(ind_rank) if d != ivd]
        window_dims = [d for d in range(src.shape.rank)
                       if d not in s.inserted_window_dims and d not in s.input_batching_dims]
        window_size = [1] * src.shape.rank
        for o, w in zip(sorted(s.update_window_dims), window_dims):
            window_size[w] = upd.shape.dims[o]
        landed: dict[Index, list[Index]] = {}
        for u in np.ndindex(*upd.shape.dims):
            u = tuple(int(x) for x in u)
            batch = [u[d] for d in scatter_dims]
            start = [0] * src.shape.rank
            for k, d in enumerate(s.scatter_dims_to_operand_dims):
                pos = list(batch)
                if ivd < ind_rank:
                    pos.insert(ivd, k)
                start[d] = int(values[tuple(pos)])
            for od, sd in zip(s.input_batching_dims, s.scatter_indices_batching_dims):
                start[od] = batch[batch_dims_of_indices.index(sd)]
            if any(st < 0 or st > dim - z
                   for st, dim, z in zip(start, src.shape.dims, window_size)):
                continue
            full = list(start)
            for o, w in zip(sorted(s.update_window_dims), window_dims):
                full[w] += u[o]
            landed.setdefault(tuple(full), []).append(u)
        all_indices = _union(self._dep(frame, ind.name, 0, tuple(int(x) for x in t))
                             for t in np.ndindex(*ind.shape.dims))
        cached = frame.extra[inst.name] = (landed, all_indices)
        return cached

    def _scatter(self, frame: _Frame, inst: HloInstruction, leaf: int,
                 idx: Index) -> frozenset[int]:
        landed, all_indices = self._scatter_landing(frame, inst)
        n = len(inst.operands) // 2
        hits = landed.get(idx, [])
        parts = [all_indices]
        if not hits:
            parts.append(self._dep(frame, inst.operands[leaf], 0, idx))
        else:
            for j in range(n):
                parts.append(self._dep(frame, inst.operands[j], 0, idx))
                for u in hits:
                    parts.append(self._dep(frame, inst.operands[n + 1 + j], 0, u))
        return _union(parts)


def _window_taps(o: int, in_size: int, w: Any) -> list[tuple[int, int]]:
    """(window position, input index) pairs of output position `o` that hit real elements."""
    out = []
    for k in range(w.size):
        p = o * w.stride - w.pad_low + k * w.rhs_dilation
        if p % w.lhs_dilation:
            continue
        q = p // w.lhs_dilation
        if 0 <= q < in_size:
            out.append((k, q))
    return out


_Handler = Callable[[Oracle, _Frame, HloInstruction, int, Index], frozenset[int]]
_HANDLERS: dict[str, _Handler] = {
    "parameter": Oracle._parameter,
    "fusion": Oracle._call,
    "call": Oracle._call,
    "tuple": Oracle._tuple,
    "get-tuple-element": Oracle._gte,
    "optimization-barrier": Oracle._barrier,
    "copy": Oracle._copy,
    "broadcast": Oracle._broadcast,
    "transpose": Oracle._transpose,
    "reshape": Oracle._reshape,
    "bitcast": Oracle._bitcast,
    "bitcast-convert": Oracle._bitcast_convert,
    "slice": Oracle._slice,
    "pad": Oracle._pad,
    "concatenate": Oracle._concatenate,
    "reverse": Oracle._reverse,
    "reduce": Oracle._reduce,
    "reduce-window": Oracle._reduce_window,
    "dot": Oracle._dot,
    "convolution": Oracle._convolution,
    "sort": Oracle._sort,
    "dynamic-slice": Oracle._dynamic_slice,
    "dynamic-update-slice": Oracle._dynamic_update_slice,
    "gather": Oracle._gather,
    "scatter": Oracle._scatter,
}

# -- convenience -------------------------------------------------------------------------------

_ORACLES: OrderedDict[tuple[int, str, int], tuple[HloModule, Any, Oracle]] = OrderedDict()


def _oracle(module: HloModule, computation: HloComputation | str,
            values: Mapping[int, Any] | None) -> Oracle:
    name = computation if isinstance(computation, str) else computation.name
    key = (id(module), name, id(values) if values is not None else 0)
    hit = _ORACLES.get(key)
    if hit is not None and hit[0] is module and hit[1] is values:
        _ORACLES.move_to_end(key)
        return hit[2]
    oracle = Oracle(module, computation, values)
    _ORACLES[key] = (module, values, oracle)
    while len(_ORACLES) > 8:
        _ORACLES.popitem(last=False)
    return oracle


def reads(module: HloModule, computation: HloComputation | str, output_leaf: int,
          point: Sequence[int], values: Mapping[int, Any] | None = None) -> Reads:
    """The elements of every parameter (leaf) that output element `point` of `output_leaf`
    depends on; see the module docstring for keys and conventions."""
    return _oracle(module, computation, values).reads(output_leaf, point)


def all_reads(module: HloModule, computation: HloComputation | str, output_leaf: int = 0,
              points: Iterable[Sequence[int]] | None = None,
              values: Mapping[int, Any] | None = None) -> dict[Index, Reads]:
    """`reads` for many points: every point of the leaf when it has at most `ALL_POINTS_LIMIT`
    elements and `points` is None, otherwise `sample_points(shape, SAMPLE_POINTS, 0)`."""
    oracle = _oracle(module, computation, values)
    if points is None:
        shape = oracle.output_leaves[output_leaf]
        k = ALL_POINTS_LIMIT if _size(shape.dims) <= ALL_POINTS_LIMIT else SAMPLE_POINTS
        points = sample_points(shape, k, 0)
    return {tuple(int(x) for x in p): oracle.reads(output_leaf, p) for p in points}
