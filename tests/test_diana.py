"""DIANA (ODiMO): the digital and AIMC latency models, the power split, the platform, the baselines, min-cost
and the dnas-export import.

Every expected latency is worked out by hand in cycles at F = 260 MHz from ODiMO's equations (docs/models.md)
(``diana_helpers.cyc`` converts); ``70 ns * F = 18.2`` cycles per AIMC array activation.
"""

from __future__ import annotations

import json
import sys

import pytest
from diana_helpers import (
    ODIMO,
    WEIGHT_MEMORY_B,
    WORKLOADS,
    F,
    ana_cycles,
    conv,
    cyc,
    diana,
    diana_unchecked,
    dig_cycles,
    elementwise,
    fc,
    joules,
    odimo_energy_mj_cycles,
)

from hetsim.analysis.metrics import device_table, summarize
from hetsim.check import check_schedule
from hetsim.costs import CostModel
from hetsim.devices.diana import layer_geometry
from hetsim.errors import MappingError, PlatformError
from hetsim.mappers import MAPPERS, get_mapper
from hetsim.mappers.dnas_export import read_export, to_hetsim_json, to_odimo_summary
from hetsim.mappers.min_cost import best_split, split_objective
from hetsim.platform import Platform, load_platform
from hetsim.schedule import Part, Schedule
from hetsim.sim import list_schedule, simulate
from hetsim.workload import Workload, load_onnx

DIANA_MAPPERS = ["all-8bit", "all-ternary", "io8-backbone-ternary", "min-cost", "dnas-export"]
SPLIT_LAYER = "/blocks/blocks.6/branch/branch.0/branch.0.0/Conv"  # resnet20 bb_3_0.conv1: 32 -> 64, 3x3, 8x8


@pytest.fixture(scope="module")
def plat():
    return diana()


@pytest.fixture(scope="module")
def resnet20(plat):
    return CostModel(load_onnx(WORKLOADS / "resnet20_cifar10.onnx"), plat)


@pytest.fixture(scope="module")
def mbv1(plat):
    return CostModel(load_onnx(WORKLOADS / "mobilenet_v1_025_vww.onnx"), plat)


# --------------------------------------------------------------------------------------- latency models


def test_conv3x3_16_to_16_at_32x32(plat):
    op = conv("c", 16, 16, 3, 32)
    # digital: ceil(16/16)=1 * 16 * ceil(32/16)=2 * 32 * 3*3 = 9216; + 32*32*(16+16)/8 = 4096 -> 13312
    assert plat.devices["digital"].cycles(op) == 13312
    # AIMC: ox_u: u*16 <= 512 for all u; (u+2)*max(64,16)*3 <= 1152 -> u <= 4 -> ox_u = 4
    #   8*16*3*3 = 1152; + ceil(16/512)=1 * ceil(16/128)=1 * (32*32/4 = 256) * 18.2 = 4659.2 -> 5811.2
    assert plat.devices["aimc"].ox_unroll_for(layer_geometry(op)) == 4
    assert plat.devices["aimc"].cycles(op) == pytest.approx(5811.2, rel=1e-12)
    assert plat.devices["digital"].latency(op) == cyc(13312)
    assert plat.devices["aimc"].latency(op) == cyc(5811.2)


def test_conv1x1_32_to_64(plat):
    op = conv("c", 32, 64, 1, 16)
    # digital: ceil(64/16)=4 * 32 * ceil(16/16)=1 * 16 * 1 = 2048; + 16*16*(64+32)/8 = 3072 -> 5120
    assert plat.devices["digital"].cycles(op) == 5120
    # AIMC: u*64 <= 512 -> u <= 8; (u+0)*64*1 <= 1152 -> u <= 18 -> ox_u = 8
    #   8*32 = 256; + 1 * 1 * (256/8 = 32) * 18.2 = 582.4 -> 838.4
    assert plat.devices["aimc"].cycles(op) == pytest.approx(838.4, rel=1e-12)


def test_depthwise_runs_on_digital_only(plat):
    op = conv("dw", 32, 32, 3, 24, groups=32)  # MobileNetV1 features.5
    # digital: ceil((32/32)/16)=1 * C_in 32 * ceil(24/16)=2 * 24 * 9 = 13824; + 24*24*(32+32)/8 = 4608 -> 18432
    assert plat.devices["digital"].cycles(op) == 18432
    assert plat.devices["aimc"].latency(op) is None  # groups = 1 only
    assert not plat.devices["aimc"].supports(op)
    # a depthwise part of 8 channels is an 8-channel depthwise conv:
    #   1 * 8 * 2 * 24 * 9 = 3456; + 576*(8+8)/8 = 1152 -> 4608
    assert plat.devices["digital"].cycles_channels(op, 8) == 4608


def test_fc_is_a_1x1_conv_with_one_pixel(plat):
    op = fc("fc", 64, 10)
    # digital: ceil(10/16)=1 * 64 * ceil(1/16)=1 * 1 * 1 = 64; + 1*1*(10+64)/8 = 9.25 -> 73.25
    assert plat.devices["digital"].cycles(op) == 73.25
    # AIMC: u*10 <= 512 and u*64 <= 1152 -> ox_u = 8; 8*64 = 512; + 1 * 1 * (1/8) * 18.2 = 2.275 -> 514.275
    assert plat.devices["aimc"].cycles(op) == pytest.approx(514.275, rel=1e-12)


def test_split_4_60_of_resnet20_bb3_conv1(plat):
    op = conv("c", 32, 64, 3, 8)
    # digital, 4 channels: ceil(4/16)=1 * 32 * ceil(8/16)=1 * 8 * 9 = 2304; + 64*(4+32)/8 = 288 -> 2592
    assert plat.devices["digital"].cycles_channels(op, 4) == 2592
    # AIMC, 60 channels: u*60 <= 512 -> u <= 8; (u+2)*64*3 <= 1152 -> u <= 4 -> ox_u = 4
    #   8*32*9 = 2304; + 1 * 1 * (64/4 = 16) * 18.2 = 291.2 -> 2595.2
    assert plat.devices["aimc"].cycles_channels(op, 60) == pytest.approx(2595.2, rel=1e-12)
    # both terms vanish with no channels
    assert plat.devices["digital"].cycles_channels(op, 0) == 0
    assert plat.devices["aimc"].cycles_channels(op, 0) == 0
    # the layer lasts max(2592, 2595.2) = 2595.2 cycles; energy 42.39*2592 + 28.74*3.2 = 109966.848 mW.cycles
    costs = CostModel(Workload.from_ops("one", [op], []), plat)
    t = {"digital": costs.part_latency("c", "digital", 4), "aimc": costs.part_latency("c", "aimc", 60)}
    assert costs.layer_energy(t) == pytest.approx(joules(109966.848), rel=1e-12)
    with pytest.raises(ValueError):
        costs.part_latency("c", "digital", 65)


def test_models_match_an_independent_transcription(plat):
    for c_in, c_out, k, o in [(3, 16, 3, 32), (16, 16, 3, 32), (16, 32, 1, 16), (64, 64, 3, 8), (512, 512, 3, 2),
                              (256, 512, 1, 2), (128, 200, 3, 5), (600, 700, 1, 1)]:
        op = conv("c", c_in, c_out, k, o)
        for n in (0, 1, c_out // 3, c_out):
            assert plat.devices["digital"].cycles_channels(op, n) == pytest.approx(dig_cycles(c_in, n, k, o), rel=1e-12)
            assert plat.devices["aimc"].cycles_channels(op, n) == pytest.approx(ana_cycles(c_in, n, k, o), rel=1e-12)


def test_geometry_of_onnx_layers(resnet20):
    g = layer_geometry(resnet20.workload.op(SPLIT_LAYER))
    assert (g.c_in, g.c_out, g.groups, g.f_x, g.f_y, g.o_x, g.o_y) == (32, 64, 1, 3, 3, 8, 8)
    g = layer_geometry(resnet20.workload.op("/fc/Gemm"))
    assert (g.c_in, g.c_out, g.f_x, g.f_y, g.o_x, g.o_y) == (64, 10, 1, 1, 1, 1)


def test_non_square_layer_reads_height_as_x(plat):
    """ODiMO's code reads ``k_x = kernel_size[0]`` and ``out_x = out_shape[-2]``: x is the *height* (NCHW)."""
    from hetsim.workload import GemmView, Op

    # 8 -> 16 channels, kernel 3 high x 1 wide, output 20 high x 4 wide
    g = GemmView(m_v=16, n_v=8 * 3, n_mvm=20 * 4, groups=1, kernel=(3, 1), out_spatial=(20, 4), stride=(1, 1))
    op = Op(name="c", op_type="Conv", index=0, input_shapes=((1, 8, 22, 4),), output_shapes=((1, 16, 20, 4),),
            n_in=8 * 22 * 4, n_out=16 * 80, weight_shape=(16, 8, 3, 1), weight_elements=16 * 8 * 3, macs=g.macs,
            bits=8, in_bytes=8 * 22 * 4, out_bytes=16 * 80, gemm=g)
    geom = layer_geometry(op)
    assert (geom.f_x, geom.f_y, geom.o_x, geom.o_y) == (3, 1, 20, 4)
    # digital: ceil(16/16)=1 * 8 * ceil(20/16)=2 * 4 * 3 * 1 = 192; + 20*4*(16+8)/8 = 240 -> 432
    # (the width reading, f_x=1 f_y=3 o_x=4 o_y=20, would give 1*8*1*20*3 + 240 = 720)
    assert plat.devices["digital"].cycles(op) == 432
    # AIMC: (u+3-1)*max(64,8)*1 <= 1152 and u*16 <= 512 -> ox_u = 8; 8*8*3*1 = 192; 1*1*(80/8 = 10)*18.2 = 182
    # -> 374 (the width reading: (u+0)*64*3 <= 1152 -> ox_u = 4, 192 + 20*18.2 = 556)
    assert plat.devices["aimc"].ox_unroll_for(geom) == 8
    assert plat.devices["aimc"].cycles(op) == pytest.approx(374.0, rel=1e-12)


# ------------------------------------------------------------------------------------- power, platform


def test_power_split_reproduces_the_three_busy_states(plat):
    d, a = plat.devices["digital"], plat.devices["aimc"]
    assert (d.active_w + a.active_w) * 1e3 == pytest.approx(42.39, abs=1e-9)  # both busy
    assert (a.active_w + d.idle_w) * 1e3 == pytest.approx(28.74, abs=1e-9)  # only AIMC busy
    assert (d.active_w + a.idle_w) * 1e3 == pytest.approx(24.96, abs=1e-9)  # only digital busy
    assert (d.idle_w + a.idle_w) * 1e3 == pytest.approx(11.31, abs=1e-9)
    assert plat.devices["host"].active_w == plat.devices["host"].idle_w == 0


@pytest.mark.parametrize("l_a, l_d", [(2595.2, 2592), (5811.2, 0), (0, 13312), (100, 100), (838.4, 5120)])
def test_layer_energy_equals_the_odimo_formula(plat, l_a, l_d):
    costs = CostModel(Workload.from_ops("one", [conv("c", 16, 16, 3, 4)], []), plat)
    assert costs.layer_energy({"aimc": l_a / F, "digital": l_d / F}) == pytest.approx(
        joules(odimo_energy_mj_cycles(l_a, l_d)), rel=1e-12)


def test_replayed_energy_of_a_split_layer_equals_the_odimo_formula(plat):
    # one layer, split 4/60: the generic model sum(P_act*busy + P_idle*(makespan - busy)) over the devices
    # (host draws nothing) gives 42.39*2592 + 28.74*(2595.2 - 2592) mW.cycles
    costs = CostModel(Workload.from_ops("one", [conv("c", 32, 64, 3, 8)], []), plat)
    from hetsim.mappers.base import make_schedule

    s = make_schedule(costs, {"c": "aimc"}, "t", splits={"c": {"digital": list(range(4)),
                                                               "aimc": list(range(4, 64))}})
    res = simulate(costs, s)
    assert res.makespan_s == cyc(2595.2)
    assert float(device_table(costs, res)["energy_j"].sum()) == pytest.approx(joules(109966.848), rel=1e-12)


def test_diana_yaml_shares_l1_and_needs_no_link(plat):
    assert plat.links == {}
    assert plat.memories["l1"].size_kib == 256
    assert plat.shares_memory("host", "aimc") and plat.shares_memory("digital", "aimc")
    ops = [elementwise("x", 10), conv("c", 3, 8, 3, 4, index=1), elementwise("y", 10, index=2)]
    costs = CostModel(Workload.from_ops("t", ops, [("x", "c", 48), ("c", "y", 128)]), plat)
    assert costs.transfer_time("x", "c", "host", "aimc") == 0 and costs.transfer_bytes("x", "c", "host", "aimc") == 0
    assert not costs.needs_transfer("c", "y", "digital", "host")


def test_memories_validation_and_union_tag_message(tmp_path):
    data = diana().model_dump(mode="json", exclude={"devices": {"__all__": {"name"}}})
    data["memories"]["l1"]["shared_by"] = ["host", "gpu"]
    p = tmp_path / "bad.yaml"
    import yaml

    p.write_text(yaml.safe_dump(data))
    with pytest.raises(PlatformError, match="memories.l1.shared_by names 'gpu'"):
        load_platform(p)
    data["memories"]["l1"]["shared_by"] = ["host", "aimc"]
    data["devices"]["aimc"]["kind"] = "diana-analog"
    p.write_text(yaml.safe_dump(data))
    with pytest.raises(PlatformError, match="(?i)allowed: cpu, puma, diana-digital, diana-aimc"):
        load_platform(p)
    data["devices"]["aimc"]["kind"] = "diana-aimc"
    data["devices"]["aimc"]["t_mvm_ns"] = -1
    p.write_text(yaml.safe_dump(data))
    with pytest.raises(PlatformError, match=r"devices\.aimc\.t_mvm_ns"):
        load_platform(p)


def test_free_ops_cost_nothing_on_the_host(plat):
    relu = elementwise("r", 1000, op_type="Relu")
    mul = elementwise("m", 1000)
    host = plat.devices["host"]
    assert host.latency(relu) == 0.0
    # Mul: roofline, int8 SIMD 4 elements/cycle at 260 MHz vs 2000 bytes at 1.04 GB/s:
    #   max(1000/(0.26e9*4), 2000/1.04e9) = max(0.9615 us, 1.923 us) = 1.923 us
    assert host.latency(mul) == pytest.approx(2000 / 1.04e9, rel=1e-12)


# ----------------------------------------------------------------------------------------------- mappers


def test_diana_mappers_are_registered_and_refuse_other_platforms(yolov5n_costs):
    assert set(DIANA_MAPPERS) <= set(MAPPERS)
    for name in ["all-8bit", "all-ternary", "io8-backbone-ternary", "min-cost"]:
        with pytest.raises(MappingError, match="channel-splitting accelerators"):
            get_mapper(name).map(yolov5n_costs)
    with pytest.raises(MappingError, match="--export FILE"):
        get_mapper("dnas-export").map(yolov5n_costs)
    with pytest.raises(MappingError, match="objective 'speed'"):
        get_mapper("min-cost", objective="speed")
    assert get_mapper("min-cost", objective="energy").objective == "energy"


def _small(plat) -> CostModel:
    """stem (3->16, 3x3, 32x32) -> dw (16 ch, depthwise 3x3, 32x32) -> pw (16->32, 1x1, 32x32) -> fc (32->10),
    with a host Mul between pw and fc."""
    ops = [conv("stem", 3, 16, 3, 32, index=0), conv("dw", 16, 16, 3, 32, groups=16, index=1),
           conv("pw", 16, 32, 1, 32, index=2), elementwise("mul", 32, index=3), fc("fc", 32, 10, index=4)]
    edges = [("stem", "dw", 1), ("dw", "pw", 1), ("pw", "mul", 1), ("mul", "fc", 1)]
    return CostModel(Workload.from_ops("small", ops, edges), plat)


def test_baselines_on_a_small_network(plat):
    costs = _small(plat)
    a8 = get_mapper("all-8bit").map(costs)
    assert a8.assignment == {"stem": "digital", "dw": "digital", "pw": "digital", "mul": "host", "fc": "digital"}
    at = get_mapper("all-ternary").map(costs)
    assert at.assignment == {"stem": "aimc", "dw": "digital", "pw": "aimc", "mul": "host", "fc": "aimc"}
    io = get_mapper("io8-backbone-ternary").map(costs)
    assert io.assignment == {"stem": "digital", "dw": "digital", "pw": "aimc", "mul": "host", "fc": "digital"}
    for s in (a8, at, io):
        assert s.splits == {}
        assert not check_schedule(costs, s).violations
        assert simulate(costs, s).makespan_s == s.makespan_s
    # all-8bit is serial on the digital accelerator, plus the host Mul (32 elements: roofline
    # max(32/(0.26e9*4), 64/1.04e9) = 64/1.04e9 s):
    #   stem 1*3*2*32*9 + 1024*19/8 = 1728 + 2432 = 4160; dw 1*16*2*32*9 + 1024*32/8 = 9216 + 4096 = 13312;
    #   pw 2*16*2*32 + 1024*48/8 = 2048 + 6144 = 8192; fc 1*32*1*1 + 42/8 = 37.25
    assert a8.makespan_s == pytest.approx((4160 + 13312 + 8192 + 37.25) / F + 64 / 1.04e9, rel=1e-12)
    assert a8.stats["aimc_share"] == 0 and at.stats["channels"] == {"digital": 16, "aimc": 58}


def _brute_force(c_in, c_out, k, o, objective):
    """Independent brute force: every n_digital in 0..C_out whose digital part's 8-bit weights (n * C_in * k * k
    bytes) fit DIANA's 64 KiB weight memory (n = 0: no digital part), ties to more digital channels; ``None``
    when no n fits (not for these groups = 1 layers: the AIMC takes any part)."""
    best = None
    for n in range(c_out + 1):
        if n * c_in * k * k > WEIGHT_MEMORY_B:
            continue
        l_d, l_a = dig_cycles(c_in, n, k, o), ana_cycles(c_in, c_out - n, k, o)
        cost = max(l_a, l_d) if objective == "latency" else odimo_energy_mj_cycles(l_a, l_d)
        if best is None or cost < best[1] * (1 - 1e-12) or abs(cost - best[1]) <= 1e-12 * best[1]:
            best = (n, cost)
    return best


@pytest.mark.parametrize("objective", ["latency", "energy"])
@pytest.mark.parametrize("shape", [(16, 16, 3, 32), (32, 64, 1, 16), (32, 64, 3, 8), (3, 16, 3, 32), (64, 10, 1, 1),
                                   (128, 96, 3, 4), (8, 40, 3, 12),
                                   # the weight memory caps the digital part (at 64, 14 and 28 channels):
                                   (1024, 100, 1, 1), (512, 512, 3, 2), (256, 256, 3, 4)])
def test_min_cost_equals_brute_force(plat, objective, shape):
    c_in, c_out, k, o = shape
    costs = CostModel(Workload.from_ops("one", [conv("c", c_in, c_out, k, o)], []), plat)
    n, cost = best_split(costs, "c", "digital", "aimc", objective)
    want_n, want = _brute_force(c_in, c_out, k, o, objective)
    assert n == want_n
    assert cost == pytest.approx(want / F if objective == "latency" else joules(want), rel=1e-9)
    s = get_mapper("min-cost", objective=objective).map(costs)
    parts = s.splits.get("c", {s.assignment["c"]: list(range(c_out))})
    assert len(parts.get("digital", [])) == n and parts.get("digital", []) == list(range(n))
    assert not check_schedule(costs, s).violations


def test_min_cost_latency_ties_go_to_digital(plat):
    # bb_3_0.conv1 (32 -> 64, 3x3, 8x8): the AIMC part takes 2595.2 cycles for any 60..64 channels (ox_u = 4,
    # one column pass), the digital part 2304 + 64*(n+32)/8 cycles, <= 2595.2 up to n = 4 (2592):
    # n = 0..4 tie at 2595.2; n = 5 gives 2600. Ties -> 4 digital channels, as the published checkpoint.
    costs = CostModel(Workload.from_ops("one", [conv("c", 32, 64, 3, 8)], []), plat)
    assert [split_objective(costs, "c", n, "digital", "aimc", "latency") * F for n in (0, 4, 5)] == pytest.approx(
        [2595.2, 2595.2, 2600])
    assert best_split(costs, "c", "digital", "aimc", "latency")[0] == 4
    s = get_mapper("min-cost").map(costs)
    assert s.splits == {"c": {"digital": [0, 1, 2, 3], "aimc": list(range(4, 64))}}
    # the parts: channels 0-3 digital, 4-63 AIMC (the schedule's assignment view names the first part's device)
    assert s.parts == {"c": [Part("digital", (0, 4)), Part("aimc", (4, 64))]}
    assert s.devices_of("c") == ["digital", "aimc"]
    assert s.makespan_s == cyc(2595.2)
    assert s.stats["capacity_limited_layers"] == 0 and s.stats["host_layers"] == []


def test_min_cost_respects_the_digital_weight_memory(plat):
    # FC 1024 -> 100: 1024 B of 8-bit weights per output channel, so the 64 KiB weight memory holds the part of
    # at most 65536 / 1024 = 64 channels; the whole layer (100 KiB) does not fit.
    #   digital, whole: ceil(100/16)=7 * 1024 + (100+1024)/8 = 7168 + 140.5 = 7308.5 cycles (if it fitted)
    #   digital, 64 ch: ceil(64/16)=4 * 1024 + (64+1024)/8 = 4096 + 136 = 4232 cycles
    #   AIMC, any 1..100 ch: ox_u = 1 ((u+0) * 1024 <= 1152 -> u = 1):
    #     8*1024 = 8192; + ceil(m/512)=1 * ceil(1024/128)=8 * 1/1 * 18.2 = 145.6 -> 8337.6 cycles
    # latency: every allowed n = 0..64 costs max(L_d(n) <= 4232, 8337.6) = 8337.6: ties -> n = 64, the cap
    #   (without the weight memory, all-digital's 7308.5 would win).
    # energy: with L_d < L_a, 42.39*L_d + 28.74*(8337.6 - L_d) = 239622.624 + 13.65*L_d mW.cycles -> n = 0, all AIMC
    #   (without the weight memory: all digital, 24.96 * 7308.5 = 182420.16).
    costs = CostModel(Workload.from_ops("one", [fc("fc", 1024, 100)], []), plat)
    assert "digital" not in costs.latency["fc"]  # the whole layer does not fit
    assert costs.part_latency("fc", "digital", 64) == cyc(4232) and costs.part_latency("fc", "digital", 65) is None
    assert split_objective(costs, "fc", 65, "digital", "aimc", "latency") is None
    assert split_objective(costs, "fc", 64, "digital", "aimc", "latency") == cyc(8337.6)
    assert best_split(costs, "fc", "digital", "aimc", "latency") == (64, cyc(8337.6))
    s = get_mapper("min-cost").map(costs)
    assert s.parts["fc"] == [Part("digital", (0, 64)), Part("aimc", (64, 100))]
    assert s.makespan_s == cyc(8337.6) and s.stats["capacity_limited_layers"] == 1 and s.stats["host_layers"] == []
    assert not check_schedule(costs, s).violations
    e = get_mapper("min-cost", objective="energy").map(costs)
    assert e.parts["fc"] == [Part("aimc")] and e.splits == {}
    assert e.stats["layer_energy_sum_j"] == pytest.approx(joules(239622.624), rel=1e-12)
    # weight_memory_kib: null turns the check off (ODiMO's model): all digital for both objectives
    free = CostModel(costs.workload, diana_unchecked())
    for objective, want in (("latency", 7308.5 / F), ("energy", joules(182420.16))):
        s = get_mapper("min-cost", objective=objective).map(free)
        assert s.parts["fc"] == [Part("digital")] and s.stats["capacity_limited_layers"] == 0
        assert s.stats[f"layer_{objective}_sum_{'s' if objective == 'latency' else 'j'}"] == pytest.approx(want)


def test_a_layer_no_split_fits_stays_on_the_host(plat):
    # grouped 3x3 conv 512 -> 512, groups 2, 2x2 output: the AIMC runs no grouped conv, and the digital
    # accelerator needs 512 * (256 * 9) B = 1152 KiB of weights for the whole layer (a split has no AIMC part to
    # take the rest), so min-cost leaves it on the host; the whole-layer baselines refuse it.
    ops = [conv("pw", 16, 512, 1, 2, index=0), conv("g", 512, 512, 3, 2, groups=2, index=1)]
    costs = CostModel(Workload.from_ops("grouped", ops, [("pw", "g", 2048)]), plat)
    assert set(costs.latency["g"]) == {"host"}
    s = get_mapper("min-cost").map(costs)
    assert s.stats["host_layers"] == ["g"] and s.parts["g"] == [Part("host")]
    assert s.stats["layers"] == 1 and s.stats["capacity_limited_layers"] == 1
    assert not check_schedule(costs, s).violations and simulate(costs, s).makespan_s == s.makespan_s
    for name in ("all-8bit", "all-ternary"):
        with pytest.raises(MappingError, match=rf"{name}: layer 'g' \(Conv, 512 output channels\) needs "
                                               r"1,152\.0 KiB of weight_memory on 'digital', which holds 64\.0 KiB"
                                               r".*weight_memory_kib: null"):
            get_mapper(name).map(costs)


def test_min_cost_keeps_depthwise_on_digital(mbv1):
    s = get_mapper("min-cost", objective="latency").map(mbv1)
    for v, op in mbv1.workload.ops.items():
        if op.gemm is not None and op.gemm.groups > 1:
            assert s.assignment[v] == "digital" and v not in s.splits
    assert not check_schedule(mbv1, s).violations
    res = simulate(mbv1, s)
    assert (res.start_s, res.finish_s, res.makespan_s) == list_schedule(mbv1, s.assignment, s.order, s.splits)


def test_real_workloads_all_mappers_replay_exactly(plat):
    unchecked = diana_unchecked()
    for f in ["resnet20_cifar10", "mobilenet_v1_025_vww", "resnet18_tinyimagenet_int8_qdq"]:
        wl = load_onnx(WORKLOADS / f"{f}.onnx")
        for p in (plat, unchecked):
            costs = CostModel(wl, p)
            for name, opts in [("all-8bit", {}), ("all-ternary", {}), ("io8-backbone-ternary", {}),
                               ("min-cost", {"objective": "latency"}), ("min-cost", {"objective": "energy"})]:
                if p is plat and f.startswith("resnet18") and name in ("all-8bit", "io8-backbone-ternary"):
                    # 14 of ResNet-18's 21 layers (72 KiB .. 2.25 MiB of 8-bit weights), and its 512 -> 200
                    # classifier (100 KiB), do not fit DIANA's 64 KiB digital weight memory
                    first = "'/layer2/layer2.0/conv1/Conv' (Conv, 128 output channels) needs 72.0 KiB" \
                        if name == "all-8bit" else "'/fc/Gemm' (Gemm, 200 output channels) needs 100.0 KiB"
                    with pytest.raises(MappingError) as err:
                        get_mapper(name, **opts).map(costs)
                    msg = str(err.value)
                    assert f"{name}: layer {first} of weight_memory on 'digital', which holds 64.0 KiB" in msg
                    assert ("13 more of the 21 layers" in msg) == (name == "all-8bit")
                    continue
                s = get_mapper(name, **opts).map(costs)
                assert not check_schedule(costs, s).violations, (f, name)
                res = simulate(costs, s)
                assert res.makespan_s == s.makespan_s, (f, name)
                summ = summarize(costs, s, res)
                cs = summ["channel_split"]
                assert cs["share"].get("aimc", 0.0) == pytest.approx(s.stats["aimc_share"])
                # every Conv/FC layer is on the accelerators (none stays on the host) ...
                assert s.stats["layers"] == len([v for v in wl.ops if wl.op(v).gemm is not None]), (f, name)
                # ... and the replay may overlap independent layers, never exceed the layer-sequential model
                assert res.makespan_s <= cs["layer_sequential_latency_s"] * (1 + 1e-12)
                for v, parts in s.parts.items():  # every digital part fits the weight memory, unless unchecked
                    n = sum(q.n_channels or costs.out_channels(v) for q in parts if q.device == "digital")
                    if n and p is plat:
                        assert costs.demand(v, "digital", n)["weight_memory"] <= WEIGHT_MEMORY_B, (f, name, v)
    # ResNet-18 with the weight memory enforced: min-cost caps the digital parts (14 layers limited) and keeps
    # the layer-sequential latency of the unchecked model (the AIMC part is the longer one in every layer)
    r18 = load_onnx(WORKLOADS / "resnet18_tinyimagenet_int8_qdq.onnx")
    s = get_mapper("min-cost").map(CostModel(r18, plat))
    free = get_mapper("min-cost").map(CostModel(r18, unchecked))
    assert s.stats["capacity_limited_layers"] == 14 and free.stats["capacity_limited_layers"] == 0
    assert s.stats["layer_latency_sum_s"] == pytest.approx(free.stats["layer_latency_sum_s"], rel=1e-12)
    assert s.stats["channels"]["digital"] < free.stats["channels"]["digital"]


# ------------------------------------------------------------------------------------------- dnas-export


def test_summary_json_round_trips(resnet20, tmp_path):
    s = get_mapper("min-cost").map(resnet20)
    assert s.splits  # the 4/60 layer
    doc = to_odimo_summary(resnet20, s)
    assert doc[SPLIT_LAYER]["digital_ch"] == 4 and doc[SPLIT_LAYER]["analog_ch"] == 60
    layer = doc[SPLIT_LAYER]
    assert layer["k_x"] == 3 and layer["stride"] == [2, 2] and layer["padding"] == [1, 1] and layer["ch_in"] == 32
    doc["/blocks/blocks.0/Add"] = {"op": "ADD", "prev_layer": []}  # ODiMO lists adds and pools too: skipped
    p = tmp_path / "summary.json"
    p.write_text(json.dumps(doc))
    fmt, layers = read_export(p)
    assert fmt == "odimo-summary" and len(layers) == 22
    back = get_mapper("dnas-export", path=p).map(resnet20)
    assert back.assignment == s.assignment and back.splits == s.splits
    assert back.makespan_s == s.makespan_s and back.stats["format"] == "odimo-summary"


def test_hetsim_json_round_trips_non_contiguous_splits(mbv1, tmp_path):
    s = get_mapper("min-cost").map(mbv1)
    doc = to_hetsim_json(mbv1, s)
    # make one split non-contiguous: interleave the channels of the first split layer
    v = next(iter(s.splits))
    c = mbv1.out_channels(v)
    layer = next(x for x in doc["layers"] if x["op"] == v)
    n_d = len(layer["channels"]["digital"])
    layer["channels"] = {"digital": list(range(0, 2 * n_d, 2)),
                         "aimc": sorted(set(range(c)) - set(range(0, 2 * n_d, 2)))}
    for x in doc["layers"]:
        del x["op"]  # match by order and shape
    p = tmp_path / "split.json"
    p.write_text(json.dumps(doc))
    back = get_mapper("dnas-export", path=p).map(mbv1)
    # the import reorders the channels so each device's are one block (ODiMO Fig. 3; only the counts matter to
    # the cost models): the digital channels first (it holds channel 0), as many on each device as given ...
    assert back.parts[v] == [Part("digital", (0, n_d)), Part("aimc", (n_d, c))]
    assert back.splits[v] == {"digital": list(range(n_d)), "aimc": list(range(n_d, c))}
    # ... keeps the channels as given, for this layer only ...
    assert back.stats["export_channels"] == {v: layer["channels"]}
    assert {k: w for k, w in back.splits.items() if k != v} == {k: w for k, w in s.splits.items() if k != v}
    assert not check_schedule(mbv1, back).violations
    assert back.makespan_s == s.makespan_s  # the same channel counts
    # ... and writes them back: the export round-trips, also through the schedule's JSON
    for sched in (back, Schedule.from_json(back.to_json())):
        again = to_hetsim_json(mbv1, sched)
        assert [x["channels"] for x in again["layers"]] == [x["channels"] for x in doc["layers"]]
    # a contiguous export is kept as given, and nothing is recorded
    doc2 = to_hetsim_json(mbv1, s)
    p.write_text(json.dumps(doc2))
    back2 = get_mapper("dnas-export", path=p).map(mbv1)
    assert back2.parts == s.parts and back2.stats["export_channels"] == {}
    assert to_hetsim_json(mbv1, back2)["layers"] == doc2["layers"]


def test_export_layers_match_by_order_and_shape_across_reordered_shortcuts(plat, tmp_path):
    # torchvision's ONNX lists a ResNet-18 block's shortcut before its second conv; ODiMO after it
    costs = CostModel(load_onnx(WORKLOADS / "resnet18_tinyimagenet_int8_qdq.onnx"), plat)
    s = get_mapper("min-cost").map(costs)
    doc = to_odimo_summary(costs, s)
    names = list(doc)
    # every layer is exported, also those whose weights exceed the 64 KiB digital weight memory (their digital
    # parts are capped; 7 layers are split on ODiMO's 3x3/1-stem variant, 15 on torchvision's 7x7/2 + max-pool,
    # whose layers see 16x fewer pixels)
    assert len(names) == 21 and len(s.splits) == 7
    ds = next(i for i, n in enumerate(names) if "downsample" in n)
    assert "conv2" in names[ds + 1]
    names[ds], names[ds + 1] = names[ds + 1], names[ds]
    p = tmp_path / "summary.json"
    p.write_text(json.dumps({n: doc[n] for n in names}))
    back = get_mapper("dnas-export", path=p).map(costs)
    assert back.assignment == s.assignment and back.splits == s.splits and back.parts == s.parts
    assert back.makespan_s == s.makespan_s


def test_mismatched_exports_name_the_first_layer_that_does_not_fit(resnet20, tmp_path):
    doc = to_odimo_summary(resnet20, get_mapper("all-8bit").map(resnet20))
    names = list(doc)
    p = tmp_path / "bad.json"
    bad = {n: dict(doc[n]) for n in names}
    bad[names[3]]["ch_in"] = 17
    p.write_text(json.dumps(bad))
    with pytest.raises(MappingError, match=rf"export layer 3 '{names[3]}' \(C_out 16, C_in 17.*fits no remaining"):
        get_mapper("dnas-export", path=p).map(resnet20)
    p.write_text(json.dumps({n: doc[n] for n in names[:-1]}))  # the classifier is missing
    with pytest.raises(MappingError, match=r"op '/fc/Gemm' \(C_out 10, C_in 64, kernel 1x1, groups 1\).*no layer"):
        get_mapper("dnas-export", path=p).map(resnet20)
    extra = dict(doc)
    extra["extra"] = dict(doc[names[-1]])
    p.write_text(json.dumps(extra))
    with pytest.raises(MappingError, match="export layer 22 'extra'.*all 22 Conv/FC ops are already matched"):
        get_mapper("dnas-export", path=p).map(resnet20)
    bad = {n: dict(doc[n]) for n in names}
    bad[names[0]]["digital_ch"] = 3
    p.write_text(json.dumps(bad))
    with pytest.raises(MappingError, match=r"digital_ch 3 \+ analog_ch 0 != ch_out 16"):
        get_mapper("dnas-export", path=p).map(resnet20)


def test_export_errors(resnet20, mbv1, tmp_path):
    with pytest.raises(MappingError, match="does not exist"):
        get_mapper("dnas-export", path=tmp_path / "nope.json").map(resnet20)
    p = tmp_path / "x.json"
    p.write_text("[1, 2]")
    with pytest.raises(MappingError, match="neither hetsim's channel-split format"):
        get_mapper("dnas-export", path=p).map(resnet20)
    # AIMC channels on a depthwise layer
    doc = to_hetsim_json(mbv1, get_mapper("all-8bit").map(mbv1))
    dw = next(x for x in doc["layers"] if x["groups"] > 1)
    dw["channels"] = {"digital": list(range(dw["c_out"] - 1)), "aimc": [dw["c_out"] - 1]}
    p.write_text(json.dumps(doc))
    with pytest.raises(MappingError, match=f"'aimc' cannot run 1 channels of '{dw['op']}'.*groups"):
        get_mapper("dnas-export", path=p).map(mbv1)
    dw["channels"] = {"digital": list(range(dw["c_out"] - 1))}
    p.write_text(json.dumps(doc))
    with pytest.raises(MappingError, match="do not cover"):
        get_mapper("dnas-export", path=p).map(mbv1)
    dw["channels"] = {"gpu": list(range(dw["c_out"]))}
    p.write_text(json.dumps(doc))
    with pytest.raises(MappingError, match="names device 'gpu'"):
        get_mapper("dnas-export", path=p).map(mbv1)


def test_checkpoint_without_torch_gives_a_clear_message(resnet20, tmp_path, monkeypatch):
    p = tmp_path / "search.pth.tar"
    p.write_bytes(b"PK\x03\x04 not json")
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch -> ImportError
    with pytest.raises(MappingError, match=r"needs torch: pip install 'hetsim\[torch\]'"):
        get_mapper("dnas-export", path=p).map(resnet20)


def _checkpoint(name: str):
    pytest.importorskip("torch", reason="reading ODiMO checkpoints needs torch (pip install 'hetsim[torch]')")
    p = ODIMO / name
    if not p.is_file():
        pytest.skip(f"{p} is not available (tests/data/odimo)")
    return p


def test_odimo_minlat_checkpoint_imports_and_replays(resnet20):
    p = _checkpoint("resnet20_cifar10_minlat_max8.pth.tar")
    fmt, layers = read_export(p)
    assert fmt == "checkpoint" and len(layers) == 22
    assert layers[0].name == "conv1" and layers[-1].name == "fc" and layers[-1].kernel == (1, 1)
    s = get_mapper("dnas-export", path=p).map(resnet20)
    # backbone.bb_3_0.conv1: alpha [2, 64], argmax 0 (digital) for channels 0-3, 1 (AIMC) for 4-63
    assert s.splits == {SPLIT_LAYER: {"digital": [0, 1, 2, 3], "aimc": list(range(4, 64))}}
    assert s.devices_of(SPLIT_LAYER) == ["digital", "aimc"] and s.stats["export_channels"] == {}
    # the other 21 layers have a [1, C_out] alpha: all digital
    layers_on = {v: p for v, p in s.parts.items() if resnet20.workload.op(v).gemm is not None}
    assert len(layers_on) == 22 and sum(p == [Part("digital")] for p in layers_on.values()) == 21
    assert not check_schedule(resnet20, s).violations
    res = simulate(resnet20, s)
    assert (res.start_s, res.finish_s, res.makespan_s) == list_schedule(resnet20, s.assignment, s.order, s.splits)
    # every layer runs on the digital accelerator one after another (the shortcut conv follows conv2 in its order),
    # except that the split layer lasts max(2592, 2595.2) = 2595.2 cycles instead of its digital 9984:
    all8 = get_mapper("all-8bit").map(resnet20)
    assert res.makespan_s == pytest.approx(all8.makespan_s - (9984 - 2595.2) / F, rel=1e-12)
    assert s.stats["channels"] == {"digital": 734, "aimc": 60}


def test_odimo_w8a7_checkpoint_is_all_8bit(resnet20):
    p = _checkpoint("resnet20_cifar10_w8a7.pth.tar")
    s = get_mapper("dnas-export", path=p).map(resnet20)
    a8 = get_mapper("all-8bit").map(resnet20)
    assert s.assignment == a8.assignment and s.splits == {} and s.makespan_s == a8.makespan_s


def test_synthetic_checkpoint_with_a_wrong_shape(resnet20, tmp_path):
    torch = pytest.importorskip("torch", reason="needs torch (pip install 'hetsim[torch]')")
    sd = {}
    for i, v in enumerate(v for v in resnet20.workload.topological_order() if resnet20.workload.op(v).gemm):
        g = resnet20.workload.op(v).gemm
        alpha = torch.zeros(2, g.c_out)
        alpha[1, : g.c_out // 2] = 1.0  # the first half on the AIMC
        sd[f"l{i}.mix_weight.alpha_weight"] = alpha
        k = g.kernel or (1, 1)
        sd[f"l{i}.mix_weight.conv.weight"] = torch.zeros(g.c_out, g.c_in // g.groups, *k)
    p = tmp_path / "ok.pth"
    torch.save({"state_dict": sd}, p)
    s = get_mapper("dnas-export", path=p).map(resnet20)
    assert s.splits["/stem/stem.0/Conv"] == {"digital": list(range(8, 16)), "aimc": list(range(8))}
    assert s.parts["/stem/stem.0/Conv"] == [Part("aimc", (0, 8)), Part("digital", (8, 16))]
    assert s.stats["export_channels"] == {}
    # an argmax that interleaves the channels: contiguous parts, the search's channels kept and written back
    alpha = torch.zeros(2, 16)
    alpha[1, ::2] = 1.0  # even channels on the AIMC
    torch.save({"state_dict": {**sd, "l0.mix_weight.alpha_weight": alpha}}, p)
    s = get_mapper("dnas-export", path=p).map(resnet20)
    given = {"aimc": list(range(0, 16, 2)), "digital": list(range(1, 16, 2))}
    assert s.parts["/stem/stem.0/Conv"] == [Part("aimc", (0, 8)), Part("digital", (8, 16))]
    assert s.stats["export_channels"] == {"/stem/stem.0/Conv": given}
    assert to_hetsim_json(resnet20, s)["layers"][0]["channels"] == given
    sd["l5.mix_weight.conv.weight"] = torch.zeros(16, 16, 5, 5)
    torch.save(sd, p)  # a bare state_dict is read too
    with pytest.raises(MappingError, match=r"export layer 5 'l5' \(C_out 16, C_in/groups 16, kernel 5x5\)"):
        get_mapper("dnas-export", path=p).map(resnet20)


# ----------------------------------------------------------------------------------------------- CLI, report


def test_cli_objective_and_export(tmp_path, capsys):
    from hetsim.cli import main

    model = str(WORKLOADS / "resnet20_cifar10.onnx")
    plat = "platforms/diana.yaml"
    out = tmp_path / "s.json"
    assert main(["map", plat, model, "--mapper", "min-cost", "--objective", "energy", "-o", str(out)]) == 0
    s = json.loads(out.read_text())
    assert s["mapper"] == "min-cost" and s["stats"]["objective"] == "energy"
    exp = tmp_path / "export.json"
    costs = CostModel(load_onnx(model), load_platform(plat))
    sched = get_mapper("min-cost").map(costs)
    exp.write_text(json.dumps(to_hetsim_json(costs, sched)))
    capsys.readouterr()
    assert main(["run", plat, model, "--mapper", "dnas-export", "--export", str(exp), "--json"]) == 0
    summ = json.loads(capsys.readouterr().out)
    assert summ["channel_split"]["split_layers"] == 1
    assert summ["channel_split"]["share"]["aimc"] == pytest.approx(sched.stats["aimc_share"])
    assert main(["run", plat, model, "--mapper", "dnas-export"]) == 2
    assert "--export FILE" in capsys.readouterr().err
    assert main(["run", "platforms/puma.yaml", model, "--mapper", "all-8bit"]) == 2
    err = capsys.readouterr().err  # the DIANA mappers find the two accelerators by capability, not by kind
    assert "has 0 channel-splitting accelerators" in err and "platforms/diana.yaml" in err
    r18 = str(WORKLOADS / "resnet18_tinyimagenet_int8_qdq.onnx")
    assert main(["run", plat, r18, "--mapper", "all-8bit"]) == 2
    err = capsys.readouterr().err
    assert "needs 72.0 KiB of weight_memory on 'digital', which holds 64.0 KiB" in err
    assert "weight_memory_kib: null" in err
    assert main(["run", plat, model, "--mapper", "min-cost"]) == 0
    text = capsys.readouterr().out
    assert "794 output channels of 22 Conv/FC layers" in text
    assert "both" in text and "4 digital + 60 aimc" in text


def test_platform_is_the_shipped_one():
    assert isinstance(diana(), Platform)
    assert {d.kind for d in diana().devices.values()} == {"cpu", "diana-digital", "diana-aimc"}


def test_resnet20_baselines_equal_the_independent_layer_sums(resnet20):
    """all-8bit and all-ternary run every layer on one serial accelerator, ops outside the accelerators are free:
    the makespan is the sum of the layers' L_dig (L_ana), here from the independent transcription."""
    shapes = []
    for v in resnet20.workload.topological_order():
        g = resnet20.workload.op(v).gemm
        if g is not None:
            k = g.kernel[0] if g.kernel else 1
            o = g.out_spatial[0] if g.out_spatial else 1
            shapes.append((g.c_in, g.c_out, k, o))
    assert len(shapes) == 22
    dig = sum(dig_cycles(*s) for s in shapes)
    ana = sum(ana_cycles(*s) for s in shapes)
    assert get_mapper("all-8bit").map(resnet20).makespan_s == cyc(dig)
    assert get_mapper("all-ternary").map(resnet20).makespan_s == cyc(ana)
    # docs/reproduction.md: 0.9911 ms and 0.3389 ms
    assert dig / F * 1e3 == pytest.approx(0.9911, abs=5e-5) and ana / F * 1e3 == pytest.approx(0.3389, abs=5e-5)


def test_op_json_keeps_the_layer_geometry(resnet20):
    from hetsim.workload import Op

    op = resnet20.workload.op(SPLIT_LAYER)
    back = Op.from_dict(json.loads(json.dumps(op.to_dict())))
    assert back == op
    assert (back.gemm.kernel, back.gemm.out_spatial, back.gemm.stride) == ((3, 3), (8, 8), (2, 2))


def test_a_refused_baseline_says_why(plat):
    # the grouped layer of the test above: all-8bit (DIANA's baseline) refuses it, so the run has no speed-up;
    # the summary and the report say why instead of a bare "-"
    from hetsim.pipeline import run
    from hetsim.report.text import format_report

    ops = [conv("pw", 16, 512, 1, 2, index=0), conv("g", 512, 512, 3, 2, groups=2, index=1)]
    r = run(plat, Workload.from_ops("grouped", ops, [("pw", "g", 2048)]), mapper="min-cost")
    assert r.baseline is None and r.speedup is None
    assert r.summary["baseline_error"].startswith("all-8bit: layer 'g' (Conv, 512 output channels) needs 1,152.0 KiB")
    line = next(ln for ln in format_report(r).splitlines() if ln.lstrip().startswith("all-8bit"))
    assert "(no baseline: all-8bit: layer 'g' (Conv, 512 output channels)" in line
    assert len(line) < 220
    from hetsim.report.html import run_report_html

    assert "(no baseline: all-8bit: layer &#x27;g&#x27; (Conv, 512 output channels)" in run_report_html(r)
