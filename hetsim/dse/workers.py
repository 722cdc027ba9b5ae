"""Sweep worker processes die with the sweep.

A local sweep runs its points in ``concurrent.futures.ProcessPoolExecutor`` workers. When the sweep process is
killed outright (SIGKILL, the OOM killer), nothing tells them: a worker in the middle of a 30 s CP-SAT solve
finishes it, and an idle one waits on its task queue, both orphaned (seen: two workers alive 22 s after the
sweep's SIGKILL). :func:`die_with_parent`, run in each worker as it starts, asks Linux to send the worker
SIGKILL when its parent dies (``prctl(PR_SET_PDEATHSIG)``) and, on every system, starts a daemon thread that
ends the worker within :data:`WATCH_S` seconds of the parent's pid changing (the worker re-parented), the
portable check.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
import threading
import time

#: how often the portable check looks at the parent's pid, in seconds
WATCH_S = 1.0
_PR_SET_PDEATHSIG = 1


def _pdeathsig() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _watch(parent: int) -> None:
    while True:
        if os.getppid() != parent:
            os._exit(1)  # the sweep is gone: nothing will read this worker's result
        time.sleep(WATCH_S)


def die_with_parent(parent: int) -> None:
    """End this process when the process ``parent`` (its parent, the sweep) dies (module docstring)."""
    _pdeathsig()
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)
    threading.Thread(target=_watch, args=(parent,), name="hetsim-parent-watch", daemon=True).start()
