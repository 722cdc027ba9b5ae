"""``all-host``: every op on the host CPU, in topological order. The baseline of every speedup."""

from __future__ import annotations

from hetsim.costs import CostModel
from hetsim.mappers.base import make_schedule, register
from hetsim.schedule import Schedule


@register("all-host")
class AllHost:
    """Map every operator to the platform's host CPU (the CPU-only baseline of seed 000 Sec. V)."""

    def map(self, costs: CostModel) -> Schedule:
        return make_schedule(costs, {v: costs.host for v in costs.workload.graph}, self.name)
