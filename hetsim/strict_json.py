"""Reading JSON a user hands hetsim (a saved ``schedule.json``) strictly: standard JSON only, bounded nesting.

Python's :func:`json.loads` accepts ``NaN``, ``Infinity`` and ``-Infinity`` (not JSON: RFC 8259 has no such
values, and strict readers such as JavaScript's ``JSON.parse`` refuse them), reads ``1e999`` as infinity, and
recurses once per nesting level (a file nested a few thousand levels deep ends in ``RecursionError``).
:func:`loads_strict` refuses all of these in one line.

The depth limit is ours: :data:`JSON_MAX_DEPTH` levels, like the YAML limit of :mod:`hetsim.platform` (a
schedule nests four levels: ``parts`` -> op -> list -> part).
"""

from __future__ import annotations

import json
import math

from hetsim.errors import InputError

#: deepest nesting of arrays and objects hetsim reads from a JSON file
JSON_MAX_DEPTH = 64


def _no_constant(name: str):
    raise ValueError(f"{name} is not a JSON number (JSON has no NaN or infinity)")


def _finite_float(text: str) -> float:
    v = float(text)
    if not math.isfinite(v):
        raise ValueError(f"the number {text[:40]} is too large for a double")
    return v


def _depth(value) -> int:
    """Nesting depth of a parsed JSON value, without recursion."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            deepest = max(deepest, d)
            stack.extend((x, d + 1) for x in v.values())
        elif isinstance(v, list):
            deepest = max(deepest, d)
            stack.extend((x, d + 1) for x in v)
    return deepest


def loads_strict(text: str | bytes, what: str, error: type[InputError] = InputError):
    """Parse standard JSON: no ``NaN``/``Infinity``, no number past a double's range, at most
    :data:`JSON_MAX_DEPTH` levels of nesting.

    Args:
        text: the document.
        what: how the message names it (``"schedule"``).
        error: the :class:`~hetsim.errors.InputError` subclass raised.

    Raises:
        error: not JSON (with the line and column), a non-finite number, or nested too deep.
    """
    try:
        value = json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)
    except json.JSONDecodeError as err:
        raise error(f"{what} is not JSON: {err}") from None
    except RecursionError:
        raise error(f"{what} is nested too deep (hetsim reads JSON of at most {JSON_MAX_DEPTH} levels)") from None
    except ValueError as err:
        raise error(f"{what} is not valid JSON: {err}") from None
    if _depth(value) > JSON_MAX_DEPTH:
        raise error(f"{what} is nested deeper than {JSON_MAX_DEPTH} levels; hetsim reads JSON of at most "
                    f"{JSON_MAX_DEPTH}")
    return value


def finite(value, what: str, error: type[InputError] = InputError) -> float:
    """``float(value)``, refusing NaN, infinities, booleans and what is not a number.

    Raises:
        error: ``value`` is not a finite number.
    """
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise error(f"{what} is {value!r}, not a number")
    try:
        v = float(value)
    except (ValueError, OverflowError):
        raise error(f"{what} is {value!r}, not a number") from None
    if not math.isfinite(v):
        raise error(f"{what} is {value!r}; predicted times must be finite numbers")
    return v
