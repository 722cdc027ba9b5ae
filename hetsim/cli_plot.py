"""``hetsim plot``: figures of a sweep's results table and its ``report.html``.

Without figure options it draws the presets a table fits - the CPU-CIM ILP paper's Fig. 3-5
(:mod:`hetsim.report.dse_plots`) when the table sweeps only workloads, hosts, crossbars and MVM latency, the
SNN speed-up vs spike density for an SNN sweep - and, for every ONNX sweep, the default figure of
:mod:`hetsim.report.sweep_figure` (the metric against the swept axes, every axis drawn or named). With
``--x``/``--y``/``--hue``/``--col``/``--row``/``--metric``/``--over`` it draws that one figure.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from hetsim.errors import InputError

FIGURE_OPTIONS = ("x", "y", "hue", "col", "row", "metric", "over")


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``hetsim plot`` (besides ``--debug``)."""
    p.add_argument("results", type=Path, help="results CSV")
    p.add_argument("-o", "--out", type=Path, required=True, help="folder for the figures")
    p.add_argument("--t-mvm", type=float, default=None, help="MVM latency (ns) of Fig. 4 (default: the smallest)")
    g = p.add_argument_group(
        "any sweep (columns by name, e.g. devices.cim.crossbars, links.bus.bandwidth_gb_s, mapper, workload)",
        "Draw the metric against the named axes; axes not named get defaults (x: the swept parameter with "
        "the most values; panels: workload, then the rest; lines: the next parameter or the mapper), and any "
        "axis left over is aggregated with --agg and named on the figure.")
    g.add_argument("--metric", metavar="COL", help="the value drawn (default: speedup)")
    g.add_argument("--x", metavar="COL", help="horizontal axis")
    g.add_argument("--y", metavar="COL", help="vertical axis of a heatmap (the metric as colour, each cell labelled)")
    g.add_argument("--hue", metavar="COL", help="one line per value (line chart)")
    g.add_argument("--col", metavar="COL", help="one panel column per value")
    g.add_argument("--row", metavar="COL", help="one panel row per value")
    g.add_argument("--over", metavar="COL", action="append", default=[],
                   help="aggregate this axis instead of drawing it (repeatable)")
    g.add_argument("--agg", choices=["mean", "median", "min", "max"], default="mean",
                   help="how the aggregated axes are combined (default: mean; named on the figure)")
    g.add_argument("--where", metavar="COL=VALUE", action="append", default=[],
                   help="keep only the rows with this value (repeatable), e.g. --where mapper=heft; applies to "
                   "the presets too")
    p.add_argument("--force", action="store_true", help="replace existing figures")


def _where(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        col, sep, val = item.partition("=")
        if not sep or not col.strip():
            raise InputError(f"--where {item!r}: expected COL=VALUE")
        out[col.strip()] = val.strip()
    return out


def _cpu_cim_preset_fits(df) -> tuple[bool, list[str]]:
    """Whether Fig. 3-5 draw ``df`` without hiding an axis; the axes that stop them."""
    from hetsim.report.dse_plots import CROSSBARS, T_MVM
    from hetsim.report.sweep_figure import _ok, sweep_axes

    if "workload" not in df.columns or CROSSBARS not in df.columns or T_MVM not in df.columns:
        return False, []
    d = _ok(df)
    extra = [a for a in sweep_axes(d) if a not in ("workload", "platform", CROSSBARS, T_MVM)
             and d[a].nunique(dropna=False) > 1]
    return not extra, extra


def _caption(lay) -> str:
    from hetsim.report.units import axis_label

    bits = [f"{axis_label(lay.metric)} against {axis_label(lay.x)}" + (f" and {axis_label(lay.y)}" if lay.y else "")]
    if lay.hue:
        bits.append(f"lines: {axis_label(lay.hue)}")
    panels = [axis_label(a) for a in (lay.col, lay.row) if a]
    if panels:
        bits.append("panels: " + " x ".join(panels))
    if lay.aggregated:
        bits.append(f"{lay.agg} over " + ", ".join(lay.aggregated))
    return "; ".join(bits)


def jobs_for(df, args, formats) -> tuple[list, list[str]]:
    """``([(stem, draw(path), caption)], notes)``: the figures to draw and the lines to print about them."""
    import pandas as pd

    from hetsim.report import dse_plots
    from hetsim.report.sweep_figure import plot_sweep, sweep_layout, sweep_stem

    notes: list[str] = []
    opts = {k: getattr(args, k) for k in FIGURE_OPTIONS}
    custom = any(v for v in opts.values())
    jobs: list = []
    if not custom and dse_plots.is_scenario_table(df):  # a scenario sweep: latency vs offered load
        return [(s, fn, None) for s, fn in dse_plots.scenario_plot_jobs(df, formats=formats)], notes
    if not custom and dse_plots.is_snn_table(df):
        return [(s, fn, None) for s, fn in dse_plots.snn_plot_jobs(df, formats=formats)], notes
    fits, extra = _cpu_cim_preset_fits(df)
    if not custom and fits:
        t_mvm = args.t_mvm if args.t_mvm is not None else float(pd.to_numeric(df[dse_plots.T_MVM]).min())
        for w in dict.fromkeys(df["workload"]):
            stem = w.removesuffix(".onnx")
            jobs.append((f"fig3_speedup_{stem}",
                         lambda s, w=w: dse_plots.plot_speedup_heatmap(df, w, s, formats=formats), None))
            jobs.append((f"fig5_breakdown_{stem}",
                         lambda s, w=w: dse_plots.plot_sweep_breakdown(df, w, s, formats=formats), None))
        jobs.append((f"fig4_speedup_models_{t_mvm:g}ns",
                     lambda s: dse_plots.plot_speedup_models(df, t_mvm, s, formats=formats), None))
    elif not custom and extra:
        notes.append(f"CPU-CIM ILP Fig. 3-5 not drawn: the table also varies {', '.join(extra)} (they would show "
                     "the best over it); --where COL=VALUE picks a slice")
    if "workload" not in df.columns and not custom:
        raise InputError("not a sweep's results table (no workload column)")
    kw = {k: v for k, v in opts.items() if k != "metric" and v}
    lay = sweep_layout(df, opts["metric"], agg=args.agg, **kw)
    jobs.append((sweep_stem(lay), lambda s: plot_sweep(df, s, opts["metric"], agg=args.agg, formats=formats, **kw),
                 _caption(lay)))
    return jobs, notes


def check_rows(path: Path) -> None:
    """Refuse a results table whose rows do not all have the header's number of fields (a ragged table, or one cut
    off mid-row by a full disk or a kill): read with pandas, the missing cells of a short row would be empty cells
    drawn without a word. Blank lines are skipped, as pandas does.

    Raises:
        InputError: one line naming the first such row (1 = the first row after the header) and its line, or a
            file that is not a UTF-8 CSV.
    """
    import csv

    try:
        with path.open(newline="", encoding="utf-8") as f:
            rows = csv.reader(f)
            header = next(rows, None)
            if header is None:
                raise InputError(f"{path}: not a results CSV: the file is empty")
            for i, row in enumerate(rows, start=1):
                if row and len(row) != len(header):
                    cut = " (cut off?)" if len(row) < len(header) else ""
                    raise InputError(f"{path}: row {i} (line {rows.line_num}) has {len(row)} fields{cut}, the "
                                     f"header {len(header)}: not a whole results table")
    except (UnicodeDecodeError, csv.Error) as err:
        raise InputError(f"{path}: not a results CSV: {err}") from None
    except OSError as err:
        raise InputError(f"{path}: cannot read it: {err.strerror or err}") from None


def cmd_plot(args) -> int:
    """``hetsim plot``: write the figures and ``report.html`` (refusing to replace files without --force)."""
    import pandas as pd

    from hetsim.analysis.plots import PAPER_FORMATS
    from hetsim.errors import OutputExistsError
    from hetsim.files import check_parent_dirs, check_writable, make_dirs
    from hetsim.input_files import MAX_TEXT_TABLE_BYTES, check_input_file
    from hetsim.report.html import figure_caption, write_sweep_html
    from hetsim.report.sweep_figure import filter_rows

    check_input_file(args.results, "results table", InputError, MAX_TEXT_TABLE_BYTES)  # a FIFO, a device, ...
    import matplotlib

    matplotlib.use("Agg")  # the command line only writes files (the Python API leaves the backend alone)
    check_rows(args.results)
    try:
        df = pd.read_csv(args.results)
    except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as err:
        raise InputError(f"{args.results}: not a results CSV: {err}") from None
    full = df
    df = filter_rows(df, _where(args.where))
    jobs, notes = jobs_for(df, args, PAPER_FORMATS)
    if args.out.exists() and not args.out.is_dir():
        raise OutputExistsError(f"-o {str(args.out)!r} exists and is not a directory")
    check_parent_dirs(args.out)
    clash = [args.out / f"{stem}{ext}" for stem, _, _ in jobs for ext in PAPER_FORMATS
             if (args.out / f"{stem}{ext}").exists()] + [p for p in [args.out / "report.html"] if p.exists()]
    if clash and not args.force:
        raise OutputExistsError(f"{clash[0]} exists (and {len(clash) - 1} more); pass --force to replace them")
    check_writable(args.out)
    make_dirs(args.out)
    written, captions = [], {}
    for stem, fn, caption in jobs:
        paths = fn(args.out / stem)
        written += paths
        captions[stem] = caption or figure_caption(stem)
    pngs = sorted((p for p in written if p.suffix == ".png"), key=lambda p: p.name.split("_")[0])
    write_sweep_html(full if not args.where else df, args.out / "report.html", source=args.results.name,
                     figures=[(p, captions[p.stem]) for p in pngs])
    for n in notes:
        print(n)
    print(f"wrote {len(written)} figures and report.html to {args.out}/")
    return 0
