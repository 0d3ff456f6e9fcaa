"""The values and their meaning (layer 1, docs/architecture.md): expressions, intervals,
indexing maps and their text, with the errors, the proven constructor laws, the seams through
which they reach higher layers, the choice of compiled or pure build (`native`) and the runner
of independent work items (`work`). Nothing here imports a higher folder.

This package imports nothing itself: `verifidx/__init__.py` loads `native` before any other
module, so that it decides which build of the core runs."""
