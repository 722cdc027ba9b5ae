"""``python -m hetsim`` and the ``hetsim`` command (``run``).

SIGINT raises ``KeyboardInterrupt`` as Python's own handler does, and is also recorded
(:mod:`hetsim._interrupt`): a sweep interrupted while hetsim was still importing its libraries stops before its
first point (the interrupt could be lost inside an extension module's initialisation, and the sweep then ran to
the end with exit 0). A SIGINT during hetsim's own imports ends the command with exit 130 and one line, not a
``KeyboardInterrupt`` traceback.
"""

from __future__ import annotations

import sys


def run() -> int:
    from hetsim import _interrupt

    _interrupt.install()
    try:
        from hetsim.cli import main
    except KeyboardInterrupt:
        print("hetsim: interrupted", file=sys.stderr)
        return 130
    except RuntimeError as err:  # a KeyboardInterrupt wrapped by CPython (a descriptor's __set_name__ at import)
        if not _interrupt.wrapped(err):
            raise
        print("hetsim: interrupted", file=sys.stderr)
        return 130
    return main()


if __name__ == "__main__":
    raise SystemExit(run())
