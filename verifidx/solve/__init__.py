"""The solver bridge (layer 2, docs/architecture.md): maps and expressions to Z3 (`smt`) and to
isl (`presburger`), with the honest verdicts, and the solver terms that the layers above state
their obligations in (`smt_terms`). With the rule prover, the only modules that import z3."""
