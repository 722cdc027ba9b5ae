"""Cycle costs of SNN layers on the EFR32MG24 engines, per sample and timestep, from spike rasters.

All functions take a layer's *input* raster ``A``: bool ``[samples, T, n_in]`` (the spikes of the previous
layer, or the network input) and return float64 cycles ``[samples, T]``. The formulas and their sources are in
:mod:`hetsim.devices.efr32` (SpikeDuet Sec. III-B..III-D); constants come from the platform YAML.

Engines (``ENGINES``): ``m33`` = sparse Cortex-M33 (FP32, visits only active columns); ``mvp-dense`` = one MVP
launch over the whole matrix (FP16); ``mvp-range`` = range-sparse MVP, one launch per contiguous range of
active columns after gap merging (FP16). Residencies (``RESIDENCIES``): ``sram``, ``flash``, and ``flash+hot``
(M33 only: Flash FP32 table with the most often active columns, from the fit split, copied to SRAM).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from hetsim.devices.efr32 import ENGINE_M33, ENGINE_MVP_DENSE, ENGINE_MVP_RANGE, CortexM, Mvp

ENGINES = (ENGINE_M33, ENGINE_MVP_DENSE, ENGINE_MVP_RANGE)
RESIDENCIES = ("sram", "flash", "flash+hot")
MVP_ENGINES = (ENGINE_MVP_DENSE, ENGINE_MVP_RANGE)


def max_merged_gap(launch_cycles: float, column_cycles: float, merge: bool = True) -> int:
    """Largest gap (inactive columns between two active ranges) that is cheaper to process than a new launch:
    merge when ``gap * C_P < C_L`` (SpikeDuet Sec. III-B). 0 when merging is off.

    Example: ``C_L = 2510``, ``C_P = 100`` -> gaps of up to 25 columns are merged (25 * 100 = 2500 < 2510).
    """
    if not merge:
        return 0
    if column_cycles <= 0:  # processing a gap costs nothing: every gap merges
        return 10**9
    return max(0, math.ceil(launch_cycles / column_cycles) - 1)


def range_counts(A: np.ndarray, max_gap: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Launches and processed columns of a range-sparse MVP affine, per row of ``A``.

    Args:
        A: bool ``[..., n]`` active input columns (e.g. ``[samples, T, n_in]``).
        max_gap: gaps of at most this many inactive columns between two ranges are merged (processed, not
            skipped); 0 = no merging.

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


@dataclass
class LayerCosts:
    """Per-sample, per-timestep cycle costs of one affine layer (``n_out x n_in``) on every engine and
    residency, for one split's input raster ``A`` bool ``[samples, T, n_in]``.

    ``hot_cum[..., k]`` is the number of active columns among the ``k`` hottest (``k = 0..n_in``), so that any
    hot-column count is one lookup.
    """

    n_in: int
    n_out: int
    m33: CortexM
    mvp: Mvp
    active: np.ndarray           # int [S, T]
    hot_cum: np.ndarray          # int [S, T, n_in + 1]
    launches: dict[str, np.ndarray]   # residency -> N_L [S, T]
    processed: dict[str, np.ndarray]  # residency -> N_P [S, T]

    @classmethod
    def build(cls, A: np.ndarray, n_out: int, m33: CortexM, mvp: Mvp, hot: np.ndarray) -> LayerCosts:
        """Args: ``A`` bool ``[S, T, n_in]``; ``hot`` the column order of :func:`hot_order`."""
        A = np.asarray(A, dtype=bool)
        n_in = A.shape[-1]
        cum = np.concatenate([np.zeros(A.shape[:-1] + (1,), np.int32),
                              np.cumsum(A[..., hot], axis=-1, dtype=np.int32)], axis=-1)
        launches, processed = {}, {}
        for mem in ("sram", "flash"):
            g = max_merged_gap(mvp.launch_cycles, mvp.column_cycles(n_out, mem), mvp.merge_gaps)
            launches[mem], processed[mem] = range_counts(A, g)
        return cls(n_in, n_out, m33, mvp, A.sum(axis=-1), cum, launches, processed)

    def m33_cycles(self, residency: str, hot_columns: int = 0) -> np.ndarray:
        """Sparse M33 affine: ``C_call + N_act * C_col + n_out * (N_sram * c_sram + N_flash * c_flash)``
        cycles ``[S, T]`` (SpikeDuet Sec. III-B, III-D), where ``N_sram`` counts the active columns read from
        SRAM (all of them for ``sram``, the active hot ones for ``flash+hot``, none for ``flash``)."""
        m, act = self.m33, self.active.astype(np.float64)
        if residency == "sram":
            n_sram = act
        elif residency == "flash":
            n_sram = np.zeros_like(act)
        else:
            n_sram = self.hot_cum[..., min(hot_columns, self.n_in)].astype(np.float64)
        return (m.affine_call_cycles + act * m.col_cycles
                + self.n_out * (n_sram * m.elem_cycles.sram + (act - n_sram) * m.elem_cycles.flash))

    def mvp_dense_cycles(self, residency: str) -> np.ndarray:
        """Dense MVP affine: ``C0 + C_L + n_in * C_P`` cycles, the same at every timestep."""
        v = self.mvp
        c = v.call_cycles + v.launch_cycles + self.n_in * v.column_cycles(self.n_out, residency)
        return np.full(self.active.shape, c, dtype=np.float64)

    def mvp_range_cycles(self, residency: str) -> np.ndarray:
        """Range-sparse MVP affine: ``C0 + C_L * N_L + C_P * N_P`` cycles ``[S, T]`` (SpikeDuet Sec. III-B)."""
        v = self.mvp
        return (v.call_cycles + v.launch_cycles * self.launches[residency]
                + v.column_cycles(self.n_out, residency) * self.processed[residency])

    def cycles(self, engine: str, residency: str, hot_columns: int = 0) -> np.ndarray:
        """Cycles ``[S, T]`` of this layer on ``engine`` with weights in ``residency``."""
        if engine == ENGINE_M33:
            return self.m33_cycles(residency, hot_columns)
        if residency == "flash+hot":
            raise ValueError("flash+hot residency is for the M33 only (the MVP reads contiguous FP16 ranges)")
        if engine == ENGINE_MVP_DENSE:
            return self.mvp_dense_cycles(residency)
        return self.mvp_range_cycles(residency)

    def weight_bytes(self, engine: str) -> int:
        """Size of the layer's weight table in the engine's format (FP32 on the M33, FP16 on the MVP)."""
        per = self.m33.weight_bytes if engine == ENGINE_M33 else self.mvp.weight_bytes
        return self.n_in * self.n_out * per


def options(engines=ENGINES) -> list[tuple[str, str]]:
    """Every valid (engine, residency) pair, in a fixed order."""
    return [(e, r) for e in engines for r in RESIDENCIES if not (e != ENGINE_M33 and r == "flash+hot")]


def lif_cycles(n: int, m33: CortexM) -> float:
    """LIF update of ``n`` neurons for one timestep on the M33: ``C_call + n * c_neuron``."""
    return m33.lif_call_cycles + n * m33.lif_neuron_cycles


def readout_cycles(n_out: int, m33: CortexM) -> float:
    """Readout accumulation of ``n_out`` output neurons for one timestep on the M33."""
    return n_out * m33.readout_neuron_cycles
