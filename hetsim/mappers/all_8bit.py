"""``all-8bit``: every Conv/FC layer on DIANA's digital accelerator (8-bit weights), the ODiMO baseline."""

from __future__ import annotations

import time

from hetsim.costs import CostModel
from hetsim.mappers._diana import channel_schedule, channel_stats, diana_devices, layers
from hetsim.mappers.base import register
from hetsim.schedule import Schedule


def no_tiling_hint(digital: str) -> str:
    """What a user of a whole-layer DIANA baseline can do when a layer's weights exceed the digital accelerator's
    weight memory (the latency model prices no weight tiling, so hetsim does not run such a layer there)."""
    return (f"The DIANA latency model prices no weight tiling, so a layer runs on {digital!r} only if its weights "
            "fit: min-cost caps each layer's digital part at what fits; to run the layers untiled as ODiMO's own "
            f"model does, set weight_memory_kib: null on {digital!r} in a copy of the platform")


@register("all-8bit")
class All8Bit:
    """Every Conv/FC layer (an op with a GEMM view the digital accelerator runs) whole on the digital accelerator
    (the channel-splitting device with the more precise weights); every other op on the host. ODiMO Sec. IV-A,
    baseline "All-8bit".

    A layer whose weights exceed the digital accelerator's per-op weight memory (DIANA: 64 KiB; most of
    ResNet-18's layers from its second stage on) is a :class:`~hetsim.errors.MappingError`, not a silent move to
    the host: the baseline is defined only for networks whose layers fit (``weight_memory_kib: null`` on the
    device turns the check off, ODiMO's model).

    Source: M. Risso et al., "Precision-aware Latency and Energy Balancing on Multi-Accelerator Platforms for
    DNN Inference", ISLPED 2023, arXiv:2306.05060 (ODiMO).
    """

    def map(self, costs: CostModel) -> Schedule:
        """Raises:
            MappingError: the platform has no DIANA digital + AIMC pair, or a layer's weights do not fit the
                digital accelerator's weight memory (the message names the first layer, its weight KiB and the
                capacity)."""
        t0 = time.perf_counter()
        digital, aimc = diana_devices(costs, self.name)
        chans = {v: {digital: list(range(costs.out_channels(v)))} for v in layers(costs, digital)}
        s = channel_schedule(costs, self.name, chans, {"status": "heuristic"}, hint=no_tiling_hint(digital))
        s.stats.update(channel_stats(costs, s, digital, aimc), solve_time_s=time.perf_counter() - t0)
        return s
