"""The whole pipeline in one place: load, cost, map, simulate, summarise (what ``hetsim run`` and
:func:`hetsim.run` do), for ONNX models and for spiking networks (SNN specs: the SNN front end unrolls them into
the operator DAG, :mod:`hetsim.snn.unroll`, priced per sample by :class:`~hetsim.activity_costs.ActivityCostModel`,
mapped by the SNN mappers of :mod:`hetsim.mappers.spikeduet` and replayed by the one simulator)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hetsim.costs import CostModel
from hetsim.errors import InputError, MappingError
from hetsim.mappers import get_mapper
from hetsim.platform import Platform, load_platform
from hetsim.report.metrics import device_table, op_table, summarize
from hetsim.schedule import Schedule
from hetsim.sim import SimResult, simulate
from hetsim.sim.engine import parse_contention
from hetsim.workload import Workload, load_onnx

SNN_SUFFIXES = (".yaml", ".yml", ".nir")


@dataclass(repr=False)
class RunResult:
    """Everything one run produced.

    Attributes:
        costs: the cost model (workload x platform).
        schedule: the mapper's schedule (or the one replayed).
        result: the replay (:class:`~hetsim.sim.engine.SimResult`).
        baseline: the replay of the platform's baseline mapper (``None`` when the host cannot run every op).
        summary: what ``summary.json`` holds (:func:`~hetsim.report.metrics.summarize`; for a spiking network
            :func:`~hetsim.report.snn.summarize_snn`, the same keys plus the SNN's).
        snn: for a spiking network, its extra tables (:class:`~hetsim.report.snn.SnnTables`: SpikeDuet's Table I
            configurations, per layer engine/residency/cycles/launches, per-sample latencies, both modes' traces);
            ``None`` for ONNX models. Then ``result``, ``trace``, ``ops`` and ``devices`` describe the replay of
            one eval sample (``snn.sample``), while ``makespan_s`` and ``energy_j`` are means over the eval split.
    """

    costs: CostModel
    schedule: Schedule
    result: SimResult
    baseline: SimResult | None
    summary: dict
    snn: Any = None

    @property
    def workload(self) -> Workload:
        return self.costs.workload

    @property
    def platform(self) -> Platform:
        return self.costs.platform

    @property
    def makespan_s(self) -> float:
        """Makespan of the replay, seconds (a spiking network: the mean latency over its eval split)."""
        return self.summary["makespan_s"]

    @property
    def energy_j(self) -> float:
        """Energy of the replay over every device and link, joules (a spiking network: the mean per inference
        over its eval split)."""
        return self.summary["energy_j"]

    @property
    def speedup(self) -> float | None:
        """Baseline makespan / makespan (``None`` without a baseline)."""
        return self.summary["speedup"]

    @property
    def devices(self):
        """Per device and link: busy time, utilisation, energy (:func:`~hetsim.report.metrics.device_table`)."""
        return device_table(self.costs, self.result)

    @property
    def ops(self):
        """Per op: device, start, finish, ... as in ``ops.csv`` (:func:`~hetsim.report.metrics.op_table`)."""
        return op_table(self.costs, self.schedule, self.result)

    @property
    def trace(self):
        """The replay's busy intervals (:attr:`~hetsim.sim.engine.SimResult.trace`), as in ``trace.csv``."""
        return self.result.trace

    def _title(self) -> str:
        return f"{self.workload.name} on {self.platform.name} ({self.schedule.mapper})"

    def breakdown_table(self):
        """Busy time and op count per compute device of the baseline (when there is one) and of this run: the
        rows of ``breakdown.png`` (:func:`~hetsim.report.plots.breakdown_figure`)."""
        import pandas as pd

        from hetsim.devices.link import LINK_KIND

        configs = [(self.schedule.mapper, self.result)]
        if self.baseline is not None and self.baseline is not self.result:
            configs.insert(0, (self.platform.baseline, self.baseline))
        rows = []
        for config, res in configs:
            t = device_table(self.costs, res)
            t = t[t["kind"] != LINK_KIND]
            t.insert(0, "config", config)
            rows.append(t)
        return pd.concat(rows, ignore_index=True)

    def plot_timeline(self, path=None, title: str | None = None):
        """Gantt chart of the replay, one row group per device and link (:func:`~hetsim.report.plots.
        timeline_figure`), as a matplotlib Figure; also saved to ``path`` when given (PNG, SVG or PDF by suffix;
        no suffix: PNG and SVG). The figure stays open (``plt.close(fig)`` when done)."""
        from hetsim.report.plots import save_figure, timeline_figure

        fig = timeline_figure(self.trace, self._title() if title is None else title, host=self.platform.host)
        if path is not None:
            save_figure(fig, path, close=False)
        return fig

    def plot_breakdown(self, path=None, title: str | None = None):
        """Latency share and op count per device, baseline vs this run (:meth:`breakdown_table`,
        :func:`~hetsim.report.plots.breakdown_figure`), as a matplotlib Figure; also saved to ``path`` when
        given. The figure stays open."""
        from hetsim.report.plots import breakdown_figure, save_figure

        fig = breakdown_figure(self.breakdown_table(), self._title() if title is None else title)
        if path is not None:
            save_figure(fig, path, close=False)
        return fig

    def __repr__(self) -> str:
        s = self.summary
        speedup = f"{s['speedup']:.2f}x" if s.get("speedup") is not None else "n/a"
        return (f"<RunResult {s['workload']} on {s['platform']}, mapper {s['mapper']}: makespan "
                f"{s['makespan_s'] * 1e3:.3f} ms, energy {s['energy_j'] * 1e3:.3f} mJ, speedup {speedup}>")


def is_snn_path(path: str | Path) -> bool:
    """True for a spiking network (an SNN spec ``.yaml``/``.yml`` or a NIR graph ``.nir``), false for an ONNX
    model."""
    return Path(path).suffix.lower() in SNN_SUFFIXES


def load_workload(path: str | Path, spikes: str | Path | None = None,
                  input_shape: Mapping[str, Sequence[int]] | None = None) -> Workload:
    """Read an ONNX model into a :class:`~hetsim.workload.Workload`, or a spiking network (an SNN spec ``.yaml``
    or a NIR graph ``.nir`` with ``spikes``, its input raster: :func:`hetsim.snn.network.load_snn`) into its
    unrolled :class:`~hetsim.snn.unroll.SnnWorkload`.

    Args:
        path: an ONNX model, an SNN spec or a NIR graph.
        spikes: a NIR graph's input raster (``.npz``).
        input_shape: graph input name -> dims, fixing the dynamic dims of an ONNX model's inputs (the CLI's
            ``--input-shape x=1,3,224,224``); see :func:`~hetsim.workload.load_onnx` (its ``input_shapes``).

    Raises:
        InputError: a missing or malformed model or spec, a NIR graph without ``spikes``, ``input_shape`` for a
            spiking network
            (:class:`~hetsim.errors.WorkloadError`).
    """
    if is_snn_path(path):
        if input_shape is not None:
            raise InputError("input_shape fixes the input dims of an ONNX model, not of a spiking network")
        from hetsim.snn.network import load_snn
        from hetsim.snn.unroll import unroll

        return unroll(load_snn(path, spikes=spikes))
    return load_onnx(path, input_shapes=input_shape)


def _mapper_or_schedule(mapper: str, options: dict, schedule, kind: str, wrong_kind: str):
    """The mapper to run (``None`` when a saved ``schedule`` is replayed) and the schedule read if it is a path.

    Raises:
        InputError: mapper options given with a schedule to replay, or a mapper that does not map ``kind``
            workloads (``wrong_kind`` finishes the message); an unknown mapper or option (from
            :func:`hetsim.mappers.get_mapper`, before the model is read).
    """
    if schedule is not None:
        if options:
            raise InputError(f"mapper options ({', '.join(options)}) apply when a mapper runs, not when a schedule "
                             "is replayed")
        return None, schedule if isinstance(schedule, Schedule) else Schedule.load(schedule)
    m = get_mapper(mapper, **options)
    if kind not in _mapper_workloads(m):
        raise InputError(f"mapper {mapper!r} {wrong_kind}")
    return m, None


def _mapper_workloads(m) -> frozenset[str]:
    return getattr(m, "workloads", frozenset({"onnx"}))


def _snn_of(workload, spikes=None):
    """The :class:`~hetsim.snn.network.SNN` a workload argument stands for, or ``None`` for an ONNX model
    (``spikes``: a NIR graph's input raster)."""
    from hetsim.snn.network import SNN, load_snn
    from hetsim.snn.unroll import SnnWorkload

    if isinstance(workload, SNN):
        return workload
    if isinstance(workload, SnnWorkload):
        return workload.snn
    if isinstance(workload, str | Path) and (is_snn_path(workload) or spikes is not None):
        return load_snn(workload, spikes=spikes)
    return None


def run(
    platform: Platform | str | Path,
    workload: Workload | str | Path,
    mapper: str | None = None,
    contention: str | Iterable[str] | None = frozenset(),
    mapper_options: dict | None = None,
    schedule: Schedule | str | Path | None = None,
    fold_constants: bool = True,
    *,
    reorder: bool = False,
    sample: int | None = None,
    seed: int = 0,
    timeline: bool = True,
    spikes: str | Path | None = None,
    input_shape: Mapping[str, Sequence[int]] | None = None,
) -> RunResult:
    """Map ``workload`` onto ``platform`` and replay it; the baseline is the platform's ``baseline`` mapper
    (``all-host`` unless the platform says otherwise) on the same platform
    (``None`` when the host cannot run every op).

    Args:
        platform: a Platform or a path to its YAML.
        workload: a Workload or a path to an ONNX model; or a spiking network (an SNN spec ``.yaml``, a NIR
            graph ``.nir`` with ``spikes``, an :class:`~hetsim.snn.network.SNN` or its
            :class:`~hetsim.snn.unroll.SnnWorkload`): see :func:`run_snn` for what its run adds.
        mapper: registered mapper name (ignored when ``schedule`` is given); default ``cpsat`` for ONNX models,
            ``spikeduet`` for spiking networks.
        contention: contention kinds to model in both replays: ``"links,cim-bus"``, ``"all"``, ``"none"`` or a
            set of kinds (:func:`~hetsim.sim.engine.parse_contention`).
        mapper_options: keyword arguments for the mapper (an option it does not take is an error).
        schedule: replay this schedule (or schedule JSON file) instead of running a mapper.
        fold_constants: ops computed only from constants cost nothing (ONNX Runtime folds them at session
            creation); ``False`` charges them like any op (:class:`~hetsim.costs.CostModel`).
        reorder, sample, seed, timeline: spiking networks only (:func:`run_snn`).
        spikes: for a NIR graph (``.nir``), the ``.npz`` of its input raster (:func:`hetsim.snn.network.load_snn`).
        input_shape: graph input name -> dims for the dynamic dims of an ONNX model read from a path
            (:func:`load_workload`); an error with a :class:`Workload` already read.

    Raises:
        InputError: (subclasses) for bad inputs, see :mod:`hetsim.errors`.
    """
    kinds = parse_contention(contention)
    options = dict(mapper_options or {})
    net = _snn_of(workload, spikes)
    if net is not None and input_shape is not None:
        raise InputError("input_shape fixes the input dims of an ONNX model, not of a spiking network")
    if net is not None:
        return run_snn(platform, net, mapper or "spikeduet", kinds, options, schedule, reorder=reorder,
                       sample=sample, seed=seed, timeline=timeline)
    snn_only = [k for k, v in (("reorder", reorder), ("sample", sample)) if v not in (False, None)]
    if snn_only:
        raise InputError(f"{', '.join(snn_only)} apply to spiking networks (an SNN spec .yaml), not to ONNX models")
    mapper = mapper or "cpsat"
    m, schedule = _mapper_or_schedule(mapper, options, schedule, "onnx",
                                      "maps spiking networks: give an SNN spec (.yaml), e.g. "
                                      "workloads/snn/braille384.yaml")
    plat = platform if isinstance(platform, Platform) else load_platform(platform)
    if input_shape is not None and isinstance(workload, Workload):
        raise InputError("input_shape applies when the model is read: give the ONNX path, or read it with "
                         "load_workload(path, input_shape=...)")
    wl = workload if isinstance(workload, Workload) else load_workload(workload, input_shape=input_shape)
    costs = CostModel(wl, plat, fold_constants=fold_constants)
    if schedule is not None:
        schedule.check_made_for(wl.name)
    sched = schedule if schedule is not None else m.map(costs)
    result = simulate(costs, sched, kinds)
    base_name = plat.baseline
    if sched.mapper == base_name:
        baseline = result
    else:
        try:
            baseline = simulate(costs, get_mapper(base_name).map(costs), kinds)
        except MappingError:  # e.g. the host cannot run every op: no CPU-only baseline exists
            baseline = None
    return RunResult(costs, sched, result, baseline, summarize(costs, sched, result, baseline))


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
    """The pipeline for a spiking network (SpikeDuet Fig. 1(a)), what :func:`run` does with an SNN.

    Steps: optionally reorder hidden neurons on the fit split (:mod:`hetsim.snn.reorder`); unroll the network
    into the operator DAG (:mod:`hetsim.snn.unroll`); price it per sample of the eval split
    (:class:`~hetsim.activity_costs.ActivityCostModel`); map it with ``mapper`` (planned on the plan split); price
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
        mapper_options: the mapper's options; ``time_limit_s`` also applies to the Table I configurations.
        schedule: replay this SNN schedule (or schedule JSON file) instead of mapping.
        reorder: reorder hidden neurons first (function-preserving; verified).
        sample: eval-split sample replayed (default: the sample of median latency).
        seed: the reordering's refinement seed.
        timeline: replay both modes and count replay mismatches; sweeps skip both.

    Returns:
        A :class:`RunResult` with ``snn`` set (:class:`~hetsim.report.snn.SnnTables`).

    Raises:
        InputError: (subclasses) bad platform, network, mapper, option or sample; a reordering that changes
            the network's outputs, or a replay that disagrees with the evaluator, raises
            :class:`~hetsim.errors.ScheduleError`.
    """
    import numpy as np

    from hetsim.activity_costs import ActivityCostModel
    from hetsim.errors import ScheduleError
    from hetsim.mappers.spikeduet import MODES, makespans, snn_schedule
    from hetsim.report.snn import SnnTables, evaluate_config, layer_table, summarize_snn
    from hetsim.snn.network import SNN, load_snn
    from hetsim.snn.unroll import SnnWorkload, unroll

    options = dict(mapper_options or {})
    m, schedule = _mapper_or_schedule(mapper, options, schedule, "snn",
                                      "maps ONNX models; spiking networks take spikeduet, all-m33 or all-dense-mvp")
    plat = platform if isinstance(platform, Platform) else load_platform(platform)
    net = network.snn if isinstance(network, SnnWorkload) else (
        network if isinstance(network, SNN) else load_snn(network))
    S = net.split("eval")[0].shape[0]
    if sample is not None and (isinstance(sample, bool) or not isinstance(sample, int | np.integer)
                               or not 0 <= sample < S):
        raise InputError(f"--sample {sample}: the eval split ({net.roles.eval}) has samples 0..{S - 1}")
    reo = None
    if reorder:
        from hetsim.snn.reorder import reorder_for_platform

        reo = reorder_for_platform(net, plat, seed=seed)
        net = reo.snn
    wl = unroll(net)
    cm = ActivityCostModel(wl, plat, "eval")
    if schedule is not None:
        schedule.check_made_for(wl.name)
        bad = cm.schedule_violations(schedule)
        if bad:
            raise ScheduleError(f"schedule does not fit platform {plat.name!r}: {bad[0]}")
        run_sched, key = schedule, "schedule"
    else:
        run_sched = m.map(cm)
    mode = run_sched.config["mode"]
    tl = options.get("time_limit_s")
    made = {} if schedule is not None else {(mapper, mode): run_sched}

    def sched(name: str, md: str) -> Schedule:
        if (name, md) not in made:
            made[(name, md)] = get_mapper(name, mode=md, time_limit_s=tl).map(cm)
        return made[(name, md)]

    table = {"all-m33": sched("all-m33", mode), "all-dense-mvp": sched("all-dense-mvp", "blocking"),
             "spikeduet-blocking": sched("spikeduet", "blocking"), "spikeduet-async": sched("spikeduet", "async")}
    if schedule is None:
        key = f"spikeduet-{mode}" if mapper == "spikeduet" else mapper
        if mapper == "all-dense-mvp" and mode == "async":
            key = "all-dense-mvp-async"
    table[key] = run_sched
    configs = {k: evaluate_config(k, s, cm) for k, s in table.items()}
    res = configs[key]
    if sample is None:
        sample = int(np.argsort(res.latency_s, kind="stable")[S // 2])
    bound = cm.at_sample(sample)

    def replay(s: Schedule, want: float) -> SimResult:
        r = simulate(bound, s, contention)
        if not contention and abs(r.makespan_s - want) > 1e-9 * max(1.0, want):
            raise ScheduleError(f"SimPy replay ({r.makespan_s:.9g} s) disagrees with the evaluator ({want:.9g} s) "
                                f"on sample {sample} in {s.config.get('mode')} mode")
        return r

    def annotated(trace):
        steps = [wl.steps[v] for v in trace["op"]]
        return trace.assign(layer=[s.layer for s in steps], t=[s.t for s in steps], step=[s.kind for s in steps])

    result = replay(run_sched, float(res.latency_s[sample]))
    traces = {}
    if timeline:
        choices = res.choices
        for md in MODES:
            if md == mode:
                traces[md] = annotated(result.trace)
            else:
                other = snn_schedule(cm, choices, md, run_sched.mapper, run_sched.stats)
                traces[md] = annotated(replay(other, float(makespans(cm, choices, md)[sample])).trace)
    baseline = result if key == "all-m33" else replay(table["all-m33"], float(configs["all-m33"].latency_s[sample]))
    tables = SnnTables(net, mode, configs, key, layer_table(cm, res.choices), traces, sample, cm.mvp_name, reo)
    costs = bound.for_schedule(run_sched)
    summary = summarize_snn(costs, run_sched, result, tables, mismatches=timeline)
    return RunResult(costs, run_sched, result, baseline, summary, snn=tables)
