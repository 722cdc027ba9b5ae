"""The SNN part of a run's report (a spiking network through :func:`hetsim.pipeline.run`): the per-layer table and
SpikeDuet's Table I configurations (:func:`snn_tables`, on :attr:`hetsim.pipeline.RunResult.snn`), the text
report, the timeline figure (both engines, blocking vs async) and the extra output files."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.figure import Figure

from hetsim.devices.efr32 import ENGINE_M33, ENGINE_MVP_RANGE
from hetsim.report.html import (
    SIG_DIGITS,
    _figures,
    _json_block,
    _sig,
    details_html,
    kv_table,
    page_html,
    table_html,
    write_html,
)
from hetsim.report.table import text_table
from hetsim.report.text import breakdown_lines, si, si_column
from hetsim.snn.evaluate import CONFIG_LABELS

KIND_COLOURS = {"affine": "#d1495b", "lif": "#2f4b7c", "readout": "#2a9d8f", "poll": "#c8c8c8",
                "program": "#e9a53a"}  # drawn in this order: programming on top of the M33's polling


def _x(v, fmt: str = ".2f", suffix: str = "x") -> str:
    """A ratio for the report; ``n/a`` when it is undefined (``None``)."""
    return "n/a" if v is None else f"{v:{fmt}}{suffix}"


def format_snn_report(r) -> str:
    """Human-readable report of a spiking network's :class:`~hetsim.pipeline.RunResult` (what ``hetsim run``
    prints)."""
    s = r.summary
    hz = r.platform.devices[r.platform.host].clock_mhz
    st = s["plan_stats"]
    proof = "optimal" if st.get("status") == "optimal" else (
        f"stopped at the time limit, within {st.get('gap', 0):.1%} of optimal")
    configs = list(s["configs"].values())
    # one SI prefix per column: the headline and the configurations' latencies share one, their energies one
    lat = si_column([s["mean_latency_ms"] * 1e-3] + [c["mean_latency_ms"] * 1e-3 for c in configs], "s")
    energy = si_column([s["mean_energy_uj"] * 1e-6] + [c["mean_energy_uj"] * 1e-6 for c in configs], "J")
    lw, ew = max(map(len, lat)), max(map(len, energy))
    lines = [
        f"{s['workload']} ({'-'.join(map(str, s['layers']))}, T = {s['timesteps']}) on {s['platform']}",
        f"  mapper {s['mapper']}, {s['mode']} execution; planned on the {st['split']} split "
        f"({st['fit']} of {st['plans']} plans fit the memories, {st['evaluated']} scheduled, {proof}, "
        f"{si(st['solve_time_s'], 's')}); reported on the {s['eval_split']} split "
        f"({s['samples']} sample{'s' if s['samples'] != 1 else ''})",
        "",
        f"  latency      {si(s['mean_latency_ms'] * 1e-3, 's')} = {s['mean_latency_cycles']:,.0f} cycles at {hz:g} MHz "
        "(mean per inference)",
        f"  energy       {si(s['mean_energy_uj'] * 1e-6, 'J')} per inference",
        f"  speed-up     {_x(s['speedup_vs_all_m33'])} over all sparse M33",
        f"  SRAM         {s['sram_used_kib']:.1f} / {s['sram_budget_kib']:.0f} KiB for weights",
        *(["  warning      the recorded rasters are not what these weights compute: "
           + ", ".join(f"{k} {v:,} spike bits differ" for k, v in s["replay_mismatch_bits"].items() if v)
           + " (costs follow the recorded rasters)"] if any(s.get("replay_mismatch_bits", {}).values()) else []),
        "",
    ]
    head = ["layer", "shape", "engine", "weights", "cycles/t", "M33 / range MVP / dense MVP", "active/t",
            "ranges/t", "launches/t"]
    rows = []
    for row in s["per_layer"]:
        res = row["residency"] + (f" ({row['hot_columns']} hot)" if row["residency"] == "flash+hot" else "")
        rows.append([row["layer"], f"{row['n_out']}x{row['n_in']}", row["engine"], res,
                     f"{row['cycles_per_t']:,.0f}",
                     f"{row['m33_cycles_per_t']:,.0f} / {row['mvp_range_cycles_per_t']:,.0f} / "
                     f"{row['mvp_dense_cycles_per_t']:,.0f}",
                     f"{row['active_per_t']:.1f}", f"{row['ranges_per_t']:.2f}", f"{row['launches_per_t']:.2f}"])
    lines += text_table(head, rows, right={4, 6, 7, 8}, indent="  ")
    lines += ["", f"  {'configuration':<26} {'latency':>{lw}}   speed-up   {'energy':>{ew}}   MVP busy   layers"]
    for (name, c), t, e in zip(s["configs"].items(), lat[1:], energy[1:], strict=True):
        eng = ", ".join(f"{x['engine']}/{x['residency']}" for x in c["layers"])
        lines.append(f"  {CONFIG_LABELS.get(name, name):<26} {t:>{lw}}   "
                     f"{_x(c['speedup_vs_all_m33']):>8}   {e:>{ew}}   "
                     f"{_x(c['mvp_utilisation'], '.1%', ''):>8}   {eng}")
    if r.snn.reorder is not None:
        lines += ["", "  neuron reordering (function preserved, verified on every recorded split):",
                  *("    " + x for x in format_reorder(r.snn.reorder).splitlines())]
    lines += breakdown_lines(r.breakdown, r.critical_path, of=f", {r.snn.mode} replay of eval sample {r.snn.sample}")
    return "\n".join(lines)


def plot_snn_timeline(r, path: Path, max_timesteps: int | None = 6, *,
                      width: float | str = "single") -> Path:
    """Write :func:`snn_timeline_figure` to ``path`` atomically and close it; returns the path."""
    from hetsim.analysis.plots import save_figure

    return save_figure(snn_timeline_figure(r, max_timesteps, width=width), path)[0]


def _layer_tag(layer) -> str:
    """A bar's label: the trace's 1-based layer ``l`` as the tables name it (``Linear{l-1}``), short: ``L{l-1}``."""
    return f"L{int(layer) - 1}"


def _panel_mode(run_mode: str, mode: str) -> str:
    """A timeline panel's title: the mode, and when it is not the run's, that it replays the run's plan in it
    (not the plan the mapper would choose for that mode)."""
    return mode if mode == run_mode else f"{mode} (the {run_mode} plan run {mode})"


def snn_timeline_figure(r, max_timesteps: int | None = 6, *, width: float | str = "single") -> Figure:
    """Gantt chart of one sample: the M33 and MVP rows, blocking above asynchronous, bars coloured by op kind
    (affine, LIF, readout, M33 polling) and labelled with their layer (``L0`` = ``Linear0``) where wide enough;
    both panels replay the run's own plan, so the panel of the other mode is titled as such (an async run's
    blocking panel is its async plan run blocking, not the spikeduet-blocking plan of ``samples.csv``);
    alternate timesteps are shaded. The legend (each colour shown and the shading) sits below both panels.
    ``max_timesteps`` limits the view to the first timesteps (``None``: all). ``width``: inches, ``"single"``
    (3.5 in, default) or ``"double"`` (7.2 in), in :func:`hetsim.analysis.plots.paper_style`. A Figure, left open."""
    from hetsim.analysis.plots import figure_width, format_si, paper_style

    fig_w = figure_width(width)
    with paper_style():
        fig, axes = plt.subplots(2, 1, figsize=(fig_w, 2.9), layout="constrained", sharex=True)
        shown: set[str] = set()
        host, mvp = r.platform.host, r.snn.mvp
        for ax, mode in zip(axes, ("blocking", "async"), strict=True):
            tr = r.snn.traces[mode]
            if max_timesteps is not None:
                tr = tr[tr["t"] < max_timesteps]
            if mode == "blocking":  # the host waits (polls) while the MVP runs
                tr = pd.concat([tr, tr[tr["device"] == mvp].assign(device=host, step="poll")], ignore_index=True)
            rows = {host: 1.0, mvp: 0.0}
            for kind, colour in KIND_COLOURS.items():
                g = tr[tr["step"] == kind]
                for dev, gg in g.groupby("device"):
                    ax.broken_barh(list(zip(gg["start_s"] * 1e3, (gg["end_s"] - gg["start_s"]) * 1e3,
                                            strict=True)),
                                   (rows[dev] - 0.35, 0.7), facecolors=colour, edgecolors="white", linewidth=0.3,
                                   label=kind)
            span = float(tr["end_s"].max() * 1e3) if len(tr) else 0
            min_w = 0.018 * span * (7.2 / fig_w)  # a two-character label needs about this much bar at this width
            for _, row in tr[~tr["step"].isin(["poll", "program"])].iterrows():
                w = (row["end_s"] - row["start_s"]) * 1e3
                if w > min_w:
                    ax.text((row["start_s"] * 1e3 + w / 2), rows[row["device"]], _layer_tag(row["layer"]),
                            ha="center", va="center", fontsize=5, color="white")
            t_ends = tr.groupby("t")["end_s"].max().sort_index() * 1e3
            prev = 0.0
            for t, end in t_ends.items():
                if t % 2 == 1:
                    ax.axvspan(prev, end, color="#ececec", zorder=0, linewidth=0)
                prev = end
            ax.set_yticks([1, 0], [host, mvp])
            ax.tick_params(axis="y", length=0)
            ax.set_ylim(-0.55, 1.55)
            whole = format_si(r.snn.traces[mode]["end_s"].max(), "s")
            label = _panel_mode(r.snn.mode, mode)
            ax.set_title(f"{label}:{chr(10) if label != mode else ' '}{len(t_ends)} timesteps in "
                         f"{format_si(span * 1e-3, 's')} (of {whole})")
            shown.update(tr.loc[tr["end_s"] > tr["start_s"], "step"])
        kinds = [k for k in KIND_COLOURS if k in shown]
        names = {"affine": "affine", "lif": "LIF", "readout": "readout", "poll": "M33 waits (polls)",
                 "program": "M33 programs MVP launches"}
        handles = [plt.Rectangle((0, 0), 1, 1, color=KIND_COLOURS[k]) for k in kinds]
        handles.append(plt.Rectangle((0, 0), 1, 1, facecolor="#ececec", edgecolor="#b0b0b0", linewidth=0.4))
        fig.legend(handles, [names[k] for k in kinds] + ["odd timesteps"], ncols=3 if fig_w < 5 else 5,
                   loc="outside lower center")
        axes[1].set_xlabel("time (ms); in bars: layer (L0 = Linear0, as in the tables)")
        fig.suptitle(f"{r.workload.name} on {r.platform.name}, eval sample {r.snn.sample}")
    return fig


def snn_trace_layout(r) -> dict:
    """What :func:`hetsim.report.export.chrome_trace` needs beyond the rows for an SNN run's trace.json
    (:mod:`hetsim.report.outputs`: ``r.traces`` concatenated in their order, devices renamed ``"m33 (async)"``...):
    ``host`` (the platform's host in every mode, so the M33 is labelled host and its track ``core 0``),
    ``devices`` (each renamed device's config, for its role and track names), ``args`` per row (``layer``,
    ``t``, ``cycles`` at the engine's clock; an affine op's ``n_in``, ``n_out``, ``engine``, ``residency``,
    ``active_inputs`` at its timestep; a LIF update's ``neurons``) and ``flows``: the dataflow arrows between
    the M33 and the MVP (``lif_{l-1}[t] -> affine_l[t] -> lif_l[t]`` for an MVP layer), never from a polling
    row; ``order``: each mode's devices together, the host first."""
    from hetsim.report.export import flow_chains, to_ns

    net = r.snn.network
    modes = list(r.snn.traces)
    devices = {f"{n} ({m})": d for m in modes for n, d in r.platform.devices.items()}
    layers = r.snn.layers.reset_index(drop=True)
    rasters = net.activity.get(net.roles.eval) if net.activity else None
    keys, devs, starts, ends, eligible, args, edges = [], [], [], [], [], [], []
    for m, t in r.snn.traces.items():
        edges += [((m, u), (m, v)) for u, v in r.workload.graph.edges]
        for op, dev, phase, s0, e0, layer, step in zip(t["op"], t["device"], t["step"], t["start_s"], t["end_s"],
                                                       t["layer"], t["t"], strict=True):
            keys.append((m, op))
            devs.append(f"{dev} ({m})")
            starts.append(to_ns(s0))
            ends.append(max(to_ns(e0), starts[-1]))
            eligible.append(phase != "poll")
            a = {"layer": int(layer), "t": int(step)}
            clock = getattr(r.platform.devices.get(dev), "clock_mhz", None)
            if clock:
                a["cycles"] = int(round((float(e0) - float(s0)) * clock * 1e6))
            if phase == "affine" and 1 <= layer <= len(layers):
                row = layers.iloc[int(layer) - 1]
                a.update(n_in=int(row["n_in"]), n_out=int(row["n_out"]), engine=str(row["engine"]),
                         residency=str(row["residency"]))
                if rasters is not None and len(rasters) >= layer:
                    a["active_inputs"] = int(rasters[int(layer) - 1][r.snn.sample, int(step)].sum())
            elif phase == "lif" and 1 <= layer <= len(layers):
                a["neurons"] = int(layers.iloc[int(layer) - 1]["n_out"])
            args.append(a)
    flows = flow_chains(keys, devs, starts, ends, edges, eligible=eligible, name=lambda u, v: f"{u[1]}->{v[1]}")
    host = r.platform.host
    order = [f"{d} ({m})" for m in modes for d in sorted(r.platform.devices, key=lambda d: (d != host, d))]
    return {"host": [f"{host} ({m})" for m in modes], "devices": devices, "args": args, "flows": flows,
            "order": order}


# --------------------------------------------------------------------------------------------- the SNN tables

def format_snn_inspect(snn) -> str:
    """What ``hetsim inspect NET.yaml`` prints: shape, LIF parameters, the unrolled op DAG, and per layer and
    split the spike density, active neurons and contiguous ranges per timestep (the MVP's cost driver),
    silent timesteps and never-firing neurons."""
    from hetsim.snn.activity import range_counts
    from hetsim.snn.unroll import unroll

    u = unroll(snn)
    lines = [
        f"{snn.name}: {'-'.join(map(str, snn.layer_sizes))}, T = {snn.timesteps}, "
        f"{sum(w.size for w in snn.weights):,} weights, LIF beta {float(snn.beta[0][0]):g}, threshold "
        f"{float(snn.threshold[0][0]):g}, reset {snn.reset}, readout {snn.readout}",
        f"  unrolled DAG: {len(u):,} ops (program_l[t], affine_l[t], lif_l[t], readout[t]), "
        f"{u.graph.number_of_edges():,} edges",
        "  splits: " + ", ".join(f"{k} {v[0].shape[0]} samples" for k, v in snn.activity.items())
        + f"  (fit {snn.roles.fit}, plan {snn.roles.plan}, eval {snn.roles.eval})",
    ]
    if snn.activity:
        lines.append(f"  {'split':<6} {'layer':<6} {'n':>5} {'density':>8} {'active/t':>9} {'ranges/t':>9} "
                     f"{'silent t':>9} {'never fire':>11}")
        for split, rasters in snn.activity.items():
            for layer, r in enumerate(rasters):
                n = r.shape[-1]
                act = r.sum(-1)
                lines.append(f"  {split:<6} L{layer:<5} {n:>5} {r.mean():>8.3f} {act.mean():>9.2f} "
                             f"{range_counts(r, 0)[0].mean():>9.2f} {(act == 0).mean():>9.2f} "
                             f"{int((~r.reshape(-1, n).any(0)).sum()):>11}")
    if snn.labels:
        from hetsim.snn.network import replay

        accs = []
        for split, rasters in snn.activity.items():
            if split in snn.labels:
                pred = replay(snn, rasters[0]).prediction
                accs.append(f"{split} {(pred == snn.labels[split]).mean():.3f}")
        lines.append("  accuracy of the replayed network on the recorded samples: " + ", ".join(accs))
    return "\n".join(lines)


def format_snn_costs(snn, platform) -> str:
    """Per affine layer, mean cycles per timestep on the plan split on every engine and residency (``hetsim
    inspect NET.yaml --platform P``), with each table's size in its engine's format; ``flash+hot`` with as
    many hot columns as the whole SRAM budget holds."""
    from hetsim.devices.efr32 import options
    from hetsim.snn.activity_costs import ActivityCostModel
    from hetsim.snn.unroll import unroll

    cm = ActivityCostModel(unroll(snn), platform, "plan")
    opts = options()
    head = ["layer", "shape", "M33 KiB", "MVP KiB"] + [f"{e} {r}" for e, r in opts]
    rows = []
    for li, lc in enumerate(cm.layers):
        hot = min(lc.n_in, cm.budget_sram // (lc.n_out * cm.m33.weight_bytes))
        rows.append([f"Linear{li}", f"{lc.n_out}x{lc.n_in}", f"{lc.weight_bytes(ENGINE_M33) / 1024:.1f}",
                     f"{lc.weight_bytes(ENGINE_MVP_RANGE) / 1024:.1f}"]
                    + [f"{lc.cycles(e, r, hot).mean():,.0f}"
                       + (" *" if r == "sram" and lc.weight_bytes(e) > cm.budget_sram else "") for e, r in opts])
    lines = [f"  cycles per timestep on {platform.name} ({cm.split} split, mean; SRAM budget "
             f"{cm.budget_sram / 1024:.0f} KiB for weights; flash+hot: as many hot columns as the budget holds)"]
    lines += text_table(head, rows, right=set(range(2, len(head))), indent="  ")
    if any(c.endswith("*") for r in rows for c in r):
        lines.append("  * the table does not fit the SRAM budget: not a possible placement")
    return "\n".join(lines)


def format_reorder(result) -> str:
    """A short human-readable table of a :func:`hetsim.snn.reorder.reorder` result: per hidden layer, its neurons
    (silent on the fit split), the affine layer its spikes feed, the merged gap, MVP launches and raw ranges per
    timestep on the plan split before -> after, the fit-split cost ``C_L * N_L + C_P * N_P`` per timestep before ->
    after, the start of the refinement and the time taken (:func:`hetsim.snn.reorder.reorder_rows`); then the
    verification."""
    from hetsim.snn.reorder import reorder_rows

    r = result
    head = (f"neuron reordering of {r.snn.name} (MVP weights in {r.residency}; order fitted on "
            f"{r.fit_split}, launches on {r.plan_split or 'no plan split'})")
    cols, rows = reorder_rows(r)
    lines = [head, *text_table(cols, rows)]
    if not rows:
        lines.append("(no hidden layers to reorder)")
    lines.append(f"verification: {r.verification}")
    return "\n".join(line.rstrip() for line in lines)


def snn_report_html(r, figures: Iterable[tuple[str | os.PathLike, str]] = ()) -> str:
    """The report of an SNN run (a :class:`~hetsim.pipeline.RunResult` with ``snn`` set): headline numbers, the
    per-layer table (``layers.csv``), the configurations of SpikeDuet's Table I, the timeline and the per-sample
    latencies and energies (``samples.csv``)."""
    from hetsim.snn.evaluate import CONFIG_LABELS

    s = r.summary
    st = s.get("plan_stats") or {}
    hz = r.platform.devices[r.platform.host].clock_mhz
    proof = "optimal" if st.get("status") == "optimal" else (
        f"stopped at the time limit, within {st.get('gap', 0):.1%} of optimal")
    head = [
        ("network", f"{s['workload']} ({'-'.join(map(str, s['layers']))}, T = {s['timesteps']})"),
        ("platform", s["platform"]),
        ("mapper", f"{s['mapper']}, {s['mode']} execution"),
        ("latency", f"{_sig(s['mean_latency_ms'], SIG_DIGITS + 1)} ms = {s['mean_latency_cycles']:,.0f} cycles at "
                    f"{hz:g} MHz (mean per inference)"),
        ("energy", f"{_sig(s['mean_energy_uj'], SIG_DIGITS + 1)} µJ per inference"),
        ("speed-up over all sparse M33", "n/a" if s.get("speedup_vs_all_m33") is None
         else f"{s['speedup_vs_all_m33']:.4g}x"),
        ("SRAM for weights", f"{s['sram_used_kib']:.1f} of {s['sram_budget_kib']:.0f} KiB"),
    ]
    if st:
        head.append(("plan", f"on the {st.get('split')} split: {st.get('fit')} of {st.get('plans')} plans fit the "
                             f"memories, {st.get('evaluated')} scheduled, {proof}"))
    head.append(("reported on", f"the {s['eval_split']} split ({s['samples']} samples); timeline: sample "
                                f"{s.get('timeline_sample', r.snn.sample)}"))
    bad = {k: v for k, v in (s.get("replay_mismatch_bits") or {}).items() if v}
    if bad:
        head.append(("warning", "the recorded rasters are not what these weights compute: "
                     + ", ".join(f"{k} {v:,} spike bits differ" for k, v in bad.items())))
    cfg_rows = []
    for name, c in s["configs"].items():
        cfg_rows.append({
            "configuration": CONFIG_LABELS.get(name, name), "mode": c.get("mode"),
            "mean latency (ms)": c.get("mean_latency_ms"), "max latency (ms)": c.get("max_latency_ms"),
            "speed-up vs all-M33": c.get("speedup_vs_all_m33"), "energy (µJ)": c.get("mean_energy_uj"),
            "utilisation MVP (%)": None if c.get("mvp_utilisation") is None else 100 * c["mvp_utilisation"],
            "utilisation M33 (%)": None if c.get("m33_utilisation") is None else 100 * c["m33_utilisation"],
            "SRAM (KiB)": c.get("sram_kib"),
            "layers": ", ".join(f"{x['engine']}/{x['residency']}" for x in c.get("layers", [])),
        })
    samples = [{"config": name, "mode": c.mode, "sample": i, "latency_s": lat, "energy_j": e}
               for name, c in r.snn.configs.items()
               for i, (lat, e) in enumerate(zip(c.latency_s, c.energy_j, strict=True))]
    sections = [
        ("Summary", kv_table(head)),
        ("Layers", table_html(r.snn.layers, scroll=False)
         + "<p>cycles per timestep of the chosen engine and of each engine (mean on the eval split); "
           "active/t, ranges/t and launches/t: spikes, contiguous ranges and MVP launches per timestep.</p>"),
        ("Configurations (SpikeDuet Table I)", table_html(pd.DataFrame(cfg_rows), scroll=False)),
        ("Figures", _figures(figures)),
    ]
    if r.snn.reorder is not None:
        from hetsim.snn.reorder import reorder_rows

        ro = r.snn.reorder
        cols, rows = reorder_rows(ro)
        sections.append(("Neuron reordering", kv_table([
            ("network", ro.snn.name), ("MVP weights in", ro.residency), ("order fitted on", ro.fit_split),
            ("launches on", ro.plan_split or "no plan split"), ("verification", str(ro.verification))])
            + table_html(pd.DataFrame(rows, columns=cols), scroll=False)
            + "<p>per hidden layer, before -> after: MVP launches and contiguous ranges per timestep on the plan "
              "split, and the fit split's cost C_L*N_L + C_P*N_P per timestep (SpikeDuet Sec. III-C).</p>"))
    sections += [
        (f"Samples ({len(samples):,} rows)", details_html("latency and energy per eval sample and configuration",
                                                          table_html(pd.DataFrame(samples)))),
        ("Raw numbers", _json_block(s)),
    ]
    title = f"{s['workload']} on {s['platform']} ({s['mapper']}, {s['mode']})"
    return page_html(title, "hetsim run: a spiking network on a microcontroller with an accelerator", sections)


def write_snn_html(r, path: str | os.PathLike, figures: Iterable[tuple[str | os.PathLike, str]] = ()) -> Path:
    """Write :func:`snn_report_html` to ``path`` atomically; returns the path."""
    return write_html(path, snn_report_html(r, figures))
