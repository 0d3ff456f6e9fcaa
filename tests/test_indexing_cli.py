"""`verifidx indexing`: readable and JSON output (the DESIGN.md contract), per-instruction maps,
errors on one line, and random mutations of valid HLO that never crash."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from verifidx.analysis.computation_maps import computation_indexing, reported_computations
from verifidx.cli import main
from verifidx.core.errors import ParseError
from verifidx.core.syntax import parse_map
from verifidx.hlo import parse_hlo
from verifidx.hlo.indexing import input_to_output, output_to_input

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((REPO / "examples").glob("*.hlo"))
DATA = sorted((REPO / "tests" / "data" / "hlo").glob("*.hlo"))


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_examples_exist() -> None:
    assert len(EXAMPLES) >= 20


@pytest.mark.parametrize("path", EXAMPLES + DATA, ids=lambda p: p.name)
@pytest.mark.parametrize("direction", ["out2in", "in2out"])
def test_json_follows_the_contract(capsys: pytest.CaptureFixture[str], path: Path,
                                   direction: str) -> None:
    code, out, err = run(capsys, "indexing", str(path), "--json", "--direction", direction)
    assert code == 0, err
    doc = json.loads(out)
    module = parse_hlo(path.read_text())
    assert set(doc) == {"module", "computations"} and doc["module"] == module.name
    names = [c.name for c in reported_computations(module)]
    assert [c["name"] for c in doc["computations"]] == names
    for comp_doc in doc["computations"]:
        comp = module.computation(comp_doc["name"])
        assert set(comp_doc) == {"name", "role", "root", "outputs"}
        assert comp_doc["root"] == comp.root.name
        assert comp_doc["role"] in ROLES or comp_doc["role"] in OPCODES
        leaves = comp.root.shape.leaves()
        assert [o["output_index"] for o in comp_doc["outputs"]] == list(range(len(leaves)))
        for o in comp_doc["outputs"]:
            assert o["shape"] == str(leaves[o["output_index"]])
            assert {p["parameter_number"] for p in o["operands"]} == {
                p.parameter_number for p in comp.parameters}
            for operand in o["operands"]:
                assert {"parameter_number", "parameter_name", "maps"} <= set(operand)
                assert operand["parameter_name"] == \
                    comp.parameters[operand["parameter_number"]].name
                for text in operand["maps"]:
                    assert " / " not in text
                    parse_map(text)
                for key in ("runtime_variables", "replica_ids"):
                    if key in operand:
                        assert len(operand[key]) == len(operand["maps"])


ROLES = {"entry", "fusion", "call", "loop body", "loop condition", "branch"}
OPCODES = {"reduce", "reduce-window", "scatter", "select-and-scatter", "sort", "map",
           "all-reduce", "reduce-scatter", "custom-call", "async-start", "call"}


def test_each_computation_is_named_with_its_role(capsys: pytest.CaptureFixture[str]) -> None:
    path = REPO / "tests" / "data" / "hlo" / "computation_roles.hlo"
    code, out, err = run(capsys, "indexing", str(path), "--json")
    assert code == 0, err
    roles = {c["name"]: c["role"] for c in json.loads(out)["computations"]}
    # read off the file by hand: `add` is a reducer (not reported: no maps of its own)
    assert roles == {"fused": "fusion", "cond": "loop condition", "body": "loop body",
                     "on_true": "branch", "on_false": "branch", "main": "entry"}
    code, out, _ = run(capsys, "indexing", str(path))
    assert "computation body (loop body), root r" in out
    assert "note: body of w: 3 iterations" in out  # the loop analysis still runs on the body


def test_json_content(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "indexing", str(REPO / "examples" / "seed_slice.hlo"), "--json")
    (comp,) = json.loads(out)["computations"]
    assert comp["outputs"][0]["operands"] == [{
        "parameter_number": 0, "parameter_name": "p0",
        "maps": ["(d0, d1, d2) -> (d0 + 5, d1 * 7 + 3, d2 * 2), domain: d0 in [0, 4], "
                 "d1 in [0, 2], d2 in [0, 24]"]}]
    code, out, _ = run(capsys, "indexing", str(REPO / "examples" / "seed_slice.hlo"), "--json",
                       "--direction", "in2out")
    (comp,) = json.loads(out)["computations"]
    assert comp["outputs"][0]["operands"][0]["maps"] == [
        "(d0, d1, d2) -> (d0 - 5, (d1 - 3) floordiv 7, d2 floordiv 2), domain: d0 in [5, 9], "
        "d1 in [3, 17], d2 in [0, 48], (d1 - 3) mod 7 in [0, 0], d2 mod 2 in [0, 0]"]
    code, out, _ = run(capsys, "indexing", str(REPO / "examples" / "seed_gather.hlo"), "--json")
    operand = json.loads(out)["computations"][0]["outputs"][0]["operands"][0]
    assert [rv["source"] for rv in operand["runtime_variables"][0]] == ["parameter(1)"] * 2
    code, out, _ = run(capsys, "indexing", str(REPO / "examples" / "seed_variadic_reduce.hlo"),
                       "--json")
    outputs = json.loads(out)["computations"][0]["outputs"]
    assert [o["output_index"] for o in outputs] == [0, 1]
    unread = json.loads(run(capsys, "indexing", str(REPO / "tests/data/hlo/collectives.hlo"),
                            "--json")[1])
    assert unread["computations"]


def test_readable_output(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "indexing", str(REPO / "examples" / "seed_fusion_softmax.hlo"))
    assert code == 0
    assert "computation softmax (fusion), root out" in out
    assert "computation e (entry), root fusion" in out
    assert "(d0, d1, d2)[s0] -> (d0, d1, s0)" in out
    code, out, _ = run(capsys, "indexing", str(REPO / "examples" / "seed_dynamic_slice.hlo"))
    assert "runtime variables:" in out and "rt1: parameter(3);" in out  # rt in [0, 0] folded
    code, out, _ = run(capsys, "indexing", str(REPO / "tests/data/hlo/collectives.hlo"))
    assert code == 0 and "unknown indexing" in out


def test_instruction_option(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(REPO / "examples" / "seed_dynamic_update_slice.hlo")
    code, out, _ = run(capsys, "indexing", path, "--instruction", "dus")
    assert code == 0
    assert "operand id = 1 (d0, d1){rt0, rt1} -> (d0 - rt0, d1 - rt1)" in out
    assert "operand 1: upd" in out
    code, out, _ = run(capsys, "indexing", path, "--instruction", "dus", "--direction", "in2out")
    assert code == 0 and out.count("operand ") >= 4
    code, out, _ = run(capsys, "indexing", path, "--instruction", "dus", "--json")
    doc = json.loads(out)
    assert doc["instruction"] == "dus" and doc["direction"] == "out2in"
    (entry,) = doc["outputs"]
    assert [g["operand_name"] for g in entry["operands"]] == ["src", "upd", "of1", "of2"]
    code, out, _ = run(capsys, "indexing", path, "--instruction", "upd")
    assert code == 0 and "(no operands)" in out
    code, out, _ = run(capsys, "indexing", str(REPO / "tests/data/hlo/collectives.hlo"),
                       "--instruction", "custom-call")
    assert code == 0 and "unknown indexing" in out and "note:" in out


def test_computation_option(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(REPO / "examples" / "seed_fusion_softmax.hlo")
    code, out, _ = run(capsys, "indexing", path, "--computation", "softmax", "--json")
    assert [c["name"] for c in json.loads(out)["computations"]] == ["softmax"]
    code, _out, err = run(capsys, "indexing", path, "--computation", "nope")
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1


def test_errors_are_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = run(capsys, "indexing", str(tmp_path / "missing.hlo"))
    assert code == 2 and not out and re.fullmatch(r"error: cannot read .*\n", err)
    bad = tmp_path / "bad.hlo"
    bad.write_text("HloModule m\nENTRY e {\n  p0 = f32[4 parameter(0)\n}\n")
    code, out, err = run(capsys, "indexing", str(bad))
    assert code == 2 and re.fullmatch(rf"error: {re.escape(str(bad))}:3:\d+: .+\n", err)
    code, _out, err = run(capsys, "indexing", str(REPO / "examples" / "seed_pad.hlo"),
                          "--instruction", "nope")
    assert code == 2 and err.count("\n") == 1 and "nope" in err


# -- mutations -----------------------------------------------------------------------------------

SOURCES = [p.read_text() for p in EXAMPLES + DATA]
JUNK = list("(){}[],=%:;._-0123456789 \n\"xyzfs") + ["f32", "s32[]", "ROOT", "parameter",
                                                     "HloModule", "ENTRY", "->", "{1,0}", "-1"]


@st.composite
def mutants(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(SOURCES))
    for _ in range(draw(st.integers(1, 3))):
        if not text:
            break
        i = draw(st.integers(0, len(text) - 1))
        j = min(len(text), i + draw(st.integers(0, 12)))
        kind = draw(st.sampled_from(["delete", "insert", "replace", "duplicate", "digits"]))
        if kind == "delete":
            text = text[:i] + text[j:]
        elif kind == "insert":
            text = text[:i] + draw(st.sampled_from(JUNK)) + text[i:]
        elif kind == "replace":
            text = text[:i] + draw(st.sampled_from(JUNK)) + text[j:]
        elif kind == "duplicate":
            text = text[:j] + text[i:j] + text[j:]
        else:  # a random number: a dimension, an attribute value, a parameter number, ...
            numbers = list(re.finditer(r"\d+", text))
            if numbers:
                hit = numbers[draw(st.integers(0, len(numbers) - 1))]
                text = text[: hit.start()] + str(draw(st.integers(0, 70))) + text[hit.end():]
    return text


def _all_maps(text: str) -> None:
    module = parse_hlo(text)
    for comp in reported_computations(module):
        computation_indexing(module, comp, "out2in")
        computation_indexing(module, comp, "in2out")
    for comp in module.computations.values():
        for inst in comp.instructions:
            for k in range(len(inst.shape.leaves())):
                output_to_input(inst, comp, k, module=module)
            for j in range(len(inst.operands)):
                input_to_output(inst, comp, j, module=module)


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(mutants())
def test_mutated_hlo_parses_or_fails_with_a_location(text: str) -> None:
    try:
        _all_maps(text)
    except ParseError as err:
        assert err.line >= 1 and err.column >= 1 and err.message


@settings(max_examples=25, suppress_health_check=[HealthCheck.too_slow,
                                                  HealthCheck.function_scoped_fixture])
@given(mutants())
def test_mutated_hlo_through_the_cli(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                     text: str) -> None:
    path = tmp_path / "m.hlo"
    path.write_text(text)
    for extra in ([], ["--direction", "in2out", "--json"]):
        code, _out, err = run(capsys, "indexing", str(path), *extra)
        assert code in (0, 2), err
        if code == 2:
            assert re.fullmatch(rf"error: {re.escape(str(path))}:\d+:\d+: .+\n", err), err


def test_json_and_api_agree(capsys: pytest.CaptureFixture[str]) -> None:
    from verifidx.analysis.computation_maps import output_to_input as module_o2i

    path = REPO / "examples" / "seed_fusion_tensor_plus_transpose.hlo"
    doc: dict[str, Any] = json.loads(run(capsys, "indexing", str(path), "--json")[1])
    api = module_o2i(parse_hlo(path.read_text()))
    assert isinstance(api, dict)
    for comp in doc["computations"]:
        for o in comp["outputs"]:
            for p in o["operands"]:
                assert p["maps"] == [str(m) for m in api[comp["name"]][o["output_index"]]
                                     [p["parameter_name"]]]


def test_a_typo_in_an_opcode_is_an_error_a_real_unmodelled_op_is_not(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    hlo = tmp_path / "t.hlo"
    body = "HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT x = f32[4] {op}(p)\n}\n"
    hlo.write_text(body.replace("{op}", "exponentialx"))
    assert main(["indexing", str(hlo)]) == 2
    _, err = capsys.readouterr()
    assert err.strip() == (f"error: {hlo}:4:19: 'exponentialx' is not an HLO opcode "
                           "(did you mean 'exponential'?)")
    # for text from a newer XLA: the word is kept as an unmodelled op
    assert main(["indexing", str(hlo), "--allow-unknown-opcodes"]) == 0
    assert "unknown indexing" in capsys.readouterr().out
    hlo.write_text(body.replace("{op}", "cholesky"))  # real, not modelled
    assert main(["indexing", str(hlo)]) == 0
    assert "unknown indexing" in capsys.readouterr().out


TYPO = "HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT x = f32[4] exponentialx(p)\n}\n"


@pytest.mark.parametrize("command", [["graph"], ["optimize"], ["coalescing"],
                                     ["tile", "--computation", "e", "--tile-sizes", "4"]])
def test_every_hlo_command_checks_opcodes_as_indexing_does(
        command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 38 (7): `graph` and `optimize` took `exponentialx` silently and refused
    `--allow-unknown-opcodes` as a usage error."""
    hlo = tmp_path / "t.hlo"
    hlo.write_text(TYPO)
    argv = [command[0], str(hlo), *command[1:]]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (f"error: {hlo}:4:19: 'exponentialx' is not an HLO opcode (did you mean "
                   "'exponential'?)\n")
    code = main([*argv, "--allow-unknown-opcodes"])
    out, err = capsys.readouterr()
    assert "not an HLO opcode" not in err and "unrecognized arguments" not in err
    assert code == (1 if command[0] == "tile" else 0), err  # tile: exponentialx has no tile
    if command[0] == "graph":
        assert "exponentialx f32[4]" in out and "unknown indexing" in out


def test_the_api_checks_opcodes_unless_told_not_to() -> None:
    """Issue 38 (7): `vx.parse_hlo` took `exponentialx` (only the command line checked)."""
    import verifidx as vx

    for parse in (vx.parse_hlo, vx.parse_module):
        with pytest.raises(ParseError) as info:
            parse(TYPO, "t.hlo")
        assert (info.value.line, info.value.column) == (4, 19)
        assert str(info.value) == ("t.hlo:4:19: 'exponentialx' is not an HLO opcode (did you "
                                   "mean 'exponential'?)")
        assert parse(TYPO, allow_unknown_opcodes=True).entry.root.opcode == "exponentialx"


def test_hlo_that_is_not_utf8_names_the_position(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    hlo = tmp_path / "t.hlo"
    hlo.write_bytes(b"HloModule m\nENTRY e {\n  p = f32[4] par\xe9meter(0)\n}\n")
    assert main(["indexing", str(hlo)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"error: {hlo}:3:17: expected UTF-8 text, found byte 0xe9 (byte offset 38)")


def test_every_opcode_of_the_conformance_corpus_is_known() -> None:
    from conftest import shared_dir

    from verifidx.hlo import parse_hlo
    from verifidx.hlo.opcodes import HLO_OPCODES

    cases = json.loads((shared_dir() / "conformance" / "xla" / "cases.json").read_text())  # type: ignore[operator]
    seen = {i.opcode for c in cases if c.get("hlo")
            for comp in parse_hlo(c["hlo"]).computations.values() for i in comp.instructions}
    assert seen and seen <= HLO_OPCODES, seen - HLO_OPCODES
