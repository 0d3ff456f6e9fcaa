"""The simplifier's entry points: maps rewritten with proven rules only, behind
`IndexingMap.simplify()` (registered in its seam here) and `vx.simplify`, over the bundled rule
base or the user's own proven rules.

The parts, each a module below this one: `maps` (the map-level phases: constraints to a
fixpoint, point dimensions, residue merges), `expressions` (the expression simplifier),
`rule_engine` (matching, conditions, one rewrite at a root), `prefilters` (the necessary
conditions that drop a rule before any match) and `instantiate` (a rule's side at a match).

The simplifier never calls a solver on its hot path. `simplify(m, verify=True)` asks Z3 afterwards
whether the result equals the input (translation validation)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Final

from ..core import laws
from ..core.expr import Expr
from ..core.indexing_map import IndexingMap, register_simplifier
from ..core.interval import Interval
from .expressions import _ExprSimplifier
from .maps import Simplifier
from .rule_engine import RuleEngine, Step

_DEFAULT: Simplifier | None = None


def _forget_default() -> None:
    """Its caches were filled under another set of proven laws."""
    global _DEFAULT
    _DEFAULT = None


laws.on_change(_forget_default)


def default_simplifier() -> Simplifier:
    """The simplifier over the bundled rule base, restricted to rules with a current, proved
    certificate (anything else is refused with a warning naming it)."""
    global _DEFAULT
    if _DEFAULT is None:
        from ..rules.base import proven_rule_base

        _DEFAULT = Simplifier(RuleEngine(proven_rule_base()))
    return _DEFAULT


_CUSTOM: Final[dict[tuple[str, bool], Simplifier]] = {}


def _fingerprint(paths: Sequence[str | Path]) -> str:
    """The rule files and their certificates as they are now (a cache key that an edited rule
    or a re-proof changes)."""
    import hashlib

    from ..rules.parser import rule_files
    from ..rules.store import certificate_path

    h = hashlib.sha256()
    for f in rule_files(list(paths)):
        for part in (f, certificate_path(f)):
            h.update(str(part.resolve()).encode())
            h.update(part.read_bytes() if part.is_file() else b"-")
    return h.hexdigest()


def simplifier_for(rules: Sequence[str | Path] = (), bundled: bool = True) -> Simplifier:
    """A simplifier over the bundled rule base (unless `bundled=False`) plus the user's rule
    files or directories `rules`, each rule admitted only when its certificate (`proofs/`
    beside a `rules/` directory, as `verifidx prove` writes them) re-checks now, as `verifidx
    check` would (`rules.base.checked_rule_base`; once per rule text, through the proof cache).
    A user rule named like a bundled one, or like another of `rules`, is a ParseError."""
    if not rules and bundled:
        return default_simplifier()
    key = (_fingerprint(rules), bundled)
    if key not in _CUSTOM:
        from ..rules.base import checked_rule_base, package_rule_dir, proven_rule_base

        own = checked_rule_base(rules, bundled)
        base = proven_rule_base([package_rule_dir()]) if bundled else []
        _CUSTOM[key] = Simplifier(RuleEngine([*base, *own]))
    return _CUSTOM[key]


def expression_range(m: IndexingMap, e: Expr, simplifier: Simplifier | None = None) -> Interval:
    """Sound interval of `e` over the map's domain, simplified first so that, for instance,
    `s0 - 32 * (s0 floordiv 32)` is seen as `s0 mod 32` and gets [0, 31]."""
    engine = (simplifier or default_simplifier()).engine
    simp = _ExprSimplifier(engine, m.bounds, dict(m.constraints))
    return simp.bound(simp(e))


class SimplifyResult:
    """`simplify(..., verify=True)`: the map and the translation-validation verdict (a
    `verifidx.solve.smt.Verdict`; typed `object` so that this module does not load the solver)."""

    # a plain class, not a dataclass: compiled by mypyc, a dataclass resolves its annotations in
    # this module's globals, where the solver's Verdict is not
    def __init__(self, map: IndexingMap, verdict: object, trace: list[Step]) -> None:
        self.map = map
        self.verdict = verdict
        self.trace = trace

    @property
    def verified(self) -> bool | None:
        return getattr(self.verdict, "holds", None)

    def __repr__(self) -> str:
        return f"SimplifyResult(map={self.map!r}, verdict={self.verdict!r}, trace={self.trace!r})"


def simplify(m: IndexingMap, verify: bool = False, point_dims: str = "replace",
             trace: list[Step] | None = None, timeout_ms: int = 5000,
             rules: Sequence[str | Path] = (), bundled: bool = True
             ) -> IndexingMap | SimplifyResult:
    """A new map with the same relation. With `verify=True`, also asks Z3 whether the result
    equals the input and returns a SimplifyResult whose verdict is honest (None: unknown).
    `rules`: the user's own proven rule files or directories, used on top of the bundled rule
    base, or instead of it with `bundled=False`."""
    steps: list[Step] | None = trace if trace is not None else ([] if verify else None)
    engine = simplifier_for(rules, bundled)
    out = engine.simplify(m, point_dims=point_dims, trace=steps)
    if not verify:
        return out
    from ..solve.smt import equal

    return SimplifyResult(out, equal(m, out, timeout_ms), steps or [])


def _simplify_map(m: IndexingMap, point_dims: str) -> IndexingMap:
    return default_simplifier().simplify(m, point_dims=point_dims)


# `IndexingMap.simplify()` reaches this engine through its seam (the map sits below this module).
register_simplifier(_simplify_map)

__all__ = ["RuleEngine", "Simplifier", "SimplifyResult", "Step", "simplify",
           "default_simplifier", "expression_range", "simplifier_for"]
