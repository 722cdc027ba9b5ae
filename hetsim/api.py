"""The Python API (``import hetsim``): what ``hetsim run`` does, from a script or a notebook.

::

    import hetsim

    r = hetsim.run("platforms/puma.yaml", "workloads/yolov5n.onnx", mapper="cpsat", time_limit_s=10)
    r.makespan_s, r.energy_j, r.summary      # numbers; summary is what summary.json holds
    r.ops, r.devices, r.trace                # pandas DataFrames
    r.plot_timeline(), r.plot_breakdown()    # matplotlib Figures (path=... also saves them)

    plat = hetsim.load_platform("platforms/puma.yaml").with_overrides({"devices.cim.crossbars": 25})
    hetsim.run(plat, hetsim.load_workload("workloads/yolov5n.onnx"), mapper="greedy", contention="links")
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from hetsim.pipeline import RunResult, load_workload
from hetsim.pipeline import run as _run
from hetsim.platform import Platform
from hetsim.platform import load_platform as _load_platform
from hetsim.schedule import Schedule
from hetsim.workload import Workload

__all__ = ["RunResult", "load_platform", "load_workload", "mappers", "run"]


def load_platform(path: str | Path) -> Platform:
    """Read and validate a platform YAML file; ``.with_overrides({"devices.cim.crossbars": 25})`` on the result
    gives a changed copy (dotted paths, as in sweep files).

    Raises:
        PlatformError: missing file, YAML syntax error, or a validation error (the message names the field).
    """
    return _load_platform(path)


def mappers() -> dict[str, str]:
    """The registered mappers (the ``mapper=`` of :func:`run`), name -> one-line description. The options a
    mapper takes are its constructor's keyword arguments (:func:`hetsim.mappers.base.mapper_option_names`).
    (``hetsim.mappers`` is also the package of the mappers, which is callable: ``hetsim.mappers()``.)"""
    from hetsim.mappers import available

    return available()


def run(
    platform: Platform | str | Path,
    workload: Workload | str | Path,
    mapper: str = "cpsat",
    *,
    contention: str | Iterable[str] | None = "none",
    schedule: Schedule | str | Path | None = None,
    fold_constants: bool = True,
    **options,
) -> RunResult:
    """Map ``workload`` onto ``platform`` with ``mapper``, replay the schedule, and summarise it, as
    ``hetsim run`` does (the same function runs behind it).

    Args:
        platform: a :class:`~hetsim.platform.Platform` (e.g. from :func:`load_platform`) or a path to its YAML.
        workload: a :class:`~hetsim.workload.Workload` (e.g. from :func:`load_workload`) or a path to an ONNX
            model. Spiking networks (SNN specs, ``.yaml``) run on the command line for now.
        mapper: a registered mapper name (:func:`mappers`); the default ``cpsat`` is exact.
        contention: what to model in the replays: ``"links,cim-bus"``, ``"all"``, ``"none"`` (the default:
            the ILP's contention-free timing), or a set of kinds.
        schedule: replay this :class:`~hetsim.schedule.Schedule` (or schedule JSON file) instead of mapping.
        fold_constants: ops computed only from constants (weight ``DequantizeLinear`` in QDQ graphs, ``Constant``
            nodes) cost nothing, as ONNX Runtime folds them at session creation (the default); ``False`` charges
            them on every inference, for a runtime that does not fold.
        **options: the mapper's options, e.g. ``time_limit_s=10``, ``threads=4`` (cpsat, ilp),
            ``min_gain=0.1`` (greedy), ``objective="energy"`` (min-cost).

    Returns:
        A :class:`~hetsim.pipeline.RunResult`: ``summary``, ``makespan_s``, ``energy_j``, ``speedup``,
        ``schedule``, DataFrames ``ops``, ``devices``, ``trace``; ``plot_timeline()``, ``plot_breakdown()``.

    Raises:
        InputError: (subclasses, :mod:`hetsim.errors`) a missing or malformed file, an unknown mapper or option
            (the message suggests the closest name), an infeasible mapping.
    """
    return _run(platform, workload, mapper=mapper, contention=contention, mapper_options=options,
                schedule=schedule, fold_constants=fold_constants)
