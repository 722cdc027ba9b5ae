"""The ``hetsim`` command's warnings: one ``hetsim: warning: ...`` line each, not Python's two-line default.

Python prints a warning as ``/path/to/hetsim/cli.py:922: UserWarning: message`` followed by the source line that
triggered it: two lines of hetsim's internals before the one line the user needs (and before a ``hetsim:
error:`` line that may follow). :func:`one_line_warnings` shows each warning as ``hetsim: warning: message``
while a command runs, and restores Python's handler afterwards (the Python API keeps the default).
"""

from __future__ import annotations

import contextlib
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager


def _show(message, category, filename, lineno, file=None, line=None) -> None:
    out = file if file is not None else sys.stderr
    if out is None:
        return
    kind = "" if category in (UserWarning, RuntimeWarning) else f" ({category.__name__})"
    text = " ".join(str(message).split())
    with contextlib.suppress(OSError, ValueError):  # a closed stderr: nothing to tell
        out.write(f"hetsim: warning{kind}: {text}\n")


@contextmanager
def one_line_warnings() -> Iterator[None]:
    """Within the block, warnings print as one ``hetsim: warning:`` line (module docstring)."""
    saved = warnings.showwarning
    warnings.showwarning = _show
    try:
        yield
    finally:
        if warnings.showwarning is _show:
            warnings.showwarning = saved
