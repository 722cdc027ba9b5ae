"""The throughput objective (ours): map one or several models so that the busiest resource of the SoC is as
little loaded as possible.

A request of model ``s`` arriving at rate ``lambda_s`` keeps each resource ``r`` busy ``b_s(r)`` seconds (its
ops' latencies there, its transfers' times on a link); the SoC keeps up with the offered rates exactly when every
resource's load ``rho_r = sum_s lambda_s b_s(r) / units_r`` is below 1, and scaling every rate by ``1 / max_r
rho_r`` is the most it sustains (the pipelined steady state: requests overlap, each resource serves one op per
unit at a time). The throughput objective minimises that bottleneck ``max_r rho_r`` over every model's op ->
device assignment at once, subject to the resident capacities shared by all of them (crossbars, weight SRAM:
CPU-CIM ILP Eq. 14 summed over the models). This is ours: the CPU-CIM ILP minimises one inference's makespan
and never pipelines.

The resources (:class:`LoadModel`), as the scenario replay (:mod:`hetsim.scenario.run`) serialises them:

* a serial device (a CPU's cores, an NPU): its ops' latencies over its units;
* a link: every transfer over it (a link carries one transfer at a time; counted whether or not the replay
  models ``links`` contention, where the replay without it lets transfers overlap);
* an op on a device whose ops overlap (a PUMA CIM, weight-stationary): the op's own crossbars (requests of one
  op take turns on them, one resource per op);
* the device resources a contention kind makes ops hold (a PUMA's internal bus under ``cim-bus``), when the
  kind is on; kinds that depend on the crossbar placement (``cim-cores``) are not part of the objective.

What is exact and what is not: :func:`solve_exact` (``cpsat``) solves the problem above exactly up to the
rounding of the load coefficients to integers (``1e-9`` of the heuristic's bottleneck; ``bound`` is the rounded
problem's bound minus the most the rounding can move any load, so it is a true lower bound). The per-device order
within a request is not part of the objective (a list schedule by critical path orders each serial device, as
cpsat's ``fill``), nor is queueing between requests: ``1 / bottleneck`` is the rate no schedule can exceed, which
the replay approaches when enough requests are in flight. :func:`balance` (``heft``, ``greedy``) is a local search
(ours), no optimality claim.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from hetsim.costs import CostModel
from hetsim.errors import InputError, MappingError, ScheduleError, did_you_mean
from hetsim.mappers import _cpsat_sigint
from hetsim.mappers._limits import CPSAT_WORK, Budget
from hetsim.schedule import OBJECTIVES, Schedule

__all__ = ["OBJECTIVES", "JointResult", "LoadModel", "Part", "balance", "check_objective", "map_joint",
           "map_one", "solve_exact"]

#: integer load units per heuristic bottleneck in the exact model (the rounding is ``<= 0.5`` unit per term)
SCALE = 10**9


def check_objective(mapper: str, objective: str) -> str:
    """``objective`` if it is one of :data:`OBJECTIVES`.

    Raises:
        InputError: any other value (the closest name suggested).
    """
    if objective not in OBJECTIVES:
        raise InputError(f"mapper {mapper!r}: unknown objective {objective!r}{did_you_mean(str(objective), OBJECTIVES)}"
                         f" (known: {', '.join(OBJECTIVES)})")
    return objective


@dataclass
class Part:
    """One model of a joint mapping: its name, cost model and rate (requests per second; any positive weight:
    one model alone is mapped at rate 1, its bottleneck then in seconds per request)."""

    name: str
    costs: CostModel
    rate_hz: float = 1.0


class LoadModel:
    """The load each assignment choice puts on each resource (module doc), and the shared capacities.

    Attributes:
        parts: the models.
        op_terms: per part, ``op -> device -> [(resource, load)]`` (load: rate x seconds / units).
        edge_terms: per part, ``(u, v) -> (device of u, device of v) -> (link resource, load)``.
        forbidden: per part, ``(u, v) -> device pairs no link joins`` (the edge moves data there).
        capacity: device -> its resident capacity (the platform's amount, shared by every part).
        need: per part, ``op -> device -> amount`` of that capacity.
        skipped: contention kinds left out of the objective (they need a placement).
    """

    def __init__(self, parts: list[Part], contention: frozenset[str] = frozenset()) -> None:
        self.parts = parts
        self.op_terms: list[dict[str, dict[str, list[tuple]]]] = []
        self.edge_terms: list[dict[tuple, dict[tuple, tuple]]] = []
        self.forbidden: list[dict[tuple, set]] = []
        self.need: list[dict[str, dict[str, int]]] = []
        self.skipped: set[str] = set()
        first = parts[0].costs
        self.capacity = {d: int(c.amount) for d, c in first.resident.items()}
        for i, part in enumerate(parts):
            self._add(i, part, contention)

    def _add(self, i: int, part: Part, contention: frozenset[str]) -> None:
        costs, lam = part.costs, float(part.rate_hz)
        serial = costs.serial_devices()
        terms: dict[str, dict[str, list[tuple]]] = {}
        for v, lat in costs.latency.items():
            terms[v] = {}
            for d, t in lat.items():
                acc: dict[tuple, float] = {}
                if d in serial:
                    acc[("device", d)] = lam * t / serial[d]
                else:
                    acc[("own", i, v, d)] = lam * t
                    self._held(acc, costs, v, d, lam, contention)
                terms[v][d] = [(k, c) for k, c in acc.items() if c > 0]
        self.op_terms.append(terms)
        edges: dict[tuple, dict[tuple, tuple]] = {}
        bad: dict[tuple, set] = {}
        for u, v in costs.workload.graph.edges:
            for a in costs.latency[u]:
                for b in costs.latency[v]:
                    if not costs.carried(u, v, a, b):
                        bad.setdefault((u, v), set()).add((a, b))
                    elif costs.needs_transfer(u, v, a, b):
                        t = costs.transfer_time(u, v, a, b)
                        if t > 0:
                            edges.setdefault((u, v), {})[(a, b)] = (("transfer", costs.link(a, b).name), lam * t)
        self.edge_terms.append(edges)
        self.forbidden.append(bad)
        self.need.append({v: {d: int(n) for d, n in nd.items()} for v, nd in costs.need.items()})

    def _held(self, acc: dict, costs: CostModel, v: str, d: str, lam: float, contention: frozenset[str]) -> None:
        """The device resources the contention kinds make ``v``'s phases hold on ``d`` (a PUMA's internal bus)."""
        phases = costs.phases.get(v, {}).get(d)
        if not phases or not contention:
            return
        dev = costs.devices[d]
        for kind in sorted(contention & set(getattr(dev, "contention", ()) or ())):
            try:
                held = dev.contended_phases(frozenset({kind}), v, None, costs.need.get(v, {}).get(d))
            except ScheduleError:  # the kind needs the crossbar placement: not part of the objective
                self.skipped.add(kind)
                continue
            for keys, dt in zip(held or (), phases, strict=False):
                for key in keys:
                    acc[("held", d, key)] = acc.get(("held", d, key), 0.0) + lam * dt

    # ------------------------------------------------------------------------------------------ evaluation

    def loads(self, assigns: list[dict[str, str]]) -> dict[tuple, float]:
        """Every resource's load under ``assigns`` (one assignment per part)."""
        out: dict[tuple, float] = {}
        for i, a in enumerate(assigns):
            terms = self.op_terms[i]
            for v, d in a.items():
                for k, c in terms[v][d]:
                    out[k] = out.get(k, 0.0) + c
            for (u, v), pairs in self.edge_terms[i].items():
                t = pairs.get((a[u], a[v]))
                if t is not None:
                    out[t[0]] = out.get(t[0], 0.0) + t[1]
        return out

    def used(self, assigns: list[dict[str, str]]) -> dict[str, int]:
        """Resident capacity used per device by ``assigns`` together."""
        out = dict.fromkeys(self.capacity, 0)
        for i, a in enumerate(assigns):
            need = self.need[i]
            for v, d in a.items():
                if d in out:
                    out[d] += need.get(v, {}).get(d, 0)
        return out

    def feasible(self, assigns: list[dict[str, str]]) -> bool:
        """Every op on a device that runs it, every moving edge on a link, the shared capacities kept."""
        for i, a in enumerate(assigns):
            if any(d not in self.op_terms[i][v] for v, d in a.items()):
                return False
            if any((a[u], a[v]) in bad for (u, v), bad in self.forbidden[i].items()):
                return False
        return all(n <= self.capacity[d] for d, n in self.used(assigns).items())

    def label(self, key: tuple) -> str:
        """A resource's name for people: ``host``, ``bus``, ``cim: op conv3 of detect``, ``cim bus``."""
        if key[0] in ("device", "transfer"):
            return key[1]
        if key[0] == "own":
            _, i, v, d = key
            return f"{d}: op {v} of {self.parts[i].name}" if len(self.parts) > 1 else f"{d}: op {v}"
        return f"{key[1]} {' '.join(str(x) for x in key[2:])}"



def bottleneck(loads: dict[tuple, float]) -> tuple[tuple | None, float]:
    """The most loaded resource and its load (``(None, 0.0)`` when nothing is loaded)."""
    if not loads:
        return None, 0.0
    k = max(loads, key=lambda x: (loads[x], str(x)))
    return k, loads[k]


# ---------------------------------------------------------------------------------------------- heuristic


def _better(a: tuple, b: tuple) -> bool:
    """``a`` lexicographically below ``b`` by more than float noise."""
    for x, y in zip(a, b, strict=False):
        tol = 1e-12 * max(abs(x), abs(y), 1e-300)
        if x < y - tol:
            return True
        if x > y + tol:
            return False
    return False


def balance(model: LoadModel, starts: list[list[dict[str, str]]], deadline: float | None = None,
            max_moves: int = 20_000) -> list[dict[str, str]]:
    """A local search (ours) from each feasible start: move one op (any model's) that loads the bottleneck to
    another device, or make room for it there by moving one op of that device elsewhere, whichever lowers the
    sorted loads most (leximax, then the total); repeat while a move improves. Returns the best assignment found.

    Raises:
        MappingError: no start is feasible.
    """
    best, best_score = None, None
    for start in starts:
        if start is None or not model.feasible(start):
            continue
        a = _descend(model, [dict(x) for x in start], deadline, max_moves)
        s = _Loads(model.loads(a)).score()
        if best is None or _better(s, best_score):
            best, best_score = a, s
    if best is None:
        raise MappingError("throughput objective: no feasible starting mapping (every model's latency mapping "
                           "and the all-host one exceed the shared capacities)")
    return best


def _moves(model: LoadModel, a: list[dict[str, str]], key: tuple):
    """Candidate (part, op) pairs whose device or transfers load resource ``key``."""
    out = []
    for i, asg in enumerate(a):
        terms = model.op_terms[i]
        for v, d in asg.items():
            if len(terms[v]) > 1 and any(k == key for k, _ in terms[v][d]):
                out.append((i, v))
        if key[0] == "transfer":
            for (u, v), pairs in model.edge_terms[i].items():
                t = pairs.get((asg[u], asg[v]))
                if t is not None and t[0] == key:
                    out += [(i, w) for w in (u, v) if len(terms[w]) > 1]
    return list(dict.fromkeys(out))


def _linked(model: LoadModel, a: list[dict[str, str]], i: int, v: str, d: str) -> bool:
    g = model.parts[i].costs.workload.graph
    bad = model.forbidden[i]
    asg = a[i]
    return (all((asg[u], d) not in bad.get((u, v), ()) for u in g.predecessors(v))
            and all((d, asg[w]) not in bad.get((v, w), ()) for w in g.successors(v)))


class _Loads:
    """Loads split for a cheap score: the shared resources (devices, links, held: few), the ops' own resources
    (many: their largest kept) and the total. A move changes a few keys (:func:`_delta`)."""

    def __init__(self, loads: dict[tuple, float]) -> None:
        self.shared = {k: x for k, x in loads.items() if k[0] != "own"}
        self.own = {k: x for k, x in loads.items() if k[0] == "own"}
        self.total = sum(loads.values())
        self.own_max = max(self.own.values(), default=0.0)

    def all(self) -> dict[tuple, float]:
        return {**self.shared, **self.own}

    def score(self, delta: dict[tuple, float] | None = None) -> tuple:
        """The leximax score of the loads, or of the loads after ``delta``: the loads in decreasing order (the
        devices', links' and held resources' each, the ops' own resources as their largest), then their sum."""
        if not delta:
            return (*sorted([*self.shared.values(), self.own_max], reverse=True), self.total)
        shared = dict(self.shared)
        own_new = []
        recompute = False
        for k, d in delta.items():
            if k[0] == "own":
                x = self.own.get(k, 0.0) + d
                own_new.append(x)
                if d < 0 and self.own.get(k, 0.0) >= self.own_max:
                    recompute = True
            else:
                shared[k] = shared.get(k, 0.0) + d
        rest = max((x for k, x in self.own.items() if k not in delta), default=0.0) if recompute else self.own_max
        own_max = max([rest, *own_new])
        return (*sorted([*shared.values(), own_max], reverse=True), self.total + sum(delta.values()))

    def apply(self, delta: dict[tuple, float]) -> None:
        for k, d in delta.items():
            side = self.own if k[0] == "own" else self.shared
            side[k] = side.get(k, 0.0) + d
        self.total += sum(delta.values())
        self.own_max = max(self.own.values(), default=0.0)

    def bottleneck(self) -> tuple | None:
        k, _ = bottleneck(self.shared)
        if self.own and (k is None or self.own_max > self.shared[k]):
            return max(self.own, key=lambda x: (self.own[x], str(x)))
        return k


def _delta(model: LoadModel, a, plan) -> dict[tuple, float]:
    """The change of every resource's load the moves ``plan`` (``(part, op, device)``) make; ``a`` is left as
    it was."""
    out: dict[tuple, float] = {}
    undo = []
    for i, v, d in plan:
        old = a[i][v]
        g = model.parts[i].costs.workload.graph
        edges = [(u, v) for u in g.predecessors(v)] + [(v, w) for w in g.successors(v)]
        for sign, dev in ((-1.0, old), (1.0, d)):
            a[i][v] = dev
            for k, c in model.op_terms[i][v][dev]:
                out[k] = out.get(k, 0.0) + sign * c
            for e in edges:
                t = model.edge_terms[i].get(e, {}).get((a[i][e[0]], a[i][e[1]]))
                if t is not None:
                    out[t[0]] = out.get(t[0], 0.0) + sign * t[1]
        undo.append((i, v, old))
    for i, v, old in reversed(undo):
        a[i][v] = old
    return out


def _descend(model: LoadModel, a: list[dict[str, str]], deadline: float | None, max_moves: int):
    loads = _Loads(model.loads(a))
    used = model.used(a)
    cur = loads.score()
    for _ in range(max_moves):
        if deadline is not None and time.perf_counter() > deadline:
            break
        key = loads.bottleneck()
        if key is None:
            break
        best = None
        for i, v in _moves(model, a, key):
            old = a[i][v]
            for d in model.op_terms[i][v]:
                if d == old or not _linked(model, a, i, v, d):
                    continue
                plan = [(i, v, d)]
                n = model.need[i].get(v, {}).get(d, 0)
                if d in used and used[d] + n > model.capacity[d]:
                    plan = _make_room(model, a, used, i, v, d, n)
                    if plan is None:
                        continue
                delta = _delta(model, a, plan)
                s = loads.score(delta)
                if _better(s, cur) and (best is None or _better(s, best[0])):
                    best = (s, plan, delta)
        if best is None:
            break
        cur, plan, delta = best
        for i, v, d in plan:
            a[i][v] = d
        loads.apply(delta)
        used = model.used(a)
    return a


def _make_room(model: LoadModel, a, used, i: int, v: str, d: str, n: int):
    """The move of ``v`` to ``d`` preceded by moving one op of ``d`` (the least loaded per unit of capacity it
    frees) to the device it runs on most cheaply, if that frees enough; ``None`` otherwise."""
    deficit = used[d] + n - model.capacity[d]
    cands = []
    for j, asg in enumerate(a):
        for w, dw in asg.items():
            if dw != d or (j, w) == (i, v):
                continue
            free = model.need[j].get(w, {}).get(d, 0)
            if free < deficit:
                continue
            alts = [(sum(c for _, c in model.op_terms[j][w][e]), e) for e in model.op_terms[j][w]
                    if e != d and (e not in used or model.need[j].get(w, {}).get(e, 0) + used[e] <= model.capacity[e])
                    and _linked(model, a, j, w, e)]
            if alts:
                cost, e = min(alts)
                cands.append((cost / max(free, 1), j, w, e))
    if not cands:
        return None
    _, j, w, e = min(cands)
    return [(j, w, e), (i, v, d)]


# ---------------------------------------------------------------------------------------------- exact


def solve_exact(model: LoadModel, incumbent: list[dict[str, str]], time_limit_s: float | None = None, threads: int = 2,
                seed: int = 0, mip_rel_gap: float = 1e-6, log: bool = False, work_limit: float | None = None) -> dict:
    """The throughput objective as a CP-SAT model, solved from ``incumbent`` (a feasible assignment, the hint).

    One Boolean per (model, op, device) choice, exactly one per op; one per (edge, device pair) with a transfer,
    forced on when both ends are there; pairs without a link forbidden; ``sum need x <= C_d`` over all models
    (the shared resident capacity); ``T >= load_r`` for every resource; minimise ``T``. Then, with ``T`` fixed
    at its optimum, the total load is minimised (a quarter of the limits; the bottleneck cannot get worse).
    Limits as ``cpsat``'s (:mod:`hetsim.mappers._limits`): ``work_limit`` deterministic seconds (default
    :data:`~hetsim.mappers._limits.CPSAT_WORK` unless ``time_limit_s`` alone is given), deterministic
    interleaved search with several workers; ``time_limit_s`` a wall-clock cap.

    Returns:
        ``assigns``, ``status`` (``optimal`` | ``work_limit`` | ``time_limit``), ``bottleneck`` and ``bound``
        (loads, real: the rounding accounted for), ``mip_gap``, ``solve_time_s``, ``variables``, ``constraints``.
    """
    from ortools.sat.python import cp_model

    t0 = time.perf_counter()
    budget = Budget(work_limit, time_limit_s, CPSAT_WORK)
    _, ub = bottleneck(model.loads(incumbent))
    unit = ub / SCALE if ub > 0 else 1.0
    m = cp_model.CpModel()
    x: list[dict[str, dict[str, object]]] = []
    expr: dict[tuple, list] = {}
    count: dict[tuple, int] = {}

    def add(k, c, lit):
        ci = int(round(c / unit))
        if ci:
            expr.setdefault(k, []).append((ci, lit))
        count[k] = count.get(k, 0) + 1

    for i, terms in enumerate(model.op_terms):
        xi: dict[str, dict[str, object]] = {}
        for v, per in terms.items():
            xi[v] = {d: m.NewBoolVar(f"x{i}_{v}_{d}") for d in per}
            m.AddExactlyOne(xi[v].values())
            for d, lst in per.items():
                for k, c in lst:
                    add(k, c, xi[v][d])
        x.append(xi)
        for (u, v), bad in model.forbidden[i].items():
            for a_, b_ in bad:
                m.AddBoolOr([xi[u][a_].Not(), xi[v][b_].Not()])
        for (u, v), pairs in model.edge_terms[i].items():
            for (a_, b_), (k, c) in pairs.items():
                y = m.NewBoolVar(f"y{i}_{u}_{v}_{a_}_{b_}")
                m.AddBoolOr([xi[u][a_].Not(), xi[v][b_].Not(), y])
                add(k, c, y)
    for d, cap in model.capacity.items():
        terms = [(model.need[i].get(v, {}).get(d, 0), x[i][v][d]) for i in range(len(x)) for v in x[i]
                 if d in x[i][v]]
        terms = [(n, lit) for n, lit in terms if n]
        if terms:
            m.Add(sum(n * lit for n, lit in terms) <= cap)
    hi = SCALE + max(count.values(), default=0) + 1
    T = m.NewIntVar(0, max(hi, 1) * 4, "T")
    for lst in expr.values():
        m.Add(sum(c * lit for c, lit in lst) <= T)
    for i, asg in enumerate(incumbent):
        for v, d in asg.items():
            for e, lit in x[i][v].items():
                m.AddHint(lit, e == d)
    m.Minimize(T)
    solver = cp_model.CpSolver()
    prm = solver.parameters
    budget.set_params(prm, 0.75 * budget.unit_total)
    prm.num_workers = max(1, int(threads))
    prm.random_seed = int(seed)
    prm.relative_gap_limit = mip_rel_gap
    prm.log_search_progress = bool(log)
    if prm.num_workers > 1:
        prm.interleave_search = True
    code = _cpsat_sigint.solve(solver, m)
    budget.charge(solver, proven=code in (cp_model.OPTIMAL, cp_model.INFEASIBLE))
    err = 0.5 * unit * max(count.values(), default=0)  # the most rounding moves any resource's load
    out = {"assigns": incumbent, "status": budget.status(), "bound": 0.0, "solve_time_s": 0.0}
    proto = m.Proto()
    out["variables"], out["constraints"] = len(proto.variables), len(proto.constraints)
    if code in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        t_opt = int(round(solver.ObjectiveValue()))
        out["bound"] = max(0.0, solver.BestObjectiveBound() * unit - err)
        out["status"] = "optimal" if code == cp_model.OPTIMAL else budget.status()
        cand = [{v: next(d for d, lit in xv.items() if solver.Value(lit)) for v, xv in xi.items()} for xi in x]
        if bottleneck(model.loads(cand))[1] <= ub * (1 + 1e-12) + err:
            out["assigns"] = cand
        # the second pass: least total load with the bottleneck kept
        m.Add(t_opt >= T)
        m.ClearHints()
        for i, asg in enumerate(out["assigns"]):
            for v, d in asg.items():
                for e, lit in x[i][v].items():
                    m.AddHint(lit, e == d)
        m.Minimize(sum(c * lit for lst in expr.values() for c, lit in lst))
        budget.set_params(prm, 0.25 * budget.unit_total)
        prm.relative_gap_limit = 1e-4
        code2 = _cpsat_sigint.solve(solver, m)
        if code2 in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            cand = [{v: next(d for d, lit in xv.items() if solver.Value(lit)) for v, xv in xi.items()} for xi in x]
            if bottleneck(model.loads(cand))[1] <= bottleneck(model.loads(out["assigns"]))[1] + 2 * err:
                out["assigns"] = cand
    elif code == cp_model.INFEASIBLE:
        raise MappingError("cpsat: the throughput objective has no feasible mapping (shared capacities, device "
                           "support or links)")
    _, val = bottleneck(model.loads(out["assigns"]))
    out["bottleneck"] = val
    out["bound"] = min(out["bound"], val)
    if out["status"] == "optimal" and val - out["bound"] <= 2 * err:
        out["bound"] = max(out["bound"], val - 2 * err)
    out["mip_gap"] = (val - out["bound"]) / val if val > 0 else 0.0
    out["solve_time_s"] = time.perf_counter() - t0
    return out


# ---------------------------------------------------------------------------------------------- schedules


@dataclass
class JointResult:
    """A joint throughput mapping.

    Attributes:
        schedules: part name -> its :class:`~hetsim.schedule.Schedule` (stats: ``objective``, ``bottleneck``,
            ``bottleneck_resource``, ``bottleneck_bound``, ``mip_gap``, ``status``).
        loads: resource label -> load (requests per second x seconds / units).
        bottleneck, bound: the largest load and a lower bound of the optimum (the heuristics: 0).
        resource: the bottleneck resource's label.
    """

    schedules: dict[str, Schedule]
    loads: dict[str, float]
    bottleneck: float
    bound: float
    resource: str
    stats: dict = field(default_factory=dict)


def _with_budget(costs: CostModel, left: dict[str, int] | None, fn):
    saved = dict(costs.budget)
    if left is not None:
        costs.budget.update({d: max(0, n) for d, n in left.items() if d in costs.budget})
    try:
        return fn()
    finally:
        costs.budget.clear()
        costs.budget.update(saved)


def sequential_starts(parts: list[Part], names: tuple[str, ...]) -> list[list[dict[str, str]]]:
    """Starting assignments: for each latency heuristic in ``names`` (registered mappers), every part mapped in
    the given order with the capacity the parts before it left (as a scenario's latency mapping does), plus
    every op on its initial device (the host)."""
    from hetsim.mappers.base import MAPPERS

    out = [[p.costs.initial_assignment() for p in parts]]
    for name in names:
        if name not in MAPPERS:
            continue
        left = {d: int(c.amount) for d, c in parts[0].costs.resident.items()}
        a = []
        try:
            for p in parts:
                s = _with_budget(p.costs, left, lambda p=p, name=name: MAPPERS[name]().map(p.costs))
                asg = dict(s.assignment)
                for v, d in asg.items():
                    if d in left:
                        left[d] -= p.costs.need.get(v, {}).get(d, 0)
                a.append(asg)
        except (MappingError, ScheduleError):
            continue
        out.append(a)
    return out


def ratio_start(model: LoadModel) -> list[dict[str, str]]:
    """A joint start (ours): every op on its initial device (the host), then, over every model at once, ops
    moved to a device with a resident capacity in decreasing order of the rate-weighted host load they remove
    per unit of capacity, while it fits (the knapsack greedy of the shared capacity, which per-model starts
    cannot make: they give each model in turn what it wants)."""
    a = [p.costs.initial_assignment() for p in model.parts]
    used = model.used(a)
    cands = []
    for i, p in enumerate(model.parts):
        host = p.costs.host
        for v, per in model.op_terms[i].items():
            if a[i][v] != host:
                continue
            relief = sum(c for k, c in per[host] if k == ("device", host))
            for d in per:
                n = model.need[i].get(v, {}).get(d, 0)
                if d in model.capacity and relief > 0:
                    cands.append((-relief / max(n, 1), i, v, d, n))
    for _, i, v, d, n in sorted(cands, key=lambda c: (c[0], c[1], str(c[2]), c[3])):
        if a[i][v] != model.parts[i].costs.host:  # already moved (another device)
            continue
        if used[d] + n <= model.capacity[d] and _linked(model, a, i, v, d):
            a[i][v] = d
            used[d] += n
    return a


def _order(costs: CostModel, assign: dict[str, str]) -> dict[str, list[str]] | None:
    """Each serial device's order for ``assign``: cpsat's list scheduler by critical path (floating ops in the
    idle gaps), or ``None`` (topological) where it does not apply."""
    from hetsim.mappers import _bounds as B

    try:
        horizon = sum(max(lat.values()) for lat in costs.latency.values()) or 1e-9
        p = B.build_problem(costs, B.choose_tick(costs, None, horizon))
        if not B.fits(p, assign):
            return None
        order, _ = B.fill_schedule(p, assign, B.free_ops(costs, p), B.bottom_levels(p, assign))
        return order
    except (MappingError, KeyError, ValueError):
        return None


def map_joint(mapper, parts: list[Part], contention: frozenset[str] = frozenset()) -> JointResult:
    """Map ``parts`` together for throughput with ``mapper`` (an instance of a mapper whose class says
    ``throughput_method = "exact"`` (cpsat: :func:`solve_exact`) or ``"heuristic"`` (heft, greedy:
    :func:`balance`)).

    Raises:
        InputError: the mapper has no throughput method.
        MappingError: no feasible joint mapping.
    """
    method = getattr(type(mapper), "throughput_method", None)
    name = getattr(mapper, "name", type(mapper).__name__)
    if method not in ("exact", "heuristic"):
        raise InputError(f"mapper {name!r} has no throughput objective (cpsat solves it exactly; heft and greedy "
                         "have a heuristic)")
    from hetsim.weights import weight_option_platform

    if any(weight_option_platform(p.costs.platform) for p in parts):
        raise InputError(f"mapper {name!r}: the throughput objective does not choose weight policies (a platform "
                         "whose devices read weights from a memory); map for latency there")
    t0 = time.perf_counter()
    wall = getattr(mapper, "time_limit_s", None)  # a wall-clock cap only when the user gave one
    model = LoadModel(parts, contention)
    starts = sequential_starts(parts, ("greedy", "heft") if method == "exact" else (name,))
    starts.append(ratio_start(model))
    # the local search stops on its move count (deterministic); a wall-clock limit, when given, also bounds it
    deadline = t0 + 0.2 * wall if wall else None
    best = balance(model, starts, deadline)
    stats: dict = {"objective": "throughput", "method": method}
    bound = 0.0
    if method == "exact":
        res = solve_exact(model, best, time_limit_s=max(0.1, wall - (time.perf_counter() - t0)) if wall else None,
                          threads=getattr(mapper, "threads", 2), seed=getattr(mapper, "seed", 0),
                          log=getattr(mapper, "log", False), work_limit=getattr(mapper, "work_limit", None))
        best, bound = res["assigns"], res["bound"]
        stats.update(status=res["status"], mip_gap=res["mip_gap"], variables=res["variables"],
                     constraints=res["constraints"])
    else:
        stats.update(status="heuristic")
    loads = model.loads(best)
    key, val = bottleneck(loads)
    stats.update(bottleneck=val, bottleneck_bound=bound if method == "exact" else None,
                 bottleneck_resource=model.label(key) if key is not None else None,
                 capacity_used=model.used(best), solve_time_s=time.perf_counter() - t0)
    if model.skipped:
        stats["not_in_objective"] = sorted(model.skipped)
    scheds = {}
    from hetsim.mappers.base import make_schedule

    for p, a in zip(parts, best, strict=True):
        scheds[p.name] = make_schedule(p.costs, a, name, dict(stats), order=_order(p.costs, a))
    labelled = {model.label(k): x for k, x in sorted(loads.items(), key=lambda kv: -kv[1])}
    return JointResult(scheds, labelled, val, bound, stats["bottleneck_resource"] or "", stats)


def map_one(mapper, costs: CostModel) -> Schedule:
    """One model mapped for throughput (rate 1: the bottleneck is in seconds per request; ``1 / bottleneck`` is
    the most requests per second the SoC sustains with this mapping). Its stats add ``bottleneck_s``,
    ``bottleneck_bound_s`` and ``max_throughput_hz``."""
    r = map_joint(mapper, [Part(costs.workload.name or "model", costs, 1.0)], frozenset())
    s = next(iter(r.schedules.values()))
    s.stats["bottleneck_s"] = r.bottleneck
    s.stats["bottleneck_bound_s"] = s.stats.pop("bottleneck_bound", None)
    s.stats["max_throughput_hz"] = 1.0 / r.bottleneck if r.bottleneck > 0 else None
    s.stats.pop("bottleneck", None)
    if costs.fusion:  # the load model counts every op on its own launch
        from hetsim.mappers.base import NO_FUSION_NOTE

        s.stats["fusion"] = NO_FUSION_NOTE
    return s
