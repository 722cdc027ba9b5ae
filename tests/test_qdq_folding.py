"""A host that folds a QDQ model's activation Quantize/DequantizeLinear into its int8 ops (``folds_qdq`` on the
cpu kind), as ONNX Runtime's CPU provider does at its default optimisation level.

Round numbers of ``make_platform`` (tests/conftest.py): the host runs at 1 GHz, 1 int8 MAC and 1 element per
cycle, with memory bandwidth high enough that compute bounds every op; ``op_overhead_us: 0.01`` here, so each
launch costs 10 ns.
"""

from __future__ import annotations

import pytest
from conftest import ROOT, conv_op, host_op, make_platform

from hetsim.check import check_schedule
from hetsim.costs import CostModel
from hetsim.mappers.base import make_schedule
from hetsim.sim import simulate
from hetsim.workload.op import Workload

NS = 1e-9
FOLDING = {"folds_qdq": True, "op_overhead_us": 0.01}


def qdq_conv() -> Workload:
    """q0 -> dq0 -> conv -> q1 -> dq1: a Conv node unit of a QDQ model behind the input's QuantizeLinear.

    On the host, each op alone: q0, dq0 10 + 100 ns; conv 10 + 16*16*10 MACs at 1 per ns = 2570 ns; q1, dq1
    10 + 50 ns. Folded: dq0 into q0 (0 ns: the pair cancels), q1 into the conv (its requantisation epilogue,
    50 elements at 1 per ns = 50 ns, no launch), dq1 into q1 (0 ns).
    """
    ops = [host_op("q0", 100, 0, "QuantizeLinear"), host_op("dq0", 100, 1, "DequantizeLinear"),
           conv_op("conv", 16, 16, 10, n_in=100, n_out=50, index=2), host_op("q1", 50, 3, "QuantizeLinear"),
           host_op("dq1", 50, 4, "DequantizeLinear")]
    return Workload.from_ops("qdq", ops, [("q0", "dq0", 100), ("dq0", "conv", 100), ("conv", "q1", 50),
                                          ("q1", "dq1", 50)])


def test_host_folds_a_conv_node_unit_by_hand():
    costs = CostModel(qdq_conv(), make_platform(host_extra=FOLDING))
    assert costs.fusion == {"dq0": {"q0": {"host": 0.0}}, "q1": {"conv": {"host": pytest.approx(50 * NS)}},
                            "dq1": {"q1": {"host": 0.0}}}
    on_host = dict.fromkeys(costs.workload.ops, "host")
    folded = make_schedule(costs, on_host, "hand", fused={"dq0": "q0", "q1": "conv", "dq1": "q1"})
    assert check_schedule(costs, folded).ok
    # two launches: q0 (110 ns) and the conv's int8 kernel (2570 ns) with its requantisation (50 ns)
    assert simulate(costs, folded).makespan_s == pytest.approx((110 + 2570 + 50) * NS)
    plain = make_schedule(costs, on_host, "hand")
    assert simulate(costs, plain).makespan_s == pytest.approx((110 + 110 + 2570 + 60 + 60) * NS)


def test_no_folding_without_the_field_or_with_fusion_off():
    wl = qdq_conv()
    plain = CostModel(wl, make_platform(host_extra={"op_overhead_us": 0.01}))
    assert plain.fusion == {} and plain.fusion_offered == 0
    off = CostModel(wl, make_platform(host_extra=FOLDING), fusion=False)
    assert off.fusion == {} and off.fusion_offered == 3
    assert off.latency == plain.latency


def test_a_quantize_after_an_op_without_an_int8_kernel_stays_an_op():
    """ONNX Runtime has no QLinear kernel for Pow: its QuantizeLinear runs on its own (and the DequantizeLinear
    after that Q still cancels with it)."""
    ops = [host_op("pow", 50, 0, "Pow"), host_op("q", 50, 1, "QuantizeLinear"),
           host_op("dq", 50, 2, "DequantizeLinear")]
    wl = Workload.from_ops("pow", ops, [("pow", "q", 50), ("q", "dq", 50)])
    costs = CostModel(wl, make_platform(host_extra=FOLDING))
    assert costs.fusion == {"dq": {"q": {"host": 0.0}}}


def test_only_the_edge_soc_host_folds():
    """The papers' platforms (hosts profiled with ONNX Runtime's optimisations off) and the tested cim-npu ones keep
    every Q/DQ an op; platforms/edge-soc.yaml models a deployed runtime."""
    from hetsim.platform import load_platform

    for name in ("puma", "puma-host", "puma-x86", "diana", "cim-npu", "cim-npu-dram", "soc-2npu"):
        p = load_platform(ROOT / "platforms" / f"{name}.yaml")
        assert not getattr(p.devices[p.host], "folds_qdq", False), name
    p = load_platform(ROOT / "platforms" / "edge-soc.yaml")
    assert p.devices[p.host].folds_qdq


def test_weight_policy_mappers_fuse_a_streamed_layer_by_hand():
    """A platform with a weight memory: the (device, weight policy) searches do not model fused groups, so the
    mappers fuse where placed afterwards (``fuse_after_search``). conv (2048 weight bytes, over the NPU's 1 KiB)
    -> Sigmoid -> Mul on tests/test_weights.py's platform, the NPU fusing SiLU (tests/test_fusion.py's FUSING)
    and a DRAM at 100 GB/s without latency: the conv streamed on the NPU, 2048 B / 100 B/ns = 20.48 ns read, then
    50 ns dispatch + max(2048 MACs / 4 per ns, 96 B / 1 B/ns) = 562 ns; fused, Sigmoid 1 * 32 = 32 ns and Mul 0.5 *
    32 = 16 ns. Unfused, the best is SiLU on the host after the conv's 32 B crossed the bus: 32 + 32 + 32 ns."""
    from test_fusion import FUSING
    from test_weights import platform

    from hetsim.mappers import get_mapper
    from hetsim.mappers._policy import FUSED_AFTER_NOTE

    ops = [conv_op("conv", 32, 64, 1, n_in=64, n_out=32, index=0), host_op("sig", 32, 1, "Sigmoid"),
           host_op("mul", 32, 2, "Mul")]
    wl = Workload.from_ops("silu", ops, [("conv", "sig", 32), ("sig", "mul", 32), ("conv", "mul", 32)])
    plat = platform(npu=FUSING, dram={"bandwidth_gb_s": 100, "latency_ns": 0,
                                      "weights_for": {"npu": {"bandwidth_gb_s": 100}}})
    conv = 20.48 + 562
    for name in ("heft", "greedy", "cpsat"):
        costs = CostModel(wl, plat)
        sched = get_mapper(name).map(costs)
        assert sched.fused == {"sig": "conv", "mul": "sig"}, name
        assert sched.policies["conv"].policy == "streamed" and sched.stats["fusion"] == FUSED_AFTER_NOTE, name
        assert sched.makespan_s == pytest.approx((conv + 32 + 16) * NS), name
        assert check_schedule(costs, sched).ok
        assert simulate(costs, sched).makespan_s == pytest.approx(sched.makespan_s)
        plain = get_mapper(name).map(CostModel(wl, plat, fusion=False))
        assert plain.fused == {} and plain.makespan_s == pytest.approx((conv + 3 * 32) * NS), name


def test_the_all_host_baseline_folds_on_a_folding_host():
    """The speedup's baseline is the host as it runs the model: folded with ``folds_qdq`` (110 + 2570 + 50 ns,
    :func:`qdq_conv`), every op on its own launch with fusion off (110 + 110 + 2570 + 60 + 60 ns)."""
    from hetsim.mappers import get_mapper

    plat = make_platform(host_extra=FOLDING)
    on = get_mapper("all-host").map(CostModel(qdq_conv(), plat))
    assert on.fused == {"dq0": "q0", "q1": "conv", "dq1": "q1"}
    assert on.makespan_s == pytest.approx((110 + 2570 + 50) * NS)
    off = get_mapper("all-host").map(CostModel(qdq_conv(), plat, fusion=False))
    assert off.fused == {} and off.makespan_s == pytest.approx((110 + 110 + 2570 + 60 + 60) * NS)
