"""The whole pipeline in one place: load, cost, map, simulate, summarise (what ``hetsim run`` and
:func:`hetsim.run` do)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

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
        summary: what ``summary.json`` holds (:func:`~hetsim.report.metrics.summarize`).
    """

    costs: CostModel
    schedule: Schedule
    result: SimResult
    baseline: SimResult | None
    summary: dict

    @property
    def workload(self) -> Workload:
        return self.costs.workload

    @property
    def platform(self) -> Platform:
        return self.costs.platform

    @property
    def makespan_s(self) -> float:
        """Makespan of the replay, seconds."""
        return self.result.makespan_s

    @property
    def energy_j(self) -> float:
        """Energy of the replay over every device and link, joules."""
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


def load_workload(path: str | Path) -> Workload:
    """Read an ONNX model into a :class:`~hetsim.workload.Workload`.

    Raises:
        InputError: a spiking network (an SNN spec ``.yaml`` or a NIR graph ``.nir``: :func:`hetsim.api.load_snn`),
            or a missing or malformed model (:class:`~hetsim.errors.WorkloadError`).
    """
    if Path(path).suffix.lower() in SNN_SUFFIXES:
        raise InputError(f"{str(path)!r} is a spiking network, not an ONNX model: hetsim.load_snn reads it, "
                         f"hetsim.run(PLATFORM, {str(path)!r}) runs it, as does hetsim run PLATFORM.yaml {path}")
    return load_onnx(path)


def run(
    platform: Platform | str | Path,
    workload: Workload | str | Path,
    mapper: str = "cpsat",
    contention: str | Iterable[str] | None = frozenset(),
    mapper_options: dict | None = None,
    schedule: Schedule | str | Path | None = None,
    fold_constants: bool = True,
) -> RunResult:
    """Map ``workload`` onto ``platform`` and replay it; the baseline is the platform's ``baseline`` mapper
    (``all-host`` unless the platform says otherwise) on the same platform
    (``None`` when the host cannot run every op).

    Args:
        platform: a Platform or a path to its YAML.
        workload: a Workload or a path to an ONNX model.
        mapper: registered mapper name (ignored when ``schedule`` is given).
        contention: contention kinds to model in both replays: ``"links,cim-bus"``, ``"all"``, ``"none"`` or a
            set of kinds (:func:`~hetsim.sim.engine.parse_contention`).
        mapper_options: keyword arguments for the mapper (an option it does not take is an error).
        schedule: replay this schedule (or schedule JSON file) instead of running a mapper.
        fold_constants: ops computed only from constants cost nothing (ONNX Runtime folds them at session
            creation); ``False`` charges them like any op (:class:`~hetsim.costs.CostModel`).

    Raises:
        InputError: (subclasses) for bad inputs, see :mod:`hetsim.errors`.
    """
    kinds = parse_contention(contention)
    options = dict(mapper_options or {})
    if schedule is not None:
        if options:
            raise InputError(f"mapper options ({', '.join(options)}) apply when a mapper runs, not when a schedule "
                             "is replayed")
        if not isinstance(schedule, Schedule):
            schedule = Schedule.load(schedule)
        m = None
    else:
        m = get_mapper(mapper, **options)  # a misspelt name or option fails before the model is read
    plat = platform if isinstance(platform, Platform) else load_platform(platform)
    wl = workload if isinstance(workload, Workload) else load_workload(workload)
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
