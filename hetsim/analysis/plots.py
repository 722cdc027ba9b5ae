"""Figures of a replay: a Gantt timeline and a per-configuration latency breakdown (CPU-CIM ILP Fig. 5 style).

``timeline_figure`` and ``breakdown_figure`` return a matplotlib Figure (drawn with pyplot on whatever backend
is selected: the CLI selects the non-interactive Agg, a notebook its inline one); ``plot_timeline`` and
``plot_breakdown`` draw it, save it and close it. Every file is written atomically
(:func:`hetsim.files.atomic_path`). Output format follows the file suffix (``.png``, ``.svg``,
``.pdf``); a path without one of these suffixes is a *stem* and gets both ``<stem>.png`` and ``<stem>.svg``
(pass ``formats=PAPER_FORMATS`` to :func:`save_figure` / :func:`output_paths` for a PDF as well).

Figures are sized for a two-column paper: every ``*_figure`` function takes ``width`` (inches, or
``"single"`` = :data:`COLUMN_WIDTH_IN` 3.5 in, the default, or ``"double"`` = :data:`DOUBLE_WIDTH_IN` 7.2 in)
and draws inside :func:`paper_style` (:data:`STYLE`: 7-8 pt text, thin lines, vector text in SVG and PDF), so
that they are legible printed at that width without scaling.
"""

from __future__ import annotations

import contextlib
import math
import os
import textwrap
from collections.abc import Iterable, Iterator
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.legend_handler import HandlerTuple
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from hetsim.analysis.lanes import assign_lanes, device_order, lane_counts
from hetsim.devices.link import LINK_KIND
from hetsim.files import atomic_path

FORMATS = (".png", ".svg", ".pdf")
STEM_FORMATS = (".png", ".svg")
"""What a stem (a path without a known suffix) expands to by default."""
PAPER_FORMATS = (".png", ".svg", ".pdf")
"""A stem's formats for a paper: PNG for a quick look, SVG and PDF (vector, text kept as text) to include."""
PNG_DPI = 300
#: resolution of a figure on screen (a notebook shows it at its dpi): a 3.5-inch column figure ~700 pixels wide
SCREEN_DPI = 200

COLUMN_WIDTH_IN = 3.5
"""Width of a figure in one column of a two-column paper (IEEE: 3.5 in), the default of every figure."""
DOUBLE_WIDTH_IN = 7.2
"""Width of a figure spanning both columns (IEEE: 7.16 in)."""
STYLE = {
    "font.size": 7.0,
    "axes.titlesize": 7.5,
    "axes.labelsize": 7.0,
    "xtick.labelsize": 6.5,
    "ytick.labelsize": 6.5,
    "legend.fontsize": 6.5,
    "legend.title_fontsize": 6.5,
    "figure.titlesize": 8.0,
    "axes.linewidth": 0.6,
    "xtick.major.width": 0.6,
    "ytick.major.width": 0.6,
    "xtick.major.size": 2.5,
    "ytick.major.size": 2.5,
    "xtick.minor.size": 1.5,
    "ytick.minor.size": 1.5,
    "lines.linewidth": 1.0,
    "lines.markersize": 3.5,
    "grid.linewidth": 0.4,
    "hatch.linewidth": 0.5,
    "legend.frameon": False,
    "legend.handlelength": 1.2,
    "legend.handleheight": 0.8,
    "legend.columnspacing": 1.0,
    "legend.borderaxespad": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.titlelocation": "left",
    "figure.constrained_layout.h_pad": 0.02,
    "figure.constrained_layout.w_pad": 0.02,
    "savefig.dpi": PNG_DPI,
    "figure.dpi": SCREEN_DPI,
    "svg.fonttype": "none",
    "pdf.fonttype": 42,
}
"""matplotlib rcParams of every hetsim figure (:func:`paper_style`): sizes in points at the printed size."""


@contextlib.contextmanager
def paper_style() -> Iterator[None]:
    """Context in which hetsim draws (and saves) its figures: :data:`STYLE` over the current rcParams."""
    with matplotlib.rc_context(STYLE):
        yield


def figure_width(width: float | str = "single") -> float:
    """Figure width in inches: a number as is, ``"single"`` :data:`COLUMN_WIDTH_IN`, ``"double"``
    :data:`DOUBLE_WIDTH_IN`.

    Raises:
        ValueError: an unknown name or a width that is not positive.
    """
    if isinstance(width, str):
        named = {"single": COLUMN_WIDTH_IN, "column": COLUMN_WIDTH_IN, "double": DOUBLE_WIDTH_IN,
                 "page": DOUBLE_WIDTH_IN}
        if width not in named:
            raise ValueError(f"width {width!r}: give inches or one of {', '.join(named)}")
        return named[width]
    w = float(width)
    if not w > 0:
        raise ValueError(f"width must be positive, got {width!r}")
    return w


def wrap_title(text: str, width_in: float, fontsize_pt: float | str | None = None) -> str:
    """``text`` broken into lines (at spaces, and after the commas of a ``--set`` platform name) that fit a figure
    ``width_in`` inches wide in a font of ``fontsize_pt`` points, so a long title is never cut off at the figure's
    edge; existing line breaks are kept. The width of a character is taken as 0.55 of the font size (assumed: an
    average for DejaVu Sans, matplotlib's default, text in lower case). ``fontsize_pt``: points or a size name
    (``"large"``); default the current ``axes.titlesize``."""
    from matplotlib.font_manager import FontProperties

    size = FontProperties(size=plt.rcParams["axes.titlesize"] if fontsize_pt is None else fontsize_pt)
    fontsize_pt = size.get_size_in_points()
    per_line = max(20, int(width_in * 72 * 0.92 / (0.55 * fontsize_pt)))
    return "\n".join(textwrap.fill(line, per_line, break_long_words=True, break_on_hyphens=False) or line
                     for line in text.split("\n"))


_SI_PREFIXES = [(1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""), (1e-3, "m"), (1e-6, "µ"), (1e-9, "n"), (1e-12, "p")]


def format_si(value: float, unit: str, digits: int = 4) -> str:
    """``value`` (in ``unit``) with ``digits`` significant digits and the SI prefix that puts it in [1, 1000):
    ``format_si(0.000991, "s")`` is ``"991.0 µs"``, ``format_si(0.09217, "s")`` ``"92.17 ms"``,
    ``format_si(5.1e-8, "s", 3)`` ``"51.0 ns"``. Trailing zeros are kept (they are significant); zero is
    ``"0 <unit>"``; a value outside the prefixes' range keeps the nearest prefix."""
    v = float(value)
    if v == 0 or not math.isfinite(v):
        return f"{v:g} {unit}"
    scale, prefix = next(((s, p) for s, p in _SI_PREFIXES if abs(v) >= s), _SI_PREFIXES[-1])
    x = float(f"{v / scale:.{digits - 1}e}")  # rounded to the significant digits first (999.96 -> 1000)
    if abs(x) >= 1000 and scale < _SI_PREFIXES[0][0]:  # rounding carried into the next prefix
        return format_si(x * scale, unit, digits)
    decimals = max(digits - 1 - math.floor(math.log10(abs(x))), 0)
    return f"{x:.{decimals}f} {prefix}{unit}"

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
TIMELINE_MAX_BARS = 5000
"""A timeline of more trace rows than this draws each lane's bars of one category merged into busy spans (bars
closer than :data:`TIMELINE_MERGE_FRACTION` of the makespan join), says so under its time axis, and drops the
alternating shade: at that density single ops are narrower than a pixel, and drawing them all costs time."""
TIMELINE_MERGE_FRACTION = 1e-3
"""Gap, as a fraction of the makespan, below which two bars of a big timeline merge (about a pixel at 300 dpi on a
3.5 in figure)."""
TIMELINE_MAX_LANES = 16
"""Rows per device at most: the lanes past the last row are drawn on it (said under the time axis)."""
THIN_PHASES = ("load", "store")
"""Timeline categories drawn at least :data:`MIN_PHASE_PT` wide (a CIM's load and store phases)."""
MIN_PHASE_PT = 1.0
"""Least drawn width of a :data:`THIN_PHASES` bar, in points at the figure's printed size (a bar shorter than
that in time is widened to it, so that its colour stays visible)."""
ALT_SHADE = 0.22
"""Every other op on a lane is drawn this much lighter (0 = same colour, 1 = white)."""
_EXTRA_COLOURS = ["#2ca02c", "#17becf", "#bcbd22", "#e377c2", "#7f7f7f", "#9467bd"]

# Breakdown colour per device, in order of first appearance (compute devices before links): the first
# (normally the host CPU) darker, the second (the CIM accelerator) lighter, as in the CPU-CIM ILP's Fig. 5.
BREAKDOWN_COLOURS = ["#2f4b7c", "#8fb8e8", "#f0a830", "#2ca02c", "#d1495b", "#8e6bbf", "#17becf"]
LINK_COLOURS = ["#b0b0b0", "#7f7f7f", "#d9d9d9"]


def output_paths(spec: str | os.PathLike | Iterable[str | os.PathLike],
                 formats: Iterable[str] = STEM_FORMATS) -> list[Path]:
    """Resolve an output spec into file paths.

    A single path with a suffix in :data:`FORMATS` is used as is; a single path without one is a stem and
    expands to one path per suffix of ``formats`` - by default :data:`STEM_FORMATS`, ``<stem>.png`` and
    ``<stem>.svg``; :data:`PAPER_FORMATS` adds ``<stem>.pdf`` (the suffix is appended, so ``"t.greedy"`` gives
    ``"t.greedy.png"``). An iterable of paths is resolved element by element.

    Raises:
        ValueError: a suffix of ``formats`` is not in :data:`FORMATS`.
    """
    formats = tuple(formats)
    bad = [f for f in formats if f.lower() not in FORMATS]
    if bad:
        raise ValueError(f"unknown figure format(s) {bad}; have {', '.join(FORMATS)}")
    if isinstance(spec, str | os.PathLike):
        p = Path(spec)
        if p.suffix.lower() in FORMATS:
            return [p]
        return [Path(f"{os.fspath(p)}{ext}") for ext in formats]
    out: list[Path] = []
    for item in spec:
        out.extend(output_paths(item, formats))
    return out


def save_figure(fig: Figure, spec, close: bool = True, formats: Iterable[str] = STEM_FORMATS) -> list[Path]:
    """Save ``fig`` to every path of ``spec`` (:func:`output_paths`; a stem gets one file per suffix of
    ``formats``, PNG and SVG by default, :data:`PAPER_FORMATS` for a PDF too) atomically, then close it unless
    ``close`` is false. PNGs are rendered at :data:`PNG_DPI`; SVG and PDF keep text as text (fonts embedded
    in the PDF) and carry no date, so that regenerating a figure changes its file only if the figure changed.
    Returns the paths written."""
    paths = output_paths(spec, formats)
    try:
        for p in paths:
            fmt = p.suffix.lower().lstrip(".")
            kwargs = {"dpi": PNG_DPI} if fmt == "png" else {}
            if fmt in ("svg", "pdf"):
                kwargs["metadata"] = {"CreationDate": None} if fmt == "pdf" else {"Date": None}
            with atomic_path(p) as tmp, paper_style():
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
    width: float | str = "single",
    formats: Iterable[str] = STEM_FORMATS,
) -> list[Path]:
    """Write the Gantt chart of a replay trace (:func:`timeline_figure`) to ``path_stem_or_paths`` (see
    :func:`output_paths`: PNG, SVG or PDF by suffix; a stem gives one file per suffix of ``formats``, PNG and
    SVG by default) and close it.

    Returns:
        The paths written.
    """
    return save_figure(timeline_figure(trace, title, host=host, width=width), path_stem_or_paths, formats=formats)


def timeline_figure(trace: pd.DataFrame, title: str = "", *, host: str | None = None,
                    width: float | str = "single") -> Figure:
    """Gantt chart of a replay trace, as a Figure (left open: save it, show it, or ``plt.close`` it).

    One group of rows per device/link (host first, then accelerators, then links); a group has one row
    (*lane*) per set of non-overlapping ops, from the same greedy lane assignment as the Chrome trace
    (:func:`hetsim.analysis.lanes.assign_lanes`), so parallel CIM ops or transfers never hide each other. Bars
    are coloured by category: whole-op compute, CIM ``load``/``mvm``/``store`` phases, transfer, and the part of
    a channel-split op (a row with a ``channels`` value, as in ODiMO Fig. 6's timeline of both DIANA
    accelerators); every other op on a lane is slightly lighter, so that back-to-back ops stay
    distinguishable. Rows are labelled with the device (or link) name and, for a device drawn on several lanes,
    their count ("cim, 4 lanes": it ran up to 4 ops at once - crossbar groups, CPU cores, parallel transfers).
    The legend names every category present, the lighter alternate shade, the lanes (when a device has more
    than one) and the makespan (dashed line). The x axis is time, from 0 to the makespan, in ms, or in us when
    the makespan is below 1 ms.
    Bars are drawn with one ``broken_barh`` collection per (lane, category), so thousands of ops stay fast.

    Args:
        trace: :class:`~hetsim.sim.engine.SimResult` trace (times in seconds).
        title: figure title.
        host: host device name (sorted first); guessed when omitted.
        width: inches, ``"single"`` (3.5 in, default) or ``"double"`` (7.2 in); the height follows the rows.
    """
    with paper_style():
        return _timeline_figure(trace, title, host, figure_width(width))


def _timeline_figure(trace: pd.DataFrame, title: str, host: str | None, fig_w: float) -> Figure:
    tr = trace.reset_index(drop=True)
    phases = tr["phase"].fillna("").astype(str) if len(tr) else pd.Series([], dtype=str)
    cats = [_category(str(k), p) for k, p in zip(tr["kind"], phases, strict=True)]
    if "channels" in tr.columns:  # parts of channel-split ops (ODiMO) get their own colour
        cats = ["split" if pd.notna(n) else c for c, n in zip(cats, tr["channels"], strict=True)]
    lanes = assign_lanes(tr)
    n_lanes = lane_counts(tr, lanes)
    order = device_order(tr, host)
    notes = []
    folded = sorted(d for d, n in n_lanes.items() if n > TIMELINE_MAX_LANES)
    if folded:  # bounded height: the lanes past the last row share it
        lanes = lanes.clip(upper=TIMELINE_MAX_LANES - 1)
        notes.append(f"{', '.join(folded)}: lanes {TIMELINE_MAX_LANES + 1}+ drawn on lane {TIMELINE_MAX_LANES}")
    merged = len(tr) > TIMELINE_MAX_BARS
    if merged:
        notes.append(f"{len(tr):,} trace rows drawn as busy spans\n(gaps under {TIMELINE_MERGE_FRACTION:.1%} "
                     "of the makespan merged)")

    # Row layout, top to bottom: each device's lanes, then a gap.
    gap = 0.7
    row_y: dict[tuple[str, int], float] = {}
    groups: list[tuple[str, float, float]] = []  # (device, y_top, y_bottom)
    y = 0.0
    for d in order:
        top = y
        for lane in range(min(n_lanes[d], TIMELINE_MAX_LANES)):
            row_y[(d, lane)] = y + 0.5
            y += 1.0
        groups.append((d, top, y))
        y += gap
    total_h = max(y - gap, 1.0)

    n_rows = sum(min(n, TIMELINE_MAX_LANES) for n in n_lanes.values())
    height = min(1.25 + (0.15 if title else 0.0) + 0.13 * n_rows + 0.09 * len(order), 9.0)
    fig, ax = plt.subplots(figsize=(fig_w, height), layout="constrained")

    makespan_s = float(tr["end_s"].max()) if len(tr) else 0.0
    unit, to_unit = ("ms", 1e3) if makespan_s >= 1e-3 or makespan_s == 0 else ("µs", 1e6)
    makespan_ms = makespan_s * to_unit  # in ``unit``
    extra = iter(_EXTRA_COLOURS)
    colours = dict(TIMELINE_COLOURS)
    present: list[str] = []
    if len(tr):
        df = pd.DataFrame({
            "device": tr["device"].astype(str), "lane": lanes, "cat": cats,
            "x": tr["start_s"] * to_unit, "w": (tr["end_s"] - tr["start_s"]) * to_unit,
        })
        for cat in dict.fromkeys(cats):
            if cat not in colours:
                colours[cat] = next(extra, "#333333")
        # Alternate a lighter shade between consecutive ops of a lane, so back-to-back ops stay apart.
        if merged:
            df["shade"] = 0
        else:
            op_rank = df.assign(op=tr["op"].astype(str)).groupby(["device", "lane"], sort=False)["op"].transform(
                lambda ops: pd.factorize(ops)[0])
            df["shade"] = op_rank % 2
        if merged:
            df = _merge_bars(df, TIMELINE_MERGE_FRACTION * makespan_ms)
        # CIM load/store phases last a few microseconds of a millisecond-long run: at paper width they would be
        # below a pixel. They are drawn at least MIN_PHASE_PT wide, on top of the MVM phase they border.
        thin = df["cat"].isin(THIN_PHASES)
        w_min = (makespan_ms or 1.0) * MIN_PHASE_PT / (fig_w * 72 * 0.85)
        df.loc[thin, "w"] = df.loc[thin, "w"].clip(lower=w_min)
        for (d, lane, cat, shade), grp in df.groupby(["device", "lane", "cat", "shade"], sort=False):
            c = colours[cat] if shade == 0 else _lighten(colours[cat], ALT_SHADE)
            ax.broken_barh(list(zip(grp["x"], grp["w"], strict=True)), (row_y[(d, lane)] - 0.4, 0.8),
                           facecolors=c, edgecolors=c, linewidth=0.2, zorder=2.5 if cat in THIN_PHASES else 2)
        present = [c for c in colours if c in set(cats)]

    # Device groups: alternating background bands, labels at the group centre, lane numbers on the right.
    ticks, labels = [], []
    for i, (d, top, bottom) in enumerate(groups):
        if i % 2 == 0:
            ax.axhspan(top - gap / 2, bottom + gap / 2, color="#f2f2f2", zorder=0, linewidth=0)
        ticks.append((top + bottom) / 2)
        n = n_lanes[d]
        labels.append(d if n == 1 else f"{d}\n{n} lanes")
    ax.set_yticks(ticks, labels)
    ax.tick_params(axis="y", length=0)
    ax.set_ylim(total_h + gap / 2, -gap / 2)

    ax.set_xlim(0, makespan_ms * 1.005 if makespan_ms > 0 else 1.0)
    ax.set_xlabel("\n".join([f"time ({unit})", *notes]))
    ax.grid(axis="x", color="#d0d0d0", linewidth=0.4)
    ax.set_axisbelow(True)
    if makespan_ms > 0:
        ax.axvline(makespan_ms, color="black", linestyle="--", linewidth=0.7)
        ax.annotate(f"makespan {format_si(makespan_s, 's')}", xy=(makespan_ms, 1),
                    xycoords=("data", "axes fraction"), xytext=(0, 2), textcoords="offset points", ha="right",
                    va="bottom")
    if title:
        ax.set_title(wrap_title(title, fig_w, plt.rcParams["axes.titlesize"]), pad=9 if makespan_ms > 0 else None)
    handles, names = timeline_legend(present, colours, multi_lane=any(n > 1 for n in n_lanes.values()),
                                     makespan=makespan_ms > 0, shades=not merged)
    if handles:
        fig.legend(handles, names, loc="outside lower center", ncol=2 if fig_w < 5 else 4,
                   handler_map={tuple: HandlerTuple(ndivide=None, pad=0)})
    return fig


def _merge_bars(df: pd.DataFrame, tol: float) -> pd.DataFrame:
    """The bars of ``df`` (columns ``device``, ``lane``, ``cat``, ``shade``, ``x``, ``w``) merged per (device,
    lane, category) into spans: a bar starting at most ``tol`` after the span so far ends joins it."""
    out = []
    for key, grp in df.groupby(["device", "lane", "cat", "shade"], sort=False):
        x = grp["x"].to_numpy(float)
        idx = np.argsort(x, kind="stable")
        x = x[idx]
        end = np.maximum.accumulate(x + grp["w"].to_numpy(float)[idx])
        span = np.concatenate([[0], np.cumsum(x[1:] > end[:-1] + tol)])
        lo = pd.Series(x).groupby(span).min().to_numpy()
        hi = pd.Series(end).groupby(span).max().to_numpy()
        out.append(pd.DataFrame({"device": key[0], "lane": key[1], "cat": key[2], "shade": key[3],
                                 "x": lo, "w": hi - lo}))
    return pd.concat(out, ignore_index=True)


def timeline_legend(present: list[str], colours: dict[str, str], *, multi_lane: bool = False,
                    makespan: bool = True, shades: bool = True) -> tuple[list, list[str]]:
    """Legend ``(handles, labels)`` of a timeline: one entry per category present (the op category's colour),
    one for the lighter shade of alternate ops (a dark/light pair of each category present; unless ``shades``
    is false), one explaining lanes when a device has several, and the makespan line."""
    handles: list = [Patch(facecolor=colours[c], edgecolor="none") for c in present]
    names = [TIMELINE_LABELS.get(c, c) for c in present]
    if present and shades:
        pairs = [Patch(facecolor=_lighten(colours[c], ALT_SHADE * k), edgecolor="none")
                 for c in present for k in (0, 1)]
        handles.append(tuple(pairs[:6]))
        names.append("lighter: next op on the lane")
    if multi_lane:
        handles.append(Patch(facecolor="#f2f2f2", edgecolor="#b0b0b0", linewidth=0.4))
        names.append("n lanes: up to n ops at once")
    if makespan:
        handles.append(Line2D([], [], color="black", linestyle="--", linewidth=0.7))
        names.append("makespan")
    return handles, names


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
    *,
    width: float | str = "single",
    formats: Iterable[str] = STEM_FORMATS,
) -> list[Path]:
    """Write the latency share per device of several configurations (:func:`breakdown_figure`) to ``path``
    (see :func:`output_paths`) and close it.

    Returns:
        The paths written.

    Raises:
        ValueError: a required column is missing.
    """
    return save_figure(breakdown_figure(table, title, width=width), path, formats=formats)


def _makespans(tab: pd.DataFrame) -> dict[str, float]:
    """Makespan (s) per config: a ``makespan_s`` column, else derived from ``device_table``'s ``utilisation``
    (= busy / (units * makespan)) of the config's most utilised device; configs with neither are left out."""
    out: dict[str, float] = {}
    for cfg, rows in tab.groupby("config", sort=False):
        if "makespan_s" in rows.columns and rows["makespan_s"].notna().any():
            out[str(cfg)] = float(pd.to_numeric(rows["makespan_s"]).dropna().iloc[0])
        elif {"utilisation", "units"} <= set(rows.columns):
            u = pd.to_numeric(rows["utilisation"], errors="coerce")
            ok = u > 0
            if ok.any():
                i = u[ok].idxmax()
                out[str(cfg)] = float(rows.at[i, "busy_s"]) / (float(rows.at[i, "units"]) * float(u[i]))
    return out


def breakdown_label(busy_s: float, makespan_s: float | None = None, digits: int = 4) -> str:
    """The text beside a breakdown bar: the summed busy time, and the makespan when known, each with
    ``digits`` significant digits and an SI prefix (``"busy 94.80 ms\nmakespan 92.17 ms"``)."""
    text = f"busy {format_si(busy_s, 's', digits)}"
    if makespan_s is not None:
        text += f"\nmakespan {format_si(makespan_s, 's', digits)}"
    return text


def breakdown_figure(table: pd.DataFrame, title: str = "", *, width: float | str = "single") -> Figure:
    """Latency share per device for several configurations (CPU-CIM ILP Fig. 5 style), as a Figure (left open).

    One horizontal stacked bar per configuration (rows in order of first appearance in ``table``); its
    segments are the devices' shares of the configuration's total busy time, in percent (``100 * busy_s /
    sum(busy_s)`` over the configuration's rows), in order of first appearance of the device in ``table``.
    Each segment with ``ops > 0`` is labelled with its count ("N ops", "N transfers" for links): inside the
    segment when wide enough, else above the bar. To the bar's right: its busy time summed over the devices
    (which exceeds the makespan when devices overlap and falls short when they idle) and, separately, the
    configuration's makespan when the table gives it (:func:`breakdown_label`, 4 significant digits). A device
    keeps its colour across configurations (compute devices dark to light in order of appearance, links grey
    when a ``kind`` column marks them as links).

    Args:
        table: long-format rows with columns ``config`` (e.g. ``"all-host"``, ``"greedy"``), ``device``,
            ``busy_s`` (seconds) and ``ops`` (op or transfer count); optional ``kind`` (``device_table``'s),
            ``makespan_s`` (per config; else derived from ``device_table``'s ``units`` and ``utilisation``
            when present).
        title: figure title.
        width: inches, ``"single"`` (3.5 in, default) or ``"double"`` (7.2 in).

    Raises:
        ValueError: a required column is missing.
    """
    with paper_style():
        return _breakdown_figure(table, title, figure_width(width))


def _breakdown_figure(table: pd.DataFrame, title: str, fig_w: float) -> Figure:
    missing = {"config", "device", "busy_s", "ops"} - set(table.columns)
    if missing:
        raise ValueError(f"breakdown table lacks column(s) {sorted(missing)}")
    tab = table.assign(config=table["config"].astype(str), device=table["device"].astype(str))
    configs = list(dict.fromkeys(tab["config"]))
    devices = list(dict.fromkeys(tab["device"]))
    colours = _breakdown_colours(tab, devices)
    links = set(tab.loc[tab["kind"].astype(str) == LINK_KIND, "device"]) if "kind" in tab.columns else set()
    makespans = _makespans(tab)

    fig, ax = plt.subplots(figsize=(fig_w, 0.95 + (0.15 if title else 0.0) + 0.42 * len(configs)),
                           layout="constrained")
    bar_h = 0.5
    narrow_pct = 14.0 if fig_w < 5 else 9.0
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
                    ax.text(left + share / 2, i, label, ha="center", va="center", fontsize=6.5,
                            color=_ink(colours[d]))
                else:  # too narrow: label above the bar, staggered to the right
                    ax.annotate(label, xy=(left + share / 2, i - bar_h / 2), xytext=(3 + 40 * n_narrow, 5),
                                textcoords="offset points", ha="left", va="bottom", fontsize=6,
                                arrowprops={"arrowstyle": "-", "color": "#555555", "linewidth": 0.5})
                    n_narrow += 1
            left += share
        ax.annotate(breakdown_label(total, makespans.get(cfg)), xy=(100, i), xytext=(4, 0),
                    textcoords="offset points", ha="left", va="center", fontsize=6, annotation_clip=False)

    ax.set_yticks(range(len(configs)), configs)
    ax.set_ylim(len(configs) - 0.4, -0.75)
    ax.set_xlim(0, 100)
    ax.set_xlabel("share of summed busy time (%)")
    ax.grid(axis="x", color="#d0d0d0", linewidth=0.4)
    ax.set_axisbelow(True)
    if title:
        ax.set_title(wrap_title(title, fig_w, plt.rcParams["axes.titlesize"]))
    handles = [Patch(facecolor=colours[d], label=d) for d in devices]
    fig.legend(handles=handles, loc="outside lower center", ncol=min(len(handles), 4))
    return fig
