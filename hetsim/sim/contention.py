"""The contention kinds a replay can model, and their parsing from the command line or the Python API.

Kept apart from the engine so that naming them (``hetsim --help``) imports neither SimPy nor pandas.
"""

from __future__ import annotations

from collections.abc import Iterable

from hetsim.errors import InputError

#: ``links``: a link carries one transfer at a time; the others are declared by the device kinds that model them
#: (``DeviceBase.contention``; the built-in PUMA kind's ``cim-bus``: one load/store phase at a time on its
#: internal bus, ``cim-cores``: a core issues one MVM stream at a time); ``memory``: a memory's port serves one
#: weight read of a streamed or reprogrammed op at a time (:mod:`hetsim.sim.weights`). Spelled out here for
#: ``hetsim --help`` without importing the device kinds; :func:`contention_kinds` asks them (a test keeps the
#: two equal).
CONTENTION_KINDS = ("links", "cim-bus", "cim-cores", "memory")


def contention_kinds() -> tuple[str, ...]:
    """``links`` and every contention kind a registered device kind declares (``DeviceBase.contention``), in
    registration order."""
    from hetsim.devices import DEVICE_KINDS

    out = ["links"]
    for cls in DEVICE_KINDS.values():
        out += [k for k in cls.contention if k not in out]
    return (*out, "memory")


def parse_contention(spec: str | Iterable[str] | None) -> frozenset[str]:
    """``"links,cim-bus"`` -> ``{"links", "cim-bus"}``; ``"all"``/``"none"`` accepted; so is a set, list or
    tuple of kinds (``{"links", "cim-bus"}``, ``[]``), or ``None`` (none).

    Raises:
        InputError: an unknown kind (the message suggests the closest one and lists the allowed ones), or
            'all'/'none' inside a list.
    """
    if spec is None:
        return frozenset()
    if isinstance(spec, str):
        if spec.strip() in ("", "none"):
            return frozenset()
        if spec.strip() == "all":
            return frozenset(contention_kinds())
        kinds = {k.strip() for k in spec.split(",") if k.strip()}
        if not kinds or kinds == {"none"}:
            return frozenset()
    else:
        try:
            kinds = set(spec)
        except TypeError:
            raise InputError(f"contention {spec!r}: give a string ('links,cim-bus', 'all', 'none') or a set of "
                             f"kinds ({', '.join(CONTENTION_KINDS)})") from None
        if any(not isinstance(k, str) for k in kinds):
            raise InputError(f"contention {spec!r}: kinds are strings: {', '.join(CONTENTION_KINDS)}")
        kinds = {k.strip() for k in kinds}
    if kinds & {"all", "none"}:
        raise InputError(f"contention {spec!r}: 'all' and 'none' stand alone, not in a list")
    known = contention_kinds()
    bad = kinds - set(known)
    if bad:
        import difflib

        k = sorted(bad)[0]
        close = difflib.get_close_matches(k, known, n=1)
        allowed = f"{', '.join(known)}, all, none"
        raise InputError(f"unknown contention kind {k!r}; did you mean {close[0]!r}? Allowed: {allowed}" if close
                         else f"unknown contention kind {k!r}; allowed: {allowed}")
    return frozenset(kinds)
