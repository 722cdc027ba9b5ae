"""Contention-free evaluation of a schedule in one topological pass (no SimPy).

This is the timing model of seed 000 Eq. 7-8 and 11-12 (an op starts when its inputs, plus cross-device
transfers, have arrived; ops on a serial device - a host CPU's cores, a DIANA accelerator - run one at a time
per unit in the schedule's order) evaluated directly. Mappers use it to score candidate mappings quickly;
:func:`hetsim.sim.simulate` with contention off must reproduce its times exactly (the tests check this).

Channel splits (seed 002): a split op runs one part per device, all parts starting together once the op's
inputs are there and every part's device is free (and each device's order allows it); each device is busy for
its own part, and the op finishes with its longest part: ``f_v = s_v + max_d T_(v,d)``.
"""

from __future__ import annotations

import heapq

import networkx as nx

from hetsim.costs import CostModel
from hetsim.errors import ScheduleError


def ordered_devices(costs: CostModel) -> dict[str, int]:
    """Devices whose ops are serialised in schedule order (``serial`` devices: a ``cpu``, a DIANA
    accelerator), with their capacity (cores of a ``cpu``, 1 otherwise). A PUMA CIM is not among them: its ops
    own their crossbars and overlap freely."""
    return {n: d.capacity for n, d in costs.platform.devices.items() if d.serial}


def devices_of(op: str, assignment: dict[str, str], splits: dict | None) -> list[str]:
    """The devices running ``op``: its split's devices, else its assigned device."""
    if splits and op in splits:
        return list(splits[op])
    return [assignment[op]]


def op_parts(
    costs: CostModel, op: str, assignment: dict[str, str], splits: dict | None
) -> list[tuple[str, float, int | None]]:
    """``(device, seconds, channels)`` of each part of ``op``: one part (channels ``None``) when it is not
    split, else one per device of its split with the part latency of its channel count."""
    if splits and op in splits:
        return [(d, costs.part_latency(op, d, len(ch)), len(ch)) for d, ch in splits[op].items()]
    d = assignment[op]
    return [(d, costs.latency[op][d], None)]


def fill_orders(
    costs: CostModel, assignment: dict[str, str], order: dict[str, list[str]] | None, splits: dict | None = None
) -> dict[str, list[str]]:
    """``order`` with every ordered device present: a device it lacks gets its ops (those with a part on it)
    in the workload's topological order."""
    order = dict(order or {})
    topo = costs.workload.topological_order()
    for dev in ordered_devices(costs):
        if dev not in order:
            order[dev] = [n for n in topo if n in assignment and dev in devices_of(n, assignment, splits)]
    return order


def list_schedule(
    costs: CostModel,
    assignment: dict[str, str],
    order: dict[str, list[str]] | None = None,
    splits: dict[str, dict[str, list[int]]] | None = None,
) -> tuple[dict[str, float], dict[str, float], float]:
    """Start and finish time of every op, and the makespan, with no resource contention.

    Args:
        costs: the cost model (latencies, transfer times).
        assignment: op name -> device name; every op of the workload must be assigned.
        order: per ordered device (:func:`ordered_devices`), its ops in execution order; missing devices use
            the workload's topological order.
        splits: channel splits, op -> {device: channel indices} (see :class:`~hetsim.schedule.Schedule`).

    Returns:
        ``(start_s, finish_s, makespan_s)``; for a split op, the common start of its parts and the end of its
        longest part.

    Raises:
        ScheduleError: an op is unassigned or on a device that cannot run it, a split is invalid (see
            :func:`split_violations`), or the order contradicts the data dependencies (it would deadlock).
    """
    g = costs.workload.graph
    topo = costs.workload.topological_order()
    caps = ordered_devices(costs)
    splits = splits or {}
    order = fill_orders(costs, assignment, order, splits)
    check_assignment(costs, assignment, order, splits)
    chain_prev = _chain_prev(order, caps)
    rank = {n: i for i, n in enumerate(topo)}
    # when the device orders follow the topological order, it is a valid processing order
    forward = all(rank[p] < rank[n] for (_, n), p in chain_prev.items())
    proc = topo if forward else _processing_order(g, chain_prev)
    start: dict[str, float] = {}
    finish: dict[str, float] = {}
    slots: dict[str, list[float]] = {dev: [0.0] * cap for dev, cap in caps.items()}
    lat = costs.latency
    transfer = costs.transfer_time
    split_devs = {v: list(p) for v, p in splits.items()}
    for v in proc:
        sv = split_devs.get(v)
        ready = 0.0
        if sv is None:  # the common case, kept fast: one device
            dv = assignment[v]
            for u in g.predecessors(v):
                su = split_devs.get(u)
                if su is None:
                    t = finish[u] + transfer(u, v, assignment[u], dv)
                else:
                    t = finish[u] + max(transfer(u, v, du, dv) for du in su)
                if t > ready:
                    ready = t
            if dv in slots:
                prev = chain_prev.get((dv, v))
                if prev is not None and start[prev] > ready:
                    ready = start[prev]
                free = heapq.heappop(slots[dv])
                s = ready if ready > free else free
                f = s + lat[v][dv]
                heapq.heappush(slots[dv], f)
            else:
                s = ready
                f = s + lat[v][dv]
        else:  # a channel split: all parts start together once every part's device is free
            for u in g.predecessors(v):
                for du in split_devs.get(u) or [assignment[u]]:
                    for dv in sv:
                        t = finish[u] + transfer(u, v, du, dv)
                        if t > ready:
                            ready = t
            s = ready
            for d in sv:
                if d in slots:
                    prev = chain_prev.get((d, v))
                    if prev is not None and start[prev] > s:
                        s = start[prev]
                    free = heapq.heappop(slots[d])
                    if free > s:
                        s = free
            f = s
            for d, dur, _ in op_parts(costs, v, assignment, splits):
                if d in slots:
                    heapq.heappush(slots[d], s + dur)
                if s + dur > f:
                    f = s + dur
        start[v] = s
        finish[v] = f
    makespan = max(finish.values(), default=0.0)
    return start, finish, makespan


def _chain_prev(order: dict[str, list[str]], caps: dict[str, int]) -> dict[tuple[str, str], str]:
    """``(device, op) -> the op before it in that device's order``, for every ordered device."""
    out: dict[tuple[str, str], str] = {}
    for dev in caps:
        seq = order.get(dev, [])
        for i in range(1, len(seq)):
            out[(dev, seq[i])] = seq[i - 1]
    return out


def _processing_order(g: nx.DiGraph, chain_prev: dict[tuple[str, str], str]) -> list[str]:
    h = nx.DiGraph(g.edges)
    h.add_nodes_from(g.nodes)
    h.add_edges_from((p, n) for (_, n), p in chain_prev.items())
    try:
        return list(nx.topological_sort(h))
    except nx.NetworkXUnfeasible:
        raise ScheduleError("the schedule's device order contradicts the data dependencies") from None


def split_violations(costs: CostModel, assignment: dict[str, str], splits: dict | None) -> list[str]:
    """Problems with the channel splits of a schedule (empty when they are valid).

    A split of op ``v`` must: name an op with output channels (a GEMM view) and known devices; give every
    device a non-empty part that the device can run (e.g. the DIANA AIMC runs no grouped conv); partition
    ``0..C_out-1`` exactly; keep each group of a grouped conv on one part (whole groups only); list
    ``assignment[v]`` among its devices; and exchange data with its neighbours only through shared memory: a
    channel split needs no data marshalling only when all devices involved share a memory (seed 002 Sec. III-A,
    property ii), so every pair (a part's device, a device of a DAG neighbour) that differ must share one.
    """
    out: list[str] = []
    if not splits:
        return out
    ops = costs.workload.ops
    g = costs.workload.graph
    plat = costs.platform
    for v, parts in splits.items():
        if v not in ops:
            out.append(f"the schedule splits {v!r}, which is not an op of {costs.workload.name!r}")
            continue
        c_out = costs.out_channels(v)
        if c_out is None:
            out.append(f"op {v!r} ({ops[v].op_type}) has no output channels to split (no GEMM view)")
            continue
        if not isinstance(parts, dict) or not parts:
            out.append(f"the split of {v!r} has no parts")
            continue
        seen: list[int] = []
        ok = True
        for d, ch in parts.items():
            if d not in plat.devices:
                out.append(f"the split of {v!r} names {d!r}, which is not a device of the platform")
                ok = False
            elif not ch:
                out.append(f"the split of {v!r} gives {d!r} no channels (drop the empty part)")
                ok = False
            elif any(not isinstance(c, int) or not 0 <= c < c_out for c in ch):
                bad = next(c for c in ch if not isinstance(c, int) or not 0 <= c < c_out)
                out.append(f"the split of {v!r} gives {d!r} channel {bad!r}, outside 0..{c_out - 1}")
                ok = False
            seen += list(ch)
        if not ok:
            continue
        if len(seen) != c_out or set(seen) != set(range(c_out)):
            dup = sorted({c for c in seen if seen.count(c) > 1})
            missing = sorted(set(range(c_out)) - set(seen))
            what = []
            if dup:
                what.append(f"channel(s) {dup[:5]} on several devices")
            if missing:
                what.append(f"channel(s) {missing[:5]}{' ...' if len(missing) > 5 else ''} on none")
            out.append(f"the split of {v!r} does not partition its {c_out} output channels: {'; '.join(what)}")
            continue
        for d, ch in parts.items():
            if costs.part_latency(v, d, len(ch)) is None:
                out.append(f"op {v!r} ({ops[v].op_type}, groups {ops[v].gemm.groups}): {d!r} cannot run a part of it")
        gv = ops[v].gemm
        if gv.groups > 1 and gv.m_v > 1:
            for ch in parts.values():
                mine = set(ch)
                broken = next((c // gv.m_v for c in ch
                               if not all(c // gv.m_v * gv.m_v + k in mine for k in range(gv.m_v))), None)
                if broken is not None:
                    out.append(f"the split of {v!r} cuts group {broken} ({gv.m_v} channels per group): a part of a "
                               "grouped conv must hold whole groups")
                    break
        if assignment.get(v) not in parts:
            out.append(f"op {v!r} is assigned to {assignment.get(v)!r}, which holds no part of its split; assign it "
                       "to one of " + ", ".join(repr(d) for d in parts))
        for u, w in [(u, v) for u in g.predecessors(v)] + [(v, w) for w in g.successors(v)]:
            if g.edges[u, w].get("param"):
                continue
            other = w if u == v else u
            if other not in assignment:
                continue
            for dp in parts:
                for do in devices_of(other, assignment, splits):
                    if do not in plat.devices:
                        continue
                    if dp != do and not plat.shares_memory(dp, do):
                        out.append(
                            f"split op {v!r}: its part on {dp!r} exchanges data with {other!r} on {do!r} through no "
                            "shared memory; a channel split needs all devices involved to share a memory (seed 002 "
                            "Sec. III-A, property ii)")
                        break
                else:
                    continue
                break
    return out


def check_assignment(
    costs: CostModel,
    assignment: dict[str, str],
    order: dict[str, list[str]],
    splits: dict[str, dict[str, list[int]]] | None = None,
) -> None:
    """Raise :class:`ScheduleError` unless every op is assigned to a device that supports it, every split is
    valid (:func:`split_violations`), and every ordered device's order lists exactly the ops with a part on it."""
    ops = costs.workload.ops
    missing = [n for n in ops if n not in assignment]
    if missing:
        raise ScheduleError(f"{len(missing)} ops are not assigned, e.g. {missing[0]!r}")
    extra = [n for n in assignment if n not in ops]
    if extra:
        raise ScheduleError(f"the schedule assigns unknown ops, e.g. {extra[0]!r}")
    splits = splits or {}
    for n, dev in assignment.items():
        if dev not in costs.platform.devices:
            raise ScheduleError(f"op {n!r} is assigned to {dev!r}, which is not a device of the platform")
        if n not in splits and not costs.supported(n, dev):
            raise ScheduleError(f"op {n!r} ({ops[n].op_type}) is assigned to {dev!r}, which cannot run it")
    bad = split_violations(costs, assignment, splits)
    if bad:
        raise ScheduleError(bad[0])
    for dev in ordered_devices(costs):
        seq = order.get(dev, [])
        assigned = {n for n in assignment if dev in devices_of(n, assignment, splits)}
        if len(seq) != len(set(seq)) or set(seq) != assigned:
            raise ScheduleError(f"the order of device {dev!r} does not list exactly the ops assigned to it")
