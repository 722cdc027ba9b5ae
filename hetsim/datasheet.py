"""A platform's data sheet: what its configuration implies, and the mistakes that would otherwise pass silently.

``hetsim check PLATFORM.yaml`` prints it and ``hetsim run`` prints its warnings once, before the report.

* :func:`device_rows`: per device its derived peaks (:meth:`~hetsim.devices.base.DeviceBase.peaks`: MAC/s and
  TOPS at each precision it offers, bytes/s of its ports), its capacities and its power. Every device kind answers
  the same questions; nothing here tests a kind.
* :func:`platform_warnings`: one line per problem (below). A warning is advice: the platform stays valid.

The plausible ranges are ours (assumed), wide enough for every device from a sensor-node MCU to a server core:

* a clock between :data:`CLOCK_RANGE_HZ` (1 MHz to 5 GHz);
* an ``active_w`` between :data:`ACTIVE_POWER_RANGE_W` (1 uW to 300 W per unit, one block of an SoC), and an
  ``idle_w`` no higher than the ``active_w``;
* a power figure at all: a device whose ``active_w`` and ``idle_w`` are 0 and that has no other energy figure
  (an energy per MAC, per byte ...) has its energy reported as "not modelled", never as 0 J;
* a link's or a memory's bandwidth (and each port of a memory's ``weights_for``) of at least
  :data:`MIN_BANDWIDTH_GB_S` (1 kB/s: below any bus or memory; a slip such as ``1e-300`` otherwise passes, its
  transfers taking longer than any run);
* a device other than the host that no link joins to the host and that shares no memory with it: a transfer goes
  over one link, never through another device, so its ops cannot exchange tensors with the host.
"""

from __future__ import annotations

from dataclasses import dataclass

from hetsim.devices.base import Capacity, Peaks
from hetsim.platform import Platform

#: plausible clock range, Hz (ours: a slow MCU to the fastest desktop cores)
CLOCK_RANGE_HZ = (1e6, 5e9)
#: plausible active power of one unit, W (ours: a sub-block of a sensor MCU to a large accelerator die)
ACTIVE_POWER_RANGE_W = (1e-6, 300.0)
#: lowest plausible bandwidth of a link or a memory port, GB/s (ours: 1 kB/s, below a slow serial bus)
MIN_BANDWIDTH_GB_S = 1e-6


@dataclass(frozen=True)
class DeviceRow:
    """One device of a platform's data sheet.

    Attributes:
        name, kind: the device's name and kind.
        units: ops it runs at once (a CPU's cores); the power is per unit.
        peaks: its derived peak rates (:class:`~hetsim.devices.base.Peaks`).
        capacities: its capacities (:meth:`~hetsim.devices.base.DeviceBase.capacities`).
        active_w, idle_w: power per unit, W.
        energy_modelled: whether it has any energy figure (else its energy is not modelled).
    """

    name: str
    kind: str
    units: int
    peaks: Peaks
    capacities: dict[str, Capacity]
    active_w: float
    idle_w: float
    energy_modelled: bool


def device_rows(platform: Platform) -> list[DeviceRow]:
    """The data sheet's device rows, in the platform's order."""
    return [DeviceRow(n, d.kind, d.units, d.peaks(), d.capacities(), d.active_w, d.idle_w, d.energy_modelled)
            for n, d in platform.devices.items()]


def joined_to(platform: Platform, device: str) -> list[str]:
    """The devices ``device`` exchanges tensors with: those a link joins it to or a memory it shares with them
    (``shared_by``), in the platform's order."""
    return [o for o in platform.devices
            if o != device and (platform.link_between(device, o) is not None or platform.shares_memory(device, o))]


def _range_text(lo: float, hi: float, unit: str) -> str:
    from hetsim.report.units import eng

    return f"{eng(lo, unit)} - {eng(hi, unit)}"


def platform_warnings(platform: Platform) -> list[str]:
    """One line per suspicious setting of ``platform`` (module docstring), device by device in the platform's
    order: unreachable from the host, a clock or an active power outside its plausible range, an idle power above
    the active one, no power figure."""
    from hetsim.report.units import eng

    out: list[str] = []
    lo_hz, hi_hz = CLOCK_RANGE_HZ
    lo_w, hi_w = ACTIVE_POWER_RANGE_W
    for name, dev in platform.devices.items():
        where = f"devices.{name} ({dev.kind})"
        if name != platform.host and platform.host not in joined_to(platform, name):
            others = joined_to(platform, name)
            tail = f"only with {', '.join(others)}" if others else "with no other device"
            out.append(f"{where}: no link joins it to the host {platform.host!r} and it shares no memory with it; a "
                       f"transfer goes over one link, never through another device, so its ops exchange tensors "
                       f"{tail}")
        clock = dev.peaks().clock_hz
        if clock is not None and not lo_hz <= clock <= hi_hz:
            out.append(f"{where}: clock {eng(clock, 'Hz')} is outside the plausible {_range_text(lo_hz, hi_hz, 'Hz')}"
                       " (a unit slip? the field's name gives its unit)")
        if dev.active_w > 0 and not lo_w <= dev.active_w <= hi_w:
            out.append(f"{where}: active_w {eng(dev.active_w, 'W')} per unit is outside the plausible "
                       f"{_range_text(lo_w, hi_w, 'W')} for a block of an SoC")
        if dev.idle_w > dev.active_w > 0:
            out.append(f"{where}: idle_w {eng(dev.idle_w, 'W')} is above active_w {eng(dev.active_w, 'W')}")
        if dev.active_w == 0 and dev.idle_w == 0:
            what = ("its energy is not modelled (reported as such, not as 0 J)" if not dev.energy_modelled
                    else "only its energy per operation is counted, no static or active power")
            out.append(f"{where}: no power figure (active_w and idle_w are 0): {what}")
    return out + _bandwidth_warnings(platform)


def _bandwidth_warnings(platform: Platform) -> list[str]:
    """A link, a memory or a memory's weight port slower than :data:`MIN_BANDWIDTH_GB_S`."""
    found = [(f"links.{n}", link.bandwidth_gb_s) for n, link in platform.links.items()]
    for n, mem in platform.memories.items():
        found.append((f"memories.{n}", mem.bandwidth_gb_s))
        found += [(f"memories.{n}.weights_for.{d}", getattr(port, "bandwidth_gb_s", None))
                  for d, port in mem.weights_for.items()]
    return [f"{where}: bandwidth_gb_s {bw:g} is below the plausible {MIN_BANDWIDTH_GB_S:g} GB/s (1 kB/s; a unit "
            "slip? the field is in GB/s)" for where, bw in found if bw is not None and
            bw < MIN_BANDWIDTH_GB_S]
