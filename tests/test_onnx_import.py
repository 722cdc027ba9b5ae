"""Tests of the ONNX importer (hetsim.workload.onnx_import.load_onnx).

Small models are built with ``onnx.helper`` and written to ``tmp_path`` (never passed through the checker, so
that broken graphs can be written too); expected values are computed by hand from CPU-CIM ILP Eq. 1 (im2col).
The shipped models in ``workloads/`` are loaded once per module.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from hetsim.errors import InputError, WorkloadError
from hetsim.workload import GemmView, Op, Workload, load_onnx

WORKLOADS = Path(__file__).resolve().parent.parent / "workloads"
F32 = TensorProto.FLOAT


def _vi(name: str, shape, elem=F32) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, shape)


def _init(name: str, shape, dtype=np.float32) -> onnx.TensorProto:
    return numpy_helper.from_array(np.zeros(shape, dtype=dtype), name)


def _save(tmp_path: Path, nodes, inputs, outputs, inits=(), name="m", opset=13) -> Path:
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="test")
    path = tmp_path / f"{name}.onnx"
    onnx.save(model, str(path))
    return path


def _single_conv(tmp_path, x_shape, w_shape, y_shape, **attrs) -> Workload:
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], name="conv", **attrs)
    return load_onnx(
        _save(tmp_path, [node], [_vi("x", x_shape)], [_vi("y", y_shape)],
              [_init("w", w_shape), _init("b", [w_shape[0]])])
    )  # fmt: skip


# ------------------------------------------------------------------------------------------- GEMM views


def test_conv3x3_resnet18_layer1(tmp_path):
    w = _single_conv(tmp_path, [1, 64, 56, 56], [64, 64, 3, 3], [1, 64, 56, 56],
                     kernel_shape=[3, 3], pads=[1, 1, 1, 1])  # fmt: skip
    assert len(w) == 1 and w.graph.number_of_edges() == 0
    op = w.op("conv")
    assert op.gemm == GemmView(m_v=64, n_v=576, n_mvm=3136, groups=1)
    assert op.gemm.n_crossbar(256, 256) == 3  # ceil(64/256) * ceil(576/256)
    assert op.macs == 64 * 576 * 3136
    assert op.weight_shape == (64, 64, 3, 3)
    assert op.weight_elements == 64 * 64 * 9 + 64  # weight + bias
    assert op.input_shapes == ((1, 64, 56, 56),)
    assert op.output_shapes == ((1, 64, 56, 56),)
    assert op.n_in == op.n_out == 64 * 56 * 56
    assert op.in_bytes == op.out_bytes == 4 * 64 * 56 * 56
    assert op.bits == 32 and op.index == 0 and op.domain == "" and not op.is_constant


def test_depthwise_conv(tmp_path):
    w = _single_conv(tmp_path, [1, 32, 112, 112], [32, 1, 3, 3], [1, 32, 112, 112],
                     kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=32)  # fmt: skip
    op = w.op("conv")
    assert op.gemm == GemmView(m_v=1, n_v=9, n_mvm=112 * 112, groups=32)
    assert op.gemm.n_crossbar(256, 256) == 32  # one crossbar per group
    assert op.macs == 32 * 9 * 112 * 112


def test_grouped_conv(tmp_path):
    # 8 -> 16 channels in 2 groups: each group maps 4 input channels to 8 output channels.
    w = _single_conv(tmp_path, [1, 8, 10, 10], [16, 4, 3, 3], [1, 16, 8, 8], kernel_shape=[3, 3], group=2)
    op = w.op("conv")
    assert op.gemm == GemmView(m_v=8, n_v=36, n_mvm=64, groups=2)
    assert op.macs == 16 * 36 * 64
    assert op.gemm.n_crossbar(4, 32) == 2 * 2 * 2


def test_conv1d_with_batch(tmp_path):
    w = _single_conv(tmp_path, [2, 4, 20], [6, 4, 5], [2, 6, 16], kernel_shape=[5])
    assert w.op("conv").gemm == GemmView(m_v=6, n_v=20, n_mvm=2 * 16)


def test_gemm_trans_b(tmp_path):
    node = helper.make_node("Gemm", ["a", "B", "C"], ["y"], name="fc", transB=1)
    path = _save(tmp_path, [node], [_vi("a", [1, 512])], [_vi("y", [1, 1000])],
                 [_init("B", [1000, 512]), _init("C", [1000])])  # fmt: skip
    op = load_onnx(path).op("fc")
    assert op.gemm == GemmView(m_v=1000, n_v=512, n_mvm=1)
    assert op.gemm.n_crossbar(256, 256) == 4 * 2
    assert op.macs == 512_000
    assert op.weight_shape == (1000, 512)
    assert op.weight_elements == 512_000 + 1000


def test_gemm_trans_a(tmp_path):
    # A is stored (K, M) = (64, 8); after transA it is (M, K) = (8, 64); B is (K, N) = (64, 10).
    node = helper.make_node("Gemm", ["a", "B"], ["y"], name="fc", transA=1)
    path = _save(tmp_path, [node], [_vi("a", [64, 8])], [_vi("y", [8, 10])], [_init("B", [64, 10])])
    op = load_onnx(path).op("fc")
    assert op.gemm == GemmView(m_v=10, n_v=64, n_mvm=8)
    assert op.macs == 8 * 64 * 10
    assert op.input_shapes == ((64, 8),)


def test_matmul_constant_weight(tmp_path):
    node = helper.make_node("MatMul", ["a", "W"], ["y"], name="mm")
    path = _save(tmp_path, [node], [_vi("a", [2, 5, 16])], [_vi("y", [2, 5, 32])], [_init("W", [16, 32])])
    op = load_onnx(path).op("mm")
    assert op.gemm == GemmView(m_v=32, n_v=16, n_mvm=10)
    assert op.macs == 32 * 16 * 10
    assert op.weight_shape == (16, 32)


def test_matmul_runtime_operands(tmp_path):
    node = helper.make_node("MatMul", ["a", "b"], ["y"], name="mm")
    path = _save(tmp_path, [node], [_vi("a", [2, 5, 16]), _vi("b", [2, 16, 7])], [_vi("y", [2, 5, 7])])
    op = load_onnx(path).op("mm")
    assert op.gemm is None and op.weight_shape is None and op.weight_elements == 0
    assert op.macs == 2 * 5 * 7 * 16
    assert op.input_shapes == ((2, 5, 16), (2, 16, 7))
    assert op.n_in == 160 + 224


def test_conv_runtime_weight_has_macs_but_no_view(tmp_path):
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="conv", kernel_shape=[3, 3])
    path = _save(tmp_path, [node], [_vi("x", [1, 4, 6, 6]), _vi("w", [8, 4, 3, 3])], [_vi("y", [1, 8, 4, 4])])
    op = load_onnx(path).op("conv")
    assert op.gemm is None and op.weight_shape is None
    assert op.macs == 8 * 36 * 16


def test_qlinearconv(tmp_path):
    u8 = TensorProto.UINT8
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"], name="qc",
                            kernel_shape=[1, 1])  # fmt: skip
    inits = [_init("xs", [], np.float32), _init("xz", [], np.uint8), _init("w", [16, 8, 1, 1], np.int8),
             _init("ws", [], np.float32), _init("wz", [], np.int8), _init("ys", [], np.float32),
             _init("yz", [], np.uint8)]  # fmt: skip
    path = _save(tmp_path, [node], [_vi("x", [1, 8, 5, 5], u8)], [_vi("y", [1, 16, 5, 5], u8)], inits)
    op = load_onnx(path).op("qc")
    assert op.gemm == GemmView(m_v=16, n_v=8, n_mvm=25)
    assert op.bits == 8 and op.weight_shape == (16, 8, 1, 1)
    assert op.in_bytes == 200 and op.out_bytes == 400


# ------------------------------------------------------------------------------------ QDQ, edges, constants


def _qdq_conv_model(tmp_path) -> Path:
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"], name="q"),
        helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xf"], name="dq_x"),
        helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["wf"], name="dq_w", axis=0),
        helper.make_node("Conv", ["xf", "wf"], ["y"], name="conv", kernel_shape=[3, 3]),
    ]
    inits = [_init("s", [], np.float32), _init("z", [], np.int8), _init("wq", [16, 8, 3, 3], np.int8),
             _init("ws", [16], np.float32), _init("wz", [16], np.int8)]  # fmt: skip
    return _save(tmp_path, nodes, [_vi("x", [1, 8, 10, 10])], [_vi("y", [1, 16, 8, 8])], inits, name="qdq")


def test_qdq_conv_is_8bit_and_keeps_qdq_ops(tmp_path):
    w = load_onnx(_qdq_conv_model(tmp_path))
    assert list(w.ops) == ["q", "dq_x", "dq_w", "conv"]
    conv = w.op("conv")
    assert conv.bits == 8
    assert conv.gemm == GemmView(m_v=16, n_v=72, n_mvm=64)
    assert conv.weight_shape == (16, 8, 3, 3)  # the dequantized weight: a constant
    assert conv.input_shapes == ((1, 8, 10, 10),)
    assert w.op("q").bits == 32 and w.op("dq_x").bits == 8 and w.op("dq_w").bits == 8
    assert w.op("dq_w").is_constant and not w.op("dq_x").is_constant and not w.op("q").is_constant
    assert w.op("dq_w").weight_elements == 16 * 72 + 16 + 16
    assert w.op("dq_w").input_shapes == ()


def test_qdq_edges_by_hand(tmp_path):
    g = load_onnx(_qdq_conv_model(tmp_path)).graph
    assert set(g.edges) == {("q", "dq_x"), ("dq_x", "conv"), ("dq_w", "conv")}
    # q -> dq_x carries xq: int8 (1, 8, 10, 10) = 800 elements of 1 byte.
    assert g.edges["q", "dq_x"] == {"tensors": ["xq"], "elements": 800, "bytes": 800, "param": False}
    # dq_x -> conv carries xf: float32, 800 elements of 4 bytes.
    assert g.edges["dq_x", "conv"] == {"tensors": ["xf"], "elements": 800, "bytes": 3200, "param": False}
    assert g.edges["dq_w", "conv"] == {"tensors": ["wf"], "elements": 1152, "bytes": 4608, "param": True}


def test_edge_aggregates_tensors_between_a_pair(tmp_path):
    nodes = [
        helper.make_node("Split", ["x"], ["a", "b"], name="split", axis=1),
        helper.make_node("Add", ["a", "b"], ["s"], name="add"),
        helper.make_node("Mul", ["s", "s"], ["y"], name="square"),
    ]
    w = load_onnx(_save(tmp_path, nodes, [_vi("x", [1, 4, 6])], [_vi("y", [1, 2, 6])]))
    assert w.graph.edges["split", "add"] == {"tensors": ["a", "b"], "elements": 24, "bytes": 96, "param": False}
    assert w.graph.edges["add", "square"]["tensors"] == ["s"]
    square = w.op("square")  # a tensor read twice counts once
    assert square.input_shapes == ((1, 2, 6),) and square.n_in == 12 and square.in_bytes == 48
    assert w.op("split").output_shapes == ((1, 2, 6), (1, 2, 6)) and w.op("split").n_out == 24


def test_constant_propagation_and_param_edges(tmp_path):
    shape = numpy_helper.from_array(np.array([1, -1], dtype=np.int64), "shape_value")
    nodes = [
        helper.make_node("Constant", [], ["c"], name="const", value=shape),
        helper.make_node("Identity", ["c"], ["c2"], name="ident"),
        helper.make_node("Reshape", ["x", "c2"], ["y"], name="reshape"),
    ]
    w = load_onnx(_save(tmp_path, nodes, [_vi("x", [1, 3, 4])], [_vi("y", [1, 12])]))
    assert w.op("const").is_constant and w.op("ident").is_constant and not w.op("reshape").is_constant
    assert w.graph.edges["ident", "reshape"] == {"tensors": ["c2"], "elements": 2, "bytes": 16, "param": True}
    assert w.graph.edges["const", "ident"]["param"]
    r = w.op("reshape")
    assert r.input_shapes == ((1, 3, 4),) and r.weight_elements == 2 and r.weight_shape is None
    assert r.macs == 0 and r.gemm is None
    assert w.op("const").bits == 64  # no runtime input: element size of its int64 output


def test_names_unique_and_nonempty(tmp_path):
    nodes = [
        helper.make_node("Relu", ["x"], ["a"]),
        helper.make_node("Relu", ["a"], ["b"], name="dup"),
        helper.make_node("Relu", ["b"], ["c"], name="dup"),
        helper.make_node("Relu", ["c"], ["y"], name="Relu_0"),
    ]
    w = load_onnx(_save(tmp_path, nodes, [_vi("x", [2])], [_vi("y", [2])]))
    assert list(w.ops) == ["Relu_0", "dup", "dup_2", "Relu_0_3"]
    assert [o.index for o in w.ops.values()] == [0, 1, 2, 3]
    assert w.topological_order() == list(w.ops)


def test_unsorted_dag_is_accepted(tmp_path):
    nodes = [helper.make_node("Relu", ["a"], ["y"], name="second"), helper.make_node("Neg", ["x"], ["a"], name="first")]
    w = load_onnx(_save(tmp_path, nodes, [_vi("x", [3, 5])], [_vi("y", [3, 5])]))
    assert w.op("second").input_shapes == ((3, 5),) and w.op("second").index == 0
    assert w.topological_order() == ["first", "second"]


def test_initializer_listed_as_graph_input_is_a_constant(tmp_path):
    node = helper.make_node("MatMul", ["a", "W"], ["y"], name="mm")
    path = _save(tmp_path, [node], [_vi("a", [3, 4]), _vi("W", [4, 2])], [_vi("y", [3, 2])], [_init("W", [4, 2])])
    w = load_onnx(path)
    assert w.op("mm").gemm == GemmView(m_v=2, n_v=4, n_mvm=3)
    assert [i["name"] for i in w.meta["inputs"]] == ["a"]


def test_meta(tmp_path):
    path = _qdq_conv_model(tmp_path)
    w = load_onnx(str(path))
    assert w.name == "qdq" and w.source == str(path)
    assert w.meta["producer"] == "test" and w.meta["opset"] == {"ai.onnx": 13} and w.meta["nodes"] == 4
    assert w.meta["ir_version"] > 0
    assert w.meta["inputs"] == [{"name": "x", "dtype": "float32", "shape": [1, 8, 10, 10]}]
    assert w.meta["outputs"] == [{"name": "y", "dtype": "float32", "shape": [1, 16, 8, 8]}]


def test_op_dict_round_trip(tmp_path):
    op = load_onnx(_qdq_conv_model(tmp_path)).op("conv")
    assert Op.from_dict(op.to_dict()) == op


# ------------------------------------------------------------------------------------------------ errors


def _raises(path, *fragments) -> str:
    with pytest.raises(WorkloadError) as info:
        load_onnx(path)
    msg = str(info.value)
    assert "\n" not in msg, msg
    for f in fragments:
        assert f in msg, (f, msg)
    assert isinstance(info.value, InputError)
    return msg


def test_missing_path(tmp_path):
    _raises(tmp_path / "nope.onnx", "not found", "nope.onnx")


def test_directory_path(tmp_path):
    _raises(tmp_path, "directory")


def test_text_file_is_not_onnx(tmp_path):
    path = tmp_path / "notes.onnx"
    path.write_text("this is a text file, not a model\n")
    _raises(path, "notes.onnx", "not an ONNX model")


def test_empty_file_is_not_onnx(tmp_path):
    path = tmp_path / "empty.onnx"
    path.write_bytes(b"")
    _raises(path, "empty.onnx", "not an ONNX model")


def test_cycle(tmp_path):
    nodes = [
        helper.make_node("Add", ["x", "b"], ["a"], name="n_add"),
        helper.make_node("Relu", ["a"], ["b"], name="n_relu"),
        helper.make_node("Neg", ["a"], ["y"], name="n_out"),
    ]
    msg = _raises(_save(tmp_path, nodes, [_vi("x", [2])], [_vi("y", [2])]), "not a DAG", "cycle", "n_add")
    assert "n_relu" in msg and "n_out" not in msg


def test_symbolic_dim(tmp_path):
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    path = _save(tmp_path, nodes, [_vi("x", ["N", 3])], [_vi("y", ["N", 3])])
    _raises(path, "'x'", "'relu'", "static shape", "symbolic", "'N'")


def test_shape_inference_gives_no_shape(tmp_path):
    nodes = [
        helper.make_node("Mystery", ["x"], ["m"], name="mystery", domain="custom.domain"),
        helper.make_node("Relu", ["m"], ["y"], name="relu"),
    ]
    graph = helper.make_graph(nodes, "g", [_vi("x", [2, 3])], [_vi("y", None)])
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("custom.domain", 1)]
    )
    path = tmp_path / "custom.onnx"
    onnx.save(model, str(path))
    with pytest.warns(UserWarning, match="custom domain 'custom.domain'"):
        _raises(path, "'m'", "'mystery'", "no shape")


def test_if_node_is_control_flow(tmp_path):
    branch = helper.make_graph([helper.make_node("Identity", ["x"], ["o"])], "branch", [], [_vi("o", [2])])
    node = helper.make_node("If", ["cond"], ["y"], name="the_if", then_branch=branch, else_branch=branch)
    path = _save(tmp_path, [node], [_vi("cond", [], TensorProto.BOOL), _vi("x", [2])], [_vi("y", [2])])
    _raises(path, "'the_if'", "If", "control flow")


def test_tensor_produced_twice(tmp_path):
    nodes = [helper.make_node("Relu", ["x"], ["t"], name="r1"), helper.make_node("Neg", ["x"], ["t"], name="r2")]
    _raises(_save(tmp_path, nodes, [_vi("x", [2])], [_vi("t", [2])]), "'t'", "two nodes", "'r1'", "'r2'")


def test_dangling_input(tmp_path):
    nodes = [helper.make_node("Add", ["x", "ghost"], ["y"], name="add")]
    _raises(_save(tmp_path, nodes, [_vi("x", [2])], [_vi("y", [2])]), "'ghost'", "'add'", "not produced")


# ------------------------------------------------------------------------------------ shipped workloads

REAL = {
    "yolov5n": 263,
    "yolov5n_int8_qdq": 852,
    "resnet18_int8_qdq": 140,
    "resnet50_int8_qdq": 329,
    "mobilenet_v2": 170,
    "mobilenet_v2_int8_qdq": 303,
}


@pytest.fixture(scope="module")
def real() -> dict[str, Workload]:
    return {name: load_onnx(WORKLOADS / f"{name}.onnx") for name in REAL}


@pytest.mark.parametrize("name", sorted(REAL))
def test_real_op_count_equals_onnx_node_count(real, name):
    w = real[name]
    assert len(w) == REAL[name] == w.meta["nodes"]
    assert w.name == name
    # every MVM op of the shipped models has a constant weight, hence a GEMM view
    mvm = [o for o in w.ops.values() if o.op_type in ("Conv", "Gemm", "MatMul")]
    assert mvm and all(o.gemm is not None and o.macs == o.gemm.macs for o in mvm)


def test_resnet18_int8_convs(real):
    w = real["resnet18_int8_qdq"]
    convs = [o for o in w.ops.values() if o.op_type == "Conv"]
    assert len(convs) == 20 and all(o.bits == 8 for o in convs)
    first = w.op(w.topological_order()[[w.op(n).op_type for n in w.topological_order()].index("Conv")])
    assert first.weight_shape == (64, 3, 7, 7)
    assert first.gemm == GemmView(m_v=64, n_v=147, n_mvm=12544)
    assert first.input_shapes == ((1, 3, 224, 224),) and first.output_shapes == ((1, 64, 112, 112),)
    assert w.meta["inputs"] == [{"name": "input", "dtype": "float32", "shape": [1, 3, 224, 224]}]


def test_yolov5n_convs(real):
    convs = [o for o in real["yolov5n"].ops.values() if o.op_type == "Conv"]
    assert len(convs) == 60 and all(o.gemm is not None and o.bits == 32 for o in convs)


def test_mobilenet_v2_depthwise(real):
    dw = [o for o in real["mobilenet_v2"].ops.values() if o.gemm is not None and o.gemm.groups > 1]
    assert len(dw) == 17 and all(o.gemm.m_v == 1 and o.gemm.n_v == 9 for o in dw)
