"""``--set PATH=VALUE``: reading VALUE with the same limits as every YAML file hetsim reads.

A VALUE is an int, else a finite float (``1e-3``), else YAML (``true``, ``[Conv, Gemm]``, ``'25'`` for the
string), parsed by :func:`hetsim.platform.load_yaml_text` so an alias bomb, a value nested thousands deep or a
value longer than a YAML file may be is refused in one line instead of hanging or overflowing the stack.

Limits (ours): a VALUE is at most :data:`SET_MAX_CHARS` characters; an integer is at most
:data:`SET_MAX_INT` in magnitude (the largest signed 64-bit integer: every count and size a platform field
holds fits, and NumPy and the solvers hetsim hands them to take no more).
"""

from __future__ import annotations

import math

from hetsim.errors import InputError

#: longest ``--set`` VALUE, in characters (a platform field's value is a number, a name or a short list)
SET_MAX_CHARS = 10_000
#: largest magnitude of an integer ``--set`` VALUE (2**63 - 1)
SET_MAX_INT = 2**63 - 1


def _bounded_int(v: int, text: str, where: str) -> int:
    if abs(v) > SET_MAX_INT:
        digits = len(str(abs(v))) if abs(v) < 10**4000 else len(text)
        raise InputError(f"{where}: an integer of {digits} digits is too large; hetsim takes integers up to "
                         f"{SET_MAX_INT} (2**63 - 1)")
    return v


def _bounded(value, text: str, where: str):
    """``value`` with every integer inside it checked against :data:`SET_MAX_INT` (iteratively: the guarded
    loader already bounds the nesting)."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, bool):
            continue
        if isinstance(v, int):
            _bounded_int(v, text, where)
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return value


def parse_set_value(text: str, where: str = "--set"):
    """One ``--set`` VALUE as Python: an int, else a finite float, else YAML; an empty VALUE is ``""``.

    Args:
        text: the VALUE (already stripped of surrounding spaces).
        where: how the error message names the argument.

    Raises:
        InputError: VALUE is longer than :data:`SET_MAX_CHARS`, holds an integer past :data:`SET_MAX_INT`, is
            not valid YAML, or is past a limit of the guarded YAML loader (aliases, size, nesting depth).
    """
    import yaml

    from hetsim.platform import YamlLimitError, load_yaml_text

    if len(text) > SET_MAX_CHARS:
        raise InputError(f"{where}: a value of {len(text)} characters; hetsim takes values of at most "
                         f"{SET_MAX_CHARS}")
    try:
        v = int(text)
    except ValueError:
        pass
    else:
        return _bounded_int(v, text, where)
    try:
        f = float(text)
    except ValueError:
        pass
    else:
        if math.isfinite(f):
            return f
    if not text.strip():
        return ""
    try:
        value = load_yaml_text(text)
    except YamlLimitError as err:
        raise InputError(f"{where}: value {_short(text)} refused: {err.problem}") from None
    except yaml.YAMLError as err:
        raise InputError(f"{where}: value {_short(text)} is not valid YAML: {getattr(err, 'problem', err)}") \
            from None
    return _bounded(value, text, where)


def _short(text: str) -> str:
    return repr(text) if len(text) <= 60 else repr(text[:57] + "...")


def parse_overrides(items: list[str] | None) -> dict[str, object]:
    """``--set PATH=VALUE`` arguments as :meth:`~hetsim.platform.Platform.with_overrides` takes them (a later
    PATH wins).

    Raises:
        InputError: an item without ``=`` or with an empty PATH, or a VALUE :func:`parse_set_value` refuses.
    """
    out: dict[str, object] = {}
    for item in items or ():
        path, eq, text = item.partition("=")
        path = path.strip()
        if not eq or not path:
            raise InputError(f"--set {_short(item)}: expected PATH=VALUE, e.g. --set devices.cim.crossbars=25")
        out[path] = parse_set_value(text.strip())
    return out
