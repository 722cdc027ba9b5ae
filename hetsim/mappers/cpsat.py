"""``cpsat``: the CPU-CIM ILP's partitioning problem (Sec. IV-B, Eq. 5-14) as a CP-SAT scheduling model.

Formulation (all times in integer ticks, see *Integer time* below):

* one Boolean ``l[v,d]`` per op ``v`` and device ``d`` that can run it, exactly one true per op (Eq. 5;
  the CPU-CIM ILP's ``x_v`` is ``l[v,host]``; with one CIM device that is one free Boolean per op);
* a start ``s_v``; its end is ``e_v = s_v + sum_d dur[v,d] * l[v,d]`` (Eq. 7);
* ops on a serial device (the host's cores, an NPU: ``serial_devices()``) are optional fixed-size intervals
  present iff ``l[v,d]``, under ``AddNoOverlap`` for a single unit and ``AddCumulative`` (capacity = units)
  otherwise; this replaces the ``o_uv`` big-M pairs of Eq. 10-12. CIM ops are weight-stationary and never wait
  for each other;
* precedence with the transfer term (Eq. 8-9): ``s_v >= e_u + T_min * z_uv`` where the Boolean ``z_uv`` is
  forced to 1 when the two ops are on different devices (``z_uv >= l[u,d] - l[v,d]`` for every ``d``), plus
  ``s_v >= e_u + T[a,b]`` enforced by ``l[u,a] & l[v,b]`` for device pairs whose transfer exceeds ``T_min``
  (several CIM devices or asymmetric links only); pairs without a link are forbidden;
* the resident capacity of every device (crossbars, weight bytes), ``sum_v need[v,d] * l[v,d] <= C_d``
  (Eq. 14);
* minimise the makespan ``T >= e_v`` (Eq. 6).

Strengthening (the ``levers`` option switches each off; ``stats['presolve']`` says what each did):

* ``heads_tails``: per (op, device) longest-path bounds ``head[v,d]`` (earliest start) and ``tail[v,d]``
  (least time from its end to the makespan), other ops at their best device, resources ignored: the critical
  path bound on ``T``, ``s_v >= sum_d head[v,d] l[v,d]`` and ``T >= s_v + sum_d (dur + tail)[v,d] l[v,d]``.
* ``host_load``: ``cores * (T - r0 - q0) >= sum_v dur[v,cpu] l[v,cpu]`` (``r0``/``q0``: least head/tail of
  any op the cpu may run).
* ``segments``: the same load argument on DAG windows: every cpu op that descends from ``a`` and precedes
  ``b`` runs inside ``[e_a, s_b]``, so ``cores * (s_b - e_a) >= sum of their dur * l``; also over all
  ancestors of each op (from ``r0``) and all descendants (to ``T - q0``). Windows: every op with the cut ops
  around it and consecutive cut ops (a cut op is comparable with every non-floating op, so every schedule
  splits there).
* ``knapsack``: exact 0/1 knapsack over crossbars of the host work an offload set can remove:
  ``T >= r0 + (W - best saving) / cores + q0``. With several accelerators, over the budget of one of them
  (:func:`~hetsim.mappers._bounds.shared_budget`), an op that may go elsewhere needing none of it; a budget
  of more than 4096 units counted in coarser units, needs rounded down (a valid, weaker bound). With several
  budgets also :func:`~hetsim.mappers._bounds.multi_load_bound` (ours): every budget counted, the saving
  bounded by the sum of the per-device knapsacks and by the LP relaxation of the assignment.
* ``fixing``: with the best known makespan ``UB``, a device is removed from an op when the op's head +
  duration + tail there, or the knapsack bound with the op forced there, exceeds ``UB`` (to a fixpoint).
  Every schedule of makespan ``<= UB`` survives, so the optimum does.
* ``windows``: start domains ``[min_d head, UB - min_d (dur + tail)]`` and ``T <= UB``.
* ``symmetry``: ops with identical devices, costs, predecessors and successors (twin branches) are
  interchangeable: the earlier one takes a later device whenever the later one does, and starts first when
  both share a cpu.
* ``fill``: the list scheduler :func:`~hetsim.mappers._bounds.fill_schedule` (critical-path priority,
  floating ops such as weight dequantisation packed into the host's idle gaps) re-schedules every candidate
  assignment (greedy, heft, the relaxation's), which gives much better incumbents than their own orders.
* ``decompose``: split the problem at clean cut ops (comparable with every non-floating op, no transfer
  jumping over them): the makespan is then a sum of segment lengths, each depending only on its two cuts'
  devices and its crossbars, so small CP-SAT solves per segment (Pareto front: least length, then fewest
  crossbars, at the budgets needed) and a DP over the cuts sharing the budget solve the problem exactly,
  lazily (only the budget levels the DP's optimum relies on are solved). With several accelerators the DP
  shares one budget and relaxes the others per segment (exact when the assembled schedule fits them); a
  budget in bytes is shared in units of up to 1/1024 of it (bounds rounded down, schedules up). See
  :mod:`hetsim.mappers._decomp`. Each segment solve starts from a hint found by a local search over the
  segment's assignments (moves, swaps, 2-for-1 exchanges, ejection chains, knapsack picks over marginal
  offload values, each scored by ``fill``): CP-SAT proves a YOLOv5n segment in about 0.5 s from the optimal
  hint but searched for 5-45 s from one 10-30 % off. Floating ops are left out (the DP value is then a bound)
  and packed into the idle gaps afterwards; when they carry real work they are attached to their consumer's segment (an
  incumbent only) and ``fluid`` gives the bound. A bound above a schedule held (of a segment, or of the whole
  problem) would be a bug in hetsim: it is not used (``presolve['decompose_bound_invalid']``), never clipped to
  the incumbent as a proof (docs/fuzzing.md, the wrong optimality claim).
* ``fluid``: when floating ops (no inputs, only parameter outputs: weight dequantisation, constants) carry
  work at the tolerance's scale, first solve the relaxation where they keep their host work in the load
  constraints but lose their interval (they may overlap anything, as a fluid); its bound is a valid bound
  of the real problem and its assignment, re-scheduled, a candidate.
* ``hint``: the best candidate schedule as CP-SAT solution hint (assignment, starts, makespan).
* ``chain``: a graph that is one chain of ops is solved exactly by a dynamic program over (device, crossbars
  used) instead (:mod:`hetsim.mappers._chain`): no heuristics, no CP-SAT.

Fused operator groups (a platform whose devices fuse ops, :attr:`hetsim.costs.CostModel.fusion`): one exact model
of its own with the groups as options, :mod:`hetsim.mappers._fused_cpsat`; the levers above reason about ops on
their own launches and are bypassed there. The throughput objective and the weight-policy models map without
fusion and say so (``stats["fusion"]``).

The phases: heuristics (greedy, heft if registered, re-scheduled by ``fill``), bounds and fixing, the
decomposition (up to ``decompose_share`` of the budget), the fluid relaxation, and the full model for
the rest of the budget from the best bound and incumbent so far (always built: its size is in the stats).

Integer time: every latency and transfer is rounded UP to a whole number of ticks (default 1 ns, coarsened by
powers of 10 only when the horizon would pass 1e10 ticks; option ``resolution_s``). Values within
:data:`~hetsim.mappers._bounds.SNAP` ticks of an integer are snapped to it (floating-point noise). The schedule
returned is rebuilt in real time by :func:`~hetsim.mappers.base.make_schedule` from the assignment and host
order (host ops sorted by CP-SAT start, ties by topological position), ASAP with the exact latencies: real
durations are ``<=`` the rounded ones, so it is feasible and ``incumbent_s <= tick * objective``. Conversely
rounding lengthens a fixed assignment and order by at most ``rounding_bound_s`` (sum over ops of the largest
per-device rounding error plus sum over edges of the largest per-pair error: a path crosses every op and
edge at most once), so a bound ``B`` of the rounded problem gives the real bound ``B * tick -
rounding_bound_s`` (``bound_s``). ``status`` is about the rounded problem: ``optimal`` when its gap is
``<= mip_rel_gap`` (default 1e-4, Gurobi's default MIPGap as in the CPU-CIM ILP; 0 demands an exact proof),
``time_limit`` otherwise; ``mip_gap`` is the honest real-time gap ``(incumbent_s - bound_s) / incumbent_s``.
The bound is the best one proven (root bounds, the decomposition's, CP-SAT's): ``optimal`` within a gap leaves it
below the incumbent (``proven_exact`` False), never raised to it.

Determinism: CP-SAT runs with a fixed ``random_seed`` and, with several workers, ``interleave_search`` (its
deterministic parallel mode; the ``core``, ``fixed`` and ``max_lp`` workers are left out there because their
"1 deterministic second" chunks took 10-28 s of wall time on these models and interleaved search waits for
them even after a proof). The budget is a work limit by default (``work_limit``, CP-SAT deterministic seconds,
:mod:`hetsim.mappers._limits`): every phase's share and deadline is set on the deterministic time the CP-SAT
calls have used, and the steps between them stop on counts (``IMPROVE_EVALS``, rounds), so two runs return the
same schedule and statistics apart from the times, on any machine and at any load. A run cut by a wall-clock
``time_limit_s`` may differ.
``deterministic=False`` lets the workers run freely: about 2x faster on the hard YOLOv5n segments, not
reproducible.
"""

from __future__ import annotations

import bisect
import copy
import gc
import time
from collections import defaultdict
from collections.abc import Callable

from hetsim.costs import CostModel
from hetsim.errors import InternalError, MappingError, ScheduleError
from hetsim.mappers import _bounds as B
from hetsim.mappers import _cpsat_sigint
from hetsim.mappers._chain import solve_chain
from hetsim.mappers._decomp import Decomposition, _weight, insert_floating
from hetsim.mappers._fused_cpsat import TooManyPaths, map_fused
from hetsim.mappers._limits import CPSAT_WORK, Budget
from hetsim.mappers._policy import cpsat_policies, fuse_after_search
from hetsim.mappers._throughput import check_objective, map_one
from hetsim.mappers.base import MAPPERS, NO_FUSION_NOTE, make_schedule, register
from hetsim.schedule import Schedule
from hetsim.weights import weight_option_platform

#: above this many ops the levers that need ancestor/descendant sets (``segments``, ``decompose``) are skipped
MAX_CLOSURE_OPS = 5000

#: the largest ``items * (capacity + 1)`` for which ``fixing`` builds the per-op knapsack tables (memory and time
#: grow with it: 100k candidate ops x 4096 units would take gigabytes)
MAX_TABLE_CELLS = 5_000_000

#: wall seconds per op to build the full CP-SAT model (measured ~3e-4 on a loaded 2-core machine, 10k-op DAG); on
#: graphs of more than MAX_CLOSURE_OPS ops the model is skipped when less time than that is left (x4 when it
#: would also have to be solved)
BUILD_S_PER_OP = 5e-4

#: the same in deterministic seconds of the work budget (assumed: :data:`~hetsim.mappers._limits.CPSAT_WORK` stands
#: for the 30 wall seconds of the former default limit)
BUILD_WORK_PER_OP = BUILD_S_PER_OP * CPSAT_WORK / 30

#: CP-SAT's search branching with one worker (None: CP-SAT's default)
SINGLE_WORKER_BRANCHING: str | None = "PORTFOLIO_WITH_QUICK_RESTART_SEARCH"

#: the share of the time limit the model without fusion gets on a platform that fuses ops (its schedule is a
#: candidate of the fused model, :meth:`CpSat._unfused`)
UNFUSED_SHARE = 0.3

#: the phases whose wall times ``stats["phases_s"]`` reports, in order (they add up to ``solve_time_s``)
PHASES = ("model_s", "heuristics_s", "bounds_s", "decomposition_s", "fluid_s", "search_s", "schedule_s")

ALL_LEVERS = ("heads_tails", "host_load", "segments", "knapsack", "fixing", "windows", "symmetry", "fill",
              "decompose", "fluid", "hint", "chain")


def _ortools():
    try:
        from ortools.sat.python import cp_model
    except ImportError as err:  # pragma: no cover - ortools is a dependency
        raise MappingError("cpsat: OR-Tools is not installed (pip install 'ortools>=9.10')") from err
    return cp_model


class _Built:
    """A CP-SAT model of an :class:`~hetsim.mappers._bounds.IntProblem` and its variables."""

    def __init__(self, model, lit, start, T, cpus):
        self.model, self.lit, self.start, self.T, self.cpus = model, lit, start, T, cpus


@register("cpsat")
class CpSat:
    """Exact mapper: the CPU-CIM ILP as a CP-SAT scheduling model (module docstring: formulation, rounding,
    strengthening levers, determinism).

    Args:
        time_limit_s: wall-clock limit of the whole mapping (default none; given alone it replaces the work
            limit, given with ``work_limit`` the first reached stops (:mod:`hetsim.mappers._limits`); a run it
            stops depends on the machine's speed and load; ``stats["solve_time_s"]`` (and
            ``total_time_s``) is the wall time spent, ``stats["phases_s"]`` its split into :data:`PHASES`,
            ``stats["solver_calls_s"]`` the CP-SAT calls' share). A run that ends unproven returns a
            heuristic's schedule (greedy or heft, ``stats["fallback"]``) when none of its own is shorter.
            The solver calls stop at the limit; the steps around them (building the integer problem, the
            heuristic candidates, the final schedule: linear in the graph) always finish, so on graphs of
            ~100,000 ops on a loaded machine the whole mapping can pass the limit (33 s against 30 s at load
            3.8 on a 100k-op synthetic DAG, proven optimal; docs/performance.md).
        mip_rel_gap: relative gap of the rounded problem at which to stop and report ``optimal`` (default
            1e-4 as Gurobi's MIPGap; 0 = exact proof).
        threads: CP-SAT workers (default 2). With more than one and ``deterministic`` (the default), CP-SAT's
            interleaved search runs its workers in batches of chunks of 1 deterministic second and stops
            only between batches, so a ``mip_rel_gap`` met early may not end a solve before its time limit
            (OR-Tools' behaviour, not ours: we set ``relative_gap_limit`` to ``mip_rel_gap`` either way;
            google/or-tools#5199). One worker, or ``deterministic=False``, stops as soon as it is met. The
            fused model of a platform that fuses ops runs one worker when deterministic
            (:func:`hetsim.mappers._fused_cpsat.workers`).
        seed: CP-SAT ``random_seed`` (default 0).
        progress: called with ``time_s``, ``incumbent_s``, ``bound_s``, ``gap`` on every improvement.
        resolution_s: the tick in seconds (default 1 ns; coarsened for horizons over 1e10 ticks).
        levers: strengthening techniques, a subset of :data:`ALL_LEVERS` (default all; ``"none"``).
        deterministic: use ``interleave_search`` with several workers (default True; False: free-running
            workers, whose results a work limit does not make reproducible).
        det_time_limit: CP-SAT deterministic time limit per solve (reproducible stop), default none.
        work_limit: deterministic budget of the whole mapping in CP-SAT deterministic seconds (default
            :data:`~hetsim.mappers._limits.CPSAT_WORK` unless ``time_limit_s`` alone is given); a run it stops
            has status ``work_limit`` and returns the same schedule on any machine. ``stats``: ``work_limit``,
            ``time_limit_s``, ``work_used``.
        fluid_share: share of the remaining time the fluid relaxation may use (default 0.4).
        decompose_share: share of the time limit the decomposition may use (default 0.85).
        log: print CP-SAT's search log.
        objective: ``latency`` (the makespan, above) or ``throughput``: the busiest resource's load,
            solved exactly with its bound and MIP gap (:mod:`hetsim.mappers._throughput`).

    Raises (from :meth:`map`):
        MappingError: no feasible mapping (an op fits no device, ops only a CIM device runs exceed its
            crossbars), or no schedule at all within the limits.
    """

    def __init__(
        self,
        time_limit_s: float | None = None,
        mip_rel_gap: float = 1e-4,
        threads: int = 2,
        seed: int = 0,
        progress: Callable[[dict], None] | None = None,
        resolution_s: float | None = None,
        levers: tuple[str, ...] | list[str] | str | None = None,
        deterministic: bool = True,
        det_time_limit: float | None = None,
        fluid_share: float = 0.4,
        decompose_share: float = 0.85,
        log: bool = False,
        objective: str = "latency",
        work_limit: float | None = None,
    ):
        self.objective = check_objective("cpsat", objective)
        if (time_limit_s is not None and time_limit_s <= 0) or (work_limit is not None and work_limit <= 0):
            raise MappingError("cpsat: time_limit_s and work_limit must be > 0")
        self.time_limit_s = None if time_limit_s is None else float(time_limit_s)
        self.work_limit = None if work_limit is None else float(work_limit)
        self.mip_rel_gap = max(0.0, float(mip_rel_gap))
        self.threads = max(1, int(threads))
        self.seed = int(seed)
        self.progress = progress
        self.resolution_s = resolution_s
        if levers is None or levers == "all":
            levers = ALL_LEVERS
        elif levers == "none":
            levers = ()
        elif isinstance(levers, str):
            levers = tuple(x.strip() for x in levers.split(",") if x.strip())
        bad = set(levers) - set(ALL_LEVERS)
        if bad:
            raise MappingError(f"cpsat: unknown levers {sorted(bad)}; known: {', '.join(ALL_LEVERS)}")
        self.levers = frozenset(levers)
        self.deterministic = bool(deterministic)
        self.det_time_limit = det_time_limit
        self.fluid_share = float(fluid_share)
        self.decompose_share = float(decompose_share)
        self.log = bool(log)

    # ------------------------------------------------------------------------------------------------ map
    throughput_method = "exact"

    def map(self, costs: CostModel) -> Schedule:
        if costs.fusion:  # fused groups: one exact model of its own (hetsim/mappers/_fused_cpsat.py)
            if self.objective == "latency" and not weight_option_platform(costs.platform):
                try:
                    budget = Budget(self.work_limit, self.time_limit_s, CPSAT_WORK)
                    return map_fused(self, costs, self._heuristics(costs), budget,
                                     unfused=lambda: self._unfused(costs, budget))
                except TooManyPaths:
                    pass
            sched = self.map(costs.without_fusion())  # not modelled there: without fusion, and say so
            if self.objective == "latency" and weight_option_platform(costs.platform):
                return fuse_after_search(costs, sched, self._heuristics(costs))  # fused after, or a heuristic's
            sched.stats["fusion"] = NO_FUSION_NOTE
            return sched
        if self.objective == "throughput":
            return map_one(self, costs)
        # the phases allocate millions of small dicts and lists on large graphs, which the cyclic garbage
        # collector would scan again and again (none of them forms a cycle that needs it)
        if weight_option_platform(costs.platform):  # device and weight policy per op (hetsim/mappers/_policy.py)
            return cpsat_policies(costs, self.name, self.time_limit_s, self.threads, self.seed, self.resolution_s,
                                  self.mip_rel_gap, work_limit=self.work_limit)
        gc_on = gc.isenabled()
        gc.disable()
        try:
            return self._map(costs)
        finally:
            if gc_on:
                gc.enable()

    def _unfused(self, costs: CostModel, budget: Budget) -> list[Schedule]:
        """The schedule of this mapper without fused groups, given :data:`UNFUSED_SHARE` of ``budget`` (its work
        and its wall cap, whichever are set; the work it used is charged to ``budget``): a candidate of the fused
        model (its solution with no group fused), so that fusion never gives a schedule slower than the one found
        without it."""
        sub = copy.copy(self)
        sub.work_limit = None if budget.work is None else budget.work * UNFUSED_SHARE
        sub.time_limit_s = None if budget.wall_s is None else budget.wall_s * UNFUSED_SHARE
        sub.progress = None
        try:
            sched = sub._map(costs.without_fusion())
        except MappingError:
            return []
        budget.spent += float(sched.stats.get("work_used") or 0.0)
        sched.mapper = f"{self.name} without fusion"  # named so when it is the schedule returned (a fallback)
        return [sched]

    def _map(self, costs: CostModel) -> Schedule:
        """The phases in order (module docstring): the chain DP, candidates, bounds and fixing, the
        decomposition, the fluid relaxation, the full model; each step reads and updates one :class:`_Search`."""
        t0 = time.perf_counter()
        self._t0 = t0
        self._budget = Budget(self.work_limit, self.time_limit_s, CPSAT_WORK)
        self._phases = {}
        self._cap_units = {d: c.unit for d, c in costs.resident.items()}  # for the capacity messages
        sched = self._map_chain(costs, t0)
        if sched is not None:
            return sched
        s = self._candidates(costs)
        self._bounds_and_fixing(s)
        self._decompose(s)
        self._fluid(s)
        self._full_model(s)
        if s.best is None:
            raise MappingError(f"cpsat: no schedule found within {self._budget.describe()}")
        return self._finish(costs, s.p, s.best, s.lb, s.ub, s.heur, s.lv, s.fired, s.size,
                            s.solve_time, s.t)

    def _lap(self, name: str, since: float) -> float:
        """Add the wall time since ``since`` to phase ``name`` (:data:`PHASES`); returns now."""
        now = time.perf_counter()
        self._phases[name] = self._phases.get(name, 0.0) + now - since
        return now

    def _map_chain(self, costs: CostModel, t0: float) -> Schedule | None:
        """A graph that is one chain of ops, solved exactly by the DP (lever ``chain``); None otherwise."""
        g = costs.workload.graph
        if "chain" not in self.levers or g.number_of_edges() != g.number_of_nodes() - 1 \
                or not all(g.in_degree(v) <= 1 and g.out_degree(v) <= 1 for v in g):
            return None
        tick = B.choose_tick(costs, self.resolution_s, _serial_horizon(costs))
        p = B.build_problem(costs, tick)
        t = self._lap("model_s", t0)
        try:
            sol = solve_chain(p)
        except ValueError:
            raise MappingError("cpsat: no feasible mapping of the chain (crossbar budget, device support or "
                               "links)") from None
        t = self._lap("search_s", t)
        return self._chain_schedule(costs, p, *sol, t) if sol is not None else None

    def _candidates(self, costs: CostModel) -> _Search:
        """The heuristics' schedules (greedy, heft), the tick, the integer problem, and the best candidate of
        the heuristics re-scheduled (``fill``, floating ops in the gaps)."""
        t = time.perf_counter()
        large = costs.workload.graph.number_of_nodes() > MAX_CLOSURE_OPS
        heur = [] if large else self._heuristics(costs)  # greedy and heft are O(n^2) on wide graphs
        t = self._lap("heuristics_s", t)
        horizon = min((s.makespan_s for s in heur), default=None) or _serial_horizon(costs)
        tick = B.choose_tick(costs, self.resolution_s, horizon)
        p = B.build_problem(costs, tick)
        free = B.free_ops(costs, p)
        fired: dict[str, object] = {"too_big_removed": p.removed["too_big"], "floating_ops": len(free)}
        if p.removed["unlinked"]:
            fired["unlinked_removed"] = p.removed["unlinked"]
        lv = self.levers
        if len(p.ops) > MAX_CLOSURE_OPS:  # ancestor sets are O(n^2) bits: not for 100k-op synthetic graphs;
            # fixing repeats longest-path passes to a fixpoint, for a model there is rarely time to solve
            lv = lv - {"segments", "decompose", "fixing"}
            fired["skipped"] = f"segments, decompose, fixing (more than {MAX_CLOSURE_OPS} ops)"
        self._lv = lv
        s = _Search(self, p, free, lv, fired, heur, large)
        s.head, s.tail = B.heads_tails(p)
        t = self._lap("model_s", t)
        topo = p.ops
        for h in heur:
            a = h.assignment  # a property that builds a dict: once, not per op
            if all(a[v] in p.devices[v] and B.carried(p, a, v, a[v]) for v in topo):
                s.offer(a, _cpu_orders(p, h), h.mapper)
        if (s.best is None or large) and "fill" in lv:
            init = costs.initial_assignment()
            if all(init[v] in p.devices[v] and B.carried(p, init, v, init[v]) for v in topo):
                s.offer(init, None, "initial")
        if large and "fill" in lv:  # instead of greedy and heft: offload by host time saved per unit of budget
            s.offer(_ratio_offload(p, costs.initial_assignment()), None, "ratio")
            fired["heuristics"] = f"initial and ratio offload only (more than {MAX_CLOSURE_OPS} ops)"
        s.ub = s.best["ticks"] if s.best is not None else None
        fired["heuristic_makespan_s"] = s.ub * tick if s.ub is not None else None
        fired["heuristic_source"] = s.best["source"] if s.best is not None else None
        s.t = self._lap("heuristics_s", t)
        return s

    def _bounds_and_fixing(self, s: _Search) -> None:
        """The root bound (critical path, host-load knapsack), fixing by path and load, symmetric twins."""
        p, lv, fired, tick = s.p, s.lv, s.fired, s.p.tick
        head, tail = s.head, s.tail
        lb = 0
        if "heads_tails" in lv:
            lb = B.critical_path(p, head, tail)
            fired["critical_path_s"] = lb * tick
        if "knapsack" in lv:
            lbnd = B.load_bound(p, head, tail)
            if lbnd is not None:
                fired["knapsack_bound_s"] = lbnd.bound() * tick
                lb = max(lb, lbnd.bound())
            if (mb := B.multi_load_bound(p, head, tail)) is not None:  # several budgets: all counted
                fired["multi_knapsack_bound_s"] = mb * tick
                lb = max(lb, mb)
        if "fixing" in lv and s.ub is not None:
            fired["fixed_by_path"], fired["fixed_by_load"] = self._fix(p, s.ub)
            head, tail = s.head, s.tail = B.heads_tails(p)
            if "heads_tails" in lv:
                lb = max(lb, B.critical_path(p, head, tail))
            if "knapsack" in lv and (lbnd := B.load_bound(p, head, tail)) is not None:
                lb = max(lb, lbnd.bound())
            if "knapsack" in lv and (mb := B.multi_load_bound(p, head, tail)) is not None:
                lb = max(lb, mb)
        # the trivial bounds count even with their levers off: a reported bound is never below them
        if "heads_tails" not in lv:
            lb = max(lb, B.critical_path(p, head, tail))
        if "knapsack" not in lv and (lb0 := B.load_bound(p, head, tail)) is not None:
            lb = max(lb, lb0.bound())
        if s.ub is not None:
            lb = min(lb, s.ub)
        s.lb = lb
        fired["root_bound_s"] = lb * tick
        s.twins = self._twins(p) if "symmetry" in lv else []
        fired["symmetric_pairs"] = sum(len(g) - 1 for g in s.twins)
        s.t = self._lap("bounds_s", s.t)
        # floating ops (no inputs, only parameter outputs) matter when their work is at the tolerance's scale
        fwork = sum(min(p.dur[v].values()) for v in s.free)
        fired["floating_work_s"] = fwork * tick
        s.floats_matter = bool(s.free) and s.ub is not None and fwork > 10 * max(self.mip_rel_gap, 1e-5) * s.ub

    def _decompose(self, s: _Search) -> None:
        """The decomposition at cut ops (:mod:`hetsim.mappers._decomp`): floating ops left out (a bound, and a
        schedule once they are packed into the idle gaps), then, when they carry real work, attached to their
        consumers' segments (a schedule only)."""
        p, free, fired, tick = s.p, s.free, s.fired, s.p.tick
        if "decompose" in s.lv and (s.ub is None or s.lb < s.ub):
            limit = self._budget.unit_total  # the decomposition's share of the budget, on the budget's clock
            deadline = limit * self.decompose_share
            for attach in (False, True) if s.floats_matter else (False,):
                if s.ub is not None and (s.ub - s.lb) <= self.mip_rel_gap * s.ub:
                    break
                dec = Decomposition(self, p, free, deadline, attach=attach)
                if not dec.applicable or max((len(g) for g in dec.segs), default=0) >= 0.8 * len(p.ops):
                    break
                if attach:  # the first pass got the deadline share it needed; give this one the rest
                    dec.deadline = max(deadline, limit * (1 + self.decompose_share) / 2)
                r = dec.run(tol=self.mip_rel_gap)
                s.solve_time += r["solve_time"]
                key = "decompose_attached" if attach else "decompose"
                fired[key] = {k: r[k] for k in ("cuts", "largest_segment", "solves", "shortcuts", "timeouts",
                                                "rounds", "exact")}
                if r["assign"] is not None:
                    if attach:
                        s.offer(r["assign"], r["order"], key)
                    else:
                        order, _ = insert_floating(p, r["assign"], r["order"], free)
                        s.offer(r["assign"], order, key)
                    s.ub = s.best["ticks"] if s.best is not None else s.ub  # offer refuses what does not fit
                elif r.get("repaired") is not None:  # over a relaxed capacity: its greedy repair, re-scheduled
                    rep = dict(r["repaired"])
                    for v in free:  # floating ops: where the best candidate has them
                        rep.setdefault(v, s.best["assign"][v] if s.best else p.host)
                    if all(v in rep for v in p.ops):
                        s.offer(rep, None, key + "+repair")
                        s.ub = s.best["ticks"] if s.best is not None else s.ub
                if not attach:  # a bound of the problem without floating ops: a bound of this one
                    fired["decompose_bound_s"] = r["lb"] * tick
                    if r["invalid_bounds"] or (s.ub is not None and r["lb"] > s.ub):
                        # a bound above a schedule we hold is none (a bug in hetsim, like the segment
                        # knapsack's that counted ops the NPU may take on the CIM's budget, docs/fuzzing.md):
                        # clipped to the incumbent it would claim that schedule optimal. Dropped, recorded (the
                        # tests assert it never happens), and the full model decides
                        fired["decompose_bound_invalid"] = True
                    else:
                        s.lb = max(s.lb, min(r["lb"], s.ub) if s.ub is not None else r["lb"])
                s.report()
        s.t = self._lap("decomposition_s", s.t)

    def _fluid(self, s: _Search) -> None:
        """The fluid relaxation (lever ``fluid``; only pays when floating ops carry work at the scale of the
        tolerance): a bound of the real problem and a candidate."""
        lb, ub = s.lb, s.ub
        if not ("fluid" in s.lv and s.floats_matter and lb < ub and (ub - lb) > self.mip_rel_gap * ub):
            return
        budget = self._left() * self.fluid_share
        built = self._build(s.p, lb, ub, s.head, s.tail, s.free, s.twins, s.best, fluid=True, fired=s.fired)
        res = self._solve(_ortools(), built, budget, s.p.tick, s.p.rounding_bound_s, real=False)
        s.solve_time += res["time"]
        s.fired["fluid_status"] = res["status"]
        s.fired["fluid_time_s"] = res["time"]
        if res["bound"] is not None and res["bound"] > lb:
            s.lb = min(res["bound"], ub) if ub is not None else res["bound"]
        s.fired["fluid_bound_s"] = s.lb * s.p.tick
        if res["assign"] is not None:
            s.offer(res["assign"], res["order"], "fluid")
            s.ub = s.best["ticks"] if s.best is not None else s.ub
        s.report()
        s.t = self._lap("fluid_s", s.t)

    def _full_model(self, s: _Search) -> None:
        """The full model, built unless there is no time for it (its size is part of the statistics), and
        solved for the rest of the time when the gap is still open."""
        lb, ub, lv, fired, p = s.lb, s.ub, s.lv, s.fired, s.p
        open_gap = ub is None or (lb < ub and (ub - lb) > self.mip_rel_gap * ub)
        per_op = BUILD_S_PER_OP if self._budget.work is None else BUILD_WORK_PER_OP
        if s.large and ub is not None and self._left() < len(p.ops) * per_op * (1 + 3 * open_gap):
            fired["full_model_skipped"] = "no time left to build and solve it"
            open_gap = False
        else:
            built = self._build(p, lb, ub, s.head, s.tail, s.free, s.twins, s.best, fluid=False, fired=fired)
            s.t = self._lap("model_s", s.t)
            proto = built.model.Proto()
            s.size = (len(proto.variables), sum(1 for x in proto.variables if list(x.domain) == [0, 1]),
                      len(proto.constraints))
        fired["full_model_solved"] = open_gap
        if not open_gap:
            return
        res = self._solve(_ortools(), built, self._left(), p.tick, p.rounding_bound_s, real=True, lb0=lb)
        s.solve_time += res["time"]
        if res["status"] == "infeasible":
            if ub is not None and "windows" in lv:
                raise InternalError("cpsat: CP-SAT reports the model infeasible although a known schedule fits "
                                    "it (a bug in hetsim, please report it)")
            raise MappingError("cpsat: no feasible mapping (crossbar budget or device support)")
        if res["bound"] is not None:
            s.lb = max(lb, res["bound"])
        if res["assign"] is not None and (ub is None or res["ticks"] < ub):
            s.best = {"assign": res["assign"], "order": res["order"], "ticks": res["ticks"], "source": "cp-sat"}
            s.ub = res["ticks"]
        s.t = self._lap("search_s", s.t)

    def _chain_schedule(self, costs: CostModel, p: B.IntProblem, assign: dict[str, str], ticks: int,
                        t: float) -> Schedule:
        """The chain DP's optimum (:mod:`hetsim.mappers._chain`) as a schedule with the usual statistics."""
        order = {c: [v for v in p.ops if assign[v] == c] for c in p.cpus}
        best = {"assign": assign, "order": order, "ticks": ticks, "source": "chain"}
        fired = {"chain": True, "too_big_removed": p.removed["too_big"]}
        return self._finish(costs, p, best, ticks, ticks, [], self.levers, fired, (None, None, None), 0.0, t)

    def _finish(self, costs: CostModel, p: B.IntProblem, best: dict, lb: int, ub: int, heur: list[Schedule], lv,
                fired: dict, size: tuple[int, int, int], solve_time: float, t: float) -> Schedule:
        """The schedule of ``best`` in real time with its statistics (status, bound and gap in real time, the
        phases' wall times); not proven optimal: the best of it and the heuristics' schedules."""
        t0 = self._t0
        topo, tick, host = p.ops, p.tick, costs.host
        n_vars, n_bools, n_cons = size
        # the bound is what was proven: CP-SAT reports OPTIMAL as soon as its gap is within relative_gap_limit
        # (our mip_rel_gap), its bound then below the incumbent; taking the incumbent as the bound, as this did,
        # reported a bound up to mip_rel_gap above the optimum and proven_exact True (docs/fuzzing.md)
        lb = min(lb, ub)
        rgap = (ub - lb) / ub if ub > 0 else 0.0
        status = "optimal" if rgap <= self.mip_rel_gap + 1e-15 else self._budget.status()

        order = best["order"]
        stats = {
            "solver": "cp-sat",
            "version": _version(),
            "operators": len(topo),
            "variables": n_vars,
            "booleans": n_bools,
            "constraints": n_cons,
            "status": status,
            "proven_exact": lb == ub,
            "solution_source": best["source"],
            "tick_s": tick,
            "rounding_bound_s": p.rounding_bound_s,
            "objective_ticks": ub,
            "bound_ticks": lb,
            "mip_rel_gap_limit": self.mip_rel_gap,
            "levers": sorted(lv),
            "presolve": fired,
            "threads": self.threads,
            "seed": self.seed,
            "deterministic": self.deterministic,
            **self._budget.stats(),
            "offloaded": sum(1 for v in topo if best["assign"][v] != host),
        }
        sched = make_schedule(costs, best["assign"], self.name, stats, order=order)
        real = sched.makespan_s
        slack = 1e-9 * max(real, 1e-30) + B.SNAP * tick * (len(topo) + len(p.tr))
        if real > ub * tick + slack:
            raise MappingError(f"cpsat: real makespan {real} exceeds the rounded objective {ub * tick} (bug)")
        bound_s = min(max(lb * tick - p.rounding_bound_s, 0.0), real)
        sched.stats.update({
            "solver_calls_s": solve_time,
            "incumbent_s": real,
            "rounded_makespan_s": ub * tick,
            "bound_s": bound_s,
            "mip_gap": (real - bound_s) / real if real > 0 else 0.0,
            "rounded_gap": rgap,
        })
        if status != "optimal":  # not proven: never return worse than the heuristics (real, not rounded, times)
            h = min(heur, key=lambda x: x.makespan_s, default=None)
            if h is not None and h.makespan_s < real:
                stats = {**sched.stats, "solution_source": h.mapper, "solver_schedule_makespan_s": real,
                         "offloaded": sum(1 for d in h.assignment.values() if d != host)}
                sched = make_schedule(costs, h.assignment, self.name, stats, order=h.order)
                real = sched.makespan_s
                bound_s = min(bound_s, real)
                sched.stats.update({"incumbent_s": real, "bound_s": bound_s,
                                    "mip_gap": (real - bound_s) / real if real > 0 else 0.0})
            if sched.stats["solution_source"] in ("greedy", "heft"):
                sched.stats["fallback"] = sched.stats["solution_source"]
                sched.stats["fallback_makespan_s"] = real
        phases = self._phases
        now = time.perf_counter()
        phases["schedule_s"] = phases.get("schedule_s", 0.0) + now - t
        wall = now - t0
        sched.stats.update({"solve_time_s": wall, "total_time_s": wall,
                            "phases_s": {k: phases[k] for k in PHASES if k in phases}})
        if self.progress is not None:  # the final state, so a progress display never ends on a stale line
            self.progress({"time_s": time.perf_counter() - t0, "incumbent_s": real, "bound_s": bound_s,
                           "gap": sched.stats["mip_gap"], "final": True})
        return sched

    # ------------------------------------------------------------------------------------------ building
    def _build(self, p: B.IntProblem, lb, ub, head, tail, free, twins, best, fluid: bool, fired: dict,
               xb_weight: int | None = None, xb_units: dict[str, tuple[int, int]] | None = None) -> _Built:
        """The CP-SAT model; ``fluid``: floating ops get no interval (the relaxation); ``xb_weight``: minimise
        ``T * xb_weight + capacity used`` instead of ``T`` (lexicographic, for the decomposition); ``xb_units``:
        device -> (multiplier, divisor) weighing each device's capacity in that sum (``ceil(n / divisor) *
        multiplier``; default: every unit of every capacity counts 1).

        The steps, in the order the model is built (CP-SAT's search depends on it): the variables, the
        makespan's lower limits, the serial devices' intervals (CPU-CIM ILP Eq. 11-12), the precedences with
        transfers (Eq. 8), the resident capacities (Eq. 14), the host-load and segment cuts, the hint and the
        objective."""
        cp_model = _ortools()
        lv = self._lv
        m = cp_model.CpModel()
        lit, start, T = self._variables(m, p, lb, ub, head, tail)

        def end(v):
            return start[v] + sum(p.dur[v][d] * lit[v][d] for d in p.devices[v])

        self._makespan_rows(m, p, lit, start, end, T, head, tail, free, fluid)
        self._device_intervals(m, p, lit, start, free, fluid)
        self._precedences(m, p, lit, start, end)
        self._capacities(m, p, lit)
        if "host_load" in lv:
            for c, cores in p.cpus.items():
                ops_c = [v for v in p.ops if c in p.devices[v]]
                if ops_c:
                    r0 = min(head[v][c] for v in ops_c)
                    q0 = min(tail[v][c] for v in ops_c)
                    m.Add(cores * (T - r0 - q0) >= sum(p.dur[v][c] * lit[v][c] for v in ops_c))
        n_seg = self._segments(m, p, lit, start, end, T, head, tail, free) if "segments" in lv else 0
        fired["segment_constraints"] = n_seg
        self._hint(m, p, lit, start, T, twins, best)
        if xb_weight is None:
            m.Minimize(T)
        else:
            units = xb_units or {}
            m.Minimize(T * xb_weight + sum(_weight(units, d, p.ncb[v][d]) * x for v in p.ops
                                           for d, x in lit[v].items() if d in p.budget and not isinstance(x, int)))
        return _Built(m, lit, start, T, list(p.cpus))

    def _variables(self, m, p: B.IntProblem, lb, ub, head, tail):
        """The placement literals ``lit[v][d]`` (the CPU-CIM ILP's ``x_v`` generalised: exactly one device per
        op; a constant 1 for an op with one device), the makespan ``T`` and the start ``s_v`` of every op,
        within its window (lever ``windows``: head and tail) below the horizon (``ub`` with ``windows``, else
        CPU-CIM ILP Eq. 13's serial sum)."""
        lv = self._lv
        lit: dict[str, dict[str, object]] = {}
        for v in p.ops:
            ds = p.devices[v]
            if len(ds) == 1:
                lit[v] = {ds[0]: 1}
            else:
                lit[v] = {d: m.NewBoolVar(f"l[{p.pos[v]},{d}]") for d in ds}
                m.AddExactlyOne(lit[v].values())
        hi = ub if (ub is not None and "windows" in lv) else _int_horizon(p)
        T = m.NewIntVar(min(lb, hi), hi, "T")
        start = {}
        for v in p.ops:
            ds = p.devices[v]
            lo = min(head[v][d] for d in ds) if ("windows" in lv or "heads_tails" in lv) else 0
            up = hi - min(p.dur[v][d] + (tail[v][d] if "windows" in lv else 0) for d in ds)
            start[v] = m.NewIntVar(lo, max(lo, up), f"s[{p.pos[v]}]")
        return lit, start, T

    def _makespan_rows(self, m, p: B.IntProblem, lit, start, end, T, head, tail, free, fluid: bool) -> None:
        """``T`` at least every op's end (CPU-CIM ILP Eq. 6); with lever ``heads_tails`` its end plus its tail
        (and its start at least its head on the chosen device)."""
        if "heads_tails" in self._lv:
            for v in p.ops:
                ds = p.devices[v]
                if len(ds) > 1 and len({head[v][d] for d in ds}) > 1:
                    m.Add(start[v] >= sum(head[v][d] * lit[v][d] for d in ds))
                if not fluid or v not in free:
                    m.Add(start[v] + sum((p.dur[v][d] + tail[v][d]) * lit[v][d] for d in ds) <= T)
        else:
            for v in p.ops:
                if not p.succs[v]:
                    m.Add(end(v) <= T)

    @staticmethod
    def _device_intervals(m, p: B.IntProblem, lit, start, free, fluid: bool) -> None:
        """One (optional) interval per op and serial device: no overlap on a one-core cpu, at most ``cores`` at
        once on a multi-core one (CPU-CIM ILP Eq. 11-12; ``fluid``: floating ops get none)."""
        intervals: dict[str, list] = defaultdict(list)
        for v in p.ops:
            if fluid and v in free:
                continue
            for d in p.devices[v]:
                if d in p.cpus:
                    x = lit[v][d]
                    if isinstance(x, int):
                        iv = m.NewFixedSizeIntervalVar(start[v], p.dur[v][d], f"i[{p.pos[v]},{d}]")
                    else:
                        iv = m.NewOptionalFixedSizeIntervalVar(start[v], p.dur[v][d], x, f"i[{p.pos[v]},{d}]")
                    intervals[d].append(iv)
        for d, ivs in intervals.items():
            if p.cpus[d] == 1:
                m.AddNoOverlap(ivs)
            else:
                m.AddCumulative(ivs, [1] * len(ivs), p.cpus[d])

    @staticmethod
    def _precedences(m, p: B.IntProblem, lit, start, end) -> None:
        """Every edge: the consumer starts after the producer's end plus the transfer of the devices chosen
        (CPU-CIM ILP Eq. 8; ``z``: the two are on different devices); device pairs without a link are
        forbidden."""
        for u in p.ops:
            for v in p.succs[u]:
                tr = p.tr[(u, v)]
                du, dv = p.devices[u], p.devices[v]
                for a in du:  # pairs without a link
                    for b in dv:
                        if (a, b) not in tr:
                            m.AddBoolOr([_neg(lit[u][a]), _neg(lit[v][b])])
                cross = [t for (a, b), t in tr.items() if a != b]
                same = [t for (a, b), t in tr.items() if a == b]
                tmin = min(cross, default=0)
                if tmin == 0 or not same:
                    m.Add(start[v] >= end(u) + min(same + cross))
                else:
                    z = m.NewBoolVar(f"z[{p.pos[u]},{p.pos[v]}]")
                    for d in dict.fromkeys(du + dv):
                        a, b = lit[u].get(d, 0), lit[v].get(d, 0)
                        if isinstance(a, int) and isinstance(b, int):
                            if a > b:
                                m.Add(z == 1)
                        else:
                            m.Add(z >= a - b)
                    m.Add(start[v] >= end(u) + tmin * z)
                for (a, b), t in tr.items():
                    if a != b and t > tmin and a in lit[u] and b in lit[v]:  # (fixing may have removed a, b)
                        enf = [x for x in (lit[u][a], lit[v][b]) if not isinstance(x, int)]
                        m.Add(start[v] >= end(u) + t).OnlyEnforceIf(enf)

    def _capacities(self, m, p: B.IntProblem, lit) -> None:
        """Every resident capacity (crossbars, weight memory): the ops placed there fit (CPU-CIM ILP Eq. 14).

        Raises:
            MappingError: the ops only that device runs already exceed it."""
        for d, cap in p.budget.items():
            terms = [(p.ncb[v][d], lit[v][d]) for v in p.ops if d in p.devices[v]]
            var = [(n, x) for n, x in terms if not isinstance(x, int)]
            fixed_use = sum(n for n, x in terms if isinstance(x, int))
            if fixed_use > cap:
                unit = getattr(self, "_cap_units", {}).get(d, "units of capacity")
                raise MappingError(f"cpsat: ops only {d!r} runs need {fixed_use:,} {unit}, {cap:,} {unit} available "
                                   f"(CPU-CIM ILP Eq. 14)")
            if var and sum(n for n, _ in var) + fixed_use > cap:
                m.Add(sum(n * x for n, x in var) <= cap - fixed_use)

    def _hint(self, m, p: B.IntProblem, lit, start, T, twins, best) -> None:
        """The symmetry breaking of ``twins`` (lever ``symmetry``) and the best candidate as solution hint
        (lever ``hint``: its assignment, its ASAP starts and makespan)."""
        hint = None
        if best is not None and "hint" in self._lv:
            hs, _ = B.int_list_schedule(p, best["assign"], best["order"])
            hint = (dict(best["assign"]), hs)
        if twins:
            self._symmetry(m, p, lit, start, twins, hint)
        if hint is not None:
            assign, hs = hint
            for v in p.ops:
                for d, x in lit[v].items():
                    if not isinstance(x, int):
                        m.AddHint(x, d == assign[v])
                m.AddHint(start[v], hs[v])
            m.AddHint(T, best["ticks"])

    def _segments(self, m, p: B.IntProblem, lit, start, end, T, head, tail, free) -> int:
        """Host-load constraints over DAG windows (lever ``segments``, see the module docstring)."""
        anc, desc = B.closures(p)
        cuts = B.cut_ops(p, anc, desc, free)
        cut_pos = [p.pos[x] for x in cuts]
        windows = []  # (lhs builder, ops bitset, key)
        for v in p.ops:
            windows.append((("anc", v), anc[v]))
            windows.append((("desc", v), desc[v]))
            if v in free or v in cuts:
                continue
            i = bisect.bisect_left(cut_pos, p.pos[v])
            if i > 0:
                windows.append(((cuts[i - 1], v), desc[cuts[i - 1]] & anc[v]))
            if i < len(cuts):
                windows.append(((v, cuts[i]), desc[v] & anc[cuts[i]]))
        for a, b in zip(cuts, cuts[1:], strict=False):
            windows.append(((a, b), desc[a] & anc[b]))
        count = 0
        for c, k in p.cpus.items():
            count += _window_loads(m, p, c, k, lit, start, end, T, head, tail, windows)
        return count

    # ------------------------------------------------------------------------------------------- solving
    def _left(self) -> float:
        """The budget left (:class:`~hetsim.mappers._limits.Budget` units: deterministic seconds, or seconds)."""
        return self._budget.left()

    def _clock(self) -> float:
        """The budget used so far, in the same units: what the phases' deadlines are set on."""
        return self._budget.used()

    def _solve(self, cp_model, built: _Built, limit: float, tick: float, rb: float, real: bool,
               lb0: int = 0, gap: float | None = None) -> dict:
        solver = cp_model.CpSolver()
        prm = solver.parameters
        self._budget.set_params(prm, limit)
        prm.num_workers = self.threads
        prm.random_seed = self.seed
        prm.relative_gap_limit = self.mip_rel_gap if gap is None else gap
        prm.log_search_progress = self.log
        if self.deterministic and self.threads > 1:
            prm.interleave_search = True
        if self.threads == 1 and SINGLE_WORKER_BRANCHING is not None:
            prm.search_branching = getattr(cp_model, SINGLE_WORKER_BRANCHING)
        # use_dynamic_precedence_in_disjunctive stays off (its default). It once gave 1.5-3x faster proofs of
        # the host order on the YOLOv5n segments, but with 2 workers and our solution hint OR-Tools 9.15 aborts
        # the whole process on some models ("We currently do not support adding conflicting constraint at
        # positive level", a CHECK failure: SIGABRT, nothing to catch), e.g. a 29-op host + CIM + NPU instance
        # of the test suite (tests/test_cpsat_abort.py); without it YOLOv5n/puma, ResNet-18 QDQ/cim-npu and
        # MobileNet-v2/soc-2npu (measured 2026-12-02) prove the same makespans in the same time
        if prm.interleave_search:
            # interleaved search runs each subsolver in chunks of 1 deterministic second and waits for a
            # whole batch, even after a proof. On these models some workers' chunks take 10-25 s of wall time
            # (measured: core 23 s, fixed 28 s, max_lp 10 s), so a 0.04 s proof took 21 s: leave them out
            prm.ignore_subsolvers.extend(["core", "fixed", "max_lp"])
        if self.det_time_limit is not None:
            prm.max_deterministic_time = min(prm.max_deterministic_time, self.det_time_limit)
        cb = None
        if real and self.progress is not None:
            cb = _progress_callback(cp_model, self, tick, rb, lb0)
        t = time.perf_counter()
        code = _cpsat_sigint.solve(solver, built.model, cb)  # SIGINT left as it was (ortools resets it)
        self._budget.charge(solver, proven=code in (cp_model.OPTIMAL, cp_model.INFEASIBLE))
        out = {"time": time.perf_counter() - t, "assign": None, "order": None, "ticks": None, "bound": None}
        cut = self._budget.stopped_by or "time_limit"  # the limit that stopped it (work_limit, time_limit)
        out["status"] = {cp_model.OPTIMAL: "optimal", cp_model.FEASIBLE: cut,
                         cp_model.INFEASIBLE: "infeasible"}.get(code, cut)
        if code in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            out["bound"] = int(round(solver.BestObjectiveBound()))
            out["ticks"] = int(round(solver.ObjectiveValue()))
            lit, start = built.lit, built.start
            assign = {v: next(d for d, x in lit[v].items() if (x if isinstance(x, int) else solver.Value(x)))
                      for v in lit}
            s_val = {v: solver.Value(start[v]) for v in start}
            ops = list(lit)
            pos = {v: i for i, v in enumerate(ops)}
            out["assign"] = assign
            out["order"] = {c: sorted((v for v in ops if assign[v] == c), key=lambda v: (s_val[v], pos[v]))
                            for c in built.cpus}
        elif code == cp_model.UNKNOWN:
            b = solver.BestObjectiveBound()
            out["bound"] = int(round(b)) if abs(b) < 1 << 62 else None
        return out

    def _report(self, inc_s, bound_s, rb, tick) -> None:
        if self.progress is None or inc_s is None:
            return
        self._last_bound = max(getattr(self, "_last_bound", 0.0), (bound_s or 0.0))
        b = max(self._last_bound - rb, 0.0) if self._last_bound else 0.0
        self.progress({"time_s": time.perf_counter() - self._t0, "incumbent_s": inc_s, "bound_s": b,
                       "gap": (inc_s - b) / inc_s if inc_s > 0 else 0.0})

    # ------------------------------------------------------------------------------------------- helpers
    def _heuristics(self, costs: CostModel) -> list[Schedule]:
        """Schedules of the registered heuristics (greedy, heft) that succeed."""
        out = []
        if "hint" not in self.levers and "fixing" not in self.levers and "windows" not in self.levers \
                and "fill" not in self.levers:
            return out
        for name in ("greedy", "heft"):
            if name in MAPPERS:
                try:
                    out.append(MAPPERS[name]().map(costs))
                except (MappingError, ScheduleError):  # a heuristic that fails gives no candidate
                    continue
        return out

    def _fix(self, p: B.IntProblem, ub: int) -> tuple[int, int]:
        """Remove (op, device) choices that cannot appear in a schedule of makespan <= ``ub``."""
        by_path = by_load = 0
        changed = True
        while changed:
            changed = False
            head, tail = B.heads_tails(p)
            for v in p.ops:
                ds = p.devices[v]
                if len(ds) == 1:
                    continue
                keep = [d for d in ds if d in head[v] and d in tail[v]
                        and head[v][d] + p.dur[v][d] + tail[v][d] <= ub]
                if keep and len(keep) < len(ds):
                    by_path += len(ds) - len(keep)
                    p.devices[v] = keep
                    changed = True
            lbnd = B.load_bound(p, head, tail)
            if lbnd is not None and len(lbnd.items) * (max(lbnd.cap, 0) + 1) <= MAX_TABLE_CELLS:
                for v, (stay, go) in lbnd.per_op().items():
                    ds = p.devices[v]
                    if stay > ub and go <= ub:  # must be offloaded
                        p.devices[v] = [d for d in ds if d != lbnd.cpu]
                    elif go > ub and stay <= ub:  # must stay on the cpu
                        p.devices[v] = [lbnd.cpu]
                    else:
                        continue
                    by_load += 1
                    changed = True
        return by_path, by_load

    def _twins(self, p: B.IntProblem) -> list[list[str]]:
        """Groups of interchangeable ops (same devices, durations, crossbars, predecessors and successors
        with the same transfers), each in topological order."""
        groups: dict[tuple, list[str]] = defaultdict(list)
        for v in p.ops:
            if len(p.devices[v]) < 2:
                continue
            key = (
                tuple(p.devices[v]),
                tuple(p.dur[v][d] for d in p.devices[v]),
                tuple(p.ncb.get(v, {}).get(d, 0) for d in p.devices[v]),
                tuple(sorted((u, tuple(sorted(p.tr[(u, v)].items()))) for u in p.preds[v])),
                tuple(sorted((w, tuple(sorted(p.tr[(v, w)].items()))) for w in p.succs[v])),
            )
            groups[key].append(v)
        return [sorted(vs, key=lambda v: p.pos[v]) for vs in groups.values() if len(vs) > 1]

    def _symmetry(self, m, p: B.IntProblem, lit, start, twins, hint) -> None:
        """Twins: device index non-increasing along the group and, on a shared cpu, starts non-decreasing.
        The hint (assignment, starts) is permuted within each group to satisfy this."""
        for vs in twins:
            ds = p.devices[vs[0]]
            if hint is not None:
                assign, st = hint
                rank = {d: i for i, d in enumerate(ds)}
                vals = sorted((-rank[assign[v]], st[v]) for v in vs)
                for v, (r, s0) in zip(vs, vals, strict=True):
                    assign[v], st[v] = ds[-r], s0
            for a, b in zip(vs, vs[1:], strict=False):
                for i in range(len(ds) - 1, 0, -1):
                    m.Add(sum(lit[a][d] for d in ds[i:]) >= sum(lit[b][d] for d in ds[i:]))
                for d in ds:
                    if d in p.cpus:
                        m.Add(start[a] <= start[b]).OnlyEnforceIf([lit[a][d], lit[b][d]])


def _window_loads(m, p: B.IntProblem, c: str, k: int, lit, start, end, T, head, tail, windows) -> int:
    """``k * (right - left) >= cpu-c work of the window's ops`` for every window; returns how many."""
    import numpy as np

    ops_c = [v for v in p.ops if c in p.devices[v]]
    if not ops_c:
        return 0
    n = len(p.ops)
    nbytes = (n + 7) // 8
    fixed_cost = np.zeros(n, dtype=np.int64)
    flex: list[tuple[int, str]] = []
    flex_mask = 0
    for v in ops_c:
        if len(p.devices[v]) == 1:
            fixed_cost[p.pos[v]] = p.dur[v][c]
        else:
            flex.append((p.pos[v], v))
            flex_mask |= 1 << p.pos[v]
    r0 = min(head[v][c] for v in ops_c)
    q0 = min(tail[v][c] for v in ops_c)
    seen: set = set()
    count = 0
    for key, bits in windows:
        if not bits or key in seen:
            continue
        seen.add(key)
        member = np.unpackbits(np.frombuffer(bits.to_bytes(nbytes, "little"), dtype=np.uint8),
                               bitorder="little")[:n].astype(bool)
        const = int(fixed_cost[member].sum())
        fb = bits & flex_mask
        terms = [p.dur[v][c] * lit[v][c] for i, v in flex if fb >> i & 1]
        if const == 0 and not terms:
            continue
        if key[0] == "anc":
            lhs = start[key[1]] - r0
        elif key[0] == "desc":
            lhs = T - q0 - end(key[1])
        else:
            lhs = start[key[1]] - end(key[0])
        m.Add(k * lhs >= const + sum(terms))
        count += 1
    return count


def _progress_callback(cp_model, mapper: CpSat, tick: float, rb: float, lb0: int):
    class Cb(cp_model.CpSolverSolutionCallback):
        def on_solution_callback(self):
            b = max(self.BestObjectiveBound(), lb0) * tick
            mapper._report(self.ObjectiveValue() * tick, b, rb, tick)

    return Cb()


def _ratio_offload(p: B.IntProblem, init: dict[str, str]) -> dict[str, str]:
    """``init`` with ops moved from the host to the capacitated device whose budget binds
    (:func:`~hetsim.mappers._bounds.shared_budget`), by host time saved per unit of its capacity, while it
    fits (``O(n log n)``: the candidate of graphs too large for greedy and heft)."""
    cim, cap = B.shared_budget(p)
    if cim is None:
        cim = next(iter(p.budget), None)
        cap = p.budget.get(cim, 0)
    out = dict(init)
    if cim is None:
        return out
    cap -= sum(p.ncb[v][cim] for v in p.ops if out[v] == cim)
    cands = []
    for v in p.ops:
        if out[v] == p.host and cim in p.devices[v]:
            saved = p.dur[v][p.host] - p.dur[v][cim]
            if saved > 0:
                cands.append((-saved / max(1, p.ncb[v][cim]), p.pos[v], v))
    for _, _, v in sorted(cands):
        n = p.ncb[v][cim]
        if n <= cap and B.carried(p, out, v, cim):
            out[v] = cim
            cap -= n
    return out


def _neg(x):
    return x.Not() if not isinstance(x, int) else 1 - x


class _Search:
    """The state one :meth:`CpSat._map` passes through its steps: the integer problem, its floating ops, the
    best candidate (``best``: ``{'assign', 'order', 'ticks', 'source'}``) and its makespan ``ub``, the bound
    ``lb`` (ticks), what the levers did (``fired``, the ``presolve`` statistics) and the time spent."""

    def __init__(self, mapper: CpSat, p: B.IntProblem, free: set[str], lv, fired: dict, heur: list[Schedule],
                 large: bool):
        self.m, self.p, self.free, self.lv, self.fired, self.heur, self.large = mapper, p, free, lv, fired, heur, large
        self.head: dict = {}
        self.tail: dict = {}
        self.best: dict | None = None
        self.ub: int | None = None
        self.lb = 0
        self.twins: list[list[str]] = []
        self.floats_matter = False
        self.solve_time = 0.0
        self.size: tuple = (None, None, None)  # the full model's variables, Booleans, constraints
        self.t = time.perf_counter()  # the end of the last phase timed

    def report(self) -> None:
        """Progress: the incumbent and the bound so far."""
        p = self.p
        self.m._report(self.ub * p.tick if self.ub is not None else None, self.lb * p.tick, p.rounding_bound_s,
                       p.tick)

    def offer(self, assign: dict[str, str], order: dict[str, list[str]] | None, source: str) -> None:
        """A candidate assignment (and cpu order, or None): kept when it fits and beats ``best``; with lever
        ``fill`` also re-scheduled by :func:`~hetsim.mappers._bounds.fill_schedule` and, given an order, with
        the floating ops put into its gaps (:func:`~hetsim.mappers._decomp.insert_floating`)."""
        p, free = self.p, self.free
        if not B.fits(p, assign):  # a candidate for a relaxed problem, or outside the choices left
            return
        cands = []
        if order is not None:
            _, ms = B.int_list_schedule(p, assign, order)
            cands.append((ms, order, source))
        if "fill" in self.lv:
            o2, _ = B.fill_schedule(p, assign, free, B.bottom_levels(p, assign))
            _, ms2 = B.int_list_schedule(p, assign, o2)  # its order timed ASAP: never later
            cands.append((ms2, o2, source + "+fill"))
            if free and order is not None:  # the given order's other ops, floating ops in its gaps
                o3, ms3 = insert_floating(p, dict(assign), order, free)
                cands.append((ms3, o3, source + "+gaps"))
        for ms, o, src in cands:
            if self.best is None or ms < self.best["ticks"]:
                self.best = {"assign": dict(assign), "order": o, "ticks": ms, "source": src}
                self.m._report(self.best["ticks"] * p.tick, None, p.rounding_bound_s, p.tick)


def _cpu_orders(p: B.IntProblem, sched: Schedule) -> dict[str, list[str]]:
    a = sched.assignment
    return {c: list(sched.order.get(c) or [v for v in p.ops if a[v] == c]) for c in p.cpus}


def _serial_horizon(costs: CostModel) -> float:
    """CPU-CIM ILP Eq. 13: every op at its slowest device plus every transfer (a makespan no schedule
    exceeds)."""
    g = costs.workload.graph
    total = sum(max(lat.values()) for lat in costs.latency.values())
    for u, v in g.edges:
        ts = [costs.transfer_time(u, v, a, b) for a in costs.latency[u] for b in costs.latency[v]
              if a != b and costs.carried(u, v, a, b)]  # a pair without a link is never used
        total += max(ts, default=0.0)
    return total


def _int_horizon(p: B.IntProblem) -> int:
    return sum(max(p.dur[v].values()) for v in p.ops) + sum(max(t.values(), default=0) for t in p.tr.values())


def _version() -> str:
    try:
        import ortools

        return ortools.__version__
    except Exception:  # pragma: no cover
        return "unknown"
