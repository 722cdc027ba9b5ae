"""Error types.

Every problem with what the user gave hetsim (a path, a YAML file, an ONNX model, a mapping request) is raised
as a subclass of :class:`InputError`; the CLI prints its message on one line and exits with code 2. Anything
else is a bug in hetsim and keeps its traceback (shown with ``--debug``).
"""

from __future__ import annotations


class HetsimError(Exception):
    """Base class of every error hetsim raises on purpose."""


class InputError(HetsimError):
    """Bad user input: missing file, malformed config or model, impossible request. CLI exit code 2."""


class WorkloadError(InputError):
    """An ONNX model that cannot be turned into an operator DAG (not ONNX, cyclic, no static shapes, ...)."""


class PlatformError(InputError):
    """A platform YAML file that is missing, malformed, or fails validation."""


class UnsupportedOpError(InputError):
    """An operator that no device of the platform can execute."""


class MappingError(InputError):
    """A mapper cannot produce a schedule for this workload and platform (e.g. an infeasible constraint)."""


class ScheduleError(InputError):
    """A schedule that does not fit the workload or platform it is replayed on."""


class OutputExistsError(InputError):
    """An output file already exists and ``--force`` was not given."""


class InternalError(RuntimeError):
    """hetsim's own result is inconsistent (e.g. a mapper built an order that contradicts the data dependencies):
    a bug in hetsim or in a plug-in mapper, never the user's input. Not an :class:`InputError`: the CLI reports
    it as an internal error (exit code 1) so that it is reported rather than worked around."""


def did_you_mean(word: str, choices) -> str:
    """``"; did you mean 'x'?"`` for the closest of ``choices`` to a misspelt ``word`` (``difflib``), else ``""``.
    Case is ignored (``CPSAT`` -> ``cpsat``, ``conv`` -> ``Conv``); among equally close names the first wins."""
    import difflib

    names = [str(c) for c in choices]
    lower: dict[str, str] = {}
    for n in names:
        lower.setdefault(n.lower(), n)
    w = str(word).lower()
    if w in lower:
        return f"; did you mean {lower[w]!r}?"
    close = difflib.get_close_matches(w, list(lower), n=1)
    return f"; did you mean {lower[close[0]]!r}?" if close else ""
