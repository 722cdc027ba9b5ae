"""The whole pipeline in one place: load, cost, map, simulate, summarise (what ``hetsim run`` does)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hetsim.costs import CostModel
from hetsim.errors import MappingError
from hetsim.mappers import get_mapper
from hetsim.platform import Platform, load_platform
from hetsim.report.metrics import device_table, summarize
from hetsim.schedule import Schedule
from hetsim.sim import SimResult, simulate
from hetsim.workload import Workload, load_onnx


@dataclass
class RunResult:
    """Everything one run produced."""

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
    def devices(self):
        """Per device and link: busy time, utilisation, energy (:func:`~hetsim.report.metrics.device_table`)."""
        return device_table(self.costs, self.result)


def run(
    platform: Platform | str | Path,
    workload: Workload | str | Path,
    mapper: str = "cpsat",
    contention: frozenset[str] = frozenset(),
    mapper_options: dict | None = None,
    schedule: Schedule | None = None,
) -> RunResult:
    """Map ``workload`` onto ``platform`` and replay it; the baseline is the platform's ``baseline`` mapper
    (``all-host`` unless the platform says otherwise) on the same platform
    (``None`` when the host cannot run every op).

    Args:
        platform: a Platform or a path to its YAML.
        workload: a Workload or a path to an ONNX model.
        mapper: registered mapper name (ignored when ``schedule`` is given).
        contention: contention kinds to model in both replays.
        mapper_options: keyword arguments for the mapper.
        schedule: replay this schedule instead of running a mapper.

    Raises:
        InputError: (subclasses) for bad inputs, see :mod:`hetsim.errors`.
    """
    plat = platform if isinstance(platform, Platform) else load_platform(platform)
    wl = workload if isinstance(workload, Workload) else load_onnx(workload)
    costs = CostModel(wl, plat)
    if schedule is not None:
        schedule.check_made_for(wl.name)
    sched = schedule if schedule is not None else get_mapper(mapper, **(mapper_options or {})).map(costs)
    result = simulate(costs, sched, contention)
    base_name = plat.baseline
    if sched.mapper == base_name:
        baseline = result
    else:
        try:
            baseline = simulate(costs, get_mapper(base_name).map(costs), contention)
        except MappingError:  # e.g. the host cannot run every op: no CPU-only baseline exists
            baseline = None
    return RunResult(costs, sched, result, baseline, summarize(costs, sched, result, baseline))
