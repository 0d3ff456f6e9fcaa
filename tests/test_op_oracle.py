"""Semantic oracle for the per-op maps, written independently of `verifidx.hlo.indexing`.

For each op kind, hypothesis draws small shapes (dims 1-5) and attributes, writes the HLO text,
and evaluates the op's meaning here: data-movement ops run in numpy on index-tagged inputs (each
element of each operand carries a unique integer, so the output says which element it copied);
reductions, windows and contractions are plain loops that collect the contributing elements.
That gives, for every output index, the exact set of operand elements read.

The maps must contain that set (soundness) for every op, and equal it except in the documented
over-approximations (`indexing.OVER_APPROXIMATIONS`; listed per test as `approx`). A map with
runtime variables is evaluated with each variable fixed to the value the op really uses: the
element its provenance map names in the runtime data, clamped to the variable's bounds. So the
provenance maps are checked too. Input-to-output maps are checked against the inverse relation.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from verifidx.core.indexing_map import IndexingMap
from verifidx.hlo import parse_hlo
from verifidx.hlo.indexing import input_to_output, output_to_input
from verifidx.hlo.ops.common import exact_reads
from verifidx.hlo.runtime import OperandIndexing

Index = tuple[int, ...]
Reads = dict[int, set[Index]]  # operand -> indices read

# -- HLO text ----------------------------------------------------------------------------------


def shp(dims: Sequence[int], ty: str = "f32", layout: Sequence[int] | None = None) -> str:
    text = f"{ty}[{','.join(map(str, dims))}]"
    if layout is not None:
        text += "{" + ",".join(map(str, layout)) + "}"
    return text


def hlo(params: Sequence[str], root: str, extra: str = "", computations: str = "") -> str:
    lines = [f"  p{i} = {s} parameter({i})" for i, s in enumerate(params)]
    return (f"HloModule m\n{computations}\nENTRY e {{\n" + "\n".join(lines) + "\n" + extra
            + f"  ROOT r = {root}\n}}\n")


ADD = "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = f32[] add(a, b)\n}\n"


def ints(xs: Iterable[int]) -> str:
    return ",".join(map(str, xs))


# -- tagging -----------------------------------------------------------------------------------


class Tags:
    """Unique integer ids for every element of every operand."""

    def __init__(self, shapes: Sequence[Sequence[int]]) -> None:
        self.arrays: list[np.ndarray] = []
        self.owner: dict[int, tuple[int, Index]] = {}
        base = 0
        for j, dims in enumerate(shapes):
            arr = np.arange(base, base + int(np.prod(dims, dtype=np.int64))).reshape(tuple(dims))
            for idx in np.ndindex(*dims):
                self.owner[int(arr[idx])] = (j, tuple(int(i) for i in idx))
            self.arrays.append(arr)
            base += arr.size

    def decode(self, tag: int) -> Reads:
        j, idx = self.owner[int(tag)]
        return {j: {idx}}


def merge(*parts: Reads) -> Reads:
    out: Reads = {}
    for p in parts:
        for j, s in p.items():
            out.setdefault(j, set()).update(s)
    return out


# -- evaluating maps ---------------------------------------------------------------------------


def rt_values(m: OperandIndexing, d: Index, data: dict[str, Any]) -> list[int]:
    """Each runtime variable's actual value: the provenance element, clamped to its bounds."""
    out = []
    for k, rv in enumerate(m.runtime):
        assert rv.map.num_range_vars == 0 and rv.map.num_rt_vars == 0
        where = rv.map.evaluate(list(d), [])
        raw = int(np.asarray(data[rv.source.name])[tuple(where)])
        b = m.map.rt_vars[k].bounds
        out.append(min(max(raw, b.lo), b.hi))
    return out


def image(m: IndexingMap, d: Index, rts: Sequence[int]) -> set[Index]:
    """{ f(d, s, rt) : s in range, constraints hold } for one point d (empty outside)."""
    if m.is_known_empty:
        return set()
    assert not m.is_undefined
    if any(x not in v.bounds for x, v in zip(d, m.dims)):
        return set()
    if any(x not in v.bounds for x, v in zip(rts, m.rt_vars)):
        return set()
    out: set[Index] = set()
    for s in itertools.product(*(range(v.bounds.lo, v.bounds.hi + 1) for v in m.range_vars)):
        syms = [*s, *rts]
        if m.constraints_satisfied(list(d), syms):
            out.add(m.evaluate(list(d), syms))
    return out


def images(maps: Sequence[OperandIndexing], d: Index, data: dict[str, Any]) -> set[Index]:
    out: set[Index] = set()
    for m in maps:
        out |= image(m.map, d, rt_values(m, d, data))
    return out


def check(
    text: str,
    reads: Callable[[int, Index], Reads],
    *,
    data: dict[str, Any] | None = None,
    approx_o2i: Iterable[int] = (),
    approx_i2o: Iterable[int] = (),
    i2o: bool = True,
    in_bounds_only: Iterable[int] = (),
) -> None:
    """Compare maps of the root `r` with `reads(output leaf, output index)`.

    Operands in `approx_*` may be mapped to more elements than are read (never fewer);
    `in_bounds_only` operands are compared after dropping out-of-range indices."""
    data = data or {}
    module = parse_hlo(text)
    comp = module.entry
    inst = comp.instruction("r")
    leaves = [leaf.dims for leaf in inst.shape.leaves()]
    operand_dims = [comp.instruction(n).shape.dims for n in inst.operands]
    approx_o2i, approx_i2o, clip = set(approx_o2i), set(approx_i2o), set(in_bounds_only)
    truth: dict[tuple[int, Index], Reads] = {}
    for leaf, dims in enumerate(leaves):
        ind = output_to_input(inst, module, leaf)
        assert not ind.notes or all("folded" in n for n in ind.notes), ind.notes
        for d in np.ndindex(*dims):
            d = tuple(int(x) for x in d)
            want_all = truth[(leaf, d)] = reads(leaf, d)
            for j, odims in enumerate(operand_dims):
                got = images(ind.maps[j], d, data)
                if j in clip:
                    got = {x for x in got if all(0 <= a < n for a, n in zip(x, odims))}
                want = want_all.get(j, set())
                assert want <= got, f"output {leaf} {d}: operand {j} misses {want - got}"
                if j not in approx_o2i:
                    assert got == want, f"output {leaf} {d}: operand {j} extra {got - want}"
    if not i2o:
        return
    for j, odims in enumerate(operand_dims):
        ind = input_to_output(inst, module, j)
        for x in np.ndindex(*odims):
            x = tuple(int(a) for a in x)
            for leaf, dims in enumerate(leaves):
                want = {d for d in np.ndindex(*dims) if x in truth[(leaf, tuple(int(a) for a in d))]
                        .get(j, set())}
                want = {tuple(int(a) for a in d) for d in want}
                got = images(ind.maps[leaf], x, data)
                got = {d for d in got if all(0 <= a < n for a, n in zip(d, dims))} \
                    if j in clip else got
                assert want <= got, f"input {j} {x} -> output {leaf}: misses {want - got}"
                if j not in approx_i2o:
                    assert got == want, f"input {j} {x} -> output {leaf}: extra {got - want}"


dim = st.integers(1, 4)
shape = st.lists(dim, min_size=1, max_size=3)

# -- elementwise -------------------------------------------------------------------------------


@given(shape, st.booleans(), st.booleans(), st.sampled_from(["select", "clamp", "add"]))
def test_elementwise(dims: list[int], scalar_a: bool, scalar_c: bool, op: str) -> None:
    if op == "add":
        params = [shp(dims), shp(dims)]
        root = f"{shp(dims)} add(p0, p1)"
        scalars: set[int] = set()
    elif op == "select":
        params = [shp([] if scalar_a else dims, "pred"), shp(dims), shp(dims)]
        root = f"{shp(dims)} select(p0, p1, p2)"
        scalars = {0} if scalar_a else set()
    else:
        params = [shp([] if scalar_a else dims), shp(dims), shp([] if scalar_c else dims)]
        root = f"{shp(dims)} clamp(p0, p1, p2)"
        scalars = {j for j, s in ((0, scalar_a), (2, scalar_c)) if s}
    n = len(params)
    check(hlo(params, root), lambda _l, d: {j: {() if j in scalars else d} for j in range(n)})


@given(shape, st.sampled_from(["copy", "convert", "reduce-precision", "map", "collective-permute",
                               "all-reduce", "all-reduce-variadic", "rng", "tuple"]))
def test_other_elementwise_like_ops(dims: list[int], op: str) -> None:
    """Ops that read the same index of their operands (or scalars, for rng); tuple routes
    each operand to its own output."""
    params = [shp(dims), shp(dims)]
    scalars: set[int] = set()
    pairwise = False
    if op == "copy":
        root = f"{shp(dims)} copy(p0)"
    elif op == "convert":
        root = f"{shp(dims, 's32')} convert(p0)"
    elif op == "reduce-precision":
        root = f"{shp(dims)} reduce-precision(p0), exponent_bits=5, mantissa_bits=10"
    elif op == "map":
        root = f"{shp(dims)} map(p0, p1), dimensions={{{ints(range(len(dims)))}}}, to_apply=add"
    elif op == "collective-permute":
        root = f"{shp(dims)} collective-permute(p0), source_target_pairs={{{{0,1}},{{1,0}}}}"
    elif op == "all-reduce":
        root = f"{shp(dims)} all-reduce(p0), replica_groups={{}}, to_apply=add"
    elif op == "all-reduce-variadic":
        root = f"({shp(dims)}, {shp(dims)}) all-reduce(p0, p1), to_apply=add"
        pairwise = True
    elif op == "rng":
        params = [shp([]), shp([])]
        root = f"{shp(dims)} rng(p0, p1), distribution=rng_uniform"
        scalars = {0, 1}
    else:
        root = f"({shp(dims)}, {shp(dims)}) tuple(p0, p1)"
        pairwise = True
    used = 1 if op in ("copy", "convert", "reduce-precision", "collective-permute",
                       "all-reduce") else 2

    def reads(leaf: int, d: Index) -> Reads:
        if pairwise:
            return {leaf: {d}}
        return {j: {() if j in scalars else d} for j in range(used)}

    text = hlo(params[:used], root, computations=ADD)
    check(text, reads)


def test_get_tuple_element() -> None:
    text = hlo([shp([2, 3]), shp([4])], f"{shp([4])} get-tuple-element(t), index=1",
               extra=f"  t = ({shp([2, 3])}, {shp([4])}) tuple(p0, p1)\n")
    module = parse_hlo(text)
    (m,) = output_to_input("r", module, 0).maps[0]
    assert {x for d in range(4) for x in image(m.map, (d,), [])} == {(d,) for d in range(4)}
    assert all(image(m.map, (d,), []) == {(d,)} for d in range(4))
    (back,) = input_to_output("r", module, 0).maps[0]
    assert all(image(back.map, (d,), []) == {(d,)} for d in range(4))


# -- data movement, evaluated in numpy ---------------------------------------------------------


def numpy_check(text: str, shapes: Sequence[Sequence[int]],
                evaluate: Callable[[list[np.ndarray]], np.ndarray], **kw: Any) -> None:
    tags = Tags(shapes)
    out = evaluate(tags.arrays)
    check(text, lambda _l, d: tags.decode(out[d]), **kw)


@st.composite
def broadcasts(draw: st.DrawFn) -> tuple[list[int], list[int], list[int]]:
    out = draw(st.lists(dim, min_size=1, max_size=3))
    k = draw(st.integers(0, len(out)))
    dims = draw(st.permutations(range(len(out))))[:k]
    return [out[d] for d in dims], out, list(dims)


@given(broadcasts())
def test_broadcast(case: tuple[list[int], list[int], list[int]]) -> None:
    src, out, dims = case

    def evaluate(a: list[np.ndarray]) -> np.ndarray:
        res = np.empty(out, dtype=np.int64)
        for d in np.ndindex(*out):
            res[d] = a[0][tuple(d[k] for k in dims)]
        return res

    text = hlo([shp(src)], f"{shp(out)} broadcast(p0), dimensions={{{ints(dims)}}}")
    numpy_check(text, [src], evaluate)


@given(shape, st.data())
def test_transpose(src: list[int], data: st.DataObject) -> None:
    perm = data.draw(st.permutations(range(len(src))))
    out = [src[p] for p in perm]
    text = hlo([shp(src)], f"{shp(out)} transpose(p0), dimensions={{{ints(perm)}}}")
    numpy_check(text, [src], lambda a: np.transpose(a[0], perm))


@given(shape, st.data())
def test_reverse(src: list[int], data: st.DataObject) -> None:
    dims = sorted(data.draw(st.sets(st.integers(0, len(src) - 1))))
    text = hlo([shp(src)], f"{shp(src)} reverse(p0), dimensions={{{ints(dims)}}}")
    numpy_check(text, [src], lambda a: np.flip(a[0], axis=tuple(dims)) if dims else a[0])


@st.composite
def slices(draw: st.DrawFn) -> tuple[list[int], list[tuple[int, int, int]]]:
    src = draw(st.lists(st.integers(1, 6), min_size=1, max_size=3))
    spec = []
    for n in src:
        start = draw(st.integers(0, n - 1))
        limit = draw(st.integers(start + 1, n))
        spec.append((start, limit, draw(st.integers(1, 3))))
    return src, spec


@given(slices())
def test_slice(case: tuple[list[int], list[tuple[int, int, int]]]) -> None:
    src, spec = case
    out = [len(range(a, b, c)) for a, b, c in spec]
    text = hlo([shp(src)], f"{shp(out)} slice(p0), slice={{"
               + ", ".join(f"[{a}:{b}:{c}]" for a, b, c in spec) + "}")
    numpy_check(text, [src], lambda a: a[0][tuple(slice(x, y, z) for x, y, z in spec)])


def numpy_pad(x: np.ndarray, value: int, cfg: Sequence[tuple[int, int, int]]) -> np.ndarray:
    """XLA pad: interior padding, then edge padding (negative edges cut)."""
    for axis, (lo, hi, interior) in enumerate(cfg):
        n = x.shape[axis]
        size = n + max(0, n - 1) * interior
        shape = list(x.shape)
        shape[axis] = size
        y = np.full(shape, value, dtype=np.int64)
        idx = [slice(None)] * x.ndim
        idx[axis] = slice(0, size, interior + 1)
        y[tuple(idx)] = x
        before = [(0, 0)] * x.ndim
        before[axis] = (max(lo, 0), max(hi, 0))
        y = np.pad(y, before, constant_values=value)
        cut = [slice(None)] * x.ndim
        cut[axis] = slice(max(-lo, 0), y.shape[axis] - max(-hi, 0))
        x = y[tuple(cut)]
    return x


@st.composite
def pads(draw: st.DrawFn) -> tuple[list[int], list[tuple[int, int, int]], list[int]]:
    src = draw(st.lists(dim, min_size=1, max_size=2))
    cfg, out = [], []
    for n in src:
        interior = draw(st.integers(0, 2))
        inner = n + (n - 1) * interior
        lo = draw(st.integers(-inner + 1, 3))
        hi = draw(st.integers(-(inner + lo) + 1, 3))
        cfg.append((lo, hi, interior))
        out.append(inner + lo + hi)
    return src, cfg, out


@given(pads())
def test_pad(case: tuple[list[int], list[tuple[int, int, int]], list[int]]) -> None:
    src, cfg, out = case
    padding = "x".join(f"{lo}_{hi}_{i}" for lo, hi, i in cfg)
    text = hlo([shp(src), shp([])], f"{shp(out)} pad(p0, p1), padding={padding}")
    numpy_check(text, [src, []], lambda a: numpy_pad(a[0], int(a[1]), cfg), approx_o2i=[1],
                approx_i2o=[1])


@given(st.lists(st.lists(dim, min_size=2, max_size=2), min_size=1, max_size=3),
       st.integers(0, 1))
def test_concatenate(shapes: list[list[int]], axis: int) -> None:
    other = shapes[0][1 - axis]
    srcs = [[s[0], other] if axis == 0 else [other, s[1]] for s in shapes]
    out = list(srcs[0])
    out[axis] = sum(s[axis] for s in srcs)
    names = ", ".join(f"p{i}" for i in range(len(srcs)))
    text = hlo([shp(s) for s in srcs], f"{shp(out)} concatenate({names}), dimensions={{{axis}}}")
    numpy_check(text, srcs, lambda a: np.concatenate(a, axis=axis))


@st.composite
def reshapes(draw: st.DrawFn) -> tuple[list[int], list[int]]:
    factors = draw(st.lists(st.sampled_from([1, 2, 3, 2, 4]), min_size=1, max_size=4))

    def split(fs: list[int]) -> list[int]:
        fs = list(draw(st.permutations(fs))) if draw(st.booleans()) else list(fs)
        out: list[int] = []
        for f in fs:
            if out and draw(st.booleans()):
                out[-1] *= f
            else:
                out.append(f)
        return out

    return split(factors), split(factors)


@given(reshapes())
def test_reshape(case: tuple[list[int], list[int]]) -> None:
    src, out = case
    text = hlo([shp(src)], f"{shp(out)} reshape(p0)")
    numpy_check(text, [src], lambda a: a[0].reshape(out))


def physical(dims: Sequence[int], layout: Sequence[int]) -> list[int]:
    return [dims[k] for k in reversed(layout)]


@given(reshapes(), st.data())
def test_bitcast(case: tuple[list[int], list[int]], data: st.DataObject) -> None:
    src_phys, out_phys = case
    src_layout = data.draw(st.permutations(range(len(src_phys))))
    out_layout = data.draw(st.permutations(range(len(out_phys))))
    # logical dims such that the physical (major-to-minor) shapes are src_phys / out_phys
    src = [0] * len(src_phys)
    for pos, k in enumerate(reversed(src_layout)):
        src[k] = src_phys[pos]
    out = [0] * len(out_phys)
    for pos, k in enumerate(reversed(out_layout)):
        out[k] = out_phys[pos]

    def evaluate(a: list[np.ndarray]) -> np.ndarray:
        flat = np.transpose(a[0], list(reversed(src_layout))).reshape(-1)
        phys = flat.reshape(out_phys)
        return np.transpose(phys, np.argsort(list(reversed(out_layout))))

    text = hlo([shp(src, layout=src_layout)], f"{shp(out, layout=out_layout)} bitcast(p0)")
    numpy_check(text, [src], evaluate)


@given(shape, st.lists(st.integers(-3, 6), min_size=3, max_size=3), st.data(), st.booleans())
def test_dynamic_slice(src: list[int], starts: list[int], data: st.DataObject,
                       constant: bool) -> None:
    sizes = [data.draw(st.integers(1, n)) for n in src]
    rank = len(src)
    starts = starts[:rank]
    clamped = [min(max(s, 0), n - z) for s, n, z in zip(starts, src, sizes)]
    if constant:  # constant start indices are folded (clamped)
        extra = "".join(f"  c{k} = s32[] constant({s})\n" for k, s in enumerate(starts))
        offs = ", ".join(f"c{k}" for k in range(rank))
        params = [shp(src)]
    else:
        extra = ""
        offs = ", ".join(f"p{k + 1}" for k in range(rank))
        params = [shp(src)] + [shp([], "s32")] * rank
    text = hlo(params, f"{shp(sizes)} dynamic-slice(p0, {offs}), "
               f"dynamic_slice_sizes={{{ints(sizes)}}}", extra)
    runtime = {f"p{k + 1}": np.array(s) for k, s in enumerate(starts)}
    tags = Tags([src])
    window = tags.arrays[0][tuple(slice(c, c + z) for c, z in zip(clamped, sizes))]

    def reads(_leaf: int, d: Index) -> Reads:  # the start index operands are read too
        return merge(tags.decode(window[d]), {k + 1: {()} for k in range(rank)})

    check(text, reads, data=runtime)
    if constant:
        ind = output_to_input("r", parse_hlo(text), 0)
        assert ind.maps[0][0].map.num_rt_vars == 0


@given(shape, st.data())
def test_dynamic_update_slice(out: list[int], data: st.DataObject) -> None:
    rank = len(out)
    upd = [data.draw(st.integers(1, n)) for n in out]
    starts = [data.draw(st.integers(-2, n + 1)) for n in out]
    clamped = [min(max(s, 0), n - u) for s, n, u in zip(starts, out, upd)]
    offs = ", ".join(f"p{k + 2}" for k in range(rank))
    text = hlo([shp(out), shp(upd)] + [shp([], "s32")] * rank,
               f"{shp(out)} dynamic-update-slice(p0, p1, {offs})")
    tags = Tags([out, upd])
    res = tags.arrays[0].copy()
    res[tuple(slice(c, c + u) for c, u in zip(clamped, upd))] = tags.arrays[1]

    def reads(_leaf: int, d: Index) -> Reads:
        return merge(tags.decode(res[d]), {k + 2: {()} for k in range(rank)})

    runtime = {f"p{k + 2}": np.array(s) for k, s in enumerate(starts)}
    check(text, reads, data=runtime, approx_o2i=[0], approx_i2o=[0], in_bounds_only=[1])
    # translation validation's maps (`exact_reads`): each output element reads exactly the
    # element it copies, the operand's outside the window and the update's inside
    with exact_reads():
        check(text, reads, data=runtime, i2o=False)


# -- gather and scatter with any dimension numbers ---------------------------------------------


@st.composite
def gathers(draw: st.DrawFn) -> dict[str, Any]:
    rank = draw(st.integers(1, 3))
    operand = draw(st.lists(dim, min_size=rank, max_size=rank))
    dims = list(range(rank))
    nbatching = draw(st.integers(0, min(1, rank)))
    obatch = draw(st.permutations(dims))[:nbatching]
    rest = [d for d in dims if d not in obatch]
    sim = list(draw(st.permutations(rest)))[: draw(st.integers(0, len(rest)))]
    collapsed = sorted(d for d in rest if draw(st.booleans()))
    sizes = [1 if d in obatch or d in collapsed else draw(st.integers(1, operand[d]))
             for d in dims]
    nbatch_idx = draw(st.integers(0, 2 - nbatching)) + nbatching
    index_batch_sizes = [draw(st.integers(1, 3)) for _ in range(nbatch_idx)]
    implicit = len(sim) == 1 and draw(st.booleans())
    ivd = nbatch_idx if implicit else draw(st.integers(0, nbatch_idx))
    indices = list(index_batch_sizes)
    if not implicit:
        indices.insert(ivd, len(sim))
    index_batch = [d for d in range(len(indices)) if implicit or d != ivd]
    ibatch = list(draw(st.permutations(index_batch)))[:nbatching]
    for o, t in zip(obatch, ibatch):
        indices[t] = operand[o]
    window = [d for d in dims if d not in collapsed and d not in obatch]
    out_rank = len(window) + len(index_batch)
    offset_dims = sorted(draw(st.permutations(range(out_rank)))[: len(window)])
    batch_out = [d for d in range(out_rank) if d not in offset_dims]
    out = [0] * out_rank
    for o, w in zip(offset_dims, window):
        out[o] = sizes[w]
    for o, t in zip(batch_out, index_batch):
        out[o] = indices[t]
    values = draw(st.lists(st.integers(-2, 6), min_size=int(np.prod(indices)),
                           max_size=int(np.prod(indices))))
    return dict(operand=operand, indices=indices, sizes=sizes, sim=sim, collapsed=collapsed,
                obatch=obatch, ibatch=ibatch, ivd=ivd, offset_dims=offset_dims, out=out,
                window=window, batch_out=batch_out, index_batch=index_batch,
                values=np.array(values, dtype=np.int64).reshape(indices))


def gather_reads(g: dict[str, Any], d: Index) -> Reads:
    """XLA's gather semantics, literally."""
    batch = [d[o] for o in g["batch_out"]]
    vec = []
    for k in range(len(g["sim"])):
        pos = list(batch)
        if g["ivd"] < len(g["indices"]):
            pos.insert(g["ivd"], k)
        vec.append(tuple(pos))
    start = [0] * len(g["operand"])
    for k, dd in enumerate(g["sim"]):
        start[dd] = int(g["values"][vec[k]])
    start = [min(max(s, 0), n - z) for s, n, z in zip(start, g["operand"], g["sizes"])]
    full = [0] * len(g["operand"])
    for o, w in zip(g["offset_dims"], g["window"]):
        full[w] = d[o]
    for od, t in zip(g["obatch"], g["ibatch"]):
        full[od] = batch[g["index_batch"].index(t)]
    index = tuple(s + f for s, f in zip(start, full))
    reads: Reads = {0: {index}}
    if vec:
        reads[1] = set(vec)
    return reads


@given(gathers())
def test_gather(g: dict[str, Any]) -> None:
    assume(all(n > 0 for n in g["out"]))
    attrs = (f"offset_dims={{{ints(g['offset_dims'])}}}, "
             f"collapsed_slice_dims={{{ints(g['collapsed'])}}}, "
             f"start_index_map={{{ints(g['sim'])}}}, index_vector_dim={g['ivd']}, "
             f"slice_sizes={{{ints(g['sizes'])}}}")
    if g["obatch"]:
        attrs += (f", operand_batching_dims={{{ints(g['obatch'])}}}, "
                  f"start_indices_batching_dims={{{ints(g['ibatch'])}}}")
    text = hlo([shp(g["operand"]), shp(g["indices"], "s32")],
               f"{shp(g['out'])} gather(p0, p1), {attrs}")
    check(text, lambda _l, d: gather_reads(g, d), data={"p1": g["values"]}, approx_i2o=[0])


@st.composite
def scatters(draw: st.DrawFn) -> dict[str, Any]:
    g = draw(gathers())  # the same dimension structure, read as a scatter
    return g


@given(scatters())
def test_scatter(g: dict[str, Any]) -> None:
    assume(all(n > 0 for n in g["out"]))
    updates = g["out"]
    window_sizes = {w: g["sizes"][w] for w in g["window"]}
    attrs = (f"update_window_dims={{{ints(g['offset_dims'])}}}, "
             f"inserted_window_dims={{{ints(g['collapsed'])}}}, "
             f"scatter_dims_to_operand_dims={{{ints(g['sim'])}}}, index_vector_dim={g['ivd']}")
    if g["obatch"]:
        attrs += (f", input_batching_dims={{{ints(g['obatch'])}}}, "
                  f"scatter_indices_batching_dims={{{ints(g['ibatch'])}}}")
    text = hlo([shp(g["operand"]), shp(g["indices"], "s32"), shp(updates)],
               f"{shp(g['operand'])} scatter(p0, p1, p2), {attrs}, to_apply=add",
               computations=ADD)
    # Scatter semantics: each update window lands at its start index; windows that do not fit
    # in the operand are skipped (no clamping).
    landed: dict[Index, set[Index]] = {}
    for u in np.ndindex(*updates):
        batch = [u[o] for o in g["batch_out"]]
        start = [0] * len(g["operand"])
        for k, dd in enumerate(g["sim"]):
            pos = list(batch)
            if g["ivd"] < len(g["indices"]):
                pos.insert(g["ivd"], k)
            start[dd] = int(g["values"][tuple(pos)])
        for od, t in zip(g["obatch"], g["ibatch"]):
            start[od] = batch[g["index_batch"].index(t)]
        size = [window_sizes.get(dd, 1) for dd in range(len(g["operand"]))]
        if any(s < 0 or s + z > n for s, z, n in zip(start, size, g["operand"])):
            continue
        full = list(start)
        for o, w in zip(g["offset_dims"], g["window"]):
            full[w] += u[o]
        landed.setdefault(tuple(full), set()).add(tuple(int(x) for x in u))
    all_indices = {tuple(int(x) for x in i) for i in np.ndindex(*g["indices"])}

    def reads(_leaf: int, d: Index) -> Reads:
        return {0: {d}, 1: set(all_indices), 2: landed.get(d, set())}

    check(text, reads, data={"p1": g["values"]}, approx_o2i=[2], approx_i2o=[2])


# -- reductions, windows, contractions ---------------------------------------------------------


@given(shape, st.data(), st.integers(1, 2))
def test_reduce(src: list[int], data: st.DataObject, n: int) -> None:
    red = sorted(data.draw(st.sets(st.integers(0, len(src) - 1))))
    out = [x for k, x in enumerate(src) if k not in red]
    ins = ", ".join(f"p{i}" for i in range(n))
    inits = ", ".join(f"p{n + i}" for i in range(n))
    out_shape = shp(out) if n == 1 else "(" + ", ".join([shp(out)] * n) + ")"
    comp = ADD if n == 1 else (
        "add {\n  a0 = f32[] parameter(0)\n  a1 = f32[] parameter(1)\n  b0 = f32[] parameter(2)\n"
        "  b1 = f32[] parameter(3)\n  s0 = f32[] add(a0, b0)\n  s1 = f32[] add(a1, b1)\n"
        "  ROOT t = (f32[], f32[]) tuple(s0, s1)\n}\n")
    text = hlo([shp(src)] * n + [shp([])] * n,
               f"{out_shape} reduce({ins}, {inits}), dimensions={{{ints(red)}}}, to_apply=add",
               computations=comp)

    def reads(_leaf: int, d: Index) -> Reads:
        hit = set()
        for x in np.ndindex(*src):
            if tuple(x[k] for k in range(len(src)) if k not in red) == d:
                hit.add(tuple(int(a) for a in x))
        return {**{i: set(hit) for i in range(n)}, **{n + i: {()} for i in range(n)}}

    check(text, reads)


def window_reads(o: int, in_size: int, size: int, stride: int, lo: int, ldil: int, rdil: int
                 ) -> list[tuple[int, int]]:
    """(window position, input index) pairs that fall on real input elements."""
    out = []
    for k in range(size):
        p = o * stride + k * rdil - lo
        if p % ldil == 0 and 0 <= p // ldil < in_size:
            out.append((k, p // ldil))
    return out


@st.composite
def windows(draw: st.DrawFn, rank: int) -> list[tuple[int, ...]]:
    """(in_size, size, stride, pad_lo, pad_hi, lhs_dilate, rhs_dilate, out_size) per dim."""
    spec = []
    for _ in range(rank):
        n = draw(st.integers(1, 4))
        size = draw(st.integers(1, 3))
        stride = draw(st.integers(1, 2))
        lo, hi = draw(st.integers(0, 2)), draw(st.integers(0, 2))
        ldil, rdil = draw(st.integers(1, 2)), draw(st.integers(1, 2))
        padded = (n - 1) * ldil + 1 + lo + hi
        span = (size - 1) * rdil + 1
        assume(padded >= span)
        spec.append((n, size, stride, lo, hi, ldil, rdil, (padded - span) // stride + 1))
    return spec


def window_attr(spec: Sequence[tuple[int, ...]], reversal: Sequence[bool] = ()) -> str:
    text = "size=" + "x".join(str(s[1]) for s in spec)
    text += " stride=" + "x".join(str(s[2]) for s in spec)
    text += " pad=" + "x".join(f"{s[3]}_{s[4]}" for s in spec)
    text += " lhs_dilate=" + "x".join(str(s[5]) for s in spec)
    text += " rhs_dilate=" + "x".join(str(s[6]) for s in spec)
    if any(reversal):
        text += " rhs_reversal=" + "x".join("1" if r else "0" for r in reversal)
    return "{" + text + "}"


@given(st.integers(1, 2).flatmap(windows))
def test_reduce_window(spec: list[tuple[int, ...]]) -> None:
    src = [s[0] for s in spec]
    out = [s[7] for s in spec]
    text = hlo([shp(src), shp([])], f"{shp(out)} reduce-window(p0, p1), "
               f"window={window_attr(spec)}, to_apply=add", computations=ADD)

    def reads(_leaf: int, d: Index) -> Reads:
        per_dim = [[x for _k, x in window_reads(d[i], *(s[0], s[1], s[2], s[3], s[5], s[6]))]
                   for i, s in enumerate(spec)]
        return {0: set(itertools.product(*per_dim)), 1: {()}}

    check(text, reads)


@st.composite
def dots(draw: st.DrawFn) -> dict[str, Any]:
    nb, nc = draw(st.integers(0, 1)), draw(st.integers(0, 2))
    nl, nr = draw(st.integers(0, 1)), draw(st.integers(0, 1))
    b = [draw(dim) for _ in range(nb)]
    c = [draw(dim) for _ in range(nc)]
    lf = [draw(dim) for _ in range(nl)]
    rf = [draw(dim) for _ in range(nr)]
    lhs_roles = draw(st.permutations([("b", i) for i in range(nb)] + [("c", i) for i in range(nc)]
                                     + [("f", i) for i in range(nl)]))
    rhs_roles = draw(st.permutations([("b", i) for i in range(nb)] + [("c", i) for i in range(nc)]
                                     + [("f", i) for i in range(nr)]))
    return dict(b=b, c=c, lf=lf, rf=rf, lhs=list(lhs_roles), rhs=list(rhs_roles))


@given(dots())
def test_dot(g: dict[str, Any]) -> None:
    sizes = {"b": g["b"], "c": g["c"]}

    def dims_of(roles: list[tuple[str, int]], free: list[int]) -> list[int]:
        return [free[i] if r == "f" else sizes[r][i] for r, i in roles]

    lhs, rhs = dims_of(g["lhs"], g["lf"]), dims_of(g["rhs"], g["rf"])
    out = g["b"] + g["lf"] + g["rf"]
    assume(lhs and rhs and out)

    def pos(roles: list[tuple[str, int]], role: str) -> list[int]:
        found = {i: k for k, (r, i) in enumerate(roles) if r == role}
        return [found[i] for i in sorted(found)]

    attrs = (f"lhs_batch_dims={{{ints(pos(g['lhs'], 'b'))}}}, "
             f"rhs_batch_dims={{{ints(pos(g['rhs'], 'b'))}}}, "
             f"lhs_contracting_dims={{{ints(pos(g['lhs'], 'c'))}}}, "
             f"rhs_contracting_dims={{{ints(pos(g['rhs'], 'c'))}}}")
    text = hlo([shp(lhs), shp(rhs)], f"{shp(out)} dot(p0, p1), {attrs}")
    nb, nl = len(g["b"]), len(g["lf"])

    def reads(_leaf: int, d: Index) -> Reads:
        out_l, out_r = set(), set()
        for cv in itertools.product(*(range(n) for n in g["c"])):
            val = {"b": d[:nb], "c": cv}
            out_l.add(tuple(d[nb + i] if r == "f" else val[r][i] for r, i in g["lhs"]))
            out_r.add(tuple(d[nb + nl + i] if r == "f" else val[r][i] for r, i in g["rhs"]))
        return {0: out_l, 1: out_r}

    check(text, reads)


@st.composite
def convolutions(draw: st.DrawFn) -> dict[str, Any]:
    nsp = draw(st.integers(1, 2))
    spec = draw(windows(nsp))
    fgc, bgc = 1, 1
    mode = draw(st.sampled_from(["plain", "feature", "batch"]))
    if mode == "feature":
        fgc = draw(st.integers(2, 3))
    elif mode == "batch":
        bgc = draw(st.integers(2, 3))
    in_pg = draw(st.integers(1, 2))
    out_pg = draw(st.integers(1, 2))
    out_batch = draw(st.integers(1, 2))
    return dict(spec=spec, fgc=fgc, bgc=bgc, in_f=in_pg * fgc, k_in=in_pg,
                out_f=out_pg * fgc * bgc, n=out_batch * bgc, out_b=out_batch,
                reversal=[draw(st.booleans()) for _ in range(nsp)],
                lhs_perm=draw(st.permutations(range(nsp + 2))),
                rhs_perm=draw(st.permutations(range(nsp + 2))),
                out_perm=draw(st.permutations(range(nsp + 2))))


def _labels(perm: Sequence[int], roles: str, nsp: int) -> str:
    """Letters for dims in `perm` order: role 0, role 1, then spatial 0..nsp-1."""
    letters = [roles[0], roles[1], *map(str, range(nsp))]
    return "".join(letters[p] for p in perm)


@given(convolutions())
def test_convolution(c: dict[str, Any]) -> None:
    spec, nsp = c["spec"], len(c["spec"])
    # logical roles: lhs (batch, feature, spatial...), rhs (in, out, spatial...),
    # out (batch, feature, spatial...), placed by the permutations
    lhs_log = [c["n"], c["in_f"], *(s[0] for s in spec)]
    rhs_log = [c["k_in"], c["out_f"], *(s[1] for s in spec)]
    out_log = [c["out_b"], c["out_f"], *(s[7] for s in spec)]
    lhs = [lhs_log[p] for p in c["lhs_perm"]]
    rhs = [rhs_log[p] for p in c["rhs_perm"]]
    out = [out_log[p] for p in c["out_perm"]]
    labels = (f"{_labels(c['lhs_perm'], 'bf', nsp)}_{_labels(c['rhs_perm'], 'io', nsp)}"
              f"->{_labels(c['out_perm'], 'bf', nsp)}")
    attrs = (f"window={window_attr(spec, c['reversal'])}, dim_labels={labels}, "
             f"feature_group_count={c['fgc']}, batch_group_count={c['bgc']}")
    text = hlo([shp(lhs), shp(rhs)], f"{shp(out)} convolution(p0, p1), {attrs}")

    def place(perm: Sequence[int], logical: Sequence[int]) -> Index:
        return tuple(logical[p] for p in perm)

    out_f_per_fg = c["out_f"] // c["fgc"]
    out_f_per_bg = c["out_f"] // c["bgc"]

    def reads(_leaf: int, d: Index) -> Reads:
        log = [0] * (nsp + 2)
        for k, p in enumerate(c["out_perm"]):
            log[p] = d[k]
        b, f, sp = log[0], log[1], log[2:]
        fg = f // out_f_per_fg
        bg = f // out_f_per_bg
        lhs_b = bg * c["out_b"] + b
        l_reads, r_reads = set(), set()
        taps = [window_reads(sp[i], s[0], s[1], s[2], s[3], s[5], s[6])
                for i, s in enumerate(spec)]
        for combo in itertools.product(*taps):
            for kin in range(c["k_in"]):
                lf = fg * c["k_in"] + kin
                l_reads.add(place(c["lhs_perm"], [lhs_b, lf, *(x for _k, x in combo)]))
                kern = [s[1] - 1 - k if rev else k
                        for (k, _x), s, rev in zip(combo, spec, c["reversal"])]
                r_reads.add(place(c["rhs_perm"], [kin, f, *kern]))
        return {0: l_reads, 1: r_reads}

    approx_lhs = [0] if c["bgc"] > 1 else []
    check(text, reads, approx_o2i=[1, *approx_lhs], approx_i2o=[1, *approx_lhs])


@given(dots(), st.data())
def test_scaled_dot(g: dict[str, Any], data: st.DataObject) -> None:
    """scaled-dot reads lhs and rhs as dot does, and each scale at the block holding the element
    read: scale index = operand index floordiv (operand dim / scale dim)."""
    sizes = {"b": g["b"], "c": g["c"]}
    lhs = [g["lf"][i] if r == "f" else sizes[r][i] for r, i in g["lhs"]]
    rhs = [g["rf"][i] if r == "f" else sizes[r][i] for r, i in g["rhs"]]
    out = g["b"] + g["lf"] + g["rf"]
    assume(lhs and rhs and out)

    def scale_of(dims: list[int]) -> list[int]:
        return [data.draw(st.sampled_from([k for k in range(1, n + 1) if n % k == 0]))
                for n in dims]

    ls, rs = scale_of(lhs), scale_of(rhs)

    def pos(roles: list[tuple[str, int]], role: str) -> list[int]:
        found = {i: k for k, (r, i) in enumerate(roles) if r == role}
        return [found[i] for i in sorted(found)]

    attrs = (f"lhs_batch_dims={{{ints(pos(g['lhs'], 'b'))}}}, "
             f"rhs_batch_dims={{{ints(pos(g['rhs'], 'b'))}}}, "
             f"lhs_contracting_dims={{{ints(pos(g['lhs'], 'c'))}}}, "
             f"rhs_contracting_dims={{{ints(pos(g['rhs'], 'c'))}}}")
    text = hlo([shp(lhs), shp(rhs), shp(ls), shp(rs)],
               f"{shp(out)} scaled-dot(p0, p1, p2, p3), {attrs}")
    nb, nl = len(g["b"]), len(g["lf"])

    def reads(_leaf: int, d: Index) -> Reads:
        out_l, out_r = set(), set()
        for cv in itertools.product(*(range(n) for n in g["c"])):
            val = {"b": d[:nb], "c": cv}
            out_l.add(tuple(d[nb + i] if r == "f" else val[r][i] for r, i in g["lhs"]))
            out_r.add(tuple(d[nb + nl + i] if r == "f" else val[r][i] for r, i in g["rhs"]))

        def block(xs: set[Index], dims: list[int], scale: list[int]) -> set[Index]:
            return {tuple(a // (n // k) for a, n, k in zip(x, dims, scale)) for x in xs}

        return {0: out_l, 1: out_r, 2: block(out_l, lhs, ls), 3: block(out_r, rhs, rs)}

    check(text, reads)


@given(shape, st.data(), st.integers(1, 2))
def test_sort(src: list[int], data: st.DataObject, n: int) -> None:
    axis = data.draw(st.integers(0, len(src) - 1))
    cmp = "cmp {\n" + "".join(f"  a{i} = f32[] parameter({i})\n" for i in range(2 * n)) + \
        "  ROOT lt = pred[] compare(a0, a1), direction=LT\n}\n"
    out = shp(src) if n == 1 else "(" + ", ".join([shp(src)] * n) + ")"
    ops = ", ".join(f"p{i}" for i in range(n))
    text = hlo([shp(src)] * n, f"{out} sort({ops}), dimensions={{{axis}}}, to_apply=cmp",
               computations=cmp)

    def reads(leaf: int, d: Index) -> Reads:
        """Output `leaf` is its operand's row permuted by an order of operand 0's row (the
        only one the comparator reads)."""
        row = {tuple(d[:axis]) + (k,) + tuple(d[axis + 1:]) for k in range(src[axis])}
        return {i: set(row) for i in {0, leaf}}

    check(text, reads)


@given(shape, st.sampled_from(["f32", "s8", "f64"]))
def test_bitcast_convert(src: list[int], to: str) -> None:
    # f32 -> s8 adds a minor dim of 4, f32 -> f64 needs a minor dim of 2 to drop
    if to == "f64":
        src = [*src, 2]
        out = src[:-1]
    elif to == "s8":
        out = [*src, 4]
    else:
        out = list(src)
    text = hlo([shp(src)], f"{shp(out, to)} bitcast-convert(p0)")

    def reads(_leaf: int, d: Index) -> Reads:
        if to == "s8":
            return {0: {d[:-1]}}
        if to == "f64":
            return {0: {(*d, k) for k in range(2)}}
        return {0: {d}}

    check(text, reads)


def test_no_operands() -> None:
    for root in ("s32[3,4] iota(), iota_dimension=1", "f32[2] constant({1, 2})"):
        module = parse_hlo(hlo([], root))
        assert str(output_to_input("r", module, 0)) == ""


# -- collectives -------------------------------------------------------------------------------


@given(shape, st.data(), st.integers(1, 3))
def test_all_gather(src: list[int], data: st.DataObject, group: int) -> None:
    axis = data.draw(st.integers(0, len(src) - 1))
    out = list(src)
    out[axis] *= group
    groups = "{{" + ",".join(map(str, range(group))) + "}}"
    text = hlo([shp(src)], f"{shp(out)} all-gather(p0), replica_groups={groups}, "
               f"dimensions={{{axis}}}")
    module = parse_hlo(text)
    (m,) = output_to_input("r", module, 0).maps[0]
    assert m.replica is not None
    for d in np.ndindex(*out):
        # every replica's output holds, at d, element (d mod n) of group member (d floordiv n)
        member, idx = divmod(d[axis], src[axis])
        want = tuple(idx if k == axis else x for k, x in enumerate(d))
        assert image(m.map, d, []) == {want}
        assert image(m.replica, d, []) == {(member,)}
    (back,) = input_to_output("r", module, 0).maps[0]
    for x in np.ndindex(*src):
        want = {tuple(x[k] + r * src[axis] if k == axis else x[k] for k in range(len(src)))
                for r in range(group)}
        assert image(back.map, x, []) == want


# -- scan --------------------------------------------------------------------------------------


@given(st.integers(1, 5), st.sets(st.sampled_from(["x", "c"])),
       st.sets(st.sampled_from(["x", "c"])), st.booleans())
def test_scan(n: int, y_uses: set[str], c_uses: set[str], reverse: bool) -> None:
    """Scalar bodies: y = f(uses), c' = g(uses); dependency sets are propagated step by step."""
    def expr(uses: set[str], name: str) -> tuple[str, str]:
        terms = ["x" if "x" in uses else None, "c" if "c" in uses else None]
        terms = [t for t in terms if t]
        if not terms:
            return f"  {name} = f32[] constant(0)\n", name
        if len(terms) == 1:
            return f"  {name} = f32[] negate({terms[0]})\n", name
        return f"  {name} = f32[] add(x, c)\n", name

    y_line, y = expr(y_uses, "y")
    c_line, cc = expr(c_uses, "cn")
    body = ("body {\n  x = f32[] parameter(0)\n  c = f32[] parameter(1)\n" + y_line + c_line
            + f"  ROOT t = (f32[], f32[]) tuple({y}, {cc})\n}}\n")
    rev = ", is_reverse=true" if reverse else ""
    text = hlo([shp([n]), shp([])], f"(f32[{n}], f32[]) scan(p0, p1), dimensions={{0}}, "
               f"num_carries=1{rev}, to_apply=body", computations=body)
    carry: Reads = {1: {()}}
    ys: dict[int, Reads] = {}
    for t in (reversed(range(n)) if reverse else range(n)):
        x: Reads = {0: {(t,)}}
        ys[t] = merge(*(v for k, v in (("x", x), ("c", carry)) if k in y_uses))
        carry = merge(*(v for k, v in (("x", x), ("c", carry)) if k in c_uses))

    def reads(leaf: int, d: Index) -> Reads:
        return ys[d[0]] if leaf == 0 else carry

    check(text, reads)


# -- composition through a fusion -------------------------------------------------------------


@given(st.integers(2, 4), st.integers(2, 4), st.integers(0, 1), st.integers(1, 2),
       st.booleans())
def test_fusion_composes_op_maps(a: int, b: int, start: int, stride: int, call: bool) -> None:
    """slice(transpose(p0)) + broadcast(reduce(p1)) inside a fusion: the composed maps are the
    relational composition of the op semantics."""
    sl = [len(range(start, b, stride)), a]
    body = (
        "add {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT z = f32[] add(x, y)\n}\n"
        f"f {{\n  q0 = {shp([a, b])} parameter(0)\n  q1 = {shp([a, 3])} parameter(1)\n"
        f"  t = {shp([b, a])} transpose(q0), dimensions={{1,0}}\n"
        f"  s = {shp(sl)} slice(t), slice={{[{start}:{b}:{stride}], [0:{a}:1]}}\n"
        f"  z = f32[] constant(0)\n"
        f"  red = {shp([a])} reduce(q1, z), dimensions={{1}}, to_apply=add\n"
        f"  bc = {shp(sl)} broadcast(red), dimensions={{1}}\n"
        f"  ROOT o = {shp(sl)} add(s, bc)\n}}\n"
    )
    how = "call(p0, p1), to_apply=f" if call else "fusion(p0, p1), kind=kLoop, calls=f"
    text = hlo([shp([a, b]), shp([a, 3])], f"{shp(sl)} {how}", computations=body)

    def reads(_leaf: int, d: Index) -> Reads:
        i, j = d
        return {0: {(j, start + i * stride)}, 1: {(j, k) for k in range(3)}}

    check(text, reads)


def test_oracle_notices_a_wrong_map() -> None:
    """The checker itself: a semantics that disagrees with the map must fail."""
    text = hlo([shp([3])], f"{shp([3])} reverse(p0), dimensions={{0}}")
    with pytest.raises(AssertionError):
        check(text, lambda _l, d: {0: {d}})
