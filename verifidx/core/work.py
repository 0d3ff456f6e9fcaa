"""Independent work items run in this process, on a local Dask cluster or on a Dask scheduler.

A work item is text in, text out (rule text, SMT-LIB, HLO text, map text): it pickles, and
anything that does not (Z3 objects) is built inside the worker from the text. `run` hands the
answers back in input order, each as soon as every item before it is done, so what a command
prints is the same byte for byte whatever the number of workers and the order they finish in.

Dask (`verifidx[distributed]`) is optional and imported only when a cluster is asked for. On a
cluster a lost worker's item runs again elsewhere (Dask reschedules it) and an item that raises
is retried; a worker over its memory limit is restarted by its nanny, and its item counts as
lost. An item that fails on every try comes back with `error` set, which callers report as
unknown with that reason, never as a result.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

from .errors import UnsupportedError

INSTALL_HINT = "pip install 'verifidx[distributed]'"
SCHEDULER_ENV = "DASK_SCHEDULER_ADDRESS"

Task = Callable[[str], str]


@dataclass(frozen=True)
class Outcome:
    """One item's answer: `text`, or `error` (why every try failed) when there is none."""

    index: int
    text: str | None
    error: str | None = None


@dataclass(frozen=True)
class Engine:
    """Where items run: in this process (nothing set), in a local pool of `processes` (the
    commands' `-j N`; no retries: an item whose process dies is unknown), on a local Dask
    cluster of `workers` processes, or on the Dask scheduler at `scheduler`."""

    workers: int = 0
    scheduler: str | None = None
    processes: int = 0
    retries: int = 2  # tries after the first, for an item that raised or lost its worker
    memory_limit: str = "auto"  # per local worker; beyond it the nanny restarts the worker
    shared: Any = field(default=None, compare=False)  # a `_SharedCluster` (`shared`)

    @property
    def in_process(self) -> bool:
        return not self.workers and not self.scheduler and self.processes <= 1

    @property
    def on_dask(self) -> bool:
        return bool(self.workers or self.scheduler)

    def describe(self) -> str:
        if self.scheduler:
            return f"Dask scheduler {self.scheduler}"
        if self.workers:
            return f"{self.workers} local Dask worker{'s' if self.workers != 1 else ''}"
        if self.processes > 1:
            return f"{self.processes} local processes"
        return "this process"


def engine_for(workers: int | None = None, scheduler: str | None = None,
               environ: dict[str, str] | None = None) -> Engine:
    """The engine the flags ask for (`--scheduler` wins over `$DASK_SCHEDULER_ADDRESS`, which
    wins over `--workers`); UnsupportedError with the install line when Dask is missing."""
    env = os.environ if environ is None else environ
    address = scheduler or env.get(SCHEDULER_ENV) or None
    if workers is not None and workers < 0:
        raise UnsupportedError("--workers takes a number of worker processes (0: in process)")
    engine = Engine(workers=workers or 0, scheduler=address)
    if engine.on_dask:
        require_dask()
    return engine


def require_dask() -> None:
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise UnsupportedError(
            f"--scheduler/--workers need Dask, which is not installed: {INSTALL_HINT}"
        ) from None


def _reason(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0]}" if text else type(err).__name__


def _in_process(task: Task, items: Sequence[str]) -> Iterator[Outcome]:
    for i, item in enumerate(items):
        try:
            answer = task(item)
        except Exception as err:  # noqa: BLE001 - the item is unknown, the run goes on
            yield Outcome(i, None, _reason(err))
            continue
        yield _checked(i, answer)


def _checked(i: int, answer: object) -> Outcome:
    if not isinstance(answer, str):
        return Outcome(i, None, f"the worker answered {type(answer).__name__}, not text")
    return Outcome(i, answer)


def _in_pool(task: Task, items: Sequence[str], processes: int) -> Iterator[Outcome]:
    """Completion order, in spawned processes (a forked copy of a process that already ran Z3
    is not safe)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=min(processes, len(items)), mp_context=ctx) as pool:
        where = {pool.submit(task, item): i for i, item in enumerate(items)}
        for fut in as_completed(where):
            err = fut.exception()
            yield _checked(where[fut], fut.result()) if err is None else \
                Outcome(where[fut], None, _reason(err))


def _config(engine: Engine) -> Any:
    """A worker holds only the item it runs (saturation 1.0), so that a worker that dies takes
    no innocent queued item down with it (Dask counts those as suspects too)."""
    import dask

    return dask.config.set({"distributed.scheduler.allowed-failures": engine.retries,
                            "distributed.scheduler.worker-saturation": 1.0})


def _local_cluster(engine: Engine) -> Any:
    import logging

    from distributed import LocalCluster

    with _config(engine):
        return LocalCluster(n_workers=engine.workers, threads_per_worker=1, processes=True,
                            memory_limit=engine.memory_limit, dashboard_address=":0",
                            silence_logs=logging.CRITICAL)


class _SharedCluster:
    """A local cluster started on first use and kept for the rest of a command."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.cluster: Any = None

    def address(self) -> str:
        if self.cluster is None:
            self.cluster = _local_cluster(self.engine)
        return str(self.cluster.scheduler_address)

    def close(self) -> None:
        if self.cluster is not None:
            self.cluster.close()


@contextlib.contextmanager
def shared(engine: Engine) -> Iterator[Engine]:
    """One local cluster for every run of a command that runs items more than once (`check`
    re-checks rules, then substitutions), started only if some run has items."""
    if not engine.workers or engine.scheduler:
        yield engine
        return
    cluster = _SharedCluster(engine)
    try:
        yield dataclasses.replace(engine, shared=cluster)
    finally:
        cluster.close()

def _on_dask(task: Task, items: Sequence[str], engine: Engine) -> Iterator[Outcome]:
    """Completion order. `allowed-failures` is how many workers an item may take down (Dask
    then raises KilledWorker for it); `retries` is how often an item that raised runs again."""
    from distributed import Client, as_completed

    with _config(engine):
        cluster = None
        if engine.scheduler or engine.shared is not None:
            address = engine.scheduler or engine.shared.address()
            client = Client(address, set_as_default=False)
        else:
            cluster = _local_cluster(engine)
            client = Client(cluster, set_as_default=False)
        try:
            futures = client.map(task, list(items), retries=engine.retries, pure=False)
            where = {f.key: i for i, f in enumerate(futures)}
            for fut in as_completed(futures, loop=client.loop):
                i = where[fut.key]
                if fut.status == "finished":
                    yield _checked(i, fut.result())
                else:
                    yield Outcome(i, None, _reason(fut.exception()))
                fut.release()
        finally:
            client.close()
            if cluster is not None:
                cluster.close()


def run(task: Task, items: Sequence[str], engine: Engine = Engine(),
        progress: Progress | None = None) -> Iterator[Outcome]:
    """`task(item)` for every item; outcomes in input order, each yielded as soon as it and
    every earlier item are done. `task` must be a module-level function (workers import it)."""
    if not items:
        return  # no cluster is started for nothing
    if engine.on_dask:
        source = _on_dask(task, items, engine)
    elif engine.processes > 1 and len(items) > 1:
        source = _in_pool(task, items, engine.processes)
    else:
        source = _in_process(task, items)
    waiting: dict[int, Outcome] = {}
    next_index = 0
    for outcome in source:
        if progress is not None:
            progress.advance()
        waiting[outcome.index] = outcome
        while next_index in waiting:
            yield waiting.pop(next_index)
            next_index += 1


#: Seconds between the progress lines of a run whose stderr is not a terminal (a CI log):
#: none for a run shorter than that. `VERIFIDX_PROGRESS_SECONDS` sets it (0: a line per item).
PROGRESS_SECONDS_ENV = "VERIFIDX_PROGRESS_SECONDS"
PROGRESS_SECONDS = 10.0


class Progress:
    """Items done on stderr, only when `show`: on a terminal a bar (tqdm: rate, time left), else
    a plain line every few seconds (`indexing: 12/40 items, 31 s`) and one at the end of a run
    that printed any. `echo` prints a line on stdout without tearing the bar."""

    def __init__(self, total: int, description: str, show: bool) -> None:
        self._bar: Any = None
        self._lines = False
        self.total, self.description, self.done = total, description, 0
        if show and total:
            if hasattr(sys.stderr, "isatty") and sys.stderr.isatty():
                from tqdm import tqdm

                self._bar = tqdm(total=total, desc=description, unit="item", file=sys.stderr,
                                 leave=False, dynamic_ncols=True)
            else:
                self._lines = True
                self._every = _progress_seconds()
                self._start = self._last = time.monotonic()
                self._printed = False

    def advance(self, n: int = 1) -> None:
        self.done += n
        if self._bar is not None:
            self._bar.update(n)
        elif self._lines:
            now = time.monotonic()
            if now - self._last >= self._every:
                self._line(now)

    def _line(self, now: float) -> None:
        print(f"{self.description}: {self.done}/{self.total} items, {now - self._start:.0f} s",
              file=sys.stderr, flush=True)
        self._last, self._printed, self._reported = now, True, self.done

    def echo(self, line: str, file: IO[str] | None = None) -> None:
        out = file or sys.stdout
        if self._bar is not None:
            self._bar.clear()
            print(line, file=out, flush=True)
            self._bar.refresh()
        else:
            print(line, file=out, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        if self._lines and self._printed and self.done != self._reported:
            self._line(time.monotonic())
        self._lines = False

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def echo(line: str) -> None:
    """A line on stdout that does not tear a bar on the terminal (none shown: plain print)."""
    from tqdm import tqdm

    tqdm.write(line, file=sys.stdout)
    sys.stdout.flush()


def _progress_seconds() -> float:
    try:
        return max(0.0, float(os.environ.get(PROGRESS_SECONDS_ENV, PROGRESS_SECONDS)))
    except ValueError:
        return PROGRESS_SECONDS


def show_progress(form: str = "text") -> bool:
    """Progress is for people: with text output (a bar on a terminal, lines in a log); never
    with a machine format (json, junit, github), whose readers want stderr for errors."""
    return form == "text"
