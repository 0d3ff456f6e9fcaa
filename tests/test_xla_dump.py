"""Reading XLA's per-pass dumps: file names, pass order, identical snapshots skipped. The dump in
tests/data/xla_dump is a real one (jax 0.10.2, XLA_FLAGS=--xla_dump_to=DIR
--xla_dump_hlo_pass_re=.*) of `dynamic_slice(jnp.roll(x, 2), (i, 0), (3, 4)).T` and of a
convert jax compiled beside it."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from verifidx.cli import main
from verifidx.clients.xla_dump import parse_snapshot_name, pass_pairs, read_dump

DUMP = Path(__file__).parent / "data" / "xla_dump"


def test_snapshot_names_parse_into_module_sequence_pipeline_and_pass() -> None:
    s = parse_snapshot_name("module_0001.jit_f.0003.cpu-pipeline.after_algsimp.before_dce.txt")
    assert s is not None
    assert (s.module_id, s.module_name, s.sequence, s.pipeline, s.after_pass) == (
        1, "jit_f", 3, "cpu-pipeline", "algsimp")
    s = parse_snapshot_name("module_0004.jit_f.0017.copy-insertion."
                            "after_adding_copies_to_resolve_interference.txt")
    assert s is not None and s.after_pass == "adding_copies_to_resolve_interference"
    start = parse_snapshot_name("module_0004.jit_f.before_optimizations.txt")
    assert start is not None and start.sequence == -1
    for other in ("module_0004.jit_f.cpu_after_optimizations-buffer-assignment.txt",
                  "module_0004.jit_f.debug_options", "module_0004.jit_f.ir-no-opt.ll"):
        assert parse_snapshot_name(other) is None


def test_a_real_dump_is_read_in_pass_order_and_unchanged_snapshots_are_skipped() -> None:
    modules = read_dump(str(DUMP))
    files = sorted(os.listdir(DUMP))
    assert {name for _, name in modules} == {"jit_f", "jit_convert_element_type"}
    for (module_id, name), snaps in modules.items():
        # the oracle: the sequence numbers written in the file names, and the files' texts
        mine = [f for f in files if f.startswith(f"module_{module_id:04d}.{name}.")]
        numbers = sorted(int(m.group(1)) for f in mine
                         if (m := re.match(rf"module_\d+\.{re.escape(name)}\.(\d{{4}})\.", f)))
        assert [s.sequence for s in snaps] == [-1, *numbers]
        texts = [(DUMP / os.path.basename(s.path)).read_text().strip() for s in snaps]
        pairs = pass_pairs(snaps)
        changed = sum(1 for a, b in zip(texts, texts[1:]) if a != b)
        assert len(pairs) == changed
        for p in pairs:
            assert p.before_text.strip() != p.after_text.strip()
            assert p.before.sequence < p.after.sequence


def test_a_snapshot_that_changes_only_blanks_at_line_ends_is_skipped(tmp_path: Path) -> None:
    text = "HloModule m\n\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT n = f32[2] negate(p)\n}\n"
    versions = [text, text.replace("parameter(0)\n", "parameter(0)  \t\n") + "\n\n",
                text.replace("negate(p)", "negate(p) ")[:-1], text.replace("negate", "abs")]
    names = ["module_0000.m.before_optimizations.txt"] + [
        f"module_0000.m.{k:04d}.p.after_pass{k}.before_next.txt" for k in range(3)]
    for name, version in zip(names, versions):
        (tmp_path / name).write_text(version)
    pairs = pass_pairs(read_dump(str(tmp_path))[(0, "m")])
    assert [p.after.after_pass for p in pairs] == ["pass2"]  # abs for negate, nothing else


def test_a_directory_without_snapshots_is_one_error_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "notes.txt").write_text("not a dump\n")
    with pytest.raises(ValueError, match="no XLA pass snapshots"):
        read_dump(str(tmp_path))
    for arg in (str(tmp_path), str(tmp_path / "missing")):
        assert main(["validate", "--xla-dump", arg]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and err.count("\n") == 1, err
        assert arg in err


# -- validate --xla-dump on a real miscompile ----------------------------------------------------

NESTED = Path(__file__).parent / "data" / "xla_dump_nested"  # program.py made it (jax 0.10.2)


def test_the_pass_that_folds_nested_dynamic_slices_is_named_and_confirmed(
        capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("jax")
    assert main(["validate", "--xla-dump", str(NESTED)]) == 1
    out = capsys.readouterr().out
    assert "jit_f: first pass that reads differently: simplification.algsimp" in out
    # the oracle: XLA's CPU backend running the snapshots before and after the pass
    assert "  confirmed: output 0 element (0) is " in out


def test_the_dump_formats(monkeypatch: pytest.MonkeyPatch,
                          capsys: pytest.CaptureFixture[str]) -> None:
    import xml.etree.ElementTree as ET

    from verifidx.clients import xla_runtime

    monkeypatch.setattr(xla_runtime, "confirm", lambda b, a, cx: "not confirmed (no runtime)")
    assert main(["validate", "--xla-dump", str(NESTED), "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    (module,) = doc["modules"]
    assert module["first_difference"] == "simplification.algsimp"
    assert doc["summary"]["passes"] == len(module["passes"])
    assert doc["summary"]["differ"] == sum(p["verdict"] == "differ" for p in module["passes"])
    differ = next(p for p in module["passes"] if p["verdict"] == "differ")
    assert differ["confirmation"] == "not confirmed (no runtime)"
    assert differ["after"].endswith("after_algsimp.before_simplify-sorts.txt")
    assert main(["validate", "--xla-dump", str(NESTED), "--format", "junit"]) == 1
    root = ET.fromstring(capsys.readouterr().out)
    assert int(root.get("failures") or 0) == doc["summary"]["differ"]
    assert len(root.findall(".//testcase")) == doc["summary"]["passes"]
    assert main(["validate", "--xla-dump", str(NESTED), "--format", "github"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert sum(ln.startswith("::error ") for ln in lines) == doc["summary"]["differ"]
    assert lines[-1].startswith("1 modules, ")
