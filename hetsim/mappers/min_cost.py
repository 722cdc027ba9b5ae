"""``min-cost``: per layer, the channel split between DIANA's accelerators that minimises latency or energy."""

from __future__ import annotations

import time

from hetsim.costs import CostModel
from hetsim.errors import MappingError
from hetsim.mappers._diana import block_channels, channel_schedule, channel_stats, diana_devices, layers
from hetsim.mappers.base import register
from hetsim.schedule import Schedule

OBJECTIVES = ("latency", "energy")
TIE_REL_TOL = 1e-12
"""Objective values within this relative distance of the best are ties (float rounding of equal values)."""


def split_objective(costs: CostModel, op: str, n_digital: int, digital: str, aimc: str, objective: str) -> float:
    """The cost of putting ``n_digital`` of ``op``'s output channels on ``digital`` and the rest on ``aimc``.

    ``latency``: ``max(L_d(n), L_a(C_out - n))`` in seconds (seed 002 Eq. 3, the layer's parts run in
    parallel). ``energy``: :meth:`CostModel.layer_energy` of the two parts in joules (seed 002 Eq. 4; with
    ``platforms/diana.yaml``, ``42.39 mW * min + 28.74 mW * (L_a - min) + 24.96 mW * (L_d - min)``).
    A part with 0 channels costs 0 s (both terms of the DIANA models vanish).
    """
    c_out = costs.out_channels(op)
    parts = {d: costs.part_latency(op, d, n) if n else 0.0
             for d, n in ((digital, n_digital), (aimc, c_out - n_digital))}
    if objective == "latency":
        return max(parts.values())
    return costs.layer_energy(parts)


def best_split(costs: CostModel, op: str, digital: str, aimc: str, objective: str) -> tuple[int, float]:
    """``(n_digital, cost)`` minimising :func:`split_objective` over every split size ``n = C_out .. 0``;
    ties (within :data:`TIE_REL_TOL`) go to more digital channels. A layer the AIMC cannot run (grouped or
    depthwise) stays whole on the digital accelerator."""
    c_out = costs.out_channels(op)
    if not costs.supported(op, aimc):
        return c_out, split_objective(costs, op, c_out, digital, aimc, objective)
    best_n, best = c_out, split_objective(costs, op, c_out, digital, aimc, objective)
    for n in range(c_out - 1, -1, -1):
        c = split_objective(costs, op, n, digital, aimc, objective)
        if c < best - TIE_REL_TOL * abs(best):
            best_n, best = n, c
    return best_n, best


@register("min-cost")
class MinCost:
    """Seed 002's "Min-Cost" baseline: each Conv/FC layer's output channels split between the DIANA digital
    and AIMC accelerators so that the layer's latency ``max(L_a, L_d)`` (seed 002 Eq. 3) or energy (Eq. 4)
    is minimal, ignoring accuracy. Exact per layer: every split size ``n_digital = 0 .. C_out`` is evaluated
    (the models depend only on the channel counts); ties go to more digital channels ("digital channels are
    maximised since this is expected to improve accuracy"). Depthwise/grouped layers stay on the digital
    accelerator. The digital part holds channels ``0..n-1`` and the AIMC part the rest (seed 002 Fig. 3:
    channels are reordered so each part is contiguous). Layers are optimised one at a time, as in seed 002;
    the replay then lets independent layers overlap.

    Cost: ``sum over layers of (C_out + 1)`` evaluations of the two closed-form models.

    Source: M. Risso et al., ISLPED 2023, arXiv:2306.05060 (seed 002), Sec. IV-A.

    Args:
        objective: ``"latency"`` or ``"energy"``.

    Raises:
        MappingError: (from the constructor) an unknown objective.
    """

    def __init__(self, objective: str = "latency"):
        if objective not in OBJECTIVES:
            raise MappingError(f"min-cost: unknown objective {objective!r}; allowed: {', '.join(OBJECTIVES)}")
        self.objective = objective

    def map(self, costs: CostModel) -> Schedule:
        """Raises:
            MappingError: the platform has no DIANA digital + AIMC pair."""
        t0 = time.perf_counter()
        digital, aimc = diana_devices(costs, self.name)
        chans = {}
        total = 0.0
        for v in layers(costs, digital):
            n, c = best_split(costs, v, digital, aimc, self.objective)
            chans[v] = block_channels(costs.out_channels(v), n, digital, aimc)
            total += c
        key = "layer_latency_sum_s" if self.objective == "latency" else "layer_energy_sum_j"
        s = channel_schedule(costs, self.name, chans, {"status": "optimal", "objective": self.objective, key: total})
        s.stats.update(channel_stats(costs, s, digital, aimc), solve_time_s=time.perf_counter() - t0)
        return s
