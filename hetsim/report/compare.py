"""Two runs side by side: ``hetsim compare RUN_A RUN_B`` and :func:`hetsim.compare`.

A run is what ``hetsim run --out DIR`` wrote: its ``summary.json`` (given as the folder or the file), and, when
the folder has it, its ``ops.csv`` (one row per op: type, device, latency, energy). Both runs must be of one kind:

* ``dag`` (an operator DAG): headline makespan, energy, speed-up over its own baseline, ops offloaded;
* ``snn`` (a spiking network): mean latency per inference (``makespan_s``), energy per inference, speed-up over
  all sparse M33, SRAM used for weights;
* ``scenario`` (streams of requests): requests, simulated time, energy and energy per request, the analytic
  bottleneck's load; per stream its throughput, latency mean and percentiles, deadline misses and energy per
  request.

Every kind adds per device (and link) its busy time, utilisation and energy, and, from ``ops.csv`` when both
folders have it, per op type the ops, their summed latency and energy. Each row holds both values, ``delta = b -
a`` and ``delta_pct = 100 * (b - a) / a`` (``None`` when ``a`` is 0 or a value is missing); ``B vs A`` is the
speed-up of B over A, ``makespan_a / makespan_b`` (a scenario: mean latency of each stream).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from hetsim.errors import InputError

#: the kinds of run :func:`compare` tells apart, as the messages name them
RUN_KINDS = {"dag": "a DAG run", "snn": "a spiking-network run", "scenario": "a scenario run"}
#: largest summary.json read (a run of a large model names every offloaded op)
MAX_SUMMARY_BYTES = 256 << 20

_HEADLINE = {
    "dag": ["makespan_s", "energy_j", "speedup", "ops_offloaded"],
    "snn": ["makespan_s", "energy_j", "speedup", "sram_used_kib"],
    "scenario": ["requests", "simulated_s", "energy_j", "energy_per_request_j", "bottleneck_load"],
}
_DEVICE = ["busy_s", "utilisation", "energy_j"]
_STREAM = ["measured", "throughput_hz", "latency_mean_s", "latency_p50_s", "latency_p95_s", "latency_p99_s",
           "latency_max_s", "deadline_miss", "energy_per_request_j"]
_OP_TYPE = ["ops", "latency_s", "energy_j"]
COLUMNS = ["section", "item", "metric", "a", "b", "delta", "delta_pct"]
#: metrics that are fractions: shown in %, their differences in percentage points
_PERCENT = ("utilisation", "deadline_miss", "bottleneck_load")


@dataclass
class Run:
    """One side of a comparison: its path as given, ``summary.json``'s content, its kind and its ``ops.csv``
    (``None`` when the folder has none)."""

    path: Path
    summary: dict
    kind: str
    ops: pd.DataFrame | None


@dataclass
class Comparison:
    """Two runs of one kind side by side (:func:`compare`).

    Attributes:
        kind: ``dag``, ``snn`` or ``scenario``.
        a, b: the runs (:class:`Run`).
        frame: one row per compared number, columns :data:`COLUMNS`: ``section`` (``headline``, ``device``,
            ``op_type``, ``stream``), ``item`` (the device, op type or stream; ``""`` in the headline), ``metric``
            (its unit in its name: ``makespan_s``, ``energy_j``, ``utilisation`` a fraction), ``a``, ``b``,
            ``delta`` (b - a), ``delta_pct`` (100 * delta / a, ``None`` when a is 0 or a value is missing).
        speedup: ``makespan_a / makespan_b`` (B over A), or per stream for a scenario (mean latency); ``None``
            when a makespan is missing or 0.
    """

    kind: str
    a: Run
    b: Run
    frame: pd.DataFrame
    speedup: float | dict[str, float | None] | None

    def section(self, name: str) -> pd.DataFrame:
        """The rows of one section (``headline``, ``device``, ``op_type``, ``stream``), index reset."""
        return self.frame[self.frame["section"] == name].reset_index(drop=True)

    def __repr__(self) -> str:
        return (f"Comparison({self.kind}: {self.a.path} vs {self.b.path}, {len(self.frame)} numbers; "
                ".frame, .section(name), .to_text())")

    def to_text(self) -> str:
        """The comparison as the terminal shows it (``hetsim compare``)."""
        return format_comparison(self)


def run_kind(summary: dict) -> str | None:
    """The kind of run a ``summary.json`` describes (:data:`RUN_KINDS`), or ``None`` when it is none of them."""
    if "scenario" in summary and "streams" in summary:
        return "scenario"
    if "makespan_s" in summary and ("per_layer" in summary or "timesteps" in summary):
        return "snn"
    if "makespan_s" in summary and "devices" in summary:
        return "dag"
    return None


def load_run(path: str | Path) -> Run:
    """Read a run: a folder ``hetsim run --out`` wrote (its ``summary.json`` and, when present, ``ops.csv``) or
    a ``summary.json`` file.

    Raises:
        InputError: one line: the path does not exist, a folder without ``summary.json``, a file that is not
            JSON or not a hetsim summary.
    """
    p = Path(path)
    if p.is_dir():
        file = p / "summary.json"
        if not file.is_file():
            raise InputError(f"{str(p)!r} holds no summary.json: give a folder 'hetsim run --out' wrote, or its "
                             "summary.json")
    elif p.is_file():
        file = p
    else:
        raise InputError(f"{str(p)!r} does not exist")
    try:
        with file.open("rb") as f:
            data = f.read(MAX_SUMMARY_BYTES + 1)
        if len(data) > MAX_SUMMARY_BYTES:
            raise InputError(f"{file}: larger than {MAX_SUMMARY_BYTES >> 20} MiB; not a hetsim summary.json")
        summary = json.loads(data.decode("utf-8"))
    except OSError as err:
        raise InputError(f"{str(file)!r} cannot be read: {err.strerror or err}") from None
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise InputError(f"{file}: not a JSON file (give a run folder or its summary.json)") from None
    kind = run_kind(summary) if isinstance(summary, dict) else None
    if kind is None:
        raise InputError(f"{file}: not a hetsim run's summary.json (no makespan_s and devices, no scenario streams)")
    ops = None
    ops_csv = file.parent / "ops.csv"
    if kind != "scenario" and ops_csv.is_file():
        try:
            ops = pd.read_csv(ops_csv, usecols=["type", "latency_s", "energy_j"])
        except (ValueError, OSError, pd.errors.ParserError):
            ops = None  # not ours, or an older layout: the per-op-type rows are left out
    return Run(p, summary, kind, ops)


def _num(v) -> float | None:
    if v is None or isinstance(v, bool | str):
        return float(v) if isinstance(v, bool) else None
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def _row(section: str, item: str, metric: str, a, b) -> dict:
    a, b = _num(a), _num(b)
    delta = b - a if a is not None and b is not None else None
    if delta is not None and abs(delta) <= 1e-9 * max(abs(a), abs(b)):
        delta = 0.0  # the same number, summed in another order
    pct = 100.0 * delta / abs(a) if delta is not None and a else None
    return {"section": section, "item": item, "metric": metric, "a": a, "b": b, "delta": delta, "delta_pct": pct}


def _headline(run: Run) -> dict:
    s = run.summary
    out = {k: s.get(k) for k in _HEADLINE[run.kind]}
    if run.kind == "dag":
        out["ops_offloaded"] = (s.get("ops_offloaded") or {}).get("count")
    if run.kind == "scenario":
        out["bottleneck_load"] = (s.get("bottleneck") or {}).get("load")
    return out


def _by(rows: list[dict] | None, key: str) -> dict[str, dict]:
    return {str(r.get(key)): r for r in rows or [] if isinstance(r, dict)}


def _paired(a: dict[str, dict], b: dict[str, dict]) -> list[str]:
    """Names of ``a`` in its order, then those only ``b`` has."""
    return list(a) + [k for k in b if k not in a]


def _op_types(ops: pd.DataFrame) -> dict[str, dict]:
    g = ops.groupby("type", sort=False)
    table = pd.DataFrame({"ops": g.size(), "latency_s": g["latency_s"].sum(), "energy_j": g["energy_j"].sum()})
    return {str(t): r.to_dict() for t, r in table.sort_values("latency_s", ascending=False).iterrows()}


def compare(a: str | Path | Run, b: str | Path | Run) -> Comparison:
    """Compare run ``b`` against run ``a`` (module docstring): folders ``hetsim run --out`` wrote, their
    ``summary.json`` files, or :func:`load_run` results.

    Raises:
        InputError: one line: a path :func:`load_run` refuses, or two runs of different kinds (a scenario against
            a single run, a spiking network against a DAG).
    """
    ra = a if isinstance(a, Run) else load_run(a)
    rb = b if isinstance(b, Run) else load_run(b)
    if ra.kind != rb.kind:
        raise InputError(f"{ra.path} is {RUN_KINDS[ra.kind]} and {rb.path} is {RUN_KINDS[rb.kind]}: hetsim compare "
                         "compares two runs of one kind")
    rows = []
    ha, hb = _headline(ra), _headline(rb)
    rows += [_row("headline", "", k, ha[k], hb[k]) for k in ha]
    da, db = _by(ra.summary.get("devices"), "device"), _by(rb.summary.get("devices"), "device")
    for d in _paired(da, db):
        rows += [_row("device", d, m, da.get(d, {}).get(m), db.get(d, {}).get(m)) for m in _DEVICE]
    if ra.ops is not None and rb.ops is not None:
        oa, ob = _op_types(ra.ops), _op_types(rb.ops)
        for t in _paired(oa, ob):
            rows += [_row("op_type", t, m, oa.get(t, {}).get(m), ob.get(t, {}).get(m)) for m in _OP_TYPE]
    speedup: float | dict[str, float | None] | None
    if ra.kind == "scenario":
        sa, sb = _by(ra.summary.get("streams"), "stream"), _by(rb.summary.get("streams"), "stream")
        for st in _paired(sa, sb):
            rows += [_row("stream", st, m, sa.get(st, {}).get(m), sb.get(st, {}).get(m)) for m in _STREAM]
        speedup = {st: _ratio(sa.get(st, {}).get("latency_mean_s"), sb.get(st, {}).get("latency_mean_s"))
                   for st in _paired(sa, sb)}
    else:
        speedup = _ratio(ra.summary.get("makespan_s"), rb.summary.get("makespan_s"))
    return Comparison(ra.kind, ra, rb, pd.DataFrame(rows, columns=COLUMNS), speedup)


def _ratio(a, b) -> float | None:
    a, b = _num(a), _num(b)
    return a / b if a is not None and b else None


_TITLES = {"headline": "", "device": "per device", "op_type": "per op type (ops.csv: count, summed latency, energy)",
           "stream": "per stream"}


def _cells(metric: str, values: list[float | None]) -> list[str]:
    """``values`` of ``metric`` (a, b, delta) in one unit: seconds and joules with one SI prefix
    (:func:`hetsim.report.text.si_column`), utilisation and miss rates in %, counts as integers, the rest with 4
    significant digits."""
    from hetsim.report.text import si_column
    from hetsim.report.units import field_unit

    unit = field_unit(metric).unit
    if metric in _PERCENT:
        return ["-" if v is None else f"{100 * v:,.1f} %" for v in values]
    if unit is not None and unit.symbol in ("s", "J"):
        return si_column(values, unit.symbol)
    if metric in ("ops", "ops_offloaded", "requests", "measured"):
        return ["-" if v is None else f"{v:,.0f}" for v in values]
    if metric == "speedup":
        return ["-" if v is None else f"{v:,.3f}x" for v in values]
    suffix = f" {unit.symbol}" if unit is not None else ""
    return ["-" if v is None else f"{v:,.4g}{suffix}" for v in values]


def format_comparison(c: Comparison) -> str:
    """The text of ``hetsim compare``: the headline, then per device, per op type and per stream, each number of
    A and B with ``B - A`` and its percentage of A. Fractions (utilisation, deadline misses, the bottleneck's
    load) are shown in %, their differences in percentage points (pp). A device's energy of exactly 0 J in both
    runs reads ``not modelled``."""
    from hetsim.numbers import NOT_MODELLED
    from hetsim.report.table import text_table

    lines = [f"hetsim compare: two {RUN_KINDS[c.kind].removeprefix('a ')}s", f"  A  {c.a.path}: {_what(c.a)}",
             f"  B  {c.b.path}: {_what(c.b)}"]
    if isinstance(c.speedup, float):
        lines.append(f"  B vs A: speed-up {c.speedup:.3f}x (makespan of A / makespan of B)")
    elif isinstance(c.speedup, dict):
        shown = ", ".join(f"{s} {v:.3f}x" for s, v in c.speedup.items() if v is not None)
        if shown:
            lines.append(f"  B vs A: speed-up per stream (mean latency of A / of B): {shown}")
    for sec in ("headline", "device", "op_type", "stream"):
        rows = c.section(sec)
        if rows.empty:
            continue
        lines += ["", f"  {_TITLES[sec]}"] if _TITLES[sec] else [""]
        table = []
        for r in rows.itertuples(index=False):
            a, b, d, p = (None if pd.isna(x) else float(x) for x in (r.a, r.b, r.delta, r.delta_pct))
            va, vb, vd = _cells(r.metric, [a, b, d])
            if sec == "device" and r.metric == "energy_j" and a == 0 and b == 0:
                # exactly 0 J in both: no energy figure (a device with one is charged its idle or active power
                # over any makespan), never printed as a measured 0
                va = vb = NOT_MODELLED
                d = p = None
            if d is None:
                vd = "-"
            elif r.metric in _PERCENT:
                vd = f"{100 * d:+,.1f} pp"
            elif d > 0:
                vd = "+" + vd
            pct = "-" if p is None else f"{p:+,.1f} %"
            table.append([r.item, r.metric, va, vb, vd, pct])
        head = ["", "", "A", "B", "B - A", "%"]
        if sec == "headline":
            table, head = [row[1:] for row in table], head[1:]
        right = set(range(len(head) - 4, len(head)))
        lines += text_table(head, table, right=right, indent="    ")
    return "\n".join(line.rstrip() for line in lines)


def _what(run: Run) -> str:
    s = run.summary
    name = s.get("scenario") if run.kind == "scenario" else s.get("workload")
    return f"{name} on {s.get('platform')}, mapper {s.get('mapper')}"
