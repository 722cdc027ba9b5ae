"""One run of a DAG of tensor operators: cost model, mapping (or a saved schedule), the replay, the baseline's
replay, the activation footprint and the summary (what :func:`hetsim.pipeline.run` does with kind ``dag``)."""

from __future__ import annotations

from hetsim.errors import MappingError
from hetsim.result import RunResult
from hetsim.workload.kinds import DAG


def run_dag(platform, workload, mapper: str, contention: frozenset[str], mapper_options: dict, schedule, options,
            load) -> RunResult:
    """Map ``workload`` onto ``platform`` and replay it; the baseline is the platform's ``baseline`` mapper on the
    same platform (``None`` when that mapper refuses the model; then ``summary["baseline_error"]`` holds the
    refusal and the speed-up is ``None``). Arguments as :meth:`hetsim.kinds.WorkloadKind.run`; ``options`` a
    :class:`~hetsim.dag.DagOptions`.

    Raises:
        InputError: (subclasses) for bad inputs, see :mod:`hetsim.errors`.
    """
    from hetsim.analysis.metrics import summarize
    from hetsim.check import require_made_for
    from hetsim.costs import CostModel
    from hetsim.mappers import get_mapper
    from hetsim.mappers.base import check_baseline, mapper_or_schedule
    from hetsim.pipeline import activation_memory
    from hetsim.platform import Platform, load_platform
    from hetsim.sim import simulate

    m, schedule = mapper_or_schedule(mapper, mapper_options, schedule, DAG,
                                      "maps spiking networks: give an SNN spec (.yaml), e.g. "
                                      "workloads/snn/braille384.yaml")
    plat = platform if isinstance(platform, Platform) else load_platform(platform)
    where = None if isinstance(platform, Platform) else str(platform)
    check_baseline(plat, where)  # its name, before the model is read
    wl = load(workload)
    costs = CostModel(wl, plat, fold_constants=options.fold_constants, fusion=options.fusion)
    check_baseline(plat, where, DAG)  # it maps such models: after the cost model's check the platform runs them
    if schedule is not None:
        require_made_for(costs, schedule)  # its workload, platform and devices: one line, before the replay
    sched = schedule if schedule is not None else m.map(costs)
    result = simulate(costs, sched, contention)
    base_name = plat.baseline
    baseline_error = None
    if sched.mapper == base_name:
        baseline = result
    else:
        try:
            baseline = simulate(costs, get_mapper(base_name).map(costs), contention)
        except MappingError as e:  # the host cannot run every op, or the baseline mapping does not fit
            baseline, baseline_error = None, str(e)
    footprints, summary_memory = activation_memory(costs, sched, result, options.spill)
    summary = summarize(costs, sched, result, baseline)
    if baseline_error is not None:  # why there is no speed-up: the baseline mapper's refusal
        summary["baseline_error"] = baseline_error
    summary["memory"] = summary_memory
    # a saved schedule replayed: its mapper and solver statistics are the file's, not of a mapping made now
    summary["replayed_schedule"] = schedule is not None
    charged = summary["memory"].get("spill")
    if charged is not None:  # the spill traffic, serialised after the schedule (an upper bound: no overlap)
        charged["makespan_with_spill_s"] = summary["makespan_s"] + charged["time_s"]
        charged["energy_with_spill_j"] = summary["energy_j"] + charged["energy_j"]
    return RunResult(costs, sched, result, baseline, summary, footprints=footprints)
