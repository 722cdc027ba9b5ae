"""Workloads: the operator DAG (:class:`Workload` of :class:`Op`) and the ONNX importer :func:`load_onnx`."""

from hetsim.workload.onnx_import import load_onnx
from hetsim.workload.op import GemmView, Op, Workload

__all__ = ["GemmView", "Op", "Workload", "load_onnx"]
