"""The result of one run (:class:`RunResult`): what :func:`hetsim.run`, ``hetsim run`` and every sweep point
return, for tensor-operator models and spiking networks alike. A leaf module: it holds the data and reads the
per-device and per-op tables (:mod:`hetsim.analysis.metrics`) and figures (:mod:`hetsim.analysis.plots`) on demand,
so the pipeline, the SNN evaluation and the report writers all import it without importing each other."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hetsim.costs import CostModel
    from hetsim.platform import Platform
    from hetsim.schedule import Schedule
    from hetsim.sim import SimResult
    from hetsim.workload import Workload


@dataclass(repr=False)
class RunResult:
    """Everything one run produced.

    Attributes:
        costs: the cost model (workload x platform).
        schedule: the mapper's schedule (or the one replayed).
        result: the replay (:class:`~hetsim.sim.engine.SimResult`).
        baseline: the replay of the platform's baseline mapper (``None`` when that mapper refuses the model: the
            host cannot run every op, or the baseline mapping does not fit; ``summary["baseline_error"]`` says why).
        summary: what ``summary.json`` holds (:func:`~hetsim.analysis.metrics.summarize`; for a spiking network
            :func:`~hetsim.snn.evaluate.summarize_snn`, the same keys plus the SNN's).
        footprints: the activation footprints (:func:`~hetsim.analysis.footprint.run_footprints`: ``replay`` and,
            when the schedule predicts its times, ``predicted``); computed on first use when not given.
        snn: for a spiking network, its extra tables (:class:`~hetsim.snn.evaluate.SnnTables`: SpikeDuet's Table I
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
    footprints: Any = None

    @property
    def footprint(self):
        """The activation footprint of the replay (:class:`~hetsim.analysis.footprint.Footprint`: live bytes per
        memory over time, peaks, capacities); ``None`` for a spiking network."""
        if self.snn is not None:
            return None
        if self.footprints is None:
            from hetsim.analysis.footprint import run_footprints

            self.footprints = run_footprints(self.costs, self.schedule, self.result)
        return self.footprints["replay"]

    def plot_memory(self, path=None, title: str | None = None):
        """Live activation bytes per memory over time (:func:`~hetsim.analysis.footprint.memory_figure`), as a
        matplotlib Figure; also saved to ``path`` when given. The figure stays open."""
        from hetsim.analysis.footprint import memory_figure
        from hetsim.analysis.plots import save_figure

        fig = memory_figure(self.footprint, self._title() if title is None else title)
        if path is not None:
            save_figure(fig, path, close=False)
        return fig

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
        """Per device and link: busy time, utilisation, energy (:func:`~hetsim.analysis.metrics.device_table`)."""
        from hetsim.analysis.metrics import device_table

        return device_table(self.costs, self.result)

    @property
    def ops(self):
        """Per op: device, start, finish, ... as in ``ops.csv`` (:func:`~hetsim.analysis.metrics.op_table`)."""
        from hetsim.analysis.metrics import op_table

        return op_table(self.costs, self.schedule, self.result)

    @cached_property
    def breakdown(self):
        """Busy time and energy per device and op type, as in ``breakdown.csv``
        (:func:`~hetsim.analysis.breakdown.op_type_breakdown`; a spiking network: of the replayed sample);
        computed on first use."""
        from hetsim.analysis.breakdown import op_type_breakdown

        return op_type_breakdown(self.costs, self.result)

    @cached_property
    def critical_path(self):
        """The replay's critical path (its ops first, in order) and every op's slack, as in ``critical_path.csv``
        (:func:`~hetsim.analysis.breakdown.critical_path`; a spiking network: of the replayed sample); computed
        on first use."""
        from hetsim.analysis.breakdown import critical_path

        return critical_path(self.costs, self.schedule, self.result)

    @property
    def trace(self):
        """The replay's busy intervals (:attr:`~hetsim.sim.engine.SimResult.trace`), as in ``trace.csv``."""
        return self.result.trace

    def _title(self) -> str:
        return f"{self.workload.name} on {self.platform.name} ({self.schedule.mapper})"

    def breakdown_table(self):
        """Busy time and op count per compute device of the baseline (when there is one) and of this run: the
        rows of ``breakdown.png`` (:func:`~hetsim.analysis.plots.breakdown_figure`)."""
        import pandas as pd

        from hetsim.analysis.metrics import device_table
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
        """Gantt chart of the replay, one row group per device and link (:func:`~hetsim.analysis.plots.
        timeline_figure`), as a matplotlib Figure; also saved to ``path`` when given (PNG, SVG or PDF by suffix;
        no suffix: PNG and SVG). The figure stays open (``plt.close(fig)`` when done)."""
        from hetsim.analysis.plots import save_figure, timeline_figure

        fig = timeline_figure(self.trace, self._title() if title is None else title, host=self.platform.host)
        if path is not None:
            save_figure(fig, path, close=False)
        return fig

    def plot_breakdown(self, path=None, title: str | None = None):
        """Latency share and op count per device, baseline vs this run (:meth:`breakdown_table`,
        :func:`~hetsim.analysis.plots.breakdown_figure`), as a matplotlib Figure; also saved to ``path`` when
        given. The figure stays open."""
        from hetsim.analysis.plots import breakdown_figure, save_figure

        fig = breakdown_figure(self.breakdown_table(), self._title() if title is None else title)
        if path is not None:
            save_figure(fig, path, close=False)
        return fig

    def __repr__(self) -> str:
        s = self.summary
        speedup = f"{s['speedup']:.2f}x" if s.get("speedup") is not None else "n/a"
        from hetsim.numbers import format_value

        return (f"<RunResult {s['workload']} on {s['platform']}, mapper {s['mapper']}: makespan "
                f"{format_value(s['makespan_s'], 's')}, energy {format_value(s['energy_j'], 'J')}, speedup {speedup}>")
