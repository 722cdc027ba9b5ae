"""Design-space exploration: sweeps over workloads x platforms x parameter overrides x mappers."""

from hetsim.dse.sweep import SweepSpec, expand_points, load_sweep, run_sweep

__all__ = ["SweepSpec", "load_sweep", "expand_points", "run_sweep"]
