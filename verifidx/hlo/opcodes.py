"""Every opcode HLO text can hold: the names of XLA's `HLO_OPCODE_LIST` (xla/hlo/ir/hlo_opcode.h,
openxla/xla at 0725a3a9). A word outside this list is a typo or not HLO, and the parser says
so; a real opcode whose indexing verifidx does not model still parses and gets
`unknown indexing`."""

from __future__ import annotations

import difflib
import re
from typing import TYPE_CHECKING

from ..core.errors import ParseError

if TYPE_CHECKING:
    from .module import HloModule

HLO_OPCODES = frozenset("""
abs acos acosh add add-dependency after-all all-gather all-gather-done all-gather-start
all-reduce all-reduce-done all-reduce-start all-to-all and asin asinh async-done async-start
async-update atan atan2 atanh batch-norm-grad batch-norm-inference batch-norm-training bitcast
bitcast-convert broadcast call cbrt ceil cholesky clamp count-leading-zeros
collective-broadcast collective-permute collective-permute-done collective-permute-start
collective-reduce compare complex concatenate conditional constant convert convolution copy
copy-done copy-start cosine cosh custom-call divide domain dot dynamic-reshape dynamic-slice
dynamic-update-slice erf exponential exponential-minus-one fft floor fusion gather
get-dimension-size get-tuple-element imag infeed iota is-finite log log-plus-one logistic map
maximum minimum mulhi multiply negate not opt-barrier or outfeed pad parameter partition-id
popcnt power ragged-all-to-all ragged-dot real recv recv-done reduce reduce-precision
reduce-scatter reduce-window remainder replica-id reshape reverse rng rng-bit-generator
rng-get-and-update-state round-nearest-afz round-nearest-even rsqrt scaled-dot scan scatter
select select-and-scatter send send-done set-dimension-size shift-left shift-right-arithmetic
shift-right-logical shuffle sign sine sinh slice sort sqrt stochastic-convert subtract tan tanh
topk transpose triangular-solve tuple while xor
""".split())


def unknown_opcode_message(word: str) -> str:
    close = difflib.get_close_matches(word, sorted(HLO_OPCODES), n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    return f"'{word}' is not an HLO opcode{hint}"


def check_opcodes(module: HloModule, text: str, source: str) -> None:
    """Raise ParseError at the first instruction whose opcode is no HLO opcode (`parse_hlo`
    asks this unless `allow_unknown_opcodes`), at the opcode's column."""
    for comp in module.computations.values():
        for inst in comp.instructions:
            if inst.opcode in HLO_OPCODES:
                continue
            lines = text.splitlines()
            line = lines[inst.line - 1] if 0 < inst.line <= len(lines) else ""
            found = re.search(rf"(?<![\w.-]){re.escape(inst.opcode)}\s*\(", line)
            column = found.start() + 1 if found else max(inst.column, 1)
            raise ParseError(unknown_opcode_message(inst.opcode), inst.line, column, source)
