"""Lane layout of a replay trace, shared by the Chrome trace export and the Gantt chart.

A device (or link) may run several ops at once: a PUMA accelerator runs ops placed on different crossbars in
parallel, a multi-core CPU runs one op per core, an uncontended link carries transfers side by side. To draw
them without overlap every op gets a *lane* (a row inside its device's group). An op's busy intervals (its
CIM ``load``/``mvm``/``store`` phases, or its single compute/transfer row) stay on one lane, so a lane shows an
op's phases end to end.

Device order for display: the host first, then the other compute devices (accelerators), then the links.
"""

from __future__ import annotations

import heapq

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


def device_classes(trace: pd.DataFrame, host: str | None = None) -> dict[str, int]:
    """Display class of every device/link in ``trace``: :data:`HOST`, :data:`ACCELERATOR` or :data:`LINK`.

    A device with only ``transfer`` rows is a link. The host is ``host`` if given, else a device literally
    named ``"host"``, else every compute device with no CIM phase rows (CPU-like). Other compute devices are
    accelerators.
    """
    classes: dict[str, int] = {}
    if len(trace) == 0:
        return classes
    names = list(dict.fromkeys(str(d) for d in trace["device"]))
    is_link = (trace["kind"] == "transfer").groupby(trace["device"]).all()
    phased = (trace["phase"].fillna("").astype(str) != "").groupby(trace["device"]).any()
    compute = [d for d in names if not is_link[d]]
    if host is None and "host" in compute:
        host = "host"
    for d in names:
        if is_link[d]:
            classes[d] = LINK
        elif host is not None:
            classes[d] = HOST if d == host else ACCELERATOR
        else:
            classes[d] = ACCELERATOR if phased[d] else HOST
    return classes


def device_order(trace: pd.DataFrame, host: str | None = None) -> list[str]:
    """Devices/links of ``trace`` in display order: host, accelerators, links; by name within a class."""
    classes = device_classes(trace, host)
    return sorted(classes, key=lambda d: (classes[d], d))
