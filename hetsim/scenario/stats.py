"""Confidence intervals of a scenario's statistics: its streams' latency percentiles, mean latency, and the spread
of any statistic over independent replications (seeds).

Three intervals, each at :data:`CONFIDENCE` (two-sided):

- **a percentile** (p50, p95, p99): the distribution-free order-statistic interval. Of ``n`` independent samples of
  a continuous distribution, the number ``K`` below its ``q``-quantile ``x_q`` is binomial ``B(n, q)``; the sorted
  samples' ``l``-th and ``u``-th (1-based) bracket ``x_q`` when ``l <= K <= u - 1``, with probability
  ``F(u - 1) - F(l - 1)`` (``F`` the ``B(n, q)`` CDF). The ranks taken here are the equal-tailed ones,
  ``l`` the smallest ``k`` with ``F(k) >= alpha / 2`` and ``u - 1`` the smallest ``k`` with
  ``F(k) >= 1 - alpha / 2``, so the coverage is at least ``1 - alpha`` (H. A. David and H. N. Nagaraja, "Order
  Statistics", 3rd ed., Wiley 2003, section 7.1; W. J. Conover, "Practical Nonparametric Statistics", 3rd ed.,
  1999, section 3.2). When ``l < 1`` or ``u > n`` the sample is too small to bracket the quantile at that
  confidence: the percentile is **not determined** (:func:`min_requests`: 6 requests for p50, 72 for p95, 368 for
  p99 at 95 %).
- **the mean**: batch means (A. M. Law and W. D. Kelton, "Simulation Modeling and Analysis", 3rd ed., 2000,
  section 9.5.3): the requests in arrival order cut into ``k`` batches (:func:`batch_means`, the same batches
  the saturation trend uses), the batch means treated as ``k`` independent normal samples, the half-width
  ``t(1 - alpha/2, k - 1) x s / sqrt(k)`` (``s`` their sample standard deviation), centred on the sample mean (ours:
  ``numpy.array_split``'s batches differ in size by at most one request, so it is the batch means' mean to within
  that). Successive latencies of a queue are correlated; batch means damp that when the batches are long against
  the correlation, which a short run does not guarantee (ours: an interval from a short or saturated run is a
  rough guide; a saturated stream has no steady-state mean at all).
- **over replications** (:func:`t_interval`): ``N`` runs with independent seeds give ``N`` independent values of a
  statistic; their mean ``+- t(1 - alpha/2, N - 1) x s / sqrt(N)`` (Law and Kelton, section 9.4.1, the
  replication/deletion approach).

Ties (a latency many requests share, as every request of an idle periodic stream) leave the percentile interval's
coverage at least its nominal value (the bracket ``[x_(l), x_(u)]`` is closed); every interval collapses to the
value when every sample is equal.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

__all__ = ["CONFIDENCE", "MEAN_BATCHES", "PERCENTILES", "batch_means", "mean_ci", "min_requests", "quantile_ci",
           "quantile_ranks", "t_interval"]

#: the two-sided confidence of every interval
CONFIDENCE = 0.95
#: the batches of the batch-means interval (Law and Kelton suggest 10 to 30; ours: 10, the saturation trend's)
MEAN_BATCHES = 10
#: the latency percentiles a stream reports
PERCENTILES = (50, 95, 99)


@lru_cache(maxsize=4096)
def quantile_ranks(n: int, q: float, confidence: float = CONFIDENCE) -> tuple[int, int] | None:
    """The 1-based ranks ``(l, u)`` of the sorted sample whose values bracket the ``q``-quantile with probability at
    least ``confidence`` (module doc), or ``None`` when ``n`` samples cannot (``l < 1`` or ``u > n``).

    Args:
        n: the sample size (``>= 0``).
        q: the quantile, ``0 < q < 1`` (0.99 for p99).
        confidence: two-sided, ``0 < confidence < 1``.

    Raises:
        ValueError: ``q`` or ``confidence`` outside ``(0, 1)``, ``n < 0``.
    """
    from scipy.stats import binom

    if not (0 < q < 1 and 0 < confidence < 1) or n < 0:
        raise ValueError(f"quantile_ranks: need n >= 0 and q, confidence in (0, 1), got {n}, {q}, {confidence}")
    if n == 0:
        return None
    tail = (1 - confidence) / 2
    lo = int(binom.ppf(tail, n, q))  # the smallest k with F(k) >= tail
    hi = int(binom.ppf(1 - tail, n, q)) + 1  # u - 1 is the smallest k with F(k) >= 1 - tail
    return (lo, hi) if lo >= 1 and hi <= n else None


@lru_cache(maxsize=64)
def min_requests(q: float, confidence: float = CONFIDENCE) -> int:
    """The smallest sample size whose order statistics bracket the ``q``-quantile at ``confidence``
    (:func:`quantile_ranks` not ``None``): 6 for the median, 72 for p95, 368 for p99 at 95 %. Closed form: the
    upper rank needs ``q^n <= (1 - confidence) / 2`` and the lower ``(1 - q)^n < (1 - confidence) / 2``; the
    search starts just below it and checks each size."""
    tail = (1 - confidence) / 2
    n = max(1, int(math.log(tail) / math.log(max(q, 1 - q))) - 2)
    while quantile_ranks(n, q, confidence) is None:
        n += 1
    return n


def quantile_ci(values, q: float, confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """The order-statistic interval ``(x_(l), x_(u))`` of the ``q``-quantile of ``values`` (any order), or ``None``
    when the sample is too small (:func:`quantile_ranks`)."""
    x = np.sort(np.asarray(values, dtype=float))
    ranks = quantile_ranks(len(x), q, confidence)
    if ranks is None:
        return None
    return float(x[ranks[0] - 1]), float(x[ranks[1] - 1])


def batch_means(values, batches: int = MEAN_BATCHES) -> np.ndarray:
    """The means of ``values`` (in their order: a stream's latencies in arrival order) cut into ``batches``
    consecutive batches of sizes differing by at most one (``numpy.array_split``); shape ``(batches,)``."""
    return np.array([b.mean() for b in np.array_split(np.asarray(values, dtype=float), batches)])


def mean_ci(values, batches: int = MEAN_BATCHES, confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """The batch-means interval of the mean of ``values`` (in arrival order; module doc), or ``None`` with fewer
    than two samples per batch (``len(values) < 2 * batches``, ours)."""
    from scipy.stats import t

    x = np.asarray(values, dtype=float)
    if len(x) < 2 * batches:
        return None
    means = batch_means(x, batches)
    half = float(t.ppf(1 - (1 - confidence) / 2, batches - 1) * means.std(ddof=1) / math.sqrt(batches))
    centre = float(x.mean())
    return centre - half, centre + half


def t_interval(values, confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """The Student-t interval of the mean of independent ``values`` (one per replication):
    ``mean +- t(1 - alpha/2, N - 1) s / sqrt(N)``; ``None`` with fewer than two values or a missing one (``None``
    or NaN)."""
    from scipy.stats import t

    if any(v is None for v in values):
        return None
    x = np.asarray(values, dtype=float)
    if len(x) < 2 or np.isnan(x).any():
        return None
    half = float(t.ppf(1 - (1 - confidence) / 2, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x)))
    return float(x.mean()) - half, float(x.mean()) + half
