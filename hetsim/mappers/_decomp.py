"""Decomposition of the CPU-CIM ILP's problem at cut ops (used by :mod:`hetsim.mappers.cpsat`, lever ``decompose``).

A *cut op* ``a`` is comparable with every non-floating op (each is an ancestor or a descendant of ``a``), so in
every schedule nothing overlaps ``a``: the ops before it finish before it starts and the ops after it start
after it ends. A cut is *clean* when no edge jumps over it with a non-zero transfer or with a device pair no
link joins (a skip edge with a transfer, or with a forbidden pair on a split bus, would couple the two sides).
Consecutive clean cuts ``a_i, a_{i+1}`` bound a *segment* ``S_i``, and

    T = L_0 + sum_i (dur(a_i) + L_i),    L_i = s(a_{i+1}) - e(a_i)

where ``L_i`` depends only on the devices of ``a_i`` and ``a_{i+1}`` and the crossbars given to ``S_i``. So
the problem without floating ops is solved exactly by

* per segment and per device pair of its two cuts, the Pareto front (crossbars used, ``L_i``) from a few
  small CP-SAT solves (minimise ``L * W + crossbars``, then again with fewer crossbars than the optimum
  used, until infeasible): the segments are independent, so the search is a sum, not a product, of the
  segment searches;
* a dynamic program over the cuts, state (device of the cut, crossbars used), which shares the budget
  (CPU-CIM ILP Eq. 14) between segments.

Each segment's cheap bound at every budget (critical path, host-load knapsack: :class:`Front`) reserves the
budget of the ops that run only on the shared device; an op the host cannot run but another accelerator can
takes none of it (it once took it: an invalid bound, docs/fuzzing.md).

Floating ops (weight dequantisation, constants) are left out: dropping them cannot lengthen the optimum,
so the DP value is a lower bound of the real problem; they are then put back into the host's idle gaps
(earliest deadline first), and when they all fit the DP's schedule is optimal for the real problem.
Segment solves that hit their time limit give a bound and an incumbent instead of the exact value, which
the DP carries as a lower and an upper bound.

Several accelerators (any number of serial devices, any number of resident capacities): the segments are
solved by the same CP-SAT model, which handles them all. The DP shares the budget of one device, the *shared*
device (:func:`~hetsim.mappers._bounds.shared_budget`: the only capacitated device, or among several the one
whose budget can bind); every other capacity is *relaxed*: each segment may use all of it. The DP value stays a
lower bound (a relaxation), and the assembled schedule is checked against the relaxed capacities: when it fits
them it is optimal, otherwise the decomposition returns its bound only. A shared budget of more than
:data:`DP_UNITS` units (bytes of weight memory) is counted in units of ``q = ceil(budget / DP_UNITS)``: the
bounds round each op's need down, the schedules round it up, so the bounds stay valid and the schedules fit
(the two may then differ by the rounding, and the full model closes the gap).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

import numpy as np

from hetsim.errors import MappingError
from hetsim.mappers import _bounds as B
from hetsim.mappers import _cpsat_sigint

INF = 1 << 62

#: the DP over the cuts counts the shared budget in at most this many units: a larger budget (bytes of weight
#: memory) in units of ``q = ceil(budget / DP_UNITS)`` bytes, see :class:`Decomposition`
DP_UNITS = 1024
#: above this many units of the shared budget, an exact segment solve is followed by a search for the least
#: budget that does better (:meth:`Decomposition._jump`)
JUMP_LEVELS = 256
#: relaxed capacities enter a segment's tie-break objective in units of ``capacity / RELAXED_STEPS``
RELAXED_STEPS = 1000
#: the most schedules :meth:`Decomposition._improve` evaluates per segment solve
IMPROVE_EVALS = 2000


def clean_cuts(p: B.IntProblem, free: set[str]) -> list[str]:
    """Clean cut ops (see the module docstring), in topological order."""
    anc, desc = B.closures(p)
    cuts = B.cut_ops(p, anc, desc, free)
    if not cuts:
        return []
    cpos = [p.pos[a] for a in cuts]
    dirty = set()
    for (u, w), tr in p.tr.items():
        # a skip edge with no transfer on every device pair couples nothing; one with a pair no link joins
        # (split bus: the CIM and the NPU) does: the segments, solved apart, could put its ends on that pair
        if u in free or w in free or (max(tr.values()) == 0
                                      and len(tr) == len(p.devices[u]) * len(p.devices[w])):
            continue
        lo = bisect.bisect_right(cpos, p.pos[u])
        hi = bisect.bisect_left(cpos, p.pos[w])
        for i in range(lo, hi):
            dirty.add(cuts[i])
    return [a for a in cuts if a not in dirty]


def split(p: B.IntProblem, cuts: list[str], free: set[str], attach: bool = False) -> list[list[str]]:
    """The segments ``S_0 .. S_K`` between consecutive cuts. Floating ops are left out, or with ``attach``
    put in the segment that ends before their first consumer (a restriction: schedules stay feasible)."""
    cpos = [p.pos[a] for a in cuts]
    segs: list[list[str]] = [[] for _ in range(len(cuts) + 1)]
    cutset = set(cuts)
    seg_of: dict[str, int] = {}
    for v in p.ops:
        if v in free or v in cutset:
            continue
        seg_of[v] = bisect.bisect_left(cpos, p.pos[v])
        segs[seg_of[v]].append(v)
    if attach:
        for i, a in enumerate(cuts):
            seg_of[a] = i  # a consumer that is cut i: the floating op runs in the segment before it
        for v in free:
            k = min((seg_of[w] for w in p.succs[v] if w in seg_of), default=len(cuts))
            segs[k].append(v)
        for s in segs:
            s.sort(key=lambda v: p.pos[v])
    return segs


def sub_problem(p: B.IntProblem, ops: list[str], left: str | None, dl: str | None, right: str | None,
                dr: str | None, budget: dict[str, int] | None) -> B.IntProblem:
    """The segment ``ops`` between cut ``left`` (fixed to ``dl``, starts the segment) and cut ``right``
    (fixed to ``dr``, given duration 0 so that the makespan is its start). The cuts' capacity is not
    counted (the DP does). ``budget``: device -> capacity for the segment (others: the device's)."""
    names = ([left] if left else []) + list(ops) + ([right] if right else [])
    keep = set(names)
    names.sort(key=lambda v: p.pos[v])
    devices = {v: list(p.devices[v]) for v in names}
    dur = {v: dict(p.dur[v]) for v in names}
    ncb = {v: dict(p.ncb[v]) for v in names if v in p.ncb}
    if left:
        devices[left] = [dl]
        dur[left] = {dl: p.dur[left][dl]}
        if left in ncb:
            ncb[left] = dict.fromkeys(ncb[left], 0)
    if right:
        devices[right] = [dr]
        dur[right] = {dr: 0}
        if right in ncb:
            ncb[right] = dict.fromkeys(ncb[right], 0)
    preds = {v: [u for u in p.preds[v] if u in keep] for v in names}
    succs = {v: [w for w in p.succs[v] if w in keep] for v in names}
    tr = {}
    for v in names:
        for w in succs[v]:
            tr[(v, w)] = {ab: t for ab, t in p.tr[(v, w)].items() if ab[0] in devices[v] and ab[1] in devices[w]}
    bud = dict(p.budget)
    bud.update(budget or {})
    return B.IntProblem(tick=p.tick, ops=names, pos={v: i for i, v in enumerate(names)}, preds=preds, succs=succs,
                        devices=devices, dur=dur, tr=tr, cpus=dict(p.cpus), budget=bud, ncb=ncb, host=p.host)


@dataclass
class Front:
    """What is known of one segment for one device pair of its cuts, as functions of its budget of the shared
    capacity (crossbars with one CIM device), in the DP's units (:class:`Decomposition`).

    ``cheap[c]``: a bound on ``L`` with at most ``c`` crossbars (critical path, knapsack load);
    ``solves``: CP-SAT results ``(budget, bound, exact, crossbars used, L)``; a solve at budget ``b`` bounds
    ``L`` for every budget ``<= b`` and, when exact, gives ``L`` itself for every budget in ``[used, b]``;
    ``points``: schedules found ``(crossbars used, L, assignment, cpu order)``. In units of ``q > 1`` bytes,
    ``cheap`` and ``solves`` count each op's need rounded down (bounds), ``points`` rounded up (``up``: per op;
    schedules that fit), so both are exact for crossbars (``q = 1``).
    """

    sub: B.IntProblem
    off: int
    top: int  # the largest budget that matters (the segment's crossbars, at most C)
    forced: int  # crossbars of the ops only the CIM device runs
    cheap: list[int]
    solves: list[tuple[int, int, bool, int, int]] = field(default_factory=list)
    points: list[tuple[int, int, dict, dict]] = field(default_factory=list)
    up: dict[str, int] = field(default_factory=dict)  # segment op -> its shared need in units rounded up
    memo: dict = field(default_factory=dict)  # assignment -> fill schedule, see Decomposition._fill

    def lb_table(self, cap: int) -> np.ndarray:
        """The bound on ``L`` for every budget ``0 .. cap`` (non-increasing; INF below ``forced``)."""
        cc = np.minimum(np.arange(cap + 1), self.top)
        out = np.asarray(self.cheap, dtype=np.int64)[cc]
        for b, bnd, _, _, _ in self.solves:
            out = np.where(cc <= b, np.maximum(out, bnd), out)
        out[cc < self.forced] = INF
        return out

    def exact_at(self, c: int) -> bool:
        cc = min(c, self.top)
        return cc < self.forced or any(ex and used <= cc <= b for b, _, ex, used, _ in self.solves)

    @staticmethod
    def steps(tab) -> list[tuple[int, int]]:
        """(least budget, value) at each step of a non-increasing table."""
        tab = np.asarray(tab, dtype=np.int64)
        before = np.concatenate(([np.iinfo(np.int64).max], np.minimum.accumulate(tab)[:-1]))
        return [(int(c), int(tab[c])) for c in np.flatnonzero(tab < before)]

    def ub_points(self) -> list[tuple[int, int, dict, dict]]:
        """Pareto-optimal schedules (crossbars used increasing, L decreasing)."""
        out = []
        for pt in sorted(self.points, key=lambda x: (x[0], x[1])):
            if not out or pt[1] < out[-1][1]:
                out.append(pt)
        return out


class Decomposition:
    """Runs the decomposition for a :class:`~hetsim.mappers.cpsat.CpSat` instance (module docstring).

    Lazy: every segment is first solved at the largest budget that matters; then a DP over the lower
    bounds picks a budget split, the segment budgets it relies on that are not known exactly are solved,
    and so on until the DP's split is exact (its value is then optimal) or time runs out.

    ``attach``: floating ops go into the segment before their first consumer instead of being left out;
    the result is then a schedule of the real problem but its ``lb`` is no bound of it (``exact`` False).
    """

    def __init__(self, mapper, p: B.IntProblem, free: set[str], deadline: float, attach: bool = False):
        # deadline: on the mapper's budget clock (``mapper._clock()``: deterministic seconds of CP-SAT work by
        # default, wall seconds under a time limit alone; hetsim/mappers/_limits.py)
        self.m = mapper
        self.p = p
        self.free = free
        self.attach = attach
        self.deadline = deadline
        self.cuts = clean_cuts(p, free)
        self.segs = split(p, self.cuts, free, attach)
        # the shared budget (``cim``: its device, None when no budget is shared; ``cap``: its DP units of ``q``)
        # and the relaxed ones
        self.cim, cap = B.shared_budget(p)
        self.q = max(1, -(-cap // DP_UNITS))
        self.cap = cap // self.q
        self.relaxed = {d: c for d, c in p.budget.items() if d != self.cim}
        # a segment minimises ``L * W + capacity used`` (``_build``'s ``xb_units``: device -> (multiplier,
        # divisor), a use of n counting ceil(n / divisor) * multiplier): relaxed capacities in steps of
        # 1/RELAXED_STEPS of the device, the shared one (crossbars, one by one) before all of them
        self.units: dict[str, tuple[int, int]] = {}
        for d, c in self.relaxed.items():
            self.units[d] = (1, max(1, -(-c // RELAXED_STEPS)))
        if self.cim is not None:
            top = sum(-(-sum(p.ncb[v].get(d, 0) for v in p.ncb) // q) for d, (_, q) in self.units.items())
            self.units[self.cim] = (top + 1, 1)
        self.solves = 0
        self.shortcuts = 0
        self.timeouts = 0
        self.solve_time = 0.0
        self.rounds = 0
        self.invalid = 0  # segment bounds found above a schedule of their segment (a bug: see run)

    @property
    def applicable(self) -> bool:
        return len(self.cuts) >= 1

    def _devs(self, a: str | None) -> list:
        return [None] if a is None else list(self.p.devices[a])

    def _fits_relaxed(self, sub: B.IntProblem, assign: dict[str, str], every: bool = False) -> bool:
        """True when ``assign`` stays within every relaxed capacity of ``sub`` (``every``: every capacity)."""
        use = dict.fromkeys(sub.budget if every else self.relaxed, 0)
        for v, d in assign.items():
            if d in use:
                use[d] += sub.ncb.get(v, {}).get(d, 0)
        return all(use[d] <= sub.budget[d] for d in use)

    def _used(self, sub: B.IntProblem, assign: dict[str, str]) -> int:
        """Shared capacity ``assign`` uses in ``sub``, in units rounded down (0 without a shared device)."""
        cim = self.cim
        return sum(sub.ncb.get(v, {}).get(d, 0) for v, d in assign.items() if d == cim) if cim else 0

    def _used_up(self, fr: Front, assign: dict[str, str]) -> int:
        """Shared capacity ``assign`` uses in ``fr``'s segment, in units rounded up (the cuts not counted)."""
        return sum(fr.up.get(v, 0) for v, d in assign.items() if d == self.cim)

    def _ncb(self, a, d, up: bool = False) -> int:
        """Shared capacity op ``a`` needs on ``d``, in units rounded down (``up``: rounded up); 0 elsewhere."""
        if d != self.cim:
            return 0
        n = self.p.ncb.get(a, {}).get(d, 0)
        return -(-n // self.q) if up else n // self.q

    # ------------------------------------------------------------------------------------------ fronts
    def _front(self, i: int, dl, dr) -> Front:
        p, cim = self.p, self.cim
        left = self.cuts[i - 1] if i > 0 else None
        right = self.cuts[i] if i < len(self.cuts) else None
        ops = self.segs[i]
        sub = sub_problem(p, ops, left, dl, right, dr, {cim: self.cap} if cim else None)
        up: dict[str, int] = {}
        if cim:  # the segment's CP-SAT model counts the shared capacity in units rounded down (a relaxation)
            for v in ops:
                if cim in sub.ncb.get(v, {}):
                    up[v] = self._ncb(v, cim, up=True)
                    sub.ncb[v][cim] //= self.q
        off = p.dur[left][dl] if left else 0
        total = sum(up.values())
        forced = sum(sub.ncb[v][cim] for v in ops if sub.devices[v] == [cim]) if cim else 0
        top = min(self.cap, total)
        head, tail = B.heads_tails(sub)
        cp = B.critical_path(sub, head, tail)
        cheap = [cp - off] * (top + 1)
        lbnd = B.load_bound(sub, head, tail, cim) if cim else None
        if lbnd is not None:
            # the budget the ops that only the shared device runs take before the knapsack's items (as in
            # load_bound): an op the host cannot run is not forced onto the shared device when another
            # accelerator may take it (an op left with [cim, npu], by fixing or by the host's support). Counting
            # it here, as this did, raised the bound above the optimum: on tests/data/cpsat_wrong_optimal.json
            # it made every budget infeasible (INF), the segment's greedy schedule counted as proven, and cpsat
            # reported 'optimal' at 13.190 us where 12.998 us exists
            best = B.knapsack_table(list(lbnd.items.values()), max(-1, (top - forced) // lbnd.scale))
            for c in range(top + 1):
                k = (c - forced) // lbnd.scale
                cheap[c] = max(cheap[c], lbnd._value(best[k] if k >= 0 else -1) - off)
        fr = Front(sub, off, top, forced, cheap, up=up)
        self._greedy_points(fr)
        return fr

    def _greedy_points(self, fr: Front) -> None:
        """Schedules of the greedy offload sequence (by host time saved per share of the device's capacity:
        per crossbar with one CIM device; kept while it helps), every prefix recorded as a point."""
        sub, cim = fr.sub, self.cim
        host = sub.host
        assign = {v: (host if host in sub.devices[v] else sub.devices[v][0]) for v in sub.ops}
        used = self._used_up(fr, assign)
        if used > fr.top or not self._fits_relaxed(sub, assign) or not all(
                B.carried(sub, assign, v, assign[v]) for v in sub.ops):
            return
        order, best = B.fill_schedule(sub, assign, set(), B.bottom_levels(sub, assign))
        fr.points.append((used, best - fr.off, dict(assign), order))
        ref = sub.budget.get(cim, 1) if cim else 1
        devs = {d: i for i, d in enumerate(dict.fromkeys(d for v in sub.ops for d in sub.devices[v]))}
        cands = []
        for v in sub.ops:
            if assign[v] != host:
                continue
            for d in sub.devices[v]:
                if d == host:
                    continue
                saved = sub.dur[v][host] - sub.dur[v][d]
                if d == cim:  # time saved per unit of the shared budget (per crossbar with one CIM)
                    score = saved / max(1, fr.up[v])
                elif d in sub.budget:  # ... and per the same share of another device's budget
                    score = saved / max(1, sub.ncb[v][d]) * (sub.budget[d] / ref)
                else:
                    score = float("inf")
                cands.append((-score, -saved if score == float("inf") else 0, sub.pos[v], devs[d], v, d))
        cands.sort(key=lambda c: c[:4])
        use = {d: sum(sub.ncb.get(v, {}).get(d, 0) for v in sub.ops if assign[v] == d) for d in self.relaxed}
        for *_, v, d in cands:
            if assign[v] != host:
                continue
            n = fr.up[v] if d == cim else sub.ncb.get(v, {}).get(d, 0)
            if d == cim and used + n > fr.top or d in use and use[d] + n > sub.budget[d]:
                continue
            if not B.carried(sub, assign, v, d):
                continue
            assign[v] = d
            o2, ms = B.fill_schedule(sub, assign, set(), B.bottom_levels(sub, assign))
            if ms < best:
                best, order = ms, o2
                if d == cim:
                    used += n
                elif d in use:
                    use[d] += n
                fr.points.append((used, best - fr.off, dict(assign), order))
            else:
                assign[v] = host

    def _derive(self, fr: Front, c: int) -> None:
        """A schedule within ``c`` of the shared capacity from the best one above: move ops off the shared
        device back to the host, each time the one whose return hurts least (fill schedule), until it fits."""
        sub, cim = fr.sub, self.cim
        above = [pt for pt in fr.ub_points() if pt[0] > c]
        # from the closest schedule above c and from the best (often an exact solve at the largest budget)
        for start in {id(pt): pt for pt in (above[:1] + above[-1:])}.values():
            used, _, assign, _ = start
            assign = dict(assign)
            while used > c:
                best = None
                for v in sub.ops:
                    if assign[v] != cim or sub.host not in sub.devices[v] or not B.carried(sub, assign, v, sub.host):
                        continue
                    assign[v] = sub.host
                    o2, ms = self._fill(fr, assign)
                    assign[v] = cim
                    if best is None or ms < best[0]:
                        best = (ms, v, o2)
                if best is None:
                    break
                ms, v, order = best
                assign[v] = sub.host
                used -= fr.up[v]
            if used <= c:
                fr.points.append((used, ms - fr.off, dict(assign), order))

    def _improve(self, fr: Front, c: int) -> None:
        """Local search from the best known schedule within ``c`` of the shared capacity: move one op to another
        device, or swap the devices of two ops, keeping every capacity and link; each assignment is scheduled by
        :func:`~hetsim.mappers._bounds.fill_schedule`; first improvement, until none improves (or
        :data:`IMPROVE_EVALS` evaluations). CP-SAT proves a segment in a fraction of a second when its hint is
        optimal, but may search for seconds from a hint 10-30 % off (measured on YOLOv5n's 90-op segment)."""
        sub, cim = fr.sub, self.cim
        pts = [pt for pt in fr.ub_points() if pt[0] <= c]
        if not pts:
            return
        flex = [v for v in sub.ops if len(sub.devices[v]) > 1]
        if not flex:
            return
        self._knapsack_point(fr, c)
        pts = [pt for pt in fr.ub_points() if pt[0] <= c]
        used, L, assign, _ = pts[-1]
        assign = dict(assign)

        def need(v, d):
            return fr.up.get(v, 0) if d == cim else 0

        def ok(a):
            return self._fits_relaxed(sub, a) and all(B.carried(sub, a, v, a[v]) for v in sub.ops)

        def evaluate(a, cur_order, cur_start):
            """The better of the list schedule and the current order with the moved ops taken out of or put
            into their cpu's sequence at their current start (which keeps every precedence)."""
            order, ms = self._fill(fr, a)
            o2 = {}
            for cpu, seq in cur_order.items():
                keep = [v for v in seq if a[v] == cpu]
                add = [v for v in sub.ops if a[v] == cpu and v not in set(seq)]
                o2[cpu] = sorted(keep + add, key=lambda v: (cur_start[v], sub.pos[v])) if add else keep
            st2, fin2 = B.asap_starts(sub, a, o2)
            if len(st2) == len(sub.ops):
                ms2 = max(fin2.values(), default=0)
                if ms2 < ms:
                    order, ms = o2, ms2
            return ms - fr.off, order

        order = pts[-1][3]
        evals = 0
        improved = True
        while improved and evals < IMPROVE_EVALS and self.m._clock() < self.deadline:
            improved = False
            cur_start, _ = B.asap_starts(sub, assign, order)
            moves = []
            for v in flex:
                for d in sub.devices[v]:
                    if d != assign[v]:
                        moves.append(((v, d),))
            if cim is not None:  # exchanges: one op onto the shared device and one or two off it, or two on, one off
                back = {u: sub.host if sub.host in sub.devices[u] else sub.devices[u][0] for u in flex}
                ons = [v for v in flex if assign[v] != cim and cim in sub.devices[v]]
                offs = [u for u in flex if assign[u] == cim]
                for v in ons:
                    for u in offs:
                        moves.append(((v, cim), (u, back[u])))
                for v in ons:
                    for i, u in enumerate(offs):
                        for u2 in offs[i + 1:]:
                            moves.append(((v, cim), (u, back[u]), (u2, back[u2])))
                for i, v in enumerate(ons):
                    for v2 in ons[i + 1:]:
                        for u in offs:
                            moves.append(((v, cim), (v2, cim), (u, back[u])))
            for mv in moves:
                new = dict(assign)
                for v, d in mv:
                    new[v] = d
                u2 = used + sum(need(v, d) - need(v, assign[v]) for v, d in mv)
                if u2 > c or not ok(new):
                    continue
                evals += 1
                L2, o2 = evaluate(new, order, cur_start)
                if L2 < L or (L2 == L and u2 < used):
                    assign, used, L, order = new, u2, L2, o2
                    fr.points.append((used, L, dict(assign), order))
                    improved = True
                    break
                if evals >= IMPROVE_EVALS:
                    break
            if not improved and cim is not None and evals < IMPROVE_EVALS:  # ejection chains
                for new in self._chains(fr, c, assign, used, flex):
                    if self._used_up(fr, new) > c or not ok(new):
                        continue
                    evals += 1
                    o2, ms = self._fill(fr, new)
                    u2 = self._used_up(fr, new)
                    if ms - fr.off < L:
                        assign, used, L, order = new, u2, ms - fr.off, o2
                        fr.points.append((used, L, dict(assign), order))
                        improved = True
                        break

    def _chains(self, fr: Front, c: int, assign: dict[str, str], used: int, flex: list[str]):
        """Assignments one ejection chain away from ``assign`` (within ``c``): take one op off the shared device
        and refill the room greedily (each step the op whose offload shortens the schedule most), or put one op
        on it and make room greedily (each step the op whose return hurts least). Reaches the exchanges of
        several ops for several others that offloads in parallel with host work need (YOLOv5n's 90-op segment at
        14 crossbars: two ops of 3 and 1 crossbars out, four of 1 in)."""
        sub, cim, host = fr.sub, self.cim, fr.sub.host
        cand = [v for v in flex if set(sub.devices[v]) == {host, cim}]

        def best_move(a, frm, to, banned, room=None):
            """(makespan, op) of the candidate on ``frm`` (not ``banned``, needing at most ``room`` of the shared
            device if given) whose move to ``to`` gives the shortest schedule with every link carried, or
            ``None``; ``a`` is left as it was."""
            best = None
            for v in cand:
                if a[v] == frm and v not in banned and (room is None or fr.up.get(v, 0) <= room):
                    a[v] = to
                    if all(B.carried(sub, a, u, a[u]) for u in (v, *sub.preds[v], *sub.succs[v])):
                        ms = self._fill(fr, a)[1]
                        if best is None or ms < best[0]:
                            best = (ms, v)
                    a[v] = frm
            return best

        def refill(a, room, banned):
            while True:
                best = best_move(a, host, cim, banned, room)
                if best is None or best[0] >= self._fill(fr, a)[1]:
                    return a
                a[best[1]] = cim
                room -= fr.up.get(best[1], 0)

        def make_room(a, over, banned):
            while over > 0:
                best = best_move(a, cim, host, banned)
                if best is None:
                    return None
                a[best[1]] = host
                over -= fr.up.get(best[1], 0)
            return a

        for v in cand:
            a = dict(assign)
            if a[v] == cim:
                a[v] = host
                yield refill(a, c - used + fr.up.get(v, 0), {v})
            else:
                a[v] = cim
                a = make_room(a, used + fr.up.get(v, 0) - c, {v})
                if a is not None:
                    yield refill(a, c - self._used_up(fr, a), {v})

    def _fill(self, fr: Front, a: dict[str, str]) -> tuple[dict[str, list[str]], int]:
        """:func:`~hetsim.mappers._bounds.fill_schedule` of ``a`` in ``fr``'s segment, memoised per segment (the
        searches at neighbouring budgets meet the same assignments)."""
        key = tuple(a[v] for v in fr.sub.ops)
        hit = fr.memo.get(key)
        if hit is None:
            hit = fr.memo[key] = B.fill_schedule(fr.sub, a, set(), B.bottom_levels(fr.sub, a))
        return hit

    def _knapsack_point(self, fr: Front, c: int) -> None:
        """Schedules within ``c`` from offload sets a 0/1 knapsack picks when each op's value is its marginal
        effect on ``L`` at the best schedule within ``c`` so far (moved off the shared device if on it, onto it
        if not); repeated from each improvement. Offloads are nearly additive between convolutions, so the pick
        is often a multi-op exchange that single moves and swaps cannot reach (YOLOv5n's 90-op segment: the
        optimum at 14 crossbars is the one at 13 with two ops out and another in)."""
        sub, cim, host = fr.sub, self.cim, fr.sub.host
        if cim is None:
            return
        tried: set = set()
        for it in range(9):
            pts = [pt for pt in fr.ub_points() if pt[0] <= c]
            if not pts or self.m._clock() > self.deadline:
                return
            used, L, assign, _ = pts[-1]
            if it == 0:  # first, each op's gain when offloaded alone from the host (the reference is all-host)
                assign = {v: host if set(sub.devices[v]) == {host, cim} else d for v, d in assign.items()}
                if not all(B.carried(sub, assign, v, assign[v]) for v in sub.ops):
                    continue
                L = self._fill(fr, assign)[1] - fr.off
            vals: dict[str, int] = {}
            for v in sub.ops:
                if set(sub.devices[v]) != {host, cim}:
                    continue
                a = dict(assign)
                a[v] = host if assign[v] == cim else cim
                if not all(B.carried(sub, a, u, a[u]) for u in [v, *sub.preds[v], *sub.succs[v]]):
                    continue
                _, ms = self._fill(fr, a)
                vals[v] = (ms - fr.off - L) if assign[v] == cim else (L - (ms - fr.off))
            items = [(v, fr.up.get(v, 0), val) for v, val in vals.items() if val > 0]
            fixed = sum(fr.up.get(v, 0) for v, d in assign.items() if d == cim and v not in vals)
            cap = c - fixed
            if cap < 0 or not items:
                return
            pick = {items[i][0] for i in B.knapsack_pick([(w, val) for _, w, val in items], cap)}
            a = {v: (cim if v in pick else host) if v in vals else d for v, d in assign.items()}
            key = frozenset(pick)
            if key in tried or not all(B.carried(sub, a, v, a[v]) for v in sub.ops) or not self._fits_relaxed(sub, a):
                return
            tried.add(key)
            order, ms = self._fill(fr, a)
            if it > 0 and ms - fr.off >= L:
                return
            fr.points.append((self._used_up(fr, a), ms - fr.off, a, order))

    def _refine(self, fr: Front, c: int) -> None:
        """Solve ``fr``'s segment with at most ``c`` of the shared capacity (minimise L, then capacity)."""
        sub = fr.sub
        if self.cim:
            sub.budget[self.cim] = c
        self._derive(fr, c)
        self._improve(fr, c)
        lb = int(fr.lb_table(self.cap)[c]) + fr.off
        pts = [pt for pt in fr.ub_points() if pt[0] <= c]
        if not pts:  # no known schedule within c: CP-SAT without a hint
            hint, ub = None, None
        else:
            used, L, assign, order = pts[-1]
            hint, ub = {"assign": assign, "order": order, "ticks": L + fr.off}, L + fr.off
        if ub is not None and lb > ub:  # a bound above a schedule of the segment: no bound (see run)
            self.invalid += 1
            lb = 0
        elif ub is not None and lb >= ub:
            self.shortcuts += 1
            fr.solves.append((c, ub - fr.off, True, used, ub - fr.off))
            return
        left = self.deadline - self.m._clock()
        if left <= 0.05:
            self.timeouts += 1
            fr.solves.append((c, lb - fr.off, False, c, INF))
            return
        self.solves += 1
        # the sub-problem's fixed neighbours can leave an op's device without a link to them (a platform whose
        # links do not join every pair): those choices have no head or tail and are removed, as in the whole
        # problem. A sub-problem left with an op that has no device, or whose ops left with one device need more
        # of it than it has (the model's capacity rows refuse it), has no schedule with these cut devices at this
        # budget or below (a relaxed capacity is the device's whole one): infeasible, not an error of the whole
        # problem (that MappingError once ended cpsat on a split-bus instance levers='none' maps)
        try:
            B._prune_unlinked(sub)
            head, tail = B.heads_tails(sub)
            units = self.units if len(self.p.budget) > 1 else None  # one capacity: crossbars one by one
            w = sum(max((_weight(units, d, n) for d, n in sub.ncb.get(v, {}).items()), default=0)
                    for v in sub.ops) + 1
            twins = self.m._twins(sub) if "symmetry" in self.m._lv else []
            built = self.m._build(sub, lb, ub, head, tail, set(), twins, hint, fluid=False, fired={}, xb_weight=w,
                                  xb_units=units)
        except MappingError:
            fr.solves.append((c, INF, True, c, INF))
            return
        res = self.m._solve(_cp(), built, left, sub.tick, 0.0, real=False, gap=0.0)
        self.solve_time += res["time"]
        if res["status"] == "infeasible":
            fr.solves.append((c, INF, True, c, INF))
            return
        bnd = lb
        if res["bound"] is not None:
            bnd = max(bnd, res["bound"] // w)
        if res["assign"] is None:
            self.timeouts += 1
            fr.solves.append((c, bnd - fr.off, False, c, INF))
            return
        t_opt = res["ticks"] // w
        if lb > t_opt:
            self.invalid += 1
        used2 = self._used(sub, res["assign"])
        fr.points.append((self._used_up(fr, res["assign"]), t_opt - fr.off, res["assign"], res["order"]))
        exact = res["status"] == "optimal"
        if exact:
            bnd = t_opt
        else:
            self.timeouts += 1
        fr.solves.append((c, bnd - fr.off, exact, used2, t_opt - fr.off))
        if exact and self.cap > JUMP_LEVELS and c < fr.top:
            self._jump(fr, t_opt, used2)

    def _jump(self, fr: Front, t_opt: int, used: int) -> None:
        """After an exact solve giving ``L = t_opt - off`` with ``used`` of the shared budget: the least budget
        with which the segment does better (CP-SAT: minimise the shared capacity used subject to ``L <= t_opt
        - off - 1``), so that ``L`` is known at every budget below it at once. Only for budgets of many units
        (:data:`JUMP_LEVELS`): refining them one unit at a time would take a solve per unit."""
        sub, cim = fr.sub, self.cim
        length = t_opt - fr.off
        if length <= int(fr.lb_table(self.cap)[fr.top]):  # already the bound at the largest budget
            fr.solves.append((fr.top, length, True, used, length))
            return
        left = self.deadline - self.m._clock()
        if left <= 0.05:
            return
        sub.budget[cim] = fr.top
        head, tail = B.heads_tails(sub)
        better = [pt for pt in fr.ub_points() if pt[1] < length]
        hint = None
        if better:
            _, L2, assign, order = better[0]
            hint = {"assign": assign, "order": order, "ticks": L2 + fr.off}
        built = self.m._build(sub, 0, t_opt - 1, head, tail, set(), [], hint, fluid=False, fired={})
        m = built.model
        makespan = built.T
        m.Add(makespan <= t_opt - 1)
        m.Minimize(sum(sub.ncb[v][cim] * x for v, lits in built.lit.items() for d, x in lits.items()
                       if d == cim and not isinstance(x, int)))
        self.solves += 1
        res = self.m._solve(_cp(), built, left, sub.tick, 0.0, real=False, gap=0.0)
        self.solve_time += res["time"]
        fixed = sum(sub.ncb[v][cim] for v, lits in built.lit.items() if isinstance(lits.get(cim), int) and lits[cim])
        if res["status"] == "infeasible":  # no budget does better: L is optimal up to the largest budget
            fr.solves.append((fr.top, length, True, used, length))
            return
        if res["assign"] is not None:
            _, ms = B.int_list_schedule(sub, res["assign"], res["order"])
            fr.points.append((self._used_up(fr, res["assign"]), ms - fr.off, res["assign"], res["order"]))
        least = res["ticks"] if res["status"] == "optimal" else res["bound"]
        if least is not None and least + fixed - 1 > used:
            fr.solves.append((least + fixed - 1, length, True, used, length))

    # ------------------------------------------------------------------------------------------------ DP
    def _dp(self, fronts, use_ub: bool):
        """DP over the cuts. ``use_ub``: over the schedules found (returns the best one), else over the
        lower bounds (returns the split it relies on). State: the device of the cut and the shared budget used
        so far; each segment adds one of its options ``(budget used, L)``; ties go to the first option met
        (devices in platform order, then the options by budget)."""
        p, cap, K = self.p, self.cap, len(self.cuts)
        V: dict = {None: np.zeros(cap + 1, dtype=np.int64)}
        hist = []  # per cut: dr -> (devices of the left cut, chosen dl index, budget before, option) per budget
        for j in range(K + 1):
            right = self.cuts[j] if j < K else None
            NV: dict = {}
            H: dict = {}
            for dr in self._devs(right):
                arr = np.full(cap + 1, INF, dtype=np.int64)
                ch = np.full((3, cap + 1), -1, dtype=np.int64)
                add = p.dur[right][dr] if right else 0
                need = self._ncb(right, dr, up=use_ub) if right else 0
                for di, (dl, prev) in enumerate(V.items()):
                    fr = fronts[(j, dl, dr)]
                    if use_ub:
                        opts = [(used, L, k) for k, (used, L, _, _) in enumerate(fr.ub_points())]
                    else:
                        opts = [(c, val, c) for c, val in Front.steps(fr.lb_table(cap))]
                    for used, L, k in opts:  # by budget used, increasing
                        lo = need + used
                        if lo > cap:
                            break
                        if L >= INF:
                            continue
                        src = prev[: cap + 1 - lo]  # the state before: budget b - lo for b = lo .. cap
                        cand = np.where(src < INF, src + (L + add), INF)
                        better = np.flatnonzero(cand < arr[lo:])
                        if better.size:
                            arr[lo + better] = cand[better]
                            ch[0, lo + better] = di
                            ch[1, lo + better] = better
                            ch[2, lo + better] = k
                NV[dr] = arr
                H[dr] = (list(V), ch)
            hist.append(H)
            V = NV
        best_val, key = INF, None
        for d, arr in V.items():
            if arr[cap] < best_val:
                best_val, key = int(arr[cap]), (d, cap)
        path = []  # (segment, dl, dr, budget or point index)
        if key is not None:
            d, b = key
            for j in range(K, -1, -1):
                dls, ch = hist[j][d]
                dl, rest, k = dls[ch[0, b]], int(ch[1, b]), int(ch[2, b])
                path.append((j, dl, d, k))
                d, b = dl, rest
            path.reverse()
        return best_val, path

    def run(self, tol: float = 0.0) -> dict:
        """Solve the segments lazily and combine them (see the class docstring). Returns ``lb`` (ticks,
        floating ops left out), ``ub`` (ticks, the assembled schedule without floating ops), ``assign`` and
        ``order`` (None if no schedule), ``exact``, and counters; ``invalid_bounds``: how many segment bounds
        were found above a schedule of their segment (a bug; then ``lb`` is 0 and ``exact`` False)."""
        K = len(self.cuts)
        fronts: dict[tuple, Front] = {}
        for i in range(K + 1):
            left = self.cuts[i - 1] if i > 0 else None
            right = self.cuts[i] if i < K else None
            for dl in self._devs(left):
                for dr in self._devs(right):
                    fronts[(i, dl, dr)] = self._front(i, dl, dr)
        # the largest useful budget first, small segments first (they are cheap)
        for key in sorted(fronts, key=lambda k: len(fronts[k].sub.ops)):
            self._refine(fronts[key], fronts[key].top)
        lb = ub = INF
        path: list = []
        while True:
            self.rounds += 1
            lb, path = self._dp(fronts, use_ub=False)
            ub, _ = self._dp(fronts, use_ub=True)
            if ub <= lb or (ub < INF and ub - lb <= tol * ub):
                break
            todo = [(j, dl, dr, c) for j, dl, dr, c in path if not fronts[(j, dl, dr)].exact_at(c)]
            if not todo or self.m._clock() >= self.deadline:
                break
            for j, dl, dr, c in todo:
                self._refine(fronts[(j, dl, dr)], c)
        exact = ub <= lb and not self.attach and not self.invalid
        # a segment bound above a schedule of its segment is no bound (a bug in hetsim, as the segment
        # knapsack's was, docs/fuzzing.md): the whole lower side is then untrusted, lb 0 (the schedules stay)
        out = {"lb": min(lb, ub) if not self.invalid else 0, "ub": None, "assign": None, "order": None,
               "exact": exact, "invalid_bounds": self.invalid,
               "segments": K + 1, "cuts": K, "largest_segment": max((len(s) for s in self.segs), default=0),
               "solves": self.solves, "shortcuts": self.shortcuts, "timeouts": self.timeouts,
               "rounds": self.rounds, "solve_time": self.solve_time}
        if ub >= INF:
            return out
        _, upath = self._dp(fronts, use_ub=True)
        assign: dict[str, str] = {}
        order: dict[str, list[str]] = {c: [] for c in self.p.cpus}
        seen: set[str] = set()
        for j, dl, dr, k in upath:
            _, _, a_loc, o_loc = fronts[(j, dl, dr)].ub_points()[k]
            for v, dv in a_loc.items():
                assign.setdefault(v, dv)
            for c, seq in o_loc.items():
                for v in seq:
                    if v not in seen:
                        seen.add(v)
                        order[c].append(v)
        if not self._fits_relaxed(self.p, assign, every=True):  # the segments overspent a relaxed capacity
            out.update(exact=False, relaxed_exceeded=True, repaired=self._repair(assign))
            return out
        out.update(ub=ub, assign=assign, order=order)
        return out


    def _repair(self, assign: dict[str, str]) -> dict[str, str] | None:
        """The assembled assignment made to fit every capacity: while a device is over its budget, the op on
        it that costs the least host time per unit of its need moves to the host (ours, a greedy repair; the
        caller re-schedules it). None when no op can move."""
        p, host = self.p, self.p.host
        a = dict(assign)
        for d, cap in p.budget.items():
            use = sum(p.ncb[v][d] for v in a if a[v] == d)
            movable = sorted((v for v in a if a[v] == d and host in p.devices[v] and p.ncb[v].get(d, 0) > 0),
                             key=lambda v: ((p.dur[v][host] - p.dur[v][d]) / p.ncb[v][d], p.pos[v]))
            for v in movable:
                if use <= cap:
                    break
                a[v] = host
                use -= p.ncb[v][d]
            if use > cap:
                return None
        if not all(B.carried(p, a, v, a[v]) for v in p.ops if v in a):
            return None
        return a


def insert_floating(p: B.IntProblem, assign: dict[str, str], order: dict[str, list[str]], free: set[str],
                    pack_time: float = 1.0) -> tuple[dict[str, list[str]], int]:
    """Put the floating ops back into a schedule of the others: the idle gaps of a single-core cpu are
    packed with floating ops that end before their consumers start (a multiple knapsack maximising the work
    placed, CP-SAT, one worker, ``pack_time`` deterministic seconds); the rest go just before their
    consumers. Returns the full
    order and its makespan (ticks)."""
    left = dict(p.budget)  # floating ops: the host if they may use it, else a device with room left
    for v, d in assign.items():
        if d in left:
            left[d] -= p.ncb[v][d]
    for v in sorted(free, key=lambda v: p.pos[v]):
        if v not in assign:
            ds = [d for d in p.devices[v] if d not in left or p.ncb[v][d] <= left[d]] or p.devices[v]
            assign[v] = p.host if p.host in ds else ds[0]
            if assign[v] in left:
                left[assign[v]] -= p.ncb[v][assign[v]]
    base = {c: [v for v in seq if v not in free] for c, seq in order.items()}
    start, _ = B.asap_starts(p, assign, base, skip=free)  # the floating ops absent
    out = {c: list(seq) for c, seq in base.items()}
    for c, seq in base.items():
        k = p.cpus[c]
        if k != 1:
            continue
        gaps = []  # (gap start, gap end, index in seq before which it lies)
        t = 0
        for i, v in enumerate(seq):
            if start[v] > t:
                gaps.append([t, start[v], i])
            t = start[v] + p.dur[v][c]
        flo = sorted((v for v in free if assign[v] == c),
                     key=lambda v: (min((start[w] for w in p.succs[v] if w in start), default=INF), p.pos[v]))
        dls = {v: min((start[w] for w in p.succs[v] if w in start), default=INF) for v in flo}
        # a deadline alone does not keep a floating op before its consumer when the consumer (or the ops
        # before it) take zero ticks (shape and constant ops): the gap must also lie before the consumer
        at_seq = {v: i for i, v in enumerate(seq)}
        first = {v: min((at_seq[w] for w in p.succs[v] if w in at_seq), default=len(seq)) for v in flo}
        place = _pack(gaps, flo, {v: p.dur[v][c] for v in flo}, dls, pack_time, first)
        inserts: dict[int, list[str]] = {}
        late: list[str] = []
        for v in flo:
            if v in place:
                inserts.setdefault(gaps[place[v]][2], []).append(v)
            else:
                late.append(v)
        for lst in inserts.values():
            lst.sort(key=lambda v: (dls[v], p.pos[v]))
        new = []
        for i, v in enumerate(seq):
            new.extend(inserts.get(i, []))
            new.append(v)
        for v in late:  # right after the last op that ends early enough for it to end by its deadline
            dl = dls[v] - p.dur[v][c]
            at = 0
            for i, x in enumerate(new):
                if x not in free and start[x] + p.dur[x][c] <= dl:
                    at = i + 1
            # never after a consumer (a zero-tick consumer ends by the deadline it sets)
            at = min([at] + [i for i, x in enumerate(new) if x in p.succs[v]])
            new.insert(at, v)
        out[c] = new
    for c in p.cpus:
        if p.cpus[c] != 1:  # multi-core: each just before the first op that starts at or after its deadline
            seq = out[c]
            for v in sorted((v for v in free if assign[v] == c), key=lambda v: p.pos[v]):
                dl = min((start[w] for w in p.succs[v] if w in start), default=INF) - p.dur[v][c]
                at = next((i for i, x in enumerate(seq) if x not in free and start[x] >= dl), len(seq))
                seq.insert(at, v)
    _, ms = B.int_list_schedule(p, assign, out)
    return out, ms


def _pack(gaps, flo, dur, dls, limit: float, first: dict[str, int]) -> dict[str, int]:
    """Floating op -> gap index: maximise the work placed; in each gap the ops run by deadline, so each gap
    holds at most its length and, for every deadline ``d`` inside it, the ops due by ``d`` fit before ``d``.
    ``first[v]``: the sequence index of ``v``'s first consumer on the core (a gap must lie before it).
    First-fit by deadline when CP-SAT finds nothing better."""
    allowed = {v: [g for g, (a, b, i) in enumerate(gaps) if a + dur[v] <= min(b, dls[v]) and i <= first[v]]
               for v in flo}
    greedy: dict[str, int] = {}
    fill = [a for a, _, _ in gaps]  # EDD within a gap: an op placed there ends at the running fill
    for v in flo:  # flo is sorted by deadline
        for g in allowed[v]:
            if fill[g] + dur[v] <= min(gaps[g][1], dls[v]):
                greedy[v] = g
                fill[g] += dur[v]
                break
    cand = [v for v in flo if allowed[v]]
    if not cand or limit <= 0 or all(v in greedy for v in cand):
        return greedy
    cp_model = _cp()
    m = cp_model.CpModel()
    y = {(v, g): m.NewBoolVar("") for v in cand for g in allowed[v]}
    for v in cand:
        m.AddAtMostOne(y[v, g] for g in allowed[v])
    for g, (a, b, _) in enumerate(gaps):
        members = [v for v in cand if (v, g) in y]
        if members:
            m.Add(sum(dur[v] * y[v, g] for v in members) <= b - a)
        for d in sorted({dls[v] for v in members if dls[v] < b}):  # EDD prefixes due inside the gap
            m.Add(sum(dur[v] * y[v, g] for v in members if dls[v] <= d) <= d - a)
    for (v, g), x in y.items():
        m.AddHint(x, greedy.get(v) == g)
    m.Maximize(sum(dur[v] * x for (v, _), x in y.items()))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_deterministic_time = limit  # reproducible stop (no wall-clock limit: it would not be)
    if _cpsat_sigint.solve(solver, m) not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return greedy
    got = {v: g for (v, g), x in y.items() if solver.Value(x)}
    if sum(dur[v] for v in got) <= sum(dur[v] for v in greedy):
        return greedy
    return got


def _weight(units: dict[str, tuple[int, int]] | None, d: str, n: int) -> int:
    """The tie-break weight of using ``n`` of device ``d``'s capacity (``Decomposition.units``; ``None``:
    ``n``)."""
    mul, div = (units or {}).get(d, (1, 1))
    return -(-n // div) * mul


def _cp():
    from ortools.sat.python import cp_model

    return cp_model
