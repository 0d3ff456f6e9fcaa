"""Loaders for seams: a lower layer calls a function that a higher one registers when it loads
(the simplifier behind `IndexingMap.simplify`, the analysis behind `fusion` and `call`). The
top-level package, which may load any layer, names here how to load each provider, so a caller
of a lower layer that never imported the provider still gets it, and no layer imports upward."""

from __future__ import annotations

from collections.abc import Callable

_loaders: dict[str, Callable[[], None]] = {}


def provide(seam: str, loader: Callable[[], None]) -> None:
    """`loader` loads the module that registers itself in `seam` (called by the package)."""
    _loaders[seam] = loader


def load(seam: str) -> None:
    """Loads the provider of `seam`, if the package named one."""
    loader = _loaders.get(seam)
    if loader is not None:
        loader()
