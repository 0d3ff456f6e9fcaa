"""An independent numpy interpreter of post-layout HLO (test oracle for `verifidx optimize`).

Every value is what XLA keeps in memory: a flat buffer in memory order, with the value's shape
and layout. The buffer is the logical array with its axes put in the layout's major-to-minor
order (`minor_to_major` read backwards), flattened row-major. Ops compute on their operands'
logical arrays, as HLO defines them, and store the result in the result's layout; two things
look at buffers instead:

- `bitcast` takes its operand's buffer unchanged and reads it with the result's shape and
  layout;
- the boundary of a called computation: a fused computation's parameter is the caller's
  operand buffer read with the parameter's declared layout, and a fusion's result is the fused
  root's buffer read with the fusion's declared layout (so a root whose layout differs from the
  caller's shows up as other values, as it would in memory).

Written from XLA's documentation of layouts and of the ops with numpy; it shares nothing with
`verifidx.hlo.layout` or verifidx's indexing maps, only the parsed module's structure
(`verifidx.hlo.parse_hlo`). Tiled layouts, tuples and ops not listed raise `Unsupported`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from verifidx.hlo import parse_hlo

DTYPES = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "s32": np.int32,
          "s64": np.int64, "s8": np.int8, "u8": np.uint8, "u32": np.uint32, "pred": np.bool_}

UNARY = {"negate": np.negative, "exponential": np.exp, "abs": np.abs, "sqrt": np.sqrt,
         "tanh": np.tanh, "not": np.logical_not, "log": np.log,
         "rsqrt": lambda x: (1 / np.sqrt(x)).astype(x.dtype)}
BINARY = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply,
          "divide": np.divide, "maximum": np.maximum, "minimum": np.minimum,
          "and": np.logical_and, "or": np.logical_or, "power": np.power}
COMPARE = {"EQ": np.equal, "NE": np.not_equal, "LT": np.less, "LE": np.less_equal,
           "GT": np.greater, "GE": np.greater_equal}


class Unsupported(Exception):
    pass


@dataclass
class Value:
    buffer: np.ndarray  # 1-D, memory order
    dims: tuple[int, ...]
    minor_to_major: tuple[int, ...]

    def logical(self) -> np.ndarray:
        major_to_minor = list(reversed(self.minor_to_major))
        physical = self.buffer.reshape([self.dims[k] for k in major_to_minor])
        return np.transpose(physical, np.argsort(major_to_minor))


def minor_to_major(shape) -> tuple[int, ...]:
    if shape.is_tuple:
        raise Unsupported("tuple shapes")
    if shape.layout is None:
        return tuple(range(shape.rank - 1, -1, -1))
    if shape.layout.tiles:
        raise Unsupported("tiled layouts")
    order = tuple(shape.layout.minor_to_major)
    assert sorted(order) == list(range(shape.rank)), f"bad layout {shape}"
    return order


def store(array: np.ndarray, shape) -> Value:
    """The buffer XLA holds for the logical `array` in `shape`'s layout."""
    order = minor_to_major(shape)
    assert tuple(array.shape) == tuple(shape.dims), (array.shape, shape)
    physical = np.transpose(array, list(reversed(order)))
    return Value(np.ascontiguousarray(physical).ravel().astype(_dtype(shape)), tuple(shape.dims),
                 order)


def reinterpret(v: Value, shape) -> Value:
    """The same bytes read with another shape and layout (bitcast, computation boundaries)."""
    if v.buffer.size != int(np.prod(shape.dims, dtype=np.int64)):
        raise Unsupported(f"reinterpreting {v.buffer.size} elements as {shape}")
    if v.buffer.dtype != _dtype(shape):
        raise Unsupported("reinterpreting another element type")
    return Value(v.buffer, tuple(shape.dims), minor_to_major(shape))


def _dtype(shape):
    if shape.element_type not in DTYPES:
        raise Unsupported(f"element type {shape.element_type}")
    return DTYPES[shape.element_type]


def random_value(shape, rng: np.random.Generator) -> Value:
    """Distinct values (a misplaced element shows), positive and below 1 for floats."""
    n = int(np.prod(shape.dims, dtype=np.int64))
    dtype = _dtype(shape)
    if dtype == np.bool_:
        flat = rng.random(n) < 0.5
    elif np.issubdtype(dtype, np.integer):
        flat = rng.permutation(n)
    else:
        flat = (rng.permutation(n) + 1) / (n + 1)
    return store(flat.astype(dtype).reshape(shape.dims), shape)


class Interpreter:
    def __init__(self, text: str) -> None:
        self.module = parse_hlo(text)

    def run(self, name: str, args: list[Value]) -> Value:
        comp = self.module.computations[name]
        env: dict[str, Value] = {}
        for inst in comp.instructions:
            env[inst.name] = self._eval(inst, [env[o] for o in inst.operands], args)
        return env[comp.root.name]

    def _eval(self, inst, operands: list[Value], args: list[Value]) -> Value:
        op, shape, a = inst.opcode, inst.shape, inst.attributes
        if op == "parameter":
            return reinterpret(args[inst.parameter_number], shape)
        if op == "bitcast":
            return reinterpret(operands[0], shape)
        if op in ("fusion", "call"):
            (called,) = inst.called_computations
            return reinterpret(self.run(called, operands), shape)
        xs = [v.logical() for v in operands]
        return store(self._logical(inst, op, shape, a, xs), shape)

    def _logical(self, inst, op, shape, a, xs: list[np.ndarray]) -> np.ndarray:
        dims = tuple(shape.dims)
        if op == "constant":
            if inst.literal_value is None:
                raise Unsupported("array constants")
            return np.full(dims, inst.literal_value, dtype=_dtype(shape))
        if op == "iota":
            k = a["iota_dimension"]
            ramp = np.arange(dims[k]).reshape([-1 if j == k else 1 for j in range(len(dims))])
            return np.broadcast_to(ramp, dims).astype(_dtype(shape))
        if op == "copy":
            return xs[0]
        if op == "transpose":
            return np.transpose(xs[0], a["dimensions"])
        if op == "reshape":
            return xs[0].reshape(dims)
        if op == "broadcast":
            bd = list(a["dimensions"])
            x = np.transpose(xs[0], np.argsort(bd)) if bd else xs[0]
            sizes = [1] * len(dims)
            for k in sorted(bd):
                sizes[k] = dims[k]
            return np.broadcast_to(x.reshape(sizes), dims)
        if op == "reverse":
            return np.flip(xs[0], a["dimensions"])
        if op == "slice":
            return xs[0][tuple(slice(s.start, s.limit, s.stride) for s in a["slice"])]
        if op == "concatenate":
            return np.concatenate(xs, axis=a["dimensions"][0])
        if op == "pad":
            return _pad(xs[0], xs[1], a["padding"])
        if op in UNARY:
            return UNARY[op](xs[0])
        if op in BINARY:
            return BINARY[op](xs[0], xs[1])
        if op == "compare":
            return COMPARE[a["direction"]](xs[0], xs[1])
        if op == "select":
            return np.where(xs[0], xs[1], xs[2])
        if op == "convert":
            return xs[0].astype(_dtype(shape))
        if op == "reduce" and len(xs) == 2:
            (called,) = inst.called_computations
            combine = BINARY.get(self.module.computations[called].root.opcode)
            if combine is None:
                raise Unsupported("reducer")
            reduced = combine.reduce(xs[0], axis=tuple(a["dimensions"]))
            return combine(reduced, xs[1]).astype(_dtype(shape))
        if op == "dot":
            return _dot(xs[0], xs[1], a)
        raise Unsupported(op)


def _pad(x: np.ndarray, value: np.ndarray, padding) -> np.ndarray:
    out = x
    for axis, p in enumerate(padding):
        n = out.shape[axis]
        inner = n + max(n - 1, 0) * p.interior
        size = max(p.low, 0) + inner + max(p.high, 0)
        grown = np.full(out.shape[:axis] + (size,) + out.shape[axis + 1:], value,
                        dtype=x.dtype)
        where = [slice(None)] * out.ndim
        where[axis] = slice(max(p.low, 0), max(p.low, 0) + inner, p.interior + 1)
        grown[tuple(where)] = out
        keep = [slice(None)] * out.ndim
        keep[axis] = slice(max(-p.low, 0), size - max(-p.high, 0))
        out = grown[tuple(keep)]
    return out


def _dot(x: np.ndarray, y: np.ndarray, a) -> np.ndarray:
    letters = iter("abcdefghijklmnopqrstuvwxyz")
    lb, rb = a.get("lhs_batch_dims", ()), a.get("rhs_batch_dims", ())
    lc, rc = a.get("lhs_contracting_dims", ()), a.get("rhs_contracting_dims", ())
    xs = [next(letters) for _ in range(x.ndim)]
    ys = [next(letters) for _ in range(y.ndim)]
    for i, j in [*zip(lb, rb), *zip(lc, rc)]:
        ys[j] = xs[i]
    out = [xs[i] for i in lb] + [xs[i] for i in range(x.ndim) if i not in (*lb, *lc)] + \
        [ys[j] for j in range(y.ndim) if j not in (*rb, *rc)]
    return np.einsum(f"{''.join(xs)},{''.join(ys)}->{''.join(out)}", x, y)
