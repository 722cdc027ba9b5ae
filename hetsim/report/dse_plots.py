"""Figures of a sweep's results table, after the CPU-CIM ILP paper, Sec. V.

* :func:`plot_speedup_heatmap` - speedup over all-host, crossbars x MVM latency, one panel per host (Fig. 3);
* :func:`plot_speedup_models` - speedup per model grouped by crossbar count at one MVM latency (Fig. 4);
* :func:`plot_sweep_breakdown` - latency share and op count per device per configuration (Fig. 5);
* :func:`plot_snn_speedup_density` - an SNN sweep's speed-up over all-M33 vs spike density, one line per
  clustering (and reordering), one panel per network shape and setting (SpikeDuet's engine crossover).

Each takes the results table of :func:`hetsim.dse.run_sweep` (a DataFrame) and an output stem (PNG and
SVG are written, atomically, and the figure closed; ``formats=PAPER_FORMATS`` adds a PDF); the ``*_figure``
function of each returns the Figure instead (left open). Figures are one column of a two-column paper wide
(3.5 in) unless ``width`` says otherwise (inches, or ``"double"`` for 7.2 in), in the style of
:func:`hetsim.analysis.plots.paper_style`.
"""

from __future__ import annotations

from collections.abc import Iterable

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.colors import LogNorm
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from hetsim.analysis.plots import (
    BREAKDOWN_COLOURS,
    STEM_FORMATS,
    STYLE,
    figure_width,
    paper_style,
    save_figure,
)
from hetsim.errors import InputError
from hetsim.report.units import field_unit

CROSSBARS = "devices.cim.crossbars"
T_MVM = "devices.cim.t_mvm_ns"


def _need(df: pd.DataFrame, *cols: str) -> None:
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise InputError(f"the results table lacks column(s) {', '.join(missing)}; have: {', '.join(df.columns)}")


def _ok(df: pd.DataFrame) -> pd.DataFrame:
    """Rows that ran (no error) with a numeric speedup."""
    df = df[df["error"].isna() | (df["error"] == "")] if "error" in df.columns else df
    return df[pd.to_numeric(df["speedup"], errors="coerce").notna()].copy()


def _model(name: str) -> str:
    return name.removesuffix(".onnx").removesuffix("_int8_ort").removesuffix("_int8_qdq")


def _times(v: float) -> str:
    """A speed-up for a label: 3 significant digits, ``x`` appended (``51.6x``, ``5.43x``, ``128x``)."""
    return f"{v:.3g}x" if v < 1000 else f"{v:.0f}x"


def plot_speedup_heatmap(df: pd.DataFrame, workload: str, stem, title: str | None = None, *,
                         width: float | str = "single", formats: Iterable[str] = STEM_FORMATS) -> list:
    """Write :func:`speedup_heatmap_figure` to ``stem``; returns the paths written."""
    return save_figure(speedup_heatmap_figure(df, workload, title, width=width), stem, formats=formats)


def speedup_heatmap_figure(df: pd.DataFrame, workload: str, title: str | None = None, *,
                           width: float | str = "single") -> Figure:
    """Speedup heatmap (crossbars x MVM latency) of ``workload``, one panel per host platform (Fig. 3), each
    cell labelled with its speed-up (3 significant digits), coloured on a log scale."""
    with paper_style():
        return _speedup_heatmap_figure(df, workload, title, figure_width(width))


def _speedup_heatmap_figure(df: pd.DataFrame, workload: str, title: str | None, fig_w: float) -> Figure:
    _need(df, "workload", "platform", "speedup", CROSSBARS, T_MVM)
    d = _ok(df[df["workload"] == workload])
    if d.empty:
        raise InputError(f"no results for workload {workload!r}; have: {', '.join(sorted(set(df['workload'])))}")
    plats = sorted(set(d["platform"]))
    fig, axes = plt.subplots(1, len(plats), figsize=(fig_w, 2.1 if fig_w < 5 else 2.6), squeeze=False,
                             layout="constrained", sharey=True)
    vmax = float(pd.to_numeric(d["speedup"]).max())
    vmin = min(1.0, float(pd.to_numeric(d["speedup"]).min()))
    vmax = max(vmax, vmin * 1.01)
    norm = LogNorm(vmin=vmin, vmax=vmax)  # log colours: one 50x cell must not wash out the 2x-5x ones
    im = None
    for ax, plat in zip(axes[0], plats, strict=True):
        t = d[d["platform"] == plat].pivot_table(index=CROSSBARS, columns=T_MVM, values="speedup", aggfunc="max")
        t = t.sort_index(ascending=False)
        im = ax.imshow(t.to_numpy(dtype=float), cmap="viridis", norm=norm,
                       aspect="auto")
        ax.set_xticks(range(len(t.columns)), [f"{c:g}" for c in t.columns])
        ax.set_yticks(range(len(t.index)), [f"{i:g}" for i in t.index])
        ax.set_xlabel("MVM latency (ns)")
        if ax is axes[0][0]:
            ax.set_ylabel("crossbars")
        ax.set_title(plat)
        ax.tick_params(length=0)
        for side in ("top", "right"):
            ax.spines[side].set_visible(True)
        vals = t.to_numpy(dtype=float)
        for (i, j), v in np.ndenumerate(vals):
            if np.isfinite(v):
                ax.text(j, i, _times(v), ha="center", va="center", fontsize=5.5 if fig_w < 5 else 6.5,
                        color="white" if norm(v) < 0.6 else "black")
    cb = fig.colorbar(im, ax=axes[0].tolist(), label="speed-up over all-host (log)", shrink=0.9, aspect=25,
                      pad=0.02)
    cb.ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    cb.ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    cb.ax.yaxis.set_minor_formatter(NullFormatter())
    mappers = ", ".join(sorted(set(d["mapper"]))) if "mapper" in d else ""
    fig.suptitle(title or f"{_model(workload)}: speed-up over all-host ({mappers})")
    return fig


def plot_speedup_models(df: pd.DataFrame, t_mvm_ns: float, stem, title: str | None = None, *,
                        width: float | str = "single", formats: Iterable[str] = STEM_FORMATS) -> list:
    """Write :func:`speedup_models_figure` to ``stem``; returns the paths written."""
    return save_figure(speedup_models_figure(df, t_mvm_ns, title, width=width), stem, formats=formats)


def speedup_models_figure(df: pd.DataFrame, t_mvm_ns: float, title: str | None = None, *,
                          width: float | str = "single") -> Figure:
    """Speedup per model, bars grouped by crossbar count, at one MVM latency; one panel per host (Fig. 4),
    stacked (column width) or side by side (``width="double"``). The speed-up axis is logarithmic, so that a
    50x bar does not flatten the 2x ones, and each model's best bar is labelled with its value."""
    with paper_style():
        return _speedup_models_figure(df, t_mvm_ns, title, figure_width(width))


def _log_ticks(ax, lo: float, hi: float) -> None:
    """A log y axis from ``lo`` to ``hi`` with plain-number ticks at 1-2-5 steps."""
    ax.set_yscale("log")
    ax.set_ylim(lo, hi)
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())


def _speedup_models_figure(df: pd.DataFrame, t_mvm_ns: float, title: str | None, fig_w: float) -> Figure:
    _need(df, "workload", "platform", "speedup", CROSSBARS, T_MVM)
    d = _ok(df[pd.to_numeric(df[T_MVM]) == t_mvm_ns])
    if d.empty:
        raise InputError(f"no results at {T_MVM} = {t_mvm_ns:g}")
    plats = sorted(set(d["platform"]))
    models = list(dict.fromkeys(d["workload"]))
    xbars = sorted(set(pd.to_numeric(d[CROSSBARS])))
    stacked = fig_w < 5
    shape = (len(plats), 1) if stacked else (1, len(plats))
    fig, axes = plt.subplots(*shape, figsize=(fig_w, (1.45 * len(plats) + 0.55) if stacked else 2.4),
                             squeeze=False, sharey=True, sharex=True, layout="constrained")
    axes = axes.ravel()
    speed = pd.to_numeric(d["speedup"])
    lo = min(0.8, float(speed.min()) / 1.2)
    hi = float(speed.max()) * 2.0
    bar_w = 0.8 / len(xbars)
    colours = plt.cm.Blues(np.linspace(0.35, 0.95, len(xbars)))
    for ax, plat in zip(axes, plats, strict=True):
        sub = d[d["platform"] == plat]
        best: dict[int, tuple[float, float]] = {}
        for k, (c, col) in enumerate(zip(xbars, colours, strict=True)):
            ys = []
            for m in models:
                r = sub[(sub["workload"] == m) & (pd.to_numeric(sub[CROSSBARS]) == c)]
                ys.append(float(pd.to_numeric(r["speedup"]).max()) if len(r) else np.nan)
            xs = np.arange(len(models)) + (k - (len(xbars) - 1) / 2) * bar_w
            # bars start at the axis bottom (log axis: no zero), so a slow-down (< 1x) still shows as a bar
            ax.bar(xs, np.asarray(ys) - lo, bar_w, bottom=lo, color=col, label=f"{c:g}")
            for j, (x, y) in enumerate(zip(xs, ys, strict=True)):
                if np.isfinite(y) and y >= best.get(j, (0.0, -np.inf))[1]:
                    best[j] = (x, y)
        for x, y in best.values():
            ax.annotate(_times(y), xy=(x, y), xytext=(0, 1), textcoords="offset points", ha="center",
                        va="bottom", fontsize=5.5)
        ax.axhline(1.0, color="grey", lw=0.6, ls="--")
        _log_ticks(ax, lo, hi)
        ax.set_xticks(range(len(models)), [_model(m) for m in models])
        ax.tick_params(axis="x", length=0)
        ax.set_title(plat)
        ax.set_ylabel("speed-up (x, log)")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, title="crossbars", loc="outside right center" if stacked else "outside right",
               ncol=1)
    fig.suptitle(title or f"Speed-up over all-host per model, {t_mvm_ns:g} ns MVM")
    return fig


def plot_sweep_breakdown(df: pd.DataFrame, workload: str, stem, title: str | None = None, *,
                         width: float | str = "single", formats: Iterable[str] = STEM_FORMATS) -> list:
    """Write :func:`sweep_breakdown_figure` to ``stem``; returns the paths written."""
    return save_figure(sweep_breakdown_figure(df, workload, title, width=width), stem, formats=formats)


def sweep_breakdown_figure(df: pd.DataFrame, workload: str, title: str | None = None, *,
                           width: float | str = "single") -> Figure:
    """Latency share between host and accelerators with op counts (Fig. 5), as small multiples: one panel
    per platform (columns) and MVM latency (rows), one stacked bar per crossbar count in it - the host's and
    the accelerators' shares of their summed busy time (%) - labelled with the number of ops on the
    accelerators (of the workload's operators, when the table gives them)."""
    with paper_style():
        return _sweep_breakdown_figure(df, workload, title, figure_width(width))


def _sweep_breakdown_figure(df: pd.DataFrame, workload: str, title: str | None, fig_w: float) -> Figure:
    _need(df, "workload", "platform", "host_busy_s", "accel_busy_s", "host_ops", "accel_ops", CROSSBARS, T_MVM)
    d = _ok(df[df["workload"] == workload])
    if d.empty:
        raise InputError(f"no results for workload {workload!r}")
    for c in ("host_busy_s", "accel_busy_s", "host_ops", "accel_ops", CROSSBARS, T_MVM):
        d[c] = pd.to_numeric(d[c])
    plats = sorted(set(d["platform"]))
    t_mvms = sorted(set(d[T_MVM]))
    xbars = sorted(set(d[CROSSBARS]))
    fig, axes = plt.subplots(len(t_mvms), len(plats), figsize=(fig_w, 0.62 * len(t_mvms) + 0.85), squeeze=False,
                             sharex=True, sharey=True, layout="constrained")
    host_c, accel_c = BREAKDOWN_COLOURS[0], BREAKDOWN_COLOURS[1]
    xs = np.arange(len(xbars))
    for i, t in enumerate(t_mvms):
        for j, plat in enumerate(plats):
            ax = axes[i][j]
            sub = d[(d["platform"] == plat) & (d[T_MVM] == t)].groupby(CROSSBARS).first().reindex(xbars)
            total = sub["host_busy_s"] + sub["accel_busy_s"]
            host = (100 * sub["host_busy_s"] / total).to_numpy(dtype=float)
            accel = (100 * sub["accel_busy_s"] / total).to_numpy(dtype=float)
            ax.bar(xs, host, 0.7, color=host_c, edgecolor="white", linewidth=0.3)
            ax.bar(xs, accel, 0.7, bottom=host, color=accel_c, edgecolor="white", linewidth=0.3)
            for x, n in zip(xs, sub["accel_ops"], strict=True):
                if pd.notna(n):
                    ax.text(x, 101, f"{int(n)}", ha="center", va="bottom", fontsize=5.5)
            ax.set_ylim(0, 125)
            ax.set_yticks([0, 50, 100])
            ax.tick_params(axis="x", length=0)
            ax.grid(axis="y", color="#d0d0d0", linewidth=0.4)
            ax.set_axisbelow(True)
            if i == 0:
                ax.set_title(plat, loc="center")
            if j == 0:
                ax.set_ylabel(f"{t:g} ns\nshare (%)")
            if i == len(t_mvms) - 1:
                ax.set_xticks(xs, [f"{c:g}" for c in xbars])
                ax.set_xlabel("crossbars")
    n_ops = ""
    if "operators" in d.columns and pd.to_numeric(d["operators"], errors="coerce").notna().any():
        n_ops = f" of {int(pd.to_numeric(d['operators']).max())}"
    handles = [Patch(facecolor=host_c, label="host"), Patch(facecolor=accel_c, label="accelerators")]
    fig.legend(handles=handles, loc="outside lower center", ncol=2,
               title=f"number above a bar: ops on the accelerators{n_ops}")
    fig.suptitle(title or f"{_model(workload)}: share of summed busy time per device")
    return fig


SNN_SPEEDUP_STEM = "snn_speedup_vs_density"


def is_snn_table(df: pd.DataFrame) -> bool:
    """Whether ``df`` is an SNN sweep's results table (:data:`hetsim.snn.sweep.SNN_RESULT_COLUMNS`)."""
    return {"density", "clustering", "speedup", "latency_ms_all_m33"} <= set(df.columns)


def plot_snn_speedup_density(df: pd.DataFrame, stem, title: str | None = None, *,
                             width: float | str = "single", formats: Iterable[str] = STEM_FORMATS) -> list:
    """Write :func:`snn_speedup_density_figure` to ``stem``; returns the paths written."""
    return save_figure(snn_speedup_density_figure(df, title, width=width), stem, formats=formats)


_RECORDED_MARKERS = ["*", "d", "P", "X", "s", "^", "v", "h"]


def _hidden(layers: str) -> str:
    """The hidden widths of a ``24-192-192-27`` layer string (``192-192``), to match a recorded network with the
    synthetic networks shaped like it."""
    parts = str(layers).split("-")
    return "-".join(parts[1:-1]) if len(parts) > 2 else str(layers)


def snn_speedup_density_figure(df: pd.DataFrame, title: str | None = None, *,
                               width: float | str = "single") -> Figure:
    """Speed-up of the chosen configuration over all-M33 vs spike density of every network of an SNN sweep.

    Synthetic networks: one line per clustering (dashed: reordered) against their target density. Recorded
    networks (spec files: no target density): one marker each (reordered: hollow) at their measured hidden-layer
    density (``density_measured``), named in the legend, in the panel of the synthetic networks with the same
    hidden widths and timesteps (else the same hidden widths; else a panel of their own). One panel per network
    shape (columns) and per setting - platform, mapper, mode and sweep parameters, where they vary (rows).
    Seeds, sample counts and other synthetic arguments are averaged.

    Raises:
        InputError: no synthetic network (with one target density) ran.
    """
    with paper_style():
        return _snn_speedup_density_figure(df, title, figure_width(width))


def _snn_speedup_density_figure(df: pd.DataFrame, title: str | None, fig_w: float) -> Figure:
    _need(df, "layers", "timesteps", "density", "clustering", "speedup")
    d = _ok(df)
    d["density"] = pd.to_numeric(d["density"], errors="coerce")
    synth = d[d["density"].notna()].copy()  # synthetic rows with one target density per network
    rec = d[d["density"].isna()].copy()  # recorded networks (or per-layer densities): measured density
    if "density_measured" in rec.columns:
        rec["density"] = pd.to_numeric(rec["density_measured"], errors="coerce")
        rec = rec[rec["density"].notna()]
    else:
        rec = rec.iloc[0:0]
    if synth.empty:  # the lines are the figure; recorded networks alone are better read from the table
        raise InputError("no synthetic networks with a single target density (and no error) in the results table")
    d = pd.concat([synth.assign(_recorded=False), rec.assign(_recorded=True)], ignore_index=True)
    d["speedup"] = pd.to_numeric(d["speedup"])
    d["clustering"] = pd.to_numeric(d["clustering"], errors="coerce")
    d["reorder"] = d["reorder"].astype(str).str.lower() == "true" if "reorder" in d.columns else False
    d["shape"] = d["layers"].astype(str) + ", T = " + d["timesteps"].astype(str)
    setting_cols = [c for c in ["platform", "mapper", "mode", *[c for c in d.columns if "." in c]]
                    if c in d.columns and d[c].nunique() > 1]
    d["setting"] = (d[setting_cols].astype(str).apply(lambda r: ", ".join(f"{c.rsplit('.', 1)[-1]} {v}"
                                                                        for c, v in r.items()), axis=1)
                    if setting_cols else "")
    # the panel (shape) of each network: synthetic shapes first, recorded networks joined to a matching one
    shapes = list(dict.fromkeys(d.loc[~d["_recorded"], "shape"]))
    panel = []
    for shape, layers, steps, is_rec in zip(d["shape"], d["layers"], d["timesteps"], d["_recorded"], strict=True):
        if not is_rec or shape in shapes:
            panel.append(shape)
            continue
        same = [s for s in shapes if _hidden(s.split(",")[0]) == _hidden(layers)]
        exact = [s for s in same if s.endswith(f"T = {steps}")]
        panel.append((exact or same or [shape])[0])
    d["panel"] = panel
    shapes = list(dict.fromkeys([*shapes, *d["panel"]]))
    settings = list(dict.fromkeys(d["setting"]))
    clusters = sorted(set(d.loc[~d["_recorded"], "clustering"].dropna()))
    colours = plt.cm.viridis(np.linspace(0.0, 0.85, max(len(clusters), 1)))
    recorded = list(dict.fromkeys(d.loc[d["_recorded"], "workload"].astype(str))) if "workload" in d else []
    marker = {w: _RECORDED_MARKERS[k % len(_RECORDED_MARKERS)] for k, w in enumerate(recorded)}
    n_r, n_c = len(settings), len(shapes)
    panel_w = fig_w / n_c
    fig, axes = plt.subplots(n_r, n_c, figsize=(fig_w, min(panel_w * 0.8, 1.9) * n_r + 1.0), squeeze=False,
                             sharex=True, sharey=True, layout="constrained")
    any_reordered = False
    for i, setting in enumerate(settings):
        for j, shape in enumerate(shapes):
            ax = axes[i][j]
            sub = d[(d["setting"] == setting) & (d["panel"] == shape)]
            for (c, reo), g in sub[~sub["_recorded"]].groupby(["clustering", "reorder"]):
                g = g.groupby("density")["speedup"].mean()
                ax.plot(g.index, g.to_numpy(), marker="o", ms=2.5, ls="--" if reo else "-",
                        color=colours[clusters.index(c)])
                any_reordered |= bool(reo)
            for (w, reo), g in sub[sub["_recorded"]].groupby(["workload", "reorder"]):
                ax.scatter(g["density"], g["speedup"], marker=marker[str(w)], s=18, zorder=3,
                           facecolors="none" if reo else "black", edgecolors="black", linewidths=0.6)
                any_reordered |= bool(reo)
            ax.axhline(1.0, color="grey", lw=0.6, ls=":")
            ax.set_title(shape + (f"\n{setting}" if setting else ""), fontsize=6.5)
            if i == n_r - 1:
                ax.set_xlabel("spike density")
            ax.grid(color="#e0e0e0", linewidth=0.4)
    fig.supylabel("speed-up over all-M33", fontsize=STYLE["axes.labelsize"])

    entries: dict[str, object] = {f"clustering {c:g}": Line2D([], [], color=colours[k], marker="o", ms=2.5)
                                  for k, c in enumerate(clusters)}
    for w in recorded:
        layers = d.loc[d["workload"].astype(str) == w, "layers"].iloc[0]
        entries[f"{_model(w).removesuffix('.yaml')} {layers}: recorded, at its measured density"] = Line2D(
            [], [], ls="none", marker=marker[w], ms=4, color="black")
    if any_reordered:
        entries["reordered (dashed, hollow)"] = Line2D([], [], color="grey", ls="--", marker="o", ms=2.5,
                                                       mfc="none")
    fig.legend(list(entries.values()), list(entries.keys()), loc="outside lower center",
               ncol=(1 if recorded else 2) if fig_w < 5 else 2)
    mappers = ", ".join(sorted(set(d["mapper"].astype(str)))) if "mapper" in d.columns else ""
    fig.suptitle(title or f"SNN speed-up vs spike density ({mappers})")
    return fig


def snn_plot_jobs(df: pd.DataFrame, formats: Iterable[str] = STEM_FORMATS) -> list[tuple[str, object]]:
    """``(stem, draw(path))`` of every figure ``hetsim plot`` draws from an SNN sweep's table."""
    return [(SNN_SPEEDUP_STEM, lambda s: plot_snn_speedup_density(df, s, formats=formats))]


# --------------------------------------------------------------------------------------------- scenario sweeps

LOAD_CURVE_STEM = "latency_vs_offered_load"


def is_scenario_table(df: pd.DataFrame) -> bool:
    """Whether ``df`` is a scenario sweep's results table (:mod:`hetsim.dse.scenario_sweep`)."""
    return {"bottleneck_load", "objective", "scenario"} <= set(df.columns) and any(
        str(c).endswith(".latency_p99_s") for c in df.columns)


def plot_latency_vs_load(df: pd.DataFrame, stem, title: str | None = None, *, width: float | str = "double",
                         formats: Iterable[str] = STEM_FORMATS) -> list:
    """Write :func:`latency_vs_load_figure` to ``stem``; returns the paths written."""
    return save_figure(latency_vs_load_figure(df, title, width=width), stem, formats=formats)


def latency_vs_load_figure(df: pd.DataFrame, title: str | None = None, *, width: float | str = "double") -> Figure:
    """A scenario sweep's latency (p50 solid, p99 dashed, log scale) per stream against the offered load: the
    swept stream's offered rate as set (a swept rate, or 1 / a swept interval; points in that order), or its
    measured offered rate for another swept arrival parameter, else the mapping's analytic bottleneck load. One
    panel per stream; one colour per setting (mapper, objective, platform and the other parameters, where they
    vary). The saturation point of each setting is marked: a cross at the first point
    reported saturated from which every higher load is too (the queue grows), and a dotted vertical line where
    the analytic bottleneck load reaches 1 (interpolated between the points: the load is linear in the rates).

    Raises:
        InputError: no point ran without an error.
    """
    with paper_style():
        return _latency_vs_load_figure(df, title, figure_width(width))


def _load_axis(df: pd.DataFrame) -> tuple[pd.DataFrame, str, str, str | None]:
    """The table with its x column, the x label and the swept parameter behind it. A swept rate (``..._hz``) or
    period (``period_s``) of a stream's arrivals gives the offered load as set, the nominal rate (``1 / period``;
    a swept jitter, offset or think time is no rate), so the points are in the order of the load offered, not of
    the rate measured on finite random arrivals (which may run backwards between two close points); another swept
    arrival parameter gives the stream's measured offered rate; no swept stream, the bottleneck load."""
    swept = [c for c in df.columns if str(c).startswith("streams.") and ".arrival." in str(c)
             and df[c].nunique() > 1]
    if swept:
        param = str(swept[0])
        stream = param.split(".")[1]
        value = pd.to_numeric(df[param], errors="coerce")
        fu = field_unit(param)
        unit = fu.unit
        rate_like = unit is not None and (unit.base == "Hz" or (unit.base == "s" and fu.stem.endswith(".period")))
        if rate_like and value.gt(0).all():
            rate = value * unit.to_base if unit.base == "Hz" else 1.0 / (value * unit.to_base)
            return (df.assign(_offered_hz=rate), "_offered_hz",
                    f"offered rate of {stream} (requests/s, as set: {param.rsplit('.', 1)[1]})", param)
        if f"{stream}.offered_hz" in df.columns:
            return df, f"{stream}.offered_hz", f"offered rate of {stream} (requests/s, measured)", param
    return df, "bottleneck_load", "analytic bottleneck load (busiest resource at the offered rates)", None


def _latency_vs_load_figure(df: pd.DataFrame, title: str | None, fig_w: float) -> Figure:
    d = df[df["error"].isna()] if "error" in df.columns else df
    if d.empty:
        raise InputError("no point of the scenario sweep ran without an error: nothing to draw")
    d, x, xlabel, param = _load_axis(d)
    streams = [str(c)[: -len(".latency_p99_s")] for c in d.columns if str(c).endswith(".latency_p99_s")]
    fixed = {"key", "scenario", x, param, "bottleneck_load", "bottleneck_resource", "saturated",
             "energy_per_request_j", "simulated_s", "error", "scenario_sha256", "platform_sha256", "hetsim_version"}
    setting = [c for c in d.columns if c not in fixed and not any(str(c).startswith(f"{s}.") for s in streams)
               and d[c].nunique() > 1]
    groups = list(d.groupby(setting, sort=True)) if setting else [((), d)]
    fig, axes = plt.subplots(1, len(streams), figsize=(fig_w, 0.45 * fig_w + 0.4), squeeze=False)
    colours = plt.rcParams["axes.prop_cycle"].by_key().get("color", ["C0", "C1", "C2", "C3"])
    for ax, s in zip(axes[0], streams, strict=True):
        for gi, (gkey, g) in enumerate(groups):
            g = g.sort_values(x)
            col = colours[gi % len(colours)]
            gkey = gkey if isinstance(gkey, tuple) else (gkey,)
            label = ", ".join(f"{c}={v}" for c, v in zip(setting, gkey, strict=True)) or None
            xs = pd.to_numeric(g[x]).to_numpy()
            for q, ls in (("p50", "-"), ("p99", "--")):
                ax.plot(xs, pd.to_numeric(g[f"{s}.latency_{q}_s"]).to_numpy() * 1e3, ls, color=col, marker=".",
                        label=f"{q}" + (f" ({label})" if label else ""))
            flags = (g[f"{s}.saturated"].astype(str).str.lower() == "true").to_numpy() if f"{s}.saturated" in g \
                else np.zeros(len(g), dtype=bool)
            # the saturation point: the first point from which every higher load is saturated (a lone verdict
            # at a light load, a few requests' noise, is not one)
            tail = np.flip(np.logical_and.accumulate(np.flip(flags))) if len(flags) else flags
            if tail.any():
                first = g.iloc[int(np.argmax(tail))]
                ax.plot([float(first[x])], [float(first[f"{s}.latency_p99_s"]) * 1e3], "x", color=col, ms=8,
                        mew=2, label="first saturated point" if gi == 0 else None)
            load = pd.to_numeric(g["bottleneck_load"]).to_numpy()
            if x != "bottleneck_load" and len(xs) > 1 and load.min() < 1 <= load.max():
                cap = float(np.interp(1.0, load, xs))
                ax.axvline(cap, color=col, ls=":", lw=1, label="analytic capacity (load = 1)" if gi == 0 else None)
            elif x == "bottleneck_load":
                ax.axvline(1.0, color="grey", ls=":", lw=1, label="load = 1" if gi == 0 else None)
        ax.set_yscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(f"{s} latency (ms)")
        ax.set_title(s)
        ax.legend(fontsize="x-small")
    fig.suptitle(title or f"{d['scenario'].iloc[0]}: latency vs offered load (x: first saturated point; "
                          "dotted: analytic capacity)", fontsize="small")
    fig.tight_layout()
    return fig


def scenario_plot_jobs(df: pd.DataFrame, formats: Iterable[str] = STEM_FORMATS) -> list[tuple[str, object]]:
    """``(stem, draw(path))`` of the figure ``hetsim plot`` draws from a scenario sweep's table."""
    return [(LOAD_CURVE_STEM, lambda s: plot_latency_vs_load(df, s, formats=formats))]
