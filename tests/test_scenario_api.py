"""A scenario's result in Python: a repr of one screen, its DataFrames, its figure methods (returning matplotlib
Figures), the timeline drawn at true width, and its two energies per request named in the terminal report."""

from __future__ import annotations

import matplotlib
import pandas as pd
import pytest
from conftest import host_op, make_platform
from matplotlib.figure import Figure

from hetsim.costs import CostModel
from hetsim.scenario.report import format_scenario_report
from hetsim.scenario.run import run_scenario
from hetsim.scenario.spec import Scenario
from hetsim.workload import Workload


@pytest.fixture(scope="module")
def quiet():
    """One host op every 40 of its durations: the host busy 2.5 % of the time."""
    plat = make_platform(host_cores=1, cim_cores=1, crossbars_per_core=2)
    wl = Workload.from_ops("one", [host_op("x", 3000)], [])
    d = CostModel(wl, plat).latency["x"]["host"]
    sc = Scenario.model_validate({"name": "quiet", "mapper": "all-host", "timeline_requests": 50, "streams": {
        "a": {"model": "unused.onnx", "arrival": {"process": "periodic", "period_s": 40 * d}, "count": 50}}})
    return run_scenario(plat, sc, workloads={"a": wl}), d


def test_repr_is_one_screen_and_names_the_tables_and_figures(quiet):
    r, _ = quiet
    text = repr(r)
    assert len(text.splitlines()) <= 15 and len(text) < 2000  # not the 98 KB of every table
    assert text.startswith("<ScenarioResult quiet on ") and "a: 50 served" in text
    assert "plot_latency()" in text and "requests" in text
    for table in (r.requests, r.streams, r.devices):
        assert isinstance(table, pd.DataFrame)
    assert len(r.requests) == 50 and list(r.streams["stream"]) == ["a"]


def test_figure_methods_return_figures_and_save_them(quiet, tmp_path):
    r, _ = quiet
    for name in ("plot_latency", "plot_timeline", "plot_occupancy"):
        fig = getattr(r, name)(tmp_path / f"{name}.png")
        assert isinstance(fig, Figure) and (tmp_path / f"{name}.png").stat().st_size > 0
        assert fig.get_figwidth() * fig.dpi >= 700  # readable in a notebook, not ~380 px
        matplotlib.pyplot.close(fig)


def test_timeline_draws_a_quiet_device_at_its_true_width(quiet):
    """The host is busy 2.5 % of the time: the bars drawn add up to its busy time (no edge line widens them),
    and its lane says 2.5 %."""
    r, d = quiet
    fig = r.plot_timeline()
    ax = fig.axes[0]
    bars = [c for c in ax.collections if len(c.get_paths())]
    assert bars and all((c.get_linewidths() == 0).all() for c in bars)
    widths_ms = sum(p.get_extents().width for c in bars for p in c.get_paths())
    assert widths_ms == pytest.approx(50 * d * 1e3, rel=1e-6)
    labels = [t.get_text() for t in ax.get_yticklabels()]
    host = next(t for t in labels if t.startswith("host"))
    assert "2.5%" in host.split("\n")[1]  # 1 of every 40 durations, over the time shown
    matplotlib.pyplot.close(fig)


def test_the_two_energies_per_request_are_named(quiet):
    r, _ = quiet
    text = format_scenario_report(r)
    assert "per request (idle shared out)" in text
    assert "a request's own ops and transfers (active energy, no idle): a " in text
    assert "energy mJ" not in text  # one unit per column, chosen from its values


def test_throughput_may_exceed_offered_and_the_html_caption_says_why(quiet):
    """Throughput counts the stream's completions in the window, warm-up requests' included: a backlog queued
    before the window that drains inside it makes throughput exceed offered (by hand: arrivals 0, 1, 2 s; finishes
    0.5, 1.5, 2.5 s; two warm-up requests done at 0.2 and 0.9 s: offered 2 / 2 s = 1/s, throughput 4 / 2 s = 2/s).
    The report's caption must not claim throughput <= offered beside such numbers."""
    import numpy as np

    from hetsim.scenario.report import scenario_report_html
    from hetsim.scenario.run import rates_measured

    offered, thr = rates_measured(np.array([0.0, 1.0, 2.0]), np.array([0.5, 1.5, 2.5]),
                                  done_s=np.array([0.2, 0.9]))
    assert (offered, thr) == (1.0, 2.0)
    page = scenario_report_html(quiet[0])
    assert "&le; offered" not in page and "throughput exceeds offered when requests queued before t0" in page
