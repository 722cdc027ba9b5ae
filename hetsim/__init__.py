"""hetsim: discrete-event simulation of heterogeneous SoCs for neural-network inference.

The pipeline (``docs/architecture.md``): ONNX model -> :class:`~hetsim.workload.Workload`; platform YAML ->
:class:`~hetsim.platform.Platform`; both -> :class:`~hetsim.costs.CostModel`; a mapper ->
:class:`~hetsim.schedule.Schedule`; :func:`~hetsim.sim.simulate` -> trace; :mod:`hetsim.analysis` -> metrics;
:mod:`hetsim.report` -> the report and its files.

The Python API (:mod:`hetsim.api`)::

    import hetsim

    r = hetsim.run("platforms/puma.yaml", "workloads/yolov5n.onnx", mapper="cpsat", time_limit_s=10)
    r.makespan_s, r.energy_j, r.ops, r.devices, r.trace, r.plot_timeline()

:func:`run`, :func:`load_platform`, :func:`load_workload` and :func:`mappers` are imported on first use, so
``import hetsim`` stays cheap (no ONNX, pandas or matplotlib).
"""

_command = False
try:  # first of all, as the hetsim command: a Ctrl-C is held until the command can stop cleanly (hetsim._interrupt)
    import sys as _sys

    _argv0 = (getattr(_sys, "argv", None) or [""])[0]
    _command = _argv0 == "-m" or _argv0.replace("\\", "/").rpartition("/")[2].startswith("hetsim")
    if _command:
        from hetsim._interrupt import hold as _hold

        _command = _hold()
except KeyboardInterrupt:  # in the instant before the hold
    if not _command:
        raise
    print("hetsim: interrupted", file=_sys.stderr)
    raise SystemExit(130) from None

from hetsim._lazy import attach  # noqa: E402 (after the hold above)
from hetsim.errors import HetsimError, InputError  # noqa: E402

__version__ = "0.1.0"

# name -> module holding it (imported on first access, PEP 562)
_LAZY = {
    "run": "hetsim.api",
    "load_platform": "hetsim.api",
    "load_workload": "hetsim.api",
    "load_snn": "hetsim.api",
    "compare": "hetsim.api",
    "RunResult": "hetsim.result",
    "ScenarioResult": "hetsim.scenario.run",
    "sweep_figure": "hetsim.report.sweep_figure",
    "mappers": "hetsim.mappers",  # the package, which is callable: hetsim.mappers() lists the mappers
}

__all__ = ["HetsimError", "InputError", "RunResult", "ScenarioResult", "compare", "load_platform", "load_snn",
           "load_workload", "mappers", "run", "sweep_figure", "__version__"]


__getattr__, __dir__ = attach(__name__, _LAZY, __all__)
