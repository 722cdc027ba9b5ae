"""Simulation: the SimPy replay engine and the contention-free analytic evaluator it must agree with."""

from hetsim.sim.analytic import list_schedule
from hetsim.sim.engine import CONTENTION_KINDS, SimResult, simulate

__all__ = ["simulate", "SimResult", "CONTENTION_KINDS", "list_schedule"]
