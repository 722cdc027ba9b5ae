"""``all-host``: every op on the host CPU, in topological order. The baseline of every speedup."""

from __future__ import annotations

from hetsim.costs import CostModel
from hetsim.errors import MappingError
from hetsim.mappers.base import fuse_where_placed, make_schedule, register
from hetsim.schedule import Schedule


@register("all-host")
class AllHost:
    """Map every operator to the platform's host CPU (the CPU-only baseline of the CPU-CIM ILP paper, Sec. V).

    Where the host fuses ops (a host with ``folds_qdq``: a QDQ model's Q/DQ folded into its int8 ops), they run
    fused where the cost model offers it (:func:`~hetsim.mappers.base.fuse_where_placed`), when that is not
    slower; with fusion off or on a host that fuses nothing, every op on its own launch."""

    def map(self, costs: CostModel) -> Schedule:
        """Raises:
            MappingError: the host cannot run some op (its ``supported_ops`` excludes it)."""
        bad = [v for v, lat in costs.latency.items() if costs.host not in lat]
        if bad:
            raise MappingError(
                f"all-host: the host {costs.host!r} cannot run {len(bad)} ops, e.g. {bad[0]!r} "
                f"({costs.workload.op(bad[0]).op_type})"
            )
        assignment = {v: costs.host for v in costs.workload.graph}
        plain = make_schedule(costs, assignment, self.name)
        fused = fuse_where_placed(costs, assignment)
        if not fused:
            return plain
        sched = make_schedule(costs, assignment, self.name, {"fused": len(fused)}, fused=fused)
        return sched if sched.makespan_s <= plain.makespan_s else plain
