"""Workloads: the operator DAG (:class:`Workload` of :class:`Op`) and the ONNX importer :func:`load_onnx`.

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
}

__all__ = ["GemmView", "Op", "Workload", "load_onnx"]


__getattr__, __dir__ = attach(__name__, _LAZY, __all__)
