"""Metrics from a replay: makespan, busy time, utilisation and energy per device.

Energy generalises seed 002 Eq. 4 (DESIGN.md): for every device and link,
``E = P_active * busy + P_idle * (makespan - busy)`` plus ``energy_pj_per_byte * bytes`` on links. A
device's busy time is the length of the union of its busy intervals (a CIM accelerator running two ops at
once is busy, not twice busy); a multi-core CPU's power fields are per core, so its busy time counts
core-seconds and its idle time ``cores * makespan - busy``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from hetsim.costs import CostModel
from hetsim.schedule import Schedule
from hetsim.sim.engine import SimResult


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


def device_table(costs: CostModel, result: SimResult) -> pd.DataFrame:
    """One row per device and link.

    Columns: ``device``, ``kind``, ``units`` (cores for a CPU, else 1), ``ops`` (ops or transfers),
    ``busy_s``, ``utilisation`` (busy / (units * makespan)), ``active_j``, ``idle_j``, ``transfer_j``,
    ``energy_j`` (their sum), ``bytes`` (links only).
    """
    platform = costs.platform
    tr = result.trace
    T = result.makespan_s
    rows = []
    edge_of = {f"{u}->{v}": (u, v) for u, v in costs.workload.graph.edges}
    entries = [(n, d.kind, d) for n, d in platform.devices.items()]
    entries += [(n, "link", lk) for n, lk in platform.links.items()]
    for name, kind, cfg in entries:
        sub = tr[tr["device"] == name]
        units = cfg.cores if kind == "cpu" else 1
        if kind == "cpu":
            busy = float((sub["end_s"] - sub["start_s"]).sum())
        else:
            busy = union_length(sub["start_s"].to_numpy(), sub["end_s"].to_numpy())
        n_items = sub["op"].nunique()
        nbytes = 0.0
        if kind == "link":
            for label in sub["op"]:
                u, v = edge_of[label]
                nbytes += costs.transfer_bytes(u, v, result.assignment[u], result.assignment[v])
        active = cfg.active_w * busy
        idle = cfg.idle_w * max(units * T - busy, 0.0)
        xfer = getattr(cfg, "energy_pj_per_byte", 0.0) * 1e-12 * nbytes
        rows.append({
            "device": name, "kind": kind, "units": units, "ops": int(n_items), "busy_s": busy,
            "utilisation": busy / (units * T) if T > 0 else 0.0,
            "active_j": active, "idle_j": idle, "transfer_j": xfer, "energy_j": active + idle + xfer,
            "bytes": nbytes,
        })
    return pd.DataFrame(rows)


def op_table(costs: CostModel, schedule: Schedule, result: SimResult) -> pd.DataFrame:
    """One row per op: ``op, type, device, start_s, finish_s, latency_s``, the op's latency on every device
    (``latency_<device>_s``, empty where unsupported), crossbars, placement and GEMM view."""
    devs = list(costs.platform.devices)
    rows = []
    for v in costs.workload.topological_order():
        op = costs.workload.op(v)
        d = schedule.assignment[v]
        row = {
            "op": v, "type": op.op_type, "device": d,
            "start_s": result.start_s[v], "finish_s": result.finish_s[v],
            "latency_s": result.finish_s[v] - result.start_s[v],
        }
        for dev in devs:
            row[f"latency_{dev}_s"] = costs.latency[v].get(dev, np.nan)
        g = op.gemm
        row.update({
            "macs": op.macs, "bits": op.bits,
            "m_v": g.m_v if g else None, "n_v": g.n_v if g else None,
            "n_mvm": g.n_mvm if g else None, "groups": g.groups if g else None,
            "crossbars": costs.n_crossbar.get(v, {}).get(d, 0) if d != costs.host else 0,
            "placement": ";".join(f"core{c}:{n}" for c, n in schedule.placement.get(v, [])),
        })
        rows.append(row)
    return pd.DataFrame(rows)


def summarize(
    costs: CostModel, schedule: Schedule, result: SimResult, baseline: SimResult | None = None
) -> dict:
    """The run's headline numbers as plain JSON-able data (``summary.json``).

    Keys: workload, platform, mapper, operators, makespan_s, baseline_makespan_s, speedup, energy_j,
    ops_offloaded (count and names per device), crossbars (used/available per CIM device), devices (the
    :func:`device_table` rows), contention, mapper_stats, predicted_makespan_s, host_latency_fallback_ops.
    """
    dev = device_table(costs, result)
    host = costs.host
    offloaded = {d: [] for d in costs.platform.devices if d != host}
    for v in costs.workload.topological_order():
        d = schedule.assignment[v]
        if d != host:
            offloaded[d].append(v)
    crossbars = {}
    for name, d in costs.platform.devices.items():
        if d.kind == "puma":
            used = sum(costs.n_crossbar[v][name] for v in offloaded.get(name, []))
            crossbars[name] = {"used": used, "available": d.crossbars}
    base = baseline.makespan_s if baseline is not None else None
    return {
        "workload": costs.workload.name,
        "platform": costs.platform.name,
        "mapper": schedule.mapper,
        "operators": len(costs.workload),
        "makespan_s": result.makespan_s,
        "predicted_makespan_s": schedule.makespan_s,
        "baseline_makespan_s": base,
        "speedup": (base / result.makespan_s) if base and result.makespan_s > 0 else None,
        "energy_j": float(dev["energy_j"].sum()),
        "ops_offloaded": {
            "count": sum(len(v) for v in offloaded.values()),
            "by_device": {d: {"count": len(v), "ops": v} for d, v in offloaded.items()},
        },
        "crossbars": crossbars,
        "devices": dev.to_dict(orient="records"),
        "contention": sorted(result.contention),
        "mapper_stats": schedule.stats,
        "host_latency_fallback_ops": len(costs.host_fallback_ops()),
    }
