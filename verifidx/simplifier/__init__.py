"""The simplifier (layer 4, docs/architecture.md): maps rewritten with proven rules only
(`engine`, the engine behind `IndexingMap.simplify()` and `vx.simplify`), and map equality
decided cheapest first (`equality`, behind `vx.equal`)."""
