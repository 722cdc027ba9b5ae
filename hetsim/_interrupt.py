"""The ``hetsim`` command's SIGINT handler: Python's, plus a record that the signal arrived.

Python's own handler raises ``KeyboardInterrupt`` in the main thread; when that happens inside an extension
module's initialisation (hetsim imports onnx, pandas, OR-Tools, ... on first use), the module may clear the
error and the interrupt is lost: a sweep interrupted in its first second then ran every point and exited 0.
:func:`handler` raises the same ``KeyboardInterrupt`` and also appends the signal to :data:`seen`, which a long
command checks before its work starts (``hetsim.dse.sweep``).
"""

from __future__ import annotations

import signal

#: signals received by :func:`handler` in this process
seen: list[int] = []


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


def install() -> None:
    """Use :func:`handler` for SIGINT, unless SIGINT is ignored (a background job) or handled by someone else."""
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, handler)
