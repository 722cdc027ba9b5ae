"""Tests of the report writers: atomic writes, lane layout, Chrome trace export and plots.

The traces are built by hand. The tiny trace below (times in ms) is

    host  a           [0, 1]                      b, c, e, d: CIM ops with load/mvm/store phases
    bus   a->b, a->c  [1, 1.5] both               (two transfers side by side -> 2 bus lanes)
    cim   b           [1.5, 2] [2, 4] [4, 4.5]    lane 0 (first in the trace)
          c           [1.5, 1.75] [1.75, 2.75] [2.75, 3]   overlaps b -> lane 1
          e           [3, 3.25] [3.25, 3.5] [3.5, 3.75]    starts when c ends, b still busy -> lane 1
    host  d           [4.5, 5]

so cim needs 2 lanes, bus 2 and host 1; every time is exact in binary after scaling to microseconds
(e.g. 0.00175 s * 1e6 == 1750.0).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from hetsim.analysis.lanes import assign_lanes, device_order, lane_counts
from hetsim.analysis.plots import output_paths, plot_breakdown, plot_timeline
from hetsim.report.export import (
    atomic_path,
    atomic_write_bytes,
    atomic_write_text,
    chrome_trace,
    write_chrome_trace,
)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
COLUMNS = ["op", "device", "kind", "phase", "start_s", "end_s"]
MS = 1e-3


def _row(op, device, kind, phase, start_ms, end_ms):
    return (op, device, kind, phase, start_ms * MS, end_ms * MS)


def tiny_trace() -> pd.DataFrame:
    rows = [
        _row("a", "host", "compute", "", 0, 1),
        _row("a->b", "bus", "transfer", "", 1, 1.5),
        _row("a->c", "bus", "transfer", "", 1, 1.5),
        _row("b", "cim", "compute", "load", 1.5, 2),
        _row("c", "cim", "compute", "load", 1.5, 1.75),
        _row("c", "cim", "compute", "mvm", 1.75, 2.75),
        _row("b", "cim", "compute", "mvm", 2, 4),
        _row("c", "cim", "compute", "store", 2.75, 3),
        _row("e", "cim", "compute", "load", 3, 3.25),
        _row("e", "cim", "compute", "mvm", 3.25, 3.5),
        _row("e", "cim", "compute", "store", 3.5, 3.75),
        _row("b", "cim", "compute", "store", 4, 4.5),
        _row("d", "host", "compute", "", 4.5, 5),
    ]
    return pd.DataFrame(rows, columns=COLUMNS)


def _files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


# --- atomic writes ----------------------------------------------------------------------------------------------


def test_atomic_write_text_and_bytes(tmp_path):
    target = tmp_path / "out.txt"
    assert atomic_write_text(target, "first\n") == target
    assert target.read_text() == "first\n"
    atomic_write_text(target, "second ü\n")
    assert target.read_text(encoding="utf-8") == "second ü\n"
    atomic_write_bytes(tmp_path / "b.bin", b"\x00\x01")
    assert (tmp_path / "b.bin").read_bytes() == b"\x00\x01"
    assert _files(tmp_path) == ["b.bin", "out.txt"]  # no temp files left


def test_atomic_path_failure_leaves_target_untouched(tmp_path):
    target = tmp_path / "table.csv"
    target.write_text("old")
    with pytest.raises(RuntimeError, match="writer failed"), atomic_path(target) as tmp:
        tmp.write_text("new, half-written")
        raise RuntimeError("writer failed")
    assert target.read_text() == "old"
    assert _files(tmp_path) == ["table.csv"]


def test_atomic_path_failure_without_target_creates_nothing(tmp_path):
    with pytest.raises(ValueError), atomic_path(tmp_path / "new.csv") as tmp:
        pd.DataFrame({"x": [1]}).to_csv(tmp)
        raise ValueError
    assert _files(tmp_path) == []


def test_atomic_path_temp_file_next_to_target_with_same_suffix(tmp_path):
    target = tmp_path / "fig.svg"
    with atomic_path(target) as tmp:
        assert tmp.parent == tmp_path and tmp.suffix == ".svg" and tmp != target
        assert not target.exists()  # nothing in place before success
        pd.DataFrame({"x": [1, 2]}).to_csv(tmp, index=False)
    assert target.read_text() == "x\n1\n2\n"
    assert _files(tmp_path) == ["fig.svg"]


def test_atomic_write_keeps_mode_of_existing_target(tmp_path):
    target = tmp_path / "m.txt"
    target.write_text("x")
    os.chmod(target, 0o640)
    atomic_write_text(target, "y")
    assert target.stat().st_mode & 0o777 == 0o640


def test_atomic_write_new_file_uses_umask(tmp_path):
    old = os.umask(0o027)
    try:
        atomic_write_text(tmp_path / "n.txt", "x")
    finally:
        os.umask(old)
    assert (tmp_path / "n.txt").stat().st_mode & 0o777 == 0o640  # 0o666 & ~0o027


def test_atomic_write_missing_directory_raises(tmp_path):
    with pytest.raises(FileNotFoundError):
        atomic_write_text(tmp_path / "nope" / "x.txt", "x")
    assert _files(tmp_path) == []


# --- lanes ------------------------------------------------------------------------------------------------------


def test_assign_lanes_tiny_trace():
    tr = tiny_trace()
    lanes = assign_lanes(tr)
    got = {(d, o): int(n) for d, o, n in zip(tr["device"], tr["op"], lanes, strict=True)}
    assert got == {
        ("host", "a"): 0, ("host", "d"): 0,
        ("bus", "a->b"): 0, ("bus", "a->c"): 1,
        ("cim", "b"): 0, ("cim", "c"): 1, ("cim", "e"): 1,  # e reuses c's lane (touching at 3 ms)
    }
    # every phase of an op shares one lane
    assert (lanes.groupby([tr["device"], tr["op"]]).nunique() == 1).all()
    assert lane_counts(tr, lanes) == {"host": 1, "bus": 2, "cim": 2}


def test_assign_lanes_uses_max_overlap_lanes_and_never_overlaps():
    rng = np.random.default_rng(0)
    starts = rng.integers(0, 100, 300).astype(float)  # whole seconds: touching ends are exact
    ends = starts + rng.integers(1, 20, 300)
    tr = pd.DataFrame({"op": [f"o{i}" for i in range(300)], "device": "cim", "kind": "compute", "phase": "mvm",
                       "start_s": starts, "end_s": ends})
    lanes = assign_lanes(tr)
    # largest number of intervals alive at once (half-open [s, e)), by brute force at every start
    depth = max(int(((starts <= t) & (ends > t)).sum()) for t in starts)
    assert lane_counts(tr, lanes)["cim"] == depth
    for _, grp in tr.groupby(lanes):
        g = grp.sort_values("start_s")
        assert (g["start_s"].to_numpy()[1:] >= g["end_s"].to_numpy()[:-1]).all()


def test_device_order_host_then_accelerators_then_links():
    rows = [
        _row("x->y", "bus", "transfer", "", 0, 1),
        _row("y", "cim", "compute", "mvm", 1, 2),
        _row("x", "arm", "compute", "", 0, 1),  # no phases -> CPU-like host
    ]
    tr = pd.DataFrame(rows, columns=COLUMNS)
    assert device_order(tr) == ["arm", "cim", "bus"]
    assert device_order(tr, host="cim") == ["cim", "arm", "bus"]


# --- Chrome trace -----------------------------------------------------------------------------------------------


def test_chrome_trace_tiny():
    meta = {"workload": "tiny", "makespan_s": 0.005}
    doc = chrome_trace(tiny_trace(), meta)
    assert doc["displayTimeUnit"] == "ns"
    assert doc["otherData"] == meta
    json.dumps(doc)  # plain Python types only
    ev = doc["traceEvents"]
    meta_ev = [e for e in ev if e["ph"] == "M"]
    xs = [e for e in ev if e["ph"] == "X"]
    assert len(xs) == 13
    assert ev[: len(meta_ev)] == meta_ev  # metadata first

    names = {e["pid"]: e["args"]["name"] for e in meta_ev if e["name"] == "process_name"}
    assert names == {1: "host", 2: "cim", 3: "bus"}
    sort_idx = {e["pid"]: e["args"]["sort_index"] for e in meta_ev if e["name"] == "process_sort_index"}
    assert sort_idx == {1: 0, 2: 1, 3: 2}
    # thread ids unique over the trace and no pid (Perfetto reads tids as system-wide); without the platform the
    # host's single track is "ops", overlapping ops and transfers get lanes, explained in the process labels
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in meta_ev if e["name"] == "thread_name"}
    assert threads == {(1, 4): "ops", (2, 5): "lane 0", (2, 6): "lane 1", (3, 7): "lane 0", (3, 8): "lane 1"}
    labels = {e["pid"]: e["args"]["labels"] for e in meta_ev if e["name"] == "process_labels"}
    assert labels[1] == "host" and labels[2].startswith("accelerator; lanes: up to 2 ops ran at once")
    assert labels[3].startswith("link; lanes: transfers in flight at once")

    by_name = {e["name"]: e for e in xs}
    mvm_b = by_name["b [mvm]"]
    assert mvm_b["ts"] == 2000.0 and mvm_b["dur"] == 2000.0  # 2 ms .. 4 ms in microseconds
    assert (mvm_b["pid"], mvm_b["tid"], mvm_b["cat"]) == (2, 5, "mvm")
    assert mvm_b["args"] == {"op": "b", "device": "cim", "kind": "compute", "phase": "mvm",
                             "start_s": 0.002, "end_s": 0.004, "track": "lane 0"}
    load_c = by_name["c [load]"]
    assert (load_c["ts"], load_c["dur"], load_c["tid"]) == (1500.0, 250.0, 6)
    store_e = by_name["e [store]"]
    assert (store_e["ts"], store_e["dur"], store_e["tid"]) == (3500.0, 250.0, 6)
    a = by_name["a"]
    assert (a["ts"], a["dur"], a["pid"], a["tid"], a["cat"]) == (0.0, 1000.0, 1, 4, "compute")
    xfer = by_name["a->c"]
    assert (xfer["ts"], xfer["dur"], xfer["pid"], xfer["tid"], xfer["cat"]) == (1000.0, 500.0, 3, 8, "transfer")
    assert not [e for e in ev if e["ph"] in "stf"]  # no arrows without the workload (or explicit flows)

    assert [e["ts"] for e in xs] == sorted(e["ts"] for e in xs)
    # no two events on one (pid, tid) overlap
    for key in {(e["pid"], e["tid"]) for e in xs}:
        lane = sorted((e["ts"], e["ts"] + e["dur"]) for e in xs if (e["pid"], e["tid"]) == key)
        assert all(s2 >= e1 for (_, e1), (s2, _) in zip(lane, lane[1:], strict=False))


def test_chrome_trace_empty_and_no_meta():
    doc = chrome_trace(pd.DataFrame(columns=COLUMNS))
    assert doc == {"traceEvents": [], "displayTimeUnit": "ns", "otherData": {}}


def test_write_chrome_trace_roundtrip(tmp_path):
    path = tmp_path / "run.trace.json"
    meta = {"n": np.int64(3), "makespan_s": np.float64(0.005), "contention": {"links"}, "gap": float("nan")}
    assert write_chrome_trace(tiny_trace(), path, meta) == path
    doc = json.loads(path.read_text())
    assert doc["otherData"] == {"n": 3, "makespan_s": 0.005, "contention": ["links"], "gap": None}
    assert sum(e["ph"] == "X" for e in doc["traceEvents"]) == 13
    assert _files(tmp_path) == ["run.trace.json"]


# --- plots ------------------------------------------------------------------------------------------------------


def test_output_paths():
    assert output_paths("a/t.png") == [Path("a/t.png")]
    assert output_paths("a/t.greedy") == [Path("a/t.greedy.png"), Path("a/t.greedy.svg")]
    assert output_paths(["x.svg", Path("y.PNG")]) == [Path("x.svg"), Path("y.PNG")]


def test_plot_timeline_png_and_svg(tmp_path):
    png = tmp_path / "t.png"
    assert plot_timeline(tiny_trace(), png, title="tiny") == [png]
    assert png.read_bytes()[:8] == PNG_MAGIC and png.stat().st_size > 1000
    svg = tmp_path / "t.svg"
    plot_timeline(tiny_trace(), [svg])
    text = svg.read_text()
    assert "<svg" in text and "time (ms)" in text
    written = plot_timeline(tiny_trace(), tmp_path / "stem")
    assert written == [tmp_path / "stem.png", tmp_path / "stem.svg"]
    assert (tmp_path / "stem.png").read_bytes()[:8] == PNG_MAGIC
    assert _files(tmp_path) == ["stem.png", "stem.svg", "t.png", "t.svg"]
    assert plt.get_fignums() == []  # figures closed


def test_plot_timeline_empty_and_many_ops(tmp_path):
    plot_timeline(pd.DataFrame(columns=COLUMNS), tmp_path / "empty.png")
    assert (tmp_path / "empty.png").read_bytes()[:8] == PNG_MAGIC
    n = 3000
    t = np.arange(n) * 1e-6
    tr = pd.DataFrame({"op": [f"o{i}" for i in range(n)], "device": "host", "kind": "compute", "phase": "",
                       "start_s": t, "end_s": t + 1e-6})
    plot_timeline(tr, tmp_path / "many.png")
    assert (tmp_path / "many.png").read_bytes()[:8] == PNG_MAGIC


def test_plot_breakdown(tmp_path):
    table = pd.DataFrame({
        "config": ["all-host", "all-host", "greedy", "greedy", "greedy"],
        "device": ["host", "cim", "host", "cim", "bus"],
        "kind": ["cpu", "puma", "cpu", "puma", "link"],
        "busy_s": [0.4, 0.0, 0.075, 0.02, 0.005],
        "ops": [263, 0, 204, 59, 173],
    })
    png = tmp_path / "b.png"
    assert plot_breakdown(table, png, title="share") == [png]
    assert png.read_bytes()[:8] == PNG_MAGIC and png.stat().st_size > 1000
    svg = tmp_path / "b.svg"
    plot_breakdown(table.drop(columns="kind"), svg)
    text = svg.read_text()
    assert "<svg" in text and "share of summed busy time (%)" in text
    assert _files(tmp_path) == ["b.png", "b.svg"]
    assert plt.get_fignums() == []


def test_plot_breakdown_missing_column(tmp_path):
    with pytest.raises(ValueError, match="busy_s"):
        plot_breakdown(pd.DataFrame({"config": ["x"], "device": ["host"], "ops": [1]}), tmp_path / "b.png")
    assert _files(tmp_path) == []


# --- terminal report: SI prefixes ---------------------------------------------------------------------------------


def test_si_prefix_per_column_with_four_significant_digits():
    from hetsim.report.text import si, si_column, si_scale

    assert si(92.1654e-3, "s") == "92.17 ms"
    assert si(51.2e-9, "s") == "51.20 ns"  # not "0.000 ms"
    assert si(447.732, "J") == "447.7 J" and si(1234.5, "s") == "1,234 s"  # no kilo: seconds stay seconds
    assert si(0.0, "J") == "0 J" and si(None, "s") == "-"
    assert si(8.0985658e-3, "s") == "8.099 ms" and si(2.8406175, "s") == "2.841 s"  # the units that jumped
    assert si(999.96e-6, "s") == "1.000 ms" and si(9.9996e-3, "s") == "10.00 ms"  # rounding carries over
    # one unit for the column, from its largest value, shown to 4 significant digits; the rest share its decimals
    assert si_column([96.376e-3, 12.897e-3, 2.114e-6, 0.0], "J") == ["96.38 mJ", "12.90 mJ", "<0.01 mJ", "0 mJ"]
    assert si_column([7.3716e-3, 0.7194e-3], "s") == ["7.372 ms", "0.719 ms"]
    assert si_column([76.362e-3, 18.419e-3, 2.454e-3], "s") == ["76.36 ms", "18.42 ms", "2.45 ms"]
    assert si_column([0.0921, 0.4476], "s", each=True) == ["92.10 ms", "447.6 ms"]  # headline: each its 4 digits
    assert si_column([None, float("nan"), 1.0], "s") == ["-", "-", "1.000 s"]
    for values in ([3e-9, 2e-6], [0.5, 0.001], [1e-12, 5e-13], [8.155e-3, 25.128e-3], [1e-3, 999e-3]):
        prefix, scale, dec = si_scale(values)
        top = max(values) / scale
        assert 1 <= top < 1000 or prefix == "p", values  # the largest lies in [1, 1000) of its prefix
        assert len(f"{top:.{dec}f}".replace(".", "").lstrip("0")) == 4, (values, prefix, dec)
