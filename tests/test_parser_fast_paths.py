"""The parser's quick readings (a plain attribute value's span, a plain shape read once per
text, the common no-space skip) against the full readings they stand in for: on any text,
the same end, the same value, or the same error."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

import verifidx.hlo.parser as p
from verifidx.core.errors import ParseError
from verifidx.hlo import parse_hlo
from verifidx.hlo.parser import _Parser

ALPHABET = st.sampled_from(list("ab09_.-:%={}[](),\"'/*\\ \t\n") + ["\xa0"])


def _outcome(read: object) -> object:
    try:
        return read()  # type: ignore[operator]
    except ParseError as e:
        return ("error", str(e))


@settings(max_examples=500, deadline=None)
@given(st.text(ALPHABET, max_size=40), st.integers(0, 3))
def test_a_plain_value_ends_where_the_full_scan_ends(text: str, start: int) -> None:
    quick, full = _Parser(text, "t"), _Parser(text, "t")
    quick.pos = full.pos = min(start, len(text))
    assert _outcome(lambda: quick.raw_span(stop_at_space=True)) == \
        _outcome(lambda: full.scanned_span(stop_at_space=True))


SHAPE_PARTS = st.sampled_from(["f32", "s32", "pred", "bf16", "f33", "[", "]", "2", "0", ",",
                               "{", "}", "1", " ", "<=", "?", ":T(8,128)", "->", "(", ")"])


@settings(max_examples=500, deadline=None)
@given(st.lists(SHAPE_PARTS, max_size=10).map("".join))
def test_a_shape_read_from_the_cache_is_the_shape_read_in_full(text: str) -> None:
    def read(parser: _Parser, full: bool) -> object:
        shape = parser._shape(0) if full else parser.shape()
        return shape, parser.pos

    for _ in range(2):  # (the second time from the cache)
        assert _outcome(lambda: read(_Parser(text, "t"), False)) == \
            _outcome(lambda: read(_Parser(text, "t"), True))


def test_a_module_parses_the_same_with_comments_where_tokens_start() -> None:
    plain = ("HloModule m\n\nENTRY e {\n  p = f32[4]{0} parameter(0)\n"
             "  ROOT r = f32[4]{0} negate(p), metadata={op_name=\"a/b\"}\n}\n")
    commented = plain.replace("negate(p)", "negate(/* x */p)").replace("= f32", "=/**/f32")
    assert parse_hlo(plain) == parse_hlo(commented)


NAMES = st.sampled_from(["a", "b.1", "x-2", "undefined", "ROOT", "0"])
SHAPES = st.sampled_from(["f32[2]{0}", "f32[2]", "s32[]", "f32[2,3]{1,0}", "f32[3]{0}",
                          "(f32[2], s32[])", "f32[2] {0}", "f33[2]"])
ATTRIBUTES = st.sampled_from([
    ", dimensions={0}", ", dimensions={0,1}", ", dimensions=", ", index=1", ", kind=kLoop",
    ", metadata={op_name=\"a\" source_line=3}", ", calls=%f", ", slice={[0:2]}",
    ",dimensions={0}", ", dimensions= {0}", ", dimensions={0}, dimensions={0}", ", x=/**/1"])
NOISE = st.sampled_from(["", " ", "/* c */", "\n", ",", "(", ")", "%", "=", "{", "0"])


@st.composite
def instruction_texts(draw: st.DrawFn) -> str:
    """An instruction as XLA prints one, with now and then a fragment put in anywhere."""
    operand = st.tuples(st.one_of(st.just(""), SHAPES.map(lambda s: s + " ")),
                        st.sampled_from(["", "%"]), NAMES).map("".join)
    opcode = draw(st.sampled_from(["add", "negate", "tuple", "parameter", "constant"]))
    listed = (draw(st.sampled_from(["0", "1", "-1", ""])) if opcode in ("parameter", "constant")
              else ", ".join(draw(st.lists(operand, max_size=3))))
    text = (draw(st.sampled_from(["", "ROOT "])) + draw(st.sampled_from(["", "%"]))
            + draw(NAMES) + " = " + draw(SHAPES) + " " + opcode + "(" + listed + ")"
            + "".join(draw(st.lists(ATTRIBUTES, max_size=3))))
    for _ in range(draw(st.integers(0, 2))):
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(NOISE) + text[at:]
    return text


def _read_instruction(text: str, quick: bool) -> object:
    """The instruction `text` begins with, read as the parser reads it (`quick`) or token by
    token, the quick attribute head switched off (it never matches) and no attribute list read
    before (one line stores one); what it read, where it stopped, what it recorded."""
    defined = {inst.name: inst for inst in parse_hlo(
        "HloModule m\n\nENTRY e {\n  a = f32[2]{0} parameter(0)\n  b.1 = s32[] parameter(1)\n"
        "  x-2 = f32[2,3]{1,0} parameter(2)\n  ROOT t = () tuple()\n}\n").entry.instructions}
    parser = _Parser(text, "t")
    parser.declared, parser.instruction_start = [], 0
    if quick:
        inst = parser.instruction(defined)
    else:
        p._TAILS.clear()
        saved = p._PLAIN_ATTRIBUTE
        p._PLAIN_ATTRIBUTE = re.compile(r"(?!)()")
        try:
            inst = parser.full_instruction(defined)
        finally:
            p._PLAIN_ATTRIBUTE = saved
    return inst, parser.pos, parser.declared, parser.computation_refs


@settings(max_examples=1500, deadline=None)
@given(instruction_texts())
def test_an_instruction_read_by_one_match_is_the_instruction_read_in_full(text: str) -> None:
    # Whatever the text, the quick reading of a plain head (`plain_instruction`) and of plain
    # `, name=` attributes gives what the token-by-token reading gives, or leaves it the text.
    for shape in ("f32[2]{0}", "f32[2]", "s32[]", "f32[2,3]{1,0}"):
        _Parser(shape, "t").shape()  # (the quick reading takes only shapes read before)
    assert _outcome(lambda: _read_instruction(text, True)) == \
        _outcome(lambda: _read_instruction(text, False))


def test_the_plain_forms_xla_prints_take_the_quick_reading() -> None:
    module = parse_hlo("HloModule m\n\nENTRY e {\n  %a = f32[2]{0} parameter(0)\n"
                       "  ROOT %n = f32[2]{0} add(f32[2]{0} %a, %a), metadata={op_name=\"x\"}\n}\n")
    text = "ROOT %n = f32[2]{0} add(f32[2]{0} %a, %a), dimensions={0}, metadata={op_name=\"x\"}"
    parser = _Parser(text, "t")
    inst = parser.plain_instruction({i.name: i for i in module.entry.instructions})
    assert inst is not None and inst.operands == ("a", "a") and inst.is_root
    assert inst.attributes["dimensions"] == (0,) and parser.pos == len(text)
    parameter = _Parser("%p = f32[2]{0} parameter(3)", "t").plain_instruction({})
    assert parameter is not None and parameter.parameter_number == 3


def test_a_quick_reading_given_up_halfway_leaves_no_operand_recorded_twice() -> None:
    # the second operand's shape was never read: the quick reading stops there and the full
    # one reads the whole line; what is recorded for the reused line is the full reading's
    module = parse_hlo("HloModule m\n\nENTRY e {\n  a = f32[2]{0} parameter(0)\n"
                       "  b = f32[977]{0} parameter(1)\n  ROOT t = () tuple()\n}\n")
    p._SHAPES.pop("f32[977]{0}", None)
    defined = {i.name: i for i in module.entry.instructions}
    text = "n = f32[2]{0} add(f32[2]{0} a, f32[977]{0} b)"
    readings = []
    for quick in (True, False):
        parser = _Parser(text, "t")
        parser.declared, parser.instruction_start = [], 0
        (parser.instruction if quick else parser.full_instruction)(dict(defined))
        readings.append(parser.declared)
    assert readings[0] == readings[1] and len(readings[0]) == 2


FOLLOWING = st.sampled_from(["", "\n", " ", "\n  , index=1", "\n, dimensions={0}", " }",
                             "\n}", "\n/* c */ , kind=kLoop", "\n// c\n, x=1", "\n  b = f32[2] x",
                             "/* c", "\n\t,"])


@settings(max_examples=1500, deadline=None)
@given(instruction_texts(), FOLLOWING, FOLLOWING)
def test_an_attribute_list_read_before_is_the_list_read_in_full(
        text: str, first: str, then: str) -> None:
    # An instruction's attributes taken from `_TAILS` (the same text to the end of the line,
    # read after another line or text than this one) against the token-by-token reading
    p._TAILS.clear()
    _outcome(lambda: _read_instruction(text + first, True))  # (what it leaves in `_TAILS`)
    assert _outcome(lambda: _read_instruction(text + then, True)) == \
        _outcome(lambda: _read_instruction(text + then, False))


def test_a_repeated_attribute_list_is_read_once() -> None:
    p._TAILS.clear()
    tail = ", dimensions={0}, metadata={op_name=\"a/b\" source_line=3}"
    module = parse_hlo("HloModule m\n\nENTRY e {\n  a = f32[2]{0} parameter(0)\n"
                       f"  n = f32[2]{{0}} negate(a){tail}\n"
                       f"  ROOT r = f32[2]{{0}} negate(n){tail}\n}}\n")
    n, r = module.entry.instruction("n"), module.entry.instruction("r")
    assert ("instruction", tail) in p._TAILS and r.attributes is n.attributes
    assert r.attributes["dimensions"] == (0,) and (n.line, r.line) == (5, 6)


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.one_of(ATTRIBUTES, NOISE), max_size=4).map("".join), FOLLOWING, FOLLOWING)
def test_a_header_read_before_is_the_header_read_in_full(tail: str, first: str,
                                                         then: str) -> None:
    # a module header's attributes (`HloModule m, ...`), raw, after another text than this one
    def read(source: str, cached: bool) -> object:
        parser = _Parser(source, "t")
        if cached:
            return parser.line_attributes("module", False)[1], parser.pos
        p._TAILS.clear()
        return parser.attribute_list("module", parse=False)[1], parser.pos

    p._TAILS.clear()
    _outcome(lambda: read(tail + first, True))
    assert _outcome(lambda: read(tail + then, True)) == _outcome(lambda: read(tail + then, False))


@settings(max_examples=500, deadline=None)
@given(st.text(ALPHABET, max_size=6), st.sampled_from(["", "}", "(", "->", "/*", "[", "ab"]),
       st.integers(-3, 8), st.integers(0, 8))
def test_the_token_look_is_startswith(text: str, token: str, pos: int, end: int) -> None:
    end = min(end, len(text))
    assert p._starts(text, token, pos, end) == text.startswith(token, pos, end)
