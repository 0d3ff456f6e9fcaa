"""Real torch.compile runs on CPU (static shapes) of the capture tool's models: every captured
expression is read (but indirect indices), verifidx's simplification is proven equal to
Inductor's input and keeps no more divisions than Inductor's result, and the validator's
verdicts agree with the independent evaluator on random points. The hook in check mode refutes
a sabotaged Inductor; in simplify mode the compiled model still computes what eager does.
Skipped only where torch is not installed (the `test` extra installs it)."""

from __future__ import annotations

import importlib.util
import json
import logging
import random
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from inductor_oracle import evaluate  # noqa: E402

from verifidx.clients import inductor  # noqa: E402
from verifidx.clients.sympy_bridge import from_sympy, parse_text  # noqa: E402
from verifidx.clients.validation import validate_record  # noqa: E402
from verifidx.simplifier.equality import equal  # noqa: E402

TOOL = Path(__file__).resolve().parents[1] / "tools" / "capture_inductor.py"


def _tool() -> Any:
    spec = importlib.util.spec_from_file_location("capture_inductor", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def corpus() -> list[dict[str, Any]]:
    """One compile of every built-in model at once; records deduplicated."""
    tool = _tool()
    records = tool.capture(*tool.build("together"))
    seen: dict[str, dict[str, Any]] = {}
    for r in records:
        seen.setdefault(json.dumps(r), r)
    assert len(seen) > 50
    return list(seen.values())


def _indirect(record: dict[str, Any]) -> bool:
    return any(not name.startswith(("s", "u", "ps")) or not name[1:].isdigit()
               for name in record["size_ranges"])


def test_every_static_expression_is_read_and_proved(corpus: list[dict[str, Any]]) -> None:
    read = 0
    fewer = 0
    for r in corpus:
        v = validate_record(json.dumps(r))
        if _indirect(r):  # Inductor's indirect indices: values loaded at run time
            assert v.verdict == "unsupported" and "indirect index symbols" in v.reason
            continue
        read += 1
        assert v.verdict == "proved", (r, v.reason)
        assert v.divisions["verifidx"] <= v.divisions["result"], (r, v.simplified)
        fewer += v.fewer_divisions is True
        # verifidx's own result is proven equal to Inductor's input
        known = set(r["var_ranges"])
        f = from_sympy(parse_text(r["expr"], known), r["var_ranges"])
        assert equal(f, f.simplify()).holds is True, r
    assert read >= 0.75 * len(corpus)
    print(f"{read} of {len(corpus)} records read and proved; fewer divisions on {fewer}")


def test_verdicts_agree_with_integer_evaluation(corpus: list[dict[str, Any]]) -> None:
    rng = random.Random(24)
    for r in corpus:
        if _indirect(r):
            continue
        v = validate_record(json.dumps(r))
        extents = {k: int(e) for k, e in r["var_ranges"].items()}
        for _ in range(20):
            point = {k: rng.randrange(e) for k, e in extents.items()}
            want = evaluate(r["expr"], point)
            assert evaluate(r["result"], point) == want, (r, point)
            assert v.simplified is not None and evaluate(v.simplified, point) == want, (r, point)


def _sabotaged(drop: bool) -> Any:
    """A stand-in for Inductor's simplification that drops every ModularIndexing's modulus."""
    from torch.utils._sympy.functions import FloorDiv, ModularIndexing

    def simplify(self: Any, expr: Any, var_ranges: Any) -> Any:
        if not drop:
            return expr
        return expr.replace(ModularIndexing, lambda b, d, m: FloorDiv(b, d))

    return simplify


def _allocator() -> Any:
    from torch._inductor.sizevars import SizeVarAllocator
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    return SizeVarAllocator(ShapeEnv())


def _expr() -> tuple[Any, Any, Any]:
    import sympy
    from torch.utils._sympy.functions import FloorDiv, ModularIndexing

    x0, x1 = sympy.symbols("x0 x1", integer=True, nonnegative=True)
    return ModularIndexing(x0, 1, 16) + 16 * FloorDiv(x0, 16) + 64 * x1, x0, x1


def test_check_mode_raises_on_a_wrong_simplification(monkeypatch: pytest.MonkeyPatch,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    from torch._inductor.sizevars import SizeVarAllocator

    expr, x0, x1 = _expr()
    sabotaged = _sabotaged(True)
    monkeypatch.setattr(SizeVarAllocator, "_simplify_with_ranges", sabotaged)
    try:
        inductor.install("check")
        with pytest.raises(inductor.SimplificationRefuted) as err:
            _allocator().simplify_with_ranges(expr, {x0: 64, x1: 4})
        v = err.value.validation
        point = v.counterexample
        assert point is not None
        assert evaluate(str(expr), point) == v.expr_value != v.result_value
        assert evaluate(str(err.value.result), point) == v.result_value
        stats = inductor.install("check", on_refuted="log")
        with caplog.at_level(logging.ERROR, logger="verifidx.clients.inductor"):
            _allocator().simplify_with_ranges(expr, {x0: 64, x1: 4})
        assert "which differs at" in caplog.text and len(stats.refutations) == 1
    finally:
        inductor.uninstall()
    assert SizeVarAllocator._simplify_with_ranges is sabotaged


def test_check_mode_proves_inductor_and_uninstall_restores() -> None:
    from torch._inductor.sizevars import SizeVarAllocator

    stock = SizeVarAllocator._simplify_with_ranges
    expr, x0, x1 = _expr()
    stats = inductor.install("check")
    try:
        out = _allocator().simplify_with_ranges(expr, {x0: 64, x1: 4})
    finally:
        inductor.uninstall()
    assert SizeVarAllocator._simplify_with_ranges is stock
    assert stats.calls == 1 and stats.verdicts == {"proved": 1}
    assert str(out) in ("x0 + 64*x1", "64*x1 + x0")


def test_simplify_mode_replaces_with_the_proven_result(monkeypatch: pytest.MonkeyPatch) -> None:
    from torch._inductor.sizevars import SizeVarAllocator

    expr, x0, x1 = _expr()
    monkeypatch.setattr(SizeVarAllocator, "_simplify_with_ranges", _sabotaged(False))
    stats = inductor.install("simplify")
    try:
        out = _allocator().simplify_with_ranges(expr, {x0: 64, x1: 4})
    finally:
        inductor.uninstall()
    assert stats.replaced == 1
    assert out == x0 + 64 * x1


def test_simplify_mode_compiles_a_model_that_computes_the_same() -> None:
    tool = _tool()
    model, inputs = tool.build("pixel_shuffle")
    model2, inputs2 = tool.build("pooling")
    torch._dynamo.reset()
    stats = inductor.install("simplify")
    try:
        with torch.no_grad(), torch.compiler.config.patch(force_disable_caches=True):
            got = torch.compile(model, dynamic=False)(*inputs)
            got2 = torch.compile(model2, dynamic=False)(*inputs2)
    finally:
        inductor.uninstall()
        torch._dynamo.reset()
    with torch.no_grad():
        assert torch.equal(got, model(*inputs))
        assert torch.allclose(got2, model2(*inputs2))
    assert stats.calls > 0 and stats.replaced > 0


def test_install_refuses_unknown_modes() -> None:
    from verifidx.core.errors import UnsupportedError

    with pytest.raises(UnsupportedError, match="mode must be one of"):
        inductor.install("fast")
    with pytest.raises(UnsupportedError, match="records="):
        inductor.install("record")


def test_a_second_capture_of_a_model_records_again() -> None:
    """Inductor's graph cache would hand back the first compile without simplifying anything;
    the capture turns it off (an environment variable set after torch loaded did not)."""
    tool = _tool()
    first = tool.capture(*tool.build("pixel_shuffle"))
    second = tool.capture(*tool.build("pixel_shuffle"))
    assert first and second == first


def test_check_mode_never_breaks_on_what_it_cannot_read() -> None:
    """A symbolic extent with no size range given (as Inductor may pass) is unsupported, not an
    error inside the compile."""
    import sympy

    expr, x0, x1 = _expr()
    s0 = sympy.Symbol("s0", integer=True, positive=True)
    stats = inductor.install("check")
    try:
        _allocator().simplify_with_ranges(expr, {x0: 64, x1: s0})
    finally:
        inductor.uninstall()
    assert stats.verdicts == {"unsupported": 1}


# -- dynamic shapes ------------------------------------------------------------------------------


def _sized_allocator() -> tuple[Any, Any]:
    """An allocator whose shape environment ranges the size symbol s0 in [2, int_oo], as
    dynamic=True compiles do."""
    import sympy
    from torch.utils._sympy.numbers import int_oo
    from torch.utils._sympy.value_ranges import ValueRanges

    alloc = _allocator()
    s0 = sympy.Symbol("s0", integer=True, positive=True)
    alloc.shape_env.var_to_range[s0] = ValueRanges(2, int_oo)
    return alloc, s0


def test_check_mode_validates_dynamic_expressions(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inductor's own result over a size symbol is proved for every size; a sabotaged one is
    refuted with the size's value in the counterexample, confirmed independently."""
    from torch._inductor.sizevars import SizeVarAllocator
    from torch.utils._sympy.functions import FloorDiv, ModularIndexing

    alloc, s0 = _sized_allocator()
    _, x0, x1 = _expr()
    expr = ModularIndexing(x0, 1, s0) + s0 * FloorDiv(x0, s0) + 5 * x1
    ranges = {x0: 4 * s0, x1: 8}
    stats = inductor.install("check")
    try:
        alloc.simplify_with_ranges(expr, ranges)
    finally:
        inductor.uninstall()
    assert stats.verdicts == {"proved": 1}
    monkeypatch.setattr(SizeVarAllocator, "_simplify_with_ranges", _sabotaged(True))
    alloc, _ = _sized_allocator()
    inductor.install("check")
    try:
        with pytest.raises(inductor.SimplificationRefuted) as err:
            alloc.simplify_with_ranges(expr, ranges)
    finally:
        inductor.uninstall()
    v = err.value.validation
    point = v.counterexample
    assert point is not None and point["s0"] >= 2 and 0 <= point["x0"] < 4 * point["s0"]
    assert evaluate(str(expr), point) == v.expr_value != v.result_value
    assert evaluate(str(err.value.result), point) == v.result_value


def test_check_mode_under_a_dynamic_compile() -> None:
    """One dynamic=True compile in check mode: Inductor's results over size symbols are
    proved (none refuted) and the compiled model computes what eager does."""
    tool = _tool()
    model, inputs = tool.build("pooling")
    torch._dynamo.reset()
    stats = inductor.install("check")
    try:
        with torch.no_grad(), torch.compiler.config.patch(force_disable_caches=True):
            got = torch.compile(model, dynamic=True)(*inputs)
    finally:
        inductor.uninstall()
        torch._dynamo.reset()
    with torch.no_grad():
        assert torch.allclose(got, model(*inputs))
    assert stats.verdicts.get("proved", 0) > 0 and "refuted" not in stats.verdicts
    print(f"dynamic pooling: {stats.calls} calls, verdicts {stats.verdicts}")


def test_simplify_mode_writes_back_inductor_size_symbols(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    """A replacement over a size symbol uses the allocator's own symbol, and is proven."""
    from torch._inductor.sizevars import SizeVarAllocator
    from torch.utils._sympy.functions import FloorDiv, ModularIndexing

    monkeypatch.setattr(SizeVarAllocator, "_simplify_with_ranges", _sabotaged(False))
    alloc, s0 = _sized_allocator()
    _, x0, x1 = _expr()
    expr = FloorDiv(x0 + s0 * x1, s0) * s0 + ModularIndexing(x0, 1, s0)
    stats = inductor.install("simplify")
    try:
        out = alloc.simplify_with_ranges(expr, {x0: s0, x1: 8})
    finally:
        inductor.uninstall()
    assert stats.replaced == 1 and stats.verdicts == {"proved": 1}
    assert s0 in out.free_symbols and not out.has(FloorDiv, ModularIndexing)
    rng = random.Random(5)
    for _ in range(50):
        point = {"s0": rng.randint(2, 40), "x1": rng.randrange(8)}
        point["x0"] = rng.randrange(point["s0"])
        assert evaluate(str(out), point) == evaluate(str(expr), point)
