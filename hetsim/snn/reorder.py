"""Function-preserving neuron reordering for the range-sparse MVP (SpikeDuet Sec. III-C, IV-C).

The order of a hidden layer's neurons is functionally arbitrary: with a permutation ``p`` (new position ``i``
holds old neuron ``p[i]``), ``W_l' = W_l[p, :]``, ``b_l' = b_l[p]`` (and ``beta``, ``threshold``),
``W_{l+1}' = W_{l+1}[:, p]`` give spikes ``s_l'[t] = s_l[t][p]`` and ``W_{l+1}' s_l'[t] = W_{l+1} s_l[t]``, so
every later layer and the readout are unchanged. The order does change the cost of the range-sparse MVP
affine that reads ``s_l`` (layer ``l + 1``): ``C0 + C_L * N_L + C_P * N_P`` per timestep, with ``N_L`` launches
(contiguous ranges of active columns after merging gaps of at most ``max_gap`` columns, ``gap * C_P < C_L``)
and ``N_P`` processed columns (:func:`hetsim.snn.activity.range_counts`). ``C0`` does not depend on the order.

SpikeDuet's procedure, implemented here per hidden layer on the fit (training) split:

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
another. :class:`_SwapSearch` evaluates the deltas of all ``j`` for one ``i`` at once with numpy (one row
gather over the rows where ``i`` is active, one segmented sum over the active entries, ``O(rows)`` corrections)
and updates its state after a swap only between the active neighbours of the two positions. On the fit split
of Braille-384 (5100 rows, 384 neurons) one pass over all positions takes about a second on one core.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from numbers import Integral

import numpy as np

from hetsim.devices.efr32 import SNN_ACCELERATOR, Mvp, max_merged_gap
from hetsim.errors import InputError, WorkloadError
from hetsim.snn.activity import range_counts
from hetsim.snn.network import SNN, replay

#: weight residencies the MVP reads contiguous FP16 column ranges from (``C_P`` depends on it)
RESIDENCIES = ("sram", "flash")
#: default limit on refinement passes (the Braille networks converge in 4-7)
MAX_PASSES = 20
#: scipy linkage methods that work on a precomputed (non-Euclidean) distance
LINKAGES = ("average", "complete", "single", "weighted")


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
        Jaccard similarity used by the clustering (SpikeDuet Sec. III-C: "neuron co-activity from the training
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
    """Initial neuron order by hierarchical clustering of the co-activity (SpikeDuet Sec. III-C).

    ``scipy.cluster.hierarchy.linkage(method)`` on the condensed ``1 - Jaccard`` distance of the neurons that
    fire at least once, ``optimal_leaf_ordering`` (adjacent leaves as similar as possible), ``leaves_list``;
    then the neurons that never fire, in index order.

    Args:
        raster: bool ``[samples, T, n]`` (fit split).
        method: a scipy linkage method (``average``, ``complete``, ``single``, ``weighted``).

    Returns:
        int64 ``[n]`` permutation: new position ``i`` holds old neuron ``order[i]``.

    Raises:
        InputError: an unknown linkage method.
    """
    from scipy.cluster.hierarchy import leaves_list, linkage, optimal_leaf_ordering
    from scipy.spatial.distance import squareform

    if method not in LINKAGES:
        raise InputError(f"linkage method {method!r}: use one of {', '.join(LINKAGES)}")

    a = _rows(raster)
    fires = a.any(axis=0)
    active = np.flatnonzero(fires)
    silent = np.flatnonzero(~fires)
    if len(active) <= 2:
        return np.concatenate([active, silent]).astype(np.int64)
    dist = squareform(_jaccard_distance(coactivity(a[:, active])), checks=False)
    z = optimal_leaf_ordering(linkage(dist, method=method), dist)
    return np.concatenate([active[leaves_list(z)], silent]).astype(np.int64)


def order_cost(raster: np.ndarray, order: np.ndarray, launch_cycles: float, column_cycles: float,
               max_gap: int) -> float:
    """Mean range-sparse MVP cost ``C_L * N_L + C_P * N_P`` (cycles per row, ``C0`` omitted) of ``raster``'s
    columns in ``order``, with :func:`~hetsim.snn.activity.range_counts` (gaps of at most ``max_gap`` merged).

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
    * the active entries' rows grouped by neuron (column of the start order; ``at[position] = neuron``,
      ``pos[neuron] = position``).

    :meth:`deltas` gives the change of the total cost for swapping ``i`` with every ``j`` from one row gather
    over the rows where ``i`` is active, one segmented sum over the active entries and ``O(U)`` corrections.
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
        self.idx = np.arange(m, dtype=np.int32)
        self.prev = np.empty((U, m), np.int32)
        self.nxt = np.empty((U, m), np.int32)
        self.E = np.empty((U, m), np.float64)
        self._scan(np.arange(U))
        self.col_rem = -(self.w[:, None] * np.where(self.M, self.E, 0.0)).sum(axis=0)
        cols, rows_ = np.nonzero(self.M.T)        # active entries sorted by column (= neuron of the start order)
        self.ent_row = rows_.astype(np.intp)
        bounds = np.searchsorted(cols, np.arange(m + 1))
        self.ent_slice = [slice(int(bounds[k]), int(bounds[k + 1])) for k in range(m)]
        self.seg_neuron = np.flatnonzero(bounds[1:] > bounds[:-1])    # neurons with active entries
        self.seg_start = bounds[self.seg_neuron]
        self.at = np.arange(m)                    # at[position] = neuron (column of the start order)
        self.pos = np.arange(m)                   # pos[neuron] = position

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
        d = np.einsum("r,rj->j", wR, E[R]) - wR @ Ei[R] + self.col_rem   # einsum: no BLAS threads
        d[self.pos[self.seg_neuron]] += np.add.reduceat((w * Ei)[self.ent_row], self.seg_start)
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
        ok = notR & (m > N)
        rn, nn = np.flatnonzero(ok), N[ok]
        n2, p_ = nxt[rn, nn], P[ok]
        d += np.bincount(nn, weights=w[ok] * (F(p_, i) + F(i, n2) - F(p_, n2) - Ei[ok]), minlength=m)
        d[i] = 0.0
        return d

    def swap(self, i: int, j: int) -> None:
        """Swap positions ``i`` and ``j`` and update the state of the rows that change: in a row where ``off``
        turns inactive and ``on`` active, only positions between the active neighbours of ``off`` and those of
        ``on`` (inclusive) get new ``prev`` / ``nxt`` / ``E``."""
        M, m, prev, nxt, E, F = self.M, self.m, self.prev, self.nxt, self.E, self.F
        r = np.flatnonzero(M[:, i] != M[:, j])
        if len(r):
            was_i = M[r, i]
            off = np.where(was_i, i, j)
            on = np.where(was_i, j, i)
            op, on_ = prev[r, off], nxt[r, off]                  # old neighbours of the position turning off

            def new_prev(rr, q, offq, onq, opq):
                p = prev[rr, q]
                p = np.where(p == offq, opq, p)
                return np.where((onq < q) & (onq > p), onq, p)

            def new_nxt(rr, q, offq, onq, onxq):
                x = nxt[rr, q]
                x = np.where(x == offq, onxq, x)
                return np.where((onq > q) & (onq < x), onq, x)

            pon = new_prev(r, on, off, on, op)                   # new neighbours of the position turning on
            non = new_nxt(r, on, off, on, on_)
            lo1, hi1 = np.maximum(op, 0), np.minimum(on_, m - 1)
            lo2, hi2 = np.maximum(pon, 0), np.minimum(non, m - 1)
            overlap = (lo2 <= hi1 + 1) & (lo1 <= hi2 + 1)         # merge into window 1
            lo1, hi1 = np.where(overlap, np.minimum(lo1, lo2), lo1), np.where(overlap, np.maximum(hi1, hi2), hi1)
            n1 = hi1 - lo1 + 1
            n2 = np.where(overlap, 0, hi2 - lo2 + 1)
            rows = np.concatenate([np.arange(len(r)), np.arange(len(r))])
            lo = np.concatenate([lo1, lo2])
            n = np.concatenate([n1, n2])
            k = np.repeat(rows, n)
            q = np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n) + np.repeat(lo, n)
            rr = r[k]
            wq = self.w[rr]
            act_old = M[rr, q]
            self.col_rem += np.bincount(q, weights=np.where(act_old, wq * E[rr, q], 0.0), minlength=m)
            p_new = new_prev(rr, q, off[k], on[k], op[k])
            x_new = new_nxt(rr, q, off[k], on[k], on_[k])
            e_new = F(p_new, q) + F(q, x_new) - F(p_new, x_new)
            prev[rr, q], nxt[rr, q], E[rr, q] = p_new, x_new, e_new
            M[r, off], M[r, on] = False, True
            self.col_rem -= np.bincount(q, weights=np.where(M[rr, q], wq * e_new, 0.0), minlength=m)
        a, b = self.at[i], self.at[j]
        self.at[i], self.at[j] = b, a
        self.pos[a], self.pos[b] = j, i


@dataclass
class RefineInfo:
    """What :func:`refine_order` did: passes over the positions, swaps accepted, the mean cost
    ``C_L * N_L + C_P * N_P`` per row (cycles) before and after (tracked incrementally), and the time taken (s)."""

    passes: int = 0
    swaps: int = 0
    cost_before: float = 0.0
    cost_after: float = 0.0
    seconds: float = 0.0
    history: list[float] = field(default_factory=list)   # cost after each pass


def refine_order(raster: np.ndarray, order: np.ndarray, launch_cycles: float, column_cycles: float, max_gap: int,
                 *, seed: int | Sequence[int] = 0, max_passes: int = MAX_PASSES, time_limit_s: float | None = None,
                 ) -> tuple[np.ndarray, RefineInfo]:
    """Local-swap refinement of a neuron order (SpikeDuet Sec. III-C): minimise the mean over ``raster``'s rows
    of ``C_L * N_L + C_P * N_P`` with gap merging as :func:`~hetsim.snn.activity.range_counts`.

    Each pass visits every position ``i`` of a non-silent neuron (in a random order drawn from ``seed``), takes
    the swap partner ``j`` with the largest cost decrease (lowest ``j`` on ties) and applies it if it lowers the
    cost. Stops after a pass without an improving swap, after ``max_passes`` passes, or (checked after each
    position) once ``time_limit_s`` seconds have passed. Neurons silent on ``raster`` that ``order`` puts after
    the last firing one stay there; others move only as a firing neuron's swap partner. Only strict
    improvements are applied, so the result never costs more than ``order``.

    Args:
        raster: bool ``[samples, T, n]`` (or ``[rows, n]``), the fit split of the layer.
        order: int ``[n]`` starting permutation (new position ``i`` holds old neuron ``order[i]``).
        launch_cycles: ``C_L``; column_cycles: ``C_P``; max_gap: from :func:`~hetsim.devices.efr32.max_merged_gap`.
        seed: seeds the visiting order (``numpy.random.default_rng``); the result is deterministic given it.

    Returns:
        ``(order, info)``: the refined int64 ``[n]`` permutation and a :class:`RefineInfo`.

    Raises:
        WorkloadError: ``order`` is not a permutation of ``raster``'s columns.
        InputError: ``max_passes`` is not a non-negative integer.
    """
    t0 = time.perf_counter()
    a = _rows(raster)
    n = a.shape[1]
    order = _check_perm(order, n, "order")
    _check_passes(max_passes)
    info = RefineInfo()
    fires = a.any(axis=0)[order]               # by position
    if fires.sum() < 2:                        # nothing to reorder
        info.cost_before = info.cost_after = order_cost(a, order, launch_cycles, column_cycles, max_gap)
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
        info.history.append((search.total() + const) / total_rows)
        if stop or not improved:
            break
    info.cost_after = (search.total() + const) / total_rows
    info.seconds = time.perf_counter() - t0
    return cur, info


def _check_perm(p, n: int, what: str) -> np.ndarray:
    arr = np.asarray(p)
    if arr.ndim != 1 or len(arr) != n or not np.issubdtype(arr.dtype, np.integer) \
            or not np.array_equal(np.sort(arr), np.arange(n)):
        raise WorkloadError(f"{what} must be a permutation of 0..{n - 1} (int array of length {n}); got "
                            f"shape {arr.shape}, dtype {arr.dtype}")
    return arr.astype(np.int64)


def _check_passes(max_passes) -> int:
    if isinstance(max_passes, bool) or not isinstance(max_passes, Integral) or max_passes < 0:
        raise InputError(f"max_passes must be a non-negative integer; got {max_passes!r}")
    return int(max_passes)


def _check_perms(snn: SNN, perms: Mapping[int, np.ndarray]) -> dict[int, np.ndarray]:
    """Validated ``{hidden layer l: int64 permutation [n_l]}``; raises :class:`WorkloadError`."""
    if not isinstance(perms, Mapping):
        raise WorkloadError(f"perms must map hidden layer indices to permutations; got {type(perms).__name__}")
    out = {}
    for key, p in perms.items():
        layer = _check_hidden(snn, key)
        out[layer] = _check_perm(p, snn.layer_sizes[layer], f"{snn.name}: the permutation of layer {layer}")
    return dict(sorted(out.items()))


def _check_hidden(snn: SNN, key) -> int:
    """``key`` as a hidden layer index ``1..L-1``; raises :class:`WorkloadError` otherwise."""
    L = snn.n_layers
    if isinstance(key, bool) or not isinstance(key, Integral) or not 1 <= key <= L - 1:
        hidden = f"1..{L - 1}" if L > 1 else "none"
        raise WorkloadError(f"{snn.name}: layer {key!r} cannot be reordered: only hidden layers ({hidden}) can; "
                            f"layer 0 is the input and layer {L} the output")
    return int(key)


# --------------------------------------------------------------------------------------------- permutation

def permute_network(snn: SNN, perms: Mapping[int, np.ndarray]) -> SNN:
    """The network with its hidden neurons permuted (SpikeDuet Sec. III-C): a new :class:`SNN`, ``snn`` is not
    modified.

    For every ``l -> p`` in ``perms`` (new position ``i`` holds old neuron ``p[i]``): ``W_l' = W_l[p, :]``,
    ``b_l' = b_l[p]``, ``beta_l' = beta_l[p]``, ``threshold_l' = threshold_l[p]``, ``W_{l+1}' = W_{l+1}[:, p]``,
    and every split's recorded raster of layer ``l`` becomes ``activity[split][l][..., p]``. Labels, readout,
    LIF reset and roles are unchanged.

    Args:
        snn: the network.
        perms: ``{l: int [n_l]}`` for hidden layers ``l`` in ``1..L-1`` (the input ``l = 0`` and the output
            ``l = L`` have a fixed order).

    Raises:
        WorkloadError: a key is not a hidden layer, or a value is not a permutation of ``0..n_l-1``.
    """
    ps = _check_perms(snn, perms)
    weights = list(snn.weights)
    biases, beta, thr = list(snn.biases), list(snn.beta), list(snn.threshold)
    for layer, p in ps.items():
        k = layer - 1                              # index of W_l in the 0-based lists
        weights[k] = np.ascontiguousarray(weights[k][p, :])
        weights[k + 1] = np.ascontiguousarray(weights[k + 1][:, p])
        biases[k], beta[k], thr[k] = biases[k][p], beta[k][p], thr[k][p]
    activity = {}
    for split, rasters in snn.activity.items():
        rs = list(rasters)
        for layer, p in ps.items():
            rs[layer] = rs[layer][..., p]
        activity[split] = rs
    return snn.replace(weights=weights, biases=biases, beta=beta, threshold=thr, activity=activity,
                       labels=dict(snn.labels))


@dataclass
class SplitCheck:
    """Mismatch counts of one split (:func:`verify_permutation`); all 0 = function preserved.

    Attributes:
        split: split name; samples: its number of samples.
        spikes: spike entries (all LIF layers, ``[samples, T, n_l]``) where the permuted network's replay differs
            from the original's replay permuted.
        membrane: output-membrane entries (``[samples, T, n_L]``) that differ (bitwise, float32).
        predictions: samples whose predicted class differs.
        recorded: entries of the permuted network's recorded rasters (layers ``0..L``) that differ from its
            replay (layer 0: from the original's recorded input), not counting entries where the original's
            recorded raster already differs from the original's own replay (those are counted in
            ``recorded_baseline``: a property of the recording, e.g. rasters recorded with float32 sums that
            round differently at a threshold, not of the permutation).
    """

    split: str
    samples: int
    spikes: int = 0
    membrane: int = 0
    predictions: int = 0
    recorded: int = 0
    recorded_baseline: int = 0

    @property
    def mismatches(self) -> int:
        return self.spikes + self.membrane + self.predictions + self.recorded


@dataclass
class Verification:
    """Result of :func:`verify_permutation`: one :class:`SplitCheck` per split with recorded activity."""

    splits: dict[str, SplitCheck] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when every split has 0 mismatches (the permuted network computes the same function)."""
        return all(c.mismatches == 0 for c in self.splits.values())

    @property
    def mismatches(self) -> int:
        return sum(c.mismatches for c in self.splits.values())

    def __str__(self) -> str:
        if not self.splits:
            return "not verified (no recorded activity)"
        names = ", ".join(self.splits)
        if self.ok:
            return f"function preserved (0 mismatches on {names})"
        bad = "; ".join(f"{c.split}: {c.spikes} spikes, {c.membrane} membrane values, {c.predictions} "
                        f"predictions, {c.recorded} recorded entries" for c in self.splits.values() if c.mismatches)
        return f"FUNCTION CHANGED ({bad})"


def verify_permutation(original: SNN, permuted: SNN, perms: Mapping[int, np.ndarray]) -> Verification:
    """Check that ``permuted`` is ``original`` with hidden layers permuted by ``perms`` and computes the same
    function, on every split with recorded activity (SpikeDuet Sec. III-C: ``s_l'[t] = P s_l[t]``).

    Both networks are replayed with ``replay(..., exact_sums=True)`` (sums independent of the column order) on
    their recorded input (layer 0): the permuted spikes must equal the original spikes permuted (unpermuted
    layers: equal), the output membranes and predictions must be identical, and the permuted network's
    recorded rasters must equal its replay (:class:`SplitCheck`).

    Args:
        original, permuted: the networks; perms: ``{hidden layer l: int [n_l]}`` as for :func:`permute_network`.

    Returns:
        a :class:`Verification`; ``.ok`` is true when every count is 0.

    Raises:
        WorkloadError: the networks have different layer sizes, a split of ``original`` is missing from
            ``permuted``, or ``perms`` is invalid.
    """
    ps = _check_perms(original, perms)
    if original.layer_sizes != permuted.layer_sizes:
        raise WorkloadError(f"cannot compare {original.name} (layers {original.layer_sizes}) with "
                            f"{permuted.name} (layers {permuted.layer_sizes})")
    out = Verification()
    for split in sorted(original.activity):
        if split not in permuted.activity:
            raise WorkloadError(f"{permuted.name}: no recorded activity for split {split!r}, which "
                                f"{original.name} has")
        orec, prec = original.activity[split], permuted.activity[split]
        ro = replay(original, orec[0], exact_sums=True)
        rp = replay(permuted, prec[0], exact_sums=True)
        chk = SplitCheck(split, int(orec[0].shape[0]))
        chk.membrane = int(np.count_nonzero(ro.membrane_out != rp.membrane_out))
        chk.predictions = int(np.count_nonzero(ro.prediction != rp.prediction))
        chk.recorded = int(np.count_nonzero(prec[0] != orec[0])) if prec[0].shape == orec[0].shape \
            else int(prec[0].size)
        for layer in range(1, original.n_layers + 1):
            p = ps.get(layer)
            want = ro.spikes[layer - 1] if p is None else ro.spikes[layer - 1][..., p]
            got = rp.spikes[layer - 1]
            chk.spikes += int(np.count_nonzero(got != want))
            base = orec[layer] != ro.spikes[layer - 1]
            if p is not None:
                base = base[..., p]
            chk.recorded_baseline += int(np.count_nonzero(base))
            if prec[layer].shape != got.shape:
                chk.recorded += int(got.size)
            else:
                chk.recorded += int(np.count_nonzero((prec[layer] != got) & ~base))
        out.splits[split] = chk
    return out


# --------------------------------------------------------------------------------------------- reorder

@dataclass
class LayerReorder:
    """Reordering of one hidden layer ``l`` (its spikes are the input columns of affine layer ``l + 1``,
    ``Linear{l}`` in 0-based naming; SpikeDuet's Braille "Linear1" is ``l = 1``).

    Costs are ``C_L * N_L + C_P * N_P`` in MVP cycles per timestep (``C0`` omitted), means over the fit split's
    ``samples * T`` rows; ``plan_*`` are means per timestep on the plan (validation) split, ``nan`` when the
    network has no such split. ``*_before`` is the original order, ``*_after`` the returned one.

    Attributes:
        layer: ``l``; neurons: ``n_l``; n_out: ``n_{l+1}`` (rows of the affine layer that reads the spikes).
        silent: neurons that never fire on the fit split (placed last).
        launch_cycles, column_cycles, max_gap: ``C_L``, ``C_P`` and the merged gap used.
        fit_cost_before, fit_cost_cluster, fit_cost_after: fit-split cost of the original, the clustering and
            the returned order.
        plan_launches_before/after: ``N_L`` (launches after gap merging); plan_processed_before/after: ``N_P``;
            plan_ranges_before/after: raw ranges of active columns (no merging); plan_active: active columns.
        start: the order the returned one was refined from (``clustering``, ``identity``; ``identity`` alone
            when nothing beat the original order).
        passes, swaps: refinement passes and accepted swaps (of the refinement that produced the result).
        seconds: wall time for the layer (clustering + refinement + statistics).
    """

    layer: int
    neurons: int
    n_out: int
    silent: int
    launch_cycles: float
    column_cycles: float
    max_gap: int
    fit_cost_before: float
    fit_cost_cluster: float
    fit_cost_after: float
    plan_launches_before: float
    plan_launches_after: float
    plan_processed_before: float
    plan_processed_after: float
    plan_ranges_before: float
    plan_ranges_after: float
    plan_active: float
    start: str
    passes: int
    swaps: int
    seconds: float

    @property
    def fit_cost_change(self) -> float:
        """Relative change of the fit-split cost (``-0.38`` = 38 % cheaper)."""
        return self.fit_cost_after / self.fit_cost_before - 1 if self.fit_cost_before > 0 else 0.0


@dataclass
class ReorderResult:
    """Output of :func:`reorder`.

    Attributes:
        snn: the permuted network (:func:`permute_network`).
        perms: ``{hidden layer l: int64 [n_l]}``, new position ``i`` holds old neuron ``perms[l][i]``.
        layers: one :class:`LayerReorder` per reordered layer (``table()`` gives them as a DataFrame).
        verification: :func:`verify_permutation` of ``snn`` against the original.
        residency: weight memory ``C_P`` was taken for; seed: the refinement seed; seconds: total wall time.
    """

    snn: SNN
    perms: dict[int, np.ndarray]
    layers: list[LayerReorder]
    verification: Verification
    residency: str
    fit_split: str
    plan_split: str | None
    seed: int
    seconds: float

    def table(self):
        """The per-layer statistics as a ``pandas.DataFrame`` (one row per layer, :class:`LayerReorder`
        fields plus ``fit_cost_change``)."""
        import pandas as pd

        return pd.DataFrame([{**asdict(s), "fit_cost_change": s.fit_cost_change} for s in self.layers])

    def summary(self) -> dict:
        """Plain data (JSON-serialisable) for reports: settings, per-layer statistics, verification."""
        return {
            "residency": self.residency, "fit_split": self.fit_split, "plan_split": self.plan_split,
            "seed": self.seed, "seconds": self.seconds,
            "layers": [{**{k: (None if isinstance(v, float) and math.isnan(v) else v)
                           for k, v in asdict(s).items()}, "fit_cost_change": s.fit_cost_change}
                       for s in self.layers],
            "verification": {"ok": self.verification.ok,
                             "splits": {k: asdict(c) for k, c in self.verification.splits.items()}},
        }


def _resolve_mvp(mvp) -> Mvp:
    if getattr(mvp, "snn_engine", None) == SNN_ACCELERATOR:
        return mvp
    devices = getattr(mvp, "devices", None)
    if isinstance(devices, Mapping):               # a Platform: take its MVP
        found = [d for d in devices.values() if getattr(d, "snn_engine", None) == SNN_ACCELERATOR]
        if len(found) == 1:
            return found[0]
        raise InputError(f"platform {getattr(mvp, 'name', '?')!r} has {len(found)} MVP devices; pass the one "
                         "whose costs to use (platform.devices[name])")
    raise InputError(f"reorder needs the MVP device config (a hetsim.devices.efr32.Mvp from a platform's devices) "
                     f"or a platform with one MVP; got {type(mvp).__name__}")


def _plan_stats(raster: np.ndarray | None, perm: np.ndarray, max_gap: int) -> tuple[float, float, float, float]:
    """Mean ``N_L``, ``N_P``, raw ranges and active columns per row of ``raster[..., perm]`` (nan if none)."""
    if raster is None or raster.size == 0:
        return (math.nan,) * 4
    a = _rows(raster)[:, perm]
    nl, npr = range_counts(a, max_gap)
    raw, _ = range_counts(a, 0)
    return float(nl.mean()), float(npr.mean()), float(raw.mean()), float(a.sum(axis=1).mean())


def reorder_layer(fit: np.ndarray, launch_cycles: float, column_cycles: float, max_gap: int, *,
                  seed: int | Sequence[int] = 0, max_passes: int = MAX_PASSES,
                  time_limit_s: float | None = None) -> tuple[np.ndarray, dict]:
    """Order one layer's neurons for the range-sparse MVP (SpikeDuet Sec. III-C) from its fit-split raster.

    :func:`cluster_order`, then :func:`refine_order` from it. The refined order is kept only if it costs no
    more than the clustering order (it cannot, up to rounding); if it costs more than the original order
    (identity), the identity is refined as well and the cheaper of that and the identity is returned, so the
    result never costs more than either on ``fit``.

    Args:
        fit: bool ``[samples, T, n]`` spikes of the layer on the fit split.
        launch_cycles, column_cycles, max_gap: ``C_L``, ``C_P`` and the largest merged gap.

    Returns:
        ``(perm, info)``: int64 ``[n]`` (new position ``i`` holds old neuron ``perm[i]``) and a dict with
        ``cost_before``, ``cost_cluster``, ``cost_after`` (mean cycles per row), ``start``, ``passes``, ``swaps``.
    """
    a = _rows(fit)
    n = a.shape[1]
    ident = np.arange(n, dtype=np.int64)

    def cost(p):
        return order_cost(a, p, launch_cycles, column_cycles, max_gap)

    c_id = cost(ident)
    p_cl = cluster_order(a)
    c_cl = cost(p_cl)
    p, info = refine_order(a, p_cl, launch_cycles, column_cycles, max_gap, seed=seed, max_passes=max_passes,
                           time_limit_s=time_limit_s)
    c = cost(p)
    start = "clustering"
    if c > c_cl:                                   # rounding only: fall back to the clustering order
        p, c = p_cl, c_cl
    if c > c_id:
        p2, info2 = refine_order(a, ident, launch_cycles, column_cycles, max_gap, seed=seed,
                                 max_passes=max_passes, time_limit_s=time_limit_s)
        c2 = cost(p2)
        p, c, info, start = (p2, c2, info2, "identity") if c2 <= c_id else (ident, c_id, RefineInfo(), "identity")
    return p, {"cost_before": c_id, "cost_cluster": c_cl, "cost_after": c, "start": start,
               "passes": info.passes, "swaps": info.swaps}


def reorder(snn: SNN, mvp: Mvp, *, residency: str | dict[int, str] = "sram", layers: Sequence[int] | None = None,
            seed: int = 0, max_passes: int = MAX_PASSES, time_limit_s: float | None = None) -> ReorderResult:
    """Function-preserving reordering of an SNN's hidden neurons for the range-sparse MVP (SpikeDuet Sec. III-C).

    For each hidden layer ``l``, :func:`reorder_layer` on ``snn.split("fit")[l]`` with ``C_L =
    mvp.launch_cycles``, ``C_P = mvp.column_cycles(n_{l+1}, residency)`` (layer ``l``'s spikes are the input
    columns of affine layer ``l + 1``, which has ``n_{l+1}`` outputs) and the merged gap of
    :func:`~hetsim.devices.efr32.max_merged_gap`; then :func:`permute_network` and :func:`verify_permutation`.
    Statistics are reported on ``snn.split("plan")`` (validation split; SpikeDuet Sec. IV-C reports launches
    per timestep on inputs not used to choose the order).

    Args:
        snn: network with recorded activity (at least the fit split).
        mvp: the MVP device config (the :class:`~hetsim.devices.efr32.Mvp` among
            ``load_platform('platforms/efr32mg24.yaml').devices``); a platform with exactly one MVP is accepted too.
        residency: ``sram`` or ``flash``, where the affine layers' FP16 weights are read from (sets ``C_P``), or
            a dict hidden layer ``l`` -> residency of affine layer ``l + 1`` (see :func:`mvp_residencies`).
        layers: hidden layers to reorder (default: all, ``1..L-1``).
        seed: refinement seed (layer ``l`` uses ``[seed, l]``); the result is deterministic given it.
        max_passes, time_limit_s: refinement limits per layer (:func:`refine_order`).

    Returns:
        a :class:`ReorderResult` (permuted network, permutations, per-layer :class:`LayerReorder` list,
        verification).

    Raises:
        WorkloadError: no recorded activity for the fit split, or a layer that is not hidden.
        InputError: unknown residency, not an MVP config, bad ``max_passes``.
    """
    t0 = time.perf_counter()
    mvp = _resolve_mvp(mvp)
    per_layer = residency if isinstance(residency, dict) else None
    for res in (per_layer.values() if per_layer is not None else [residency]):
        if res not in RESIDENCIES:
            raise InputError(f"residency {res!r}: the MVP reads its weights from {' or '.join(RESIDENCIES)}")
    _check_passes(max_passes)
    if not snn.activity:
        raise WorkloadError(f"{snn.name}: no recorded spike activity; reordering needs the fit split "
                            f"({snn.roles.fit!r})")
    fit = snn.split("fit")
    plan_name = snn.roles.plan
    plan = snn.activity.get(plan_name)
    L = snn.n_layers
    if layers is None:
        layers = list(range(1, L))
    todo = sorted({_check_hidden(snn, x) for x in layers})
    perms, stats = {}, []
    for layer in todo:
        t1 = time.perf_counter()
        n, n_out = snn.layer_sizes[layer], snn.layer_sizes[layer + 1]
        c_l = float(mvp.launch_cycles)
        c_p = float(mvp.column_cycles(n_out, per_layer.get(layer, "sram") if per_layer is not None else residency))
        g = max_merged_gap(c_l, c_p, mvp.merge_gaps)
        p, info = reorder_layer(fit[layer], c_l, c_p, g, seed=[seed, layer], max_passes=max_passes,
                                time_limit_s=time_limit_s)
        ident = np.arange(n)
        pb = _plan_stats(None if plan is None else plan[layer], ident, g)
        pa = _plan_stats(None if plan is None else plan[layer], p, g)
        perms[layer] = p
        stats.append(LayerReorder(
            layer=layer, neurons=n, n_out=n_out, silent=int(n - np.count_nonzero(_rows(fit[layer]).any(axis=0))),
            launch_cycles=c_l, column_cycles=c_p, max_gap=int(g),
            fit_cost_before=info["cost_before"], fit_cost_cluster=info["cost_cluster"],
            fit_cost_after=info["cost_after"],
            plan_launches_before=pb[0], plan_launches_after=pa[0], plan_processed_before=pb[1],
            plan_processed_after=pa[1], plan_ranges_before=pb[2], plan_ranges_after=pa[2], plan_active=pb[3],
            start=info["start"], passes=info["passes"], swaps=info["swaps"], seconds=time.perf_counter() - t1))
    new = permute_network(snn, perms)
    ver = verify_permutation(snn, new, perms)
    if per_layer is not None:
        residency = ", ".join(f"Linear{k} {v}" for k, v in sorted(per_layer.items()) if k in perms) or "sram"
    return ReorderResult(snn=new, perms=perms, layers=stats, verification=ver, residency=residency,
                         fit_split=snn.roles.fit, plan_split=plan_name if plan is not None else None, seed=seed,
                         seconds=time.perf_counter() - t0)


def mvp_residencies(snn: SNN, mvp: Mvp, sram_budget_bytes: int) -> dict[int, str]:
    """Per hidden layer ``l``, where the MVP would read affine layer ``l + 1``'s FP16 weights: ``sram`` when its
    table (``n_l * n_{l+1} * mvp.weight_bytes``) fits the SRAM budget on its own, else ``flash`` (SpikeDuet:
    Braille-384's 288 KiB FP16 Linear1 is Flash-resident). Used to price ``C_P`` before the planner
    has chosen residencies."""
    sizes = snn.layer_sizes
    return {layer: "sram" if sizes[layer] * sizes[layer + 1] * mvp.weight_bytes <= sram_budget_bytes else "flash"
            for layer in range(1, snn.n_layers)}


def reorder_for_platform(snn: SNN, platform, *, residency: str = "auto", seed: int = 0) -> ReorderResult:
    """:func:`reorder` with the platform's MVP and, for ``residency="auto"``, each layer priced at the memory
    the MVP would read it from (:func:`mvp_residencies`); what ``hetsim run --reorder`` and ``hetsim reorder``
    do.

    Raises:
        ScheduleError: the permuted network's outputs differ from the original's (nothing to use).
        PlatformError, WorkloadError, InputError: see :func:`hetsim.snn.activity_costs.engines_of`, :func:`reorder`.
    """
    from hetsim.errors import ScheduleError
    from hetsim.snn.activity_costs import engines_of, sram_budget_bytes

    mvp = engines_of(platform)[1]
    res = mvp_residencies(snn, mvp, sram_budget_bytes(platform)) if residency == "auto" else residency
    r = reorder(snn, mvp, residency=res, seed=seed)
    if not r.verification.ok:
        raise ScheduleError(f"reordering {snn.name} changed its outputs: {r.verification}")
    return r


def reorder_rows(result: ReorderResult) -> tuple[list[str], list[list[str]]]:
    """The columns and rows (text cells) of :func:`format_reorder`'s table, one row per hidden layer (the HTML
    report draws the same table)."""
    r = result
    cols = ["layer", "neurons", "feeds", "max gap", "launches/t", "ranges/t", "fit cycles/t", "start", "time"]
    rows = []
    for s in r.layers:
        rows.append([str(s.layer), f"{s.neurons} ({s.silent} silent)", f"Linear{s.layer} ({s.n_out} out)",
                     str(s.max_gap) if s.max_gap < s.neurons else "all",
                     f"{s.plan_launches_before:.2f} -> {s.plan_launches_after:.2f}",
                     f"{s.plan_ranges_before:.2f} -> {s.plan_ranges_after:.2f}",
                     f"{s.fit_cost_before:,.0f} -> {s.fit_cost_after:,.0f} ({s.fit_cost_change:+.1%})",
                     s.start, f"{s.seconds:.1f} s"])
    return cols, rows
