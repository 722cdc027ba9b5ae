"""The shipped transformer workloads (workloads/scripts/transformers.py): read without their weights, every op
costed, attention MatMuls between two activations never on a crossbar or NPU weight memory, golden makespans.

The shipped files carry no weight values (their external data files are absent); a two-layer model built with its
weights checks that the builder writes real, runnable models (onnxruntime runs it and its outputs have the declared
shapes) and that removing the weights is what the notice reports.
"""

from __future__ import annotations

import functools
import importlib.util
import math
import sys
import warnings

import numpy as np
import onnx
import pytest
from conftest import PLATFORMS, ROOT, assert_input_error, run_cli

from hetsim.costs import CostModel
from hetsim.mappers import get_mapper
from hetsim.platform import load_platform
from hetsim.sim import simulate
from hetsim.workload import load_onnx
from hetsim.workload.onnx_import import WeightsAbsentWarning

WORKLOADS = ROOT / "workloads"
SCRIPT = WORKLOADS / "scripts" / "transformers.py"

#: nodes, float parameters (every initializer, a tied weight once), MACs (load_onnx's sum of GEMM views and
#: activation MatMuls), and on platforms/cim-npu.yaml the all-host and greedy makespans (roofline host)
GOLDEN = {
    "vit_b16": (381, 86_567_704, 17_563_828_224, 3.0729238705454605, 2.841453902545459),
    "bert_base_encoder": (418, 109_482_288, 11_174_215_680, 1.9484881723636385, 1.798046940363638),
    "gpt2_small_prefill": (343, 124_456_204, 11_212_223_232, 1.953635662545458, 1.8032368305454574),
    "gpt2_small_decode": (354, 124_439_820, 125_909_760, 0.09818239345454557, 0.0930057374545456),
}


def vit_macs(s: int = 197, d: int = 768, ffn: int = 3072, heads: int = 12, layers: int = 12) -> int:
    """ViT-B/16's MACs by hand: the 16x16 patch Conv, per layer the qkv, Q K^T, P V, proj and MLP GEMMs, the
    head."""
    per_layer = s * d * 3 * d + 2 * heads * s * s * (d // heads) + s * d * d + 2 * s * d * ffn
    return d * (3 * 16 * 16) * 196 + layers * per_layer + d * 1000


@functools.cache
def builder():
    """workloads/scripts/transformers.py as a module (registered in sys.modules: it defines dataclasses)."""
    spec = importlib.util.spec_from_file_location("hetsim_workloads_transformers", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def load_quiet(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WeightsAbsentWarning)
        return load_onnx(path)


@pytest.fixture(scope="module")
def cim_npu():
    return load_platform(PLATFORMS / "cim-npu.yaml")


@pytest.fixture(scope="module", params=sorted(GOLDEN))
def shipped(request, cim_npu):
    wl = load_quiet(WORKLOADS / f"{request.param}.onnx")
    return request.param, wl, CostModel(wl, cim_npu)


def test_shipped_files_are_small_and_weightless():
    for name, (_, params, *_rest) in GOLDEN.items():
        path = WORKLOADS / f"{name}.onnx"
        assert path.stat().st_size < 200_000
        assert not (WORKLOADS / f"{name}.weights").exists()
        m = onnx.load(path, load_external_data=False)  # the structure loads, and shape inference works on it
        inferred = onnx.shape_inference.infer_shapes(m, strict_mode=True, data_prop=True)
        known = {vi.name for vi in (*inferred.graph.value_info, *inferred.graph.output)
                 if all(d.HasField("dim_value") for d in vi.type.tensor_type.shape.dim)}
        assert {t for n in m.graph.node for t in n.output} <= known
        assert builder().parameters(m) == params


def test_weightless_notice_once_and_in_meta():
    path = WORKLOADS / "gpt2_small_decode.onnx"
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        wl = load_onnx(path)
    notes = [w for w in seen if issubclass(w.category, WeightsAbsentWarning)]
    assert len(notes) == 1 and "\n" not in str(notes[0].message)
    assert "weights absent" in str(notes[0].message) and "gpt2_small_decode.weights" in str(notes[0].message)
    absent = wl.meta["weights_absent"]
    assert absent["files"] == ["gpt2_small_decode.weights"]
    assert absent["elements"] == GOLDEN["gpt2_small_decode"][1] - 12  # the 12 attention scales are inline


def test_golden_metrics(shipped, cim_npu):
    name, wl, costs = shipped
    nodes, _, macs, all_host, greedy = GOLDEN[name]
    assert (len(wl), wl.summary()["macs"]) == (nodes, macs)
    if name == "vit_b16":
        assert macs == vit_macs()
    base = simulate(costs, get_mapper("all-host").map(costs))
    assert base.makespan_s == pytest.approx(all_host, rel=1e-12)
    assert simulate(costs, get_mapper("greedy").map(costs)).makespan_s == pytest.approx(greedy, rel=1e-12)


def test_every_op_costed_and_attention_never_on_a_weight_memory(shipped):
    name, wl, costs = shipped
    accel = [d for d in costs.devices if d != costs.host]
    activation_matmuls = 0
    for v, o in wl.ops.items():
        lat = costs.latency[v]
        assert costs.host in lat and all(math.isfinite(t) and t >= 0 for t in lat.values())
        if v not in costs.folded:
            assert lat[costs.host] > 0, v
        if o.op_type == "MatMul" and o.gemm is None:  # Q K^T and P V: two activations, no constant weight
            activation_matmuls += 1
            assert set(lat) == {costs.host}, v
        elif o.gemm is not None:
            assert set(accel) <= set(lat), v
        else:  # Softmax, LayerNormalization, Gelu/Erf, Gather, Transpose, Reshape, Concat, Split, ...: host only
            assert set(lat) == {costs.host}, (v, o.op_type)
    assert activation_matmuls == 24  # two per layer, 12 layers
    sched = get_mapper("heft").map(costs)
    assert all(sched.device_of(v) == costs.host for v, o in wl.ops.items() if o.op_type == "MatMul" and o.gemm is None)


def test_embedding_lookup_reads_its_rows_not_the_table(cim_npu):
    wl = load_quiet(WORKLOADS / "gpt2_small_decode.onnx")
    host = cim_npu.devices["host"]
    wte = wl.op("wte")
    # 1 row of 768 fp32 = 3072 B read from the table, plus the 8-byte id and the 3072-byte output, at 5.5 GB/s
    assert host.latency(wte) == pytest.approx(2e-6 + (8 + 3072 + 3072) / 5.5e9, rel=1e-12)


def test_tiny_model_with_weights_runs_in_onnxruntime_and_without_them_is_noticed(tmp_path, capsys):
    ort = pytest.importorskip("onnxruntime")
    b = builder()
    g = b.gpt2("decode", layers=2, d=32, n_heads=4, ffn=64, seq=8, vocab=50, positions=16, name="tiny_decode")
    path = b.save(g, tmp_path, weights=True)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    feeds = {i.name: (np.zeros(i.shape, np.int64) if i.type == "tensor(int64)"
                      else np.random.default_rng(0).standard_normal(i.shape).astype(np.float32))
             for i in sess.get_inputs()}
    outs = sess.run(None, feeds)
    declared = [[d.dim_value for d in o.type.tensor_type.shape.dim] for o in onnx.load(path).graph.output]
    assert [list(o.shape) for o in outs] == declared
    assert declared[0] == [1, 1, 50] and declared[1] == [1, 4, 9, 8]  # logits, the 9-token cache
    with warnings.catch_warnings():
        warnings.simplefilter("error", WeightsAbsentWarning)  # weights present: no notice
        wl = load_onnx(path)
    assert "weights_absent" not in wl.meta
    (tmp_path / "tiny_decode.weights").unlink()
    code, out, err = run_cli(capsys, "inspect", str(path))
    assert code == 0 and "weights: absent" in out and err.count("weights absent") == 1
    code, out, err = run_cli(capsys, "profile", str(path), "-o", str(tmp_path / "p.csv"))
    assert_input_error(code, err, "cannot profile", "weights are absent")


def test_run_reports_peak_activation_memory(capsys, tmp_path):
    b = builder()  # a one-layer decoder step: the same ops as GPT-2's, a fast run
    path = b.save(b.gpt2("decode", layers=1, d=32, n_heads=4, ffn=64, seq=8, vocab=50, positions=16,
                         name="tiny_step"), tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WeightsAbsentWarning)
        code, out, err = run_cli(capsys, "run", str(PLATFORMS / "cim-npu.yaml"), str(path), "--mapper", "greedy",
                                 "--out", str(tmp_path / "r"))
    assert code == 0 and "activation memory" in out and "local:host" in out
    assert (tmp_path / "r" / "memory.png").is_file()
    assert "Activation memory" in (tmp_path / "r" / "report.html").read_text()


def test_activation_sram_too_small_refuses_and_spill_charges_the_dram(tmp_path, capsys):
    """cim-npu-dram with a 2 KiB activation SRAM in front of its DRAM: a decoder step's activations do not fit
    (one line, exit 2); with --spill the excess goes to the DRAM, its traffic charged at 12.8 GB/s and 40 pJ/B."""
    import yaml

    import hetsim
    from hetsim.analysis.footprint import MemoryCapacityError

    b = builder()
    path = b.save(b.gpt2("decode", layers=1, d=32, n_heads=4, ffn=64, seq=8, vocab=50, positions=16,
                         name="tiny_step"), tmp_path)
    spec = yaml.safe_load((PLATFORMS / "cim-npu-dram.yaml").read_text())
    spec["memories"] = {"sram": {"size_kib": 2, "bandwidth_gb_s": 100, "activations_of": ["host", "cim", "npu"]},
                        **spec["memories"]}
    plat = tmp_path / "sram.yaml"
    plat.write_text(yaml.safe_dump(spec, sort_keys=False))  # sram first: it holds the activations
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WeightsAbsentWarning)
        with pytest.raises(MemoryCapacityError, match="'sram'"):
            hetsim.run(plat, path, mapper="heft")
        code, out, err = run_cli(capsys, "run", plat, path, "--mapper", "heft")
        assert_input_error(code, err, "live activations", "'sram'", "--spill")
        code, out, err = run_cli(capsys, "validate", plat, path, "--mapper", "heft")
        assert code == 1 and "(d) INVALID: live activations" in out and "'sram'" in out
        code, out, err = run_cli(capsys, "map", plat, path, "--mapper", "heft", "-o", tmp_path / "s.json")
        assert code == 0 and "hetsim: warning: the schedule's live activations reach" in err and "'sram'" in err
        r = hetsim.run(plat, path, mapper="heft", spill=True)
    mem = r.summary["memory"]
    assert mem["memories"]["sram"]["checked"] and not mem["memories"]["sram"]["fits"]
    x = mem["spill"]["memories"]["sram"]
    fp = r.footprint
    assert x["to"] == "dram" and x["spilled_bytes"] == fp.spilled_bytes("sram") > 0
    assert x["traffic_bytes"] == 2 * x["spilled_bytes"]
    assert x["time_s"] == pytest.approx(x["traffic_bytes"] / 12.8e9) and x["energy_j"] == pytest.approx(
        x["traffic_bytes"] * 40e-12)
    assert mem["spill"]["makespan_with_spill_s"] == pytest.approx(r.makespan_s + x["time_s"])
    from hetsim.report.text import format_report

    head = format_report(r).splitlines()[:8]  # the charged figures in the headline, not only far below it
    assert any(line.startswith("  with spill") and "charged" in line for line in head)


def test_shapes_that_need_absent_weights_are_refused_saying_why(tmp_path, capsys):
    """A Reshape whose target shape is an initializer in a missing external file: shape inference cannot infer the
    output, and running the model in onnxruntime would need the value: one line naming both, exit 2."""
    from onnx import TensorProto
    from onnx import helper as h

    shape = TensorProto(name="target", dims=[2], data_type=TensorProto.INT64, data_location=TensorProto.EXTERNAL)
    for k, v in (("location", "gone.bin"), ("offset", "0"), ("length", "16")):
        e = shape.external_data.add()
        e.key, e.value = k, v
    g = h.make_graph([h.make_node("Reshape", ["x", "target"], ["r"]), h.make_node("Relu", ["r"], ["y"])], "g",
                     [h.make_tensor_value_info("x", TensorProto.FLOAT, [1, 6])],
                     [h.make_tensor_value_info("y", TensorProto.FLOAT, None)], [shape])
    path = tmp_path / "reshape.onnx"
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), path)
    code, out, err = run_cli(capsys, "inspect", path)
    assert_input_error(code, err, "weights are absent", "gone.bin", "onnxruntime")
