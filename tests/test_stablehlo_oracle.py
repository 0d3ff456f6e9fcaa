# ruff: noqa: E501  (MLIR test programs keep one op per line)
"""StableHLO's reference interpreter as the oracle for the maps of StableHLO programs.

The oracle is independent of verifidx's maps: a program runs in `stablehlo.eval_module` (the
interpreter in jaxlib's bindings) on random inputs, and again with one input element changed at
a time; the output elements that change are the ones that read it. Every such pair must be in the
map's relation (no missed read), and, for the ops used here (data movement, sums, elementwise
math, whose every read shows in the result), every pair of the relation must show up (nothing
outside).

Dynamic programs (`tensor<?x3xf32, #stablehlo.bounds<5, ?>>`) are generated at random from a
menu of ops; at several sizes within the bounds the program is refined by StableHLO's passes and
interpreted, and the parametric maps, instantiated at that size, are checked as above.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("jax")

from verifidx.analysis.computation_maps import computation_indexing  # noqa: E402
from verifidx.hlo.dynamic_dims import instantiate_sizes  # noqa: E402
from verifidx.stablehlo import parse_module  # noqa: E402
from verifidx.stablehlo.bindings import mlir, parse  # noqa: E402
from verifidx.stablehlo.refine import argument_sizes, refine, refined_module  # noqa: E402

Index = tuple[int, ...]
Pairs = set[tuple[Index, Index]]  # (output index, input index)


def _eval(ctx: object, module: object, args: list[np.ndarray]) -> list[np.ndarray]:
    m = mlir()
    with ctx:  # type: ignore[attr-defined]
        attrs = [m["ir"].DenseElementsAttr.get(a) for a in args]
        return [np.array(r) for r in m["stablehlo"].eval_module(module, attrs)]


def observed_reads(ctx: object, module: object, shapes: list[tuple[int, ...]],
                   seed: int = 0) -> dict[tuple[int, int], Pairs]:
    """{(output, argument): pairs} found by changing one input element at a time."""
    rng = np.random.default_rng(seed)
    args = [rng.uniform(0.0, 1.0, size=s).astype(np.float32) for s in shapes]
    base = _eval(ctx, module, args)
    found: dict[tuple[int, int], Pairs] = {}
    for p, a in enumerate(args):
        for idx in np.ndindex(*a.shape):
            changed = [x.copy() for x in args]
            changed[p][idx] += np.float32(0.731)
            outs = _eval(ctx, module, changed)
            for o, (x, y) in enumerate(zip(base, outs)):
                diff = ~np.isclose(x, y, rtol=1e-6, atol=1e-6, equal_nan=True)
                pairs = found.setdefault((o, p), set())
                for out_idx in zip(*np.nonzero(diff)):
                    pairs.add((tuple(int(i) for i in out_idx), tuple(int(i) for i in idx)))
            for o in range(len(base)):
                found.setdefault((o, p), set())
    return found


def map_pairs(maps: list, sizes: dict[str, int] | None = None) -> Pairs | None:
    """The union of the maps' relations (None when a map is unknown)."""
    pairs: Pairs = set()
    for ind in maps:
        if sizes is not None:
            ind = instantiate_sizes(ind, sizes)
        if ind.is_undefined:
            return None
        assert not ind.map.num_rt_vars, str(ind)
        for _rt, d, res in ind.map.relation():
            pairs.add((d, res))
    return pairs


def check(found: dict[tuple[int, int], Pairs], ci: object, sizes: dict[str, int] | None,
          text: str) -> None:
    for (o, p), seen in found.items():
        maps = list(ci.maps_for(o, p))  # type: ignore[attr-defined]
        claimed = map_pairs(maps, sizes)
        assert claimed is not None, f"unknown indexing for output {o} param {p}\n{text}"
        missed = seen - claimed
        assert not missed, f"missed reads {sorted(missed)[:5]} (output {o}, param {p})\n{text}"
        extra = claimed - seen
        assert not extra, f"claimed reads {sorted(extra)[:5]} never seen\n{text}"


# -- per-op programs (static) -----------------------------------------------------------------

STATIC_OPS = {
    "transpose": ("tensor<2x3xf32>", "%0 = stablehlo.transpose %arg0, dims = [1, 0] : "
                  "(tensor<2x3xf32>) -> tensor<3x2xf32>", "tensor<3x2xf32>"),
    "broadcast_in_dim": ("tensor<2x1xf32>", "%0 = stablehlo.broadcast_in_dim %arg0, dims = [1, 2]"
                         " : (tensor<2x1xf32>) -> tensor<3x2x4xf32>", "tensor<3x2x4xf32>"),
    "reverse": ("tensor<3x2xf32>", "%0 = stablehlo.reverse %arg0, dims = [0] : tensor<3x2xf32>",
                "tensor<3x2xf32>"),
    "slice": ("tensor<5x4xf32>", "%0 = stablehlo.slice %arg0 [1:5:2, 0:3] : "
              "(tensor<5x4xf32>) -> tensor<2x3xf32>", "tensor<2x3xf32>"),
    "pad": ("tensor<3x2xf32>", "%c = stablehlo.constant dense<0.0> : tensor<f32>\n"
            "  %0 = stablehlo.pad %arg0, %c, low = [1, -1], high = [0, 2], interior = [1, 0] : "
            "(tensor<3x2xf32>, tensor<f32>) -> tensor<6x3xf32>", "tensor<6x3xf32>"),
    "reshape": ("tensor<2x6xf32>", "%0 = stablehlo.reshape %arg0 : (tensor<2x6xf32>) -> "
                "tensor<3x4xf32>", "tensor<3x4xf32>"),
    "concatenate": ("tensor<2x3xf32>", "%0 = stablehlo.concatenate %arg0, %arg0, dim = 1 : "
                    "(tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>", "tensor<2x6xf32>"),
    "reduce": ("tensor<3x4xf32>", "%c = stablehlo.constant dense<0.0> : tensor<f32>\n"
               "  %0 = stablehlo.reduce(%arg0 init: %c) applies stablehlo.add across "
               "dimensions = [1] : (tensor<3x4xf32>, tensor<f32>) -> tensor<3xf32>",
               "tensor<3xf32>"),
    "dot_general": ("tensor<2x3x4xf32>", "%0 = stablehlo.dot_general %arg0, %arg0, "
                    "batching_dims = [0] x [0], contracting_dims = [2] x [2] : "
                    "(tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x3xf32>",
                    "tensor<2x3x3xf32>"),
    "iota_add": ("tensor<4xf32>", "%i = stablehlo.iota dim = 0 : tensor<4xf32>\n"
                 "  %0 = stablehlo.add %arg0, %i : tensor<4xf32>", "tensor<4xf32>"),
    "select": ("tensor<4xf32>", "%c = stablehlo.constant dense<true> : tensor<i1>\n"
               "  %n = stablehlo.negate %arg0 : tensor<4xf32>\n"
               "  %0 = stablehlo.select %c, %arg0, %n : tensor<i1>, tensor<4xf32>",
               "tensor<4xf32>"),
}


def program(arg: str, body: str, result: str) -> str:
    return (f"func.func @main(%arg0: {arg}) -> {result} {{\n  {body}\n"
            f"  return %0 : {result}\n}}\n")


@pytest.mark.parametrize("name", sorted(STATIC_OPS))
def test_static_op_maps_match_the_interpreter(name: str) -> None:
    arg, body, result = STATIC_OPS[name]
    text = program(arg, body, result)
    ctx, mod = parse(text)
    module = parse_module(text)
    ci = computation_indexing(module, module.entry, "out2in")
    shape = tuple(module.entry.parameters[0].shape.dims)
    check(observed_reads(ctx, mod, [shape]), ci, None, text)


# -- generated dynamic programs ---------------------------------------------------------------


@dataclass
class Value:
    name: str
    dims: list[int | None]  # None: dynamic
    bounds: list[int]


@dataclass
class Gen:
    lines: list[str] = field(default_factory=list)
    n: int = 0

    def fresh(self) -> str:
        self.n += 1
        return f"%v{self.n}"


def ttype(v: Value) -> str:
    dims = "x".join("?" if d is None else str(d) for d in v.dims)
    text = f"tensor<{dims}xf32" if v.dims else "tensor<f32"
    if any(d is None for d in v.dims):
        enc = ", ".join(str(b) if d is None else "?" for d, b in zip(v.dims, v.bounds))
        text += f", #stablehlo.bounds<{enc}>"
    return text + ">"


def _shape_tensor(g: Gen, src: Value, out: Value) -> str:
    """A tensor<rank x i32> holding `out`'s sizes (dynamic ones measured on `src`)."""
    parts = []
    for d in out.dims:
        name = g.fresh()
        if d is None:
            j = src.dims.index(None)
            g.lines.append(f"{name}_s = stablehlo.get_dimension_size {src.name}, dim = {j} : "
                           f"({ttype(src)}) -> tensor<i32>")
            g.lines.append(f"{name} = stablehlo.reshape {name}_s : (tensor<i32>) -> "
                           f"tensor<1xi32>")
        else:
            g.lines.append(f"{name} = stablehlo.constant dense<{d}> : tensor<1xi32>")
        parts.append(name)
    shape = g.fresh()
    types = ", ".join("tensor<1xi32>" for _ in parts)
    g.lines.append(f"{shape} = stablehlo.concatenate {', '.join(parts)}, dim = 0 : ({types}) -> "
                   f"tensor<{len(parts)}xi32>")
    return shape


def apply(g: Gen, v: Value, op: str, a: int, b: int, c: int) -> Value:
    r = g.fresh()
    dyn = v.dims.index(None) if None in v.dims else -1
    static = [k for k, d in enumerate(v.dims) if d is not None]
    if op == "exp":
        g.lines.append(f"{r} = stablehlo.exponential {v.name} : {ttype(v)}")
        return Value(r, list(v.dims), list(v.bounds))
    if op == "add_self":
        g.lines.append(f"{r} = stablehlo.add {v.name}, {v.name} : {ttype(v)}")
        return Value(r, list(v.dims), list(v.bounds))
    if op == "transpose" and len(v.dims) >= 2:
        perm = list(range(len(v.dims)))[::-1]
        out = Value(r, [v.dims[p] for p in perm], [v.bounds[p] for p in perm])
        g.lines.append(f"{r} = stablehlo.transpose {v.name}, dims = {perm} : ({ttype(v)}) -> "
                       f"{ttype(out)}")
        return out
    if op in ("reduce_static", "reduce_dyn") and len(v.dims) >= 2:
        axis = dyn if op == "reduce_dyn" and dyn >= 0 else (static[0] if static else -1)
        if axis < 0:
            return v
        out = Value(r, [d for k, d in enumerate(v.dims) if k != axis],
                    [x for k, x in enumerate(v.bounds) if k != axis])
        zero = g.fresh()
        g.lines.append(f"{zero} = stablehlo.constant dense<0.0> : tensor<f32>")
        g.lines.append(f"{r} = stablehlo.reduce({v.name} init: {zero}) applies stablehlo.add "
                       f"across dimensions = [{axis}] : ({ttype(v)}, tensor<f32>) -> "
                       f"{ttype(out)}")
        return out
    if op == "bcast" and len(v.dims) <= 2:
        out = Value(r, [*v.dims, 2], [*v.bounds, 2])
        dims = list(range(len(v.dims)))
        shape = _shape_tensor(g, v, out)
        g.lines.append(f"{r} = stablehlo.dynamic_broadcast_in_dim {v.name}, {shape}, "
                       f"dims = {dims} : ({ttype(v)}, tensor<{len(out.dims)}xi32>) -> "
                       f"{ttype(out)}")
        return out
    if op == "pad_dyn" and dyn >= 0:
        lo, hi, inner = [0] * len(v.dims), [0] * len(v.dims), [0] * len(v.dims)
        lo[dyn], hi[dyn], inner[dyn] = a % 3, b % 3, c % 2
        bounds = list(v.bounds)
        bounds[dyn] = lo[dyn] + hi[dyn] + v.bounds[dyn] + (v.bounds[dyn] - 1) * inner[dyn]
        out = Value(r, list(v.dims), bounds)
        zero = g.fresh()
        g.lines.append(f"{zero} = stablehlo.constant dense<0.0> : tensor<f32>")
        g.lines.append(f"{r} = stablehlo.pad {v.name}, {zero}, low = {lo}, high = {hi}, "
                       f"interior = {inner} : ({ttype(v)}, tensor<f32>) -> {ttype(out)}")
        return out
    if op == "concat_static" and static:
        axis = static[0]
        dims = list(v.dims)
        dims[axis] = 2 * v.dims[axis]  # type: ignore[operator]
        bounds = list(v.bounds)
        bounds[axis] = 2 * v.bounds[axis]
        out = Value(r, dims, bounds)
        g.lines.append(f"{r} = stablehlo.concatenate {v.name}, {v.name}, dim = {axis} : "
                       f"({ttype(v)}, {ttype(v)}) -> {ttype(out)}")
        return out
    if op == "reverse_dyn" and dyn >= 0:
        g.lines.append(f"{r} = stablehlo.reverse {v.name}, dims = [{dyn}] : {ttype(v)}")
        return Value(r, list(v.dims), list(v.bounds))
    if op == "concat_dyn" and dyn >= 0:
        bounds = list(v.bounds)
        bounds[dyn] = 2 * v.bounds[dyn]
        out = Value(r, list(v.dims), bounds)
        e = g.fresh()
        g.lines.append(f"{e} = stablehlo.exponential {v.name} : {ttype(v)}")
        g.lines.append(f"{r} = stablehlo.concatenate {e}, {v.name}, dim = {dyn} : "
                       f"({ttype(v)}, {ttype(v)}) -> {ttype(out)}")
        return out
    if op == "dyn_add_one":
        shape = _shape_tensor(g, v, v)
        one, bc = g.fresh(), g.fresh()
        g.lines.append(f"{one} = stablehlo.constant dense<1.0> : tensor<f32>")
        g.lines.append(f"{bc} = stablehlo.dynamic_broadcast_in_dim {one}, {shape}, dims = [] : "
                       f"(tensor<f32>, tensor<{len(v.dims)}xi32>) -> {ttype(v)}")
        g.lines.append(f"{r} = stablehlo.add {v.name}, {bc} : {ttype(v)}")
        return Value(r, list(v.dims), list(v.bounds))
    if op == "dyn_iota" and dyn >= 0:
        shape = _shape_tensor(g, v, v)
        it = g.fresh()
        g.lines.append(f"{it} = stablehlo.dynamic_iota {shape}, dim = {dyn} : "
                       f"(tensor<{len(v.dims)}xi32>) -> {ttype(v)}")
        g.lines.append(f"{r} = stablehlo.add {v.name}, {it} : {ttype(v)}")
        return Value(r, list(v.dims), list(v.bounds))
    if op == "update_dyn" and dyn >= 0 and all(d is None or k == dyn
                                                for k, d in enumerate(v.dims)):
        # row 0 along the dynamic dimension replaced by its exponential (start 0: in the clamp
        # at every size, so the map is exact)
        sizes = [1 if d is None else d for d in v.dims]
        piece = f"tensor<{'x'.join(map(str, sizes))}xf32>"
        zero, row, e = g.fresh(), g.fresh(), g.fresh()
        starts = ", ".join([zero] * len(v.dims))
        ints = ", ".join(["tensor<i32>"] * len(v.dims))
        g.lines.append(f"{zero} = stablehlo.constant dense<0> : tensor<i32>")
        g.lines.append(f"{row} = stablehlo.dynamic_slice {v.name}, {starts}, sizes = "
                       f"[{', '.join(map(str, sizes))}] : ({ttype(v)}, {ints}) -> {piece}")
        g.lines.append(f"{e} = stablehlo.exponential {row} : {piece}")
        g.lines.append(f"{r} = stablehlo.dynamic_update_slice {v.name}, {e}, {starts} : "
                       f"({ttype(v)}, {piece}, {ints}) -> {ttype(v)}")
        return Value(r, list(v.dims), list(v.bounds))
    return v


OPS = ["exp", "add_self", "transpose", "reduce_static", "reduce_dyn", "bcast", "pad_dyn",
       "concat_static", "dyn_add_one", "dyn_iota", "reverse_dyn", "concat_dyn", "update_dyn"]


@st.composite
def dynamic_programs(draw: st.DrawFn) -> tuple[str, int, int]:
    bound = draw(st.integers(2, 4))
    k = draw(st.integers(1, 3))
    first = draw(st.booleans())
    dims: list[int | None] = [None, k] if first else [k, None]
    v = Value("%arg0", dims, [bound, k] if first else [k, bound])
    g = Gen()
    arg = ttype(v)
    for _ in range(draw(st.integers(1, 3))):
        v = apply(g, v, draw(st.sampled_from(OPS)), draw(st.integers(0, 5)),
                  draw(st.integers(0, 5)), draw(st.integers(0, 5)))
    if v.name == "%arg0":
        v = apply(g, v, "exp", 0, 0, 0)
    body = "\n  ".join(g.lines)
    text = (f"func.func @main(%arg0: {arg}) -> {ttype(v)} {{\n  {body}\n"
            f"  return {v.name} : {ttype(v)}\n}}\n")
    return text, bound, k if first else -k


@given(dynamic_programs(), st.data())
def test_dynamic_programs_against_the_interpreter(case: tuple[str, int, int],
                                                  data: st.DataObject) -> None:
    text, bound, k = case
    module = parse_module(text)
    ci = computation_indexing(module, module.entry, "out2in")
    for n in sorted({1, bound, data.draw(st.integers(1, bound))}):
        shape = (n, k) if k > 0 else (-k, n)
        types = [f"tensor<{shape[0]}x{shape[1]}xf32>"]
        ctx, refined = refined_module(text, types)
        static = refine(text, types)
        sizes = argument_sizes(module, static)
        assert len(sizes) == 1
        check(observed_reads(ctx, refined, [shape], seed=n), ci, sizes, text)


# -- the dynamic ops --------------------------------------------------------------------------

_DIMS = """%n = stablehlo.get_dimension_size %arg0, dim = 0 : ({t}) -> tensor<i32>
  %n1 = stablehlo.reshape %n : (tensor<i32>) -> tensor<1xi32>"""

DYNAMIC_OPS = {
    # name: (argument type, static columns, body producing %0, result type)
    "real_dynamic_slice": ("tensor<?x3xf32, #stablehlo.bounds<5, ?>>", 3, _DIMS + """
  %c1 = stablehlo.constant dense<[1, 0]> : tensor<2xi32>
  %c3 = stablehlo.constant dense<3> : tensor<1xi32>
  %lim = stablehlo.concatenate %n1, %c3, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
  %st = stablehlo.constant dense<1> : tensor<2xi32>
  %0 = stablehlo.real_dynamic_slice %arg0, %c1, %lim, %st : ({t}, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>) -> tensor<?x3xf32, #stablehlo.bounds<4, ?>>""",
                           "tensor<?x3xf32, #stablehlo.bounds<4, ?>>"),
    # a stride > 1 with a limit that is a size: the output's size is the derived size
    # `(limit - start + stride - 1) floordiv stride` (0 at size 1)
    "real_dynamic_slice_strided": ("tensor<?x3xf32, #stablehlo.bounds<6, ?>>", 3, _DIMS + """
  %c1 = stablehlo.constant dense<[1, 0]> : tensor<2xi32>
  %c3 = stablehlo.constant dense<3> : tensor<1xi32>
  %lim = stablehlo.concatenate %n1, %c3, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
  %st = stablehlo.constant dense<[2, 1]> : tensor<2xi32>
  %0 = stablehlo.real_dynamic_slice %arg0, %c1, %lim, %st : ({t}, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>) -> tensor<?x3xf32, #stablehlo.bounds<3, ?>>""",
                                   "tensor<?x3xf32, #stablehlo.bounds<3, ?>>"),
    "real_dynamic_slice_short": ("tensor<?x3xf32, #stablehlo.bounds<7, ?>>", 3, _DIMS + """
  %one = stablehlo.constant dense<1> : tensor<1xi32>
  %m = stablehlo.subtract %n1, %one : tensor<1xi32>
  %c3 = stablehlo.constant dense<3> : tensor<1xi32>
  %lim = stablehlo.concatenate %m, %c3, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
  %c0 = stablehlo.constant dense<0> : tensor<2xi32>
  %st = stablehlo.constant dense<[3, 1]> : tensor<2xi32>
  %0 = stablehlo.real_dynamic_slice %arg0, %c0, %lim, %st : ({t}, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>) -> tensor<?x3xf32, #stablehlo.bounds<3, ?>>""",
                                 "tensor<?x3xf32, #stablehlo.bounds<3, ?>>"),
    "dynamic_pad": ("tensor<?x2xf32, #stablehlo.bounds<4, ?>>", 2, """%z = stablehlo.constant dense<0.0> : tensor<f32>
  %lo = stablehlo.constant dense<[1, 0]> : tensor<2xi32>
  %hi = stablehlo.constant dense<[2, 1]> : tensor<2xi32>
  %in = stablehlo.constant dense<[1, 0]> : tensor<2xi32>
  %0 = stablehlo.dynamic_pad %arg0, %z, %lo, %hi, %in : ({t}, tensor<f32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>) -> tensor<?x3xf32, #stablehlo.bounds<10, ?>>""",
                    "tensor<?x3xf32, #stablehlo.bounds<10, ?>>"),
    "dynamic_reshape": ("tensor<?x6xf32, #stablehlo.bounds<4, ?>>", 6, _DIMS + """
  %c = stablehlo.constant dense<[2, 3]> : tensor<2xi32>
  %s = stablehlo.concatenate %n1, %c, dim = 0 : (tensor<1xi32>, tensor<2xi32>) -> tensor<3xi32>
  %0 = stablehlo.dynamic_reshape %arg0, %s : ({t}, tensor<3xi32>) -> tensor<?x2x3xf32, #stablehlo.bounds<4, ?, ?>>""",
                        "tensor<?x2x3xf32, #stablehlo.bounds<4, ?, ?>>"),
    "dynamic_iota": ("tensor<?x2xf32, #stablehlo.bounds<4, ?>>", 2, _DIMS + """
  %c = stablehlo.constant dense<2> : tensor<1xi32>
  %s = stablehlo.concatenate %n1, %c, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
  %i = stablehlo.dynamic_iota %s, dim = 0 : (tensor<2xi32>) -> tensor<?x2xf32, #stablehlo.bounds<4, ?>>
  %0 = stablehlo.add %arg0, %i : tensor<?x2xf32, #stablehlo.bounds<4, ?>>""",
                     "tensor<?x2xf32, #stablehlo.bounds<4, ?>>"),
    "dynamic_gather": ("tensor<?x3xf32, #stablehlo.bounds<4, ?>>", 3, """%idx = stablehlo.constant dense<[[0], [1]]> : tensor<2x1xi32>
  %sz = stablehlo.constant dense<[1, 3]> : tensor<2xi32>
  %0 = "stablehlo.dynamic_gather"(%arg0, %idx, %sz) {dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>} : ({t}, tensor<2x1xi32>, tensor<2xi32>) -> tensor<2x3xf32>""",
                       "tensor<2x3xf32>"),
    # one window at constant starts with sizes from the size, as jax lowers `x[1:]` and
    # `x[:, :1]` at a symbolic size: the slice it is
    "dynamic_gather_window": ("tensor<?x3xf32, #stablehlo.bounds<5, ?>>", 3, _DIMS + """
  %one = stablehlo.constant dense<1> : tensor<1xi32>
  %m = stablehlo.subtract %n1, %one : tensor<1xi32>
  %c3 = stablehlo.constant dense<3> : tensor<1xi32>
  %sz = stablehlo.concatenate %m, %c3, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
  %0 = "stablehlo.dynamic_gather"(%arg0, %one, %sz) {dimension_numbers = #stablehlo.gather<offset_dims = [0, 1], start_index_map = [0]>, indices_are_sorted = true} : ({t}, tensor<1xi32>, tensor<2xi32>) -> tensor<?x3xf32, #stablehlo.bounds<4, ?>>""",
                              "tensor<?x3xf32, #stablehlo.bounds<4, ?>>"),
    "dynamic_gather_column": ("tensor<?x3xf32, #stablehlo.bounds<4, ?>>", 3, _DIMS + """
  %two = stablehlo.constant dense<2> : tensor<1xi32>
  %one = stablehlo.constant dense<1> : tensor<1xi32>
  %sz = stablehlo.concatenate %n1, %one, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
  %0 = "stablehlo.dynamic_gather"(%arg0, %two, %sz) {dimension_numbers = #stablehlo.gather<offset_dims = [0, 1], start_index_map = [1]>, indices_are_sorted = true} : ({t}, tensor<1xi32>, tensor<2xi32>) -> tensor<?x1xf32, #stablehlo.bounds<4, ?>>""",
                              "tensor<?x1xf32, #stablehlo.bounds<4, ?>>"),
    "dynamic_slice_clamped": ("tensor<?x3xf32, #stablehlo.bounds<4, ?>>", 3, """%i = stablehlo.constant dense<3> : tensor<i32>
  %c = stablehlo.constant dense<0> : tensor<i32>
  %0 = stablehlo.dynamic_slice %arg0, %i, %c, sizes = [1, 3] : ({t}, tensor<i32>, tensor<i32>) -> tensor<1x3xf32>""",
                              "tensor<1x3xf32>"),
    "dynamic_update_slice_clamped": ("tensor<?x3xf32, #stablehlo.bounds<4, ?>>", 3, """%i = stablehlo.constant dense<3> : tensor<i32>
  %c = stablehlo.constant dense<1> : tensor<i32>
  %u = stablehlo.dynamic_slice %arg0, %c, %c, sizes = [1, 2] : ({t}, tensor<i32>, tensor<i32>) -> tensor<1x2xf32>
  %e = stablehlo.exponential %u : tensor<1x2xf32>
  %0 = stablehlo.dynamic_update_slice %arg0, %e, %i, %c : ({t}, tensor<1x2xf32>, tensor<i32>, tensor<i32>) -> {t}""",
                                     "tensor<?x3xf32, #stablehlo.bounds<4, ?>>"),
    # maps with sizes in their strides, offsets and divisors (verifidx/hlo/sized_ops.py)
    "reverse_dynamic": ("tensor<?x2xf32, #stablehlo.bounds<4, ?>>", 2, """%0 = stablehlo.reverse %arg0, dims = [0, 1] : {t}""", "tensor<?x2xf32, #stablehlo.bounds<4, ?>>"),
    "concatenate_dynamic": ("tensor<?x2xf32, #stablehlo.bounds<3, ?>>", 2, """%e = stablehlo.exponential %arg0 : {t}
  %0 = stablehlo.concatenate %arg0, %e, %arg0, dim = 0 : ({t}, {t}, {t}) -> tensor<?x2xf32, #stablehlo.bounds<9, ?>>""",
                            "tensor<?x2xf32, #stablehlo.bounds<9, ?>>"),
    "reshape_merge": ("tensor<?x3xf32, #stablehlo.bounds<4, ?>>", 3, _DIMS + """
  %c = stablehlo.constant dense<3> : tensor<1xi32>
  %s = stablehlo.multiply %n1, %c : tensor<1xi32>
  %0 = stablehlo.dynamic_reshape %arg0, %s : ({t}, tensor<1xi32>) -> tensor<?xf32, #stablehlo.bounds<12>>""",
                      "tensor<?xf32, #stablehlo.bounds<12>>"),
    "reshape_regroup": ("tensor<?x2xf32, #stablehlo.bounds<4, ?>>", 2, _DIMS + """
  %c = stablehlo.constant dense<2> : tensor<1xi32>
  %s = stablehlo.concatenate %c, %n1, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
  %0 = stablehlo.dynamic_reshape %arg0, %s : ({t}, tensor<2xi32>) -> tensor<2x?xf32, #stablehlo.bounds<?, 4>>""",
                        "tensor<2x?xf32, #stablehlo.bounds<?, 4>>"),
}


def dynamic_program(name: str) -> tuple[str, int]:
    arg, cols, body, result = DYNAMIC_OPS[name]
    text = (f"func.func @main(%arg0: {arg}) -> {result} {{\n  {body.replace('{t}', arg)}\n"
            f"  return %0 : {result}\n}}\n")
    return text, cols


@pytest.mark.parametrize("name", sorted(DYNAMIC_OPS))
def test_dynamic_ops_against_the_interpreter(name: str) -> None:
    text, cols = dynamic_program(name)
    module = parse_module(text)
    ci = computation_indexing(module, module.entry, "out2in")
    bound = module.entry.parameters[0].shape.dims[0]
    for n in range(1, bound + 1):
        types = [f"tensor<{n}x{cols}xf32>"]
        ctx, refined = refined_module(text, types)
        sizes = argument_sizes(module, refine(text, types))
        found = observed_reads(ctx, refined, [(n, cols)], seed=n)
        if name in ("dynamic_gather", "dynamic_slice_clamped", "dynamic_update_slice_clamped"):
            # the start indices (constants, not folded: 3 is clamped to n - 1 at n <= 3) stay runtime variables, clamped
            # to [0, n - 1]: every element they may read is claimed, so none is missed
            for (o, p), seen in found.items():
                claimed = set()
                for ind in ci.maps_for(o, p):
                    fixed = instantiate_sizes(ind, sizes).map
                    assert not fixed.is_undefined and not fixed.sizes, str(fixed)
                    claimed |= {(d, r) for _rt, d, r in fixed.relation()}
                assert seen and not (seen - claimed), text
            continue
        check(found, ci, sizes, text)


def test_dynamic_conv_is_unknown_not_wrong() -> None:
    text = """
func.func @main(%x: tensor<1x?x1xf32, #stablehlo.bounds<?, 8, ?>>, %w: tensor<3x1x1xf32>) -> tensor<1x?x1xf32, #stablehlo.bounds<?, 8, ?>> {
  %pad = stablehlo.constant dense<[[1, 1]]> : tensor<1x2xi32>
  %0 = "stablehlo.dynamic_conv"(%x, %w, %pad) {batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<[b, 0, f]x[0, i, o]->[b, 0, f]>, feature_group_count = 1 : i64} : (tensor<1x?x1xf32, #stablehlo.bounds<?, 8, ?>>, tensor<3x1x1xf32>, tensor<1x2xi32>) -> tensor<1x?x1xf32, #stablehlo.bounds<?, 8, ?>>
  return %0 : tensor<1x?x1xf32, #stablehlo.bounds<?, 8, ?>>
}
"""
    module = parse_module(text)
    ci = computation_indexing(module, module.entry, "out2in")
    assert all(m.is_undefined for ms in ci.maps.values() for m in ms)
    assert any("dynamic-conv" in n or "dynamic_conv" in n for n in ci.notes)
