"""The workload kind ``dag``: a DAG of tensor operators (ONNX models, exported PyTorch programs, synthetic
graphs), priced by :class:`~hetsim.costs.CostModel`, mapped by ``cpsat`` unless told otherwise, replayed once
(:func:`hetsim.sim.simulate`) and against the platform's baseline mapper for the speed-up.

Registered by one line in :mod:`hetsim.kinds`; its sweep points are :mod:`hetsim.dag.sweep`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from hetsim.kinds import WorkloadKind
from hetsim.workload.kinds import DAG, DESCRIPTIONS


@dataclass(frozen=True)
class DagOptions:
    """The run options of a DAG of tensor operators (the keywords of :func:`hetsim.run` only it takes).

    Attributes:
        fold_constants: ops computed only from constants cost nothing (ONNX Runtime folds them at session
            creation); ``False`` charges them like any op (:class:`~hetsim.costs.CostModel`).
        spill: live activations beyond a checked memory's capacity spill to the next memory instead of the
            schedule being refused (:mod:`hetsim.analysis.footprint`).
        fusion: the mapper may run ops fused into their producers (:attr:`~hetsim.costs.CostModel.fusion`).
    """

    fold_constants: bool = True
    spill: bool = False
    fusion: bool = True


class DagKind(WorkloadKind):
    """A DAG of tensor operators: :class:`~hetsim.costs.CostModel`, one replay, the baseline's replay."""

    name: ClassVar[str] = DAG
    description: ClassVar[str] = DESCRIPTIONS[DAG]
    default_mapper: ClassVar[str] = "cpsat"
    options: ClassVar[type] = DagOptions
    cli_flags: ClassVar[tuple] = (
        ("--objective", "objective", None), ("--export", "export", None), ("--solver", "solver", None),
        ("--gap", "gap", None), ("--threads", "threads", None), ("--no-fold-constants", "fold_constants", True),
        ("--no-fusion", "fusion", True), ("--spill", "spill", False))
    cli_noun: ClassVar[str] = "ONNX models"
    outputs: ClassVar[tuple[str, ...]] = (
        "summary", "ops", "op-breakdown", "critical-path", "schedule", "trace", "perfetto", "timeline", "breakdown",
        "memory", "report")

    @property
    def sweep(self):
        """Its sweep points (:mod:`hetsim.dag.sweep`)."""
        from hetsim.dag.sweep import DAG_SWEEP

        return DAG_SWEEP

    def foreign_options_message(self, foreign: list[str]) -> str:
        verb = "applies" if len(foreign) == 1 else "apply"
        return f"{', '.join(foreign)} {verb} to spiking networks (an SNN spec .yaml), not to ONNX models"

    def cost_model(self, workload, platform, options: DagOptions):
        from hetsim.costs import CostModel

        return CostModel(workload, platform, fold_constants=options.fold_constants, fusion=options.fusion)

    def run(self, platform, workload, mapper, contention, mapper_options, schedule, options: DagOptions, load):
        from hetsim.dag.run import run_dag

        return run_dag(platform, workload, mapper, contention, mapper_options, schedule, options, load)


#: the kind's registry entry (:mod:`hetsim.kinds`)
KIND = DagKind()
