"""Constant folding: ops computed only from constants cost nothing at run time, as ONNX Runtime
folds them once at session creation; ``--no-fold-constants`` / ``fold_constants=False`` charges them as before."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pandas as pd
import pytest
import yaml
from onnx import TensorProto, helper, numpy_helper

import hetsim
from hetsim.cli import main
from hetsim.costs import CostModel
from hetsim.dag.sweep import SETTINGS_COLUMNS
from hetsim.dse.sweep import load_sweep, run_sweep
from hetsim.mappers import get_mapper
from hetsim.platform import load_platform
from hetsim.sim import simulate
from hetsim.workload import Op, Workload, load_onnx
from hetsim.workload.op import foldable_ops

ROOT = Path(__file__).resolve().parents[1]
PUMA = ROOT / "platforms" / "puma.yaml"


def qdq_conv(path: Path) -> Path:
    """x -> Conv(x, DequantizeLinear(int8 weight)) -> y: a QDQ graph's weight path, by hand."""
    w = numpy_helper.from_array(np.ones((16, 8, 3, 3), dtype=np.int8), "w_q")
    scale = numpy_helper.from_array(np.array(0.02, dtype=np.float32), "w_scale")
    zp = numpy_helper.from_array(np.array(0, dtype=np.int8), "w_zp")
    nodes = [helper.make_node("DequantizeLinear", ["w_q", "w_scale", "w_zp"], ["w"], name="dq_w"),
             helper.make_node("Conv", ["x", "w"], ["y"], name="conv")]
    g = helper.make_graph(nodes, "qdq_conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 6, 6])],
                          initializer=[w, scale, zp])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


@pytest.fixture
def model(tmp_path) -> Path:
    return qdq_conv(tmp_path / "qdq_conv.onnx")


def test_weight_dequantize_is_folded_costs_nothing_and_moves_nothing(model):
    wl, plat = load_onnx(model), load_platform(PUMA)
    assert wl.op("dq_w").is_constant and foldable_ops(wl) == {"dq_w"}
    c = CostModel(wl, plat)
    assert c.fold_constants and c.folded == {"dq_w"}
    assert c.latency["dq_w"] and set(c.latency["dq_w"].values()) == {0.0}
    assert c.latency["conv"][c.host] > 0  # the consumer is charged as ever
    for dst in c.latency["conv"]:
        assert c.transfer_time("dq_w", "conv", c.host, dst) == 0.0
        assert c.transfer_bytes("dq_w", "conv", c.host, dst) == 0.0
    s = get_mapper("all-host").map(c)
    r = simulate(c, s)
    assert r.start_s["dq_w"] == r.finish_s["dq_w"] == 0.0
    assert r.makespan_s == pytest.approx(c.latency["conv"][c.host])


def test_no_fold_constants_charges_them_as_before(model):
    wl, plat = load_onnx(model), load_platform(PUMA)
    c = CostModel(wl, plat, fold_constants=False)
    assert not c.fold_constants and c.folded == frozenset()
    host = c.devices[c.host]
    old = host.latency(wl.op("dq_w"))  # what the host's model says, as before folding existed
    assert old > 0 and c.latency["dq_w"][c.host] == old
    for dst in c.latency["conv"]:  # a parameter edge moves nothing either way
        assert c.transfer_time("dq_w", "conv", c.host, dst) == 0.0
    folded = CostModel(wl, plat)
    charged = simulate(c, get_mapper("all-host").map(c)).makespan_s
    free = simulate(folded, get_mapper("all-host").map(folded)).makespan_s
    assert charged == pytest.approx(free + old)


def test_closure_through_chains_of_constant_ops():
    """A workload built by hand (no importer marks): a constant op's chain folds until an op with runtime input."""
    ops = [Op("c", "Constant", index=0, is_constant=True, n_out=4),
           Op("u", "Unsqueeze", index=1, n_out=4),  # reads only c: folds
           Op("r", "Reshape", index=2, n_in=4, n_out=4),  # reads a graph input too: runs
           Op("s", "Relu", index=3, n_out=4)]  # no predecessors and no runtime input recorded: not folded
    wl = Workload.from_ops("chain", ops, [("c", "u", 4), ("u", "r", 4)])
    assert foldable_ops(wl) == {"c", "u"}


def test_cli_run_reports_and_writes_folded_ops(model, tmp_path, capsys):
    assert main(["run", str(PUMA), str(model), "--mapper", "heft", "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["folded_ops"] == 1 and s["fold_constants"] is True and s["operators"] == 2
    assert main(["run", str(PUMA), str(model), "--mapper", "heft", "--json", "--no-fold-constants"]) == 0
    s2 = json.loads(capsys.readouterr().out)
    assert s2["folded_ops"] == 0 and s2["fold_constants"] is False and s2["operators"] == 2
    assert s2["baseline_makespan_s"] > s["baseline_makespan_s"]
    assert main(["run", str(PUMA), str(model), "--mapper", "all-host", "--out", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert ("folded: 1 constant ops (ONNX Runtime folds them at session creation; --no-fold-constants charges "
            "them)") in out
    ops = pd.read_csv(tmp_path / "o" / "ops.csv").set_index("op")
    assert len(ops) == 2 and bool(ops.loc["dq_w", "folded"]) and not bool(ops.loc["conv", "folded"])
    assert ops.loc["dq_w", "latency_s"] == 0.0 and ops.loc["dq_w", "energy_j"] == 0.0
    assert main(["run", str(PUMA), str(model), "--mapper", "all-host", "--no-fold-constants"]) == 0
    assert "folded:" not in capsys.readouterr().out


def test_cli_map_validate_inspect_take_the_option(model, tmp_path, capsys):
    sched = tmp_path / "s.json"
    assert main(["map", str(PUMA), str(model), "--mapper", "all-host", "-o", str(sched)]) == 0
    assert main(["validate", str(PUMA), str(model), "--schedule", str(sched)]) == 0
    assert main(["map", str(PUMA), str(model), "--mapper", "all-host", "-o", str(tmp_path / "t.json"),
                 "--no-fold-constants"]) == 0
    assert main(["validate", str(PUMA), str(model), "--schedule", str(tmp_path / "t.json"),
                 "--no-fold-constants"]) == 0
    capsys.readouterr()
    assert main(["inspect", str(model), "--platform", str(PUMA), "--ops"]) == 0
    out = capsys.readouterr().out
    assert "folded: 1 constant ops" in out
    dq_line = next(ln for ln in out.splitlines() if ln.strip().startswith("dq_w"))
    assert dq_line.endswith("folded") and " 0.000" in dq_line
    assert main(["inspect", str(model), "--platform", str(PUMA), "--ops", "--no-fold-constants"]) == 0
    assert "folded" not in capsys.readouterr().out


def test_snn_run_refuses_the_option(capsys):
    code = main(["run", str(ROOT / "platforms/efr32mg24.yaml"), str(ROOT / "workloads/snn/braille384.yaml"),
                 "--no-fold-constants"])
    assert code == 2 and "--no-fold-constants applies to ONNX models" in capsys.readouterr().err


def test_api_run_option(model):
    on = hetsim.run(PUMA, model, mapper="all-host")
    off = hetsim.run(PUMA, model, mapper="all-host", fold_constants=False)
    assert on.summary["folded_ops"] == 1 and off.summary["folded_ops"] == 0
    assert off.makespan_s > on.makespan_s
    assert list(on.ops["folded"]) == [True, False] and on.ops["folded"].dtype == bool


def _spec(tmp_path: Path, model: Path, **over) -> Path:
    spec = {"name": "fold", "workloads": [str(model)], "platforms": [str(PUMA)], "mappers": ["all-host"],
            "output": str(tmp_path / "out.csv"), **over}
    p = tmp_path / "sweep.yaml"
    p.write_text(yaml.safe_dump(spec))
    return p


def test_sweep_records_the_setting_and_recomputes_when_it_changes(model, tmp_path):
    said: list[str] = []
    assert run_sweep(load_sweep(_spec(tmp_path, model)), workers=1, notify=said.append)[1:] == (1, 0)
    df = pd.read_csv(tmp_path / "out.csv")
    assert "fold_constants" in SETTINGS_COLUMNS and list(df["fold_constants"]) == [True]
    free = df["makespan_s"].iloc[0]
    assert run_sweep(load_sweep(_spec(tmp_path, model, fold_constants=False)), workers=1,
                     notify=said.append)[1:] == (1, 0)
    assert any("changed fold_constants" in s for s in said)
    df = pd.read_csv(tmp_path / "out.csv")
    assert list(df["fold_constants"]) == [False] and df["makespan_s"].iloc[0] > free


def test_sweep_table_without_the_fold_column_is_recomputed(model, tmp_path):
    assert run_sweep(load_sweep(_spec(tmp_path, model)), workers=1)[1:] == (1, 0)
    out = tmp_path / "out.csv"
    pd.read_csv(out).drop(columns=["fold_constants"]).to_csv(out, index=False)  # a table of hetsim before folding
    said: list[str] = []
    assert run_sweep(load_sweep(_spec(tmp_path, model)), workers=1, notify=said.append)[1:] == (1, 0)
    assert any("changed fold_constants" in s for s in said)
    assert list(pd.read_csv(out).columns[-len(SETTINGS_COLUMNS):]) == SETTINGS_COLUMNS


def test_snn_sweep_refuses_fold_constants_false(tmp_path):
    from hetsim.errors import InputError

    spec = {"name": "s", "workloads": [str(ROOT / "workloads/snn/braille384.yaml")],
            "platforms": [str(ROOT / "platforms/efr32mg24.yaml")], "fold_constants": False}
    p = tmp_path / "s.yaml"
    p.write_text(yaml.safe_dump(spec))
    with pytest.raises(InputError, match="fold_constants: applies to ONNX sweeps only"):
        load_sweep(p)


def test_qdq_resnet18_weight_dequantize_is_the_difference():
    """On QDQ ResNet-18 the 42 weight DequantizeLinear ops are what folding removes from the all-host makespan."""
    wl, plat = load_onnx(ROOT / "workloads/resnet18_int8_qdq.onnx"), load_platform(PUMA)
    on, off = CostModel(wl, plat), CostModel(wl, plat, fold_constants=False)
    assert len(on.folded) == 42 and {wl.op(v).op_type for v in on.folded} == {"DequantizeLinear"}
    charged = sum(off.latency[v][off.host] for v in on.folded)
    t_on = simulate(on, get_mapper("all-host").map(on)).makespan_s
    t_off = simulate(off, get_mapper("all-host").map(off)).makespan_s
    assert t_off - t_on == pytest.approx(charged, rel=1e-9) and charged > 0.01
    assert len(wl) == 140  # the ops stay in the DAG
