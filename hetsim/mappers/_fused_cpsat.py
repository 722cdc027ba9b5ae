"""``cpsat`` on a platform whose devices fuse ops (:attr:`hetsim.costs.CostModel.fusion`): one exact CP-SAT model
with the fused operator groups as options.

The model is ``cpsat``'s formulation (:mod:`hetsim.mappers.cpsat`: a Boolean ``l[v,d]`` per op and device, exactly
one per op, starts and ends in integer ticks, precedence with the transfer of the chosen device pair, serial
devices as optional intervals under ``AddNoOverlap`` / ``AddCumulative``, resident capacities, the makespan) plus,
per fusable triple (producer ``p``, consumer ``c``, device ``d``), a Boolean ``f[c,p,d]`` (ours):

* ``f => l[c,d] and l[p,d]``; at most one ``f`` per consumer (fused into one producer) and per producer (one
  fused consumer: a group is a chain);
* ``c``'s duration is ``sum_d dur[c,d] l[c,d] - sum (dur[c,d] - epi[c,p,d]) f[c,p,d]`` (its epilogue replaces its
  own launch);
* ``f => s_c = e_p`` (the consumer runs right after its producer, in its launch);
* a launch time ``L_v``: ``L_v = s_v`` for an op fused into nothing, ``f => L_c = L_p`` otherwise, so ``L`` is
  the start of the group's head; and every input ``u -> c`` from outside ``c``'s group arrives by ``L_c``
  (the group is one launch: :func:`hetsim.check.fusion_gates`). ``u`` is in ``c``'s group exactly when a path of
  fused edges leads from ``u`` to ``c`` (a group is a chain upstream of ``c``); the model has a Boolean per such
  path (the AND of its edges) and relaxes the arrival constraint only when one of them holds.

Every schedule with fused groups that :func:`hetsim.check.check_schedule` accepts is a solution and every
solution is such a schedule, so the optimum is exact for the rounded problem (ticks, as ``cpsat``; the real-time
bound subtracts the rounding bound, widened by one tick per fusable consumer for its epilogue). ``cpsat``'s chain
dynamic program, decomposition, bounds and variable fixing reason about ops on their own launches and are
bypassed here; greedy's and heft's fused schedules are the hint and the fallback, and so is ``cpsat``'s own
schedule without fusion unless its root bounds (:func:`unfused_bound_s`) show that it cannot beat them. The hint's
makespan is the horizon of every time variable (:func:`_build`), and a deterministic mapping runs one CP-SAT
worker (:func:`workers`).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from hetsim.costs import CostModel
from hetsim.errors import MappingError
from hetsim.mappers import _bounds as B
from hetsim.mappers import _cpsat_sigint
from hetsim.mappers._limits import Budget
from hetsim.mappers.base import make_schedule
from hetsim.schedule import Schedule

#: the most fused-edge paths between an op and a consumer it feeds that the model enumerates; beyond, ``cpsat``
#: maps without fusion and says so
MAX_PATHS = 64


class TooManyPaths(Exception):
    """An op reaches a consumer by more than :data:`MAX_PATHS` paths of fusable edges."""


def fusion_note() -> str:
    return ("exact: fused groups are options of the full CP-SAT model (chain DP, decomposition, bounds and fixing "
            "bypassed)")


def map_fused(m, costs: CostModel, heuristics: list[Schedule], budget: Budget,
              unfused: Callable[[], list[Schedule]] | None = None) -> Schedule:
    """The optimal mapping of ``costs`` with fused groups (module docstring) by the ``cpsat`` mapper ``m`` (its
    threads, seed, gap, tick, determinism and log), started from the best of ``heuristics`` (schedules of greedy
    and heft) and of ``unfused()`` (``cpsat``'s own schedule without fusion, which charges its work to
    ``budget``; not called when :func:`unfused_bound_s` shows it cannot beat the heuristics); the solver gets what
    is left of ``budget``, the mapping's limits (:class:`~hetsim.mappers._limits.Budget`: a deterministic work
    limit by default, a wall-clock cap when given).

    Raises:
        MappingError: no feasible mapping, or none found within the limits and no heuristic schedule.
        TooManyPaths: see :data:`MAX_PATHS`.
    """
    from ortools.sat.python import cp_model

    t0 = budget.t0
    g = costs.workload.graph
    heuristics, unfused_note = _with_unfused(m, costs, heuristics, unfused)
    tick = B.choose_tick(costs, m.resolution_s, _horizon_s(costs))
    p = B.build_problem(costs, tick)
    opts = [(c, q, d, B.to_ticks(epi, tick)) for c, per_p in costs.fusion.items() for q, per_d in per_p.items()
            for d, epi in per_d.items() if d in p.devices[c] and d in p.devices[q]]
    rb = p.rounding_bound_s + tick * len({c for c, *_ in opts})
    best_h = min(heuristics, key=lambda h: h.makespan_s, default=None)
    starts = _tick_starts(costs, p, opts, best_h) if best_h is not None else None
    ub = _hint_makespan(p, opts, best_h, starts)
    solve_s = 0.0
    for horizon in ([ub, None] if ub is not None else [None]):
        model, lit, f, s, aux = _build(cp_model.CpModel(), p, opts, g, horizon)
        if best_h is not None:
            _hint(model, p, lit, f, s, aux, best_h, starts)
        solver = cp_model.CpSolver()
        _parameters(solver.parameters, cp_model, m, budget)
        t_solve = time.perf_counter()
        code = _cpsat_sigint.solve(solver, model, None)
        solve_s += time.perf_counter() - t_solve
        budget.charge(solver, code == cp_model.OPTIMAL)
        if code != cp_model.INFEASIBLE or horizon is None:
            break
        # the hint's makespan as the horizon left no solution: the hint was not one (a bug of _tick_starts);
        # the model is solved again on the full horizon, so the answer stays exact
    proto = model.Proto()
    stats = {"solver": "cp-sat", "operators": len(p.ops), "variables": len(proto.variables),
             "constraints": len(proto.constraints), "tick_s": tick, "rounding_bound_s": rb,
             "mip_rel_gap_limit": m.mip_rel_gap, "threads": workers(m), "seed": m.seed,
             "deterministic": m.deterministic, "fusion": fusion_note(), "solver_calls_s": solve_s,
             "fusable_triples": len(opts), "unfused_candidate": unfused_note,
             "horizon_ticks": horizon if horizon is not None else "serial (every op at its slowest, Eq. 13)"}
    bound_ticks = None
    if code in (cp_model.OPTIMAL, cp_model.FEASIBLE, cp_model.UNKNOWN):
        b = solver.BestObjectiveBound()
        bound_ticks = int(round(b)) if abs(b) < 1 << 62 else None
    bound_s = max(0.0, bound_ticks * tick - rb) if bound_ticks is not None else None
    sched = None
    if code in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        assign = {v: next(d for d, x in lit[v].items() if solver.Value(x)) for v in p.ops}
        fused = {c: q for (c, q, _), x in f.items() if solver.Value(x)}
        starts = {v: solver.Value(s[v]) for v in p.ops}
        order = {d: sorted((v for v in p.ops if assign[v] == d), key=lambda v: (starts[v], p.pos[v]))
                 for d in p.cpus}
        ub = int(round(solver.ObjectiveValue()))
        status = "optimal" if code == cp_model.OPTIMAL else budget.status()
        stats.update(status=status, proven_exact=bound_ticks == ub, objective_ticks=ub, bound_ticks=bound_ticks,
                     solution_source="model", offloaded=sum(1 for v in p.ops if assign[v] != p.host))
        sched = make_schedule(costs, assign, m.name, stats, order=order, fused=fused)
        if sched.makespan_s > ub * tick * (1 + 1e-9) + 1e-15:
            raise MappingError(f"cpsat: real makespan {sched.makespan_s} exceeds the rounded objective {ub * tick} "
                               "(bug)")
        if fused:
            sched.stats["fused"] = len(fused)
    elif code == cp_model.INFEASIBLE:
        raise MappingError("cpsat: no feasible mapping (capacities, device support or links)")
    if best_h is not None and (sched is None or best_h.makespan_s < sched.makespan_s):
        own = None if sched is None else sched.makespan_s
        stats.update(status=budget.status(), fallback=best_h.mapper, solver_schedule_makespan_s=own,
                     fallback_makespan_s=best_h.makespan_s, solution_source=best_h.mapper)
        sched = make_schedule(costs, best_h.assignment, m.name, {**best_h.stats, **stats}, order=best_h.order,
                              fused=best_h.fused)
    if sched is None:
        raise MappingError(f"cpsat: no schedule found within {budget.describe()}")
    real = sched.makespan_s
    sched.stats.update(**budget.stats(), incumbent_s=real, bound_s=bound_s, solve_time_s=time.perf_counter() - t0,
                       total_time_s=time.perf_counter() - t0,
                       mip_gap=None if bound_s is None else ((real - bound_s) / real if real > 0 else 0.0))
    return sched


def unfused_bound_s(m, costs: CostModel) -> float:
    """A lower bound in seconds of the makespan of every schedule of ``costs`` without fusion: ``cpsat``'s root
    bounds of its integer problem (the critical path of :func:`~hetsim.mappers._bounds.critical_path` and the
    load bounds of :func:`~hetsim.mappers._bounds.load_bound` and
    :func:`~hetsim.mappers._bounds.multi_load_bound`, in ticks) times the tick, minus the rounding bound (the most
    rounding up lengthens a schedule: the same conversion as ``cpsat``'s ``bound_s``)."""
    plain = costs.without_fusion()
    tick = B.choose_tick(plain, m.resolution_s, _horizon_s(plain))
    p = B.build_problem(plain, tick)
    if not p.ops:
        return 0.0
    head, tail = B.heads_tails(p)
    lb = B.critical_path(p, head, tail)
    if (lbnd := B.load_bound(p, head, tail)) is not None:
        lb = max(lb, lbnd.bound())
    if (mb := B.multi_load_bound(p, head, tail)) is not None:
        lb = max(lb, mb)
    return max(0.0, lb * tick - p.rounding_bound_s)


def _with_unfused(m, costs: CostModel, heuristics: list[Schedule], unfused) -> tuple[list[Schedule], str]:
    """``heuristics`` plus ``unfused()`` unless the best heuristic is no slower than :func:`unfused_bound_s` (then
    no schedule without fusion can be shorter, and its search would be work for nothing); and a note on which."""
    if unfused is None:
        return heuristics, "not asked"
    best = min((h.makespan_s for h in heuristics), default=None)
    if best is not None:
        lb = unfused_bound_s(m, costs)
        if best <= lb:
            return heuristics, (f"skipped: a heuristic's {best:.6g} s with fusion is no slower than the bound "
                                f"{lb:.6g} s of every schedule without it")
    return heuristics + unfused(), "searched"


def _horizon_s(costs: CostModel) -> float:
    """Every op at its slowest device plus every edge's slowest linked transfer (CPU-CIM ILP Eq. 13: a makespan
    no schedule exceeds), seconds."""
    g = costs.workload.graph
    return sum(max(lat.values()) for lat in costs.latency.values()) + sum(
        max((costs.transfer_time(u, v, a, b) for a in costs.latency[u] for b in costs.latency[v]
             if costs.carried(u, v, a, b)), default=0.0) for u, v in g.edges)


def _build(model, p: B.IntProblem, opts: list[tuple[str, str, str, int]], g, horizon: int | None = None):
    """The model of the module docstring on ``model`` for the integer problem ``p`` and the fusable triples
    ``opts`` (consumer, producer, device, epilogue ticks); returns ``(model, l, f, s, aux)``, ``aux`` the other
    variables by name (for the hint). Every time lies in ``[0, H]``: ``H`` the serial horizon (every op at its
    slowest device and every transfer, a makespan no schedule exceeds) or ``horizon`` (ticks) when smaller, the
    makespan of a known solution (the hint's: the optimum is no later, so it stays a solution; smaller domains
    propagate faster)."""
    H = sum(max(dv.values()) for dv in p.dur.values()) + sum(max(t.values(), default=0) for t in p.tr.values()) + 1
    if horizon is not None:
        H = min(H, horizon)
    lit = {v: {d: model.NewBoolVar(f"l[{v},{d}]") for d in p.devices[v]} for v in p.ops}
    for v in p.ops:
        model.AddExactlyOne(lit[v].values())
    s = {v: model.NewIntVar(0, H, f"s[{v}]") for v in p.ops}
    e = {v: model.NewIntVar(0, H, f"e[{v}]") for v in p.ops}
    f = {(c, q, d): model.NewBoolVar(f"f[{c},{q},{d}]") for c, q, d, _ in opts}
    by_consumer: dict[str, list] = {}
    by_producer: dict[str, list] = {}
    for c, q, d, _ in opts:
        x = f[(c, q, d)]
        model.AddImplication(x, lit[c][d])
        model.AddImplication(x, lit[q][d])
        by_consumer.setdefault(c, []).append(x)
        by_producer.setdefault(q, []).append(x)
    for xs in [*by_consumer.values(), *by_producer.values()]:
        model.AddAtMostOne(xs)
    epi_of = {(c, q, d): n for c, q, d, n in opts}
    size = {}
    for v in p.ops:
        expr = sum(p.dur[v][d] * lit[v][d] for d in p.devices[v])
        expr -= sum((p.dur[c][d] - n) * f[(c, q, d)] for (c, q, d), n in epi_of.items() if c == v)
        top = max([*p.dur[v].values(), *(n for (c, _, _), n in epi_of.items() if c == v)])
        size[v] = model.NewIntVar(0, top, f"size[{v}]")
        model.Add(size[v] == expr)
        model.Add(e[v] == s[v] + size[v])
    launch = {v: s[v] for v in p.ops}
    for c, xs in by_consumer.items():
        launch[c] = model.NewIntVar(0, H, f"L[{c}]")
        model.Add(launch[c] <= s[c])
        model.Add(launch[c] == s[c]).OnlyEnforceIf([x.Not() for x in xs])
    for (c, q, _d), x in f.items():
        model.Add(s[c] == e[q]).OnlyEnforceIf(x)
        model.Add(launch[c] == launch[q]).OnlyEnforceIf(x)
    paths: list = []  # per (input, fusable consumer) pair with fusable paths between: _in_group's Booleans
    fused_edge = {}  # (producer, consumer) -> Boolean: the edge is fused on some device
    for c, q, _d, _ in opts:
        if (q, c) not in fused_edge:
            xs = [x for (c2, q2, _), x in f.items() if c2 == c and q2 == q]
            b = model.NewBoolVar(f"fe[{q},{c}]")
            model.Add(b == sum(xs))
            fused_edge[(q, c)] = b
    for u, v in g.edges:
        tr = p.tr[(u, v)]
        model.Add(s[v] >= e[u])
        for a in p.devices[u]:
            for b in p.devices[v]:
                if (a, b) not in tr:
                    model.AddBoolOr([lit[u][a].Not(), lit[v][b].Not()])
                elif tr[(a, b)] > 0:
                    model.Add(s[v] >= e[u] + tr[(a, b)]).OnlyEnforceIf([lit[u][a], lit[v][b]])
        if v in by_consumer:  # the arrival by the group's launch, unless u is in v's group
            inside = _in_group(model, fused_edge, u, v, paths)
            for (a, b), t in tr.items():
                cond = [lit[u][a], lit[v][b]] + ([inside.Not()] if inside is not None else [])
                model.Add(launch[v] >= e[u] + t).OnlyEnforceIf(cond)
    for dev, units in p.cpus.items():
        ivs = [model.NewOptionalIntervalVar(s[v], size[v], e[v], lit[v][dev], f"i[{v},{dev}]")
               for v in p.ops if dev in lit[v]]
        if units == 1:
            model.AddNoOverlap(ivs)
        else:
            model.AddCumulative(ivs, [1] * len(ivs), units)
    for dev, cap in p.budget.items():
        model.Add(sum(p.ncb[v][dev] * lit[v][dev] for v in p.ops if dev in lit[v]) <= cap)
    T = model.NewIntVar(0, H, "T")
    for v in p.ops:
        model.Add(e[v] <= T)
    model.Minimize(T)
    aux = {"e": e, "size": size, "launch": launch, "fused_edge": fused_edge, "paths": paths, "T": T, "epi": epi_of}
    return model, lit, f, s, aux


def _in_group(model, fused_edge: dict, u: str, c: str, out: list):
    """A Boolean that may be true only when a path of fused edges leads from ``u`` to ``c`` (``u`` is then in
    ``c``'s group), or ``None`` when no path of fusable edges does. ``out`` gets ``(Boolean, [(path Boolean,
    path edges), ...])``.

    Raises:
        TooManyPaths: more than :data:`MAX_PATHS` such paths.
    """
    succ: dict[str, list[str]] = {}
    for q, c2 in fused_edge:
        succ.setdefault(q, []).append(c2)
    paths: list[list[tuple[str, str]]] = []
    stack = [(u, [])]
    while stack:
        x, path = stack.pop()
        for y in succ.get(x, []):
            step = [*path, (x, y)]
            if y == c:
                paths.append(step)
                if len(paths) > MAX_PATHS:
                    raise TooManyPaths(f"{u!r} reaches {c!r} by more than {MAX_PATHS} paths of fusable edges")
            else:
                stack.append((y, step))
    if not paths:
        return None
    inside = model.NewBoolVar(f"in[{u},{c}]")
    held = []
    for path in paths:
        b = model.NewBoolVar("")
        for edge in path:
            model.AddImplication(b, fused_edge[edge])
        held.append(b)
    model.AddBoolOr(held).OnlyEnforceIf(inside)
    out.append((inside, list(zip(held, paths, strict=True))))
    return inside


def _tick_starts(costs: CostModel, p: B.IntProblem, opts, sched: Schedule) -> dict[str, int] | None:
    """The starts in ticks of ``sched``'s assignment, fused groups and device orders with the model's rounded
    durations and transfers (:func:`~hetsim.sim.analytic.list_schedule` on a copy of the cost model that answers
    in whole ticks), so that the hint is a solution of the model; ``None`` when it is not one (an op on a device
    the model dropped)."""
    import copy

    from hetsim.sim.analytic import list_schedule

    a, tick = sched.assignment, p.tick
    if any(a[v] not in p.dur[v] for v in p.ops):
        return None
    rounded = copy.copy(costs)
    rounded.latency = {v: {d: n * tick for d, n in p.dur[v].items()} for v in p.ops}
    rounded.fusion = {}
    for c, q, d, n in opts:
        rounded.fusion.setdefault(c, {}).setdefault(q, {})[d] = n * tick
    rounded.transfer_time = lambda u, v, x, y: p.tr[(u, v)].get((x, y), 0) * tick  # the model's transfers
    try:
        start, _, _ = list_schedule(rounded, a, sched.order, fused=sched.fused or None)
    except Exception:  # noqa: BLE001 - a hint is optional: without one the solver searches from scratch
        return None
    return {v: int(round(t / tick)) for v, t in start.items()}


def _hint_sizes(p: B.IntProblem, epi: dict, sched: Schedule) -> dict[str, int]:
    """Each op's duration in ticks in ``sched``: its epilogue's when fused (``epi``: (consumer, producer,
    device) -> ticks), else its own on its device."""
    a, fused = sched.assignment, sched.fused
    return {v: epi[(v, fused[v], a[v])] if v in fused else p.dur[v][a[v]] for v in p.ops}


def _hint_makespan(p: B.IntProblem, opts, sched: Schedule | None, starts: dict[str, int] | None) -> int | None:
    """The makespan in ticks of the hint (``sched`` at ``starts``), or None without one."""
    if sched is None or starts is None:
        return None
    try:
        size = _hint_sizes(p, {(c, q, d): n for c, q, d, n in opts}, sched)
    except KeyError:  # a fused triple the model does not offer: no hint of the model
        return None
    return max((starts[v] + size[v] for v in p.ops), default=0)


def _hint(model, p, lit, f, s, aux: dict, sched: Schedule, starts: dict[str, int] | None) -> None:
    """``sched`` (a heuristic's) as the solver's hint: devices, fused groups and, when ``starts`` (ticks) are
    given, every other variable's value in that schedule (a complete solution: CP-SAT starts from it)."""
    a, fused = sched.assignment, sched.fused
    for v in p.ops:
        for d, x in lit[v].items():
            model.AddHint(x, d == a.get(v))
    for (c, q, d), x in f.items():
        model.AddHint(x, fused.get(c) == q and a.get(c) == d)
    for (q, c), x in aux["fused_edge"].items():
        model.AddHint(x, fused.get(c) == q)
    for inside, paths in aux["paths"]:
        held = [all(fused.get(y) == x for x, y in path) for _, path in paths]
        for (b, _), h in zip(paths, held, strict=True):
            model.AddHint(b, h)
        model.AddHint(inside, any(held))
    if starts is None:
        return
    size = _hint_sizes(p, aux["epi"], sched)
    head = {}
    for v in p.ops:  # topological: a producer's head is known before its consumer's
        head[v] = head[fused[v]] if v in fused else v
    for v in p.ops:
        model.AddHint(s[v], starts[v])
        model.AddHint(aux["size"][v], size[v])
        model.AddHint(aux["e"][v], starts[v] + size[v])
        if aux["launch"][v] is not s[v]:
            model.AddHint(aux["launch"][v], starts[head[v]])
    model.AddHint(aux["T"], max((starts[v] + size[v] for v in p.ops), default=0))


def workers(m) -> int:
    """CP-SAT workers of the fused model for the ``cpsat`` mapper ``m``: one when ``m`` is deterministic (one
    worker's search is reproducible and stops at its deterministic time limit; CP-SAT's deterministic parallel
    mode, ``interleave_search``, runs every full-problem worker a chunk per batch and only stops between batches:
    on YOLOv5n on platforms/edge-soc.yaml six chunks of about 0.67 deterministic s each, 4.2 deterministic s and
    3.5x the wall time for a budget of 1.4, for a worse schedule than one worker's in 2; docs/performance.md),
    else ``m.threads``."""
    return 1 if m.deterministic else m.threads


def _parameters(prm, cp_model, m, budget: Budget) -> None:
    """The solver parameters of the ``cpsat`` mapper ``m`` for one solve given what is left of ``budget`` (as its
    own solves: workers (:func:`workers`), seed, gap, the deterministic time limit, the log)."""
    budget.set_params(prm, budget.left())
    prm.num_workers = workers(m)
    prm.random_seed = m.seed
    prm.relative_gap_limit = m.mip_rel_gap
    prm.log_search_progress = m.log
    if m.det_time_limit is not None:
        prm.max_deterministic_time = min(prm.max_deterministic_time, m.det_time_limit)
