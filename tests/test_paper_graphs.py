"""The paper's own operator graphs (``workloads/paper/``, CPU-CIM ILP Table I) read by ``load_onnx``.

These are int8 QOperator graphs as onnxruntime saves them after its optimisations: ``com.microsoft``
QLinearConv (NHWC), QGemm, QLinearAdd, ... whose shapes ``onnx.shape_inference`` does not know, so
``load_onnx`` observes them in one onnxruntime run. Each model is loaded once per module (one run each).
Expected GEMM views are worked out by hand from CPU-CIM ILP Eq. 1 (im2col).
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from hetsim.devices.puma import PumaDevice
from hetsim.errors import WorkloadError
from hetsim.workload import GemmView, Workload, load_onnx

PAPER = Path(__file__).resolve().parent.parent / "workloads" / "paper"
MS = "com.microsoft"

# name -> (Table I operators, QLinearConv ops, QGemm ops, edges, sha256 of the file)
EXPECTED = {
    "yolov5n": (251, 60, 0, 337, "5055f1118830ce23e8b086b3e38f7e65269a5d4273c90abd42edbd285e629c9c"),
    "resnet18": (38, 20, 1, 45, "34e2cdfbb7172f149fb258ba338e58bd24cdbb43dc4caf02c85cf3c3bc136edc"),
    "resnet50": (79, 53, 1, 94, "896a947bcd09f85dc23b69be904049b56df8f5e2472d5c9a90e75d2edcaec360"),
    "mobilenet_v2": (71, 52, 1, 80, "b41342f34026b495b494e768b87439fe707a44853047e24e30ebe41d5f58dbf5"),
}
NAMES = sorted(EXPECTED)
V_ACC_TYPES = ("QLinearConv", "QGemm")
# Producers of the few float32 activations: DQ -> Flatten -> Q before each classifier, DQ -> Pow -> Q in YOLO.
FLOAT_PRODUCERS = {"DequantizeLinear", "Flatten", "Pow"}


@pytest.fixture(scope="module")
def paper() -> dict[str, Workload]:
    return {name: load_onnx(PAPER / f"{name}_int8_ort.onnx") for name in NAMES}


def _first(w: Workload, op_type: str):
    return next(w.op(n) for n in w.topological_order() if w.op(n).op_type == op_type)


# ------------------------------------------------------------------------------------------ the files


@pytest.mark.parametrize("name", NAMES)
def test_file_is_the_provenance_copy(name):
    data = (PAPER / f"{name}_int8_ort.onnx").read_bytes()
    assert hashlib.sha256(data).hexdigest() == EXPECTED[name][4]


@pytest.mark.parametrize("name", NAMES)
def test_op_count_is_table_i(paper, name):
    w = paper[name]
    assert len(w) == w.meta["nodes"] == EXPECTED[name][0]
    assert w.graph.number_of_edges() == EXPECTED[name][3]
    assert w.meta["shapes"].startswith("onnxruntime ")
    assert any(o.domain == MS for o in w.ops.values())


@pytest.mark.parametrize("name", NAMES)
def test_all_shapes_static(paper, name):
    for op in paper[name].ops.values():
        assert op.output_shapes, op.name
        for shape in op.output_shapes + op.input_shapes:
            assert all(isinstance(d, int) and d > 0 for d in shape), (op.name, shape)
        assert op.n_out == sum(int(np.prod(s)) for s in op.output_shapes)


# ------------------------------------------------------------------------------------------ V_acc


@pytest.mark.parametrize("name", NAMES)
def test_vacc_is_exactly_qlinearconv_and_qgemm(paper, name):
    w = paper[name]
    _, n_conv, n_gemm, _, _ = EXPECTED[name]
    ops = list(w.ops.values())
    assert sum(o.op_type == "QLinearConv" for o in ops) == n_conv
    assert sum(o.op_type == "QGemm" for o in ops) == n_gemm
    mvm = [o for o in ops if o.op_type in V_ACC_TYPES]
    assert all(o.gemm is not None and o.bits == 8 and o.domain == MS for o in mvm)
    assert all(o.macs == o.gemm.macs > 0 for o in mvm)
    assert [o for o in ops if o.gemm is not None] == mvm  # nothing else has a GEMM view
    puma = PumaDevice(cores=1, crossbars_per_core=1, t_mvm_ns=100, internal_bandwidth_gb_s=1)
    assert [o for o in ops if puma.supports(o)] == mvm


@pytest.mark.parametrize("name", NAMES)
def test_weights_of_gemm_ops(paper, name):
    for op in paper[name].ops.values():
        if op.op_type == "QLinearConv":
            c_out = op.output_shapes[0][-1]  # NHWC
            assert op.weight_shape[0] == c_out and len(op.weight_shape) == 4
            assert op.gemm.m_v * op.gemm.groups == c_out
            assert op.gemm.n_v == int(np.prod(op.weight_shape[1:]))
            assert op.gemm.n_mvm == int(np.prod(op.output_shapes[0][:-1]))
            # + per-channel scale, zero point and int32 bias, + 4 scalar scales/zero points
            assert op.weight_elements == int(np.prod(op.weight_shape)) + 3 * c_out + 4
        elif op.op_type == "QGemm":
            assert op.weight_shape == (1000, op.input_shapes[0][1])


def test_resnet18_hand_checked_views(paper):
    w = paper["resnet18"]
    stem = _first(w, "QLinearConv")  # 7x7/2, 3 -> 64, 224x224 -> 112x112, NHWC
    assert stem.gemm == GemmView(m_v=64, n_v=147, n_mvm=12544, groups=1)
    assert stem.weight_shape == (64, 3, 7, 7)
    assert stem.input_shapes == ((1, 224, 224, 3),) and stem.output_shapes == ((1, 112, 112, 64),)
    assert stem.in_bytes == stem.n_in == 224 * 224 * 3 and stem.out_bytes == stem.n_out == 112 * 112 * 64
    fc = _first(w, "QGemm")  # transB=1, B = (1000, 512)
    assert fc.gemm == GemmView(m_v=1000, n_v=512, n_mvm=1, groups=1)
    assert fc.weight_shape == (1000, 512) and fc.input_shapes == ((1, 512),) and fc.output_shapes == ((1, 1000),)
    assert fc.weight_elements == 1000 * 512 + 3 * 1000 + 4  # W, b_scale, b_zp, C + a/y scale and zp


def test_mobilenet_v2_depthwise(paper):
    w = paper["mobilenet_v2"]
    dw = [o for o in w.ops.values() if o.gemm is not None and o.gemm.groups > 1]
    assert len(dw) == 17
    for o in dw:
        c = o.output_shapes[0][-1]
        assert o.gemm.m_v == 1 and o.gemm.n_v == 9 and o.gemm.groups == c and o.weight_shape == (c, 1, 3, 3)
    first = _first(w, "QLinearConv")
    second = w.op(next(iter(w.graph.successors(first.name))))
    assert second.gemm == GemmView(m_v=1, n_v=9, n_mvm=112 * 112, groups=32)


def test_macs_equal_the_fp32_graphs(paper):
    # same totals as the fp32 / QDQ files of workloads/ (workloads/README.md)
    macs = {name: w.summary()["macs"] for name, w in paper.items()}
    assert macs == {
        "yolov5n": 2_234_060_800,
        "resnet18": 1_814_073_344,
        "resnet50": 4_089_184_256,
        "mobilenet_v2": 300_774_272,
    }


# ------------------------------------------------------------------------------------------ edges


@pytest.mark.parametrize("name", NAMES)
def test_edges_carry_one_byte_per_quantized_element(paper, name):
    w = paper[name]
    one_byte = 0
    for u, v, d in w.graph.edges(data=True):
        producer = w.op(u)
        assert d["elements"] > 0
        if producer.op_type in FLOAT_PRODUCERS:
            assert d["bytes"] == 4 * d["elements"], (u, v, d)
        else:
            assert d["bytes"] == d["elements"], (u, v, d)  # uint8 activations
            one_byte += 1
        if w.op(v).op_type in V_ACC_TYPES or producer.op_type in V_ACC_TYPES:
            assert d["bytes"] == d["elements"] and not d["param"]
    float_edges = w.graph.number_of_edges() - one_byte
    # resnets/mobilenet: DQ -> Flatten -> Q; yolov5n: 3 x (DQ -> Pow, const DQ -> Pow (param), Pow -> Q)
    assert float_edges == (9 if name == "yolov5n" else 2)
    assert sum(d["param"] for *_, d in w.graph.edges(data=True)) == (3 if name == "yolov5n" else 0)


# ------------------------------------------------------------------------------- shape recovery, small


def _ms_model(tmp_path: Path, nodes, inputs, outputs, inits, name: str) -> Path:
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=inits)
    opsets = [helper.make_opsetid("", 13), helper.make_opsetid(MS, 1)]
    path = tmp_path / f"{name}.onnx"
    onnx.save(helper.make_model(graph, opset_imports=opsets), str(path))
    return path


def _scalars(prefix: str, zp_type=np.uint8) -> list[onnx.TensorProto]:
    return [
        numpy_helper.from_array(np.array(0.05, dtype=np.float32), f"{prefix}_s"),
        numpy_helper.from_array(np.array(3, dtype=zp_type), f"{prefix}_zp"),
    ]


def _nhwc_conv_model(tmp_path: Path) -> Path:
    # uint8 NHWC x (1, 9, 9, 4) -> 3x3/2 conv, pad 1, 4 -> 6 channels -> y (1, 5, 5, 6), shape left unknown
    w = numpy_helper.from_array(np.ones((6, 4, 3, 3), dtype=np.int8), "w")
    inits = [*_scalars("x"), *_scalars("y"), w, *(_scalars("w", np.int8))]
    conv = helper.make_node(
        "QLinearConv", ["x", "x_s", "x_zp", "w", "w_s", "w_zp", "y_s", "y_zp"], ["y"], name="conv", domain=MS,
        kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], channels_last=1,
    )  # fmt: skip
    x = helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 9, 9, 4])
    y = helper.make_tensor_value_info("y", TensorProto.UINT8, None)
    return _ms_model(tmp_path, [conv], [x], [y], inits, "nhwc")


def test_small_nhwc_qlinearconv(tmp_path):
    w = load_onnx(_nhwc_conv_model(tmp_path))
    op = w.op("conv")
    assert op.output_shapes == ((1, 5, 5, 6),) and op.input_shapes == ((1, 9, 9, 4),)
    assert op.gemm == GemmView(m_v=6, n_v=36, n_mvm=25) and op.bits == 8 and op.weight_shape == (6, 4, 3, 3)
    assert op.out_bytes == 150 and w.meta["shapes"].startswith("onnxruntime ")
    assert w.meta["outputs"] == [{"name": "y", "dtype": "uint8", "shape": [1, 5, 5, 6]}]


def test_small_qgemm_without_transpose(tmp_path):
    b = numpy_helper.from_array(np.ones((16, 10), dtype=np.int8), "b")  # (K, N), transB = 0
    inits = [*_scalars("a"), b, *_scalars("b", np.int8), *_scalars("y")]
    node = helper.make_node(
        "QGemm", ["a", "a_s", "a_zp", "b", "b_s", "b_zp", "", "y_s", "y_zp"], ["y"], name="qgemm", domain=MS
    )
    a = helper.make_tensor_value_info("a", TensorProto.UINT8, [3, 16])
    y = helper.make_tensor_value_info("y", TensorProto.UINT8, None)
    op = load_onnx(_ms_model(tmp_path, [node], [a], [y], inits, "qgemm")).op("qgemm")
    assert op.output_shapes == ((3, 10),) and op.gemm == GemmView(m_v=10, n_v=16, n_mvm=3) and op.bits == 8


def test_plain_onnx_does_not_import_onnxruntime(tmp_path):
    node = helper.make_node("Relu", ["x"], ["y"], name="relu")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])  # fmt: skip
    path = tmp_path / "plain.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    code = (
        "import sys; from hetsim.workload import load_onnx; w = load_onnx(sys.argv[1]); "
        "assert w.meta['shapes'] == 'onnx.shape_inference'; assert 'onnxruntime' not in sys.modules, 'imported'"
    )
    subprocess.run([sys.executable, "-c", code, str(path)], check=True, timeout=120)


def test_missing_onnxruntime_is_a_workload_error(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # makes `import onnxruntime` raise ImportError
    with pytest.raises(WorkloadError) as info:
        load_onnx(_nhwc_conv_model(tmp_path))
    msg = str(info.value)
    assert "'y'" in msg and "'conv'" in msg and "onnxruntime is not installed" in msg and "\n" not in msg


def test_onnxruntime_failure_is_a_workload_error(tmp_path):
    nodes = [helper.make_node("Mystery", ["x"], ["m"], name="mystery", domain="custom.domain")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("m", TensorProto.FLOAT, None)])  # fmt: skip
    opsets = [helper.make_opsetid("", 13), helper.make_opsetid("custom.domain", 1)]
    path = tmp_path / "mystery.onnx"
    onnx.save(helper.make_model(graph, opset_imports=opsets), str(path))
    with pytest.raises(WorkloadError) as info, pytest.warns(UserWarning, match="custom domain 'custom.domain'"):
        load_onnx(path)
    msg = str(info.value)
    assert "'m'" in msg and "'mystery'" in msg and "onnxruntime" in msg and "cannot load" in msg
    assert "\n" not in msg


def test_data_dependent_shapes_are_not_guessed(tmp_path):
    nodes = [
        helper.make_node("NonZero", ["x"], ["nz"], name="nonzero"),
        helper.make_node("Mystery", ["nz"], ["m"], name="mystery", domain="custom.domain"),
    ]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("m", TensorProto.INT64, None)])  # fmt: skip
    opsets = [helper.make_opsetid("", 13), helper.make_opsetid("custom.domain", 1)]
    path = tmp_path / "nz.onnx"
    onnx.save(helper.make_model(graph, opset_imports=opsets), str(path))
    with pytest.raises(WorkloadError, match="NonZero depends on the input values"), \
            pytest.warns(UserWarning, match="custom domain 'custom.domain'"):
        load_onnx(path)


def test_external_tensor_data(tmp_path):
    model = onnx.load(str(_nhwc_conv_model(tmp_path)))
    path = tmp_path / "ext" / "nhwc.onnx"
    path.parent.mkdir()
    onnx.save(model, str(path), save_as_external_data=True, location="nhwc.data", size_threshold=0)
    assert (path.parent / "nhwc.data").exists()
    assert load_onnx(path).op("conv").gemm == GemmView(m_v=6, n_v=36, n_mvm=25)
