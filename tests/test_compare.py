"""``hetsim compare`` and ``hetsim.compare`` (hetsim/report/compare.py): two real runs of a one-op model whose
difference is worked out by hand, scenario summaries per stream, and the one-line refusals."""

from __future__ import annotations

import json

import onnx
import pytest
from conftest import ROOT, assert_input_error, run_cli
from onnx import TensorProto, helper

import hetsim
from hetsim.errors import InputError

PUMA = ROOT / "platforms" / "puma.yaml"


def relu_model(path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="n0")], "g", [x], [y])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """A: one Relu on puma.yaml's host; B: the same with the host's op_overhead_us 2 -> 4."""
    from hetsim.cli import main

    d = tmp_path_factory.mktemp("runs")
    model = relu_model(d / "relu.onnx")
    assert main(["run", str(PUMA), str(model), "--out", str(d / "a")]) == 0
    assert main(["run", str(PUMA), str(model), "--set", "devices.host.op_overhead_us=4", "--out", str(d / "b")]) == 0
    return d / "a", d / "b"


def value(c, section, item, metric):
    row = c.frame[(c.frame["section"] == section) & (c.frame["item"] == item) & (c.frame["metric"] == metric)]
    assert len(row) == 1, (section, item, metric)
    return row.iloc[0]


def test_deltas_of_two_real_runs_by_hand(two_runs):
    a, b = two_runs
    c = hetsim.compare(a, b)
    assert c.kind == "dag"
    # the host's roofline: 2 us + max(4 / (1.5 GHz x 4), 32 B / 5.5 GB/s) = 2 us + 5.818 ns; B adds 2 us
    t_a = 2e-6 + 32 / 5.5e9
    ms = value(c, "headline", "", "makespan_s")
    assert ms["a"] == pytest.approx(t_a, rel=1e-12) and ms["b"] == pytest.approx(t_a + 2e-6, rel=1e-12)
    assert ms["delta"] == pytest.approx(2e-6, rel=1e-9)
    assert ms["delta_pct"] == pytest.approx(100 * 2e-6 / t_a, rel=1e-9)
    # energy: the host busy the whole run at 1.2 W, the CIM idle at 0.05 W, the bus without power: +1.25 W x 2 us
    assert value(c, "headline", "", "energy_j")["delta"] == pytest.approx(1.25 * 2e-6, rel=1e-9)
    assert value(c, "device", "host", "energy_j")["delta"] == pytest.approx(1.2 * 2e-6, rel=1e-9)
    assert value(c, "device", "cim", "energy_j")["delta"] == pytest.approx(0.05 * 2e-6, rel=1e-9)
    assert value(c, "device", "host", "utilisation")["delta"] == pytest.approx(0.0, abs=1e-12)
    relu = value(c, "op_type", "Relu", "latency_s")  # from each folder's ops.csv
    assert relu["delta"] == pytest.approx(2e-6, rel=1e-9)
    assert value(c, "op_type", "Relu", "ops")["a"] == 1
    assert c.speedup == pytest.approx(t_a / (t_a + 2e-6), rel=1e-12)


def test_compare_command_text_and_json(capsys, two_runs):
    a, b = two_runs
    code, out, err = run_cli(capsys, "compare", a, b / "summary.json")
    assert code == 0, err
    head = out.split("\n\n")[1].splitlines()
    assert head[1].split() == ["makespan_s", "2.006", "us", "4.006", "us", "+2.000", "us", "+99.7", "%"]
    assert "per device" in out and "per op type" in out and "B vs A: speed-up 0.501x" in out
    bus = next(line for line in out.splitlines() if line.split()[:2] == ["bus", "energy_j"])
    assert bus.split()[2:] == ["not", "modelled", "not", "modelled", "-", "-"]  # the bus has no power: never 0 J
    code, out, err = run_cli(capsys, "compare", a, b, "--json")
    assert code == 0, err
    doc = json.loads(out)
    row = next(r for r in doc["rows"] if r["metric"] == "makespan_s")
    assert row["delta"] == pytest.approx(2e-6, rel=1e-9) and doc["kind"] == "dag"


def scenario_summary(p50_s: float, throughput_hz: float) -> dict:
    """A scenario's summary.json with the keys a real one has (two streams, one device)."""
    stream = {"stream": "s", "measured": 100, "throughput_hz": throughput_hz, "latency_mean_s": 0.01,
              "latency_p50_s": p50_s, "latency_p95_s": 0.02, "latency_p99_s": 0.03, "latency_max_s": 0.04,
              "deadline_miss": 0.0, "energy_per_request_j": 1e-3}
    return {"scenario": "sc", "platform": "p", "mapper": "heft", "simulated_s": 10.0, "requests": 100,
            "energy_j": 0.1, "energy_per_request_j": 1e-3, "bottleneck": {"resource": "host", "load": 0.5},
            "streams": [stream], "devices": [{"device": "host", "busy_s": 5.0, "utilisation": 0.5,
                                               "energy_j": 0.1}]}


def test_scenarios_per_stream(tmp_path):
    for name, p50, thru in (("a.json", 0.008, 10.0), ("b.json", 0.006, 12.5)):
        (tmp_path / name).write_text(json.dumps(scenario_summary(p50, thru)))
    c = hetsim.compare(tmp_path / "a.json", tmp_path / "b.json")
    assert c.kind == "scenario"
    p50 = value(c, "stream", "s", "latency_p50_s")
    assert p50["delta"] == pytest.approx(-0.002) and p50["delta_pct"] == pytest.approx(-25.0)
    assert value(c, "stream", "s", "throughput_hz")["delta_pct"] == pytest.approx(25.0)
    assert c.speedup == {"s": pytest.approx(1.0)}  # equal mean latencies
    text = c.to_text()
    assert "per stream" in text and "-2.000 ms" in text and "-25.0 %" in text


def test_refusals_are_one_line(capsys, tmp_path, two_runs):
    a, _ = two_runs
    (tmp_path / "scn.json").write_text(json.dumps(scenario_summary(0.01, 10.0)))
    code, _, err = run_cli(capsys, "compare", a, tmp_path / "scn.json")
    assert_input_error(code, err, "is a DAG run and", "is a scenario run", "two runs of one kind")
    empty = tmp_path / "empty"
    empty.mkdir()
    code, _, err = run_cli(capsys, "compare", empty, a)
    assert_input_error(code, err, "holds no summary.json")
    (tmp_path / "x.json").write_text("{not json")
    code, _, err = run_cli(capsys, "compare", a, tmp_path / "x.json")
    assert_input_error(code, err, "not a JSON file")
    (tmp_path / "other.json").write_text('{"name": "a platform?"}')
    code, _, err = run_cli(capsys, "compare", a, tmp_path / "other.json")
    assert_input_error(code, err, "not a hetsim run's summary.json")
    with pytest.raises(InputError, match="does not exist"):
        hetsim.compare(tmp_path / "nowhere", a)
