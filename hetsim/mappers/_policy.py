"""Mappers that choose a device **and a weight policy** per op (:mod:`hetsim.weights`): resident, streamed from a
memory, or reprogrammed into a CIM's time-shared crossbars.

Used only on platforms where some device reads weights from a memory (:func:`hetsim.weights.weight_option_platform`);
elsewhere ``greedy``, ``heft`` and ``cpsat`` run their resident-only searches unchanged, so their schedules on
every other platform are exactly what they were.

* :func:`greedy_policies` and :func:`heft_policies`: the heuristics with every (device, policy) option of an op
  as a candidate;
* :func:`cpsat_policies`: an exact CP-SAT model (ours) of the choice: one Boolean per (op, device, policy,
  memory), the op's duration the chosen option's, one capacity row per device (resident) and per memory
  (streamed and reprogrammed weights), serial devices and each CIM's time-shared crossbars as no-overlap
  resources, transfers between devices on the data edges (CPU-CIM ILP Eq. 8); minimise the makespan.
"""

from __future__ import annotations

import copy
import time

from hetsim.costs import CostModel
from hetsim.errors import MappingError
from hetsim.mappers import _cpsat_sigint
from hetsim.mappers.base import make_schedule
from hetsim.schedule import Schedule, WeightPolicy
from hetsim.sim.analytic import list_schedule
from hetsim.weights import WeightStep, as_policies, bind, options, policy_step, reprogram_chain

#: one option of an op: (device, policy, memory, latency s, resident need, step or None)
Option = tuple[str, str, str | None, float, int, WeightStep | None]


def op_options(costs: CostModel) -> dict[str, list[Option]]:
    """Every (device, policy, memory) an op may run under, with its latency, resident need and step."""
    out: dict[str, list[Option]] = {}
    for v, lat in costs.latency.items():
        opts: list[Option] = []
        for d, t in lat.items():
            for pol, mem in options(costs, v, d):
                if pol == "resident":
                    opts.append((d, pol, None, t, costs.need.get(v, {}).get(d, 0), None))
                    continue
                st = policy_step(costs, v, d, pol, mem)
                if isinstance(st, WeightStep):
                    opts.append((d, pol, mem, st.latency_s, 0, st))
        out[v] = opts
    return out


def proxy(costs: CostModel, assignment: dict[str, str], choice: dict[str, Option]):
    """A shallow copy of ``costs`` whose latency gives each op its chosen option's (for evaluations), and the
    control dependencies chaining each CIM's reprogrammed ops in topological order."""
    p = copy.copy(costs)
    p.latency = dict(costs.latency)
    steps = {}
    for v, o in choice.items():
        if o[5] is not None and assignment[v] == o[0]:
            p.latency[v] = {**p.latency[v], o[0]: o[3]}
            steps[v] = o[5]
    return p, reprogram_chain(costs, steps, costs.workload.topological_order())


def makespan(costs: CostModel, assignment: dict[str, str], choice: dict[str, Option]) -> float:
    """Contention-free makespan of ``assignment`` with the ops' chosen options."""
    p, after = proxy(costs, assignment, choice)
    return list_schedule(p, assignment, after=after)[2]


def upgrade(costs: CostModel, assignment: dict[str, str], choice: dict[str, Option]) -> dict[str, Option]:
    """``choice`` with streamed and reprogrammed ops made resident on their device where its resident capacity
    is left, by latency saved, then weight bytes (ties: topological position): a resident op is never slower (it
    skips the read), so no op finishes later, and the memory traffic only drops."""
    used = dict.fromkeys(costs.budget, 0)
    for v, d in assignment.items():
        o = choice.get(v)
        if d in used and (o is None or o[1] == "resident"):
            used[d] += costs.need.get(v, {}).get(d, 0)
    rank = {v: i for i, v in enumerate(costs.workload.topological_order())}
    cands = []
    for v, o in choice.items():
        if o[1] == "resident" or assignment[v] != o[0]:
            continue
        # every device an op runs on offers it resident (hetsim.weights.options), as op_options builds it
        r = (o[0], "resident", None, costs.latency[v][o[0]], costs.need.get(v, {}).get(o[0], 0), None)
        if r[3] <= o[3]:
            cands.append((-(o[3] - r[3]), -o[5].nbytes, rank[v], v, r))
    out = dict(choice)
    for *_, v, r in sorted(cands):
        d = r[0]
        if d not in used or used[d] + r[4] <= costs.budget[d]:
            if d in used:
                used[d] += r[4]
            out[v] = r
    return out


def build(costs: CostModel, assignment: dict[str, str], choice: dict[str, Option], mapper: str, stats: dict,
          order: dict[str, list[str]] | None = None, chain: list[str] | None = None,
          keep_resident: bool = True) -> Schedule:
    """The schedule of ``assignment`` with its ops' chosen options: policies, the chain of each CIM's
    reprogrammed ops (in ``chain`` order, default topological) as control dependencies, times from the bound cost
    model. ``keep_resident``: first make ops resident where capacity is left (:func:`upgrade`)."""
    if keep_resident:
        choice = upgrade(costs, assignment, choice)
    pols = as_policies({v: (o[1], o[2]) for v, o in choice.items() if assignment[v] == o[0]})
    tmp = Schedule(mapper, parts=assignment, policies=pols)
    bound = bind(costs, tmp)
    steps = getattr(bound, "weight_steps", {})
    after = reprogram_chain(costs, steps, chain or costs.workload.topological_order())
    stats = dict(stats)
    stats["weight_policies"] = {p: sum(1 for w in pols.values() if w.policy == p) for p in ("streamed", "reprogrammed")}
    return make_schedule(bound, assignment, mapper, stats, order=order, after=after, policies=pols)


def _fits(o: Option, budget: dict[str, int], mem_left: dict[str, int]) -> bool:
    d, pol, mem, _, need, st = o
    if pol == "resident":
        return d not in budget or need <= budget[d]
    return st.nbytes <= mem_left.get(mem, 0)


def _take(o: Option, budget: dict[str, int], mem_left: dict[str, int], sign: int = 1) -> None:
    d, pol, mem, _, need, st = o
    if pol == "resident":
        if d in budget:
            budget[d] -= sign * need
    else:
        mem_left[mem] -= sign * st.nbytes


def greedy_policies(costs: CostModel, mapper: str, min_gain: float = 0.0) -> Schedule:
    """Greedy offloading with weight policies (ours): ops in order of the most host time any option saves; each
    option that fits (resident: the device's remaining capacity; streamed/reprogrammed: the memory's) is tried
    and the one giving the shortest contention-free makespan kept if it beats the current one. A second pass
    moves streamed and reprogrammed ops to resident where capacity is left, by latency saved per unit of
    capacity, while the makespan drops."""
    from hetsim.mappers.greedy import carried

    t0 = time.perf_counter()
    host = costs.host
    g = costs.workload.graph
    topo = costs.workload.topological_order()
    opts = op_options(costs)
    budget = dict(costs.budget)
    mem_left = {n: m.size_bytes for n, m in costs.platform.memories.items() if m.weights_for}
    assignment = costs.initial_assignment()
    choice: dict[str, Option] = {}
    for v, d in assignment.items():  # ops only an accelerator runs: their fastest option that fits
        if d != host:
            fit = [o for o in opts[v] if o[0] == d and _fits(o, budget, mem_left)]
            if not fit:
                raise MappingError(f"{mapper}: op {v!r} runs only on {d!r}, whose capacity is used up")
            choice[v] = min(fit, key=lambda o: o[3])
            _take(choice[v], budget, mem_left)
    best = makespan(costs, assignment, choice)
    saved = {v: max((costs.latency[v][host] - o[3] for o in opts[v] if o[0] != host), default=0.0)
             for v in topo if assignment[v] == host}
    rank = {v: i for i, v in enumerate(topo)}
    evaluated = 0
    for v in sorted((v for v in saved if saved[v] > 0), key=lambda v: (-saved[v], rank[v])):
        top = None
        for o in opts[v]:
            if o[0] == host or o[3] >= costs.latency[v][host] or not _fits(o, budget, mem_left):
                continue
            if not carried(costs, g, assignment, v, o[0]):
                continue
            assignment[v], choice[v] = o[0], o
            evaluated += 1
            ms = makespan(costs, assignment, choice)
            if ms < best * (1.0 - min_gain) and ms < best and (top is None or ms < top[0]):
                top = (ms, o)
        assignment[v] = host
        choice.pop(v, None)
        if top is not None:
            best, o = top
            assignment[v], choice[v] = o[0], o
            _take(o, budget, mem_left)
    upgrades = []
    for v, o in choice.items():
        if o[1] == "resident":
            continue
        for r in opts[v]:
            if r[0] == o[0] and r[1] == "resident" and r[3] < o[3]:
                upgrades.append(((o[3] - r[3]) / max(r[4], 1), v, r))
    for _, v, r in sorted(upgrades, key=lambda x: (-x[0], rank[x[1]])):
        if not _fits(r, budget, mem_left):
            continue
        old = choice[v]
        choice[v] = r
        evaluated += 1
        ms = makespan(costs, assignment, choice)
        if ms < best:
            best = ms
            _take(old, budget, mem_left, -1)
            _take(r, budget, mem_left)
        else:
            choice[v] = old
    stats = {"status": "heuristic", "evaluated": evaluated, "capacity_left": budget, "memory_left_b": mem_left,
             "offloaded": sum(1 for d in assignment.values() if d != host), "solve_time_s": time.perf_counter() - t0}
    return build(costs, assignment, choice, mapper, stats)


def heft_policies(costs: CostModel, mapper: str, prices: tuple[float, ...]) -> Schedule:
    """HEFT (Topcuoglu et al., IEEE TPDS 2002) over every (device, policy) option of an op (ours): the earliest
    finish time, plus ``price * need / budget`` for resident options as in ``heft``; a CIM's reprogrammed ops take
    its time-shared crossbars one after another. The price sweep keeps the shortest makespan (heft's own,
    :func:`hetsim.mappers.heft.price_sweep`)."""
    from hetsim.mappers.heft import price_sweep

    t0 = time.perf_counter()
    opts = op_options(costs)
    return price_sweep(costs, prices, lambda price, base: _heft_once(costs, mapper, price, base, opts), t0)


def _heft_once(costs: CostModel, mapper: str, price: float, base: float, opts: dict[str, list[Option]]) -> Schedule:
    g = costs.workload.graph
    topo = costs.workload.topological_order()
    pos = {v: i for i, v in enumerate(topo)}
    budget = dict(costs.budget)
    unit_price = {d: price * (base / max(c, 1)) for d, c in budget.items()}
    mem_left = {n: m.size_bytes for n, m in costs.platform.memories.items() if m.weights_for}
    caps = costs.serial_devices()
    host = costs.host
    linked = costs.carried
    rank: dict[str, float] = {}
    for v in reversed(topo):
        w = sum(o[3] for o in opts[v]) / len(opts[v])
        rank[v] = w + max((rank[s] for s in g.successors(v)), default=0.0)
    prio = sorted(topo, key=lambda v: (-rank[v], pos[v]))
    rp = {v: i for i, v in enumerate(prio)}
    if any(rp[u] > rp[v] for u, v in g.edges):
        prio = topo
    free = {d: [0.0] * c for d, c in caps.items()}
    pool: dict[str, float] = {}
    assignment: dict[str, str] = {}
    choice: dict[str, Option] = {}
    start: dict[str, float] = {}
    finish: dict[str, float] = {}
    for v in prio:
        top = None
        for o in opts[v]:
            dev, pol, _, dur, need, _ = o
            if not _fits(o, budget, mem_left):
                continue
            if not all(linked(u, v, assignment[u], dev) for u in g.predecessors(v)):
                continue
            ready = max((finish[u] + costs.transfer_time(u, v, assignment[u], dev) for u in g.predecessors(v)),
                        default=0.0)
            if pol == "reprogrammed":
                ready = max(ready, pool.get(dev, 0.0))
            s = max(ready, min(free[dev])) if dev in free else ready
            penalty = unit_price[dev] * need if pol == "resident" and dev in budget else 0.0
            key = (s + dur + penalty, dev != host, dev, pol)
            if top is None or key < top[0]:
                top = (key, o, s)
        if top is None:
            raise MappingError(f"{mapper}: no device that runs {v!r} has capacity left and a link to its inputs")
        _, o, s = top
        dev = o[0]
        f = s + o[3]
        assignment[v], choice[v], start[v], finish[v] = dev, o, s, f
        if dev in free:
            i = min(range(len(free[dev])), key=lambda k: free[dev][k])
            free[dev][i] = f
        if o[1] == "reprogrammed":
            pool[dev] = f
        _take(o, budget, mem_left)
    order = {d: sorted((v for v in topo if assignment[v] == d), key=lambda v: (start[v], pos[v])) for d in caps}
    chain = sorted(topo, key=lambda v: (start[v], pos[v]))
    stats = {"status": "heuristic", "heft_makespan_s": max(finish.values(), default=0.0),
             "offloaded": sum(1 for d in assignment.values() if d != host)}
    return build(costs, assignment, choice, mapper, stats, order=order, chain=chain)


def cpsat_policies(costs: CostModel, mapper: str, time_limit_s: float, threads: int, seed: int,
                   resolution_s: float | None = None) -> Schedule:
    """The exact CP-SAT model of device and weight-policy choice (module docstring). Durations are in ticks of
    ``resolution_s`` (default: 1e-7 of the all-host makespan), rounded up, so the model's makespan bounds the
    replay's; the best of the model's schedule and the two heuristics' (greedy, heft) is returned, evaluated
    exactly. ``status`` is ``optimal`` when CP-SAT proves its model optimal (to within one tick per op)."""
    from ortools.sat.python import cp_model

    t0 = time.perf_counter()
    heur = [greedy_policies(costs, mapper), heft_policies(costs, mapper, (0.0, 0.1, 1.0))]
    g = costs.workload.graph
    topo = costs.workload.topological_order()
    opts = op_options(costs)
    caps = costs.serial_devices()
    host_ms = sum(costs.latency[v].get(costs.host, max(costs.latency[v].values())) for v in topo)
    ub_s = min(h.makespan_s for h in heur)
    horizon_s = max(host_ms, ub_s) * 1.01 + sum(max((costs.transfer_time(u, v, a, b) for a in costs.latency[u]
                                                     for b in costs.latency[v]), default=0.0) for u, v in g.edges)
    tick = resolution_s or max(host_ms, 1e-12) * 1e-7

    def ticks(x: float) -> int:
        return int(-(-x // tick)) if x > 0 else 0

    H = ticks(horizon_s) + 1
    m = cp_model.CpModel()
    x, y, start, end = {}, {}, {}, {}
    intervals: dict[str, list] = {}
    pools: dict[str, list] = {}
    cap_rows: dict[str, list] = {}
    mem_rows: dict[str, list] = {}
    for v in topo:
        start[v] = m.NewIntVar(0, H, f"s_{v}")
        end[v] = m.NewIntVar(0, H, f"e_{v}")
        lits = []
        for k, (d, pol, mem, dur, need, st) in enumerate(opts[v]):
            b = m.NewBoolVar(f"x_{v}_{k}")
            x[v, k] = b
            lits.append(b)
            dt = ticks(dur)
            m.Add(end[v] == start[v] + dt).OnlyEnforceIf(b)
            iv = m.NewOptionalFixedSizeIntervalVar(start[v], dt, b, f"i_{v}_{k}")
            if d in caps:
                intervals.setdefault(d, []).append(iv)
            if pol == "reprogrammed":
                pools.setdefault(d, []).append(iv)
            if pol == "resident" and d in costs.budget and need:
                cap_rows.setdefault(d, []).append(need * b)
            if pol != "resident":
                mem_rows.setdefault(mem, []).append(st.nbytes * b)
        m.AddExactlyOne(lits)
        for d in {o[0] for o in opts[v]}:
            yv = m.NewBoolVar(f"y_{v}_{d}")
            m.Add(sum(x[v, k] for k, o in enumerate(opts[v]) if o[0] == d) == yv)
            y[v, d] = yv
    for d, ivs in intervals.items():
        if caps[d] == 1:
            m.AddNoOverlap(ivs)
        else:
            m.AddCumulative(ivs, [1] * len(ivs), caps[d])
    for ivs in pools.values():
        m.AddNoOverlap(ivs)
    for d, row in cap_rows.items():
        m.Add(sum(row) <= costs.budget[d])
    for mem, row in mem_rows.items():
        m.Add(sum(row) <= costs.platform.memories[mem].size_bytes)
    for u, v in g.edges:
        m.Add(start[v] >= end[u])
        for du in {o[0] for o in opts[u]}:
            for dv in {o[0] for o in opts[v]}:
                if not costs.carried(u, v, du, dv):
                    m.AddBoolOr([y[u, du].Not(), y[v, dv].Not()])
                    continue
                t = ticks(costs.transfer_time(u, v, du, dv))
                if t:
                    m.Add(start[v] >= end[u] + t).OnlyEnforceIf([y[u, du], y[v, dv]])
    T = m.NewIntVar(0, H, "T")
    for v in topo:
        if g.out_degree(v) == 0:
            m.Add(end[v] <= T)
    m.Minimize(T)
    best_h = min(heur, key=lambda h: h.makespan_s)  # hint: the better heuristic's choice
    for v in topo:
        d, pol = best_h.device_of(v), best_h.policy_of(v)
        for k, o in enumerate(opts[v]):
            m.AddHint(x[v, k], int(o[0] == d and o[1] == pol))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(0.1, time_limit_s - (time.perf_counter() - t0))
    solver.parameters.num_workers = threads
    solver.parameters.random_seed = seed
    code = _cpsat_sigint.solve(solver, m)  # SIGINT left as it was (ortools resets it)
    status = {cp_model.OPTIMAL: "optimal", cp_model.FEASIBLE: "time_limit"}.get(code, "infeasible")
    cands = list(heur)
    if status != "infeasible":
        assignment, choice = {}, {}
        for v in topo:
            k = next(k for k in range(len(opts[v])) if solver.Value(x[v, k]))
            choice[v] = opts[v][k]
            assignment[v] = opts[v][k][0]
        pos = {v: i for i, v in enumerate(topo)}
        sv = {v: solver.Value(start[v]) for v in topo}
        order = {d: sorted((v for v in topo if assignment[v] == d), key=lambda v: (sv[v], pos[v])) for d in caps}
        chain = sorted(topo, key=lambda v: (sv[v], pos[v]))
        cands.insert(0, build(costs, assignment, choice, mapper, {}, order=order, chain=chain))
    sched = min(cands, key=lambda s: s.makespan_s)  # the model's own schedule first on a tie
    bound_s = solver.BestObjectiveBound() * tick if status != "infeasible" else None
    sched.stats.update({
        "status": "heuristic" if status == "infeasible" else status,
        "solver": "cp-sat (weight policies)", "resolution_s": tick, "bound_s": bound_s,
        "incumbent_s": sched.makespan_s, "variables": len(x), "operators": len(topo),
        "mip_gap": (max(0.0, (sched.makespan_s - bound_s) / sched.makespan_s)
                    if bound_s is not None and sched.makespan_s > 0 else None),
        "solve_time_s": time.perf_counter() - t0,
    })
    return sched


__all__ = ["WeightPolicy", "cpsat_policies", "greedy_policies", "heft_policies", "op_options"]
