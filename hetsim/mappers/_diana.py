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


def runs(costs: CostModel, op: str, device: str) -> bool:
    """True when ``device``'s kind runs ``op`` (its op type and geometry), whatever the op's size: unlike
    :meth:`CostModel.supported`, a per-op capacity the whole op exceeds (DIANA's digital weight memory) does not
    count, since a part of the op may still fit."""
    return costs.devices[device].latency(costs.workload.op(op)) is not None


def layers(costs: CostModel, digital: str) -> list[str]:
    """The Conv/FC layers, in topological order: ops with a GEMM view whose type the digital accelerator runs
    (:func:`runs`), including layers whose weights exceed its weight memory (they may still be split, or run on
    the AIMC)."""
    return [v for v in costs.workload.topological_order()
            if costs.workload.op(v).gemm is not None and runs(costs, v, digital)]


def _amount(n: float, unit: str) -> str:
    return f"{n / 1024:,.1f} KiB" if unit == "B" else f"{n:,g} {unit}"


def capacity_excess(costs: CostModel, op: str, device: str, n_channels: int) -> str | None:
    """Why the part of ``op`` computing ``n_channels`` output channels does not fit ``device``'s per-op
    capacities (``"needs 144.0 KiB of weight_memory on 'digital', which holds 64.0 KiB [source]"``), or ``None``
    when it fits them all."""
    dem = costs.demand(op, device, n_channels)
    for cap in costs.per_op.get(device, []):
        need = dem.get(cap.name, 0)
        if need > cap.amount:
            src = f" [{cap.source}]" if cap.source else ""
            return (f"needs {_amount(need, cap.unit)} of {cap.name} on {device!r}, which holds "
                    f"{_amount(cap.amount, cap.unit)}{src}")
    return None


def part_error(costs: CostModel, mapper: str, op: str, device: str, n_channels: int) -> str | None:
    """Why ``device`` cannot run the part of ``op`` computing ``n_channels`` output channels (its kind does not
    run such an op, or the part exceeds a per-op capacity), or ``None`` when it can."""
    if costs.part_latency(op, device, n_channels) is not None:
        return None
    o = costs.workload.op(op)
    c_out = costs.out_channels(op)
    why = capacity_excess(costs, op, device, n_channels) if runs(costs, op, device) else None
    if why is None:
        return f"{mapper}: {device!r} cannot run {n_channels} channels of {op!r} ({o.op_type}, groups {o.gemm.groups})"
    what = (f"layer {op!r} ({o.op_type}, {c_out} output channels)" if n_channels == c_out
            else f"the part of layer {op!r} ({o.op_type}) computing {n_channels} of its {c_out} output channels")
    return f"{mapper}: {what} {why}"


def channel_schedule(
    costs: CostModel, mapper: str, channels: dict[str, dict[str, list[int]]], stats: dict | None = None,
    hint: str = "",
) -> Schedule:
    """A schedule from per-layer channel assignments.

    Args:
        channels: op -> {device: output-channel indices}; empty parts are dropped. One remaining part assigns
            the op to that device; several make a channel split, one contiguous channel range per device in the
            dict's order (only the counts matter to the cost models: ODiMO's function-preserving reordering
            makes each device's channels contiguous). Ops not in ``channels`` keep
            :meth:`CostModel.initial_assignment` (the host, or the first device that runs them).
        stats: mapper statistics; ``aimc_share`` etc. are added by the caller.
        hint: appended to the error message (what the user can do about a part that does not fit).

    Raises:
        MappingError: a part is on a device that cannot run it: its kind does not run the op, or the part
            exceeds a per-op capacity (DIANA's 64 KiB digital weight memory). The message names the first such
            part (in the order of ``channels``) and how many layers have one.
    """
    assignment = costs.initial_assignment()
    splits: dict[str, dict[str, list[int]]] = {}
    errors: list[str] = []
    for v, parts in channels.items():
        parts = {d: list(ch) for d, ch in parts.items() if ch}
        c_out = costs.out_channels(v)
        if len(parts) == 1 and all(len(ch) == c_out and costs.supported(v, d) for d, ch in parts.items()):
            err = None  # the whole op on a device that runs it (the host too)
        else:
            err = next((e for d, ch in parts.items() if (e := part_error(costs, mapper, v, d, len(ch))) is not None),
                       None)
        if err is not None:
            errors.append(err)
            continue
        if len(parts) == 1:
            assignment[v] = next(iter(parts))
        elif parts:
            assignment[v] = next(iter(parts))
            splits[v] = parts
    if errors:
        more = f"; {len(errors) - 1} more of the {len(channels)} layers do not fit either" if len(errors) > 1 else ""
        raise MappingError(errors[0] + more + (f". {hint}" if hint else ""))
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
