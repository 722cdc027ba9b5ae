"""The SNN part of a run's report (a spiking network through :func:`hetsim.pipeline.run`): the per-layer table and
SpikeDuet's Table I configurations (:func:`snn_tables`, on :attr:`hetsim.pipeline.RunResult.snn`), the text
report, the timeline figure (both engines, blocking vs async) and the extra output files."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from hetsim.activity_costs import LayerChoice
from hetsim.devices.efr32 import ENGINE_M33, ENGINE_MVP_DENSE, ENGINE_MVP_RANGE
from hetsim.report.table import text_table
from hetsim.report.text import si_column
from hetsim.schedule import Schedule

SNN_OUTPUT_FILES = ("summary.json", "layers.csv", "samples.csv", "ops.csv", "schedule.json", "trace.csv",
                    "trace.json", "timeline.png", "report.html")
KIND_COLOURS = {"affine": "#d1495b", "lif": "#2f4b7c", "readout": "#2a9d8f", "poll": "#c8c8c8",
                "program": "#e9a53a"}  # drawn in this order: programming on top of the M33's polling
CONFIG_LABELS = {"all-m33": "all sparse M33", "all-dense-mvp": "all dense MVP, blocking", "all-dense-mvp-async":
                 "all dense MVP, async", "spikeduet-blocking": "spikeduet, blocking",
                 "spikeduet-async": "spikeduet, async"}


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
        f"{st['solve_time_s'] * 1e3:.0f} ms); reported on the {s['eval_split']} split "
        f"({s['samples']} sample{'s' if s['samples'] != 1 else ''})",
        "",
        f"  latency      {lat[0]} = {s['mean_latency_cycles']:,.0f} cycles at {hz:g} MHz (mean per inference)",
        f"  energy       {energy[0]} per inference",
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
        from hetsim.snn.reorder import format_reorder

        lines += ["", "  neuron reordering (function preserved, verified on every recorded split):",
                  *("    " + x for x in format_reorder(r.snn.reorder).splitlines())]
    return "\n".join(lines)


def plot_snn_timeline(r, path: Path, max_timesteps: int | None = 6, *,
                      width: float | str = "single") -> Path:
    """Write :func:`snn_timeline_figure` to ``path`` atomically and close it; returns the path."""
    from hetsim.report.plots import save_figure

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
    (3.5 in, default) or ``"double"`` (7.2 in), in :func:`hetsim.report.plots.paper_style`. A Figure, left open."""
    from hetsim.report.plots import figure_width, format_si, paper_style

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
    """What :func:`hetsim.report.export.chrome_trace` needs beyond the rows for the trace of
    :func:`write_snn_outputs` (``r.traces`` concatenated in their order, devices renamed ``"m33 (async)"``...):
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


def write_snn_outputs(r, out: Path, force: bool = False) -> list[Path]:
    """Write summary.json, layers.csv, samples.csv (latency and energy per eval sample and configuration),
    ops.csv and schedule.json (as for every run), trace.csv (both modes of the timeline sample, column ``mode``,
    devices named as in the platform YAML) and trace.json (Chrome trace, opens in Perfetto: one track group per
    mode), timeline.png and report.html (all of it in one self-contained page) into ``out``, each atomically.

    Raises:
        OutputExistsError: ``out`` already holds one of these files and ``force`` is false.
    """
    from hetsim.report.outputs import OUTPUT_FILES, check_out_dir
    from hetsim.report.run_folder import staged_folder

    check_out_dir(out, force, SNN_OUTPUT_FILES)
    with staged_folder(out, owned=OUTPUT_FILES + SNN_OUTPUT_FILES) as stage:  # all files or none (run_folder)
        written = _write_snn_files(r, stage)
    return [out / p.name for p in written]


def _write_snn_files(r, out: Path) -> list[Path]:
    """:func:`write_snn_outputs`'s files, into the folder ``out`` (a staging folder)."""
    from hetsim.report.export import atomic_path, atomic_write_text, round_ns, write_chrome_trace

    atomic_write_text(out / "summary.json", json.dumps(r.summary, indent=1) + "\n")
    with atomic_path(out / "layers.csv") as tmp:
        r.snn.layers.to_csv(tmp, index=False)
    rows = []
    for name, c in r.snn.configs.items():
        for i, (lat, e) in enumerate(zip(c.latency_s, c.energy_j, strict=True)):
            rows.append({"config": name, "mode": c.mode, "sample": i, "latency_s": lat, "energy_j": e})
    with atomic_path(out / "samples.csv") as tmp:
        pd.DataFrame(rows).to_csv(tmp, index=False)
    with atomic_path(out / "ops.csv") as tmp:
        r.ops.to_csv(tmp, index=False)
    atomic_write_text(out / "schedule.json", r.schedule.to_json() + "\n")
    traces = r.snn.traces or {r.snn.mode: r.trace.assign(layer=0, t=0, step="")}
    with atomic_path(out / "trace.csv") as tmp:  # times to the ns: no float noise
        round_ns(pd.concat([t.assign(mode=m) for m, t in traces.items()], ignore_index=True)).to_csv(tmp, index=False)
    trace = pd.concat([t.assign(device=t["device"] + f" ({m})") for m, t in traces.items()], ignore_index=True)
    write_chrome_trace(trace.drop(columns=["layer", "t", "step"]), out / "trace.json",
                       meta={"workload": r.workload.name, "platform": r.platform.name, "sample": r.snn.sample},
                       **snn_trace_layout(r))
    plot_snn_timeline(r, out / "timeline.png")
    from hetsim.report.html import write_snn_html

    write_snn_html(r, out / "report.html", figures=[
        (out / "timeline.png", "Timeline of the first timesteps of one sample, blocking above asynchronous")])
    return [out / f for f in SNN_OUTPUT_FILES]


# --------------------------------------------------------------------------------------------- the SNN tables

@dataclass
class ConfigResult:
    """One configuration (a mapper's schedule in an execution mode) evaluated on the eval split: per-sample
    latency (s), energy (J) and busy time of the host and the MVP (s)."""

    name: str
    schedule: Schedule
    mode: str
    latency_s: np.ndarray
    energy_j: np.ndarray
    m33_busy_s: np.ndarray
    mvp_busy_s: np.ndarray

    @property
    def choices(self) -> list[LayerChoice]:
        return [LayerChoice.from_dict(x) for x in self.schedule.config["layers"]]


@dataclass
class SnnTables:
    """What a spiking network's run adds to :class:`~hetsim.pipeline.RunResult` (``run.snn``).

    Attributes:
        network: the network run (reordered when ``reorder`` is set).
        mode: the execution mode of the run's schedule.
        configs: SpikeDuet's Table I configurations (``all-m33``, ``all-dense-mvp``, ``spikeduet-blocking``,
            ``spikeduet-async``, and the run's own when it is none of them) on the eval split.
        key: which of ``configs`` is the run's.
        layers: per affine layer (:func:`layer_table`; ``layers.csv``).
        traces: the run's mapping replayed on the timeline sample in each mode (``async``, ``blocking``;
            columns of :data:`hetsim.sim.engine.TRACE_COLUMNS` plus ``layer``, ``t``, ``step`` = op kind);
            empty when the run skipped them (sweeps).
        sample: the eval-split sample replayed (``RunResult.result``, ``trace``, ``ops``, ``devices``).
        mvp: the platform's name of the MVP.
        reorder: the neuron reordering applied first, if any.
    """

    network: object
    mode: str
    configs: dict[str, ConfigResult]
    key: str
    layers: pd.DataFrame
    traces: dict[str, pd.DataFrame]
    sample: int
    mvp: str
    reorder: object | None = None

    @property
    def result(self) -> ConfigResult:
        return self.configs[self.key]


def evaluate_config(name: str, schedule: Schedule, cm) -> ConfigResult:
    """``schedule`` (an SNN mapper's) priced on every sample of ``cm``'s split; energy per sample is each
    engine's :meth:`~hetsim.devices.base.DeviceBase.energy_j` (``active_w * busy + idle_w * (makespan -
    busy)``, the one energy formula)."""
    from hetsim.mappers.spikeduet import makespans

    mode = schedule.config["mode"]
    choices = [LayerChoice.from_dict(x) for x in schedule.config["layers"]]
    lat = makespans(cm, choices, mode)
    m33, mvp = cm.engine_work(choices)
    energy = sum(sum(dev.energy_j(busy, lat)) for dev, busy in ((cm.m33, m33), (cm.mvp, mvp)))
    return ConfigResult(name, schedule, mode, lat, energy, m33, mvp)


def layer_table(cm, choices: list[LayerChoice]) -> pd.DataFrame:
    """Per affine layer on ``cm``'s split: shape, engine, residency, hot columns, SRAM KiB, mean cycles per
    timestep on the chosen engine and on each alternative engine (at the chosen residency when it applies to
    that engine, else SRAM when its table fits the budget on its own, else Flash), active input columns, raw
    ranges and MVP launches (after gap merging) per timestep."""
    from hetsim.snn.activity import range_counts

    rows = []
    for li, (lc, c) in enumerate(zip(cm.layers, choices, strict=True)):
        def mem(engine: str, c=c, lc=lc) -> str:
            if engine == c.engine or (engine != ENGINE_M33 and c.engine != ENGINE_M33):  # same engine family
                return c.residency
            if lc.weight_bytes(engine) <= cm.budget_sram:
                return "sram"
            return "flash+hot" if engine == ENGINE_M33 else "flash"

        raw, _ = range_counts(cm.snn.split(cm.split)[li], 0)
        sram = lc.weight_bytes(c.engine) if c.residency == "sram" else (
            c.hot_columns * lc.n_out * cm.m33.weight_bytes if c.residency == "flash+hot" else 0)
        rows.append({
            "layer": f"Linear{li}", "n_in": lc.n_in, "n_out": lc.n_out, "engine": c.engine,
            "residency": c.residency, "hot_columns": c.hot_columns, "sram_kib": sram / 1024,
            "cycles_per_t": float(cm.layer_cycles(li, c).mean()),
            # the M33 alternative of an MVP layer gets as many hot columns as the whole budget holds (optimistic)
            "m33_cycles_per_t": float(lc.m33_cycles(mem(ENGINE_M33), c.hot_columns if c.engine == ENGINE_M33 else
                                                    cm.budget_sram // (lc.n_out * cm.m33.weight_bytes)).mean()),
            "mvp_range_cycles_per_t": float(lc.mvp_range_cycles(mem(ENGINE_MVP_RANGE)).mean()),
            "mvp_dense_cycles_per_t": float(lc.mvp_dense_cycles(mem(ENGINE_MVP_DENSE)).mean()),
            "active_per_t": float(lc.active.mean()),
            "ranges_per_t": float(raw.mean()),
            "launches_per_t": float(lc.launches[mem(ENGINE_MVP_RANGE)].mean()),
        })
    return pd.DataFrame(rows)


def summarize_snn(costs, schedule: Schedule, result, tables: SnnTables, mismatches: bool = True) -> dict:
    """A spiking network's run as plain data (``summary.json``): the keys of every run (workload, platform,
    mapper, operators, ``makespan_s`` = the mean latency over the eval split, ``energy_j`` = the mean energy
    per inference, baseline (all-m33) and speed-up, devices of the replayed sample, mapper_stats, contention)
    and the SNN's own: mode, layers, timesteps, eval_split, samples, mean latency in ms and cycles, SRAM used
    and budget, plan_stats, timeline_sample, per_layer, configs (SpikeDuet's Table I), and, with
    ``mismatches``, the spike bits where the recorded rasters differ from the network's replay
    (:func:`hetsim.snn.network.replay_mismatches`)."""
    from hetsim.report.metrics import device_table

    cm, net = costs, tables.network
    hz = cm.m33_hz
    res = tables.result
    base = tables.configs["all-m33"].latency_s.mean()

    def ratio(a, b):
        """``a / b``, or ``None`` (JSON null) when ``b`` is 0 (a platform whose costs are all zero)."""
        return float(a / b) if b > 0 else None

    def cfg(c: ConfigResult) -> dict:
        st = c.schedule.stats
        return {"mode": c.mode, "mean_latency_ms": float(c.latency_s.mean() * 1e3),
                "mean_latency_cycles": float(c.latency_s.mean() * hz),
                "max_latency_ms": float(c.latency_s.max() * 1e3),
                "mean_energy_uj": float(c.energy_j.mean() * 1e6),
                "speedup_vs_all_m33": ratio(base, c.latency_s.mean()),
                "mvp_utilisation": ratio(c.mvp_busy_s.sum(), c.latency_s.sum()),
                "m33_utilisation": ratio(c.m33_busy_s.sum(), c.latency_s.sum()),
                "layers": list(c.schedule.config["layers"]),
                "sram_kib": st.get("sram_bytes", 0) / 1024, "planned_on": st.get("split"),
                "plan_mean_latency_ms": st.get("plan_mean_latency_s", float("nan")) * 1e3}

    mean = float(res.latency_s.mean())
    stats = dict(schedule.stats)
    s = {
        "workload": net.name, "platform": cm.platform.name, "mapper": schedule.mapper,
        "operators": len(cm.workload), "makespan_s": mean,
        "predicted_makespan_s": schedule.makespan_s,
        "baseline": cm.platform.baseline, "baseline_makespan_s": float(base),
        "speedup": ratio(base, mean), "energy_j": float(res.energy_j.mean()),
        "devices": device_table(costs, result).to_dict(orient="records"),
        "contention": sorted(result.contention), "mapper_stats": stats,
        "mode": tables.mode, "layers": net.layer_sizes, "timesteps": net.timesteps, "eval_split": cm.split,
        "samples": int(len(res.latency_s)), "mean_latency_ms": mean * 1e3,
        "mean_latency_cycles": float(res.latency_s.mean() * hz),
        "mean_energy_uj": float(res.energy_j.mean() * 1e6),
        "speedup_vs_all_m33": ratio(base, mean),
        "sram_used_kib": stats.get("sram_bytes", 0) / 1024, "sram_budget_kib": cm.budget_sram / 1024,
        "plan_stats": {k: stats[k] for k in ("plans", "fit", "evaluated", "pruned", "solve_time_s", "split",
                                             "status", "gap") if k in stats},
        "timeline_sample": tables.sample,
        "timeline_makespan_s": result.makespan_s,
        "per_layer": tables.layers.to_dict(orient="records"),
        "configs": {k: cfg(c) for k, c in tables.configs.items()},
    }
    if mismatches:
        from hetsim.snn.network import replay_mismatches

        s["replay_mismatch_bits"] = replay_mismatches(net)
    if tables.reorder is not None:
        s["reorder"] = tables.reorder.summary()
    return s


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
    from hetsim.activity_costs import ActivityCostModel
    from hetsim.devices.efr32 import options
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
