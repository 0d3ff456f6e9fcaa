"""Pass-by-pass validation through the changed region (`verifidx.clients.pass_region`): random
programs of data movement, arithmetic and dynamic slices, one instruction changed as a pass
would change it, and the verdict against the brute-force oracle of tests/fusion_oracle.py
(the elements each output element reads, at each value of the scalar parameter). A `same`
must hold at every value tried; where the reads differ the verdict must not be `same`."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
from fusion_oracle import all_reads
from hypothesis import assume, event, given, settings
from hypothesis import strategies as st

from verifidx.clients.pass_region import PassChain, Region, changed_region
from verifidx.clients.translation import DIFFER, SAME, _validate_whole, validate_programs
from verifidx.hlo import parse_hlo
from verifidx.hlo.parser import Reused

EXAMPLES = 400 if os.environ.get("HYPOTHESIS_PROFILE") == "thorough" else 25
"""Each example validates two programs with dynamic slices and selects (about a second)."""

VALUES = (-3, -1, 0, 1, 2, 5, 9)
"""Values of the scalar parameter p2 at which the oracle is asked."""

CHAIN = PassChain()
"""Shared by every example, as by the passes of one pipeline: a part of a region proven in
one example counts as proven in another only by its content (`RegionPart.key`)."""

OPS = ("reverse", "negate", "add", "multiply", "halves", "pad", "dslice", "dupdate", "select")


def _instruction(op: str, name: str, a: str, b: str, start: str, k: int) -> list[str]:
    """Lines defining `name` (f32[8]) from values `a`, `b` and the s32[] value `start`; `k`
    varies the op's attributes (a window, an edge, an order)."""
    if op in ("negate", "reverse"):
        extra = ", dimensions={0}" if op == "reverse" else ""
        return [f"{name} = f32[8] {op}({a}){extra}"]
    if op in ("add", "multiply"):
        return [f"{name} = f32[8] {op}({a}, {b})"]
    if op == "halves":
        lo = k % 5
        return [f"{name}.l = f32[4] slice({a}), slice={{[{lo}:{lo + 4}]}}",
                f"{name}.r = f32[4] slice({b}), slice={{[0:4]}}",
                f"{name} = f32[8] concatenate({name}.l, {name}.r), dimensions={{0}}"]
    if op == "pad":
        low = k % 3
        return [f"{name}.s = f32[6] slice({a}), slice={{[1:7]}}",
                f"{name} = f32[8] pad({name}.s, zero), padding={low}_{2 - low}"]
    if op == "dslice":
        return [f"{name}.c = f32[16] concatenate({a}, {b}), dimensions={{0}}",
                f"{name} = f32[8] dynamic-slice({name}.c, {start}), dynamic_slice_sizes={{8}}"]
    if op == "dupdate":
        return [f"{name}.u = f32[3] slice({b}), slice={{[{k % 4}:{k % 4 + 3}]}}",
                f"{name} = f32[8] dynamic-update-slice({a}, {name}.u, {start})"]
    assert op == "select"
    return [f"{name}.p = pred[8] compare({a}, {b}), direction=LT",
            f"{name} = f32[8] select({name}.p, {a}, {b})"]


@st.composite
def programs(draw: st.DrawFn) -> tuple[list[tuple[str, int, int, int, int]], int]:
    """Instructions as (op, first operand, second operand, start, variant) over the values
    defined before them (0 and 1 the f32[8] parameters), and the one to change."""
    n = draw(st.integers(3, 6))
    body = []
    for k in range(n):
        defined = k + 2
        # the first operand the value just defined: every value reaches the root
        body.append((draw(st.sampled_from(OPS)), defined - 1,
                     draw(st.integers(0, defined - 1)), draw(st.integers(0, 2)),
                     draw(st.integers(0, 5))))
    return body, draw(st.integers(0, n - 2))


def _text(body: list[tuple[str, int, int, int, int]], two_outputs: bool,
          fused: int | None = None) -> str:
    """The program; `fused`: that value computed by a fusion of its instructions, as XLA's
    fusion pass writes it."""
    lines = ["p0 = f32[8] parameter(0)", "p1 = f32[8] parameter(1)", "i = s32[] parameter(2)",
             "zero = f32[] constant(0)", "one = s32[] constant(1)", "three = s32[] constant(3)",
             "i1 = s32[] add(i, one)", "i3 = s32[] multiply(i, three)"]
    names = ["p0", "p1"]
    starts = ["i", "i1", "i3"]
    computations = ""
    for k, (op, a, b, s, variant) in enumerate(body):
        name = f"v{k}"
        if k == fused:
            inner = _instruction(op, "r", "fa", "fb", "fs", variant)
            inner[-1] = "ROOT " + inner[-1]
            computations += ("fused {\n  fa = f32[8] parameter(0)\n  fb = f32[8] parameter(1)\n"
                             "  fs = s32[] parameter(2)\n  zero = f32[] constant(0)\n  "
                             + "\n  ".join(inner) + "\n}\n\n")
            lines.append(f"{name} = f32[8] fusion({names[a]}, {names[b]}, {starts[s]}), "
                         "kind=kLoop, calls=fused")
        else:
            lines += _instruction(op, name, names[a], names[b], starts[s], variant)
        names.append(name)
    last = names[-1]
    if two_outputs:
        lines.append(f"ROOT out = (f32[8], f32[8]) tuple({last}, {names[-2]})")
    else:
        lines.append(f"ROOT out = f32[8] negate({last})")
    return "HloModule m\n\n" + computations + "ENTRY e {\n  " + "\n  ".join(lines) + "\n}\n"


MUTATIONS = ("variant", "operand", "op", "start", "commute")


def _mutated(body: list[tuple[str, int, int, int, int]], at: int, how: str, by: int
             ) -> list[tuple[str, int, int, int, int]]:
    op, a, b, s, variant = body[at]
    defined = at + 2
    if how == "variant":
        variant = (variant + 1 + by) % 6
    elif how == "operand":
        b = (b + 1 + by) % defined
    elif how == "op":
        op = OPS[(OPS.index(op) + 1 + by) % len(OPS)]
    elif how == "start":
        s = (s + 1 + by) % 3
    else:  # what a pass may do and keep every read: add for multiply, operands swapped
        op = {"add": "multiply", "multiply": "add"}.get(op, op)
        a, b = (b, a) if op in ("add", "multiply") else (a, b)
    return [*body[:at], (op, a, b, s, variant), *body[at + 1:]]


def _reads(text: str) -> list[Any]:
    module = parse_hlo(text)
    leaves = len(module.entry.root.shape.leaves())
    out = []
    for v in VALUES:
        values = {0: np.arange(8, dtype=np.float32), 1: np.arange(8, 16, dtype=np.float32),
                  2: np.int32(v)}
        out.append([all_reads(module, module.entry, leaf, values=values)
                    for leaf in range(leaves)])
    return out


@settings(max_examples=EXAMPLES, deadline=None)
@given(programs(), st.sampled_from(MUTATIONS), st.integers(0, 3), st.booleans(),
       st.booleans())
def test_a_changed_instruction_is_same_only_where_every_read_is(
        program: tuple[list[tuple[str, int, int, int, int]], int], how: str, by: int,
        two_outputs: bool, fuse: bool) -> None:
    body, at = program
    before = _text(body, two_outputs)
    kinds = MUTATIONS[MUTATIONS.index(how):] + MUTATIONS[:MUTATIONS.index(how)]
    fused = at if fuse else None  # the changed value computed in a fusion, as after XLA's
    after = next((t for t in (_text(_mutated(body, at, k, by), two_outputs, fused)
                              for k in kinds) if t != before), None)
    assume(after is not None)  # no kind changes this instruction
    assert after is not None
    verdict = validate_programs(before, after, chain=CHAIN).verdict()
    region = changed_region(parse_hlo(before), parse_hlo(after))
    by_region = isinstance(region, Region) and region.before is not None
    event(f"{verdict}, " + (region if isinstance(region, str) else "by the region"
                            if by_region else "the same subgraph"))
    if verdict == SAME:
        assert _reads(before) == _reads(after), (before, after)
        if by_region:  # the whole modules never contradict the region's proof
            whole = _validate_whole(parse_hlo(before), parse_hlo(after), 2000, remember=False)
            assert whole.verdict() != DIFFER, (before, after)
    elif _reads(before) != _reads(after):
        assert verdict != SAME


def test_the_region_is_the_changed_instructions_and_their_verdict_stands_for_the_whole() -> None:
    body = [("reverse", 0, 0, 0, 0), ("halves", 2, 1, 0, 1), ("add", 3, 2, 0, 0),
            ("negate", 4, 4, 0, 0)]
    before = _text(body, False)
    after = _text(_mutated(body, 1, "variant", 0), False)  # one window moved by one
    region = changed_region(parse_hlo(before), parse_hlo(after))
    assert isinstance(region, Region) and region.size == (1, 1), region  # v1.l alone
    v = validate_programs(before, after)
    assert v.verdict() == DIFFER  # the region differs: the whole modules decide
    assert v.pairs[0].counterexample is not None
    renamed = before.replace("v0", "w0")
    same = validate_programs(before, renamed)
    assert same.verdict() == SAME and "same subgraph" in same.pairs[0].reason


def test_a_changed_start_is_left_to_the_whole_modules() -> None:
    body = [("dslice", 0, 1, 0, 0), ("negate", 2, 2, 0, 0)]
    before = _text(body, False)
    after = before.replace("i1 = s32[] add(i, one)", "i1 = s32[] add(i, three)") \
        .replace("dynamic-slice(v0.c, i)", "dynamic-slice(v0.c, i1)")
    region = changed_region(parse_hlo(before), parse_hlo(after))
    assert isinstance(region, str) and "chooses what" in region
    assert validate_programs(before, after).verdict() == DIFFER


def test_an_elided_literal_is_never_taken_for_the_same_value() -> None:
    text = ("HloModule m\n\nENTRY e {\n  p0 = f32[8] parameter(0)\n"
            "  c = f32[8] constant({...})\n  ROOT r = f32[8] add(p0, c)\n}\n")
    region = changed_region(parse_hlo(text), parse_hlo(text))
    assert isinstance(region, Region) and region.before is not None  # not "the same subgraph"
    plain = text.replace("{...}", "{1, 2, 3, 4, 5, 6, 7, 8}")
    same = changed_region(parse_hlo(plain), parse_hlo(plain))
    assert isinstance(same, Region) and same.before is None


@settings(max_examples=EXAMPLES, deadline=None)
@given(programs(), st.booleans())
def test_fusing_an_instruction_leaves_the_same_subgraph(
        program: tuple[list[tuple[str, int, int, int, int]], int], two_outputs: bool) -> None:
    body, at = program
    before, after = _text(body, two_outputs), _text(body, two_outputs, at)
    region = changed_region(parse_hlo(before), parse_hlo(after))
    assert isinstance(region, Region) and region.before is None, region
    assert validate_programs(before, after).verdict() == SAME


_LOOP = """HloModule m

body {
  t = (s32[], f32[8]) parameter(0)
  i = s32[] get-tuple-element(t), index=0
  x = f32[8] get-tuple-element(t), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  r = f32[8] reverse(x), dimensions={0}
  ROOT o = (s32[], f32[8]) tuple(j, r)
}

cond {
  t = (s32[], f32[8]) parameter(0)
  i = s32[] get-tuple-element(t), index=0
  three = s32[] constant(3)
  ROOT c = pred[] compare(i, three), direction=LT
}

ENTRY e {
  p0 = f32[8] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[8]) tuple(zero, p0)
  w = (s32[], f32[8]) while(init), condition=cond, body=body
  ROOT out = f32[8] get-tuple-element(w), index=1
}
"""


def test_a_pass_that_changes_a_called_body_under_its_name_is_not_the_same_subgraph() -> None:
    # Pass by pass the parser hands both snapshots the same object for the unchanged `while`
    # line; what it reads is what *each* module's body does (reverse three times vs copy).
    after = _LOOP.replace("r = f32[8] reverse(x), dimensions={0}", "r = f32[8] copy(x)")
    reuse = Reused()
    a, b = parse_hlo(_LOOP, reuse=reuse), parse_hlo(after, reuse=reuse)
    assert a.entry.instruction("w") is b.entry.instruction("w")  # the case in point
    region = changed_region(a, b)
    assert not (isinstance(region, Region) and region.before is None), region
    assert validate_programs(a, b).verdict() != SAME


def _two_layers(op: str, c1: str, c2: str) -> str:
    return ("HloModule m\n\nENTRY e {\n  p0 = f32[8] parameter(0)\n  p1 = f32[8] parameter(1)\n"
            f"  c1 = f32[8] constant({c1})\n  c2 = f32[8] constant({c2})\n"
            f"  a = f32[8] {op}(p0, c1)\n  b = f32[8] {op}(p1, c2)\n"
            "  ra = f32[8] reverse(a), dimensions={0}\n  rb = f32[8] reverse(b), dimensions={0}\n"
            "  ROOT out = (f32[8], f32[8]) tuple(ra, rb)\n}\n")


def test_a_region_splits_into_parts_and_alike_parts_are_proven_once() -> None:
    ones = "{1, 1, 1, 1, 1, 1, 1, 1}"
    twos = "{2, 2, 2, 2, 2, 2, 2, 2}"
    # two layers changed alike (add -> multiply keeps every read): one part's content twice
    region = changed_region(parse_hlo(_two_layers("add", ones, ones)),
                            parse_hlo(_two_layers("multiply", ones, ones)))
    assert isinstance(region, Region) and len(region.parts) == 2, region
    assert region.parts[0].key == region.parts[1].key
    v = validate_programs(_two_layers("add", ones, ones), _two_layers("multiply", ones, ones))
    assert v.verdict() == SAME and "1 of its 2 parts are parts proven before" in \
        v.pairs[0].reason, v.pairs[0].reason
    # another constant is other content: proven for itself
    region = changed_region(parse_hlo(_two_layers("add", ones, twos)),
                            parse_hlo(_two_layers("multiply", ones, twos)))
    assert isinstance(region, Region) and region.parts[0].key != region.parts[1].key


def test_a_part_proven_before_never_stands_for_one_that_reads_otherwise() -> None:
    chain = PassChain()
    ones = "{1, 1, 1, 1, 1, 1, 1, 1}"
    first = validate_programs(_two_layers("add", ones, ones),
                              _two_layers("multiply", ones, ones), chain=chain)
    assert first.verdict() == SAME
    # the same ops, but the change now moves what b reads: not the part proven before
    later = _two_layers("multiply", ones, ones).replace(
        "rb = f32[8] reverse(b), dimensions={0}", "rb = f32[8] reverse(b), dimensions={0}\n"
        "  rb2 = f32[8] reverse(rb), dimensions={0}").replace("tuple(ra, rb)", "tuple(ra, rb2)")
    assert validate_programs(_two_layers("add", ones, ones), later, chain=chain).verdict() \
        != SAME


def test_a_computation_named_like_the_region_keeps_its_meaning() -> None:
    head = ("HloModule m\n\nregion {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
            "  ROOT s = f32[] add(a, b)\n}\n\nENTRY e {\n  p0 = f32[8] parameter(0)\n"
            "  p1 = f32[8] parameter(1)\n  z = f32[] constant(0)\n  x = f32[8] add(p0, p1)\n")
    before = head + ("  r = f32[] reduce(x, z), dimensions={0}, to_apply=region\n"
                     "  ROOT n = f32[] negate(r)\n}\n")
    after = head + ("  x2 = f32[1,8] reshape(x)\n"
                    "  r = f32[] reduce(x2, z), dimensions={0,1}, to_apply=region\n"
                    "  ROOT n = f32[] negate(r)\n}\n")
    region = changed_region(parse_hlo(before), parse_hlo(after))
    assert isinstance(region, Region) and region.before is not None
    assert region.before.computations["region"].root.opcode == "add"  # the reducer itself
    assert region.before.entry.name != "region"
    assert validate_programs(before, after).verdict() == SAME


@settings(max_examples=EXAMPLES, deadline=None)
@given(programs(), st.lists(st.tuples(st.sampled_from(MUTATIONS), st.integers(0, 3),
                                      st.integers(0, 5)), min_size=2, max_size=4),
       st.booleans())
def test_a_pipeline_of_passes_gets_the_verdicts_each_pair_gets_alone(
        program: tuple[list[tuple[str, int, int, int, int]], int],
        changes: list[tuple[str, int, int]], two_outputs: bool) -> None:
    # What one pipeline shares (lines and computations the parser hands over, the table of
    # subgraphs, the parts proven before) never changes a verdict.
    body, _at = program
    texts = [_text(body, two_outputs)]
    for how, by, where in changes:
        body = _mutated(body, where % len(body), how, by)
        texts.append(_text(body, two_outputs, where % len(body) if by == 3 else None))
    reuse, chain = Reused(), PassChain()
    modules = [parse_hlo(t, reuse=reuse) for t in texts]
    for k in range(1, len(texts)):
        piped = validate_programs(modules[k - 1], modules[k], chain=chain)
        alone = validate_programs(texts[k - 1], texts[k])
        assert [(p.verdict, p.value_equality) for p in piped.pairs] == \
            [(p.verdict, p.value_equality) for p in alone.pairs], (texts[k - 1], texts[k])


def _chained(op: str) -> str:
    ones = "{1, 1, 1, 1, 1, 1, 1, 1}"
    return ("HloModule m\n\nENTRY e {\n  p0 = f32[8] parameter(0)\n"
            f"  c1 = f32[8] constant({ones})\n  a = f32[8] {op}(p0, c1)\n"
            "  ra = f32[8] reverse(a), dimensions={0}\n"
            f"  c2 = f32[8] constant({ones})\n  b = f32[8] {op}(ra, c2)\n"
            "  ROOT out = f32[8] negate(b)\n}\n")


def test_an_instruction_left_under_its_name_between_two_changes_splits_the_region() -> None:
    # ra is the same op on both sides between the two rewritten adds: it is paired as the
    # root is, and the layers' changes are two alike parts instead of one chain
    region = changed_region(parse_hlo(_chained("add")), parse_hlo(_chained("multiply")))
    assert isinstance(region, Region) and region.size == (4, 4), region  # a, b, constants
    assert len(region.parts) == 2 and region.parts[0].key == region.parts[1].key
    v = validate_programs(_chained("add"), _chained("multiply"))
    assert v.verdict() == SAME and "1 of its 2 parts" in v.pairs[0].reason, v.pairs[0].reason
    # a paired name whose operands read otherwise is no pairing that proves anything false
    moved = _chained("multiply").replace(
        "  a = f32[8] multiply(p0, c1)", "  q = f32[8] reverse(p0), dimensions={0}\n"
        "  a = f32[8] multiply(q, c1)")
    assert validate_programs(_chained("add"), moved).verdict() == DIFFER
