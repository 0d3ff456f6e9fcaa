"""What is computed from the per-op maps (layer 7, docs/architecture.md): maps of whole
computations and loops, deduplication by proof, fusion indexing, refinement of dynamic programs,
symbolic tiles (`tiling`) and verified graph substitutions (`subst`)."""
