"""hetsim plot for any sweep (hetsim/report/sweep_figure.py, hetsim/cli_plot.py) and the unit parser
(hetsim/report/units.py) the plots, HTML tables and figures share."""

from __future__ import annotations

import itertools

import matplotlib
import pandas as pd
import pytest

from hetsim.cli import main
from hetsim.errors import InputError
from hetsim.report.html import table_html
from hetsim.report.sweep_figure import filter_rows, sweep_figure, sweep_frame, sweep_layout
from hetsim.report.units import axis_label, field_unit, rescalable, value_text

XB, BW = "devices.cim.crossbars", "links.bus.bandwidth_gb_s"


@pytest.mark.parametrize(("name", "stem", "symbol", "to_base"), [
    ("links.bus.bandwidth_gb_s", "links.bus.bandwidth", "GB/s", 1e9),  # not a 'bandwidth_gb' in seconds
    ("devices.cim.t_mvm_ns", "devices.cim.t_mvm", "ns", 1e-9),
    ("makespan_s", "makespan", "s", 1.0),
    ("sram_kib", "sram", "KiB", 1024.0),  # not a 'sram_ki' in bytes
    ("clock_mhz", "clock", "MHz", 1e6),
    ("energy_pj_per_byte", "energy", "pJ/B", 1e-12),
    ("energy_uj", "energy", "\u00b5J", 1e-6),
    ("op_overhead_us", "op_overhead", "\u00b5s", 1e-6),
    ("mvp_launch_cycles", "mvp_launch", "cycles", 1.0),
])
def test_units_from_field_names(name, stem, symbol, to_base):
    fu = field_unit(name)
    assert (fu.stem, fu.unit.symbol) == (stem, symbol)
    assert fu.unit.to_base == pytest.approx(to_base)


def test_names_without_a_unit_and_what_may_be_rescaled():
    for name in ("crossbars", "speedup", "host_ops", "s", "status", "workload_sha256"):
        assert field_unit(name).unit is None, name
    assert rescalable(field_unit("busy_s").unit) and rescalable(field_unit("op_j").unit)
    assert not rescalable(field_unit("t_mvm_ns").unit)  # a swept parameter keeps the sweep file's values
    assert axis_label(BW) == "bus bandwidth (GB/s)" and axis_label("devices.cim.t_mvm_ns") == "cim t_mvm (ns)"
    assert value_text(BW, 10.24) == "10.24 GB/s" and value_text("workload", "r18.onnx") == "r18"


def test_html_headers_parse_units_and_share_one_prefix_per_unit():
    df = pd.DataFrame({"device": ["host", "cim"], "active_j": [0.0915, 0.0092], "op_j": [0.0, 2e-6],
                       "transfer_j": [0.0, 0.0], BW: [10.24, 10.24], "busy_s": [0.076, 0.018]})
    html = table_html(df)
    for head in ("active (mJ)", "op (mJ)", "transfer (mJ)", "links.bus.bandwidth (GB/s)", "busy (ms)"):
        assert f">{head}</th>" in html, head
    assert "(s)</th>" not in html.replace("busy (ms)", "")  # no GB/s field read as seconds


def sweep_table() -> pd.DataFrame:
    """crossbars x bandwidth x two models x two mappers, speedup = a known function of the point."""
    rows = []
    for w, m, xb, bw in itertools.product(["a.onnx", "b.onnx"], ["greedy", "heft"], [25, 50, 100], [2.56, 10.24]):
        sp = xb / 25 + bw / 10 + (1.0 if m == "heft" else 0.0) + (10.0 if w == "b.onnx" else 0.0)
        rows.append({"key": f"{w}|{xb}|{bw}|{m}", XB: xb, BW: bw, "workload": w, "platform": "puma-arm",
                     "mapper": m, "speedup": sp, "makespan_s": 1e-3 / sp, "host_busy_s": 5e-4 / sp,
                     "accel_busy_s": 5e-4 / sp, "host_ops": 10, "accel_ops": xb // 25, "error": None})
    rows.append({**rows[0], "key": "broken", XB: 200, "speedup": None, "error": "boom"})
    return pd.DataFrame(rows)


def test_default_layout_draws_every_swept_axis():
    lay = sweep_layout(sweep_table())
    assert lay.metric == "speedup" and lay.x == XB  # the parameter with the most values
    assert (lay.col, lay.hue, lay.row) == ("workload", BW, "mapper")
    assert lay.aggregated == [] and lay.fixed == {"platform": "puma-arm"}


def test_an_axis_not_drawn_is_aggregated_and_named_on_the_figure():
    df = sweep_table()
    lay = sweep_layout(df, x=XB, hue=BW, over=["mapper"])
    assert lay.aggregated == ["mapper"] and lay.row is None
    frame = sweep_frame(df, lay)
    cell = frame[(frame["workload"] == "a.onnx") & (frame[XB] == 50) & (frame[BW] == 2.56)]
    assert cell["value"].item() == pytest.approx(2 + 0.256 + 0.5)  # mean of greedy (+0) and heft (+1)
    assert cell["points"].item() == 2
    top = sweep_layout(df, x=XB, hue=BW, over=["mapper"], agg="max")
    assert sweep_frame(df, top).loc[cell.index, "value"].item() == pytest.approx(2 + 0.256 + 1)
    fig = sweep_figure(df, x=XB, hue=BW, over=["mapper"])
    title = fig._suptitle.get_text()
    assert "mean over mapper: greedy, heft" in title and "platform puma-arm" in title
    assert "1 failed point not drawn" in title
    assert [ax.get_title(loc="left") for ax in fig.axes[:2]] == ["a", "b"]
    assert fig.legends[0].get_title().get_text() == "bus bandwidth (GB/s)"
    assert fig.axes[0].get_xlabel() == "cim crossbars"
    matplotlib.pyplot.close(fig)


def test_heatmap_cells_hold_the_values():
    df = sweep_table()
    fig = sweep_figure(df, x="crossbars", y="bandwidth_gb_s", where={"mapper": "greedy", "workload": "a.onnx"})
    ax = fig.axes[0]
    texts = sorted(t.get_text() for t in ax.texts)
    want = sorted(f"{xb / 25 + bw / 10:#.3g}" for xb in (25, 50, 100) for bw in (2.56, 10.24))
    assert texts == want
    assert "workload a" in fig._suptitle.get_text() and "mapper greedy" in fig._suptitle.get_text()
    matplotlib.pyplot.close(fig)


def test_bad_roles_are_one_clear_error():
    df = sweep_table()
    with pytest.raises(InputError, match="did you mean 'crossbars'"):
        sweep_layout(df, x="crossbarz")
    with pytest.raises(InputError, match="two roles"):
        sweep_layout(df, x=XB, hue=XB)
    with pytest.raises(InputError, match="heatmap"):
        sweep_layout(df, x=XB, y=BW, hue="mapper")
    with pytest.raises(InputError, match="one of greedy, heft"):
        filter_rows(df, {"mapper": "ilp"})
    assert len(filter_rows(df, {"crossbars": "50"})) == 8  # numbers compared as numbers, short names resolved


def test_cli_draws_any_sweep_and_says_why_presets_are_skipped(tmp_path, capsys):
    df = sweep_table().assign(**{"devices.cim.t_mvm_ns": 50.0})
    table = tmp_path / "r.csv"
    df.to_csv(table, index=False)
    assert main(["plot", str(table), "-o", str(tmp_path / "f")]) == 0
    out = capsys.readouterr().out
    assert "Fig. 3-5 not drawn: the table also varies links.bus.bandwidth_gb_s, mapper" in out
    names = sorted(p.name for p in (tmp_path / "f").iterdir())
    assert names == ["report.html", "sweep_speedup_by_crossbars.pdf", "sweep_speedup_by_crossbars.png",
                     "sweep_speedup_by_crossbars.svg"]
    # a slice that fits the presets draws them too
    assert main(["plot", str(table), "-o", str(tmp_path / "g"), "--where", "mapper=heft", "--where",
                 "bandwidth_gb_s=2.56"]) == 0
    assert (tmp_path / "g" / "fig3_speedup_a.png").is_file()
    assert main(["plot", str(table), "-o", str(tmp_path / "h"), "--x", "nope"]) == 2
    assert "nope" in capsys.readouterr().err


def test_wall_clock_times_keep_their_own_prefix():
    df = pd.DataFrame({"makespan_s": [0.0012, 0.0009], "solve_time_s": [30.0, 12.0], "bound_s": [0.001, 0.0008]})
    html = table_html(df)
    assert ">makespan (ms)</th>" in html and ">bound (ms)</th>" in html and ">solve_time (s)</th>" in html


def _with_row(text: str, i: int, line: str) -> str:
    """``text`` with its line ``i`` (0: the header) replaced by ``line``."""
    lines = text.splitlines()
    lines[i] = line
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(("cut", "row", "words"), [
    (lambda text: _with_row(text, 2, "1,2"), 2, "has 2 fields (cut off?)"),
    (lambda text: text.rstrip("\n")[:-9], None, "fields (cut off?)"),  # a last row cut by a full disk
    (lambda text: _with_row(text, 2, text.splitlines()[2] + ",extra"), 2, "fields, the header"),
])
def test_plot_refuses_a_ragged_or_truncated_table_naming_the_row(tmp_path, capsys, cut, row, words):
    """A row with fewer (or more) fields than the header is refused in one line naming it: read by pandas, the
    missing cells would be drawn as empty without a word."""
    table = tmp_path / "r.csv"
    sweep_table().to_csv(table, index=False)
    text = table.read_text()
    n = len(text.splitlines()) - 1
    table.write_text(cut(text))
    assert main(["plot", str(table), "-o", str(tmp_path / "f")]) == 2
    err = capsys.readouterr().err
    where = f"row {row} (line {row + 1})" if row else f"row {n} (line {n + 1})"
    assert err.startswith(f"hetsim: error: {table}: {where} has ") and words in err and err.count("\n") == 1, err
    assert not (tmp_path / "f").exists()


def test_an_axis_the_drawn_ones_determine_is_not_aggregated_and_nan_is_never_named():
    """mapper_options set per mapper (one mapper without options: NaN in the table) combines nothing once the
    mapper is drawn; listed when it does combine, a missing value reads 'none', never 'nan'."""
    df = sweep_table()
    df["mapper_options"] = df["mapper"].map({"greedy": None, "heft": "rank=mean"})
    lay = sweep_layout(df, x=XB, hue=BW, col="workload", row="mapper")
    assert "mapper_options" not in lay.aggregated
    fig = sweep_figure(df, x=XB, hue=BW, over=["mapper", "mapper_options"])
    title = fig._suptitle.get_text()
    assert "nan" not in title and "mapper_options: none, rank=mean" in title
    matplotlib.pyplot.close(fig)


def test_points_stopped_at_a_limit_are_ringed_and_said_so():
    df = sweep_table()
    df["status"] = "optimal"
    df.loc[(df[XB] == 50) & (df["mapper"] == "heft"), "status"] = "time_limit"
    lay = sweep_layout(df, x=XB, hue=BW, col="workload", row="mapper")
    frame = sweep_frame(df, lay)
    assert set(frame.loc[frame["limited"], XB]) == {50} and set(frame.loc[frame["limited"], "mapper"]) == {"heft"}
    fig = sweep_figure(df, x=XB, hue=BW, col="workload", row="mapper")
    assert "ringed: 4 of 24 drawn values" in fig._suptitle.get_text()
    rings = [ln for ax in fig.axes for ln in ax.get_lines() if isinstance(ln.get_markerfacecolor(), str)
             and ln.get_markerfacecolor() == "none"]
    assert sum(len(ln.get_xdata()) for ln in rings) == 4  # heft x 2 workloads x 2 bandwidths at 50 crossbars
    matplotlib.pyplot.close(fig)
    df["status"] = "optimal"
    fig = sweep_figure(df, x=XB, hue=BW, col="workload", row="mapper")
    assert "ringed" not in fig._suptitle.get_text()
    matplotlib.pyplot.close(fig)


def test_a_load_sweep_is_drawn_against_the_offered_rate_as_set_in_its_order():
    """Measured rates of random arrivals may run backwards between close points: the x axis is the rate the sweep
    set, and the line visits the points in that order."""
    from hetsim.report.dse_plots import latency_vs_load_figure

    rates = [10, 20, 30, 40]
    measured = [10.4, 21.0, 20.6, 39.5]  # the third point measured below the second
    df = pd.DataFrame({"key": [str(r) for r in rates], "scenario": "s", "streams.cls.arrival.rate_hz": rates,
                       "cls.offered_hz": measured, "cls.latency_p50_s": [1e-3, 2e-3, 3e-3, 4e-3],
                       "cls.latency_p99_s": [2e-3, 4e-3, 6e-3, 8e-3], "cls.saturated": [False, False, False, True],
                       "bottleneck_load": [0.25, 0.5, 0.75, 1.0], "error": None})
    fig = latency_vs_load_figure(df)
    p50 = fig.axes[0].get_lines()[0]
    assert list(p50.get_xdata()) == rates and list(p50.get_ydata()) == [1.0, 2.0, 3.0, 4.0]
    assert "as set: rate_hz" in fig.axes[0].get_xlabel()
    matplotlib.pyplot.close(fig)
    periods = df.drop(columns="streams.cls.arrival.rate_hz").assign(**{"streams.cls.arrival.period_s":
                                                                       [1 / r for r in rates]})
    fig = latency_vs_load_figure(periods)
    assert list(fig.axes[0].get_lines()[0].get_xdata()) == pytest.approx(rates)  # 1 / period
    matplotlib.pyplot.close(fig)
