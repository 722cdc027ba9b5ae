"""``heft``: Heterogeneous Earliest Finish Time list scheduling under the crossbar budget."""

from __future__ import annotations

import bisect
from functools import partial

from hetsim.costs import CostModel
from hetsim.errors import MappingError
from hetsim.mappers._listsched import price_sweep
from hetsim.mappers._policy import fuse_after_search, heft_policies
from hetsim.mappers._throughput import check_objective, map_one
from hetsim.mappers.base import capacity_budget, make_schedule, register
from hetsim.schedule import Schedule
from hetsim.weights import weight_option_platform


@register("heft")
class Heft:
    """HEFT list scheduling adapted to accelerators with a resident capacity (weight-stationary CIM crossbars,
    an NPU's weight memory).

    Ops are prioritised by upward rank ``rank(v) = w(v) + max over successors s of (c(v, s) + rank(s))``,
    where ``w(v)`` is the mean latency of ``v`` over the devices that support it and ``c(v, s)`` the mean
    transfer time of the edge over the device pairs the two ops could occupy. In decreasing rank order
    (topological position breaks ties), each op goes to the device giving its earliest finish time: on the
    serial device (a CPU's cores, an NPU) with HEFT's insertion policy (the earliest idle gap of a unit that fits
    the op after its inputs arrive), on a device whose ops overlap (a PUMA CIM) as soon as its inputs arrive - if
    the device's remaining resident capacity (crossbars: CPU-CIM ILP Eq. 14) holds the op and a link joins it to
    the devices of the op's inputs (transfer means are over the linked device pairs). Ties prefer the host,
    which keeps capacity for later ops.

    Source: H. Topcuoglu, S. Hariri, M.-Y. Wu, "Performance-effective and low-complexity task scheduling
    for heterogeneous computing", IEEE TPDS 13(3), 2002, doi:10.1109/71.993206.

    Plain HEFT spends capacity first come, first served: a depthwise conv early in MobileNetV2 can take a
    crossbar per channel and starve every later layer. So the device choice minimises
    ``EFT + lambda * need / budget`` (``need``: the op's share of the device's resident capacity, e.g.
    ``N_crossbar``) and HEFT runs once per ``lambda`` in ``crossbar_prices`` (as fractions of the all-host
    makespan; 0 = plain HEFT); the schedule with the smallest makespan wins (ties: the earlier price).

    The returned schedule orders host ops by HEFT's start times; its predicted times are recomputed by
    :func:`~hetsim.sim.analytic.list_schedule` (ASAP in that order), which can only make them earlier.

    On a platform whose devices read weights from a memory, each op's options are (device, weight policy):
    :func:`hetsim.mappers._policy.heft_policies`.

    Args:
        crossbar_prices: the price sweep, relative to ``all-host makespan / budget`` per unit of capacity.
        objective: ``latency`` (the makespan, above) or ``throughput`` (the busiest resource's load, a local
            search from this mapping: :mod:`hetsim.mappers._throughput`).
    """

    throughput_method = "heuristic"

    def __init__(self, crossbar_prices: tuple[float, ...] = (0.0, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0),
                 objective: str = "latency"):
        self.crossbar_prices = crossbar_prices
        self.objective = check_objective("heft", objective)

    def map(self, costs: CostModel) -> Schedule:
        if self.objective == "throughput":
            return map_one(self, costs)
        if weight_option_platform(costs.platform):  # device and weight policy per op (hetsim/mappers/_policy.py)
            sched = fuse_after_search(costs, heft_policies(costs, self.name, tuple(self.crossbar_prices)))
            if costs.fusion:  # every weight resident, fused groups modelled: the shorter of the two kept
                resident = price_sweep(costs, self.crossbar_prices, partial(self._heft_fused, costs))
                if resident.makespan_s < sched.makespan_s:
                    return resident
            return sched
        return price_sweep(costs, self.crossbar_prices, partial(self._heft_fused, costs))

    def _heft_fused(self, costs: CostModel, price: float, base: float) -> Schedule:
        """HEFT at ``price``; where devices fuse ops (:attr:`~hetsim.costs.CostModel.fusion`), both with fused
        options and without, the shorter makespan kept (ties: fused), so fusion never makes HEFT's schedule
        slower."""
        plain = self._heft(costs, price, base, fuse=False)
        if not costs.fusion:
            return plain
        fused = self._heft(costs, price, base, fuse=True)
        return fused if fused.makespan_s <= plain.makespan_s else plain

    def _heft(self, costs: CostModel, price: float, base: float, fuse: bool = False) -> Schedule:
        g = costs.workload.graph
        topo = costs.workload.topological_order()
        pos = {v: i for i, v in enumerate(topo)}
        budget = capacity_budget(costs)
        # seconds per unit of each device's resident capacity: price * all-host time / budget
        unit_price = {d: price * (base / max(c, 1)) for d, c in budget.items()}
        caps = costs.serial_devices()
        host = costs.host

        linked = costs.carried

        def mean_transfer(u: str, v: str) -> float:
            pairs = [(a, b) for a in costs.latency[u] for b in costs.latency[v] if linked(u, v, a, b)]
            return sum(costs.transfer_time(u, v, a, b) for a, b in pairs) / len(pairs) if pairs else 0.0

        rank: dict[str, float] = {}
        for v in reversed(topo):
            w = sum(costs.latency[v].values()) / len(costs.latency[v])
            rank[v] = w + max((mean_transfer(v, s) + rank[s] for s in g.successors(v)), default=0.0)
        prio = sorted(topo, key=lambda v: (-rank[v], pos[v]))
        # rank order is topological when latencies are positive; fall back to topo order where it is not
        rank_pos = {v: i for i, v in enumerate(prio)}
        if any(rank_pos[u] > rank_pos[v] for u, v in g.edges):
            prio = topo

        # per ordered device and core: its idle gaps (insertion-based scheduling)
        busy: dict[str, list[_Core]] = {d: [_Core() for _ in range(c)] for d, c in caps.items()}
        assignment: dict[str, str] = {}
        start: dict[str, float] = {}
        finish: dict[str, float] = {}
        fusion = _Fusion(costs, assignment, start, finish, busy) if fuse else None
        for v in prio:
            best = fusion.option(v, budget, unit_price) if fusion is not None else None
            for dev, dur in costs.latency[v].items():
                if dev in budget and costs.need[v][dev] > budget[dev]:
                    continue
                if not all(linked(u, v, assignment[u], dev) for u in g.predecessors(v)):
                    continue  # no link carries an input from its producer's device
                ready = max(
                    (finish[u] + costs.transfer_time(u, v, assignment[u], dev) for u in g.predecessors(v)),
                    default=0.0,
                )
                if dev in busy:
                    s, core = min((cr.earliest(ready, dur), c) for c, cr in enumerate(busy[dev]))
                else:
                    s, core = ready, None
                penalty = unit_price[dev] * costs.need[v][dev] if dev in budget else 0.0
                key = (s + dur + penalty, dev != host, dev)
                if best is None or key < best[0]:
                    best = (key, dev, s, core)
            if best is None:
                full = [d for d in costs.latency[v] if d in budget and costs.need[v][d] > budget[d]]
                if len(full) == len(costs.latency[v]):
                    left = ", ".join(f"{d} has {budget[d]:,} {costs.resident[d].unit} left, the op needs "
                                     f"{costs.need[v][d]:,}" for d in full)
                    raise MappingError(f"heft: op {v!r} ({costs.workload.op(v).op_type}) runs only on devices whose "
                                       f"capacity the ops before it used up ({left}; {costs.resident[full[0]].source})")
                raise MappingError(f"heft: no device that runs {v!r} and holds it is linked to the devices of its "
                                   f"inputs ({', '.join(sorted({assignment[u] for u in g.predecessors(v)}))})")
            _, dev, s, core = best[:4]
            f = s + (costs.latency[v][dev] if len(best) == 4 else best[4])
            assignment[v], start[v], finish[v] = dev, s, f
            if fusion is not None:
                fusion.placed(v, core, best[5] if len(best) > 4 else None)
            if core is not None:
                busy[dev][core].insert(s, f)
            if dev in budget:
                budget[dev] -= costs.need[v][dev]
        order = {d: sorted((v for v in topo if assignment[v] == d), key=lambda v: (start[v], pos[v])) for d in caps}
        stats = {
            "status": "heuristic",
            "heft_makespan_s": max(finish.values(), default=0.0),
            "offloaded": sum(1 for d in assignment.values() if d != host),
        }
        fused = fusion.fused if fusion is not None else None
        if fused:
            stats["fused"] = len(fused)
        return make_schedule(costs, assignment, self.name, stats, order=order, fused=fused)


class _Fusion:
    """HEFT's fused options (:attr:`~hetsim.costs.CostModel.fusion`): an op may run fused into a producer that is
    the last op on its core, starting when the producer finishes and lasting its epilogue, when every input of
    the op from outside the producer's group arrived before the group's head started (the group is one launch
    that has started already). Ties with the op's other options go to the fused one."""

    def __init__(self, costs: CostModel, assignment, start, finish, busy) -> None:
        self.costs, self.assignment, self.start, self.finish, self.busy = costs, assignment, start, finish, busy
        self.fused: dict[str, str] = {}
        self.head: dict[str, str] = {}  # fused op -> its group's head
        self.core: dict[str, int] = {}  # op on a serial device -> its core
        self.taken: set[str] = set()  # producers with a fused consumer

    def option(self, v: str, budget, unit_price):
        """The best fused option of ``v``: ``(key, device, start, core, seconds, producer)`` or ``None``."""
        costs, a, finish = self.costs, self.assignment, self.finish
        best = None
        for p, per_dev in costs.fusion.get(v, {}).items():
            dev = a.get(p)
            if dev not in per_dev or p in self.taken or p not in self.core:
                continue
            if self.busy[dev][self.core[p]].end != finish[p]:
                continue  # something runs after the producer already
            if dev in budget and costs.need[v][dev] > budget[dev]:
                continue
            h = self.head.get(p, p)
            preds = list(costs.workload.graph.predecessors(v))
            if not all(costs.carried(u, v, a[u], dev) for u in preds):
                continue
            outside = [u for u in preds if self.head.get(u, u) != h]
            if any(finish[u] + costs.transfer_time(u, v, a[u], dev) > self.start[h] for u in outside):
                continue
            epi = per_dev[dev]
            penalty = unit_price[dev] * costs.need[v][dev] if dev in budget else 0.0
            key = (finish[p] + epi + penalty, dev != costs.host, dev)
            if best is None or key < best[0]:
                best = (key, dev, finish[p], self.core[p], epi, p)
        return best

    def placed(self, v: str, core: int | None, producer: str | None) -> None:
        """``v`` was placed on ``core`` (``None``: a device whose ops overlap), fused into ``producer`` or not."""
        if core is not None:
            self.core[v] = core
        if producer is not None:
            self.fused[v] = producer
            self.taken.add(producer)
            self.head[v] = self.head.get(producer, producer)


class _Core:
    """The busy time of one core as its idle gaps before the last busy end (sorted, disjoint) and that end:
    the earliest fitting slot is found among the gaps only (a back-to-back core has none), not among all the
    intervals scheduled so far."""

    __slots__ = ("end", "gaps")

    def __init__(self) -> None:
        self.end = 0.0
        self.gaps: list[tuple[float, float]] = []

    def earliest(self, ready: float, dur: float) -> float:
        """Earliest start >= ``ready`` of a ``dur``-long slot (insertion-based, HEFT)."""
        gaps = self.gaps
        for gs, ge in gaps[max(0, bisect.bisect_left(gaps, (ready,)) - 1):]:
            if ge <= ready:
                continue
            st = max(gs, ready)
            if ge - st >= dur:
                return st
        return max(ready, self.end)

    def insert(self, s: float, f: float) -> None:
        """Mark ``[s, f)`` busy (a slot :meth:`earliest` returned)."""
        if s >= self.end:
            if s > self.end:
                self.gaps.append((self.end, s))
            self.end = f
            return
        i = bisect.bisect_right(self.gaps, (s, float("inf"))) - 1
        gs, ge = self.gaps[i]
        new = ([(gs, s)] if s > gs else []) + ([(f, ge)] if ge > f else [])
        self.gaps[i:i + 1] = new
