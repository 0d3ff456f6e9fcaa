"""`verifidx.core.work` and `verifidx indexing --batch`: the same answers, byte for byte, in this
process and on a two-worker Dask cluster (processes), whatever order the items finish in; a
worker that dies mid-item costs a retry, not a result; an item that fails on every try comes
back as unknown; resumption; progress on a terminal only."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from verifidx.cli import main
from verifidx.cli.batch import index_item
from verifidx.core.work import INSTALL_HINT, Engine, Progress, engine_for, run, show_progress

distributed = pytest.importorskip("distributed")

REPO = Path(__file__).resolve().parents[1]
JAX = sorted((REPO / "tests" / "data" / "jax").glob("*.hlo"))


@pytest.fixture(scope="module")
def scheduler() -> Iterator[str]:
    """One local cluster of two worker processes for the module (starting one is seconds);
    the tests reach it through its address, as `--scheduler` does. The test functions below
    travel to the workers by value (the workers cannot import this test file)."""
    import logging

    import cloudpickle
    from distributed import LocalCluster

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=":0", silence_logs=logging.CRITICAL) as cluster:
        yield cluster.scheduler_address
    cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


# -- items for the tests: text in, text out ----------------------------------------------------


def late_first(item: str) -> str:
    """Item k of n sleeps (n - k) ticks: the later items finish first."""
    k, n = map(int, item.split("/"))
    time.sleep(0.05 * (n - k))
    return f"{k * k}"


def die_once(item: str) -> str:
    """The first run of `die:PATH` takes its worker process down; the rerun answers."""
    kind, path = item.split(":", 1)
    if kind == "die" and not os.path.exists(path):
        Path(path).write_text("died")
        os._exit(1)
    return f"{kind} done"


def hog(item: str) -> str:
    """`hog` holds 800 MiB (written, so resident) for a while; the rest answer at once."""
    if item == "hog":
        block = b"x" * (800 * 2**20)
        time.sleep(20)
        return str(len(block))
    return item


def always_fails(item: str) -> str:
    if item == "bad":
        raise ValueError("this item never works")
    return item.upper()


# -- the engine --------------------------------------------------------------------------------


def test_answers_come_in_input_order_whatever_finishes_first(scheduler: str) -> None:
    items = [f"{k}/8" for k in range(8)]
    expected = [str(k * k) for k in range(8)]
    for engine in (Engine(), Engine(scheduler=scheduler)):
        outcomes = list(run(late_first, items, engine))
        assert [o.index for o in outcomes] == list(range(8))
        assert [o.text for o in outcomes] == expected
        assert all(o.error is None for o in outcomes)


def test_a_worker_killed_mid_item_leaves_the_run_complete(scheduler: str,
                                                          tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    items = ["a:x", f"die:{marker}", "b:y", "c:z"]
    outcomes = list(run(die_once, items, Engine(scheduler=scheduler)))
    assert marker.read_text() == "died"  # a worker did exit
    assert [o.text for o in outcomes] == ["a done", "die done", "b done", "c done"]
    assert all(o.error is None for o in outcomes)


def test_a_worker_over_its_memory_limit_is_restarted_and_its_item_unknown(scheduler: str
                                                                           ) -> None:
    """Dask's nanny restarts the worker past its limit; the item that took it there runs on
    every try until it is given up (unknown, with the reason), and the items queued behind it
    still answer."""
    # its own cluster, the limit is small (`scheduler` only sends this file by value)
    engine = Engine(workers=1, memory_limit="400MiB")
    outcomes = list(run(hog, ["a", "hog", "b"], engine))
    assert [o.text for o in outcomes] == ["a", None, "b"]
    assert outcomes[1].error is not None and outcomes[1].error.startswith("KilledWorker")


@pytest.mark.parametrize("where", ["in process", "cluster"])
def test_an_item_that_fails_every_try_is_unknown_with_the_reason(scheduler: str,
                                                                 where: str) -> None:
    engine = Engine() if where == "in process" else Engine(scheduler=scheduler)
    outcomes = list(run(always_fails, ["ok", "bad", "fine"], engine))
    assert [o.text for o in outcomes] == ["OK", None, "FINE"]
    assert outcomes[1].error == "ValueError: this item never works"


def test_batch_records_are_the_same_on_the_cluster(scheduler: str) -> None:
    from verifidx.cli.batch import file_key, options_of

    options = options_of(merges=True)
    items = [json.dumps({"file": p.name, "key": file_key(p.read_bytes(), options),
                         "text": p.read_text(), "options": options}) for p in JAX[:8]]
    here = [o.text for o in run(index_item, items, Engine())]
    there = [o.text for o in run(index_item, items, Engine(scheduler=scheduler))]
    assert all(isinstance(t, str) for t in here)
    assert here == there


def test_without_dask_the_flags_say_how_to_install_it(monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)  # import fails as if not installed
    assert engine_for() == Engine()  # the default needs no Dask
    code = main(["indexing", "--batch", str(JAX[0]), "-o", "x.jsonl", "--workers", "2"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and INSTALL_HINT in err


# -- indexing --batch --------------------------------------------------------------------------


def batch(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["indexing", "--batch", *argv])
    return code, capsys.readouterr().out


def test_batch_on_two_local_workers_writes_the_same_bytes(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]
                                                          ) -> None:
    """`--workers 2` starts its own local cluster: the records, byte for byte, and the
    per-file lines are those of the in-process run."""
    files = [str(p) for p in JAX[:4]]
    code1, out1 = batch(capsys, *files, "-o", str(tmp_path / "one.jsonl"))
    code2, out2 = batch(capsys, *files, "-o", str(tmp_path / "two.jsonl"), "--workers", "2")
    assert code1 == code2 == 0
    assert (tmp_path / "one.jsonl").read_bytes() == (tmp_path / "two.jsonl").read_bytes()
    assert out1.splitlines()[:-1] == out2.splitlines()[:-1]  # the summary's time differs


def test_batch_records_errors_with_place_and_resumes(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]
                                                     ) -> None:
    bad = tmp_path / "bad.hlo"
    bad.write_text("HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n"
                   "  ROOT r = f32[4] bogus-op(p)\n}\n")
    good = tmp_path / "good.hlo"
    good.write_text(JAX[0].read_text())
    out = tmp_path / "out.jsonl"
    code, text = batch(capsys, str(tmp_path), "-o", str(out), "--json")
    assert code == 1  # a file could not be indexed: its record says why
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["file"] for r in records] == [str(bad), str(good)]
    assert records[0]["status"] == "error"
    assert (records[0]["error"]["line"], records[0]["error"]["column"]) == (4, 19)
    assert records[1]["status"] == "ok" and records[1]["ops"] == 45
    summary = json.loads(text)
    assert (summary["files"], summary["ok"], summary["error"], summary["reused"]) == (2, 1, 1, 0)
    # a rerun reuses both; a changed file is indexed again, the other kept
    before = out.read_bytes()
    code, text = batch(capsys, str(tmp_path), "-o", str(out), "--json")
    assert json.loads(text)["reused"] == 2 and out.read_bytes() == before
    bad.write_text(JAX[1].read_text())
    code, text = batch(capsys, str(tmp_path), "-o", str(out), "--json")
    assert code == 0 and json.loads(text)["reused"] == 1
    assert [json.loads(x)["status"] for x in out.read_text().splitlines()] == ["ok", "ok"]
    # other options are other results
    code, text = batch(capsys, str(tmp_path), "-o", str(out), "--json", "--direction",
                       "in2out")
    assert json.loads(text)["reused"] == 0


def test_batch_never_overwrites_a_file_it_did_not_write(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    mine = tmp_path / "notes.txt"
    mine.write_text("my notes\n")
    code = main(["indexing", "--batch", str(JAX[0]), "-o", str(mine)])
    err = capsys.readouterr().err
    assert code == 2 and "is not verifidx --batch output" in err
    assert mine.read_text() == "my notes\n"


# -- progress ----------------------------------------------------------------------------------


def _batch_stderr(tmp_path: Path, terminal: bool, argv: list[str] | None = None
                  ) -> tuple[str, str]:
    """Run the command with stderr on a pseudo-terminal or a pipe; (stdout, stderr)."""
    import fcntl
    import pty
    import struct
    import termios

    argv = [sys.executable, "-m", "verifidx.cli", *(argv or [
        "indexing", "--batch", *map(str, JAX[:2]), "-o", str(tmp_path / f"{terminal}.jsonl")])]
    if not terminal:
        p = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=120)
        return p.stdout, p.stderr
    leader, follower = pty.openpty()
    # a terminal of 24 lines of 100 columns (a fresh pseudo-terminal has 0 of each)
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    proc = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=follower,
                            stdin=subprocess.DEVNULL)
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 4096)
        except OSError:  # the other end closed (Linux raises EIO)
            break
        if not data:
            break
        chunks.append(data)
    out = proc.communicate(timeout=120)[0].decode()
    os.close(leader)
    return out, b"".join(chunks).decode(errors="replace")


def test_progress_is_a_bar_on_a_terminal_and_lines_in_a_log(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    monkeypatch.setenv("VERIFIDX_PROGRESS_SECONDS", "0")  # a line per item
    out_tty, err_tty = _batch_stderr(tmp_path, terminal=True)
    out_pipe, err_pipe = _batch_stderr(tmp_path, terminal=False)
    assert "indexing:" in err_tty and "0/2" in err_tty and "item/s" in err_tty
    assert err_pipe.splitlines() == ["indexing: 1/2 items, 0 s", "indexing: 2/2 items, 0 s"] \
        or [ln.rsplit(",", 1)[0] for ln in err_pipe.splitlines()] == [
            "indexing: 1/2 items", "indexing: 2/2 items"]
    monkeypatch.setenv("VERIFIDX_PROGRESS_SECONDS", "3600")  # a short run in a log: silent
    assert _batch_stderr(tmp_path, terminal=False)[1] == ""
    # stdout is the same either way: the bar never lands there
    assert out_tty.splitlines()[:-1] == out_pipe.splitlines()[:-1]
    assert len(out_pipe.splitlines()) == 3


def test_check_shows_progress_on_a_terminal_except_for_machine_formats(tmp_path: Path
                                                                      ) -> None:
    rules = _small_rules(tmp_path)
    assert main(["prove", str(rules), "--proofs", str(tmp_path / "p")]) == 0
    base = ["check", str(rules), "--proofs", str(tmp_path / "p"), "--no-cache"]
    out, err = _batch_stderr(tmp_path, True, base)
    assert "check:" in err and "0/5" in err  # the first display; tqdm may skip later ones
    for form in ("json", "junit", "github"):
        out, err = _batch_stderr(tmp_path, True, [*base, "--format", form])
        assert err == "", form


def test_progress_is_off_for_machine_formats() -> None:
    assert show_progress("text")
    for form in ("json", "junit", "github"):
        assert not show_progress(form)
    with Progress(3, "x", show=False) as bar:  # a hidden bar still echoes lines
        bar.advance()


def test_progress_lines_in_a_log_every_few_seconds(monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("VERIFIDX_PROGRESS_SECONDS", "0")
    with Progress(3, "tile", show=True) as bar:
        for _ in range(3):
            bar.advance()
    lines = capsys.readouterr().err.splitlines()
    assert [ln.rsplit(",", 1)[0] for ln in lines] == [f"tile: {k}/3 items" for k in (1, 2, 3)]
    monkeypatch.setenv("VERIFIDX_PROGRESS_SECONDS", "3600")
    with Progress(3, "tile", show=True) as bar:
        bar.advance(3)
    assert capsys.readouterr().err == ""  # shorter than the interval: nothing to say


@pytest.mark.parametrize("jobs", [1, 2])
def test_vx_prove_reports_each_rule_as_it_is_proven(jobs: int, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """`vx.prove(progress=True)` advances once per rule, from inside the proving loop (it
    advanced once per chunk of 4 * jobs rules)."""
    import verifidx as vx

    monkeypatch.setenv("VERIFIDX_PROGRESS_SECONDS", "0")
    results = vx.prove("rule a: x + 0 => x\nrule b: x * 1 => x\nrule c: x - x => 0\n",
                       jobs=jobs, progress=True)
    assert [r.verdict for r in results] == ["proved"] * 3
    lines = capsys.readouterr().err.splitlines()
    assert [ln.rsplit(",", 1)[0] for ln in lines] == [f"prove: {k}/3 items" for k in (1, 2, 3)]


# -- proofs and re-checks ----------------------------------------------------------------------


def test_certificates_are_the_same_bytes_on_the_cluster(scheduler: str, tmp_path: Path) -> None:
    """Rules proven in this process and on two worker processes write the same certificate
    file; their re-checks answer the same."""
    from verifidx.rules.items import prove_on, recheck_on
    from verifidx.rules.prover import PROVED, ProverConfig, prove_rules, recheck_query_for
    from verifidx.rules.results import budgeted
    from verifidx.rules.store import load_files, write_certificates

    (rule_file,) = [f for f in load_files([REPO / "rules" / "mul.rules"], None)]
    rules = rule_file.rules[:6]
    config = ProverConfig()
    runs = {"reference": prove_rules(rules, config),  # the prover's own loop
            "here": list(prove_on(rules, config, Engine())),
            "there": list(prove_on(rules, config, Engine(scheduler=scheduler)))}
    texts = {}
    for name, results in runs.items():
        assert [r.name for r in results] == [r.name for r in rules]
        assert all(r.verdict == PROVED for r in results)
        path = tmp_path / f"{name}.json"
        write_certificates(path, rule_file.path, rules, {r.name: r for r in results}, {},
                           config)
        texts[name] = path.read_text().replace(name, "NAME")
    assert texts["here"] == texts["there"] == texts["reference"]
    queries = [(budgeted(recheck_query_for(r, res.strategy, res.strength, res.seed) or "",
                         res.rlimit or config.rlimit), 600_000)
               for r, res in zip(rules, runs["here"])]
    here = [a for a, _ in recheck_on(queries, Engine())]
    there = [a for a, _ in recheck_on(queries, Engine(scheduler=scheduler))]
    assert here == there and all(set(a) == {"unsat"} for a in here)


def test_coalescing_batch_records_match_the_single_file_json(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]
                                                             ) -> None:
    files = [p for p in JAX if p.name.endswith(".opt.hlo")][:3]
    out = tmp_path / "c.jsonl"
    code = main(["coalescing", "--batch", *map(str, files), "-o", str(out), "--json"])
    capsys.readouterr()
    assert code == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    for p, rec in zip(files, records):
        assert main(["coalescing", str(p), "--json"]) == 0
        assert rec["fusions"] == json.loads(capsys.readouterr().out)["fusions"]


def test_a_local_process_pool_answers_in_input_order() -> None:
    outcomes = list(run(always_fails, ["a", "bad", "c"], Engine(processes=2)))
    assert [o.text for o in outcomes] == ["A", None, "C"]
    assert outcomes[1].error == "ValueError: this item never works"


# -- verifidx prove / check on the engine ------------------------------------------------------


def _small_rules(tmp_path: Path) -> Path:
    from verifidx.rules.store import load_files

    (rf,) = load_files([REPO / "rules" / "mul.rules"], None)
    path = tmp_path / "small.rules"
    path.write_text("\n".join(r.text for r in rf.rules[:5]) + "\n")
    return path


def _without_times(doc: dict) -> dict:
    for r in doc["rules"]:
        r.pop("seconds")
    return doc


def test_prove_and_check_are_the_same_on_the_cluster(scheduler: str, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]
                                                     ) -> None:
    rules = _small_rules(tmp_path)
    runs = {}
    for name, extra in (("here", []), ("there", ["--scheduler", scheduler])):
        proofs = tmp_path / name
        assert main(["prove", str(rules), "--proofs", str(proofs), "--format", "json",
                     *extra]) == 0
        proved = _without_times(json.loads(capsys.readouterr().out))
        assert main(["check", str(rules), "--proofs", str(proofs), "--no-cache", "--format",
                     "json", *extra]) == 0
        checked = _without_times(json.loads(capsys.readouterr().out))
        runs[name] = (proved, checked, (proofs / "small.json").read_bytes())
    assert runs["here"] == runs["there"]
    assert runs["here"][1]["summary"]["accepted"] == 5


def test_prove_prints_each_rule_as_it_is_done(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """The text lines are those of the results, in the file's order, then the summary."""
    rules = _small_rules(tmp_path)
    seen: list[str] = []
    import verifidx.cli.rules as rules_cli

    original = rules_cli.echo

    def spy(line: str) -> None:
        seen.append(line)
        original(line)

    rules_cli.echo = spy  # type: ignore[assignment]
    try:
        assert main(["prove", str(rules), "--proofs", str(tmp_path / "p")]) == 0
    finally:
        rules_cli.echo = original  # type: ignore[assignment]
    out = capsys.readouterr().out.splitlines()
    assert out[:-1] == "\n".join(seen).splitlines() and out[-1] == "5 rules: 5 proved"
    from verifidx.rules.parser import parse_rules

    names = [r.name for r in parse_rules(rules.read_text())]
    assert [ln.split(": ")[1] for ln in seen if not ln.startswith(" ")] == names


def test_a_rule_whose_proof_always_fails_is_unknown_never_proved(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    import verifidx.rules.prover as prover

    def broken(rule: object, config: object) -> object:
        raise MemoryError("the worker ran out of memory")

    monkeypatch.setattr(prover, "prove_rule", broken)
    rules = _small_rules(tmp_path)
    code = main(["prove", str(rules), "--proofs", str(tmp_path / "p"), "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1
    assert {r["verdict"] for r in doc["rules"]} == {"unknown"}
    assert all("MemoryError: the worker ran out of memory" in r["message"] for r in doc["rules"])
    certificate = json.loads((tmp_path / "p" / "small.json").read_text())
    assert {e["verdict"] for e in certificate["rules"].values()} == {"unknown"}


def test_no_items_start_no_cluster() -> None:
    assert list(run(always_fails, [], Engine(scheduler="tcp://192.0.2.1:1"))) == []
