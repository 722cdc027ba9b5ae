"""``hetsim plot``: plot a sweep's results table (any sweep; CPU-CIM ILP Fig. 3, 4, 5 presets)."""

from __future__ import annotations

from hetsim.cli._common import _add_common


def add_parser(sub) -> None:
    """The ``plot`` subcommand's arguments."""
    p = sub.add_parser("plot", help="plot a sweep's results table (any sweep; CPU-CIM ILP Fig. 3, 4, 5 presets)",
                       description="From a results CSV of 'hetsim sweep': the metric (speedup) against the swept "
                       "axes you pick by column name (--x, --y, --hue, --col, --row), every axis not drawn "
                       "aggregated and named on the figure; for the CPU-CIM ILP sweep (workloads x hosts x "
                       "crossbars x MVM latency) also its Fig. 3 (speedup heatmaps), Fig. 4 (speedup per model) and "
                       "Fig. 5 (latency share per device); for an SNN sweep the speed-up vs spike density. PNG, SVG "
                       "and PDF, and a self-contained report.html.")
    from hetsim.cli_plot import add_arguments as _plot_arguments

    _plot_arguments(p)
    _add_common(p)


def cmd_plot(args) -> int:
    from hetsim.cli_plot import cmd_plot as _cmd_plot

    return _cmd_plot(args)
