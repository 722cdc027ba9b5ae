"""Figures of a sweep's results table, after the CPU-CIM ILP paper, Sec. V.

* :func:`plot_speedup_heatmap` - speedup over all-host, crossbars x MVM latency, one panel per host (Fig. 3);
* :func:`plot_speedup_models` - speedup per model grouped by crossbar count at one MVM latency (Fig. 4);
* :func:`plot_sweep_breakdown` - latency share and op count per device per configuration (Fig. 5);
* :func:`plot_snn_speedup_density` - an SNN sweep's speed-up over all-M33 vs spike density, one line per
  clustering (and reordering), one panel per network shape and setting (SpikeDuet's engine crossover).

Each takes the results table of :func:`hetsim.dse.run_sweep` (a DataFrame) and an output stem (PNG and
SVG are written, atomically, and the figure closed); the ``*_figure`` function of each returns the Figure
instead (left open).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from hetsim.errors import InputError
from hetsim.report.plots import breakdown_figure, save_figure

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


def plot_speedup_heatmap(df: pd.DataFrame, workload: str, stem, title: str | None = None) -> list:
    """Write :func:`speedup_heatmap_figure` to ``stem``; returns the paths written."""
    return save_figure(speedup_heatmap_figure(df, workload, title), stem)


def speedup_heatmap_figure(df: pd.DataFrame, workload: str, title: str | None = None) -> Figure:
    """Speedup heatmap (crossbars x MVM latency) of ``workload``, one panel per host platform (Fig. 3)."""
    _need(df, "workload", "platform", "speedup", CROSSBARS, T_MVM)
    d = _ok(df[df["workload"] == workload])
    if d.empty:
        raise InputError(f"no results for workload {workload!r}; have: {', '.join(sorted(set(df['workload'])))}")
    plats = sorted(set(d["platform"]))
    fig, axes = plt.subplots(1, len(plats), figsize=(4.4 * len(plats) + 1.2, 3.9), squeeze=False,
                             layout="constrained")
    vmax = float(pd.to_numeric(d["speedup"]).max())
    im = None
    for ax, plat in zip(axes[0], plats, strict=True):
        t = d[d["platform"] == plat].pivot_table(index=CROSSBARS, columns=T_MVM, values="speedup", aggfunc="max")
        t = t.sort_index(ascending=False)
        im = ax.imshow(t.to_numpy(dtype=float), cmap="viridis", vmin=1.0 if vmax > 1 else 0.0, vmax=vmax,
                       aspect="auto")
        ax.set_xticks(range(len(t.columns)), [f"{c:g}" for c in t.columns])
        ax.set_yticks(range(len(t.index)), [f"{i:g}" for i in t.index])
        ax.set_xlabel("MVM latency (ns)")
        ax.set_ylabel("crossbars")
        ax.set_title(plat)
        vals = t.to_numpy(dtype=float)
        for (i, j), v in np.ndenumerate(vals):
            if np.isfinite(v):
                ax.text(j, i, f"{v:.1f}x", ha="center", va="center", fontsize=9,
                        color="white" if v < (1 + vmax) / 2 else "black")
    fig.colorbar(im, ax=axes[0].tolist(), label="speedup over all-host (x)")
    mappers = ", ".join(sorted(set(d["mapper"]))) if "mapper" in d else ""
    fig.suptitle(title or f"{_model(workload)}: speedup over all-host ({mappers})")
    return fig


def plot_speedup_models(df: pd.DataFrame, t_mvm_ns: float, stem, title: str | None = None) -> list:
    """Write :func:`speedup_models_figure` to ``stem``; returns the paths written."""
    return save_figure(speedup_models_figure(df, t_mvm_ns, title), stem)


def speedup_models_figure(df: pd.DataFrame, t_mvm_ns: float, title: str | None = None) -> Figure:
    """Speedup per model, bars grouped by crossbar count, at one MVM latency; one panel per host (Fig. 4)."""
    _need(df, "workload", "platform", "speedup", CROSSBARS, T_MVM)
    d = _ok(df[pd.to_numeric(df[T_MVM]) == t_mvm_ns])
    if d.empty:
        raise InputError(f"no results at {T_MVM} = {t_mvm_ns:g}")
    plats = sorted(set(d["platform"]))
    models = list(dict.fromkeys(d["workload"]))
    xbars = sorted(set(pd.to_numeric(d[CROSSBARS])))
    fig, axes = plt.subplots(1, len(plats), figsize=(5.5 * len(plats), 3.8), squeeze=False, sharey=True,
                             layout="constrained")
    width = 0.8 / len(xbars)
    colours = plt.cm.Blues(np.linspace(0.35, 0.95, len(xbars)))
    for ax, plat in zip(axes[0], plats, strict=True):
        sub = d[d["platform"] == plat]
        for k, (c, col) in enumerate(zip(xbars, colours, strict=True)):
            ys = []
            for m in models:
                r = sub[(sub["workload"] == m) & (pd.to_numeric(sub[CROSSBARS]) == c)]
                ys.append(float(pd.to_numeric(r["speedup"]).max()) if len(r) else np.nan)
            ax.bar(np.arange(len(models)) + (k - (len(xbars) - 1) / 2) * width, ys, width, color=col,
                   label=f"{c:g}")
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
        ax.set_xticks(range(len(models)), [_model(m) for m in models])
        ax.set_title(plat)
        ax.set_ylabel("speedup over all-host (x)")
    axes[0][-1].legend(title="crossbars", fontsize=8)
    fig.suptitle(title or f"Speedup per model at {t_mvm_ns:g} ns MVM latency")
    return fig


def plot_sweep_breakdown(df: pd.DataFrame, workload: str, stem, title: str | None = None) -> list:
    """Write :func:`sweep_breakdown_figure` to ``stem``; returns the paths written."""
    return save_figure(sweep_breakdown_figure(df, workload, title), stem)


def sweep_breakdown_figure(df: pd.DataFrame, workload: str, title: str | None = None) -> Figure:
    """Latency share between host and accelerator with op counts, one bar per configuration (Fig. 5)."""
    _need(df, "workload", "platform", "host_busy_s", "accel_busy_s", "host_ops", "accel_ops", CROSSBARS, T_MVM)
    d = _ok(df[df["workload"] == workload])
    if d.empty:
        raise InputError(f"no results for workload {workload!r}")
    rows = []
    for _, r in d.sort_values(["platform", T_MVM, CROSSBARS]).iterrows():
        config = f"{r['platform']}, {float(r[T_MVM]):g} ns, {int(float(r[CROSSBARS]))} xbars"
        rows.append({"config": config, "device": "host", "busy_s": float(r["host_busy_s"]),
                     "ops": int(float(r["host_ops"]))})
        rows.append({"config": config, "device": "accelerators", "busy_s": float(r["accel_busy_s"]),
                     "ops": int(float(r["accel_ops"]))})
    return breakdown_figure(pd.DataFrame(rows), title=title or f"{_model(workload)}: latency share per device")


SNN_SPEEDUP_STEM = "snn_speedup_vs_density"


def is_snn_table(df: pd.DataFrame) -> bool:
    """Whether ``df`` is an SNN sweep's results table (:data:`hetsim.dse.sweep.SNN_RESULT_COLUMNS`)."""
    return {"density", "clustering", "speedup", "latency_ms_all_m33"} <= set(df.columns)


def plot_snn_speedup_density(df: pd.DataFrame, stem, title: str | None = None) -> list:
    """Write :func:`snn_speedup_density_figure` to ``stem``; returns the paths written."""
    return save_figure(snn_speedup_density_figure(df, title), stem)


def snn_speedup_density_figure(df: pd.DataFrame, title: str | None = None) -> Figure:
    """Speed-up of the chosen configuration over all-M33 vs target spike density of an SNN sweep's synthetic
    networks: one line per clustering (dashed: reordered), one panel per network shape (columns) and per
    setting - platform, mapper, mode and sweep parameters, where they vary (rows). Seeds, sample counts and
    other synthetic arguments are averaged."""
    _need(df, "layers", "timesteps", "density", "clustering", "speedup")
    d = _ok(df)
    d = d[pd.to_numeric(d["density"], errors="coerce").notna()]  # synthetic rows with one density per network
    if d.empty:
        raise InputError("no synthetic networks with a single target density (and no error) in the results table")
    d["density"] = pd.to_numeric(d["density"])
    d["clustering"] = pd.to_numeric(d["clustering"])
    d["speedup"] = pd.to_numeric(d["speedup"])
    d["reorder"] = d["reorder"].astype(str).str.lower() == "true" if "reorder" in d.columns else False
    d["shape"] = d["layers"].astype(str) + ", T = " + d["timesteps"].astype(str)
    setting_cols = [c for c in ["platform", "mapper", "mode", *[c for c in d.columns if "." in c]]
                    if c in d.columns and d[c].nunique() > 1]
    d["setting"] = (d[setting_cols].astype(str).apply(lambda r: ", ".join(f"{c.rsplit('.', 1)[-1]} {v}"
                                                                        for c, v in r.items()), axis=1)
                    if setting_cols else "")
    shapes, settings = list(dict.fromkeys(d["shape"])), list(dict.fromkeys(d["setting"]))
    clusters = sorted(set(d["clustering"]))
    colours = plt.cm.viridis(np.linspace(0.0, 0.85, len(clusters)))
    fig, axes = plt.subplots(len(settings), len(shapes), figsize=(4.4 * len(shapes) + 0.6, 3.3 * len(settings) + 0.6),
                             squeeze=False, sharex=True, sharey=True, layout="constrained")
    for i, setting in enumerate(settings):
        for j, shape in enumerate(shapes):
            ax = axes[i][j]
            sub = d[(d["setting"] == setting) & (d["shape"] == shape)]
            for (c, reo), g in sub.groupby(["clustering", "reorder"]):
                g = g.groupby("density")["speedup"].mean()
                ax.plot(g.index, g.to_numpy(), marker="o", ms=4, ls="--" if reo else "-",
                        color=colours[clusters.index(c)], label=f"clustering {c:g}" + (", reordered" if reo else ""))
            ax.axhline(1.0, color="grey", lw=0.8, ls=":")
            ax.set_title(shape + (f"\n{setting}" if setting else ""), fontsize=9)
            if i == len(settings) - 1:
                ax.set_xlabel("target spike density")
            if j == 0:
                ax.set_ylabel("speed-up over all-M33 (x)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    if handles:
        axes[0][-1].legend(fontsize=7)
    mappers = ", ".join(sorted(set(d["mapper"].astype(str)))) if "mapper" in d.columns else ""
    fig.suptitle(title or f"SNN speed-up over all-M33 vs spike density ({mappers})")
    return fig


def snn_plot_jobs(df: pd.DataFrame) -> list[tuple[str, object]]:
    """``(stem, draw(path))`` of every figure ``hetsim plot`` draws from an SNN sweep's table."""
    return [(SNN_SPEEDUP_STEM, lambda s: plot_snn_speedup_density(df, s))]
