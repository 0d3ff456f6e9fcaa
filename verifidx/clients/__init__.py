"""verifidx in other compilers' hands (layer 8, docs/architecture.md): sympy index expressions
to maps and back (`sympy_bridge`), another compiler's simplification proved or refuted against
its input (`validation`), and the hook in PyTorch Inductor (`inductor`)."""
