"""Lower bounds on the makespan of the weight-policy problem (:func:`hetsim.mappers._policy.cpsat_policies`); ours.

The problem: every op takes one of its options (device, weight policy, memory; :func:`~hetsim.mappers._policy.
op_options`), with that option's latency; resident options count against their device's budget, streamed and
reprogrammed ones against their memory's size; the ops of a serial device (:meth:`~hetsim.costs.CostModel.
serial_devices`: the host's cores, an NPU) run one per unit, a CIM's reprogrammed ops one after another on its
time-shared crossbars (its *pool*), everything else overlaps freely; an edge between two devices waits for its
transfer (CPU-CIM ILP Eq. 8) and an edge no link carries is forbidden. This is the contention-free timing of
:func:`hetsim.sim.analytic.list_schedule` that the CP-SAT model and the heuristics optimise (reads from a memory do
not wait for each other there). Everything here is in real seconds (no ticks), so a bound is a bound on the real
problem, and on the CP-SAT model's (whose durations are the real ones rounded up).

Two bounds, both ours (derivations in the docstrings), both valid for every feasible choice of options and order:

* :func:`critical_path`: the longest path where every op takes its fastest feasible option on each device and an
  edge its transfer only where no pair of devices left to its ends avoids it (:func:`hetsim.mappers._bounds.
  heads_tails` on the relaxed problem);
* :func:`lp_bound`: a linear relaxation that couples the options to paths *and* to loads: fractional option
  variables with the budget and memory rows, start variables with the precedences and a linearised transfer per
  edge, and, between every two consecutive *cut ops* (ops comparable with every other op, so every schedule
  finishes everything before one before it starts and starts everything after it after it ends), the load of each
  serial device and pool in windows of head and tail (the one-machine head-body-tail bound); solved with HiGHS
  (:func:`scipy.optimize.linprog`), the bound taken from its duals by weak duality
  (:func:`hetsim.mappers._bounds.dual_lp_bound`), so that no solver tolerance enters it; HiGHS's branch and
  bound on the same relaxation (:func:`milp_bound`) keeps a margin instead (:data:`LP_MARGIN`).

On the transformer graphs of ``docs/beyond.md`` the second is nearly tight: their layers are chains of cut ops,
so the makespan is the sum of the chain's durations plus the host work of the parallel attention heads between
them, and the resident budgets (1 MiB on the NPU, 80 crossbars) decide which few layers skip their stream.
"""

from __future__ import annotations

from dataclasses import dataclass

from hetsim.costs import CostModel
from hetsim.mappers import _bounds as B

#: at most this many head and this many tail thresholds per window family (their pairs are the windows)
WINDOW_THRESHOLDS = 16
#: relative safety margin taken off HiGHS's branch-and-bound dual bound (:func:`milp_bound`), and off the LP's
#: optimum where its duals prove nothing (:func:`lp_bound` without ``upper_s``): HiGHS meets its constraints to a
#: tolerance of 1e-7 in the scaled units (times divided by the scale, so values are about 1), so its objective may
#: exceed the exact optimum by about that; 1e-6 of the scale covers it (ours: an allowance, not a proof)
LP_MARGIN = 1e-6


def fits(o, budget: dict[str, int], mem_left: dict[str, int]) -> bool:
    """True when option ``o`` (:data:`~hetsim.mappers._policy.Option`) fits what is left: a resident option's need
    within ``budget`` of its device (device -> capacity left; a device missing from it has no budget, so anything
    fits), a streamed or reprogrammed one's bytes within ``mem_left`` of its memory (memory -> bytes left; a
    memory missing from it has none). With the whole budgets (``costs.budget``) and the memories' sizes, whether
    the option can be taken at all (:func:`relax`); the heuristics pass what their choices so far leave."""
    d, pol, mem, _, need, st = o
    if pol == "resident":
        return d not in budget or need <= budget[d]
    return st.nbytes <= mem_left.get(mem, 0)


@dataclass
class Relaxed:
    """The relaxed problem the bounds read: per op its feasible options, per (op, device) the fastest of them.

    Attributes:
        p: **not** a problem in integer ticks, though its class is :class:`~hetsim.mappers._bounds.IntProblem`
            (whose fields say ticks): that record reused with times in float **seconds** and ``tick = 1.0``,
            nothing rounded: ``dur[v][d]`` the fastest feasible option of ``v`` on ``d``, ``tr`` the transfer time
            of each carried device pair (a pair no link carries is missing, as in :func:`~hetsim.mappers._bounds.
            build_problem`), ``ncb`` empty (budgets are the options' rows), ``rounding_bound_s`` 0. Read here only
            by the functions of :mod:`~hetsim.mappers._bounds` that add, compare and take minima and maxima of
            times and never read ``tick`` or ``ncb`` (``heads_tails``, ``critical_path``, ``closures``,
            ``free_ops``, ``cut_ops``), which are as valid in seconds; not for its rounding, knapsack or tick
            evaluators.
        opts: per op, its feasible options (a sublist of :func:`~hetsim.mappers._policy.op_options`').
    """

    p: B.IntProblem  # float seconds, tick 1.0 (above)
    opts: dict[str, list]


def relax(costs: CostModel, opts: dict[str, list]) -> Relaxed:
    """The :class:`Relaxed` problem of ``costs`` and its options (``op_options(costs)``)."""
    g = costs.workload.graph
    topo = costs.workload.topological_order()
    sizes = {n: m.size_bytes for n, m in costs.platform.memories.items()}
    fopts = {v: [o for o in opts[v] if fits(o, costs.budget, sizes)] for v in topo}
    devices, dur = {}, {}
    order = list(costs.platform.devices)
    for v in topo:
        best: dict[str, float] = {}
        for o in fopts[v]:
            best[o[0]] = min(best.get(o[0], float("inf")), o[3])
        devices[v] = [d for d in order if d in best]
        dur[v] = best
    tr = {}
    for u, v in g.edges:
        tr[(u, v)] = {(a, b): costs.transfer_time(u, v, a, b) for a in devices[u] for b in devices[v]
                      if costs.carried(u, v, a, b)}
    p = B.IntProblem(tick=1.0, ops=topo, pos={v: i for i, v in enumerate(topo)},
                     preds={v: list(g.predecessors(v)) for v in topo},
                     succs={v: list(g.successors(v)) for v in topo}, devices=devices, dur=dur, tr=tr,
                     cpus=costs.serial_devices(), budget=dict(costs.budget), ncb={}, host=costs.host)
    return Relaxed(p, fopts)


def critical_path(r: Relaxed) -> float:
    """Bound (a), seconds: the longest path through any op, each op on its best device at its fastest feasible
    option there, an edge's transfer counted only where every pair of its ends' devices pays one (heads and tails
    take the minimum over the neighbours' devices of duration plus transfer, :func:`~hetsim.mappers._bounds.
    heads_tails`). Valid (ours): in any schedule an op starts after each input's op ends and its transfer
    arrives; each of those durations and transfers is at least the minimum taken here, and resources only delay."""
    head, tail = B.heads_tails(r.p)
    return float(B.critical_path(r.p, head, tail))


def segments(costs: CostModel, p: B.IntProblem) -> tuple[list[str], list[list[str]], set[str]]:
    """The cut ops (:func:`~hetsim.mappers._bounds.cut_ops`: comparable with every non-floating op) in topological
    order, the ``len(cuts) + 1`` segments of non-floating ops between consecutive cuts (before the first, after
    the last), and the floating ops (:func:`~hetsim.mappers._bounds.free_ops`, in no segment).

    Every op of segment ``i`` is a descendant of cut ``i - 1`` and an ancestor of cut ``i``: it is comparable with
    both, and its topological position lies between theirs."""
    anc, desc = B.closures(p)
    free = B.free_ops(costs, p)
    cuts = B.cut_ops(p, anc, desc, free)
    segs: list[list[str]] = [[]]
    cut = set(cuts)
    for v in p.ops:
        if v in cut:
            segs.append([])
        elif v not in free:
            segs[-1].append(v)
    return cuts, segs, free


def _sub(p: B.IntProblem, ops: list[str]) -> B.IntProblem:
    """``p`` restricted to ``ops`` (edges to other ops dropped)."""
    keep = set(ops)
    return B.IntProblem(tick=p.tick, ops=ops, pos={v: i for i, v in enumerate(ops)},
                        preds={v: [u for u in p.preds[v] if u in keep] for v in ops},
                        succs={v: [w for w in p.succs[v] if w in keep] for v in ops},
                        devices={v: p.devices[v] for v in ops}, dur={v: p.dur[v] for v in ops},
                        tr={(u, v): p.tr[(u, v)] for v in ops for u in p.preds[v] if u in keep},
                        cpus=p.cpus, budget=p.budget, ncb={}, host=p.host)


def _thresholds(vals: list[float]) -> list[float]:
    """Up to :data:`WINDOW_THRESHOLDS` of the distinct ``vals``: the smallest and evenly spaced quantiles."""
    xs = sorted(set(vals))
    if len(xs) <= WINDOW_THRESHOLDS:
        return xs
    k = WINDOW_THRESHOLDS
    return sorted({xs[round(i * (len(xs) - 1) / (k - 1))] for i in range(k)})


def frame_heads_tails(p: B.IntProblem, ops: list[str]) -> tuple[dict, dict]:
    """Heads and tails (seconds, per op and device) within a frame of ``ops``: :func:`~hetsim.mappers._bounds.
    heads_tails` on ``p`` restricted to them (:func:`_sub`), so a head counts from the frame's opening and a tail
    to its closing. The same for every resource of the frame (:func:`load_windows` computes them once)."""
    return B.heads_tails(_sub(p, ops))


def windows(head: dict, tail: dict, ops: list[str], on) -> list[tuple[float, list[str]]]:
    """The head-body-tail windows of one resource in one segment: pairs ``(h + q, S)`` where ``S`` is the set of
    ``ops`` the resource may serve whose head is at least ``h`` and tail at least ``q`` (``head``, ``tail``: within
    the segment, :func:`frame_heads_tails` of ``ops``), for thresholds ``h``, ``q`` from :func:`_thresholds`;
    ``on(v)`` gives the device whose head and tail count for ``v`` (None: never served).

    Valid (ours: after the one-machine head-body-tail bound of Carlier's problem, divided by the resource's
    units for a multi-core host, which makes it a parallel-machine relaxation of our own): every op of ``S`` that
    the resource serves starts at least ``h`` after the segment opens and ends at least ``q`` before it closes,
    so the resource's units are busy with them for their whole work inside a span that long less ``h + q``."""
    cand = {}
    for v in ops:
        d = on(v)
        if d is not None and d in head[v] and d in tail[v]:
            cand[v] = (head[v][d], tail[v][d])
    if not cand:
        return []
    out, seen = [], set()
    for h in _thresholds([a for a, _ in cand.values()]):
        for q in _thresholds([b for _, b in cand.values()]):
            s = tuple(v for v, (a, b) in cand.items() if a >= h and b >= q)
            if s and s not in seen:
                seen.add(s)
                out.append((h + q, list(s)))
    return out


def load_windows(costs: CostModel, r: Relaxed) -> list[tuple[str | None, str | None, bool, int, float, list]]:
    """Rows 4 of :func:`relaxation`: per segment between consecutive cut ops ``a`` and ``b`` (:func:`segments`;
    None: the segment before the first cut opens at 0, the one after the last closes at the makespan; one more
    frame, ``(None, None)``, is the whole graph, floating ops included), per serial device of ``c`` units and per
    CIM pool (one unit, reprogrammed options only), per window ``(h + q, S)`` of it (:func:`windows`): the tuple
    ``(a, b, closed, c, h + q, members)`` with ``members`` the ``(op, k)`` of the options in ``S`` that use the
    resource (``k`` indexes ``r.opts[op]``). Open (``closed`` false), the frame is the segment alone and the row
    says: start of ``b`` (or the makespan) >= end of ``a`` (or 0) + ``h + q`` + (sum of the members' chosen
    durations) / ``c``. Closed, the frame also holds ``a`` and ``b`` (heads from ``a``'s start, tails to ``b``'s
    end: they see ``a``'s and ``b``'s fastest options and the transfers to and from them) and the row says: end of
    ``b`` >= start of ``a`` + ``h + q`` + load / ``c``. Both valid for every feasible schedule
    (:func:`relaxation`: every op of the frame runs between those two instants)."""
    p = r.p
    cuts, segs, _ = segments(costs, p)
    pools = sorted({o[0] for v in p.ops for o in r.opts[v] if o[1] == "reprogrammed"})
    resources = [(d, c, lambda o, d=d: o[0] == d) for d, c in p.cpus.items()]
    resources += [(d, 1, lambda o, d=d: o[0] == d and o[1] == "reprogrammed") for d in pools]
    frames = []
    for i, seg in enumerate(segs):
        a, b = cuts[i - 1] if i else None, cuts[i] if i < len(cuts) else None
        if seg:
            frames.append((a, b, False, seg))
        if a is not None and b is not None:
            frames.append((a, b, True, [a, *seg, b]))
    frames.append((None, None, False, list(p.ops)))  # the whole graph
    out = []
    for a, b, closed, seg in frames:
        ht = None  # the frame's heads and tails, shared by its resources (computed once, when one has users)
        for d, c, takes in resources:
            users = {v for v in seg if any(takes(o) for o in r.opts[v])}
            if not users:
                continue
            if ht is None:
                ht = frame_heads_tails(p, seg)
            for hq, s_ops in windows(*ht, seg, lambda v, d=d, users=users: d if v in users else None):
                members = [(v, k) for v in s_ops for k, o in enumerate(r.opts[v]) if takes(o)]
                out.append((a, b, closed, c, hq, members))
    return out


@dataclass
class Relaxation:
    """The linear relaxation of :func:`relaxation` as matrices (rows ``a_ub z <= b_ub``, ``a_eq z = 1``),
    times in units of ``scale`` seconds; ``integral`` marks the option variables, ``makespan`` is ``T``'s column."""

    c: object
    a_ub: object
    b_ub: object
    a_eq: object
    bounds: list
    integral: object
    scale: float
    rows: int  # rows of ``a_ub`` (for the statistics and a reader; the solvers read the matrices)
    columns: dict  # op -> the columns of its options (in ``Relaxed.opts`` order), "s" -> op -> its start's column


def relaxation(costs: CostModel, r: Relaxed, scale: float) -> Relaxation:
    """A relaxation of the policy problem (ours), times in units of ``scale`` (a time of the problem's order, e.g.
    the best makespan known, so that HiGHS's absolute tolerances are relative ones). Variables: ``x[v,k]`` in
    [0, 1] per feasible option (``y[v,d]`` is the sum of ``x[v,k]`` over ``v``'s options on ``d``), ``s[v] >= 0``
    the start of ``v``, ``tau[u,v] >= 0`` the transfer of an edge, and the makespan ``T``;
    ``p[v] = sum_k dur[v,k] x[v,k]``. Minimise ``T`` subject to

    1. ``sum_k x[v,k] = 1``; per budgeted device ``sum need x <= budget`` over resident options, per memory
       ``sum bytes x <= size`` over streamed and reprogrammed ones;
    2. per edge ``s[v] >= s[u] + p[u] + tau[u,v]``, ``tau[u,v] >= t(a,b) (y[u,a] + y[v,b] - 1)`` per device pair
       that moves data, ``y[u,a] + y[v,b] <= 1`` per pair no link carries; ``T >= s[v] + p[v]`` per op;
    3. ``s[v] >= sum_d head[v,d] y[v,d]`` and ``T >= s[v] + sum_k (dur[v,k] + tail[v,d_k]) x[v,k]`` with the
       heads and tails of :func:`critical_path`;
    4. per segment between cut ops ``a`` and ``b`` (:func:`segments`; the first opens at 0, the last closes at
       ``T``), per serial device ``d`` of ``c`` units and per window ``(h + q, S)`` of it (:func:`windows`):
       ``s[b] >= s[a] + p[a] + h + q + sum_{v in S} sum_{k on d} dur[v,k] x[v,k] / c``; the same per CIM pool over
       reprogrammed options (one unit), once more per segment with ``a`` and ``b`` in its frame (``s[b] + p[b] >=
       s[a] + h + q + ...``, :func:`load_windows`), and once over the whole graph (floating ops included, global
       heads and tails).

    Valid: every feasible schedule gives a point with integral ``x`` that meets every row: its options as ``x``,
    its starts as ``s``, its transfers as ``tau`` (with integral ``y`` each linearised row says ``tau >= t(a, b)``
    exactly for the pair used, and nothing for the others), its makespan as ``T``; rows 3 are
    :func:`critical_path`'s heads and tails for the device used; rows 4 hold because every op of a segment starts
    after cut ``a`` ends and ends before cut ``b`` starts (:func:`segments`) and by :func:`windows`. So the
    optimum over integral ``x`` (:func:`milp_bound`), and over fractional ``x`` (:func:`lp_bound`) below it, is at
    most the optimum makespan; the precedence rows make it at least :func:`critical_path`.
    """
    import numpy as np
    from scipy.sparse import coo_matrix

    p = r.p
    ops = p.ops
    head, tail = B.heads_tails(p)
    col: dict = {}

    def var(key) -> int:
        if key not in col:
            col[key] = len(col)
        return col[key]

    T = var("T")
    xs = {v: [(var(("x", v, k)), o) for k, o in enumerate(r.opts[v])] for v in ops}
    for v in ops:
        var(("s", v))
    rows: list[list[tuple[int, float]]] = []
    rhs: list[float] = []

    def row(terms, b):
        rows.append(terms)
        rhs.append(b)

    def p_terms(v, extra=None):
        return [(j, (o[3] + (extra(o) if extra else 0.0)) / scale) for j, o in xs[v]]

    # 1. budgets and memories
    cap: dict[str, list] = {}
    mem: dict[str, list] = {}
    for v in ops:
        for j, o in xs[v]:
            d, pol, mname, _, need, st = o
            if pol == "resident" and d in p.budget and need:
                cap.setdefault(d, []).append((j, float(need)))
            elif pol != "resident":
                mem.setdefault(mname, []).append((j, float(st.nbytes)))
    for d, terms in cap.items():
        row(terms, float(p.budget[d]))
    for mname, terms in mem.items():
        row(terms, float(costs.platform.memories[mname].size_bytes))
    # 2. precedences and transfers; T after every op
    for v in ops:
        sv = col[("s", v)]
        row(p_terms(v) + [(sv, 1.0), (T, -1.0)], 0.0)
        for u in p.preds[v]:
            terms = p_terms(u) + [(col[("s", u)], 1.0), (sv, -1.0)]
            tr = p.tr[(u, v)]
            pairs = [(a, b) for a in p.devices[u] for b in p.devices[v]]
            if any(tr.get(ab, 0.0) > 0 for ab in pairs):
                tj = var(("tau", u, v))
                terms.append((tj, 1.0))
            for a, b in pairs:
                t = tr.get((a, b))
                if t is not None and t <= 0:
                    continue
                yab = [(j, 1.0) for j, o in xs[u] if o[0] == a] + [(j, 1.0) for j, o in xs[v] if o[0] == b]
                if t is None:  # no link: not both
                    row(yab, 1.0)
                else:
                    row([(j, t / scale) for j, _ in yab] + [(tj, -1.0)], t / scale)
            row(terms, 0.0)
    # 3. heads and tails per device
    for v in ops:
        sv = col[("s", v)]
        if any(head[v].get(o[0], 0.0) > 0 for _, o in xs[v]):
            row([(j, head[v].get(o[0], 0.0) / scale) for j, o in xs[v]] + [(sv, -1.0)], 0.0)
        if any(tail[v].get(o[0], 0.0) > 0 for _, o in xs[v]):
            row(p_terms(v, extra=lambda o, v=v: tail[v].get(o[0], 0.0)) + [(sv, 1.0), (T, -1.0)], 0.0)
    # 4. windows per segment and resource
    for a, b, closed, c, hq, members in load_windows(costs, r):
        terms = [(xs[v][k][0], xs[v][k][1][3] / (c * scale)) for v, k in members]
        if a is not None:
            terms += ([] if closed else p_terms(a)) + [(col[("s", a)], 1.0)]
        if b is None:
            terms.append((T, -1.0))
        else:
            terms += [(col[("s", b)], -1.0)] + ([(j, -w) for j, w in p_terms(b)] if closed else [])
        row(terms, -hq / scale)
    n = len(col)
    r_i, c_i, vals = [], [], []
    for i, terms in enumerate(rows):
        for j, a in terms:
            r_i.append(i)
            c_i.append(j)
            vals.append(a)
    a_ub = coo_matrix((vals, (r_i, c_i)), shape=(len(rows), n)).tocsr()
    eq_r = [i for i, v in enumerate(ops) for _ in xs[v]]
    eq_c = [j for v in ops for j, _ in xs[v]]
    a_eq = coo_matrix(([1.0] * len(eq_r), (eq_r, eq_c)), shape=(len(ops), n)).tocsr()
    integral = np.zeros(n)
    integral[eq_c] = 1
    bounds = [(0.0, 1.0 if integral[j] else None) for j in range(n)]
    cvec = np.zeros(n)
    cvec[T] = 1.0
    columns = {v: [j for j, _ in xs[v]] for v in ops}
    columns["s"] = {v: col[("s", v)] for v in ops}
    return Relaxation(cvec, a_ub, np.array(rhs), a_eq, bounds, integral, scale, len(rows), columns)


#: the most branch-and-bound nodes :func:`milp_bound` explores (assumed: ResNet-50 QDQ's relaxation on
#: ``platforms/cim-npu-dram.yaml``, the hardest shipped one, is proven within it; docs/performance.md)
MILP_NODES = 2000


def lp_bound(rel: Relaxation, time_limit_s: float | None = None, upper_s: float | None = None) -> float:
    """Bound (b), seconds: the optimum of :func:`relaxation` over fractional options (HiGHS via
    :func:`scipy.optimize.linprog`), as proven by its duals (:func:`hetsim.mappers._bounds.dual_lp_bound`: weak
    duality, no solver tolerance in it); 0.0 when HiGHS finds no optimum within ``time_limit_s`` (None: no
    limit), the bound then saying nothing. Deterministic unless the limit is hit.

    ``upper_s``: the makespan of a schedule known to exist (seconds). The duals need a finite box for the start,
    transfer and makespan columns: at every point of the relaxation with ``T <= upper_s`` each of them is at most
    ``T`` (a start ends before ``T``, a transfer lies between two starts), and the optimum, at most ``upper_s``,
    is such a point; so the box ``[0, upper_s]`` loses nothing. Without it (or where the duals prove nothing),
    the LP's optimum less :data:`LP_MARGIN` of the scale, as before."""
    import numpy as np
    from scipy.optimize import linprog

    opts = {} if time_limit_s is None else {"time_limit": max(0.01, float(time_limit_s))}
    b_eq = np.ones(rel.a_eq.shape[0])
    res = linprog(rel.c, A_ub=rel.a_ub, b_ub=rel.b_ub, A_eq=rel.a_eq, b_eq=b_eq,
                  bounds=rel.bounds, method="highs", options=opts)
    if res.status != 0:
        return 0.0
    if upper_s is not None and upper_s > 0:
        cap = upper_s / rel.scale
        lo = np.zeros(len(rel.c))
        hi = np.array([cap if b[1] is None else b[1] for b in rel.bounds])
        low = B.dual_lp_bound(rel.c, rel.a_ub, rel.b_ub, rel.a_eq, b_eq, lo, hi, res.ineqlin.marginals,
                              res.eqlin.marginals)
        if low is not None:
            return max(0.0, low * rel.scale)
    return max(0.0, (res.fun - LP_MARGIN) * rel.scale)


def milp_bound(rel: Relaxation, time_limit_s: float | None, rel_gap: float,
               node_limit: int | None = None) -> tuple[float, str, object]:
    """Bound (c), seconds: HiGHS's branch and bound (:func:`scipy.optimize.milp`) on :func:`relaxation` with
    integral options: the budgets' knapsacks and the choice of one device per op, which the LP splits, are
    decided. Returns its dual bound less :data:`LP_MARGIN` of the scale (valid whether it stopped at its
    optimum, its ``rel_gap``, its ``node_limit`` (default :data:`MILP_NODES`) or its ``time_limit_s`` (None:
    none)), ``'optimal'`` / ``'time_limit'`` (a limit) / ``'failed'`` (then 0.0), and its best point (None if
    none: a choice of options that may guide a search, not a bound). Deterministic (HiGHS's branch and bound
    runs on one thread and counts nodes) unless the wall-clock limit is hit."""
    import numpy as np
    from scipy.optimize import Bounds, LinearConstraint, milp

    lo = np.zeros(len(rel.c))
    hi = np.array([np.inf if b[1] is None else b[1] for b in rel.bounds])
    res = milp(rel.c, constraints=[LinearConstraint(rel.a_ub, -np.inf, rel.b_ub), LinearConstraint(rel.a_eq, 1, 1)],
               integrality=rel.integral, bounds=Bounds(lo, hi),
               options={"mip_rel_gap": float(rel_gap), "disp": False,
                        "node_limit": int(MILP_NODES if node_limit is None else node_limit),
                        **({} if time_limit_s is None else {"time_limit": max(0.01, float(time_limit_s))})})
    dual = getattr(res, "mip_dual_bound", None)
    if res.status not in (0, 1) or dual is None or not np.isfinite(dual):
        return 0.0, "failed", None
    return (max(0.0, (float(dual) - LP_MARGIN) * rel.scale), "optimal" if res.status == 0 else "time_limit",
            res.x)


__all__ = ["LP_MARGIN", "Relaxation", "Relaxed", "critical_path", "fits", "frame_heads_tails", "load_windows",
           "lp_bound", "milp_bound", "relax", "relaxation", "segments", "windows"]
