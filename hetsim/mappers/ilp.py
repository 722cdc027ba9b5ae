"""``ilp``: the CPU-CIM ILP's mixed-integer program (Sec. IV-B, Eq. 5-14), solved exactly with HiGHS or Gurobi,
and its generalisation to a host with k accelerators.

**One accelerator (the paper's form).** On a single-core host CPU with one non-serial accelerator that has a
resident capacity (a PUMA CIM: ops keep their crossbars and overlap freely), the model is the paper's, written
as there (``x_v = 1``: op ``v`` on the host)::

    min T
    x_v in {0, 1}  (v in V_acc),     x_v = 1  (v not in V_acc)                               (Eq. 5)
    T >= f_v                                         for every sink v                        (Eq. 6)
    f_v = s_v + x_v * T_host,v + (1 - x_v) * T_acc,v (T_acc,v := 0 for v not in V_acc)       (Eq. 7)
    s_v >= f_u + z_uv * T_transfer,uv                for every edge (u, v)                   (Eq. 8)
    z_uv >= x_u - x_v,  z_uv >= x_v - x_u            for every edge (u, v)                   (Eq. 9)
    s_v >= f_u - M * (3 - x_u - x_v - o_uv)          for every parallel pair {u, v} in P     (Eq. 11)
    s_u >= f_v - M * (2 - x_u - x_v + o_uv)          for every parallel pair {u, v} in P     (Eq. 12)
    sum_{v in V_acc} (1 - x_v) * N_crossbar,v <= C                                           (Eq. 14)

with ``P`` the unordered pairs neither of which reaches the other (Eq. 10) and ``M`` of Eq. 13. Choices the
paper leaves open, all documented in :class:`Ilp`: the time unit of the model (scaled to ``M``), ``z`` continuous
in ``[0, 1]`` (exact: it only tightens Eq. 8, so an optimum has ``z_uv = |x_u - x_v|``), and two ``z`` columns
for an edge whose host->CIM and CIM->host transfer times differ. Sizes are counted as in the paper's Table I.

**k accelerators (the general form).** Any other platform whose serial devices have one unit each: the devices
``D`` are the host and the accelerators, ``D_v`` those that run op ``v`` (:attr:`~hetsim.costs.CostModel.latency`),
``S`` the serial devices (the host, an NPU: one op at a time in schedule order; a PUMA CIM is not serial)::

    min T
    x_{v,d} in {0, 1} (d in D_v),    sum_{d in D_v} x_{v,d} = 1                              (Eq. 5)
    T >= f_v                                         for every sink v                        (Eq. 6)
    f_v = s_v + sum_{d in D_v} x_{v,d} T_{v,d}                                               (Eq. 7)
    s_v >= f_u + sum_{a != b} T_{uv,ab} w_{uv,ab}    for every edge (u, v)                   (Eq. 8)
    sum_b w_{uv,ab} = x_{u,a} (a in D_u),  sum_a w_{uv,ab} = x_{v,b} (b in D_v),  w >= 0     (Eq. 9)
    s_v >= f_u - M * (3 - x_{u,d} - x_{v,d} - o_uv)  for every {u, v} in P, d in S_u,v       (Eq. 11)
    s_u >= f_v - M * (2 - x_{u,d} - x_{v,d} + o_uv)  for every {u, v} in P, d in S_u,v       (Eq. 12)
    sum_v need_{v,d} x_{v,d} <= C_d                  for every device d with a budget        (Eq. 14)

``T_{uv,ab}`` is the edge's transfer time from ``a`` to ``b`` (Eq. 4; zero for parameter edges and devices that
share a memory), ``S_u,v`` the serial devices that run both ops (a pair without one needs no ``o_uv``), ``C_d``
the device's resident capacity (crossbars, weight bytes; :attr:`~hetsim.costs.CostModel.budget`) and ``M`` Eq. 13
over the slowest device and dearest transfer, ``sum_v max_d T_{v,d} + sum_(u,v) max_{a,b} T_{uv,ab}``.

Eq. 9 here is the exact linearisation of the products ``w_{uv,ab} = x_{u,a} x_{v,b}`` over the assignment
constraints (the rows of a transportation polytope): on integral ``x`` it forces ``w`` to the product, and it
implies the ``z_{uv,ab} >= x_{u,a} + x_{v,b} - 1`` of the paper's Eq. 9 (``w_ab = x_ua - sum_{b' != b} w_ab' >=
x_ua - (1 - x_vb)``), so its LP relaxation is at least as tight. An edge with a single-device end needs no
``w``: with ``D_u = {a}``, ``w_{uv,ab} = x_{v,b}`` and Eq. 8 reads ``s_v >= f_u + sum_b T_{uv,ab} x_{v,b}``
(likewise with ``D_v = {b}``). One ``w`` row per edge is implied by the others and Eq. 5 and left out. A
cross-device edge between devices that no link joins (and that share no memory) cannot be realised: its ``w``
(or, at a single-device end, the other end's ``x``) is fixed to 0.

With one accelerator the general form is the paper's model after the substitution ``x_{v,host} = x_v``,
``x_{v,acc} = 1 - x_v``; the module keeps the paper's own form there so its Table I counts stay exact.

Source: CPU-CIM ILP, Sec. IV-B, Eq. 4-14 (the partitioning MILP of "Optimizing ML Workload Partitioning between
CPUs and CIM Accelerators for Heterogeneous Computing"); sizes as counted in its Table I.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import product

import networkx as nx
import numpy as np

from hetsim.check import fill_orders
from hetsim.costs import CostModel
from hetsim.errors import MappingError, ScheduleError
from hetsim.mappers._limits import ilp_nodes
from hetsim.mappers.base import NO_FUSION_NOTE, make_schedule, register
from hetsim.schedule import Schedule
from hetsim.sim.analytic import list_schedule

#: Big-M of Eq. 13 in model time units lies in ``[M_UNITS, 10 * M_UNITS)``: see :func:`time_unit`.
M_UNITS = 1e3

#: Relative agreement below which the two directions of an edge's transfer count as equal (one ``z``).
_SAME_TRANSFER_REL = 1e-12

INF = float("inf")

#: The two forms of :func:`build_model`: the paper's (one accelerator) and the k-accelerator generalisation.
FORMS = ("paper", "general")


@dataclass
class IlpModel:
    """The MILP in matrix form (rows of ``row_lower <= A x <= row_upper``, CSR), times in units of
    ``time_unit_s`` seconds (:func:`time_unit`).

    Column layout, paper form (CPU-CIM ILP, Eq. 5-14): ``x`` (|V|), ``o`` (|P|), ``s`` (|V|), ``f`` (|V|),
    ``T`` (1), ``z`` (one per edge, two for an edge whose transfer time depends on the direction). Rows, in
    order: Eq. 7 (|V|), Eq. 5 fixings, Eq. 6 (sinks), Eq. 8 (|E|), Eq. 9 (2 |E|), Eq. 11 (|P|), Eq. 12 (|P|),
    Eq. 14 (1).

    General form (module docstring): ``x_{v,d}`` (``sum_v |D_v|``), ``o`` (|P|), ``s``, ``f``, ``T``, then the
    ``w`` of the edges that need them (``|D_u| |D_v|`` each). Rows: Eq. 5 (|V|), Eq. 7 (|V|), Eq. 6 (sinks),
    Eq. 8 (|E|), Eq. 9 (``|D_u| + |D_v| - 1`` per edge with ``w``), Eq. 11 and Eq. 12 (one each per pair and
    serial device running both), Eq. 14 (one per device with a budget that runs some op).

    Attributes:
        form: ``"paper"`` or ``"general"`` (:data:`FORMS`).
        ops: op names in column order (topological order of the workload).
        host: the host device; ``devices``: the host, then the accelerators in platform order.
        serial: the devices whose ops get the disjunctions of Eq. 11-12 (serial, one unit each).
        runs: per op, the devices that run it (``D_v``, platform order).
        dur: per op, device -> duration in model units.
        edges: ``(u, v)`` index pairs in row order.
        pairs: ``(|P|, 2)`` int array of the pairs with an ``o_uv`` (``u < v`` in topological position): every
            parallel pair (Eq. 10) in the paper's form; in the general form those with a serial device running
            both.
        pair_devices: per pair, the serial devices its Eq. 11-12 rows are written for.
        sinks: indices of the terminal ops (Eq. 6).
        big_m: M of Eq. 13, model units.
        x_cols: per op, device -> column of its ``x``: the paper's ``x_v`` under the host's name in the paper
            form (the accelerator's indicator is ``1 - x_v``), every ``x_{v,d}`` in the general form.
        o0, s0, f0, t_col: first column of each block (``t_col``: the makespan ``T``).
        aux_cols: per edge, ``(a, b)`` -> the column that is 1 when the edge's ends run on ``a`` and ``b``: the
            paper's ``z`` (one column under both directions when the edge has one ``z``), the general ``w``.
        variables, constraints: sizes as the CPU-CIM ILP's Table I counts them: binary decisions (every ``x``,
            fixed ones too, and every ``o``) and every row.
        cim, acc, fixed, transfer: paper form only: the accelerator, ``acc[i]`` (op ``i`` in V_acc), the Eq. 5
            fixings (op index -> value of ``x``) and per edge ``(T_host->cim, T_cim->host)`` in model units.
    """

    form: str
    time_unit_s: float
    ops: list[str]
    host: str
    devices: list[str]
    serial: list[str]
    runs: list[tuple[str, ...]]
    dur: list[dict[str, float]]
    edges: list[tuple[int, int]]
    pairs: np.ndarray
    pair_devices: list[tuple[str, ...]]
    sinks: list[int]
    big_m: float
    x_cols: list[dict[str, int]]
    o0: int
    s0: int
    f0: int
    t_col: int
    aux_cols: list[dict[tuple[str, str], int]]
    variables: int
    constraints: int
    col_lower: np.ndarray
    col_upper: np.ndarray
    col_cost: np.ndarray
    integrality: np.ndarray
    row_lower: np.ndarray
    row_upper: np.ndarray
    a_start: np.ndarray
    a_index: np.ndarray
    a_value: np.ndarray
    cim: str | None = None
    acc: np.ndarray | None = None
    fixed: dict[int, int] = field(default_factory=dict)
    transfer: list[tuple[float, float]] = field(default_factory=list)
    build_time_s: float = 0.0
    meta: dict = field(default_factory=dict)

    @property
    def n_cols(self) -> int:
        return len(self.col_lower)

    @property
    def n_rows(self) -> int:
        return len(self.row_lower)

    @property
    def accelerators(self) -> list[str]:
        return self.devices[1:]

    def assignment(self, values: np.ndarray) -> dict[str, str]:
        """Op -> device of a solver solution (``x`` rounded: the paper's ``x_v > 0.5`` is the host; in the
        general form the device of the largest ``x_{v,d}``)."""
        if self.form == "paper":
            return {v: (self.host if values[self.x_cols[i][self.host]] > 0.5 else self.cim)
                    for i, v in enumerate(self.ops)}
        return {v: max(self.x_cols[i], key=lambda d: values[self.x_cols[i][d]]) for i, v in enumerate(self.ops)}

    def point(self, assignment: dict[str, str], start_s: dict[str, float], order: dict[str, list[str]]) -> np.ndarray:
        """The column vector of a schedule (a MIP start): ``x`` from ``assignment``, ``s`` from ``start_s``
        (seconds), ``f`` by Eq. 7 in model units (so its rows hold to rounding), ``T = max f``, ``z``/``w`` from the
        ends' devices, and ``o_uv = 1`` when ``u`` precedes ``v`` in ``order`` of their common serial device (by
        start, then topological position, when they share none: its rows are then inactive)."""
        sc = 1.0 / self.time_unit_s
        n = len(self.ops)
        val = np.zeros(self.n_cols)
        dev = [assignment[v] for v in self.ops]
        for i, cols in enumerate(self.x_cols):
            for d, c in cols.items():
                val[c] = 1.0 if dev[i] == d else 0.0
        s = np.array([start_s[v] * sc for v in self.ops])
        val[self.s0:self.s0 + n] = s
        val[self.f0:self.f0 + n] = s + np.array([self.dur[i][dev[i]] for i in range(n)])
        val[self.t_col] = val[self.f0:self.f0 + n].max() if n else 0.0
        for (iu, iv), cols in zip(self.edges, self.aux_cols, strict=True):
            for ab, c in cols.items():
                if ab == (dev[iu], dev[iv]):
                    val[c] = 1.0
        pos = {d: {v: k for k, v in enumerate(order.get(d, []))} for d in self.serial}
        for k, (iu, iv) in enumerate(self.pairs):
            u, v = self.ops[iu], self.ops[iv]
            d = dev[iu] if dev[iu] == dev[iv] and dev[iu] in self.pair_devices[k] else None
            first = pos[d][u] < pos[d][v] if d is not None else (start_s[u], iu) <= (start_s[v], iv)
            val[self.o0 + k] = 1.0 if first else 0.0
        return val


def check_platform(costs: CostModel) -> tuple[str, list[str]]:
    """The host and the accelerators (the other devices, in platform order), after checking the MILP models the
    platform exactly.

    Raises:
        MappingError: a serial device has more than one unit (a multi-core host CPU: the disjunctions of CPU-CIM
            ILP Eq. 11-12 model one op at a time per device; use ``cpsat``), or two channel-splitting devices
            both run some op (a DIANA-like platform: the MILP assigns whole ops, Eq. 5, and would miss channel
            splits; use ``min-cost`` or the other split-aware mappers).
    """
    plat = costs.platform
    host = costs.host
    accs = [n for n in plat.devices if n != host]
    if costs.units(host) != 1:
        raise MappingError(
            f"ilp: the CPU-CIM ILP models a single-core host CPU; host {host!r} has "
            f"{costs.units(host)} cores (use another mapper, e.g. cpsat)"
        )
    multi = {d: u for d, u in costs.serial_devices().items() if u != 1}
    if multi:
        d, u = next(iter(multi.items()))
        raise MappingError(
            f"ilp: device {d!r} runs {u} ops at once, one per unit in schedule order; the MILP's disjunctions "
            f"(CPU-CIM ILP, Eq. 11-12) model serial devices of one unit only (use another mapper, e.g. cpsat)"
        )
    split = costs.split_devices()
    if len(split) >= 2:
        shared = [v for v in costs.workload.topological_order() if _splittable(costs, v, split)]
        if shared:
            raise MappingError(
                f"ilp: platform {plat.name!r} can split an op's output channels between "
                f"{', '.join(split)} (e.g. {shared[0]!r}, {len(shared)} ops in all); the MILP assigns whole ops "
                f"(CPU-CIM ILP, Eq. 5) and would miss those mappings (use a channel-splitting mapper, e.g. "
                f"min-cost)"
            )
    return host, accs


def _splittable(costs: CostModel, op: str, split: list[str]) -> bool:
    """True when two of the channel-splitting devices ``split`` can each run a part of ``op`` (the whole op, or
    its smallest part of one output channel, which fits every per-op capacity the whole op fits, and maybe more)."""
    c_out = costs.out_channels(op)
    if c_out is None or c_out < 2:
        return False
    able = [d for d in split if d in costs.latency[op] or costs.part_latency(op, d, 1) is not None]
    return len(able) >= 2


def paper_form(costs: CostModel, accs: list[str]) -> bool:
    """True when the platform is the one the CPU-CIM ILP models (one accelerator, not serial, with a resident
    capacity: a PUMA CIM), so :func:`build_model` writes the paper's own form."""
    return len(accs) == 1 and not costs.devices[accs[0]].serial and accs[0] in costs.budget


class _Rows:
    """Rows of a sparse constraint matrix, appended in blocks (COO), packed into CSR by :meth:`csr`."""

    def __init__(self):
        self.r = 0
        self.rr: list[np.ndarray] = []
        self.cc: list[np.ndarray] = []
        self.vv: list[np.ndarray] = []
        self.lo: list[np.ndarray] = []
        self.up: list[np.ndarray] = []

    def block(self, nrows: int, rr, cc, vv, lower, upper) -> None:
        """``nrows`` rows; entry ``k`` puts ``vv[k]`` at (row ``rr[k]`` of the block, column ``cc[k]``)."""
        self.rr.append(np.asarray(rr, dtype=np.int64) + self.r)
        self.cc.append(np.asarray(cc, dtype=np.int64))
        self.vv.append(np.asarray(vv, dtype=float))
        self.lo.append(np.broadcast_to(np.asarray(lower, dtype=float), (nrows,)))
        self.up.append(np.broadcast_to(np.asarray(upper, dtype=float), (nrows,)))
        self.r += nrows

    def row(self, cols, vals, lower: float, upper: float) -> None:
        self.block(1, np.zeros(len(cols), np.int64), cols, vals, lower, upper)

    def csr(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(row_lower, row_upper, a_start, a_index, a_value)``; explicit zeros are dropped."""
        if not self.rr:
            z = np.zeros(0)
            return z, z, np.zeros(1, np.int32), np.zeros(0, np.int32), z
        rr, cc, vv = np.concatenate(self.rr), np.concatenate(self.cc), np.concatenate(self.vv)
        nz = vv != 0.0
        rr, cc, vv = rr[nz], cc[nz], vv[nz]
        order = np.lexsort((cc, rr))
        rr, cc, vv = rr[order], cc[order], vv[order]
        a_start = np.zeros(self.r + 1, dtype=np.int32)
        np.cumsum(np.bincount(rr, minlength=self.r), out=a_start[1:])
        return np.concatenate(self.lo), np.concatenate(self.up), a_start, cc.astype(np.int32), vv


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
    """The MILP for ``costs``, ready for a solver: the CPU-CIM ILP's own form (Eq. 5-14) on the platform it models
    (:func:`paper_form`), else its k-accelerator generalisation (module docstring).

    Raises:
        MappingError: a platform the MILP does not model (:func:`check_platform`), or an edge whose only possible
            placement needs a transfer between devices that no link joins.
    """
    t0 = time.perf_counter()
    host, accs = check_platform(costs)
    model = _build_paper(costs, host, accs[0]) if paper_form(costs, accs) else _build_general(costs, host, accs)
    if model.n_rows != model.constraints:  # pragma: no cover - a bug in the row blocks
        raise AssertionError(f"ilp: built {model.n_rows} rows, the count is {model.constraints}")
    model.build_time_s = time.perf_counter() - t0
    return model


def _build_paper(costs: CostModel, host: str, cim: str) -> IlpModel:
    """The CPU-CIM ILP, Eq. 5-14, as written in the paper (module docstring); sizes as in its Table I."""
    plat = costs.platform
    if plat.link_between(host, cim) is None and not plat.shares_memory(host, cim):
        raise MappingError(f"ilp: platform {plat.name!r} has no link between {host!r} and {cim!r} (Eq. 4, 8)")
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

    rows = _Rows()
    block = rows.block
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

    row_lower, row_upper, a_start, a_index, a_value = rows.csr()
    runs = [tuple(d for d in (host, cim) if d in lat[v]) for v in ops]
    dur = [{d: lat[v][d] * scale for d in runs[i]} for i, v in enumerate(ops)]
    return IlpModel(
        form="paper", time_unit_s=unit, ops=ops, host=host, devices=[host, cim], serial=[host], runs=runs, dur=dur,
        edges=edges, pairs=pairs, pair_devices=[(host,)] * p, sinks=sinks, big_m=big_m,
        x_cols=[{host: x0 + i} for i in range(n)], o0=o0, s0=s0, f0=f0, t_col=t_col,
        aux_cols=[{(host, cim): h, (cim, host): c} for h, c in z_cols],
        variables=n + p, constraints=n + len(fixed) + len(sinks) + 3 * e + 2 * p + 1,
        col_lower=col_lower, col_upper=col_upper, col_cost=col_cost, integrality=integrality,
        row_lower=row_lower, row_upper=row_upper, a_start=a_start, a_index=a_index, a_value=a_value,
        cim=cim, acc=acc, fixed=fixed, transfer=transfer,
    )


def _build_general(costs: CostModel, host: str, accs: list[str]) -> IlpModel:
    """The k-accelerator generalisation of the CPU-CIM ILP (module docstring, Eq. 5-14 generalised)."""
    plat = costs.platform
    g = costs.workload.graph
    ops = list(costs.workload.topological_order())
    n = len(ops)
    idx = {v: i for i, v in enumerate(ops)}
    devices = [host, *accs]
    lat = costs.latency
    runs = [tuple(d for d in devices if d in lat[v]) for v in ops]
    serial = [d for d in devices if costs.devices[d].serial]
    edges = sorted((idx[u], idx[v]) for u, v in g.edges)
    sinks = [i for i, v in enumerate(ops) if g.out_degree(v) == 0]
    e = len(edges)

    # Eq. 4 per edge and device pair (seconds); a pair that needs a transfer no link carries is forbidden
    trans: list[dict[tuple[str, str], float]] = []
    forbid: list[set[tuple[str, str]]] = []
    for iu, iv in edges:
        u, v = ops[iu], ops[iv]
        t: dict[tuple[str, str], float] = {}
        bad: set[tuple[str, str]] = set()
        for a, b in product(runs[iu], runs[iv]):
            if a == b or not costs.needs_transfer(u, v, a, b):
                continue
            if plat.link_between(a, b) is None:
                bad.add((a, b))
                continue
            tt = costs.transfer_time(u, v, a, b)
            if tt > 0:
                t[(a, b)] = tt
        if bad and len(bad) == len(runs[iu]) * len(runs[iv]):
            a, b = next(iter(bad))
            raise MappingError(f"ilp: edge {u!r} -> {v!r} can only run across {a!r} and {b!r}, and platform "
                               f"{plat.name!r} has no link between them (Eq. 4, 8)")
        trans.append(t)
        forbid.append(bad)

    # the pairs of Eq. 10 that a serial device runs both of: those get an o_uv and the rows of Eq. 11-12
    allp = parallel_pairs(g, ops)
    xc_dev = {d: np.array([(1 if d in r else 0) for r in runs], dtype=bool) for d in serial}
    both = {d: xc_dev[d][allp[:, 0]] & xc_dev[d][allp[:, 1]] for d in serial} if len(allp) else {}
    keep = np.zeros(len(allp), dtype=bool)
    for m_ in both.values():
        keep |= m_
    pairs = allp[keep] if len(allp) else allp
    p = len(pairs)
    pair_devices = [tuple(d for d in serial if both[d][k]) for k in np.nonzero(keep)[0]]

    # Eq. 13 generalised: the slowest device of every op and the dearest transfer of every edge
    big_m_s = float(sum(max(lat[v].values()) for v in ops) + sum(max(t.values(), default=0.0) for t in trans))
    unit = time_unit(big_m_s)
    scale = 1.0 / unit
    big_m = max(big_m_s * scale, 1.0)  # a graph of zero-time ops still needs a positive M
    dur = [{d: lat[v][d] * scale for d in runs[i]} for i, v in enumerate(ops)]
    trans = [{ab: t * scale for ab, t in tr.items()} for tr in trans]

    col = 0
    x_cols: list[dict[str, int]] = []
    for r in runs:
        x_cols.append({d: col + j for j, d in enumerate(r)})
        col += len(r)
    n_x = col
    o0 = col
    s0 = o0 + p
    f0 = s0 + n
    t_col = f0 + n
    col = t_col + 1
    aux_cols: list[dict[tuple[str, str], int]] = []
    for k, (iu, iv) in enumerate(edges):
        if len(runs[iu]) > 1 and len(runs[iv]) > 1 and (trans[k] or forbid[k]):
            aux_cols.append({ab: col + j for j, ab in enumerate(product(runs[iu], runs[iv]))})
            col += len(runs[iu]) * len(runs[iv])
        else:
            aux_cols.append({})
    n_cols = col
    col_lower = np.zeros(n_cols)
    col_upper = np.full(n_cols, INF)
    col_upper[:s0] = 1.0  # x, o
    col_upper[t_col + 1:] = 1.0  # w
    col_cost = np.zeros(n_cols)
    col_cost[t_col] = 1.0
    integrality = np.zeros(n_cols, dtype=np.int32)
    integrality[:s0] = 1
    for k, (iu, iv) in enumerate(edges):  # forbidden pairs (no link): w = 0, or the free end's x = 0
        for a, b in forbid[k]:
            if aux_cols[k]:
                col_upper[aux_cols[k][a, b]] = 0.0
            elif len(runs[iu]) == 1:
                col_upper[x_cols[iv][b]] = 0.0
            else:
                col_upper[x_cols[iu][a]] = 0.0

    rows = _Rows()
    row = rows.row
    # Eq. 5: sum_d x_{v,d} = 1
    for i in range(n):
        row(list(x_cols[i].values()), [1.0] * len(runs[i]), 1.0, 1.0)
    # Eq. 7: f_v - s_v - sum_d T_{v,d} x_{v,d} = 0
    for i in range(n):
        row([f0 + i, s0 + i, *x_cols[i].values()], [1.0, -1.0, *(-dur[i][d] for d in x_cols[i])], 0.0, 0.0)
    # Eq. 6: T - f_v >= 0
    for i in sinks:
        row([t_col, f0 + i], [1.0, -1.0], 0.0, INF)
    # Eq. 8: s_v - f_u - (transfer term) >= constant
    for k, (iu, iv) in enumerate(edges):
        cols, vals, const = [s0 + iv, f0 + iu], [1.0, -1.0], 0.0
        tr = trans[k]
        if aux_cols[k]:
            for ab, t in tr.items():
                cols.append(aux_cols[k][ab])
                vals.append(-t)
        elif len(runs[iu]) == 1 and len(runs[iv]) == 1:
            const = tr.get((runs[iu][0], runs[iv][0]), 0.0)
        elif len(runs[iu]) == 1:  # w_{uv,ab} = x_{v,b}
            for (_, b), t in tr.items():
                cols.append(x_cols[iv][b])
                vals.append(-t)
        else:  # D_v = {b}: w_{uv,ab} = x_{u,a} (or both ends multi-device and no transfer: no term)
            for (a, _), t in tr.items():
                cols.append(x_cols[iu][a])
                vals.append(-t)
        row(cols, vals, const, INF)
    # Eq. 9 (products w = x_u x_v): sum_b w_ab - x_{u,a} = 0 per a; sum_a w_ab - x_{v,b} = 0 per b but the last
    n_link = 0
    for k, (iu, iv) in enumerate(edges):
        w = aux_cols[k]
        if not w:
            continue
        for a in runs[iu]:
            row([x_cols[iu][a], *(w[a, b] for b in runs[iv])], [-1.0] + [1.0] * len(runs[iv]), 0.0, 0.0)
        for b in runs[iv][:-1]:
            row([x_cols[iv][b], *(w[a, b] for a in runs[iu])], [-1.0] + [1.0] * len(runs[iu]), 0.0, 0.0)
        n_link += len(runs[iu]) + len(runs[iv]) - 1
    # Eq. 11-12 per serial device d running both ops of a pair:
    #   s_v - f_u - M x_{u,d} - M x_{v,d} - M o_uv >= -3M,   s_u - f_v - M x_{u,d} - M x_{v,d} + M o_uv >= -2M
    m = big_m
    n_disj = 0
    for d in serial:
        sel = np.array([k for k in range(p) if d in pair_devices[k]], dtype=np.int64)
        q = len(sel)
        if not q:
            continue
        pu, pv = pairs[sel, 0], pairs[sel, 1]
        xu = np.array([x_cols[i][d] for i in pu], dtype=np.int64)
        xv = np.array([x_cols[i][d] for i in pv], dtype=np.int64)
        aq = np.arange(q)
        rows.block(q, np.concatenate([aq] * 5), np.concatenate([s0 + pv, f0 + pu, xu, xv, o0 + sel]),
                   np.concatenate([np.ones(q), -np.ones(q), np.full(q, -m), np.full(q, -m), np.full(q, -m)]),
                   -3 * m, INF)
        rows.block(q, np.concatenate([aq] * 5), np.concatenate([s0 + pu, f0 + pv, xu, xv, o0 + sel]),
                   np.concatenate([np.ones(q), -np.ones(q), np.full(q, -m), np.full(q, -m), np.full(q, m)]),
                   -2 * m, INF)
        n_disj += 2 * q
    # Eq. 14 per device with a resident capacity: sum_v need_{v,d} x_{v,d} <= C_d
    n_cap = 0
    for d in devices:
        if d not in costs.budget:
            continue
        on = [i for i in range(n) if d in x_cols[i]]
        if not on:
            continue
        row([x_cols[i][d] for i in on], [float(costs.need[ops[i]][d]) for i in on], -INF, float(costs.budget[d]))
        n_cap += 1

    row_lower, row_upper, a_start, a_index, a_value = rows.csr()
    return IlpModel(
        form="general", time_unit_s=unit, ops=ops, host=host, devices=devices, serial=serial, runs=runs, dur=dur,
        edges=edges, pairs=pairs, pair_devices=pair_devices, sinks=sinks, big_m=big_m,
        x_cols=x_cols, o0=o0, s0=s0, f0=f0, t_col=t_col, aux_cols=aux_cols,
        variables=n_x + p, constraints=2 * n + len(sinks) + e + n_link + n_disj + n_cap,
        col_lower=col_lower, col_upper=col_upper, col_cost=col_cost, integrality=integrality,
        row_lower=row_lower, row_upper=row_upper, a_start=a_start, a_index=a_index, a_value=a_value,
        meta={"forbidden_pairs": sum(len(b) for b in forbid)},
    )


def ilp_size(costs: CostModel) -> tuple[int, int]:
    """``(decision variables, constraints)`` of the MILP for ``costs``, counted as in the CPU-CIM ILP's Table I.

    Paper form: ``|V| + |P|`` variables (every ``x_v`` and every ``o_uv``; the continuous ``s, f, T, z`` are not
    counted) and ``|V|`` (Eq. 7) + ``|V \\ V_acc|`` (Eq. 5) + sinks (Eq. 6) + ``3 |E|`` (Eq. 8-9) + ``2 |P|``
    (Eq. 11-12) + 1 (Eq. 14) constraints. General form: every binary (``x_{v,d}``, ``o_uv``) and every row
    (:class:`IlpModel`). Builds the model without solving it.

    Raises:
        MappingError: as :func:`build_model`.
    """
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
    nodes: int | None = None  # branch-and-bound nodes explored


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
    """Relative MIP gap of the CPU-CIM ILP, Sec. II-B, ``(z_inc - z_bound) / |z_inc|`` (0 when both are 0)."""
    if inc is None or bnd is None:
        return None
    if inc == 0.0:
        return 0.0 if bnd >= 0.0 else INF
    return max(0.0, (inc - bnd) / abs(inc))



@register("ilp")
class Ilp:
    """The CPU-CIM ILP (Sec. IV-B, Eq. 5-14), generalised to k accelerators: the makespan-optimal static
    assignment of ops to a single-core host CPU and its accelerators, with the order of parallel ops on every
    serial device (the host, an NPU) chosen by the solver (module docstring: both forms and their equations).

    Which platforms: a single-core host plus any accelerators whose serial devices have one unit each. One
    non-serial accelerator with a resident capacity (a PUMA CIM) gives exactly the paper's model and its Table I
    sizes; anything else (several accelerators, an NPU, two CIM devices) the general form: ``x_{v,d}`` per
    device, one capacity row per device with a budget, disjunctions only on serial devices. Refused with a
    :class:`~hetsim.errors.MappingError`: multi-unit serial devices (a multi-core host) and platforms that split
    ops' channels between accelerators (DIANA), see :func:`check_platform`.

    Formulation choices (the paper leaves them open):

    * time unit: a power of ten of seconds putting ``M`` at 1e3..1e4 units (:func:`time_unit`; e.g. 1 µs
      for ResNet-18 on ``puma.yaml``); results and stats are in seconds, ``stats["time_unit_s"]`` records it;
    * ``M`` is Eq. 13 exactly (``sum_v max_d T_{v,d} + sum_e max T_transfer``): every active-order
      schedule's left-shifted version ends by then, so it never cuts off an optimum;
    * paper form: ``z_uv`` is continuous in ``[0, 1]`` (Eq. 9 makes it ``>= |x_u - x_v|`` and it only tightens
      Eq. 8, so relaxing its integrality is exact); an edge whose host->CIM and CIM->host transfer times differ
      gets two columns ``z_hc >= x_u - x_v``, ``z_ch >= x_v - x_u`` with Eq. 8
      ``s_v >= f_u + z_hc T_hc + z_ch T_ch`` (same row counts); the Eq. 5 fixings are rows, not bounds, so that
      the solver's row count equals the paper's count;
    * general form: the transfer products ``w_{uv,ab}`` are continuous in ``[0, 1]`` and exact through the
      assignment rows of Eq. 9 (module docstring); one ``o_uv`` per pair serves every serial device that runs
      both ops (they share at most one).

    The solution's assignment and per-device orders (each serial device's ops by solver start time, ties by
    topological position) go through :func:`~hetsim.mappers.base.make_schedule`, which recomputes exact ASAP
    times; so the schedule's makespan is at most the solver's ``T`` (up to solver tolerances).

    Args:
        time_limit_s: wall-clock limit of the solver in seconds (default none). Given alone it replaces the
            default node budget (``work_limit``); given with ``work_limit`` both apply, the first reached stops
            the solve (:mod:`hetsim.mappers._limits`). When the solve ends unproven (a limit) without an
            incumbent, or with one whose schedule is worse than ``greedy``'s or ``heft``'s, the best
            of those two schedules is returned (``status`` ``time_limit``, ``stats["fallback"]`` names it,
            ``stats["note"]`` explains); the limit bounds the solver only, ``stats["total_time_s"]`` is the
            wall time of the whole mapping.
        mip_rel_gap: relative gap at which the solver stops. Default 1e-6, deliberately tighter than the
            HiGHS and Gurobi default of 1e-4: ``status == "optimal"`` then means within 1e-6 of the optimum
            (what the brute-force tests check), and on the paper's ResNet/MobileNet graphs it costs little
            (the paper's YOLOv5n never gets near either gap within minutes anyway).
        threads: solver threads (default 1: HiGHS's branch-and-bound is serial, and one thread is
            deterministic; Gurobi uses them for its parallel search).
        seed: solver random seed.
        solver: ``"highs"`` (default, highspy) or ``"gurobi"`` (gurobipy; the pip package's size-limited
            licence allows 2000 variables and 2000 constraints, counting the solver's columns and rows).
        progress: callable receiving ``{"time_s", "incumbent_s", "bound_s", "gap"}`` (seconds; gap relative)
            during the solve (at most every 0.25 s and at each new incumbent) and once more at the end with
            ``"final": True``.
        work_limit: the deterministic budget in branch-and-bound nodes (HiGHS's ``mip_max_nodes``, Gurobi's
            ``NodeLimit``); default, unless ``time_limit_s`` alone is given, by the model's size:
            :func:`~hetsim.mappers._limits.ilp_nodes` of its nonzeros (a node's LP grows with them).
            HiGHS's search with one thread is deterministic, so a run stopped by it returns the same schedule
            on any machine; the work before the first node (presolve, the root's cuts and heuristics) is not
            counted, and a run that stops there has status ``work_limit`` too. A node limit stops with status
            ``work_limit``, a wall-clock one with ``time_limit``.
        warm_start: a MIP start: an assignment (op -> device), a :class:`~hetsim.schedule.Schedule` (its
            serial devices' orders are used too), or ``"greedy"`` (run the ``greedy`` mapper first and start from
            it). Default none: the solver searches on its own. On graphs with many parallel pairs HiGHS may then
            find no incumbent at all before the time limit (the fallback above); a start avoids that.

    ``stats``: the :class:`~hetsim.mappers.base.Mapper` keys (``status``, ``incumbent_s``, ``bound_s``,
    ``mip_gap``, ``variables``, ``constraints`` ...), plus ``form`` (``paper`` | ``general``), ``accelerators``,
    ``solver_rows``/``solver_cols``, ``big_m_s``, ``time_unit_s``, ``solver_makespan_s`` (the solver's ``T``)
    and ``offloaded`` (ops off the host).

    Raises (from :meth:`map`):
        MappingError: unsupported platform (see :func:`check_platform`), unknown solver, gurobipy missing,
            a licence problem, an invalid warm start, or an infeasible model (ops that only accelerators run do
            not fit their capacities, or need transfers no link carries).

    Source: CPU-CIM ILP, Sec. IV-B, Eq. 5-14.
    """

    def __init__(
        self,
        time_limit_s: float | None = None,
        mip_rel_gap: float = 1e-6,
        threads: int = 1,
        seed: int = 0,
        solver: str = "highs",
        progress: Callable[[dict], None] | None = None,
        warm_start: dict[str, str] | Schedule | str | None = None,
        work_limit: int | None = None,
    ):
        if isinstance(warm_start, str) and warm_start != "greedy":
            raise MappingError(f"ilp: warm_start must be an assignment, a Schedule or 'greedy', not {warm_start!r}")
        if solver not in ("highs", "gurobi"):
            raise MappingError(f"ilp: unknown solver {solver!r}; available: highs, gurobi")
        if (time_limit_s is not None and time_limit_s <= 0) or (work_limit is not None and work_limit < 1) \
                or mip_rel_gap < 0 or threads < 1:
            raise MappingError("ilp: time_limit_s must be > 0, work_limit >= 1, mip_rel_gap >= 0 and threads >= 1")
        self.time_limit_s = None if time_limit_s is None else float(time_limit_s)
        # the node budget: the one given; none under a wall-clock limit alone; else the default, set by the
        # model's size in map (ilp_nodes)
        self.work_limit = int(work_limit) if work_limit is not None else None
        self._default_nodes = work_limit is None and time_limit_s is None
        self._nodes = self.work_limit  # the node limit of the current map (the default set there)
        self.mip_rel_gap = float(mip_rel_gap)
        self.threads = int(threads)
        self.seed = int(seed)
        self.solver = solver
        self.progress = progress
        self.warm_start = warm_start

    def map(self, costs: CostModel) -> Schedule:
        if costs.fusion:  # fused groups are not modelled: map the problem without them, and say so
            sched = self.map(costs.without_fusion())
            sched.stats["fusion"] = NO_FUSION_NOTE
            return sched
        t0 = time.perf_counter()
        from hetsim.weights import weight_option_platform

        if weight_option_platform(costs.platform):
            raise MappingError(f"ilp: platform {costs.platform.name!r} offers streamed/reprogrammed weights "
                               "(memories with weights_for), which the CPU-CIM ILP's MILP does not model; use "
                               "--mapper cpsat, heft or greedy")
        model = build_model(costs)
        self._nodes = ilp_nodes(len(model.a_value)) if self._default_nodes else self.work_limit
        start = self._start_vector(costs, model) if self.warm_start is not None else None
        unit = model.time_unit_s
        prog = _Progress(self.progress, unit)
        res = self._gurobi(model, start, prog) if self.solver == "gurobi" else self._highs(model, start, prog)
        prog(res.solve_time_s, res.incumbent, res.bound, force=True, final=True)
        if res.status == "infeasible":
            if model.form == "paper":
                raise MappingError("ilp: the model is infeasible (cannot happen for a valid cost model: all-host "
                                   "is always feasible); please report this")
            raise MappingError("ilp: the model is infeasible: the ops that only accelerators run do not fit their "
                               "resident capacities (Eq. 14), or need transfers that no link carries (Eq. 8)")
        inc_s = None if res.incumbent is None else res.incumbent * unit
        bnd_s = None if res.bound is None else res.bound * unit
        stats = {
            "form": model.form,
            "accelerators": len(model.accelerators),
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
            "work_limit": self._nodes,
            "work_unit": "nodes",
            "nodes": res.nodes,
            "mip_rel_gap": self.mip_rel_gap,
            "threads": self.threads,
        }
        if res.values is None:
            stats["solver_makespan_s"] = None
            return self._fallback(costs, None, stats, t0)
        val = res.values
        assignment = model.assignment(val)
        s = val[model.s0:model.s0 + len(model.ops)]
        key = {v: (float(s[i]), i) for i, v in enumerate(model.ops)}
        # lexicographic topological sort by solver start time: the sorted order whenever the solver's times
        # respect the edges (they do, up to tolerance), and still a valid order if they do not
        seq = list(nx.lexicographical_topological_sort(costs.workload.graph, key=lambda v: key[v]))
        order = {d: [v for v in seq if assignment[v] == d] for d in model.serial}
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
        if res.status != "optimal":  # not proven: never return worse than the heuristics
            return self._fallback(costs, sched, stats, t0)
        sched.stats["total_time_s"] = time.perf_counter() - t0
        return sched

    def _fallback(self, costs: CostModel, own: Schedule | None, stats: dict, t0: float) -> Schedule:
        """``own`` (the solver's schedule, ``None`` when it found none), or the best of the ``greedy`` and ``heft``
        schedules when it is better (shorter makespan; on a tie the solver's, then greedy's). The returned
        schedule's ``stats``: ``fallback`` (the heuristic whose schedule it is, else absent), ``fallback_makespan_s``,
        ``solver_schedule_makespan_s`` (the solver's own schedule, ``None`` without one), a ``note`` saying why,
        ``incumbent_s`` and ``mip_gap`` of the returned schedule (``solver_incumbent_s``: the solver's), and
        ``total_time_s``: the wall time of the whole mapping (model building, solve, fallbacks).

        Raises:
            MappingError: no solver schedule and neither heuristic found one.
        """
        from hetsim.mappers.greedy import Greedy
        from hetsim.mappers.heft import Heft

        cands = []
        for cls in (Greedy, Heft):
            try:
                cands.append(cls().map(costs))
            except (MappingError, ScheduleError):  # a heuristic that fails is no candidate
                continue
        best = min(cands, key=lambda c: c.makespan_s, default=None)
        if best is None or (own is not None and own.makespan_s <= best.makespan_s):
            if own is None:
                raise MappingError(f"ilp: no schedule within {self._limits()}, and neither "
                                   "greedy nor heft found one")
            own.stats["total_time_s"] = time.perf_counter() - t0
            return own
        stats = dict(stats)
        why = ("no incumbent" if own is None else
               f"the solver's best schedule ({own.makespan_s * 1e3:.6g} ms) is worse than {best.mapper}'s")
        stats.update({
            "fallback": best.mapper,
            "fallback_makespan_s": best.makespan_s,
            "solver_schedule_makespan_s": None if own is None else own.makespan_s,
            "solver_incumbent_s": stats.get("incumbent_s"),
            "incumbent_s": best.makespan_s,
            "mip_gap": mip_gap(best.makespan_s, stats.get("bound_s")),
            "offloaded": sum(1 for d in best.assignment.values() if d != costs.host),
            "note": (f"{why} within {self._limits()}: {best.mapper}'s schedule returned "
                     "instead (the best of greedy and heft)"),
        })
        sched = make_schedule(costs, best.assignment, self.name, stats, order=best.order)
        sched.stats["total_time_s"] = time.perf_counter() - t0
        return sched

    def _limits(self) -> str:
        """The limits in words, e.g. ``the 200-node work limit`` (for notes and messages)."""
        parts = [f"the {self._nodes}-node work limit"] if self._nodes is not None else []
        if self.time_limit_s is not None:
            parts.append(f"the {self.time_limit_s:g} s time limit")
        return " and ".join(parts)

    # ------------------------------------------------------------------------------------------ warm start

    def _start_vector(self, costs: CostModel, model: IlpModel) -> np.ndarray:
        """A complete feasible point of the model for the warm start (:meth:`IlpModel.point`).

        Raises:
            MappingError: the start leaves an op unassigned or on a device that does not run it, exceeds a
                resident capacity (Eq. 14), splits an op, or its orders contradict the DAG.
        """
        ws = self.warm_start
        if ws == "greedy":
            from hetsim.mappers.greedy import Greedy

            ws = Greedy().map(costs)
        if isinstance(ws, Schedule):
            if any(len(p) > 1 for p in ws.parts.values()):
                raise MappingError("ilp: the warm start splits ops between devices; the MILP assigns whole ops "
                                   "(Eq. 5)")
            assignment = dict(ws.assignment)
            given = {d: list(ws.order[d]) for d in model.serial if ws.order.get(d)} or None
        else:
            assignment, given = dict(ws), None
        bad = [v for v in model.ops if assignment.get(v) not in model.devices or not costs.supported(v, assignment[v])]
        if bad or len(assignment) != len(model.ops):
            which = bad[0] if bad else next(iter(set(assignment) - set(model.ops)), "?")
            raise MappingError(f"ilp: the warm start does not assign every op to a device that runs it "
                               f"(e.g. {which!r})")
        for d, cap in costs.budget.items():
            used = sum(costs.need[v][d] for v in model.ops if assignment[v] == d)
            if used > cap:
                raise MappingError(f"ilp: the warm start uses {used} {costs.resident[d].unit} of {d!r}, more than "
                                   f"its {cap} (Eq. 14)")
        try:
            st, _, _ = list_schedule(costs, assignment, given)
        except Exception as err:  # ScheduleError: an order that contradicts the DAG, a transfer with no link
            raise MappingError(f"ilp: invalid warm start: {err}") from None
        return model.point(assignment, st, fill_orders(costs, assignment, given))

    # ---------------------------------------------------------------------------------------------- HiGHS

    def _highs(self, model: IlpModel, start: np.ndarray | None, prog: _Progress) -> _Result:
        try:
            import highspy
        except ImportError:  # pragma: no cover - highspy is a dependency
            raise MappingError("ilp: highspy is not installed: pip install highspy") from None
        h = _new_highs(highspy)
        h.setOptionValue("output_flag", False)
        if self.time_limit_s is not None:
            h.setOptionValue("time_limit", self.time_limit_s)
        if self._nodes is not None:
            h.setOptionValue("mip_max_nodes", self._nodes)
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
        elif ms == M.kSolutionLimit:  # mip_max_nodes (the only solution-count limit set)
            st = "work_limit"
        elif have:
            st = "feasible"
        else:
            raise MappingError(f"ilp: HiGHS stopped with {h.modelStatusToString(ms)} and no solution")
        values = np.array(h.getSolution().col_value) if have and st != "infeasible" else None
        inc = float(info.objective_function_value) if values is not None else None
        bnd = float(info.mip_dual_bound) if abs(info.mip_dual_bound) < 1e300 else None
        version = f"HiGHS {h.version()}" if hasattr(h, "version") else "HiGHS"
        return _Result(st, values, inc, bnd, dt, version, nodes=int(info.mip_node_count))

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
            m = gp.Model("cpu_cim_ilp", env=env)
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
            if self.time_limit_s is not None:
                m.Params.TimeLimit = self.time_limit_s
            if self._nodes is not None:
                m.Params.NodeLimit = self._nodes
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
            elif code == GRB.NODE_LIMIT:
                st = "work_limit"
            elif have:
                st = "feasible"
            else:
                raise MappingError(f"ilp: Gurobi stopped with status {code} and no solution")
            values = np.array(m.getAttr("X", xs)) if have and st != "infeasible" else None
            inc = float(m.ObjVal) if values is not None else None
            bnd = float(m.ObjBound) if have or code == GRB.OPTIMAL else None
            version = "Gurobi {}.{}.{}".format(*gp.gurobi.version())
            nodes = int(m.NodeCount)
            m.dispose()
            env.dispose()
            return _Result(st, values, inc, bnd, dt, version, nodes=nodes)
        except gp.GurobiError as err:
            if err.errno == GRB.Error.SIZE_LIMIT_EXCEEDED:
                raise MappingError(
                    f"ilp: the model ({model.n_cols} columns, {model.n_rows} rows; CPU-CIM ILP Table I count "
                    f"{model.variables} variables / {model.constraints} constraints) is too large for "
                    f"Gurobi's size-limited licence (2000 variables/constraints): {err}; use solver='highs' "
                    f"or a full licence"
                ) from None
            raise MappingError(f"ilp: Gurobi error {err.errno}: {err}") from None
