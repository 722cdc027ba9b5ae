"""The terminal report of ``hetsim run``."""

from __future__ import annotations

from hetsim.numbers import NOT_MODELLED, SIG_DIGITS, column_scale, format_column, format_number, format_value
from hetsim.result import RunResult

#: ops named per device (and split layers listed) unless ``--verbose``
DEFAULT_NAMES = 4
VERBOSE_HINT = "(--verbose lists all)"


def si_scale(values, sig: int = SIG_DIGITS) -> tuple[str, float, int]:
    """One SI prefix and one number of decimals for a column of values in a base unit (seconds, joules): the
    prefix of its largest magnitude, decimals for ``sig`` significant digits of it
    (:func:`hetsim.numbers.column_scale`, the one number format of hetsim's reports).

    Returns:
        ``(prefix, scale, decimals)``: print ``value / scale`` with ``decimals`` decimals and ``prefix + unit``.
    """
    return column_scale(values, sig)


def si_column(values, unit: str, sig: int = SIG_DIGITS, missing: str = "-", each: bool = False) -> list[str]:
    """``values`` (in ``unit``: ``s``, ``J``) as text in one prefixed unit with one number of decimals
    (:func:`hetsim.numbers.format_column`; ``each``: the unit shared, each value with ``sig`` digits);
    ``missing`` for ``None``."""
    return format_column(values, unit, sig, missing, each=each)


def si(value: float | None, unit: str, sig: int = SIG_DIGITS) -> str:
    """One value in a fitting SI prefix (:func:`si_column` of one value)."""
    return format_value(value, unit, sig)


def _wrap(tokens: list[str], indent: str, width: int = 110) -> list[str]:
    """Tokens joined by spaces into lines of at most ``width`` characters (a longer token gets its own line);
    a token is never broken."""
    lines: list[str] = []
    cur = ""
    for t in tokens:
        if cur and len(indent) + len(cur) + 1 + len(t) > width:
            lines.append(indent + cur)
            cur = t
        else:
            cur = f"{cur} {t}" if cur else t
    return lines + ([indent + cur] if cur else [])


def _more(shown: int, total: int) -> str:
    return f" ... and {total - shown} more {VERBOSE_HINT}" if shown < total else ""


def solver_line(st: dict) -> str:
    """The exact mappers' outcome in one line (the report's ``solver`` row) from their ``stats``.

    The time is the wall time of the whole mapping (``total_time_s``), followed by its phases when the mapper
    reports them (``phases_s``: model building, heuristics, bounds, decomposition, search, ...; those of at
    least 5 ms) and the solver calls' own share (``solver_calls_s``, else ``solve_time_s``) when it differs at
    the shown precision. ``optimal (proven)`` only when the MIP gap is 0 to the shown precision;
    a solve stopped by the relative gap tolerance says so and gives the gap. A time limit that returned a
    heuristic's schedule (``fallback``) names it and its makespan. A chain solved by ``cpsat``'s dynamic program
    (``solution_source`` ``chain``) says so. A mapping stopped by a limit names it: ``work limit`` (deterministic:
    ``work_limit`` in ``work_unit``, e.g. ``work limit (2 deterministic s)``) or ``time limit`` (the wall clock,
    ``time_limit_s``).
    """
    wall = st.get("total_time_s", st.get("solve_time_s")) or 0.0
    t = f"{wall:.2f} s"
    extra = []
    phases = {k: v for k, v in (st.get("phases_s") or {}).items() if v >= 0.005}
    if phases:
        from hetsim.mappers.cpsat import PHASES  # the order they run in (a saved schedule's JSON sorts its keys)

        rank = {k: i for i, k in enumerate(PHASES)}
        phases = dict(sorted(phases.items(), key=lambda kv: rank.get(kv[0], len(rank))))  # others after, stable
        from hetsim.report.units import field_unit  # a phase named build_s is in seconds: its stem is its name

        extra.append(", ".join(f"{field_unit(k).stem.replace('_', ' ')} {v:.2f}" for k, v in phases.items()) + " s")
    solve = st.get("solver_calls_s", st.get("solve_time_s"))
    if solve is not None and f"{solve:.2f}" != f"{wall:.2f}":
        extra.append(f"solver calls {solve:.2f} s")
    if extra:
        t += f" ({'; '.join(extra)})"
    gap = st.get("mip_gap")
    gap_txt = f"{gap * 100:.2f} %" if gap is not None else None
    bound = st.get("bound_s")
    bound_txt = f"bound {si(bound, 's')}" if bound is not None else ""
    if st["status"] == "optimal":
        size = (f", {st['variables']:,} variables, {st['constraints']:,} constraints"
                if st.get("variables") is not None and st.get("constraints") is not None else "")
        if st.get("solution_source") == "chain":  # cpsat's exact dynamic program on a chain: no model
            size = " by the chain dynamic program" + size
        if gap_txt is None or gap_txt == "0.00 %":
            return f"optimal (proven) in {t}{size}"
        tol = st.get("mip_rel_gap", st.get("mip_rel_gap_limit"))
        tol_txt = f" ({tol * 100:.2g} %)" if tol is not None else ""
        return (f"stopped at the solver's relative gap tolerance{tol_txt} in {t}: not proven optimal, MIP gap "
                f"{gap_txt}" + (f" ({bound_txt})" if bound_txt else "") + size)
    status = st["status"].replace("_", " ")
    if st["status"] == "work_limit" and st.get("work_limit") is not None:
        status += f" ({st['work_limit']:g} {st.get('work_unit', 'units')})"
    elif st["status"] == "time_limit" and st.get("time_limit_s") is not None:
        status += f" ({st['time_limit_s']:g} s)"
    fb = st.get("fallback")
    if fb:
        own = st.get("solver_schedule_makespan_s")
        none = "solver_schedule_makespan_s" in st and own is None
        what = "without a schedule of its own" if none else "without a better schedule"
        extra = [x for x in (f"its own {si(own, 's')}" if own is not None else "",
                             f"MIP gap {gap_txt}" if gap_txt else "", bound_txt) if x]
        ms = st.get("fallback_makespan_s", st.get("incumbent_s"))
        return (f"{status} after {t} {what}: {fb}'s schedule"
                + (f", {si(ms, 's')}" if ms is not None else "") + (f" ({'; '.join(extra)})" if extra else ""))
    return (f"{status} after {t}: best schedule found, not proven optimal"
            + (f", MIP gap {gap_txt}" if gap_txt else "") + (f" ({bound_txt})" if bound_txt else ""))


def throughput_line(st: dict) -> str:
    """The throughput objective's outcome (``--objective throughput``): the bottleneck resource and its busy time
    per request, the request rate it allows when requests pipeline, and cpsat's bound and gap."""
    b = st["bottleneck_s"]
    txt = (f"mapped for throughput: bottleneck {st.get('bottleneck_resource')} busy {si(b, 's')} per request, "
           f"at most {format_number(1 / b)} requests/s pipelined")
    bound = st.get("bottleneck_bound_s")
    if bound is not None:
        txt += f" (bound {si(bound, 's')}, gap {(st.get('mip_gap') or 0.0) * 100:.2f} %)"
    return txt


#: the mappers that give the optimum of the mapping problem (their own docs: ``hetsim.mappers.available()``)
EXACT_MAPPERS = "cpsat and ilp"


def heuristic_note(summary: dict) -> str | None:
    """The report's line for a schedule a heuristic made (its mapper's stats say ``status: heuristic``): it is
    not proven optimal, so a change that should help (a faster bus, more crossbars) may give a longer schedule
    (YOLOv5n on PUMA with 50 crossbars under ``heft``: 191.6 ms at 2.56 GB/s, 204.4 ms at 5.12 GB/s); ``None``
    for an exact mapper's schedule, a replayed one, or a spiking network's."""
    st = summary.get("mapper_stats") or {}
    if st.get("status") != "heuristic" or summary.get("replayed_schedule") or summary.get("snn"):
        return None
    return (f"{summary['mapper']} is a heuristic: its schedule is not proven optimal and may even lengthen when the "
            f"platform improves; {EXACT_MAPPERS} give the optimum")


def _clip(text: str, n: int) -> str:
    """The first line of ``text``, cut to ``n`` characters with an ellipsis when longer."""
    line = text.splitlines()[0] if text else ""
    return line if len(line) <= n else line[: n - 3] + "..."


def no_baseline(df, n: int = 160) -> tuple[int, str] | None:
    """Points of a sweep's table that ran without a baseline (a non-empty ``baseline_error``): their count and
    ``"WORKLOAD: REASON"`` for the first (its reason's first line, :func:`_clip` to ``n`` characters); ``None``
    when there is none (or no such column)."""
    if "baseline_error" not in df:
        return None
    col = df["baseline_error"]
    rows = df[col.notna() & (col.astype(str) != "")]
    if not len(rows):
        return None
    first = rows.iloc[0]
    return len(rows), f"{first.get('workload', first.get('key', ''))}: {_clip(str(first['baseline_error']), n)}"


def format_report(run: RunResult, max_names: int | None = DEFAULT_NAMES) -> str:
    """A readable multi-line report: headline numbers, per-device table, offloaded ops, crossbar placement.

    Times and energies are printed with SI prefixes, one per column (:func:`si_column`): the makespans of the
    headline share one, the device table's busy times one and its energies one. ``max_names``: how many
    offloaded ops are named per device and how many split layers listed (``None``: all, ``hetsim run
    --verbose``); the rest are counted.
    """
    s = run.summary
    wl = run.workload.summary()
    times = [s["makespan_s"], s["baseline_makespan_s"]]
    predicted = s["predicted_makespan_s"]
    differs = predicted is not None and abs(predicted - s["makespan_s"]) > 1e-12 * max(1.0, s["makespan_s"])
    t_txt = si_column(times + ([predicted] if differs else []), "s", each=True)
    lines = [
        f"hetsim run: {s['workload']} on {s['platform']}, mapper {s['mapper']}"
        f"{' (a saved schedule, replayed)' if s.get('replayed_schedule') else ''}, "
        f"contention {', '.join(s['contention']) or 'off'}",
        "",
        f"  operators    {s['operators']} ({wl['edges']} edges, {wl['macs'] / 1e9:,.3f} GMAC)",
        f"  makespan     {t_txt[0]}",
        f"  {s.get('baseline', 'all-host'):<12} {t_txt[1]}"
        + (f"   speedup {s['speedup']:.2f}x" if s["speedup"] else "")
        + (f"   (no baseline: {_clip(s['baseline_error'], 160)})" if s.get("baseline_error") else ""),
        f"  energy       {si(s['energy_j'], 'J')}",
    ]
    spill = (s.get("memory") or {}).get("spill")
    if spill and spill.get("memories"):  # something spilled: the charged figures beside the replay's (an upper bound)
        lines.insert(4, f"  with spill   {si(spill['makespan_with_spill_s'], 's')}, "
                        f"{si(spill['energy_with_spill_j'], 'J')} (the spill traffic charged after the schedule)")
    st = s.get("mapper_stats") or {}
    if st.get("status") in ("optimal", "work_limit", "time_limit", "feasible"):
        saved = " (as saved with the schedule)" if s.get("replayed_schedule") else ""
        lines.append(f"  solver       {solver_line(st)}{saved}")
    note = heuristic_note(s)
    if note:
        lines.append(f"  note: {note}")
    if st.get("objective") == "throughput" and st.get("bottleneck_s"):
        lines.append(f"  throughput   {throughput_line(st)}")
    if differs:
        lines.append(f"  (mapper predicted {t_txt[2]}; the replay differs)")
    host_cfg = run.costs.devices[run.costs.host] if hasattr(run.costs, "devices") else None
    free = sorted({o.op_type for o in run.workload.ops.values()} & set(getattr(host_cfg, "free_ops", []) or []))
    if free:
        lines.append(f"  note: on this platform the host's {', '.join(free)} ops cost nothing (free_ops: fused into "
                     "accelerator layers or done offline)")
    if s.get("folded_ops"):
        lines.append(f"  folded: {s['folded_ops']} constant ops (ONNX Runtime folds them at session creation; "
                     "--no-fold-constants charges them)")
    lines += fusion_lines(s.get("fusion"), max_names)
    if st.get("fusion"):  # a mapper that does not model fused groups says so
        lines.append(f"  note: {s['mapper']} fusion {st['fusion']}")
    if s["host_latency_fallback_ops"]:
        lines.append(f"  note: {s['host_latency_fallback_ops']} ops not in the host's latency table use the roofline")
    from hetsim.report.notes import idle_device_warnings

    lines += [f"  {w}" for w in idle_device_warnings(run.costs)]
    lines.append("")
    kw = max([6] + [len(d["kind"]) for d in s["devices"]])
    busy = si_column([d["busy_s"] for d in s["devices"]], "s")
    energy = si_column([d["energy_j"] for d in s["devices"]], "J")
    energy = [NOT_MODELLED if _energy_not_modelled(run, d) else e for d, e in zip(s["devices"], energy, strict=True)]
    bw, ew = max([14, *map(len, busy)]), max([13, *map(len, energy)])
    header = f"  {'device':<10} {'kind':<{kw}} {'ops':>6} {'busy':>{bw}} {'utilisation':>12} {'energy':>{ew}}"
    lines += [header, "  " + "-" * (len(header) - 2)]
    for d, b, e in zip(s["devices"], busy, energy, strict=True):
        lines.append(
            f"  {d['device']:<10} {d['kind']:<{kw}} {d['ops']:>6} {b:>{bw}} "
            f"{d['utilisation'] * 100:>11.1f}% {e:>{ew}}"
        )
    lines += memory_lines(s.get("memory"))
    if "channel_split" in s:
        lines += _channel_split(s["channel_split"], max_names)
    if "weights" in s:
        lines += weight_lines(s["weights"])
    off = s["ops_offloaded"]
    lines += ["", f"  ops offloaded: {off['count']} of {s['operators']}"]
    for dev, info in off["by_device"].items():
        cb = s.get("capacities", {}).get(dev)
        extra = f", {capacity_phrase(cb)}" if cb else ""
        pols = s.get("weights", {}).get("by_device", {}).get(dev)
        if pols:
            extra = " (" + ", ".join(f"{n} {p}" for p, n in pols.items()) + ")" + extra
        lines.append(f"    {dev}: {info['count']} ops{extra}")
        names = info["ops"] if max_names is None else info["ops"][:max_names]
        if names:
            tail = _more(len(names), len(info["ops"])).strip()
            lines += _wrap([f"{n}," for n in names[:-1]] + [names[-1]] + ([tail] if tail else []), "      ")
        cores = _core_usage(run, dev)
        if cores:
            lines.append("      crossbars per core: " + " ".join(cores))
    lines += breakdown_lines(run.breakdown, run.critical_path, None if max_names is None else TOP_TYPES)
    return "\n".join(lines)


def _energy_not_modelled(run: RunResult, row: dict) -> bool:
    """True for a device or link row with 0 J and no energy figure (:func:`hetsim.report.notes.energy_not_modelled`):
    its energy is not modelled, not measured as 0."""
    from hetsim.report.notes import energy_not_modelled

    return energy_not_modelled(run.platform, row["device"], row["energy_j"])


def fusion_lines(fu: dict | None, max_names: int | None = DEFAULT_NAMES) -> list[str]:
    """The report's lines on fused operator groups (``summary["fusion"]``): how many ops ran fused, and each group
    as ``device: head + consumer + ...`` (``max_names`` groups, the rest counted); with fusion off, how many could
    have."""
    if not fu:
        return []
    if not fu["on"]:
        return [f"  fusion: off (--no-fusion); {fu['offered']} ops could run fused into their producers"]
    groups = fu["groups"]
    head = (f"  fused: {fu['fused_ops']} ops in {len(groups)} groups (one launch each; {fu['offered']} ops could "
            "run fused)")
    if not groups:
        return [f"  fused: no ops ({fu['offered']} could run fused into their producers)"]
    shown = groups if max_names is None else groups[:max_names]
    tail = _more(len(shown), len(groups)).strip()
    tokens = [f"{g['device']}: {' + '.join(g['ops'])}{';' if i < len(shown) - 1 else ''}" for i, g in enumerate(shown)]
    return [head, *_wrap(tokens + ([tail] if tail else []), "    ")]


#: op types named per device and on the critical path unless ``--verbose``
TOP_TYPES = 3


def _types_text(items: list[tuple[str, float, str]], n: int | None) -> list[str]:
    """``["Mul 26.273 ms (34 %),", "Sigmoid ..."]``: ``(type, seconds, note)`` in one unit, the first ``n``
    named, the rest counted (``--verbose`` lists them); one token per type, for :func:`_wrap`."""
    shown = items if n is None else items[:n]
    times = si_column([t for _, t, _ in shown], "s")
    out = [f"{ty} {t}{note}" for (ty, _, note), t in zip(shown, times, strict=True)]
    rest = len(items) - len(shown)
    if rest:
        out.append(f"{rest} more")
    return [f"{x}," for x in out[:-1]] + out[-1:]


def breakdown_lines(breakdown, path, top: int | None = TOP_TYPES, of: str = "") -> list[str]:
    """Where the time goes: per device its op types by busy time with their share of its busy time
    (``breakdown``: :func:`hetsim.analysis.breakdown.op_type_breakdown`), and the critical path's ops, span and
    op types by latency (``path``: :func:`hetsim.analysis.breakdown.critical_path`); ``top`` types named per
    line (``None``: all); ``of``: what replay they describe, in the heading (e.g. a spiking network's sample)."""
    lines = ["", f"  where the time goes (busy time per device and op type{of}):"]
    width = max([len(str(d)) for d in breakdown["device"]] + [4])
    for dev, sub in breakdown.groupby("device", sort=False):
        sub = sub[sub["busy_s"] > 0]
        if sub.empty:
            continue
        items = [(ty, t, f" ({x * 100:.0f} %)") for ty, t, x in zip(sub["type"], sub["busy_s"], sub["share"],
                                                                    strict=True)]
        wrapped = _wrap(_types_text(items, top), " " * (width + 6))
        lines.append(f"    {dev + ':':<{width + 1}} {wrapped[0].lstrip()}")
        lines += wrapped[1:]
    on = path[path["on_path"]]
    if len(on):
        span = float(on["finish_s"].iloc[-1] - on["start_s"].iloc[0])
        by = on.groupby("type")["latency_s"].agg(["sum", "size"]).sort_values(["sum", "size"], ascending=False)
        items = [(ty, float(t), f" ({n} op{'s' if n > 1 else ''})") for ty, (t, n) in
                 zip(by.index, by[["sum", "size"]].itertuples(index=False), strict=True) if t > 0]
        gaps = float(on["gap_s"].sum())
        head = (f"  critical path: {len(on)} ops, {si(span, 's')}"
                + (f" ({si(gaps, 's')} transfers and waits)" if gaps > 0 else "") + ":")
        wrapped = _wrap(_types_text(items, top), "    ")
        if len(head) + 1 + len(wrapped[0].lstrip()) <= 110:
            lines.append(f"{head} {wrapped[0].lstrip()}")
            lines += wrapped[1:]
        else:
            lines += [head, *wrapped]
    return lines


def weight_lines(w: dict) -> list[str]:
    """The weight-policy block of the text report (``summary["weights"]``:
    :func:`hetsim.analysis.metrics.weight_summary`)."""
    p = w["policies"]
    lines = ["", f"  weights of offloaded ops: {p.get('resident', 0)} resident, {p.get('streamed', 0)} streamed, "
                 f"{p.get('reprogrammed', 0)} reprogrammed"]
    for name, m in w["memories"].items():
        lines.append(f"    {name}: {m['bytes'] / 1e6:,.3f} MB read per inference, {si(m['energy_j'], 'J')}, port busy "
                     f"{si(m['read_s'], 's')}; holds {m['used_b'] / 1e6:,.3f} of {m['capacity_b'] / 1e6:,.1f} MB")
    for dev, r in w["reprogramming"].items():
        life = r["lifetime_inferences"]
        tail = f", lifetime {life:,.0f} inferences at {r['endurance_writes']:.3g} writes per cell" if life else ""
        lines.append(f"    {dev}: {r['ops']} ops reprogrammed, {r['cells_written']:,} cell writes "
                     f"({si(r['write_s'], 's')}, {si(r['write_j'], 'J')}) per inference; busiest cell written "
                     f"{r['writes_per_cell']}x per inference{tail}")
    return lines


def memory_lines(mem: dict | None) -> list[str]:
    """The activation-memory lines of the report: per memory its replay peak, capacity and whether it is checked,
    and the spill traffic when spilling was asked for (summary.json's ``memory``,
    :mod:`hetsim.analysis.footprint`)."""
    if not mem:
        return []
    from hetsim.analysis.footprint import bytes_text

    out = ["", "  activation memory (peak live bytes, replay):"]
    for name, m in mem["memories"].items():
        cap, held = m["capacity_bytes"], m.get("weight_bytes") or 0
        what = (f"of {bytes_text(cap)}" + (f" beside {bytes_text(held)} of weights" if held else "")
                + ("" if m["checked"] else ", not checked") if cap is not None else "no capacity")
        over = "" if m["fits"] is not False else "  OVER CAPACITY"
        out.append(f"    {name:<14} {bytes_text(m['peak_bytes']):>10} at {si(m['peak_at_s'], 's')} ({what}; "
                   f"{', '.join(m['devices'])}){over}")
    sp = mem.get("spill")
    if sp:
        for name, x in sp["memories"].items():
            out.append(f"    spilled {bytes_text(x['spilled_bytes'])} from {name} to {x['to']}: "
                       f"{bytes_text(x['traffic_bytes'])} of traffic, {si(x['time_s'], 's')}, {si(x['energy_j'], 'J')}")
        out.append(f"    with the spill charged: makespan {si(sp['makespan_with_spill_s'], 's')}, energy "
                   f"{si(sp['energy_with_spill_j'], 'J')}")
    return out


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
                     f"{si(cs['layer_sequential_latency_s'], 's')}, {si(cs['layer_sequential_energy_j'], 'J')}")
    split = [r for r in layers if len(r["channels"]) > 1]
    lines.append(f"    split layers: {len(split)} of {len(layers)}")
    shown = split if max_names is None else split[:max_names]
    for r in shown:
        parts = " + ".join(f"{n} {d}" for d, n in r["channels"].items())
        lines.append(f"      {r['op']}: {parts}")
    if len(shown) < len(split):
        lines.append("     " + _more(len(shown), len(split)))
    return lines


def _core_usage(run: RunResult, dev: str) -> list[str]:
    slots = run.costs.devices[dev].slots
    if slots is None:
        return []
    used = [0] * len(slots)
    assignment = run.schedule.assignment  # once: the view is rebuilt on every access
    for v, parts in run.schedule.placement.items():
        if assignment.get(v) == dev:
            for c, n in parts:
                used[c] += n
    out = [f"{u}/{cap}" if cap or u else "-" for u, cap in zip(used, slots, strict=True)]
    if "-" in out:  # cores whose crossbars the device keeps out of the resident budget (e.g. time-shared ones)
        out.append("(-: no resident crossbars)")
    return out


def capacity_phrase(cap: dict, sep: str = "/") -> str:
    """``crossbars 94/100`` or ``weight_memory 150,544/1,048,576 B``: a ``summary["capacities"]`` entry's use
    (``sep`` between used and available, e.g. ``" of "``)."""
    unit = "" if cap["unit"] == cap["name"] else f" {cap['unit']}"
    return f"{cap['name']} {cap['used']:,}{sep}{cap['available']:,}{unit}"
