"""The terminal report of ``hetsim run``."""

from __future__ import annotations

import textwrap

from hetsim.pipeline import RunResult


def _ms(t: float | None) -> str:
    return "-" if t is None else f"{t * 1e3:,.3f} ms"


def _energy(e: float) -> str:
    if 0 < e < 1e-3:
        return f"{e * 1e6:,.3f} uJ"
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
        f"  {s.get('baseline', 'all-host'):<12} {_ms(s['baseline_makespan_s'])}"
        + (f"   speedup {s['speedup']:.2f}x" if s["speedup"] else ""),
        f"  energy       {_energy(s['energy_j'])}",
    ]
    st = s.get("mapper_stats") or {}
    if st.get("status") in ("optimal", "time_limit", "feasible"):
        gap = st.get("mip_gap")
        gap_txt = f", MIP gap {gap * 100:.2f} %" if gap is not None else ""
        size = (f", {st['variables']:,} variables, {st['constraints']:,} constraints"
                if st.get("variables") is not None and st.get("constraints") is not None else "")
        if st["status"] == "optimal":
            lines.append(f"  solver       optimal (proven) in {st.get('solve_time_s', 0):.2f} s{gap_txt}{size}")
        else:
            bound = st.get("bound_s")
            status = st["status"].replace("_", " ")
            lines.append(f"  solver       {status} after {st.get('solve_time_s', 0):.2f} s: best schedule found, "
                         f"not proven optimal{gap_txt}"
                         + (f" (bound {bound * 1e3:,.3f} ms)" if bound is not None else ""))
    if s["predicted_makespan_s"] is not None and abs(s["predicted_makespan_s"] - s["makespan_s"]) > 1e-12 * max(
        1.0, s["makespan_s"]
    ):
        lines.append(f"  (mapper predicted {_ms(s['predicted_makespan_s'])}; the replay differs)")
    host_cfg = run.costs.devices[run.costs.host] if hasattr(run.costs, "devices") else None
    free = sorted({o.op_type for o in run.workload.ops.values()} & set(getattr(host_cfg, "free_ops", []) or []))
    if free:
        lines.append(f"  note: on this platform the host's {', '.join(free)} ops cost nothing (free_ops: fused into "
                     "accelerator layers or done offline)")
    if s["host_latency_fallback_ops"]:
        lines.append(f"  note: {s['host_latency_fallback_ops']} ops not in the host's latency table use the roofline")
    lines.append("")
    kw = max([6] + [len(d["kind"]) for d in s["devices"]])
    header = f"  {'device':<10} {'kind':<{kw}} {'ops':>6} {'busy':>14} {'utilisation':>12} {'energy':>13}"
    lines += [header, "  " + "-" * (len(header) - 2)]
    for d in s["devices"]:
        lines.append(
            f"  {d['device']:<10} {d['kind']:<{kw}} {d['ops']:>6} {_ms(d['busy_s']):>14} "
            f"{d['utilisation'] * 100:>11.1f}% {_energy(d['energy_j']):>13}"
        )
    if "channel_split" in s:
        lines += _channel_split(s["channel_split"], max_names)
    off = s["ops_offloaded"]
    lines += ["", f"  ops offloaded: {off['count']} of {s['operators']}"]
    for dev, info in off["by_device"].items():
        cb = s.get("capacities", {}).get(dev)
        extra = ""
        if cb:
            unit = "" if cb["unit"] == cb["name"] else f" {cb['unit']}"
            extra = f", {cb['name']} {cb['used']:,}/{cb['available']:,}{unit}"
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


def _channel_split(cs: dict, max_names: int | None) -> list[str]:
    """ODiMO's numbers: channel shares, accelerator utilisation, both-busy time, layer-sequential model."""
    layers = cs["layers"]
    shares = ", ".join(f"{d} {cs['share'][d] * 100:.1f} %" for d in sorted(cs["share"], key=lambda d: -cs["share"][d]))
    accs = cs["accelerators"]
    lines = ["", f"  channel split (ODiMO): {cs['total_channels']:,} output channels of {len(layers)} Conv/FC "
             f"layers: {shares or '-'}"]
    if accs:
        busy = ", ".join(f"{d} {cs['utilisation'][d] * 100:.1f} %" for d in accs)
        both = f", {'both' if len(accs) == 2 else 'all'} {cs['all_busy_fraction'] * 100:.1f} %" if len(accs) > 1 else ""
        lines.append(f"    busy (share of the makespan): {busy}{both}")
        lines.append(f"    layer-sequential model (ODiMO Eq. 3-4, Conv/FC layers only): "
                     f"{_ms(cs['layer_sequential_latency_s'])}, {_energy(cs['layer_sequential_energy_j'])}")
    split = [r for r in layers if len(r["channels"]) > 1]
    lines.append(f"    split layers: {len(split)} of {len(layers)}")
    shown = split if max_names is None else split[:max_names]
    for r in shown:
        parts = " + ".join(f"{n} {d}" for d, n in r["channels"].items())
        lines.append(f"      {r['op']}: {parts}")
    if len(shown) < len(split):
        lines.append(f"      ... and {len(split) - len(shown)} more")
    return lines


def _core_usage(run: RunResult, dev: str) -> list[str]:
    slots = run.costs.devices[dev].slots
    if slots is None:
        return []
    used = [0] * len(slots)
    for v, parts in run.schedule.placement.items():
        if run.schedule.assignment.get(v) == dev:
            for c, n in parts:
                used[c] += n
    return [f"{u}/{cap}" for u, cap in zip(used, slots, strict=True)]
