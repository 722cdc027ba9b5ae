"""``min-cost``: per layer, the channel split between DIANA's accelerators that minimises latency or energy."""

from __future__ import annotations

import time

from hetsim.costs import CostModel
from hetsim.errors import MappingError
from hetsim.mappers._diana import block_channels, channel_schedule, channel_stats, diana_devices, layers, runs
from hetsim.mappers.base import register
from hetsim.schedule import Schedule

OBJECTIVES = ("latency", "energy")
TIE_REL_TOL = 1e-12
"""Objective values within this relative distance of the best are ties (float rounding of equal values)."""


def part_seconds(costs: CostModel, op: str, device: str, n: int) -> float | None:
    """Seconds of the part of ``op`` computing ``n`` output channels on ``device``: 0 for ``n = 0`` (no part;
    both terms of the DIANA models vanish), ``None`` when the device cannot run the part (its kind does not run
    the op, or the part exceeds a per-op capacity: :meth:`CostModel.part_latency`)."""
    return 0.0 if n == 0 else costs.part_latency(op, device, n)


def split_objective(costs: CostModel, op: str, n_digital: int, digital: str, aimc: str,
                    objective: str) -> float | None:
    """The cost of putting ``n_digital`` of ``op``'s output channels on ``digital`` and the rest on ``aimc``, or
    ``None`` when either part cannot run (:func:`part_seconds`: e.g. the digital part's weights exceed DIANA's
    64 KiB weight memory, or the AIMC part is of a depthwise layer).

    ``latency``: ``max(L_d(n), L_a(C_out - n))`` in seconds (ODiMO Eq. 3, the layer's parts run in
    parallel). ``energy``: :meth:`CostModel.layer_energy` of the two parts in joules (ODiMO Eq. 4; with
    ``platforms/diana.yaml``, ``42.39 mW * min + 28.74 mW * (L_a - min) + 24.96 mW * (L_d - min)``).
    """
    c_out = costs.out_channels(op)
    parts = {d: part_seconds(costs, op, d, n) for d, n in ((digital, n_digital), (aimc, c_out - n_digital))}
    if None in parts.values():
        return None
    if objective == "latency":
        return max(parts.values())
    return costs.layer_energy(parts)


def best_split(costs: CostModel, op: str, digital: str, aimc: str, objective: str) -> tuple[int, float] | None:
    """``(n_digital, cost)`` minimising :func:`split_objective` over the split sizes ``n = C_out .. 0`` whose two
    parts can run; ties (within :data:`TIE_REL_TOL`) go to more digital channels. ``None`` when no split size
    can run (a layer the AIMC cannot run, e.g. depthwise, whose weights exceed the digital weight memory)."""
    best: tuple[int, float] | None = None
    for n in range(costs.out_channels(op), -1, -1):
        c = split_objective(costs, op, n, digital, aimc, objective)
        if c is not None and (best is None or c < best[1] - TIE_REL_TOL * abs(best[1])):
            best = (n, c)
    return best


def capacity_limited(costs: CostModel, op: str, digital: str, aimc: str) -> bool:
    """True when a per-op capacity (DIANA's digital weight memory) rules out some split size of ``op`` that the
    two accelerators' kinds would otherwise run."""
    c_out = costs.out_channels(op)
    for d, sizes in ((digital, range(1, c_out + 1)), (aimc, range(1, c_out + 1))):
        if runs(costs, op, d) and any(costs.part_latency(op, d, n) is None for n in sizes):
            return True
    return False


@register("min-cost")
class MinCost:
    """ODiMO's "Min-Cost" baseline: each Conv/FC layer's output channels split between the DIANA digital and
    AIMC accelerators so that the layer's latency ``max(L_a, L_d)`` (ODiMO Eq. 3) or energy (Eq. 4) is
    minimal, ignoring accuracy. Exact per layer: every split size ``n_digital = 0 .. C_out`` whose parts can run
    is evaluated (the models depend only on the channel counts); ties go to more digital channels ("digital
    channels are maximised since this is expected to improve accuracy"). The digital part holds channels
    ``0..n-1`` and the AIMC part the rest (ODiMO Fig. 3: channels are reordered so each part is contiguous).
    Layers are optimised one at a time, as in ODiMO; the replay then lets independent layers overlap.

    Capacities: a split size whose digital part's weights (``n * C_in/groups * f_x * f_y`` bytes at 8 bit)
    exceed the digital accelerator's per-op weight memory (DIANA: 64 KiB) is not a candidate, nor is an AIMC
    part of a depthwise/grouped layer (those stay whole on the digital accelerator). A layer with no candidate
    at all stays on the host (:meth:`CostModel.initial_assignment`) and is listed in the stats.

    Stats: ``host_layers`` (layers no split fits, kept on the host), ``capacity_limited_layers`` (layers for
    which a per-op capacity ruled out some split sizes), ``layer_latency_sum_s`` or ``layer_energy_sum_j`` (the
    objective summed over the layers on the accelerators) and the channel counts of every DIANA mapper.

    Cost: ``sum over layers of (C_out + 1)`` evaluations of the two closed-form models.

    Source: M. Risso et al., ISLPED 2023, arXiv:2306.05060 (ODiMO), Sec. IV-A.

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
        host, limited = [], 0
        for v in layers(costs, digital):
            limited += capacity_limited(costs, v, digital, aimc)
            best = best_split(costs, v, digital, aimc, self.objective)
            if best is None:
                host.append(v)
                continue
            n, c = best
            chans[v] = block_channels(costs.out_channels(v), n, digital, aimc)
            total += float(c)
        key = "layer_latency_sum_s" if self.objective == "latency" else "layer_energy_sum_j"
        stats = {"status": "optimal", "objective": self.objective, key: total, "host_layers": host,
                 "capacity_limited_layers": limited}
        s = channel_schedule(costs, self.name, chans, stats)
        s.stats.update(channel_stats(costs, s, digital, aimc), solve_time_s=time.perf_counter() - t0)
        return s
