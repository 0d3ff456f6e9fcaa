"""Parser for HLO text as XLA and JAX print it.

The grammar is small and mostly line-free, so the parser is a recursive descent over a character
cursor (`_Scanner`, the lexical layer: whitespace, comments, numbers, names, strings, balanced
raw spans). Attribute values are first delimited as raw text (balanced brackets, quoted strings,
up to a top-level comma or space), then parsed within that span if the indexing analysis needs
their structure. Unknown attributes are kept, never rejected; a word that is no HLO opcode
is an error unless `allow_unknown_opcodes` (`verifidx.hlo.opcodes`).

Every malformed input raises `ParseError` with a 1-based line and column; no other exception
escapes `parse_hlo` (nesting depth is bounded, numbers are matched before conversion).
"""

from __future__ import annotations

import bisect
import dataclasses
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn

from verifidx.core.errors import ParseError
from verifidx.hlo.attribute_values import (
    AttributeValue,
    ConvolutionDimLabels,
    IotaReplicaGroups,
    PadDim,
    SliceDim,
    WindowDim,
)
from verifidx.hlo.bounded_sizes import link_called_sizes, with_bounded_sizes
from verifidx.hlo.module import COMPUTATION_ATTRIBUTES, HloComputation, HloInstruction, HloModule
from verifidx.hlo.shape import (
    ELEMENT_TYPE_BITS,
    MAX_SIZE,
    UNBOUNDED,
    WILDCARD_TILE_DIM,
    Layout,
    Shape,
    is_floating_point,
    size_error,
)

__all__ = ["parse_hlo", "parse_shape"]

_MAX_NESTING = 64

_SPACE = re.compile(r"[ \t\r\n\f\v]*")
_SKIPPED = re.compile(r"(?:[ \t\r\n\f\v]+|/\*.*?\*/|//[^\n]*)*", re.DOTALL)
_SKIP_STARTS = frozenset(" \t\r\n\f\v/")
_NAME = re.compile(r"%?[A-Za-z_][A-Za-z0-9_.\-]*")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
_PLAIN_SHAPE = re.compile(r"[a-z][a-z0-9]*\[[0-9,]*\](\{[0-9,]*\})?")
"""An array shape with static sizes and a plain layout or none, written without spaces: the
form nearly every shape of a dump takes, read once per distinct text (`_SHAPES`)."""
_SHAPES: dict[str, Shape] = {}
_IDENTIFIER = r"[A-Za-z_][A-Za-z0-9_.\-]*"
_SHAPE_TEXT = r"[a-z][a-z0-9]*\[[0-9,]*\](?:\{[0-9,]*\})?"
_PLAIN_OPERAND = r"(?:" + _SHAPE_TEXT + r" )?%?" + _IDENTIFIER
_HEAD = r"(ROOT )?%?(" + _IDENTIFIER + r") = (" + _SHAPE_TEXT + r") "
_PLAIN_INSTRUCTION = re.compile(
    _HEAD + r"(" + _IDENTIFIER + r")\(((?:" + _PLAIN_OPERAND + r"(?:, " + _PLAIN_OPERAND
    + r")*)?)\)")
"""An instruction head in the form XLA prints (`%n = f32[2]{0} add(f32[2]{0} %a, %b)`, every
shape plain, no comment), read by one match where its shapes were read before (`_SHAPES`);
`_PLAIN_PARAMETER` the same for `parameter(N)`, `_OPERAND` one operand of the list."""
_PLAIN_PARAMETER = re.compile(_HEAD + r"parameter\(([0-9]+)\)")
_OPERAND = re.compile(r"(?:(" + _SHAPE_TEXT + r") )?%?(" + _IDENTIFIER + r")")
_PLAIN_ATTRIBUTE = re.compile(r", (" + _IDENTIFIER + r")=(?=[^ \t\r\n\f\v/])")
"""`, name=` before a value that starts at once, as XLA prints attributes."""
_ATTRIBUTE_VALUES: dict[tuple[str, str], AttributeValue] = {}
"""Parsed attribute values by name and text: the same text is the same value (all are
immutable; computation references are not kept here, their places are recorded)."""
_TAILS: dict[tuple[str, str], tuple[dict[str, AttributeValue], dict[str, str]]] = {}
"""Attribute lists of instructions and module headers read before, by owner and the text from
their `,` to the end of the line (`line_attributes`): a model's layers and a pipeline's
snapshots repeat them."""
_INT = re.compile(r"-?[0-9]+")
_STRING = re.compile(r"\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'", re.DOTALL)
_LAYOUT_ITEM = re.compile(r"[A-Z#]+")
_DIM_LABELS = re.compile(r"([0-9bf]+)_([0-9io]+)->([0-9bf]+)")
# Characters that matter when delimiting a raw span; everything else is skipped in one step.
_RAW_SPECIAL = re.compile(r"[ \t\r\n\f\v,(){}\[\]\"'/]")
_RAW_PLAIN = re.compile(r"[^ \t\r\n\f\v,(){}\[\]\"'/]+|\{(?:[^(){}\[\]\"'/\\]|\"[^\"\\\n]*\""
                        r"|\[[^(){}\[\]\"'/\\]*\])*\}")
"""The attribute values nearly every instruction has (a word, or one pair of braces around
words, spaces, plain strings and bracket pairs: `kLoop`, `{1,0}`, `{[0:4]}`, a `metadata`
record), whose span the full scan (`raw_span`) would end at the same place."""
_RAW_ENDS = frozenset(" \t\r\n\f\v,)]}")
_OPENERS = {"(": ")", "[": "]", "{": "}"}
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0"}

_LITERAL_INT = re.compile(r"[-+]?[0-9]+")
_LITERAL_FLOAT = re.compile(r"[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)(?:[eE][-+]?[0-9]+)?")
_LITERAL_SPECIAL = re.compile(r"([-+]?)(inf|nan)(?:\(0x[0-9a-fA-F]+\))?")

_WINDOW_FIELDS = ("size", "stride", "pad", "lhs_dilate", "rhs_dilate", "rhs_reversal")
_SECTION_KEYWORDS = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")


class Reused:
    """Instructions parsed before, by their text (`parse_hlo(reuse=...)`): consecutive
    snapshots of one module through a compiler's passes share most of their lines. Each entry
    keeps what the text alone decides (the instruction, the computation names it calls) and
    what its context must still confirm (each operand defined, with any shape it declares)."""

    def __init__(self) -> None:
        self.lines: dict[str, _Line] = {}
        self.next: dict[str, _Line] = {}
        # whole computations by their text, where they begin on the same line again
        self.blocks: dict[str, _Block] = {}
        self.next_blocks: dict[str, _Block] = {}
        # the debug tables that ended the last text, as text and as read
        self.tail: tuple[str, dict[str, str]] | None = None


@dataclass(frozen=True)
class _Block:
    computation: HloComputation
    where: tuple[int, int]  # the line and column it began at
    refs: tuple[tuple[str, int], ...]  # computation name, offset
    lines: tuple[tuple[str, _Line], ...]  # its instructions' lines, for the next call


class _Line:  # (one made for every line that moved: a plain class, native when compiled)
    def __init__(self, instruction: HloInstruction,
                 declared: tuple[tuple[str, Shape | None, int, int], ...],
                 refs: tuple[tuple[str, int], ...]) -> None:
        self.instruction = instruction
        # operand, the shape it is declared with, the offsets of its name and of that shape
        self.declared = declared
        self.refs = refs  # computation name, offset


def _starts(text: str, token: str, pos: int, end: int) -> bool:
    """`text.startswith(token, pos, end)`, which compiled is a Python method call (the parser
    asks it before nearly every token)."""
    if pos < 0 or pos + len(token) > end:
        return pos < 0 and text.startswith(token, pos, end)
    if len(token) == 1:
        return text[pos] == token
    return text[pos:pos + len(token)] == token


def _moved(block: _Block, where: tuple[int, int]) -> _Block:
    """`block` begun `where` instead: each instruction a shallow copy on its new line."""
    shift = where[0] - block.where[0]
    instructions = []
    for inst in block.computation.instructions:
        instructions.append(inst.at(inst.line + shift, inst.column))
    computation = dataclasses.replace(block.computation, instructions=tuple(instructions),
                                      line=block.computation.line + shift)
    return _Block(computation, where, block.refs, block.lines)


def parse_hlo(text: str, source: str = "<string>", *, check_shapes: bool = False,
              allow_unknown_opcodes: bool = False, reuse: Reused | None = None) -> HloModule:
    """Parse a whole HLO module (the `HloModule` header is optional).

    Raises `ParseError` naming what was expected and where; StableHLO (MLIR) text is refused
    with a pointer to `verifidx.parse_module`, which reads both. A word that is no HLO opcode
    is an error (a typo would otherwise be silently `unknown indexing`) unless
    `allow_unknown_opcodes` (the command line's `--allow-unknown-opcodes`, for text from a newer
    XLA): then it is an unmodelled op. With `check_shapes`, an op whose declared shape
    contradicts its operands and attributes is an error too (`verifidx.hlo.shape_check`);
    without it such an op only gets UNDEFINED maps. `reuse` (one per sequence of snapshots)
    takes an instruction whose line was parsed in the previous call as it was, after
    checking its operands here; the result is the same module.
    """
    if looks_like_mlir(text):
        raise ParseError("this is StableHLO (MLIR) text, not HLO text: read it with "
                         "verifidx.parse_module or `verifidx indexing` (needs the extra "
                         "verifidx[stablehlo])", 1, 1, source)
    try:
        module = _Parser(text, source, reuse).module()
    except RecursionError:
        # Nesting is bounded well below Python's limit; this is only a last line of defence.
        raise ParseError("input nested too deeply", 1, 1, source) from None
    if not allow_unknown_opcodes:
        from verifidx.hlo.opcodes import check_opcodes

        check_opcodes(module, text, source)
    if check_shapes:
        from verifidx.hlo.shape_check import check_module

        check_module(module)
    return module


_MLIR_START = re.compile(
    r'\A(?:\s|//[^\n]*\n|#\w+\s*=[^\n]*\n)*(?:module\b|func\.func\b|"builtin\.module"|'
    r'"func\.func")')


def looks_like_mlir(text: str) -> bool:
    """True for MLIR text (`module @jit_f ... {`, `func.func ...`): never the start of HLO."""
    return _MLIR_START.match(text) is not None


def parse_shape(text: str, source: str = "<string>") -> Shape:
    """Parse one shape such as `f32[10,20]{1,0:T(8,128)}` or `(f32[], s32[4])`."""
    parser = _Parser(text, source)
    shape = parser.shape()
    parser.skip()
    if parser.pos != parser.end:
        parser.fail("unexpected text after shape")
    return shape


class _Scanner:
    """The lexical layer: a position in the text and the tokens that can start there.

    `end` is normally the end of the text; while an attribute value is parsed it is the end of
    that value, so the value's parser cannot run past it.
    """

    def __init__(self, text: str, source: str) -> None:
        self.text = text
        self.source = source
        self.pos = 0
        self.end = len(text)
        newlines: list[int] = []
        at = text.find("\n")
        while at >= 0:
            newlines.append(at)
            at = text.find("\n", at + 1)
        self.newlines = newlines

    def locate(self, offset: int) -> tuple[int, int]:
        """1-based (line, column) of `offset`, in logarithmic time."""
        line = bisect.bisect_left(self.newlines, offset)
        line_start = self.newlines[line - 1] + 1 if line else 0
        return line + 1, offset - line_start + 1

    def fail(self, message: str, at: int | None = None) -> NoReturn:
        line, column = self.locate(self.pos if at is None else at)
        raise ParseError(message, line, column, self.source)

    def skip(self) -> None:
        """Skip whitespace, `/* ... */` and `// ...` comments."""
        text, pos, end = self.text, self.pos, self.end
        if pos < end and text[pos] not in _SKIP_STARTS:
            return  # (most calls: the next token is right here)
        while pos < end and text[pos] in " \n":  # (between lines: a newline and the indent)
            pos += 1
        if pos >= end or text[pos] not in _SKIP_STARTS:
            self.pos = pos
            return
        self.pos = _SKIPPED.match(text, pos, end).end()  # type: ignore[union-attr]
        if self.text.startswith("/*", self.pos, self.end):
            self.fail("unterminated comment: expected '*/'")

    def at_end(self) -> bool:
        self.skip()
        return self.pos >= self.end

    def at(self, token: str) -> bool:
        self.skip()
        return _starts(self.text, token, self.pos, self.end)

    def accept(self, token: str) -> bool:
        if self.at(token):
            self.pos += len(token)
            return True
        return False

    def expect(self, token: str, message: str) -> None:
        if not self.accept(token):
            self.fail(message)

    def match(self, pattern: re.Pattern[str]) -> str | None:
        """The text `pattern` matches at the next token, consumed; None if it does not match."""
        self.skip()
        found = pattern.match(self.text, self.pos, self.end)
        if found is None or found.end() == self.pos:
            return None
        self.pos = found.end()
        return found.group()

    def accept_word(self, word: str) -> bool:
        """Consume `word` only when it is a whole identifier."""
        self.skip()
        found = _WORD.match(self.text, self.pos, self.end)
        if found is None or found.group() != word:
            return False
        self.pos = found.end()
        return True

    def next_char(self) -> str:
        """The character after skipped space and comments ('' at the end), not consumed."""
        self.skip()
        return self.text[self.pos] if self.pos < self.end else ""

    def name(self, what: str) -> str:
        """A name with or without `%`, returned without it."""
        found = self.match(_NAME)
        if found is None:
            self.fail(f"expected {what}")
        return found.removeprefix("%")

    def integer(self, what: str = "integer") -> int:
        found = self.match(_INT)
        if found is None:
            self.fail(f"expected {what}")
        return int(found)

    def natural(self, what: str) -> int:
        self.skip()
        start = self.pos
        value = self.integer(what)
        if value < 0:
            self.fail(f"expected {what}, got negative {value}", start)
        return value

    def string(self) -> str:
        """A quoted string, unescaped."""
        self.skip()
        found = _STRING.match(self.text, self.pos, self.end)
        if found is None:
            if self.pos < self.end and self.text[self.pos] in "\"'":
                self.fail("unterminated string")
            self.fail("expected a quoted string")
        self.pos = found.end()
        return _unescape(found.group()[1:-1])

    def raw_span(self, *, stop_at_space: bool) -> int:
        """End of the balanced text starting at `pos` (not consumed).

        The span ends at an unmatched closing bracket and, when `stop_at_space`, at a top-level
        comma, whitespace or comment. Brackets must match and strings be terminated.
        """
        if stop_at_space:
            plain = _RAW_PLAIN.match(self.text, self.pos, self.end)
            if plain is not None:
                after = plain.end()
                if after == self.end or self.text[after] in _RAW_ENDS:
                    return after
        return self.scanned_span(stop_at_space=stop_at_space)

    def scanned_span(self, *, stop_at_space: bool) -> int:
        """`raw_span` by the full scan, special character by special character."""
        text, pos, end = self.text, self.pos, self.end
        open_brackets: list[int] = []
        while True:
            found = _RAW_SPECIAL.search(text, pos, end)
            if found is None:
                pos = end
                break
            char, at = found.group(), found.start()
            if char in _OPENERS:
                open_brackets.append(at)
                pos = at + 1
            elif char in ")]}":
                if not open_brackets:
                    pos = at
                    break
                bracket = text[open_brackets.pop()]
                if _OPENERS[bracket] != char:
                    self.fail(
                        f"expected '{_OPENERS[bracket]}' to close '{bracket}', got '{char}'", at
                    )
                pos = at + 1
            elif char in "\"'":
                string = _STRING.match(text, at, end)
                if string is None:
                    self.fail("unterminated string", at)
                pos = string.end()
            elif char == "/" and text.startswith("/*", at, end):
                if stop_at_space and not open_brackets:
                    pos = at
                    break
                close = text.find("*/", at + 2, end)
                if close < 0:
                    self.fail("unterminated comment: expected '*/'", at)
                pos = close + 2
            elif char == "/" and text.startswith("//", at, end):
                if stop_at_space and not open_brackets:
                    pos = at
                    break
                newline = text.find("\n", at, end)
                pos = end if newline < 0 else newline
            elif char == "/" or open_brackets or not stop_at_space:
                pos = at + 1
            else:
                pos = at
                break
        if open_brackets:
            line, column = self.locate(open_brackets[-1])
            bracket = text[open_brackets[-1]]
            self.fail(
                f"expected '{_OPENERS[bracket]}' to close '{bracket}' "
                f"from line {line}, column {column}",
                pos,
            )
        return pos


class _Parser(_Scanner):
    """The grammar: module, computations, instructions, shapes, layouts, attribute values."""

    def __init__(self, text: str, source: str, reuse: Reused | None = None) -> None:
        super().__init__(text, source)
        # Every computation name used in an attribute, with where it was written.
        self.computation_refs: list[tuple[str, int]] = []
        self.reuse = reuse
        self.block_lines: list[tuple[str, _Line]] | None = None  # (the computation's, as read)
        self.declared: list[tuple[str, Shape | None, int, int]] | None = None
        self.instruction_start = 0
        self.attributes_end = 0  # where the last attribute list read ended (its last value)

    # ----- module and computations -------------------------------------------------------

    def module(self) -> HloModule:
        name = ""
        attributes: dict[str, str] = {}
        if self.accept_word("HloModule"):
            name = self.name("module name after 'HloModule'")
            attributes = self.line_attributes("module", False)[1]  # (a pipeline repeats it)
        computations: dict[str, HloComputation] = {}
        sections: dict[str, str] = {}
        entry: HloComputation | None = None
        tail: int | None = None  # where the run of sections that ends the text began
        tail_sections: dict[str, str] = {}
        while not self.at_end():
            start = self.pos
            section = self.section()
            if section is not None:
                if tail is None:
                    tail, tail_sections = start, {}
                    reused = self.reuse.tail if self.reuse is not None else None
                    if reused is not None and len(self.text) - start == len(reused[0]) and \
                            self.text.endswith(reused[0], start):
                        tail_sections = dict(reused[1])  # the tables of the text before
                        sections.update(tail_sections)
                        self.pos = self.end
                        break
                sections[section[0]] = tail_sections[section[0]] = section[1]
                continue
            tail = None
            computation = self.computation()
            if computation.name in computations:
                self.fail(f"duplicate computation name '{computation.name}'", start)
            if computation.is_entry:
                if entry is not None:
                    self.fail(
                        f"more than one ENTRY computation ('{entry.name}' and "
                        f"'{computation.name}')",
                        start,
                    )
                entry = computation
            computations[computation.name] = computation
        if self.reuse is not None:
            self.reuse.tail = None if tail is None else (self.text[tail:], tail_sections)
            self.reuse.lines, self.reuse.next = self.reuse.next, {}
            self.reuse.blocks, self.reuse.next_blocks = self.reuse.next_blocks, {}
        if not computations:
            self.fail("expected a computation")
        for ref, at in self.computation_refs:
            if ref not in computations:
                self.fail(f"undefined computation '{ref}'", at)
        return HloModule(name, link_called_sizes(computations), attributes, sections,
                         self.source)

    def section(self) -> tuple[str, str] | None:
        """A trailing debug table such as `StackFrames` followed by `N value` rows, kept raw."""
        self.skip()
        start = self.pos
        if not self.text.startswith(_SECTION_KEYWORDS, start, self.end):
            return None  # (every computation: no keyword starts here)
        for keyword in _SECTION_KEYWORDS:
            if self.accept_word(keyword):
                break
        else:
            return None
        if self.at("{") or self.at("("):
            self.pos = start  # a computation that happens to carry this name
            return None
        self.skip()
        body_start = body_end = self.pos
        while self.next_char() and self.next_char() in "0123456789":
            self.natural("row number")
            self.skip()
            value_start = self.pos
            body_end = self.pos = self.raw_span(stop_at_space=True)
            if self.pos == value_start:
                self.fail(f"expected a value in {keyword} row")
        return keyword, self.text[body_start:body_end]

    def computation(self) -> HloComputation:
        self.skip()
        if self.reuse is None:
            return self.parsed_computation()
        start = self.pos
        close = self.text.find("\n}", start, self.end)
        block = self.text[start:close + 2] if close >= 0 else None
        found = self.reuse.blocks.get(block) if block is not None else None
        where = self.locate(start)
        if block is not None and found is not None and found.where[1] == where[1]:
            # the same text: the same computation, its checks all local; where it moved by
            # whole lines, its instructions are copies that say where they now are
            if found.where != where:
                found = _moved(found, where)
            self.computation_refs.extend((n, start + at) for n, at in found.refs)
            self.reuse.next.update(found.lines)
            self.reuse.next_blocks[block] = found
            self.pos = start + len(block)
            return found.computation
        refs, self.block_lines = len(self.computation_refs), []
        computation = self.parsed_computation()
        owned, self.block_lines = tuple(self.block_lines), None
        if block is not None and self.text[start:self.pos] == block and \
                len(owned) == len(computation.instructions):
            self.reuse.next_blocks[block] = _Block(
                computation, where,
                tuple((n, at - start) for n, at in self.computation_refs[refs:]), owned)
        return computation

    def parsed_computation(self) -> HloComputation:
        self.skip()
        start = self.pos
        is_entry = self.accept_word("ENTRY")
        name = self.name("computation name")
        signature: list[tuple[str, Shape]] = []
        result_shape: Shape | None = None
        if self.accept("("):
            if not self.accept(")"):
                while True:
                    param = self.name("parameter name in computation signature")
                    self.expect(":", f"expected ':' after parameter name '{param}'")
                    signature.append((param, self.shape()))
                    if self.accept(")"):
                        break
                    self.expect(",", "expected ',' or ')' in computation signature")
            self.expect("->", "expected '->' after computation parameters")
            result_shape = self.shape()
        attributes = self.raw_attributes("computation")
        self.expect("{", f"expected '{{' to start the body of computation '{name}'")
        instructions: list[HloInstruction] = []
        by_name: dict[str, HloInstruction] = {}
        root: HloInstruction | None = None
        parameters: dict[int, HloInstruction] = {}
        text = self.text
        while True:
            self.skip()
            if _starts(text, "}", self.pos, self.end):
                self.pos += 1
                break
            if self.pos >= self.end:
                self.fail(f"expected '}}' at the end of computation '{name}'")
            at = self.pos
            instruction = self.reused_instruction(by_name)
            if instruction.name in by_name:
                self.fail(
                    f"duplicate instruction name '{instruction.name}' in computation '{name}' "
                    f"(first defined on line {by_name[instruction.name].line})",
                    at,
                )
            if instruction.is_root:
                if root is not None:
                    self.fail(f"computation '{name}' has more than one ROOT", at)
                root = instruction
            number = instruction.parameter_number
            if number is not None:
                if number in parameters:
                    self.fail(f"duplicate parameter number {number} in computation '{name}'", at)
                parameters[number] = instruction
            by_name[instruction.name] = instruction
            instructions.append(instruction)
        if not instructions:
            self.fail(f"computation '{name}' has no instructions", self.pos - 1)
        missing = sorted(set(range(len(parameters))) - parameters.keys())
        if missing:
            self.fail(
                f"parameter numbers of computation '{name}' must be 0..{len(parameters) - 1}, "
                f"but {missing[0]} is missing",
                start,
            )
        if root is None:
            instructions[-1] = dataclasses.replace(instructions[-1], is_root=True)
        return HloComputation(
            name=name,
            instructions=tuple(with_bounded_sizes(name, instructions)),
            is_entry=is_entry,
            signature=tuple(signature),
            result_shape=result_shape,
            attributes=attributes,
            line=self.locate(start)[0],
        )

    # ----- instructions ------------------------------------------------------------------

    def reused_instruction(self, defined: dict[str, HloInstruction]) -> HloInstruction:
        """`instruction()`, or the one parsed from the same line before (`Reused`), its
        operands checked against `defined` as `operands()` checks them."""
        if self.reuse is None:
            return self.instruction(defined)
        start = self.pos  # (the caller skipped to the instruction)
        text = self.text
        stop = text.find("\n", start)
        line = text[start:stop if stop >= 0 else self.end]
        found = self.reuse.lines.get(line)
        if found is None:
            refs, self.declared, self.instruction_start = len(self.computation_refs), [], start
            inst = self.instruction(defined)
            if self.text[start:self.pos].rstrip() == line.rstrip():  # the line, no more
                entry = self.reuse.next[line] = _Line(
                    inst, tuple(self.declared),
                    tuple((n, at - start) for n, at in self.computation_refs[refs:]))
                if self.block_lines is not None:
                    self.block_lines.append((line, entry))
            self.declared = None
            return inst
        for name, declared, name_at, declared_at in found.declared:
            operand = defined.get(name)
            if operand is None:
                self.fail(f"undefined operand '{name}'", start + name_at)
            if declared is not None and declared is not operand.shape and \
                    not declared.compatible(operand.shape):
                self.fail(f"operand '{name}' is declared as {declared} but defined as "
                          f"{operand.shape}", start + declared_at)
        if found.refs:
            self.computation_refs.extend((n, start + at) for n, at in found.refs)
        self.pos = start + len(line)  # (the caller skips on to the next token)
        inst = found.instruction
        number = bisect.bisect_left(self.newlines, start)  # (`locate`, inlined: every line)
        column = start - (self.newlines[number - 1] + 1 if number else 0) + 1
        if inst.line != number + 1 or inst.column != column:
            # the same instruction where the line now is (a shallow copy: every other field
            # is the same object); kept for the next call, where it may not move again
            inst = inst.at(number + 1, column)
            found = _Line(inst, found.declared, found.refs)
        self.reuse.next[line] = found
        if self.block_lines is not None:
            self.block_lines.append((line, found))
        return inst

    def instruction(self, defined: dict[str, HloInstruction]) -> HloInstruction:
        self.skip()
        return self.plain_instruction(defined) or self.full_instruction(defined)

    def full_instruction(self, defined: dict[str, HloInstruction]) -> HloInstruction:
        """The instruction read token by token (what `plain_instruction` stands in for)."""
        self.skip()
        start = self.pos
        is_root = self.accept_word("ROOT")
        if is_root and self.at("="):
            self.pos, is_root = start, False  # an instruction named ROOT
        name = self.name("instruction name")
        self.expect("=", f"expected '=' after instruction name '{name}'")
        shape = self.shape()
        opcode = self.match(_WORD)
        if opcode is None:
            self.fail(f"expected opcode of instruction '{name}'")
        self.expect("(", f"expected '(' after opcode '{opcode}'")
        operands: tuple[str, ...] = ()
        parameter_number: int | None = None
        literal: str | None = None
        if opcode == "parameter":
            parameter_number = self.natural("parameter number")
            self.expect(")", "expected ')' after parameter number")
        elif opcode == "constant":
            self.skip()
            literal_start = self.pos
            self.pos = self.raw_span(stop_at_space=False)
            literal = self.text[literal_start : self.pos].strip()
            if not literal:
                self.fail("expected a literal in constant(...)")
            self.expect(")", "expected ')' after constant literal")
        else:
            operands = self.operands(defined)
        parsed, raw = self.instruction_attributes()
        line, column = self.locate(start)
        return HloInstruction(
            name=name,
            opcode=opcode,
            shape=shape,
            operands=operands,
            attributes=parsed,
            raw_attributes=raw,
            is_root=is_root,
            line=line,
            column=column,
            parameter_number=parameter_number,
            literal=literal,
            literal_value=None if literal is None else _literal_value(literal, shape),
        )

    def plain_instruction(self, defined: dict[str, HloInstruction]) -> HloInstruction | None:
        """`instruction()` by one match where the head is plain (`_PLAIN_INSTRUCTION`) and all
        it checks holds; None (nothing consumed) otherwise, for the full reading to say why."""
        start = self.pos
        head = _PLAIN_INSTRUCTION.match(self.text, start, self.end)
        if head is None:
            head = _PLAIN_PARAMETER.match(self.text, start, self.end)
            shape = None if head is None else _SHAPES.get(head.group(3))
            if head is None or shape is None:
                return None
            self.pos = head.end()
            parsed, raw = self.instruction_attributes()
            line, column = self.locate(start)
            return HloInstruction(name=head.group(2), opcode="parameter", shape=shape,
                                  attributes=parsed, raw_attributes=raw,
                                  is_root=head.group(1) is not None, line=line, column=column,
                                  parameter_number=int(head.group(4)))
        root, name, shape_text, opcode, listed = head.groups()
        shape = _SHAPES.get(shape_text)
        if shape is None or opcode in ("parameter", "constant"):
            return None
        operands: list[str] = []
        declared_here: list[tuple[str, Shape | None, int, int]] = []  # (kept only on success)
        if listed:
            at = head.start(5)
            for found in _OPERAND.finditer(listed):
                declared_text, operand_name = found.groups()
                operand = defined.get(operand_name)
                if operand is None:
                    return None
                declared = None
                if declared_text is not None:
                    declared = _SHAPES.get(declared_text)
                    if declared is None or not declared.compatible(operand.shape):
                        return None
                offset = at + found.start() - self.instruction_start  # (the name's with `%`)
                declared_here.append((operand_name, declared, offset if declared is None
                                      else offset + len(declared_text) + 1, offset))
                operands.append(operand_name)
        if self.declared is not None:
            self.declared.extend(declared_here)
        self.pos = head.end()
        parsed, raw = self.instruction_attributes()
        line, column = self.locate(start)
        return HloInstruction(name=name, opcode=opcode, shape=shape, operands=tuple(operands),
                              attributes=parsed, raw_attributes=raw, is_root=root is not None,
                              line=line, column=column)

    def operands(self, defined: dict[str, HloInstruction]) -> tuple[str, ...]:
        """`(a, b)` or `(f32[10] %a, f32[10] %b)`; each name must be defined already."""
        names: list[str] = []
        if self.accept(")"):
            return ()
        while True:
            self.skip()
            declared_at = self.pos
            declared = self.shape() if self.at_shape() else None
            self.skip()
            name_at = self.pos
            name = self.name("operand name")
            operand = defined.get(name)
            if operand is None:
                self.fail(f"undefined operand '{name}'", name_at)
            if self.declared is not None:
                self.declared.append((name, declared, name_at - self.instruction_start,
                                      declared_at - self.instruction_start))
            if declared is not None and not declared.compatible(operand.shape):
                self.fail(
                    f"operand '{name}' is declared as {declared} but defined as {operand.shape}",
                    declared_at,
                )
            names.append(name)
            if self.accept(")"):
                return tuple(names)
            self.expect(",", "expected ',' or ')' in operand list")

    def at_shape(self) -> bool:
        """Whether a shape starts here (operands may be written with their shapes)."""
        if self.next_char() == "(":
            return True
        found = _WORD.match(self.text, self.pos, self.end)
        if found is None or found.group() not in ELEMENT_TYPE_BITS:
            return False
        after = _SPACE.match(self.text, found.end(), self.end).end()  # type: ignore[union-attr]
        return _starts(self.text, "[", after, self.end)

    # ----- shapes and layouts ------------------------------------------------------------

    def shape(self, depth: int = 0) -> Shape:
        self.skip()
        start = self.pos
        plain = _PLAIN_SHAPE.match(self.text, start, self.end)
        if plain is not None:
            end = plain.end()
            follows = self.text[end:end + 1] if end < self.end else ""
            # what the full reading would take too: a layout, if any, is attached (`f32[2] {0}`
            # and `-> f32[2] {` need the look past the space)
            if follows != "{" and (plain.group(1) is not None or not follows.isspace()):
                text = plain.group()
                found = _SHAPES.get(text)
                if found is None:
                    found = self._shape(depth)
                    if self.pos != end:  # the full reading took another span: cache nothing
                        return found
                    if len(_SHAPES) > 50_000:
                        _SHAPES.clear()
                    _SHAPES[text] = found
                self.pos = end
                return found
        return self._shape(depth)

    def _shape(self, depth: int) -> Shape:
        self.skip()
        start = self.pos
        if self.accept("("):
            if depth >= _MAX_NESTING:
                self.fail(f"tuple shapes nested deeper than {_MAX_NESTING}", start)
            elements: list[Shape] = []
            if not self.accept(")"):
                while True:
                    elements.append(self.shape(depth + 1))
                    if self.accept(")"):
                        break
                    self.expect(",", "expected ',' or ')' in tuple shape")
            return Shape.tuple_of(*elements)
        element_type = self.match(_WORD)
        if element_type is None:
            self.fail("expected shape")
        if element_type not in ELEMENT_TYPE_BITS:
            if self.next_char() == "[":
                self.fail(f"unknown element type '{element_type}'", start)
            self.fail("expected shape", start)
        self.expect("[", f"expected '[' after element type '{element_type}'")
        dims: list[int] = []
        dynamic: list[bool] = []
        if not self.accept("]"):
            while True:
                if self.accept("?"):
                    dims.append(UNBOUNDED)
                    dynamic.append(True)
                else:
                    bounded = self.accept("<=")
                    self.skip()
                    at = self.pos
                    dims.append(self.natural("dimension size"))
                    dynamic.append(bounded)
                    if dims[-1] > MAX_SIZE:
                        self.fail(f"dimension size {dims[-1]} is more than 2^63 - 1 (XLA's "
                                  f"sizes are int64)", at)
                if self.accept("]"):
                    break
                self.expect(",", "expected ']' after dimensions")
        too_large = size_error(tuple(dims))
        if too_large is not None:
            self.fail(too_large, start)
        layout = self.layout(len(dims)) if self.at_layout() else None
        return Shape(element_type, tuple(dims), tuple(dynamic), layout)

    def at_layout(self) -> bool:
        """A `{` after a shape opens a layout only if a digit, ':' or '}' follows.

        This tells `-> f32[2] {` (a computation body) from `f32[2] {0}` (a spaced layout).
        """
        if self.next_char() != "{":
            return False
        saved = self.pos
        self.pos += 1
        follows = self.next_char()
        self.pos = saved
        return follows != "" and follows in "0123456789:}"

    def layout(self, rank: int) -> Layout:
        start = self.pos
        self.expect("{", "expected '{' to start layout")
        minor_to_major: list[int] = []
        if not self.at(":") and not self.at("}"):
            while True:
                minor_to_major.append(self.natural("dimension number in layout"))
                if not self.accept(","):
                    break
        tiles: tuple[tuple[int, ...], ...] = ()
        element_size: int | None = None
        memory_space: int | None = None
        other: list[str] = []
        seen: set[str] = set()
        if self.accept(":"):
            while not self.at("}"):
                item_at = self.pos
                item = self.match(_LAYOUT_ITEM)
                if item is None:
                    self.fail("expected layout item such as T(...), E(...) or S(...), or '}'")
                if item in seen and item in ("T", "E", "S"):
                    self.fail(f"duplicate layout item '{item}'", item_at)
                seen.add(item)
                if item == "T":
                    tiles = self.tiles()
                elif item in ("E", "S"):
                    self.expect("(", f"expected '(' after layout item '{item}'")
                    value = self.natural("integer in layout item")
                    self.expect(")", f"expected ')' after layout item '{item}'")
                    if item == "E":
                        element_size = value
                    else:
                        memory_space = value
                else:
                    if not self.at("("):
                        self.fail(f"expected '(' after layout item '{item}'")
                    while self.at("("):
                        self.pos += 1
                        self.pos = self.raw_span(stop_at_space=False)
                        self.expect(")", f"expected ')' in layout item '{item}'")
                    other.append(self.text[item_at : self.pos])
        self.expect("}", "expected '}' at the end of layout")
        if sorted(minor_to_major) != list(range(rank)):
            self.fail(
                f"layout {{{','.join(map(str, minor_to_major))}}} is not a permutation of "
                f"the {rank} dimensions of the shape",
                start,
            )
        return Layout(
            minor_to_major=tuple(minor_to_major),
            tiles=tiles,
            element_size_in_bits=element_size,
            memory_space=memory_space,
            other_items=tuple(other),
            text=self.text[start : self.pos],
        )

    def tiles(self) -> tuple[tuple[int, ...], ...]:
        """`(8,128)(2,1)` after `T`; `*` in a tile is `WILDCARD_TILE_DIM`."""
        if not self.at("("):
            self.fail("expected '(' after layout item 'T'")
        tiles: list[tuple[int, ...]] = []
        while self.accept("("):
            tile: list[int] = []
            if not self.accept(")"):
                while True:
                    if self.accept("*"):
                        tile.append(WILDCARD_TILE_DIM)
                    else:
                        tile.append(self.natural("tile size or '*'"))
                    if self.accept(")"):
                        break
                    self.expect(",", "expected ',' or ')' in tile")
            tiles.append(tuple(tile))
        return tuple(tiles)

    # ----- attributes --------------------------------------------------------------------

    def raw_attributes(self, owner: str) -> dict[str, str]:
        """`, name=value` pairs of a module or computation header, kept as raw text."""
        return self.attribute_list(owner, parse=False)[1]

    def instruction_attributes(self) -> tuple[dict[str, AttributeValue], dict[str, str]]:
        return self.line_attributes("instruction", True)

    def line_attributes(self, owner: str, parse: bool
                        ) -> tuple[dict[str, AttributeValue], dict[str, str]]:
        """`attribute_list`, or the one read before from the same text to the end of the line
        (`_TAILS`: the same dictionaries, never written to) where the next line does not go
        on with a `,`. Kept only where the line alone decides the reading: its last value ends
        on the line with only blanks after it (a comment that runs on is not), and it names no
        computation (those places are recorded)."""
        text, start = self.text, self.pos
        stop = text.find("\n", start, self.end)
        if stop < 0:
            stop = self.end
        key = (owner, text[start:stop])
        found = _TAILS.get(key)
        if found is not None:
            self.pos = stop
            if not self.at(","):  # (the full reading would look on there as well)
                return found
            self.pos = start
        refs = len(self.computation_refs)
        parsed, raw = self.attribute_list(owner, parse=parse)
        tail = key[1]
        if raw and tail.startswith(",") and len(self.computation_refs) == refs and \
                self.attributes_end <= stop and \
                not text[self.attributes_end:stop].strip(" \t\r\f\v"):
            if len(_TAILS) > 50_000:
                _TAILS.clear()
            _TAILS[key] = parsed, raw
        return parsed, raw

    def attribute_list(
        self, owner: str, *, parse: bool
    ) -> tuple[dict[str, AttributeValue], dict[str, str]]:
        parsed: dict[str, AttributeValue] = {}
        raw: dict[str, str] = {}
        last_end = self.pos
        while True:
            plain = _PLAIN_ATTRIBUTE.match(self.text, self.pos, self.end)
            if plain is not None and plain.group(1) not in raw:  # `, name=` as XLA prints it
                name, value_start = plain.group(1), plain.end()
                self.pos = value_start
            elif self.accept(","):
                self.skip()
                name_at = self.pos
                found_name = self.match(_WORD)
                if found_name is None:
                    self.fail(f"expected {owner} attribute name after ','")
                name = found_name
                if name in raw:
                    self.fail(f"duplicate attribute '{name}'", name_at)
                self.expect("=", f"expected '=' after attribute name '{name}'")
                self.skip()
                value_start = self.pos
            else:
                break
            value_end = self.raw_span(stop_at_space=True)
            if value_end == value_start:
                self.fail(f"expected a value for attribute '{name}'")
            raw[name] = text = self.text[value_start:value_end]
            value_parser = _ATTRIBUTE_PARSERS.get(name) if parse else None
            if value_parser is None:
                parsed[name] = text
            elif (name, text) in _ATTRIBUTE_VALUES:
                parsed[name] = _ATTRIBUTE_VALUES[name, text]
            else:
                self.end = value_end
                try:
                    parsed[name] = value_parser(self)
                    if not self.at_end():
                        self.fail(f"unexpected text in the value of attribute '{name}'")
                    if name not in _REFERENCING:
                        if len(_ATTRIBUTE_VALUES) > 50_000:
                            _ATTRIBUTE_VALUES.clear()
                        _ATTRIBUTE_VALUES[name, text] = parsed[name]
                finally:
                    self.end = len(self.text)
            self.pos = last_end = value_end
        self.attributes_end = last_end
        return parsed, raw

    def int_list(self) -> tuple[int, ...]:
        """`{1,2,3}` or `{}`."""
        self.expect("{", "expected '{' to start a list of integers")
        values: list[int] = []
        if not self.accept("}"):
            while True:
                values.append(self.integer())
                if self.accept("}"):
                    break
                self.expect(",", "expected ',' or '}' in list of integers")
        return tuple(values)

    def int_lists(self) -> tuple[tuple[int, ...], ...]:
        """`{{0,1},{2,3}}` or `{}`."""
        self.expect("{", "expected '{' to start a list of integer lists")
        groups: list[tuple[int, ...]] = []
        if not self.accept("}"):
            while True:
                groups.append(self.int_list())
                if self.accept("}"):
                    break
                self.expect(",", "expected ',' or '}' in list of integer lists")
        return tuple(groups)

    def boolean(self) -> bool:
        if self.accept_word("true"):
            return True
        if self.accept_word("false"):
            return False
        self.fail("expected 'true' or 'false'")

    def identifier(self) -> str:
        found = self.match(_WORD)
        if found is None:
            self.fail("expected an identifier")
        return found

    def computation_ref(self) -> str:
        self.skip()
        at = self.pos
        name = self.name("computation name")
        self.computation_refs.append((name, at))
        return name

    def computation_refs_list(self) -> tuple[str, ...]:
        """`{%a, %b}`."""
        self.expect("{", "expected '{' to start a list of computations")
        names: list[str] = []
        if not self.accept("}"):
            while True:
                names.append(self.computation_ref())
                if self.accept("}"):
                    break
                self.expect(",", "expected ',' or '}' in list of computations")
        return tuple(names)

    def calls(self) -> str | tuple[str, ...]:
        """`calls=%f` or `calls={%f, %g}`."""
        return self.computation_refs_list() if self.at("{") else self.computation_ref()

    def slice_dims(self) -> tuple[SliceDim, ...]:
        """`{[start:limit:stride], ...}`; the stride defaults to 1."""
        self.expect("{", "expected '{' to start slice")
        dims: list[SliceDim] = []
        if not self.accept("}"):
            while True:
                self.expect("[", "expected '[' to start a slice dimension")
                start = self.integer("slice start")
                self.expect(":", "expected ':' after slice start")
                limit = self.integer("slice limit")
                stride = self.integer("slice stride") if self.accept(":") else 1
                self.expect("]", "expected ']' after slice dimension")
                dims.append(SliceDim(start, limit, stride))
                if self.accept("}"):
                    break
                self.expect(",", "expected ',' or '}' in slice")
        return tuple(dims)

    def padding(self) -> tuple[PadDim, ...]:
        """`low_high[_interior]` per dimension, joined by `x`."""
        dims: list[PadDim] = []
        while True:
            low = self.integer("low padding")
            self.expect("_", "expected '_' between low and high padding")
            high = self.integer("high padding")
            interior = self.natural("interior padding") if self.accept("_") else 0
            dims.append(PadDim(low, high, interior))
            if not self.accept("x"):
                return tuple(dims)

    def window(self) -> tuple[WindowDim, ...]:
        """`{size=3x3 stride=2x1 pad=0_1x1_1 lhs_dilate=.. rhs_dilate=.. rhs_reversal=1x0}`."""
        self.expect("{", "expected '{' to start window")
        start = self.pos
        fields: dict[str, tuple[int, ...]] = {}
        pads: tuple[PadDim, ...] | None = None
        while not self.accept("}"):
            self.skip()
            key_at = self.pos
            key = self.match(_WORD)
            if key not in _WINDOW_FIELDS:
                self.fail(f"expected window field ({', '.join(_WINDOW_FIELDS)}) or '}}'", key_at)
            if key in fields or (key == "pad" and pads is not None):
                self.fail(f"duplicate window field '{key}'", key_at)
            self.expect("=", f"expected '=' after window field '{key}'")
            if key == "pad":
                pads = self.padding()
                if any(p.interior for p in pads):
                    self.fail("window padding has no interior part", key_at)
            else:
                values = [self.integer(f"window {key}")]
                while self.accept("x"):
                    values.append(self.integer(f"window {key}"))
                fields[key] = tuple(values)
        if not fields and pads is None:
            return ()
        if "size" not in fields:
            self.fail("window needs size=...", start)
        rank = len(fields["size"])
        lengths = {key: len(values) for key, values in fields.items()}
        if pads is not None:
            lengths["pad"] = len(pads)
        for key, length in lengths.items():
            if length != rank:
                self.fail(f"window field '{key}' has {length} dimensions, size has {rank}", start)

        def get(key: str, index: int, default: int) -> int:
            return fields[key][index] if key in fields else default

        return tuple(
            WindowDim(
                size=fields["size"][i],
                stride=get("stride", i, 1),
                pad_low=pads[i].low if pads else 0,
                pad_high=pads[i].high if pads else 0,
                lhs_dilation=get("lhs_dilate", i, 1),
                rhs_dilation=get("rhs_dilate", i, 1),
                reversal=bool(get("rhs_reversal", i, 0)),
            )
            for i in range(rank)
        )

    def dim_labels(self) -> ConvolutionDimLabels:
        """`b01f_01io->b01f`: letters for batch/feature (i/o in the kernel), digits spatial."""
        self.skip()
        start = self.pos
        found = _DIM_LABELS.match(self.text, self.pos, self.end)
        if found is None:
            self.fail("expected dim labels like b01f_01io->b01f")
        self.pos = found.end()
        lhs, rhs, out = found.groups()

        def positions(labels: str, letters: str, part: str) -> tuple[list[int], tuple[int, ...]]:
            spatial = sorted((label, i) for i, label in enumerate(labels) if label.isdigit())
            if [label for label, _ in spatial] != [str(k) for k in range(len(spatial))]:
                self.fail(f"spatial dimensions of {part} dim labels must be 0..n-1", start)
            if len(labels) != len(spatial) + 2 or any(labels.count(c) != 1 for c in letters):
                self.fail(f"{part} dim labels need exactly one each of {letters!r}", start)
            return [labels.index(c) for c in letters], tuple(i for _, i in spatial)

        (input_batch, input_feature), input_spatial = positions(lhs, "bf", "input")
        (kernel_in, kernel_out), kernel_spatial = positions(rhs, "io", "kernel")
        (output_batch, output_feature), output_spatial = positions(out, "bf", "output")
        if not len(input_spatial) == len(kernel_spatial) == len(output_spatial):
            self.fail("input, kernel and output dim labels differ in spatial rank", start)
        return ConvolutionDimLabels(
            found.group(),
            input_batch,
            input_feature,
            input_spatial,
            kernel_in,
            kernel_out,
            kernel_spatial,
            output_batch,
            output_feature,
            output_spatial,
        )

    def replica_groups(self) -> tuple[tuple[int, ...], ...] | IotaReplicaGroups:
        """`{{0,1},{2,3}}` or the iota form `[2,2]<=[4]` / `[2,2]<=[2,2]T(1,0)`."""
        if self.at("{"):
            return self.int_lists()
        start = self.pos
        group_dims = self.bracketed_naturals("replica group dimensions")
        if len(group_dims) != 2:
            self.fail("iota replica groups need [number of groups, group size]", start)
        self.expect("<=", "expected '<=' in iota replica groups")
        reshape_dims = self.bracketed_naturals("iota dimensions")
        transpose = tuple(range(len(reshape_dims)))
        if self.accept("T"):
            self.expect("(", "expected '(' after 'T'")
            order: list[int] = []
            if not self.accept(")"):
                while True:
                    order.append(self.natural("dimension in transpose"))
                    if self.accept(")"):
                        break
                    self.expect(",", "expected ',' or ')' in transpose")
            transpose = tuple(order)
            if sorted(transpose) != list(range(len(reshape_dims))):
                self.fail("iota transpose must be a permutation of the iota dimensions", start)
        if math.prod(reshape_dims) != group_dims[0] * group_dims[1]:
            self.fail("iota replica groups: sizes of the two sides differ", start)
        return IotaReplicaGroups((group_dims[0], group_dims[1]), reshape_dims, transpose)

    def bracketed_naturals(self, what: str) -> tuple[int, ...]:
        self.expect("[", f"expected '[' to start {what}")
        values: list[int] = []
        if not self.accept("]"):
            while True:
                values.append(self.natural(what))
                if self.accept("]"):
                    break
                self.expect(",", f"expected ',' or ']' in {what}")
        return tuple(values)


def _unescape(body: str) -> str:
    out: list[str] = []
    chars = iter(body)
    for char in chars:
        if char == "\\":
            escaped = next(chars, "\\")
            out.append(_ESCAPES.get(escaped, escaped))
        else:
            out.append(char)
    return "".join(out)


def _literal_value(literal: str, shape: Shape) -> int | float | bool | None:
    """The Python value of a scalar constant payload, converted to the element type's kind."""
    value: int | float | bool
    if literal in ("true", "false"):
        value = literal == "true"
    elif _LITERAL_INT.fullmatch(literal):
        value = int(literal)
    elif _LITERAL_FLOAT.fullmatch(literal):
        value = float(literal)
    elif special := _LITERAL_SPECIAL.fullmatch(literal):
        sign, kind = special.groups()
        value = math.copysign(math.inf if kind == "inf" else math.nan, -1.0 if sign == "-" else 1.0)
    else:
        return None
    if is_floating_point(shape.element_type) and not isinstance(value, bool):
        return float(value)
    return value


_INT_ATTRIBUTES = (
    "index",
    "iota_dimension",
    "feature_group_count",
    "batch_group_count",
    "channel_id",
    "index_vector_dim",
    "exponent_bits",
    "mantissa_bits",
    "all_gather_dimension",
    "num_carries",
)
_INT_LIST_ATTRIBUTES = (
    "dimensions",
    "dynamic_slice_sizes",
    "slice_sizes",
    "offset_dims",
    "collapsed_slice_dims",
    "start_index_map",
    "operand_batching_dims",
    "start_indices_batching_dims",
    "update_window_dims",
    "inserted_window_dims",
    "scatter_dims_to_operand_dims",
    "input_batching_dims",
    "scatter_indices_batching_dims",
    "lhs_batch_dims",
    "rhs_batch_dims",
    "lhs_contracting_dims",
    "rhs_contracting_dims",
    "fft_length",
)
_BOOL_ATTRIBUTES = (
    "indices_are_sorted",
    "unique_indices",
    "use_global_device_ids",
    "is_reverse",
    "is_stable",
    "constrain_layout",
)
_IDENTIFIER_ATTRIBUTES = ("kind", "direction", "comparison_direction")
_SINGLE_COMPUTATION_ATTRIBUTES = (
    "to_apply",
    "condition",
    "body",
    "true_computation",
    "false_computation",
    "select",
    "scatter",
)

_ATTRIBUTE_PARSERS: dict[str, Callable[[_Parser], AttributeValue]] = {
    **{name: _Parser.integer for name in _INT_ATTRIBUTES},
    **{name: _Parser.int_list for name in _INT_LIST_ATTRIBUTES},
    **{name: _Parser.boolean for name in _BOOL_ATTRIBUTES},
    **{name: _Parser.identifier for name in _IDENTIFIER_ATTRIBUTES},
    **{name: _Parser.computation_ref for name in _SINGLE_COMPUTATION_ATTRIBUTES},
    "branch_computations": _Parser.computation_refs_list,
    "called_computations": _Parser.computation_refs_list,
    "calls": _Parser.calls,
    "custom_call_target": _Parser.string,
    "source_target_pairs": _Parser.int_lists,
    "replica_groups": _Parser.replica_groups,
    "slice": _Parser.slice_dims,
    "padding": _Parser.padding,
    "window": _Parser.window,
    "dim_labels": _Parser.dim_labels,
}
"""How to parse the attributes the indexing analysis reads; all others stay raw text."""

_REFERENCING = frozenset(COMPUTATION_ATTRIBUTES)
"""The attributes whose parsing records where a computation is named (never cached)."""
