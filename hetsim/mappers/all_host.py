"""``all-host``: every op on the host CPU, in topological order. The baseline of every speedup."""

from __future__ import annotations

from hetsim.costs import CostModel
from hetsim.errors import MappingError
from hetsim.mappers.base import make_schedule, register
from hetsim.schedule import Schedule


@register("all-host")
class AllHost:
    """Map every operator to the platform's host CPU (the CPU-only baseline of the CPU-CIM ILP paper, Sec. V)."""

    def map(self, costs: CostModel) -> Schedule:
        """Raises:
            MappingError: the host cannot run some op (its ``supported_ops`` excludes it)."""
        bad = [v for v, lat in costs.latency.items() if costs.host not in lat]
        if bad:
            raise MappingError(
                f"all-host: the host {costs.host!r} cannot run {len(bad)} ops, e.g. {bad[0]!r} "
                f"({costs.workload.op(bad[0]).op_type})"
            )
        return make_schedule(costs, {v: costs.host for v in costs.workload.graph}, self.name)
