"""What every per-op builder shares: its context (`OpContext`), its result (`Maps`), the
rule type of the table (`OpRule`), `Malformed` for attributes that describe no valid op, and
helpers that build maps in simple form."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from verifidx.core.expr import Dim, Expr, Mul, Symbol, add
from verifidx.core.indexing_map import IndexingMap, Var
from verifidx.core.interval import Interval
from verifidx.hlo.module import HloComputation, HloInstruction, HloModule
from verifidx.hlo.runtime import OperandIndexing
from verifidx.hlo.shape import Shape

Maps = list[OperandIndexing]
"""The maps of one operand (o2i) or one output leaf (i2o); an empty list means "not read"."""


class Malformed(Exception):
    """The instruction's attributes do not describe a valid op; its maps become UNDEFINED."""


_EXACT_READS: ContextVar[bool] = ContextVar("exact_reads", default=False)


@contextmanager
def exact_reads() -> Iterator[None]:
    """Within it, a dynamic-update-slice of static shape maps each output element to the one
    element it copies (the operand's outside the updated window, the update's inside), in
    pieces, instead of XLA's maps (the operand everywhere, the update unconstrained). For
    clients that compare what two programs read (translation validation); `indexing` keeps
    XLA's maps, which its conformance vectors check."""
    token = _EXACT_READS.set(True)
    try:
        yield
    finally:
        _EXACT_READS.reset(token)


def reads_exactly() -> bool:
    """Whether `exact_reads` is in force (part of every cache key of derived maps)."""
    return _EXACT_READS.get()


# -- context and table -------------------------------------------------------------------------


@dataclass(frozen=True)
class OpContext:
    """What a builder may look at: the instruction, its operands' instructions and shapes, and
    where it lives (for folding constant offsets and for called computations)."""

    instruction: HloInstruction
    operands: tuple[HloInstruction | None, ...]
    operand_shapes: tuple[Shape, ...]
    computation: HloComputation | None = None
    module: HloModule | None = None

    @property
    def opcode(self) -> str:
        return self.instruction.opcode

    @property
    def out_leaves(self) -> tuple[Shape, ...]:
        return self.instruction.shape.leaves()

    def out_dims(self, leaf: int = 0) -> tuple[int, ...]:
        leaves = self.out_leaves
        if not 0 <= leaf < len(leaves):
            raise Malformed(f"output {leaf} does not exist ({len(leaves)} outputs)")
        return static_dims(leaves[leaf])

    def in_dims(self, i: int) -> tuple[int, ...]:
        if not 0 <= i < len(self.operand_shapes):
            raise Malformed(f"operand {i} does not exist")
        return static_dims(self.operand_shapes[i])

    @property
    def num_operands(self) -> int:
        return len(self.operand_shapes)


Builder = Callable[[OpContext, int], list[Maps]]


@dataclass(frozen=True)
class OpRule:
    """How to index one opcode. `out2in(ctx, output_id)` returns one list of maps per operand;
    `in2out(ctx, input_id)` one list per output leaf. None: no map (unknown indexing)."""

    out2in: Builder | None
    in2out: Builder | None
    note: str = ""


def static_dims(shape: Shape) -> tuple[int, ...]:
    if shape.is_tuple:
        raise Malformed(f"expected an array shape, got {shape}")
    if any(d < 0 for d in shape.dims):
        raise Malformed(f"shape {shape} has an unbounded dynamic dimension")
    return shape.dims


def need(cond: bool, message: str) -> None:
    if not cond:
        raise Malformed(message)


def is_permutation(perm: Sequence[int], n: int) -> bool:
    return sorted(perm) == list(range(n))


# -- map construction helpers ------------------------------------------------------------------


def box(sizes: Sequence[int]) -> list[tuple[int, int]]:
    return [(0, n - 1) for n in sizes]


def build_map(
    results: Sequence[Expr | int],
    dims: Sequence[tuple[int, int] | Interval | Var],
    ranges: Sequence[tuple[int, int] | Interval | Var] = (),
    rts: Sequence[tuple[int, int] | Interval | Var] = (),
    constraints: Sequence[tuple[Expr, tuple[int, int] | Interval]] = (),
) -> IndexingMap:
    return IndexingMap.build(results, dims, ranges, rts, constraints)


def plain(m: IndexingMap) -> OperandIndexing:
    return OperandIndexing(m)


def identity_indexing(sizes: Sequence[int]) -> OperandIndexing:
    return plain(build_map([Dim(i) for i in range(len(sizes))], box(sizes)))


def to_scalar(sizes: Sequence[int]) -> OperandIndexing:
    """Every index of a `sizes` tensor reads the one element of a scalar: `(d0, d1) -> ()`."""
    return plain(build_map([], box(sizes)))


def to_all(src: Sequence[int], dst: Sequence[int]) -> OperandIndexing:
    """Every index of `src` relates to every index of `dst`: `(d0)[s0, s1] -> (s0, s1)`."""
    return plain(build_map([Symbol(i) for i in range(len(dst))], box(src), box(dst)))


def sum_products_first(terms: Sequence[Expr]) -> Expr:
    """A sum printed as XLA prints it: products, then the other terms, in the given order."""
    products = [t for t in terms if isinstance(t, Mul)]
    others = [t for t in terms if not isinstance(t, Mul)]
    return add(*products, *others)
