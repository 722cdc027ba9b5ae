"""The terminal report of ``hetsim run``."""

from __future__ import annotations

import textwrap

from hetsim.pipeline import RunResult


def _ms(t: float | None) -> str:
    return "-" if t is None else f"{t * 1e3:,.3f} ms"


def _energy(e: float) -> str:
    return f"{e * 1e3:,.3f} mJ" if e < 1 else f"{e:,.3f} J"


def format_report(run: RunResult, max_names: int | None = None) -> str:
    """A readable multi-line report: headline numbers, per-device table, offloaded ops, crossbar placement."""
    s = run.summary
    wl = run.workload.summary()
    lines = [
        f"hetsim run: {s['workload']} on {s['platform']}, mapper {s['mapper']}, "
        f"contention {', '.join(s['contention']) or 'off'}",
        "",
        f"  operators    {s['operators']} ({wl['edges']} edges, {wl['macs'] / 1e9:,.3f} GMAC)",
        f"  makespan     {_ms(s['makespan_s'])}",
        f"  all-host     {_ms(s['baseline_makespan_s'])}"
        + (f"   speedup {s['speedup']:.2f}x" if s["speedup"] else ""),
        f"  energy       {_energy(s['energy_j'])}",
    ]
    if s["predicted_makespan_s"] is not None and abs(s["predicted_makespan_s"] - s["makespan_s"]) > 1e-12 * max(
        1.0, s["makespan_s"]
    ):
        lines.append(f"  (mapper predicted {_ms(s['predicted_makespan_s'])}; the replay differs)")
    if s["host_latency_fallback_ops"]:
        lines.append(f"  note: {s['host_latency_fallback_ops']} ops not in the host's latency table use the roofline")
    lines.append("")
    header = f"  {'device':<10} {'kind':<6} {'ops':>6} {'busy':>14} {'utilisation':>12} {'energy':>13}"
    lines += [header, "  " + "-" * (len(header) - 2)]
    for d in s["devices"]:
        lines.append(
            f"  {d['device']:<10} {d['kind']:<6} {d['ops']:>6} {_ms(d['busy_s']):>14} "
            f"{d['utilisation'] * 100:>11.1f}% {_energy(d['energy_j']):>13}"
        )
    off = s["ops_offloaded"]
    lines += ["", f"  ops offloaded: {off['count']} of {s['operators']}"]
    for dev, info in off["by_device"].items():
        cb = s["crossbars"].get(dev)
        extra = f", crossbars {cb['used']}/{cb['available']}" if cb else ""
        lines.append(f"    {dev}: {info['count']} ops{extra}")
        names = info["ops"] if max_names is None else info["ops"][:max_names]
        if names:
            more = f" ... and {len(info['ops']) - len(names)} more" if len(names) < len(info["ops"]) else ""
            lines += textwrap.wrap(", ".join(names) + more, width=110, initial_indent="      ",
                                   subsequent_indent="      ")
        cores = _core_usage(run, dev)
        if cores:
            lines.append("      crossbars per core: " + " ".join(cores))
    return "\n".join(lines)


def _core_usage(run: RunResult, dev: str) -> list[str]:
    cfg = run.platform.devices[dev]
    if cfg.kind != "puma":
        return []
    used = [0] * cfg.cores
    for v, parts in run.schedule.placement.items():
        if run.schedule.assignment.get(v) == dev:
            for c, n in parts:
                used[c] += n
    return [f"{u}/{cap}" for u, cap in zip(used, cfg.core_capacities, strict=True)]
