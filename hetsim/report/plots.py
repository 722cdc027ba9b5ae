"""Figures of a replay: a Gantt timeline and a per-configuration latency breakdown (CPU-CIM ILP Fig. 5 style).

``timeline_figure`` and ``breakdown_figure`` return a matplotlib Figure (drawn with pyplot on whatever backend
is selected: the CLI selects the non-interactive Agg, a notebook its inline one); ``plot_timeline`` and
``plot_breakdown`` draw it, save it and close it. Every file is written atomically
(:func:`hetsim.report.export.atomic_path`). Output format follows the file suffix (``.png``, ``.svg``,
``.pdf``); a path without one of these suffixes is a *stem* and gets both ``<stem>.png`` and ``<stem>.svg``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from hetsim.devices.link import LINK_KIND
from hetsim.report.export import atomic_path
from hetsim.report.lanes import assign_lanes, device_order, lane_counts

FORMATS = (".png", ".svg", ".pdf")
STEM_FORMATS = (".png", ".svg")
PNG_DPI = 150

# Timeline colour per category (phase if any, else kind): host compute dark, CIM phases warm, transfers grey.
TIMELINE_COLOURS = {
    "compute": "#2f4b7c",
    "load": "#f0a830",
    "mvm": "#d1495b",
    "store": "#8e6bbf",
    "transfer": "#8c8c8c",
    "split": "#2a9d8f",
}
TIMELINE_LABELS = {
    "compute": "compute",
    "load": "CIM load",
    "mvm": "CIM MVM",
    "store": "CIM store",
    "transfer": "transfer",
    "split": "channel-split part",
}
ALT_SHADE = 0.22
"""Every other op on a lane is drawn this much lighter (0 = same colour, 1 = white)."""
_EXTRA_COLOURS = ["#2ca02c", "#17becf", "#bcbd22", "#e377c2", "#7f7f7f", "#9467bd"]

# Breakdown colour per device, in order of first appearance (compute devices before links): the first
# (normally the host CPU) darker, the second (the CIM accelerator) lighter, as in the CPU-CIM ILP's Fig. 5.
BREAKDOWN_COLOURS = ["#2f4b7c", "#8fb8e8", "#f0a830", "#2ca02c", "#d1495b", "#8e6bbf", "#17becf"]
LINK_COLOURS = ["#b0b0b0", "#7f7f7f", "#d9d9d9"]


def output_paths(spec: str | os.PathLike | Iterable[str | os.PathLike]) -> list[Path]:
    """Resolve an output spec into file paths.

    A single path with a suffix in :data:`FORMATS` is used as is; a single path without one is a stem and
    expands to ``<stem>.png`` and ``<stem>.svg`` (the suffix is appended, so ``"t.greedy"`` gives
    ``"t.greedy.png"``). An iterable of paths is resolved element by element.
    """
    if isinstance(spec, str | os.PathLike):
        p = Path(spec)
        if p.suffix.lower() in FORMATS:
            return [p]
        return [Path(f"{os.fspath(p)}{ext}") for ext in STEM_FORMATS]
    out: list[Path] = []
    for item in spec:
        out.extend(output_paths(item))
    return out


def save_figure(fig: Figure, spec, close: bool = True) -> list[Path]:
    """Save ``fig`` to every path of ``spec`` (:func:`output_paths`) atomically, then close it unless ``close``
    is false. Returns the paths written."""
    paths = output_paths(spec)
    try:
        for p in paths:
            fmt = p.suffix.lower().lstrip(".")
            kwargs = {"dpi": PNG_DPI} if fmt == "png" else {}
            if fmt == "svg":
                kwargs["metadata"] = {"Date": None}
            with atomic_path(p) as tmp:
                fig.savefig(tmp, format=fmt, **kwargs)
    finally:
        if close:
            plt.close(fig)
    return paths


_save = save_figure


def _lighten(colour: str, amount: float) -> tuple[float, float, float]:
    """``colour`` blended towards white by ``amount`` (0..1)."""
    r, g, b = matplotlib.colors.to_rgb(colour)
    return (r + (1 - r) * amount, g + (1 - g) * amount, b + (1 - b) * amount)


def _category(kind: str, phase: str) -> str:
    return phase if phase else ("transfer" if kind == "transfer" else "compute")


def plot_timeline(
    trace: pd.DataFrame,
    path_stem_or_paths: str | os.PathLike | Iterable[str | os.PathLike],
    title: str = "",
    *,
    host: str | None = None,
) -> list[Path]:
    """Write the Gantt chart of a replay trace (:func:`timeline_figure`) to ``path_stem_or_paths`` (see
    :func:`output_paths`: PNG, SVG or PDF by suffix; a stem gives PNG and SVG) and close it.

    Returns:
        The paths written.
    """
    return save_figure(timeline_figure(trace, title, host=host), path_stem_or_paths)


def timeline_figure(trace: pd.DataFrame, title: str = "", *, host: str | None = None) -> Figure:
    """Gantt chart of a replay trace, as a Figure (left open: save it, show it, or ``plt.close`` it).

    One group of rows per device/link (host first, then accelerators, then links); a group has one row
    (*lane*) per set of non-overlapping ops, from the same greedy lane assignment as the Chrome trace
    (:func:`hetsim.report.lanes.assign_lanes`), so parallel CIM ops or transfers never hide each other. Bars
    are coloured by category: whole-op compute, CIM ``load``/``mvm``/``store`` phases, transfer, and the part of
    a channel-split op (a row with a ``channels`` value, as in ODiMO Fig. 6's timeline of both DIANA
    accelerators); every other op on a lane is slightly lighter, so that back-to-back ops stay
    distinguishable; a legend names the categories present. The x axis is time in milliseconds, from 0 to the
    makespan (dashed line).
    Bars are drawn with one ``broken_barh`` collection per (lane, category), so thousands of ops stay fast.

    Args:
        trace: :class:`~hetsim.sim.engine.SimResult` trace (times in seconds).
        title: figure title.
        host: host device name (sorted first); guessed when omitted.
    """
    tr = trace.reset_index(drop=True)
    phases = tr["phase"].fillna("").astype(str) if len(tr) else pd.Series([], dtype=str)
    cats = [_category(str(k), p) for k, p in zip(tr["kind"], phases, strict=True)]
    if "channels" in tr.columns:  # parts of channel-split ops (ODiMO) get their own colour
        cats = ["split" if pd.notna(n) else c for c, n in zip(cats, tr["channels"], strict=True)]
    lanes = assign_lanes(tr)
    n_lanes = lane_counts(tr, lanes)
    order = device_order(tr, host)

    # Row layout, top to bottom: each device's lanes, then a gap.
    gap = 0.7
    row_y: dict[tuple[str, int], float] = {}
    groups: list[tuple[str, float, float]] = []  # (device, y_top, y_bottom)
    y = 0.0
    for d in order:
        top = y
        for lane in range(n_lanes[d]):
            row_y[(d, lane)] = y + 0.5
            y += 1.0
        groups.append((d, top, y))
        y += gap
    total_h = max(y - gap, 1.0)

    n_rows = sum(n_lanes.values())
    height = min(2.2 + 0.34 * n_rows + 0.25 * len(order), 40.0)
    fig, ax = plt.subplots(figsize=(14, height), layout="constrained")

    makespan_ms = float(tr["end_s"].max()) * 1e3 if len(tr) else 0.0
    extra = iter(_EXTRA_COLOURS)
    colours = dict(TIMELINE_COLOURS)
    present: list[str] = []
    if len(tr):
        df = pd.DataFrame({
            "device": tr["device"].astype(str), "lane": lanes, "cat": cats,
            "x": tr["start_s"] * 1e3, "w": (tr["end_s"] - tr["start_s"]) * 1e3,
        })
        for cat in dict.fromkeys(cats):
            if cat not in colours:
                colours[cat] = next(extra, "#333333")
        # Alternate a lighter shade between consecutive ops of a lane, so back-to-back ops stay apart.
        op_rank = df.assign(op=tr["op"].astype(str)).groupby(["device", "lane"], sort=False)["op"].transform(
            lambda ops: pd.factorize(ops)[0])
        df["shade"] = op_rank % 2
        for (d, lane, cat, shade), grp in df.groupby(["device", "lane", "cat", "shade"], sort=False):
            c = colours[cat] if shade == 0 else _lighten(colours[cat], ALT_SHADE)
            ax.broken_barh(list(zip(grp["x"], grp["w"], strict=True)), (row_y[(d, lane)] - 0.4, 0.8),
                           facecolors=c, edgecolors=c, linewidth=0.3)
        present = [c for c in colours if c in set(cats)]

    # Device groups: alternating background bands, labels at the group centre, lane numbers on the right.
    ticks, labels = [], []
    for i, (d, top, bottom) in enumerate(groups):
        if i % 2 == 0:
            ax.axhspan(top - gap / 2, bottom + gap / 2, color="#f2f2f2", zorder=0, linewidth=0)
        ticks.append((top + bottom) / 2)
        n = n_lanes[d]
        labels.append(d if n == 1 else f"{d}\n({n} lanes)")
    ax.set_yticks(ticks, labels)
    ax.tick_params(axis="y", length=0)
    ax.set_ylim(total_h + gap / 2, -gap / 2)

    ax.set_xlim(0, makespan_ms * 1.005 if makespan_ms > 0 else 1.0)
    ax.set_xlabel("time (ms)")
    ax.grid(axis="x", color="#d0d0d0", linewidth=0.6)
    ax.set_axisbelow(True)
    if makespan_ms > 0:
        ax.axvline(makespan_ms, color="black", linestyle="--", linewidth=0.8)
        ax.annotate(f"makespan {makespan_ms:.4g} ms", xy=(makespan_ms, 1), xycoords=("data", "axes fraction"),
                    xytext=(0, 3), textcoords="offset points", ha="right", va="bottom", fontsize=8)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    if title:
        ax.set_title(title, loc="left")
    if present:
        handles = [Patch(facecolor=colours[c], label=TIMELINE_LABELS.get(c, c)) for c in present]
        fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), frameon=False)
    return fig


def _breakdown_colours(table: pd.DataFrame, devices: list[str]) -> dict[str, str]:
    """Device -> colour, stable for the whole table: compute devices from the main palette, links in grey."""
    kinds = {}
    if "kind" in table.columns:
        kinds = dict(zip(table["device"].astype(str), table["kind"].astype(str), strict=True))
    main, links = iter(BREAKDOWN_COLOURS), iter(LINK_COLOURS)
    out = {}
    for d in devices:
        out[d] = next(links, "#999999") if kinds.get(d) == LINK_KIND else next(main, "#444444")
    return out


def _ink(colour: str) -> str:
    """Black or white text, whichever reads better on ``colour``."""
    r, g, b = matplotlib.colors.to_rgb(colour)
    return "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.55 else "white"


def plot_breakdown(
    table: pd.DataFrame,
    path: str | os.PathLike | Iterable[str | os.PathLike],
    title: str = "",
) -> list[Path]:
    """Write the latency share per device of several configurations (:func:`breakdown_figure`) to ``path``
    (see :func:`output_paths`) and close it.

    Returns:
        The paths written.

    Raises:
        ValueError: a required column is missing.
    """
    return save_figure(breakdown_figure(table, title), path)


def breakdown_figure(table: pd.DataFrame, title: str = "") -> Figure:
    """Latency share per device for several configurations (CPU-CIM ILP Fig. 5 style), as a Figure (left open).

    One horizontal stacked bar per configuration (rows in order of first appearance in ``table``); its
    segments are the devices' shares of the configuration's total busy time, in percent (``100 * busy_s /
    sum(busy_s)`` over the configuration's rows), in order of first appearance of the device in ``table``.
    Each segment with ``ops > 0`` is labelled with its count ("N ops", "N transfers" for links): inside the
    segment when wide enough, else above the bar. The bar's total busy time (ms) is printed to its right. A
    device keeps its colour across configurations (compute devices dark to light in order of appearance, links
    grey when a ``kind`` column marks them as links).

    Args:
        table: long-format rows with columns ``config`` (e.g. ``"all-host"``, ``"greedy"``), ``device``,
            ``busy_s`` (seconds) and ``ops`` (op or transfer count); optional ``kind`` (``device_table``'s).
        title: figure title.

    Raises:
        ValueError: a required column is missing.
    """
    missing = {"config", "device", "busy_s", "ops"} - set(table.columns)
    if missing:
        raise ValueError(f"breakdown table lacks column(s) {sorted(missing)}")
    tab = table.assign(config=table["config"].astype(str), device=table["device"].astype(str))
    configs = list(dict.fromkeys(tab["config"]))
    devices = list(dict.fromkeys(tab["device"]))
    colours = _breakdown_colours(tab, devices)
    links = set(tab.loc[tab["kind"].astype(str) == LINK_KIND, "device"]) if "kind" in tab.columns else set()

    fig, ax = plt.subplots(figsize=(9, 1.6 + 0.75 * len(configs)), layout="constrained")
    bar_h = 0.5
    narrow_pct = 9.0
    for i, cfg in enumerate(configs):
        rows = tab[tab["config"] == cfg].groupby("device", sort=False)[["busy_s", "ops"]].sum()
        total = float(rows["busy_s"].sum())
        left = 0.0
        n_narrow = 0
        for d in devices:
            if d not in rows.index or total <= 0:
                continue
            busy, ops = float(rows.at[d, "busy_s"]), int(rows.at[d, "ops"])
            share = 100.0 * busy / total
            if share > 0:
                ax.barh(i, share, left=left, height=bar_h, color=colours[d], edgecolor="white", linewidth=0.8)
            if ops > 0:
                noun = "transfer" if d in links else "op"
                label = f"{ops} {noun}{'s' if ops != 1 else ''}"
                if share >= narrow_pct:
                    ax.text(left + share / 2, i, label, ha="center", va="center", fontsize=9,
                            color=_ink(colours[d]))
                else:  # too narrow: label above the bar, staggered to the right
                    ax.annotate(label, xy=(left + share / 2, i - bar_h / 2), xytext=(4 + 60 * n_narrow, 8),
                                textcoords="offset points", ha="left", va="bottom", fontsize=8,
                                arrowprops={"arrowstyle": "-", "color": "#555555", "linewidth": 0.6})
                    n_narrow += 1
            left += share
        ax.annotate(f"{total * 1e3:.1f} ms", xy=(100, i), xytext=(6, 0), textcoords="offset points",
                    ha="left", va="center", fontsize=9, annotation_clip=False)

    ax.set_yticks(range(len(configs)), configs)
    ax.set_ylim(len(configs) - 0.4, -0.75)
    ax.set_xlim(0, 100)
    ax.set_xlabel("share of busy time (%)  [bar total: busy time summed over devices, ms]")
    ax.set_ylabel("configuration")
    ax.grid(axis="x", color="#d0d0d0", linewidth=0.6)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    if title:
        ax.set_title(title, loc="left")
    handles = [Patch(facecolor=colours[d], label=d) for d in devices]
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), frameon=False)
    return fig
