"""What the list-scheduling heuristics share: whether an op's edges can be carried on a candidate device
(``greedy`` and :func:`hetsim.mappers._policy.greedy_policies`) and HEFT's capacity-price sweep (``heft`` and
:func:`hetsim.mappers._policy.heft_policies`). Below both: it imports no mapper."""

from __future__ import annotations

import time
from collections.abc import Callable

from hetsim.costs import CostModel
from hetsim.schedule import Schedule


def carried(costs: CostModel, g, assignment: dict[str, str], v: str, dev: str) -> bool:
    """True when every edge of ``v`` can be carried with ``v`` on ``dev`` and its neighbours where
    ``assignment`` puts them: nothing moves, or a link joins the two devices (neighbours missing from
    ``assignment`` are not checked; :meth:`~hetsim.costs.CostModel.carried`)."""
    return (all(costs.carried(u, v, assignment[u], dev) for u in g.predecessors(v) if u in assignment)
            and all(costs.carried(v, w, dev, assignment[w]) for w in g.successors(v) if w in assignment))


def price_sweep(costs: CostModel, prices, once: Callable[[float, float], Schedule],
                t0: float | None = None) -> Schedule:
    """HEFT's capacity-price sweep (:class:`hetsim.mappers.heft.Heft`): ``once(price, base)`` for each price of
    ``prices`` (``base``: the all-host time, s), keeping the schedule of the smallest makespan (ties: the earlier
    price), its stats given ``capacity_price_s`` (price x base), ``solve_time_s`` (since ``t0``, default now) and
    ``prices_tried``. Used by ``heft`` and by :func:`hetsim.mappers._policy.heft_policies`."""
    t0 = time.perf_counter() if t0 is None else t0
    base = sum(costs.latency[v][costs.host] for v in costs.workload.graph if costs.host in costs.latency[v])
    best = None
    for price in prices:
        sched = once(price, base)
        if best is None or sched.makespan_s < best.makespan_s:
            best = sched
            best.stats["capacity_price_s"] = price * base
    best.stats["solve_time_s"] = time.perf_counter() - t0
    best.stats["prices_tried"] = len(prices)
    return best
