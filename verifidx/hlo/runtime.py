"""Runtime variables with provenance: which instruction, and which element of it, supplies each
`rt` variable of a map, printed as XLA prints it.

Invariant (every builder in `verifidx.hlo.indexing` keeps it): runtime variable `rt<k>` of a map
stands for `clamp(v, lo, hi)` where `[lo, hi]` are the bounds of `rt<k>` and `v` is the element of
`runtime[k].source` at the index `runtime[k].map` gives for the current point of the map's domain.
Dynamic-slice, dynamic-update-slice and gather clamp their start indices exactly so, to
`[0, operand_dim - slice_dim]`, which is why a known start value can be folded soundly: substitute
the clamped value, never the raw one. Where the operand's dimension is a size `N`
(`verifidx.hlo.sized_ops`), the clamp's upper end is `N - slice_dim`, a constraint
`rt<k> - (N - slice_dim) in [.., 0]` of the map, and a known start is folded only where it
provably lies inside.

Folding (`fold_known_values`):
- a scalar integer `constant` is folded to `clamp(value, lo, hi)`, a constant;
- an `iota` is folded to its index expression, wrapped in `min`/`max` only where interval
  arithmetic cannot show that it stays inside `[lo, hi]`. XLA folds iotas without the clamp, which
  can name elements past the end of the operand; verifidx keeps the clamp, so the map stays sound.
After composition (`compose_indexing`), a runtime variable whose bounds are one point is replaced
by that point (`fold_point_runtime`). Nothing else is folded.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from verifidx.core.expr import Const, Expr, RtVar, Variable, maximum, minimum
from verifidx.core.indexing_map import IndexingMap, compose
from verifidx.core.interval import Interval, range_of
from verifidx.core.syntax import print_map
from verifidx.hlo.module import HloInstruction


@dataclass(frozen=True)
class RuntimeVar:
    """Provenance of one runtime variable: `source` supplies the value; `map` goes from the
    domain of the map that uses the variable to the index of the element of `source` read."""

    source: HloInstruction
    map: IndexingMap

    @property
    def label(self) -> str:
        """XLA's spelling of the source: `parameter(N)`, `constant(V)` or the name."""
        return source_label(self.source)


def source_label(inst: HloInstruction) -> str:
    if "iteration_of" in inst.raw_attributes:  # verifidx.hlo.ops.loops
        return f"iteration of {inst.raw_attributes['iteration_of']}"
    if inst.opcode == "parameter" and inst.parameter_number is not None:
        return f"parameter({inst.parameter_number})"
    if inst.opcode == "constant" and inst.shape.rank == 0 and inst.literal is not None:
        return f"constant({inst.literal.strip()})"
    return inst.name


@dataclass(frozen=True)
class OperandIndexing:
    """One indexing map together with what XLA prints next to it: the provenance of its runtime
    variables (aligned with `map.rt_vars`) and, for all-gather, the map to the replica id."""

    map: IndexingMap
    runtime: tuple[RuntimeVar, ...] = ()
    replica: IndexingMap | None = None
    notes: tuple[str, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        if not self.map.is_undefined and len(self.runtime) != self.map.num_rt_vars:
            raise ValueError(
                f"{len(self.runtime)} provenance entries for {self.map.num_rt_vars} runtime "
                f"variables"
            )

    @staticmethod
    def undefined(note: str = "") -> OperandIndexing:
        return OperandIndexing(IndexingMap.undefined(), notes=(note,) if note else ())

    @property
    def is_undefined(self) -> bool:
        return self.map.is_undefined

    def to_text(self, div: str = "floordiv", multiline: bool = False) -> str:
        """XLA's HloInstructionIndexing text for this map (without the `operand id` header)."""
        if self.map.is_undefined:
            return "unknown indexing"
        lines = [print_map(self.map, div, multiline)]
        if any(z.provenance for z in self.map.sizes):
            lines.append("sizes:")
            lines.extend(f"{z.name}: {z.provenance}" for z in self.map.sizes if z.provenance)
        if self.runtime:
            lines.append("runtime variables:")
            for k, rv in enumerate(self.runtime):
                lines.append(f"rt{k}: {rv.label}; {print_map(rv.map, div, multiline)}")
        if self.replica is not None:
            lines.append("replica id:")
            lines.append(print_map(self.replica, div, multiline))
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.to_text()

    @property
    def key(self) -> str:
        """Text used for textual deduplication (map, provenance and replica map)."""
        return self.to_text()


# -- composition -------------------------------------------------------------------------------


def drop_implied_constraints(m: IndexingMap) -> IndexingMap:
    """Removes constraints that interval arithmetic shows always hold on the variables' bounds,
    and marks the map KNOWN EMPTY when one can never hold. Both keep the relation exactly."""
    if m.is_undefined or m.is_known_empty or not m.constraints:
        return m
    bounds = m.bounds
    kept: dict[Expr, Interval] = {}
    for e, iv in m.constraints.items():
        r = range_of(e, bounds)
        if r.intersect(iv).is_empty and not r.is_empty:
            return m.replace(is_known_empty=True)
        if not iv.contains(r):
            kept[e] = iv
    if len(kept) == len(m.constraints):
        return m
    return m.replace(constraints=kept)


def _staying_rt(m: IndexingMap) -> list[int]:
    """Runtime variables that `IndexingMap.remove_unused_symbols` keeps: used by a result, or
    linked through constraints to a variable that stays."""
    staying = set(m.variables[: m.num_dims])
    for e in m.results:
        staying |= e.variables()
    staying = m.linked_variables(staying)
    return [k for k in range(m.num_rt_vars) if RtVar(k) in staying]


def remove_unused(ind: OperandIndexing) -> OperandIndexing:
    """Drops range and runtime variables that no result needs (with their provenance), as XLA
    does after composing; the relation is unchanged (see `remove_unused_symbols`)."""
    m = ind.map
    if m.is_undefined or (not m.num_range_vars and not m.num_rt_vars):
        return ind
    new = m.remove_unused_symbols()
    runtime = ind.runtime
    if new.num_rt_vars != m.num_rt_vars:
        kept = _staying_rt(m)
        if len(kept) != new.num_rt_vars:  # pragma: no cover - both follow the same rule
            return ind
        runtime = tuple(ind.runtime[k] for k in kept)
    runtime = tuple(RuntimeVar(rv.source, rv.map.remove_unused_symbols()) for rv in runtime)
    replica = None if ind.replica is None else ind.replica.remove_unused_symbols()
    return OperandIndexing(new, runtime, replica, ind.notes)


def compose_indexing(first: OperandIndexing, second: OperandIndexing) -> OperandIndexing:
    """Apply `first`, then `second`, carrying provenance along.

    Runtime variables are numbered as `compose` numbers them (as XLA does): `second`'s, then
    `first`'s. The provenance maps of `second` (which start from `second`'s domain) are composed
    with `first.map`; those of `first` are kept. Unused range and runtime variables are dropped,
    runtime variables that can take one value only are replaced by it, and constraints decided
    by intervals removed. Two all-gathers in a row have no single
    replica id, so their composition is undefined (XLA answers the same)."""
    notes = first.notes + second.notes
    if first.is_undefined or second.is_undefined:
        return OperandIndexing(IndexingMap.undefined(), notes=notes)
    if first.replica is not None and second.replica is not None:
        return OperandIndexing(
            IndexingMap.undefined(),
            notes=(*notes, "two all-gathers in a row: the replica id is not one map"),
        )
    if first.map.num_results != second.map.num_dims:
        return OperandIndexing(IndexingMap.undefined(), notes=(
            *notes, f"cannot compose a map with {first.map.num_results} results and one with "
                    f"{second.map.num_dims} dims (shapes disagree)"))
    m = drop_implied_constraints(compose(first.map, second.map))
    runtime = tuple(
        RuntimeVar(rv.source, drop_implied_constraints(compose(first.map, rv.map)))
        for rv in second.runtime
    ) + first.runtime
    replica = first.replica
    if second.replica is not None:
        replica = drop_implied_constraints(compose(first.map, second.replica))
    return fold_point_runtime(remove_unused(OperandIndexing(m, runtime, replica, notes)))


# -- folding of known runtime values -----------------------------------------------------------


def clamp_expr(value: Expr, bounds: Mapping[Variable, Interval], lo: int, hi: int) -> Expr:
    """`clamp(value, lo, hi)`, leaving out the `max`/`min` that intervals show unnecessary."""
    r = range_of(value, bounds)
    out = value
    if r.lo < lo:
        out = maximum(out, lo)
    if r.hi > hi:
        out = minimum(out, hi)
    return out


def _known_value(rv: RuntimeVar, bounds: Interval, domain: IndexingMap) -> Expr | None:
    """The clamped value of a runtime variable as an expression over the domain's dims and range
    variables, or None when it is not known at compile time."""
    src = rv.source
    if src.opcode == "constant" and src.shape.rank == 0:
        v = src.literal_value
        if isinstance(v, bool) or not isinstance(v, int):
            return None
        return Const(min(max(v, bounds.lo), bounds.hi))
    if src.opcode == "iota":
        dim = src.iota_dimension
        m = rv.map
        if (
            dim is None
            or m.is_undefined
            or m.is_known_empty
            or m.num_rt_vars
            or m.num_results != src.shape.rank
            or not 0 <= dim < m.num_results
            or m.dims != domain.dims
            or m.range_vars != domain.range_vars[: m.num_range_vars]
            or m.constraints
        ):
            return None
        return clamp_expr(m.results[dim], domain.bounds, bounds.lo, bounds.hi)
    return None


def fold_known_values(indexing: OperandIndexing) -> OperandIndexing:
    """Substitutes every runtime variable whose value is known at compile time (scalar integer
    constants, iotas) by that value, clamped as the op clamps it (see the module docstring)."""
    m = indexing.map
    if m.is_undefined or not indexing.runtime:
        return indexing
    values: dict[int, Expr] = {}
    for k, rv in enumerate(indexing.runtime):
        value = _known_value(rv, m.rt_vars[k].bounds, m)
        if value is not None:
            values[k] = value
    return substitute_runtime(indexing, values)


def fold_point_runtime(indexing: OperandIndexing) -> OperandIndexing:
    """Substitutes runtime variables whose bounds are one point by that point.

    Sound: for the point value the relation is unchanged; for any other value the map related
    nothing, and now relates what the point value does (more, never less)."""
    m = indexing.map
    if m.is_undefined or not indexing.runtime:
        return indexing
    values: dict[int, Expr] = {k: Const(v.bounds.lo) for k, v in enumerate(m.rt_vars)
                               if v.bounds.is_point}
    return substitute_runtime(indexing, values)


def substitute_runtime(indexing: OperandIndexing, values: Mapping[int, Expr]) -> OperandIndexing:
    """Runtime variable `k` replaced by `values[k]` everywhere (the rest renumbered)."""
    m = indexing.map
    if not values:
        return indexing
    keep = [k for k in range(m.num_rt_vars) if k not in values]
    subst: dict[Expr, Expr] = {RtVar(k): v for k, v in values.items()}
    subst.update({RtVar(old): RtVar(new) for new, old in enumerate(keep)})
    folded = IndexingMap(
        tuple(r.substitute(subst) for r in m.results),
        m.dims,
        m.range_vars,
        tuple(m.rt_vars[k] for k in keep),
        {},
        m.is_known_empty,
        sizes=m.sizes,
    )
    for e, iv in m.constraints.items():
        folded = folded.add_constraint(e.substitute(subst), iv)
    runtime = tuple(indexing.runtime[k] for k in keep)
    notes = indexing.notes + tuple(
        f"rt{k} folded: {indexing.runtime[k].label} -> {values[k]}" for k in sorted(values)
    )
    return OperandIndexing(folded, runtime, indexing.replica, notes)
