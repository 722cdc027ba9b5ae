"""``hetsim run --out`` stays linear and bounded on big graphs (no quadratic step, no unbounded output).

No timings: the tests count how often the schedule's O(ops) views are built while the outputs are written (a
constant, whatever the graph's size), check that the report's op table, its raw-numbers block and the timeline
are bounded (and say so), and check the sweep that shares a CIM's busy time among overlapping ops against the
direct evaluation it replaced, to the last bit.
"""

from __future__ import annotations

import json

import matplotlib
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hetsim.analysis.plots as P
import hetsim.report.html as H
from hetsim.analysis.metrics import shared_busy
from hetsim.api import load_platform, run
from hetsim.report.outputs import write_outputs
from hetsim.schedule import Schedule
from hetsim.workload.synthetic import chain, layered_dag

matplotlib.use("Agg")

PUMA = "platforms/puma.yaml"


def _counting(monkeypatch) -> dict[str, int]:
    """Count every build of ``Schedule.assignment`` and ``Schedule.splits``."""
    calls = {"assignment": 0, "splits": 0}
    for name in calls:
        view = getattr(Schedule, name).fget

        def counted(self, _view=view, _name=name):
            calls[_name] += 1
            return _view(self)

        monkeypatch.setattr(Schedule, name, property(counted))
    return calls


@pytest.fixture(scope="module")
def runs():
    plat = load_platform(PUMA)
    return {n: run(plat, layered_dag(n, seed=1), mapper="greedy") for n in (40, 300)}


def test_schedule_views_are_built_a_constant_number_of_times(runs, tmp_path, monkeypatch):
    counts = {}
    for n, r in runs.items():
        assert r.summary["ops_offloaded"]["count"] > 0  # the CIM runs ops: placements, crossbars, transfers
        calls = _counting(monkeypatch)
        write_outputs(r, tmp_path / str(n))
        counts[n] = dict(calls)
        monkeypatch.undo()
    # the same handful of builds for 40 and for 300 ops: none per op (was two per op in the op table)
    assert counts[40] == counts[300]
    assert sum(counts[300].values()) <= 6


def test_device_of_is_the_assignment(runs):
    s = runs[40].schedule
    a = s.assignment
    assert all(s.device_of(v) == d for v, d in a.items())


def test_report_op_table_is_capped_with_a_link_to_ops_csv(tmp_path, monkeypatch):
    monkeypatch.setattr(H, "OP_TABLE_ROWS", 100)
    monkeypatch.setattr(H, "JSON_LIST_ITEMS", 50)
    r = run(load_platform(PUMA), chain(1500, seed=2), mapper="all-host")
    write_outputs(r, tmp_path)
    html = (tmp_path / "report.html").read_text()
    ops = pd.read_csv(tmp_path / "ops.csv")
    assert len(ops) == 1500
    assert "The first 100 of 1,500 ops" in html and '<a href="ops.csv">ops.csv</a>' in html
    body = html.split("<h2>Operators (1,500)</h2>", 1)[1].split("</table>", 1)[0]
    assert body.count("<tr>") == 1 + 100  # the header row and the capped rows
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["operators"] == 1500
    # a page whose size does not grow with the graph: the 1,500-op page is within 1.5x of a 150-op one's
    small = run(load_platform(PUMA), chain(150, seed=2), mapper="all-host")
    write_outputs(small, tmp_path / "small")
    assert len(html) < 1.5 * (tmp_path / "small" / "report.html").stat().st_size


def test_raw_numbers_block_cuts_long_lists():
    cut: list[int] = []
    out = H._cap_lists({"a": list(range(10)), "b": {"c": [1, 2]}, "d": (1, 2, 3)}, 4, cut)
    assert out == {"a": [0, 1, 2, 3, "... 6 more"], "b": {"c": [1, 2]}, "d": (1, 2, 3)}
    assert cut == [6]


def test_small_runs_show_every_op():
    df = pd.DataFrame({"op": [f"o{i}" for i in range(5)], "latency_s": np.arange(5.0)})
    assert "first" not in H.op_table_html(df, max_rows=5)
    assert H.op_table_html(df, max_rows=5).count("<tr>") == 6


def _trace(n_ops: int, lanes: int) -> pd.DataFrame:
    """``n_ops`` back-to-back host ops, and ``lanes`` CIM ops all at once."""
    rows = [{"op": f"h{i}", "device": "host", "kind": "compute", "phase": None, "start_s": i * 1e-6,
             "end_s": (i + 1) * 1e-6} for i in range(n_ops)]
    rows += [{"op": f"c{k}", "device": "cim", "kind": "compute", "phase": "mvm", "start_s": 0.0, "end_s": 5e-6}
             for k in range(lanes)]
    return pd.DataFrame(rows)


def test_big_timeline_merges_bars_and_says_so(monkeypatch):
    monkeypatch.setattr(P, "TIMELINE_MAX_BARS", 50)
    fig = P.timeline_figure(_trace(200, 2), host="host")
    ax = fig.axes[0]
    assert "202 trace rows drawn as busy spans" in ax.get_xlabel()
    bars = [c for c in ax.collections if len(c.get_paths())]
    assert sum(len(c.get_paths()) for c in bars) == 3  # the host's 200 ops one span; one per CIM lane
    matplotlib.pyplot.close(fig)
    small = P.timeline_figure(_trace(20, 1), host="host")
    assert small.axes[0].get_xlabel() in ("time (ms)", "time (µs)")
    matplotlib.pyplot.close(small)


def test_timeline_rows_per_device_are_capped(monkeypatch):
    monkeypatch.setattr(P, "TIMELINE_MAX_LANES", 4)
    fig = P.timeline_figure(_trace(3, 10), host="host")
    ax = fig.axes[0]
    assert "cim: lanes 5+ drawn on lane 4" in ax.get_xlabel()
    assert "cim\n10 lanes" in [t.get_text() for t in ax.get_yticklabels()]
    ys = {round(p.vertices[:, 1].min(), 6) for c in ax.collections for p in c.get_paths() if len(p.vertices)}
    assert len(ys) == 1 + 4  # one host row, four CIM rows
    matplotlib.pyplot.close(fig)


def _direct(starts, ends):
    """The evaluation ``shared_busy`` replaced: every elementary interval shared among the rows covering it."""
    cuts = np.unique(np.concatenate([starts, ends]))
    busy = np.zeros(len(starts))
    for a, b in zip(cuts[:-1], cuts[1:], strict=True):
        on = (starts <= a) & (ends >= b)
        if on.any():
            busy[on] += (b - a) / on.sum()
    return busy


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 15)), min_size=1, max_size=30),
       st.sampled_from([1e-9, 3.7e-7, 1.0]))
def test_shared_busy_matches_the_direct_evaluation_bit_for_bit(spans, unit):
    starts = np.array([a * unit for a, _ in spans])
    ends = np.array([(a + w) * unit for a, w in spans])
    got = shared_busy(starts, ends)
    assert got.tolist() == _direct(starts, ends).tolist()
    union = sum(b - a for a, b in _merged(starts, ends))
    assert got.sum() == pytest.approx(union, rel=1e-12, abs=1e-30)


def _merged(starts, ends):
    out = []
    for a, b in sorted(zip(starts.tolist(), ends.tolist(), strict=True)):
        if b <= a:
            continue
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out
