"""The simplifier (layer 4, docs/architecture.md): maps rewritten with proven rules only, and
map equality decided cheapest first (`equality`, behind `vx.equal`). Top down: `engine`, the
entry points behind `IndexingMap.simplify()` and `vx.simplify`; `maps`, the map-level phases
(constraints to a fixpoint, point dimensions, residue merges); `expressions`, the expression
simplifier; `rule_engine`, one rewrite at a root (matching, conditions); `prefilters`, the
necessary conditions that drop a rule before any match; `instantiate`, a rule's side at a
match."""
