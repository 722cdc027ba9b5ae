"""Host profiling with ONNX Runtime (CPU-CIM ILP Sec. IV-A1) and the profile -> latency-table round trip."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pandas as pd
import pytest
from onnx import TensorProto, helper, numpy_helper

from hetsim.cli import main
from hetsim.costs import CostModel
from hetsim.errors import PlatformError
from hetsim.platform import Platform
from hetsim.profile import profile_model, read_profile_meta, upgrade_profile
from hetsim.workload import load_onnx

pytest.importorskip("onnxruntime")


def conv_relu_model(path: Path) -> Path:
    """x[1,8,16,16] -> Conv 3x3 (8->16, pad 1) -> Relu -> Add(y, y) -> out; plus a Constant node."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((16, 8, 3, 3)).astype(np.float32), "w")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 16, 16])
    out = helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 16, 16, 16])
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("Constant", [], ["k"], name="const",
                         value=numpy_helper.from_array(np.float32(2.0).reshape(()), "k")),
        helper.make_node("Mul", ["r", "k"], ["out"], name="scale"),
    ]
    g = helper.make_graph(nodes, "g", [x], [out], initializer=[w])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


def test_one_row_per_node_with_positive_medians(tmp_path):
    model = conv_relu_model(tmp_path / "m.onnx")
    prof = profile_model(model, warmup=1, runs=3)
    assert [r["op"] for r in prof.rows] == ["conv", "relu", "const", "scale"]
    by = {r["op"]: r for r in prof.rows}
    for name in ("conv", "relu", "scale"):
        assert by[name]["latency_s"] > 0 and by[name]["runs"] == 3 and by[name]["source"] == "measured"
    assert by["const"]["source"] == "constant" and by["const"]["latency_s"] == 0  # never a kernel in ORT
    assert by["conv"]["iqr_s"] >= 0
    assert prof.whole_model_s > 0
    assert prof.meta["threads"] == 1 and prof.meta["graph_optimizations"] == "disabled"


def test_optimized_profile_charges_fused_kernels_by_macs(tmp_path):
    model = conv_relu_model(tmp_path / "m.onnx")
    prof = profile_model(model, warmup=1, runs=3, optimize=True)
    by = {r["op"]: r for r in prof.rows}
    # ORT fuses Conv+Relu into one kernel (FusedConv) named after the conv; the Relu has no MACs, so the
    # whole kernel time is the conv's and the Relu's share is 0
    assert by["relu"]["source"] == "fused" and by["relu"]["latency_s"] == 0
    assert by["conv"]["latency_s"] > 0


def test_profile_table_round_trips_into_a_cpu_device(tmp_path, capsys):
    model = conv_relu_model(tmp_path / "m.onnx")
    out = tmp_path / "prof.csv"
    assert main(["profile", str(model), "-o", str(out), "--runs", "3", "--warmup", "1"]) == 0
    assert "sum of ops" in capsys.readouterr().out
    table = pd.read_csv(out)  # a plain table: the metadata is in the side file
    assert list(table.columns) == ["op", "op_type", "latency_s", "iqr_s", "runs", "source"]
    assert str(table["runs"].dtype) == "int64" and set(table["runs"]) == {0, 3}
    rows = dict(zip(table["op"], table["latency_s"], strict=True))
    meta = json.loads((tmp_path / "prof.meta.json").read_text())
    assert meta == read_profile_meta(out)
    assert meta["threads"] == 1 and meta["timed_runs"] == 3 and meta["model"] == "m.onnx"
    assert meta["per_op_sum_s"] == pytest.approx(table["latency_s"].sum(), rel=1e-6)
    assert meta["whole_model_median_s"] > 0
    plat = Platform.model_validate({"devices": {"host": {
        "kind": "cpu", "clock_ghz": 1.0, "macs_per_cycle": {32: 1}, "mem_bandwidth_gb_s": 1.0,
        "latency_model": "table", "latency_table": str(out)}}})
    costs = CostModel(load_onnx(model), plat)
    for op, lat in rows.items():
        assert costs.latency[op]["host"] == lat
    assert costs.host_fallback_ops() == []
    # refuses to overwrite without --force, also when only the side file is there
    assert main(["profile", str(model), "-o", str(out), "--runs", "1", "--warmup", "0"]) == 2
    out.unlink()
    assert main(["profile", str(model), "-o", str(out), "--runs", "1", "--warmup", "0"]) == 2
    assert not out.exists()


def test_older_profiles_with_comment_lines_are_read_and_upgraded(tmp_path):
    old = tmp_path / "m.csv"
    old.write_text("# model: m.onnx\n# machine: test cpu\n# threads: 1\n# whole_model_median_s: 0.003\n"
                   "op,op_type,latency_s,iqr_s,runs,source\nconv,Conv,0.001,0,20,measured\nrelu,Relu,0.002,0,20,"
                   "measured\nbad\n")
    assert read_profile_meta(old) == {"model": "m.onnx", "machine": "test cpu", "threads": 1,
                                      "whole_model_median_s": 0.003}
    spec = {"devices": {"host": {"kind": "cpu", "clock_ghz": 1.0, "macs_per_cycle": {32: 1}, "mem_bandwidth_gb_s": 1.0,
                                 "latency_model": "table", "latency_table": str(old)}}}
    with pytest.raises(PlatformError, match=r"m\.csv:8: latency_s"):  # line numbers of the file as it is
        CostModel(load_onnx(conv_relu_model(tmp_path / "m.onnx")), Platform.model_validate(spec))
    old.write_text(old.read_text().replace("bad\n", ""))
    data = old.read_text().split("op,op_type", 1)[1]
    assert upgrade_profile(old) and not upgrade_profile(old)  # the second time there is nothing to move
    assert old.read_text() == "op,op_type" + data  # data rows byte for byte
    assert json.loads((tmp_path / "m.meta.json").read_text())["machine"] == "test cpu"
    assert list(pd.read_csv(old)["runs"]) == [20, 20]
    costs = CostModel(load_onnx(tmp_path / "m.onnx"), Platform.model_validate(spec))
    assert costs.latency["conv"]["host"] == 0.001


def test_a_folder_of_profiles_picks_the_workloads_csv(tmp_path):
    model = conv_relu_model(tmp_path / "m.onnx")
    folder = tmp_path / "profiles"
    folder.mkdir()
    (folder / "m.csv").write_text("# machine: test\nop,latency_s\nconv,0.001\nrelu,0.002\n")
    spec = {"devices": {"host": {
        "kind": "cpu", "clock_ghz": 1.0, "macs_per_cycle": {32: 1}, "mem_bandwidth_gb_s": 1.0,
        "latency_model": "table", "latency_table": str(folder)}}}
    costs = CostModel(load_onnx(model), Platform.model_validate(spec))
    assert costs.latency["conv"]["host"] == 0.001 and costs.latency["relu"]["host"] == 0.002
    assert sorted(costs.host_fallback_ops()) == ["const", "scale"]  # not in the table: roofline, reported
    (folder / "m.csv").rename(folder / "other.csv")
    with pytest.raises(PlatformError, match="hetsim profile"):
        CostModel(load_onnx(model), Platform.model_validate(spec))


def test_shipped_profiles_cover_every_op_of_their_workloads():
    from hetsim.platform import load_platform

    root = Path(__file__).resolve().parents[1]
    plat = load_platform(root / "platforms" / "puma-host.yaml")
    profiles = sorted((root / "profiles").glob("*.csv"))
    assert len(profiles) >= 10
    for prof in profiles:
        assert str(pd.read_csv(prof)["runs"].dtype) == "int64", prof.name  # plain tables
        assert read_profile_meta(prof)["onnxruntime"], prof.name  # their metadata beside them
        model = next(root.glob(f"workloads/**/{prof.stem}.onnx"))
        costs = CostModel(load_onnx(model), plat)
        assert costs.host_fallback_ops() == [], prof.name  # measured, not estimated
