"""``all-8bit``: every Conv/FC layer on DIANA's digital accelerator (8-bit weights), the seed 002 baseline."""

from __future__ import annotations

import time

from hetsim.costs import CostModel
from hetsim.mappers._diana import channel_schedule, channel_stats, diana_devices, layers
from hetsim.mappers.base import register
from hetsim.schedule import Schedule


@register("all-8bit")
class All8Bit:
    """Every Conv/FC layer (an op with a GEMM view the digital accelerator runs) on the ``diana-digital``
    device; every other op on the host. Seed 002 Sec. IV-A, baseline "All-8bit".

    Source: M. Risso et al., "Precision-aware Latency and Energy Balancing on Multi-Accelerator Platforms for
    DNN Inference", ISLPED 2023, arXiv:2306.05060 (seed 002).
    """

    def map(self, costs: CostModel) -> Schedule:
        """Raises:
            MappingError: the platform has no DIANA digital + AIMC pair."""
        t0 = time.perf_counter()
        digital, aimc = diana_devices(costs, self.name)
        chans = {v: {digital: list(range(costs.out_channels(v)))} for v in layers(costs, digital)}
        s = channel_schedule(costs, self.name, chans, {"status": "heuristic"})
        s.stats.update(channel_stats(costs, s, digital, aimc), solve_time_s=time.perf_counter() - t0)
        return s
