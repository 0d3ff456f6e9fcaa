"""Value symbols (issue 36): a scalar integer parameter of the entry is `arg<N>`, and
`verifidx.hlo.index_values.value_pieces` follows integer ops over such parameters.

The oracle is plain Python integer arithmetic with HLO's semantics written out here: s32 and
s64 wrap (two's complement), divide truncates toward zero and remainder takes the dividend's
sign, clamp is min(max(x, lo), hi), select picks by a comparison, `and` is two's complement.
Random computations are built as HLO text and evaluated both ways at random values,
out-of-range and negative ones included: exactly one piece's constraints must hold there, and
its value must be the oracle's."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verifidx.core.errors import ParseError
from verifidx.core.expr import Const, Dim, Expr, Size, is_value_name
from verifidx.core.indexing_map import IndexingMap, SizeVar, Var
from verifidx.core.interval import Interval
from verifidx.core.syntax import parse_map, print_map
from verifidx.hlo.index_values import ValueSymbols, spelled_value, value_pieces
from verifidx.hlo.parser import parse_hlo
from verifidx.hlo.shape import integer_interval, wrap_integer

S32 = Interval(-(2**31), 2**31 - 1)


def wrap(v: int, bits: int) -> int:
    m = 1 << bits
    v %= m
    return v - m if v >= m // 2 else v


def trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def trunc_rem(a: int, b: int) -> int:
    return a - b * trunc_div(a, b)


class Program:
    """HLO lines and, beside them, the oracle's value of each instruction."""

    def __init__(self, values: list[int]) -> None:
        self.lines: list[str] = []
        self.env: dict[str, tuple[str, int | None]] = {}  # name -> (type, value at `values`)
        self.values = values
        for k in range(len(values)):
            self.emit(f"p{k}", "s32", f"parameter({k})", values[k])

    def emit(self, name: str, t: str, rhs: str, value: int | None) -> str:
        self.lines.append(f"  {name} = {t}[] {rhs}")
        self.env[name] = (t, value)
        return name

    def text(self, root: str) -> str:
        params = len(self.values)
        body = "\n".join(self.lines)
        return (f"HloModule m\nENTRY e {{\n{body}\n  x = f32[16] parameter({params})\n"
                f"  ROOT ds = f32[1] dynamic-slice(x, {root}), dynamic_slice_sizes={{1}}\n}}")


OPS = ("add", "subtract", "mulc", "clamp", "minimum", "maximum", "select", "divide",
       "remainder", "convert", "sign", "mask")
DIRECTIONS = ("LT", "LE", "GT", "GE", "EQ", "NE")


@st.composite
def computations(draw: st.DrawFn) -> tuple[str, str, list[int]]:
    """(HLO text, the root scalar's name, the parameters' values)."""
    n = draw(st.integers(1, 2))
    special = st.sampled_from([0, 1, -1, 7, 15, 16, -16, 2**31 - 1, -(2**31), 2**30])
    values = draw(st.lists(st.one_of(special, st.integers(-(2**31), 2**31 - 1),
                                     st.integers(-40, 40)), min_size=n, max_size=n))
    prog = Program(values)
    names = [f"p{k}" for k in range(n)]
    count = 0

    def fresh() -> str:
        nonlocal count
        count += 1
        return f"v{count}"

    def const(v: int, t: str = "s32") -> str:
        return prog.emit(fresh(), t, f"constant({v})", v)

    def pick(t: str = "s32") -> str:
        pool = [x for x in names if prog.env[x][0] == t]
        if not pool or draw(st.integers(0, 4)) == 0:
            return const(draw(st.integers(-20, 20)), t)
        return draw(st.sampled_from(pool))

    for _ in range(draw(st.integers(1, 5))):
        op = draw(st.sampled_from(OPS))
        t = draw(st.sampled_from(["s32", "s32", "s64"]))
        bits = 32 if t == "s32" else 64
        if t == "s64" and not any(prog.env[x][0] == "s64" for x in names):
            src = pick("s32")
            names.append(prog.emit(fresh(), "s64", f"convert({src})", prog.env[src][1]))
        a, b = pick(t), pick(t)
        va, vb = prog.env[a][1], prog.env[b][1]
        assert va is not None and vb is not None
        if op in ("add", "subtract"):
            v = wrap(va + vb if op == "add" else va - vb, bits)
            out = prog.emit(fresh(), t, f"{op}({a}, {b})", v)
        elif op == "mulc":
            c = draw(st.integers(-5, 5))
            k = const(c, t)
            out = prog.emit(fresh(), t, f"multiply({a}, {k})", wrap(va * c, bits))
        elif op in ("minimum", "maximum"):
            out = prog.emit(fresh(), t, f"{op}({a}, {b})", min(va, vb) if op == "minimum"
                            else max(va, vb))
        elif op == "clamp":
            lo, hi = sorted((draw(st.integers(-10, 20)), draw(st.integers(-10, 20))))
            kl, kh = const(lo, t), const(hi, t)
            out = prog.emit(fresh(), t, f"clamp({kl}, {a}, {kh})", min(max(va, lo), hi))
        elif op == "select":
            d = draw(st.sampled_from(DIRECTIONS))
            x, y = draw(st.sampled_from([(a, b), (b, a), (pick(t), pick(t))]))
            holds = {"LT": va < vb, "LE": va <= vb, "GT": va > vb, "GE": va >= vb,
                     "EQ": va == vb, "NE": va != vb}[d]
            cmp = prog.emit(fresh(), "pred", f"compare({a}, {b}), direction={d}", None)
            out = prog.emit(fresh(), t, f"select({cmp}, {x}, {y})",
                            prog.env[x][1] if holds else prog.env[y][1])
        elif op in ("divide", "remainder"):
            c = draw(st.integers(1, 9))
            k = const(c, t)
            out = prog.emit(fresh(), t, f"{op}({a}, {k})",
                            trunc_div(va, c) if op == "divide" else trunc_rem(va, c))
        elif op == "sign":
            out = prog.emit(fresh(), t, f"sign({a})", (va > 0) - (va < 0))
        elif op == "mask":
            c = draw(st.sampled_from([1, 3, 7, 255]))
            k = const(c, t)
            out = prog.emit(fresh(), t, f"and({a}, {k})", va & c)  # two's complement
        else:  # convert to the other type
            other = "s64" if t == "s32" else "s32"
            out = prog.emit(fresh(), other, f"convert({a})",
                            wrap(va, 64 if other == "s64" else 32))
        names.append(out)
    root = names[-1]
    if prog.env[root][0] != "s32":
        root = prog.emit(fresh(), "s32", f"convert({root})", wrap(prog.env[root][1] or 0, 32))
    return prog.text(root), root, values


@settings(max_examples=150, deadline=None)
@given(computations())
def test_value_pieces_agree_with_integer_arithmetic(case: tuple[str, str, list[int]]) -> None:
    text, root, values = case
    module = parse_hlo(text)
    symbols = ValueSymbols(module)
    inst = module.entry.instruction(root)
    pieces = value_pieces(inst, [], module.entry, [], symbols, {})
    if pieces is None:
        return  # not followed: the start stays a runtime variable (no claim)
    env = {Size(f"arg{k}"): v for k, v in enumerate(values)}
    holding = [p for p in pieces if all(e.evaluate(env) in iv for e, iv in p.where)]
    assert len(holding) == 1, (text, values, pieces)
    expected = _oracle(text, root, values)
    assert holding[0].value.evaluate(env) == expected, (text, values, holding[0])


def _oracle(text: str, root: str, values: list[int]) -> int:
    """The root's value, recomputed from the HLO text by the oracle's own interpreter (the
    generator's values are the same computation; this reads the text it produced)."""
    env: dict[str, int] = {}
    types: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if "=" not in line or line.startswith(("HloModule", "ROOT")) or "f32" in line:
            continue
        name, rest = (s.strip() for s in line.split("=", 1))
        t, call = rest.split("[] ", 1)
        op, args = call.split("(", 1)
        inside, _, attrs = args.partition(")")
        ops = [a.strip() for a in inside.split(",") if a.strip()]
        types[name] = t
        bits = 64 if t == "s64" else 32
        if op == "parameter":
            env[name] = values[int(ops[0])]
        elif op == "constant":
            env[name] = int(ops[0])
        elif op == "compare":
            d = attrs.split("direction=")[1].strip()
            a, b = env[ops[0]], env[ops[1]]
            env[name] = int({"LT": a < b, "LE": a <= b, "GT": a > b, "GE": a >= b,
                             "EQ": a == b, "NE": a != b}[d])
        elif op == "select":
            env[name] = env[ops[1]] if env[ops[0]] else env[ops[2]]
        elif op == "convert":
            env[name] = wrap(env[ops[0]], bits)
        elif op == "clamp":
            env[name] = min(max(env[ops[1]], env[ops[0]]), env[ops[2]])
        elif op == "sign":
            env[name] = (env[ops[0]] > 0) - (env[ops[0]] < 0)
        else:
            a, b = env[ops[0]], env[ops[1]]
            if op == "add":
                env[name] = wrap(a + b, bits)
            elif op == "subtract":
                env[name] = wrap(a - b, bits)
            elif op == "multiply":
                env[name] = wrap(a * b, bits)
            elif op == "minimum":
                env[name] = min(a, b)
            elif op == "maximum":
                env[name] = max(a, b)
            elif op == "divide":
                env[name] = trunc_div(a, b)
            elif op == "and":
                env[name] = a & b  # Python's & on negative ints is two's complement
            else:
                assert op == "remainder", op
                env[name] = trunc_rem(a, b)
    return env[root]


def test_the_symbols_interval_is_the_types() -> None:
    module = parse_hlo("HloModule m\nENTRY e {\n  p0 = u8[] parameter(0)\n"
                       "  p1 = s16[] parameter(1)\n  ROOT a = s16[] add(p1, p1)\n}")
    symbols = ValueSymbols(module)
    assert value_pieces(module.entry.instruction("p0"), [], module.entry, [], symbols, {})
    assert symbols.declared == {"arg0": Interval(0, 255)}
    assert integer_interval("s16") == Interval(-(2**15), 2**15 - 1)
    pieces = value_pieces(module.entry.root, [], module.entry, [], symbols, {})
    assert pieces is not None and len(pieces) == 3  # no wrap, wrap up, wrap down
    for v in (-(2**15), -16385, -16384, 0, 16383, 16384, 2**15 - 1):
        env = {Size("arg1"): v}
        hold = [p for p in pieces if all(e.evaluate(env) in iv for e, iv in p.where)]
        assert len(hold) == 1 and hold[0].value.evaluate(env) == wrap(2 * v, 16)


def test_a_value_name_is_arg_and_a_number() -> None:
    assert is_value_name("arg0") and is_value_name("arg12")
    assert not is_value_name("arg") and not is_value_name("args1") and not is_value_name("N")
    assert is_value_name("arg1_2_0")  # the element arg1[2,0] of an integer array
    assert not is_value_name("arg1_") and not is_value_name("arg_1")
    assert spelled_value("arg1_2_0") == "arg1[2,0]" and spelled_value("arg3") == "arg3"
    with pytest.raises(ValueError):
        SizeVar("N", Interval(-1, 4))  # a real size stays positive
    assert SizeVar("arg1", S32).bounds == S32


def test_a_map_with_a_value_symbol_reads_back() -> None:
    m = parse_map("(d0)<arg1> -> (d0 + max(min(arg1, 6), 0)), domain: d0 in [0, 1], "
                  "arg1 in [-2147483648, 2147483647]")
    assert m.sizes == (SizeVar("arg1", S32),)
    assert parse_map(print_map(m)) == m
    assert m.evaluate((1,), (), sizes={"arg1": -5}) == (1,)
    assert m.evaluate((1,), (), sizes={"arg1": 9}) == (7,)


def test_a_value_symbol_divides_only_where_its_interval_is_positive() -> None:
    with pytest.raises(ParseError, match="positive for every size"):
        parse_map("(d0)<arg1> -> (d0 floordiv arg1), domain: d0 in [0, 1], arg1 in [-5, 5]")
    ok = parse_map("(d0)<arg1> -> (d0 floordiv arg1), domain: d0 in [0, 1], arg1 in [1, 5]")
    assert ok.evaluate((1,), (), sizes={"arg1": 1}) == (1,)
    with pytest.raises(ParseError, match="positive values for size 'N'"):
        parse_map("(d0)<N> -> (d0), domain: d0 in [0, 1], N in [-5, 5]")
    with pytest.raises(ValueError):
        IndexingMap((Size("arg1"),), (Var(Interval(0, 1)),))  # undeclared symbol


def test_inclusion_holds_for_every_value_of_a_value_symbol_or_is_refuted_at_one() -> None:
    """Oracle: the relations enumerated at every value of arg1 in a small interval."""
    from verifidx.solve.smt import includes

    def m(text: str):  # type: ignore[no-untyped-def]
        return parse_map(f"(d0)<arg1> -> ({text}), domain: d0 in [0, 3], arg1 in [-6, 9]")

    whole, clamped, shifted = m("d0"), m("min(max(arg1, 0), 3)"), m("min(max(arg1, 0), 4)")
    for small, large in ((clamped, whole), (shifted, whole), (whole, clamped)):
        brute = all(small.with_sizes(arg1=v).relation() <= large.with_sizes(arg1=v).relation()
                    for v in range(-6, 10))
        verdict = includes(small, large)
        assert verdict.holds is brute, (small, large, verdict.message)
        if verdict.holds is False:
            at = verdict.counterexample or {}
            assert not small.with_sizes(arg1=at["arg1"]).relation() <= \
                large.with_sizes(arg1=at["arg1"]).relation()


_CTYPES = {"s8": "c_int8", "s16": "c_int16", "s32": "c_int32", "s64": "c_int64",
           "u8": "c_uint8", "u16": "c_uint16", "u32": "c_uint32", "u64": "c_uint64"}


@given(st.sampled_from(sorted(_CTYPES)), st.integers(-(2**70), 2**70))
def test_an_integer_type_holds_what_c_holds(element_type: str, value: int) -> None:
    """The oracle is C's fixed-width integers (ctypes wraps modulo 2^bits)."""
    import ctypes

    held = getattr(ctypes, _CTYPES[element_type])(value).value
    assert wrap_integer(value, element_type) == held
    iv = integer_interval(element_type)
    assert iv is not None and iv.lo <= held <= iv.hi
    assert wrap_integer(value, "f32") == value and integer_interval("f32") is None


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-(2**31), 2**31 - 1), min_size=4, max_size=4),
       st.integers(-9, 9), st.sampled_from(["reshape", "bitcast"]), st.booleans())
def test_an_integer_array_has_one_symbol_per_element(values: list[int], c: int, shape_op: str,
                                                     reverse: bool) -> None:
    """Elements of an integer array parameter read at a point through arithmetic, a
    reverse and a reshape or bitcast: one piece per point, each the element's symbol's value,
    against numpy's evaluation of the same program."""
    import numpy as np

    flipped = "  v = s32[4]{0} reverse(a), dimensions={0}\n" if reverse else \
        "  v = s32[4]{0} add(a, b)\n"
    text = ("HloModule m\n\nENTRY e {\n  p0 = s32[4]{0} parameter(0)\n"
            f"  k = s32[] constant({c})\n  b = s32[4]{{0}} broadcast(k), dimensions={{}}\n"
            "  a = s32[4]{0} add(p0, b)\n" + flipped +
            f"  ROOT r = s32[4,1]{{1,0}} {shape_op}(v)\n}}\n")
    module = parse_hlo(text)
    symbols = ValueSymbols(module)
    d0 = Dim(0)
    pieces = value_pieces(module.entry.root, [d0, Const(0)], module.entry, [], symbols,
                          {d0: Interval(0, 3)})
    assert pieces is not None  # (more than 4 where an add may wrap: a piece per wrap)
    x = np.array(values, dtype=np.int64) + c
    if not reverse:
        x = x + c
    x = (x + 2**31) % 2**32 - 2**31  # s32 wraps (each add wraps: the sum wraps alike)
    if reverse:
        x = x[::-1]
    env: dict[Expr, int] = {Size(f"arg0_{k}"): v for k, v in enumerate(values)}
    for point in range(4):
        here = {**env, d0: point}
        holding = [p for p in pieces if all(e.evaluate(here) in iv for e, iv in p.where)]
        assert len(holding) == 1
        assert holding[0].value.evaluate(here) == int(x[point])
