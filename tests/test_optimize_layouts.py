"""`verifidx optimize` on modules with layouts: what a module computes, byte for byte, does not
change (checked by an independent numpy interpreter of layouts, tests/layout_oracle.py), and
every application is translation-validated.

tests/data/layouts/resize.opt.hlo is XLA's CPU output for a JAX image resize (jax 0.10.2,
`jax.jit(lambda x: jax.image.resize(x, (1, 12, 12, 3), method="bilinear")).lower(x).compile()
.as_text()` with x f32[1,5,7,3]); before the fix optimize removed three of its layout-changing
copies (one of them a fused root) and changed its output."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from layout_oracle import Interpreter, Unsupported, minor_to_major, random_value, store

from verifidx.analysis.subst.apply import optimize
from verifidx.analysis.subst.parser import load_substitution_file
from verifidx.hlo import parse_hlo

REPO = Path(__file__).resolve().parents[1]
RULES = [REPO / "rules"]
CORPUS = sorted((REPO / "tests" / "data" / "jax").glob("*.hlo")) + \
    sorted((REPO / "tests" / "data" / "layouts").glob("*.hlo"))

REPRO = """HloModule m
ENTRY e {
  p = f32[2,3]{1,0} parameter(0)
  t = f32[3,2]{0,1} transpose(p), dimensions={1,0}
  c = f32[3,2]{1,0} copy(t)
  ROOT b = f32[6]{0} bitcast(c)
}
"""


def _same_everywhere(before: str, after: str, seeds: int = 2) -> list[str]:
    """Run every computation the oracle can interpret in both modules on the same random
    parameter buffers; assert equal output buffers. Returns the computations compared."""
    old, new = Interpreter(before), Interpreter(after)
    compared = []
    for name, comp in old.module.computations.items():
        params = sorted(comp.parameters, key=lambda p: p.parameter_number)
        for seed in range(seeds):
            rng = np.random.default_rng(seed)
            try:
                args = [random_value(p.shape, rng) for p in params]
                x = old.run(name, args)
            except Unsupported:
                break
            y = new.run(name, args)  # what the original interprets, the rewrite must too
            assert (x.dims, x.minor_to_major) == (y.dims, y.minor_to_major), name
            assert np.array_equal(x.buffer, y.buffer), f"{name} computes other bytes"
        else:
            compared.append(name)
    return compared


def _callers_see_their_layouts(text: str) -> None:
    """Every fusion's fused root has the fusion's layout (what its caller reads)."""
    module = parse_hlo(text)
    for comp in module.computations.values():
        for inst in comp.instructions:
            if inst.opcode == "fusion":
                root = module.computations[inst.called_computations[0]].root
                assert minor_to_major(root.shape) == minor_to_major(inst.shape), inst.name


def _counts_agree(result) -> None:
    """Every application was validated: each names the query that licensed it."""
    assert len(result.applied) == sum(result.applications.values())
    assert all(0 <= a.query < result.queries for a in result.applied)
    if result.applied:
        assert f"each of the {len(result.applied)} applications translation-validated" in \
            result.summary()


def _check(text: str, source: str = "m", only: str | None = None):
    rules = RULES if only is None else [
        s for s in load_substitution_file(REPO / "rules" / "data_movement.subst")
        if s.name == only]
    result = optimize(text, source, rules)
    _counts_agree(result)
    _callers_see_their_layouts(result.text)
    assert parse_hlo(result.text).entry.root.shape == parse_hlo(text).entry.root.shape
    return result, _same_everywhere(text, result.text)


def test_oracle_reads_layouts_as_xla_documents() -> None:
    """The repro's bitcast reads p transposed; bitcasting t directly reads p in order (the
    two maps the issue quotes)."""
    p = np.arange(6, dtype=np.float32).reshape(2, 3)
    shape = parse_hlo(REPRO).entry.parameters[0].shape
    out = Interpreter(REPRO).run("e", [store(p, shape)])
    assert out.logical().tolist() == p.T.ravel().tolist()  # b[d0] = p[d0 mod 2, d0 floordiv 2]
    no_copy = REPRO.replace("  c = f32[3,2]{1,0} copy(t)\n", "").replace("bitcast(c)",
                                                                          "bitcast(t)")
    out = Interpreter(no_copy).run("e", [store(p, shape)])
    assert out.logical().tolist() == p.ravel().tolist()  # b[d0] = p[d0 floordiv 3, d0 mod 3]


def test_layout_changing_copy_before_bitcast_is_kept() -> None:
    """The issue's repro: copy_noop would let the bitcast read other bytes."""
    result, compared = _check(REPRO)
    assert sum(result.applications.values()) == 0
    assert "copy(t)" in result.text
    (rejection,) = result.rejections
    assert rejection.substitution == "copy_noop" and rejection.instruction == "c"
    assert "observed by bitcast b" in rejection.reason
    assert "rejected copy_noop at c in e" in result.summary()
    assert compared == ["e"]


HAND_WRITTEN = {
    # a copy that keeps the layout does nothing, also before a bitcast
    "same_layout_copy": ("""HloModule m
ENTRY e {
  p = f32[2,3]{1,0} parameter(0)
  t = f32[3,2]{1,0} transpose(p), dimensions={1,0}
  c = f32[3,2]{1,0} copy(t)
  ROOT b = f32[6]{0} bitcast(c)
}
""", {"copy_noop": 1}, 0),
    # layouts that differ but put every element at the same offset: proven on physical maps
    "equivalent_layouts": ("""HloModule m
ENTRY e {
  p = f32[1,3]{1,0} parameter(0)
  t = f32[1,3]{0,1} negate(p)
  c = f32[1,3]{1,0} copy(t)
  ROOT b = f32[3]{0} bitcast(c)
}
""", {"copy_noop": 1}, 0),
    # the copy's layout is read by the add only, which reads logical values
    "unobserved_layout": ("""HloModule m
ENTRY e {
  p = f32[2,3]{1,0} parameter(0)
  q = f32[3,2]{1,0} parameter(1)
  t = f32[3,2]{0,1} transpose(p), dimensions={1,0}
  c = f32[3,2]{1,0} copy(t)
  ROOT a = f32[3,2]{1,0} add(c, q)
}
""", {"copy_noop": 1}, 0),
    # equivalent layouts, but a padding scalar takes part: not decided on physical maps
    "pad_nothing_equivalent_layouts": ("""HloModule m
ENTRY e {
  p = f32[1,3]{1,0} parameter(0)
  v = f32[] constant(0)
  t = f32[1,3]{0,1} negate(p)
  c = f32[1,3]{1,0} pad(t, v), padding=0_0x0_0
  ROOT b = f32[3]{0} bitcast(c)
}
""", {}, 1),
    # the entry's root: the caller reads its bytes
    "root_copy": ("""HloModule m
ENTRY e {
  p = f32[2,3]{1,0} parameter(0)
  t = f32[3,2]{0,1} transpose(p), dimensions={1,0}
  ROOT c = f32[3,2]{1,0} copy(t)
}
""", {}, 1),
    # a fused root copy whose layout the fusion's caller relies on (bitcasts it)
    "fusion_root_copy": ("""HloModule m
f {
  x = f32[2,3]{1,0} parameter(0)
  t = f32[3,2]{0,1} transpose(x), dimensions={1,0}
  ROOT c = f32[3,2]{1,0} copy(t)
}
ENTRY e {
  p = f32[2,3]{1,0} parameter(0)
  r = f32[3,2]{1,0} fusion(p), kind=kLoop, calls=f
  ROOT b = f32[6]{0} bitcast(r)
}
""", {}, 1),
    # the same offsets, but the fused computation's parameter declares the layout
    "equivalent_layouts_into_fusion": ("""HloModule m
f {
  x = f32[1,3]{1,0} parameter(0)
  ROOT n = f32[1,3]{1,0} negate(x)
}
ENTRY e {
  p = f32[1,3]{1,0} parameter(0)
  t = f32[1,3]{0,1} negate(p)
  c = f32[1,3]{1,0} copy(t)
  ROOT r = f32[1,3]{1,0} fusion(c), kind=kLoop, calls=f
}
""", {}, 1),
    # a value handed to a tuple: its layout is part of the tuple's shape
    "tuple_user": ("""HloModule m
ENTRY e {
  p = f32[2,3]{1,0} parameter(0)
  t = f32[3,2]{0,1} transpose(p), dimensions={1,0}
  c = f32[3,2]{1,0} copy(t)
  ROOT r = (f32[3,2]{1,0}) tuple(c)
}
""", {}, 1),
    # transposes that cancel: dropping both would hand the bitcast p's layout
    "transpose_inverse_observed": ("""HloModule m
ENTRY e {
  p = f32[2,3]{1,0} parameter(0)
  t = f32[3,2]{1,0} transpose(p), dimensions={1,0}
  u = f32[2,3]{0,1} transpose(t), dimensions={1,0}
  ROOT b = f32[6]{0} bitcast(u)
}
""", {}, 1),
    # ... and the same layout: removed
    "transpose_inverse_same_layout": ("""HloModule m
ENTRY e {
  p = f32[2,3]{1,0} parameter(0)
  t = f32[3,2]{0,1} transpose(p), dimensions={1,0}
  u = f32[2,3]{1,0} transpose(t), dimensions={1,0}
  ROOT b = f32[6]{0} bitcast(u)
}
""", {"transpose_inverse": 1}, 0),
    # reshape_reshape builds a new root with the old root's layout: logical maps suffice
    "reshape_reshape_layouts": ("""HloModule m
ENTRY e {
  p = f32[2,3,4]{0,2,1} parameter(0)
  r = f32[6,4]{0,1} reshape(p)
  s = f32[4,6]{0,1} reshape(r)
  ROOT b = f32[24]{0} bitcast(s)
}
""", {"reshape_reshape": 1}, 0),
}


@pytest.mark.parametrize("name", sorted(HAND_WRITTEN))
def test_hand_written_post_layout_modules(name: str) -> None:
    text, applied, rejected = HAND_WRITTEN[name]
    only = "transpose_inverse" if name.startswith("transpose_inverse") else None
    result, compared = _check(text, name, only)
    assert dict(result.applications) == applied
    assert result.rejected == rejected
    if name != "tuple_user":  # the oracle has no tuples
        assert "e" in compared


def test_cancelling_transposes_keep_the_observed_layout() -> None:
    """With every substitution, the transposes of `transpose_inverse_observed` become one
    transpose by the identity permutation that keeps u's layout (transpose_transpose)."""
    result, compared = _check(HAND_WRITTEN["transpose_inverse_observed"][0])
    assert dict(result.applications) == {"transpose_transpose": 1} and compared == ["e"]
    assert "f32[2,3]{0,1} transpose(p), dimensions={0,1}" in result.text


def test_equivalent_layouts_are_proven_on_physical_maps() -> None:
    result, _ = _check(HAND_WRITTEN["equivalent_layouts"][0])
    (application,) = result.applied
    assert application.physical and "1 on physical maps" in result.summary()


def _random_chain(seed: int) -> str:
    """A chain of data-movement ops over random layouts, with the pairs the substitutions
    remove (copies, transposes, reshapes and reverses that cancel), bitcasts between them;
    sometimes as a fused computation whose caller bitcasts its result."""
    rng = random.Random(seed)
    dims = [rng.randint(1, 3) for _ in range(rng.randint(2, 3))]
    lines: list[str] = []
    counter = iter(range(1000))

    def layout(rank: int) -> str:
        order = list(range(rank))
        rng.shuffle(order)
        return "{" + ",".join(map(str, order)) + "}"

    def emit(shape: list[int], rhs: str) -> str:
        name = f"v{next(counter)}"
        lines.append(f"  {name} = f32[{','.join(map(str, shape))}]{layout(len(shape))} {rhs}")
        return name

    cur = emit(dims, "parameter(0)")
    for _ in range(rng.randint(2, 4)):
        motif = rng.choice(["copy", "transposes", "reshapes", "reverses", "bitcast", "slices"])
        rank = len(dims)
        if motif == "copy":
            cur = emit(dims, f"copy({cur})")
        elif motif == "transposes":
            p = list(range(rank))
            rng.shuffle(p)
            q = list(np.argsort(p)) if rng.random() < 0.5 else rng.sample(range(rank), rank)
            mid = [dims[k] for k in p]
            cur = emit(mid, f"transpose({cur}), dimensions={{{','.join(map(str, p))}}}")
            dims = [mid[k] for k in q]
            cur = emit(dims, f"transpose({cur}), dimensions={{{','.join(map(str, q))}}}")
        elif motif == "reshapes":
            n = int(np.prod(dims))
            cur = emit([n], f"reshape({cur})")
            cur = emit(dims, f"reshape({cur})")
        elif motif == "reverses":
            cur = emit(dims, f"reverse({cur}), dimensions={{0}}")
            cur = emit(dims, f"reverse({cur}), dimensions={{0}}")
        elif motif == "bitcast":
            dims = dims[::-1]
            cur = emit(dims, f"bitcast({cur})")
        else:
            k = rng.randrange(rank)
            if dims[k] > 1:
                sl = ", ".join(f"[{int(j == k)}:{n}]" for j, n in enumerate(dims))
                dims = [n - (j == k) for j, n in enumerate(dims)]
                cur = emit(dims, f"slice({cur}), slice={{{sl}}}")
    if rng.random() < 0.6:
        cur = emit([int(np.prod(dims))], f"bitcast({cur})")
    lines[-1] = "  ROOT " + lines[-1].strip()
    if rng.random() < 0.6:
        return "HloModule m\nENTRY e {\n" + "\n".join(lines) + "\n}\n"
    # the chain as a fused computation whose result the caller bitcasts
    param, root = lines[0].split()[2], lines[-1].split()[3]
    return ("HloModule m\nf {\n" + "\n".join(lines) + "\n}\nENTRY e {\n"
            f"  p = {param} parameter(0)\n  r = {root} fusion(p), kind=kLoop, calls=f\n"
            f"  ROOT b = f32[{int(np.prod(dims))}]{{0}} bitcast(r)\n}}\n")


def test_random_post_layout_chains() -> None:
    applied = rejected = 0
    for seed in range(40):
        text = _random_chain(seed)
        result, compared = _check(text, f"chain{seed}")
        assert set(compared) == set(parse_hlo(text).computations), text
        applied += len(result.applied)
        rejected += result.rejected
    assert applied >= 20 and rejected >= 10  # both sides of the validation are exercised


@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
def test_corpus_modules_compute_the_same_bytes(path: Path) -> None:
    text = path.read_text()
    result, compared = _check(text, str(path))
    touched = {a.computation for a in result.applied} | \
        {r.computation for r in result.rejections}
    assert touched <= set(compared), "the oracle interprets what optimize touched"
    if path.name in ("transpose_reshape.opt.hlo", "resize.opt.hlo"):
        # the fused computations whose layout-changing copies optimize used to remove
        assert all(c.substitution == "copy_noop" for c in result.rejections)
        assert {r.computation for r in result.rejections} <= set(compared)
        assert result.rejected == 3


@pytest.mark.parametrize("tile", [(2, 2), (2, 4), (1, 3), (1, 2)])
def test_tiled_layouts(tile: tuple[int, int]) -> None:
    """A copy out of a tiled layout before a bitcast goes only when the tiling keeps every
    element at its row-major offset (brute force from XLA's tiling rule: tiles in row-major
    order over the tile grid, elements row-major inside a tile)."""
    a, b = tile
    text = HAND_WRITTEN["same_layout_copy"][0].replace(
        "  t = f32[3,2]{1,0} transpose(p), dimensions={1,0}\n",
        f"  t = f32[2,3]{{1,0:T({a},{b})}} negate(p)\n").replace(
        "c = f32[3,2]{1,0} copy(t)", "c = f32[2,3]{1,0} copy(t)")
    grid = -(-3 // b)
    offsets = [((i // a) * grid + j // b) * a * b + (i % a) * b + j % b
               for i in range(2) for j in range(3)]
    row_major = offsets == list(range(6))
    result = optimize(text, "tiled", RULES)
    _counts_agree(result)
    assert dict(result.applications) == ({"copy_noop": 1} if row_major else {})
    assert result.rejected == (0 if row_major else 1)
    assert [a.physical for a in result.applied] == [True] * row_major


def test_cli_says_what_was_validated_and_what_was_rejected(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from verifidx.cli import main

    src = tmp_path / "repro.hlo"
    src.write_text(REPRO)
    assert main(["optimize", str(src)]) == 0
    captured = capsys.readouterr()
    assert captured.out == REPRO
    summary, note = captured.err.splitlines()
    assert "0 substitutions applied" in summary and "1 candidates rejected" in summary
    assert note.startswith("note: rejected copy_noop at c in e: the value's layout {1,0} is "
                           "observed by bitcast b and the replacement's is {0,1}; the physical "
                           "maps (offset to input) to input t differ")
    layer_norm = REPO / "tests" / "data" / "jax" / "layer_norm.raw.hlo"
    assert main(["optimize", str(layer_norm)]) == 0
    err = capsys.readouterr().err
    assert "9 substitutions applied" in err
    assert "each of the 9 applications translation-validated (4 distinct validation queries " \
           "solved; 5 applications asked a query solved before; 0 on physical maps)" in err
