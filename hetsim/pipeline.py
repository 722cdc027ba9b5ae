"""The whole pipeline in one place: load, cost, map, simulate, summarise (what ``hetsim run`` and
:func:`hetsim.run` do), for ONNX models and for spiking networks (SNN specs: the SNN front end unrolls them into
the operator DAG, :mod:`hetsim.snn.unroll`, priced per sample by :class:`~hetsim.activity_costs.ActivityCostModel`,
mapped by the SNN mappers of :mod:`hetsim.mappers.spikeduet` and replayed by the one simulator)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from hetsim.analysis.metrics import summarize
from hetsim.check import require_made_for
from hetsim.costs import CostModel
from hetsim.errors import InputError, MappingError
from hetsim.mappers import get_mapper
from hetsim.mappers.base import check_baseline, mapper_or_schedule
from hetsim.platform import Platform, load_platform
from hetsim.result import RunResult
from hetsim.schedule import Schedule
from hetsim.sim import simulate
from hetsim.sim.engine import parse_contention
from hetsim.workload import Workload
from hetsim.workload import frontends as _frontends
from hetsim.workload.kinds import DAG
from hetsim.workload.kinds import SNN as SNN_KIND


def load_workload(path, spikes: str | Path | None = None,
                  input_shape: Mapping[str, Sequence[int]] | None = None, *, example_inputs=None,
                  workload_options: Mapping[str, object] | None = None) -> Workload:
    """Read a model with the front end that reads it (:mod:`hetsim.workload.frontends`): an ONNX model, a
    saved ``torch.export`` program (``.pt2``) or an ``nn.Module`` (with ``example_inputs``) into a
    :class:`~hetsim.workload.Workload`; a spiking network (an SNN spec ``.yaml``, or a NIR graph ``.nir`` with
    ``spikes``, its input raster: :func:`hetsim.snn.network.load_snn`) into its unrolled
    :class:`~hetsim.snn.unroll.SnnWorkload`.

    Args:
        path: a model path, or an in-memory model a front end takes (a ``torch.nn.Module``, an ``SNN``).
        spikes: a NIR graph's input raster (``.npz``).
        input_shape: graph input name -> dims, fixing the dynamic dims of a tensor-operator model's inputs (the
            CLI's ``--input-shape x=1,3,224,224``); see :func:`~hetsim.workload.load_onnx` (its ``input_shapes``).
        example_inputs: a PyTorch module's example inputs (a tensor or a tuple of them).
        workload_options: any other loader options of the model's front end, e.g. an LLM description's
            ``{"phase": "decode", "context_tokens": 512}`` (:mod:`hetsim.llm`).

    Raises:
        InputError: an option the model's front end does not take (``input_shape`` for a spiking network,
            ``spikes`` for an ONNX model); (:class:`~hetsim.errors.WorkloadError`) no front end reads ``path``, or
            a missing or malformed model or spec, a NIR graph without ``spikes``.
    """
    return _frontends.load_workload(path, spikes=spikes, input_shape=input_shape, example_inputs=example_inputs,
                                    **dict(workload_options or {}))


def cost_model(platform: Platform | str | Path, workload, *, fold_constants: bool = True, spikes=None,
               input_shape: Mapping[str, Sequence[int]] | None = None, example_inputs=None,
               fusion: bool = True, workload_options: Mapping[str, object] | None = None) -> CostModel:
    """The pipeline's first steps: the platform (read if a path), the workload (read by its front end if it is
    not a :class:`Workload`) and their cost model: a :class:`~hetsim.costs.CostModel` for a DAG of tensor
    operators, an :class:`~hetsim.activity_costs.ActivityCostModel` on the eval split for a spiking network
    (what ``hetsim map`` and ``hetsim validate`` map and check).

    Raises:
        InputError: (subclasses) a bad platform or model, an option its front end does not take,
            ``fold_constants=False`` for a spiking network, a platform that does not run the workload's kind.

    ``fusion=False`` offers no fused operator groups (:attr:`~hetsim.costs.CostModel.fusion`; ``--no-fusion``);
    ``workload_options`` are the front end's other loader options (:func:`load_workload`).
    """
    plat = platform if isinstance(platform, Platform) else load_platform(platform)
    wl = workload if isinstance(workload, Workload) else load_workload(
        workload, spikes=spikes, input_shape=input_shape, example_inputs=example_inputs,
        workload_options=workload_options)
    where = None if isinstance(platform, Platform) else str(platform)
    check_baseline(plat, where)
    if wl.kind == SNN_KIND:
        from hetsim.activity_costs import ActivityCostModel

        if not fold_constants:
            raise InputError("fold_constants applies to tensor-operator models, not to spiking networks")
        return ActivityCostModel(wl, plat, "eval")
    costs = CostModel(wl, plat, fold_constants=fold_constants, fusion=fusion)
    check_baseline(plat, where, DAG)
    return costs


#: the mapper a run uses when none is given, per workload kind
DEFAULT_MAPPERS = {DAG: "cpsat", SNN_KIND: "spikeduet"}


def default_mapper(kind: str) -> str:
    """The mapper :func:`run` uses for a workload of ``kind`` when none is given (``cpsat``, exact, for a DAG of
    tensor operators; ``spikeduet``, exact, for a spiking network)."""
    from hetsim.workload.kinds import kind_name

    return DEFAULT_MAPPERS.get(kind_name(kind), DEFAULT_MAPPERS[DAG])


def workload_kind(workload) -> str:
    """The workload kind (:mod:`hetsim.workload.kinds`) of a :func:`run` argument: a Workload's own, else its
    front end's (by suffix or object type; nothing is read).

    Raises:
        WorkloadError: no front end reads it.
    """
    if isinstance(workload, Workload):
        return workload.kind
    return _frontends.kind_of(workload)


def _snn_of(workload, spikes=None, input_shape=None, example_inputs=None, workload_options=None):
    """The :class:`~hetsim.snn.network.SNN` a spiking-network argument of :func:`run` stands for (read by its
    front end; ``spikes``: a NIR graph's input raster).

    Raises:
        InputError: an option its front end does not take (``input_shape``).
    """
    wl = workload if isinstance(workload, Workload) else load_workload(
        workload, spikes=spikes, input_shape=input_shape, example_inputs=example_inputs,
        workload_options=workload_options)
    if input_shape is not None:
        raise InputError("input_shape fixes the input dims of a tensor-operator model, not of a spiking network")
    return wl.snn


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
    example_inputs=None,
    spill: bool = False,
    fusion: bool = True,
    workload_options: Mapping[str, object] | None = None,
) -> RunResult:
    """Map ``workload`` onto ``platform`` and replay it; the baseline is the platform's ``baseline`` mapper
    (``all-host`` unless the platform says otherwise) on the same platform (``None`` when that mapper refuses the
    model: the host cannot run every op, or DIANA's ``all-8bit`` layers exceed the digital weight memory; then
    ``summary["baseline_error"]`` holds the refusal and the speed-up is ``None``).

    Args:
        platform: a Platform or a path to its YAML.
        workload: a Workload, or anything a front end reads (:mod:`hetsim.workload.frontends`): a path to an
            ONNX model or a saved ``torch.export`` program (``.pt2``), a ``torch.nn.Module`` (with
            ``example_inputs``); or a spiking network (an SNN spec ``.yaml``, a NIR graph ``.nir`` with
            ``spikes``, an :class:`~hetsim.snn.network.SNN` or its :class:`~hetsim.snn.unroll.SnnWorkload`): see
            :func:`run_snn` for what its run adds.
        mapper: registered mapper name (ignored when ``schedule`` is given); default ``cpsat`` for ONNX models,
            ``spikeduet`` for spiking networks.
        contention: contention kinds to model in both replays: ``"links,cim-bus"``, ``"all"``, ``"none"`` or a
            set of kinds (:func:`~hetsim.sim.engine.parse_contention`).
        mapper_options: keyword arguments for the mapper (an option it does not take is an error).
        schedule: replay this schedule (or schedule JSON file) instead of running a mapper; refused (ScheduleError)
            when made for another workload or platform (:func:`hetsim.check.require_made_for`).
        fold_constants: ops computed only from constants cost nothing (ONNX Runtime folds them at session
            creation); ``False`` charges them like any op (:class:`~hetsim.costs.CostModel`).
        reorder, sample, seed, timeline: spiking networks only (:func:`run_snn`).
        spikes: for a NIR graph (``.nir``), the ``.npz`` of its input raster (:func:`hetsim.snn.network.load_snn`).
        input_shape: graph input name -> dims for the dynamic dims of an ONNX model read from a path
            (:func:`load_workload`); an error with a :class:`Workload` already read.
        example_inputs: a ``torch.nn.Module``'s example inputs (:mod:`hetsim.workload.torch_import`).
        spill: live activations beyond a checked memory's capacity spill to the next memory (traffic reported and
            charged in ``summary["memory"]["spill"]``) instead of the schedule being refused
            (:mod:`hetsim.analysis.footprint`).
        fusion: the mapper may run ops fused into their producers where a device fuses them (fused operator
            groups, :attr:`~hetsim.costs.CostModel.fusion`); ``False`` offers none (``--no-fusion``), and a saved
            schedule with fused groups is then refused.
        workload_options: the front end's other loader options (:func:`load_workload`), e.g. an LLM
            description's ``phase``, ``prompt_tokens``, ``context_tokens``.

    Raises:
        InputError: (subclasses) for bad inputs, see :mod:`hetsim.errors`.
    """
    kinds = parse_contention(contention)
    options = dict(mapper_options or {})
    if workload_kind(workload) == SNN_KIND:
        net = _snn_of(workload, spikes, input_shape, example_inputs, workload_options)
        return run_snn(platform, net, mapper or default_mapper(SNN_KIND), kinds, options, schedule, reorder=reorder,
                       sample=sample, seed=seed, timeline=timeline)
    snn_only = [k for k, v in (("reorder", reorder), ("sample", sample)) if v not in (False, None)]
    if snn_only:
        raise InputError(f"{', '.join(snn_only)} apply to spiking networks (an SNN spec .yaml), not to ONNX models")
    mapper = mapper or default_mapper(DAG)
    m, schedule = mapper_or_schedule(mapper, options, schedule, DAG,
                                      "maps spiking networks: give an SNN spec (.yaml), e.g. "
                                      "workloads/snn/braille384.yaml")
    plat = platform if isinstance(platform, Platform) else load_platform(platform)
    where = None if isinstance(platform, Platform) else str(platform)
    check_baseline(plat, where)  # its name, before the model is read
    if input_shape is not None and isinstance(workload, Workload):
        raise InputError("input_shape applies when the model is read: give the ONNX path, or read it with "
                         "load_workload(path, input_shape=...)")
    wl = workload if isinstance(workload, Workload) else load_workload(
        workload, spikes=spikes, input_shape=input_shape, example_inputs=example_inputs,
        workload_options=workload_options)
    costs = CostModel(wl, plat, fold_constants=fold_constants, fusion=fusion)
    check_baseline(plat, where, DAG)  # it maps such models: after the cost model's check the platform runs them
    if schedule is not None:
        require_made_for(costs, schedule)  # its workload, platform and devices: one line, before the replay
    sched = schedule if schedule is not None else m.map(costs)
    result = simulate(costs, sched, kinds)
    base_name = plat.baseline
    baseline_error = None
    if sched.mapper == base_name:
        baseline = result
    else:
        try:
            baseline = simulate(costs, get_mapper(base_name).map(costs), kinds)
        except MappingError as e:  # the host cannot run every op, or the baseline mapping does not fit
            baseline, baseline_error = None, str(e)
    footprints, summary_memory = activation_memory(costs, sched, result, spill)
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


def activation_memory(costs: CostModel, schedule: Schedule, result, spill: bool = False) -> tuple[dict, dict]:
    """The activation footprint of a run (:mod:`hetsim.analysis.footprint`): ``(footprints, block)``, the
    footprints (``replay``, and ``predicted`` when the schedule predicts its times) and the ``memory`` block of
    summary.json.

    Raises:
        MemoryCapacityError: the live activations of the replay or of the prediction exceed a checked memory's
            capacity (without ``spill``), or a memory over capacity has nothing to spill to.
    """
    from hetsim.analysis.footprint import require_fits, run_footprints, spill_report, summary_block

    fps = run_footprints(costs, schedule, result)
    extra = None
    if spill:
        extra = spill_report(fps["replay"], costs.platform)
    else:
        for fp in fps.values():
            require_fits(fp)
    return fps, summary_block(fps, extra)


def run_snn(*args, **kwargs) -> RunResult:
    """The SNN path's own pipeline, :func:`hetsim.snn.evaluate.run_snn` (what :func:`run` does with a spiking
    network; same arguments)."""
    from hetsim.snn.evaluate import run_snn as _run_snn

    return _run_snn(*args, **kwargs)
