"""Integer-time data, lower bounds and preprocessing for the exact mappers (used by :mod:`hetsim.mappers.cpsat`).

Everything here works on an :class:`IntProblem`: the cost model rounded UP to integer ticks of a fixed
resolution (see :func:`to_ticks`), the devices each op may use, and the transfer time of every edge for every
pair of devices. All bounds are bounds on the makespan of the rounded problem; :attr:`IntProblem.rounding_bound`
converts them into bounds on the real problem (see :func:`build_problem`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from hetsim.costs import CostModel
from hetsim.errors import InternalError, MappingError

#: values within this many ticks of an integer are snapped to it before rounding up (floating-point noise:
#: 2560 ns computed as 2.56e-6 s / 1e-9 is 2560.0000000000005, which must stay 2560 ticks).
SNAP = 1e-6


def to_ticks(t: float, tick: float) -> int:
    """``t`` seconds as a whole number of ticks, rounded up (after snapping float noise, :data:`SNAP`)."""
    x = t / tick
    r = round(x)
    if abs(x - r) <= SNAP:
        return int(r)
    return int(math.ceil(x))


@dataclass
class IntProblem:
    """The CPU-CIM ILP's problem with integer durations (:class:`~hetsim.mappers._policy_bounds.Relaxed` reuses the
    record in float seconds with ``tick = 1.0`` for the functions here that never round; its docstring says which).

    Attributes:
        tick: seconds per tick.
        ops: op names in topological order; ``pos`` their index.
        preds, succs: per op, predecessor / successor names.
        devices: per op, the devices it may still use (after preprocessing), in platform order.
        dur: ``dur[v][d]`` ticks (rounded up).
        tr: ``tr[(u, v)][(a, b)]`` ticks to move edge ``u -> v`` from ``a`` to ``b`` (0 on one device or for a
            parameter edge); a pair missing from the dict has no link (forbidden).
        cpus: ordered devices (``cpu`` kind) -> cores; ``budget``: CIM device -> crossbars (Eq. 14).
        ncb: ``ncb[v][d]`` crossbars op ``v`` needs on CIM device ``d``.
        host: the platform's host.
        rounding_bound_s: the most the rounding can lengthen any schedule, in seconds
            (:func:`rounding_bound_s` over each op's devices and each edge's linked device pairs).
    """

    tick: float
    ops: list[str]
    pos: dict[str, int]
    preds: dict[str, list[str]]
    succs: dict[str, list[str]]
    devices: dict[str, list[str]]
    dur: dict[str, dict[str, int]]
    tr: dict[tuple[str, str], dict[tuple[str, str], int]]
    cpus: dict[str, int]
    budget: dict[str, int]
    ncb: dict[str, dict[str, int]]
    host: str
    rounding_bound_s: float = 0.0
    removed: dict[str, int] = field(default_factory=dict)


def rounding_bound_s(tick: float, ops: Iterable[Iterable[tuple[float, int]]],
                     edges: Iterable[Iterable[tuple[float, int]]]) -> float:
    """The most rounding durations up to ticks can lengthen a fixed choice and order, in seconds (ours).

    Args:
        tick: seconds per tick.
        ops: per op, its choices (devices, or options of a weight-policy model) as ``(seconds, ticks)``: the real
            duration and the ticks the model gives it.
        edges: per data edge, the same for the transfer of each device pair a schedule may use (pairs that move
            nothing may be left out: they add no error).

    Returns the sum over ops of the largest error ``ticks * tick - seconds`` of its choices plus the sum over edges
    of the largest of its pairs, each error taken as at least 0 (a count snapped down, :func:`to_ticks`, only
    shortens the rounded schedule). The rounded makespan of a fixed choice and order exceeds the real one by at
    most this: every path of any schedule (data edges plus device-order and other zero-length precedence edges)
    crosses an op at most once and a data edge at most once, and each adds at most its largest error.
    """
    def worst(choices: Iterable[tuple[float, int]]) -> float:
        return max((max(0.0, n * tick - t) for t, n in choices), default=0.0)

    return sum(worst(c) for c in ops) + sum(worst(c) for c in edges)


def carried(p: IntProblem, assign: dict[str, str], v: str, d: str) -> bool:
    """True when every edge of ``v`` can be carried with ``v`` on ``d`` and its neighbours where ``assign``
    puts them (neighbours missing from ``assign`` are not checked): the device pair is in ``tr``, i.e. nothing
    moves or a link joins the two devices."""
    return (all((assign[u], d) in p.tr[(u, v)] for u in p.preds[v] if u in assign)
            and all((d, assign[w]) in p.tr[(v, w)] for w in p.succs[v] if w in assign))


def choose_tick(costs: CostModel, resolution_s: float | None, horizon_s: float) -> float:
    """The tick: ``resolution_s`` if given, else 1 ns, coarsened by powers of 10 while the horizon would
    exceed 1e10 ticks (CP-SAT is happiest well inside 2**40)."""
    if resolution_s is not None:
        if resolution_s <= 0:
            raise MappingError(f"cpsat: resolution_s must be > 0, got {resolution_s}")
        return float(resolution_s)
    tick = 1e-9
    while horizon_s / tick > 1e10:
        tick *= 10
    return tick


def build_problem(costs: CostModel, tick: float) -> IntProblem:
    """Round the cost model to ticks and drop the choices that can never be feasible.

    Removed: CIM devices for ops that need more crossbars than the device has (``removed['too_big']``);
    device pairs of an edge that no link joins (kept out of ``tr``).

    Raises:
        MappingError: an op has no device left.
    """
    wl = costs.workload
    g = wl.graph
    topo = wl.topological_order()
    pos = {v: i for i, v in enumerate(topo)}
    cpus = costs.serial_devices()
    budget = dict(costs.budget)
    plat_order = list(costs.platform.devices)
    devices: dict[str, list[str]] = {}
    dur: dict[str, dict[str, int]] = {}
    ncb: dict[str, dict[str, int]] = {}
    removed = {"too_big": 0}
    op_rounding: list[list[tuple[float, int]]] = []  # per op, (seconds, ticks) per device: rounding_bound_s
    for v in topo:
        lat = costs.latency[v]
        ds = []
        for d in plat_order:
            if d not in lat:
                continue
            if d in budget:
                n = costs.need[v][d]
                if n > budget[d]:
                    removed["too_big"] += 1
                    continue
                ncb.setdefault(v, {})[d] = n
            ds.append(d)
        if not ds:
            raise MappingError(
                f"cpsat: op {v!r} ({wl.op(v).op_type}) fits no device: the host cannot run it and it needs "
                f"more of a device's capacity than it has (CPU-CIM ILP, Eq. 14)"
            )
        devices[v] = ds
        dur[v] = {d: to_ticks(lat[d], tick) for d in ds}
        op_rounding.append([(lat[d], dur[v][d]) for d in ds])
    tr: dict[tuple[str, str], dict[tuple[str, str], int]] = {}
    edge_rounding: list[list[tuple[float, int]]] = []  # per edge, (seconds, ticks) per linked pair that moves data
    linked: dict[tuple[str, str], bool] = {}
    for u, v in g.edges:
        m: dict[tuple[str, str], int] = {}
        pairs = []
        for a in devices[u]:
            for b in devices[v]:
                if not costs.needs_transfer(u, v, a, b):
                    m[(a, b)] = 0
                    continue
                if (a, b) not in linked:
                    linked[(a, b)] = costs.carried(u, v, a, b)
                if not linked[(a, b)]:
                    continue  # no link between a and b: the pair is forbidden
                t = costs.transfer_time(u, v, a, b)
                m[(a, b)] = to_ticks(t, tick)
                pairs.append((t, m[(a, b)]))
        if not m:
            raise MappingError(f"cpsat: edge {u!r} -> {v!r} cannot be carried: no link joins its ops' devices")
        tr[(u, v)] = m
        edge_rounding.append(pairs)
    p = IntProblem(
        tick=tick, ops=topo, pos=pos,
        preds={v: list(g.predecessors(v)) for v in topo},
        succs={v: list(g.successors(v)) for v in topo},
        devices=devices, dur=dur, tr=tr, cpus=cpus, budget=budget, ncb=ncb, host=costs.host,
        rounding_bound_s=rounding_bound_s(tick, op_rounding, edge_rounding), removed=removed,
    )
    removed["unlinked"] = _prune_unlinked(p)
    return p


def _prune_unlinked(p: IntProblem) -> int:
    """Remove the (op, device) choices no schedule can use because no chain of links reaches the device from
    every input's possible devices, or leads from it to every consumer's (the op has no head or no tail there,
    :func:`heads_tails`), to a fixpoint; returns how many. Nothing is removed when links join every pair of
    devices.

    Raises:
        MappingError: an op has no device left.
    """
    count = 0
    while True:
        head, tail = heads_tails(p)
        changed = False
        for v in p.ops:
            keep = [d for d in p.devices[v] if d in head[v] and d in tail[v]]
            if len(keep) < len(p.devices[v]):
                if not keep:
                    raise MappingError(f"cpsat: op {v!r} cannot be placed: no link carries its tensors between its "
                                       "devices and its neighbours' (the platform's links)")
                count += len(p.devices[v]) - len(keep)
                p.devices[v] = keep
                changed = True
        if not changed:
            return count


def fits(p: IntProblem, assign: dict[str, str]) -> bool:
    """True when ``assign`` puts every op on one of its devices, every edge on a linked device pair, and stays
    within every budget."""
    use = dict.fromkeys(p.budget, 0)
    for v in p.ops:
        d = assign.get(v)
        if d not in p.devices[v] or not carried(p, assign, v, d):
            return False
        if d in use:
            use[d] += p.ncb[v][d]
    return all(use[d] <= p.budget[d] for d in use)


def heads_tails(p: IntProblem) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, int]]]:
    """Per (op, device): a lower bound on the op's start (head) and on the time from its end to the makespan
    (tail), over every schedule that puts the op on that device: longest paths where every other op takes
    its best device (duration plus transfer) and resources are ignored."""
    head: dict[str, dict[str, int]] = {}
    for v in p.ops:
        hv = {}
        for d in p.devices[v]:
            h = 0
            for u in p.preds[v]:
                tr = p.tr[(u, v)]
                best = min((head[u][a] + p.dur[u][a] + tr[(a, d)] for a in p.devices[u]
                            if (a, d) in tr and a in head[u]), default=None)
                if best is None:
                    h = None
                    break
                h = max(h, best)
            if h is not None:
                hv[d] = h
        head[v] = hv
    tail: dict[str, dict[str, int]] = {}
    for v in reversed(p.ops):
        tv = {}
        for d in p.devices[v]:
            t = 0
            for w in p.succs[v]:
                tr = p.tr[(v, w)]
                best = min((tr[(d, b)] + p.dur[w][b] + tail[w][b] for b in p.devices[w]
                            if (d, b) in tr and b in tail[w]), default=None)
                if best is None:
                    t = None
                    break
                t = max(t, best)
            if t is not None:
                tv[d] = t
        tail[v] = tv
    return head, tail


def critical_path(p: IntProblem, head, tail) -> int:
    """Makespan lower bound: the longest op-through path, each op at its best device."""
    best = 0
    for v in p.ops:
        vals = [head[v][d] + p.dur[v][d] + tail[v][d] for d in p.devices[v] if d in head[v] and d in tail[v]]
        if vals:
            best = max(best, min(vals))
    return best


def max_saving(items: list[tuple[int, int]], cap: int) -> int:
    """0/1 knapsack: the largest total value of ``(weight, value)`` items with total weight <= ``cap``."""
    if cap < 0:
        return -1
    return knapsack_table(items, cap)[cap]


def knapsack_table(items: list[tuple[int, int]], cap: int) -> list[int]:
    """:func:`max_saving` for every capacity ``0 .. cap`` at once (``O(items * cap)``)."""
    import numpy as np

    dp = np.zeros(cap + 1, dtype=np.int64)
    for w, val in items:
        if w > cap or val <= 0:
            continue
        if w == 0:
            dp += val
        else:  # the right-hand side is built from the previous row before the assignment: 0/1, not unbounded
            dp[w:] = np.maximum(dp[w:], dp[:-w] + val)
    return dp.tolist()


def knapsack_rows(items: list[tuple[int, int]], cap: int) -> list[list[int]]:
    """0/1 knapsack table row by row: ``rows[n][c]`` is the largest total value of the first ``n`` of the
    ``(weight, value)`` items with total weight <= ``c`` (``n + 1`` rows of ``cap + 1``; ``O(items * cap)``).
    Kept whole (unlike :func:`knapsack_table`) for prefix/suffix combinations and :func:`knapsack_pick`."""
    rows = [[0] * (cap + 1)]
    for w, val in items:
        prev = rows[-1]
        cur = list(prev)
        for c in range(w, cap + 1):
            if prev[c - w] + val > cur[c]:
                cur[c] = prev[c - w] + val
        rows.append(cur)
    return rows


def knapsack_pick(items: list[tuple[int, int]], cap: int) -> set[int]:
    """Indices of ``(weight, value)`` items that an optimal 0/1 knapsack of capacity ``cap`` takes (traced back
    through :func:`knapsack_rows`; among optimal sets, the one that prefers later items)."""
    rows = knapsack_rows(items, cap)
    pick, c = set(), cap
    for n in range(len(items), 0, -1):
        if rows[n][c] != rows[n - 1][c]:
            pick.add(n - 1)
            c -= items[n - 1][0]
    return pick


#: the largest knapsack capacity solved unit by unit; a larger budget (bytes of weight memory) is counted in units
#: of ``ceil(budget / KNAPSACK_MAX_CAP)``, each op's need rounded down (a relaxation: the bound stays valid)
KNAPSACK_MAX_CAP = 4096


@dataclass
class LoadBound:
    """Host-load (knapsack) bound for the host ``cpu`` of ``cores`` cores and one capacitated device ``cim`` (a
    CIM's crossbars, a weight memory; :func:`load_bound` says how other devices are relaxed).

    ``T >= r0 + ceil((W_forced + W_free - saving) / cores) + q0`` where ``W_*`` is the host work of the ops
    (forced to the host / free to go either way), ``saving`` the largest host time a budget-feasible offload
    set can remove (exact 0/1 knapsack over crossbars), and ``r0``/``q0`` the least head/tail of any op the
    host may run (the host is idle before the first and after the last of its ops). A budget over
    :data:`KNAPSACK_MAX_CAP` is counted in units of ``scale``: needs rounded down, the capacity rounded down
    after the forced ops' needs, so every feasible offload set stays feasible and the bound valid (weaker).
    """

    cpu: str
    cim: str
    cores: int
    r0: int
    q0: int
    forced: int  # host work of ops that must stay on the cpu
    items: dict[str, tuple[int, int]]  # free op -> (crossbars, host ticks)
    cap: int  # budget left after the ops the cpu cannot run
    scale: int = 1  # capacity units per knapsack unit (1 up to KNAPSACK_MAX_CAP)

    def _total(self) -> int:
        tot = self.__dict__.get("_tot")  # computed once: per_op asks for it per op
        if tot is None:
            tot = self.__dict__["_tot"] = self.forced + sum(h for _, h in self.items.values())
        return tot

    def _value(self, saving: int) -> int:
        if saving < 0:
            return 1 << 62
        return self.r0 + self.q0 + -(-(self._total() - saving) // self.cores)

    def bound(self) -> int:
        """The bound over all budget-feasible offload sets."""
        return self._value(max_saving(list(self.items.values()), self.cap))

    def per_op(self) -> dict[str, tuple[int, int]]:
        """Per free op: (the bound when it stays on the cpu, the bound when it is offloaded), from prefix and
        suffix knapsack tables (``O(items * cap)``)."""
        names = list(self.items)
        cap = self.cap
        if cap < 0:
            return {v: (1 << 62, 1 << 62) for v in names}
        neg = -(1 << 60)

        def table(seq):
            return knapsack_rows([self.items[v] for v in seq], cap)

        pre = table(names)
        suf = table(list(reversed(names)))
        out = {}
        n = len(names)
        for i, v in enumerate(names):
            a, b = pre[i], suf[n - 1 - i]  # items before / after v (tables are monotone in capacity)
            best_without = max(a[c] + b[cap - c] for c in range(cap + 1))
            w, h = self.items[v]
            left = cap - w
            best_with = h + max(a[c] + b[left - c] for c in range(left + 1)) if left >= 0 else neg
            out[v] = (self._value(best_without), self._value(best_with) if best_with > neg else 1 << 62)
        return out


def shared_budget(p: IntProblem) -> tuple[str | None, int]:
    """The capacitated device whose budget the bounds and the decomposition count exactly, and its budget.

    With one capacitated device, that device. With several, the one whose budget can bind (the ops that may use
    it need more than it has) with the largest demand per unit of budget; ``(None, 0)`` when none can bind."""
    if len(p.budget) == 1:
        return next(iter(p.budget.items()))
    best, key = (None, 0), None
    for d, c in p.budget.items():
        need = sum(p.ncb[v][d] for v in p.ops if d in p.devices[v])
        if need > c and (key is None or need / max(c, 1) > key):
            best, key = (d, c), need / max(c, 1)
    return best


def load_bound(p: IntProblem, head, tail, cim: str | None = None) -> LoadBound | None:
    """The :class:`LoadBound` of the host (a serial device) with the budget of ``cim`` (default:
    :func:`shared_budget`); None when the host is not a serial device or no device has a budget.

    Other devices are relaxed: an op that may leave the host for a device other than ``cim`` (an uncapacitated
    one, or one whose budget is not counted) needs nothing of the budget; the serial devices other than the
    host are ignored. With one cpu and one CIM device this is the knapsack bound of the CPU-CIM ILP's problem.
    """
    cpu = p.host
    if cpu not in p.cpus:
        return None
    cores = p.cpus[cpu]
    if cim is None:
        cim, cap = shared_budget(p)
        if cim is None:
            return None
    else:
        cap = p.budget[cim]
    scale = max(1, -(-cap // KNAPSACK_MAX_CAP))
    r0 = min((head[v][cpu] for v in p.ops if cpu in head[v]), default=0)
    q0 = min((tail[v][cpu] for v in p.ops if cpu in tail[v]), default=0)
    forced = 0
    items = {}
    for v in p.ops:
        ds = p.devices[v]
        if cpu not in ds:
            if ds == [cim]:
                cap -= p.ncb[v][cim]
        elif len(ds) == 1:
            forced += p.dur[v][cpu]
        else:
            only_cim = all(d in (cpu, cim) for d in ds)
            items[v] = (p.ncb[v][cim] // scale if only_cim else 0, p.dur[v][cpu])
    return LoadBound(cpu, cim, cores, r0, q0, forced, items, cap // scale, scale)


def int_list_schedule(p: IntProblem, assignment: dict[str, str], order: dict[str, list[str]]) -> tuple[dict, int]:
    """Integer-tick ASAP evaluation of an assignment and per-cpu order: :func:`asap_starts` that refuses an
    order leaving ops out, and the makespan.

    The mappers' evaluator (with :func:`asap_starts`, its core); the same timing rules as
    :func:`hetsim.sim.analytic.list_schedule` (CPU-CIM ILP Eq. 7-8, 11-12: inputs and transfers, then the device
    order and the earliest free core), kept apart from it because it times the *rounded* problem: integer ticks,
    every latency and transfer rounded up (:func:`build_problem`), exactly the numbers the CP-SAT model
    optimises, so a candidate's makespan and CP-SAT's objective compare without floating-point noise and the
    real makespan is within ``rounding_bound_s`` of it (tests/test_evaluators.py); and because the decomposition
    calls it thousands of times on sub-problems that have no :class:`~hetsim.costs.CostModel` (plain dicts of
    ints, no channel splits, no assignment checks).

    Raises:
        InternalError: the order contradicts the data dependencies (orders here are built by the mappers: a
            mapper bug, not an input error).
    """
    start, finish = asap_starts(p, assignment, order)
    if len(start) != len(p.ops):
        stuck = next(v for v in p.ops if v not in start)
        raise InternalError(f"a mapper's order contradicts the data dependencies (op {stuck!r} is never ready); "
                            "this is a bug in hetsim, please report it")
    return start, max(finish.values(), default=0)


def asap_starts(
    p: IntProblem, assignment: dict[str, str], order: dict[str, list[str]], skip: frozenset[str] | set = frozenset()
) -> tuple[dict[str, int], dict[str, int]]:
    """ASAP integer start and finish ticks of the ops not in ``skip`` (skipped ops, and edges from them, are
    treated as absent; ``order`` must not list them). Ops an inconsistent order blocks are left out (the local
    search tries orders that may be inconsistent and checks ``len(start)``; :func:`int_list_schedule` refuses
    them)."""
    import heapq

    chain_prev = {}
    for seq in order.values():
        for i in range(1, len(seq)):
            chain_prev[seq[i]] = seq[i - 1]
    # process in an order compatible with the DAG and the chains
    ops = [v for v in p.ops if v not in skip]
    indeg = {v: sum(1 for u in p.preds[v] if u not in skip) + (1 if v in chain_prev else 0) for v in ops}
    nxt: dict[str, list[str]] = {v: [w for w in p.succs[v] if w not in skip] for v in ops}
    for v, u in chain_prev.items():
        nxt[u].append(v)
    ready = [(p.pos[v], v) for v in ops if indeg[v] == 0]
    heapq.heapify(ready)
    start: dict[str, int] = {}
    finish: dict[str, int] = {}
    slots = {d: [0] * c for d, c in p.cpus.items()}
    while ready:
        _, v = heapq.heappop(ready)
        dv = assignment[v]
        t = 0
        for u in p.preds[v]:
            if u not in skip:
                t = max(t, finish[u] + p.tr[(u, v)][(assignment[u], dv)])
        if dv in slots:
            pr = chain_prev.get(v)
            if pr is not None:
                t = max(t, start[pr])
            t = max(t, heapq.heappop(slots[dv]))
            heapq.heappush(slots[dv], t + p.dur[v][dv])
        start[v] = t
        finish[v] = t + p.dur[v][dv]
        for w in nxt[v]:
            indeg[w] -= 1
            if indeg[w] == 0:
                heapq.heappush(ready, (p.pos[w], w))
    return start, finish


def closures(p: IntProblem) -> tuple[dict[str, int], dict[str, int]]:
    """Ancestor and descendant sets of every op as bitsets over topological positions."""
    anc: dict[str, int] = {}
    for v in p.ops:
        a = 0
        for u in p.preds[v]:
            a |= anc[u] | (1 << p.pos[u])
        anc[v] = a
    desc: dict[str, int] = {}
    for v in reversed(p.ops):
        d = 0
        for w in p.succs[v]:
            d |= desc[w] | (1 << p.pos[w])
        desc[v] = d
    return anc, desc


def free_ops(costs: CostModel, p: IntProblem) -> set[str]:
    """Ops that float: no predecessor and only parameter out-edges (constant producers, e.g. weight
    dequantisation); they can run any time before their consumers, so they are left out of the cut structure."""
    g = costs.workload.graph
    out = set()
    for v in p.ops:
        if p.preds[v]:
            continue
        if costs.workload.op(v).is_constant or all(g.edges[v, w].get("param") for w in p.succs[v]):
            out.add(v)
    return out


def cut_ops(p: IntProblem, anc, desc, free: set[str]) -> list[str]:
    """Ops comparable with every other non-free op (every schedule splits there), in topological order."""
    mask = 0
    for v in p.ops:
        if v not in free:
            mask |= 1 << p.pos[v]
    n = bin(mask).count("1")
    return [v for v in p.ops if v not in free and bin((anc[v] | desc[v]) & mask).count("1") == n - 1]


def bottom_levels(p: IntProblem, assign: dict[str, str]) -> dict[str, int]:
    """Per op, the longest path (ticks) from its start to the end of the graph under ``assign``: its duration
    plus the longest transfer-and-bottom-level over its successors (the bottom level of list scheduling,
    :func:`fill_schedule`'s priority). ``assign`` must carry every edge (:func:`fits`)."""
    out: dict[str, int] = {}
    for v in reversed(p.ops):
        d = assign[v]
        out[v] = p.dur[v][d] + max((p.tr[(v, w)][(d, assign[w])] + out[w] for w in p.succs[v]), default=0)
    return out


def fill_schedule(p: IntProblem, assignment: dict[str, str], free: set[str], prio: dict[str, int]
                  ) -> tuple[dict[str, list[str]], int]:
    """A list schedule of ``assignment`` in ticks that fills cpu idle time with floating ops.

    Event-driven: CIM ops start as soon as their inputs arrive; a free cpu core starts the ready op of
    highest ``prio`` (e.g. head + duration + tail). Floating ops (``free``: no inputs, e.g. weight
    dequantisation) only run early when they fit in the idle time before the next op can become ready
    (highest priority first), or when an op waits for nothing but floating ops (then they are urgent).
    Returns the per-cpu order and the makespan (ticks).

    Not a second evaluator but a list scheduler: it *chooses* the order (by priority, as events happen) where
    :func:`int_list_schedule` times a given one; the order it returns timed ASAP by :func:`int_list_schedule` is
    never later than the makespan returned here, and the mappers keep that timing.
    """
    import heapq

    cpus = p.cpus
    n_wait = {v: len(p.preds[v]) for v in p.ops}
    n_hard = {v: sum(1 for u in p.preds[v] if u not in free) for v in p.ops}
    arrive = dict.fromkeys(p.ops, 0)
    finish: dict[str, int] = {}
    order: dict[str, list[str]] = {c: [] for c in cpus}
    ready: dict[str, set[str]] = {c: set() for c in cpus}  # ready floating ops that are not urgent
    hard: dict[str, list] = {c: [] for c in cpus}  # heap (-prio, pos, op) of the other ready ops
    urgent: set[str] = set()
    inflight: list = []  # (arrival, pos, v) of cpu ops whose inputs are in flight
    events: list = []  # (finish time, pos, v)
    busy = dict.fromkeys(cpus, 0)
    started: set[str] = set()

    def release(v: str) -> None:
        d = assignment[v]
        if d in cpus:
            heapq.heappush(inflight, (arrive[v], p.pos[v], v))
        else:
            finish[v] = arrive[v] + p.dur[v][d]
            heapq.heappush(events, (finish[v], p.pos[v], v))

    def mark_urgent(w: str) -> None:
        if n_hard[w] == 0:
            for u in p.preds[w]:
                if u in free and u not in started and u not in urgent:
                    urgent.add(u)
                    c = assignment[u]
                    if u in ready.get(c, ()):
                        ready[c].discard(u)
                        heapq.heappush(hard[c], (-prio[u], p.pos[u], u))

    for v in p.ops:
        if n_wait[v] == 0:
            release(v)
    for v in p.ops:
        if v not in free and p.preds[v]:
            mark_urgent(v)
    now = 0
    while len(finish) < len(p.ops) or events:
        while events and events[0][0] <= now:
            _, _, v = heapq.heappop(events)
            dv = assignment[v]
            if dv in cpus:
                busy[dv] -= 1
            for w in p.succs[v]:
                t = finish[v] + p.tr[(v, w)][(dv, assignment[w])]
                if t > arrive[w]:
                    arrive[w] = t
                n_wait[w] -= 1
                if v not in free:
                    n_hard[w] -= 1
                    mark_urgent(w)
                if n_wait[w] == 0:
                    release(w)
        while inflight and inflight[0][0] <= now:
            _, _, v = heapq.heappop(inflight)
            c = assignment[v]
            if v not in free or v in urgent:
                heapq.heappush(hard[c], (-prio[v], p.pos[v], v))
            else:
                ready[c].add(v)
        for c, k in cpus.items():
            while busy[c] < k and (hard[c] or ready[c]):
                if hard[c]:
                    v = heapq.heappop(hard[c])[2]
                else:
                    nxt = min([t for t in (events[0][0] if events else None,
                                           inflight[0][0] if inflight else None) if t is not None],
                              default=None)
                    fits = [x for x in ready[c] if nxt is None or now + p.dur[x][c] <= nxt]
                    if not fits:
                        break
                    v = max(fits, key=lambda x: (prio[x], -p.pos[x]))
                ready[c].discard(v)
                started.add(v)
                urgent.discard(v)
                busy[c] += 1
                finish[v] = now + p.dur[v][c]
                heapq.heappush(events, (finish[v], p.pos[v], v))
                order[c].append(v)
        nxt = [t for t in (events[0][0] if events else None, inflight[0][0] if inflight else None)
               if t is not None]
        if not nxt:
            break
        now = max(now, min(nxt))
    if len(finish) != len(p.ops):
        raise InternalError("fill_schedule: some ops never became ready (a bug in hetsim, please report it)")
    return order, max(finish.values(), default=0)


def multi_load_bound(p: IntProblem, head, tail) -> int | None:
    """The host-load bound with *every* capacity counted (several accelerators with budgets, e.g. a CIM's
    crossbars and an NPU's weight memory), where :func:`load_bound` counts one and relaxes the others (an op
    that may go to another capacitated device is free to leave the host there). Ours, the CPU-CIM ILP's knapsack
    bound generalised: ``T >= r0 + ceil((W - saving) / cores) + q0`` as in :class:`LoadBound`, with ``saving``
    the host time an offload set within all budgets can remove, bounded above by the smaller of

    * the sum over capacitated devices of each one's 0/1 knapsack (an op counted in several: a relaxation), and
    * the LP relaxation of the assignment (each op offloaded at most once in total, fractionally; HiGHS via
      :func:`scipy.optimize.linprog`).

    An op that may leave the host for an uncapacitated device saves its whole host time. None when the host is not
    a serial device or fewer than two devices have a budget (then :func:`load_bound` is this bound).
    """
    cpu = p.host
    if cpu not in p.cpus or len(p.budget) < 2:
        return None
    caps = dict(p.budget)
    r0 = min((head[v][cpu] for v in p.ops if cpu in head[v]), default=0)
    q0 = min((tail[v][cpu] for v in p.ops if cpu in tail[v]), default=0)
    total = free_save = 0
    items: list[tuple[str, int, list[str]]] = []  # op, host ticks, the capacitated devices it may use
    for v in p.ops:
        ds = p.devices[v]
        if cpu not in ds:
            if len(ds) == 1 and ds[0] in caps:
                caps[ds[0]] -= p.ncb[v][ds[0]]
            continue
        total += p.dur[v][cpu]
        if len(ds) == 1:
            continue
        if any(d != cpu and d not in p.budget for d in ds):
            free_save += p.dur[v][cpu]
        else:
            items.append((v, p.dur[v][cpu], [d for d in ds if d != cpu]))
    if any(c < 0 for c in caps.values()):
        return 1 << 62  # the ops only a capacitated device runs exceed it: infeasible
    by_knapsack = 0
    for d, cap in caps.items():
        scale = max(1, -(-cap // KNAPSACK_MAX_CAP))
        by_knapsack += max_saving([(p.ncb[v][d] // scale, h) for v, h, ds in items if d in ds], cap // scale)
    saving = by_knapsack
    if items:
        saving = min(saving, _lp_saving(p, items, caps))
    return r0 + q0 + -(-(total - free_save - saving) // p.cpus[cpu])


def dual_lp_bound(c, a_ub, b_ub, a_eq, b_eq, lo, hi, y_ub, y_eq) -> float | None:
    """A lower bound on ``min c x`` subject to ``a_ub x <= b_ub``, ``a_eq x = b_eq``, ``lo <= x <= hi`` from any
    dual multipliers (HiGHS's marginals, ``scipy.optimize.linprog``'s ``ineqlin``/``eqlin``), valid whatever
    their accuracy: weak duality with the box, the idea of Neumaier and Shcherbina, "Safe bounds in linear and
    mixed-integer linear programming" (Math. Program. 99, 2004); the formulation and the rounding allowance are
    ours.

    With ``y = min(y_ub, 0)`` (a multiplier of a ``<=`` row of a minimisation must be <= 0; clipping keeps the
    argument valid) and ``r = c - a_ub^T y - a_eq^T z``, every feasible ``x`` has ``c x = r x + y a_ub x + z a_eq
    x >= sum_j min(r_j lo_j, r_j hi_j) + y b_ub + z b_eq``. So the bound holds for any ``y``, ``z``: no tolerance
    of the solver enters it, only the floating-point rounding of this sum, taken off as ``(rows + columns + 2)``
    units of 2**-52 times the sum of the absolute values involved (a worst-case allowance of ours for dot
    products of that length, after Higham's gamma_n).

    Args:
        c, b_ub, b_eq, lo, hi: 1-d arrays (``hi`` may hold ``inf``); ``a_ub``, ``a_eq``: 2-d (dense or SciPy
            sparse) of shapes (rows, n) and (equalities, n); ``y_ub``, ``y_eq``: the multipliers per row.

    Returns:
        The bound, or ``None`` when a column with an infinite bound has a reduced cost of the sign that makes the
        box's minimum ``-inf`` (the multipliers prove nothing then).
    """
    import numpy as np

    c = np.asarray(c, float)
    y = np.minimum(np.asarray(y_ub, float), 0.0)
    z = np.asarray(y_eq, float)
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    r = c - a_ub.T @ y - a_eq.T @ z
    at = np.where(r >= 0, lo, hi)  # the corner of the box where r x is least
    moving = r != 0
    if not np.all(np.isfinite(at[moving])):
        return None
    terms = np.concatenate([y * np.asarray(b_ub, float), z * np.asarray(b_eq, float), r[moving] * at[moving]])
    value = float(np.sum(terms))
    size = (abs(a_ub).T @ abs(y)) + (abs(a_eq).T @ abs(z)) + abs(c)  # what each r_j is summed from
    mag = float(np.sum(np.abs(terms)) + np.sum(size[moving] * np.abs(at[moving])))
    n = a_ub.shape[0] + a_eq.shape[0] + len(c) + 2
    return value - n * 2.0**-52 * mag


def _lp_saving(p: IntProblem, items, caps: dict[str, int]) -> int:
    """An upper bound (integer) on the host time offloadable within ``caps``: the LP relaxation of the assignment
    of ``items`` (op, host ticks, devices) to the capacitated devices, each op at most once."""
    import numpy as np
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix

    cols = [(i, d) for i, (_, _, ds) in enumerate(items) for d in ds]
    devs = {d: k for k, d in enumerate(caps)}
    rows, cidx, vals = [], [], []
    for j, (i, d) in enumerate(cols):
        rows += [devs[d], len(devs) + i]
        cidx += [j, j]
        vals += [float(p.ncb[items[i][0]][d]), 1.0]
    a = coo_matrix((vals, (rows, cidx)), shape=(len(devs) + len(items), len(cols))).tocsr()
    b = np.array([float(caps[d]) for d in caps] + [1.0] * len(items))
    c = -np.array([float(items[i][1]) for i, _ in cols])
    res = linprog(c, A_ub=a, b_ub=b, bounds=(0, 1), method="highs")
    if res.status != 0:  # no LP optimum (should not happen: x = 0 is feasible): no tightening
        return sum(h for _, h, _ in items)
    # the largest saving is -min(c x): its bound from HiGHS's duals (dual_lp_bound: no solver tolerance in it;
    # the box [0, 1] is finite, so it always exists)
    empty = coo_matrix((0, len(cols))).tocsr()
    low = dual_lp_bound(c, a, b, empty, np.zeros(0), np.zeros(len(cols)), np.ones(len(cols)),
                        res.ineqlin.marginals, np.zeros(0))
    return int(-low)
