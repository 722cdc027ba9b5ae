"""Function-preserving neuron reordering for the range-sparse MVP (seed 001 Sec. III-C, IV-C).

The order of a hidden layer's neurons is functionally arbitrary: with a permutation ``p`` (new position ``i``
holds old neuron ``p[i]``), ``W_l' = W_l[p, :]``, ``b_l' = b_l[p]`` (and ``beta``, ``threshold``),
``W_{l+1}' = W_{l+1}[:, p]`` give spikes ``s_l'[t] = s_l[t][p]`` and ``W_{l+1}' s_l'[t] = W_{l+1} s_l[t]``, so
every later layer and the readout are unchanged. The order does change the cost of the range-sparse MVP
affine that reads ``s_l`` (layer ``l + 1``): ``C0 + C_L * N_L + C_P * N_P`` per timestep, with ``N_L`` launches
(contiguous ranges of active columns after merging gaps of at most ``max_gap`` columns, ``gap * C_P < C_L``)
and ``N_P`` processed columns (:func:`hetsim.snn.costs.range_counts`). ``C0`` does not depend on the order.

Seed 001's procedure, implemented here per hidden layer on the fit (training) split:

1. co-activity of the layer's neurons (:func:`coactivity`);
2. initial order by hierarchical clustering: average linkage on the distance ``1 - Jaccard``, then
   ``optimal_leaf_ordering`` (scipy); neurons that never fire on the fit split go last, in index order (they are
   never an active column, so they never cost anything);
3. refinement by local swaps of two positions that minimise the mean of ``C_L * N_L + C_P * N_P`` over the
   fit rows (``samples * T``), with gap merging exactly as ``range_counts`` (:func:`refine_order`).

Cost decomposition used by the refinement (exact, equal to ``range_counts``): per row, ``C_L * N_L + C_P * N_P
= C_P * nnz + sum over active positions q of h(q)`` with ``h(q) = C_L`` if ``q`` is the row's first active
position, else ``f(q - q_prev - 1)`` where ``q_prev`` is the previous active position and ``f(k) = C_P * k`` if
``k <= max_gap`` (the gap is merged: processed) else ``C_L`` (a new launch). ``nnz`` does not depend on the
order, so a swap of positions ``i`` and ``j`` changes only the rows in which exactly one of the two columns is
active, and in those only the terms next to ``i`` and ``j``: moving an active column out of a gap and into
another. :class:`_SwapSearch` evaluates the deltas of all ``j`` for one ``i`` at once with numpy (one matrix
slice over the rows where ``i`` is active, one matrix-vector product over the others).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from hetsim.errors import WorkloadError
from hetsim.snn.costs import range_counts

RESIDENCIES = ("sram", "flash")


# --------------------------------------------------------------------------------------------- statistics

def _rows(raster: np.ndarray) -> np.ndarray:
    """bool ``[..., n]`` -> bool ``[rows, n]`` (one row per sample and timestep)."""
    a = np.asarray(raster, dtype=bool)
    if a.ndim < 1:
        raise WorkloadError(f"a spike raster needs at least one axis (neurons); got shape {a.shape}")
    return a.reshape(-1, a.shape[-1])


def coactivity(raster: np.ndarray) -> np.ndarray:
    """Co-activation statistics of a layer's neurons on a split.

    Args:
        raster: bool ``[samples, T, n]`` spikes (any leading axes; each ``(sample, t)`` is one row).

    Returns:
        float64 ``[n, n]``: ``C[a, b]`` = fraction of rows (timesteps) in which neurons ``a`` and ``b`` both
        fire; the diagonal is each neuron's firing rate. ``C[a, b] / (C[a, a] + C[b, b] - C[a, b])`` is the
        Jaccard similarity used by the clustering (seed 001 Sec. III-C: "neuron co-activity from the training
        split"). All zeros for an empty raster.
    """
    a = _rows(raster)
    if a.shape[0] == 0:
        return np.zeros((a.shape[1], a.shape[1]))
    x = a.astype(np.float64)
    return (x.T @ x) / a.shape[0]


def _jaccard_distance(c: np.ndarray) -> np.ndarray:
    """``1 - Jaccard`` from a co-activity matrix (:func:`coactivity`) of neurons that all fire: ``[m, m]``."""
    d = np.diag(c)
    union = d[:, None] + d[None, :] - c
    dist = 1.0 - np.divide(c, union, out=np.zeros_like(c), where=union > 0)
    dist = np.clip((dist + dist.T) / 2, 0.0, 1.0)
    np.fill_diagonal(dist, 0.0)
    return dist


def cluster_order(raster: np.ndarray, method: str = "average") -> np.ndarray:
    """Initial neuron order by hierarchical clustering of the co-activity (seed 001 Sec. III-C).

    ``scipy.cluster.hierarchy.linkage(method)`` on the condensed ``1 - Jaccard`` distance of the neurons that
    fire at least once, ``optimal_leaf_ordering`` (adjacent leaves as similar as possible), ``leaves_list``;
    then the neurons that never fire, in index order.

    Args:
        raster: bool ``[samples, T, n]`` (fit split).
        method: a scipy linkage method (``average``, ``complete``, ``single``, ``weighted``).

    Returns:
        int64 ``[n]`` permutation: new position ``i`` holds old neuron ``order[i]``.
    """
    from scipy.cluster.hierarchy import leaves_list, linkage, optimal_leaf_ordering
    from scipy.spatial.distance import squareform

    a = _rows(raster)
    n = a.shape[1]
    fires = a.any(axis=0)
    active = np.flatnonzero(fires)
    silent = np.flatnonzero(~fires)
    if len(active) <= 2:
        return np.concatenate([active, silent]).astype(np.int64)
    dist = squareform(_jaccard_distance(coactivity(a[:, active])), checks=False)
    z = optimal_leaf_ordering(linkage(dist, method=method), dist)
    order = np.concatenate([active[leaves_list(z)], silent]).astype(np.int64)
    assert len(order) == n
    return order


def order_cost(raster: np.ndarray, order: np.ndarray, launch_cycles: float, column_cycles: float,
               max_gap: int) -> float:
    """Mean range-sparse MVP cost ``C_L * N_L + C_P * N_P`` (cycles per row, ``C0`` omitted) of ``raster``'s
    columns in ``order``, with :func:`~hetsim.snn.costs.range_counts` (gaps of at most ``max_gap`` merged).

    Args:
        raster: bool ``[samples, T, n]`` (or ``[rows, n]``); order: int ``[n]`` permutation.
    """
    a = _rows(raster)
    if a.shape[0] == 0:
        return 0.0
    nl, npr = range_counts(a[:, np.asarray(order)], max_gap)
    return float(launch_cycles * nl.mean() + column_cycles * npr.mean())


# --------------------------------------------------------------------------------------------- swap search

class _SwapSearch:
    """Best-improvement swap search over ``m`` column positions (module docstring, "Cost decomposition").

    State, for ``U`` distinct non-silent rows with multiplicities ``w`` and the columns in the current order:

    * ``M`` bool ``[U, m]``; ``prev`` / ``nxt`` int32 ``[U, m]``: the previous / next active position strictly
      before / after each position (``none_prev`` / ``none_next`` when there is none);
    * ``E`` float64 ``[U, m]``: ``F(prev, q) + F(q, nxt) - F(prev, nxt)``, the change of the row's cost
      when position ``q`` is made active if it is inactive, minus the change when it is made inactive if it is
      active (``F(a, b)`` is the cost of active position ``b`` following active position ``a``: ``tab[b - a - 1]``;
      gaps ``0..max_gap`` cost ``C_P * gap``, longer ones and a missing ``a`` (the row's first launch) ``C_L``,
      a missing ``b`` 0);
    * ``col_rem[q] = -sum over rows where q is active of w * E``: the total change for removing column ``q``;
    * the active entries grouped by neuron (``ent_row``; ``ent_pos`` = current position of their neuron).

    :meth:`deltas` gives the change of the total cost for swapping ``i`` with every ``j`` from one row gather
    over the rows where ``i`` is active, one ``bincount`` over the active entries and ``O(U)`` corrections.
    """

    def __init__(self, rows: np.ndarray, weights: np.ndarray, launch: float, column: float, max_gap: int):
        self.M = np.ascontiguousarray(rows, dtype=bool)
        self.w = np.asarray(weights, dtype=np.float64)
        U, m = self.M.shape
        self.m = m
        self.none_prev = -(m + 1)                 # gap to any real position: m..2m-1 (> any real gap)
        self.none_next = 3 * m + 3                # gap from any real position or none_prev: >= 2m + 2
        g = int(min(max_gap, m - 1))              # real gaps are at most m - 2
        tab = np.full(4 * m + 5, float(launch))
        tab[: g + 1] = column * np.arange(g + 1)
        tab[2 * m + 2:] = 0.0
        self.tab = tab
        self.launch = float(launch)
        self.idx = np.arange(m, dtype=np.int32)
        self.prev = np.empty((U, m), np.int32)
        self.nxt = np.empty((U, m), np.int32)
        self.E = np.empty((U, m), np.float64)
        self._scan(np.arange(U))
        self.col_rem = -(self.w[:, None] * np.where(self.M, self.E, 0.0)).sum(axis=0)
        cols, rows_ = np.nonzero(self.M.T)        # active entries sorted by column (= neuron of the start order)
        self.ent_row = rows_.astype(np.int64)
        self.ent_pos = cols.astype(np.int64)
        bounds = np.searchsorted(cols, np.arange(m + 1))
        self.ent_slice = [slice(int(bounds[k]), int(bounds[k + 1])) for k in range(m)]
        self.at = np.arange(m)                    # at[position] = neuron (column of the start order)

    def F(self, a, b):
        """Cost of active position ``b`` following active position ``a``: ``tab[b - a - 1]``."""
        return self.tab[b - a - 1]

    def _scan(self, r: np.ndarray) -> None:
        """Recompute ``prev``, ``nxt``, ``E`` of rows ``r``."""
        Mr = self.M[r]
        k = len(r)
        last = np.maximum.accumulate(np.where(Mr, self.idx, self.none_prev), axis=1)
        prev = np.empty((k, self.m), np.int32)
        prev[:, 0] = self.none_prev
        prev[:, 1:] = last[:, :-1]
        first = np.minimum.accumulate(np.where(Mr, self.idx, self.none_next)[:, ::-1], axis=1)[:, ::-1]
        nxt = np.empty((k, self.m), np.int32)
        nxt[:, -1] = self.none_next
        nxt[:, :-1] = first[:, 1:]
        self.prev[r], self.nxt[r] = prev, nxt
        self.E[r] = self.F(prev, self.idx) + self.F(self.idx, nxt) - self.F(prev, nxt)

    def total(self) -> float:
        """``sum over rows of w * sum over active positions of h`` (the order-dependent part of the cost)."""
        h = np.where(self.M, self.F(self.prev, self.idx), 0.0)
        return float(self.w @ h.sum(axis=1))

    def deltas(self, i: int) -> np.ndarray:
        """Change of :meth:`total` for swapping position ``i`` with each position ``j``: float64 ``[m]`` (0 at
        ``j = i``)."""
        w, prev, nxt, E, F, m = self.w, self.prev, self.nxt, self.E, self.F, self.m
        R = self.ent_row[self.ent_slice[self.at[i]]]            # rows where i is active
        Ei = E[:, i]
        wR = w[R]
        # rows where i is active and j is not: i leaves its gap (-E[r, i]) and j fills its own (E[r, j]);
        # rows where j is active and i is not: j leaves its gap (col_rem minus the rows in R) and i fills its own
        # (E[r, i]); w * E[:, i] over the active entries covers both the second part and the masking of the
        # first (rows where both are active)
        d = wR @ E[R] - wR @ Ei[R] + self.col_rem
        d += np.bincount(self.ent_pos, weights=(w * Ei)[self.ent_row], minlength=m)
        # rows in R, j in i's own gap (a1, b1): j's neighbours are a1 and b1, not i
        a1, b1 = prev[R, i], nxt[R, i]
        lo = np.maximum(a1 + 1, 0)
        hi = np.minimum(b1, m)                                   # exclusive
        n = hi - lo
        tot = int(n.sum())
        if tot:
            rr = np.repeat(np.arange(len(R)), n)
            j = np.arange(tot) - np.repeat(np.cumsum(n) - n, n) + lo[rr]
            A, B = a1[rr], b1[rr]
            fix = F(A, j) + F(j, B) - F(A, B) - E[R[rr], j]
            d += np.bincount(j, weights=wR[rr] * fix, minlength=m)
        # rows not in R, j = the previous / next active of i: i's gap then ends at j's own neighbour
        notR = np.ones(len(w), bool)
        notR[R] = False
        P, N = prev[:, i], nxt[:, i]
        ok = notR & (P >= 0)
        rp, pp = np.flatnonzero(ok), P[ok]
        p2, n_ = prev[rp, pp], N[ok]
        d += np.bincount(pp, weights=w[ok] * (F(p2, i) + F(i, n_) - F(p2, n_) - Ei[ok]), minlength=m)
        ok = notR & (N < m)
        rn, nn = np.flatnonzero(ok), N[ok]
        n2, p_ = nxt[rn, nn], P[ok]
        d += np.bincount(nn, weights=w[ok] * (F(p_, i) + F(i, n2) - F(p_, n2) - Ei[ok]), minlength=m)
        d[i] = 0.0
        return d

    def swap(self, i: int, j: int) -> None:
        """Swap positions ``i`` and ``j`` and update the state of the rows that change."""
        M = self.M
        r = np.flatnonzero(M[:, i] != M[:, j])
        wr = self.w[r][:, None]
        self.col_rem += (wr * np.where(M[r], self.E[r], 0.0)).sum(axis=0)
        M[:, [i, j]] = M[:, [j, i]]
        self._scan(r)
        self.col_rem -= (wr * np.where(M[r], self.E[r], 0.0)).sum(axis=0)
        a, b = self.at[i], self.at[j]
        self.ent_pos[self.ent_slice[a]] = j
        self.ent_pos[self.ent_slice[b]] = i
        self.at[i], self.at[j] = b, a


@dataclass
class RefineInfo:
    """What :func:`refine_order` did: passes over the positions, swaps accepted, the mean cost
    ``C_L * N_L + C_P * N_P`` per row (cycles) before and after (tracked incrementally), and the time taken (s)."""

    passes: int = 0
    swaps: int = 0
    cost_before: float = 0.0
    cost_after: float = 0.0
    seconds: float = 0.0


def refine_order(raster: np.ndarray, order: np.ndarray, launch_cycles: float, column_cycles: float, max_gap: int,
                 *, seed: int = 0, max_passes: int = 20, time_limit_s: float | None = None,
                 ) -> tuple[np.ndarray, RefineInfo]:
    """Local-swap refinement of a neuron order (seed 001 Sec. III-C): minimise the mean over ``raster``'s rows
    of ``C_L * N_L + C_P * N_P`` with gap merging as :func:`~hetsim.snn.costs.range_counts`.

    Each pass visits every position ``i`` of a non-silent neuron (in a random order drawn from ``seed``), takes
    the swap partner ``j`` with the largest cost decrease (lowest ``j`` on ties) and applies it if it lowers the
    cost. Stops after a pass without an improving swap, after ``max_passes`` passes, or (checked after each
    position) once ``time_limit_s`` seconds have passed. Neurons silent on ``raster`` stay where ``order`` puts
    them. Only strict improvements are applied, so the result never costs more than ``order``.

    Args:
        raster: bool ``[samples, T, n]`` (or ``[rows, n]``), the fit split of the layer.
        order: int ``[n]`` starting permutation (new position ``i`` holds old neuron ``order[i]``).
        launch_cycles: ``C_L``; column_cycles: ``C_P``; max_gap: from :func:`~hetsim.snn.costs.max_merged_gap`.

    Returns:
        ``(order, info)``: the refined int64 ``[n]`` permutation and a :class:`RefineInfo`.

    Raises:
        WorkloadError: ``order`` is not a permutation of ``raster``'s columns.
    """
    t0 = time.perf_counter()
    a = _rows(raster)
    n = a.shape[1]
    order = _check_perm(order, n, "order")
    info = RefineInfo()
    fires = a.any(axis=0)[order]               # by position
    if fires.sum() < 2:
        info.seconds = time.perf_counter() - t0
        return order, info
    m = int(np.flatnonzero(fires)[-1]) + 1      # positions after the last firing neuron never change
    x = a[:, order[:m]]
    x = x[x.any(axis=1)]
    rows, counts = np.unique(x, axis=0, return_counts=True)
    total_rows = a.shape[0]
    tol = 1e-9 * (abs(launch_cycles) + abs(column_cycles)) * max(1, total_rows)
    search = _SwapSearch(rows, counts, launch_cycles, column_cycles, max_gap)
    const = column_cycles * float(x.sum())     # C_P * nnz: the same in every order
    info.cost_before = (search.total() + const) / total_rows
    rng = np.random.default_rng(seed)
    cur = order.copy()
    fires = fires[:m].copy()
    deadline = None if time_limit_s is None else t0 + time_limit_s
    stop = False
    for _ in range(max_passes):
        info.passes += 1
        improved = False
        for i in rng.permutation(m):
            if not fires[i]:
                continue                         # a silent neuron moves only as some firing neuron's partner
            d = search.deltas(int(i))
            j = int(np.argmin(d))
            if d[j] < -tol:
                search.swap(int(i), j)
                cur[[i, j]] = cur[[j, i]]
                fires[[i, j]] = fires[[j, i]]
                info.swaps += 1
                improved = True
            if deadline is not None and time.perf_counter() > deadline:
                stop = True
                break
        if stop or not improved:
            break
    info.cost_after = (search.total() + const) / total_rows
    out = cur
    info.seconds = time.perf_counter() - t0
    return out.astype(np.int64), info


def _check_perm(p, n: int, what: str) -> np.ndarray:
    arr = np.asarray(p)
    if arr.ndim != 1 or len(arr) != n or not np.issubdtype(arr.dtype, np.integer) \
            or not np.array_equal(np.sort(arr), np.arange(n)):
        raise WorkloadError(f"{what} must be a permutation of 0..{n - 1} (int array of length {n}); got "
                            f"shape {arr.shape}, dtype {arr.dtype}")
    return arr.astype(np.int64)
