"""Simulation: the SimPy replay engine and the contention-free analytic evaluator it must agree with.

The names below are imported on first use (PEP 562), so that ``hetsim.sim.contention`` (the contention kinds,
for ``hetsim --help``) can be imported without SimPy, pandas or networkx.
"""

from __future__ import annotations

from hetsim._lazy import attach

_LAZY = {
    "simulate": "hetsim.sim.engine",
    "SimResult": "hetsim.sim.engine",
    "CONTENTION_KINDS": "hetsim.sim.contention",
    "list_schedule": "hetsim.sim.analytic",
}

__all__ = ["simulate", "SimResult", "CONTENTION_KINDS", "list_schedule"]


__getattr__, __dir__ = attach(__name__, _LAZY, __all__)
