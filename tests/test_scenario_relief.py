"""A saturated scenario says why and what would relieve it (hetsim.scenario.run.load_breakdown, relief), with
numbers worked out by hand on a three-op chain mapped all on the host."""

from __future__ import annotations

import json

import pytest
from conftest import conv_op, host_op, make_platform

from hetsim.scenario.report import format_scenario_report, scenario_report_html
from hetsim.scenario.run import run_scenario
from hetsim.scenario.spec import Scenario
from hetsim.workload import Workload

NS = 1e-9


def _chain() -> Workload:
    """a (Relu, 2000 ns on the host) -> b (Conv: 16*16*10 = 2560 ns on the host, 100 + 1000 + 50 ns on the CIM)
    -> c (Sigmoid, 1000 ns on the host): 5560 ns of host time per request when all run there."""
    ops = [host_op("a", 2000, index=0), conv_op("b", 16, 16, 10, n_in=100, n_out=50, index=1),
           host_op("c", 1000, index=2, op_type="Sigmoid")]
    return Workload.from_ops("chain", ops, [("a", "b", 100), ("b", "c", 50)])


def test_a_saturated_host_says_which_ops_load_it_and_which_could_move():
    """One request every 4000 ns, each 5560 ns of host time: load 5560 / 4000 = 1.39. Conv is 2560 / 5560 =
    46.0 % of the host's busy time, Relu 2000 / 5560 = 36.0 % (together 82.0 %, the first over half), Sigmoid
    18.0 %. Only b (Conv) runs on the CIM too: 1 op, 46.0 % of the host's time; moved, the load left is
    1.39 * (1 - 2560 / 5560) = 3000 / 4000 = 0.75."""
    plat = make_platform(host_cores=1, cim_cores=1, crossbars_per_core=4)
    sc = Scenario.model_validate({"name": "cam", "mapper": "all-host", "streams": {"cam": {
        "model": "unused.onnx", "arrival": {"process": "periodic", "period_s": 4000 * NS}, "count": 200}}})
    r = run_scenario(plat, sc, workloads={"cam": _chain()})
    assert r.summary["saturated"]
    host = r.loads[r.loads["resource"] == "host"]
    assert host["type"].tolist() == ["Conv", "Relu", "Sigmoid"] and set(host["stream"]) == {"cam"}
    assert host["ops"].tolist() == [1, 1, 1]
    assert host["busy_s"].tolist() == pytest.approx([200 * 2560 * NS, 200 * 2000 * NS, 200 * 1000 * NS])
    assert host["share"].tolist() == pytest.approx([2560 / 5560, 2000 / 5560, 1000 / 5560])
    assert host["busy_s"].sum() == pytest.approx(r.devices.set_index("device").loc["host", "busy_s"])
    x = r.summary["relief"]["host"]
    assert set(r.summary["relief"]) == {"host"}
    assert x["load"] == pytest.approx(1.39)
    assert [(t["type"], t["stream"]) for t in x["top"]] == [("Conv", "cam"), ("Relu", "cam")]
    assert x["top_share"] == pytest.approx(4560 / 5560)
    cim = x["movable"]["cim"]
    assert (cim["ops"], cim["types"]) == (1, {"Conv": 1})
    assert cim["share"] == pytest.approx(2560 / 5560) and cim["busy_s"] == pytest.approx(200 * 2560 * NS)
    assert cim["latency_s"] == pytest.approx(1150 * NS)
    assert x["movable_ops"] == 1 and x["movable_share"] == pytest.approx(2560 / 5560)
    assert x["load_left"] == pytest.approx(0.75)
    text = format_scenario_report(r)
    assert "host saturated (load 1.39): Conv/Relu of cam are 82% of its busy time;" in text
    assert "other devices could run 1 of its ops (46% of its busy time: cim 1 Conv;" in text
    assert "leaving load 0.75" in text
    json.dumps(r.summary, allow_nan=False)  # strict JSON, as summary.json is written
    assert "Load by stream and op type" in scenario_report_html(r)


def test_a_steady_scenario_prints_no_relief_line():
    plat = make_platform(host_cores=1, cim_cores=1, crossbars_per_core=4)
    sc = Scenario.model_validate({"name": "cam", "mapper": "all-host", "streams": {"cam": {
        "model": "unused.onnx", "arrival": {"process": "periodic", "period_s": 20000 * NS}, "count": 50}}})
    r = run_scenario(plat, sc, workloads={"cam": _chain()})
    assert not r.summary["saturated"] and r.summary["relief"] == {}
    assert "saturated (load" not in format_scenario_report(r)
    assert r.summary["load_breakdown"]["host"][0]["type"] == "Conv"
