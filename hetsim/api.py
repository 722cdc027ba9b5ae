"""The Python API (``import hetsim``): what ``hetsim run`` does, from a script or a notebook.

::

    import hetsim

    r = hetsim.run("platforms/puma.yaml", "workloads/yolov5n.onnx", mapper="cpsat", time_limit_s=10)
    r.makespan_s, r.energy_j, r.summary      # numbers; summary is what summary.json holds
    r.ops, r.devices, r.trace                # pandas DataFrames
    r.plot_timeline(), r.plot_breakdown()    # matplotlib Figures (path=... also saves them)

    plat = hetsim.load_platform("platforms/puma.yaml").with_overrides({"devices.cim.crossbars": 25})
    hetsim.run(plat, hetsim.load_workload("workloads/yolov5n.onnx"), mapper="greedy", contention="links")

    # a PyTorch module, exported to ONNX in memory (pip install 'hetsim[torch]'); or a saved torch.export .pt2
    hetsim.run("platforms/puma.yaml", model, example_inputs=torch.zeros(1, 3, 224, 224), mapper="heft")

    # spiking networks: an SNN spec, or a NIR graph with its input raster; the same RunResult
    s = hetsim.run("platforms/efr32mg24.yaml", "workloads/snn/braille384.yaml", mode="async")
    s = hetsim.run("platforms/efr32mg24.yaml", "results/braille64.nir",     # hetsim export-nir wrote it
                   spikes="workloads/snn/braille7_12-64-7_T100.npz")
    s.makespan_s, s.snn.layers               # mean latency over the eval split; per layer engine, residency
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from hetsim.errors import InputError
from hetsim.pipeline import load_workload
from hetsim.pipeline import run as _run
from hetsim.platform import Platform
from hetsim.platform import load_platform as _load_platform
from hetsim.result import RunResult
from hetsim.schedule import Schedule
from hetsim.workload import Workload

__all__ = ["RunResult", "compare", "load_platform", "load_snn", "load_workload", "mappers", "run"]



def load_platform(path: str | Path) -> Platform:
    """Read and validate a platform YAML file; ``.with_overrides({"devices.cim.crossbars": 25})`` on the result
    gives a changed copy (dotted paths, as in sweep files).

    Raises:
        PlatformError: missing file, YAML syntax error, or a validation error (the message names the field).
    """
    return _load_platform(path)


def load_snn(path: str | Path, spikes: str | Path | None = None):
    """Read a spiking network: an SNN spec (``.yaml``, with its weights and recorded activity) or a NIR graph
    (``.nir``) with ``spikes``, the ``.npz`` of its input raster (``[samples, T, inputs]`` under ``spikes``,
    or ``spk_<split>_L0`` per split); the hidden activity is replayed (:mod:`hetsim.snn.nir`).

    Returns:
        A :class:`hetsim.snn.network.SNN`.

    Raises:
        WorkloadError: a missing or malformed file, a NIR node hetsim's LIF model does not cover (the message
            names it), a NIR graph without ``spikes``.
    """
    from hetsim.snn.network import load_snn as _load_snn

    return _load_snn(path, spikes=spikes)


def compare(a: str | Path, b: str | Path):
    """Run ``b`` against run ``a``: each a folder ``hetsim run --out`` wrote or its ``summary.json`` (what
    ``hetsim compare`` prints).

    Returns:
        A :class:`hetsim.report.compare.Comparison`: ``.frame`` (a DataFrame, one row per number: section, item,
        metric, a, b, delta = b - a, delta_pct), ``.section("device")``, ``.speedup`` (B over A), ``.to_text()``.

    Raises:
        InputError: a folder without ``summary.json``, a file that is not a run's summary, or two runs of
            different kinds (a scenario against a single run).
    """
    from hetsim.report.compare import compare as _compare

    return _compare(a, b)


def mappers() -> dict[str, str]:
    """The registered mappers (the ``mapper=`` of :func:`run`), name -> one-line description. The options a
    mapper takes are its constructor's keyword arguments (:func:`hetsim.mappers.base.mapper_option_names`).
    (``hetsim.mappers`` is also the package of the mappers, which is callable: ``hetsim.mappers()``.)"""
    from hetsim.mappers import available

    return available()


def run(
    platform: Platform | str | Path,
    workload: Workload | str | Path,
    mapper: str | None = None,
    *,
    contention: str | Iterable[str] | None = "none",
    schedule: Schedule | str | Path | None = None,
    fold_constants: bool = True,
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
    **options,
) -> RunResult:
    """Map ``workload`` onto ``platform`` with ``mapper``, replay the schedule, and summarise it, as
    ``hetsim run`` does (the same function runs behind it).

    Args:
        platform: a :class:`~hetsim.platform.Platform` (e.g. from :func:`load_platform`) or a path to its YAML.
        workload: a :class:`~hetsim.workload.Workload` (e.g. from :func:`load_workload`), a path to an ONNX
            model or to a saved ``torch.export`` program (``.pt2``), a ``torch.nn.Module`` with
            ``example_inputs`` (exported to ONNX in memory; needs ``pip install 'hetsim[torch]'``), or anything
            another registered front end reads (:mod:`hetsim.workload.frontends`); or a scenario
            (``scenarios/*.yaml`` or a :class:`~hetsim.scenario.spec.Scenario`: streams of requests), which
            returns a :class:`~hetsim.scenario.run.ScenarioResult` (``streams``, ``requests``, ``devices``,
            ``summary``; ``dispatch=`` overrides its policy); or a spiking network: an SNN
            spec (``workloads/snn/braille384.yaml``), a NIR graph (``.nir``,
            with ``spikes``), an :class:`~hetsim.snn.network.SNN` (:func:`load_snn`) or its unrolled workload. Its
            result has ``makespan_s`` = the mean latency over the eval split, ``energy_j`` = the mean energy per
            inference, and ``snn`` = the SNN tables (SpikeDuet's Table I configurations, per layer engine and
            residency, per-sample latencies).
        mapper: a registered mapper name (:func:`mappers`); default ``cpsat`` (exact) for ONNX models,
            ``spikeduet`` (exact) for spiking networks (or ``all-m33``, ``all-dense-mvp``).
        contention: what to model in the replays: ``"links,cim-bus"``, ``"all"``, ``"none"`` (the default:
            the ILP's contention-free timing), or a set of kinds.
        schedule: replay this :class:`~hetsim.schedule.Schedule` (or schedule JSON file) instead of mapping; one
            made for another workload or platform (by name: a ``with_overrides`` platform is named after its
            overrides) is refused, :func:`hetsim.check.require_made_for`.
        fold_constants: ops computed only from constants (weight ``DequantizeLinear`` in QDQ graphs, ``Constant``
            nodes) cost nothing, as ONNX Runtime folds them at session creation (the default); ``False`` charges
            them on every inference, for a runtime that does not fold.
        reorder, sample, seed, timeline: spiking networks only: reorder hidden neurons first (function-preserving,
            verified; ``seed`` seeds its refinement), the eval sample replayed (default: the median one), and
            whether to replay both execution modes and count replay mismatches (:func:`hetsim.snn.evaluate.run_snn`).
        spikes: for a NIR graph, the ``.npz`` of its input raster (:func:`load_snn`).
        input_shape: fixes the dynamic dims of an ONNX model's graph inputs, ``{"x": [1, 3, 224, 224]}`` (the
            CLI's ``--input-shape x=1,3,224,224``); dims the model fixes must agree. Only with a model path
            (``load_workload(path, input_shape=...)`` for a workload read beforehand).
        example_inputs: a PyTorch module's example inputs, a tensor or a tuple of tensors
            (``example_inputs=torch.zeros(1, 3, 224, 224)``).
        spill: a schedule whose live activations exceed a checked memory's capacity spills the excess to the next
            memory, its traffic reported and charged (:mod:`hetsim.analysis.footprint`), instead of being refused.
        fusion: where a device fuses ops into a producer's launch (an NPU applying activations and requantisation
            as an epilogue: ``fuses`` in its platform entry), the mapper may run them fused (the default);
            ``False`` runs every op on its own launch (the CLI's ``--no-fusion``). ONNX models only.
        workload_options: the model's front end's other loader options, e.g. an LLM description's
            ``{"phase": "decode", "context_tokens": 512}`` (``workloads/llm/*.llm.yaml``, :mod:`hetsim.llm`).
        **options: the mapper's options, e.g. ``work_limit=2`` (deterministic; the default limits are),
            ``time_limit_s=10`` (wall clock), ``threads=4`` (cpsat, ilp),
            ``min_gain=0.1`` (greedy), ``objective="throughput"`` (cpsat, heft, greedy: the busiest resource's
            load per request; for a scenario, all its models at once, and ``compare=`` the latency mapping
            replayed beside it, and ``replications=N`` N replays with the seeds ``seed, seed + 1, ...``),
            ``objective="energy"`` (min-cost), ``mode="blocking"`` (spikeduet,
            all-m33, all-dense-mvp).

    Returns:
        A :class:`~hetsim.result.RunResult`: ``summary``, ``makespan_s``, ``energy_j``, ``speedup``,
        ``schedule``, DataFrames ``ops``, ``devices``, ``trace``; ``plot_timeline()``, ``plot_breakdown()``.

    Raises:
        InputError: (subclasses, :mod:`hetsim.errors`) a missing or malformed file, an unknown mapper or option
            (the message suggests the closest name), an infeasible mapping.
    """
    from hetsim.scenario.spec import Scenario, is_scenario_file

    if isinstance(workload, Scenario) or (isinstance(workload, str | Path) and is_scenario_file(workload)):
        from hetsim.scenario.run import run_scenario  # a scenario: streams of requests (hetsim/scenario/)

        if not fusion:
            raise InputError("fusion=False: not for a scenario (its models are mapped with the fused groups their "
                             "platform offers)")

        return run_scenario(platform, workload, mapper=mapper, dispatch=options.pop("dispatch", None),
                            contention=None if contention in (None, "none") else contention,
                            seed=seed or None, objective=options.pop("objective", None),
                            compare=options.pop("compare", None), replications=options.pop("replications", 1))
    return _run(platform, workload, mapper=mapper, contention=contention, mapper_options=options,
                schedule=schedule, fold_constants=fold_constants, reorder=reorder, sample=sample, seed=seed,
                timeline=timeline, spikes=spikes, input_shape=input_shape, example_inputs=example_inputs,
                **({"spill": True} if spill else {}), **({} if fusion else {"fusion": False}),
                **({"workload_options": workload_options} if workload_options else {}))
