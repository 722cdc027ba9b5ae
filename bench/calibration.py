"""A machine-speed calibration for bench figures that travel between machines and loads.

A fixed pure-Python loop (:func:`reference_loop`: integer arithmetic in the interpreter, no allocation, no I/O,
no library) is timed several times, interleaved with the steps a script measures, and its **median** wall
time is the machine's speed at that moment for one single-threaded Python process (the median, not the best:
a shared machine's speed jumps several-fold within seconds). A figure divided by it and multiplied by the
loop's time on the reference core, :data:`REFERENCE_LOOP_S`, is in **reference-core seconds**: what the step
would have taken on one otherwise idle core of the reference machine. Two runs on different machines or under
different loads compare in these units; the raw wall and CPU seconds are printed beside them.

The reference core: one core of the project's 2-vCPU AMD EPYC (Zen 4) VM running nothing else, on which the loop
takes :data:`REFERENCE_LOOP_S` (its CPU time, the minimum of 15 runs at a load average of 12, 2026-12-02: CPU
time is what a load changes least). Where a ratio to a bare library run in the same process exists (replay vs
bare SimPy), prefer that: it needs no calibration at all.

    from calibration import Calibration, session
    cal = Calibration()
    t = cal.timed(lambda: work())        # calibration samples before and after: interleaved
    print(cal.figure("work", t))         # "work  1.234 s wall  1.100 s CPU  0.98 ref-core s"
    print(cal.line())                    # the calibration itself: median, spread, samples

Every bench script prints its calibration; ``with session("name"):`` around a script's body prints the
machine and load at the start and, at the end, the script's wall and CPU seconds (children included), the
calibration of the whole run and the total in reference-core seconds.

**Work on several cores** (a CP-SAT solve with 2 workers, a sweep on 2 processes) slows with the machine's
other jobs in a way one loop does not show: a single loop finds a free core on a 2-core machine at a load of 3,
while a 2-worker solver then gets about 1.3 of its 2 cores. ``Calibration(width=2)`` times the loop in 2
processes at once (forked, started together) and takes the wall time until both have finished, so its median is
the speed of 2 cores for 2 single-threaded workers at that moment; reference-core seconds are then what the
step would take on 2 idle cores of the reference machine (our assumption: its cores run the loop
independently, each in :data:`REFERENCE_LOOP_S`, so the 2-wide loop takes the same time there). On a quiet
machine both widths give the same scale; under load the wider one is the slower and the honest one for
multi-core work.
"""

from __future__ import annotations

import contextlib
import os
import platform
import resource
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

LOOP_STEPS = 2_000_000
"""Iterations of the reference loop."""
REFERENCE_LOOP_S = 0.150
"""The loop's time on the reference core (module docstring), seconds."""


def reference_loop(steps: int = LOOP_STEPS) -> int:
    """The fixed pure-Python work: a linear congruential recurrence over ``steps`` integers (16-bit state,
    so no big integers and no allocation). Returns the state so that nothing can skip the loop."""
    x = 0
    for i in range(steps):
        x = (x * 31 + i) & 0xFFFF
    return x


@dataclass(frozen=True)
class Timing:
    """One measured step: wall and CPU seconds (CPU: this process's user + system time, plus its waited-for
    children's when ``children`` was asked), and what the step returned."""

    wall_s: float
    cpu_s: float
    result: object = None


def _cpu(children: bool) -> float:
    t = time.process_time()
    if children:
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        t += ru.ru_utime + ru.ru_stime
    return t


def _wide_loop(width: int) -> tuple[float, float]:
    """The reference loop in ``width`` forked processes started together: (wall seconds until the last has
    finished, the children's CPU seconds per process). POSIX only (``os.fork``)."""
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    pids = []
    for _ in range(width):
        pid = os.fork()
        if pid == 0:  # child: the loop, then leave without running the parent's exit handlers
            try:
                reference_loop()
            finally:
                os._exit(0)
        pids.append(pid)
    for pid in pids:
        os.waitpid(pid, 0)
    wall = time.perf_counter() - t0
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (ru.ru_utime + ru.ru_stime - ru0.ru_utime - ru0.ru_stime) / width


class Calibration:
    """Calibration samples of one script run (module docstring). ``width``: the number of cores the measured
    work uses (1: one single-threaded process; 2: a 2-worker solver or 2 worker processes), each sample runs
    the loop in that many processes at once."""

    def __init__(self, samples_at_start: int = 3, width: int = 1):
        if width < 1:
            raise ValueError(f"width must be >= 1, got {width}")
        self.width = width
        self.walls: list[float] = []
        self.cpus: list[float] = []
        for _ in range(samples_at_start):
            self.sample()

    def sample(self) -> float:
        """Time the reference loop once (``width`` copies at once); returns its wall seconds."""
        if self.width > 1:
            wall, cpu = _wide_loop(self.width)
            self.walls.append(wall)
            self.cpus.append(cpu)
            return wall
        c0, t0 = time.process_time(), time.perf_counter()
        reference_loop()
        wall = time.perf_counter() - t0
        self.walls.append(wall)
        self.cpus.append(time.process_time() - c0)
        return wall

    @property
    def median_s(self) -> float:
        """Median wall seconds of the loop so far."""
        return statistics.median(self.walls)

    @property
    def scale(self) -> float:
        """Reference-core seconds per measured wall second: ``REFERENCE_LOOP_S / median``."""
        return REFERENCE_LOOP_S / self.median_s

    def ref_s(self, wall_s: float) -> float:
        """``wall_s`` in reference-core seconds."""
        return wall_s * self.scale

    def timed(self, fn: Callable[[], object], repeat: int = 1, *, children: bool = False,
              pick: str = "median") -> Timing:
        """Run ``fn`` ``repeat`` times with a calibration sample before each run and one after the last;
        return the run of median wall time (``pick="min"``: the fastest) with its CPU time."""
        runs = []
        for _ in range(repeat):
            self.sample()
            c0, t0 = _cpu(children), time.perf_counter()
            out = fn()
            runs.append(Timing(time.perf_counter() - t0, _cpu(children) - c0, out))
        self.sample()
        ranked = sorted(runs, key=lambda t: t.wall_s)
        return ranked[0] if pick == "min" else ranked[(len(ranked) - 1) // 2]

    def figure(self, label: str, t: Timing | float, cpu_s: float | None = None, width: int = 44) -> str:
        """One bench line: ``label``, wall and CPU seconds and the wall time in reference-core seconds."""
        wall, cpu = (t.wall_s, t.cpu_s) if isinstance(t, Timing) else (float(t), cpu_s)
        cpu_txt = "" if cpu is None else f"  {cpu:9.3f} s CPU"
        return f"{label:<{width}} {wall:9.3f} s wall{cpu_txt}  {self.ref_s(wall):9.3f} ref-core s"

    def line(self) -> str:
        """The calibration: the loop's median wall time, spread, CPU median, samples, and the scale."""
        wide = f", {self.width} copies at once" if self.width > 1 else ""
        return (f"# calibration: reference loop ({LOOP_STEPS:,} steps{wide}) median {self.median_s:.3f} s wall "
                f"(range {min(self.walls):.3f}-{max(self.walls):.3f} s, {len(self.walls)} samples interleaved), "
                f"{statistics.median(self.cpus):.3f} s CPU; reference core {REFERENCE_LOOP_S:.3f} s, so 1 s wall "
                f"here = {self.scale:.3f} ref-core s")


def machine() -> str:
    """Python version, CPU model, memory, cores, OS."""
    cpu = platform.processor() or platform.machine()
    try:
        info = Path("/proc/cpuinfo").read_text().splitlines()
        cpu = next(line.split(":", 1)[1].strip() for line in info if line.startswith("model name"))
        meminfo = Path("/proc/meminfo").read_text().splitlines()
        mem = next(int(line.split()[1]) for line in meminfo if line.startswith("MemTotal")) / 2**20
        cpu += f", {mem:.0f} GiB"
    except (OSError, StopIteration):
        pass
    return f"python {platform.python_version()}, {cpu}, {os.cpu_count()} cores, {sys.platform}"


def load() -> str:
    """The 1, 5 and 15-minute load averages."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


@contextlib.contextmanager
def session(name: str, cal: Calibration | None = None) -> Iterator[Calibration]:
    """Print the machine, the load and a first calibration; yield the :class:`Calibration` (sample it between
    steps with ``cal.sample()`` or time steps with ``cal.timed``); at the end print the run's wall and CPU
    seconds (waited-for children included), the load, the calibration and the total in reference-core
    seconds."""
    cal = cal or Calibration()
    print(f"# {name}: {machine()}")
    print(f"# load average at start: {load()}")
    sys.stdout.flush()
    c0, t0 = _cpu(True), time.perf_counter()
    try:
        yield cal
    finally:
        wall, cpu = time.perf_counter() - t0, _cpu(True) - c0
        cal.sample()
        print(f"# load average at end: {load()}")
        print(cal.line())
        print(f"# {name} in all: {wall:.2f} s wall, {cpu:.2f} s CPU (children included), "
              f"{cal.ref_s(wall):.2f} ref-core s")
        sys.stdout.flush()


def main(argv: list[str] | None = None) -> int:
    """``python bench/calibration.py [SAMPLES [WIDTH]]``: this machine's calibration."""
    import argparse

    ap = argparse.ArgumentParser(description="This machine's calibration: the reference loop's median wall time "
                                 "and the scale to reference-core seconds (module docstring).")
    ap.add_argument("samples", nargs="?", type=int, default=9, help="times to run the loop (default 9)")
    ap.add_argument("width", nargs="?", type=int, default=1,
                    help="copies of the loop run at once, the cores the measured work uses (default 1)")
    args = ap.parse_args(argv)
    if args.samples < 1 or args.width < 1:
        ap.error("samples and width must be >= 1")
    c = Calibration(args.samples, args.width)
    print(c.line())
    print(f"# CPU seconds of the loop: min {min(c.cpus):.4f}, median {statistics.median(c.cpus):.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
