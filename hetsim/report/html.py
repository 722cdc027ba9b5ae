"""A self-contained ``report.html``: the headline numbers, the tables and the figures of a run or a sweep in
one file that opens offline and can be shared as it is.

``hetsim run --out DIR`` writes it beside ``summary.json`` (:func:`run_report_html` for an ONNX run; a workload kind
may have its own page, e.g. a spiking network's, :mod:`hetsim.snn.report`); ``hetsim plot RESULTS.csv -o DIR``
writes one with the sweep's figures and its table (:func:`sweep_report_html`). The page holds everything it shows:
figures are embedded as base64 data URIs (PNG, or SVG for a ``.svg`` file), the style sheet and the few lines of
script that sort a table by a clicked column are inline, and nothing is fetched from the network (no CSS, JS or
fonts).

Tables are plain HTML built with :func:`html.escape`. Units come from the column names
(:mod:`hetsim.report.units`): the columns in seconds, joules or watts (``_s``, ``_j``, ``_w``) of a table share
one SI prefix per unit (``start (ms)``, ``energy (µJ)``), picked from their largest value, with
:data:`SIG_DIGITS` significant digits; a column in another unit keeps it (``links.bus.bandwidth (GB/s)``,
``t_mvm (ns)``); the column's name in the CSV is its tooltip and
each cell keeps its exact value in ``data-v`` for sorting. Files are written atomically
(:func:`hetsim.files.atomic_write_text`).
"""

from __future__ import annotations

import base64
import json
import math
import os
from collections.abc import Iterable
from html import escape
from pathlib import Path

import numpy as np
import pandas as pd

import hetsim
from hetsim.numbers import NOT_MODELLED
from hetsim.numbers import SIG_DIGITS as _SIG_DIGITS
from hetsim.report.text import heuristic_note, no_baseline
from hetsim.report.units import field_unit, rescalable
from hetsim.report.units import si_prefix as _si_prefix

SIG_DIGITS = _SIG_DIGITS
"""Significant digits of the numbers in a report's tables and headline (:data:`hetsim.numbers.SIG_DIGITS`)."""

OP_TABLE_ROWS = 2000
"""A run report's op table shows at most this many ops (the first in topological order); ``ops.csv`` beside the
report has every op. Keeps ``report.html`` a few MB at most on a graph of any size."""

JSON_LIST_ITEMS = 1000
"""In a report's raw-numbers block, a list longer than this (e.g. the names of 100,000 offloaded ops) shows its
first items and how many more ``summary.json`` holds."""

#: significant digits of the floats in the report's summary.json block (the file keeps every digit)
JSON_DIGITS = 6

FIGURE_ZOOM = 1.5
"""A PNG figure is shown this many times its print size (as a PDF viewer at 150 %), at most the page's width."""

_MIME = {".png": "image/png", ".svg": "image/svg+xml"}

CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif; margin: 1.5em auto;
       max-width: 1200px; padding: 0 1em; color: #222; line-height: 1.4; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; }
h2 { font-size: 1.2em; margin-top: 1.6em; border-bottom: 1px solid #ccc; padding-bottom: 0.2em; }
p.sub { color: #555; margin-top: 0; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0; }
th, td { border: 1px solid #ddd; padding: 0.2em 0.5em; }
td { white-space: nowrap; }
th { background: #f2f2f2; position: sticky; top: 0; cursor: pointer; white-space: nowrap; }
td.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tbody tr:nth-child(even) { background: #fafafa; }
table.kv th { text-align: left; cursor: default; position: static; background: #f7f7f7; }
div.scroll { overflow: auto; max-height: 36em; border: 1px solid #eee; }
div.wide { overflow-x: auto; }
div.figs { display: flex; flex-wrap: wrap; gap: 1.2em; align-items: flex-start; }
figure { margin: 0.5em 0; display: table; max-width: 100%; }
figure img { max-width: 100%; height: auto; border: 1px solid #eee; display: block; }
figcaption { display: table-caption; caption-side: bottom; color: #555; font-size: 0.9em; padding-top: 0.3em; }
pre { background: #f7f7f7; padding: 0.8em; overflow: auto; font-size: 0.8em; max-height: 40em; }
footer { color: #777; font-size: 0.8em; margin-top: 2em; }
@media print { div.scroll { max-height: none; overflow: visible; } th { position: static; } }
"""

# Click a column header to sort by it (numbers numerically, by the exact value in data-v); click again to reverse.
SORT_JS = """
document.querySelectorAll("table.sortable").forEach(function (table) {
  table.querySelectorAll("thead th").forEach(function (th, col) {
    th.addEventListener("click", function () {
      var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
      var asc = th.getAttribute("data-order") !== "asc";
      function key(r) { var c = r.cells[col]; return c ? c.getAttribute("data-v") || c.textContent : ""; }
      var numeric = rows.every(function (r) { var k = key(r); return k === "" || !isNaN(Number(k)); });
      rows.sort(function (a, b) {
        var x = key(a), y = key(b);
        if (numeric) {
          if (x === "") return 1; if (y === "") return -1;
          x = Number(x); y = Number(y);
        }
        return (x < y ? -1 : x > y ? 1 : 0) * (asc ? 1 : -1);
      });
      rows.forEach(function (r) { body.appendChild(r); });
      table.querySelectorAll("thead th").forEach(function (h) { h.removeAttribute("data-order"); });
      th.setAttribute("data-order", asc ? "asc" : "desc");
    });
  });
});
"""


def _sig(x: float, digits: int = SIG_DIGITS) -> str:
    """``x`` with ``digits`` significant digits, in positional notation while that stays short."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g}" if x != 0 else "0"
    exp = math.floor(math.log10(abs(x)))
    if -5 <= exp < digits + 3:
        decimals = max(0, digits - 1 - exp)
        return f"{x:,.{decimals}f}"
    return f"{x:.{digits - 1}e}"


def si_prefix(values: Iterable[float]) -> tuple[float, str]:
    """The SI prefix ``(scale, symbol)`` in which the largest absolute value of ``values`` lies in [1, 1000)
    (``(1.0, "")`` for values of 1 and more, pico at the smallest): :func:`hetsim.report.units.si_prefix`."""
    return _si_prefix(values)


def quantity(x: float | None, unit: str, digits: int = SIG_DIGITS) -> str:
    """One value with a fitting SI prefix: ``quantity(0.0450534, "s")`` is ``"45.05 ms"``; ``-`` for None."""
    if _missing(x):
        return "-"
    scale, sym = si_prefix([x])
    return f"{_sig(x / scale, digits)} {sym}{unit}"


def _is_int_column(s: pd.Series) -> bool:
    if pd.api.types.is_bool_dtype(s):
        return False
    if pd.api.types.is_integer_dtype(s):
        return True
    if pd.api.types.is_float_dtype(s):
        v = s.dropna()
        return len(v) > 0 and bool(np.all(np.isfinite(v))) and bool(np.all(v == np.round(v))) and \
            bool((v.abs() < 2**53).all())
    return False


def _missing(v) -> bool:
    """``v`` is None, NaN, NA or NaT (a container is not missing)."""
    if v is None:
        return True
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):  # array-likes
        return False


def _cell(v, scale: float = 1.0, integer: bool = False, text: str | None = None) -> str:
    """One ``<td>``: numbers right-aligned with their exact value in ``data-v``, text escaped; ``text`` replaces
    a number's digits (``not modelled``: an energy of a device without an energy figure, never a measured 0)."""
    if text is not None:
        return f'<td class="n" data-v="{float(v) if not _missing(v) else 0.0!r}">{escape(text)}</td>'
    if _missing(v):
        return "<td></td>"
    if isinstance(v, bool | np.bool_):
        return f"<td>{'yes' if v else 'no'}</td>"
    if isinstance(v, int | float | np.integer | np.floating):
        x = float(v)
        text = f"{int(round(x)):,}" if integer else _sig(x / scale)
        return f'<td class="n" data-v="{x!r}">{text}</td>'
    return f"<td>{escape(str(v))}</td>"


def shared_prefixes(df: pd.DataFrame) -> dict[str, tuple[float, str]]:
    """One SI prefix per base unit of a table (s, J, W): the columns in that unit share the prefix of their
    largest value, so a device table reads ``active (mJ)``, ``op (mJ)``, ``transfer (mJ)`` and not mJ, µJ
    and J side by side (units from the column names, :func:`hetsim.report.units.field_unit`). Wall-clock
    times (a name with ``time`` in it: ``solve_time_s``) share a prefix of their own, apart from simulated
    times (``makespan_s``). Keys: :func:`_prefix_group` of a column."""
    groups: dict[str, list] = {}
    for col in df.columns:
        s = df[col]
        fu = field_unit(str(col))
        if rescalable(fu.unit) and pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s):
            groups.setdefault(_prefix_group(str(col)), []).extend(s.tolist())
    return {g: si_prefix(v) for g, v in groups.items()}


def _prefix_group(name: str) -> str:
    """Which columns share an SI prefix in a table: those of one base unit, wall-clock times apart."""
    fu = field_unit(name)
    base = fu.unit.base if fu.unit is not None else ""
    return f"{base} wall" if base == "s" and "time" in fu.stem.lower() else base


def table_html(df: pd.DataFrame, caption: str | None = None, *, scroll: bool = True,
               texts: dict[tuple[int, str], str] | None = None) -> str:
    """``df`` as a sortable HTML table (all rows): columns in seconds, joules or watts (``_s``, ``_j``, ``_w``)
    in one SI prefix per unit (:func:`shared_prefixes`), other units named as in the column (``bandwidth
    (GB/s)``, :mod:`hetsim.report.units`), a
    ``utilisation`` column in percent, integral columns as integers, the rest with :data:`SIG_DIGITS`
    significant digits; empty cells for missing values. ``scroll``: in a box of limited height that scrolls
    (long tables), else only as wide as the page, scrolling sideways. ``texts``: ``(row position, column) ->
    text`` shown instead of that cell's number (:func:`not_modelled_cells`)."""
    heads, fmts = [], []
    prefixes = shared_prefixes(df)
    for col in df.columns:
        s = df[col]
        name = str(col)
        numeric = pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)
        scale, label = 1.0, name
        fu = field_unit(name)
        suffix = fu.unit if numeric else None
        if suffix is not None and rescalable(suffix):
            scale, sym = prefixes[_prefix_group(name)]
            label = fu.label(sym + suffix.base)
        elif suffix is not None:
            label = fu.label()
        elif numeric and name == "utilisation":
            scale, label = 0.01, "utilisation (%)"
        integer = numeric and suffix is None and name != "utilisation" and _is_int_column(s)
        heads.append(f'<th title="{escape(name)}">{escape(label)}</th>')
        fmts.append((scale, integer))
    rows = []
    texts = texts or {}
    names = [str(c) for c in df.columns]
    for i, rec in enumerate(df.itertuples(index=False, name=None)):
        cells = "".join(_cell(v, sc, it, texts.get((i, c)))
                        for v, (sc, it), c in zip(rec, fmts, names, strict=True))
        rows.append(f"<tr>{cells}</tr>")
    cap = f"<caption>{escape(caption)}</caption>" if caption else ""
    table = (f'<table class="sortable">{cap}<thead><tr>{"".join(heads)}</tr></thead>\n<tbody>\n'
             + "\n".join(rows) + "\n</tbody></table>")
    return f'<div class="{"scroll" if scroll else "wide"}">{table}</div>'


def not_modelled_cells(df: pd.DataFrame, platform) -> dict[tuple[int, str], str]:
    """The energy cells (columns ending ``_j``) of a per-device table ``df`` (a ``device`` column) that read
    ``not modelled``: the devices and links without an energy figure, whose energy is 0
    (:func:`hetsim.report.notes.energy_not_modelled`), for :func:`table_html`'s ``texts``."""
    from hetsim.report.notes import energy_not_modelled

    if "device" not in df.columns or "energy_j" not in df.columns:
        return {}
    cols = [str(c) for c in df.columns if str(c).endswith("_j")]
    out = {}
    for i, (name, e) in enumerate(zip(df["device"], df["energy_j"], strict=True)):
        if energy_not_modelled(platform, str(name), e):
            out.update({(i, c): NOT_MODELLED for c in cols})
    return out


def kv_table(items: Iterable[tuple[str, str]]) -> str:
    """A two-column table of headline numbers (already formatted strings)."""
    rows = "".join(f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in items)
    return f'<table class="kv"><tbody>{rows}</tbody></table>'


def png_css_width(data: bytes, zoom: float = 1.0) -> int | None:
    """The width in CSS pixels (96 per inch) at which a PNG shows at ``zoom`` times its print size: its pixel
    width scaled by the resolution in its ``pHYs`` chunk (matplotlib writes the figure's dpi there); ``None``
    when the PNG has no physical resolution or is not a PNG."""
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        return None
    width = int.from_bytes(data[16:20], "big")
    pos = 8
    while pos + 8 <= len(data):
        n = int.from_bytes(data[pos:pos + 4], "big")
        kind = data[pos + 4:pos + 8]
        if kind == b"pHYs" and n == 9:
            ppm = int.from_bytes(data[pos + 8:pos + 12], "big")
            if data[pos + 16] == 1 and ppm > 0:  # unit: metre
                return round(width / (ppm * 0.0254) * 96 * zoom)
            return None
        if kind in (b"IDAT", b"IEND"):
            return None
        pos += 12 + n
    return None


def figure_html(path: str | os.PathLike, caption: str = "") -> str:
    """The figure file ``path`` (``.png`` or ``.svg``) embedded as a base64 data URI, with a caption; a PNG is
    shown at :data:`FIGURE_ZOOM` times its print size (:func:`png_css_width`), at most the page's width."""
    p = Path(path)
    mime = _MIME.get(p.suffix.lower())
    if mime is None:
        raise ValueError(f"cannot embed {p.name}: only {', '.join(_MIME)} figures")
    raw = p.read_bytes()
    width = png_css_width(raw, FIGURE_ZOOM) if mime == "image/png" else None
    size = f' width="{width}"' if width else ""
    data = base64.b64encode(raw).decode("ascii")
    cap = f"<figcaption>{escape(caption)}</figcaption>" if caption else ""
    return f'<figure><img alt="{escape(caption or p.name)}"{size} src="data:{mime};base64,{data}">{cap}</figure>'


def details_html(summary: str, body: str) -> str:
    """A collapsed section (``<details>``)."""
    return f"<details><summary>{escape(summary)}</summary>{body}</details>"


def pre_html(text: str) -> str:
    return f"<pre>{escape(text)}</pre>"


def page_html(title: str, subtitle: str, sections: Iterable[tuple[str, str]]) -> str:
    """A whole HTML document: ``title``, a subtitle line, then ``(heading, html)`` sections."""
    body = "\n".join(f"<section><h2>{escape(h)}</h2>\n{content}\n</section>" for h, content in sections)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        f"<title>{escape(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
        f"<h1>{escape(title)}</h1>\n<p class=\"sub\">{escape(subtitle)}</p>\n{body}\n"
        f"<footer>Written by hetsim {escape(getattr(hetsim, '__version__', ''))}. Self-contained: "
        "figures embedded, no network access needed. Click a column header to sort.</footer>\n"
        f"<script>{SORT_JS}</script>\n</body>\n</html>\n"
    )


def _json_block(summary: dict) -> str:
    from hetsim.report.export import _json_default

    cut: list[int] = []
    shown = _rounded(_cap_lists(summary, JSON_LIST_ITEMS, cut))
    note = f"; lists past {JSON_LIST_ITEMS} items cut" if cut else ""
    return details_html(f"summary.json (every number of the run, to {JSON_DIGITS} significant digits{note}: the file "
                        "has them in full)", pre_html(json.dumps(shown, indent=1, default=_json_default)))


def _rounded(obj, digits: int | None = None):
    """``obj`` with every float (at any depth of dicts, lists and tuples; NumPy's too) rounded to ``digits``
    (default :data:`JSON_DIGITS`) significant digits, for reading: a busy time of ``0.0003251519999999786`` s
    shows as ``0.000325152``. Integers, booleans, non-finite floats and strings as they are."""
    digits = JSON_DIGITS if digits is None else digits
    if isinstance(obj, dict):
        return {k: _rounded(v, digits) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_rounded(v, digits) for v in obj]
    if isinstance(obj, float | np.floating) and math.isfinite(obj):
        return float(f"{float(obj):.{digits}g}")
    return obj


def _cap_lists(obj, n: int, cut: list[int]):
    """``obj`` with every list (at any depth) longer than ``n`` cut to its first ``n`` items and a last string
    item saying how many were left out (their counts appended to ``cut``); other values as they are."""
    if isinstance(obj, dict):
        return {k: _cap_lists(v, n, cut) for k, v in obj.items()}
    if isinstance(obj, list):
        items = [_cap_lists(v, n, cut) for v in obj[:n]]
        if len(obj) > n:
            cut.append(len(obj) - n)
            items.append(f"... {len(obj) - n:,} more")
        return items
    return obj


def op_table_html(ops: pd.DataFrame, csv_name: str = "ops.csv", max_rows: int | None = None) -> str:
    """The op table of a run report: every op when there are at most ``max_rows`` (default
    :data:`OP_TABLE_ROWS`), else the first ``max_rows`` in topological order and a line linking ``csv_name``
    (the file beside the report with every op)."""
    max_rows = OP_TABLE_ROWS if max_rows is None else max_rows
    if len(ops) <= max_rows:
        return table_html(ops)
    link = f'<a href="{escape(csv_name)}">{escape(csv_name)}</a>'
    note = (f"<p>The first {max_rows:,} of {len(ops):,} ops in topological order (sortable among themselves); "
            f"{link} beside this report has every op.</p>")
    return note + table_html(ops.head(max_rows))


def _figures(figures: Iterable[tuple[str | os.PathLike, str]]) -> str:
    """The figures side by side as far as the page's width allows."""
    return '<div class="figs">\n' + "\n".join(figure_html(p, cap) for p, cap in figures) + "\n</div>"


def write_html(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` to ``path`` atomically (UTF-8)."""
    from hetsim.files import atomic_write_text

    return atomic_write_text(path, text)


# --------------------------------------------------------------------------------------------- ONNX runs


def run_report_html(run, figures: Iterable[tuple[str | os.PathLike, str]] = (), ops: pd.DataFrame | None = None,
                    breakdown: pd.DataFrame | None = None, critical_path: pd.DataFrame | None = None) -> str:
    """The report of an ONNX run (:class:`hetsim.pipeline.RunResult`): headline numbers, the device table,
    busy time and energy per device and op type and the critical path (``breakdown``, ``critical_path`` if
    given, else :attr:`RunResult.breakdown`, :attr:`RunResult.critical_path`), the op table (every op, as
    ``ops.csv``; ``ops`` if given, else built with :func:`~hetsim.analysis.metrics.op_table`) and ``figures``
    (``(path, caption)`` pairs, embedded)."""
    from hetsim.analysis.metrics import op_table
    from hetsim.report.text import capacity_phrase

    s = run.summary
    wl = run.workload.summary()
    head = [
        ("workload", s["workload"]),
        ("platform", s["platform"]),
        ("mapper", s["mapper"]),
        ("contention", ", ".join(s["contention"]) or "off"),
        ("operators", f"{s['operators']:,} ({wl['edges']:,} edges, {wl['macs'] / 1e9:,.3f} GMAC)"),
        ("makespan", quantity(s["makespan_s"], "s")),
    ]
    if s.get("predicted_makespan_s") is not None and not math.isclose(
            s["predicted_makespan_s"], s["makespan_s"], rel_tol=1e-12, abs_tol=1e-18):
        head.append(("mapper's prediction", quantity(s["predicted_makespan_s"], "s") + " (the replay differs)"))
    spill = (s.get("memory") or {}).get("spill")
    if spill and spill.get("memories"):
        head.append(("with the spill charged", quantity(spill["makespan_with_spill_s"], "s") + ", "
                     + quantity(spill["energy_with_spill_j"], "J") + " (the spill traffic after the schedule)"))
    base = s.get("baseline") or "all-host"
    head.append((f"{base} makespan", quantity(s.get("baseline_makespan_s"), "s")))
    speedup = "-" if not s.get("speedup") else f"{s['speedup']:.4g}x"
    if s.get("baseline_error"):  # why there is none: the baseline mapper's refusal (its first line)
        speedup += f" (no baseline: {s['baseline_error'].splitlines()[0][:300]})"
    head.append((f"speed-up over {base}", speedup))
    head.append(("energy", quantity(s["energy_j"], "J")))
    off = s["ops_offloaded"]
    head.append(("ops offloaded", f"{off['count']:,} of {s['operators']:,}"))
    for dev, info in off["by_device"].items():
        cap = s.get("capacities", {}).get(dev)
        extra = f"; {capacity_phrase(cap, ' of ')}" if cap else ""
        head.append((f"offloaded to {dev}", f"{info['count']:,} ops{extra}"))
    st = s.get("mapper_stats") or {}
    if st.get("status"):
        solver = st["status"].replace("_", " ")
        if st.get("solve_time_s") is not None:
            solver += f" after {st['solve_time_s']:.3g} s"
        if st.get("mip_gap") is not None:
            solver += f", gap {st['mip_gap'] * 100:.3g} %"
        if st.get("bound_s") is not None:
            solver += f", bound {quantity(st['bound_s'], 's')}"
        if s.get("replayed_schedule"):
            solver += " (as saved with the schedule, which is replayed here)"
        head.append(("solver", solver))
    if heuristic_note(s):
        head.append(("note", heuristic_note(s)))
    cs = s.get("channel_split")
    if cs:
        shares = ", ".join(f"{d} {v * 100:.1f} %" for d, v in sorted(cs["share"].items(), key=lambda kv: -kv[1]))
        head.append(("channel split (ODiMO)", f"{cs['total_channels']:,} output channels: {shares or '-'}; "
                                              f"{cs['split_layers']} layers split"))
    if s.get("host_latency_fallback_ops"):
        head.append(("note", f"{s['host_latency_fallback_ops']} ops not in the host's latency table use the "
                              "roofline"))
    from hetsim.report.notes import idle_device_warnings

    head += [("warning", w.removeprefix("warning: ")) for w in idle_device_warnings(run.costs)]
    dev = pd.DataFrame(s["devices"])
    if ops is None:
        ops = op_table(run.costs, run.schedule, run.result)
    sections = [
        ("Summary", kv_table(head)),
        ("Devices", table_html(dev, scroll=False, texts=not_modelled_cells(dev, run.platform))
         + "<p>busy: unit-seconds on a multi-core CPU (its cores), else the union of the busy intervals; "
           "energy = active + idle + per-op + per-byte energy (ODiMO Eq. 4, generalised).</p>"),
        _time_section(run.breakdown if breakdown is None else breakdown),
        ("Figures", _figures(figures)),
        *_memory_section(s.get("memory")),
        (f"Operators ({len(ops):,})", op_table_html(ops)),
        _path_section(run.critical_path if critical_path is None else critical_path),
        ("Raw numbers", _json_block(s)),
    ]
    title = f"{s['workload']} on {s['platform']} ({s['mapper']})"
    return page_html(title, "hetsim run: simulated schedule of an ONNX model on a heterogeneous SoC", sections)


def _time_section(breakdown: pd.DataFrame) -> tuple[str, str]:
    """The report's section on where the time goes: busy time and energy per device and op type
    (``breakdown.csv``)."""
    return ("Where the time goes", table_html(breakdown, scroll=False)
            + "<p>busy time and energy per device and op type; share: of the device's busy time; energy: active "
              "energy of the busy time plus per-op energy (no idle or link energy).</p>")


def _path_section(path: pd.DataFrame) -> tuple[str, str]:
    """The report's critical-path section: its ops in order (``critical_path.csv`` has every op's slack)."""
    on = path[path["on_path"]].drop(columns=["on_path"])
    span = float(on["finish_s"].iloc[-1] - on["start_s"].iloc[0]) if len(on) else 0.0
    cp = (f"<p>{len(on):,} ops from {escape(str(on['op'].iloc[0]))} to {escape(str(on['op'].iloc[-1]))}, "
          f"{quantity(span, 's')}: each op's binding predecessor back from the op that finishes last (gap: a "
          "transfer, or a wait for a resource); slack: latest start minus start on the replay's DAG (data and "
          "control dependencies, the serial devices' orders). "
          "<code>critical_path.csv</code> has every op's slack.</p>") if len(on) else ""
    return ("Critical path", cp + (op_table_html(on, "critical_path.csv") if len(on) else "<p>no ops</p>"))


def _memory_section(mem: dict | None) -> list[tuple[str, str]]:
    """The report's activation-memory section (summary.json's ``memory``, :mod:`hetsim.analysis.footprint`)."""
    if not mem:
        return []
    rows = [{"memory": n, "devices": ", ".join(m["devices"]), "peak_bytes": m["peak_bytes"],
             "predicted_peak_bytes": m["predicted_peak_bytes"], "capacity_bytes": m["capacity_bytes"],
             "weight_bytes": m.get("weight_bytes", 0), "checked": m["checked"], "fits": m["fits"],
             "peak_at_s": m["peak_at_s"]}
            for n, m in mem["memories"].items()]
    body = table_html(pd.DataFrame(rows), scroll=False) + (
        "<p>Peak live activation bytes per memory: a tensor lives from its producer's start to its last consumer's "
        "finish (graph inputs from 0, outputs to the end); a memory found through <code>shared_by</code> only is "
        "reported, not checked (ODiMO's L1 assumption); <code>local:</code> lanes have no capacity; a memory that also "
        "holds streamed or reprogrammed weights (<code>weight_bytes</code>) has the rest of its capacity for "
        "activations.</p>")
    sp = mem.get("spill")
    if sp:
        srows = [{"memory": n, **x} for n, x in sp["memories"].items()]
        body += "<p>Spilled (write out + read back once, serialised after the schedule):</p>"
        body += table_html(pd.DataFrame(srows), scroll=False) if srows else "<p>nothing: every memory fits.</p>"
    return [("Activation memory", body)]


def write_run_html(run, path: str | os.PathLike, figures: Iterable[tuple[str | os.PathLike, str]] = (),
                   ops: pd.DataFrame | None = None, breakdown: pd.DataFrame | None = None,
                   critical_path: pd.DataFrame | None = None) -> Path:
    """Write :func:`run_report_html` to ``path`` atomically; returns the path."""
    return write_html(path, run_report_html(run, figures, ops, breakdown, critical_path))


# --------------------------------------------------------------------------------------------- sweeps

FIGURE_CAPTIONS = {
    "fig3_speedup_": "Speed-up over all-host per crossbar count and MVM latency (CPU-CIM ILP Fig. 3)",
    "fig4_speedup_models_": "Speed-up per model (CPU-CIM ILP Fig. 4)",
    "fig5_breakdown_": "Latency breakdown per configuration (CPU-CIM ILP Fig. 5)",
    "snn_speedup_vs_density": "SNN speed-up over all-M33 against spike density (SpikeDuet)",
    "latency_vs_offered_load": "Latency p50/p99 per stream against the offered load, saturation marked (scenario)",
}


def figure_caption(stem: str) -> str:
    """A caption for a ``hetsim plot`` figure from its file stem."""
    for prefix, text in FIGURE_CAPTIONS.items():
        if stem.startswith(prefix):
            rest = stem[len(prefix):]
            return f"{text}: {rest}" if rest else text
    return stem


def sweep_report_html(df: pd.DataFrame, figures: Iterable[tuple[str | os.PathLike, str]] = (),
                      source: str = "") -> str:
    """The report of a sweep's results table: counts (and why points have no baseline, the first of their
    ``baseline_error``), the figures (embedded) and every row of the table (without the ``key`` column, whose
    content the other identifying columns repeat)."""
    n = len(df)
    failed = int(df["error"].notna().sum()) if "error" in df else 0
    head = [("results", source or "-"), ("points", f"{n:,}" + (f" ({failed:,} failed)" if failed else ""))]
    for col in ("workload", "platform", "mapper", "mode"):
        if col in df:
            vals = [str(v) for v in dict.fromkeys(df[col].dropna())]
            head.append((f"{col}s", ", ".join(vals) if len(vals) <= 12 else f"{len(vals)} distinct"))
    if "speedup" in df and "workload" in df:
        sp = pd.to_numeric(df["speedup"], errors="coerce")
        best = sp.groupby(df["workload"]).max().dropna()
        if len(best):
            head.append(("best speed-up", ", ".join(f"{w} {v:.4g}x" for w, v in best.items())))
    nobase = no_baseline(df, 300)  # points that ran without a baseline (so no speed-up): why, as a run's report says
    if nobase:
        head.append(("no baseline", f"{nobase[0]:,} point{'s' if nobase[0] != 1 else ''}, e.g. {nobase[1]}"))
    shown = df.drop(columns=["key"]) if "key" in df else df
    sections = [
        ("Summary", kv_table(head)),
        ("Figures", _figures(figures)),
        (f"Results ({n:,} rows)", table_html(shown)),
    ]
    title = f"Sweep results {source}" if source else "Sweep results"
    return page_html(title, "hetsim plot: a design-space sweep's figures and results table", sections)


def write_sweep_html(df: pd.DataFrame, path: str | os.PathLike, figures: Iterable[tuple[str | os.PathLike, str]] = (),
                     source: str = "") -> Path:
    """Write :func:`sweep_report_html` to ``path`` atomically; returns the path."""
    return write_html(path, sweep_report_html(df, figures, source))
