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
  resources, transfers between devices on the data edges (CPU-CIM ILP Eq. 8); minimise the makespan. Its root
  lower bounds (critical path, LP relaxation, HiGHS's branch and bound on it) are :mod:`hetsim.mappers.
  _policy_bounds`'.

None of these searches models fused operator groups; :func:`fuse_after_search` fuses a schedule's ops where they
are placed afterwards (kept when not slower), and says so.
"""

from __future__ import annotations

import copy
import time

from hetsim.costs import CostModel
from hetsim.errors import InternalError, MappingError
from hetsim.mappers import _bounds as B
from hetsim.mappers import _cpsat_sigint
from hetsim.mappers import _policy_bounds as PB
from hetsim.mappers._limits import CPSAT_WORK, Budget
from hetsim.mappers._listsched import carried, price_sweep
from hetsim.mappers.base import NO_FUSION_NOTE, fuse_where_placed, make_schedule
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


#: ``stats["fusion"]`` of a (device, weight policy) schedule whose ops were fused where placed after the search
FUSED_AFTER_NOTE = ("fused where placed after the (device, weight policy) search, which does not model fused "
                    "groups; status and bounds are for the problem without fusion")


def fuse_after_search(costs: CostModel, sched: Schedule, others: list[Schedule] = ()) -> Schedule:
    """``sched``, a (device, weight policy) schedule made without fused groups, with fused groups added after the
    search, its policies and control dependencies kept: first its ops fused where they are placed
    (:func:`~hetsim.mappers.base.fuse_where_placed`), then, in topological order, each consumer without a weight
    policy of its own moved onto its producer's device to run fused there when that is not slower (ours: ties go
    to fusion, so that a chain such as SiLU moves op by op; a greedy pass). Kept when not slower,
    ``stats["fusion"]`` saying so (:data:`FUSED_AFTER_NOTE`); else ``sched`` with
    :data:`~hetsim.mappers.base.NO_FUSION_NOTE`. ``sched`` itself when ``costs`` offers no fusion. ``others``:
    schedules of other mappers on ``costs`` (a heuristic's, fused or not); the shortest of all is returned under
    ``sched``'s mapper name, ``stats["solution_source"]`` naming the one it came from."""
    if not costs.fusion:
        return sched
    best = _fuse_after(costs, sched)
    for o in others:
        if o.makespan_s < best.makespan_s:
            stats = {k: v for k, v in best.stats.items() if k != "fused"}
            stats.update(fallback=o.mapper, solution_source=o.mapper, fallback_makespan_s=o.makespan_s,
                         solver_schedule_makespan_s=sched.makespan_s,  # its own, unfused: its gap and bound's
                         fusion=f"the schedule of {o.mapper}, shorter than the (device, weight policy) search's "
                                "fused after it; status and bounds are for the problem without fusion")
            if o.fused:
                stats["fused"] = len(o.fused)
            o.stats, o.mapper, best = stats, sched.mapper, o
    return best


def _fuse_after(costs: CostModel, sched: Schedule) -> Schedule:
    """:func:`fuse_after_search` without ``others``."""
    assignment = {v: sched.device_of(v) for v in costs.workload.ops}
    best = _fused_schedule(costs, sched, assignment)
    if best is not None and best.makespan_s > sched.makespan_s:
        best = None
    policies = sched.policies or {}
    for c in costs.workload.topological_order():
        for p, per_dev in costs.fusion.get(c, {}).items():
            d = assignment[p]
            if c in policies or assignment[c] == d or d not in per_dev:
                continue
            trial = {**assignment, c: d}
            cand = _fused_schedule(costs, sched, trial)
            if cand is not None and cand.makespan_s <= (best or sched).makespan_s:  # ties: fused (a chain)
                assignment, best = trial, cand
                break
    if best is None:
        sched.stats["fusion"] = NO_FUSION_NOTE
        return sched
    return best


def _fused_schedule(costs: CostModel, sched: Schedule, assignment: dict[str, str]) -> Schedule | None:
    """The schedule of ``assignment`` with ``sched``'s policies and control dependencies and its ops fused where
    placed; ``None`` when nothing fuses, a resident capacity is exceeded, or the groups and the control
    dependencies form a cycle."""
    fused = fuse_where_placed(costs, assignment)
    if not fused:
        return None
    pols = sched.policies or None
    bound = costs.for_schedule(Schedule(sched.mapper, parts=assignment, policies=pols))
    try:
        return make_schedule(bound, assignment, sched.mapper,
                             {**sched.stats, "fused": len(fused), "fusion": FUSED_AFTER_NOTE},
                             after=sched.after or None, policies=pols, fused=fused)
    except (InternalError, MappingError):
        return None


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
            fit = [o for o in opts[v] if o[0] == d and PB.fits(o, budget, mem_left)]
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
            if o[0] == host or o[3] >= costs.latency[v][host] or not PB.fits(o, budget, mem_left):
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
        if not PB.fits(r, budget, mem_left):
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
    :func:`hetsim.mappers._listsched.price_sweep`)."""
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
            if not PB.fits(o, budget, mem_left):
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


def cpsat_policies(costs: CostModel, mapper: str, time_limit_s: float | None, threads: int, seed: int,
                   resolution_s: float | None = None, mip_rel_gap: float = 1e-4,
                   work_limit: float | None = None) -> Schedule:
    """The exact CP-SAT model of device and weight-policy choice (module docstring). Durations are in ticks of
    ``resolution_s`` (default: 1e-7 of the all-host makespan), rounded up, so the model's makespan bounds the
    replay's; the best of the model's schedule and the two heuristics' (greedy, heft) is returned, evaluated
    exactly.

    Root bounds first (:mod:`hetsim.mappers._policy_bounds`, ours): the critical path, the LP relaxation and,
    while the gap to the heuristics' best is open, HiGHS's branch and bound on it (up to a quarter of the time
    left); when the best heuristic is within ``mip_rel_gap`` of the bound it is returned ``optimal`` without a
    search, else the bound is a row of the model (``T >= bound``) and CP-SAT stops at ``mip_rel_gap``.
    ``bound_s`` is the larger of the root bound and CP-SAT's own, less the most its rounding can add (a bound on
    the real problem); ``status`` is ``optimal`` when the real gap ``mip_gap`` is within ``mip_rel_gap`` or CP-SAT
    proves its model so (to within one tick per op and edge), ``time_limit`` otherwise, ``heuristic`` when CP-SAT
    found nothing; ``policy_bounds`` has each root bound, in seconds, and its time; ``proven_by`` says when the
    root bound alone proved the schedule (CP-SAT not run).

    Limits (:mod:`hetsim.mappers._limits`): by default deterministic, so a run gives the same schedule on any
    machine: the LP without a limit, the branch and bound up to :data:`~hetsim.mappers._policy_bounds.MILP_NODES`
    nodes, CP-SAT up to ``work_limit`` deterministic seconds (default :data:`~hetsim.mappers._limits.CPSAT_WORK`)
    with its deterministic interleaved search when ``threads > 1``. A ``time_limit_s`` caps the wall clock as
    before (the LP and the branch and bound a quarter of it each, CP-SAT the rest); alone it replaces the work
    budget."""
    from ortools.sat.python import cp_model

    t0 = time.perf_counter()
    budget = Budget(work_limit, time_limit_s, CPSAT_WORK)
    heur = [greedy_policies(costs, mapper), heft_policies(costs, mapper, (0.0, 0.1, 1.0))]
    g = costs.workload.graph
    topo = costs.workload.topological_order()
    opts = op_options(costs)
    caps = costs.serial_devices()
    host_ms = sum(costs.latency[v].get(costs.host, max(costs.latency[v].values())) for v in topo)
    ub_s = min(h.makespan_s for h in heur)
    t_b = time.perf_counter()
    wall_left = None if time_limit_s is None else time_limit_s - (t_b - t0)
    lb_s, pbs, milp_sched = _root_bound(costs, opts, ub_s, mip_rel_gap, wall_left, mapper)
    pbs["time_s"] = time.perf_counter() - t_b
    if milp_sched is not None:
        pbs["milp_schedule_s"] = milp_sched.makespan_s
        heur.append(milp_sched)
        ub_s = min(ub_s, milp_sched.makespan_s)
    best_h = min(heur, key=lambda h: h.makespan_s)  # the first of the best on a tie: greedy, heft, the relaxation's
    if ub_s - lb_s <= mip_rel_gap * ub_s:  # proven at the root: no search
        return _solver_stats(best_h, t0, status="optimal", proven_by="root bound (no search)",
                             bound_s=min(lb_s, best_h.makespan_s), operators=len(topo), policy_bounds=pbs,
                             mip_rel_gap_limit=mip_rel_gap)
    horizon_s = max(host_ms, ub_s) * 1.01 + sum(max((costs.transfer_time(u, v, a, b) for a in costs.latency[u]
                                                     for b in costs.latency[v]), default=0.0) for u, v in g.edges)
    tick = resolution_s or max(host_ms, 1e-12) * 1e-7

    def ticks(x: float) -> int:
        return int(-(-x // tick)) if x > 0 else 0

    # the most rounding up can lengthen a fixed choice and order (the same bound as cpsat's IntProblem's, over
    # this model's choices: every option of an op, and its own rounding, ticks()); an edge counts every pair of
    # its ops' devices that moves data, the unlinked ones too (the model forbids them: a looser bound, still valid)
    rounding_s = B.rounding_bound_s(
        tick, ([(o[3], ticks(o[3])) for o in opts[v]] for v in topo),
        ([(t, ticks(t)) for a in costs.latency[u] for b in costs.latency[v]
          if (t := costs.transfer_time(u, v, a, b)) > 0] for u, v in g.edges))

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
    # the root bound (real seconds) bounds the rounded model too (its durations are the real ones rounded up):
    # the makespan's lower end
    T = m.NewIntVar(min(int(lb_s // tick), H), H, "T")
    for v in topo:
        if g.out_degree(v) == 0:
            m.Add(end[v] <= T)
    m.Minimize(T)
    for v in topo:  # hint: the better heuristic's choice
        d, pol = best_h.device_of(v), best_h.policy_of(v)
        for k, o in enumerate(opts[v]):
            m.AddHint(x[v, k], int(o[0] == d and o[1] == pol))
    solver = cp_model.CpSolver()
    budget.set_params(solver.parameters, budget.left())
    if time_limit_s is not None:
        solver.parameters.max_time_in_seconds = max(0.1, solver.parameters.max_time_in_seconds)
    solver.parameters.num_workers = threads
    solver.parameters.random_seed = seed
    solver.parameters.relative_gap_limit = mip_rel_gap
    if threads > 1:  # CP-SAT's deterministic parallel search (as cpsat's)
        solver.parameters.interleave_search = True
    code = _cpsat_sigint.solve(solver, m)  # SIGINT left as it was (ortools resets it)
    budget.charge(solver, proven=code in (cp_model.OPTIMAL, cp_model.INFEASIBLE))
    status = {cp_model.OPTIMAL: "optimal", cp_model.FEASIBLE: budget.status()}.get(code, "infeasible")
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
    cp_bound = solver.BestObjectiveBound() * tick - rounding_s if status != "infeasible" else 0.0
    bound_s = min(max(lb_s, cp_bound), sched.makespan_s)
    if status != "infeasible" and _mip_gap(sched.makespan_s, bound_s) <= mip_rel_gap + 1e-15:
        status = "optimal"
    pbs["cpsat_bound_s"] = cp_bound if status != "infeasible" else None
    return _solver_stats(sched, t0, status="heuristic" if status == "infeasible" else status, resolution_s=tick,
                         bound_s=bound_s, variables=len(x), operators=len(topo), policy_bounds=pbs,
                         rounding_bound_s=rounding_s, mip_rel_gap_limit=mip_rel_gap, **budget.stats())


def _mip_gap(makespan_s: float, bound_s: float) -> float:
    """The relative gap ``(makespan - bound) / makespan`` of a schedule and a lower bound on its problem, at least
    0 (a bound above the makespan proves it), 0.0 for an empty schedule: the MIP solvers' relative gap (measured
    against the incumbent, as CP-SAT's ``relative_gap_limit`` and HiGHS's ``mip_rel_gap``)."""
    return max(0.0, (makespan_s - bound_s) / makespan_s) if makespan_s > 0 else 0.0


#: the keys :func:`cpsat_policies` adds to its schedule's statistics, in the order they are written (the summary's)
_SOLVER_STATS = ("status", "solver", "proven_by", "resolution_s", "bound_s", "incumbent_s", "variables", "operators",
                 "policy_bounds", "rounding_bound_s", "mip_gap", "mip_rel_gap_limit", "work_limit", "work_unit",
                 "time_limit_s", "work_used", "solve_time_s")


def _solver_stats(sched: Schedule, t0: float, **given) -> Schedule:
    """``sched`` with the statistics of :func:`cpsat_policies` added in :data:`_SOLVER_STATS` order (ValueError
    for a key not there): the ``given`` ones (``bound_s`` required; ``proven_by`` when the root bound proved it,
    ``resolution_s``, ``variables`` and ``rounding_bound_s`` when CP-SAT ran), the solver's name, the incumbent
    (``sched``'s makespan), its gap to ``bound_s`` (``mip_gap``, :func:`_mip_gap`) and the time since ``t0``
    (:func:`time.perf_counter`)."""
    ms = sched.makespan_s
    given.update(solver="cp-sat (weight policies)", incumbent_s=ms, mip_gap=_mip_gap(ms, given["bound_s"]),
                 solve_time_s=time.perf_counter() - t0)
    sched.stats.update(sorted(given.items(), key=lambda kv: _SOLVER_STATS.index(kv[0])))
    return sched


def _root_bound(costs: CostModel, opts: dict[str, list[Option]], ub_s: float, mip_rel_gap: float,
                time_left_s: float | None, mapper: str) -> tuple[float, dict, Schedule | None]:
    """The root bound of :func:`cpsat_policies` in seconds, its parts (:mod:`hetsim.mappers._policy_bounds`) and
    a candidate: the critical path and the LP relaxation (up to a quarter of ``time_left_s``; None: no wall-clock
    limit), then, while ``ub_s`` is more than ``mip_rel_gap`` above them, HiGHS's branch and bound on the
    relaxation (up to :data:`~hetsim.mappers._policy_bounds.MILP_NODES` nodes, and another quarter of
    ``time_left_s``; its own gap a quarter of ``mip_rel_gap``), whose best point (options, and starts as the device
    orders and the reprogramming chain) is built into a schedule (:func:`build`; None without a point)."""
    r = PB.relax(costs, opts)
    out: dict = {"critical_path_s": PB.critical_path(r)}
    rel = PB.relaxation(costs, r, ub_s if ub_s > 0 else 1.0)
    quarter = None if time_left_s is None else 0.25 * max(time_left_s, 0.4)
    out["lp_s"] = PB.lp_bound(rel, quarter, upper_s=ub_s if ub_s > 0 else None)
    lb = max(out["critical_path_s"], out["lp_s"])
    sched = None
    if ub_s - lb > mip_rel_gap * ub_s:
        out["milp_s"], out["milp_status"], point = PB.milp_bound(rel, quarter, mip_rel_gap / 4)
        lb = max(lb, out["milp_s"])
        if point is not None:
            sched = _point_schedule(costs, r, rel, point, mapper)
    out["root_bound_s"] = lb
    return lb, out, sched


def _point_schedule(costs: CostModel, r, rel, point, mapper: str) -> Schedule | None:
    """The schedule of a point of the relaxation (:func:`_root_bound`): each op's option of largest value, the
    device orders and the reprogramming chain by the point's starts (ties: topological position); None when the
    choice leaves an edge uncarried or a capacity exceeded (a point within HiGHS's tolerances may)."""
    topo = costs.workload.topological_order()
    choice = {}
    for v in topo:
        cols = rel.columns[v]
        choice[v] = r.opts[v][max(range(len(cols)), key=lambda k: (point[cols[k]], -k))]
    assignment = {v: o[0] for v, o in choice.items()}
    if not all(costs.carried(u, v, assignment[u], assignment[v]) for u, v in costs.workload.graph.edges):
        return None
    pos = {v: i for i, v in enumerate(topo)}
    sv = {v: point[rel.columns["s"][v]] for v in topo}
    chain = sorted(topo, key=lambda v: (sv[v], pos[v]))
    order = {d: [v for v in chain if assignment[v] == d] for d in costs.serial_devices()}
    try:
        sched = build(costs, assignment, choice, mapper, {"status": "heuristic", "source": "relaxation"},
                      order=order, chain=chain)
    except MappingError:
        return None
    from hetsim.check import check_schedule

    return sched if check_schedule(costs, sched).ok else None


__all__ = ["WeightPolicy", "cpsat_policies", "greedy_policies", "heft_policies", "op_options"]
