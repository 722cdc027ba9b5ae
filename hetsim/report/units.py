"""Units read from field and column names: the one parser of hetsim's tables, HTML reports and figures.

hetsim's config fields and result columns carry their unit in their name (``t_mvm_ns``, ``bandwidth_gb_s``,
``sram_kib``, ``clock_mhz``, ``energy_pj_per_byte``, ``makespan_s``). :func:`field_unit` splits such a name
into the quantity and its unit, matching the longest known suffix first, so ``links.bus.bandwidth_gb_s`` is a
bandwidth in GB/s (not a ``bandwidth_gb`` in seconds) and ``sram_kib`` is KiB (not a ``sram_ki`` in bytes).

A unit has its symbol as written (``GB/s``), the SI base it is a multiple of (``B/s``) and the factor between
them (1e9); :func:`rescalable` says whether a report may show the column in another SI prefix (the base units
``s``, ``J``, ``W``: a ``makespan_s`` column becomes ``makespan (ms)``). Other units are shown as written, so
a swept parameter keeps the values of the sweep file (``t_mvm (ns)``: 50, 100, 500).

Binary prefixes (KiB, MiB) are powers of 1024; decimal byte prefixes (kB, MB, GB) powers of 1000, as
hetsim's YAML files state (``GB/s = 1e9 bytes/s``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Unit:
    """A unit read from a name: ``symbol`` as shown (``"GB/s"``), ``base`` the SI unit it is a multiple of
    (``"B/s"``) and ``to_base`` the factor (a value in ``symbol`` times ``to_base`` is in ``base``)."""

    symbol: str
    base: str
    to_base: float


@dataclass(frozen=True)
class FieldUnit:
    """A name split into its quantity (``stem``, the name without the unit suffix, dotted path kept) and its
    unit (``None``: no unit in the name)."""

    name: str
    stem: str
    unit: Unit | None

    def label(self, symbol: str | None = None) -> str:
        """``stem (symbol)``, e.g. ``links.bus.bandwidth (GB/s)``; ``symbol`` replaces the unit's own (a
        rescaled column: ``makespan (ms)``); the bare name without a unit."""
        if self.unit is None:
            return self.name
        return f"{self.stem} ({symbol if symbol is not None else self.unit.symbol})"


_SI = {"": 1.0, "k": 1e3, "m": 1e-3, "u": 1e-6, "n": 1e-9, "p": 1e-12, "M": 1e6, "G": 1e9}
_SHOWN = {"u": "\u00b5"}


def _prefixed(base: str, prefixes: str) -> dict[str, Unit]:
    """``{suffix: Unit}`` for ``base`` alone and with each SI prefix in ``prefixes`` (``"mun"``: milli, micro,
    nano; ``u`` is micro, shown as the micro sign)."""
    return {f"_{(p + base).lower()}": Unit(_SHOWN.get(p, p) + base, base, _SI[p]) for p in ["", *prefixes]}


# suffix (lower case, with its leading underscore) -> Unit; compound units are listed, the longest suffix wins
_UNITS: dict[str, Unit] = {
    **_prefixed("s", "munp"),
    **_prefixed("J", "munp"),
    **_prefixed("W", "mun"),
    **_prefixed("Hz", "kMG"),
    "_gb_s": Unit("GB/s", "B/s", 1e9), "_mb_s": Unit("MB/s", "B/s", 1e6), "_kb_s": Unit("kB/s", "B/s", 1e3),
    "_b_s": Unit("B/s", "B/s", 1.0), "_bytes_s": Unit("B/s", "B/s", 1.0),
    "_bytes": Unit("B", "B", 1.0), "_b": Unit("B", "B", 1.0),
    "_kib": Unit("KiB", "B", 1024.0), "_mib": Unit("MiB", "B", 1024.0**2), "_gib": Unit("GiB", "B", 1024.0**3),
    "_kb": Unit("kB", "B", 1e3), "_mb": Unit("MB", "B", 1e6), "_gb": Unit("GB", "B", 1e9),
    "_bits": Unit("bit", "bit", 1.0),
    "_cycles": Unit("cycles", "cycles", 1.0),
    "_pj_per_byte": Unit("pJ/B", "J/B", 1e-12), "_pj_per_bit": Unit("pJ/bit", "J/bit", 1e-12),
    "_pj_per_mac": Unit("pJ/MAC", "J/MAC", 1e-12), "_nj_per_byte": Unit("nJ/B", "J/B", 1e-9),
    "_bytes_per_cycle": Unit("B/cycle", "B/cycle", 1.0), "_per_cycle": Unit("per cycle", "per cycle", 1.0),
    "_per_t": Unit("per timestep", "per timestep", 1.0),
    "_pct": Unit("%", "1", 0.01),
}
_SUFFIXES = sorted(_UNITS, key=len, reverse=True)
#: base units a report may show in another SI prefix (:func:`rescalable`)
RESCALABLE = frozenset({"s", "J", "W"})


def field_unit(name: str) -> FieldUnit:
    """The quantity and unit of a field or column name, by its unit suffix (the longest known one; case is
    ignored): ``links.bus.bandwidth_gb_s`` -> ``links.bus.bandwidth`` in GB/s, ``devices.cim.t_mvm_ns`` ->
    ns, ``makespan_s`` -> s, ``sram_kib`` -> KiB, ``clock_mhz`` -> MHz, ``energy_pj_per_byte`` -> pJ/B.
    A name without one (``crossbars``, ``speedup``) has ``unit`` None; so has a name that is only a suffix
    (``s``)."""
    low = name.lower()
    for suf in _SUFFIXES:
        if low.endswith(suf) and len(low) > len(suf) and low[-len(suf) - 1] not in "._":
            return FieldUnit(name, name[: -len(suf)], _UNITS[suf])
    return FieldUnit(name, name, None)


def rescalable(unit: Unit | None) -> bool:
    """Whether a column in ``unit`` may be shown in another SI prefix (an SI base unit: s, J, W)."""
    return unit is not None and unit.symbol == unit.base and unit.base in RESCALABLE


PREFIXES = ((1.0, ""), (1e-3, "m"), (1e-6, "\u00b5"), (1e-9, "n"), (1e-12, "p"))
"""The prefixes a report picks from for a rescalable column, largest first (no kilo: 1,200 s stays seconds)."""


def si_prefix(values: Iterable) -> tuple[float, str]:
    """The SI prefix ``(scale, symbol)`` in which the largest absolute finite value of ``values`` lies in
    [1, 1000) (``(1.0, "")`` for values of 1 and more, or none; pico at the smallest). Non-numbers are skipped."""
    top = 0.0
    for v in values:
        if isinstance(v, str | bytes | bool) or v is None:
            continue
        try:
            x = abs(float(v))
        except (TypeError, ValueError):
            continue
        if math.isfinite(x):
            top = max(top, x)
    if top == 0:
        return 1.0, ""
    for scale, sym in PREFIXES:
        if top >= scale * (1 - 1e-12):
            return scale, sym
    return PREFIXES[-1]


def axis_label(name: str, symbol: str | None = None) -> str:
    """A short figure label of a sweep column: the collection of a dotted platform path dropped and the rest
    joined by spaces (``devices.cim.t_mvm_ns`` -> ``cim t_mvm (ns)``, ``links.bus.bandwidth_gb_s`` -> ``bus
    bandwidth (GB/s)``); ``speedup`` -> ``speed-up (x)``; ``symbol`` replaces the unit's (a rescaled one)."""
    if name == "speedup":
        return "speed-up (x)"
    fu = field_unit(name)
    parts = fu.stem.split(".")
    if len(parts) > 2 and parts[0] in ("devices", "links", "memories"):
        parts = parts[1:]
    stem = " ".join(parts)
    if fu.unit is None:
        return stem
    return f"{stem} ({symbol if symbol is not None else fu.unit.symbol})"


def value_text(name: str, value) -> str:
    """One value of column ``name`` with its unit, for a legend or a panel title: ``10.24 GB/s``, ``50 ns``,
    ``100`` (no unit), a text as it is (a model file's ``.onnx`` dropped)."""
    if isinstance(value, str):
        return value.removesuffix(".onnx")
    try:
        x = float(value)
    except (TypeError, ValueError):
        return str(value)
    if not math.isfinite(x):
        return str(value)
    unit = field_unit(name).unit
    num = f"{x:g}"
    return f"{num} {unit.symbol}" if unit is not None and unit.symbol not in ("1",) else num


#: engineering prefixes of :func:`eng`, largest first (``u`` for micro keeps the text ASCII, as the terminal report)
ENG_PREFIXES = (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3), ("", 1.0), ("m", 1e-3), ("u", 1e-6),
                ("n", 1e-9), ("p", 1e-12))


def eng(value: float | None, unit: str, sig: int = 4) -> str:
    """``value`` (in ``unit``'s base: Hz, W, B/s, MAC/s) with the engineering prefix that puts it in [1, 1000) and
    ``sig`` significant digits, trailing zeros dropped: ``eng(2.56e11, "MAC/s")`` -> ``256 GMAC/s``,
    ``eng(0.019305, "W")`` -> ``19.31 mW``; ``"-"`` for ``None``, ``0 W`` for 0, ``inf``/``nan`` as they are."""
    if value is None:
        return "-"
    v = float(value)
    if v == 0 or not math.isfinite(v):
        return f"{v:g} {unit}"
    mag = abs(v)
    prefix, scale = next(((p, f) for p, f in ENG_PREFIXES if mag >= f * (1 - 5e-13)), ENG_PREFIXES[-1])
    x = v / scale
    digits = max(0, sig - 1 - math.floor(math.log10(abs(x)))) if x else 0
    text = f"{x:.{digits}f}"
    if abs(float(text)) >= 1000 and prefix != ENG_PREFIXES[0][0]:  # 999.96 rounded up: 1 of the next prefix
        return eng(math.copysign(1000 * scale, v), unit, sig)
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return f"{text} {prefix}{unit}"
