"""``greedy``: offload the ops that save the most host time per share of an accelerator's capacity, while it
pays."""

from __future__ import annotations

import time

from hetsim.costs import CostModel
from hetsim.errors import MappingError
from hetsim.mappers._listsched import carried
from hetsim.mappers._policy import fuse_after_search, greedy_policies
from hetsim.mappers._throughput import check_objective, map_one
from hetsim.mappers.base import capacity_budget, fuse_where_placed, fused_order, make_schedule, register
from hetsim.schedule import Schedule
from hetsim.sim.analytic import list_schedule
from hetsim.weights import weight_option_platform


@register("greedy")
class Greedy:
    """Greedy offloading under every device's resident capacity (the crossbar budget of CPU-CIM ILP Eq. 14,
    generalised).

    Where a device fuses ops (:attr:`~hetsim.costs.CostModel.fusion`), every mapping is evaluated with the fused
    groups its placement allows (:func:`~hetsim.mappers.base.fuse_where_placed`) and without, the shorter kept,
    and an op is also tried together with the consumers it could fuse one after the other (a conv with its SiLU);
    the search runs with fused options and without, and the shorter makespan is kept (ties: fused).

    Candidates are (op, accelerator) pairs where the accelerator is faster than the host; they are visited best
    first by host time saved per share of the accelerator's resident capacity, ``(T_host - T_acc) / (need /
    budget)`` (with one CIM device: time saved per crossbar; an accelerator without a resident capacity, or an
    op needing none of it, comes first by time saved; ties: topological position, then device order). Ops are
    taken in the order of their best candidate; each of the op's candidate devices that still holds it is
    tried, and the one giving the shortest contention-free makespan (transfers included) of the current
    mapping is kept if that makespan is shorter than the current one; otherwise the op stays on the host. Each
    op is offloaded at most once. A device no link joins to the device of one of the op's neighbours (the
    platform's links need not join every pair of accelerators) is skipped. Cost: one ``O(V + E)`` evaluation per
    candidate that fits.

    On a platform whose devices read weights from a memory, each op's options are (device, weight policy):
    :func:`hetsim.mappers._policy.greedy_policies`.

    Args:
        min_gain: relative makespan improvement an offload must bring to be kept (default: any strict gain).
        objective: ``latency`` (the makespan, above) or ``throughput`` (the busiest resource's load, a local
            search from this mapping: :mod:`hetsim.mappers._throughput`).
    """

    throughput_method = "heuristic"

    def __init__(self, min_gain: float = 0.0, objective: str = "latency"):
        self.min_gain = min_gain
        self.objective = check_objective("greedy", objective)

    def map(self, costs: CostModel) -> Schedule:
        if self.objective == "throughput":
            return map_one(self, costs)
        if weight_option_platform(costs.platform):  # device and weight policy per op (hetsim/mappers/_policy.py)
            return fuse_after_search(costs, greedy_policies(costs, self.name, self.min_gain))
        if not costs.fusion:
            return self._greedy(costs)
        # with fused options and without, the shorter kept (ties: fused): fusion never makes greedy slower
        fused, plain = self._greedy(costs), self._greedy(costs.without_fusion())
        return fused if fused.makespan_s <= plain.makespan_s else plain

    def _greedy(self, costs: CostModel) -> Schedule:
        t0 = time.perf_counter()
        host = costs.host
        topo = costs.workload.topological_order()
        rank = {v: i for i, v in enumerate(topo)}
        budget = capacity_budget(costs)
        assignment = costs.initial_assignment()
        for v, d in assignment.items():  # ops only an accelerator runs are placed first
            if d in budget:
                budget[d] -= costs.need[v][d]
                if budget[d] < 0:
                    cap = costs.resident[d]
                    raise MappingError(f"greedy: ops the host cannot run need more {cap.name} than {d!r} has "
                                       f"({cap.source})")
        g = costs.workload.graph
        accels = [d for d in costs.platform.devices if d != host]
        dev_rank = {d: i for i, d in enumerate(accels)}
        cands = []
        for v in topo:
            if assignment[v] != host:
                continue
            t_host = costs.latency[v][host]
            for dev in accels:
                t_acc = costs.latency[v].get(dev)
                epi = [t[dev] for t in costs.fusion.get(v, {}).values() if dev in t]  # fused, if its producer is
                if epi and t_acc is not None:
                    t_acc = min(t_acc, *epi)
                if t_acc is None or t_acc >= t_host:
                    continue
                if dev in budget:
                    n = costs.need[v][dev]
                    if n > budget[dev]:
                        continue
                    # (saved / n) * budget, not saved / (n / budget): the same order, exact ties kept
                    score = (t_host - t_acc) / n * costs.budget[dev] if n else float("inf")
                else:
                    n, score = 0, float("inf")
                cands.append((score, t_host - t_acc, v, dev, n))
        cands.sort(key=lambda c: (-c[0], -c[1] if c[0] == float("inf") else 0.0, rank[c[2]], dev_rank[c[3]]))
        best = _makespan(costs, assignment)[0]
        evaluated = 0
        per_op: dict[str, list[tuple[str, int]]] = {}
        for _, _, v, dev, n in cands:  # an op's devices in candidate order; ops in order of their best candidate
            per_op.setdefault(v, []).append((dev, n))
        for v, options in per_op.items():
            if assignment[v] != host:
                continue  # moved already, with the fused chain of an op before it
            choice, n_eval = self._best_move(costs, g, assignment, v, options, budget, best, host)
            evaluated += n_eval
            if choice is not None:
                best, dev, n, members = choice
                for m in members:
                    assignment[m] = dev
                if dev in budget:
                    budget[dev] -= n
        stats = {
            "candidates": len(cands),
            "evaluated": evaluated,
            "capacity_left": budget,
            "offloaded": sum(1 for d in assignment.values() if d != host),
            "solve_time_s": time.perf_counter() - t0,
        }
        fused = _makespan(costs, assignment)[1]
        if fused:
            stats["fused"] = len(fused)
        return make_schedule(costs, assignment, self.name, stats, fused=fused)

    def _best_move(self, costs: CostModel, g, assignment: dict[str, str], v: str, options, budget, best: float,
                   host: str):
        """The best move of ``v`` (on the host) to one of its candidate devices ``options`` (``(device, need)``),
        alone or with the consumers it could fuse (:func:`_moves`): ``((makespan, device, need, ops moved) or
        None, evaluations)``; ``None`` when no move shortens the makespan ``best`` (by ``min_gain``). The
        assignment is left as it was."""
        choice, evaluated = None, 0
        for dev, n in options:  # every device that still holds the op: keep the shortest makespan
            for members in _moves(costs, g, assignment, v, dev, host):
                need = n + sum(costs.need.get(c, {}).get(dev, 0) for c in members[1:])
                if dev in budget and need > budget[dev]:
                    continue
                ok = True
                for m in members:  # a neighbour's device has no link to dev: skipped
                    ok = ok and carried(costs, g, assignment, m, dev)
                    assignment[m] = dev
                if ok:
                    evaluated += 1
                    ms = _makespan(costs, assignment)[0]
                    if ms < best * (1.0 - self.min_gain) and ms < best and (choice is None or ms < choice[0]):
                        choice = (ms, dev, need, members)
                for m in members:
                    assignment[m] = host
        return choice, evaluated


def _moves(costs: CostModel, g, assignment: dict[str, str], v: str, dev: str, host: str):
    """The ops to move to ``dev`` together: ``[v]``, then, where ``dev`` fuses ops, ``v`` with the chain of
    consumers on the host it could fuse one after the other (each the first such consumer of the previous in
    graph order), every prefix of two ops or more: moving a conv alone rarely pays for the transfer its
    activation then needs, moving the group does."""
    yield [v]
    if not costs.fusion:
        return
    chain, tail = [v], v
    while True:
        nxt = next((c for c in g.successors(tail) if assignment[c] == host and c not in chain
                    and dev in costs.fusion.get(c, {}).get(tail, {})), None)
        if nxt is None:
            return
        chain.append(nxt)
        tail = nxt
        yield list(chain)


def _makespan(costs: CostModel, assignment: dict[str, str]) -> tuple[float, dict[str, str]]:
    """The contention-free makespan of ``assignment`` and its fused groups: where devices fuse ops, the shorter of
    the mapping with the groups :func:`~hetsim.mappers.base.fuse_where_placed` forms and without any (then
    ``{}``); ties go to the fused one."""
    _, _, plain = list_schedule(costs, assignment)
    fused = fuse_where_placed(costs, assignment)
    if not fused:
        return plain, {}
    _, _, ms = list_schedule(costs, assignment, fused_order(costs, assignment, fused), fused=fused)
    return (ms, fused) if ms <= plain else (plain, {})

