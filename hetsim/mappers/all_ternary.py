"""``all-ternary``: every Conv/FC layer DIANA's AIMC can run (groups = 1) on it, the rest on the digital one."""

from __future__ import annotations

import time

from hetsim.costs import CostModel
from hetsim.mappers._diana import channel_schedule, channel_stats, diana_devices, layers
from hetsim.mappers.base import register
from hetsim.schedule import Schedule


@register("all-ternary")
class AllTernary:
    """Every Conv/FC layer with ``groups = 1`` on the ``diana-aimc`` device (ternary weights); depthwise and
    grouped convolutions, which the AIMC cannot run, on ``diana-digital``; other ops on the host. Seed 002
    Sec. IV-A, baseline "All-Ternary".

    Source: M. Risso et al., ISLPED 2023, arXiv:2306.05060 (seed 002).
    """

    def map(self, costs: CostModel) -> Schedule:
        """Raises:
            MappingError: the platform has no DIANA digital + AIMC pair."""
        t0 = time.perf_counter()
        digital, aimc = diana_devices(costs, self.name)
        chans = {}
        for v in layers(costs, digital):
            dev = aimc if costs.supported(v, aimc) else digital
            chans[v] = {dev: list(range(costs.out_channels(v)))}
        s = channel_schedule(costs, self.name, chans, {"status": "heuristic"})
        s.stats.update(channel_stats(costs, s, digital, aimc), solve_time_s=time.perf_counter() - t0)
        return s
