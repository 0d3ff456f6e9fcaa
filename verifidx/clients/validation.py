"""Checking another compiler's simplification: is `result` equal to `expr` over the ranges?

One record of a log is either sympy text as Inductor prints it (`expr`, `var_ranges`,
optional `size_ranges`, `result`) or a pair of XLA maps (`input`, `output`). The verdict is
`proved` only from a decision procedure (`verifidx.simplifier.equality.equal`: canonical identity,
exhaustive enumeration of a small box, the proven simplifier, Z3), `refuted` only with a
counterexample that plain integer arithmetic reproduces, `unknown` when neither,
`unsupported` (with the reason) when a term has no counterpart in the map language, and
`error` (with the line and column) when the record is malformed: one verdict per record, so
one bad line never hides the others. `Where(c, a, b)` is a case split: both sides compared
where `c` holds and where it does not. Beside the verdict: verifidx's own proven
simplification of the input and the divisions each side's expression keeps.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import (
    DepthError,
    EvaluationError,
    MissingDependencyError,
    ParseError,
    UnsupportedError,
    VerifidxError,
)
from ..core.expr import Const, Expr, Size, Variable, is_size_expr
from ..core.indexing_map import IndexingMap, SizeVar
from ..core.interval import range_of
from ..core.syntax import parse_map, print_point, variable_names
from ..simplifier.equality import equal
from .sympy_bridge import (
    MAX_CASES,
    Case,
    condition_cases,
    count_divisions,
    evaluate_sympy,
    from_sympy,
    has_where,
    parse_text,
    record_ranges,
    size_interval,
    symbol_name,
    to_sympy,
)

PROVED, REFUTED, UNKNOWN, UNSUPPORTED = "proved", "refuted", "unknown", "unsupported"
#: a malformed record (bad JSON, bad expression text, a symbol without a range)
ERROR = "error"

#: Z3's share of one record (the cheap decisions come first and usually settle it).
TIMEOUT_MS = 2000


@dataclass
class Validation:
    """What `validate_*` found for one record. `divisions` counts floordiv/ceildiv/mod in
    verifidx's reading of the input, of the other compiler's result and of verifidx's
    simplification; `fewer_divisions` says whether verifidx's keeps fewer than the result."""

    verdict: str
    reason: str = ""
    counterexample: dict[str, int] | None = None
    expr_value: object = None
    result_value: object = None
    simplified: str | None = None
    divisions: dict[str, int] = field(default_factory=dict)
    fewer_divisions: bool | None = None
    seconds: float = 0.0
    kind: str | None = "sympy"
    text: str = ""  # the input as given (for reports)
    column: int | None = None  # where in the line an `error` is

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "input": self.text, "verdict": self.verdict,
                "reason": self.reason, "column": self.column,
                "counterexample": self.counterexample,
                "expr_value": self.expr_value, "result_value": self.result_value,
                "simplified": self.simplified, "divisions": self.divisions,
                "fewer_divisions": self.fewer_divisions, "seconds": round(self.seconds, 6)}


# -- sympy records -------------------------------------------------------------------------------


def validate_sympy(expr: Any, result: Any, var_ranges: Mapping[Any, Any],
                   size_ranges: Mapping[Any, Any] | None = None,
                   timeout_ms: int = TIMEOUT_MS) -> Validation:
    """`result == expr` for every loop variable `0 <= x < extent` and, when the expressions
    or extents use size symbols, for every size in its range (sympy expressions)."""
    start = time.perf_counter()
    pair = None
    if has_where(expr) or has_where(result):
        out = _validate_cases(expr, result, var_ranges, size_ranges, timeout_ms)
    else:
        try:
            pair = _pair(expr, result, var_ranges, size_ranges, [])
        except (UnsupportedError, EvaluationError, DepthError) as err:  # beyond maps
            return Validation(UNSUPPORTED, str(err), text=str(expr),
                              seconds=time.perf_counter() - start)
        out = _decide(*pair, timeout_ms)
    out.text = str(expr)
    if out.verdict == REFUTED:
        _reevaluate(out, expr, result, var_ranges, size_ranges or {})
    if pair is not None:  # a case split has no one map to simplify
        _simplify(out, *pair)
    out.seconds = time.perf_counter() - start
    return out


def _pair(expr: Any, result: Any, var_ranges: Mapping[Any, Any],
          size_ranges: Mapping[Any, Any] | None, case: Case) -> tuple[IndexingMap, IndexingMap]:
    """Both sides as maps over one domain (restricted by `case`) and the same sizes."""
    f = from_sympy(expr, var_ranges, size_ranges, constraints=case)
    g = from_sympy(result, var_ranges, size_ranges, constraints=case)
    if f.sizes != g.sizes:  # one side dropped a size: both quantify over all of them
        names = [symbol_name(z.name) for z in (*f.sizes, *g.sizes)]
        f = from_sympy(expr, var_ranges, size_ranges, declare=names, constraints=case)
        g = from_sympy(result, var_ranges, size_ranges, declare=names, constraints=case)
    return f, g


def _decide(f: IndexingMap, g: IndexingMap, timeout_ms: int) -> Validation:
    out = _compare(f, g, timeout_ms)
    if out.verdict != PROVED and f.sizes:
        out = _proved_generalized(f, g, timeout_ms) or _refuted_at_sizes(f, g, timeout_ms) or out
    return out


def _cases(exprs: list[Any], case: Case, label: str = ""
           ) -> list[tuple[list[Any], Case, str]]:
    """The expressions without `Where`, each with the conditions under which it is theirs
    (and their text): the first `Where` found is split on its condition (every `Where` on
    that condition takes the same branch); the cases together cover the domain. More than
    MAX_CASES: unsupported."""
    found = next((w for e in exprs for w in _wheres(e)), None)
    if found is None:
        return [(exprs, case, label)]
    cond = found.args[0]
    out: list[tuple[list[Any], Case, str]] = []
    for value in (True, False):
        same = {w: w.args[1 if value else 2] for e in exprs for w in _wheres(e)
                if w.args[0] == cond}
        branch = [e.xreplace(same) for e in exprs]
        text = (label + " and " if label else "") + (f"{cond}" if value else f"not ({cond})")
        for part in condition_cases(cond, value):
            out += _cases(branch, case + part, text)
            if len(out) > MAX_CASES:
                raise UnsupportedError(f"more than {MAX_CASES} cases of Where: {found}")
    return out


def _wheres(e: Any) -> list[Any]:
    """The `Where` nodes of a sympy tree, outermost first."""
    if type(e).__name__ == "Where":
        return [e, *(w for a in e.args for w in _wheres(a))]
    return [w for a in e.args for w in _wheres(a)]


def _validate_cases(expr: Any, result: Any, var_ranges: Mapping[Any, Any],
                    size_ranges: Mapping[Any, Any] | None, timeout_ms: int) -> Validation:
    """`Where(c, a, b)` on either side: the pair compared in each case of the conditions
    (`c` true, `c` false), on the domain restricted to it. Proved when every case is
    (an empty case holds vacuously); refuted by a case's counterexample (re-evaluated on the
    original trees by the caller); else the first case's unknown or unsupported."""
    try:
        cases = _cases([expr, result], [])
    except (UnsupportedError, EvaluationError, DepthError) as err:
        return Validation(UNSUPPORTED, str(err))
    undecided: Validation | None = None
    for (e, r), case, where in cases:
        try:
            f, g = _pair(e, r, var_ranges, size_ranges, case)
        except (UnsupportedError, EvaluationError, DepthError) as err:
            return Validation(UNSUPPORTED, f"where {where}: {err}")
        v = _decide(f, g, timeout_ms)
        if v.verdict == REFUTED:
            v.reason = f"where {where}: {v.reason}"
            return v
        if v.verdict != PROVED and undecided is None:
            undecided = Validation(v.verdict, f"where {where}: {v.reason}")
    if undecided is not None:
        return undecided
    return Validation(PROVED, f"proved in each of the {len(cases)} cases of Where")


def _simplify(out: Validation, f: IndexingMap, g: IndexingMap) -> None:
    """verifidx's own simplification of the input, and the divisions each side keeps."""
    simplified = f.simplify()
    try:
        out.simplified = str(to_sympy(simplified))
    except UnsupportedError:
        out.simplified = str(simplified)
    _count(out, f, g, simplified)


def _proved_generalized(f: IndexingMap, g: IndexingMap, timeout_ms: int) -> Validation | None:
    """Equality proven with each compound size expression (`s0*s53`, `(s27 floordiv 4)`)
    replaced by a new size ranging over that expression's interval: equal for every value
    of the new sizes is equal in particular where they are the expressions (Z3 often cannot
    prove the products it would otherwise see). None unless that proves it."""
    found: list[Expr] = []
    seen: set[Expr] = set()
    stack = [*f.results, *g.results, *f.constraints, *g.constraints]
    while stack:
        e = stack.pop()
        if e in seen or isinstance(e, (Const, Variable)):
            continue
        seen.add(e)
        if is_size_expr(e):
            found.append(e)
        else:
            stack.extend(e.children)
    bounds = f.bounds
    taken = {z.name for z in f.sizes}
    fresh: dict[Expr, Expr] = {}
    added = []
    for k, e in enumerate(sorted(found, key=str)):
        iv = range_of(e, bounds)
        if iv.lo < 1:  # not a size's interval
            continue
        name = f"size{k}_"
        while name in taken:
            name += "_"
        taken.add(name)
        fresh[e] = Size(name)
        added.append(SizeVar(name, iv, provenance=str(e)))
    if not fresh:
        return None

    def general(m: IndexingMap) -> IndexingMap:
        return IndexingMap.build([r.substitute(fresh) for r in m.results], m.dims,
                                 constraints=[(c.substitute(fresh), iv)
                                              for c, iv in m.constraints.items()],
                                 sizes=[*m.sizes, *added])

    try:
        v = equal(general(f), general(g), timeout_ms)
    except ValueError:  # a generalized term outside the grammar of maps with sizes
        return None
    if v.holds is not True:
        return None
    what = ", ".join(f"{e}" for e in fresh)
    return Validation(PROVED, f"{v.message} (proven with {what} generalized to sizes of "
                              f"their own: a stronger claim)")


#: Size assignments tried by `_refuted_at_sizes` besides every size at its lower end.
SIZE_SAMPLES = 6


def _refuted_at_sizes(f: IndexingMap, g: IndexingMap, timeout_ms: int,
                      shown: Callable[[str], str] = symbol_name) -> Validation | None:
    """The two maps at a few concrete sizes (each at its lower end, one above, then seeded
    random values a little above), each static pair decided by `equal`: a difference at one
    assignment refutes the family (Z3 often cannot answer nonlinear size queries). None when
    every assignment tried agrees or is undecided."""
    import random

    rng = random.Random(str(f))
    tries = [{z.name: z.bounds.lo for z in f.sizes},
             {z.name: min(z.bounds.lo + 1, z.bounds.hi) for z in f.sizes}]
    tries += [{z.name: rng.randint(z.bounds.lo, min(z.bounds.hi, z.bounds.lo + 12))
               for z in f.sizes} for _ in range(SIZE_SAMPLES - 2)]
    for at in tries:
        v = equal(f.with_sizes(at), g.with_sizes(at), timeout_ms)
        if v.holds is False:
            where = ", ".join(f"{shown(k)} = {x}" for k, x in at.items())
            return Validation(REFUTED, f"at sizes {where}: {v.message}",
                              counterexample={**at, **(v.counterexample or {})},
                              expr_value=v.lhs_value, result_value=v.rhs_value)
    return None


def _reevaluate(out: Validation, expr: Any, result: Any, var_ranges: Mapping[Any, Any],
                size_ranges: Mapping[Any, Any]) -> None:
    """The counterexample (sizes, then loop variables, by their sympy names), checked
    against the ranges and evaluated on both sympy trees with Python integers; a point that
    does not reproduce (or lies outside the ranges) turns the verdict to unknown."""
    found = out.counterexample or {}
    names = [str(k) for k in var_ranges]
    point = {k if k in names else symbol_name(k): v for k, v in found.items()}
    sizes = sorted(k for k in point if k not in names)
    try:
        for k in sizes:
            iv = size_interval(k, size_ranges[k])
            if point[k] not in iv:
                raise UnsupportedError(f"{k} = {point[k]} is outside its range {iv}")
        extents = [evaluate_sympy(_tree(v, set(sizes)), point) for v in var_ranges.values()]
        if set(point) != set(names) | set(sizes) or any(
                not 0 <= point[n] < e for n, e in zip(names, extents)):
            raise UnsupportedError("not a loop point")
    except (KeyError, UnsupportedError, ParseError) as err:
        out.verdict = UNKNOWN
        out.reason = f"the counterexample {print_point(found)} is not a point: {err}"
        out.counterexample = None
        return
    try:
        a, b = evaluate_sympy(expr, point), evaluate_sympy(result, point)
    except (UnsupportedError, ZeroDivisionError) as err:
        out.verdict, out.reason = UNKNOWN, f"the counterexample does not evaluate: {err}"
        return
    if a == b:
        out.verdict = UNKNOWN
        out.reason = f"the counterexample {print_point(point)} did not reproduce (both give {a})"
        out.counterexample = None
        return
    out.counterexample = {n: point[n] for n in (*sizes, *names)}
    out.expr_value, out.result_value = a, b


def _tree(extent: Any, sizes: set[str]) -> Any:
    """An extent as a sympy tree (integers and text are parsed)."""
    if isinstance(extent, str):
        return parse_text(extent, sizes)
    if isinstance(extent, int):
        import sympy

        return sympy.Integer(extent)
    return extent


# -- XLA map pairs -------------------------------------------------------------------------------


def validate_maps(f: IndexingMap, g: IndexingMap, timeout_ms: int = TIMEOUT_MS) -> Validation:
    """`g` (another simplifier's output) denotes the same relation as `f` (its input)."""
    start = time.perf_counter()
    out = _compare(f, g, timeout_ms)
    if out.verdict != PROVED and f.sizes and f.sizes == g.sizes:
        out = _proved_generalized(f, g, timeout_ms) or _refuted_at_sizes(
            f, g, timeout_ms, shown=str) or out
    out.kind, out.text = "map", str(f)
    if out.verdict == REFUTED and not (f.num_range_vars or f.num_rt_vars or g.num_range_vars
                                       or g.num_rt_vars):
        _reevaluate_maps(out, f, g)
    simplified = f.simplify()
    out.simplified = str(simplified)
    _count(out, f, g, simplified)
    out.seconds = time.perf_counter() - start
    return out


def _reevaluate_maps(out: Validation, f: IndexingMap, g: IndexingMap) -> None:
    """Maps of dimensions (and sizes) only: the point (at sizes in their intervals) is inside
    one domain, and the other map is outside its domain there or gives another value (the
    solver path re-checks maps with range variables itself)."""
    names = variable_names(f)
    point = out.counterexample or {}
    try:
        dims = [point[names[v]] for v in f.variables]
        sizes = {z.name: point[z.name] for z in f.sizes}
    except KeyError:
        out.verdict, out.reason = UNKNOWN, f"the counterexample {print_point(point)} names no point"
        return
    if not all(sizes[z.name] in z.bounds for z in f.sizes):
        out.verdict = UNKNOWN
        out.reason = f"the counterexample {print_point(point)} is outside the sizes"
        out.counterexample = None
        return

    def value(m: IndexingMap) -> tuple[int, ...] | None:
        if len(dims) != m.num_dims or not all(x in i.bounds for x, i in zip(dims, m.dims)):
            return None
        try:
            at = sizes or None
            return m.evaluate(dims, sizes=at) if m.constraints_satisfied(dims, sizes=at) \
                else None
        except EvaluationError:
            return None

    a, b = value(f), value(g)
    if a == b:
        out.verdict = UNKNOWN
        out.reason = f"the counterexample {print_point(point)} did not reproduce"
        out.counterexample = None
        return
    out.expr_value = list(a) if a is not None else None
    out.result_value = list(b) if b is not None else None


# -- shared --------------------------------------------------------------------------------------


def _compare(f: IndexingMap, g: IndexingMap, timeout_ms: int) -> Validation:
    v = equal(f, g, timeout_ms)
    if v.holds is True:
        return Validation(PROVED, v.message)
    if v.holds is False:
        return Validation(REFUTED, v.message, counterexample=dict(v.counterexample or {}),
                          expr_value=v.lhs_value, result_value=v.rhs_value)
    return Validation(UNKNOWN, v.message or "undecided")


def _count(out: Validation, f: IndexingMap, g: IndexingMap, simplified: IndexingMap) -> None:
    def divisions(m: IndexingMap) -> int:  # of the expression: the extents are not its own
        return sum(count_divisions(r) for r in m.results)

    out.divisions = {"expr": divisions(f), "result": divisions(g),
                     "verifidx": divisions(simplified)}
    out.fewer_divisions = out.divisions["verifidx"] < out.divisions["result"]


# -- log records ---------------------------------------------------------------------------------


def validate_record(line_text: str, source: str = "<string>", line: int = 1,
                    timeout_ms: int = TIMEOUT_MS) -> Validation:
    """One JSON line of a log, always one verdict: malformed JSON, a missing field, malformed
    expression text, an unknown function or a symbol without a range is an `error` (reason
    and column: in the JSON text, or in the expression's text for the expression's own
    errors); a form beyond maps is `unsupported`. Raises MissingDependencyError alone (a
    sympy record where sympy is not installed)."""
    start = time.perf_counter()
    try:
        return _validate_record(line_text, source, line, timeout_ms)
    except ParseError as err:
        return Validation(ERROR, err.message, column=err.column, kind=_kind(line_text),
                          text=line_text.strip(), seconds=time.perf_counter() - start)
    except MissingDependencyError:
        raise
    except VerifidxError as err:  # e.g. a map pair beyond what `equal` decides
        return Validation(UNSUPPORTED, str(err), kind=_kind(line_text), text=line_text.strip(),
                          seconds=time.perf_counter() - start)


def _kind(line_text: str) -> str | None:
    """What a record that failed is meant to be: `map`, `sympy`, or None (no JSON object)."""
    try:
        record = json.loads(line_text)
    except json.JSONDecodeError:
        return None
    if not isinstance(record, dict):
        return None
    return "map" if "input" in record or "output" in record else "sympy"


def _validate_record(line_text: str, source: str, line: int, timeout_ms: int) -> Validation:
    """`validate_record`, raising ParseError (at the line, and column where known)."""
    try:
        record = json.loads(line_text)
    except json.JSONDecodeError as err:
        raise ParseError(f"expected a JSON object ({err.msg})", line, err.colno, source) from None
    if not isinstance(record, dict):
        raise ParseError("expected a JSON object", line, 1, source)
    if "input" in record or "output" in record:
        f = _map(record, "input", source, line)
        g = _map(record, "output", source, line)
        out = validate_maps(f, g, timeout_ms)
        out.text = record["input"]
        return out
    var_ranges, size_ranges, known = record_ranges(record, source, line,
                                                   ("expr", "var_ranges", "result"),
                                                   "'input' and 'output' maps")
    exprs = []
    for key in ("expr", "result"):
        if not isinstance(record[key], str):
            raise ParseError(f"expected {key} as a string of sympy text", line, 1, source)
        try:
            exprs.append(parse_text(record[key], known, source, line))
        except ParseError as err:
            raise ParseError(f"{key}: {err.message}", err.line, err.column, source) from None
    try:
        out = validate_sympy(exprs[0], exprs[1], var_ranges, size_ranges, timeout_ms)
    except ParseError as err:  # an extent that is not a number
        raise ParseError(err.message, line, 1, source) from None
    out.text = record["expr"]
    return out


def _map(record: dict[str, Any], key: str, source: str, line: int) -> IndexingMap:
    text = record.get(key)
    if not isinstance(text, str):
        raise ParseError(f"expected {key!r} as XLA map text", line, 1, source)
    try:
        return parse_map(text, source)
    except ParseError as err:
        raise ParseError(f"{key}: {err.message}", line, err.column, source) from None


__all__ = ["ERROR", "PROVED", "REFUTED", "UNKNOWN", "UNSUPPORTED", "Validation",
           "validate_maps", "validate_record", "validate_sympy"]
