"""The laws the smart constructors (`verifidx.core.expr`) and the canonical sums
(`verifidx.core.canonical`) apply while they build expressions, and whether each may apply.

Each law is a rule of `rules/canonical.rules` (distribution is `mul_distribute` of
`rules/mul.rules`). A law applies only while its certificate is current and says `proved` with
strength `all`: `verifidx.rules.base.gate_laws` decides that when the package is imported and
switches off, with an `UnprovenLawWarning` naming it, every law that is not. Until that decision
every law is off, so an unproven law never applies, and `verifidx prove` still runs (the prover
builds its obligations from raw patterns) to repair a broken certificate.

The flags are plain attributes of `ON` because the constructors read them on every call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Final

#: Laws the smart constructors apply, each guarded by the flag of the same name.
CONSTRUCTOR_LAWS = (
    "fold_add", "fold_mul", "fold_floordiv", "fold_ceildiv", "fold_mod", "fold_min", "fold_max",
    "add_zero", "mul_one", "mul_zero", "floordiv_one", "ceildiv_one", "mod_one",
    "mul_const_right", "mul_const_assoc", "add_assoc", "add_comm",
)
#: Laws the canonical sums need all at once (`canonical_sums`).
CANONICAL_SUM_LAWS: Final = (
    "add_assoc", "add_comm", "fold_add", "fold_mul", "add_zero", "mul_one", "mul_zero",
    "mul_const_assoc", "like_terms", "like_terms_unit", "add_self", "mul_distribute",
    "min_comm", "max_comm",
)
NAMES: Final = tuple(dict.fromkeys(CONSTRUCTOR_LAWS + CANONICAL_SUM_LAWS))


class Laws:
    """One boolean per law, plus `canonical_sums` (every law of CANONICAL_SUM_LAWS is on)."""

    __slots__ = (*NAMES, "canonical_sums")
    fold_add: bool
    fold_mul: bool
    fold_floordiv: bool
    fold_ceildiv: bool
    fold_mod: bool
    fold_min: bool
    fold_max: bool
    add_zero: bool
    mul_one: bool
    mul_zero: bool
    floordiv_one: bool
    ceildiv_one: bool
    mod_one: bool
    mul_const_right: bool
    mul_const_assoc: bool
    add_assoc: bool
    add_comm: bool
    like_terms: bool
    like_terms_unit: bool
    add_self: bool
    mul_distribute: bool
    min_comm: bool
    max_comm: bool
    canonical_sums: bool

    def __init__(self, enabled: Iterable[str] = ()) -> None:
        on = set(enabled)
        for name in NAMES:
            setattr(self, name, name in on)
        self.canonical_sums = all(name in on for name in CANONICAL_SUM_LAWS)

    def enabled(self) -> set[str]:
        return {name for name in NAMES if getattr(self, name)}


ON = Laws()
_ON_CHANGE: Final[list[Callable[[], None]]] = []


def set_enabled(names: Iterable[str]) -> None:
    """Switch on exactly these laws (the rest off) and drop every cache built under the old
    set (registered with `on_change`)."""
    global ON
    ON = Laws(names)
    for fn in _ON_CHANGE:
        fn()


def on_change(fn: Callable[[], None]) -> None:
    _ON_CHANGE.append(fn)
