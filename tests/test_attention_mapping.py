"""The default mapper on attention graphs (issue: ``cpsat`` refused an embedding + multi-head-attention block with
"order contradicts the data dependencies" while ``heft`` and ``ilp`` mapped it).

The cause: torch's exporter computes the head and merge shapes by arithmetic on ``Constant`` nodes; with constant
folding those ops cost zero ticks, and the floating ``Constant`` ops (no inputs) were put back into the host order
"after the last op that ends by the consumer's start", which a zero-tick consumer itself satisfies, so a
constant landed after the op that reads it. The graph below has that pattern (built with ``onnx.helper``, no torch).
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from conftest import PLATFORMS
from onnx import TensorProto
from onnx import helper as h
from onnx import numpy_helper as nh

from hetsim.check import check_schedule
from hetsim.costs import CostModel
from hetsim.errors import InputError, InternalError
from hetsim.mappers import get_mapper, make_schedule
from hetsim.platform import load_platform
from hetsim.workload import load_onnx


def attention_block(seq: int = 16, d: int = 64, heads: int = 4, vocab: int = 100) -> onnx.ModelProto:
    """Embedding + one multi-head self-attention block + residual, shapes as torch 2.x's exporter writes them
    (the head shape ``Mod``-ed and the merge shape ``Add``-ed from constants: ops folded to zero cost)."""
    rng = np.random.default_rng(0)
    dh = d // heads
    init = [nh.from_array(rng.standard_normal((vocab, d)).astype(np.float32), "emb"),
            nh.from_array(rng.standard_normal((d, 3 * d)).astype(np.float32), "w_qkv"),
            nh.from_array(rng.standard_normal((d, d)).astype(np.float32), "w_o")]

    def const(name, vals, dtype=np.int64):
        return h.make_node("Constant", [], [name], value=nh.from_array(np.asarray(vals, dtype=dtype), name + "_v"))

    nodes = [
        h.make_node("Gather", ["emb", "ids"], ["e"], axis=0),
        h.make_node("MatMul", ["e", "w_qkv"], ["qkv"]),
        const("split", [d, d, d]),
        h.make_node("Split", ["qkv", "split"], ["q", "k", "v"], axis=-1),
        const("hs_a", [1, seq, heads, dh]),
        const("hs_m", [1 << 20]),
        h.make_node("Mod", ["hs_a", "hs_m"], ["heads_shape"]),
    ]
    for x in "qkv":
        nodes += [h.make_node("Reshape", [x, "heads_shape"], [x + "r"]),
                  h.make_node("Transpose", [x + "r"], [x + "t"], perm=[0, 2, 3, 1] if x == "k" else [0, 2, 1, 3])]
    nodes += [
        h.make_node("MatMul", ["qt", "kt"], ["s"]),
        const("scale", dh ** -0.5, np.float32),
        h.make_node("Mul", ["s", "scale"], ["ss"]),
        h.make_node("Softmax", ["ss"], ["p"], axis=-1),
        h.make_node("MatMul", ["p", "vt"], ["o"]),
        h.make_node("Transpose", ["o"], ["ot"], perm=[0, 2, 1, 3]),
        const("ms_a", [1, seq, d]),
        const("ms_z", [0, 0, 0]),
        h.make_node("Add", ["ms_a", "ms_z"], ["merge_shape"]),
        h.make_node("Reshape", ["ot", "merge_shape"], ["om"]),
        h.make_node("MatMul", ["om", "w_o"], ["y0"]),
        h.make_node("Add", ["y0", "e"], ["y"]),
    ]
    g = h.make_graph(nodes, "attention", [h.make_tensor_value_info("ids", TensorProto.INT64, [1, seq])],
                     [h.make_tensor_value_info("y", TensorProto.FLOAT, [1, seq, d])], init)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    onnx.checker.check_model(m)
    return m


@pytest.fixture(scope="module")
def attention_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("attn") / "attention.onnx"
    onnx.save(attention_block(), path)
    return path


@pytest.mark.parametrize("platform", ["puma.yaml", "cim-npu.yaml"])
def test_default_mapper_maps_attention_and_the_checker_passes(attention_path, platform):
    costs = CostModel(load_onnx(attention_path), load_platform(PLATFORMS / platform))
    zero = [v for v in costs.workload.graph if min(costs.latency[v].values()) == 0]
    assert len(zero) >= 8  # the constants and the folded shape arithmetic: the pattern that broke
    sched = get_mapper("cpsat").map(costs)
    rep = check_schedule(costs, sched)
    assert rep.ok, rep.violations
    assert sched.stats["status"] == "optimal"
    # no worse than the heuristics it starts from
    for other in ("heft", "greedy"):
        assert sched.makespan_s <= get_mapper(other).map(costs).makespan_s * (1 + 1e-9)


def test_cli_run_exits_0(attention_path, capsys):
    from hetsim.cli import main

    assert main(["run", str(PLATFORMS / "puma.yaml"), str(attention_path)]) in (0, None)
    assert "error" not in capsys.readouterr().err


def test_an_inconsistent_mapper_order_is_an_internal_error_not_an_input_error(attention_path):
    costs = CostModel(load_onnx(attention_path), load_platform(PLATFORMS / "puma.yaml"))
    topo = costs.workload.topological_order()
    with pytest.raises(InternalError, match="bug") as err:
        make_schedule(costs, {v: costs.host for v in topo}, "broken", order={costs.host: topo[::-1]})
    assert not isinstance(err.value, InputError)
