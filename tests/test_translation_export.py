"""Translation validation of `jax.export` programs with symbolic dimensions: BEFORE the
exported StableHLO (its dimensions sizes `b`), AFTER the HLO XLA compiled from it at one
shape; BEFORE is compared at the sizes AFTER was compiled for (`bound_sizes`). None of these
programs is miscompiled, so a `differ` would be a false alarm: none may appear, and the
`unknown` pairs keep their reasons (docs/contracts.md states the share)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from verifidx.clients.translation import DIFFER, SAME, UNKNOWN, validate_programs


def _programs() -> dict[str, tuple[Any, tuple[Any, ...]]]:
    import jax.numpy as jnp
    from jax import lax

    return {
        "reverse": (lambda x: x[::-1], ()),
        "slice": (lambda x: x[1:3], ()),
        "transpose": (lambda x: x.T, ()),
        "concatenate": (lambda x: jnp.concatenate([x, x[:2]]), ()),
        "rotate": (lambda x: jnp.concatenate([x[1:], x[:1]]), ()),
        "pad": (lambda x: jnp.pad(x, ((1, 2), (0, 0))), ()),
        "broadcast": (lambda x: jnp.broadcast_to(x[:, :1], x.shape), ()),
        "reshape": (lambda x: x.reshape(-1), ()),
        "dynamic_slice": (lambda x, i: lax.dynamic_slice_in_dim(x, i, 2, axis=0),
                          (jnp.int32(0),)),
        "reverse then dynamic_slice": (lambda x, i: lax.dynamic_slice_in_dim(x[::-1], i, 2),
                                       (jnp.int32(0),)),
        "dynamic_update_slice": (lambda x, i: lax.dynamic_update_slice_in_dim(x, x[:2], i, 0),
                                 (jnp.int32(0),)),
        "row sums": (lambda x: x.sum(axis=1), ()),
        "columns reversed": (lambda x: x[:, ::-1], ()),
        "doubled": (lambda x: x + x, ()),
        "column sums": (lambda x: x.sum(axis=0), ()),
    }


def _pairs() -> list[tuple[str, str, str]]:
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    from jax import export

    b = export.symbolic_shape("b", constraints=["b >= 4"])[0]
    out = []
    for name, (f, scalars) in _programs().items():
        specs = [jax.ShapeDtypeStruct((b, 4), jnp.float32),
                 *(jax.ShapeDtypeStruct((), s.dtype) for s in scalars)]
        exported = export.export(jax.jit(f))(*specs)
        x = jnp.zeros((8, 4), jnp.float32)
        after = jax.jit(exported.call).lower(x, *scalars).compile().as_text()
        out.append((name, exported.mlir_module(), after))
    return out


def test_exported_programs_against_their_compiles_raise_no_false_alarm() -> None:
    pytest.importorskip("jax.export")
    verdicts: Counter[str] = Counter()
    for name, before, after in _pairs():
        result = validate_programs(before, after)
        for p in result.pairs:
            verdicts[p.verdict] += 1
            assert p.verdict != DIFFER, (name, p.reason, p.counterexample)
            if p.verdict == UNKNOWN:
                assert p.reason, name
    assert verdicts[SAME] >= 10, verdicts  # most pairs are proven


def test_an_exported_program_against_another_compile_is_never_same() -> None:
    """BEFORE of one program, AFTER of another with the same signature and result shape:
    where jax's results differ on distinct inputs, `same` would be a false proof."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    import numpy as np

    x = jnp.arange(32.0).reshape(8, 4)
    programs = _programs()
    pairs = {name: (before, after) for name, before, after in _pairs()}
    checked = 0
    for one, (f, s1) in programs.items():
        for other, (g, s2) in programs.items():
            if one == other or len(s1) != len(s2):
                continue
            a, b = f(x, *s1), g(x, *s2)
            if a.shape != b.shape or np.array_equal(np.asarray(a), np.asarray(b)):
                continue
            try:
                verdict = validate_programs(pairs[one][0], pairs[other][1]).verdict()
            except ValueError:  # the signatures differ at this shape
                continue
            checked += 1
            assert verdict != SAME, (one, other)
    assert checked >= 12
    del jax


def test_a_result_size_not_followed_is_not_called_a_signature_difference() -> None:
    """A window whose sizes come from a parameter's values, one row more: BEFORE's result
    size is not known at b = 8. That is no difference of the signatures: it is said as
    unsupported."""
    pytest.importorskip("jax")
    from verifidx.core.errors import UnsupportedError

    t = "tensor<?x4xf32>"
    before = "\n".join([
        "module @m {",
        f"  func.func public @main(%arg0: {t}, %arg1: tensor<1xi32>) -> {t} {{",
        "    %c = stablehlo.constant dense<0> : tensor<1xi32>",
        "    %c4 = stablehlo.constant dense<4> : tensor<1xi32>",
        "    %n = stablehlo.concatenate %arg1, %c4, dim = 0 : (tensor<1xi32>, tensor<1xi32>)"
        " -> tensor<2xi32>",
        '    %0 = "stablehlo.dynamic_gather"(%arg0, %c, %n) <{dimension_numbers = '
        "#stablehlo.gather<offset_dims = [0, 1], start_index_map = [0]>, indices_are_sorted "
        f"= true}}> : ({t}, tensor<1xi32>, tensor<2xi32>) -> {t}",
        "    %z = stablehlo.constant dense<0.0> : tensor<1x4xf32>",
        f"    %1 = stablehlo.concatenate %0, %z, dim = 0 : ({t}, tensor<1x4xf32>) -> {t}",
        f"    return %1 : {t}", "  }", "}", ""])
    after = ("HloModule m\n\nENTRY e {\n  p0 = f32[8,4] parameter(0)\n  p1 = s32[1] parameter(1)\n"
             "  ROOT s = f32[8,4] copy(p0)\n}\n")
    with pytest.raises(UnsupportedError, match="not derived at .*8.*not yet supported"):
        validate_programs(before, after)
