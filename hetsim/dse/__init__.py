"""Design-space exploration: sweeps over workloads x platforms x parameter overrides x mappers."""

from hetsim.dse.sweep import SweepInterrupted, SweepSpec, expand_points, format_progress, load_sweep, run_sweep

__all__ = ["SweepSpec", "SweepInterrupted", "load_sweep", "expand_points", "run_sweep", "format_progress"]
