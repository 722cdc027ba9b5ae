"""Helpers shared by the DIANA mappers (seed 002): find the two accelerators, list the layers, and turn
per-layer channel assignments into a :class:`~hetsim.schedule.Schedule` with channel splits."""

from __future__ import annotations

from hetsim.costs import CostModel
from hetsim.errors import MappingError
from hetsim.mappers.base import make_schedule
from hetsim.schedule import Schedule


def diana_devices(costs: CostModel, mapper: str) -> tuple[str, str]:
    """``(digital, aimc)``: the names of the platform's ``diana-digital`` and ``diana-aimc`` devices.

    Raises:
        MappingError: the platform lacks one of them or has several of a kind.
    """
    found = {}
    for kind in ("diana-digital", "diana-aimc"):
        names = [n for n, d in costs.platform.devices.items() if d.kind == kind]
        if len(names) != 1:
            what = "no" if not names else f"{len(names)}"
            raise MappingError(
                f"{mapper}: platform {costs.platform.name!r} has {what} device of kind {kind!r}; this mapper needs "
                "exactly one 'diana-digital' and one 'diana-aimc' device (e.g. platforms/diana.yaml)"
            )
        found[kind] = names[0]
    return found["diana-digital"], found["diana-aimc"]


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
            the op to that device; several make a channel split, with ``assignment`` = the part with the most
            channels (ties: the first listed). Ops not in ``channels`` keep :meth:`CostModel.initial_assignment`
            (the host, or the first device that runs them).
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
            assignment[v] = max(parts, key=lambda d: len(parts[d]))  # max keeps the first of equal counts
            splits[v] = parts
    return make_schedule(costs, assignment, mapper, stats, splits=splits)


def block_channels(c_out: int, n_digital: int, digital: str, aimc: str) -> dict[str, list[int]]:
    """Contiguous blocks: channels ``0..n_digital-1`` on ``digital``, the rest on ``aimc`` (the reordering of
    seed 002 Fig. 3 makes each device's part contiguous)."""
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
