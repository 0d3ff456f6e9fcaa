"""Reading an HLO module on the command line: one validation for every subcommand that takes
HLO text, so that a module `indexing` refuses as malformed is refused by `tile` and
`coalescing` too (declared shapes checked against the ops' rules, opcodes checked)."""

from __future__ import annotations

import argparse
import re

from ..hlo.module import HloModule
from ..hlo.opcodes import check_opcodes
from ..hlo.parser import parse_hlo

#: whitespace and comments (`// ...`, `/* ... */`) before the first token of a text
_LEADING = re.compile(r"(?:\s+|//[^\n]*|/\*.*?\*/)*", re.S)
#: the first token of HLO text: the header, an entry, or a computation `name {` / `name (`
_HLO_START = re.compile(r"(?:HloModule|ENTRY)\b|%?[A-Za-z_][\w.\-]*\s*[({]")


def add_opcode_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--allow-unknown-opcodes", action="store_true",
                   help="treat a word that is no HLO opcode as an unmodelled op instead of an "
                        "error, e.g. for text from a newer XLA")


def looks_like_hlo(text: str) -> bool:
    """HLO text, after leading comments; map text starts with `(` (or a keyword) instead."""
    start = _LEADING.match(text)
    rest = text[start.end():] if start else text
    return _HLO_START.match(rest) is not None


def read_hlo(text: str, source: str, allow_unknown_opcodes: bool = False) -> HloModule:
    """The module, validated as `verifidx indexing` validates it (ParseError with the place)."""
    module = parse_hlo(text, source, check_shapes=True)
    if not allow_unknown_opcodes:
        check_opcodes(module, text, source)
    return module
