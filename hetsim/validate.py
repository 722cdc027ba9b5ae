"""``hetsim validate``: is a mapper's schedule feasible, and does the simulator reproduce its makespan?

Three steps (the CPU-CIM ILP promises a makespan under its own assumptions; the simulator checks it):

1. feasibility (:func:`hetsim.check.check_schedule`): support, crossbar budget, precedence with transfers,
   host capacity;
2. replay with the ILP's assumptions (no contention): the makespan must equal the schedule's predicted
   makespan to ``rel_tol`` (1e-9 relative by default), else the first op whose replayed times diverge from
   the prediction is named;
3. replay with link contention: the makespan difference is the error of the contention-free model.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hetsim.check import check_schedule
from hetsim.costs import CostModel
from hetsim.schedule import Schedule
from hetsim.sim import simulate


@dataclass
class ValidationReport:
    """Outcome of :func:`validate_schedule`. ``ok`` is True when all checks passed."""

    violations: list[str] = field(default_factory=list)
    predicted_makespan_s: float | None = None
    replay_makespan_s: float | None = None
    contention_makespan_s: float | None = None
    divergence: str | None = None

    @property
    def ok(self) -> bool:
        return not self.violations and self.divergence is None

    @property
    def model_error(self) -> float | None:
        """Relative makespan increase when the shared bus serialises transfers (the ILP model's error)."""
        if self.contention_makespan_s is None or not self.replay_makespan_s:
            return None
        return self.contention_makespan_s / self.replay_makespan_s - 1.0


def validate_schedule(
    costs: CostModel, schedule: Schedule, rel_tol: float = 1e-9, contention: frozenset[str] = frozenset({"links"})
) -> ValidationReport:
    """Run the three checks of this module on ``schedule``.

    Args:
        rel_tol: relative tolerance on times, relative to the predicted makespan.
        contention: contention kinds for step 3 (default: the shared bus, ``links``; with ``memory`` added when
            the schedule streams or reprograms weights).

    Raises:
        ScheduleError: the schedule cannot be replayed at all (e.g. unassigned ops).
    """
    if schedule.policies:  # streamed and reprogrammed weights: their memory ports contend too
        contention = frozenset(contention) | {"memory"}
    rep = ValidationReport(predicted_makespan_s=schedule.makespan_s)
    rep.violations = check_schedule(costs, schedule, rel_tol=rel_tol).violations
    if rep.violations:
        return rep
    res = simulate(costs, schedule)
    rep.replay_makespan_s = res.makespan_s
    pred = schedule.makespan_s
    if pred is None:
        rep.divergence = "the schedule carries no predicted makespan to compare with"
    elif abs(res.makespan_s - pred) > rel_tol * max(abs(pred), 1e-30):
        rep.divergence = f"replayed makespan {res.makespan_s:.12g} s != predicted {pred:.12g} s"
        tol = rel_tol * max(abs(pred), 1e-30)
        diverged = [
            v for v in costs.workload.topological_order()
            if v in schedule.start_s and (abs(res.start_s[v] - schedule.start_s[v]) > tol
                                          or abs(res.finish_s[v] - schedule.finish_s[v]) > tol)
        ]
        if diverged:
            v = min(diverged, key=lambda n: (min(res.start_s[n], schedule.start_s[n]), n))
            rep.divergence += (
                f"; first divergence at op {v!r} on {schedule.assignment[v]!r}: predicted "
                f"[{schedule.start_s[v]:.9g}, {schedule.finish_s[v]:.9g}] s, replayed "
                f"[{res.start_s[v]:.9g}, {res.finish_s[v]:.9g}] s"
            )
    if contention:
        rep.contention_makespan_s = simulate(costs, schedule, contention).makespan_s
    return rep


def capacity_phrase(platform) -> str:
    """What the capacity check of ``platform`` covered, device by device (``hetsim validate``'s line (a)):
    ``capacity of cim: 100 crossbars [resident; CPU-CIM ILP, Eq. 14]``, ``... of npu: weight_memory 1,048,576 B
    [resident; ...]``; ``no device capacity`` on a platform whose devices have none."""
    parts = []
    for name, dev in platform.devices.items():
        for cap in dev.capacities().values():
            amount = f"{cap.amount:,} {cap.unit}" if cap.unit == cap.name else f"{cap.name} {cap.amount:,} {cap.unit}"
            src = f"; {cap.source}" if cap.source else ""
            parts.append(f"{name}: {amount} [{cap.scope}{src}]")
    for name, mem in platform.memories.items():  # the weights streamed or reprogrammed from it (hetsim.weights)
        if mem.weights_for:
            parts.append(f"{name}: {mem.size_bytes:,} B [streamed and reprogrammed weights]")
    return "capacity of " + ", ".join(parts) if parts else "no device capacity"
