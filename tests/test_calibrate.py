"""``hetsim calibrate``: the cpu roofline fitted by least squares recovers known parameters from synthetic
profiles, cross-validates by leaving one model out, and runs on the shipped profiles; bad input is one line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from hetsim.calibrate import Fit, OpSample, fit, leave_one_model_out
from hetsim.cli import main
from hetsim.platform import load_platform

ROOT = Path(__file__).resolve().parent.parent
TRUE = Fit(clock_ghz=2.0, macs_per_cycle={8: 32.0, 32: 8.0}, elementwise_per_cycle=4.0, mem_bandwidth_gb_s=20.0,
           op_overhead_us=2.0)


def synthetic(seed: int = 0, noise: float = 0.01, per_model: int = 80) -> list[OpSample]:
    """Ops of three 'models' with log-uniform sizes (compute-, memory- and overhead-bound ones), their latencies
    from the TRUE roofline times a lognormal noise of ``noise``."""
    rng = np.random.default_rng(seed)
    out = []
    for m in ("a", "b", "c"):
        for i in range(per_model):
            kind = rng.integers(3)
            bits = int(rng.choice([8, 32]))
            if kind == 0:  # GEMM: compute-bound mostly
                macs, n_out = float(10 ** rng.uniform(4, 8)), float(10 ** rng.uniform(3, 5))
                nbytes = macs / 10 ** rng.uniform(0.5, 2.5)
            elif kind == 1:  # element-wise, memory- or throughput-bound
                macs, n_out = 0.0, float(10 ** rng.uniform(2, 6))
                nbytes = n_out * rng.uniform(0.5, 6)
            else:  # tiny: overhead-bound
                macs, n_out, nbytes = 0.0, float(rng.integers(1, 50)), float(rng.integers(4, 400))
            s = OpSample(m, f"{m}{i}", "X", macs, bits, n_out, nbytes, 0.0)
            s.latency_s = TRUE.predict(s) * float(np.exp(rng.normal(0, noise)))
            out.append(s)
    return out


def test_known_parameters_are_recovered():
    f = fit(synthetic(), clock_ghz=2.0, level=0.999)
    assert f.macs_per_cycle[8] == pytest.approx(32.0, rel=0.03)
    assert f.macs_per_cycle[32] == pytest.approx(8.0, rel=0.03)
    assert f.elementwise_per_cycle == pytest.approx(4.0, rel=0.03)
    assert f.mem_bandwidth_gb_s == pytest.approx(20.0, rel=0.03)
    assert f.op_overhead_us == pytest.approx(2.0, rel=0.03)
    # the reported 99.9 % intervals are narrow at 1 % noise, around the value, and hold the truth
    assert not f.undetermined
    for name, true in (("macs_per_cycle[8]", 32.0), ("mem_bandwidth_gb_s", 20.0), ("op_overhead_us", 2.0)):
        lo, hi = f.interval[name]
        assert lo < f.values[name] < hi and hi / lo < 1.05
        assert lo <= true <= hi
    assert f.op_error_median < 0.02 and f.n_ops == 240


def test_noise_free_fit_is_exact_and_lomo_is_small():
    data = synthetic(noise=0.0, per_model=60)
    f = fit(data, clock_ghz=2.0)
    assert f.mem_bandwidth_gb_s == pytest.approx(20.0, rel=1e-4) and f.op_error_p90 < 1e-4
    lomo = leave_one_model_out(data, 2.0)
    assert sorted(lomo) == ["a", "b", "c"]
    assert all(abs(v["error"]) < 1e-3 for v in lomo.values())
    # by hand: one held-out model's measured sum is the sum of its ops
    assert lomo["a"]["measured_s"] == pytest.approx(sum(s.latency_s for s in data if s.model == "a"))


def test_shipped_profiles_through_the_cli(tmp_path, capsys):
    out = tmp_path / "host.yaml"
    args = ["calibrate", str(ROOT / "profiles/resnet18_int8_ort.csv"), str(ROOT / "profiles/mobilenet_v2_int8_ort.csv"),
            "--models", str(ROOT / "workloads/paper"), "--clock-ghz", "2.6", "-o", str(out)]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "leave-one-model-out" in text and "macs_per_cycle[8]" in text and "95% interval" in text
    assert "starts ended at the lowest cost" in text and "+-" not in text
    frag = yaml.safe_load(out.read_text())
    host = frag["devices"]["host"]
    assert host["kind"] == "cpu" and host["clock_ghz"] == 2.6 and 8 in host["macs_per_cycle"]
    # the fragment drops into a platform
    plat = {"name": "fitted", "host": "host", "devices": frag["devices"]}
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(plat))
    p = load_platform(tmp_path / "p.yaml")
    assert p.devices["host"].mem_bandwidth_gb_s == pytest.approx(host["mem_bandwidth_gb_s"])
    # not replaced without --force: one line, exit 2
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "--force" in err and len(err.strip().splitlines()) == 1


def test_bad_input_is_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n")
    for argv, msg in ([str(tmp_path / "missing.csv")], "no such profile"), ([str(bad)], "not a hetsim profile"), (
            [f"{ROOT / 'profiles/resnet18_int8_ort.csv'}={tmp_path / 'none.onnx'}"], "no such model"):
        assert main(["calibrate", *argv, "-o", str(tmp_path / "o.yaml")]) == 2
        err = capsys.readouterr().err
        assert msg in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o.yaml").exists()


def test_a_gather_is_counted_as_the_device_counts_it(tmp_path):
    """The bytes fitted are the cpu roofline's own (``roofline_bytes``): an embedding lookup of 4 rows from a
    1000 x 64 fp32 table reads 4 x 64 x 4 bytes of it, not the whole 256,000-byte table."""
    import onnx
    from onnx import TensorProto
    from onnx import helper as h
    from onnx import numpy_helper as nh

    from hetsim.calibrate import samples
    from hetsim.devices.cpu import roofline_bytes
    from hetsim.workload.frontends import load_workload

    emb = nh.from_array(np.zeros((1000, 64), np.float32), "emb")
    g = h.make_graph([h.make_node("Gather", ["emb", "ids"], ["e"], axis=0, name="lookup"),
                      h.make_node("Relu", ["e"], ["y"], name="act")], "emb",
                     [h.make_tensor_value_info("ids", TensorProto.INT64, [1, 4])],
                     [h.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 64])], [emb])
    model = tmp_path / "emb.onnx"
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), model)
    wl = load_workload(model)
    prof = tmp_path / "emb.csv"
    prof.write_text("op,latency_s\n" + "".join(f"{v},1e-6\n" for v in wl.ops))
    got = {s.op: s.nbytes for s in samples(prof, model)}
    assert got == {v: roofline_bytes(op) for v, op in wl.ops.items()}
    look = next(op for op in wl.ops.values() if op.op_type == "Gather")
    assert look.weight_elements == 64_000 and got[look.name] == look.in_bytes + 2 * look.out_bytes
    assert look.out_bytes == 4 * 64 * 4
