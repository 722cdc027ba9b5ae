"""``greedy``: offload the ops that save the most host time per crossbar, while it pays."""

from __future__ import annotations

import time

from hetsim.costs import CostModel
from hetsim.errors import MappingError
from hetsim.mappers.base import crossbar_budget, make_schedule, register
from hetsim.schedule import Schedule
from hetsim.sim.analytic import list_schedule


@register("greedy")
class Greedy:
    """Greedy offloading under the crossbar budget (seed 000 Eq. 14).

    Candidates are (op, CIM device) pairs where the device is faster than the host; they are visited best
    first by host time saved per crossbar, ``(T_host - T_acc) / N_crossbar`` (ties: topological position).
    A candidate is kept when it fits the device's remaining crossbars and offloading it shortens the
    contention-free makespan (transfers included) of the current mapping; otherwise it is skipped. Each
    op is offloaded at most once. Cost: one ``O(V + E)`` evaluation per candidate that fits.

    Args:
        min_gain: relative makespan improvement an offload must bring to be kept (default: any strict gain).
    """

    def __init__(self, min_gain: float = 0.0):
        self.min_gain = min_gain

    def map(self, costs: CostModel) -> Schedule:
        t0 = time.perf_counter()
        host = costs.host
        topo = costs.workload.topological_order()
        rank = {v: i for i, v in enumerate(topo)}
        budget = crossbar_budget(costs)
        assignment = costs.initial_assignment()
        for v, d in assignment.items():  # ops only an accelerator runs are placed first
            if d in budget:
                budget[d] -= costs.n_crossbar[v][d]
                if budget[d] < 0:
                    raise MappingError(
                        f"greedy: ops the host cannot run need more crossbars than {d!r} has (seed 000 Eq. 14)"
                    )
        cands = []
        for v in topo:
            if assignment[v] != host:
                continue
            t_host = costs.latency[v][host]
            for dev in budget:
                t_acc = costs.latency[v].get(dev)
                n = costs.n_crossbar.get(v, {}).get(dev, 0)
                if t_acc is not None and t_acc < t_host and 0 < n <= budget[dev]:
                    cands.append(((t_host - t_acc) / n, v, dev, n))
        cands.sort(key=lambda c: (-c[0], rank[c[1]], c[2]))
        _, _, best = list_schedule(costs, assignment)
        evaluated = 0
        for _, v, dev, n in cands:
            if assignment[v] != host or n > budget[dev]:
                continue
            assignment[v] = dev
            evaluated += 1
            _, _, ms = list_schedule(costs, assignment)
            if ms < best * (1.0 - self.min_gain) and ms < best:
                best = ms
                budget[dev] -= n
            else:
                assignment[v] = host
        stats = {
            "candidates": len(cands),
            "evaluated": evaluated,
            "crossbars_left": budget,
            "offloaded": sum(1 for d in assignment.values() if d != host),
            "solve_time_s": time.perf_counter() - t0,
        }
        return make_schedule(costs, assignment, self.name, stats)
