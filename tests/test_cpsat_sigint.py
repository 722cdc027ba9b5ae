"""A CP-SAT solve leaves SIGINT as it found it (hetsim.mappers._cpsat_sigint).

OR-Tools' CP-SAT resets SIGINT to the operating system's default after every solve (its SigintHandler), behind
Python's back: the next SIGINT killed the process by signal 2, with no KeyboardInterrupt and no message. Any
process that solved once was exposed, the test suite included (pytest solves in its own main thread). Each case
runs in a subprocess, so a regression kills that subprocess, not the suite.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = r'''
import os, signal, sys, threading, time
from hetsim.costs import CostModel
from hetsim.mappers import get_mapper
from hetsim.platform import load_platform
from hetsim.workload.synthetic import layered_dag

# Python's own handler, whatever the parent left: a process started with SIGINT ignored (a pytest-xdist worker's
# child, a background job) would otherwise keep ignoring it and the main case could not tell
signal.signal(signal.SIGINT, signal.default_int_handler)
costs = CostModel(layered_dag(12, seed=1), load_platform(sys.argv[1]))


def solve():
    sched = get_mapper("cpsat", threads=2, time_limit_s=10, levers="none").map(costs)
    assert sched.stats["solver_calls_s"] > 0  # CP-SAT itself ran (the bare model: no bound proves it first)


for mode in ("main", "thread", "ignored"):
    if mode == "ignored":
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a background job's SIGINT
    if mode == "thread":
        t = threading.Thread(target=solve)
        t.start()
        t.join()
    else:
        solve()
    print(mode, "solved", flush=True)
    try:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(2)  # Python runs its handler at the next instruction
        print(mode, "still running", flush=True)
    except KeyboardInterrupt:
        print(mode, "KeyboardInterrupt", flush=True)
'''


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_a_sigint_after_a_cp_sat_solve_is_handled_as_before_it():
    """main: Python's handler is back after the solve (a SIGINT raises KeyboardInterrupt); thread: a solve outside
    the main thread leaves the main thread's handler alone; ignored: an ignored SIGINT stays ignored."""
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(ROOT / "platforms" / "puma.yaml")], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != -signal.SIGINT, f"killed by SIGINT after a solve: {proc.stdout}{proc.stderr[-2000:]}"
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines() == ["main solved", "main KeyboardInterrupt", "thread solved",
                                        "thread KeyboardInterrupt", "ignored solved", "ignored still running"]
