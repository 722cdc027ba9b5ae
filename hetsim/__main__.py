"""``python -m hetsim`` and the ``hetsim`` command (``run``).

A Ctrl-C at any moment ends the command with one line and exit code 130, never a traceback
(:mod:`hetsim._interrupt`): SIGINT raises ``KeyboardInterrupt`` as Python's own handler does, and is also
recorded, so that an interrupt lost inside an extension module's initialisation still stops a sweep before its
first point and the command at the end of its start-up; an interrupt while the parser is built or the arguments
read (hetsim importing its libraries) is caught here; once the command has returned (or exited), SIGINT ends the
process at once with exit 130 instead of raising into the interpreter's shutdown.
"""

from __future__ import annotations


def run() -> int:
    from hetsim import _interrupt

    _interrupt.install()
    code: object = 1
    try:
        if _interrupt.seen:  # a SIGINT held since the start (hetsim._interrupt.hold)
            raise KeyboardInterrupt
        from hetsim.cli import main

        if _interrupt.seen:  # a SIGINT whose KeyboardInterrupt an extension module's import swallowed
            raise KeyboardInterrupt
        code = main()
    except KeyboardInterrupt:
        code = _interrupt.stop()
    except Exception as err:
        if not _interrupt.wrapped(err):  # a KeyboardInterrupt wrapped by CPython (__set_name__ at import)
            raise
        code = _interrupt.stop()
    except SystemExit as stop:  # argparse: --help, a usage error
        code = stop.code
        raise
    finally:
        _interrupt.finishing(code)
    return code


if __name__ == "__main__":
    raise SystemExit(run())
