"""Metrics from a replay: makespan, busy time, utilisation and energy per device.

Energy generalises ODiMO Eq. 4 (``docs/architecture.md``): for every device and link,
``E = P_active * busy + P_idle * (makespan - busy)`` plus ``energy_pj_per_byte * bytes`` on links. A
device's busy time is the length of the union of its busy intervals (a CIM accelerator running two ops at
once is busy, not twice busy); a multi-core CPU's power fields are per core, so its busy time counts
core-seconds and its idle time ``cores * makespan - busy``.

Channel splits (ODiMO): :func:`channel_split_summary` reports the share of output channels on each device
(network-wide and per layer), each channel-splitting accelerator's utilisation, the fraction of the makespan in
which all of them are busy at once (ODiMO Fig. 6: "both accelerators work simultaneously"), and ODiMO's
layer-sequential cost model (Eq. 3-4 summed over the layers).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from hetsim.check import capacity_use
from hetsim.costs import CostModel
from hetsim.devices.link import LINK_KIND
from hetsim.schedule import Schedule
from hetsim.sim.engine import SimResult

#: integer columns of :func:`op_table`
OP_INT_COLUMNS = ("macs", "bits", "m_v", "n_v", "n_mvm", "groups", "crossbars")


def union_length(starts: np.ndarray, ends: np.ndarray) -> float:
    """Total length of the union of intervals ``[starts[i], ends[i])``, seconds."""
    if len(starts) == 0:
        return 0.0
    idx = np.argsort(starts, kind="stable")
    s, e = starts[idx], ends[idx]
    total, cur_s, cur_e = 0.0, s[0], e[0]
    for a, b in zip(s[1:], e[1:], strict=True):
        if a > cur_e:
            total += cur_e - cur_s
            cur_s, cur_e = a, b
        elif b > cur_e:
            cur_e = b
    return float(total + (cur_e - cur_s))


def merge_intervals(starts, ends) -> list[tuple[float, float]]:
    """The union of intervals ``[starts[i], ends[i])`` as sorted, disjoint ``(start, end)`` pairs."""
    out: list[list[float]] = []
    for a, b in sorted(zip((float(x) for x in starts), (float(x) for x in ends), strict=True)):
        if b <= a:
            continue
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def intersect_intervals(x: list[tuple[float, float]], y: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Intersection of two sorted, disjoint interval lists (as from :func:`merge_intervals`)."""
    out, i, j = [], 0, 0
    while i < len(x) and j < len(y):
        a, b = max(x[i][0], y[j][0]), min(x[i][1], y[j][1])
        if a < b:
            out.append((a, b))
        if x[i][1] < y[j][1]:
            i += 1
        else:
            j += 1
    return out


def shared_busy(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Each interval's share of the busy time of a device running them at once: every elementary interval
    between consecutive start/end times is shared equally among the intervals covering it (seconds, one per
    interval; the shares sum to the length of the union, :func:`union_length`).

    A sweep over the sorted cut points (the number of intervals covering each elementary interval from a
    difference array), then each interval sums the shares of the elementary intervals it covers, in time order:
    O(n log n + sum of the cut points inside each interval), linear for a bounded number of intervals at once
    (a PUMA CIM's crossbars bound it). The sums run in the same order as a direct evaluation per elementary
    interval, so the figures are the same to the last bit.
    """
    starts, ends = np.asarray(starts, float), np.asarray(ends, float)
    busy = np.zeros(len(starts))
    if len(starts) == 0:
        return busy
    cuts = np.unique(np.concatenate([starts, ends]))
    lo, hi = np.searchsorted(cuts, starts), np.searchsorted(cuts, ends)  # covers elementary [lo, hi)
    cover = np.zeros(len(cuts) + 1, dtype=np.int64)
    np.add.at(cover, lo, 1)
    np.add.at(cover, hi, -1)
    count = np.cumsum(cover)[: len(cuts) - 1]
    widths = cuts[1:] - cuts[:-1]
    share = [float(w / c) if c else 0.0 for w, c in zip(widths, count, strict=True)]
    for i, (a, b) in enumerate(zip(lo.tolist(), hi.tolist(), strict=True)):
        t = 0.0
        for k in range(a, b):
            t += share[k]
        busy[i] = t
    return busy


def channel_split_summary(costs: CostModel, schedule: Schedule, result: SimResult) -> dict | None:
    """ODiMO's view of a replay on a platform with channel-splitting accelerators (DIANA), or ``None``
    when the platform has none and the schedule splits nothing.

    Keys: ``accelerators`` (the channel-splitting devices), ``layers`` (one entry per op with output channels,
    i.e. a GEMM view: ``op``, ``c_out``, ``channels`` = {device: count}, ``share`` = {device: fraction}),
    ``channels`` (device -> output channels over all those layers), ``total_channels``, ``share`` (device ->
    fraction of ``total_channels``; ODiMO Table I "A. Ch." is the AIMC's), ``split_layers`` (ops split over
    several devices), ``utilisation`` (accelerator -> busy / makespan), ``all_busy_fraction`` (fraction of the
    makespan in which every accelerator is busy at once: "both" on DIANA), ``layer_sequential_latency_s`` and
    ``layer_sequential_energy_j`` (ODiMO's model: the layers one after another, each lasting
    ``max_d L_d`` (Eq. 3) and costing :meth:`~hetsim.costs.CostModel.layer_energy` (Eq. 4), summed over the
    layers that run wholly on the accelerators; other ops are not counted).
    """
    accs = costs.split_devices()
    if not accs and not schedule.splits:
        return None
    counts: dict[str, int] = {}
    layer_rows = []
    seq_latency = seq_energy = 0.0
    for v in costs.workload.topological_order():
        c = costs.out_channels(v)
        if c is None:
            continue
        parts = schedule.channel_parts(v, c)
        for d, n in parts.items():
            counts[d] = counts.get(d, 0) + n
        layer_rows.append({"op": v, "c_out": c, "channels": parts,
                           "share": {d: n / c for d, n in parts.items()}})
        if set(parts) <= set(accs):
            t = {d: costs.part_latency(v, d, n) for d, n in parts.items()}
            seq_latency += max(t.values())
            seq_energy += costs.layer_energy(t)
    total = sum(counts.values())
    tr = result.trace
    T = result.makespan_s
    busy = {d: merge_intervals(tr.loc[tr["device"] == d, "start_s"], tr.loc[tr["device"] == d, "end_s"])
            for d in accs}
    both = busy[accs[0]] if accs else []
    for d in accs[1:]:
        both = intersect_intervals(both, busy[d])
    return {
        "accelerators": accs,
        "channels": counts,
        "total_channels": total,
        "share": {d: n / total for d, n in counts.items()} if total else {},
        "split_layers": len(schedule.splits),
        "utilisation": {d: (sum(b - a for a, b in busy[d]) / T if T > 0 else 0.0) for d in accs},
        "all_busy_fraction": (sum(b - a for a, b in both) / T if T > 0 and len(accs) > 1 else 0.0),
        "layer_sequential_latency_s": seq_latency,
        "layer_sequential_energy_j": seq_energy,
        "layers": layer_rows,
    }


def device_table(costs: CostModel, result: SimResult) -> pd.DataFrame:
    """One row per device and link.

    Columns: ``device``, ``kind``, ``units`` (ops the device runs at once: a CPU's cores; 1 otherwise),
    ``ops`` (ops or transfers), ``busy_s`` (unit-seconds on a serial device, else the length of the union of
    its busy intervals), ``utilisation`` (busy / (units * makespan)), ``active_j``, ``idle_j``, ``op_j``
    (per-op energy of kinds that have one), ``transfer_j``, ``energy_j`` (their sum), ``bytes`` (links only).

    Energy (ODiMO, Eq. 4, generalised to every device): ``active_w * busy + idle_w * (units * makespan - busy)``
    plus the kind's per-op energy (:meth:`~hetsim.devices.base.DeviceBase.op_energy_j`) plus
    ``energy_pj_per_byte`` per byte on links.
    """
    tr = result.trace
    T = result.makespan_s
    rows = []
    steps = getattr(result, "weights", None) or {}
    write_j: dict[str, float] = {}
    for st in steps.values():  # a reprogrammed op's cell writes: energy of its CIM
        write_j[st.device] = write_j.get(st.device, 0.0) + st.write_j
    edge_of = {f"{u}->{v}": (u, v) for u, v in costs.workload.graph.edges}
    folded = getattr(costs, "folded", frozenset())
    entries = [(n, d.kind, d) for n, d in costs.devices.items()]
    entries += [(n, lk.kind, lk) for n, lk in costs.platform.links.items()]
    for name, kind, cfg in entries:
        sub = tr[tr["device"] == name]
        units = cfg.units
        if cfg.serial:
            busy = float((sub["end_s"] - sub["start_s"]).sum())
        else:
            busy = union_length(sub["start_s"].to_numpy(), sub["end_s"].to_numpy())
        n_items = sub["op"].nunique()
        nbytes = op_j = 0.0
        if kind == LINK_KIND:
            for label in sub["op"]:
                u, v = edge_of[label]
                nbytes += costs.transfer_bytes(u, v, result.assignment[u], result.assignment[v])
        else:
            first = sub.drop_duplicates("op")
            for v, ch in zip(first["op"], first["channels"], strict=True):
                if v in folded:  # computed once at session creation
                    continue
                op_j += cfg.op_energy_j(costs.workload.op(v), None if pd.isna(ch) else int(ch))
            op_j += write_j.get(name, 0.0)
        active, idle = (float(x) for x in cfg.energy_j(busy, T))
        xfer = getattr(cfg, "energy_pj_per_byte", 0.0) * 1e-12 * nbytes
        rows.append({
            "device": name, "kind": kind, "units": units, "ops": int(n_items), "busy_s": busy,
            "utilisation": busy / (units * T) if T > 0 else 0.0,
            "active_j": active, "idle_j": idle, "op_j": op_j, "transfer_j": xfer,
            "energy_j": active + idle + op_j + xfer, "bytes": nbytes,
        })
    rows += memory_rows(costs, steps, T)
    return pd.DataFrame(rows)


#: the ``kind`` of a memory's row in :func:`device_table`
MEMORY_KIND = "memory"


def memory_rows(costs: CostModel, steps: dict, span_s: float = 0.0) -> list[dict]:
    """:func:`device_table` rows of the memories devices read weights from (``weights_for``): ``ops`` the
    streamed and reprogrammed ops reading it, ``busy_s`` the sum of their reads (its port's busy time),
    ``utilisation`` that busy time over ``span_s`` (the makespan, s; 0 when it is 0: the port is one resource,
    so above 100 % means reads overlapped with ``memory`` contention off, i.e. the port is oversubscribed),
    ``bytes`` read and ``op_j`` (= ``energy_j``) their energy (:class:`~hetsim.devices.memory.WeightPort`). None
    when the platform has no such memory."""
    rows = []
    for name, mem in costs.platform.memories.items():
        if not mem.weights_for:
            continue
        mine = [st for st in steps.values() if st.memory == name]
        busy = float(sum(st.read_s for st in mine))
        e = float(sum(st.read_j for st in mine))
        rows.append({"device": name, "kind": MEMORY_KIND, "units": 1, "ops": len(mine), "busy_s": busy,
                     "utilisation": busy / span_s if span_s > 0 else 0.0, "active_j": 0.0, "idle_j": 0.0,
                     "op_j": e, "transfer_j": 0.0,
                     "energy_j": e, "bytes": float(sum(st.nbytes for st in mine))})
    return rows


def weight_summary(costs: CostModel, schedule: Schedule, result: SimResult) -> dict | None:
    """The weight policies of a run (``summary["weights"]``), or ``None`` on a platform where no device reads
    weights from a memory and every op is resident.

    Keys: ``policies`` (how many offloaded ops are ``resident``, ``streamed``, ``reprogrammed``), ``by_device``
    (the same per accelerator, policies it runs only), ``memories``
    (per memory devices read weights from: ``bytes`` and ``energy_j`` read per inference, ``read_s`` its port's
    busy time, ``used_b`` the streamed and reprogrammed weights it holds, ``capacity_b``), ``reprogramming``
    (per CIM with reprogrammed ops: ``ops``, ``cells_written``, ``row_writes``, ``write_s``, ``write_j``,
    ``writes_per_cell`` per inference = the sum of the ops' passes (the busiest cell of the time-shared
    crossbars, each pass written from the first of them: no wear levelling, ours), ``endurance_writes`` and
    ``lifetime_inferences`` = endurance / writes_per_cell).
    """
    from hetsim.weights import memory_use, weight_option_platform

    steps = getattr(result, "weights", None) or {}
    if not steps and not weight_option_platform(costs.platform):
        return None
    host = costs.host
    pols = {"resident": 0, "streamed": 0, "reprogrammed": 0}
    by_dev: dict[str, dict[str, int]] = {}
    for v in schedule.parts:
        d = schedule.device_of(v)
        if d != host:
            p = schedule.policy_of(v)
            pols[p] = pols.get(p, 0) + 1
            row = by_dev.setdefault(d, {})
            row[p] = row.get(p, 0) + 1
    held = memory_use(costs, steps)  # a tied weight is held once, read by each of its ops
    mems = {}
    for row in memory_rows(costs, steps):
        n = row["device"]
        mems[n] = {"bytes": row["bytes"], "energy_j": row["energy_j"], "read_s": row["busy_s"],
                   "used_b": int(held.get(n, row["bytes"])), "capacity_b": costs.platform.memories[n].size_bytes}
    rep: dict[str, dict] = {}
    for st in steps.values():
        if st.policy != "reprogrammed":
            continue
        r = rep.setdefault(st.device, {"ops": 0, "cells_written": 0, "row_writes": 0, "write_s": 0.0, "write_j": 0.0,
                                       "writes_per_cell": 0, "endurance_writes": st.endurance_writes})
        r["ops"] += 1
        r["cells_written"] += st.cells
        r["row_writes"] += st.row_writes
        r["write_s"] += st.write_s
        r["write_j"] += st.write_j
        r["writes_per_cell"] += st.passes
    for r in rep.values():
        e = r["endurance_writes"]
        r["lifetime_inferences"] = (e / r["writes_per_cell"]) if e and r["writes_per_cell"] else None
    return {"policies": pols, "by_device": by_dev, "memories": mems, "reprogramming": rep}


def op_energy(costs: CostModel, result: SimResult) -> dict[str, float]:
    """Each op's share of the devices' energy, joules (``energy_j`` of :func:`op_table`).

    An op's energy is its active energy on every device it runs on (``active_w`` times its busy time there) plus
    the per-op energy of the device's kind (:meth:`~hetsim.devices.base.DeviceBase.op_energy_j`, e.g. an NPU's
    ``energy_pj_per_mac``), summed over its parts. On a device that runs several ops at once (a PUMA CIM: busy
    time is the union of its intervals, :func:`device_table`), time in which ``k`` ops run together is shared
    equally among them, so the device's active energy is split without double counting. Not included: idle
    energy (a property of the device and the makespan, not of an op) and links' energy (transfers are edges,
    not ops). Hence, over a run, ``sum(op energies) + sum(idle_j of the devices) == summary energy_j - links'
    energy_j``.
    """
    tr = result.trace
    T = result.makespan_s
    out = dict.fromkeys(costs.workload.topological_order(), 0.0)
    folded = getattr(costs, "folded", frozenset())
    for v, st in (getattr(result, "weights", None) or {}).items():  # weight reads and cell writes
        out[v] += st.energy_j
    for name, cfg in costs.devices.items():
        sub = tr[tr["device"] == name]
        if sub.empty:
            continue
        ops, starts, ends = sub["op"].to_numpy(), sub["start_s"].to_numpy(float), sub["end_s"].to_numpy(float)
        busy = ends - starts if cfg.serial else shared_busy(starts, ends)
        per_op: dict[str, float] = {}
        for v, t in zip(ops, busy, strict=True):
            per_op[v] = per_op.get(v, 0.0) + float(t)
        for v, t in per_op.items():
            out[v] += float(cfg.energy_j(t, T)[0])
        first = sub.drop_duplicates("op")
        for v, ch in zip(first["op"], first["channels"], strict=True):
            if v in folded:
                continue
            out[v] += cfg.op_energy_j(costs.workload.op(v), None if pd.isna(ch) else int(ch))
    return out


def op_table(costs: CostModel, schedule: Schedule, result: SimResult) -> pd.DataFrame:
    """One row per op (``ops.csv``).

    Columns: ``op``, ``type``, ``device`` (a split op: the device of its first part), ``start_s``, ``finish_s``,
    ``latency_s``, ``energy_j`` (the op's share of the energy, :func:`op_energy`: active energy on its devices
    plus per-op energy; no idle or link energy), the op's latency on every device (``latency_<device>_s``, empty
    where unsupported), ``macs``, ``bits``, the GEMM view of CPU-CIM ILP Eq. 1 (``m_v``, ``n_v``, ``n_mvm``,
    ``groups``; 0 for an op without one, like ``macs`` and ``crossbars``), ``crossbars`` (on a device whose
    capacity is crossbars; 0 otherwise), ``placement`` (``core<i>:<crossbars>`` per core, ``;``-separated) and
    ``channels`` (for a channel-split op, ``device:count`` per part, e.g. ``digital:4;aimc:60``) and ``folded``
    (``True`` for an op computed only from constants, which costs nothing: :attr:`~hetsim.costs.CostModel.folded`),
    and, on a platform whose devices fuse ops or for a schedule with fused groups, ``fused_into`` (the producer an
    op runs fused into, ``""`` for an op with its own launch: ``Schedule.fused``).

    Integer columns are ``int64``; ``placement`` and ``channels`` are strings, ``""`` where absent, so the
    dtypes do not depend on the run. (Read back from the CSV with ``pandas.read_csv``, a string column that is
    empty in every row comes back as ``float64`` NaN: pandas cannot tell an empty column's type.)
    """
    devs = list(costs.platform.devices)
    energy = op_energy(costs, result)
    # the schedule's views once (each builds a dict over every op), then one pass over the ops
    assignment = schedule.assignment
    crossbar_devs = {d for d, c in costs.resident.items() if c.name == "crossbars"}
    steps = getattr(result, "weights", None) or {}
    from hetsim.weights import weight_option_platform

    policy_cols = bool(steps) or weight_option_platform(costs.platform)
    fused_col = bool(schedule.fused) or bool(getattr(costs, "fusion_offered", 0))
    rows = []
    for v in costs.workload.topological_order():
        op = costs.workload.op(v)
        d = assignment[v]
        parts = schedule.parts[v]
        lat = costs.latency[v]
        g = op.gemm
        row = {
            "op": v, "type": op.op_type, "device": d,
            "start_s": result.start_s[v], "finish_s": result.finish_s[v],
            "latency_s": result.finish_s[v] - result.start_s[v], "energy_j": energy[v],
            **{f"latency_{dev}_s": lat.get(dev, np.nan) for dev in devs},
            "macs": op.macs, "bits": op.bits,
            "m_v": g.m_v if g else 0, "n_v": g.n_v if g else 0,
            "n_mvm": g.n_mvm if g else 0, "groups": g.groups if g else 0,
            "crossbars": costs.need.get(v, {}).get(d, 0) if d in crossbar_devs else 0,
            "placement": ";".join(f"core{c}:{n}" for c, n in schedule.placement.get(v, [])),
            "channels": ";".join(f"{dev}:{n}" for dev, n in {q.device: q.n_channels or 0 for q in parts}.items())
            if len(parts) > 1 or parts[0].channels is not None else "",
            "folded": v in costs.folded,
        }
        if fused_col:
            row["fused_into"] = schedule.fused.get(v, "")
        if policy_cols:
            st = steps.get(v)
            row.update({"weight_policy": schedule.policy_of(v), "weight_memory": st.memory if st else "",
                        "weight_bytes": st.nbytes if st else 0, "weight_energy_j": st.energy_j if st else 0.0})
        rows.append(row)
    cols = ["op", "type", "device", "start_s", "finish_s", "latency_s", "energy_j",
            *(f"latency_{dev}_s" for dev in devs), *OP_INT_COLUMNS, "placement", "channels", "folded"]
    if fused_col:
        cols.append("fused_into")
    if policy_cols:  # a platform with weight policies (hetsim.weights): each op's policy and memory traffic
        cols += ["weight_policy", "weight_memory", "weight_bytes", "weight_energy_j"]
    df = pd.DataFrame(rows, columns=cols)
    for c in OP_INT_COLUMNS:
        df[c] = df[c].astype("int64")
    for c in ("op", "type", "device", "placement", "channels"):
        df[c] = df[c].astype(object).astype(str)
    df["folded"] = df["folded"].astype(bool)
    if fused_col:
        df["fused_into"] = df["fused_into"].astype(object).astype(str)
    if policy_cols:
        df["weight_bytes"] = df["weight_bytes"].astype("int64")
        df["weight_energy_j"] = df["weight_energy_j"].astype("float64")
        for c in ("weight_policy", "weight_memory"):
            df[c] = df[c].astype(object).astype(str)
    for c in ("start_s", "finish_s", "latency_s", "energy_j", *(f"latency_{dev}_s" for dev in devs)):
        df[c] = df[c].astype("float64")
    return df


def summarize(
    costs: CostModel, schedule: Schedule, result: SimResult, baseline: SimResult | None = None
) -> dict:
    """The run's headline numbers as plain JSON-able data (``summary.json``).

    Keys: workload, platform, mapper, operators, makespan_s, baseline_makespan_s, speedup, energy_j,
    ops_offloaded (count and names per device), capacities (per device with a resident capacity: its name,
    unit, scope, used and available), crossbars (used/available of the devices whose capacity is crossbars),
    devices (the
    :func:`device_table` rows), contention, mapper_stats, predicted_makespan_s, host_latency_fallback_ops,
    ``fold_constants`` (whether ops computed only from constants were folded), ``folded_ops`` (how many were:
    they cost 0 s and move nothing, :attr:`~hetsim.costs.CostModel.folded`), and
    ``channel_split`` (:func:`channel_split_summary`) on platforms with channel-splitting accelerators (DIANA)
    or for schedules with channel splits, and ``fusion`` (:func:`fusion_summary`) on platforms whose devices fuse
    ops or for schedules with fused groups.
    """
    dev = device_table(costs, result)
    host = costs.host
    offloaded = {d: [] for d in costs.platform.devices if d != host}
    for v in costs.workload.topological_order():
        for d in schedule.devices_of(v):
            if d != host:
                offloaded[d].append(v)
    # resident use only: streamed and reprogrammed ops keep none (hetsim.weights)
    use = capacity_use(costs.for_schedule(schedule), schedule.assignment, schedule.splits)
    capacities = {d: {"name": c.name, "unit": c.unit, "scope": c.scope, "used": use[d], "available": c.amount}
                  for d, c in costs.resident.items()}
    crossbars = {d: {"used": c["used"], "available": c["available"]} for d, c in capacities.items()
                 if c["name"] == "crossbars"}
    base = baseline.makespan_s if baseline is not None else None
    out = {
        "workload": costs.workload.name,
        "platform": costs.platform.name,
        "mapper": schedule.mapper,
        "operators": len(costs.workload),
        "makespan_s": result.makespan_s,
        "predicted_makespan_s": schedule.makespan_s,
        "baseline": costs.platform.baseline,
        "baseline_makespan_s": base,
        "speedup": (base / result.makespan_s) if base and result.makespan_s > 0 else None,
        "energy_j": float(dev["energy_j"].sum()),
        "ops_offloaded": {
            # a split op counts once, though it is listed under each of its devices
            "count": len({v for ops in offloaded.values() for v in ops}),
            "by_device": {d: {"count": len(v), "ops": v} for d, v in offloaded.items()},
        },
        "crossbars": crossbars,
        "capacities": capacities,
        "devices": dev.to_dict(orient="records"),
        "contention": sorted(result.contention),
        "mapper_stats": schedule.stats,
        "host_latency_fallback_ops": len(costs.host_fallback_ops()),
        "fold_constants": costs.fold_constants,
        "folded_ops": len(costs.folded),
    }
    split = channel_split_summary(costs, schedule, result)
    if split is not None:
        out["channel_split"] = split
    weights = weight_summary(costs, schedule, result)
    if weights is not None:
        out["weights"] = weights
    fusion = fusion_summary(costs, schedule)
    if fusion is not None:
        out["fusion"] = fusion
    return out


def fusion_summary(costs: CostModel, schedule: Schedule) -> dict | None:
    """The fused operator groups of a run (``summary["fusion"]``), or ``None`` when the platform fuses nothing and
    the schedule has no group: ``on`` (fusion offered to the mapper: not ``--no-fusion``), ``offered`` (ops the
    devices could run fused, :attr:`~hetsim.costs.CostModel.fusion`), ``fused_ops`` (ops run fused), ``groups``
    (each group's device and its ops, head first, in the workload's topological order)."""
    offered = getattr(costs, "fusion_offered", 0)
    if not offered and not schedule.fused:
        return None
    chain = {p: c for c, p in schedule.fused.items()}
    groups = []
    for v in costs.workload.topological_order():
        if v in chain and v not in schedule.fused:
            ops = [v]
            while ops[-1] in chain:
                ops.append(chain[ops[-1]])
            groups.append({"device": schedule.device_of(v), "ops": ops})
    return {"on": bool(getattr(costs, "fusion_on", False)), "offered": offered, "fused_ops": len(schedule.fused),
            "groups": groups}
