"""ONNX models nobody here wrote: the patterns of torchvision's classification zoo
(Constant-heavy attention with a MatMul between two activations, LayerNormalization, Gelu, Resize, Pad, Slice,
depthwise and grouped convolutions), shape recovery in onnxruntime that matches tensors rather than node sets,
inputs of any element type onnxruntime runs, dynamic input dims fixed with ``--input-shape``, and validation
beyond ``onnx.checker`` (one line, exit 2 through the CLI).

Models are built with ``onnx.helper`` and written to ``tmp_path``.
"""

from __future__ import annotations

import contextlib
import warnings
from pathlib import Path

import numpy as np
import onnx
import pytest
from conftest import assert_input_error, run_cli
from onnx import TensorProto, helper, numpy_helper

from hetsim.errors import WorkloadError
from hetsim.workload import load_onnx

ROOT = Path(__file__).resolve().parent.parent
PUMA = ROOT / "platforms" / "puma.yaml"
F32 = TensorProto.FLOAT
MS = "com.microsoft"


def _vi(name, shape, elem=F32):
    return helper.make_tensor_value_info(name, elem, shape)


def _const(name, array):
    """A ``Constant`` node (what torch.onnx exports; onnxruntime turns it into an initializer)."""
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(array), name + "_v"),
                            name=name)  # fmt: skip


def _init(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def _save(tmp_path, nodes, inputs, outputs, inits=(), opset=17, ms=False, name="m", ir=None) -> Path:
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    imports = [helper.make_opsetid("", opset)] + ([helper.make_opsetid(MS, 1)] if ms else [])
    model = helper.make_model(graph, opset_imports=imports, producer_name="test")
    if ir is not None:
        model.ir_version = ir
    path = tmp_path / f"{name}.onnx"
    onnx.save(model, str(path))
    return path


def _ops(wl):
    return {n: wl.graph.nodes[n]["op"] for n in wl.graph}


def _attention(ms_gelu: bool, d=16, t=8) -> tuple[list, list]:
    """A ViT-like block: LayerNorm, Q/K/V from Constant weights, softmax(Q K^T) V (MatMul of two activations),
    CastLike (torch's scaling), Gelu (an Erf expansion, or com.microsoft Gelu which ONNX cannot infer)."""
    rng = np.random.default_rng(0)
    w = {k: rng.standard_normal((d, d)).astype(np.float32) for k in "qkv"}
    nodes = [
        _const("gamma", np.ones(d, np.float32)),
        _const("beta", np.zeros(d, np.float32)),
        helper.make_node("LayerNormalization", ["x", "gamma", "beta"], ["ln"], axis=-1, name="ln"),
        *(_const(f"w{k}", w[k]) for k in "qkv"),
        *(helper.make_node("MatMul", ["ln", f"w{k}"], [k], name=f"mm_{k}") for k in "qkv"),
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1], name="kt"),
        helper.make_node("MatMul", ["q", "kt"], ["scores"], name="qk"),
        _const("scale", np.array(0.25, np.float64)),
        helper.make_node("CastLike", ["scale", "scores"], ["scale_f"], name="castlike"),
        helper.make_node("Mul", ["scores", "scale_f"], ["scaled"], name="scaled"),
        helper.make_node("Softmax", ["scaled"], ["attn"], axis=-1, name="softmax"),
        helper.make_node("MatMul", ["attn", "v"], ["ctx"], name="av"),
    ]
    if ms_gelu:
        nodes += [helper.make_node("Gelu", ["ctx"], ["g"], domain=MS, name="gelu"),  # no ONNX shape function
                  helper.make_node("Identity", ["g"], ["y"], name="out")]
    else:  # torch's exact Gelu: 0.5 * x * (1 + erf(x / sqrt(2)))
        nodes += [
            _const("sqrt2", np.array(np.sqrt(2), np.float32)),
            helper.make_node("Div", ["ctx", "sqrt2"], ["xs"], name="gelu_div"),
            helper.make_node("Erf", ["xs"], ["erf"], name="gelu_erf"),
            _const("one", np.array(1, np.float32)),
            helper.make_node("Add", ["erf", "one"], ["erf1"], name="gelu_add"),
            helper.make_node("Mul", ["ctx", "erf1"], ["xe"], name="gelu_mul"),
            _const("half", np.array(0.5, np.float32)),
            helper.make_node("Mul", ["xe", "half"], ["y"], name="gelu_half"),
        ]
    return nodes, [_vi("x", [1, t, d])]


@pytest.mark.parametrize("ms_gelu", [False, True], ids=["onnx-shapes", "onnxruntime-shapes"])
def test_attention_block_with_constants(tmp_path, ms_gelu):
    nodes, inputs = _attention(ms_gelu)
    path = _save(tmp_path, nodes, inputs, [_vi("y", [1, 8, 16])], ms=ms_gelu)
    wl = load_onnx(path)
    ops = _ops(wl)
    # onnxruntime turns Constant nodes into initializers and CastLike into Cast: tensors are matched, not nodes
    assert wl.meta["shapes"].startswith("onnxruntime" if ms_gelu else "onnx.shape_inference")
    assert ops["ln"].output_shapes == ((1, 8, 16),)
    for k in "qkv":  # weight-stationary: a GEMM view over the Constant weight
        assert ops[f"mm_{k}"].gemm is not None and ops[f"mm_{k}"].gemm.m_v == 16 and ops[f"mm_{k}"].gemm.n_mvm == 8
        assert ops[f"mm_{k}"].weight_shape == (16, 16)
    # a MatMul between two activations cannot be a crossbar's stationary weight: host op, no GEMM view, MACs kept
    assert ops["qk"].gemm is None and ops["qk"].macs == 8 * 8 * 16 and ops["qk"].output_shapes == ((1, 8, 8),)
    assert ops["av"].gemm is None and ops["av"].macs == 8 * 16 * 8
    assert ops["castlike"].output_shapes == ((),)  # reads the scores for their type: not a constant op
    assert ops["gamma"].is_constant and ops["softmax"].output_shapes == ((1, 8, 8),)
    last = "gelu" if ms_gelu else "gelu_half"
    assert ops[last].output_shapes == ((1, 8, 16),) and ops[last].bits == 32


def _vision_nodes():
    """Resize, Pad, Slice, depthwise and grouped Conv, as in MobileNet/ShuffleNet/RegNet exports."""
    rng = np.random.default_rng(1)
    inits = [
        _init("w_dw", rng.standard_normal((8, 1, 3, 3)).astype(np.float32)),
        _init("w_g", rng.standard_normal((8, 2, 1, 1)).astype(np.float32)),
        _init("scales", np.array([1, 1, 2, 2], np.float32)),
        _init("pads", np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64)),
        _init("starts", np.array([0], np.int64)),
        _init("ends", np.array([4], np.int64)),
        _init("axes", np.array([1], np.int64)),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w_dw"], ["dw"], group=8, kernel_shape=[3, 3], pads=[1, 1, 1, 1], name="dw"),
        helper.make_node("Conv", ["dw", "w_g"], ["g"], group=4, kernel_shape=[1, 1], name="grouped"),
        helper.make_node("Resize", ["g", "", "scales"], ["up"], mode="nearest", name="resize"),
        helper.make_node("Pad", ["up", "pads"], ["padded"], name="pad"),
        helper.make_node("Slice", ["padded", "starts", "ends", "axes"], ["y"], name="slice"),
    ]
    return nodes, inits


def test_resize_pad_slice_depthwise_grouped(tmp_path):
    nodes, inits = _vision_nodes()
    wl = load_onnx(_save(tmp_path, nodes, [_vi("x", [1, 8, 6, 6])], [_vi("y", [1, 4, 14, 14])], inits))
    ops = _ops(wl)
    assert ops["dw"].gemm.groups == 8 and ops["dw"].gemm.m_v == 1 and ops["dw"].gemm.n_v == 9
    assert ops["dw"].gemm.n_mvm == 36 and ops["dw"].macs == 8 * 9 * 36
    assert ops["grouped"].gemm.groups == 4 and ops["grouped"].gemm.m_v == 2 and ops["grouped"].gemm.n_v == 2
    assert ops["resize"].output_shapes == ((1, 8, 12, 12),)
    assert ops["pad"].output_shapes == ((1, 8, 14, 14),)
    assert ops["slice"].output_shapes == ((1, 4, 14, 14),)
    assert {o.op_type for o in ops.values()} == {"Conv", "Resize", "Pad", "Slice"}


def test_bfloat16_input_is_fed(tmp_path):
    nodes = [helper.make_node("Cast", ["x"], ["xf"], to=F32, name="cast"),
             helper.make_node("Gelu", ["xf"], ["g"], domain=MS, name="gelu"),
             helper.make_node("Identity", ["g"], ["y"], name="out")]  # fmt: skip
    wl = load_onnx(_save(tmp_path, nodes, [_vi("x", [2, 3], TensorProto.BFLOAT16)], [_vi("y", [2, 3])], ms=True))
    ops = _ops(wl)
    assert wl.meta["shapes"].startswith("onnxruntime")
    assert ops["cast"].bits == 16 and ops["gelu"].output_shapes == ((2, 3),) and ops["gelu"].bits == 32
    assert wl.meta["inputs"] == [{"name": "x", "dtype": "bfloat16", "shape": [2, 3]}]


def test_onnxruntime_log_does_not_leak(tmp_path, capfd):
    # an attribute com.microsoft Gelu does not have: onnxruntime refuses the model (and would log about it)
    nodes = [helper.make_node("Gelu", ["x"], ["g"], domain=MS, name="gelu", bogus=3),
             helper.make_node("Identity", ["g"], ["y"], name="out")]
    path = _save(tmp_path, nodes, [_vi("x", [2, 3])], [_vi("y", [2, 3])], ms=True)
    from hetsim.cli import main

    code = main(["inspect", str(path)])  # a model is needed whose shapes only onnxruntime can give
    out, err = capfd.readouterr()
    assert_input_error(code, err, "'gelu'", "onnxruntime")
    assert len(err.strip().splitlines()) == 1, err


# ------------------------------------------------------------------------------------ dynamic inputs


def _dynamic(tmp_path) -> Path:
    nodes, inits = _vision_nodes()
    x = _vi("x", ["batch", 8, "h", "w"])
    return _save(tmp_path, nodes, [x], [_vi("y", ["batch", 4, None, None])], inits)


def test_dynamic_input_is_refused_with_the_way_out(tmp_path):
    with pytest.raises(WorkloadError) as e:
        load_onnx(_dynamic(tmp_path))
    msg = str(e.value)
    assert "input 'x' has a dynamic dimension 'batch'" in msg and "--input-shape x=1,8,224,224" in msg
    assert "choose dims 0 ('batch'), 2 ('h'), 3 ('w')" in msg
    assert "\n" not in msg
    # the suggestion runs as given (numbers only, no 'h,w' placeholders)
    suggested = msg.split("--input-shape x=")[1].split(";")[0]
    wl = load_onnx(_dynamic(tmp_path), input_shapes={"x": [int(d) for d in suggested.split(",")]})
    assert wl.meta["inputs"][0]["shape"] == [1, 8, 224, 224]


def _ppocr_like(tmp_path) -> Path:
    """A PP-OCR text-direction classifier as paddle2onnx exports one: input and output dims -1 (not ONNX's
    form for a dynamic dim, but onnxruntime runs it), Conv/Relu x 2, GlobalAveragePool, Flatten, Gemm, Softmax."""
    rng = np.random.default_rng(0)
    w = {k: numpy_helper.from_array(rng.standard_normal(s).astype(np.float32), k) for k, s in
         (("w1", (8, 3, 3, 3)), ("b1", (8,)), ("w2", (16, 8, 3, 3)), ("b2", (16,)), ("w3", (2, 16)), ("b3", (2,)))}
    conv = {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 2]}
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", **conv),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], name="conv2", **conv),
             helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
             helper.make_node("GlobalAveragePool", ["r2"], ["g"], name="gap"),
             helper.make_node("Flatten", ["g"], ["f"], name="flat", axis=1),
             helper.make_node("Gemm", ["f", "w3", "b3"], ["logits"], name="fc", transB=1),
             helper.make_node("Softmax", ["logits"], ["y"], name="softmax", axis=1)]
    x, y = (helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("x", "y"))
    for vi, dims in ((x, (-1, 3, -1, -1)), (y, (-1, 2))):
        for d in dims:
            vi.type.tensor_type.shape.dim.add().dim_value = d
    model = helper.make_model(helper.make_graph(nodes, "cls", [x], [y], list(w.values())),
                              opset_imports=[helper.make_opsetid("", 11)], ir_version=6)
    path = tmp_path / "ppocr_cls.onnx"
    onnx.save(model, str(path))
    return path


def test_minus_one_dims_are_dynamic_as_in_onnxruntime(tmp_path, capsys):
    """A PP-OCR classifier with -1 dims in and out was refused even with --input-shape."""
    path = _ppocr_like(tmp_path)
    ort = pytest.importorskip("onnxruntime")
    got = ort.InferenceSession(str(path)).run(None, {"x": np.zeros((1, 3, 48, 192), np.float32)})[0]
    assert got.shape == (1, 2)  # what onnxruntime makes of it
    wl = load_onnx(path, input_shapes={"x": [1, 3, 48, 192]})
    assert _ops(wl)["conv2"].output_shapes == ((1, 16, 12, 48),) and _ops(wl)["softmax"].output_shapes == ((1, 2),)
    code, _, err = run_cli(capsys, "inspect", path)
    assert_input_error(code, err, "--input-shape x=1,3,224,224", "choose dims 0, 2, 3")
    code, out, err = run_cli(capsys, "run", ROOT / "platforms" / "puma.yaml", path, "--input-shape", "x=1,3,48,192",
                             "--mapper", "heft")
    assert code == 0, err


def test_input_shapes_fix_the_dims(tmp_path):
    wl = load_onnx(_dynamic(tmp_path), input_shapes={"x": (1, 8, 6, 6)})
    assert _ops(wl)["slice"].output_shapes == ((1, 4, 14, 14),)
    assert wl.meta["inputs"][0]["shape"] == [1, 8, 6, 6]
    two = load_onnx(_dynamic(tmp_path), input_shapes={"x": [2, 8, 6, 6]})
    assert _ops(two)["dw"].gemm.n_mvm == 72


@pytest.mark.parametrize(
    ("shapes", "needles"),
    [
        ({"z": (1, 8, 6, 6)}, ["no graph input 'z'", "'x'"]),
        ({"x": (1, 8, 6)}, ["4 dims", "[1, 8, 6]"]),
        ({"x": (1, 3, 6, 6)}, ["dim 1 = 8"]),
        ({"x": (1, 8, 0, 6)}, ["positive"]),
    ],
)
def test_bad_input_shapes(tmp_path, shapes, needles):
    with pytest.raises(WorkloadError) as e:
        load_onnx(_dynamic(tmp_path), input_shapes=shapes)
    for n in needles:
        assert n in str(e.value)


def test_cli_input_shape(tmp_path, capsys):
    path = _dynamic(tmp_path)
    code, out, err = run_cli(capsys, "inspect", path)
    assert_input_error(code, err, "dynamic dimension 'batch'", "--input-shape x=")
    code, out, err = run_cli(capsys, "inspect", path, "--input-shape", "x=1,8,6,6")
    assert code == 0 and "x float32[1, 8, 6, 6]" in out, err
    code, out, err = run_cli(capsys, "run", PUMA, path, "--mapper", "heft", "--input-shape", "x=1,8,6,6")
    assert code == 0, err
    sched = tmp_path / "s.json"
    code, out, err = run_cli(capsys, "map", PUMA, path, "--mapper", "heft", "-o", sched, "--input-shape", "x=1,8,6,6")
    assert code == 0, err
    code, out, err = run_cli(capsys, "validate", PUMA, path, "--schedule", sched, "--input-shape", "x=1,8,6,6")
    assert code == 0, err
    for bad in ("x", "x=", "x=1,a", "=1,2", "x=1,-8,6,6"):
        code, out, err = run_cli(capsys, "inspect", path, "--input-shape", bad)
        assert_input_error(code, err, "--input-shape", "NAME=D1,D2")
    code, out, err = run_cli(capsys, "inspect", path, "--input-shape", "x=1,8,6,6", "--input-shape", "x=1,8,6,6")
    assert_input_error(code, err, "twice")
    code, out, err = run_cli(capsys, "inspect", ROOT / "workloads/snn/braille384.yaml", "--input-shape", "x=1")
    assert_input_error(code, err, "spiking network")


def test_python_api_input_shape(tmp_path):
    import hetsim
    from hetsim.errors import InputError

    path = _dynamic(tmp_path)
    r = hetsim.run(PUMA, path, mapper="heft", input_shape={"x": [2, 8, 6, 6]})
    assert r.ops.set_index("op").loc["dw", "device"] is not None
    assert hetsim.load_workload(path, input_shape={"x": [2, 8, 6, 6]}).meta["inputs"][0]["shape"] == [2, 8, 6, 6]
    with pytest.raises(WorkloadError, match=r"input_shape=\{'x'"):
        hetsim.run(PUMA, path, mapper="heft")
    with pytest.raises(InputError, match="applies when the model is read"):
        hetsim.run(PUMA, hetsim.load_workload(path, input_shape={"x": [1, 8, 6, 6]}), mapper="heft",
                   input_shape={"x": [1, 8, 6, 6]})


def _sweep(tmp_path, path, **over):
    import yaml

    spec = {"name": "shapes", "workloads": [str(path)], "platforms": [str(PUMA)], "mappers": ["heft"],
            "output": str(tmp_path / "out.csv"), **over}
    f = tmp_path / "sweep.yaml"
    f.write_text(yaml.safe_dump(spec))
    return f


def test_sweep_input_shape_is_in_the_key_and_fixes_the_dims(tmp_path):
    import pandas as pd

    from hetsim.dse import expand_points, load_sweep, run_sweep

    path = _dynamic(tmp_path)
    spec = load_sweep(_sweep(tmp_path, path, input_shape={"x": [1, 8, 6, 6]}))
    (point,) = expand_points(spec)
    assert point["key"].endswith("|heft|input_shape=x=[1,8,6,6]")
    run_sweep(spec, workers=0)
    row = pd.read_csv(tmp_path / "out.csv").iloc[0]
    assert row["key"] == point["key"] and pd.isna(row["error"]) and row["makespan_s"] > 0
    two = load_sweep(_sweep(tmp_path, path, input_shape={"x": "2,8,6,6"}))  # the CLI's form
    assert expand_points(two)[0]["key"].endswith("input_shape=x=[2,8,6,6]")
    assert run_sweep(two, workers=0)[1] == 1  # another shape is another point: computed, not reused


@pytest.mark.parametrize(
    ("shape", "needles"),
    [
        (None, ["workloads:", "dynamic dimension 'batch'", "input_shape"]),
        ({"x": [1, 8, True, 6]}, ["input_shape.x.2", "boolean"]),
        ({"x": [1, 8, 0, 6]}, ["input_shape.x.2", "greater than 0"]),
        ({"x": [1, 8, 6.5, 6]}, ["input_shape.x.2", "integer"]),
        ({"x": []}, ["input_shape.x"]),
        ({"z": [1, 8, 6, 6]}, ["input_shape:", "no graph input 'z'"]),
        ({"x": [1, 8, 6]}, ["input_shape:", "4 dims"]),
    ],
)
def test_sweep_bad_input_shape(tmp_path, capsys, shape, needles):
    from hetsim.cli import main

    over = {} if shape is None else {"input_shape": shape}
    code = main(["sweep", str(_sweep(tmp_path, _dynamic(tmp_path), **over)), "--workers", "1"])
    err = capsys.readouterr().err
    # no input_shape: refused before any point (each point had failed, exit 1, its row saying how to fix it)
    assert_input_error(code, err, *needles)
    assert not (tmp_path / "out.csv").exists()


@pytest.mark.parametrize("bad", ["text", "empty", "truncated"])
def test_a_sweep_of_a_malformed_model_is_refused_before_any_point(tmp_path, capsys, bad):
    """A text file renamed .onnx, an empty file, a truncated model: every point had failed (exit 1)."""
    from hetsim.cli import main

    path = tmp_path / "bad.onnx"
    raw = (ROOT / "workloads" / "resnet20_cifar10.onnx").read_bytes()
    path.write_bytes({"text": b"hello world\n", "empty": b"", "truncated": raw[:5000]}[bad])
    code = main(["sweep", str(_sweep(tmp_path, path)), "--workers", "1"])
    err = capsys.readouterr().err
    assert_input_error(code, err, "workloads:", "bad.onnx is not an ONNX model")
    assert len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "out.csv").exists()


# ------------------------------------------------------------------------------------ validation


def _relu(tmp_path, inputs=None, outputs=None, **kw):
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    return _save(tmp_path, nodes, inputs or [_vi("x", [2, 3])], outputs or [_vi("y", [2, 3])], **kw)


@pytest.mark.parametrize(
    ("build", "needles"),
    [
        (lambda t: _relu(t, outputs=[_vi("y", [2, 3]), _vi("ghost", [2])]),
         ["graph output 'ghost' is not produced"]),
        (lambda t: _relu(t, inputs=[_vi("x", [2, 0])], outputs=[_vi("y", [2, 0])]), ["'x'", "zero-size dim 1"]),
        (lambda t: _relu(t, inputs=[_vi("x", [2, -3])], outputs=[_vi("y", [2, 3])]), ["'x'", "negative"]),
        (lambda t: _save(t, [helper.make_node("Relu", ["x"], ["y"], name="relu")], [_vi("x", [2]), _vi("x", [2])],
                         [_vi("y", [2])]), ["'x'", "declared twice"]),
        (lambda t: _save(t, [helper.make_node("Add", ["x", "b"], ["y"], name="add")], [_vi("x", [2])],
                         [_vi("y", [2])], [_init("b", np.zeros(2, np.float32)), _init("b", np.ones(2, np.float32))]),
         ["'b'", "two initializers"]),
        (lambda t: _save(t, [helper.make_node("Frobnicate", ["x"], ["y"], name="f")], [_vi("x", [2])],
                         [_vi("y", [2])]), ["'f'", "'Frobnicate'", "opset 17 does not define"]),
        (lambda t: _save(t, [helper.make_node("Gelu", ["x"], ["y"], name="g")], [_vi("x", [2])], [_vi("y", [2])]),
         ["'Gelu'", "later opset"]),
        (lambda t: _save(t, [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], [_vi("x", [2, 3])],
                         [_vi("y", [2, 5])], [_init("w", np.zeros((4, 5), np.float32))]),
         ["'mm'", "inner dimensions", "3 columns", "4 rows"]),
        (lambda t: _save(t, [helper.make_node("Gemm", ["x", "w"], ["y"], name="gemm", transB=1)], [_vi("x", [2, 3])],
                         [_vi("y", [2, 5])], [_init("w", np.zeros((5, 4), np.float32))]),
         ["'gemm'", "K=3", "K=4"]),
        (lambda t: _save(t, [helper.make_node("Conv", ["x", "w"], ["y"], name="conv")], [_vi("x", [1, 3, 4, 4])],
                         [_vi("y", [2, 8, 4, 4])], [_init("w", np.zeros((8, 3, 1, 1), np.float32))]),
         ["'conv'", "does not match"]),
    ],
    ids=["output-not-produced", "zero-dim", "negative-dim", "input-twice", "initializer-twice", "unknown-op",
         "op-of-later-opset", "matmul-inner", "gemm-k", "conv-batch"],
)  # fmt: skip
def test_invalid_models_exit_2_with_one_line(tmp_path, capsys, build, needles):
    path = build(tmp_path)
    code, out, err = run_cli(capsys, "inspect", path)
    assert_input_error(code, err, *needles)
    assert len(err.strip().splitlines()) == 1, err


def test_a_tensor_too_large_to_count_is_refused_and_the_bound_itself_runs(tmp_path, capsys):
    """A graph input of dims [1e12, 1e12] (1e24 elements) had passed the import and the mapper, then overflowed
    int64 in the memory accounting: an internal error, exit 1. 2**40 elements (the bound) still runs."""
    huge = _relu(tmp_path, inputs=[_vi("x", [10**12, 10**12])], outputs=[_vi("y", [10**12, 10**12])], name="huge")
    code, _, err = run_cli(capsys, "run", PUMA, huge, "--mapper", "heft")
    assert_input_error(code, err, "huge.onnx: tensor 'x' (input of node 'relu')", "1e+24 elements", "2**40")
    assert len(err.strip().splitlines()) == 1, err
    edge = _relu(tmp_path, inputs=[_vi("x", [2**20, 2**20])], outputs=[_vi("y", [2**20, 2**20])], name="edge")
    code, out, err = run_cli(capsys, "run", PUMA, edge, "--mapper", "heft")
    assert code == 0, err
    assert load_onnx(edge).graph.nodes["relu"]["op"].n_out == 2**40


def test_name_not_utf8_and_initializer_size(tmp_path, capsys):
    raw = onnx.load(str(_relu(tmp_path))).SerializeToString()
    i = raw.index(b"Relu")
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(raw[:i] + bytes([raw[i] ^ 0xFF]) + raw[i + 1 :])  # op_type b"\xadelu"
    code, out, err = run_cli(capsys, "inspect", bad)
    assert_input_error(code, err, "op type is not valid UTF-8")
    b = _init("b", np.zeros(4, np.float32))
    b.dims[0] = 5
    path = _save(tmp_path, [helper.make_node("Add", ["x", "b"], ["y"], name="add")], [_vi("x", [5])],
                 [_vi("y", [5])], [b], name="size")  # fmt: skip
    code, out, err = run_cli(capsys, "inspect", path)
    assert_input_error(code, err, "initializer 'b'", "needs 20 bytes", "holds 16")
    f = helper.make_tensor("b", F32, [4], [0.0] * 4)
    f.dims[0] = 5
    path = _save(tmp_path, [helper.make_node("Add", ["x", "b"], ["y"], name="add")], [_vi("x", [5])],
                 [_vi("y", [5])], [f], name="typed")  # fmt: skip
    code, out, err = run_cli(capsys, "inspect", path)
    assert_input_error(code, err, "initializer 'b'", "needs 5 values", "holds 4")


def test_custom_domain_is_a_host_op_with_a_warning(tmp_path):
    nodes = [helper.make_node("Mystery", ["x"], ["m"], name="mystery", domain="acme.ops"),
             helper.make_node("Relu", ["m"], ["y"], name="relu")]  # fmt: skip
    graph = helper.make_graph(nodes, "m", [_vi("x", [2, 3])], [_vi("y", [2, 3])],
                              value_info=[_vi("m", [2, 3])])  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("acme.ops", 1)])
    path = tmp_path / "custom.onnx"
    onnx.save(model, str(path))
    with pytest.warns(UserWarning, match=r"custom domain 'acme.ops' \(Mystery\) are costed as host ops"):
        wl = load_onnx(path)
    assert _ops(wl)["mystery"].gemm is None and _ops(wl)["mystery"].domain == "acme.ops"


@pytest.mark.parametrize("opset_over, ir_over, needle", [
    (1, 0, "opset {opset} is newer than the installed onnx"), (0, 1, "IR version {ir} is newer than the installed"),
    (80, 0, "opset {opset} is newer"), (0, 87, "IR version {ir} is newer"),
])
def test_newer_versions_are_refused_with_the_versions(tmp_path, capsys, opset_over, ir_over, needle):
    """IR version or opset 99 was accepted (run and inspect exit 0); the ops of a newer opset have
    semantics neither onnx nor onnxruntime knows."""
    opset, ir = onnx.defs.onnx_opset_version() + opset_over, onnx.IR_VERSION + ir_over
    path = _relu(tmp_path, opset=opset, ir=ir)
    with pytest.raises(WorkloadError, match=needle.format(opset=opset, ir=ir)):
        load_onnx(path)
    for cmd in (("inspect", path), ("run", ROOT / "platforms" / "puma.yaml", path)):
        code, _, err = run_cli(capsys, *cmd)
        assert_input_error(code, err, onnx.__version__, "at most")
    assert len(load_onnx(_relu(tmp_path, opset=opset - opset_over, ir=ir - ir_over)).graph) == 1


def test_shipped_models_load_without_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # the transformer workloads ship without their weights and say so (tests/test_transformers.py)
        from hetsim.workload.onnx_import import absent_weights

        with_weights = [p for p in sorted((ROOT / "workloads").glob("*.onnx"))
                        if absent_weights(p, onnx.load(p, load_external_data=False).graph) is None]
        for path in with_weights[:4]:
            load_onnx(path)


# ------------------------------------------------------------------------------------ end to end


def _vit_like(ms_gelu: bool = False) -> tuple[list, list, list]:
    """A tiny ViT/Swin-like classifier as torch.onnx exports one: a strided patch Conv, Reshape/Transpose to
    tokens, a class token Concat and a position Add (Constants), the attention block of :func:`_attention`
    (17 tokens), a window Slice/Pad as Swin's shifted windows do, the class token Gathered, LayerNorm and a Gemm
    head."""
    rng = np.random.default_rng(2)
    d, t = 16, 17
    att, _ = _attention(ms_gelu, d=d, t=t)
    for n in att:  # the block reads the tokens, not the graph input
        n.input[:] = ["tok" if i == "x" else i for i in n.input]
    nodes = [
        helper.make_node("Conv", ["x", "w_patch", "b_patch"], ["patches"], kernel_shape=[8, 8], strides=[8, 8],
                         name="patch"),
        _const("flat_shape", np.array([1, d, 16], np.int64)),
        helper.make_node("Reshape", ["patches", "flat_shape"], ["flat"], name="flatten"),
        helper.make_node("Transpose", ["flat"], ["tokens"], perm=[0, 2, 1], name="to_tokens"),
        _const("cls", rng.standard_normal((1, 1, d)).astype(np.float32)),
        helper.make_node("Concat", ["cls", "tokens"], ["seq"], axis=1, name="cat_cls"),
        _const("pos", rng.standard_normal((1, t, d)).astype(np.float32)),
        helper.make_node("Add", ["seq", "pos"], ["tok"], name="add_pos"),
        *att,
        # Swin-like: a shifted window cut and padded back (Slice + Pad on the activations)
        _const("s0", np.array([1], np.int64)), _const("s1", np.array([17], np.int64)),
        _const("sax", np.array([1], np.int64)),
        helper.make_node("Slice", ["y", "s0", "s1", "sax"], ["win"], name="window"),
        _const("wpads", np.array([0, 1, 0, 0, 0, 0], np.int64)),
        helper.make_node("Pad", ["win", "wpads"], ["winp"], name="window_pad"),
        helper.make_node("Add", ["winp", "y"], ["mixed"], name="window_add"),
        _const("idx0", np.array(0, np.int64)),
        helper.make_node("Gather", ["mixed", "idx0"], ["cls_out"], axis=1, name="take_cls"),
        _const("g2", np.ones(d, np.float32)), _const("b2", np.zeros(d, np.float32)),
        helper.make_node("LayerNormalization", ["cls_out", "g2", "b2"], ["cls_ln"], axis=-1, name="head_ln"),
        helper.make_node("Gemm", ["cls_ln", "w_head", "b_head"], ["logits"], transB=1, name="head"),
    ]
    inits = [_init("w_patch", rng.standard_normal((d, 3, 8, 8)).astype(np.float32)),
             _init("b_patch", np.zeros(d, np.float32)),
             _init("w_head", rng.standard_normal((10, d)).astype(np.float32)),
             _init("b_head", np.zeros(10, np.float32))]
    return nodes, [_vi("x", [1, 3, 32, 32])], inits


def _quantise(src: Path, fmt: str) -> Path:
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    pre = src.with_name(f"{src.stem}_pre.onnx")  # as bench/export_torchvision.py: ORT's pre-processing first
    with warnings.catch_warnings(), contextlib.chdir(src.parent):  # ORT may leave temporary files in the cwd
        warnings.simplefilter("ignore")
        quant_pre_process(str(src), str(pre))
    model = onnx.load(str(pre))
    x = model.graph.input[0]
    shape = [d.dim_value for d in x.type.tensor_type.shape.dim]
    rng = np.random.default_rng(0)
    batches = iter([{x.name: rng.standard_normal(shape).astype(np.float32)} for _ in range(2)])

    class Reader(CalibrationDataReader):
        def get_next(self):
            return next(batches, None)

    out = src.with_name(f"{src.stem}_{fmt}.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quantize_static(str(pre), str(out), Reader(), activation_type=QuantType.QUInt8,
                        weight_type=QuantType.QInt8,
                        quant_format=QuantFormat.QDQ if fmt == "qdq" else QuantFormat.QOperator)
    return out


_MATMULS = ("MatMul", "QLinearMatMul", "MatMulInteger")


@pytest.mark.parametrize("fmt", ["fp32", "qdq", "qoperator"])
@pytest.mark.parametrize("ms_gelu", [False, True], ids=["erf-gelu", "ms-gelu"])
def test_vit_like_model_runs_end_to_end(tmp_path, capsys, fmt, ms_gelu):
    """The zoo's transformer patterns, fp32 and quantised by onnxruntime (QDQ, QOperator), through ``hetsim run``:
    exit 0; a MatMul between two activations (Q K^T, attention x V) stays on the host (a weight-stationary
    crossbar holds constant weights only), the MatMuls with Constant weights and the patch Conv may offload."""
    import hetsim

    nodes, inputs, inits = _vit_like(ms_gelu)
    path = _save(tmp_path, nodes, inputs, [_vi("logits", [1, 10])], inits, ms=ms_gelu, name="vit")
    if fmt != "fp32":
        path = _quantise(path, fmt)
    code, out, err = run_cli(capsys, "run", PUMA, path, "--mapper", "heft")
    assert code == 0, err
    code, out, err = run_cli(capsys, "inspect", path, "--platform", PUMA)
    assert code == 0, err
    r = hetsim.run(PUMA, path, mapper="heft")
    ops = r.ops.set_index("op")
    wl = hetsim.load_workload(path)
    act_act = [n for n in wl.graph if wl.graph.nodes[n]["op"].op_type in _MATMULS
               and wl.graph.nodes[n]["op"].macs > 0 and wl.graph.nodes[n]["op"].gemm is None]
    assert len(act_act) == 2, act_act  # Q K^T and attention x V, in every format
    assert all(ops.loc[n, "device"] == "host" for n in act_act)
    weighted = [n for n in wl.graph if wl.graph.nodes[n]["op"].gemm is not None]
    assert len(weighted) >= 5  # patch Conv, Q/K/V MatMuls, head Gemm (or their quantised forms)
    assert (ops.loc[weighted, "device"] == "cim").any()
    assert r.makespan_s > 0 and r.makespan_s <= r.summary["baseline_makespan_s"] + 1e-15


def test_vision_patterns_run_end_to_end(tmp_path, capsys):
    nodes, inits = _vision_nodes()
    path = _save(tmp_path, nodes, [_vi("x", [1, 8, 6, 6])], [_vi("y", [1, 4, 14, 14])], inits)
    for fmt in ("fp32", "qdq", "qoperator"):
        p = path if fmt == "fp32" else _quantise(path, fmt)
        code, out, err = run_cli(capsys, "run", PUMA, p, "--mapper", "heft")
        assert code == 0, (fmt, err)


@pytest.mark.parametrize("elem", ["FLOAT16", "DOUBLE", "INT8", "UINT8", "INT16", "INT32", "INT64", "BOOL",
                                  "BFLOAT16", "FLOAT8E4M3FN", "UINT16", "UINT32", "UINT64"])
def test_inputs_of_any_type_onnxruntime_runs(tmp_path, capsys, elem):
    """A graph input of any element type that onnxruntime casts (its Cast kernel) is accepted end to end; the
    same input of float8 at opset 17 (Cast-13 has no float8) is refused, as onnxruntime refuses it."""
    t = getattr(TensorProto, elem)
    nodes = [helper.make_node("Cast", ["x"], ["xf"], to=F32, name="cast"),
             helper.make_node("Relu", ["xf"], ["y"], name="relu")]
    opset = 21 if elem.startswith("FLOAT8") else 17  # Cast takes float8 from opset 19 on
    path = _save(tmp_path, nodes, [_vi("x", [2, 3], t)], [_vi("y", [2, 3])], opset=opset)
    code, out, err = run_cli(capsys, "run", PUMA, path, "--mapper", "heft")
    assert code == 0, err
    assert load_onnx(path).meta["inputs"][0]["dtype"] == ("float64" if elem == "DOUBLE" else elem.lower())
    if opset == 21:
        code, out, err = run_cli(capsys, "run", PUMA, _save(tmp_path, nodes, [_vi("x", [2, 3], t)],
                                                            [_vi("y", [2, 3])], name="old"), "--mapper", "heft")
        assert_input_error(code, err, "Cast-13 does not take", "float8e4m3fn")
