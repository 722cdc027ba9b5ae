"""``ilp``: seed 000's mixed-integer program (Sec. IV-B, Eq. 5-14), solved exactly with HiGHS or Gurobi.

The model, written as in the paper (``x_v = 1``: op ``v`` on the host)::

    min T
    x_v in {0, 1}  (v in V_acc),     x_v = 1  (v not in V_acc)                              (Eq. 5)
    T >= f_v                                         for every sink v                        (Eq. 6)
    f_v = s_v + x_v * T_host,v + (1 - x_v) * T_acc,v (T_acc,v := 0 for v not in V_acc)      (Eq. 7)
    s_v >= f_u + z_uv * T_transfer,uv                for every edge (u, v)                   (Eq. 8)
    z_uv >= x_u - x_v,  z_uv >= x_v - x_u            for every edge (u, v)                   (Eq. 9)
    s_v >= f_u - M * (3 - x_u - x_v - o_uv)          for every parallel pair {u, v} in P     (Eq. 11)
    s_u >= f_v - M * (2 - x_u - x_v + o_uv)          for every parallel pair {u, v} in P     (Eq. 12)
    sum_{v in V_acc} (1 - x_v) * N_crossbar,v <= C                                           (Eq. 14)

with ``P`` the unordered pairs neither of which reaches the other (Eq. 10) and ``M`` of Eq. 13. Choices the
paper leaves open, all documented in :class:`Ilp`: the time unit of the model (scaled to ``M``), ``z`` continuous
in ``[0, 1]`` (exact: it only tightens Eq. 8, so an optimum has ``z_uv = |x_u - x_v|``), and two ``z`` columns
for an edge whose host->CIM and CIM->host transfer times differ.

Source: seed 000 (``shared/seeds/000_*.txt``), Sec. IV-B, Eq. 5-14; sizes as counted in its Table I.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import networkx as nx
import numpy as np

from hetsim.costs import CostModel
from hetsim.errors import MappingError
from hetsim.mappers.base import make_schedule, register
from hetsim.schedule import Schedule
from hetsim.sim.analytic import list_schedule

#: Big-M of Eq. 13 in model time units lies in ``[M_UNITS, 10 * M_UNITS)``: see :func:`time_unit`.
M_UNITS = 1e3

#: Relative agreement below which the two directions of an edge's transfer count as equal (one ``z``).
_SAME_TRANSFER_REL = 1e-12

INF = float("inf")


@dataclass
class IlpModel:
    """Seed 000's MILP in matrix form (rows of ``row_lower <= A x <= row_upper``, CSR), times in units of
    ``time_unit_s`` seconds (:func:`time_unit`).

    Column layout: ``x`` (|V|), ``o`` (|P|), ``s`` (|V|), ``f`` (|V|), ``T`` (1), ``z`` (one per edge, two
    for an edge whose transfer time depends on the direction). Row layout, in order: Eq. 7 (|V|), Eq. 5
    fixings, Eq. 6 (sinks), Eq. 8 (|E|), Eq. 9 (2 |E|), Eq. 11 (|P|), Eq. 12 (|P|), Eq. 14 (1).

    Attributes:
        ops: op names in column order (topological order of the workload).
        host, cim: the two device names.
        acc: ``acc[i]`` is True when op ``i`` is in V_acc (the CIM device runs it).
        edges: ``(u, v)`` index pairs in row order.
        pairs: ``(|P|, 2)`` int array of parallel pairs ``(u, v)``, ``u < v`` in topological position.
        sinks: indices of the terminal ops (Eq. 6).
        fixed: op index -> fixed value of ``x`` (Eq. 5; 0 for ops only the CIM device runs).
        big_m: M of Eq. 13, model units.
        x0, o0, s0, f0, t_col: first column of each block (``t_col``: the makespan ``T``).
        z_cols: per edge, the ``z`` columns ``(z_hc, z_ch)`` (equal when the edge has one ``z``).
        transfer: per edge, ``(T_host->cim, T_cim->host)`` in model units.
        variables, constraints: the paper's count (Table I): ``|V| + |P|`` and the rows above.
    """

    time_unit_s: float
    ops: list[str]
    host: str
    cim: str | None
    acc: np.ndarray
    edges: list[tuple[int, int]]
    pairs: np.ndarray
    sinks: list[int]
    fixed: dict[int, int]
    big_m: float
    x0: int
    o0: int
    s0: int
    f0: int
    t_col: int
    z_cols: list[tuple[int, int]]
    transfer: list[tuple[float, float]]
    col_lower: np.ndarray
    col_upper: np.ndarray
    col_cost: np.ndarray
    integrality: np.ndarray
    row_lower: np.ndarray
    row_upper: np.ndarray
    a_start: np.ndarray
    a_index: np.ndarray
    a_value: np.ndarray
    build_time_s: float = 0.0
    meta: dict = field(default_factory=dict)

    @property
    def n_cols(self) -> int:
        return len(self.col_lower)

    @property
    def n_rows(self) -> int:
        return len(self.row_lower)

    @property
    def variables(self) -> int:
        """Decision variables as seed 000 Table I counts them: every ``x_v`` (fixed ones too) and ``o_uv``."""
        return len(self.ops) + len(self.pairs)

    @property
    def constraints(self) -> int:
        """Constraints as seed 000 Table I counts them; equal to :attr:`n_rows` by construction."""
        n, e, p = len(self.ops), len(self.edges), len(self.pairs)
        return n + len(self.fixed) + len(self.sinks) + 3 * e + 2 * p + 1


def check_platform(costs: CostModel) -> tuple[str, str]:
    """The ``(host, cim)`` device names, after checking the platform is the one seed 000 models.

    Raises:
        MappingError: the host has more than one core, or the platform has other devices than the host and
            one ``puma`` CIM device, or no link joins them.
    """
    plat = costs.platform
    host = costs.host
    others = [n for n in plat.devices if n != host]
    cims = [n for n in others if n in costs.budget and not costs.devices[n].serial]
    if costs.units(host) != 1:
        raise MappingError(
            f"ilp: the CPU-CIM ILP models a single-core host CPU; host {host!r} has "
            f"{costs.units(host)} cores (use another mapper, e.g. cpsat)"
        )
    if len(cims) != 1 or len(others) != 1:
        raise MappingError(
            f"ilp: seed 000's MILP models one host CPU and exactly one PUMA CIM device; platform "
            f"{plat.name!r} has {len(others)} other devices ({', '.join(others) or 'none'}) of which "
            f"{len(cims)} are CIM (use another mapper, e.g. greedy)"
        )
    cim = cims[0]
    if plat.link_between(host, cim) is None:
        raise MappingError(f"ilp: platform {plat.name!r} has no link between {host!r} and {cim!r} (Eq. 4, 8)")
    return host, cim


def parallel_pairs(g: nx.DiGraph, ops: list[str]) -> np.ndarray:
    """The pairs of Eq. 10 (neither op reaches the other), as an ``(|P|, 2)`` array of indices into ``ops``
    (a topological order), each row ``(i, j)`` with ``i < j``.

    Reachability is a boolean ``|V| x |V|`` matrix filled in reverse topological order, one vectorised OR per
    edge: ``O(|V| |E| / 8)`` bytes of work, milliseconds for 1000-op graphs.
    """
    n = len(ops)
    if n < 2:
        return np.zeros((0, 2), dtype=np.int64)
    idx = {v: i for i, v in enumerate(ops)}
    reach = np.zeros((n, n), dtype=bool)
    for i in range(n - 1, -1, -1):
        row = reach[i]
        for w in g.successors(ops[i]):
            j = idx[w]
            row |= reach[j]
            row[j] = True
    comparable = reach | reach.T
    iu, ju = np.nonzero(~comparable)
    keep = iu < ju
    return np.stack([iu[keep], ju[keep]], axis=1).astype(np.int64)


def time_unit(big_m_s: float) -> float:
    """Seconds per model time unit: the power of ten that puts Eq. 13's ``M`` in ``[1e3, 1e4)`` units.

    The solvers' tolerances are absolute (HiGHS: primal feasibility 1e-7, integrality 1e-6; Gurobi alike), so
    the unit decides how precise the model's times are. A fixed microsecond would leave a toy graph of
    nanosecond ops at ~1e-3 relative precision and put YOLOv5n's ``M`` at ~1e5-1e6 (an integrality slack of
    1e-6 on ``x``/``o`` then lets Eq. 11-12 leak ~1 µs). Scaling by ``M`` instead keeps every instance at
    ~1e-9 relative precision in ``T`` and the Eq. 11-12 leak at ~1e-6 of ``M``, with the big-M coefficient
    itself ~1e3 (microseconds for a ~1-10 ms model, 100 µs for YOLOv5n's ~0.3 s). Any sub-``1e-5 M``
    duration stays far above HiGHS's 1e-9 threshold for dropping small matrix entries.
    """
    if not big_m_s > 0 or not np.isfinite(big_m_s):
        return 1e-6
    return float(10.0 ** (np.floor(np.log10(big_m_s)) - np.log10(M_UNITS)))


def build_model(costs: CostModel) -> IlpModel:
    """Seed 000's MILP (Eq. 5-14) for ``costs``, ready for a solver.

    Raises:
        MappingError: the platform is not a single-core host + one PUMA device (:func:`check_platform`).
    """
    t0 = time.perf_counter()
    host, cim = check_platform(costs)
    g = costs.workload.graph
    ops = list(costs.workload.topological_order())
    n = len(ops)
    idx = {v: i for i, v in enumerate(ops)}
    lat = costs.latency
    t_host = np.array([lat[v].get(host, 0.0) for v in ops])
    t_acc = np.array([lat[v].get(cim, 0.0) for v in ops])
    acc = np.array([cim in lat[v] for v in ops], dtype=bool)
    on_host = np.array([host in lat[v] for v in ops], dtype=bool)
    # Eq. 5; ops only the CIM device runs are fixed the other way (x_v = 0), an extension the paper needs not
    fixed = {i: 1 for i in range(n) if not acc[i]}
    fixed.update({i: 0 for i in range(n) if not on_host[i]})
    edges = [(idx[u], idx[v]) for u, v in g.edges]
    edges.sort()
    sinks = [i for i, v in enumerate(ops) if g.out_degree(v) == 0]
    pairs = parallel_pairs(g, ops)
    p = len(pairs)
    e = len(edges)

    transfer: list[tuple[float, float]] = []
    for iu, iv in edges:
        u, v = ops[iu], ops[iv]
        transfer.append((costs.transfer_time(u, v, host, cim), costs.transfer_time(u, v, cim, host)))

    # Eq. 13: M = sum_v max(T_host, T_acc) + sum_(u,v) T_transfer (the larger direction when they differ)
    big_m_s = float(np.maximum(t_host, t_acc).sum() + sum(max(a, b) for a, b in transfer))
    unit = time_unit(big_m_s)
    scale = 1.0 / unit
    t_host, t_acc = t_host * scale, t_acc * scale
    transfer = [(a * scale, b * scale) for a, b in transfer]
    big_m = max(big_m_s * scale, 1.0)  # a graph of zero-time ops still needs a positive M

    x0, o0 = 0, n
    s0 = o0 + p
    f0 = s0 + n
    t_col = f0 + n
    z_cols: list[tuple[int, int]] = []
    col = t_col + 1
    for hc, ch in transfer:
        if abs(hc - ch) <= _SAME_TRANSFER_REL * max(hc, ch, 1e-300):
            z_cols.append((col, col))
            col += 1
        else:
            z_cols.append((col, col + 1))
            col += 2
    n_cols = col
    col_lower = np.zeros(n_cols)
    col_upper = np.full(n_cols, INF)
    col_upper[x0:x0 + n] = 1.0
    col_upper[o0:o0 + p] = 1.0
    col_upper[t_col + 1:] = 1.0  # z
    col_cost = np.zeros(n_cols)
    col_cost[t_col] = 1.0
    integrality = np.zeros(n_cols, dtype=np.int32)
    integrality[x0:x0 + n] = 1
    integrality[o0:o0 + p] = 1

    rows_r: list[np.ndarray] = []
    rows_c: list[np.ndarray] = []
    rows_v: list[np.ndarray] = []
    lo: list[np.ndarray] = []
    up: list[np.ndarray] = []
    r = 0

    def block(nrows: int, rr, cc, vv, lower, upper) -> None:
        nonlocal r
        rows_r.append(np.asarray(rr, dtype=np.int64) + r)
        rows_c.append(np.asarray(cc, dtype=np.int64))
        rows_v.append(np.asarray(vv, dtype=float))
        lo.append(np.broadcast_to(np.asarray(lower, dtype=float), (nrows,)))
        up.append(np.broadcast_to(np.asarray(upper, dtype=float), (nrows,)))
        r += nrows

    ar = np.arange(n)
    # Eq. 7: f_v - s_v - (T_host - T_acc) x_v = T_acc
    block(n, np.concatenate([ar, ar, ar]), np.concatenate([f0 + ar, s0 + ar, x0 + ar]),
          np.concatenate([np.ones(n), -np.ones(n), -(t_host - t_acc)]), t_acc, t_acc)
    # Eq. 5: x_v = 1 for v not in V_acc (as rows, so the count matches Table I)
    fx = sorted(fixed)
    fval = np.array([fixed[i] for i in fx], dtype=float)
    block(len(fx), np.arange(len(fx)), np.array(fx, dtype=np.int64) + x0, np.ones(len(fx)), fval, fval)
    # Eq. 6: T - f_v >= 0
    k = len(sinks)
    block(k, np.concatenate([np.arange(k)] * 2), np.concatenate([np.full(k, t_col), f0 + np.array(sinks, int)]),
          np.concatenate([np.ones(k), -np.ones(k)]), 0.0, INF)
    eu = np.array([a for a, _ in edges], dtype=np.int64)
    ev = np.array([b for _, b in edges], dtype=np.int64)
    zh = np.array([c for c, _ in z_cols], dtype=np.int64)
    zc = np.array([c for _, c in z_cols], dtype=np.int64)
    t_hc = np.array([a for a, _ in transfer], dtype=float)
    t_ch = np.array([b for _, b in transfer], dtype=float)
    two = zh != zc
    ae = np.arange(e)
    # Eq. 8: s_v - f_u - T_hc z_hc [- T_ch z_ch] >= 0
    block(e, np.concatenate([ae, ae, ae, ae[two]]), np.concatenate([s0 + ev, f0 + eu, zh, zc[two]]),
          np.concatenate([np.ones(e), -np.ones(e), -t_hc, -t_ch[two]]), 0.0, INF)
    # Eq. 9: z_hc - x_u + x_v >= 0 and z_ch + x_u - x_v >= 0 (z_hc = z_ch = z_uv when the edge has one z)
    block(e, np.concatenate([ae] * 3), np.concatenate([zh, x0 + eu, x0 + ev]),
          np.concatenate([np.ones(e), -np.ones(e), np.ones(e)]), 0.0, INF)
    block(e, np.concatenate([ae] * 3), np.concatenate([zc, x0 + eu, x0 + ev]),
          np.concatenate([np.ones(e), np.ones(e), -np.ones(e)]), 0.0, INF)
    pu, pv = (pairs[:, 0], pairs[:, 1]) if p else (np.zeros(0, np.int64), np.zeros(0, np.int64))
    ap = np.arange(p)
    po = o0 + ap
    m = big_m
    # Eq. 11: s_v - f_u - M x_u - M x_v - M o_uv >= -3M
    block(p, np.concatenate([ap] * 5), np.concatenate([s0 + pv, f0 + pu, x0 + pu, x0 + pv, po]),
          np.concatenate([np.ones(p), -np.ones(p), np.full(p, -m), np.full(p, -m), np.full(p, -m)]), -3 * m, INF)
    # Eq. 12: s_u - f_v - M x_u - M x_v + M o_uv >= -2M
    block(p, np.concatenate([ap] * 5), np.concatenate([s0 + pu, f0 + pv, x0 + pu, x0 + pv, po]),
          np.concatenate([np.ones(p), -np.ones(p), np.full(p, -m), np.full(p, -m), np.full(p, m)]), -2 * m, INF)
    # Eq. 14: sum_{V_acc} (1 - x_v) N_v <= C  <=>  -sum_{V_acc} N_v x_v <= C - sum_{V_acc} N_v
    budget = costs.budget[cim]
    acc_i = np.nonzero(acc)[0]
    ncb = np.array([costs.need[ops[i]][cim] for i in acc_i], dtype=float)
    block(1, np.zeros(len(acc_i), np.int64), x0 + acc_i, -ncb, -INF, budget - ncb.sum())

    rr = np.concatenate(rows_r)
    cc = np.concatenate(rows_c)
    vv = np.concatenate(rows_v)
    nz = vv != 0.0
    rr, cc, vv = rr[nz], cc[nz], vv[nz]
    order = np.lexsort((cc, rr))
    rr, cc, vv = rr[order], cc[order], vv[order]
    a_start = np.zeros(r + 1, dtype=np.int32)
    np.cumsum(np.bincount(rr, minlength=r), out=a_start[1:])
    model = IlpModel(
        time_unit_s=unit, ops=ops, host=host, cim=cim, acc=acc, edges=edges, pairs=pairs, sinks=sinks, fixed=fixed,
        big_m=big_m,
        x0=x0, o0=o0, s0=s0, f0=f0, t_col=t_col, z_cols=z_cols, transfer=transfer,
        col_lower=col_lower, col_upper=col_upper, col_cost=col_cost, integrality=integrality,
        row_lower=np.concatenate(lo), row_upper=np.concatenate(up),
        a_start=a_start, a_index=cc.astype(np.int32), a_value=vv,
    )
    if model.n_rows != model.constraints:  # pragma: no cover - a bug in the row blocks above
        raise AssertionError(f"ilp: built {model.n_rows} rows, the paper's count is {model.constraints}")
    model.build_time_s = time.perf_counter() - t0
    return model


def ilp_size(costs: CostModel) -> tuple[int, int]:
    """``(decision variables, constraints)`` of seed 000's MILP for ``costs``, counted as in its Table I:
    ``|V| + |P|`` variables (every ``x_v`` and every ``o_uv``; the continuous ``s, f, T, z`` are not counted)
    and ``|V|`` (Eq. 7) + ``|V \\ V_acc|`` (Eq. 5) + sinks (Eq. 6) + ``3 |E|`` (Eq. 8-9) + ``2 |P|``
    (Eq. 11-12) + 1 (Eq. 14) constraints. Builds the model without solving it."""
    m = build_model(costs)
    return m.variables, m.constraints


_highs_banner_done = False


def _new_highs(highspy):
    """A ``highspy.Highs()``, keeping HiGHS's copyright banner (printed by C code to file descriptor 1 at the
    first construction in a process, before any option can silence it) off stdout, where it would corrupt
    ``hetsim run --json``."""
    global _highs_banner_done
    if _highs_banner_done:
        return highspy.Highs()
    _highs_banner_done = True
    try:
        import ctypes

        libc_fflush = ctypes.CDLL(None).fflush
        sys.stdout.flush()
        saved = os.dup(1)
    except (OSError, AttributeError, ValueError):  # no C library handle or no fd 1: let it print
        return highspy.Highs()
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, 1)
            h = highspy.Highs()
            libc_fflush(None)  # the banner sits in C's stdout buffer when fd 1 is a pipe or file
        finally:
            os.dup2(saved, 1)
            os.close(null)
    finally:
        os.close(saved)
    return h


@dataclass
class _Result:
    status: str
    values: np.ndarray | None
    incumbent: float | None  # model units
    bound: float | None
    solve_time_s: float
    version: str
    note: str = ""


class _Progress:
    """Rate-limited forwarding of solver progress (model units in, seconds out) to the user's callable."""

    def __init__(self, fn: Callable[[dict], None] | None, unit_s: float, every_s: float = 0.25):
        self.fn, self.unit_s, self.every_s, self.last = fn, unit_s, every_s, -INF

    def __call__(self, t: float, inc: float | None, bnd: float | None, force: bool = False,
                 final: bool = False) -> None:
        if self.fn is None or (not force and (t - self.last < self.every_s or (inc is None and bnd is None))):
            return
        self.last = t
        inc_s = None if inc is None or not np.isfinite(inc) else float(inc) * self.unit_s
        bnd_s = None if bnd is None or not np.isfinite(bnd) else float(bnd) * self.unit_s
        d = {"time_s": float(t), "incumbent_s": inc_s, "bound_s": bnd_s, "gap": mip_gap(inc_s, bnd_s)}
        if final:
            d["final"] = True
        self.fn(d)


def mip_gap(inc: float | None, bnd: float | None) -> float | None:
    """Relative MIP gap of seed 000 Sec. II-B, ``(z_inc - z_bound) / |z_inc|`` (0 when both are 0)."""
    if inc is None or bnd is None:
        return None
    if inc == 0.0:
        return 0.0 if bnd >= 0.0 else INF
    return max(0.0, (inc - bnd) / abs(inc))


@register("ilp")
class Ilp:
    """Seed 000's MILP (Sec. IV-B, Eq. 5-14): the makespan-optimal static partition between a single-core
    host CPU and one PUMA CIM device, with the host order of parallel ops chosen by the solver.

    Formulation choices (the paper leaves them open):

    * time unit: a power of ten of seconds putting ``M`` at 1e3..1e4 units (:func:`time_unit`; e.g. 1 µs
      for ResNet-18 on ``puma.yaml``); results and stats are in seconds, ``stats["time_unit_s"]`` records it;
    * ``M`` is Eq. 13 exactly (``sum_v max(T_host, T_acc) + sum_e T_transfer``): every active-order
      schedule's left-shifted version ends by then, so it never cuts off an optimum;
    * ``z_uv`` is continuous in ``[0, 1]`` (Eq. 9 makes it ``>= |x_u - x_v|`` and it only tightens Eq. 8,
      so relaxing its integrality is exact); an edge whose host->CIM and CIM->host transfer times differ
      gets two columns ``z_hc >= x_u - x_v``, ``z_ch >= x_v - x_u`` with Eq. 8
      ``s_v >= f_u + z_hc T_hc + z_ch T_ch`` (same row counts);
    * the Eq. 5 fixings are rows, not bounds, so that the solver's row count equals the paper's count.

    The solution's assignment and host order (host ops by solver start time, ties by topological position)
    go through :func:`~hetsim.mappers.base.make_schedule`, which recomputes exact ASAP times; so the
    schedule's makespan is at most the solver's ``T`` (up to solver tolerances).

    Args:
        time_limit_s: solver time limit (default 30 s). On a limit without any incumbent, the ``greedy``
            schedule is returned (``status`` ``time_limit``, explained in ``stats["note"]``).
        mip_rel_gap: relative gap at which the solver stops. Default 1e-6, deliberately tighter than the
            HiGHS and Gurobi default of 1e-4: ``status == "optimal"`` then means within 1e-6 of the optimum
            (what the brute-force tests check), and on seed 000's ResNet/MobileNet graphs it costs little
            (the paper's YOLOv5n never gets near either gap within minutes anyway).
        threads: solver threads (default 1: HiGHS's branch-and-bound is serial, and one thread is
            deterministic; Gurobi uses them for its parallel search).
        seed: solver random seed.
        solver: ``"highs"`` (default, highspy) or ``"gurobi"`` (gurobipy; the pip package's size-limited
            licence allows 2000 variables and 2000 constraints, counting the solver's columns and rows).
        progress: callable receiving ``{"time_s", "incumbent_s", "bound_s", "gap"}`` during the solve (at
            most every 0.25 s and at each new incumbent) and once more at the end with ``"final": True``.
        warm_start: a MIP start: an assignment (op -> device), a :class:`~hetsim.schedule.Schedule` (its
            host order is used too), or ``"greedy"`` (run the ``greedy`` mapper first and start from it).
            Default none: the solver searches on its own. On graphs with many parallel pairs HiGHS may then
            find no incumbent at all before the time limit (the greedy fallback above); a start avoids that.

    Raises (from :meth:`map`):
        MappingError: unsupported platform (see :func:`check_platform`), unknown solver, gurobipy missing,
            a licence problem, an invalid warm start, or an infeasible model.

    Source: seed 000, Sec. IV-B.
    """

    def __init__(
        self,
        time_limit_s: float = 30.0,
        mip_rel_gap: float = 1e-6,
        threads: int = 1,
        seed: int = 0,
        solver: str = "highs",
        progress: Callable[[dict], None] | None = None,
        warm_start: dict[str, str] | Schedule | str | None = None,
    ):
        if isinstance(warm_start, str) and warm_start != "greedy":
            raise MappingError(f"ilp: warm_start must be an assignment, a Schedule or 'greedy', not {warm_start!r}")
        if solver not in ("highs", "gurobi"):
            raise MappingError(f"ilp: unknown solver {solver!r}; available: highs, gurobi")
        if time_limit_s <= 0 or mip_rel_gap < 0 or threads < 1:
            raise MappingError("ilp: time_limit_s must be > 0, mip_rel_gap >= 0 and threads >= 1")
        self.time_limit_s = float(time_limit_s)
        self.mip_rel_gap = float(mip_rel_gap)
        self.threads = int(threads)
        self.seed = int(seed)
        self.solver = solver
        self.progress = progress
        self.warm_start = warm_start

    def map(self, costs: CostModel) -> Schedule:
        model = build_model(costs)
        start = self._start_vector(costs, model) if self.warm_start is not None else None
        unit = model.time_unit_s
        prog = _Progress(self.progress, unit)
        res = self._gurobi(model, start, prog) if self.solver == "gurobi" else self._highs(model, start, prog)
        prog(res.solve_time_s, res.incumbent, res.bound, force=True, final=True)
        if res.status == "infeasible":
            raise MappingError("ilp: the model is infeasible (cannot happen for a valid cost model: all-host "
                               "is always feasible); please report this")
        inc_s = None if res.incumbent is None else res.incumbent * unit
        bnd_s = None if res.bound is None else res.bound * unit
        stats = {
            "operators": len(model.ops),
            "variables": model.variables,
            "constraints": model.constraints,
            "edges": len(model.edges),
            "parallel_pairs": len(model.pairs),
            "solver_rows": model.n_rows,
            "solver_cols": model.n_cols,
            "big_m_s": model.big_m * unit,
            "time_unit_s": unit,
            "build_time_s": model.build_time_s,
            "solve_time_s": res.solve_time_s,
            "status": res.status,
            "incumbent_s": inc_s,
            "bound_s": bnd_s,
            "mip_gap": mip_gap(inc_s, bnd_s),
            "solver": self.solver,
            "solver_version": res.version,
            "time_limit_s": self.time_limit_s,
            "mip_rel_gap": self.mip_rel_gap,
            "threads": self.threads,
        }
        if res.values is None:
            from hetsim.mappers.greedy import Greedy

            fallback = Greedy().map(costs)
            stats["note"] = (f"no incumbent within the {self.time_limit_s:g} s time limit: greedy's schedule "
                             f"returned instead")
            stats["solver_makespan_s"] = None
            return make_schedule(costs, fallback.assignment, self.name, stats, order=fallback.order)
        val = res.values
        x = val[model.x0:model.x0 + len(model.ops)] > 0.5
        assignment = {v: (model.host if x[i] else model.cim) for i, v in enumerate(model.ops)}
        s = val[model.s0:model.s0 + len(model.ops)]
        key = {v: (float(s[i]), i) for i, v in enumerate(model.ops)}
        # lexicographic topological sort by solver start time: the sorted order whenever the solver's times
        # respect the edges (they do, up to tolerance), and still a valid order if they do not
        seq = nx.lexicographical_topological_sort(costs.workload.graph, key=lambda v: key[v])
        order = {model.host: [v for v in seq if assignment[v] == model.host]}
        stats["solver_makespan_s"] = float(val[model.t_col]) * unit
        stats["offloaded"] = sum(1 for d in assignment.values() if d != model.host)
        if res.note:
            stats["note"] = res.note
        sched = make_schedule(costs, assignment, self.name, stats, order=order)
        t_solver = stats["solver_makespan_s"]
        if sched.makespan_s > t_solver * (1 + 1e-6) + 1e-12:
            sched.stats["note"] = (sched.stats.get("note", "") + f" list-scheduled makespan "
                                   f"{sched.makespan_s:.9g} s exceeds the solver's T {t_solver:.9g} s "
                                   f"(solver tolerances)").strip()
        return sched

    # ------------------------------------------------------------------------------------------ warm start

    def _start_vector(self, costs: CostModel, model: IlpModel) -> np.ndarray:
        """A complete feasible point of the model for the warm start (x, o, s, f, T, z)."""
        ws = self.warm_start
        if ws == "greedy":
            from hetsim.mappers.greedy import Greedy

            ws = Greedy().map(costs)
        if isinstance(ws, Schedule):
            assignment, given = dict(ws.assignment), {model.host: list(ws.order.get(model.host, []))}
        else:
            assignment, given = dict(ws), None
        bad = [v for v in model.ops if assignment.get(v) not in (model.host, model.cim)
               or not costs.supported(v, assignment[v])]
        if bad or len(assignment) != len(model.ops):
            which = bad[0] if bad else next(iter(set(assignment) - set(model.ops)), "?")
            raise MappingError(f"ilp: the warm start does not assign every op to a device that runs it "
                               f"(e.g. {which!r})")
        used = sum(costs.need[v][model.cim] for v in model.ops if assignment[v] == model.cim)
        if used > costs.budget[model.cim]:
            raise MappingError(f"ilp: the warm start uses {used} crossbars, more than the budget (Eq. 14)")
        if given is not None and not given[model.host]:
            given = None
        try:
            st, _, _ = list_schedule(costs, assignment, given)
        except Exception as err:  # ScheduleError: an order that contradicts the DAG
            raise MappingError(f"ilp: invalid warm start: {err}") from None
        sc = 1.0 / model.time_unit_s
        n = len(model.ops)
        val = np.zeros(model.n_cols)
        xs = np.array([1.0 if assignment[v] == model.host else 0.0 for v in model.ops])
        val[model.x0:model.x0 + n] = xs
        val[model.s0:model.s0 + n] = [st[v] * sc for v in model.ops]
        # f from Eq. 7 in model units, so the equality rows hold to rounding
        t_h = np.array([costs.latency[v].get(model.host, 0.0) * sc for v in model.ops])
        t_a = np.array([costs.latency[v].get(model.cim, 0.0) * sc for v in model.ops])
        val[model.f0:model.f0 + n] = val[model.s0:model.s0 + n] + xs * t_h + (1 - xs) * t_a
        val[model.t_col] = val[model.f0:model.f0 + n].max() if n else 0.0
        for (iu, iv), (ch, cc) in zip(model.edges, model.z_cols, strict=True):
            val[ch] = max(xs[iu] - xs[iv], 0.0)
            val[cc] = max(xs[iv] - xs[iu], 0.0) if cc != ch else abs(xs[iu] - xs[iv])
        for k, (iu, iv) in enumerate(model.pairs):
            u, v = model.ops[iu], model.ops[iv]
            val[model.o0 + k] = 1.0 if (st[u], iu) <= (st[v], iv) else 0.0
        return val

    # ---------------------------------------------------------------------------------------------- HiGHS

    def _highs(self, model: IlpModel, start: np.ndarray | None, prog: _Progress) -> _Result:
        try:
            import highspy
        except ImportError:  # pragma: no cover - highspy is a dependency
            raise MappingError("ilp: highspy is not installed: pip install highspy") from None
        h = _new_highs(highspy)
        h.setOptionValue("output_flag", False)
        h.setOptionValue("time_limit", self.time_limit_s)
        h.setOptionValue("mip_rel_gap", self.mip_rel_gap)
        h.setOptionValue("threads", self.threads)
        h.setOptionValue("random_seed", self.seed)
        status = h.passModel(
            model.n_cols, model.n_rows, len(model.a_value), 2, 1, 0.0,  # 2 = row-wise matrix, 1 = minimise
            model.col_cost, model.col_lower, model.col_upper, model.row_lower, model.row_upper,
            model.a_start, model.a_index, model.a_value, model.integrality,
        )
        if status == highspy.HighsStatus.kError:  # pragma: no cover - a bug in build_model
            raise MappingError("ilp: HiGHS rejected the model")
        if start is not None:
            sol = highspy.HighsSolution()
            sol.col_value = list(start)
            sol.value_valid = True
            h.setSolution(sol)
        if prog.fn is not None:
            def on_event(e, force=False):
                d = e.data_out
                inc, bnd = float(d.mip_primal_bound), float(d.mip_dual_bound)
                prog(float(d.running_time), inc if abs(inc) < 1e300 else None, bnd if abs(bnd) < 1e300 else None,
                     force=force)

            h.cbMipInterrupt.subscribe(on_event)
            h.cbMipImprovingSolution.subscribe(lambda e: on_event(e, force=True))
        # HiGHS keeps one process-wide thread pool, sized by the first solve; a later solve asking for another
        # `threads` fails (status "Not Set") unless the pool is reset first
        highspy.Highs.resetGlobalScheduler(True)
        t0 = time.perf_counter()
        h.run()
        dt = time.perf_counter() - t0
        ms = h.getModelStatus()
        info = h.getInfo()
        have = info.primal_solution_status == 2  # kSolutionStatusFeasible
        M = highspy.HighsModelStatus
        if ms == M.kOptimal:
            st = "optimal"
        elif ms == M.kInfeasible:
            st = "infeasible"
        elif ms == M.kTimeLimit:
            st = "time_limit"
        elif have:
            st = "feasible"
        else:
            raise MappingError(f"ilp: HiGHS stopped with {h.modelStatusToString(ms)} and no solution")
        values = np.array(h.getSolution().col_value) if have and st != "infeasible" else None
        inc = float(info.objective_function_value) if values is not None else None
        bnd = float(info.mip_dual_bound) if abs(info.mip_dual_bound) < 1e300 else None
        version = f"HiGHS {h.version()}" if hasattr(h, "version") else "HiGHS"
        return _Result(st, values, inc, bnd, dt, version)

    # --------------------------------------------------------------------------------------------- Gurobi

    def _gurobi(self, model: IlpModel, start: np.ndarray | None, prog: _Progress) -> _Result:
        try:
            import gurobipy as gp
            from gurobipy import GRB
        except ImportError:
            raise MappingError("ilp: gurobipy is not installed: pip install 'hetsim[gurobi]'") from None
        try:
            env = gp.Env(empty=True)
            env.setParam("OutputFlag", 0)
            env.start()
            m = gp.Model("seed000", env=env)
            vtype = [GRB.BINARY if i else GRB.CONTINUOUS for i in model.integrality]
            ub = [GRB.INFINITY if not np.isfinite(u) else float(u) for u in model.col_upper]
            x = m.addVars(model.n_cols, lb=model.col_lower.tolist(), ub=ub, obj=model.col_cost.tolist(),
                          vtype=vtype)
            xs = [x[i] for i in range(model.n_cols)]
            st_, ix, va = model.a_start, model.a_index, model.a_value
            for r in range(model.n_rows):
                a, b = int(st_[r]), int(st_[r + 1])
                expr = gp.LinExpr(va[a:b].tolist(), [xs[j] for j in ix[a:b]])
                lo, up = float(model.row_lower[r]), float(model.row_upper[r])
                if lo == up:
                    m.addLConstr(expr, GRB.EQUAL, lo)
                elif np.isfinite(lo):
                    m.addLConstr(expr, GRB.GREATER_EQUAL, lo)
                else:
                    m.addLConstr(expr, GRB.LESS_EQUAL, up)
            m.ModelSense = GRB.MINIMIZE
            m.Params.TimeLimit = self.time_limit_s
            m.Params.MIPGap = self.mip_rel_gap
            m.Params.Threads = self.threads
            m.Params.Seed = self.seed
            if start is not None:
                for i, v in enumerate(start):
                    xs[i].Start = float(v)

            def cb(mod, where):
                if where == GRB.Callback.MIP:
                    inc = mod.cbGet(GRB.Callback.MIP_OBJBST)
                    bnd = mod.cbGet(GRB.Callback.MIP_OBJBND)
                    prog(mod.cbGet(GRB.Callback.RUNTIME), inc if abs(inc) < 1e99 else None,
                         bnd if abs(bnd) < 1e99 else None)
                elif where == GRB.Callback.MIPSOL:
                    prog(mod.cbGet(GRB.Callback.RUNTIME), mod.cbGet(GRB.Callback.MIPSOL_OBJBST),
                         mod.cbGet(GRB.Callback.MIPSOL_OBJBND), force=True)

            t0 = time.perf_counter()
            m.optimize(cb if prog.fn is not None else None)
            dt = time.perf_counter() - t0
            code = m.Status
            have = m.SolCount > 0
            if code == GRB.OPTIMAL:
                st = "optimal"
            elif code in (GRB.INFEASIBLE, GRB.INF_OR_UNBD):
                st = "infeasible"
            elif code == GRB.TIME_LIMIT:
                st = "time_limit"
            elif have:
                st = "feasible"
            else:
                raise MappingError(f"ilp: Gurobi stopped with status {code} and no solution")
            values = np.array(m.getAttr("X", xs)) if have and st != "infeasible" else None
            inc = float(m.ObjVal) if values is not None else None
            bnd = float(m.ObjBound) if have or code == GRB.OPTIMAL else None
            version = "Gurobi {}.{}.{}".format(*gp.gurobi.version())
            m.dispose()
            env.dispose()
            return _Result(st, values, inc, bnd, dt, version)
        except gp.GurobiError as err:
            if err.errno == GRB.Error.SIZE_LIMIT_EXCEEDED:
                raise MappingError(
                    f"ilp: the model ({model.n_cols} columns, {model.n_rows} rows; seed 000 count "
                    f"{model.variables} variables / {model.constraints} constraints) is too large for "
                    f"Gurobi's size-limited licence (2000 variables/constraints): {err}; use solver='highs' "
                    f"or a full licence"
                ) from None
            raise MappingError(f"ilp: Gurobi error {err.errno}: {err}") from None
