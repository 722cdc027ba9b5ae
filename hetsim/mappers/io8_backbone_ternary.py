"""``io8-backbone-ternary``: first and last layer on DIANA's digital accelerator, the backbone on the AIMC."""

from __future__ import annotations

import time

from hetsim.costs import CostModel
from hetsim.mappers._diana import channel_schedule, channel_stats, diana_devices, layers
from hetsim.mappers.base import register
from hetsim.schedule import Schedule


@register("io8-backbone-ternary")
class Io8BackboneTernary:
    """The first and the last Conv/FC layer (in topological order) on ``diana-digital`` (8-bit), every other
    layer on ``diana-aimc`` (ternary) when it can run it (``groups = 1``), else on the digital accelerator;
    other ops on the host. The rule of thumb that quantising the layers next to the input and the output
    costs the most accuracy (DIANA, JSSC 2023); seed 002 Sec. IV-A, baseline "IO-8bit/Backbone Ternary".

    Source: M. Risso et al., ISLPED 2023, arXiv:2306.05060 (seed 002).
    """

    def map(self, costs: CostModel) -> Schedule:
        """Raises:
            MappingError: the platform has no DIANA digital + AIMC pair."""
        t0 = time.perf_counter()
        digital, aimc = diana_devices(costs, self.name)
        ls = layers(costs, digital)
        io = {ls[0], ls[-1]} if ls else set()
        chans = {}
        for v in ls:
            dev = aimc if v not in io and costs.supported(v, aimc) else digital
            chans[v] = {dev: list(range(costs.out_channels(v)))}
        s = channel_schedule(costs, self.name, chans, {"status": "heuristic"})
        s.stats.update(channel_stats(costs, s, digital, aimc), solve_time_s=time.perf_counter() - t0)
        return s
