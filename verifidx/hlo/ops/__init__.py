"""Per-op map builders, one module per op family; `verifidx.hlo.indexing.OP_TABLE` names every
op with its builders, and `common` holds what the families share."""
