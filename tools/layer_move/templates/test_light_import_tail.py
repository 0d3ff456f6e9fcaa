#: The modules that sat at the top of the package before it had a folder per layer.
OLD_TOP_LEVEL = ("batch", "canonical", "computation_maps", "dedup", "equality", "errors", "expr",
                 "fusion", "implied_bounds", "indexing_map", "inductor", "interval", "laws",
                 "layout", "loop_maps", "native", "presburger", "ranges", "refinement", "seams", "smt",
                 "smt_terms", "subst", "sympy_bridge", "syntax", "tiling", "validation",
                 "vectorised", "version", "work")


def test_the_old_top_level_names_load_on_first_use() -> None:
    """`from verifidx import fusion, layout, tiling` (the README's) still works, as does every
    name that was a module at the top of the package, and `import verifidx` loads none of the
    analyses for it."""
    loaded = _loaded_after("import verifidx")
    assert not {m for m in loaded if m.startswith(("verifidx.analysis", "verifidx.hlo"))}
    names = _loaded_after("from verifidx import fusion, layout, tiling\n"
                          "print(fusion.__name__, layout.__name__, tiling.__name__)")
    assert {"verifidx.analysis.fusion", "verifidx.hlo.layout", "verifidx.analysis.tiling"} <= names
    import verifidx

    for name in OLD_TOP_LEVEL:
        module = getattr(verifidx, name)
        parts = module.__name__.split(".")
        assert parts[0] == "verifidx" and parts[2:] == [name], module.__name__
