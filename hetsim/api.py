"""The Python API (``import hetsim``): what ``hetsim run`` does, from a script or a notebook.

::

    import hetsim

    r = hetsim.run("platforms/puma.yaml", "workloads/yolov5n.onnx", mapper="cpsat", time_limit_s=10)
    r.makespan_s, r.energy_j, r.summary      # numbers; summary is what summary.json holds
    r.ops, r.devices, r.trace                # pandas DataFrames
    r.plot_timeline(), r.plot_breakdown()    # matplotlib Figures (path=... also saves them)

    plat = hetsim.load_platform("platforms/puma.yaml").with_overrides({"devices.cim.crossbars": 25})
    hetsim.run(plat, hetsim.load_workload("workloads/yolov5n.onnx"), mapper="greedy", contention="links")

    # spiking networks: an SNN spec, or a NIR graph with its input raster (issue 11: one result type to come)
    s = hetsim.run("platforms/efr32mg24.yaml", "results/braille64.nir",     # hetsim export-nir wrote it
                   spikes="workloads/snn/braille7_12-64-7_T100.npz")
    s.summary["mean_latency_ms"], s.layers                       # an hetsim.snn.pipeline.SnnRunResult
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from hetsim.pipeline import RunResult, load_workload
from hetsim.pipeline import run as _run
from hetsim.platform import Platform
from hetsim.platform import load_platform as _load_platform
from hetsim.schedule import Schedule
from hetsim.workload import Workload

if TYPE_CHECKING:
    from hetsim.snn.pipeline import SnnRunResult

__all__ = ["RunResult", "load_platform", "load_snn", "load_workload", "mappers", "run"]

#: model paths that are spiking networks: SNN specs and NIR graphs
SNN_MODEL_SUFFIXES = (".yaml", ".yml", ".nir")
#: keyword options of :func:`run` for a spiking network (:func:`hetsim.snn.pipeline.run_snn`)
SNN_OPTIONS = ("mode", "reorder", "sample", "time_limit_s", "seed", "timeline")


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
    spikes: str | Path | None = None,
    **options,
) -> RunResult | SnnRunResult:
    """Map ``workload`` onto ``platform`` with ``mapper``, replay the schedule, and summarise it, as
    ``hetsim run`` does (the same function runs behind it).

    Args:
        platform: a :class:`~hetsim.platform.Platform` (e.g. from :func:`load_platform`) or a path to its YAML.
        workload: a :class:`~hetsim.workload.Workload` (e.g. from :func:`load_workload`) or a path to an ONNX
            model; or a spiking network: an :class:`~hetsim.snn.network.SNN` (:func:`load_snn`), an SNN spec
            (``.yaml``) or a NIR graph (``.nir``, with ``spikes``). A spiking network returns a
            :class:`hetsim.snn.pipeline.SnnRunResult` (what ``hetsim run`` prints for it; ``summary`` holds
            ``mean_latency_ms``) until SNNs run on the one pipeline.
        mapper: a registered mapper name (:func:`mappers`); the default ``cpsat`` is exact. Spiking networks:
            ``spikeduet`` (the default), ``all-m33`` or ``all-dense-mvp``.
        contention: what to model in the replays: ``"links,cim-bus"``, ``"all"``, ``"none"`` (the default:
            the ILP's contention-free timing), or a set of kinds.
        schedule: replay this :class:`~hetsim.schedule.Schedule` (or schedule JSON file) instead of mapping.
        fold_constants: ops computed only from constants (weight ``DequantizeLinear`` in QDQ graphs, ``Constant``
            nodes) cost nothing, as ONNX Runtime folds them at session creation (the default); ``False`` charges
            them on every inference, for a runtime that does not fold.
        spikes: for a NIR graph, the ``.npz`` of its input raster (:func:`load_snn`).
        **options: the mapper's options, e.g. ``time_limit_s=10``, ``threads=4`` (cpsat, ilp),
            ``min_gain=0.1`` (greedy), ``objective="energy"`` (min-cost). Spiking networks: ``mode``
            (``async``/``blocking``), ``reorder``, ``sample``, ``time_limit_s``, ``seed``, ``timeline``
            (:func:`hetsim.snn.pipeline.run_snn`).

    Returns:
        A :class:`~hetsim.pipeline.RunResult`: ``summary``, ``makespan_s``, ``energy_j``, ``speedup``,
        ``schedule``, DataFrames ``ops``, ``devices``, ``trace``; ``plot_timeline()``, ``plot_breakdown()``.

    Raises:
        InputError: (subclasses, :mod:`hetsim.errors`) a missing or malformed file, an unknown mapper or option
            (the message suggests the closest name), an infeasible mapping.
    """
    from hetsim.errors import InputError
    from hetsim.snn.network import SNN

    is_path = isinstance(workload, str | Path)
    if spikes is not None or isinstance(workload, SNN) or (is_path and Path(workload).suffix.lower() in
                                                            SNN_MODEL_SUFFIXES):
        from hetsim.snn.pipeline import run_snn

        bad = [k for k in options if k not in SNN_OPTIONS]
        if schedule is not None or contention not in ("none", None) or not fold_constants or bad:
            given = ["schedule"] * (schedule is not None) + ["contention"] * (contention not in ("none", None)) + \
                ["fold_constants"] * (not fold_constants) + bad
            raise InputError(f"{', '.join(given)}: not an option for a spiking network (options: "
                             f"{', '.join(SNN_OPTIONS)})")
        net = workload if isinstance(workload, SNN) else load_snn(workload, spikes=spikes)
        return run_snn(platform, net, mapper=mapper or "spikeduet", **options)
    return _run(platform, workload, mapper=mapper or "cpsat", contention=contention, mapper_options=options,
                schedule=schedule, fold_constants=fold_constants)
