"""`parse_hlo(reuse=...)`, which takes the lines a compiler pass left as they were from the
snapshot before: the module is the one a fresh parse gives, and an error is the one it
raises, at the same place."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from verifidx.core.errors import ParseError
from verifidx.hlo import parse_hlo
from verifidx.hlo.parser import Reused

CORPUS = Path(__file__).parent / "data" / "translation" / "corpus.json"


def test_a_sequence_of_snapshots_parses_as_each_alone() -> None:
    programs = json.loads(CORPUS.read_text(encoding="utf-8"))["programs"]
    texts = [t for p in programs for t in (p["before"], p["after"], *(m["text"] for m in
                                                                      p["mutants"]))]
    reuse = Reused()
    hits = whole = 0
    last: dict[str, object] = {}
    for text in texts:
        before = dict(reuse.lines)
        got = parse_hlo(text, reuse=reuse)
        hits += sum(line.lstrip() in before for line in text.splitlines())
        whole += sum(last.get(n) is c for n, c in got.computations.items())
        last = dict(got.computations)
        want = parse_hlo(text)
        assert got == want
        for a, b in zip(got.computations.values(), want.computations.values()):
            assert [(i.line, i.column) for i in a.instructions] == \
                [(i.line, i.column) for i in b.instructions]
    assert hits > len(texts)  # lines were taken from the snapshot before
    assert whole > 0  # and computations, whole, where they stood as they were


def test_a_computation_taken_whole_still_needs_what_it_calls() -> None:
    first = ("HloModule m\n\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
             "  ROOT s = f32[] add(a, b)\n}\n\nsum {\n  p = f32[4] parameter(0)\n"
             "  z = f32[] constant(0)\n  ROOT r = f32[] reduce(p, z), dimensions={0}, "
             "to_apply=add\n}\n\nENTRY e {\n  p = f32[4] parameter(0)\n"
             "  ROOT c = f32[] call(p), to_apply=sum\n}\n")
    second = first.replace("add {", "plus {")  # `sum` stands where it stood, as it was
    assert "undefined computation 'add'" in _same_error_after(first, second)


@pytest.mark.parametrize("change, message", [
    ("  q = f32[4] parameter(1)\n", "undefined operand 'p'"),
    ("  p = f32[5] parameter(0)\n", "declared as f32[4] but defined as f32[5]"),
])
def test_a_reused_line_is_checked_against_its_operands(change: str, message: str) -> None:
    first = ("HloModule m\n\nENTRY e {\n  p = f32[4] parameter(0)\n"
             "  ROOT r = f32[4] negate(f32[4] p)\n}\n")
    second = first.replace("  p = f32[4] parameter(0)\n", change)
    assert message in _same_error_after(first, second)


def _same_error_after(first: str, second: str) -> str:
    """The error `second` raises parsed after `first` (reusing it), which must be the one it
    raises alone."""
    reuse = Reused()
    parse_hlo(first, reuse=reuse)
    with pytest.raises(ParseError) as fresh:
        parse_hlo(second)
    with pytest.raises(ParseError) as reused:
        parse_hlo(second, reuse=reuse)
    assert str(reused.value) == str(fresh.value)
    return str(reused.value)


def test_a_computation_that_moved_is_taken_whole_on_its_new_lines() -> None:
    body = ("add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
            "  ROOT s = f32[] add(a, b)\n}\n\n")
    entry = ("ENTRY e {\n  p = f32[4] parameter(0)\n  z = f32[] constant(0)\n"
             "  ROOT r = f32[] reduce(p, z), dimensions={0}, to_apply=add\n}\n")
    first = "HloModule m\n\n" + body + entry
    # a computation put in before it: `add` and the entry stand three lines further down
    second = ("HloModule m\n\nneg {\n  x = f32[] parameter(0)\n  ROOT n = f32[] negate(x)\n}\n\n"
              + body + entry)
    reuse = Reused()
    old = parse_hlo(first, reuse=reuse).computations["add"]
    got = parse_hlo(second, reuse=reuse)
    assert got == parse_hlo(second)
    moved = got.computations["add"]
    assert [i.line for i in moved.instructions] == [i.line + 5 for i in old.instructions]
    assert moved.instructions[0].raw_attributes is old.instructions[0].raw_attributes  # copies
    # a moved computation that calls one no longer there: the error a fresh parse gives
    mul = "mul {\n  x = f32[] parameter(0)\n  ROOT m = f32[] multiply(x, x)\n}\n\n"
    calls = body.replace("ROOT s = f32[] add(a, b)", "ROOT s = f32[] call(a), to_apply=mul")
    longer = ("neg {\n  x = f32[] parameter(0)\n  y = f32[] negate(x)\n  ROOT n = f32[] "
              "negate(y)\n}\n\n")
    assert "undefined computation 'mul'" in _same_error_after(
        "HloModule m\n\n" + mul + calls + entry, "HloModule m\n\n" + longer + calls + entry)


def test_the_debug_tables_at_the_end_are_taken_whole_only_when_they_are_the_same() -> None:
    body = "HloModule m\n\nENTRY e {\n  ROOT p = f32[2] parameter(0)\n}\n\n"
    tables = 'FileNames\n1 "a.py"\n\nFunctionNames\n1 "f"\n'
    other = 'FileNames\n1 "b.py"\n\nFunctionNames\n1 "f"\n'
    reuse = Reused()
    for text in (body + tables, body + tables, body + other,
                 body.replace("f32[2]", "f32[3]") + other, body + tables + "\n"):
        got = parse_hlo(text, reuse=reuse)
        assert got == parse_hlo(text) and got.sections == parse_hlo(text).sections
    assert parse_hlo(body + other, reuse=reuse).sections["FileNames"] == '1 "b.py"'
