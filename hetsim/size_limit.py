"""A bound on the size of a job that the user may lift for a block: a sweep's points (``--max-points``), a
scenario's simulated ops (``--max-ops``).

The bound in force lives in a :class:`contextvars.ContextVar`, so a block that lifts it (the command line's option,
or ``with`` in Python) changes it for that block and that thread only.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from hetsim.errors import InputError


class SizeLimit:
    """The bound ``default`` on a job's size, named by the command-line ``option`` that lifts it.

    Args:
        name: the context variable's name.
        option: the command-line option that sets it (for the message of a bad value), e.g. ``--max-ops``.
        default: the bound when nothing lifts it.
    """

    def __init__(self, name: str, option: str, default: int):
        self.option = option
        self.default = default
        self._var: ContextVar[int] = ContextVar(name, default=default)

    @contextmanager
    def lifted_to(self, n: int | None) -> Iterator[None]:
        """Within the block, the bound is ``n`` (``None``: the default).

        Raises:
            InputError: ``n`` is not a positive integer.
        """
        if n is None:
            yield
            return
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise InputError(f"{self.option} must be a positive integer, got {n!r}")
        token = self._var.set(n)
        try:
            yield
        finally:
            self._var.reset(token)

    def get(self) -> int:
        """The bound in force."""
        return self._var.get()
