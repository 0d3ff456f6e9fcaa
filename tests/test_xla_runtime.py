"""The XLA CPU runtime that confirms `validate`'s counterexamples: bitcasts rewritten into the
logical ops their layouts mean (checked against numpy reading memory in layout order), runs in a
child process that survives XLA's own crashes, and confirm's answers on a known fault."""

from __future__ import annotations

import itertools
import random
from types import SimpleNamespace

import numpy as np
import pytest

from verifidx.clients import xla_runtime as rt
from verifidx.hlo import parse_hlo


def _bitcast_module(dims: tuple[int, ...], src: tuple[int, ...], out_dims: tuple[int, ...],
                    dst: tuple[int, ...]) -> str:
    def shape(d: tuple[int, ...], m2m: tuple[int, ...]) -> str:
        return f"f32[{','.join(map(str, d))}]{{{','.join(map(str, m2m))}}}"

    return (f"HloModule m\n\nENTRY e {{\n  p = {shape(dims, src)} parameter(0)\n"
            f"  ROOT b = {shape(out_dims, dst)} bitcast(p)\n}}\n")


def _physical_oracle(x: np.ndarray, src: tuple[int, ...], out_dims: tuple[int, ...],
                     dst: tuple[int, ...]) -> np.ndarray:
    """A bitcast by definition: the operand's memory (its elements, minor-to-major order
    `src`) read back as the result in its layout `dst`."""
    memory = np.transpose(x, tuple(reversed(src))).ravel()
    physical = memory.reshape([out_dims[d] for d in reversed(dst)])
    return np.transpose(physical, np.argsort(tuple(reversed(dst))))


def _evaluate(text: str, x: np.ndarray) -> np.ndarray:
    """The rewritten module evaluated with numpy, op by op (transpose, reshape only)."""
    values: dict[str, np.ndarray] = {}
    comp = parse_hlo(text).entry
    for inst in comp.instructions:
        if inst.opcode == "parameter":
            values[inst.name] = x
        elif inst.opcode == "transpose":
            values[inst.name] = np.transpose(values[inst.operands[0]], inst.dimensions)
        else:
            assert inst.opcode == "reshape", inst.opcode
            values[inst.name] = values[inst.operands[0]].reshape(inst.shape.dims)
    return values[comp.root.name]


def _cases(n: int, seed: int = 0) -> list[tuple[tuple[int, ...], tuple[int, ...],
                                                 tuple[int, ...], tuple[int, ...]]]:
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        dims = tuple(rng.choice((1, 2, 3, 4)) for _ in range(rng.choice((2, 3))))
        size = int(np.prod(dims))
        out_dims = rng.choice([d for d in itertools.product((1, 2, 3, 4, 6, 8, 12, 24),
                                                            repeat=rng.choice((1, 2, 3)))
                               if int(np.prod(d)) == size] or [(size,)])
        src = tuple(rng.sample(range(len(dims)), len(dims)))
        dst = tuple(rng.sample(range(len(out_dims)), len(out_dims)))
        out.append((dims, src, out_dims, dst))
    return out


def test_a_bitcast_is_rewritten_into_what_its_layouts_mean() -> None:
    for dims, src, out_dims, dst in _cases(60):
        x = np.arange(int(np.prod(dims)), dtype=np.float32).reshape(dims)
        text = rt.logical_bitcasts(_bitcast_module(dims, src, out_dims, dst))
        assert "bitcast" not in text
        np.testing.assert_array_equal(_evaluate(text, x),
                                      _physical_oracle(x, src, out_dims, dst))


def test_without_jax_nothing_is_confirmed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rt, "available", lambda: False)
    cx = SimpleNamespace(output=0, point=(0,), values={})
    assert rt.confirm("HloModule a", "HloModule b", cx) == "not confirmed (no runtime)"


def test_distinct_inputs_hold_distinct_values_and_the_counterexample_scalars() -> None:
    text = ("HloModule m\n\nENTRY e {\n  x = f32[2,3] parameter(0)\n  i = s32[] parameter(1)\n"
            "  y = f32[4] parameter(2)\n  ROOT t = (f32[2,3], s32[], f32[4]) tuple(x, i, y)\n}\n")
    x, i, y = rt.distinct_inputs(text, {"arg1": -7})
    assert int(i) == -7 and i.dtype == np.int32
    values = np.concatenate([x.ravel(), y.ravel()])
    assert len(set(values.tolist())) == values.size


# -- on XLA's CPU backend ---------------------------------------------------------------------

DUS_AFTER = """HloModule jit_f, entry_computation_layout={(f32[4]{0})->f32[2,2]{1,0}}

fused_computation {
  param_0.1 = f32[4]{0} parameter(0)
  param_1 = f32[3]{0} parameter(1)
  constant.0 = s32[] constant(START)
  dynamic_update_slice.0 = f32[4]{0} dynamic-update-slice(param_0.1, param_1, constant.0)
  ROOT bitcast.1 = f32[2,2]{1,0} bitcast(dynamic_update_slice.0)
}

wrapped_slice_computation {
  param_0.2 = f32[4]{0} parameter(0)
  ROOT slice.0 = f32[3]{0} slice(param_0.2), slice={[0:3]}
}

ENTRY main.1 {
  x.1 = f32[4]{0} parameter(0)
  copy.1 = f32[4]{0} copy(x.1)
  wrapped_slice = f32[3]{0} fusion(copy.1), kind=kLoop, calls=wrapped_slice_computation
  ROOT f = f32[2,2]{1,0} fusion(copy.1, wrapped_slice), kind=kLoop, calls=fused_computation
}
"""

DUS_BEFORE = """HloModule jit_f

ENTRY main {
  x = f32[4] parameter(0)
  s = f32[3] slice(x), slice={[0:3]}
  one = s32[] constant(1)
  u = f32[4] dynamic-update-slice(x, s, one)
  ROOT r = f32[2,2] reshape(u)
}
"""


def test_bitcasts_and_crashes_on_xla() -> None:
    pytest.importorskip("jax")
    cases = _cases(4, seed=1)
    jobs = []
    for dims, src, out_dims, dst in cases:
        x = np.arange(int(np.prod(dims)), dtype=np.float32).reshape(dims)
        jobs.append((_bitcast_module(dims, src, out_dims, dst), [[x]]))
    # XLA's emitters end the process on this fusion as the StableHLO route leaves it: the child
    # dies, the caller is told why, and the programs after it still run
    jobs.append((DUS_AFTER.replace("START", "1"), [[np.arange(1, 5, dtype=np.float32)]]))
    jobs.append(jobs[0])
    runs = rt.run_jobs(jobs)
    for (_, src, out_dims, dst), (_, sets), got in zip(cases, jobs, runs):
        assert not isinstance(got, str), got
        np.testing.assert_array_equal(got[0][0], _physical_oracle(sets[0][0], src, out_dims, dst))
    assert isinstance(runs[4], str) and runs[4].startswith("XLA stopped")
    assert not isinstance(runs[5], str)

    cx = SimpleNamespace(output=0, point=(1, 0), values={})
    right, wrong = rt.confirm_many([(DUS_BEFORE, DUS_AFTER.replace("START", "1"), cx),
                                    (DUS_BEFORE, DUS_AFTER.replace("START", "0"), cx)])
    assert right == "not confirmed: both give 2.0 at output 0 element (1, 0) " \
                    "(fusions run as calls)"
    assert wrong == "confirmed: output 0 element (1, 0) is 3.0, the reference gives 2.0 " \
                    "(fusions run as calls)"
