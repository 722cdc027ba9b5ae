"""Contention-free evaluation of a schedule in one topological pass (no SimPy).

This is the timing model of seed 000 Eq. 7-8 and 11-12 (an op starts when its inputs, plus cross-device
transfers, have arrived; ops on the host run one at a time per core in the schedule's order) evaluated
directly. Mappers use it to score candidate mappings quickly; :func:`hetsim.sim.simulate` with contention
off must reproduce its times exactly (the tests check this).
"""

from __future__ import annotations

import heapq

import networkx as nx

from hetsim.costs import CostModel
from hetsim.errors import ScheduleError


def ordered_devices(costs: CostModel) -> dict[str, int]:
    """Devices whose ops are serialised in schedule order, with their capacity (cores of a ``cpu``)."""
    return {n: d.capacity for n, d in costs.platform.devices.items() if d.kind == "cpu"}


def list_schedule(
    costs: CostModel, assignment: dict[str, str], order: dict[str, list[str]] | None = None
) -> tuple[dict[str, float], dict[str, float], float]:
    """Start and finish time of every op, and the makespan, with no resource contention.

    Args:
        costs: the cost model (latencies, transfer times).
        assignment: op name -> device name; every op of the workload must be assigned.
        order: per ordered device (``cpu``), its ops in execution order; missing devices use the workload's
            topological order.

    Returns:
        ``(start_s, finish_s, makespan_s)``.

    Raises:
        ScheduleError: an op is unassigned or on a device that cannot run it, or the order contradicts the
            data dependencies (it would deadlock).
    """
    g = costs.workload.graph
    topo = costs.workload.topological_order()
    caps = ordered_devices(costs)
    order = dict(order or {})
    for dev in caps:
        if dev not in order:
            order[dev] = [n for n in topo if assignment.get(n) == dev]
    check_assignment(costs, assignment, order)
    # Process ops in a topological order of the DAG plus the per-device order chains.
    chain_prev: dict[str, str] = {}
    for dev in caps:
        seq = order[dev]
        for i in range(1, len(seq)):
            chain_prev[seq[i]] = seq[i - 1]
    rank = {n: i for i, n in enumerate(topo)}
    if all(rank[p] < rank[n] for n, p in chain_prev.items()):
        proc = topo  # the device orders follow the topological order: it is a valid processing order
    else:
        h = nx.DiGraph(g.edges)
        h.add_nodes_from(g.nodes)
        h.add_edges_from((p, n) for n, p in chain_prev.items())
        try:
            proc = list(nx.topological_sort(h))
        except nx.NetworkXUnfeasible:
            raise ScheduleError("the schedule's device order contradicts the data dependencies") from None
    start: dict[str, float] = {}
    finish: dict[str, float] = {}
    slots: dict[str, list[float]] = {dev: [0.0] * cap for dev, cap in caps.items()}
    lat = costs.latency
    for v in proc:
        dv = assignment[v]
        ready = 0.0
        for u in g.predecessors(v):
            t = finish[u] + costs.transfer_time(u, v, assignment[u], dv)
            if t > ready:
                ready = t
        if dv in slots:
            prev = chain_prev.get(v)
            if prev is not None and start[prev] > ready:
                ready = start[prev]
            free = heapq.heappop(slots[dv])
            s = ready if ready > free else free
            f = s + lat[v][dv]
            heapq.heappush(slots[dv], f)
        else:
            s = ready
            f = s + lat[v][dv]
        start[v] = s
        finish[v] = f
    makespan = max(finish.values(), default=0.0)
    return start, finish, makespan


def check_assignment(costs: CostModel, assignment: dict[str, str], order: dict[str, list[str]]) -> None:
    """Raise :class:`ScheduleError` unless every op is assigned to a device that supports it and every
    ordered device's order lists exactly its assigned ops."""
    ops = costs.workload.ops
    missing = [n for n in ops if n not in assignment]
    if missing:
        raise ScheduleError(f"{len(missing)} ops are not assigned, e.g. {missing[0]!r}")
    extra = [n for n in assignment if n not in ops]
    if extra:
        raise ScheduleError(f"the schedule assigns unknown ops, e.g. {extra[0]!r}")
    for n, dev in assignment.items():
        if dev not in costs.platform.devices:
            raise ScheduleError(f"op {n!r} is assigned to {dev!r}, which is not a device of the platform")
        if not costs.supported(n, dev):
            raise ScheduleError(f"op {n!r} ({ops[n].op_type}) is assigned to {dev!r}, which cannot run it")
    for dev in ordered_devices(costs):
        seq = order.get(dev, [])
        assigned = {n for n, d in assignment.items() if d == dev}
        if len(seq) != len(set(seq)) or set(seq) != assigned:
            raise ScheduleError(f"the order of device {dev!r} does not list exactly the ops assigned to it")
