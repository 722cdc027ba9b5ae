"""SNN mappers for the EFR32MG24: per affine layer an engine and a weight residency (SpikeDuet Sec. III-B, III-D).

``spikeduet`` enumerates every combination of (engine, residency) per affine layer - ``m33`` with ``sram``,
``flash`` or ``flash+hot``; ``mvp-dense`` or ``mvp-range`` with ``sram`` or ``flash``: 7 options per layer, so
``7^L`` plans - drops those whose SRAM-resident tables exceed the SRAM budget, and keeps the one with the
smallest mean end-to-end latency on the plan (validation) split under the chosen execution mode. This is
exact: every plan that fits is either evaluated or pruned by a valid lower bound (per sample, the makespan is
at least each engine's total work). Baselines are the same search restricted to one engine: ``all-m33``
(sparse Cortex-M33, SpikeDuet's baseline; its best residency, hot columns included) and ``all-dense-mvp``.

SRAM budget: ``memories.sram.size_kib - m33.sram_reserved_kib``. A table in SRAM costs ``n_in * n_out *``
(4 bytes on the M33, FP32; 2 on the MVP, FP16); Flash tables cost nothing there. ``flash+hot`` layers share
the SRAM left over: their columns are taken greedily by decreasing fit-split firing rate (all columns of a
layer have the same size, so each layer gets a prefix of its hot order, :func:`hetsim.snn.costs.hot_order`).
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field

import numpy as np

from hetsim.devices import kind_name
from hetsim.devices.efr32 import ENGINE_M33, ENGINE_MVP_DENSE, CortexM, Mvp
from hetsim.errors import MappingError, PlatformError
from hetsim.platform import Platform
from hetsim.snn.costs import ENGINES, LayerCosts, hot_order, lif_cycles, options, readout_cycles
from hetsim.snn.network import SNN
from hetsim.snn.schedule import MODES, Unrolled, evaluate, on_mvp, unroll

SNN_MAPPERS = {"spikeduet": ENGINES, "all-m33": (ENGINE_M33,), "all-dense-mvp": (ENGINE_MVP_DENSE,)}


@dataclass(frozen=True)
class LayerChoice:
    """Engine and weight residency of one affine layer; ``hot_columns`` for ``flash+hot``."""

    engine: str
    residency: str
    hot_columns: int = 0


@dataclass
class SnnPlan:
    """A mapping of an SNN onto the M33 + MVP.

    Attributes:
        mapper: the mapper that made it.
        mode: ``async`` | ``blocking``.
        layers: per affine layer 1..L, its :class:`LayerChoice`.
        sram_bytes: SRAM taken by weight tables (resident tables and hot columns), bytes.
        budget_bytes: SRAM available to weights, bytes.
        mean_latency_s: mean end-to-end latency on the split it was planned on, seconds.
        stats: ``plans`` (combinations), ``fit`` (within budget), ``evaluated``, ``pruned``, ``solve_time_s``,
            ``split``.
    """

    mapper: str
    mode: str
    layers: list[LayerChoice]
    sram_bytes: int
    budget_bytes: int
    mean_latency_s: float
    stats: dict = field(default_factory=dict)


def engines_of(platform: Platform) -> tuple[CortexM, Mvp]:
    """The platform's ``cortex-m`` host and its ``mvp``.

    Raises:
        PlatformError: the platform has no ``cortex-m`` host, no ``mvp`` device, or no ``sram`` memory.
    """
    m33 = platform.devices[platform.host]
    mvps = [d for d in platform.devices.values() if isinstance(d, Mvp)]
    if not isinstance(m33, CortexM) or not mvps:
        raise PlatformError(f"platform {platform.name!r} cannot run spiking networks: it needs a "
                            f"{kind_name(CortexM)!r} host and an {kind_name(Mvp)!r} device "
                            "(see platforms/efr32mg24.yaml)")
    others = [n for n, d in platform.devices.items() if n != platform.host and not isinstance(d, Mvp)]
    if len(mvps) > 1 or others:
        raise PlatformError(f"platform {platform.name!r}: SNN planning models one {kind_name(CortexM)!r} host and "
                            f"one {kind_name(Mvp)!r}; it has {len(mvps)} {kind_name(Mvp)} device(s) and other devices "
                            f"{others or 'none'}")
    if "sram" not in platform.memories:
        raise PlatformError(f"platform {platform.name!r}: SNN planning needs a memory named 'sram' (its size is "
                            "the weight budget)")
    return m33, mvps[0]


def sram_budget_bytes(platform: Platform) -> int:
    """SRAM available to weight tables: ``memories.sram.size_kib - m33.sram_reserved_kib``, bytes.

    Raises:
        PlatformError: see :func:`engines_of`, or the reserved SRAM exceeds the memory.
    """
    m33, _ = engines_of(platform)
    size = platform.memories["sram"].size_kib
    if m33.sram_reserved_kib > size:
        raise PlatformError(f"platform {platform.name!r}: devices.{m33.name}.sram_reserved_kib = "
                            f"{m33.sram_reserved_kib:g} exceeds memories.sram.size_kib = {size:g}")
    return int((size - m33.sram_reserved_kib) * 1024)


class SnnCostModel:
    """Every layer's cycle costs on every engine for one split, plus the fit-split hot-column orders.

    Attributes:
        snn, platform, split: what it was built for.
        layers: per affine layer, a :class:`~hetsim.snn.costs.LayerCosts` on ``split``'s input rasters.
        hot_freq: per layer, fit-split firing rate of the input columns in hot order (float ``[n_in]``).
    """

    def __init__(self, snn: SNN, platform: Platform, split: str = "plan"):
        self.snn, self.platform = snn, platform
        self.m33, self.mvp = engines_of(platform)
        rasters = snn.split(split)
        fit = snn.split("fit")
        self.split = snn.roles.name_of(split)
        self.samples, self.timesteps = rasters[0].shape[0], rasters[0].shape[1]
        self.layers: list[LayerCosts] = []
        self.hot_freq: list[np.ndarray] = []
        sizes = snn.layer_sizes
        for li in range(snn.n_layers):
            order = hot_order(fit[li])
            freq = fit[li].reshape(-1, sizes[li]).mean(axis=0)[order]
            self.layers.append(LayerCosts.build(rasters[li], sizes[li + 1], self.m33, self.mvp, order))
            self.hot_freq.append(freq)
        self.m33_hz = self.m33.clock_mhz * 1e6
        self.mvp_hz = self.mvp.clock_mhz * 1e6
        self.budget = sram_budget_bytes(platform)
        flash = platform.memories.get("flash")
        self.flash_bytes = int(flash.size_kib * 1024) if flash is not None else None  # None: no Flash residency

    # ------------------------------------------------------------------ memory
    def allocate(self, combo: tuple[tuple[str, str], ...]) -> tuple[list[LayerChoice], int] | None:
        """Layer choices with hot-column counts and the SRAM bytes used, or ``None`` if the SRAM-resident tables
        exceed the SRAM budget or the Flash-resident ones (``flash``, ``flash+hot``: the whole table stays in
        Flash) exceed ``memories.flash`` (no ``flash`` memory: no Flash residency)."""
        used = sum(lc.weight_bytes(e) for lc, (e, r) in zip(self.layers, combo, strict=True) if r == "sram")
        if used > self.budget:
            return None
        in_flash = sum(lc.weight_bytes(e) for lc, (e, r) in zip(self.layers, combo, strict=True) if r != "sram")
        if in_flash and (self.flash_bytes is None or in_flash > self.flash_bytes):
            return None
        hot = [0] * len(combo)
        hot_layers = [i for i, (_, r) in enumerate(combo) if r == "flash+hot"]
        if hot_layers:
            left = self.budget - used
            items = sorted((-float(self.hot_freq[i][k]), i, k) for i in hot_layers
                            for k in range(self.layers[i].n_in) if self.hot_freq[i][k] > 0)
            for _, i, _k in items:
                size = self.layers[i].n_out * self.m33.weight_bytes
                if size <= left:
                    hot[i] += 1
                    left -= size
            used = self.budget - left
        return [LayerChoice(e, r, hot[i]) for i, (e, r) in enumerate(combo)], used

    # ------------------------------------------------------------------ costs
    def layer_cycles(self, li: int, choice: LayerChoice) -> np.ndarray:
        """Cycles ``[samples, T]`` of affine layer ``li + 1`` under ``choice`` (in its engine's clock)."""
        return self.layers[li].cycles(choice.engine, choice.residency, choice.hot_columns)

    def op_costs(self, unrolled: Unrolled, choices: list[LayerChoice]) -> np.ndarray:
        """Durations in seconds, float ``[n_ops, samples]``, in ``unrolled.ops`` order."""
        S = self.samples
        sizes = self.snn.layer_sizes
        per_layer = []
        for li, c in enumerate(choices):
            hz = self.m33_hz if c.engine == ENGINE_M33 else self.mvp_hz
            per_layer.append(self.layer_cycles(li, c) / hz)
        lif = [lif_cycles(n, self.m33) / self.m33_hz for n in sizes[1:]]
        ro = readout_cycles(sizes[-1], self.m33) / self.m33_hz
        out = np.empty((len(unrolled.ops), S))
        for i, op in enumerate(unrolled.ops):
            if op.kind == "affine":
                out[i] = per_layer[op.layer - 1][:, op.t]
            elif op.kind == "lif":
                out[i] = lif[op.layer - 1]
            else:
                out[i] = ro
        return out

    def makespans(self, choices: list[LayerChoice], mode: str) -> np.ndarray:
        """End-to-end latency per sample, seconds ``[samples]``."""
        if mode == "blocking":  # the M33 waits for every launch: the makespan is all the work
            return sum(self.engine_work(choices))
        u = unroll(self.snn.n_layers, self.timesteps, on_mvp([c.engine for c in choices]), mode)
        return evaluate(u, self.op_costs(u, choices))[1].max(axis=0)

    @property
    def fixed_m33_s(self) -> float:
        """M33 time per inference that no mapping changes: LIF updates and readout over T timesteps, s."""
        sizes = self.snn.layer_sizes
        return self.timesteps * (sum(lif_cycles(n, self.m33) for n in sizes[1:])
                                 + readout_cycles(sizes[-1], self.m33)) / self.m33_hz

    def engine_work(self, choices: list[LayerChoice]) -> tuple[np.ndarray, np.ndarray]:
        """Total M33 and MVP busy time per sample, seconds (each is a lower bound on the makespan)."""
        m33 = np.full(self.samples, self.fixed_m33_s)
        mvp = np.zeros(self.samples)
        for li, c in enumerate(choices):
            cyc = self.layer_cycles(li, c).sum(axis=1)
            if c.engine == ENGINE_M33:
                m33 = m33 + cyc / self.m33_hz
            else:
                mvp = mvp + cyc / self.mvp_hz
        return m33, mvp


def _option_bounds(cm: SnnCostModel, opts: list[tuple[str, str]]):
    """Per layer and option: SRAM bytes, Flash bytes and a lower bound on the M33 and MVP busy time per sample
    (``flash+hot`` bounded by the all-hot cost), as arrays ``[L, n_opts]`` and ``[L, n_opts, samples]``."""
    L, n, S = len(cm.layers), len(opts), cm.samples
    sram = np.zeros((L, n))
    flash = np.zeros((L, n))
    m33 = np.zeros((L, n, S))
    mvp = np.zeros((L, n, S))
    for li, lc in enumerate(cm.layers):
        for k, (e, r) in enumerate(opts):
            table = lc.weight_bytes(e)
            (sram if r == "sram" else flash)[li, k] = table
            cyc = lc.cycles(e, r, lc.n_in if r == "flash+hot" else 0).sum(axis=1)
            if e == ENGINE_M33:
                m33[li, k] = cyc / cm.m33_hz
            else:
                mvp[li, k] = cyc / cm.mvp_hz
    return sram, flash, m33, mvp


def plan(snn: SNN, platform: Platform, mapper: str = "spikeduet", mode: str = "async",
         split: str = "plan", costs: SnnCostModel | None = None, time_limit_s: float | None = None) -> SnnPlan:
    """Choose each affine layer's engine and residency minimising the mean latency on ``split`` (exact).

    Every combination is bounded first (vectorised over combinations and samples: per sample the makespan is at
    least each engine's busy time, ``blocking`` at least their sum, with ``flash+hot`` at its all-hot cost);
    combinations over the SRAM or Flash capacity are dropped; the rest are scheduled in order of their bound
    until the bound reaches the best latency found (then the result is optimal) or ``time_limit_s`` passes
    (then ``stats["status"]`` is ``time_limit`` and ``stats["gap"]`` the relative gap to the smallest bound
    not yet scheduled). Ties go to less SRAM, then to the simpler options (M33 and SRAM first).

    Args:
        snn: the network with recorded activity (``fit`` split for hot columns, ``split`` for latency).
        platform: an EFR32MG24-like platform (``cortex-m`` host, ``mvp``, ``sram`` memory).
        mapper: ``spikeduet`` (all engines), ``all-m33`` or ``all-dense-mvp`` (baselines).
        mode: ``async`` | ``blocking`` (:mod:`hetsim.snn.schedule`).
        split: split name or role the latency is averaged over (default: the plan role, validation).
        costs: a prebuilt cost model for ``split`` (saves rebuilding it).
        time_limit_s: stop scheduling candidates after this many seconds (default: no limit).

    Raises:
        InputError: unknown mapper or mode.
        MappingError: no combination fits the SRAM and Flash capacities.
        PlatformError / WorkloadError: see :func:`engines_of`, :meth:`SNN.split`.
    """
    from hetsim.errors import InputError

    if mapper not in SNN_MAPPERS:
        raise InputError(f"unknown SNN mapper {mapper!r}; available: {', '.join(SNN_MAPPERS)}")
    if mode not in MODES:
        raise InputError(f"unknown execution mode {mode!r}; allowed: {', '.join(MODES)}")
    t0 = time.perf_counter()
    cm = costs if costs is not None else SnnCostModel(snn, platform, split)
    opts = options(SNN_MAPPERS[mapper])
    rank = {o: i for i, o in enumerate(options())}
    L, n = snn.n_layers, len(opts)
    sram, flash, m33w, mvpw = _option_bounds(cm, opts)
    fixed = cm.fixed_m33_s
    flash_cap = cm.flash_bytes if cm.flash_bytes is not None else 0
    lbs, idxs = [], []
    chunk = max(1, 2**16 // max(1, cm.samples))
    combos = itertools.product(range(n), repeat=L)
    while True:
        idx = np.array(list(itertools.islice(combos, chunk)), dtype=np.int16).reshape(-1, L)
        if not len(idx):
            break
        layers = np.arange(L)
        ok = (sram[layers, idx].sum(axis=1) <= cm.budget) & (flash[layers, idx].sum(axis=1) <= flash_cap)
        idx = idx[ok]
        if not len(idx):
            continue
        m = fixed + m33w[layers, idx].sum(axis=1)      # [c, S]
        v = mvpw[layers, idx].sum(axis=1)
        lbs.append((np.maximum(m, v) if mode == "async" else m + v).mean(axis=1))
        idxs.append(idx)
    n_plans = n**L
    if not lbs:
        raise MappingError(f"{mapper}: no engine/residency combination of {snn.name} fits the "
                           f"{cm.budget / 1024:.0f} KiB SRAM budget and the Flash")
    lb = np.concatenate(lbs)
    idx = np.concatenate(idxs)
    order = np.argsort(lb, kind="stable")
    best, evaluated, status, gap = None, 0, "optimal", 0.0
    for j in order:
        if best is not None and lb[j] > best[0][0] * (1 + 1e-12):
            break
        if time_limit_s is not None and best is not None and time.perf_counter() - t0 > time_limit_s:
            status = "time_limit"
            gap = max(0.0, (best[0][0] - float(lb[j])) / best[0][0])
            break
        combo = tuple(opts[k] for k in idx[j])
        choices, used = cm.allocate(combo)  # never None: the capacity filter above is the same test
        lat = float(cm.makespans(choices, mode).mean())
        evaluated += 1
        key = (lat, used, [rank[o] for o in combo])  # ties: less SRAM, then simpler options (m33, sram first)
        if best is None or key < best[0]:
            best = (key, choices, used)
    (lat, _, _), choices, used = best
    stats = {"plans": n_plans, "fit": int(len(lb)), "evaluated": evaluated,
             "pruned": int(len(lb)) - evaluated, "solve_time_s": time.perf_counter() - t0,
             "split": cm.split, "status": status, "gap": gap}
    return SnnPlan(mapper, mode, choices, used, cm.budget, lat, stats)
