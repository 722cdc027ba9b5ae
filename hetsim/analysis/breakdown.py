"""Where a replay's time and energy go: busy time and energy per device and op type, the critical path and every
op's slack, and the ops a loaded device could hand to another.

The busy time of an op on a device is the device table's (:func:`hetsim.analysis.metrics.device_table`): the
durations of its trace rows on a serial device, and on a device running several ops at once (a PUMA CIM) its
share of the union of the busy intervals (:func:`hetsim.analysis.metrics.shared_busy`), so the busy times of a
device's op types sum to its ``busy_s``. The energy of an op on a device is its share as in
:func:`hetsim.analysis.metrics.op_energy` (active energy of its busy time, the kind's per-op energy, cell writes),
per device; a memory devices read weights from gets rows of its own (the reads' port time and energy).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import pandas as pd

from hetsim.analysis.metrics import shared_busy
from hetsim.costs import CostModel
from hetsim.schedule import Schedule
from hetsim.sim.engine import SimResult

#: columns of :func:`op_type_breakdown`
BREAKDOWN_COLUMNS = ["device", "kind", "type", "ops", "busy_s", "share", "energy_j"]
#: columns of :func:`critical_path`
CRITICAL_PATH_COLUMNS = ["path_index", "op", "type", "device", "start_s", "finish_s", "latency_s", "gap_s", "via",
                         "latest_start_s", "slack_s", "on_path"]
#: the memory rows' ``kind`` (as in :func:`hetsim.analysis.metrics.device_table`)
_MEMORY = "memory"


def op_busy(costs: CostModel, result: SimResult) -> dict[str, dict[str, float]]:
    """Per compute device, each op's busy time there (seconds; device -> op -> busy_s): the sum of its trace
    rows' durations on a serial device, its share of the union of the busy intervals otherwise
    (:func:`~hetsim.analysis.metrics.shared_busy`). Ops and devices without trace rows are absent."""
    tr = result.trace
    out: dict[str, dict[str, float]] = {}
    for name, cfg in costs.devices.items():
        sub = tr[tr["device"] == name]
        if sub.empty:
            continue
        starts, ends = sub["start_s"].to_numpy(float), sub["end_s"].to_numpy(float)
        busy = ends - starts if cfg.serial else shared_busy(starts, ends)
        per: dict[str, float] = out.setdefault(name, {})
        for v, t in zip(sub["op"].tolist(), busy.tolist(), strict=True):
            per[v] = per.get(v, 0.0) + float(t)
    return out


def _device_op_energy(costs: CostModel, result: SimResult, busy: dict[str, dict[str, float]]):
    """device -> op -> joules: active energy of its busy time plus the kind's per-op energy and cell writes."""
    tr = result.trace
    T = result.makespan_s
    folded = getattr(costs, "folded", frozenset())
    steps = getattr(result, "weights", None) or {}
    out: dict[str, dict[str, float]] = {}
    for name, per in busy.items():
        cfg = costs.devices[name]
        e = out.setdefault(name, {})
        for v, t in per.items():
            e[v] = float(cfg.energy_j(t, T)[0])
        first = tr[tr["device"] == name].drop_duplicates("op")
        for v, ch in zip(first["op"], first["channels"], strict=True):
            if v not in folded:
                e[v] += cfg.op_energy_j(costs.workload.op(v), None if pd.isna(ch) else int(ch))
    for v, st in steps.items():  # cell writes are the CIM's (device_table's op_j); reads the memory's
        if st.write_j:
            out.setdefault(st.device, {})
            out[st.device][v] = out[st.device].get(v, 0.0) + st.write_j
    return out


def op_type_breakdown(costs: CostModel, result: SimResult) -> pd.DataFrame:
    """Busy time and energy per device and op type (``breakdown.csv``).

    One row per compute device and op type it ran, then per memory devices read weights from and the op types
    whose weights it served. Columns: ``device``, ``kind`` (the device's kind, ``memory`` for a memory),
    ``type`` (the op type), ``ops`` (ops of that type with time on the device), ``busy_s`` (seconds: their busy
    time there, :func:`op_busy`; a memory's: its port's read time), ``share`` (of the device's busy time, 0-1),
    ``energy_j`` (their energy there: active energy of the busy time, ``active_w * busy``, plus the kind's per-op
    energy and cell writes; a memory's: the reads' energy). Rows of a device in decreasing busy time.

    Sums (the device table's, :func:`~hetsim.analysis.metrics.device_table`): a device's ``busy_s`` over its
    types is its ``busy_s``, its ``ops`` its ``ops``. Idle energy (a property of the device and the makespan,
    not of an op) and links (transfers are edges, not ops) are in no row: over a run, the sum of ``energy_j``
    plus the devices' ``idle_j`` plus the links' energy is the run's energy (as for
    :func:`~hetsim.analysis.metrics.op_energy`).
    """
    busy = op_busy(costs, result)
    energy = _device_op_energy(costs, result, busy)
    type_of = {v: costs.workload.op(v).op_type for v in costs.workload.ops}
    rows = []
    for name, cfg in costs.devices.items():
        rows += _rows(name, cfg.kind, busy.get(name, {}), energy.get(name, {}), type_of)
    steps = getattr(result, "weights", None) or {}
    for name, mem in costs.platform.memories.items():
        if not mem.weights_for:
            continue
        mine = {v: st for v, st in steps.items() if st.memory == name}
        rows += _rows(name, _MEMORY, {v: st.read_s for v, st in mine.items()},
                      {v: st.read_j for v, st in mine.items()}, type_of)
    df = pd.DataFrame(rows, columns=BREAKDOWN_COLUMNS)
    df["ops"] = df["ops"].astype("int64")
    for c in ("busy_s", "share", "energy_j"):
        df[c] = df[c].astype("float64")
    return df


def _rows(device: str, kind: str, busy: dict[str, float], energy: dict[str, float], type_of: dict) -> list[dict]:
    by: dict[str, list] = {}
    for v, t in busy.items():
        acc = by.setdefault(type_of.get(v, "?"), [0, 0.0, 0.0])
        acc[0] += 1
        acc[1] += t
        acc[2] += energy.get(v, 0.0)
    total = sum(a[1] for a in by.values())
    rows = [{"device": device, "kind": kind, "type": ty, "ops": n, "busy_s": t,
             "share": t / total if total > 0 else 0.0, "energy_j": e} for ty, (n, t, e) in by.items()]
    return sorted(rows, key=lambda r: (-r["busy_s"], r["type"]))


# ------------------------------------------------------------------------------------------- critical path


@dataclass
class ReplayDag:
    """The replay's DAG (:func:`replay_dag`).

    Attributes:
        order: the ops in a topological order of the DAG (data, control and order edges together).
        pred, succ: op -> {neighbour: edge}, each edge a dict of ``lag``, ``release`` and ``via``.
    """

    order: list[str]
    pred: dict[str, dict[str, dict]]
    succ: dict[str, dict[str, dict]]


def _topological(nodes: list[str], succ: dict[str, dict], pred: dict[str, dict]) -> list[str]:
    """Kahn's algorithm, ties in ``nodes``' order (A. B. Kahn, "Topological sorting of large networks", 1962).

    Raises:
        ValueError: the edges form a cycle (a schedule the replay could not have run)."""
    left = {v: len(pred[v]) for v in nodes}
    ready = deque(v for v in nodes if not left[v])
    out = []
    while ready:
        v = ready.popleft()
        out.append(v)
        for w in succ[v]:
            left[w] -= 1
            if not left[w]:
                ready.append(w)
    if len(out) != len(nodes):
        raise ValueError("the replay's constraints form a cycle")
    return out


def replay_dag(costs: CostModel, schedule: Schedule, result: SimResult) -> ReplayDag:
    """The replayed schedule's DAG: one node per op, an edge ``u -> v`` for every constraint the replay put on
    ``v``'s start, with ``lag`` (seconds: ``start(v) >= start(u) + lag``), ``release`` (when ``u`` released
    ``v`` in the replay, seconds) and ``via``:

    - ``data``: a data dependency; ``lag`` = ``u``'s latency plus the transfer's duration (its trace row), the
      release the transfer's end (``u``'s finish when nothing moves);
    - ``after``: a control dependency of the schedule (``Schedule.after``): ``u``'s latency;
    - ``order``: consecutive ops of a serial device's order (``Schedule.order``). On a one-unit device ``v``
      waits for ``u``'s part there to end (``lag`` its duration); on a device of several units (a multi-core CPU)
      the order only keeps the starts in order (``lag`` 0, release ``u``'s start): which core frees up first is
      no edge, so the slack of such a device's ops is an upper bound.

    Two constraints between one pair keep the larger lag. Ops without a start in the replay are left out.
    """
    start, finish = result.start_s, result.finish_s
    tr = result.trace
    xfer = tr[tr["kind"] == "transfer"]
    xfer_s = (xfer["end_s"] - xfer["start_s"]).groupby(xfer["op"]).sum().to_dict()
    xfer_end = xfer.groupby("op")["end_s"].max().to_dict()
    comp = tr[tr["kind"] != "transfer"]
    part_end = comp.groupby(["op", "device"])["end_s"].max().to_dict()
    nodes = [v for v in costs.workload.topological_order() if v in start]
    pred: dict[str, dict[str, dict]] = {v: {} for v in nodes}
    succ: dict[str, dict[str, dict]] = {v: {} for v in nodes}

    def add(u, v, lag, release, via):
        if u not in pred or v not in pred:
            return
        old = pred[v].get(u)
        if old is None or lag > old["lag"]:
            pred[v][u] = succ[u][v] = {"lag": lag, "release": release, "via": via}

    for u, v in costs.workload.graph.edges:
        label = f"{u}->{v}"
        add(u, v, finish.get(u, 0.0) - start.get(u, 0.0) + xfer_s.get(label, 0.0),
            xfer_end.get(label, finish.get(u, 0.0)), "data")
    for v, before in (getattr(schedule, "after", None) or {}).items():
        for u in before:
            add(u, v, finish[u] - start[u] if u in start else 0.0, finish.get(u, 0.0), "after")
    serial = costs.serial_devices()
    for d, order in (schedule.order or {}).items():
        units = serial.get(d)
        if units is None:
            continue
        for u, v in zip(order, order[1:], strict=False):
            if u not in start:
                continue
            if units == 1:
                end = part_end.get((u, d), finish[u])
                add(u, v, end - start[u], end, "order")
            else:
                add(u, v, 0.0, start[u], "order")
    return ReplayDag(_topological(nodes, succ, pred), pred, succ)


def op_slack(costs: CostModel, schedule: Schedule, result: SimResult, dag: ReplayDag | None = None
             ) -> dict[str, tuple[float, float]]:
    """Each op's ``(latest start, slack)``, seconds, on the replay's DAG (:func:`replay_dag`): the latest start
    is the latest time the op could start, every later op keeping its constraints, without the makespan growing
    (a backward pass: ``LS(v) = min(makespan - latency(v), min over successors w of LS(w) - lag(v, w))``); the
    slack is the latest start minus the replay's start (the classical critical-path method: J. E. Kelley and M. R.
    Walker, "Critical-path planning and scheduling", 1959). Every replay meets its DAG's constraints, so the
    slack is never negative (values within 1e-12 of the makespan of 0 are 0); ops on the critical path of a
    replay without contention have slack 0."""
    g = replay_dag(costs, schedule, result) if dag is None else dag
    T = result.makespan_s
    start, finish = result.start_s, result.finish_s
    tol = 1e-12 * max(T, 1e-300)
    ls: dict[str, float] = {}
    for v in reversed(g.order):
        x = T - (finish[v] - start[v])
        for w, e in g.succ[v].items():
            x = min(x, ls[w] - e["lag"])
        ls[v] = x
    out = {}
    for v, x in ls.items():
        s = x - start[v]
        out[v] = (x, 0.0 if abs(s) <= tol else s)
    return out


def _walk(g: ReplayDag, result: SimResult) -> list[tuple[str, str]]:
    """The chain of binding predecessors from the op finishing last: ``(op, via)`` pairs, first op first."""
    start, finish = result.start_s, result.finish_s
    if not g.order:
        return []
    rank = {"data": 0, "after": 1, "order": 2}
    v = max(g.order, key=lambda x: (finish[x], start[x]))
    path = [(v, "")]
    while True:
        preds = g.pred[v]
        if not preds:
            break
        u = max(preds, key=lambda p: (preds[p]["release"], -rank[preds[p]["via"]], finish[p], p))
        path[-1] = (v, preds[u]["via"])
        path.append((u, ""))
        v = u
    return path[::-1]


def critical_path(costs: CostModel, schedule: Schedule, result: SimResult) -> pd.DataFrame:
    """The replay's critical path and every op's slack (``critical_path.csv``).

    The critical path is the chain of binding predecessors back from the op that finishes last: from each op,
    the predecessor in the replay's DAG (:func:`replay_dag`: data and control dependencies, the serial devices'
    orders) that released it last (a transfer's end, a finish, a one-unit device's previous op's end), until an
    op without predecessors. Without contention the chain's ops have slack 0 and the chain spans the makespan;
    with contention an op may have waited for a resource beyond its binding predecessor (its ``gap_s``).

    One row per op: first the path's ops in order (``path_index`` 0, 1, ...), then the others by start.
    Columns: ``path_index`` (``<NA>`` off the path), ``op``, ``type``, ``device`` (a split op: its first part's),
    ``start_s``, ``finish_s``, ``latency_s``, ``gap_s`` (on the path: start minus the previous path op's finish:
    a transfer, or time waiting for a resource; 0 for the first op; NaN off the path), ``via`` (how a path op
    follows the one before it: ``data``, ``after``, ``order``; ``""`` otherwise), ``latest_start_s`` and
    ``slack_s`` (:func:`op_slack`), ``on_path``. On the path, ``start_s`` of the first op plus the sums of
    ``latency_s`` and ``gap_s`` is the last op's finish, the makespan when no transfer ends after it.
    """
    g = replay_dag(costs, schedule, result)
    slack = op_slack(costs, schedule, result, g)
    path = _walk(g, result)
    start, finish = result.start_s, result.finish_s
    on = {v: i for i, (v, _) in enumerate(path)}
    via = dict(path)
    assignment = schedule.assignment
    rows = []
    prev_finish = None
    for v, _ in path:
        rows.append(_cp_row(costs, v, assignment, start, finish, slack, on[v], via[v],
                            0.0 if prev_finish is None else start[v] - prev_finish))
        prev_finish = finish[v]
    rest = sorted((v for v in g.order if v not in on), key=lambda v: (start[v], finish[v], v))
    rows += [_cp_row(costs, v, assignment, start, finish, slack, None, "", float("nan")) for v in rest]
    df = pd.DataFrame(rows, columns=CRITICAL_PATH_COLUMNS)
    df["path_index"] = df["path_index"].astype("Int64")
    df["on_path"] = df["on_path"].astype(bool)
    for c in ("start_s", "finish_s", "latency_s", "gap_s", "latest_start_s", "slack_s"):
        df[c] = df[c].astype("float64")
    for c in ("op", "type", "device", "via"):
        df[c] = df[c].astype(object).astype(str)
    return df


def _cp_row(costs, v, assignment, start, finish, slack, index, via, gap) -> dict:
    ls, sl = slack[v]
    return {"path_index": index, "op": v, "type": costs.workload.op(v).op_type, "device": assignment.get(v, ""),
            "start_s": start[v], "finish_s": finish[v], "latency_s": finish[v] - start[v], "gap_s": gap,
            "via": via, "latest_start_s": ls, "slack_s": sl, "on_path": index is not None}


# ------------------------------------------------------------------------------------------- what could move


def movable_busy(costs: CostModel, schedule: Schedule, result: SimResult, device: str) -> tuple[int, float]:
    """``(ops, seconds)``: how many of the ops ``schedule`` runs on ``device`` some other device could run (its
    latency table entry, as :func:`movable_ops`) and their busy time on ``device`` in ``result``."""
    busy = op_busy(costs, result).get(device, {})
    ops = [v for v in costs.workload.topological_order() if device in schedule.devices_of(v)
           and any(d != device and d in costs.devices and t is not None for d, t in costs.latency[v].items())]
    return len(ops), float(sum(busy.get(v, 0.0) for v in ops))


def movable_ops(costs: CostModel, schedule: Schedule, result: SimResult, device: str) -> dict[str, dict]:
    """The ops ``schedule`` runs on ``device`` that another device of the platform could run: per other compute
    device (platform order), ``ops`` (how many), ``types`` (op type -> count), ``busy_s`` (their busy time on
    ``device`` in ``result``, seconds: what moving them all would take off it) and ``latency_s`` (the sum of their
    latencies on the other device, seconds, from the cost model's latency table). An op counts for every device
    whose latency table entry it has (``CostModel.latency``: the device runs it and it fits the device's per-op
    capacities); resident capacities (crossbars, weight memory) are not checked, so not every op listed can move
    at once."""
    busy = op_busy(costs, result).get(device, {})
    out = {d: {"ops": 0, "types": {}, "busy_s": 0.0, "latency_s": 0.0} for d in costs.devices if d != device}
    for v in costs.workload.topological_order():
        if device not in schedule.devices_of(v):
            continue
        ty = costs.workload.op(v).op_type
        for d, t in costs.latency[v].items():
            if d == device or d not in out or t is None:
                continue
            x = out[d]
            x["ops"] += 1
            x["types"][ty] = x["types"].get(ty, 0) + 1
            x["busy_s"] += busy.get(v, 0.0)
            x["latency_s"] += float(t)
    return out
