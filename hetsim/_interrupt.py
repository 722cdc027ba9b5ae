"""The ``hetsim`` command's SIGINT handling: Python's, plus a record that the signal arrived, and an exit
without a traceback at every moment of the command (:mod:`hetsim.__main__`).

Python's own handler raises ``KeyboardInterrupt`` in the main thread; when that happens inside an extension
module's initialisation (hetsim imports onnx, pandas, OR-Tools, ... on first use), the module may clear the
error and the interrupt is lost: a sweep interrupted in its first second then ran every point and exited 0.
:func:`handler` raises the same ``KeyboardInterrupt`` and also appends the signal to :data:`seen`, which a long
command checks before its work starts (``hetsim.dse.sweep``). Where Python cannot raise it (a finaliser, a
garbage-collector callback) it reports it as an "Exception ignored" traceback: :func:`install` keeps those
quiet for a ``KeyboardInterrupt`` (it is in :data:`seen`). Once the command is done, :func:`finishing` makes
SIGINT end the process at once (the interpreter's shutdown would print a ``KeyboardInterrupt`` raised in an exit
handler).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys

#: signals received by :func:`handler` in this process
seen: list[int] = []
#: the "hetsim: " line printed for an interrupt (one per process)
LINE = "hetsim: interrupted"
_told: list[bool] = []


def handler(signum: int, _frame) -> None:
    seen.append(signum)
    raise KeyboardInterrupt


def wrapped(err: BaseException | None) -> bool:
    """True when a ``KeyboardInterrupt`` is in ``err``'s chain of causes: CPython wraps an exception raised in a
    descriptor's ``__set_name__`` (pydantic's, while a device class is built at import) in a ``RuntimeError``, so
    a Ctrl-C in that instant arrives as another exception (seen in tests/test_sweep_signals.py)."""
    seen = set()
    while err is not None and id(err) not in seen:
        if isinstance(err, KeyboardInterrupt):
            return True
        seen.add(id(err))
        err = err.__cause__
    return False


def _unraisable(hook):
    def quiet(info) -> None:
        if not isinstance(info.exc_value, KeyboardInterrupt):
            hook(info)

    return quiet


def _held(signum: int, _frame) -> None:
    seen.append(signum)


def started_as_command() -> bool:
    """Whether this process is the ``hetsim`` command: ``python -m hetsim`` (while Python locates the module,
    ``sys.argv[0]`` is ``-m`` and ``sys.orig_argv`` names it) or the ``hetsim`` script."""
    argv0 = (getattr(sys, "argv", None) or [""])[0]
    if argv0 == "-m":
        orig = list(getattr(sys, "orig_argv", []))
        at = orig.index("-m") + 1 if "-m" in orig else len(orig)
        return orig[at:at + 1] in (["hetsim"], ["hetsim.__main__"])
    name = os.path.basename(argv0).lower()
    return name in ("hetsim", "hetsim.exe", "hetsim-script.py")


def hold() -> bool:
    """In the ``hetsim`` command (:func:`started_as_command`), from the first line of ``hetsim/__init__.py``:
    SIGINT is recorded in :data:`seen` and not raised until :func:`install` (called by
    :func:`hetsim.__main__.run`, which then stops with one line): Python's handler would raise it in the middle of
    the imports before ``run`` can catch it, printing a traceback. Returns whether it held (else nothing
    changed)."""
    if started_as_command() and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _held)
        return True
    return False


def install() -> None:
    """Use :func:`handler` for SIGINT, unless SIGINT is ignored (a background job) or handled by someone else
    (:func:`hold`'s is replaced: the caller checks :data:`seen`); an interrupt Python cannot raise (in a
    finaliser) is then not printed (``sys.unraisablehook``)."""
    if signal.getsignal(signal.SIGINT) in (signal.default_int_handler, _held):
        signal.signal(signal.SIGINT, handler)
        sys.unraisablehook = _unraisable(sys.unraisablehook)


def stop() -> int:
    """The command is ending on an interrupt: a further SIGINT no longer raises (it ends the process at once,
    :func:`finishing`); print :data:`LINE` (once per process). Returns 130, the shell's code for SIGINT."""
    _quiet_exit(None)
    _say_once()
    return 130


def finishing(code: object) -> None:
    """The command has returned ``code`` (130: it printed its line for an interrupt): let SIGINT end the process
    at once (exit 130, with :data:`LINE` unless a line was printed) rather than raise in the interpreter's shutdown
    (exit handlers joining threads and worker processes), then flush the command's output."""
    _quiet_exit(130 if code == 130 else None)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            stream.flush()


def _say_once() -> None:
    """Print :data:`LINE` unless printed already, SIGINT held meanwhile (the late handler then finds it said)."""
    held = hasattr(signal, "pthread_sigmask")
    if held:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        if not _told:
            _told.append(True)
            print(LINE, file=sys.stderr, flush=True)
    finally:
        if held:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _late(signum: int, _frame) -> None:
    """SIGINT once the command is ending: exit 130 at once, printing :data:`LINE` if no line was printed."""
    seen.append(signum)
    if not _told:
        os.write(2, (LINE + "\n").encode())
    os._exit(130)


def _quiet_exit(code: int | None) -> None:
    """Install :func:`_late` for SIGINT where :func:`install` put :func:`handler` (a SIGINT ignored or handled
    by someone else is left alone); ``code`` 130: a line was printed for the interrupt already."""
    if code == 130:
        _told.append(True)
    if signal.getsignal(signal.SIGINT) in (handler, _late):
        signal.signal(signal.SIGINT, _late)
