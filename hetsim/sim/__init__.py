"""Simulation: the SimPy replay engine and the contention-free analytic evaluator it must agree with.

The names below are imported on first use (PEP 562), so that ``hetsim.sim.contention`` (the contention kinds,
for ``hetsim --help``) can be imported without SimPy, pandas or networkx.
"""

from __future__ import annotations

_LAZY = {
    "simulate": "hetsim.sim.engine",
    "SimResult": "hetsim.sim.engine",
    "CONTENTION_KINDS": "hetsim.sim.contention",
    "list_schedule": "hetsim.sim.analytic",
}

__all__ = ["simulate", "SimResult", "CONTENTION_KINDS", "list_schedule"]


def __getattr__(name: str):
    import importlib

    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'hetsim.sim' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
