"""Helpers shared by the DIANA mappers (ODiMO): find the two accelerators, list the layers, and turn
per-layer channel assignments into a :class:`~hetsim.schedule.Schedule` with channel splits."""

from __future__ import annotations

from hetsim.costs import CostModel
from hetsim.errors import MappingError
from hetsim.mappers.base import make_schedule
from hetsim.schedule import Schedule


def diana_devices(costs: CostModel, mapper: str) -> tuple[str, str]:
    """``(digital, aimc)``: the platform's two channel-splitting accelerators (ODiMO), the one with the more
    precise weights first (DIANA: the 8-bit digital accelerator, then the ternary analog one).

    Raises:
        MappingError: the platform does not have exactly two channel-splitting accelerators of different
            weight precision.
    """
    split = [(n, costs.devices[n].weight_precision_bits) for n in costs.split_devices()]
    if len(split) != 2 or any(b is None for _, b in split) or split[0][1] == split[1][1]:
        raise MappingError(
            f"{mapper}: platform {costs.platform.name!r} has {len(split)} channel-splitting accelerators "
            f"({', '.join(n for n, _ in split) or 'none'}); this mapper needs exactly two, of different weight "
            "precision (DIANA's digital and analog accelerators, e.g. platforms/diana.yaml)"
        )
    (hi, _), (lo, _) = sorted(split, key=lambda nb: -nb[1])
    return hi, lo


def layers(costs: CostModel, digital: str) -> list[str]:
    """The Conv/FC layers, in topological order: ops with a GEMM view that the digital accelerator runs."""
    return [v for v in costs.workload.topological_order()
            if costs.workload.op(v).gemm is not None and costs.supported(v, digital)]


def channel_schedule(
    costs: CostModel, mapper: str, channels: dict[str, dict[str, list[int]]], stats: dict | None = None
) -> Schedule:
    """A schedule from per-layer channel assignments.

    Args:
        channels: op -> {device: output-channel indices}; empty parts are dropped. One remaining part assigns
            the op to that device; several make a channel split (parts in the dict's order). Ops not in
            ``channels`` keep :meth:`CostModel.initial_assignment` (the host, or the first device that runs
            them).
        stats: mapper statistics; ``aimc_share`` etc. are added by the caller.

    Raises:
        MappingError: a part is on a device that cannot run it.
    """
    assignment = costs.initial_assignment()
    splits: dict[str, dict[str, list[int]]] = {}
    for v, parts in channels.items():
        parts = {d: list(ch) for d, ch in parts.items() if ch}
        for d, ch in parts.items():
            if costs.part_latency(v, d, len(ch)) is None:
                op = costs.workload.op(v)
                raise MappingError(f"{mapper}: {d!r} cannot run {len(ch)} channels of {v!r} ({op.op_type}, groups "
                                   f"{op.gemm.groups})")
        if len(parts) == 1:
            assignment[v] = next(iter(parts))
        elif parts:
            assignment[v] = next(iter(parts))
            splits[v] = parts
    return make_schedule(costs, assignment, mapper, stats, splits=splits)


def block_channels(c_out: int, n_digital: int, digital: str, aimc: str) -> dict[str, list[int]]:
    """Contiguous blocks: channels ``0..n_digital-1`` on ``digital``, the rest on ``aimc`` (the reordering of
    ODiMO Fig. 3 makes each device's part contiguous)."""
    return {digital: list(range(n_digital)), aimc: list(range(n_digital, c_out))}


def channel_stats(costs: CostModel, schedule: Schedule, digital: str, aimc: str) -> dict:
    """``layers``, ``split_layers``, ``channels`` per device and ``aimc_share`` of a DIANA schedule (over the
    layers on the two accelerators)."""
    counts = {digital: 0, aimc: 0}
    n_layers = 0
    for v in costs.workload.topological_order():
        c = costs.out_channels(v)
        if c is None:
            continue
        parts = schedule.channel_parts(v, c)
        if not set(parts) <= set(counts):
            continue
        n_layers += 1
        for d, n in parts.items():
            counts[d] += n
    total = sum(counts.values())
    return {"layers": n_layers, "split_layers": len(schedule.splits), "channels": counts,
            "aimc_share": counts[aimc] / total if total else 0.0}
