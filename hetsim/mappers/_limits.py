"""The limits of one exact mapping: a deterministic work budget, a wall-clock cap, or both.

A wall-clock limit makes a result depend on the machine's speed and load: the same command stops earlier on a
busy machine and returns another schedule. The exact mappers therefore stop by default on **work**, counted by
the solver in units that do not depend on the clock:

* ``cpsat``: CP-SAT's *deterministic time* (``max_deterministic_time``, in deterministic seconds, which
  OR-Tools accumulates from counted solver work, not from the clock); with several workers CP-SAT's
  deterministic mode, ``interleave_search``, is on, so the count and the search are the same on every run;
* ``ilp``: branch-and-bound nodes (HiGHS's ``mip_max_nodes``, Gurobi's ``NodeLimit``; one thread by default,
  and HiGHS's search on one thread is deterministic). The work before the first node (presolve, the root LP,
  its cuts and heuristics) is not counted: HiGHS offers no limit on it but the clock.

A ``time_limit_s`` the user gives is a wall-clock cap, as before. Given alone, it replaces the default work
budget (the run is then timed, not counted, and may differ between machines). Given with a work limit, both
apply and the first reached stops the mapping; the status says which one did (``work_limit`` or
``time_limit``). Neither given:
the mapper's default work budget (:data:`CPSAT_WORK`, :func:`ilp_nodes`; chosen on the shipped workloads,
docs/performance.md).

:class:`Budget` is ``cpsat``'s account: one clock in units of its primary limit (the work budget when there is
one, else the wall seconds) that advances with the CP-SAT calls' deterministic time and, with a wall cap, with the
wall clock, whichever is further; the phases share it as they shared the wall-clock limit (decomposition,
fluid relaxation, full model). Steps that do not call CP-SAT (heuristics, local searches) are bounded by counts
of their own and stop on this clock only where it moved.
"""

from __future__ import annotations

import time

#: ``cpsat``'s default work budget of a whole mapping, in CP-SAT deterministic seconds (assumed: chosen so that
#: the shipped workloads' hard cases stop after 10-20 s of wall time on a quiet 2-core machine, the order of the
#: former 30 s default, and the proven ones keep their numbers; docs/performance.md)
CPSAT_WORK = 2.0

#: ``ilp``'s default work budget in nodes x nonzeros of the model (assumed: a node's LP costs about in proportion
#: to the model's nonzeros; the most the random 4-8-op models of the brute-force tests needed in one run of its
#: 100 examples is 6,426 nodes of a 252-nonzero model, 1.6e6, and a node of ResNet-18 on PUMA, 30,631 nonzeros,
#: took 0.9 s; docs/performance.md)
ILP_WORK = 5_000_000

#: the fewest nodes :func:`ilp_nodes` gives a model
ILP_MIN_NODES = 10


def ilp_nodes(nonzeros: int) -> int:
    """``ilp``'s default node limit for a model of ``nonzeros`` constraint-matrix entries:
    ``max(ILP_MIN_NODES, ILP_WORK // nonzeros)`` (:data:`ILP_WORK`): 19,841 nodes for 252 nonzeros, 163 for
    ResNet-18 on PUMA, 59 for YOLOv5n."""
    return max(ILP_MIN_NODES, ILP_WORK // max(1, int(nonzeros)))


class Budget:
    """A mapping's limits and what it has used of them (module docstring).

    Args:
        work: the deterministic budget (CP-SAT deterministic seconds), or None.
        wall_s: the wall-clock cap in seconds, or None.
        default_work: the budget used when neither is given.

    The clock (:meth:`used`) is in *units*: deterministic seconds when there is a work budget, else seconds.
    """

    def __init__(self, work: float | None, wall_s: float | None, default_work: float):
        if work is None and wall_s is None:
            work = default_work
        self.work = None if work is None else float(work)
        self.wall_s = None if wall_s is None else float(wall_s)
        self.unit_total = self.work if self.work is not None else self.wall_s
        self.t0 = time.perf_counter()
        self.spent = 0.0  # deterministic seconds of the CP-SAT calls so far
        self.stopped_by: str | None = None  # "work_limit" | "time_limit": the limit that cut the last cut solve

    def used(self) -> float:
        """The budget used so far, in units: the larger share of the work and of the wall clock."""
        share = self.spent / self.work if self.work else 0.0
        if self.wall_s:
            share = max(share, (time.perf_counter() - self.t0) / self.wall_s)
        return share * self.unit_total

    def left(self) -> float:
        """The budget left, in units (0 when used up)."""
        return max(0.0, self.unit_total - self.used())

    def set_params(self, prm, amount: float) -> None:
        """Give a CP-SAT call (its ``SatParameters`` ``prm``) ``amount`` units of the budget: deterministic
        seconds and, with a wall cap, seconds in the same proportion (a solve stops at the first reached)."""
        amount = max(0.0, amount)
        if self.work is not None:
            prm.max_deterministic_time = max(1e-6, amount * self.work / self.unit_total)
        if self.wall_s is not None:
            prm.max_time_in_seconds = max(0.01, amount * self.wall_s / self.unit_total)

    def charge(self, solver, proven: bool) -> None:
        """Count a finished CP-SAT call's deterministic time; when it ended unproven, note the limit that
        stopped it (the wall cap when its wall time reached its ``max_time_in_seconds``, else the work)."""
        self.spent += float(solver.deterministic_time)
        if proven:
            return
        prm = solver.parameters
        hit_wall = self.wall_s is not None and solver.wall_time >= 0.99 * prm.max_time_in_seconds
        self.stopped_by = "time_limit" if hit_wall or self.work is None else "work_limit"

    def status(self) -> str:
        """The status of a mapping that ended unproven: ``work_limit`` or ``time_limit`` (which one stopped it;
        the wall cap when the wall clock is the further of the two)."""
        if self.stopped_by is not None:
            return self.stopped_by
        if self.work is None:
            return "time_limit"
        if self.wall_s is not None and time.perf_counter() - self.t0 >= self.wall_s * self.spent / self.work:
            return "time_limit"
        return "work_limit"

    def describe(self) -> str:
        """The limits in words, e.g. ``a work limit of 2 deterministic s`` (for messages)."""
        parts = []
        if self.work is not None:
            parts.append(f"a work limit of {self.work:g} deterministic s")
        if self.wall_s is not None:
            parts.append(f"a time limit of {self.wall_s:g} s")
        return " and ".join(parts)

    def stats(self) -> dict:
        """``work_limit``, its ``work_unit``, ``time_limit_s`` (None when not set) and ``work_used``
        (deterministic seconds)."""
        return {"work_limit": self.work, "work_unit": "deterministic s", "time_limit_s": self.wall_s,
                "work_used": self.spent}
