"""Small things a new user met (issue "What a user meets", rough edges): each one's fix, tested where it can
fail."""

from __future__ import annotations

import pytest

from hetsim.cli import build_parser
from hetsim.errors import InputError, did_you_mean


def _help(*argv: str) -> str:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    p = sub.choices[argv[0]]
    return " ".join(p.format_help().split())


def test_run_help_lists_every_out_file():
    from hetsim.report.outputs import output_files

    text = _help("run")
    missing = [f for f in (*output_files("dag"), *output_files("snn")) if f not in text]
    assert not missing, missing


def test_suggestions_ignore_case():
    assert did_you_mean("CPSAT", ["cpsat", "heft"]) == "; did you mean 'cpsat'?"
    assert did_you_mean("conv", ["Conv", "ConvInteger"]) == "; did you mean 'Conv'?"
    assert did_you_mean("Hefft", ["cpsat", "heft"]) == "; did you mean 'heft'?"
    assert did_you_mean("zzz", ["cpsat", "heft"]) == ""
    from hetsim.mappers import get_mapper

    with pytest.raises(InputError, match="did you mean 'cpsat'"):
        get_mapper("CPSAT")


def test_validate_names_each_devices_capacity_not_the_crossbar_budget(capsys):
    from pathlib import Path

    from hetsim.cli import main

    root = Path(__file__).resolve().parents[1]
    r20 = str(root / "workloads/resnet20_cifar10.onnx")
    assert main(["validate", str(root / "platforms/diana.yaml"), r20, "--mapper", "all-8bit"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if "(a)" in x)
    assert "crossbar" not in line and "digital: weight_memory 65,536 B [per-op" in line
    assert main(["validate", str(root / "platforms/puma.yaml"), r20, "--mapper", "greedy"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if "(a)" in x)
    assert "cim: 100 crossbars [resident; CPU-CIM ILP, Eq. 14]" in line


def test_extending_docs_list_every_op_and_gemm_view_field():
    import dataclasses
    from pathlib import Path

    from hetsim.workload.op import GemmView, Op

    doc = (Path(__file__).resolve().parents[1] / "docs" / "extending.md").read_text()
    missing = [f"op.{f.name}" for f in dataclasses.fields(Op) if f"`op.{f.name}`" not in doc and f.name not in
               ("name", "index")]  # the op's identity, not a cost input
    missing += [f"gemm.{f.name}" for f in dataclasses.fields(GemmView) if f"`gemm.{f.name}`" not in doc]
    assert not missing, missing


@pytest.fixture(scope="module")
def snn_async_reordered():
    from pathlib import Path

    import hetsim

    root = Path(__file__).resolve().parents[1]
    return hetsim.run(root / "platforms/efr32mg24.yaml", root / "workloads/snn/digits64.yaml", mode="async",
                      reorder=True)


def test_snn_timeline_names_layers_as_the_tables_and_labels_the_replayed_mode(snn_async_reordered):
    import matplotlib.pyplot as plt

    from hetsim.snn.report import snn_timeline_figure

    r = snn_async_reordered
    fig = snn_timeline_figure(r)
    top, bottom = (ax.get_title(loc="left") for ax in fig.axes[:2])
    assert top.startswith("blocking (the async plan run blocking):") and bottom.startswith("async: ")
    tags = {t.get_text() for ax in fig.axes[:2] for t in ax.texts}
    names = {f"L{name.removeprefix('Linear')}" for name in r.snn.layers["layer"]}
    assert tags and tags <= names  # L0, L1 as Linear0, Linear1 in the layer table
    plt.close(fig)


def test_snn_report_reordering_is_a_table(snn_async_reordered, tmp_path):
    from hetsim.snn.reorder import reorder_rows
    from hetsim.snn.report import snn_report_html

    page = snn_report_html(snn_async_reordered)
    section = page[page.index("Neuron reordering"):]
    section = section[:section.index("<h2", 10)] if "<h2" in section[10:] else section
    assert "<pre>" not in section and "<table" in section
    cols, rows = reorder_rows(snn_async_reordered.snn.reorder)
    assert all(f">{c}</th>" in section for c in cols) and rows


def test_cim_load_and_store_stay_visible_at_paper_width():
    import matplotlib.pyplot as plt
    import numpy as np
    import pandas as pd
    from matplotlib.colors import to_rgba

    from hetsim.analysis.plots import MIN_PHASE_PT, TIMELINE_COLOURS, timeline_figure

    rows = [("a", "host", "cpu", "", 0.0, 0.05), ("b", "cim", "puma", "load", 0.05, 0.05 + 2e-6),
            ("b", "cim", "puma", "mvm", 0.05 + 2e-6, 0.06), ("b", "cim", "puma", "store", 0.06, 0.06 + 1e-6),
            ("c", "host", "cpu", "", 0.06 + 1e-6, 0.1)]
    tr = pd.DataFrame(rows, columns=["op", "device", "kind", "phase", "start_s", "end_s"])
    fig = timeline_figure(tr, host="host")  # 3.5 in wide: 2 us of 100 ms is 0.005 pt
    ax = fig.axes[0]
    widths = {}
    for coll in ax.collections:
        colour = tuple(np.round(coll.get_facecolor()[0], 3))
        for path in coll.get_paths():
            xs = path.vertices[:, 0]
            widths.setdefault(colour, []).append(xs.max() - xs.min())
    least = 100.0 * MIN_PHASE_PT / (3.5 * 72 * 0.85)  # ms
    for phase in ("load", "store"):
        w = widths[tuple(np.round(to_rgba(TIMELINE_COLOURS[phase]), 3))]
        assert min(w) >= least * 0.999, (phase, w)
    plt.close(fig)
