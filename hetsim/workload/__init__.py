"""Workloads: the operator DAG (:class:`Workload` of :class:`Op`), the front-end registry
(:mod:`hetsim.workload.frontends`: :func:`load_workload`, :func:`register_frontend`) and the ONNX importer
:func:`load_onnx`.

The names are imported on first use (PEP 562): ``load_onnx`` brings in ``onnx`` (about half a second), which
only the commands that read an ONNX model need.
"""

from __future__ import annotations

from hetsim._lazy import attach

_LAZY = {
    "GemmView": "hetsim.workload.op",
    "Op": "hetsim.workload.op",
    "Workload": "hetsim.workload.op",
    "load_onnx": "hetsim.workload.onnx_import",
    "FrontEnd": "hetsim.workload.frontends",
    "frontends": "hetsim.workload.frontends",
    "load_workload": "hetsim.workload.frontends",
    "register_frontend": "hetsim.workload.frontends",
}

__all__ = ["FrontEnd", "GemmView", "Op", "Workload", "frontends", "load_onnx", "load_workload", "register_frontend"]


__getattr__, __dir__ = attach(__name__, _LAZY, __all__)
