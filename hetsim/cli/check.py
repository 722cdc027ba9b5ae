"""``hetsim check``: a platform's data sheet (derived peaks, memories, links, power) and its warnings."""

from __future__ import annotations

import argparse
from pathlib import Path

from hetsim.cli._common import _add_common, _add_set, _platform


def add_parser(sub) -> None:
    """The ``check`` subcommand's arguments."""
    p = sub.add_parser("check", formatter_class=argparse.RawDescriptionHelpFormatter,
                       help="a platform's derived peaks, memories, links and power, and its warnings",
                       description="Validate a platform YAML and print what it implies: per device its peak "
                       "MAC/s and TOPS at each precision it offers (2 operations per MAC), the bytes/s of its ports, "
                       "its capacities and power; the memories and links. Then one warning line per suspicious "
                       "setting: a device no link or shared memory joins to the host, a clock outside 1 MHz - 5 GHz, "
                       "an active power outside 1 uW - 300 W per unit, an idle power above the active one, no power "
                       "figure (its energy is then not modelled). Exit code 0 (with or without warnings), 2 for an "
                       "invalid platform.")
    p.add_argument("platform", type=Path, help="platform YAML (e.g. platforms/cim-npu.yaml)")
    _add_set(p)
    _add_common(p)


def cmd_check(args) -> int:
    """``hetsim check``: print the data sheet of ``args.platform`` (with ``--set``) and its warnings."""
    from hetsim.datasheet import platform_warnings

    plat = _platform(args)
    print("\n".join(datasheet_lines(plat)))
    warnings = platform_warnings(plat)
    print("")
    if warnings:
        print(f"  {len(warnings)} warning{'s' if len(warnings) > 1 else ''}:")
        print("\n".join(f"    warning: {w}" for w in warnings))
    else:
        print("  no warnings")
    return 0


def _power(active_w: float, idle_w: float, units: int, modelled: bool) -> str:
    from hetsim.report.units import eng

    if not modelled:
        return "not modelled"
    if active_w == 0 and idle_w == 0:
        return "per operation only"
    per = " per unit" if units > 1 else ""
    return f"{eng(active_w, 'W')} active, {eng(idle_w, 'W')} idle{per}"


def binary_bytes(b: float) -> str:
    """``b`` bytes in the binary prefix the platform files use, 4 significant digits: ``64 KiB``, ``4 GiB``."""
    for scale, unit in ((1024.0**3, "GiB"), (1024.0**2, "MiB"), (1024.0, "KiB")):
        if b >= scale:
            return f"{b / scale:.4g} {unit}"
    return f"{b:.0f} B"


def _capacity(cap) -> str:
    return f"{cap.name} {binary_bytes(cap.amount)}" if cap.unit == "B" else f"{cap.name} {cap.amount:,} {cap.unit}"


def datasheet_lines(plat) -> list[str]:
    """The data sheet of ``plat`` as text lines (:mod:`hetsim.datasheet`): devices, memories, links."""
    from hetsim.datasheet import device_rows
    from hetsim.report.units import eng

    lines = [f"hetsim check: {plat.name} (host {plat.host}, baseline {plat.baseline})"]
    if plat.description:
        lines.append(f"  {plat.description}")
    lines += ["", "  devices (peaks derived from the configuration; OPS count 2 operations per MAC):"]
    for r in device_rows(plat):
        pk = r.peaks
        units = f", {r.units} units" if r.units > 1 else ""
        clock = f", clock {eng(pk.clock_hz, 'Hz')}" if pk.clock_hz is not None else ""
        lines.append(f"    {r.name} ({r.kind}{units}{clock})")
        for prec, rate in pk.macs_per_s.items():
            lines.append(f"      peak {prec:<8} {eng(rate, 'MAC/s'):>14}  {eng(2 * rate, 'OPS'):>12}")
        if pk.macs_per_s and pk.basis:
            lines.append(f"      ({pk.basis})")
        for port, bps in pk.ports_b_s.items():
            lines.append(f"      port {port:<16} {eng(bps, 'B/s')}")
        for cap in r.capacities.values():
            lines.append(f"      capacity {_capacity(cap)} ({cap.scope})")
        lines.append(f"      power {_power(r.active_w, r.idle_w, r.units, r.energy_modelled)}")
    if plat.memories:
        lines += ["", "  memories:"]
        for name, m in plat.memories.items():
            bw = f", {eng(m.bandwidth_gb_s * 1e9, 'B/s')}" if m.bandwidth_gb_s is not None else ""
            roles = [f"{role} {', '.join(ds)}" for role, ds in (("shared by", m.shared_by),
                                                               ("weights for", list(m.weights_for)),
                                                               ("activations of", m.activations_of)) if ds]
            lines.append(f"    {name}: {binary_bytes(m.size_bytes)}{bw}; {'; '.join(roles)}")
    if plat.links:
        lines += ["", "  links:"]
        for name, lk in plat.links.items():
            power = ("not modelled" if not lk.energy_modelled else
                     ", ".join(x for x in (f"{eng(lk.active_w, 'W')} active" if lk.active_w else "",
                                           f"{eng(lk.idle_w, 'W')} idle" if lk.idle_w else "",
                                           f"{lk.energy_pj_per_byte:g} pJ/B" if lk.energy_pj_per_byte else "") if x))
            bw, lat = eng(lk.bandwidth_gb_s * 1e9, "B/s"), eng(lk.latency_ns * 1e-9, "s")
            lines.append(f"    {name}: {bw}, latency {lat}, joins {', '.join(lk.connects)}; energy {power}")
    return lines
