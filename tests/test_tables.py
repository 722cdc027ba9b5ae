"""Tables hetsim writes: every CSV read with a plain ``pandas.read_csv`` has its integer columns as integers,
``ops.csv`` has stable dtypes and a per-op energy that adds up to the devices' energy, and sweep tables of an
older hetsim (JSON keys) resume."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import onnx
import pandas as pd
import pytest
import yaml
from onnx import TensorProto, helper, numpy_helper

from hetsim.api import run
from hetsim.cli import main
from hetsim.devices.link import LINK_KIND
from hetsim.dse import expand_points, load_sweep, run_sweep
from hetsim.errors import InputError
from hetsim.mappers import make_schedule

ROOT = Path(__file__).resolve().parents[1]
R20 = ROOT / "workloads" / "resnet20_cifar10.onnx"
DIGITS = ROOT / "workloads" / "snn" / "digits64.yaml"

#: integer columns of every CSV hetsim writes; those in NULLABLE may be empty (then pandas reads float64)
INT_COLUMNS = {
    "ops.csv": ["macs", "bits", "m_v", "n_v", "n_mvm", "groups", "crossbars"],
    "trace.csv": ["channels"],
    "layers.csv": ["n_in", "n_out", "hot_columns"],
    "samples.csv": ["sample"],
    "snn-trace.csv": ["layer", "t", "channels"],
    "sweep.csv": ["devices.cim.crossbars", "operators", "ops_offloaded", "crossbars_used", "crossbars_available",
                  "host_ops", "accel_ops", "variables", "constraints", "peak_activation_bytes", "ops_streamed",
                  "ops_reprogrammed", "weight_read_bytes"],
    "snn-sweep.csv": ["timesteps", "seed", "samples", "devices.mvp.launch_cycles"],
    "profile.csv": ["runs"],
}
NULLABLE = {"trace.csv": {"channels"}, "snn-trace.csv": {"channels"},
            "sweep.csv": {"variables", "constraints", "ops_streamed", "ops_reprogrammed", "weight_read_bytes"}}


def _check_ints(path: Path, name: str) -> pd.DataFrame:
    df = pd.read_csv(path)  # no options
    for c in INT_COLUMNS[name]:
        col = df[c]
        if col.isna().any():
            assert c in NULLABLE.get(name, set()), f"{name}: {c} has empty cells"
            vals = col.dropna()
            assert (vals == vals.round()).all(), f"{name}: {c} holds non-integers"
        else:
            assert str(col.dtype) == "int64", f"{name}: {c} is {col.dtype}"
    return df


def _conv_model(path: Path) -> Path:
    w = numpy_helper.from_array(np.ones((4, 2, 3, 3), np.float32), "w")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["y"], name="relu")]
    g = helper.make_graph(nodes, "g", [x], [y], initializer=[w])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


def test_every_csv_reads_with_integer_columns_as_integers(tmp_path, capsys):
    # hetsim run --out on an ONNX model (a CIM, an NPU and a host), and on a DIANA schedule with a split layer
    assert main(["run", str(ROOT / "platforms/cim-npu.yaml"), str(R20), "--mapper", "heft",
                 "--out", str(tmp_path / "onnx")]) == 0
    ops = _check_ints(tmp_path / "onnx" / "ops.csv", "ops.csv")
    assert (ops["m_v"] > 0).any() and (ops["m_v"] == 0).any()  # GEMM views, and ops without one
    assert str(ops["energy_j"].dtype) == "float64"
    _check_ints(tmp_path / "onnx" / "trace.csv", "trace.csv")
    r = run(ROOT / "platforms/diana.yaml", R20, mapper="heft")
    conv = next(v for v in r.workload.topological_order() if r.costs.out_channels(v) == 16)
    split = make_schedule(r.costs, {**r.schedule.assignment, conv: "aimc"}, "hand",
                          splits={conv: {"digital": list(range(4)), "aimc": list(range(4, 16))}})
    (tmp_path / "split.json").write_text(split.to_json())
    assert main(["run", str(ROOT / "platforms/diana.yaml"), str(R20), "--schedule", str(tmp_path / "split.json"),
                 "--out", str(tmp_path / "diana")]) == 0
    ops = _check_ints(tmp_path / "diana" / "ops.csv", "ops.csv")
    assert ops.set_index("op").loc[conv, "channels"] == "digital:4;aimc:12"
    trace = _check_ints(tmp_path / "diana" / "trace.csv", "trace.csv")
    assert sorted(trace.loc[trace["op"] == conv, "channels"]) == [4, 12]
    # an SNN run
    assert main(["run", str(ROOT / "platforms/efr32mg24.yaml"), str(DIGITS), "--out", str(tmp_path / "snn")]) == 0
    _check_ints(tmp_path / "snn" / "layers.csv", "layers.csv")
    _check_ints(tmp_path / "snn" / "samples.csv", "samples.csv")
    _check_ints(tmp_path / "snn" / "trace.csv", "snn-trace.csv")
    # an ONNX sweep and an SNN sweep
    spec = {"name": "t", "workloads": [str(R20)], "platforms": [str(ROOT / "platforms/puma.yaml")],
            "parameters": {"devices.cim.crossbars": [25, 100]}, "mappers": ["heft", "cpsat"],
            "output": str(tmp_path / "sweep.csv")}
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump(spec))
    assert main(["sweep", str(tmp_path / "sweep.yaml"), "--workers", "1"]) == 0
    df = _check_ints(tmp_path / "sweep.csv", "sweep.csv")
    assert df["key"][0] == "resnet20_cifar10.onnx|puma.yaml|devices.cim.crossbars=25|heft"
    snn = {"name": "s", "synthetic": {"layers": [8, 16, 4], "timesteps": 4, "samples": 2}, "platforms":
           [str(ROOT / "platforms/efr32mg24.yaml")], "parameters": {"devices.mvp.launch_cycles": [100]},
           "output": str(tmp_path / "snn-sweep.csv")}
    (tmp_path / "snn.yaml").write_text(yaml.safe_dump(snn))
    assert main(["sweep", str(tmp_path / "snn.yaml"), "--workers", "1"]) == 0
    _check_ints(tmp_path / "snn-sweep.csv", "snn-sweep.csv")
    # a host profile
    pytest.importorskip("onnxruntime")
    model = _conv_model(tmp_path / "m.onnx")
    assert main(["profile", str(model), "-o", str(tmp_path / "prof.csv"), "--runs", "2", "--warmup", "0"]) == 0
    _check_ints(tmp_path / "prof.csv", "profile.csv")
    capsys.readouterr()


def test_op_table_dtypes_do_not_depend_on_the_run():
    tables = [run(ROOT / p, R20, mapper=m).ops for p, m in (("platforms/cim-npu.yaml", "all-host"),
                                                           ("platforms/cim-npu.yaml", "heft"),
                                                           ("platforms/diana.yaml", "heft"))]
    for t in tables:
        for c in ("macs", "bits", "m_v", "n_v", "n_mvm", "groups", "crossbars"):
            assert str(t[c].dtype) == "int64", c
        for c in ("placement", "channels"):
            assert t[c].map(type).eq(str).all(), c
    assert tables[0]["placement"].eq("").all() and tables[1]["placement"].ne("").any()
    assert str(tables[0]["placement"].dtype) == str(tables[1]["placement"].dtype)


@pytest.mark.parametrize(("platform", "model", "mapper"), [
    ("puma.yaml", "yolov5n.onnx", "heft"),         # a CIM running several ops at once
    ("cim-npu.yaml", R20.name, "heft"),            # an NPU with per-MAC energy
    ("diana.yaml", R20.name, "min-cost"),          # serial accelerators
])
def test_per_op_energy_adds_up_to_the_devices_energy(platform, model, mapper):
    r = run(ROOT / "platforms" / platform, ROOT / "workloads" / model, mapper=mapper)
    ops, dev = r.ops, r.devices
    links = dev[dev["kind"] == LINK_KIND]
    devices = dev[dev["kind"] != LINK_KIND]
    assert (ops["energy_j"] >= 0).all()
    # the column plus the devices' idle energy is the run's energy without the links'
    total = ops["energy_j"].sum() + devices["idle_j"].sum()
    assert total == pytest.approx(r.summary["energy_j"] - links["energy_j"].sum(), rel=1e-9)
    # per device: its ops' shares are its active and per-op energy (a split op is listed under one device)
    split = (ops["channels"] != "").any()
    assert split == (mapper == "min-cost")
    for d in devices.itertuples() if not split else ():
        on = ops[ops["device"] == d.device]
        assert on["energy_j"].sum() == pytest.approx(d.active_j + d.op_j, rel=1e-9, abs=1e-18), d.device
    if platform == "puma.yaml":  # ops overlap on the CIM: shares, not each op's whole time at active power
        cim = r.trace[r.trace["device"] == "cim"]
        whole = r.platform.devices["cim"].active_w * float((cim["end_s"] - cim["start_s"]).sum())
        assert ops.loc[ops["device"] == "cim", "energy_j"].sum() < whole


def _old_key(point: dict) -> str:
    """A point's key as hetsim wrote it before readable keys (a JSON list)."""
    wl = Path(point["workload"]).name
    return json.dumps([wl, Path(point["platform"]).name, point["params"], point["mapper"]], sort_keys=True,
                      separators=(",", ":"))


def test_a_table_with_json_keys_resumes_with_readable_keys(tmp_path):
    spec_path = tmp_path / "s.yaml"
    spec_path.write_text(yaml.safe_dump({
        "name": "t", "workloads": [str(R20)], "platforms": [str(ROOT / "platforms/puma.yaml")],
        "parameters": {"devices.cim.crossbars": [25, 100], "devices.cim.t_mvm_ns": [50.0]}, "mappers": ["heft"],
        "output": str(tmp_path / "out.csv")}))
    spec = load_sweep(spec_path)
    points = expand_points(spec)
    assert [p["key"] for p in points] == [
        f"resnet20_cifar10.onnx|puma.yaml|devices.cim.crossbars={n},devices.cim.t_mvm_ns=50.0|heft" for n in (25, 100)]
    out, ran, _ = run_sweep(spec, workers=1, progress=lambda d, t, r: None)
    assert ran == 2
    # make it an older hetsim's table: JSON keys, only the first point done
    with out.open(newline="") as f:
        reader = csv.DictReader(f)
        columns, rows = reader.fieldnames, list(reader)
    rows[0]["key"] = _old_key(points[0])
    assert rows[0]["key"].startswith('["resnet20_cifar10.onnx","puma.yaml",{"devices.cim.crossbars":25')
    with out.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns, lineterminator="\n")
        w.writeheader()
        w.writerow(rows[0])
    assert run_sweep(spec, workers=1)[1:] == (1, 1)  # the old point is recognised, only the other runs
    assert list(pd.read_csv(out)["key"]) == [p["key"] for p in points]
    # a key that is neither is refused clearly
    text = out.read_text().replace(points[0]["key"], '["something else"]')
    out.write_text(text)
    with pytest.raises(InputError, match="neither a point key nor an older hetsim's JSON key"):
        run_sweep(spec, workers=1)


def test_old_snn_keys_convert_to_the_same_keys():
    from hetsim.dse.points import _key_from_json

    args = {"layers": [8, 24, 4], "timesteps": 6, "density": [0.1, 0.2, 0.2], "clustering": 0.0, "seed": 0,
            "samples": 4, "shuffle": True}
    old = json.dumps([{"synthetic": args}, "efr32mg24.yaml", {"devices.mvp.launch_cycles": 100}, "spikeduet", "async",
                      False], sort_keys=True, separators=(",", ":"))
    assert _key_from_json(old) == ("synthetic(layers=[8,24,4],timesteps=6,density=[0.1,0.2,0.2],clustering=0.0,"
                                   "seed=0,samples=4,shuffle=true)|efr32mg24.yaml|devices.mvp.launch_cycles=100|"
                                   "spikeduet|async|reorder=false")
    assert _key_from_json("digits64.yaml|efr32mg24.yaml||spikeduet|async|reorder=false") is None
