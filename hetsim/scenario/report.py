"""A scenario's results: the terminal report, ``--out`` files and figures.

Files (the output stages serving :data:`SCENARIO` runs, registered here: :mod:`hetsim.report.outputs`):
``summary.json`` (per stream and per device), ``requests.csv`` (one row per
request), ``streams.csv``, ``devices.csv``, ``trace.csv`` (the ops of the first ``timeline_requests`` requests,
with their stream and request), ``objectives.csv`` (with a comparison of the objectives: per objective and
stream the replayed throughput, latency and the analytic bottleneck), ``latency_cdf.png`` (latency CDF per
stream), ``timeline.png`` (the first requests' ops on the devices, coloured by stream), ``occupancy.png``
(device occupancy over time), ``report.html`` (all of it in one self-contained page: the stream table,
per-device utilisation and energy, the load by stream and op type with why a device saturates, the objectives'
comparison, the figures).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from hetsim.numbers import NOT_MODELLED, column_scale, format_column, format_number, format_value, missing
from hetsim.report.outputs import OutputFolder, OutputStage, register_output, write_run_folder
from hetsim.scenario.figures import plot_latency_cdf, plot_occupancy, plot_timeline
from hetsim.scenario.run import ScenarioResult

__all__ = ["SCENARIO", "format_scenario_report", "plot_latency_cdf", "plot_occupancy", "plot_timeline",
           "write_scenario_outputs"]

#: the run a scenario's output stages serve (:func:`hetsim.report.outputs.output_files`)
SCENARIO = "scenario"


def _num(v, fmt: str | None = None) -> str:
    """``v`` as a plain number with 4 significant digits (:func:`hetsim.numbers.format_number`), or in ``fmt``
    (``".1%"``); ``-`` when it is missing (``None`` or NaN)."""
    if missing(v):
        return "-"
    return format_number(v) if fmt is None else format(v, fmt)


def latency_columns(rows: list[dict], keys: list[str]) -> tuple[str, dict[str, list[str]]]:
    """The latency columns ``keys`` (seconds) of ``rows`` in one unit, chosen from all their values
    (:func:`hetsim.numbers.column_scale`), each column with the decimals of its own largest value: the unit
    (``ms``) and per key its texts, ``-`` for a missing value."""
    prefix, scale, _ = column_scale(row[k] for row in rows for k in keys)
    unit = ((prefix, scale),)
    return prefix + "s", {k: [x.removesuffix(f" {prefix}s") for x in format_column([row[k] for row in rows], "s",
                                                                                    prefixes=unit)] for k in keys}


def _n(count: int, noun: str) -> str:
    """``"1 request"``, ``"2 requests"``, ``"1,024 requests"``."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def _pct(row: dict, p: int, text: str) -> str:
    """A stream's ``p``-th latency percentile as ``text``, marked ``*`` when its sample is too small to bracket
    it (``latency_pXX_determined`` false: :func:`hetsim.scenario.stats.quantile_ranks`)."""
    return text + "*" if row.get(f"latency_p{p}_determined") is False and row[f"latency_p{p}_s"] is not None else text


def _undetermined_lines(rows: list[dict]) -> list[str]:
    """One footnote per percentile marked ``*`` in some stream's row: the rule (the sample size below which the
    95 % order-statistic interval cannot bracket it) and the streams."""
    from hetsim.scenario.stats import CONFIDENCE, PERCENTILES, min_requests

    out = []
    for p in PERCENTILES:
        who = [row["stream"] for row in rows
               if row.get(f"latency_p{p}_determined") is False and row[f"latency_p{p}_s"] is not None]
        if who:
            out.append(f"  * p{p} not determined ({', '.join(who)}): fewer than {min_requests(p / 100):,} measured "
                       f"requests, its {CONFIDENCE:.0%} interval reaches beyond the sample")
    return out


def _ci_text(ci, scale: float) -> str:
    """``[lo, hi]`` (seconds) as ``lo..hi`` in the unit of ``scale`` (4 significant digits), ``-`` without an
    interval."""
    return "-" if ci is None else f"{format_number(ci[0] / scale)}..{format_number(ci[1] / scale)}"


def interval_lines(r: ScenarioResult) -> list[str]:
    """Per stream, its measured requests and the 95 % intervals of its mean latency (batch means) and
    percentiles (order statistics), in one unit (:mod:`hetsim.scenario.stats`); ``-``: too few requests."""
    from hetsim.scenario.stats import CONFIDENCE, MEAN_BATCHES

    rows = r.streams.to_dict(orient="records")
    keys = ["latency_mean_ci_s", *(f"latency_p{p}_ci_s" for p in (50, 95, 99))]
    prefix, scale, _ = column_scale(x for row in rows for k in keys for x in (row.get(k) or ()))
    out = ["", f"  {CONFIDENCE:.0%} intervals (latency in {prefix}s; mean: {MEAN_BATCHES} batch means, percentiles: "
           "order statistics; - too few requests)",
           f"  {'stream':<12} {'n':>7} {'mean':>19} {'p50':>19} {'p95':>19} {'p99':>19}"]
    for row in rows:
        out.append(f"  {row['stream']:<12} {row['measured']:>7} "
                   + " ".join(f"{_ci_text(row.get(k), scale):>19}" for k in keys))
    return out


def _pm(x: dict, scale: float = 1e3, fmt: str | None = None) -> str:
    """A replicated statistic as ``mean+-half`` (the t-interval's half-width) times ``scale``, the mean with 4
    significant digits (or in ``fmt``), ``-`` when missing, marked ``*`` when a replication did not determine
    it."""
    if x["mean"] is None:
        return "-"
    text = format_number(x["mean"] * scale) if fmt is None else format(x["mean"] * scale, fmt)
    if x["ci"] is not None:
        text += "+-" + format((x["ci"][1] - x["ci"][0]) / 2 * scale, ".2g")
    return text + ("*" if x.get("determined") is False else "")


def replication_lines(summary: dict) -> list[str]:
    """The statistics over replications (``summary["replications"]``,
    :func:`hetsim.scenario.run.replication_summary`): per stream the mean over the replications and the half-width
    of its 95 % t-interval."""
    rep = summary.get("replications")
    if not rep:
        return []
    seeds = rep["seeds"]
    out = ["", f"  over {rep['count']} replications (seeds {seeds[0]}-{seeds[-1]}): mean +- its 95 % t-interval's "
           "half-width (latency ms, miss %; *: too few requests in a replication)",
           f"  {'stream':<12} {'thru/s':>14} {'mean':>14} {'p50':>14} {'p95':>14} {'p99':>14} {'miss':>12}"]
    for name, st in rep["streams"].items():
        out.append(f"  {name:<12} {_pm(st['throughput_hz'], 1.0):>14} {_pm(st['latency_mean_s']):>14} "
                   f"{_pm(st['latency_p50_s']):>14} {_pm(st['latency_p95_s']):>14} {_pm(st['latency_p99_s']):>14} "
                   f"{_pm(st['deadline_miss'], 100, '.3g'):>12}")
    return out


def format_scenario_report(r: ScenarioResult, verbose: bool = False) -> str:
    """The terminal report: the scenario line, per stream (throughput, latency percentiles in ms, a percentile
    its requests are too few to determine marked ``*`` with a footnote, deadline misses, saturation), per device
    (utilisation, energy), energy per request, the analytic bottleneck and, per saturated device, why and what
    would relieve it (:func:`relief_lines`); with replications, their means and spread
    (:func:`replication_lines`); ``verbose``: the streams' 95 % intervals (:func:`interval_lines`)."""
    s = r.summary
    rows = r.streams.to_dict(orient="records")
    keys = ["latency_mean_s", "latency_p50_s", "latency_p95_s", "latency_p99_s", "latency_max_s", "alone_s"]
    unit, cols = latency_columns(rows, keys)
    out = [f"scenario {s['scenario']} on {s['platform']}: {_n(s['requests'], 'request')} in "
           f"{format_value(s['simulated_s'], 's')} simulated (mapper {s['mapper']}, dispatch {s['dispatch']}, "
           f"non-preemptive at op boundaries; contention {', '.join(s['contention']) or 'off'}; seed {s['seed']})",
           *(f"  note: {x}" for x in s.get("notes", ())), "",
           f"  {'stream':<12} {'served':>7} {'offered/s':>10} {'thru/s':>9} {'mean':>9} {'p50':>9} {'p95':>9} "
           f"{'p99':>9} {'max':>9} {'alone':>9} {'miss':>6}  (latency in {unit})"]
    for i, row in enumerate(rows):
        off, thr, miss = _num(row["offered_hz"]), _num(row["throughput_hz"]), _num(row["deadline_miss"], ".1%")
        if row.get("offered_note"):  # no offered rate: say why below the table, never a number
            off = r.models[row["stream"]].stream.arrival.no_rate_label
        out.append(f"  {row['stream']:<12} {row['measured']:>7} {off:>10} {thr:>9} {cols['latency_mean_s'][i]:>9} "
                   + " ".join(f"{_pct(row, p, cols[f'latency_p{p}_s'][i]):>9}" for p in (50, 95, 99))
                   + f" {cols['latency_max_s'][i]:>9} {cols['alone_s'][i]:>9} {miss:>6}")
    out += _undetermined_lines(r.streams.to_dict(orient="records"))
    if verbose:
        out += interval_lines(r)
    for row in r.streams.to_dict(orient="records"):
        if row.get("offered_note"):
            out.append(f"  {row['stream']}: no offered rate: {row['offered_note']} "
                       f"({r.models[row['stream']].stream.arrival.no_rate_reason})")
        if row["warmup"]:
            first = "the first request" if row["warmup"] == 1 else f"the first {row['warmup']:,} requests"
            out.append(f"  {row['stream']}: {first} (warm-up) {'is' if row['warmup'] == 1 else 'are'} left out of the "
                       "statistics")
        if row["saturated"]:
            out.append(f"  SATURATED {row['stream']}: {row['saturation']}; not a steady state")
    out += replication_lines(s)
    out += _device_lines(r) + _energy_lines(r)
    out += _bottleneck_lines(r)
    out += relief_lines(r.summary.get("relief") or {})
    return "\n".join(out)


def _device_lines(r: ScenarioResult) -> list[str]:
    """The devices' table: utilisation, offered load and energy over the simulated time (one unit, chosen from the
    column; ``not modelled`` for a device or link without an energy figure)."""
    from hetsim.report.notes import energy_not_modelled

    devs = r.devices.to_dict(orient="records")
    energy = format_column([d["energy_j"] for d in devs], "J")
    out = ["", f"  {'device':<10} {'utilisation':>11} {'offered load':>12} {'energy':>12}"]
    for row, e in zip(devs, energy, strict=True):
        load = "n/a" if missing(row["offered_load"]) else f"{row['offered_load']:.1%}"
        if energy_not_modelled(r.platform, row["device"], row["energy_j"]):
            e = NOT_MODELLED
        out.append(f"  {row['device']:<10} {row['utilisation']:>11.1%} {load:>12} {e:>12}")
    if r.summary.get("offered_load_note"):
        out.append(f"  offered load: {r.summary['offered_load_note']}")
    return out


def _energy_lines(r: ScenarioResult) -> list[str]:
    """The scenario's energy, and energy per request in its two definitions, each named: the whole energy over the
    simulated time (idle included) over every request (``summary["energy_per_request_j"]``), and per stream the
    active energy of one request's own ops and transfers (``streams["energy_per_request_j"]``, no idle)."""
    s = r.summary
    total, per = format_value(s["energy_j"], "J"), format_value(s["energy_per_request_j"], "J")
    sleep = " + sleep" if "sleep_s" in r.devices.columns else ""
    rows = r.streams.to_dict(orient="records")
    own = format_column([row["energy_per_request_j"] for row in rows], "J", each=True)
    return [f"  energy {total} over the simulated time (active + idle{sleep}) / {_n(s['requests'], 'request')} = "
            f"{per} per request (idle shared out);",
            "    a request's own ops and transfers (active energy, no idle): "
            + ", ".join(f"{row['stream']} {e}" for row, e in zip(rows, own, strict=True))]


def relief_lines(relief: dict) -> list[str]:
    """Per saturated device (``summary["relief"]``: :func:`hetsim.scenario.run.relief`), one or two lines: its
    load, the streams and op types that make most of its busy time, how many of its ops other devices could run
    (the cost model's latency table; capacities unchecked) with their share of its busy time, and the load left
    were they all moved."""
    out = []
    for dev, x in relief.items():
        by: dict[str, list[str]] = {}
        for t in x["top"]:
            by.setdefault(t["stream"], []).append(t["type"])
        who = ", ".join(f"{'/'.join(types)} of {stream}" for stream, types in by.items())
        head = (f"  {dev} saturated (load {x['load']:.3g}): {who} {'is' if len(x['top']) == 1 else 'are'} "
                f"{x['top_share']:.0%} of its busy time;")
        each = ", ".join(f"{other} {m['ops']}" + (f" {'/'.join(sorted(m['types'], key=lambda k: -m['types'][k])[:2])}"
                                                   if m["ops"] else "") for other, m in x["movable"].items())
        if not x["movable"]:
            tail = "no other device to move its ops to"
        elif x["movable_ops"]:
            tail = (f"other devices could run {x['movable_ops']} of its ops ({x['movable_share']:.0%} of its busy time"
                    f": {each}; latency table, capacities unchecked), leaving load {x['load_left']:.3g}")
        else:
            tail = f"no other device could run any of its ops ({each})"
        out += [head + " " + tail] if len(head) + len(tail) < 120 else [head, "    " + tail]
    return out


def _no_rate_text(b: dict) -> str:
    """Which streams the bottleneck's load leaves out for want of a rate (a trace at one instant)."""
    which = "; ".join(f"{n}: {why}" for n, why in b["no_rate"].items())
    return f"no offered rate for {which} (not counted)"


def _rates_text(b: dict, streams: int) -> str:
    """What rates the bottleneck's load is at (``streams``: how many streams there are): the offered rates, closed
    loops at their measured throughput."""
    closed = b.get("closed_at_throughput") or []
    if not closed:
        return "the offered rates"
    return (f"the measured throughput of the closed loop{'s' if len(closed) > 1 else ''} {', '.join(closed)}"
            + (" and the offered rates of the others" if len(closed) < streams else "")
            + " (a closed loop offers no rate: no rate scale)")


def _bottleneck_lines(r: ScenarioResult) -> list[str]:
    """The mapping's analytic bottleneck and, with a comparison, both objectives' replayed throughput."""
    b = r.summary.get("bottleneck") or {}
    out = []
    if b.get("no_rate") and not b.get("resource"):
        out.append(f"  {r.summary.get('objective', 'latency')} mapping: analytic bottleneck n/a: {_no_rate_text(b)}")
    if b.get("resource"):
        scale = b.get("max_rate_scale")
        out.append(f"  {r.summary.get('objective', 'latency')} mapping: analytic bottleneck {b['resource']} at "
                   f"{b['load']:.1%} of its capacity at {_rates_text(b, len(r.models))}"
                   + (f" (the SoC sustains at most {scale:.3g}x these rates)" if scale else "")
                   + (f"; {_no_rate_text(b)}" if b.get("no_rate") else ""))
        ports = b.get("memory_ports")
        if ports:
            names = ", ".join(ports["memories"])
            out.append(f"  weight reads from {names}: " + (
                "each memory port a resource of the bottleneck (memory contention on: one read at a time)"
                if ports["counted"] else "not a resource of the bottleneck (memory contention off: reads "
                "overlap freely; --contention memory serialises them on the port)"))
        if b.get("status") is not None:
            out.append(f"  the throughput mapping: {b['status'].replace('_', ' ')}"
                       + (f", bound {b['bound']:.4%}, MIP gap {b['mip_gap']:.2%}" if b.get("bound") is not None
                          else " (a heuristic: no bound)") + f", {b.get('solve_time_s') or 0:.1f} s")
    if r.comparison is not None:
        rows = r.comparison.to_dict(orient="records")
        unit, cols = latency_columns(rows, ["latency_p50_s", "latency_p99_s", "alone_s"])
        out += ["", "  objectives (each mapping replayed on the same arrivals):",
                f"  {'objective':<11} {'stream':<12} {'offered/s':>10} {'thru/s':>9} {'p50':>9} {'p99':>9} "
                f"{'alone':>9} {'bottleneck':>11} {'max x':>6}  state (latency in {unit})"]
        for i, row in enumerate(rows):
            off, thr = _num(row["offered_hz"]), _num(row["throughput_hz"])
            scale = "-" if not row["max_rate_scale"] else f"{row['max_rate_scale']:.3g}"
            out.append(f"  {row['objective']:<11} {row['stream']:<12} {off:>10} {thr:>9} "
                       f"{_pct(row, 50, cols['latency_p50_s'][i]):>9} {_pct(row, 99, cols['latency_p99_s'][i]):>9} "
                       f"{cols['alone_s'][i]:>9} "
                       f"{row['bottleneck_load']:>11.1%} {scale:>6}  "
                       f"{'SATURATED' if row['saturated'] else 'steady'}")
        out.append("  (bottleneck: the busiest resource's load at the offered rates; max x: 1 / that load)")
        out += _undetermined_lines([{**row, "stream": f"{row['objective']} {row['stream']}", "latency_p95_s": None}
                                    for row in r.comparison.to_dict(orient="records")])
    return out


def write_scenario_outputs(r: ScenarioResult, out: Path, force: bool = False, figures: bool = True) -> list[Path]:
    """Write the files of the stages serving :data:`SCENARIO` runs to ``out``, all or none
    (:func:`hetsim.report.outputs.write_run_folder`: a staging folder swapped in whole, so a failed or killed run
    leaves the earlier folder as it was and a run with ``force`` leaves no file of an earlier run); without
    ``figures``, no PNG and no report.html. Return the paths written."""
    return write_run_folder(r, out, SCENARIO, force=force, figures=figures)


def _summary_json(r: ScenarioResult, folder: OutputFolder) -> None:
    from hetsim.files import atomic_write_text

    atomic_write_text(folder / "summary.json", json.dumps(r.summary, indent=1, default=_json) + "\n")


def _csv(name: str, table: str):
    """The stage writing ``r.<table>`` to the CSV file ``name``."""

    def write(r: ScenarioResult, folder: OutputFolder) -> None:
        from hetsim.files import atomic_path

        with atomic_path(folder / name) as tmp:
            getattr(r, table).to_csv(tmp, index=False)

    return write


def _png(name: str, draw):
    """The stage saving the figure ``draw(r)`` as the PNG ``name``."""

    def write(r: ScenarioResult, folder: OutputFolder) -> None:
        import matplotlib.pyplot as plt

        from hetsim.files import atomic_path

        fig = draw(r)
        with atomic_path(folder / name) as tmp:
            fig.savefig(tmp, dpi=110, format="png")
        plt.close(fig)

    return write


def _report_html(r: ScenarioResult, folder: OutputFolder) -> None:
    from hetsim.report.html import write_html

    figs = [(folder / n, cap) for n, cap in (("latency_cdf.png", "latency CDF per stream (dashed: deadline)"),
                                             ("timeline.png", "the first requests' ops, coloured by stream"),
                                             ("occupancy.png", "requests in flight and device utilisation"))]
    write_html(folder / "report.html", scenario_report_html(r, figs))


def scenario_report_html(r: ScenarioResult, figures=()) -> str:
    """The scenario's ``report.html``: the headline numbers, the stream table (throughput, latency percentiles,
    deadline misses, saturation), per-device utilisation and energy, the mapping's analytic bottleneck and the
    objectives' comparison (when run), the figures (``(path, caption)`` pairs), the first requests and every
    number of ``summary.json``."""
    from html import escape

    import pandas as pd

    from hetsim.report.html import (
        _figures,
        _json_block,
        details_html,
        kv_table,
        not_modelled_cells,
        page_html,
        table_html,
    )

    s = r.summary
    b = s.get("bottleneck") or {}
    head = [("scenario", s["scenario"]), ("platform", s["platform"]),
            ("mapping", f"{s['mapper']}, objective {s.get('objective', 'latency')}"),
            ("dispatch", f"{s['dispatch']} (non-preemptive at op boundaries)"),
            ("contention", ", ".join(s["contention"]) or "off"), ("seed", str(s["seed"])),
            ("simulated", f"{_n(s['requests'], 'request')} in {format_value(s['simulated_s'], 's')}"),
            ("energy", " ".join(x.strip() for x in _energy_lines(r)).removeprefix("energy "))]
    if b.get("no_rate") and not b.get("resource"):
        head.append(("analytic bottleneck", f"n/a: {_no_rate_text(b)}"))
    if b.get("resource"):
        scale = b.get("max_rate_scale")
        head.append(("analytic bottleneck", f"{b['resource']} at {b['load']:.2%} of its capacity at "
                     f"{_rates_text(b, len(r.models))}"
                     + (f": the SoC sustains at most {scale:.4g}x these rates" if scale else "")
                     + (f"; {_no_rate_text(b)}" if b.get("no_rate") else "")))
    sat = [f"{row['stream']}: {row['saturation']}" for row in r.streams.to_dict(orient="records")
           if row["saturated"]]
    if sat:
        head.append(("SATURATED (not a steady state)", "; ".join(sat)))
    sections = [("Summary", kv_table(head)),
                ("Streams", table_html(r.streams, scroll=False)
                 + "<p>offered and throughput over one window, from the first measured arrival t0 to the last "
                   "t1: offered = measured arrivals in [t0, t1) / (t1 - t0), throughput = the stream's completions "
                   "in (t0, t1], warm-up requests' included, / (t1 - t0) (a closed loop: its throughput counted "
                   "so). They differ by the change of the stream's backlog over the window / (t1 - t0): throughput "
                   "exceeds offered when requests queued before t0 finish inside it, and falls short when a "
                   "backlog grows (saturation); latency = "
                   "finish - arrival; alone: one request alone on the SoC; *_ci_s: 95 % intervals (percentiles: "
                   "order statistics, empty and *_determined false when the measured requests are too few to "
                   "bracket the percentile; mean: 10 batch means).</p>"),
                ("Devices and links", table_html(r.devices, scroll=False, texts=not_modelled_cells(r.devices,
                                                                                              r.platform))
                 + "<p>busy: unit-seconds on a serial device; energy over the whole simulated time, idle time "
                   "included; offered load: the open streams' rate x busy time per request / units.</p>")]
    if r.loads is not None and len(r.loads):
        why = relief_lines(s.get("relief") or {})
        sections.append(("Load by stream and op type", details_html(
            "which streams and op types keep each device and weight memory busy", table_html(r.loads))
            + "<p>ops: per request; busy: over every request; share: of the resource's busy time.</p>"
            + "".join(f"<p>{escape(line.strip())}</p>" for line in why)))
    if r.comparison is not None:
        sections.append(("Objectives (each mapping replayed on the same arrivals)",
                         table_html(r.comparison, scroll=False)
                         + "<p>bottleneck: the busiest resource's load at the offered rates under that mapping "
                           "(analytic); max rate scale: 1 / that load.</p>"))
    if b.get("loads"):
        loads = pd.DataFrame({"resource": list(b["loads"]), "load": list(b["loads"].values())})
        sections.append(("Analytic loads", details_html("the most loaded resources of the mapping",
                                                        table_html(loads, scroll=False))))
    figs = [(p, c) for p, c in figures if p.exists()]
    if figs:
        sections.append(("Figures", _figures(figs)))
    sections += [(f"Requests ({len(r.requests):,} rows)", details_html(
                     "the first 500 requests (requests.csv has every one)", table_html(r.requests.head(500)))),
                 ("Raw numbers", _json_block(s))]
    return page_html(f"{s['scenario']} on {s['platform']}", "hetsim run: a scenario (streams of requests on one "
                     "SoC)", sections)


def _json(x):
    if isinstance(x, float) and math.isnan(x):
        return None
    try:
        return x.item()
    except AttributeError:
        return str(x)


# in the order they are written
for _stage in (
    OutputStage("scenario-summary", ("summary.json",), SCENARIO, _summary_json),
    OutputStage("requests", ("requests.csv",), SCENARIO, _csv("requests.csv", "requests")),
    OutputStage("streams", ("streams.csv",), SCENARIO, _csv("streams.csv", "streams")),
    OutputStage("devices", ("devices.csv",), SCENARIO, _csv("devices.csv", "devices")),
    OutputStage("scenario-trace", ("trace.csv",), SCENARIO, _csv("trace.csv", "trace")),
    OutputStage("objectives", ("objectives.csv",), SCENARIO, _csv("objectives.csv", "comparison"),
                needs=lambda r: r.comparison is not None),
    OutputStage("latency-cdf", ("latency_cdf.png",), SCENARIO, _png("latency_cdf.png", plot_latency_cdf), figure=True),
    OutputStage("scenario-timeline", ("timeline.png",), SCENARIO, _png("timeline.png", plot_timeline), figure=True),
    OutputStage("occupancy", ("occupancy.png",), SCENARIO, _png("occupancy.png", plot_occupancy), figure=True),
    OutputStage("scenario-report", ("report.html",), SCENARIO, _report_html, figure=True),
):
    register_output(_stage)
