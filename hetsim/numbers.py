"""The one number format of everything hetsim prints for people: terminal reports, HTML pages and figures.

A column of times or energies keeps one unit, chosen from its values: the engineering prefix (``m``, ``u``,
``n``, ``p``; no kilo, so 1,200 s stays seconds) that puts its largest magnitude in [1, 1000), and one number of
decimals, the one that shows that largest value with :data:`SIG_DIGITS` significant digits (``447.6 ms``,
``92.17 ms``, ``2.45 ms`` in one column). A single value is a column of one. A value that is not zero but rounds
to zero in its column prints as ``<0.01`` (in the column's decimals), never as a measured ``0.00``.

Machine-readable files (CSV, JSON) keep SI base units at full precision; this module only formats text. It
imports nothing of hetsim, so every layer, figures included, uses it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

#: significant digits of a column's largest value (hence 3-4 for the rest of it)
SIG_DIGITS = 4
#: prefixes a column picks from, largest first (``u`` for micro keeps terminal text ASCII; figures may swap it)
PREFIXES = (("", 1.0), ("m", 1e-3), ("u", 1e-6), ("n", 1e-9), ("p", 1e-12))
#: the words for a quantity hetsim does not model (a device without a power figure), never printed as 0
NOT_MODELLED = "not modelled"


def _magnitudes(values: Iterable) -> list[float]:
    """The finite non-zero magnitudes among ``values`` (``None``, NaN, text and booleans skipped)."""
    out = []
    for v in values:
        if v is None or isinstance(v, str | bytes | bool):
            continue
        try:
            x = abs(float(v))
        except (TypeError, ValueError):
            continue
        if math.isfinite(x) and x > 0:
            out.append(x)
    return out


def _decimals(x: float, sig: int) -> int:
    """Decimals that show ``x`` (> 0) with ``sig`` significant digits (none for a value of ``10**sig`` or more)."""
    return max(0, sig - 1 - math.floor(math.log10(x)))


def column_scale(values: Iterable, sig: int = SIG_DIGITS,
                 prefixes: tuple[tuple[str, float], ...] = PREFIXES) -> tuple[str, float, int]:
    """One prefix and one number of decimals for a column of values in a base unit (s, J, W).

    The prefix is the largest of ``prefixes`` under which the largest magnitude is at least 1 (the smallest
    prefix below all of them); the decimals show that magnitude with ``sig`` significant digits, after rounding
    (999.96 us is ``1.000 ms``, 9.9996 ms ``10.00 ms``). A column without a finite non-zero value gets the base
    unit and no decimals.

    Returns:
        ``(prefix, scale, decimals)``: print ``value / scale`` with ``decimals`` decimals and ``prefix + unit``.
    """
    mags = _magnitudes(values)
    if not mags:
        return prefixes[0][0], prefixes[0][1], 0
    hi = max(mags)
    i = next((k for k, (_, f) in enumerate(prefixes) if hi >= f * (1 - 5e-13)), len(prefixes) - 1)
    x = hi / prefixes[i][1]
    dec = _decimals(x, sig)
    if round(x, dec) >= 1000 and i > 0:  # rounding carried into the next prefix up
        i -= 1
        x = hi / prefixes[i][1]
        dec = _decimals(x, sig)
    dec = _decimals(round(x, dec), sig)  # 9.9996 -> 10.00: one decimal fewer
    return prefixes[i][0], prefixes[i][1], dec


def _text(v: float, scale: float, dec: int) -> str:
    if v == 0:  # exactly nothing: no decimals pretending a measurement
        return "0"
    x = v / scale
    text = f"{x:,.{dec}f}"
    if x != 0 and float(text.replace(",", "")) == 0:  # not zero, but below the column's last digit
        tiny = f"{10.0 ** -dec:.{dec}f}"
        return f"<{tiny}" if x > 0 else f">-{tiny}"
    return text


def missing(v) -> bool:
    """``v`` is ``None`` or a float NaN."""
    return v is None or (isinstance(v, float) and math.isnan(v))


def format_column(values: Iterable, unit: str, sig: int = SIG_DIGITS, missing_text: str = "-",
                  prefixes: tuple[tuple[str, float], ...] = PREFIXES, each: bool = False) -> list[str]:
    """``values`` (in ``unit``'s base: ``s``, ``J``, ``W``) as text in one prefixed unit with one number of
    decimals (:func:`column_scale`): ``[0.092165, 0.447604]`` s -> ``["92.2 ms", "447.6 ms"]``; ``each``: the
    prefix shared but each value with ``sig`` significant digits (a list of headline numbers, not a table's
    column: ``["92.17 ms", "447.6 ms"]``). ``missing_text`` for ``None`` and NaN, infinities as ``inf``."""
    vals = list(values)
    prefix, scale, dec = column_scale(vals, sig, prefixes)
    out = []
    for v in vals:
        if missing(v):
            out.append(missing_text)
        elif not math.isfinite(float(v)):
            out.append(f"{float(v):g} {unit}")
        else:
            d = dec
            if each and float(v) != 0:
                d = _decimals(abs(float(f"{float(v) / scale:.{sig - 1}e}")), sig)
            out.append(f"{_text(float(v), scale, d)} {prefix}{unit}")
    return out


def format_value(value, unit: str, sig: int = SIG_DIGITS, missing_text: str = "-",
                 prefixes: tuple[tuple[str, float], ...] = PREFIXES) -> str:
    """One value as a column of one (:func:`format_column`): ``0.092165`` s -> ``92.17 ms``, ``8.0985658`` ms
    -> ``8.099 ms``, ``2.8406175`` s -> ``2.841 s``, ``0`` -> ``0 s``."""
    return format_column([value], unit, sig, missing_text, prefixes)[0]


def format_number(value, sig: int = SIG_DIGITS, missing_text: str = "-") -> str:
    """A plain number (a rate, a count per second) with ``sig`` significant digits, thousands separated, no
    exponent: ``13.3333`` -> ``13.33``, ``1234.56`` -> ``1,235``, a whole number as it is (``30``)."""
    if missing(value):
        return missing_text
    x = float(value)
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    if x == round(x) and abs(x) < 1e15:
        return f"{int(round(x)):,}"
    return f"{x:,.{_decimals(abs(float(f'{x:.{sig - 1}e}')), sig)}f}"
