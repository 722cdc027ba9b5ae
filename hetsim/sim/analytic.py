"""Contention-free evaluation of a schedule in one topological pass (no SimPy).

This is the timing model of the CPU-CIM ILP, Eq. 7-8 and 11-12 (an op starts when its inputs, plus
cross-device transfers, have arrived; ops on a serial device - a host CPU's cores, a DIANA accelerator, an NPU -
run one at a time per unit in the schedule's order) evaluated directly. Mappers use it to score candidate
mappings quickly;
:func:`hetsim.sim.simulate` with contention off must reproduce its times exactly (the tests check this).

Channel splits (ODiMO): a split op runs one part per device, all parts starting together once the op's
inputs are there and every part's device is free (and each device's order allows it); each device is busy for
its own part, and the op finishes with its longest part: ``f_v = s_v + max_d T_(v,d)``.
"""

from __future__ import annotations

import heapq

import networkx as nx

from hetsim.check import check_assignment, fill_orders, fusion_gates, op_parts
from hetsim.costs import CostModel
from hetsim.errors import ScheduleError


def list_schedule(
    costs: CostModel,
    assignment: dict[str, str],
    order: dict[str, list[str]] | None = None,
    splits: dict[str, dict[str, list[int]]] | None = None,
    after: dict[str, list[str]] | None = None,
    fused: dict[str, str] | None = None,
) -> tuple[dict[str, float], dict[str, float], float]:
    """Start and finish time of every op, and the makespan, with no resource contention.

    Args:
        costs: the cost model (latencies, transfer times).
        assignment: op name -> device name; every op of the workload must be assigned.
        order: per serial device (:meth:`~hetsim.costs.CostModel.serial_devices`), its ops in execution order;
            missing devices use the workload's topological order.
        splits: channel splits, op -> {device: channel indices} (see :class:`~hetsim.schedule.Schedule`).
        after: control dependencies, op -> ops that must finish before it starts (``Schedule.after``: the chain
            of a CIM's reprogrammed ops, :mod:`hetsim.weights`).
        fused: fused operator groups, consumer -> producer (``Schedule.fused``): a fused consumer lasts its
            epilogue (:meth:`~hetsim.costs.CostModel.with_fusion`), and a group's head starts only once every
            outside input of its members has arrived (:func:`hetsim.check.fusion_gates`: one launch).

    Returns:
        ``(start_s, finish_s, makespan_s)``; for a split op, the common start of its parts and the end of its
        longest part.

    Raises:
        ScheduleError: an op is unassigned or on a device that cannot run it, a split is invalid (see
            :func:`hetsim.check.split_violations`), or the order contradicts the data dependencies (it would deadlock).
    """
    g = costs.workload.graph
    topo = costs.workload.topological_order()
    caps = costs.serial_devices()
    splits = splits or {}
    order = fill_orders(costs, assignment, order, splits)
    check_assignment(costs, assignment, order, splits)
    chain_prev = _chain_prev(order, caps)
    rank = {n: i for i, n in enumerate(topo)}
    # when the device orders follow the topological order, it is a valid processing order
    after = after or {}
    costs, gates, after = _with_fusion(costs, fused, after)
    forward = (all(rank[p] < rank[n] for (_, n), p in chain_prev.items())
               and all(rank[u] < rank[v] for v, us in after.items() for u in us))
    proc = topo if forward else _processing_order(g, chain_prev, after)
    start: dict[str, float] = {}
    finish: dict[str, float] = {}
    slots: dict[str, list[float]] = {dev: [0.0] * cap for dev, cap in caps.items()}
    lat = costs.latency
    transfer = costs.transfer_time
    split_devs = {v: list(p) for v, p in splits.items()}
    for v in proc:
        sv = split_devs.get(v)
        ready = max((finish[u] for u in after[v]), default=0.0) if v in after else 0.0
        if v in gates:
            ready = max(ready, _gate_ready(costs, gates[v], finish, assignment, split_devs))
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


def _with_fusion(costs: CostModel, fused: dict[str, str] | None, after: dict[str, list[str]]):
    """``(costs, gates, after)`` for a schedule's fused groups: the cost model with the fused epilogues, each group
    head's outside inputs (:func:`hetsim.check.fusion_gates`) and ``after`` with them as ops the head waits for
    (so that the processing order has them first); unchanged without fused groups."""
    if not fused:
        return costs, {}, after
    gates = fusion_gates(costs.workload.graph, fused)
    after = {v: list(us) for v, us in after.items()}
    for h, edges in gates.items():
        after.setdefault(h, []).extend(u for u, _ in edges)
    return costs.with_fusion(fused), gates, after


def _gate_ready(costs: CostModel, edges, finish, assignment, split_devs) -> float:
    """When the outside inputs ``edges`` (``(u, c)``) of a fused group's members have all arrived."""
    dst = assignment[edges[0][1]]
    return max(finish[u] + max(costs.transfer_time(u, c, du, dst) for du in split_devs.get(u) or [assignment[u]])
               for u, c in edges)


def _chain_prev(order: dict[str, list[str]], caps: dict[str, int]) -> dict[tuple[str, str], str]:
    """``(device, op) -> the op before it in that device's order``, for every ordered device."""
    out: dict[tuple[str, str], str] = {}
    for dev in caps:
        seq = order.get(dev, [])
        for i in range(1, len(seq)):
            out[(dev, seq[i])] = seq[i - 1]
    return out


def _processing_order(g: nx.DiGraph, chain_prev: dict[tuple[str, str], str],
                      after: dict[str, list[str]] | None = None) -> list[str]:
    h = nx.DiGraph(g.edges)
    h.add_nodes_from(g.nodes)
    h.add_edges_from((p, n) for (_, n), p in chain_prev.items())
    h.add_edges_from((u, v) for v, us in (after or {}).items() for u in us)
    try:
        return list(nx.topological_sort(h))
    except nx.NetworkXUnfeasible:
        raise ScheduleError("the schedule's device order contradicts the data dependencies") from None


def evaluate_batch(preds, cost_s):
    """Start and finish times of a DAG's ops for many samples at once, with no contention: each op starts when
    every op it waits for has finished. The form of :func:`list_schedule` for workloads whose costs differ per
    sample (a spiking network's activity) on devices that share memory (no transfers) and run one op at a time
    (each device's order is then one more predecessor per op: the op before it on its device).

    Kept apart from :func:`list_schedule` (not merged): it times thousands of samples of one schedule at once as
    NumPy rows, the inner loop of the SpikeDuet planner (:mod:`hetsim.mappers.spikeduet`), where
    :func:`list_schedule` times one schedule per call with per-edge transfers, multi-core slots and channel
    splits, none of which an SNN's unrolled program has; the replay of the same schedule for one sample gives
    the same times (tests/test_snn.py, test_evaluator_equals_simpy_and_async_never_slower).

    Args:
        preds: per op, in a topological order, the indices (into that order) of the ops it waits for.
        cost_s: float ``[n_ops, samples]`` op durations in seconds, rows in the same order.

    Returns:
        ``(start, finish)``, float ``[n_ops, samples]`` seconds; the makespans are ``finish.max(axis=0)``.
    """
    import numpy as np

    n, S = cost_s.shape
    start = np.zeros((n, S))
    finish = np.zeros((n, S))
    for i, ps in enumerate(preds):
        if len(ps) == 1:
            start[i] = finish[ps[0]]
        elif ps:
            start[i] = finish[list(ps)].max(axis=0)
        finish[i] = start[i] + cost_s[i]
    return start, finish
