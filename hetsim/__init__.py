"""hetsim: discrete-event simulation of heterogeneous SoCs for neural-network inference.

The pipeline (DESIGN.md): ONNX model -> :class:`~hetsim.workload.Workload`; platform YAML ->
:class:`~hetsim.platform.Platform`; both -> :class:`~hetsim.costs.CostModel`; a mapper ->
:class:`~hetsim.schedule.Schedule`; :func:`~hetsim.sim.simulate` -> trace; :mod:`hetsim.report` -> metrics.
"""

__version__ = "0.1.0"
