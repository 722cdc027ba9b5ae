"""``hetsim run PLATFORM workloads/snn/NET.yaml``: plan an SNN on the M33 + MVP, replay it, summarise.

Steps (SpikeDuet Fig. 1(a)): optionally reorder hidden neurons on the fit split (:mod:`hetsim.snn.reorder`);
plan engines and residencies on the plan split (:mod:`hetsim.snn.planner`); evaluate every configuration of
SpikeDuet's Table I (all sparse M33, all dense MVP, the plan under blocking and asynchronous execution) on the
eval split, sample by sample; replay one sample of the chosen plan on SimPy resources in both modes (the
timeline, and a check that the SimPy replay equals the numpy evaluator).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from hetsim.devices.efr32 import ENGINE_M33, ENGINE_MVP_DENSE, ENGINE_MVP_RANGE
from hetsim.errors import ScheduleError
from hetsim.platform import Platform, load_platform
from hetsim.snn.costs import range_counts
from hetsim.snn.network import SNN, load_snn
from hetsim.snn.planner import LayerChoice, SnnCostModel, SnnPlan, plan
from hetsim.snn.reorder import ReorderResult
from hetsim.snn.schedule import MODES, on_mvp, simulate_sample, unroll


@dataclass
class ConfigResult:
    """One configuration evaluated on the eval split: per-sample latency (s) and energy (J)."""

    name: str
    plan: SnnPlan
    mode: str
    latency_s: np.ndarray
    energy_j: np.ndarray
    m33_busy_s: np.ndarray
    mvp_busy_s: np.ndarray


@dataclass
class SnnRunResult:
    """Everything one SNN run produced (see :func:`run_snn`)."""

    snn: SNN
    platform: Platform
    mode: str
    result: ConfigResult
    configs: dict[str, ConfigResult]
    layers: pd.DataFrame
    traces: dict[str, pd.DataFrame]
    sample: int
    reorder: ReorderResult | None = None
    summary: dict = field(default_factory=dict)

    @property
    def plan(self) -> SnnPlan:
        return self.result.plan


def _energy(cm: SnnCostModel, makespan: np.ndarray, m33_busy: np.ndarray, mvp_busy: np.ndarray) -> np.ndarray:
    """``sum over engines of active_w * busy + idle_w * (makespan - busy)`` (docs/models.md energy model), J:
    each engine's :meth:`~hetsim.devices.base.DeviceBase.energy_j`, the one energy formula."""
    return sum(sum(dev.energy_j(busy, makespan)) for dev, busy in ((cm.m33, m33_busy), (cm.mvp, mvp_busy)))


def _evaluate(name: str, p: SnnPlan, mode: str, cm: SnnCostModel) -> ConfigResult:
    lat = cm.makespans(p.layers, mode)
    m33, mvp = cm.engine_work(p.layers)
    return ConfigResult(name, p, mode, lat, _energy(cm, lat, m33, mvp), m33, mvp)


def layer_table(cm: SnnCostModel, choices: list[LayerChoice]) -> pd.DataFrame:
    """Per affine layer on ``cm``'s split: shape, engine, residency, hot columns, SRAM KiB, mean cycles per
    timestep on the chosen engine and on each alternative engine (at the chosen residency when it applies to
    that engine, else SRAM when its table fits the budget on its own, else Flash), active input columns, raw
    ranges and MVP launches (after gap merging) per timestep."""
    rows = []
    for li, (lc, c) in enumerate(zip(cm.layers, choices, strict=True)):
        def mem(engine: str, c=c, lc=lc) -> str:
            if engine == c.engine or (engine != ENGINE_M33 and c.engine != ENGINE_M33):  # same engine family
                return c.residency
            if lc.weight_bytes(engine) <= cm.budget:
                return "sram"
            return "flash+hot" if engine == ENGINE_M33 else "flash"

        raw, _ = range_counts(cm.snn.split(cm.split)[li], 0)
        sram = lc.weight_bytes(c.engine) if c.residency == "sram" else (
            c.hot_columns * lc.n_out * cm.m33.weight_bytes if c.residency == "flash+hot" else 0)
        rows.append({
            "layer": f"Linear{li}", "n_in": lc.n_in, "n_out": lc.n_out, "engine": c.engine,
            "residency": c.residency, "hot_columns": c.hot_columns, "sram_kib": sram / 1024,
            "cycles_per_t": float(cm.layer_cycles(li, c).mean()),
            # the M33 alternative of an MVP layer gets as many hot columns as the whole budget holds (optimistic)
            "m33_cycles_per_t": float(lc.m33_cycles(mem(ENGINE_M33), c.hot_columns if c.engine == ENGINE_M33 else
                                                    cm.budget // (lc.n_out * cm.m33.weight_bytes)).mean()),
            "mvp_range_cycles_per_t": float(lc.mvp_range_cycles(mem(ENGINE_MVP_RANGE)).mean()),
            "mvp_dense_cycles_per_t": float(lc.mvp_dense_cycles(mem(ENGINE_MVP_DENSE)).mean()),
            "active_per_t": float(lc.active.mean()),
            "ranges_per_t": float(raw.mean()),
            "launches_per_t": float(lc.launches[mem(ENGINE_MVP_RANGE)].mean()),
        })
    return pd.DataFrame(rows)


def run_snn(platform: Platform | str | Path, workload: SNN | str | Path, mapper: str = "spikeduet",
            mode: str = "async", reorder: bool = False, sample: int | None = None,
            time_limit_s: float | None = None, seed: int = 0, timeline: bool = True) -> SnnRunResult:
    """Plan, evaluate and replay an SNN (module docstring).

    Args:
        platform: an EFR32MG24-like platform or its YAML path.
        workload: an :class:`SNN` or the path of its spec YAML.
        mapper: ``spikeduet`` | ``all-m33`` | ``all-dense-mvp``.
        mode: ``async`` | ``blocking``.
        reorder: reorder hidden neurons first (function-preserving; verified).
        sample: eval-split sample whose timeline is replayed (default: the sample of median latency).
        time_limit_s: per plan, stop scheduling candidates after this long (see :func:`~hetsim.snn.planner.plan`).
        seed: the reordering's refinement seed.
        timeline: replay one sample on SimPy (``traces``) and count replay mismatches; sweeps skip both.

    Raises:
        InputError: (subclasses) bad platform, network, mapper, mode or sample; a reordering that changes the
            network's outputs raises :class:`~hetsim.errors.ScheduleError`.
    """
    from hetsim.errors import InputError
    from hetsim.snn.planner import SNN_MAPPERS

    plat = platform if isinstance(platform, Platform) else load_platform(platform)
    snn = workload if isinstance(workload, SNN) else load_snn(workload)
    if mode not in MODES:
        raise InputError(f"unknown execution mode {mode!r}; allowed: {', '.join(MODES)}")
    if mapper not in SNN_MAPPERS:
        raise InputError(f"unknown SNN mapper {mapper!r}; available: {', '.join(SNN_MAPPERS)}")
    S = snn.split("eval")[0].shape[0]
    if sample is not None and (isinstance(sample, bool) or not isinstance(sample, int | np.integer)
                               or not 0 <= sample < S):
        raise InputError(f"--sample {sample}: the eval split ({snn.roles.eval}) has samples 0..{S - 1}")
    reo = None
    if reorder:
        from hetsim.snn.reorder import reorder_for_platform

        reo = reorder_for_platform(snn, plat, seed=seed)
        snn = reo.snn
    cm_plan = SnnCostModel(snn, plat, "plan")
    cm_eval = cm_plan if snn.roles.eval == snn.roles.plan else SnnCostModel(snn, plat, "eval")
    tl = time_limit_s
    plans = {
        "all-m33": plan(snn, plat, "all-m33", mode, costs=cm_plan, time_limit_s=tl),
        "all-dense-mvp": plan(snn, plat, "all-dense-mvp", "blocking", costs=cm_plan, time_limit_s=tl),
    }
    chosen = {m: plan(snn, plat, "spikeduet", m, costs=cm_plan, time_limit_s=tl) for m in MODES}
    configs = {
        "all-m33": _evaluate("all-m33", plans["all-m33"], mode, cm_eval),
        "all-dense-mvp": _evaluate("all-dense-mvp", plans["all-dense-mvp"], "blocking", cm_eval),
        "spikeduet-blocking": _evaluate("spikeduet-blocking", chosen["blocking"], "blocking", cm_eval),
        "spikeduet-async": _evaluate("spikeduet-async", chosen["async"], "async", cm_eval),
    }
    key = f"spikeduet-{mode}" if mapper == "spikeduet" else mapper
    if mapper == "all-dense-mvp" and mode == "async":
        key = "all-dense-mvp-async"
        configs[key] = _evaluate(key, plan(snn, plat, "all-dense-mvp", "async", costs=cm_plan, time_limit_s=tl),
                                 "async", cm_eval)
    res = configs[key]
    if sample is None:
        sample = int(np.argsort(res.latency_s, kind="stable")[S // 2])
    traces = {}
    for m in MODES if timeline else ():
        u = unroll(snn.n_layers, snn.timesteps, on_mvp([c.engine for c in res.plan.layers]), m)
        tr, ms = simulate_sample(u, cm_eval.op_costs(u, res.plan.layers)[:, sample], m)
        want = float(res.latency_s[sample]) if m == res.mode else float(cm_eval.makespans(res.plan.layers, m)[sample])
        if abs(ms - want) > 1e-9 * max(1.0, want):
            raise ScheduleError(f"SimPy replay ({ms:.9g} s) disagrees with the evaluator ({want:.9g} s) on sample "
                                f"{sample} in {m} mode")
        traces[m] = tr
    out = SnnRunResult(snn, plat, res.mode, res, configs, layer_table(cm_eval, res.plan.layers), traces,
                       sample, reo)
    out.summary = summarize_snn(out, cm_eval, mismatches=timeline)
    return out


def summarize_snn(r: SnnRunResult, cm: SnnCostModel, mismatches: bool = True) -> dict:
    """The run as plain data (``summary.json``); ``mismatches``: count the spike bits where the recorded rasters
    differ from the network's replay (:func:`hetsim.snn.network.replay_mismatches`)."""
    hz = cm.m33_hz
    base = r.configs["all-m33"].latency_s.mean()

    def ratio(a, b):
        """``a / b``, or ``None`` (JSON null) when ``b`` is 0 (a platform whose costs are all zero)."""
        return float(a / b) if b > 0 else None

    def cfg(c: ConfigResult) -> dict:
        return {"mode": c.mode, "mean_latency_ms": float(c.latency_s.mean() * 1e3),
                "mean_latency_cycles": float(c.latency_s.mean() * hz),
                "max_latency_ms": float(c.latency_s.max() * 1e3),
                "mean_energy_uj": float(c.energy_j.mean() * 1e6),
                "speedup_vs_all_m33": ratio(base, c.latency_s.mean()),
                "mvp_utilisation": ratio(c.mvp_busy_s.sum(), c.latency_s.sum()),
                "m33_utilisation": ratio(c.m33_busy_s.sum(), c.latency_s.sum()),
                "layers": [{"engine": x.engine, "residency": x.residency, "hot_columns": x.hot_columns}
                           for x in c.plan.layers],
                "sram_kib": c.plan.sram_bytes / 1024, "planned_on": c.plan.stats.get("split"),
                "plan_mean_latency_ms": c.plan.mean_latency_s * 1e3}

    s = {
        "workload": r.snn.name, "platform": r.platform.name, "mapper": r.plan.mapper, "mode": r.mode,
        "layers": r.snn.layer_sizes, "timesteps": r.snn.timesteps, "eval_split": cm.split,
        "samples": int(len(r.result.latency_s)), "mean_latency_ms": float(r.result.latency_s.mean() * 1e3),
        "mean_latency_cycles": float(r.result.latency_s.mean() * hz),
        "mean_energy_uj": float(r.result.energy_j.mean() * 1e6),
        "speedup_vs_all_m33": ratio(base, r.result.latency_s.mean()),
        "sram_used_kib": r.plan.sram_bytes / 1024, "sram_budget_kib": r.plan.budget_bytes / 1024,
        "plan_stats": dict(r.plan.stats),
        "timeline_sample": r.sample,
        "per_layer": r.layers.to_dict(orient="records"),
        "configs": {k: cfg(c) for k, c in r.configs.items()},
    }
    from hetsim.snn.network import replay_mismatches

    if mismatches:
        s["replay_mismatch_bits"] = replay_mismatches(r.snn)
    if r.reorder is not None:
        s["reorder"] = r.reorder.summary()
    return s
