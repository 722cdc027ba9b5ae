"""A figure of any sweep's results table: a metric against the swept axes the user names, every other axis a
facet or named on the figure with how it was aggregated.

A sweep's *axes* are the columns it varies (:func:`sweep_axes`): workload, platform, mapper (and an SNN
sweep's mode, reorder and synthetic arguments) and every swept parameter (a dotted platform path such as
``devices.cim.crossbars`` or ``links.bus.bandwidth_gb_s``), each with more than one value in the table. A
figure gives each axis a role (:func:`sweep_layout`):

* ``x``: the horizontal axis; with ``y`` as well the figure is a heatmap (one cell per x, y pair, coloured
  and labelled with the metric), else a line chart of the metric against x, one line per value of ``hue``;
* ``col`` / ``row``: small multiples, one panel per value;
* every axis left is *aggregated* with ``agg`` (mean, median, min or max) and the figure says so under its
  title ("mean over mapper: greedy, heft"): the figure never silently shows the best of what it does not
  draw. Axes with one value are named there too ("platform puma-arm").

Defaults (any role may be given, the rest are filled in): ``metric`` ``speedup`` (else ``makespan_s``);
``x`` the swept parameter with the most numeric values (else the axis with the most values); ``col`` the
workload; ``hue`` the next swept parameter, else the mapper; ``row`` the next axis. Units come from the
column names (:mod:`hetsim.report.units`): a metric in seconds or joules is drawn in one SI prefix
(``makespan (ms)``), a swept parameter in its own unit (``bus bandwidth (GB/s)``). A numeric axis spanning
a factor of 8 or more with positive values is drawn on a log scale with a tick at every swept value.

:func:`sweep_figure` returns the Figure (left open: a notebook shows it inline); :func:`plot_sweep` writes it
(PNG and SVG, atomically, :func:`hetsim.analysis.plots.save_figure`) and closes it. ``hetsim plot RESULTS.csv
-o DIR --x COL --hue COL ...`` draws it from the command line.
"""

from __future__ import annotations

import math
import re
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.colors import LogNorm, Normalize
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullFormatter, NullLocator

from hetsim.analysis.plots import STEM_FORMATS, figure_width, paper_style, save_figure
from hetsim.errors import InputError
from hetsim.report.units import axis_label, field_unit, rescalable, si_prefix, value_text

#: columns that identify a point besides the swept parameters (ONNX and SNN sweeps), in the order defaults
#: prefer them; dotted columns (platform paths) are the swept parameters
ID_COLUMNS = ("workload", "platform", "mapper", "mode", "reorder", "layers", "timesteps", "density", "clustering",
              "seed", "samples", "beta", "threshold", "shuffle", "group_size", "contention", "mapper_options",
              "fold_constants")
#: the settings columns among them: named on a figure only when they vary
SETTINGS = frozenset({"contention", "mapper_options", "fold_constants"})
AGGREGATES = ("mean", "median", "min", "max")
ROLES = ("x", "y", "hue", "col", "row")
MAX_PANELS = 36
"""Most panels (rows x columns) a figure draws; more is refused (a facet with that many values is better an
x axis or a filter)."""
MAX_HUES = 10
LOG_RATIO = 5.0
"""A positive metric spanning this factor or more is drawn on a log scale (the y axis, a heatmap's colours)."""


def _ok(df: pd.DataFrame) -> pd.DataFrame:
    """The rows that ran: no ``error`` text."""
    if "error" not in df.columns:
        return df
    err = df["error"]
    return df[err.isna() | (err.astype(str).str.strip() == "")]


def sweep_axes(df: pd.DataFrame) -> list[str]:
    """The columns of a results table that identify a point (:data:`ID_COLUMNS` and the swept parameters,
    dotted names, in table order), whether they vary or not."""
    ids = [c for c in ID_COLUMNS if c in df.columns]
    params = [c for c in df.columns if "." in str(c) and c not in ids]
    return [*params, *ids]


def _nunique(s: pd.Series) -> int:
    return int(s.nunique(dropna=False))


def _numeric(s: pd.Series) -> bool:
    return bool(pd.to_numeric(s, errors="coerce").notna().all()) and not pd.api.types.is_bool_dtype(s)


@dataclass
class SweepLayout:
    """Which axis each role of a figure draws (:func:`sweep_layout`). ``aggregated``: the varying axes no
    role draws, combined with ``agg``; ``fixed``: the axes with one value, ``{column: value}``."""

    metric: str
    x: str
    y: str | None = None
    hue: str | None = None
    col: str | None = None
    row: str | None = None
    agg: str = "mean"
    aggregated: list[str] = field(default_factory=list)
    fixed: dict[str, object] = field(default_factory=dict)

    def drawn(self) -> list[str]:
        """The axes a role draws, in :data:`ROLES` order."""
        return [a for a in (self.x, self.y, self.hue, self.col, self.row) if a is not None]


def resolve_column(df: pd.DataFrame, role: str, col: str | None) -> str | None:
    """``col`` as a column of ``df``: as given, or the one dotted column whose last part it is (``crossbars``
    -> ``devices.cim.crossbars``, ``bandwidth_gb_s`` -> ``links.bus.bandwidth_gb_s``).

    Raises:
        InputError: no such column (with the closest name, and the table's axes), or a short name that fits
            several.
    """
    if col is None or col in df.columns:
        return col
    tails = [str(c) for c in df.columns if str(c).endswith("." + col)]
    if len(tails) == 1:
        return tails[0]
    if len(tails) > 1:
        raise InputError(f"--{role} {col!r} fits {', '.join(tails)}: give the full name")
    from difflib import get_close_matches

    names = [str(c) for c in df.columns] + [str(c).rsplit(".", 1)[-1] for c in df.columns if "." in str(c)]
    near = get_close_matches(col, names, n=1, cutoff=0.5)
    hint = f" (did you mean {near[0]!r}?)" if near else ""
    raise InputError(f"--{role} {col!r}: no such column in the results table{hint}; axes: "
                     f"{', '.join(sweep_axes(df)) or '-'}")


def _default_metric(df: pd.DataFrame) -> str:
    for m in ("speedup", "makespan_s", "latency_ms"):
        if m in df.columns and pd.to_numeric(df[m], errors="coerce").notna().any():
            return m
    raise InputError("the results table has no speedup or makespan_s column: pick a metric with --metric")


def sweep_layout(df: pd.DataFrame, metric: str | None = None, *, x: str | None = None, y: str | None = None,
                 hue: str | None = None, col: str | None = None, row: str | None = None,
                 agg: str = "mean", over: Iterable[str] = ()) -> SweepLayout:
    """The roles of a figure of ``df`` (module docstring): the given ones checked, the others filled in from
    the varying axes; every varying axis is drawn or listed in ``aggregated``. ``over``: axes to aggregate
    rather than draw (no default role is given them).

    Raises:
        InputError: an unknown column, an axis given two roles, a non-numeric metric, both ``y`` and ``hue``,
            an unknown ``agg``, a table without a row that ran.
    """
    x, y, hue, col, row = (resolve_column(df, r, c) for r, c in zip(ROLES, (x, y, hue, col, row), strict=True))
    given = {"x": x, "y": y, "hue": hue, "col": col, "row": row}
    metric = resolve_column(df, "metric", metric)
    over = [resolve_column(df, "over", c) for c in over]
    if agg not in AGGREGATES:
        raise InputError(f"--agg {agg!r}: one of {', '.join(AGGREGATES)}")
    if y is not None and hue is not None:
        raise InputError("--y draws a heatmap (the metric as colour): give --hue only for a line chart")
    named = [c for c in given.values() if c is not None] + over
    dup = sorted({c for c in named if named.count(c) > 1})
    if dup:
        raise InputError(f"column {dup[0]!r} is given two roles")
    d = _ok(df)
    if d.empty:
        raise InputError("no point of the results table ran without an error")
    metric = metric or _default_metric(d)
    if not pd.to_numeric(d[metric], errors="coerce").notna().any():
        raise InputError(f"--metric {metric!r}: not a numeric column of the points that ran")
    axes = [a for a in sweep_axes(d) if a != metric]
    varying = [a for a in axes if _nunique(d[a]) > 1]
    free = [a for a in varying if a not in named]
    pinned = [a for a in over if a in varying]  # aggregated on request
    params = [a for a in free if "." in a]

    def take(cands: Iterable[str]) -> str | None:
        for c in cands:
            if c in free:
                free.remove(c)
                return c
        return None

    if x is None:
        numeric = sorted((a for a in params if _numeric(d[a])), key=lambda a: -_nunique(d[a]))
        x = take(numeric) or take(sorted(free, key=lambda a: -_nunique(d[a])))
        if x is None:  # nothing varies: one point per panel, drawn against its first axis
            x = next((a for a in axes if a not in named), None)
            if x is None:
                raise InputError("the results table has no axis to draw the metric against")
    if col is None and "workload" in free:
        col = take(["workload"])
    if y is None and hue is None:
        hue = take([a for a in free if "." in a and _nunique(d[a]) <= MAX_HUES]) or take(
            [a for a in ("mapper", *free) if _nunique(d[a]) <= MAX_HUES])
    if col is None:
        col = take(["platform", *free])
    if row is None:
        row = take(list(free))
    fixed = {a: d[a].iloc[0] for a in axes if _nunique(d[a]) == 1 and a not in (x, y, hue, col, row)
             and a not in SETTINGS and not pd.isna(d[a].iloc[0])}
    drawn = [a for a in (x, y, hue, col, row) if a is not None]
    # an axis the drawn ones determine (mapper_options set per mapper) combines nothing: it is not "aggregated"
    free = [a for a in free if not _determined(d, drawn, a)]
    return SweepLayout(metric=metric, x=x, y=y, hue=hue, col=col, row=row, agg=agg, aggregated=[*pinned, *free],
                       fixed=fixed)


def _determined(d: pd.DataFrame, drawn: list[str], a: str) -> bool:
    """Whether axis ``a`` has one value (missing counted as one) within each combination of the ``drawn`` axes."""
    if not drawn:
        return False
    key = d[a].astype(str).where(d[a].notna(), "")
    return bool((key.groupby([d[c].astype(str) for c in drawn], sort=False).nunique() <= 1).all())


#: a sweep point's mapper ``status`` when it stopped at a limit, not proven optimal (drawn with an open marker)
LIMITED = frozenset({"time_limit", "work_limit"})


def _values(d: pd.DataFrame, a: str | None) -> list:
    """The distinct values of axis ``a`` in ``d``: numbers sorted, texts in first-appearance order."""
    if a is None:
        return [None]
    s = d[a]
    vals = list(dict.fromkeys(s.tolist()))
    if _numeric(s):
        return sorted(vals, key=float)
    return vals


def _match(d: pd.DataFrame, a: str | None, v) -> pd.Series:
    if a is None:
        return pd.Series(True, index=d.index)
    if isinstance(v, float) and math.isnan(v):
        return d[a].isna()
    return d[a] == v


def _agg_note(lay: SweepLayout, d: pd.DataFrame) -> str:
    """The line under the title: how the undrawn axes were combined and the axes with one value."""
    parts = []
    if lay.aggregated:
        over = "; ".join(f"{a}: {', '.join('none' if pd.isna(v) else value_text(a, v) for v in _values(d, a))}"
                         for a in lay.aggregated)
        parts.append(f"{lay.agg} over {over}")
    if lay.fixed:
        parts.append(", ".join(f"{axis_label(a)} {value_text(a, v)}" for a, v in lay.fixed.items()))
    return "; ".join(parts)


def _metric_scale(lay: SweepLayout, vals: pd.Series) -> tuple[float, str]:
    """Divide the metric by ``scale`` to draw it; its label."""
    fu = field_unit(lay.metric)
    if rescalable(fu.unit):
        scale, sym = si_prefix(vals)
        return scale, axis_label(lay.metric, sym + fu.unit.symbol)
    return 1.0, axis_label(lay.metric)


def _log_spaced(vals: Sequence) -> bool:
    try:
        v = [float(x) for x in vals]
    except (TypeError, ValueError):
        return False
    return len(v) >= 3 and min(v) > 0 and max(v) / min(v) >= 8


def _quantity(name: str) -> str:
    """A column's label without its unit (``makespan``, ``bus bandwidth``)."""
    return axis_label(name).split(" (")[0]


def _points(frame: pd.DataFrame) -> str:
    """How many rows each drawn value combines: ``4`` or ``2-4``."""
    lo, hi = int(frame["points"].min()), int(frame["points"].max())
    return f"{lo}" if lo == hi else f"{lo}-{hi}"


def _num(v: float) -> str:
    """A value in a heatmap cell: 3 significant digits, trailing zeros kept (``1.30``, ``14.5``)."""
    return f"{v:#.3g}".rstrip(".") if abs(v) < 1e5 else f"{v:.2e}"


def _bare(name: str, v) -> str:
    """A value without its unit (the legend's title has it)."""
    return value_text(name, v).split(" ")[0] if _numeric(pd.Series([v])) else value_text(name, v)


def _set_value_ticks(ax, axis: str, vals: Sequence, name: str) -> None:
    """A log scale with a tick at every swept value (``{v:g}``), no minor labels."""
    getattr(ax, f"set_{axis}scale")("log")
    a = getattr(ax, f"{axis}axis")
    a.set_major_locator(FixedLocator([float(v) for v in vals]))
    a.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    a.set_minor_locator(NullLocator())
    a.set_minor_formatter(NullFormatter())


def sweep_frame(df: pd.DataFrame, lay: SweepLayout) -> pd.DataFrame:
    """The values a figure draws: one row per combination of the drawn axes, the metric combined over the
    aggregated ones with ``lay.agg`` (columns: the drawn axes, ``value``, ``points`` = rows combined)."""
    d = _ok(df).copy()
    d["_metric"] = pd.to_numeric(d[lay.metric], errors="coerce")
    d = d[d["_metric"].notna()]
    keys = lay.drawn()
    g = d.groupby(keys, dropna=False, sort=False)["_metric"]
    out = g.agg(lay.agg).rename("value").to_frame()
    out["points"] = g.size()
    limited = d["status"].isin(LIMITED) if "status" in d.columns else pd.Series(False, index=d.index)
    out["limited"] = limited.groupby([d[k] for k in keys], dropna=False, sort=False).any()
    return out.reset_index()


def sweep_figure(df: pd.DataFrame, metric: str | None = None, *, x: str | None = None, y: str | None = None,
                 hue: str | None = None, col: str | None = None, row: str | None = None, agg: str = "mean",
                 over: Iterable[str] = (), where: Mapping[str, object] | None = None, title: str | None = None,
                 width: float | str = "double") -> Figure:
    """A figure of ``metric`` against the sweep's axes (module docstring); ``where`` keeps only the rows with
    these values first (``{"mapper": "heft"}``; a value compared as text when the column is text). Default
    width: both columns of a paper (7.2 in).

    Raises:
        InputError: bad roles (:func:`sweep_layout`), a ``where`` that matches no row, more than
            :data:`MAX_PANELS` panels.
    """
    df = filter_rows(df, where or {})
    lay = sweep_layout(df, metric, x=x, y=y, hue=hue, col=col, row=row, agg=agg, over=over)
    with paper_style():
        return _draw(df, lay, title, figure_width(width))


def filter_rows(df: pd.DataFrame, where: Mapping[str, object]) -> pd.DataFrame:
    """The rows of ``df`` whose column ``c`` equals ``v`` for every ``c: v`` of ``where`` (numbers compared as
    numbers, so ``"100"`` matches 100.0).

    Raises:
        InputError: an unknown column, or no row left (the message lists the column's values).
    """
    for c, v in where.items():
        c = resolve_column(df, "where", c)
        s = df[c]
        try:
            keep = pd.to_numeric(s, errors="raise") == float(v)
        except (TypeError, ValueError):
            keep = s.astype(str) == str(v)
        if not keep.any():
            have = ", ".join(value_text(c, x) for x in dict.fromkeys(s.dropna().tolist()))
            raise InputError(f"--where {c}={v}: no row has it; {c} is one of {have}")
        df = df[keep]
    return df


def _grid(lay: SweepLayout, d: pd.DataFrame, fig_w: float, heat: bool):
    rows, cols = _values(d, lay.row), _values(d, lay.col)
    if len(rows) * len(cols) > MAX_PANELS:
        raise InputError(f"{len(rows)} x {len(cols)} panels ({lay.row} x {lay.col}): more than {MAX_PANELS}; give "
                         "--where COL=VALUE to draw a slice, or fewer facets")
    panel_w = fig_w / len(cols)
    panel_h = min(max(panel_w * (0.7 if not heat else 0.6), 1.3), 2.0)
    sharey = not heat
    fig, axes = plt.subplots(len(rows), len(cols), figsize=(fig_w, panel_h * len(rows) + 0.9), squeeze=False,
                             sharex=not heat, sharey=sharey, layout="constrained")
    return fig, axes, rows, cols


def _panel_title(lay: SweepLayout, r, c) -> str:
    bits = [f"{value_text(a, v)}" if a == "workload" else f"{axis_label(a)} {value_text(a, v)}"
            for a, v in ((lay.col, c), (lay.row, r)) if a is not None]
    return "\n".join(bits)


def _draw(df: pd.DataFrame, lay: SweepLayout, title: str | None, fig_w: float) -> Figure:
    d = _ok(df)
    frame = sweep_frame(df, lay)
    scale, mlabel = _metric_scale(lay, frame["value"])
    frame["value"] = frame["value"] / scale
    heat = lay.y is not None
    fig, axes, rows, cols = _grid(lay, d, fig_w, heat)
    xs = _values(d, lay.x)
    numeric_x = _numeric(d[lay.x])
    logx = numeric_x and _log_spaced(xs)
    hues = _values(d, lay.hue)
    colours = plt.cm.viridis(np.linspace(0.0, 0.85, max(len(hues), 1))) if len(hues) > 1 else ["#2f4b7c"]
    v = frame["value"].to_numpy(dtype=float)
    v = v[np.isfinite(v)]
    log_y = not heat and len(v) > 0 and v.min() > 0 and v.max() / v.min() >= LOG_RATIO
    norm = None
    if heat:
        lo, hi = (float(v.min()), float(v.max())) if len(v) else (0.0, 1.0)
        norm = (LogNorm(lo, max(hi, lo * 1.01)) if lo > 0 and hi / lo >= LOG_RATIO
                else Normalize(lo, hi if hi > lo else lo + 1))
    im = None
    for i, r in enumerate(rows):
        for j, c in enumerate(cols):
            ax = axes[i][j]
            sub = frame[_match(frame, lay.row, r) & _match(frame, lay.col, c)]
            if heat:
                im = _heat_panel(ax, sub, lay, xs, _values(d, lay.y), norm, fig_w) or im
                if j == 0:
                    ax.set_ylabel(axis_label(lay.y))
            else:
                _line_panel(ax, sub, lay, xs, hues, colours, numeric_x, logx, log_y)
                if j == 0:
                    ax.set_ylabel(mlabel + (", log" if log_y else ""))
            if i == len(rows) - 1:
                ax.set_xlabel(axis_label(lay.x))
            t = _panel_title(lay, r, c)
            if t:
                ax.set_title(t, fontsize=6.5)
    if heat and im is not None:
        log_c = isinstance(norm, LogNorm)
        cb = fig.colorbar(im, ax=axes.ravel().tolist(), label=mlabel + (", log" if log_c else ""), shrink=0.9,
                          aspect=25, pad=0.02)
        if log_c:
            cb.ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
            cb.ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            cb.ax.yaxis.set_minor_formatter(NullFormatter())
    if lay.hue is not None and len(hues) > 1:
        handles = [plt.Line2D([], [], color=colours[k], marker="o", ms=2.5) for k in range(len(hues))]
        fig.legend(handles, [_bare(lay.hue, h) for h in hues], title=axis_label(lay.hue),
                   loc="outside right center")
    head = title or (f"{_quantity(lay.metric)} vs {_quantity(lay.x)}" + (f" and {_quantity(lay.y)}" if heat else "")
                     + (f" ({lay.agg} of {_points(frame)} points per value)" if lay.aggregated else ""))
    note = _agg_note(lay, d)
    if frame["limited"].any() and not heat:
        note += ("; " if note else "") + (f"ringed: {int(frame['limited'].sum())} of {len(frame)} drawn values "
                                          "include a point stopped at its time or work limit (not proven optimal)")
    n_failed = len(df) - len(d)
    if n_failed:
        note += ("; " if note else "") + f"{n_failed} failed point{'s' if n_failed > 1 else ''} not drawn"
    width_chars = max(40, int(fig_w * 72 / 3.6))
    fig.suptitle(head + ("\n" + "\n".join(textwrap.wrap(note, width_chars)) if note else ""), fontsize=7.0)
    return fig


def _line_panel(ax, sub: pd.DataFrame, lay: SweepLayout, xs: list, hues: list, colours, numeric_x: bool,
                logx: bool, log_y: bool) -> None:
    pos = {v: (float(v) if numeric_x else k) for k, v in enumerate(xs)}
    for k, h in enumerate(hues):
        line = sub[_match(sub, lay.hue, h)]
        pts = sorted(((pos[v], val, lim) for v, val, lim in zip(line[lay.x], line["value"], line["limited"],
                                                                    strict=True) if v in pos), key=lambda p: p[0])
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=2.5, color=colours[k])
            cut = [p for p in pts if p[2]]
            if cut:  # stopped at a time or work limit: an open ring over the point
                ax.plot([p[0] for p in cut], [p[1] for p in cut], ls="none", marker="o", ms=5, mfc="none",
                        mec=colours[k], mew=0.8)
    if lay.metric == "speedup":
        ax.axhline(1.0, color="grey", lw=0.6, ls=":")
    if log_y:
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
    if logx:
        _set_value_ticks(ax, "x", xs, lay.x)
    elif numeric_x:
        ax.set_xticks([float(v) for v in xs], [f"{float(v):g}" for v in xs])
    else:
        ax.set_xticks(range(len(xs)), [value_text(lay.x, v) for v in xs])
    labels = [t.get_text() for t in ax.get_xticklabels()]
    width_in = ax.get_position().width * ax.figure.get_figwidth()
    ax.margins(x=0.08)
    if (max(map(len, labels), default=0) + 3) * len(labels) * 6.5 * 0.55 / 72 > width_in:  # too wide: slant
        ax.tick_params(axis="x", labelrotation=35)
        for t in ax.get_xticklabels():
            t.set_horizontalalignment("right")
    ax.grid(color="#e0e0e0", linewidth=0.4)


def _heat_panel(ax, sub: pd.DataFrame, lay: SweepLayout, xs: list, ys: list, norm, fig_w: float):
    grid = np.full((len(ys), len(xs)), np.nan)
    xi = {v: k for k, v in enumerate(xs)}
    yi = {v: k for k, v in enumerate(ys)}
    for xv, yv, val in zip(sub[lay.x], sub[lay.y], sub["value"], strict=True):
        if xv in xi and yv in yi:
            grid[yi[yv], xi[xv]] = val
    if not np.isfinite(grid).any():
        ax.set_axis_off()
        return None
    im = ax.imshow(grid, cmap="viridis", norm=norm, aspect="auto", origin="lower")
    ax.set_xticks(range(len(xs)), [value_text(lay.x, v).split(" ")[0] if _numeric(pd.Series(xs)) else
                                   value_text(lay.x, v) for v in xs])
    ax.set_yticks(range(len(ys)), [value_text(lay.y, v).split(" ")[0] if _numeric(pd.Series(ys)) else
                                   value_text(lay.y, v) for v in ys])
    ax.tick_params(length=0)
    for side in ("top", "right"):
        ax.spines[side].set_visible(True)
    size = 5.5 if fig_w / max(len(xs), 1) > 0.35 else 4.5
    for (i, j), v in np.ndenumerate(grid):
        if np.isfinite(v):
            ax.text(j, i, _num(v), ha="center", va="center", fontsize=size,
                    color="white" if norm(v) < 0.6 else "black")
    return im


def sweep_stem(lay: SweepLayout) -> str:
    """The file stem of a figure: ``sweep_<metric>_by_<x>[_<y>]`` (the last part of a dotted name, unit
    suffix kept; other characters made safe)."""
    def short(c: str) -> str:
        return re.sub(r"[^A-Za-z0-9_]+", "-", c.rsplit(".", 1)[-1])

    return "sweep_" + short(lay.metric) + "_by_" + short(lay.x) + (f"_{short(lay.y)}" if lay.y else "")


def plot_sweep(df: pd.DataFrame, stem, metric: str | None = None, *, formats: Iterable[str] = STEM_FORMATS,
               **kwargs) -> list:
    """Write :func:`sweep_figure` (same keyword arguments) to ``stem``; returns the paths written."""
    return save_figure(sweep_figure(df, metric, **kwargs), stem, formats=formats)
