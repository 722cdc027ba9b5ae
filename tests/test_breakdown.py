"""Where the time goes (hetsim.analysis.breakdown): busy time and energy per device and op type, the critical path
and every op's slack, worked out by hand on a four-op DAG on two devices; the breakdown's busy time against the
device table on YOLOv5n; the files, the terminal section and the report page of a run."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from conftest import conv_op, host_op, make_platform, ns

from hetsim.analysis.breakdown import critical_path, movable_busy, movable_ops, op_slack, op_type_breakdown
from hetsim.analysis.metrics import device_table
from hetsim.costs import CostModel
from hetsim.schedule import Schedule
from hetsim.sim import simulate
from hetsim.workload import Workload


def _tiny():
    """a (Relu, host) -> {b, c} (Conv, CIM) -> d (Sigmoid, host), the conftest platform's round numbers:

    ====  =======  ======  ===============================  ===========================
    op    type     device  latency (ns)                     replay (ns)
    ====  =======  ======  ===============================  ===========================
    a     Relu     host    100                              0 - 100
    b     Conv     cim     load 100 + mvm 10*100 + 50       200 - 1350 (a->b: 100 ns)
    c     Conv     cim     load 100 + mvm 20*100 + 50       200 - 2350 (a->c: 100 ns)
    d     Sigmoid  host    300                              2400 - 2700 (c->d 50 ns)
    ====  =======  ======  ===============================  ===========================

    The CIM runs b and c at once from 200 to 1350 ns: each gets half of that, 575 ns, and c the rest alone,
    1000 ns: b 575 ns, c 1575 ns, the CIM 2150 ns busy (the union of [200, 2350)).
    """
    ops = [host_op("a", 100, index=0), conv_op("b", 16, 16, 10, n_in=100, n_out=50, index=1),
           conv_op("c", 16, 16, 20, n_in=100, n_out=50, index=2), host_op("d", 300, index=3, op_type="Sigmoid")]
    wl = Workload.from_ops("tiny", ops, [("a", "b", 100), ("a", "c", 100), ("b", "d", 50), ("c", "d", 50)])
    plat = make_platform(host_cores=1, cim_cores=1, crossbars_per_core=4)  # host 2 W / 1 W, CIM 10 W / 0.5 W
    costs = CostModel(wl, plat)
    sched = Schedule("hand", {"a": "host", "b": "cim", "c": "cim", "d": "host"},
                     {"host": ["a", "d"]}, placement={"b": [(0, 1)], "c": [(0, 1)]})
    res = simulate(costs, sched)
    assert res.makespan_s == ns(2700)
    assert (res.start_s["c"], res.finish_s["c"]) == (ns(200), ns(2350))
    return costs, sched, res


def test_the_breakdown_of_a_tiny_dag_by_hand():
    costs, _, res = _tiny()
    b = op_type_breakdown(costs, res)
    rows = {(r["device"], r["type"]): r for r in b.to_dict(orient="records")}
    assert list(rows) == [("host", "Sigmoid"), ("host", "Relu"), ("cim", "Conv")]  # platform order, busiest first
    assert rows["host", "Sigmoid"]["ops"] == 1 and rows["host", "Sigmoid"]["busy_s"] == ns(300)
    assert rows["host", "Sigmoid"]["share"] == pytest.approx(0.75)
    assert rows["host", "Relu"]["share"] == pytest.approx(0.25)
    assert rows["host", "Sigmoid"]["energy_j"] == pytest.approx(2.0 * 300e-9)  # active_w x busy
    assert rows["host", "Relu"]["energy_j"] == pytest.approx(2.0 * 100e-9)
    conv = rows["cim", "Conv"]
    assert conv["ops"] == 2 and conv["busy_s"] == ns(575 + 1575) and conv["share"] == pytest.approx(1.0)
    assert conv["energy_j"] == pytest.approx(10.0 * 2150e-9)
    # with the devices' idle energy and the links' energy, the run's energy
    dev = device_table(costs, res)
    links = dev[dev["kind"] == "link"]["energy_j"].sum()
    idle = dev[dev["kind"] != "link"]["idle_j"].sum()
    assert b["energy_j"].sum() + idle + links == pytest.approx(dev["energy_j"].sum(), rel=1e-12)


def test_the_critical_path_and_slack_of_a_tiny_dag_by_hand():
    """d waits for c (its transfer ends at 2400 ns, b's at 1400 ns), c for a: the path a, c, d, gaps 100 and 50 ns
    (the transfers). Slack, latest start minus start (backward from the makespan 2700 ns): d 2400 - 2400 = 0;
    c min(2700 - 2150, LS(d) - 2150 - 50) = 200 - 200 = 0; b min(2700 - 1150, 2400 - 1150 - 50) = 1200, minus its
    start 200: 1000 ns; a min(LS(b) - 100 - 100, LS(c) - 200, LS(d) - 100 (host order)) = 0."""
    costs, sched, res = _tiny()
    cp = critical_path(costs, sched, res)
    path = cp[cp["on_path"]]
    assert path["op"].tolist() == ["a", "c", "d"] and path["path_index"].tolist() == [0, 1, 2]
    assert path["via"].tolist() == ["", "data", "data"]
    assert path["device"].tolist() == ["host", "cim", "host"]
    assert path["gap_s"].tolist() == [0.0, ns(100), ns(50)]
    assert path["start_s"].iloc[0] + path["latency_s"].sum() + path["gap_s"].sum() == ns(2700)
    slack = dict(zip(cp["op"], cp["slack_s"], strict=True))
    assert slack == {"a": 0.0, "c": 0.0, "d": 0.0, "b": ns(1000)}
    latest = dict(zip(cp["op"], cp["latest_start_s"], strict=True))
    assert latest["b"] == ns(1200) and latest["d"] == ns(2400)
    off = cp[~cp["on_path"]]
    assert off["op"].tolist() == ["b"] and off["path_index"].isna().all() and math.isnan(off["gap_s"].iloc[0])
    assert op_slack(costs, sched, res)["b"] == (ns(1200), ns(1000))


def test_the_host_order_is_an_edge_of_the_critical_path():
    """a and d on the host in that order, d independent of a: d starts when the host is free (order edge)."""
    ops = [host_op("a", 400, index=0), host_op("d", 100, index=1, op_type="Sigmoid")]
    wl = Workload.from_ops("two", ops, [])
    costs = CostModel(wl, make_platform())
    sched = Schedule("hand", {"a": "host", "d": "host"}, {"host": ["a", "d"]})
    res = simulate(costs, sched)
    cp = critical_path(costs, sched, res)
    assert cp["op"].tolist() == ["a", "d"] and cp["via"].tolist() == ["", "order"]
    assert cp["slack_s"].tolist() == [0.0, 0.0]


def test_ops_another_device_could_run():
    """On the host of the tiny DAG: a and d are elementwise, which the CIM cannot run; with b on the host
    instead, b is the one op the CIM could take (its host busy time 16*16*10 ns)."""
    costs, sched, res = _tiny()
    assert movable_ops(costs, sched, res, "host") == {"cim": {"ops": 0, "types": {}, "busy_s": 0.0, "latency_s": 0.0}}
    moved = Schedule("hand", {"a": "host", "b": "host", "c": "cim", "d": "host"}, {"host": ["a", "b", "d"]},
                     placement={"c": [(0, 1)]})
    res2 = simulate(costs, moved)
    m = movable_ops(costs, moved, res2, "host")["cim"]
    assert (m["ops"], m["types"]) == (1, {"Conv": 1})
    assert m["busy_s"] == ns(2560) and m["latency_s"] == ns(1150)
    assert movable_busy(costs, moved, res2, "host") == (1, ns(2560))


@pytest.mark.parametrize("contention", [frozenset(), frozenset({"links", "cim-bus", "cim-cores"})])
def test_the_breakdown_sums_to_the_device_table_on_yolov5n(yolov5n_costs, contention):
    """YOLOv5n on puma: per device the op types' busy time and ops are the device table's; the slack is never
    negative, and without contention the critical path's ops have none and span the makespan."""
    from hetsim.mappers import get_mapper

    costs = yolov5n_costs
    sched = get_mapper("heft").map(costs)
    res = simulate(costs, sched, contention)
    b = op_type_breakdown(costs, res)
    dev = device_table(costs, res).set_index("device")
    for d, sub in b.groupby("device"):
        assert sub["busy_s"].sum() == pytest.approx(dev.loc[d, "busy_s"], rel=1e-9)
        assert sub["ops"].sum() == dev.loc[d, "ops"]
        assert sub["share"].sum() == pytest.approx(1.0)
    assert set(b["device"]) == set(costs.devices)
    cp = critical_path(costs, sched, res)
    assert len(cp) == len(costs.workload.ops) and cp["op"].is_unique
    assert (cp["slack_s"] >= 0).all()
    path = cp[cp["on_path"]]
    if not contention:
        assert (path["slack_s"] == 0).all()  # the path's ops cannot move
    assert path["start_s"].iloc[0] + path["latency_s"].sum() + path["gap_s"].sum() == pytest.approx(res.makespan_s)
    assert path["finish_s"].iloc[-1] == pytest.approx(res.makespan_s)


def test_a_run_writes_and_reports_the_breakdown(tmp_path, capsys):
    from conftest import run_cli

    root = __import__("pathlib").Path(__file__).resolve().parents[1]
    out = tmp_path / "run"
    code, stdout, err = run_cli(capsys, "run", root / "platforms" / "puma.yaml",
                                root / "workloads" / "resnet20_cifar10.onnx", "--mapper", "heft", "--out", out)
    assert code == 0, err
    assert "where the time goes" in stdout and "critical path:" in stdout
    b = pd.read_csv(out / "breakdown.csv")
    assert list(b.columns) == ["device", "kind", "type", "ops", "busy_s", "share", "energy_j"]
    summary = __import__("json").loads((out / "summary.json").read_text())
    busy = {d["device"]: d["busy_s"] for d in summary["devices"]}
    for d, sub in b.groupby("device"):
        assert sub["busy_s"].sum() == pytest.approx(busy[d], rel=1e-9)
    cp = pd.read_csv(out / "critical_path.csv")
    assert cp["on_path"].iloc[0] and cp["path_index"].iloc[0] == 0 and len(cp) == summary["operators"]
    html = (out / "report.html").read_text()
    assert "Where the time goes" in html and "Critical path" in html


def test_a_spiking_network_breaks_down_its_replayed_sample():
    """SpikeDuet on the EFR32MG24: the breakdown of the replayed eval sample sums to its device table, the
    critical path spans that replay, no slack is negative, and the report names the sample."""
    from pathlib import Path

    from hetsim.api import load_platform, run
    from hetsim.snn.report import format_snn_report

    root = Path(__file__).resolve().parents[1]
    r = run(load_platform(root / "platforms" / "efr32mg24.yaml"), root / "workloads" / "snn" / "braille64.yaml")
    b, dev = r.breakdown, r.devices.set_index("device")
    for d, sub in b.groupby("device"):
        assert sub["busy_s"].sum() == pytest.approx(dev.loc[d, "busy_s"], rel=1e-9)
        assert sub["ops"].sum() == dev.loc[d, "ops"]
    cp = r.critical_path
    path = cp[cp["on_path"]]
    assert path["start_s"].iloc[0] + path["latency_s"].sum() + path["gap_s"].sum() == pytest.approx(
        r.result.makespan_s)
    assert (cp["slack_s"] >= 0).all() and len(cp) == len(r.workload.ops)
    assert f"eval sample {r.snn.sample}):" in format_snn_report(r)
