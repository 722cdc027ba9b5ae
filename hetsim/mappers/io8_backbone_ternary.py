"""``io8-backbone-ternary``: first and last layer on DIANA's digital accelerator, the backbone on the AIMC."""

from __future__ import annotations

import time

from hetsim.costs import CostModel
from hetsim.mappers._diana import channel_schedule, channel_stats, diana_devices, layers, runs
from hetsim.mappers.all_8bit import no_tiling_hint
from hetsim.mappers.base import register
from hetsim.schedule import Schedule


@register("io8-backbone-ternary")
class Io8BackboneTernary:
    """The first and the last Conv/FC layer (in topological order) whole on the digital accelerator (8-bit),
    every other layer on the AIMC (ternary) when it can run it (``groups = 1``), else on the digital
    accelerator; other ops on the host. The rule of thumb that quantising the layers next to the input and the
    output costs the most accuracy (DIANA, JSSC 2023); ODiMO Sec. IV-A, baseline "IO-8bit/Backbone Ternary".

    A layer on the digital accelerator whose weights exceed its weight memory is a
    :class:`~hetsim.errors.MappingError`, as in ``all-8bit`` (ResNet-18 on Tiny-ImageNet: the 512 x 200
    classifier's 100 KiB of 8-bit weights against DIANA's 64 KiB).

    Source: M. Risso et al., ISLPED 2023, arXiv:2306.05060 (ODiMO).
    """

    def map(self, costs: CostModel) -> Schedule:
        """Raises:
            MappingError: the platform has no DIANA digital + AIMC pair, or a layer on the digital accelerator
                does not fit its weight memory."""
        t0 = time.perf_counter()
        digital, aimc = diana_devices(costs, self.name)
        ls = layers(costs, digital)
        io = {ls[0], ls[-1]} if ls else set()
        chans = {}
        for v in ls:
            dev = aimc if v not in io and runs(costs, v, aimc) else digital
            chans[v] = {dev: list(range(costs.out_channels(v)))}
        s = channel_schedule(costs, self.name, chans, {"status": "heuristic"}, hint=no_tiling_hint(digital))
        s.stats.update(channel_stats(costs, s, digital, aimc), solve_time_s=time.perf_counter() - t0)
        return s
