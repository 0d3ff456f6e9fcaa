"""Errors are values at the API and one clear line at the CLI.

Every error that comes from user input carries where it happened (file, line, column) so that the
command line can print it on one line without a traceback.
"""

from __future__ import annotations


class VerifidxError(Exception):
    """Base of every error verifidx raises on purpose."""


class ParseError(VerifidxError):
    """Malformed text: map text, HLO, a rule file or a layout.

    `line` and `column` are 1-based; `source` names the file (or `<string>`).
    """

    def __init__(
        self,
        message: str,
        line: int = 1,
        column: int = 1,
        source: str = "<string>",
    ) -> None:
        self.message = message
        self.line = line
        self.column = column
        self.source = source
        super().__init__(f"{source}:{line}:{column}: {message}")


class EvaluationError(VerifidxError):
    """An operation is undefined at a point: division by zero, `mod` by a non-positive value."""


class DivisorError(EvaluationError, ValueError):
    """A division outside the contract (docs/semantics.md): the divisor of `floordiv`/`ceildiv`
    must be a nonzero integer constant and that of `mod` a positive one. Raised when the
    expression is built, so no map ever holds a term that is undefined somewhere."""


class DepthError(VerifidxError, ValueError):
    """An expression nested deeper than `verifidx.core.expr.MAX_DEPTH` levels
    (docs/semantics.md)."""

    def __init__(self, depth: int, limit: int) -> None:
        self.depth = depth
        self.limit = limit
        super().__init__(f"expression nested {depth} levels deep; verifidx handles at most "
                         f"{limit}")


class UnsupportedError(VerifidxError):
    """A feature that verifidx does not handle (yet); never a silent wrong answer."""


class MissingDependencyError(VerifidxError):
    """An optional extra is not installed; the message names the `pip install` line."""


def decode_text(data: bytes, source: str) -> str:
    """A file's bytes as UTF-8 text, or a ParseError at the first byte that is not UTF-8 (its
    line, its column counted in characters as for every other error, and its byte offset)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        start = data.rfind(b"\n", 0, err.start) + 1
        line = data.count(b"\n", 0, err.start) + 1
        column = len(data[start:err.start].decode("utf-8")) + 1  # valid up to the bad byte
        raise ParseError(f"expected UTF-8 text, found byte 0x{data[err.start]:02x} (byte "
                         f"offset {err.start})", line, column, source) from None


def locate(text: str, offset: int) -> tuple[int, int]:
    """1-based (line, column) of a character offset in `text`."""
    line = text.count("\n", 0, offset) + 1
    start = text.rfind("\n", 0, offset) + 1
    return line, offset - start + 1
