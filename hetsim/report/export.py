"""Atomic file writes and the Chrome Trace Event Format export of a replay trace.

Every artefact is written atomically: to a temporary file in the target's directory, flushed to disk
(``fsync``), then renamed over the target with :func:`os.replace`. A reader never sees a half-written file
and a failing writer leaves the target as it was.

The trace export follows the Chrome Trace Event Format (JSON object format, "Trace Event Format" document by
Google), which opens in Perfetto (https://ui.perfetto.dev) and ``chrome://tracing``.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd

from hetsim.devices.link import LINK_KIND
from hetsim.report.lanes import assign_lanes, device_classes, device_order, lane_counts

US_PER_S = 1e6


def _fsync_dir(directory: Path) -> None:
    """Best-effort fsync of a directory so that a rename in it is durable (no-op where unsupported)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _target_mode(path: Path) -> int:
    """Permission bits for the new file: the existing target's, else ``0o666`` minus the umask."""
    try:
        return path.stat().st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; on success move it into place atomically.

    The temporary file lives in the same directory and ends with the same suffix as ``path`` (so writers that
    pick a format from the suffix, such as ``fig.savefig``, behave as for ``path``). Hand it to any writer
    (``fig.savefig(tmp)``, ``df.to_csv(tmp)``). When the ``with`` block finishes without an exception the
    file is fsynced, given the target's permissions (or the umask default for a new file) and renamed over
    ``path`` with :func:`os.replace`. On an exception the temporary file is removed, ``path`` is untouched and
    the exception propagates.

    Raises:
        FileNotFoundError: the directory of ``path`` does not exist.
    """
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=f".tmp{target.suffix}", dir=directory)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.chmod(tmp, _target_mode(target))
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    _fsync_dir(directory)


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (temp file in the same directory, fsync, :func:`os.replace`).

    Returns:
        ``path`` as a :class:`~pathlib.Path`.
    """
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
    return Path(path)


def atomic_write_text(path: str | os.PathLike, text: str, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` atomically, encoded with ``encoding`` (UTF-8 by default).

    Returns:
        ``path`` as a :class:`~pathlib.Path`.
    """
    return atomic_write_bytes(path, text.encode(encoding))


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


def chrome_trace(trace: pd.DataFrame, meta: dict | None = None, *, host: str | None = None) -> dict:
    """Convert a replay trace into a Chrome Trace Event Format object (opens in Perfetto and chrome://tracing).

    Layout: one *process* per device or link, ``pid`` 1, 2, ... in display order (host, then the other
    compute devices, then links; see :func:`hetsim.report.lanes.device_order`), named by a ``process_name``
    metadata event and ordered by ``process_sort_index`` (0, 1, ...). Ops that overlap in time on one device
    go to separate *threads* (lanes, :func:`hetsim.report.lanes.assign_lanes`): ``tid = lane + 1``, named
    ``"lane <lane>"`` by ``thread_name`` events and ordered by ``thread_sort_index``. All phases of an op share
    its lane.

    Every trace row becomes one complete event (``"ph": "X"``) with ``name`` = the op (``"<op> [<phase>]"``
    for a CIM phase, ``"u->v"`` for a transfer), ``cat`` = the phase if any, else the kind (``compute`` |
    ``transfer``), ``ts`` = start and ``dur`` = end - start, both in **microseconds** (floats;
    ``dur = end_s * 1e6 - start_s * 1e6`` so that back-to-back phases tile exactly), and ``args`` = ``op``,
    ``device``, ``kind``, ``phase``, ``start_s``, ``end_s`` (seconds) and ``lane``, plus ``channels`` for the
    part of a channel-split op (a trace row with a ``channels`` value).

    Args:
        trace: :class:`~hetsim.sim.engine.SimResult` trace (columns ``op``, ``device``, ``kind``, ``phase``,
            ``start_s``, ``end_s``; seconds).
        meta: JSON-able run information stored as ``otherData`` (e.g. workload, platform, mapper,
            makespan); its ``"host"`` key, if present, names the host device.
        host: the host device (sorted first); default ``meta["host"]``, else a device named ``"host"``, else
            guessed (compute devices without CIM phases).

    Returns:
        ``{"traceEvents": [...], "displayTimeUnit": "ns", "otherData": meta or {}}`` with metadata events
        first, then the complete events sorted by ``ts``; plain Python types, ready for ``json.dumps``.
    """
    meta = dict(meta) if meta else {}
    if host is None and isinstance(meta.get("host"), str):
        host = meta["host"]
    events: list[dict] = []
    if len(trace):
        tr = trace.reset_index(drop=True)
        lanes = assign_lanes(tr)
        n_lanes = lane_counts(tr, lanes)
        order = device_order(tr, host)
        classes = device_classes(tr, host)
        pid_of = {d: i + 1 for i, d in enumerate(order)}
        kind_label = {0: "host", 1: "accelerator", 2: LINK_KIND}
        for i, d in enumerate(order):
            pid = pid_of[d]
            events.append({"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": d}})
            events.append({"name": "process_sort_index", "ph": "M", "pid": pid, "tid": 0,
                           "args": {"sort_index": i}})
            events.append({"name": "process_labels", "ph": "M", "pid": pid, "tid": 0,
                           "args": {"labels": kind_label[classes[d]]}})
            for lane in range(n_lanes[d]):
                events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": lane + 1,
                               "args": {"name": f"lane {lane}"}})
                events.append({"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": lane + 1,
                               "args": {"sort_index": lane}})
        phases = tr["phase"].fillna("").astype(str)
        xs = []
        chans = tr["channels"] if "channels" in tr.columns else pd.Series([None] * len(tr), index=tr.index)
        for op, dev, kind, phase, s, e, lane, n in zip(tr["op"], tr["device"], tr["kind"], phases, tr["start_s"],
                                                       tr["end_s"], lanes, chans, strict=True):
            s, e = float(s), float(e)
            ts = s * US_PER_S
            xs.append({
                "name": _event_name(str(op), phase),
                "cat": phase or str(kind),
                "ph": "X",
                "ts": ts,
                "dur": e * US_PER_S - ts,
                "pid": pid_of[str(dev)],
                "tid": int(lane) + 1,
                "args": {"op": str(op), "device": str(dev), "kind": str(kind), "phase": phase,
                         "start_s": s, "end_s": e, "lane": int(lane)},
            })
            if pd.notna(n):  # a part of a channel-split op: its output channels
                xs[-1]["args"]["channels"] = int(n)
        xs.sort(key=lambda ev: (ev["ts"], ev["pid"], ev["tid"]))
        events.extend(xs)
    return {"traceEvents": events, "displayTimeUnit": "ns", "otherData": meta}


def write_chrome_trace(
    trace: pd.DataFrame, path: str | os.PathLike, meta: dict | None = None, *, host: str | None = None
) -> Path:
    """Write :func:`chrome_trace` of ``trace`` as JSON to ``path`` atomically (UTF-8, compact).

    Numpy scalars/arrays, sets and paths in ``meta`` are converted to JSON types; non-finite floats are
    written as ``null`` so that the file stays strict JSON.

    Returns:
        ``path`` as a :class:`~pathlib.Path`.
    """
    doc = _finite(chrome_trace(trace, meta, host=host))
    text = json.dumps(doc, default=_json_default, separators=(",", ":"), allow_nan=False)
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
