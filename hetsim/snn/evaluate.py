"""The SNN path's own evaluation (SpikeDuet): the pipeline of one spiking network (:func:`run_snn`, what
:func:`hetsim.run` does with an SNN), SpikeDuet's Table I comparison set (:data:`TABLE_I`) priced on every
eval sample, the per-layer table, the summary as plain data (:func:`summarize_snn`) and ``hetsim validate``'s
check of an SNN schedule (:func:`validate_snn_schedule`). :mod:`hetsim.snn.report` only formats what this
module returns; the generic pipeline and report know nothing of these configurations."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from hetsim.errors import InputError, ScheduleError
from hetsim.result import RunResult
from hetsim.schedule import Schedule

if TYPE_CHECKING:
    import pandas as pd

    from hetsim.platform import Platform

#: SpikeDuet's Table I: configuration -> (mapper, execution mode; ``None``: the run's own mode)
TABLE_I: dict[str, tuple[str, str | None]] = {
    "all-m33": ("all-m33", None),
    "all-dense-mvp": ("all-dense-mvp", "blocking"),
    "spikeduet-blocking": ("spikeduet", "blocking"),
    "spikeduet-async": ("spikeduet", "async"),
}
#: the configuration SNN speed-ups are measured against (SpikeDuet: the all-sparse-M33 implementation)
BASELINE_CONFIG = "all-m33"
#: how reports name the configurations
CONFIG_LABELS = {"all-m33": "all sparse M33", "all-dense-mvp": "all dense MVP, blocking",
                 "all-dense-mvp-async": "all dense MVP, async", "spikeduet-blocking": "spikeduet, blocking",
                 "spikeduet-async": "spikeduet, async"}
#: SNN mappers, for messages
SNN_MAPPERS = ("spikeduet", "all-m33", "all-dense-mvp")


def config_key(mapper: str, mode: str) -> str:
    """The name of ``mapper``'s schedule in execution ``mode`` among the configurations (:data:`TABLE_I`; a
    mapper outside it is named after itself)."""
    for name, (m, md) in TABLE_I.items():
        if m == mapper and md in (None, mode):
            return name
    return f"{mapper}-{mode}" if mapper in {m for m, _ in TABLE_I.values()} else mapper


def run_snn(
    platform: Platform | str | Path,
    network,
    mapper: str = "spikeduet",
    contention: frozenset[str] = frozenset(),
    mapper_options: dict | None = None,
    schedule: Schedule | str | Path | None = None,
    *,
    reorder: bool = False,
    sample: int | None = None,
    seed: int = 0,
    timeline: bool = True,
) -> RunResult:
    """The pipeline for a spiking network (SpikeDuet Fig. 1(a)), what :func:`hetsim.pipeline.run` does with an SNN.

    Steps: optionally reorder hidden neurons on the fit split (:mod:`hetsim.snn.reorder`); unroll the network
    into the operator DAG (:mod:`hetsim.snn.unroll`); price it per sample of the eval split
    (:class:`~hetsim.snn.activity_costs.ActivityCostModel`); map it with ``mapper`` (planned on the plan split); price
    every configuration of SpikeDuet's Table I on every eval sample (all sparse M33, all dense MVP, spikeduet
    blocking and async, and the run's own) with the vectorised evaluator; replay the run's schedule for one eval
    sample on the one simulator (:func:`hetsim.sim.simulate`; the sample of median latency unless ``sample`` is
    given), which must reproduce the evaluator's latency of that sample (to 1e-9 relative), and so must the
    same mapping in the other mode (both modes' traces, with ``timeline``).

    Args:
        platform: an EFR32MG24-like platform (``cortex-m`` host, ``mvp``, ``sram`` memory) or its YAML path.
        network: an :class:`~hetsim.snn.network.SNN`, an :class:`~hetsim.snn.unroll.SnnWorkload` or a spec path.
        mapper: ``spikeduet`` | ``all-m33`` | ``all-dense-mvp`` (options ``mode``, ``time_limit_s``, ``split``).
        contention: contention kinds of the replay (nothing moves between the engines: they share SRAM).
        mapper_options: the mapper's options; ``time_limit_s`` and ``work_limit`` also apply to the Table I
            configurations.
        schedule: replay this SNN schedule (or schedule JSON file) instead of mapping.
        reorder: reorder hidden neurons first (function-preserving; verified).
        sample: eval-split sample replayed (default: the sample of median latency).
        seed: the reordering's refinement seed.
        timeline: replay both modes and count replay mismatches; sweeps skip both.

    Returns:
        A :class:`~hetsim.result.RunResult` with ``snn`` set (:class:`SnnTables`).

    Raises:
        InputError: (subclasses) bad platform, network, mapper, option or sample; a reordering that changes
            the network's outputs, or a replay that disagrees with the evaluator, raises
            :class:`~hetsim.errors.ScheduleError`.
    """
    from hetsim.mappers.base import check_baseline, mapper_or_schedule
    from hetsim.platform import Platform, load_platform

    options = dict(mapper_options or {})
    m, schedule = mapper_or_schedule(mapper, options, schedule, "snn",
                                     f"maps ONNX models (tensor-operator DAGs); spiking networks take "
                                     f"{', '.join(SNN_MAPPERS)}")
    plat = platform if isinstance(platform, Platform) else load_platform(platform)
    check_baseline(plat, None if isinstance(platform, Platform) else str(platform), "snn")
    net, reo = _network(network, plat, sample, reorder, seed)
    cm, run_sched, key = _plan(net, plat, m, schedule, mapper)
    table = table_one(cm, run_sched, mapper if schedule is None else None, options.get("time_limit_s"),
                      options.get("work_limit"))
    if key is None:
        key = config_key(mapper, run_sched.config["mode"])
    table[key] = run_sched
    configs = {k: evaluate_config(k, s, cm) for k, s in table.items()}
    res = configs[key]
    if sample is None:
        sample = int(np.argsort(res.latency_s, kind="stable")[len(res.latency_s) // 2])
    result, traces = _replays(cm, run_sched, res, sample, contention, timeline)
    bound = cm.at_sample(sample)
    baseline = result if key == BASELINE_CONFIG else _replay(
        bound, table[BASELINE_CONFIG], float(configs[BASELINE_CONFIG].latency_s[sample]), sample, contention)
    tables = SnnTables(net, run_sched.config["mode"], configs, key, layer_table(cm, res.choices), traces, sample,
                       cm.mvp_name, reo)
    costs = bound.for_schedule(run_sched)
    summary = summarize_snn(costs, run_sched, result, tables, mismatches=timeline)
    return RunResult(costs, run_sched, result, baseline, summary, snn=tables)


def _network(network, plat, sample, reorder: bool, seed: int):
    """The network to run (reordered when asked) and the reordering; ``sample`` checked against its eval
    split.

    Raises:
        InputError: a sample outside the eval split; a reordering that does not preserve the function.
    """
    from hetsim.snn.network import SNN
    from hetsim.snn.unroll import SnnWorkload
    from hetsim.workload.frontends import load_workload

    net = network.snn if isinstance(network, SnnWorkload) else (
        network if isinstance(network, SNN) else load_workload(network).snn)
    S = net.split("eval")[0].shape[0]
    if sample is not None and (isinstance(sample, bool) or not isinstance(sample, int | np.integer)
                               or not 0 <= sample < S):
        raise InputError(f"--sample {sample}: the eval split ({net.roles.eval}) has samples 0..{S - 1}")
    if not reorder:
        return net, None
    from hetsim.snn.reorder import reorder_for_platform

    reo = reorder_for_platform(net, plat, seed=seed)
    return reo.snn, reo


def _plan(net, plat, m, schedule, mapper: str):
    """The eval split's cost model, the run's schedule (``m``'s, or the saved ``schedule`` checked against the
    memories) and its configuration name (``None``: named after the mapper and mode).

    Raises:
        ScheduleError: a saved schedule made for another network or platform
            (:func:`hetsim.check.require_made_for`), or whose weight tables do not fit.
    """
    from hetsim.snn.activity_costs import ActivityCostModel
    from hetsim.snn.unroll import unroll

    wl = unroll(net)
    cm = ActivityCostModel(wl, plat, "eval")
    if schedule is None:
        return cm, m.map(cm), None
    from hetsim.check import require_made_for

    require_made_for(cm, schedule)
    bad = cm.schedule_violations(schedule)
    if bad:
        raise ScheduleError(f"schedule does not fit platform {plat.name!r}: {bad[0]}")
    return cm, schedule, "schedule"


def table_one(cm, run_sched: Schedule, mapper: str | None, time_limit_s: float | None,
              work_limit: int | None = None) -> dict[str, Schedule]:
    """SpikeDuet's Table I configurations (:data:`TABLE_I`) as schedules on ``cm``, ``all-m33`` in the run's
    mode; the run's own schedule (``mapper``'s, in its mode) is reused where it is one of them.

    Args:
        cm: the eval split's :class:`~hetsim.snn.activity_costs.ActivityCostModel`.
        run_sched: the run's schedule (its ``config["mode"]`` is the run's mode).
        mapper: the mapper that made ``run_sched`` (``None``: a saved schedule, reused for nothing).
        time_limit_s: each plan search's time limit; work_limit: its work limit (candidates evaluated).
    """
    from hetsim.mappers import get_mapper

    mode = run_sched.config["mode"]
    made = {} if mapper is None else {(mapper, mode): run_sched}
    out = {}
    for name, (m, md) in TABLE_I.items():
        md = md or mode
        if (m, md) not in made:
            made[(m, md)] = get_mapper(m, mode=md, time_limit_s=time_limit_s, work_limit=work_limit).map(cm)
        out[name] = made[(m, md)]
    return out


def _replay(bound, s: Schedule, want: float, sample: int, contention) -> Any:
    """``s`` replayed on the one simulator for ``bound``'s sample; without contention it must reproduce the
    evaluator's latency ``want`` (1e-9 relative).

    Raises:
        ScheduleError: the replay disagrees with the evaluator.
    """
    from hetsim.sim import simulate

    r = simulate(bound, s, contention)
    if not contention and abs(r.makespan_s - want) > 1e-9 * max(1.0, want):
        raise ScheduleError(f"SimPy replay ({r.makespan_s:.9g} s) disagrees with the evaluator ({want:.9g} s) "
                            f"on sample {sample} in {s.config.get('mode')} mode")
    return r


def _replays(cm, run_sched: Schedule, res: ConfigResult, sample: int, contention, timeline: bool):
    """The run's schedule replayed on ``sample``, and (with ``timeline``) the same mapping in both modes as
    traces annotated with layer, timestep and op kind."""
    from hetsim.mappers.spikeduet import MODES, makespans, snn_schedule

    bound = cm.at_sample(sample)
    wl = cm.workload
    mode = run_sched.config["mode"]

    def annotated(trace):
        steps = [wl.steps[v] for v in trace["op"]]
        return trace.assign(layer=[s.layer for s in steps], t=[s.t for s in steps], step=[s.kind for s in steps])

    result = _replay(bound, run_sched, float(res.latency_s[sample]), sample, contention)
    traces = {}
    if timeline:
        for md in MODES:
            if md == mode:
                traces[md] = annotated(result.trace)
            else:
                other = snn_schedule(cm, res.choices, md, run_sched.mapper, run_sched.stats)
                want = float(makespans(cm, res.choices, md)[sample])
                traces[md] = annotated(_replay(bound, other, want, sample, contention).trace)
    return result, traces


def validate_snn_schedule(cm, schedule: Schedule, rel_tol: float = 1e-9, sample: int | None = None):
    """``hetsim validate`` for a spiking network: the schedule's decisions fit (engines, residencies, SRAM and
    Flash: :meth:`~hetsim.snn.activity_costs.ActivityCostModel.schedule_violations`, then the one checker), and the
    SimPy replay of one eval sample (default: the median-latency one) reproduces the vectorised evaluator's
    latency of that sample to ``rel_tol``.

    Returns:
        A :class:`~hetsim.validate.ValidationReport` (``predicted_makespan_s``: the evaluator's latency of the
        sample; ``contention_makespan_s``: ``None``, nothing moves between engines that share SRAM).
    """
    from hetsim.check import check_schedule
    from hetsim.sim import simulate
    from hetsim.validate import ValidationReport

    rep = ValidationReport()
    rep.violations = cm.schedule_violations(schedule)
    if rep.violations:
        return rep
    c = evaluate_config("schedule", schedule, cm)
    if sample is None:
        sample = int(np.argsort(c.latency_s, kind="stable")[len(c.latency_s) // 2])
    bound = cm.at_sample(sample).for_schedule(schedule)
    rep.violations = check_schedule(bound, schedule, rel_tol=rel_tol).violations
    if rep.violations:
        return rep
    want = float(c.latency_s[sample])
    rep.predicted_makespan_s = want
    rep.replay_makespan_s = simulate(bound, schedule).makespan_s
    if abs(rep.replay_makespan_s - want) > rel_tol * max(abs(want), 1e-30):
        rep.divergence = (f"replayed latency of eval sample {sample} {rep.replay_makespan_s:.12g} s != the "
                          f"evaluator's {want:.12g} s")
    return rep


@dataclass
class ConfigResult:
    """One configuration (a mapper's schedule in an execution mode) evaluated on the eval split: per-sample
    latency (s), energy (J) and busy time of the host and the MVP (s)."""

    name: str
    schedule: Schedule
    mode: str
    latency_s: np.ndarray
    energy_j: np.ndarray
    m33_busy_s: np.ndarray
    mvp_busy_s: np.ndarray

    @property
    def choices(self) -> list:
        """The schedule's per-layer engine and residency (:class:`~hetsim.snn.activity_costs.LayerChoice`)."""
        from hetsim.snn.activity_costs import LayerChoice

        return [LayerChoice.from_dict(x) for x in self.schedule.config["layers"]]


@dataclass
class SnnTables:
    """What a spiking network's run adds to :class:`~hetsim.result.RunResult` (``run.snn``): plain data.

    Attributes:
        network: the network run (reordered when ``reorder`` is set).
        mode: the execution mode of the run's schedule.
        configs: SpikeDuet's Table I configurations (:data:`TABLE_I`, and the run's own when it is none of them)
            on the eval split.
        key: which of ``configs`` is the run's.
        layers: per affine layer (:func:`layer_table`; ``layers.csv``).
        traces: the run's mapping replayed on the timeline sample in each mode (``async``, ``blocking``;
            columns of :data:`hetsim.sim.engine.TRACE_COLUMNS` plus ``layer``, ``t``, ``step`` = op kind);
            empty when the run skipped them (sweeps).
        sample: the eval-split sample replayed (``RunResult.result``, ``trace``, ``ops``, ``devices``).
        mvp: the platform's name of the MVP.
        reorder: the neuron reordering applied first, if any.
    """

    network: object
    mode: str
    configs: dict[str, ConfigResult]
    key: str
    layers: Any
    traces: dict[str, pd.DataFrame]
    sample: int
    mvp: str
    reorder: object | None = None

    @property
    def result(self) -> ConfigResult:
        return self.configs[self.key]


def evaluate_config(name: str, schedule: Schedule, cm) -> ConfigResult:
    """``schedule`` (an SNN mapper's) priced on every sample of ``cm``'s split; energy per sample is each
    engine's :meth:`~hetsim.devices.base.DeviceBase.energy_j` (``active_w * busy + idle_w * (makespan -
    busy)``, the one energy formula)."""
    from hetsim.mappers.spikeduet import makespans
    from hetsim.snn.activity_costs import LayerChoice

    mode = schedule.config["mode"]
    choices = [LayerChoice.from_dict(x) for x in schedule.config["layers"]]
    lat = makespans(cm, choices, mode)
    m33, mvp = cm.engine_work(choices)
    energy = sum(sum(dev.energy_j(busy, lat)) for dev, busy in ((cm.m33, m33), (cm.mvp, mvp)))
    return ConfigResult(name, schedule, mode, lat, energy, m33, mvp)


def layer_table(cm, choices: list) -> pd.DataFrame:
    """Per affine layer on ``cm``'s split: shape, engine, residency, hot columns, SRAM KiB, mean cycles per
    timestep on the chosen engine and on each alternative engine (at the chosen residency when it applies to
    that engine, else SRAM when its table fits the budget on its own, else Flash), active input columns, raw
    ranges and MVP launches (after gap merging) per timestep."""
    import pandas as pd

    from hetsim.devices.efr32 import ENGINE_M33, ENGINE_MVP_DENSE, ENGINE_MVP_RANGE
    from hetsim.snn.activity import range_counts

    rows = []
    for li, (lc, c) in enumerate(zip(cm.layers, choices, strict=True)):
        def mem(engine: str, c=c, lc=lc) -> str:
            if engine == c.engine or (engine != ENGINE_M33 and c.engine != ENGINE_M33):  # same engine family
                return c.residency
            if lc.weight_bytes(engine) <= cm.budget_sram:
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
                                                    cm.budget_sram // (lc.n_out * cm.m33.weight_bytes)).mean()),
            "mvp_range_cycles_per_t": float(lc.mvp_range_cycles(mem(ENGINE_MVP_RANGE)).mean()),
            "mvp_dense_cycles_per_t": float(lc.mvp_dense_cycles(mem(ENGINE_MVP_DENSE)).mean()),
            "active_per_t": float(lc.active.mean()),
            "ranges_per_t": float(raw.mean()),
            "launches_per_t": float(lc.launches[mem(ENGINE_MVP_RANGE)].mean()),
        })
    return pd.DataFrame(rows)


def summarize_snn(costs, schedule: Schedule, result, tables: SnnTables, mismatches: bool = True) -> dict:
    """A spiking network's run as plain data (``summary.json``): the keys of every run (workload, platform,
    mapper, operators, ``makespan_s`` = the mean latency over the eval split, ``energy_j`` = the mean energy
    per inference, baseline (all-m33) and speed-up, devices of the replayed sample, mapper_stats, contention)
    and the SNN's own: mode, layers, timesteps, eval_split, samples, mean latency in ms and cycles, SRAM used
    and budget, plan_stats, timeline_sample, per_layer, configs (SpikeDuet's Table I), and, with
    ``mismatches``, the spike bits where the recorded rasters differ from the network's replay
    (:func:`hetsim.snn.network.replay_mismatches`)."""
    from hetsim.analysis.metrics import device_table

    cm, net = costs, tables.network
    hz = cm.m33_hz
    res = tables.result
    base = tables.configs[BASELINE_CONFIG].latency_s.mean()

    def ratio(a, b):
        """``a / b``, or ``None`` (JSON null) when ``b`` is 0 (a platform whose costs are all zero)."""
        return float(a / b) if b > 0 else None

    def cfg(c: ConfigResult) -> dict:
        st = c.schedule.stats
        return {"mode": c.mode, "mean_latency_ms": float(c.latency_s.mean() * 1e3),
                "mean_latency_cycles": float(c.latency_s.mean() * hz),
                "max_latency_ms": float(c.latency_s.max() * 1e3),
                "mean_energy_uj": float(c.energy_j.mean() * 1e6),
                "speedup_vs_all_m33": ratio(base, c.latency_s.mean()),
                "mvp_utilisation": ratio(c.mvp_busy_s.sum(), c.latency_s.sum()),
                "m33_utilisation": ratio(c.m33_busy_s.sum(), c.latency_s.sum()),
                "layers": list(c.schedule.config["layers"]),
                "sram_kib": st.get("sram_bytes", 0) / 1024, "planned_on": st.get("split"),
                "plan_mean_latency_ms": st.get("plan_mean_latency_s", float("nan")) * 1e3}

    mean = float(res.latency_s.mean())
    stats = dict(schedule.stats)
    s = {
        "workload": net.name, "platform": cm.platform.name, "mapper": schedule.mapper,
        "operators": len(cm.workload), "makespan_s": mean,
        "predicted_makespan_s": schedule.makespan_s,
        "baseline": BASELINE_CONFIG, "baseline_makespan_s": float(base),
        "speedup": ratio(base, mean), "energy_j": float(res.energy_j.mean()),
        "devices": device_table(costs, result).to_dict(orient="records"),
        "contention": sorted(result.contention), "mapper_stats": stats,
        "mode": tables.mode, "layers": net.layer_sizes, "timesteps": net.timesteps, "eval_split": cm.split,
        "samples": int(len(res.latency_s)), "mean_latency_ms": mean * 1e3,
        "mean_latency_cycles": float(res.latency_s.mean() * hz),
        "mean_energy_uj": float(res.energy_j.mean() * 1e6),
        "speedup_vs_all_m33": ratio(base, mean),
        "sram_used_kib": stats.get("sram_bytes", 0) / 1024, "sram_budget_kib": cm.budget_sram / 1024,
        "plan_stats": {k: stats[k] for k in ("plans", "fit", "evaluated", "pruned", "solve_time_s", "split",
                                             "status", "gap") if k in stats},
        "timeline_sample": tables.sample,
        "timeline_makespan_s": result.makespan_s,
        "per_layer": tables.layers.to_dict(orient="records"),
        "configs": {k: cfg(c) for k, c in tables.configs.items()},
    }
    if mismatches:
        from hetsim.snn.network import replay_mismatches

        s["replay_mismatch_bits"] = replay_mismatches(net)
    if tables.reorder is not None:
        s["reorder"] = tables.reorder.summary()
    return s
