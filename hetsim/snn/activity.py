"""Statistics of recorded spike rasters that SNN costs depend on (the front end's side of the activity-aware
cost model): contiguous ranges of active columns, with gap merging, and the columns' firing order.

The cycle formulas that turn these counts into time are the devices' (:mod:`hetsim.devices.efr32`).
"""

from __future__ import annotations

import numpy as np


def range_counts(A: np.ndarray, max_gap: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Launches and processed columns of a range-sparse MVP affine, per row of ``A``.

    Args:
        A: bool ``[..., n]`` active input columns (e.g. ``[samples, T, n_in]``).
        max_gap: gaps of at most this many inactive columns between two ranges are merged (processed, not
            skipped); 0 = no merging (:func:`hetsim.devices.efr32.max_merged_gap` gives the MVP's).

    Returns:
        ``(N_L, N_P)``, int64 ``[...]``: the number of launches (ranges after merging) and of columns
        processed (active columns plus merged gap columns). A silent row has ``N_L = N_P = 0``.

    Example: ``A = 1101000011`` with ``max_gap = 0`` -> ranges ``11``, ``1``, ``11``: ``N_L = 3``, ``N_P = 5``;
    with ``max_gap = 1`` the 1-column gap merges: ``N_L = 2``, ``N_P = 6``.
    """
    A = np.asarray(A, dtype=bool)
    n = A.shape[-1]
    j = np.arange(n)
    last = np.maximum.accumulate(np.where(A, j, -1), axis=-1)        # last active index at or before j
    prev = np.concatenate([np.full(A.shape[:-1] + (1,), -1), last[..., :-1]], axis=-1)  # strictly before j
    gap = np.where(A & (prev >= 0), j - prev - 1, -1)                 # inactive columns since the last active
    new_range = A & ((prev < 0) | (gap > max_gap))
    merged = np.where((gap > 0) & (gap <= max_gap), gap, 0)
    return new_range.sum(axis=-1), A.sum(axis=-1) + merged.sum(axis=-1)


def hot_order(fit_raster: np.ndarray) -> np.ndarray:
    """Columns by decreasing activity on the fit split (ties by index): the first ``k`` are the hot columns
    copied to SRAM (SpikeDuet Sec. III-D). ``fit_raster``: bool ``[samples, T, n_in]``; returns int ``[n_in]``."""
    freq = fit_raster.reshape(-1, fit_raster.shape[-1]).mean(axis=0)
    return np.argsort(-freq, kind="stable")
