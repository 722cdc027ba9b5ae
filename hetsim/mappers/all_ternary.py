"""``all-ternary``: every Conv/FC layer DIANA's AIMC can run (groups = 1) on it, the rest on the digital one."""

from __future__ import annotations

import time

from hetsim.costs import CostModel
from hetsim.mappers._diana import channel_schedule, channel_stats, diana_devices, layers, runs
from hetsim.mappers.all_8bit import no_tiling_hint
from hetsim.mappers.base import register
from hetsim.schedule import Schedule


@register("all-ternary")
class AllTernary:
    """Every Conv/FC layer the AIMC runs (``groups = 1``) whole on the AIMC (the channel-splitting device with the
    less precise, ternary weights); depthwise and grouped convolutions, which the AIMC cannot run, on the digital
    accelerator; other ops on the host. ODiMO Sec. IV-A, baseline "All-Ternary".

    A layer left to the digital accelerator whose weights exceed its weight memory is a
    :class:`~hetsim.errors.MappingError`, as in ``all-8bit`` (depthwise weights are small: none of the shipped
    workloads has such a layer).

    Source: M. Risso et al., ISLPED 2023, arXiv:2306.05060 (ODiMO).
    """

    def map(self, costs: CostModel) -> Schedule:
        """Raises:
            MappingError: the platform has no DIANA digital + AIMC pair, or a layer the digital accelerator must
                run does not fit its weight memory."""
        t0 = time.perf_counter()
        digital, aimc = diana_devices(costs, self.name)
        chans = {}
        for v in layers(costs, digital):
            dev = aimc if runs(costs, v, aimc) else digital
            chans[v] = {dev: list(range(costs.out_channels(v)))}
        s = channel_schedule(costs, self.name, chans, {"status": "heuristic"}, hint=no_tiling_hint(digital))
        s.stats.update(channel_stats(costs, s, digital, aimc), solve_time_s=time.perf_counter() - t0)
        return s
