"""Maps with sizes from `jax.export` programs with symbolic dimensions (issue 23).

Each program is exported once with symbolic dimensions and lowered statically at three sizes.
Every (output, parameter) pair the program reads must get a real map (not "unknown indexing"),
except where this file says why not; instantiated at each size (the sizes' names are the
`jax.export` dimension variables), the maps must be proven equal to the static program's maps
(`verifidx.analysis.refinement.compare`, Z3); and jax's own evaluation and StableHLO's reference
interpreter, one input element perturbed at a time, must change only output elements the
instantiated maps relate to that element (no missed read).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

jax = pytest.importorskip("jax")
pytest.importorskip("jax.extend.mlir")

import jax.numpy as jnp  # noqa: E402
from jax import export  # noqa: E402

from verifidx.analysis.computation_maps import computation_indexing  # noqa: E402
from verifidx.analysis.refinement import compare  # noqa: E402
from verifidx.cli import main  # noqa: E402
from verifidx.hlo.dynamic_dims import instantiate_sizes  # noqa: E402
from verifidx.hlo.module import HloModule  # noqa: E402
from verifidx.stablehlo import parse_module  # noqa: E402
from verifidx.stablehlo.refine import argument_sizes, refine  # noqa: E402

F32, I32 = jnp.float32, jnp.int32


def _softmax(x: jax.Array) -> jax.Array:
    return jax.nn.softmax(x, axis=-1)


def _layer_norm(x: jax.Array, w: jax.Array) -> jax.Array:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / jnp.sqrt(var + 1e-5) * w


def _heads(x: jax.Array) -> jax.Array:
    b, s, _ = x.shape
    h = x.reshape(b, s, 2, 4).transpose(0, 2, 1, 3)
    att = jax.nn.softmax(h @ h.swapaxes(-1, -2), axis=-1)
    return (att @ h).transpose(0, 2, 1, 3).reshape(b, s, 8)


def _chain(x: jax.Array) -> jax.Array:
    s, b = x.shape[1], x.shape[0]
    return x.transpose(1, 0, 2).reshape(s, b * 4).reshape(-1) * 2.0


def _split(x: jax.Array) -> jax.Array:
    b, n = x.shape
    return jnp.concatenate([x, 2 * x], axis=1).reshape(b, 2, n).sum(1)


def _concat(x: jax.Array, y: jax.Array) -> jax.Array:
    return jnp.concatenate([x, y], axis=0)


def _embed(table: jax.Array, ids: jax.Array) -> jax.Array:
    return table[ids]


def _sort(x: jax.Array) -> jax.Array:
    return jnp.sort(x, axis=0)


def _pad_multiple(x: jax.Array) -> jax.Array:
    return jnp.pad(x, (0, (-x.shape[0]) % 4))


def _strided(x: jax.Array) -> jax.Array:
    return x[1::2]


def _strided_merged(x: jax.Array) -> jax.Array:
    return (x[1::2] * 2).reshape(-1)  # the derived size b // 2 merged with 3: 3 * (b // 2)


def _every_third(x: jax.Array) -> jax.Array:
    return x[::3]  # jax.export computes its size as divmod(b + 2, 3)


def _reverse(x: jax.Array) -> jax.Array:
    return x[::-1]  # a gather into the dynamic operand, at indices `(b - 1) - iota`


def _reverse_both(x: jax.Array) -> jax.Array:
    return x[::-1, ::-1]  # one gather, its index vector a concatenation of two reversed iotas


def _reverse_but_first(x: jax.Array) -> jax.Array:
    return x[:0:-1]


def _dynamic_slice(x: jax.Array, i: jax.Array) -> jax.Array:
    return jax.lax.dynamic_slice(x, (i, 0), (1, 3))  # start clamped to [0, b - 1]


def _update(x: jax.Array, u: jax.Array, i: jax.Array) -> jax.Array:
    return jax.lax.dynamic_update_slice(x, u, (i, 0))  # start clamped to [0, b - 2]


def _update_dynamic(x: jax.Array, u: jax.Array, i: jax.Array) -> jax.Array:
    return jax.lax.dynamic_update_slice(x, u, (i, 0))  # start clamped to [0, b - c]


def _quarters(x: jax.Array) -> jax.Array:
    return x.reshape(4, -1).sum(0)  # `4*b`: jax.export computes b = divmod(dim, 4)[0]


def _take(table: jax.Array, ids: jax.Array) -> jax.Array:
    return table[ids]  # a gather into a table of dynamic size


def _doubled_thrice(x: jax.Array) -> jax.Array:
    # a while whose carried state has a dynamic dimension; the body uses `b` from outside
    return jax.lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 2.0), (0, x))[1]


def _running_sum(x: jax.Array) -> jax.Array:
    # a scan over the symbolic length b: a while whose trip count is `b`
    return jax.lax.scan(lambda c, row: (c + row, c + row), jnp.zeros(x.shape[1:]), x)[1]


def _halves(y: jax.Array, x: jax.Array) -> jax.Array:
    return jnp.concatenate([y, 2 * y]) + x  # x: `2*b`, asserted twice y's `b`


def _shared(x: jax.Array, y: jax.Array) -> jax.Array:
    return x + jnp.flip(y, 0)  # y's dimensions are asserted equal to x's `b` and `s`


@dataclass(frozen=True)
class Program:
    """A function, its arguments' symbolic shapes, and concrete shapes at three sizes."""

    fn: Callable[..., jax.Array]
    specs: tuple[tuple[str, object], ...]
    at: tuple[dict[str, int], ...]
    unknown: str = ""  # why its maps stay unknown (a reason they must carry), else ""
    inexact: str = ""  # why its maps keep runtime variables the static lowering has no
    # counterpart for (sound, not equal to the static maps: checked by perturbation only)
    constraints: tuple[str, ...] = ()  # what jax.export may assume of the sizes
    refined: bool = False  # its index values are computed differently by the static lowering:
    # maps that read through them are compared with the program StableHLO's passes refine
    superset: str = ""  # why its instantiated maps relate more than the static program's
    # (sound, not equal): checked to contain them, pair by pair, and by perturbation


PROGRAMS = {
    "softmax": Program(_softmax, (("b, 4", F32),), ({"b": 1}, {"b": 2}, {"b": 3})),
    "layer_norm": Program(_layer_norm, (("b, s, 4", F32), ("4", F32)),
                          ({"b": 1, "s": 2}, {"b": 2, "s": 1}, {"b": 2, "s": 3})),
    "heads": Program(_heads, (("b, s, 8", F32),),
                     ({"b": 1, "s": 1}, {"b": 1, "s": 2}, {"b": 2, "s": 2})),
    "chain": Program(_chain, (("b, s, 4", F32),),
                     ({"b": 1, "s": 2}, {"b": 2, "s": 3}, {"b": 3, "s": 1})),
    "split": Program(_split, (("b, n", F32),),
                     ({"b": 1, "n": 1}, {"b": 2, "n": 2}, {"b": 1, "n": 3})),
    "concat": Program(_concat, (("b, 3", F32), ("c, 3", F32)),
                      ({"b": 1, "c": 2}, {"b": 3, "c": 1}, {"b": 2, "c": 2})),
    "embed": Program(_embed, (("10, 4", F32), ("b", I32)), ({"b": 1}, {"b": 3}, {"b": 5}),
                     refined=True),
    "sort": Program(_sort, (("b, 3", F32),), ({"b": 1}, {"b": 2}, {"b": 4})),
    "pad_multiple": Program(_pad_multiple, (("b", F32),), ({"b": 3}, {"b": 4}, {"b": 6})),
    "strided": Program(_strided, (("b", F32),), ({"b": 2}, {"b": 5}, {"b": 6})),
    "strided_merged": Program(_strided_merged, (("b, 3", F32),), ({"b": 1}, {"b": 4}, {"b": 7})),
    "every_third": Program(_every_third, (("b", F32),), ({"b": 1}, {"b": 3}, {"b": 8}),
                           inexact="b + 2 may wrap in 32 bits (b is up to 2^31 - 1), so its "
                                   "quotient by 3 is not followed (opaque)"),
    "reverse": Program(_reverse, (("b", F32),), ({"b": 1}, {"b": 4}, {"b": 7})),
    "reverse_both": Program(_reverse_both, (("b, s", F32),),
                            ({"b": 1, "s": 3}, {"b": 2, "s": 2}, {"b": 4, "s": 1})),
    "reverse_but_first": Program(_reverse_but_first, (("b", F32),), ({"b": 2}, {"b": 3}, {"b": 6})),
    "dynamic_slice": Program(_dynamic_slice, (("b, 3", F32), ("", I32)),
                             ({"b": 1}, {"b": 2}, {"b": 5}), refined=True),
    "quarters": Program(_quarters, (("4*b", F32),), ({"b": 1}, {"b": 2}, {"b": 3})),
    "update": Program(_update, (("b, 3", F32), ("2, 3", F32), ("", I32)),
                      ({"b": 2}, {"b": 3}, {"b": 5}), constraints=("b >= 2",), refined=True),
    "update_dynamic": Program(_update_dynamic, (("b, 3", F32), ("c, 3", F32), ("", I32)),
                              ({"b": 1, "c": 1}, {"b": 3, "c": 2}, {"b": 4, "c": 1}),
                              constraints=("b >= c",), refined=True),
    "take": Program(_take, (("b, 4", F32), ("k", I32)),
                    ({"b": 1, "k": 2}, {"b": 3, "k": 1}, {"b": 4, "k": 3}), refined=True),
    "halves": Program(_halves, (("b", F32), ("2*b", F32)), ({"b": 1}, {"b": 2}, {"b": 3})),
    "shared": Program(_shared, (("b, s", F32), ("b, s", F32)),
                      ({"b": 1, "s": 2}, {"b": 2, "s": 1}, {"b": 3, "s": 2})),
    "doubled_thrice": Program(_doubled_thrice, (("b, 4", F32),), ({"b": 1}, {"b": 2}, {"b": 5})),
    "running_sum": Program(_running_sum, (("b, 3", F32),), ({"b": 1}, {"b": 2}, {"b": 4}),
                           superset="the trip count is b, which the loop analysis does not "
                                    "follow: a row may read any row"),
}


def _shape(spec: str, sizes: dict[str, int]) -> tuple[int, ...]:
    out: list[int] = []
    for part in spec.split(",") if spec else ():
        part = part.strip()
        factor, _, name = part.rpartition("*")
        value = sizes[name] if name in sizes else int(name)
        out.append(value * (int(factor) if factor else 1))
    return tuple(out)


def _args(p: Program, sizes: dict[str, int]) -> list[jax.ShapeDtypeStruct]:
    return [jax.ShapeDtypeStruct(_shape(spec, sizes), dt) for spec, dt in p.specs]


def _mlir_type(a: jax.ShapeDtypeStruct) -> str:
    element = {"float32": "f32", "int32": "i32"}[a.dtype.name]
    return f"tensor<{''.join(f'{n}x' for n in a.shape)}{element}>"


@dataclass
class Exported:
    text: str
    dynamic: HloModule
    static: list[HloModule]


@pytest.fixture(scope="module")
def exported() -> dict[str, Exported]:
    """Every program exported once with symbolic dimensions and lowered at its sizes."""
    out = {}
    for name, p in PROGRAMS.items():
        scope = export.SymbolicScope(p.constraints)
        specs = [jax.ShapeDtypeStruct(export.symbolic_shape(s, scope=scope) if s else (), dt)
                 for s, dt in p.specs]
        text = export.export(jax.jit(p.fn))(*specs).mlir_module()
        static = [parse_module(jax.jit(p.fn).lower(*_args(p, at)).as_text()) for at in p.at]
        out[name] = Exported(text, parse_module(text), static)
    return out


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_every_read_pair_gets_a_map_equal_to_the_static_programs_at_three_sizes(
        name: str, exported: dict[str, Exported]) -> None:
    p, ex = PROGRAMS[name], exported[name]
    ci = computation_indexing(ex.dynamic, ex.dynamic.entry, "out2in")
    read = {(o, q) for (o, q, _leaf), maps in ci.maps.items() if maps}
    assert read
    undefined = [m for (o, q, _leaf), maps in ci.maps.items() for m in maps if m.is_undefined]
    if p.unknown:
        assert undefined and all(any(p.unknown in n for n in m.notes) for m in undefined), \
            [m.notes for m in undefined]
        return
    assert not undefined, [m.notes for m in undefined]
    if p.inexact:  # the start stays a runtime variable: sound, checked by perturbation
        assert all(m.map.num_rt_vars for maps in ci.maps.values() for m in maps)
        return
    if p.superset:
        for static in ex.static[:len(p.at)]:
            _contains(ci, static, argument_sizes(ex.dynamic, static))
        return
    names = {z.name for maps in ci.maps.values() for m in maps for z in m.map.sizes}
    # sizes named by jax.export's variables, and sizes the program computes (`size<k>_d<d>`:
    # padding to a multiple), fixed by the refined program's output
    assert names & set(p.at[0]) and all(n in p.at[0] or n.startswith("size") for n in names)
    for at, static in zip(p.at, ex.static):
        checks = compare(ex.dynamic, static, argument_sizes(ex.dynamic, static))
        assert checks and all(c.holds is not False for c in checks), (at, checks)
        if p.refined:  # index values read at run time are paired by structure
            static = refine(ex.text, [_mlir_type(a) for a in _args(p, at)])
            checks = compare(ex.dynamic, static, argument_sizes(ex.dynamic, static))
        assert checks and all(c.holds for c in checks), (at, checks)


Pairs = set[tuple[tuple[int, ...], tuple[int, ...]]]


def _pairs(maps: object, values: dict[str, int] | None = None) -> Pairs:
    out: Pairs = set()
    for m in maps:  # type: ignore[attr-defined]
        fixed = (instantiate_sizes(m, values) if values is not None else m).map.simplify()
        assert not fixed.sizes and not fixed.is_undefined, str(fixed)
        out |= {(d, r) for _rt, d, r in fixed.relation()}
    return out


def _contains(ci: object, static: HloModule, values: dict[str, int]) -> None:
    """Every pair of the static program's maps is a pair of the instantiated parametric ones."""
    fixed = computation_indexing(static, static.entry, "out2in")
    for (o, q, _leaf), maps in fixed.maps.items():
        wanted = _pairs(maps)
        claimed = _pairs(ci.maps_for(o, q), values)  # type: ignore[attr-defined]
        assert wanted <= claimed, (values, o, q, sorted(wanted - claimed)[:5])


@pytest.mark.parametrize("name", ["embed", "chain", "concat", "dynamic_slice", "update_dynamic"])
def test_refine_on_the_command_line_proves_the_parametric_maps(
        name: str, exported: dict[str, Exported], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """`--refine`: sizes instantiated by name, runtime variables paired by what they read, so
    no difference is claimed where the maps have none (the lookup used to exit 1)."""
    p = PROGRAMS[name]
    path = tmp_path / f"{name}.mlir"
    path.write_text(exported[name].text)
    types = ",".join(_mlir_type(a) for a in _args(p, p.at[-1]))
    assert main(["indexing", str(path), "--refine", types, "--json"]) == 0
    checks = json.loads(capsys.readouterr().out)["refinement"]["checks"]
    assert checks and all(c["holds"] is True for c in checks), checks


def test_refine_never_refutes_with_a_loops_larger_maps(
        exported: dict[str, Exported], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The scan over b rows: its parametric maps let a row read any row (the trip count b is
    not followed), more than the refined program reads; that is no difference between the
    programs (they compute the same thing), so never REFUTED at any size: proved or unknown."""
    p = PROGRAMS["running_sum"]
    path = tmp_path / "running_sum.mlir"
    path.write_text(exported["running_sum"].text)
    for b in (1, 2, 3, 4):
        types = ",".join(_mlir_type(a) for a in _args(p, {"b": b}))
        code = main(["indexing", str(path), "--refine", types, "--json"])
        checks = json.loads(capsys.readouterr().out)["refinement"]["checks"]
        assert code in (0, 3) and not any(c["holds"] is False for c in checks), (b, checks)


def _inputs(p: Program, sizes: dict[str, int]) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    args = []
    for a in _args(p, sizes):
        if a.dtype == jnp.int32:
            args.append(rng.integers(0, 10, size=a.shape).astype(np.int32))
        else:
            args.append(rng.uniform(0.5, 1.5, size=a.shape).astype(np.float32))
    return args


def _interpreted(p: Program, text: str, sizes: dict[str, int]) -> dict[tuple[int, int], Pairs]:
    """As `_observed`, by StableHLO's reference interpreter (`stablehlo.eval_module`), one
    perturbation at a time, on the exported program refined to these sizes; where StableHLO's
    passes leave a dynamic type (sizes computed through calls, such as jax's `divmod`, which
    the interpreter cannot run), on the program jax lowers statically at these sizes."""
    from verifidx.stablehlo.bindings import mlir
    from verifidx.stablehlo.refine import refined_module

    # the interpreter runs no custom call: jax.export's shape assertions (which hold at these
    # sizes, and define no value) are left out
    kept = "\n".join(line for line in text.splitlines() if "@shape_assertion" not in line)
    types = [_mlir_type(a) for a in _args(p, sizes)]
    ctx, module = refined_module(kept, types)
    with ctx:
        dynamic = re.search(r"tensor<[^>]*\?", str(module.operation)) is not None
    if dynamic:
        ctx, module = refined_module(jax.jit(p.fn).lower(*_args(p, sizes)).as_text(), types)
    bindings = mlir()

    def run(values: list[np.ndarray]) -> np.ndarray:
        with ctx:
            attrs = [bindings["ir"].DenseElementsAttr.get(v) for v in values]
            (out,) = bindings["stablehlo"].eval_module(module, attrs)
            return np.array(out)

    args = _inputs(p, sizes)
    base = run(args)
    found: dict[tuple[int, int], Pairs] = {}
    for q, a in enumerate(args):
        pairs = found.setdefault((0, q), set())
        if a.dtype == np.int32:
            continue  # an index argument: the maps to it are checked by the refinement
        for idx in np.ndindex(*a.shape):
            changed = [x.copy() for x in args]
            changed[q][idx] += np.float32(0.731)
            diff = ~np.isclose(run(changed), base, rtol=1e-5, atol=1e-6)
            pairs |= {(tuple(int(i) for i in out_idx), idx) for out_idx in zip(*np.nonzero(diff))}
    return found


def _observed(p: Program, sizes: dict[str, int]) -> dict[tuple[int, int], Pairs]:
    """(output, argument) -> the pairs (output index, input index) where changing the input
    element changes the output element, by jax's evaluation (all perturbations at once)."""
    args = _inputs(p, sizes)
    base = np.asarray(jax.jit(p.fn)(*args))
    found: dict[tuple[int, int], Pairs] = {}
    for q, a in enumerate(args):
        pairs = found.setdefault((0, q), set())
        if a.dtype == np.int32:
            continue  # an index argument: the maps to it are checked by the refinement
        batch = np.repeat(a[None], a.size, axis=0)
        flat = batch.reshape(a.size, -1)
        flat[np.arange(a.size), np.arange(a.size)] += np.float32(0.731)

        def one(x: jax.Array, q: int = q) -> jax.Array:
            return p.fn(*[x if k == q else args[k] for k in range(len(args))])

        outs = np.asarray(jax.jit(jax.vmap(one))(batch))
        for k, idx in enumerate(np.ndindex(*a.shape)):
            diff = ~np.isclose(outs[k], base, rtol=1e-5, atol=1e-6)
            for out_idx in zip(*np.nonzero(diff)):
                pairs.add((tuple(int(i) for i in out_idx), idx))
    return found


@pytest.mark.parametrize("name", sorted(n for n, p in PROGRAMS.items() if not p.unknown))
@pytest.mark.parametrize("oracle", ["jax", "interpreter"])
def test_no_read_is_missed_at_several_sizes(name: str, oracle: str,
                                            exported: dict[str, Exported]) -> None:
    p, ex = PROGRAMS[name], exported[name]
    ci = computation_indexing(ex.dynamic, ex.dynamic.entry, "out2in")
    for at, static in zip(p.at, ex.static):
        values = argument_sizes(ex.dynamic, static)
        found = _observed(p, at) if oracle == "jax" else _interpreted(p, ex.text, at)
        for (o, q), seen in found.items():
            claimed: Pairs = set()
            for m in ci.maps_for(o, q):
                fixed = instantiate_sizes(m, values).map.simplify()
                assert not fixed.sizes and not fixed.is_undefined, str(fixed)
                claimed |= {(d, r) for rt, d, r in fixed.relation()}
            assert seen <= claimed, (at, o, q, sorted(seen - claimed)[:5])


def test_a_dimension_is_a_multiple_only_where_the_program_asserts_it(
        exported: dict[str, Exported]) -> None:
    """`4*b`: the dimension is `4 * b` because the entry asserts `divmod(dim, 4)`'s remainder
    is 0; without that assertion `b` is the quotient `dim floordiv 4` (a derived size, not a
    size of the maps)."""
    def size_names(module: HloModule) -> set[str]:
        ci = computation_indexing(module, module.entry, "out2in")
        return {z.name for maps in ci.maps.values() for m in maps for z in m.map.sizes}

    text = exported["quarters"].text
    assert "b" in size_names(parse_module(text))
    kept = [line for line in text.splitlines() if "@shape_assertion" not in line]
    assert len(kept) < len(text.splitlines())
    assert "b" not in size_names(parse_module("\n".join(kept)))


def test_asserted_dimensions_share_the_sizes_and_their_bounds(
        exported: dict[str, Exported]) -> None:
    """jax.export asserts `y.shape == (b, s)` and `x.shape[0] == 2 * b`: those dimensions are
    the sizes `b`, `s` and `2 * b`, not sizes of their own, and `b`'s interval is what every
    dimension implies (`2 * b <= 2^31 - 1`). Without the assertions they are sizes of their
    own."""
    def sizes(module: HloModule) -> dict[str, tuple[int, int]]:
        ci = computation_indexing(module, module.entry, "out2in")
        return {z.name: (z.bounds.lo, z.bounds.hi)
                for maps in ci.maps.values() for m in maps for z in m.map.sizes}

    assert sizes(exported["halves"].dynamic) == {"b": (1, (2**31 - 1) // 2)}
    assert set(sizes(exported["shared"].dynamic)) == {"b", "s"}
    text = exported["shared"].text
    kept = [line for line in text.splitlines() if "@shape_assertion" not in line]
    assert len(kept) < len(text.splitlines())
    assert "main_arg1_d0" in sizes(parse_module("\n".join(kept)))
