"""``python -m hetsim`` and the ``hetsim`` command (``run``).

A SIGINT that arrives while hetsim's libraries are being imported (a second or more under load) is held until the
import is done and then ends the command with exit 130 and one line: Python's own handler would print a
``KeyboardInterrupt`` traceback, or lose the signal when it lands in an extension module's initialisation that
clears errors (a sweep interrupted that early then ran to the end, exit 0). A SIGINT the parent ignores (a
background job) stays ignored.
"""

from __future__ import annotations

import signal
import sys


def run() -> int:
    pending: list[int] = []
    hold = signal.getsignal(signal.SIGINT) is signal.default_int_handler
    if hold:
        signal.signal(signal.SIGINT, lambda signum, _frame: pending.append(signum))
    try:
        from hetsim.cli import main
    finally:
        if hold:
            signal.signal(signal.SIGINT, signal.default_int_handler)
    if pending:
        print("hetsim: interrupted", file=sys.stderr)
        return 130
    return main()


if __name__ == "__main__":
    raise SystemExit(run())
