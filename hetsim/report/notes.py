"""Warnings a run's report prints about the platform and the model together.

:func:`idle_device_warnings`: a device that can run no op of the model (its ``supported_ops`` match none of the
model's op types, or every op it lists lacks what it needs, e.g. a constant weight matrix) - otherwise such a
device shows only as "0 ops" and a speed-up of 1.00x.
"""

from __future__ import annotations


def idle_device_warnings(costs) -> list[str]:
    """One line per device other than the host that the cost model lets run no op of the workload, naming the
    device, its ``supported_ops`` (when it has them) and the model's op types."""
    ops = costs.latency
    if not ops:
        return []
    out = []
    types = None
    for name, dev in costs.devices.items():
        if name == costs.host or any(name in lat for lat in ops.values()):
            continue
        if types is None:  # one read of the ops (Workload.ops builds a dict over all of them)
            types = sorted({o.op_type for o in costs.workload.ops.values()})
        listed = getattr(dev, "supported_ops", None)
        why = (f"its supported_ops [{', '.join(listed)}] match no op it can run" if listed is not None
               else "its cost model prices none of them")
        shown = ", ".join(types[:8]) + (f", ... ({len(types)} types)" if len(types) > 8 else "")
        out.append(f"warning: device {name} ({dev.kind}) can run no op of {costs.workload.name}: {why} "
                   f"(the model's op types: {shown})")
    return out


def energy_not_modelled(platform, name: str, energy_j) -> bool:
    """True for a device or link ``name`` of ``platform`` with no energy figure
    (:attr:`~hetsim.devices.base.DeviceBase.energy_modelled`, :attr:`~hetsim.devices.link.Link.energy_modelled`)
    whose reported energy ``energy_j`` is 0: a report prints it as not modelled, never as a measured 0 J.
    Unknown names (and a non-zero energy) are False."""
    part = platform.devices.get(name) or platform.links.get(name)
    return part is not None and not energy_j and not part.energy_modelled
