"""A CP-SAT solve that leaves the process's SIGINT handling as it found it.

OR-Tools' CP-SAT (``catch_sigint_signal``, on by default; seen with 9.15) installs a C-level SIGINT handler for
the length of a solve, so a Ctrl-C ends the solve as at its time limit, and afterwards resets SIGINT to the
operating system's default (``SIG_DFL``) instead of the handler that was there. Python is not told:
``signal.getsignal`` still names Python's handler, but the next SIGINT kills the process outright, with no
``KeyboardInterrupt``, no cleanup and no message (a test suite or a long script that solved once in the main
thread dies by signal 2; a background job whose SIGINT was ignored becomes killable by it).

:func:`solve` is the one call hetsim's mappers use: in the main thread it lets CP-SAT catch SIGINT as before and
reinstalls the handler Python had afterwards; in any other thread (where ``signal.signal`` cannot be called and
the main thread's handler must not be replaced at all) it tells CP-SAT not to touch SIGINT.
"""

from __future__ import annotations

import signal
import threading


def solve(solver, model, callback=None) -> int:
    """``solver.Solve(model[, callback])`` (an ``ortools.sat.python.cp_model.CpSolver``), returning its status;
    the process's SIGINT disposition is the same after the call as before it (module docstring)."""
    if threading.current_thread() is not threading.main_thread():
        solver.parameters.catch_sigint_signal = False
        return solver.Solve(model, callback) if callback is not None else solver.Solve(model)
    before = signal.getsignal(signal.SIGINT)
    try:
        return solver.Solve(model, callback) if callback is not None else solver.Solve(model)
    finally:
        if before is not None:  # None: a handler installed outside Python, which Python cannot reinstall
            signal.signal(signal.SIGINT, before)
