"""Workloads: the operator DAG (:class:`Workload` of :class:`Op`) and the ONNX importer :func:`load_onnx`.

The names are imported on first use (PEP 562): ``load_onnx`` brings in ``onnx`` (about half a second), which
only the commands that read an ONNX model need.
"""

from __future__ import annotations

_LAZY = {
    "GemmView": "hetsim.workload.op",
    "Op": "hetsim.workload.op",
    "Workload": "hetsim.workload.op",
    "load_onnx": "hetsim.workload.onnx_import",
}

__all__ = ["GemmView", "Op", "Workload", "load_onnx"]


def __getattr__(name: str):
    import importlib

    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'hetsim.workload' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
