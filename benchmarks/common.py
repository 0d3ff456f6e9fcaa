"""Timing helpers shared by the benchmarks: medians over repeats, CPU time next to wall time,
tools interleaved round by round, whole child processes, a plain-text table.

On a shared machine wall time measures the neighbours as much as the code: CPU time
(`time.thread_time` in process, the child's rusage for a whole process) is the figure to
compare, wall time is printed beside it, and tools run in turn within each round so that a
burst of load hits all of them alike.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field


@dataclass
class Timing:
    """Seconds per call of one tool over the rounds: CPU (this thread) and wall."""

    cpu: list[float] = field(default_factory=list)
    wall: list[float] = field(default_factory=list)
    peak_kib: int = 0  # whole processes only: the child's peak resident set

    @property
    def median_cpu(self) -> float:
        return statistics.median(self.cpu)

    @property
    def median_wall(self) -> float:
        return statistics.median(self.wall)

    @property
    def spread(self) -> float:
        """(max - min) / median of the CPU times: how much the rounds disagree."""
        m = self.median_cpu
        return (max(self.cpu) - min(self.cpu)) / m if m > 0 else 0.0

    def text(self) -> str:
        return (f"{fmt_us(self.median_cpu)} cpu (spread {self.spread:.0%}), "
                f"{fmt_us(self.median_wall)} wall")


def interleaved(tools: Mapping[str, Callable[[], object]], repeat: int = 5, number: int = 1
                ) -> dict[str, Timing]:
    """Each round runs every tool `number` times, one tool after the other."""
    out = {name: Timing() for name in tools}
    for _ in range(repeat):
        for name, fn in tools.items():
            cpu, wall = time.thread_time(), time.perf_counter()
            for _ in range(number):
                fn()
            out[name].cpu.append((time.thread_time() - cpu) / number)
            out[name].wall.append((time.perf_counter() - wall) / number)
    return out


def run_process(argv: Sequence[str], timing: Timing | None = None,
                env: Mapping[str, str] | None = None, cwd: str | None = None
                ) -> tuple[int, str, Timing]:
    """Run a whole process; its own CPU time (user + system, from `wait4`), its wall time and
    its peak memory go into `timing`. Returns (exit code, stdout, timing)."""
    timing = timing if timing is not None else Timing()
    start = time.perf_counter()
    proc = subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, env=None if env is None else dict(env), cwd=cwd)
    assert proc.stdout is not None
    out = proc.stdout.read()
    proc.stdout.close()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    timing.wall.append(time.perf_counter() - start)
    timing.cpu.append(usage.ru_utime + usage.ru_stime)
    timing.peak_kib = max(timing.peak_kib, usage.ru_maxrss)
    return proc.returncode, out, timing


def median_seconds(fn: Callable[[], object], repeat: int = 5, number: int = 1) -> float:
    """Median wall time of `number` calls, over `repeat` rounds, per call."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - start) / number)
    return statistics.median(times)


def fmt_us(seconds: float | None) -> str:
    if seconds is None:
        return "n/a"
    if seconds >= 1e-2:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds * 1e6:.1f} us"


def print_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths))
    print(line)
    print("-" * len(line))
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)))
