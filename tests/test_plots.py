"""Paper figures: sizes at column width, the shared style, log axes, legends, label digits, file formats.

Small hand-made tables stand in for sweep results (the sweeps themselves are tested in test_sweep*.py).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from hetsim.analysis.plots import (
    COLUMN_WIDTH_IN,
    DOUBLE_WIDTH_IN,
    PAPER_FORMATS,
    STYLE,
    breakdown_figure,
    breakdown_label,
    figure_width,
    format_si,
    output_paths,
    save_figure,
    timeline_figure,
)
from hetsim.report.dse_plots import (
    CROSSBARS,
    T_MVM,
    snn_speedup_density_figure,
    speedup_heatmap_figure,
    speedup_models_figure,
    sweep_breakdown_figure,
)

ROOT = Path(__file__).resolve().parents[1]
MS = 1e-3


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _trace() -> pd.DataFrame:
    """host, a CIM running two ops at once (two lanes) with load/mvm/store phases, a link, a channel-split part."""
    rows = [
        ("a", "host", "compute", "", 0, 1, np.nan),
        ("a->b", "bus", "transfer", "", 1, 1.5, np.nan),
        ("b", "cim", "compute", "load", 1.5, 2, np.nan),
        ("c", "cim", "compute", "load", 1.5, 1.75, np.nan),
        ("c", "cim", "compute", "mvm", 1.75, 2.75, np.nan),
        ("b", "cim", "compute", "mvm", 2, 4, np.nan),
        ("c", "cim", "compute", "store", 2.75, 3, np.nan),
        ("b", "cim", "compute", "store", 4, 4.5, np.nan),
        ("d", "host", "compute", "", 4.5, 5, np.nan),
        ("d", "npu", "compute", "", 4.5, 4.8, 16),
    ]
    df = pd.DataFrame(rows, columns=["op", "device", "kind", "phase", "start_s", "end_s", "channels"])
    df[["start_s", "end_s"]] *= MS
    return df


def _sweep() -> pd.DataFrame:
    """A CPU-CIM ILP style results table: 2 models x 2 platforms x 3 crossbar counts x 2 MVM latencies."""
    rows = []
    for w, big in (("resnet18_int8_ort.onnx", 50.0), ("yolov5n_int8_ort.onnx", 4.9)):
        for plat in ("puma-arm", "puma-x86"):
            for xb in (25, 100, 200):
                for t in (50, 100):
                    s = 1 + (big - 1) * xb / 200 * (50 / t) * (1 if plat == "puma-arm" else 0.1)
                    rows.append({"workload": w, "platform": plat, "mapper": "cpsat", CROSSBARS: xb, T_MVM: t,
                                 "speedup": s, "makespan_s": 0.1 / s, "host_busy_s": 0.1 / s * 0.8,
                                 "accel_busy_s": 0.1 / s * 0.3, "host_ops": 30, "accel_ops": xb // 10,
                                 "operators": 38, "error": np.nan})
    return pd.DataFrame(rows)


def _snn_sweep() -> pd.DataFrame:
    rows = []
    for layers, rec in (("24-192-192-27", "braille192.yaml"), ("24-384-384-27", "braille384.yaml")):
        for c in (0.0, 1.0):
            for dens in (0.05, 0.1, 0.2):
                rows.append({"workload": f"synthetic_{layers}_d{dens}_c{c}", "mapper": "spikeduet",
                             "layers": layers, "timesteps": 51, "density": dens, "clustering": c,
                             "reorder": False, "speedup": 1 + 5 * dens + c / 10, "density_measured": dens,
                             "latency_ms_all_m33": 40.0, "error": np.nan})
        rows.append({"workload": rec, "mapper": "spikeduet", "layers": "12-" + layers[3:-3] + "-7", "timesteps": 51,
                     "density": np.nan, "clustering": np.nan, "reorder": False, "speedup": 1.9,
                     "density_measured": 0.146, "latency_ms_all_m33": 44.0, "error": np.nan})
    return pd.DataFrame(rows)


def _texts(fig) -> list[str]:
    return [t.get_text() for t in fig.findobj(plt.Text)]


# --- width, style, formats ---------------------------------------------------------------------------------------

def test_figure_width():
    assert figure_width() == COLUMN_WIDTH_IN == 3.5
    assert figure_width("double") == DOUBLE_WIDTH_IN == 7.2
    assert figure_width(5) == 5.0
    for bad in ("wide", 0, -1):
        with pytest.raises(ValueError):
            figure_width(bad)


@pytest.mark.parametrize("make", [
    lambda w: timeline_figure(_trace(), "t", width=w),
    lambda w: breakdown_figure(pd.DataFrame({"config": ["x", "x"], "device": ["host", "cim"],
                                             "busy_s": [1e-3, 2e-3], "ops": [3, 4]}), width=w),
    lambda w: speedup_heatmap_figure(_sweep(), "resnet18_int8_ort.onnx", width=w),
    lambda w: speedup_models_figure(_sweep(), 50, width=w),
    lambda w: sweep_breakdown_figure(_sweep(), "yolov5n_int8_ort.onnx", width=w),
    lambda w: snn_speedup_density_figure(_snn_sweep(), width=w),
])
def test_figures_are_column_wide_with_print_sized_text(make):
    before = plt.rcParams["font.size"]
    fig = make("single")
    w, h = fig.get_size_inches()
    assert w == pytest.approx(3.5) and 1.0 < h < 9.5
    sizes = {t.get_fontsize() for t in fig.findobj(plt.Text) if t.get_text().strip()}
    assert sizes and min(sizes) >= 5.0 and max(sizes) <= 9.0  # legible at print size, nothing poster-sized
    assert make("double").get_size_inches()[0] == pytest.approx(7.2)
    assert make(6.0).get_size_inches()[0] == pytest.approx(6.0)
    assert plt.rcParams["font.size"] == before and STYLE["font.size"] == 7.0  # the style is scoped, not global


def test_save_pdf_and_svg(tmp_path):
    fig = timeline_figure(_trace())
    paths = save_figure(fig, tmp_path / "t", formats=PAPER_FORMATS)
    assert [p.name for p in paths] == ["t.png", "t.svg", "t.pdf"]
    assert (tmp_path / "t.pdf").read_bytes()[:5] == b"%PDF-"
    svg = (tmp_path / "t.svg").read_text()
    assert "<svg" in svg and "makespan" in svg  # text kept as text
    assert output_paths(tmp_path / "s") == [tmp_path / "s.png", tmp_path / "s.svg"]  # the default stays PNG+SVG
    assert output_paths(tmp_path / "s.pdf") == [tmp_path / "s.pdf"]
    with pytest.raises(ValueError, match="format"):
        output_paths("x", formats=(".jpg",))
    assert plt.get_fignums() == []


# --- labels -------------------------------------------------------------------------------------------------------

def test_format_si_digits_and_prefixes():
    assert format_si(0.000991, "s") == "991.0 µs"  # DIANA: not "1.0 ms"
    assert format_si(0.000991, "s", 3) == "991 µs"
    assert format_si(0.09217, "s") == "92.17 ms"
    assert format_si(0.0948, "s") == "94.80 ms"
    assert format_si(5.1e-8, "s") == "51.00 ns"
    assert format_si(2.114e-6, "J") == "2.114 µJ"
    assert format_si(1.5, "s") == "1.500 s"
    assert format_si(0.99996, "s") == "1.000 s"  # rounding carries into the next prefix
    assert format_si(0.0099996, "s") == "10.00 ms"
    assert format_si(0, "s") == "0 s"


def test_breakdown_labels_busy_and_makespan():
    assert breakdown_label(0.0948, 0.09217) == "busy 94.80 ms\nmakespan 92.17 ms"
    assert breakdown_label(0.000991) == "busy 991.0 µs"
    table = pd.DataFrame({"config": ["all-host", "cpsat", "cpsat"], "device": ["host", "host", "cim"],
                          "busy_s": [0.3, 0.0900, 0.0048], "ops": [38, 20, 18], "units": [1, 1, 1],
                          "utilisation": [1.0, 0.0900 / 0.09217, 0.0048 / 0.09217]})
    texts = _texts(breakdown_figure(table))
    assert "busy 94.80 ms\nmakespan 92.17 ms" in texts  # makespan from device_table's utilisation
    assert "busy 300.0 ms\nmakespan 300.0 ms" in texts
    diana = pd.DataFrame({"config": ["greedy"] * 2, "device": ["digital", "aimc"], "busy_s": [0.0004, 0.000591],
                          "ops": [3, 17], "makespan_s": [0.000991, 0.000991]})
    texts = _texts(breakdown_figure(diana))
    assert "busy 991.0 µs\nmakespan 991.0 µs" in texts and not any("1.0 ms" in t for t in texts)


# --- timeline -----------------------------------------------------------------------------------------------------

def test_timeline_legend_names_every_shade_and_lanes():
    fig = timeline_figure(_trace())
    (legend,) = fig.legends
    labels = [t.get_text() for t in legend.get_texts()]
    for name in ("compute", "CIM load", "CIM MVM", "CIM store", "transfer", "channel-split part", "makespan"):
        assert name in labels
    assert any("lighter" in t for t in labels)  # the alternate shade
    assert any("lanes" in t for t in labels)  # the cim runs two ops at once
    ticks = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert ticks == ["host", "cim\n2 lanes", "npu", "bus"]
    # one lane everywhere: no lane entry
    one = _trace()
    one = one[one["op"] != "c"]
    labels = [t.get_text() for t in timeline_figure(one).legends[0].get_texts()]
    assert not any("lanes" in t for t in labels)


def test_timeline_microsecond_axis():
    tr = _trace()
    tr[["start_s", "end_s"]] *= 1e-3  # 5 us makespan
    fig = timeline_figure(tr)
    assert fig.axes[0].get_xlabel() == "time (µs)"
    assert "makespan 5.000 µs" in _texts(fig)


# --- sweep figures ------------------------------------------------------------------------------------------------

def test_speedup_models_log_axis_and_values():
    fig = speedup_models_figure(_sweep(), 50)
    panels = [ax for ax in fig.axes if ax.get_title(loc="left")]
    assert [ax.get_title(loc="left") for ax in panels] == ["puma-arm", "puma-x86"]
    assert all(ax.get_yscale() == "log" for ax in panels)
    texts = _texts(fig)
    assert "50x" in texts and "4.9x" in texts  # each model's best bar labelled
    assert fig.legends and [t.get_text() for t in fig.legends[0].get_texts()] == ["25", "100", "200"]


def test_sweep_breakdown_small_multiples():
    fig = sweep_breakdown_figure(_sweep(), "yolov5n_int8_ort.onnx")
    panels = fig.axes
    assert len(panels) == 2 * 2  # platform x MVM latency
    for ax in panels:
        assert len(ax.patches) == 2 * 3  # host and accelerator segment per crossbar count
    assert [t.get_text() for t in panels[-1].get_xticklabels()] == ["25", "100", "200"]
    assert "of 38" in fig.legends[0].get_title().get_text()


def test_heatmap_labels_every_cell():
    fig = speedup_heatmap_figure(_sweep(), "resnet18_int8_ort.onnx")
    cells = [t for t in _texts(fig) if t.endswith("x")]
    assert len(cells) == 2 * 3 * 2 and "50x" in cells


def test_snn_density_plot_draws_every_network():
    df = _snn_sweep()
    fig = snn_speedup_density_figure(df)
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any(t.startswith("braille192") and "recorded" in t for t in labels)
    assert any(t.startswith("braille384") and "recorded" in t for t in labels)
    assert "clustering 0" in labels and "clustering 1" in labels
    # the recorded networks land in the panel of the synthetic networks with their hidden widths
    titles = [ax.get_title(loc="left") for ax in fig.axes]
    assert titles == ["24-192-192-27, T = 51", "24-384-384-27, T = 51"]
    for ax in fig.axes:
        assert len(ax.collections) == 1 and len(ax.lines) == 2 + 1  # 1 recorded marker, 2 lines + the 1x line
    # a recorded network with no synthetic network of its shape gets a panel of its own
    odd = pd.concat([df, df.iloc[[-1]].assign(workload="other.yaml", layers="5-50-3")], ignore_index=True)
    assert len(snn_speedup_density_figure(odd).axes) == 3


# --- SNN timeline -------------------------------------------------------------------------------------------------

def test_snn_timeline_legend_clear_of_panels():
    import hetsim
    from hetsim.snn.report import snn_timeline_figure

    r = hetsim.run(ROOT / "platforms" / "efr32mg24.yaml", ROOT / "workloads" / "snn" / "digits64.yaml")
    fig = snn_timeline_figure(r)
    assert tuple(fig.get_size_inches()) == pytest.approx((3.5, 2.9))
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    (legend,) = fig.legends
    assert not any(ax.get_legend() for ax in fig.axes)
    box = legend.get_window_extent(renderer)
    for ax in fig.axes:
        assert not box.overlaps(ax.get_window_extent(renderer))
    labels = [t.get_text() for t in legend.get_texts()]
    assert "affine" in labels and "odd timesteps" in labels


def test_a_long_title_wraps_inside_the_figure_and_figures_are_readable_on_screen():
    """A --set platform's name made titles run off the figure; on screen (a notebook) a 3.5-inch figure showed
    about 380 pixels wide."""
    from hetsim.analysis.plots import SCREEN_DPI, timeline_figure, wrap_title

    title = ("yolov5n on puma-arm with devices.cim.crossbars=50, links.bus.bandwidth_gb_s=2.56, "
             "devices.host.cores=4 (heft)")
    fig = timeline_figure(_trace(), title)
    shown = fig.axes[0].get_title(loc="left")
    assert shown.replace("\n", " ") == title and shown.count("\n") >= 1
    fig.canvas.draw()
    box = fig.axes[0].title.get_window_extent()
    assert box.x0 >= 0 and box.x1 <= fig.get_figwidth() * fig.dpi  # inside the figure
    assert fig.dpi == SCREEN_DPI and fig.get_figwidth() * fig.dpi >= 700
    plt.close(fig)
    assert wrap_title("short", 3.5, 7.5) == "short" and wrap_title("a\nb", 3.5, 7.5) == "a\nb"
