"""Index widths of logs, modules and Inductor kernels; masked bounds (issue 37).

Oracles: plain Python integer arithmetic at the reported boundaries (just below and at the
smallest overflowing size), and brute-force enumeration of masked indices at every size of a
small interval, never verifidx's own evaluator."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import verifidx as vx
from verifidx.analysis.ranges import in_bounds
from verifidx.cli import main
from verifidx.core.expr import Dim, Size, add, mul
from verifidx.core.interval import Interval

DATA = Path(__file__).parent / "data"
INT32_MAX = 2**31 - 1


def _max_offset(rows: int, cols: int) -> int:
    """The largest offset of a dense [rows, cols] array, by plain arithmetic."""
    return (rows - 1) * cols + cols - 1


def _log(tmp_path: Path, records: list[object]) -> Path:
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in records)
                    + "\n")
    return path


GATHER = {"expr": "x0 + 8960*x1", "var_ranges": {"x0": 8960, "x1": "s0"},
          "size_ranges": {"s0": ["1", "262144"]}}
POINTWISE = {"expr": "x0 + 67108864*x1", "var_ranges": {"x0": 67108864, "x1": "s0"},
             "size_ranges": {"s0": ["1", "int_oo"]}}


def test_range_log_boundaries_are_the_true_ones(tmp_path, capsys) -> None:
    path = _log(tmp_path, [GATHER, POINTWISE, {"expr": "ModularIndexing(x0, 1, 4)",
                                               "var_ranges": {"x0": 64}}])
    assert main(["range", "--log", str(path), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    gather, pointwise, small = doc["records"]
    n = gather["expr"]["smallest"]["s0"]
    assert _max_offset(n - 1, 8960) <= INT32_MAX < _max_offset(n, 8960)
    assert gather["expr"]["results"][0]["max"] == "-1 + s0 * 8960"
    assert gather["simplified"]["smallest"] == {"s0": n}
    w = gather["expr"]["witness"]
    assert w["x0"] + 8960 * w["x1"] == gather["expr"]["value"] > INT32_MAX
    # `67108864 * x1` wraps for x1 >= 32: the smallest extent s0 is 33
    x = pointwise["expr"]["witness"]["x1"]
    assert 67108864 * (x - 1) + 67108863 <= INT32_MAX < 67108864 * x
    assert pointwise["expr"]["smallest"] == {"s0": x + 1}
    assert small["verdict"] == "fits" and small["expr"]["results"][0]["max"] == 3
    assert doc["summary"] == {"fits": 1, "overflows": 2, "unknown": 0, "unsupported": 0,
                              "error": 0}


def test_range_log_malformed_records_are_one_line_each(tmp_path, capsys) -> None:
    path = _log(tmp_path, ['{"expr": "x0 +* 2", "var_ranges": {"x0": 4}}',
                           '{"expr": "x0", "var_ranges": {"x0": 4}',
                           {"expr": "x0", "var_ranges": {"x0": 4}, "mask": "x0 < 2"},
                           {"expr": "x0", "var_ranges": {"x0": 4}}])
    assert main(["range", "--log", str(path)]) == 2
    out = capsys.readouterr().out.splitlines()
    errors = [line for line in out if ": error: " in line]
    unclosed = len('{"expr": "x0", "var_ranges": {"x0": 4}') + 1  # the missing brace
    assert [e.split(": error: ")[0] for e in errors] == [f"{path}:1:5", f"{path}:2:{unclosed}",
                                                         f"{path}:3:1"]
    assert "Traceback" not in "\n".join(out)
    assert out[-1].startswith("4 records: 1 fits")
    assert main(["range", "--log", str(path), "x0"]) == 2  # a MAP beside --log


@pytest.mark.parametrize("le", [False, True])
def test_in_bounds_against_enumeration(le: bool) -> None:
    """`x0 + 5*x1` over x0 < 5, x1 < 8 masked by x1 < S (or x1 <= S), extent 5*S: in
    bounds exactly when enumeration finds no masked point outside [0, 5*S)."""
    m = vx.parse_map("(d0, d1)<S> -> (d0 + d1 * 5), domain: d0 in [0, 4], d1 in [0, 7], "
                     "S in [1, 6]")
    mask = [(add(Dim(1), mul(-1, Size("S"))), Interval(-6, 0 if le else -1))]
    b = in_bounds(m, mul(5, Size("S")), mask)
    bad = [(s, x0, x1) for s in range(1, 7) for x0, x1 in itertools.product(range(5), range(8))
           if (x1 <= s if le else x1 < s) and not 0 <= x0 + 5 * x1 < 5 * s]
    if not bad:
        assert b.verdict == "in bounds"
        return
    assert b.verdict == "out of bounds" and b.violation is not None
    assert b.violation.sizes == {"S": min(s for s, _, _ in bad)}
    p = b.violation.point
    assert (b.violation.sizes["S"], p["d0"], p["d1"]) in bad
    assert b.violation.value == p["d0"] + 5 * p["d1"]


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(-3, 3), st.integers(-3, 3), st.integers(-5, 5), st.integers(-1, 1),
       st.integers(1, 4), st.integers(0, 3))
def test_in_bounds_property(a: int, b: int, c: int, k: int, e: int, f: int) -> None:
    """`a*d0 + b*d1 + c` masked by `d1 < S + k`, extent `e*S + f`, S in [1, 4]: "in bounds"
    exactly when enumeration finds no masked point outside, and the violation's S is the
    first S at which it does."""
    m = vx.parse_map(f"(d0, d1)<S> -> (d0 * {a} + d1 * {b} + {c}), domain: d0 in [0, 3], "
                     "d1 in [0, 5], S in [1, 4]")
    mask = [(add(Dim(1), mul(-1, Size("S"))), Interval(-10, k - 1))]
    got = in_bounds(m, add(mul(e, Size("S")), f), mask)
    bad = [s for s in range(1, 5) for d0, d1 in itertools.product(range(4), range(6))
           if d1 < s + k and not 0 <= a * d0 + b * d1 + c < e * s + f]
    if not bad:
        assert got.verdict == "in bounds"
    else:
        assert got.verdict == "out of bounds" and got.violation is not None
        assert got.violation.sizes == {"S": min(bad)}
        p = got.violation.point
        s_ = got.violation.sizes["S"]
        assert p["d1"] < s_ + k and not 0 <= got.violation.value < e * s_ + f
        assert got.violation.value == a * p["d0"] + b * p["d1"] + c


def test_range_log_mask_and_extent(tmp_path, capsys) -> None:
    masked = {"expr": "x0 + 8960*x1", "var_ranges": {"x0": 8960, "x1": 262144},
              "size_ranges": {"s0": ["1", "262144"]}, "extent": "8960*s0"}
    path = _log(tmp_path, [{**masked, "mask": "x1 < s0"}, {**masked, "mask": "x1 <= s0"}])
    assert main(["range", "--log", str(path), "--json"]) == 1
    inside, outside = (r["bounds"] for r in json.loads(capsys.readouterr().out)["records"])
    assert inside["verdict"] == "in bounds" and inside["extent"] == "s0 * 8960"
    assert outside["verdict"] == "out of bounds"
    s, w = outside["smallest"]["s0"], outside["witness"]
    assert w["x1"] <= s and w["x0"] + 8960 * w["x1"] >= 8960 * s


def test_indexing_widths_jax_export_gather(capsys) -> None:
    path = DATA / "widths" / "gather_rows.dyn.mlir"
    assert main(["indexing", str(path), "--widths"]) == 1
    out = capsys.readouterr().out
    assert "32-bit indexing is safe up to b = 239,674" in out
    assert main(["indexing", str(path), "--widths", "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    b = doc["widths"]["smallest"]["b"]
    assert _max_offset(b - 1, 8960) <= INT32_MAX < _max_offset(b, 8960)
    table = doc["computations"][0]["outputs"][0]["operands"][0]
    assert table["widths"][0]["max"] == "-1 + b * 8960" and table["widths"][0]["fits"] is False
    assert table["widths"][0]["value"] > INT32_MAX
    index = doc["computations"][0]["outputs"][0]["operands"][1]
    assert index["widths"][0] == {"min": 0, "max": 15, "min_value": 0, "max_value": 15,
                                  "exact": True, "fits": True}
    assert main(["indexing", str(path), "--widths", "--bits", "64"]) == 0


def test_indexing_widths_static_hlo(tmp_path, capsys) -> None:
    hlo = tmp_path / "m.hlo"
    hlo.write_text("HloModule m\n\nENTRY e {\n  p = f32[65537,32768]{1,0} parameter(0)\n"
                   "  ROOT n = f32[65537,32768]{1,0} negate(p)\n}\n")
    assert main(["indexing", str(hlo), "--widths", "--json"]) == 1
    w = json.loads(capsys.readouterr().out)["widths"]
    assert w["verdict"] == "overflows" and w["smallest"] == {}
    assert w["value"] > INT32_MAX
    assert main(["indexing", str(hlo), "--widths", "--bits", "40"]) == 0


def test_check_index_type_guards() -> None:
    """Inductor's int32 choice for `c0 < 8960*s0` is safe only under the guard it installs."""
    sympy = pytest.importorskip("sympy")
    from verifidx.clients.widths import Access, check_index_type

    c0, s0 = sympy.symbols("c0 s0", integer=True)
    access = Access("buf0", c0, {c0: 8960 * s0})
    ranges = {"s0": ["2", "int_oo"]}
    unsafe = check_index_type("int32", [access], ranges)
    assert len(unsafe) == 1 and unsafe[0].verdict == "overflows"
    n = unsafe[0].sizes["s0"]
    assert 8960 * (n - 1) - 1 <= INT32_MAX < 8960 * n - 1
    assert check_index_type("int32", [access], ranges, [8960 * s0 <= INT32_MAX]) == []
    assert check_index_type("int64", [access], ranges) == []


def test_inductor_widths_hook_through_the_decision_function() -> None:
    """A CPU run: Inductor's own decision (`SIMDKernelFeatures.select_index_dtype`, which the
    CPU backend never calls) is asked for each kernel the C++ backend generates; the hook sees
    int32 and checks the kernel's accesses under the shape environment's ranges and guards."""
    torch = pytest.importorskip("torch")
    from torch._inductor.codegen import cpp
    from torch._inductor.codegen.simd_kernel_features import SIMDKernelFeatures
    from torch._inductor.utils import sympy_product

    from verifidx.clients import inductor as hook
    from verifidx.clients.widths import check_index_type

    seen: list[tuple[object, list[object], dict[str, list[str]]]] = []
    original = cpp.CppScheduling.codegen_node

    def codegen_node(self, node):  # type: ignore[no-untyped-def]
        from torch._inductor.virtualized import V

        numel, rnumel = (sympy_product(g) for g in node.group[1])
        dtype = SIMDKernelFeatures(list(node.get_nodes()), numel, rnumel).select_index_dtype()
        accesses = hook.kernel_accesses(node.get_nodes())
        ranges = {str(k): [str(v.lower), str(v.upper)]
                  for k, v in V.graph.sizevars.shape_env.var_to_range.items()}
        seen.append((dtype, accesses, ranges))
        return original(self, node)

    x = torch.randn(8, 8960)
    torch._dynamo.mark_dynamic(x, 0)
    stats = hook.install("widths", on_unsafe="raise")
    cpp.CppScheduling.codegen_node = codegen_node
    try:
        with torch._inductor.config.patch(force_disable_caches=True):
            torch._dynamo.reset()
            out = torch.compile(lambda t: t * 2 + 1)(x)
    finally:
        hook.uninstall()
        cpp.CppScheduling.codegen_node = original
        torch._dynamo.reset()
    assert torch.equal(out, x * 2 + 1)
    assert stats.kernels == {"int32": 1} and stats.unsafe == []  # safe under its guard
    (dtype, accesses, ranges), = seen
    assert str(dtype) == "torch.int32" and accesses
    # the same recorded accesses without the guard: unsafe from the first size above it
    unsafe = check_index_type("int32", accesses, ranges)  # type: ignore[arg-type]
    assert unsafe and all(u.verdict == "overflows" for u in unsafe)
    (name, n), = unsafe[0].sizes.items()
    assert 8960 * (n - 1) - 1 <= INT32_MAX < 8960 * n - 1


def test_check_index_type_leaves_out_a_guard_it_does_not_read() -> None:
    sympy = pytest.importorskip("sympy")
    from verifidx.clients.widths import Access, check_index_type

    c0, s0 = sympy.symbols("c0 s0", integer=True)
    access = Access("buf0", c0, {c0: 8960 * s0})
    odd = sympy.sqrt(s0) < 5  # not a term verifidx reads
    unsafe = check_index_type("int32", [access], {"s0": ["2", "int_oo"]}, [odd])
    assert [u.verdict for u in unsafe] == ["overflows"]


def test_committed_corpus_records_get_ranges_and_checked_witnesses(tmp_path, capsys) -> None:
    """The first records of the committed dynamic Inductor corpus: each gets a range (or is
    unsupported with the reason), the expression and its simplification agree, and each
    overflow's witness, evaluated on the sympy tree with Python integers at the smallest
    sizes, is the reported value outside int32."""
    pytest.importorskip("sympy")
    from verifidx.clients.sympy_bridge import evaluate_sympy, parse_text

    lines = (DATA / "inductor" / "dynamic_roll_scale.jsonl").read_text().splitlines()[:8]
    path = _log(tmp_path, lines)
    main(["range", "--log", str(path), "--json"])
    records = json.loads(capsys.readouterr().out)["records"]
    assert len(records) == 8 and {r["verdict"] for r in records} <= {"fits", "overflows"}
    overflows = 0
    for line, r in zip(lines, records):
        assert r["expr"]["verdict"] == r["simplified"]["verdict"]
        if r["verdict"] != "overflows":
            continue
        overflows += 1
        e = r["expr"]
        record = json.loads(line)
        tree = parse_text(record["expr"], set(record["var_ranges"]) | set(record["size_ranges"]))
        env = {**e["smallest"], **e["witness"]}
        assert set(env) >= {str(s) for s in tree.free_symbols}
        for name, extent in record["var_ranges"].items():  # a point of the loop nest
            bound = evaluate_sympy(parse_text(str(extent), set(record["size_ranges"])), env)
            assert 0 <= e["witness"].get(name, 0) < bound
        assert evaluate_sympy(tree, env) == e["value"] > INT32_MAX
    assert overflows


def test_module_first_overflow_orders_every_size() -> None:
    """Two operands, one without the size M: its overflow holds at every M, so at M's lower
    end it comes first, lexicographically, before one that needs M = 2."""
    from verifidx.analysis.ranges import fits
    from verifidx.analysis.widths import ModuleWidths, OperandWidth

    rows = vx.parse_map("(d0)<N> -> (d0 * 8960), domain: d0 in [0, 262143], N in [1, 262144], "
                        "d0 - N in [-262144, -1]")
    both = vx.parse_map("(d0)<M, N> -> (d0 * 1073741824 * M), domain: d0 in [0, 7], "
                        "M in [1, 4], N in [1, 262144], d0 - N in [-262144, -1]")
    ops = [OperandWidth("f", "fusion", 0, k, f"p{k}", 0, 0, "f32[]", fits(m))
           for k, m in enumerate((rows, both))]
    assert ops[1].fit is not None and ops[1].fit.overflow is not None
    assert ops[1].fit.overflow.sizes == {"M": 1, "N": 3}  # 2 * 2^30 * 1 at d0 = 2
    first = ModuleWidths(32, True, tuple(ops)).first
    assert first is not None and first[0].parameter == 1
    assert first[1].sizes == {"M": 1, "N": 3}
    ops[1] = OperandWidth("f", "fusion", 0, 1, "p1", 0, 0, "f32[]",
                          fits(both, params={"M": Interval(2, 4)}))
    first = ModuleWidths(32, True, tuple(ops)).first
    assert first is not None and first[0].parameter == 0
    row = next(d for d in itertools.count(239000) if d * 8960 > INT32_MAX)
    assert first[1].sizes == {"M": 1, "N": row + 1}


def test_indexing_widths_checks_the_stores(capsys) -> None:
    """`x[None, :] + y[:, None]` on x: [8960], y: [b]: every read fits for every b, the
    output [b, 8960] written does not."""
    path = DATA / "widths" / "outer_sum.dyn.mlir"
    assert main(["indexing", str(path), "--widths", "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    output = doc["computations"][0]["outputs"][0]
    assert all(w["fits"] for op in output["operands"] for w in op["widths"])
    (store,) = output["widths"]
    b = store["smallest"]["b"]
    assert _max_offset(b - 1, 8960) <= INT32_MAX < _max_offset(b, 8960)
    assert doc["widths"]["access"] == "write" and doc["widths"]["smallest"] == {"b": b}
    w = store["witness"]
    assert w["d0"] < b and w["d0"] * 8960 + w["d1"] == store["value"] > INT32_MAX


def test_widths_hook_raises_on_an_overflow_and_only_warns_on_an_unread_index(caplog) -> None:
    """`_check_widths` under a graph handler whose shape environment has `s0 in [2, oo]` and no
    guard: `c0 < 8960*s0` raises with the smallest s0; an indirect index is a warning."""
    torch = pytest.importorskip("torch")
    import sympy
    from torch._inductor.sizevars import SizeVarAllocator
    from torch._inductor.virtualized import V
    from torch.fx.experimental.symbolic_shapes import ShapeEnv
    from torch.utils._sympy.value_ranges import ValueRanges

    from verifidx.clients import inductor as hook

    c0, s0, ind = sympy.symbols("c0 s0 indirect0", integer=True)
    env = ShapeEnv()
    env.var_to_range[s0] = ValueRanges(2, torch.utils._sympy.numbers.int_oo)

    class Dep:
        def __init__(self, name: str, index: object) -> None:
            self.name, self.index, self.ranges = name, index, {c0: 8960 * s0}

    class Node:
        def __init__(self, *deps: Dep) -> None:
            self.read_writes = type("RW", (), {"reads": deps, "writes": ()})()

    class Graph:
        sizevars = SizeVarAllocator(env)

    with V.set_graph_handler(Graph()):  # type: ignore[arg-type]
        with pytest.raises(hook.UnsafeIndexType) as raised:
            hook._check_widths([Node(Dep("buf0", c0))], "raise")
        (u,) = raised.value.unsafe
        n = u.sizes["s0"]
        assert 8960 * (n - 1) - 1 <= INT32_MAX < 8960 * n - 1
        with caplog.at_level("WARNING", logger="verifidx.clients.inductor"):
            hook._check_widths([Node(Dep("buf1", c0 + ind))], "raise")  # no raise
        assert "buf1" in caplog.text and "not proven" in caplog.text
