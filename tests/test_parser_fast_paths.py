"""The parser's quick readings (a plain attribute value's span, a plain shape read once per
text, the common no-space skip) against the full readings they stand in for: on any text,
the same end, the same value, or the same error."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

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
