"""Lane layout of a replay trace, shared by the Chrome trace export and the Gantt chart.

A device (or link) may run several ops at once: a PUMA accelerator runs ops placed on different crossbars in
parallel, a multi-core CPU runs one op per core, an uncontended link carries transfers side by side. To draw
them without overlap every op gets a *lane* (a row inside its device's group). An op's busy intervals (its
CIM ``load``/``mvm``/``store`` phases, or its single compute/transfer row) stay on one lane, so a lane shows an
op's phases end to end.

Device order for display: the host first, then the other compute devices (accelerators), then the links.

Track names (:func:`lane_names`): a lane is a real unit where the device has units - ``core k`` on a host CPU
(a serial device of ``cores`` units: the greedy lanes never outnumber its cores, so they are a valid core
assignment), ``unit k`` on another serial device of several units; ``ops`` or ``transfers`` when the device or
link never runs two at once; ``lane k`` only where ops overlap on a device that is not serial (a PUMA CIM: each
op owns its crossbars) or transfers overlap on a link (no link contention modelled), with a note saying so.
"""

from __future__ import annotations

import heapq
from collections.abc import Collection
from dataclasses import dataclass

import pandas as pd

HOST, ACCELERATOR, LINK = 0, 1, 2
"""Display classes of :func:`device_classes`, in display order."""

DEFAULT_TOL_S = 1e-12
"""Two intervals that overlap by at most this much (seconds) are treated as touching, not overlapping."""


def assign_lanes(trace: pd.DataFrame, tol_s: float = DEFAULT_TOL_S) -> pd.Series:
    """Greedy interval-lane assignment, per device.

    Every ``(device, op)`` pair becomes one interval ``[min start_s, max end_s]`` (so all phases of an op land
    on the same lane, even with gaps between them). Intervals are taken in order of start time (ties: first
    appearance in ``trace``) and each goes to the lowest-numbered lane of its device that is
    free at its start (a lane is free once its previous interval has ended, ``end <= start + tol_s``). Taken in
    start order, this uses exactly as many lanes as the largest number of ops overlapping in time on the
    device, which is the fewest possible.

    Args:
        trace: a :class:`~hetsim.sim.engine.SimResult` trace (columns ``op``, ``device``, ``start_s``,
            ``end_s``; times in seconds).
        tol_s: overlap tolerance, seconds.

    Returns:
        Integer lane (0-based, per device) for every row of ``trace``, indexed like ``trace``.
    """
    if len(trace) == 0:
        return pd.Series([], index=trace.index, dtype="int64")
    spans = (
        trace.assign(_pos=range(len(trace)))
        .groupby(["device", "op"], sort=False)
        .agg(start=("start_s", "min"), end=("end_s", "max"), pos=("_pos", "min"))
        .reset_index()
    )
    lane_of: dict[tuple[str, str], int] = {}
    for device, grp in spans.groupby("device", sort=False):
        grp = grp.sort_values(["start", "pos"], kind="stable")
        busy: list[tuple[float, int]] = []  # (end, lane) of lanes in use
        free: list[int] = []  # lanes free again, smallest first
        n_lanes = 0
        for op, start, end in zip(grp["op"], grp["start"], grp["end"], strict=True):
            while busy and busy[0][0] <= start + tol_s:
                heapq.heappush(free, heapq.heappop(busy)[1])
            if free:
                lane = heapq.heappop(free)
            else:
                lane = n_lanes
                n_lanes += 1
            heapq.heappush(busy, (end, lane))
            lane_of[(device, op)] = lane
    lanes = [lane_of[(d, o)] for d, o in zip(trace["device"], trace["op"], strict=True)]
    return pd.Series(lanes, index=trace.index, dtype="int64")


def lane_counts(trace: pd.DataFrame, lanes: pd.Series) -> dict[str, int]:
    """Number of lanes used per device: ``device -> 1 + max lane``."""
    if len(trace) == 0:
        return {}
    return {str(d): int(n) + 1 for d, n in lanes.groupby(trace["device"], sort=False).max().items()}


def _hosts(host: str | Collection[str] | None) -> frozenset[str] | None:
    if host is None:
        return None
    return frozenset({host} if isinstance(host, str) else (str(h) for h in host))


def device_classes(trace: pd.DataFrame, host: str | Collection[str] | None = None) -> dict[str, int]:
    """Display class of every device/link in ``trace``: :data:`HOST`, :data:`ACCELERATOR` or :data:`LINK`.

    A device with only ``transfer`` rows is a link. The host is ``host`` if given (a name, or several names
    when one trace holds several runs, e.g. an SNN's ``"m33 (async)"`` and ``"m33 (blocking)"``), else a device
    literally named ``"host"``, else every compute device with no phase rows (CPU-like: a guess, pass
    ``host`` where the platform is known). Other compute devices are accelerators.
    """
    classes: dict[str, int] = {}
    if len(trace) == 0:
        return classes
    names = list(dict.fromkeys(str(d) for d in trace["device"]))
    is_link = (trace["kind"] == "transfer").groupby(trace["device"]).all()
    phased = (trace["phase"].fillna("").astype(str) != "").groupby(trace["device"]).any()
    compute = [d for d in names if not is_link[d]]
    hosts = _hosts(host)
    if hosts is None and "host" in compute:
        hosts = frozenset({"host"})
    for d in names:
        if is_link[d]:
            classes[d] = LINK
        elif hosts is not None:
            classes[d] = HOST if d in hosts else ACCELERATOR
        else:
            classes[d] = ACCELERATOR if phased[d] else HOST
    return classes


def device_order(trace: pd.DataFrame, host: str | Collection[str] | None = None) -> list[str]:
    """Devices/links of ``trace`` in display order: host, accelerators, links; by name within a class."""
    classes = device_classes(trace, host)
    return sorted(classes, key=lambda d: (classes[d], d))


@dataclass(frozen=True)
class Tracks:
    """The thread (track) names of one device or link and what they mean.

    Attributes:
        names: one name per lane, lane 0 first (``core 0``, ``lane 3``, ``ops``, ``transfers``).
        unit: what a lane is: ``core``, ``unit``, ``lane`` (ops or transfers that overlap in time), or ``""``
            (a single track: nothing ran at once).
        note: one sentence for a reader of the trace (empty when the names say it all).
    """

    names: tuple[str, ...]
    unit: str
    note: str = ""


def lane_names(n_lanes: int, role: int, *, serial: bool | None = None, units: int | None = None,
               can_host: bool = False) -> Tracks:
    """Names for the ``n_lanes`` lanes of one device or link (see the module docstring).

    Args:
        n_lanes: lanes the device uses (:func:`lane_counts`).
        role: :data:`HOST`, :data:`ACCELERATOR` or :data:`LINK` (:func:`device_classes`).
        serial: the device runs one op per unit at a time (:attr:`hetsim.devices.base.DeviceBase.serial`);
            ``None`` when unknown (a trace without its platform).
        units: the device's units (a CPU's cores), when known.
        can_host: the device is CPU-like (:attr:`hetsim.devices.base.DeviceBase.can_host`): its units are cores.
    """
    n = max(int(n_lanes), 0)
    if role == LINK:
        if n <= 1:
            return Tracks(("transfers",) * n, "")
        return Tracks(tuple(f"lane {i}" for i in range(n)), "lane",
                      f"transfers in flight at once share the link (no link contention modelled): up to {n}")
    if serial:
        if can_host or (role == HOST and units is not None and units > 1):
            return Tracks(tuple(f"core {i}" for i in range(n)), "core",
                          f"{units} cores, an op runs on one; cores taken lowest free first" if units and units > 1
                          else "")
        if units is not None and units > 1:
            return Tracks(tuple(f"unit {i}" for i in range(n)), "unit",
                          f"{units} units, an op runs on one; units taken lowest free first")
        return Tracks(("ops",) * n, "")
    if n <= 1:
        return Tracks(("ops",) * n, "")
    if serial is None:
        return Tracks(tuple(f"lane {i}" for i in range(n)), "lane", f"up to {n} ops ran at once: one lane each")
    return Tracks(tuple(f"lane {i}" for i in range(n)), "lane",
                  f"ops run at the same time (each holds its own resources, e.g. its crossbars): up to {n} at "
                  "once, one lane each, lowest free lane first")
