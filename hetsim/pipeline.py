"""The whole pipeline in one place: load, cost, map, simulate, summarise (what ``hetsim run`` and
:func:`hetsim.run` do), for every workload kind: the front end reads the model (:mod:`hetsim.workload.frontends`),
and the kind's registry entry (:mod:`hetsim.kinds`: a DAG of tensor operators, :mod:`hetsim.dag`; a spiking
network, :mod:`hetsim.snn.kind`) prices, maps, replays and summarises it; nothing here names a kind."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from hetsim.costs import CostModel
from hetsim.errors import InputError
from hetsim.kinds import kind_of_workload, workload_kind
from hetsim.mappers.base import check_baseline
from hetsim.platform import Platform, load_platform
from hetsim.result import RunResult
from hetsim.schedule import Schedule
from hetsim.sim.engine import parse_contention
from hetsim.workload import Workload
from hetsim.workload import frontends as _frontends


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
    not a :class:`Workload`) and their cost model, the workload kind's (:meth:`hetsim.kinds.WorkloadKind.cost_model`:
    a :class:`~hetsim.costs.CostModel` for a DAG of tensor operators, an
    :class:`~hetsim.snn.activity_costs.ActivityCostModel` on the eval split for a spiking network): what ``hetsim
    map`` and ``hetsim validate`` map and check.

    Raises:
        InputError: (subclasses) a bad platform or model, an option its front end or its kind does not take
            (``fold_constants=False`` for a spiking network), a platform that does not run the workload's kind.

    ``fusion=False`` offers no fused operator groups (:attr:`~hetsim.costs.CostModel.fusion`; ``--no-fusion``);
    ``workload_options`` are the front end's other loader options (:func:`load_workload`).
    """
    plat = platform if isinstance(platform, Platform) else load_platform(platform)
    wl = workload if isinstance(workload, Workload) else load_workload(
        workload, spikes=spikes, input_shape=input_shape, example_inputs=example_inputs,
        workload_options=workload_options)
    where = None if isinstance(platform, Platform) else str(platform)
    check_baseline(plat, where)
    kind = workload_kind(wl.kind)
    options = kind.make_options(_given(fold_constants=fold_constants, fusion=fusion))
    costs = kind.cost_model(wl, plat, options)
    check_baseline(plat, where, kind.name)
    return costs


def default_mapper(kind: str) -> str:
    """The mapper :func:`run` uses for a workload of ``kind`` when none is given (the kind's
    :attr:`~hetsim.kinds.WorkloadKind.default_mapper`: ``cpsat``, exact, for a DAG of tensor operators;
    ``spikeduet``, exact, for a spiking network).

    Raises:
        WorkloadError: no kind of that name is registered.
    """
    return workload_kind(kind).default_mapper


#: the defaults of :func:`run`'s keywords that belong to one workload kind's options (:mod:`hetsim.kinds`)
_KIND_DEFAULTS = {"fold_constants": True, "fusion": True, "spill": False, "reorder": False, "sample": None,
                  "seed": 0, "timeline": True}


def _given(**options) -> dict:
    """The kind options among ``options`` that differ from their defaults (the rest are left to the kind's own
    defaults, :meth:`hetsim.kinds.WorkloadKind.make_options`)."""
    return {k: v for k, v in options.items() if not (v is _KIND_DEFAULTS[k] or (
        type(v) is type(_KIND_DEFAULTS[k]) and v == _KIND_DEFAULTS[k]))}


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
    options=None,
    workload_options: Mapping[str, object] | None = None,
) -> RunResult:
    """Map ``workload`` onto ``platform`` and replay it, the way its workload kind runs (:mod:`hetsim.kinds`:
    :meth:`~hetsim.kinds.WorkloadKind.run`); for a DAG of tensor operators the baseline is the platform's
    ``baseline`` mapper (``all-host`` unless the platform says otherwise) on the same platform (``None`` when that
    mapper refuses the model: the host cannot run every op, or DIANA's ``all-8bit`` layers exceed the digital
    weight memory; then ``summary["baseline_error"]`` holds the refusal and the speed-up is ``None``). The run's
    kind options are one typed object (``options``, else made from the keywords below that differ from their
    defaults, checked once by the kind), recorded in ``summary["run_options"]``.

    Args:
        platform: a Platform or a path to its YAML.
        workload: a Workload, or anything a front end reads (:mod:`hetsim.workload.frontends`): a path to an
            ONNX model or a saved ``torch.export`` program (``.pt2``), a ``torch.nn.Module`` (with
            ``example_inputs``); or a spiking network (an SNN spec ``.yaml``, a NIR graph ``.nir`` with
            ``spikes``, an :class:`~hetsim.snn.network.SNN` or its :class:`~hetsim.snn.unroll.SnnWorkload`): see
            :func:`hetsim.snn.evaluate.run_snn` for what its run adds.
        mapper: registered mapper name (ignored when ``schedule`` is given); default: the kind's
            (``cpsat`` for ONNX models, ``spikeduet`` for spiking networks).
        contention: contention kinds to model in both replays: ``"links,cim-bus"``, ``"all"``, ``"none"`` or a
            set of kinds (:func:`~hetsim.sim.engine.parse_contention`).
        mapper_options: keyword arguments for the mapper (an option it does not take is an error).
        schedule: replay this schedule (or schedule JSON file) instead of running a mapper; refused (ScheduleError)
            when made for another workload or platform (:func:`hetsim.check.require_made_for`).
        fold_constants, spill, fusion: a DAG of tensor operators' options (:class:`hetsim.dag.DagOptions`).
        reorder, sample, seed, timeline: a spiking network's options (:class:`hetsim.snn.kind.SnnOptions`).
        spikes: for a NIR graph (``.nir``), the ``.npz`` of its input raster (:func:`hetsim.snn.network.load_snn`).
        input_shape: graph input name -> dims for the dynamic dims of an ONNX model read from a path
            (:func:`load_workload`); an error with a :class:`Workload` already read.
        example_inputs: a ``torch.nn.Module``'s example inputs (:mod:`hetsim.workload.torch_import`).
        options: the kind's run options as one object (its :attr:`~hetsim.kinds.WorkloadKind.options` type),
            instead of the keywords above.
        workload_options: the front end's other loader options (:func:`load_workload`), e.g. an LLM
            description's ``phase``, ``prompt_tokens``, ``context_tokens``.

    Raises:
        InputError: (subclasses) for bad inputs, see :mod:`hetsim.errors`; a keyword of another workload kind.
    """
    kinds = parse_contention(contention)
    kind = kind_of_workload(workload)
    if options is None:
        options = kind.make_options(_given(fold_constants=fold_constants, fusion=fusion, spill=spill,
                                           reorder=reorder, sample=sample, seed=seed, timeline=timeline))
    elif not isinstance(options, kind.options):
        raise InputError(f"options: a {kind.options.__name__} for {kind.description}, not a "
                         f"{type(options).__name__}")

    def load(w):
        if isinstance(w, Workload):
            if input_shape is not None:
                raise InputError("input_shape applies when the model is read: give the ONNX path, or read it with "
                                 "load_workload(path, input_shape=...)")
            return w
        return load_workload(w, spikes=spikes, input_shape=input_shape, example_inputs=example_inputs,
                             workload_options=workload_options)

    r = kind.run(platform, workload, mapper or kind.default_mapper, kinds, dict(mapper_options or {}), schedule,
                 options, load)
    r.summary["run_options"] = kind.options_summary(options)
    return r


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
