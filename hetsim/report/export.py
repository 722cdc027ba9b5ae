"""The Chrome Trace Event Format export of a replay trace, written atomically (:mod:`hetsim.files`, whose
writers this module also offers under their earlier names here).

The trace export follows the Chrome Trace Event Format (JSON object format, "Trace Event Format" document by
Google), which opens in Perfetto (https://ui.perfetto.dev) and ``chrome://tracing``.
"""

from __future__ import annotations

import contextlib
import gc
import json
import math
import os
from collections.abc import Callable, Collection, Hashable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from hetsim.analysis.lanes import (
    ACCELERATOR,
    HOST,
    LINK,
    assign_lanes,
    device_classes,
    device_order,
    lane_counts,
    lane_names,
)
from hetsim.devices.base import DeviceBase
from hetsim.devices.link import LINK_KIND
from hetsim.files import LOCATION_ERRNOS as LOCATION_ERRNOS
from hetsim.files import OutputPathError as OutputPathError
from hetsim.files import atomic_path as atomic_path
from hetsim.files import atomic_write_bytes as atomic_write_bytes
from hetsim.files import atomic_write_text as atomic_write_text
from hetsim.files import make_dirs as make_dirs
from hetsim.files import output_error as output_error

NS_PER_S = 1_000_000_000
FLOW_CAT = "dataflow"
"""``cat`` of the dataflow arrows (flow events) of :func:`chrome_trace`."""


def _event_name(op: str, phase: str) -> str:
    return f"{op} [{phase}]" if phase else op


def _json_default(obj):
    """``json.dumps`` fallback for numpy scalars/arrays, sets and paths."""
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, set | frozenset):
        return sorted(obj)
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    raise TypeError(f"{type(obj).__name__} is not JSON serialisable")


# --- times ------------------------------------------------------------------------------------------------------


def to_ns(seconds) -> int:
    """Seconds -> whole nanoseconds (rounded to the nearest)."""
    return int(round(float(seconds) * NS_PER_S))


def round_ns(trace: pd.DataFrame, columns: tuple[str, ...] = ("start_s", "end_s")) -> pd.DataFrame:
    """A copy of ``trace`` with its time columns (seconds) rounded to the nanosecond, so that a CSV holds
    ``5.12e-06`` where the replay's float sum was ``5.120000000000001e-06``. Missing columns are skipped."""
    out = trace.copy()
    for c in columns:
        if c in out.columns:
            out[c] = np.round(out[c].astype(float), 9)
    return out


def _us(ns: int) -> float:
    """Whole nanoseconds -> microseconds, a float printed with at most 3 decimals (``5120.001``)."""
    return ns / 1000


# --- dataflow arrows --------------------------------------------------------------------------------------------


def flow_chains(
    keys: Sequence[Hashable],
    devices: Sequence[str],
    start_ns: Sequence[int],
    end_ns: Sequence[int],
    edges: Iterable[tuple[Hashable, Hashable]],
    *,
    transfers: Mapping[tuple[Hashable, Hashable], int] | None = None,
    eligible: Sequence[bool] | None = None,
    name: Callable[[Hashable, Hashable], str] | None = None,
) -> list[tuple[str, list[int]]]:
    """Chains of trace rows for the dataflow arrows: ``[producer, transfer, consumer]`` for an edge whose
    tensor crossed a link, ``[producer, consumer]`` for an edge between different devices that moved nothing
    (shared memory, a channel-split op's parts). Edges within one device get no arrow (the device's program
    order already shows them).

    Args:
        keys: per trace row, the op it belongs to (a transfer row's key is never an edge end).
        devices: per row, its device or link.
        start_ns, end_ns: per row, whole nanoseconds.
        edges: ``(producer key, consumer key)`` pairs, in the order the arrows get their ids.
        transfers: edge -> the row of its transfer.
        eligible: per row, whether an arrow may start or end on it (default: every row); e.g. not on the
            M33's polling rows of a blocking SNN replay.
        name: the arrow's name from its edge (default ``"u->v"``).

    Returns:
        ``(name, rows)`` per arrow. The producer end is the op's last-ending row
        (its ``store`` phase, its longest part), the consumer end its first-starting row (ties: a row on
        another device than the producer's).
    """
    rows_of: dict[Hashable, list[int]] = {}
    for i, k in enumerate(keys):
        if eligible is None or eligible[i]:
            rows_of.setdefault(k, []).append(i)
    transfers = transfers or {}
    chains = []
    for u, v in edges:
        ru, rv = rows_of.get(u), rows_of.get(v)
        if not ru or not rv:
            continue
        p = max(ru, key=lambda i: (end_ns[i], start_ns[i], -i))
        c = min(rv, key=lambda i: (start_ns[i], devices[i] == devices[p], i))
        x = transfers.get((u, v))
        label = name(u, v) if name is not None else f"{u}->{v}"
        if x is not None:
            chains.append((label, [p, x, c]))
        elif devices[p] != devices[c]:
            chains.append((label, [p, c]))
    return chains


def _run_flows(tr: pd.DataFrame, costs, start_ns, end_ns) -> list[tuple[str, list[int]]]:
    """:func:`flow_chains` of a replay of ``costs.workload`` (activation edges only, not parameter edges)."""
    g = costs.workload.graph
    ops = [str(o) for o in tr["op"]]
    devices = [str(d) for d in tr["device"]]
    is_xfer = (tr["kind"] == "transfer").to_numpy()
    by_name: dict[str, list[int]] = {}
    for i in np.flatnonzero(is_xfer):
        by_name.setdefault(ops[i], []).append(int(i))
    edges = [(u, v) for u, v, d in g.edges(data=True) if not d.get("param")]
    transfers = {}
    for u, v in edges:
        rows = by_name.get(f"{u}->{v}")
        if rows is not None and len(rows) == 1:  # an op name holding "->" could make a name ambiguous: no arrow
            transfers[(u, v)] = rows[0]
    keys = [None if x else o for o, x in zip(ops, is_xfer, strict=True)]
    return flow_chains(keys, devices, start_ns, end_ns, edges, transfers=transfers)


# --- event args -------------------------------------------------------------------------------------------------


def _op_args(costs, schedule, op: str, device: str, channels) -> dict:
    """What the workload and the schedule say about one compute row: op type, shapes, MACs, what it occupies
    on its device (crossbars, weight bytes) and where (a PUMA's cores), the channels of a channel-split part."""
    wl = costs.workload
    if op not in wl.graph:
        return {}
    o = wl.op(op)
    a: dict = {"op_type": o.op_type, "input_shapes": [list(x) for x in o.input_shapes],
               "output_shapes": [list(x) for x in o.output_shapes]}
    if o.weight_shape is not None:
        a["weight_shape"] = list(o.weight_shape)
    a["macs"] = int(o.macs)
    a["bits"] = int(o.bits)
    n = None if channels is None or pd.isna(channels) else int(channels)
    if n is not None:
        a["channels"] = n
        if o.gemm is not None:
            a["out_channels"] = int(o.gemm.c_out)
    if device in costs.devices:
        try:
            demand = costs.demand(op, device, n)
        except (ValueError, KeyError):
            demand = {}
        for name, amount in demand.items():
            if amount:
                a[name] = int(amount)
        placed = schedule.placement.get(op) if schedule is not None and n is None else None
        if placed:
            a["placement"] = [[int(c), int(k)] for c, k in placed]
    return a


def _transfer_args(costs, tr: pd.DataFrame, chain: list[int]) -> dict:
    """Producer, consumer, their devices, bytes and tensors of the transfer in ``chain`` (p, x, c)."""
    p, x, c = chain
    u, v = str(tr["op"].iat[p]), str(tr["op"].iat[c])
    du, dv = str(tr["device"].iat[p]), str(tr["device"].iat[c])
    a = {"producer": u, "consumer": v, "src": du, "dst": dv}
    with contextlib.suppress(KeyError, ValueError):
        b = float(costs.transfer_bytes(u, v, du, dv))
        a["bytes"] = int(b) if b.is_integer() else b
    edge = costs.workload.graph.edges.get((u, v), {})
    if edge.get("tensors"):
        a["tensors"] = [str(t) for t in edge["tensors"]]
    return a


# --- the trace --------------------------------------------------------------------------------------------------


def _slice_key(row: int, s: int, e: int, pid: int, tid: int) -> tuple:
    """Sort key of a complete event: time, track, instants (dur 0) first, row."""
    return (s, pid, tid, e > s, row)


def chrome_trace(
    trace: pd.DataFrame,
    meta: dict | None = None,
    *,
    host: str | Collection[str] | None = None,
    costs=None,
    schedule=None,
    devices: Mapping[str, DeviceBase] | None = None,
    args: Sequence[dict] | None = None,
    flows: Iterable[tuple[str, Sequence[int]]] | None = None,
    order: Sequence[str] | None = None,
) -> dict:
    """Convert a replay trace into a Chrome Trace Event Format object (opens in Perfetto and chrome://tracing).

    Layout: one *process* per device or link, ``pid`` 1, 2, ... in display order (host, then the other
    compute devices, then links; :func:`hetsim.analysis.lanes.device_order`), named by a ``process_name``
    metadata event, ordered by ``process_sort_index`` and labelled (``process_labels``) with its role, kind
    and a note on its tracks. Its *threads* are its tracks (:func:`hetsim.analysis.lanes.lane_names`): ``core 0``,
    ``core 1`` on a CPU, ``ops`` on a device that runs one op at a time, ``transfers`` on a link, ``lane k``
    where ops (or transfers) overlap on a device that is not serial (lanes from
    :func:`hetsim.analysis.lanes.assign_lanes`; all phases of an op share its lane). Thread ids are unique over
    the whole trace (Perfetto treats a tid as system-wide) and never equal a pid; ``thread_name`` and
    ``thread_sort_index`` events name and order them.

    Every trace row becomes one complete event (``"ph": "X"``) with ``name`` = the op (``"<op> [<phase>]"``
    for a phase, ``"u->v"`` for a transfer), ``cat`` = the phase if any, else the kind (``compute`` |
    ``transfer``), and ``ts``, ``dur`` in microseconds from times rounded to the nanosecond (at most 3
    decimals; ``dur = end - start`` in whole nanoseconds, so back-to-back phases tile exactly). ``args``:
    ``op``, ``device``, ``kind``, ``phase``, ``track``, ``start_s``/``end_s`` (seconds, to the ns), ``channels``
    for the part of a channel-split op; with ``costs``, for an op also ``op_type``, ``input_shapes``,
    ``output_shapes``, ``weight_shape``, ``macs``, ``bits``, what it occupies on its device (``crossbars``,
    ``weight_memory`` bytes) and ``placement`` (``[core, crossbars]`` pairs of a PUMA op), ``out_channels`` for
    a split part; for a transfer ``producer``, ``consumer``, ``src``, ``dst``, ``bytes`` and ``tensors``.

    Dataflow arrows (:func:`flow_chains`): Trace Event Format flow events, ``"s"`` on the producer's
    last slice, ``"t"`` on the transfer, ``"f"`` with ``"bp": "e"`` on the consumer's first slice, all of one
    arrow sharing ``cat`` ``"dataflow"``, ``name`` ``"u->v"`` and an ``id``. Each flow event sits at the middle
    of the slice it binds to (its *enclosing* slice), so the binding never depends on the order of events
    with equal timestamps (except on slices shorter than 2 ns).

    Args:
        trace: :class:`~hetsim.sim.engine.SimResult` trace (columns ``op``, ``device``, ``kind``, ``phase``,
            ``start_s``, ``end_s``, optionally ``channels``; seconds).
        meta: JSON-able run information stored as ``otherData`` (e.g. workload, platform, mapper,
            makespan); its ``"host"`` key, if present, names the host device.
        host: the host device, or several (one per run in a trace of several runs); default
            ``meta["host"]``, else the platform's host (``costs``), else a device named ``"host"``, else guessed
            (compute devices without phases).
        costs: the :class:`~hetsim.costs.CostModel` of the run: op args, device roles, dataflow arrows.
        schedule: the :class:`~hetsim.schedule.Schedule` replayed (crossbar placement of PUMA ops).
        devices: trace device name -> device config, for the track names (default ``costs.devices``).
        args: per trace row (in order), extra ``args`` to add to its event.
        flows: explicit ``(name, rows)`` arrows (positions in ``trace``; default: from ``costs``).
        order: display order of devices (those it leaves out follow in the default order).

    Returns:
        ``{"traceEvents": [...], "displayTimeUnit": "ns", "otherData": meta or {}}`` with metadata events
        first, then complete and flow events sorted by ``ts``; plain Python types, ready for ``json.dumps``.
    """
    meta = dict(meta) if meta else {}
    if host is None and isinstance(meta.get("host"), str):
        host = meta["host"]
    if host is None and costs is not None:
        host = costs.platform.host
    if devices is None and costs is not None:
        devices = costs.devices
    devices = devices or {}
    events: list[dict] = []
    if not len(trace):
        return {"traceEvents": events, "displayTimeUnit": "ns", "otherData": meta}
    with _gc_paused():  # many small dicts, no cycles: the collector's passes would be most of the time
        tr = trace.reset_index(drop=True)
        start_ns = [to_ns(x) for x in tr["start_s"]]
        end_ns = [max(to_ns(e), s) for e, s in zip(tr["end_s"], start_ns, strict=True)]
        # lanes on the rounded times, so that what the file shows never overlaps on a track
        lanes = assign_lanes(tr.assign(start_s=np.asarray(start_ns, float), end_s=np.asarray(end_ns, float)),
                             tol_s=0).tolist()
        classes = device_classes(tr, host)
        first = [d for d in dict.fromkeys(order or ()) if d in classes]
        order = first + [d for d in device_order(tr, host) if d not in first]
        pid_of = {d: i + 1 for i, d in enumerate(order)}
        tid_of, track_of = _track_events(events, order, classes, lane_counts(tr, pd.Series(lanes)), devices)
        if flows is None:
            flows = _run_flows(tr, costs, start_ns, end_ns) if costs is not None else []
        flows = [(str(name), [int(r) for r in rows]) for name, rows in flows]
        cols = _Rows(tr, start_ns, end_ns, lanes)
        timed = _slice_events(cols, costs, schedule, flows, args, pid_of, tid_of, track_of)
        timed += _flow_events(cols, flows, pid_of, tid_of)
        # Order: by time; at one time and on one track, instants (dur 0) before a slice, so that a viewer that
        # binds a flow event to the slice last opened on its track (Perfetto) closes the instants when the slice
        # opens.
        timed.sort(key=lambda t: t[0])
        events.extend(ev for _, ev in timed)
    return {"traceEvents": events, "displayTimeUnit": "ns", "otherData": meta}


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off inside the block (back on after it if it was on)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


class _Rows:
    """A trace's columns as plain lists (per-row access to a DataFrame costs microseconds a row)."""

    def __init__(self, tr: pd.DataFrame, start_ns: list[int], end_ns: list[int], lanes: list[int]):
        self.tr = tr
        self.op = [str(x) for x in tr["op"]]
        self.device = [str(x) for x in tr["device"]]
        self.kind = [str(x) for x in tr["kind"]]
        self.phase = tr["phase"].fillna("").astype(str).tolist()
        self.channels = tr["channels"].tolist() if "channels" in tr.columns else [None] * len(tr)
        self.start_ns, self.end_ns, self.lanes = start_ns, end_ns, lanes


def _track_events(events: list[dict], order: list[str], classes: dict[str, int], n_lanes: dict[str, int],
                  devices: Mapping[str, DeviceBase]) -> tuple[dict, dict]:
    """Append the process and thread metadata events of every device to ``events``; return the thread id and
    the track name of every ``(device, lane)``."""
    role_label = {HOST: "host", ACCELERATOR: "accelerator", LINK: LINK_KIND}
    tid_of: dict[tuple[str, int], int] = {}
    track_of: dict[tuple[str, int], str] = {}
    next_tid = len(order) + 1
    for i, d in enumerate(order):
        pid = i + 1
        dev = devices.get(d)
        tracks = lane_names(n_lanes[d], classes[d], serial=None if dev is None else bool(dev.serial),
                            units=None if dev is None else int(dev.units),
                            can_host=bool(dev is not None and dev.can_host))
        label = role_label[classes[d]] + (f", {dev.kind}" if dev is not None else "")
        # process metadata on the process's main thread id (tid = pid, never a track): not tid 0 in every process,
        # which a viewer keyed on system-wide tids would take for one thread moving between processes
        events.append({"name": "process_name", "ph": "M", "pid": pid, "tid": pid, "args": {"name": d}})
        events.append({"name": "process_sort_index", "ph": "M", "pid": pid, "tid": pid,
                       "args": {"sort_index": i}})
        events.append({"name": "process_labels", "ph": "M", "pid": pid, "tid": pid,
                       "args": {"labels": label + (f"; {tracks.unit}s: {tracks.note}" if tracks.note else "")}})
        for lane, name in enumerate(tracks.names):
            tid_of[(d, lane)] = next_tid
            track_of[(d, lane)] = name
            events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": next_tid, "args": {"name": name}})
            events.append({"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": next_tid,
                           "args": {"sort_index": lane}})
            next_tid += 1
    return tid_of, track_of


def _slice_events(cols: _Rows, costs, schedule, flows, args, pid_of, tid_of, track_of) -> list[tuple[tuple, dict]]:
    """One complete event (``"ph": "X"``) per trace row, with its sort key (:func:`chrome_trace`)."""
    xfer_args: dict[int, dict] = {}
    if costs is not None:
        for _, rows in flows:
            if len(rows) == 3 and cols.kind[rows[1]] == "transfer":
                xfer_args[rows[1]] = _transfer_args(costs, cols.tr, rows)
    timed: list[tuple[tuple, dict]] = []
    op_cache: dict[tuple, dict] = {}
    for i, (op, dev, kind, phase, lane, n) in enumerate(zip(cols.op, cols.device, cols.kind, cols.phase,
                                                            cols.lanes, cols.channels, strict=True)):
        s, e = cols.start_ns[i], cols.end_ns[i]
        a = {"op": op, "device": dev, "kind": kind, "phase": phase, "track": track_of[(dev, lane)],
             "start_s": s / NS_PER_S, "end_s": e / NS_PER_S}
        if pd.notna(n):  # a part of a channel-split op: its output channels
            a["channels"] = int(n)
        if costs is not None and kind != "transfer":
            key = (op, dev, None if pd.isna(n) else int(n))
            if key not in op_cache:
                op_cache[key] = _op_args(costs, schedule, op, dev, n)
            a.update(op_cache[key])
        a.update(xfer_args.get(i, {}))
        if args is not None and args[i]:
            a.update(args[i])
        pid, tid = pid_of[dev], tid_of[(dev, lane)]
        timed.append((_slice_key(i, s, e, pid, tid),
                      {"name": _event_name(op, phase), "cat": phase or kind, "ph": "X", "ts": _us(s),
                       "dur": _us(e - s), "pid": pid, "tid": tid, "args": a}))
    return timed


def _flow_events(cols: _Rows, flows, pid_of, tid_of) -> list[tuple[tuple, dict]]:
    """The flow events (``s``, ``t``, ``f``) of every dataflow arrow, with their sort keys (:func:`chrome_trace`)."""
    timed: list[tuple[tuple, dict]] = []
    start_ns, end_ns = cols.start_ns, cols.end_ns
    for fid, (name, rows) in enumerate(flows, start=1):
        for k, r in enumerate(rows):
            ph = "s" if k == 0 else "f" if k == len(rows) - 1 else "t"
            mid = (start_ns[r] + end_ns[r]) // 2
            dev = cols.device[r]
            ev = {"name": name, "cat": FLOW_CAT, "ph": ph, "id": fid, "ts": _us(mid), "pid": pid_of[dev],
                  "tid": tid_of[(dev, cols.lanes[r])]}
            if ph == "f":
                ev["bp"] = "e"
            # right after its slice when it sits at the slice's start (a slice under 2 ns), else before any
            # slice starting at that time (none on its own track: the slice encloses it)
            key = ((*_slice_key(r, start_ns[r], end_ns[r], ev["pid"], ev["tid"]), 1) if mid == start_ns[r]
                   else (mid, -1))
            timed.append((key, ev))
    return timed


def write_chrome_trace(
    trace: pd.DataFrame, path: str | os.PathLike, meta: dict | None = None, **kwargs
) -> Path:
    """Write :func:`chrome_trace` of ``trace`` as JSON to ``path`` atomically (UTF-8, compact).

    ``kwargs`` go to :func:`chrome_trace` (``host``, ``costs``, ``schedule``, ``devices``, ``args``,
    ``flows``). Numpy scalars/arrays, sets and paths in ``meta`` are converted to JSON types; non-finite floats
    are written as ``null`` so that the file stays strict JSON.

    Returns:
        ``path`` as a :class:`~pathlib.Path`.
    """
    doc = chrome_trace(trace, meta, **kwargs)
    try:  # nearly always finite: walk the document for NaN/inf only when the strict encoder meets one
        text = json.dumps(doc, default=_json_default, separators=(",", ":"), allow_nan=False)
    except ValueError:
        text = json.dumps(_finite(doc), default=_json_default, separators=(",", ":"), allow_nan=False)
    return atomic_write_text(path, text + "\n")


def _finite(obj):
    """Replace NaN/inf floats (anywhere in nested dicts/lists) with ``None``."""
    if isinstance(obj, float | np.floating):
        return float(obj) if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_finite(v) for v in obj]
    return obj
