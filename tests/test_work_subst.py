"""Substitution generation, substitution re-checks and `tile --batch` as work items
(`verifidx.core.work`): the same kept substitutions, check verdicts and records, byte for byte, in
this process and on a two-worker Dask cluster (processes); a group or re-check that fails on
every try is unknown, never proven; progress on a terminal only, per-item lines as they
complete."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_subst_gate import SMALL, WRONG_ENUM, WRONG_Z3, _forge, _setup
from test_work import _batch_stderr

from verifidx.analysis.subst.generate import Generated, generate
from verifidx.analysis.subst.parser import parse_substitutions
from verifidx.analysis.subst.prove import PROVED, prove
from verifidx.cli import main
from verifidx.core.work import Engine

distributed = pytest.importorskip("distributed")

REPO = Path(__file__).resolve().parents[1]
JAX = REPO / "tests" / "data" / "jax"
OPS = ["transpose", "reverse"]
TIMES = {"seconds", "cpu_seconds", "slowest", "engine"}  # all that may differ between runs


@pytest.fixture(scope="module")
def scheduler() -> Iterator[str]:
    """One local cluster of two worker processes for the module, reached by its address."""
    import logging

    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=":0", silence_logs=logging.CRITICAL) as cluster:
        yield cluster.scheduler_address


def _generated(engine: Engine, log: io.StringIO | None = None) -> Generated:
    return generate(OPS, 2, compare=[REPO / "rules"], ranks=[2], engine=engine, log=log,
                    per_group=log is not None)


def _comparable(g: Generated) -> dict[str, object]:
    return {k: v for k, v in g.to_json().items() if k not in TIMES}


# -- subst generate ------------------------------------------------------------------------------


def test_every_enumerated_graph_travels_as_its_text() -> None:
    from verifidx.analysis.subst.enumeration import enumerate_graphs
    from verifidx.analysis.subst.generate import SUPPORTED
    from verifidx.analysis.subst.parser import parse_graph
    from verifidx.core.errors import ParseError

    graphs = enumerate_graphs(SUPPORTED, 2, 2)
    assert len(graphs) > 100
    for g in graphs:
        assert parse_graph(str(g)) == g, str(g)
    with pytest.raises(ParseError, match="after the graph"):
        parse_graph("copy(x) y")


def test_generation_keeps_the_same_substitutions_on_the_cluster(scheduler: str) -> None:
    log_here, log_there = io.StringIO(), io.StringIO()
    here = _generated(Engine(), log_here)
    there = _generated(Engine(scheduler=scheduler), log_there)
    assert here.kept and here.unknown == 0
    assert here.text() == there.text()
    assert _comparable(here) == _comparable(there)
    for sub in parse_substitutions(there.text(), "<kept>"):  # what came back is proven
        assert prove(sub).verdict == PROVED, sub.name
    # one line per group, in group order, in either run (the times in them differ)
    lines = [ln.split(";")[0] for ln in log_there.getvalue().splitlines()[1:]]
    assert lines == [ln.split(";")[0] for ln in log_here.getvalue().splitlines()[1:]]
    assert [ln.split(":")[0] for ln in lines] == [f"r2g{k}" for k in range(here.groups)]


def test_a_group_that_fails_every_try_is_unknown_and_keeps_nothing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import verifidx.analysis.subst.generalize as generalize

    def broken(*args: object, **kw: object) -> object:
        raise MemoryError("the worker ran out of memory")

    monkeypatch.setattr(generalize, "generalize", broken)
    g = generate(OPS, 2, ranks=[2])
    assert g.kept == [] and g.proven_general == g.proven_concrete == 0
    assert g.unknown == g.instances_generalized > 0
    assert len(g.failures) == g.groups
    assert all("every try failed (MemoryError: the worker ran out of memory)" in f
               for f in g.failures)


def test_generate_cli_on_the_cluster_writes_the_same_file(
        scheduler: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["subst", "generate", "--ops", ",".join(OPS), "--ranks", "2", "--depth", "1",
            "--format", "json"]
    assert main([*argv, "-o", str(tmp_path / "one.subst")]) == 0
    one = json.loads(capsys.readouterr().out)
    assert main([*argv, "-o", str(tmp_path / "two.subst"), "--scheduler", scheduler]) == 0
    two = json.loads(capsys.readouterr().out)
    assert (tmp_path / "one.subst").read_bytes() == (tmp_path / "two.subst").read_bytes()
    assert two["engine"] == f"Dask scheduler {scheduler}" and one["engine"] == "this process"
    assert {k: v for k, v in one.items() if k not in TIMES} == \
        {k: v for k, v in two.items() if k not in TIMES}
    assert main([*argv, "--group-proofs", "0"]) == 2


def test_generate_shows_progress_on_a_terminal_only(tmp_path: Path) -> None:
    argv = ["subst", "generate", "--ops", ",".join(OPS), "--depth", "1", "--ranks", "2"]
    _out, tty = _batch_stderr(tmp_path, True, argv)
    _out, pipe = _batch_stderr(tmp_path, False, argv)
    assert "generate:" in tty and "item/s" in tty
    assert "item/s" not in pipe and "r2g0: " in pipe  # the group lines, no bar
    _out, machine = _batch_stderr(tmp_path, True, [*argv, "--format", "json"])
    assert "item/s" not in machine and "r2g0: " not in machine


# -- check: substitution certificates re-checked on the cluster ------------------------------


def _check_json(path: Path, capsys: pytest.CaptureFixture[str], *extra: str
                ) -> tuple[int, list[dict[str, object]]]:
    capsys.readouterr()
    code = main(["check", "--no-cache", "--format", "json", *extra, str(path)])
    subs = json.loads(capsys.readouterr().out)["substitutions"]
    for r in subs:
        r.pop("seconds")
    return code, subs


def test_substitution_rechecks_answer_the_same_on_the_cluster(
        scheduler: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, _cert = _setup(tmp_path, SMALL)
    here = _check_json(path, capsys)
    there = _check_json(path, capsys, "--scheduler", scheduler)
    assert here == there
    assert here[0] == 0 and [r["verdict"] for r in here[1]] == ["proved", "proved"]


def test_check_with_workers_starts_one_cluster_for_rules_and_substitutions(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    import verifidx.core.work as work

    path, _cert = _setup(tmp_path, SMALL)
    (path.parent / "m.rules").write_text("rule add_zero: x + 0 => x\n")
    assert main(["prove", str(path.parent / "m.rules")]) == 0
    started = []
    real = work._local_cluster

    def counted(engine: Engine) -> object:
        started.append(engine.workers)
        return real(engine)

    monkeypatch.setattr(work, "_local_cluster", counted)
    capsys.readouterr()
    assert main(["check", "--no-cache", "--format", "json", "--workers", "2",
                 str(path.parent)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert started == [2]  # rules and substitutions re-checked on the same two workers
    assert [r["verdict"] for r in doc["rules"] + doc["substitutions"]] == ["proved"] * 3


@pytest.mark.parametrize("text, method, strength, why", [
    (WRONG_Z3, "z3", "all sizes", "Z3 finds one of its queries satisfiable"),
    (WRONG_ENUM, "enumeration", "sizes <= 4", "the enumeration of sizes <= 4 finds at shapes"),
], ids=["query", "enumeration"])
def test_a_forged_certificate_is_refuted_on_the_cluster(
        scheduler: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str,
        method: str, strength: str, why: str) -> None:
    path, cert = _setup(tmp_path, text)
    _forge(cert, text, method, strength)
    code, subs = _check_json(path, capsys, "--scheduler", scheduler)
    assert code == 1 and subs[0]["verdict"] == "refuted" and why in str(subs[0]["message"])
    assert (code, subs) == _check_json(path, capsys)


def test_a_recheck_that_fails_every_try_is_unknown(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import verifidx.analysis.subst.certificates as certificates
    from verifidx.core.work import Progress

    path, cert = _setup(tmp_path, SMALL)
    subs = parse_substitutions(path.read_text(), str(path))
    entries = json.loads(cert.read_text())["substitutions"]
    jobs = []
    for s in subs:
        res = certificates._from_entry(s, entries[s.name])
        job = certificates._recheck_job(res, s, entries[s.name])
        assert job is not None and res.verdict == PROVED
        jobs.append(job)

    def broken(*args: object) -> object:
        raise OSError("the z3 process was killed")

    monkeypatch.setattr(certificates, "recheck_in_process", broken)
    certificates._on_engine(jobs, None, Engine(), Progress(len(jobs), "check", False))
    for job in jobs:
        assert job.result.verdict == "unknown" and job.result.strength is None
        assert "every try failed" in job.result.message and "killed" in job.result.message


# -- tile --batch --------------------------------------------------------------------------------


def test_tile_batch_is_the_same_on_the_cluster_records_errors_and_resumes(
        scheduler: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = [str(JAX / n) for n in ("center.opt.hlo", "center.raw.hlo", "softmax.opt.hlo",
                                    "attention.opt.hlo")]
    argv = ["tile", "--batch", *files, "--tile-sizes", "1,8", "--no-prove"]
    assert main([*argv, "-o", str(tmp_path / "here.jsonl")]) == 1  # an error: exit 1
    here_out = capsys.readouterr().out.splitlines()
    assert main([*argv, "-o", str(tmp_path / "there.jsonl"), "--scheduler", scheduler]) == 1
    there_out = capsys.readouterr().out.splitlines()
    data = (tmp_path / "here.jsonl").read_bytes()
    assert data == (tmp_path / "there.jsonl").read_bytes()
    assert here_out[:-1] == there_out[:-1]  # one line per file, in order; then the summary
    records = [json.loads(ln) for ln in data.decode().splitlines()]
    assert [r["file"] for r in records] == files
    ok, raw, soft, attention = records
    assert raw["status"] == "error" and (raw["error"]["line"], raw["error"]["column"]) == \
        (20, 3) and "is not a fusion" in raw["error"]["message"]
    assert here_out[1].startswith(f"{files[1]}:20:3: error: ")
    assert attention["status"] == "error" and "needs 3 tile sizes" in \
        attention["error"]["message"]
    # the records are those of `tile FILE --json`
    for rec in (ok, soft):
        assert main(["tile", rec["file"], "--tile-sizes", "1,8", "--no-prove", "--json"]) == 0
        assert json.loads(capsys.readouterr().out) == rec["tiles"]
    # a rerun reuses every record; changed options recompute them
    assert main([*argv, "-o", str(tmp_path / "here.jsonl"), "--json"]) == 1
    summary = json.loads(capsys.readouterr().out)
    assert summary["reused"] == 4 and (summary["ok"], summary["error"]) == (2, 2)
    assert main(["tile", "--batch", *files, "--tile-sizes", "1,4", "--no-prove",
                 "-o", str(tmp_path / "here.jsonl"), "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["reused"] == 0


def test_tile_batch_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    one = str(JAX / "center.opt.hlo")
    for argv in (["tile", one, one], ["tile", "--batch", one],
                 ["tile", "--batch", one, "-o", str(tmp_path / "o.jsonl"),
                  "--tile-sizes", "1,x"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and err.count("\n") == 1, argv


def test_tile_batch_shows_progress_on_a_terminal_only(tmp_path: Path) -> None:
    argv = ["tile", "--batch", str(JAX / "center.opt.hlo"), str(JAX / "softmax.opt.hlo"),
            "--tile-sizes", "1,8", "--no-prove"]
    out, tty = _batch_stderr(tmp_path, True, [*argv, "-o", str(tmp_path / "a.jsonl")])
    out_pipe, pipe = _batch_stderr(tmp_path, False, [*argv, "-o", str(tmp_path / "b.jsonl")])
    assert "tile:" in tty and "0/2" in tty
    assert pipe == ""
    assert out.splitlines()[:-1] == out_pipe.splitlines()[:-1]
    assert len(out_pipe.splitlines()) == 3

