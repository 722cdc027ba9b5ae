"""Tests of the latency models and the cost model (CPU-CIM ILP Sec. IV-A, Eq. 1-4) and of crossbar placement.

Every expected value is worked out by hand in the comment next to it.
"""

from __future__ import annotations

import pytest
from conftest import conv_op, host_op, make_platform, ns

from hetsim.costs import CostModel
from hetsim.devices import CpuDevice, PumaDevice
from hetsim.devices.puma import place_crossbars
from hetsim.errors import InputError, PlatformError, ScheduleError, UnsupportedOpError
from hetsim.platform import Platform
from hetsim.workload import GemmView, Op, Workload


def _puma(**kw) -> PumaDevice:
    base = {
        "name": "cim",
        "cores": 1,
        "crossbars_per_core": 100,
        "t_mvm_ns": 100,
        "internal_bandwidth_gb_s": 1,
        "element_bits": 8,
    }
    base.update(kw)
    return PumaDevice(**base)


def _cpu(**kw) -> CpuDevice:
    base = {
        "name": "host",
        "clock_ghz": 2,
        "macs_per_cycle": {8: 4, 32: 2},
        "elementwise_per_cycle": 4,
        "mem_bandwidth_gb_s": 1e12,
        "op_overhead_us": 0,
    }
    base.update(kw)
    return CpuDevice(**base)


# ------------------------------------------------------------------------------------------ Eq. 1


@pytest.mark.parametrize(
    ("m_v", "n_v", "groups", "expected"),
    [
        (256, 256, 1, 1),  # ceil(256/256) * ceil(256/256) = 1 * 1: an exact fit is one crossbar
        (257, 256, 1, 2),  # ceil(257/256) = 2 rows of crossbars
        (256, 257, 1, 2),  # ceil(257/256) = 2 columns of crossbars
        (257, 257, 1, 4),  # 2 * 2
        (1, 1, 1, 1),  # a tiny matrix still needs one crossbar
        (512, 768, 1, 6),  # 2 * 3
        (64, 576, 1, 3),  # ResNet-18 3x3 conv, 64 -> 64: ceil(64/256) * ceil(576/256) = 1 * 3
        (1, 9, 32, 32),  # depthwise 3x3 over 32 channels: 32 groups * (1 * 1) crossbars
        (300, 9, 4, 8),  # 4 groups * ceil(300/256)=2 * ceil(9/256)=1 = 8
    ],
)
def test_eq1_n_crossbar(m_v, n_v, groups, expected):
    g = GemmView(m_v=m_v, n_v=n_v, n_mvm=1, groups=groups)
    assert g.n_crossbar(256, 256) == expected


def test_eq1_rows_are_outputs_cols_are_inputs():
    # crossbar with M = 128 rows (outputs) and N = 64 columns (inputs)
    assert GemmView(m_v=128, n_v=64, n_mvm=1).n_crossbar(128, 64) == 1  # 1 * 1
    assert GemmView(m_v=64, n_v=128, n_mvm=1).n_crossbar(128, 64) == 2  # ceil(64/128)=1 * ceil(128/64)=2
    assert GemmView(m_v=200, n_v=100, n_mvm=1).n_crossbar(128, 64) == 4  # 2 * 2


def test_puma_n_crossbar_uses_device_dimensions_and_support():
    dev = _puma(crossbar_rows=128, crossbar_cols=64)
    conv = conv_op("c", 200, 100, 1, n_in=1, n_out=1)
    assert dev.n_crossbar(conv) == 4  # ceil(200/128) * ceil(100/64) = 2 * 2
    assert dev.n_crossbar(host_op("r", 10)) == 0  # Relu: not supported -> 0
    # a supported type without a constant weight (no GEMM view) is not supported either
    assert dev.n_crossbar(Op("mm", "MatMul", macs=100)) == 0
    assert not dev.supports(Op("mm", "MatMul", macs=100))
    # supported_ops is honoured
    only_gemm = _puma(supported_ops=["Gemm"])
    assert only_gemm.latency(conv) is None and only_gemm.phases(conv) is None


# ---------------------------------------------------------------------------------------- Eq. 2-3


def test_eq2_eq3_phases_and_latency():
    dev = _puma()  # t_mvm 100 ns, B_cim = 1 GB/s = 1 byte/ns, b_elem = 1 byte
    op = conv_op("c", 16, 16, 7, n_in=300, n_out=40)
    load, mvm, store = dev.phases(op)
    assert load == ns(300)  # 1 B * 300 / (1 B/ns)
    assert mvm == ns(700)  # N_mvm * t_mvm = 7 * 100
    assert store == ns(40)  # 1 B * 40 / (1 B/ns)
    assert dev.latency(op) == ns(1040)  # 300 + 700 + 40


def test_eq3_element_bits_and_bandwidth():
    dev = _puma(element_bits=16, internal_bandwidth_gb_s=4, t_mvm_ns=50)
    op = conv_op("c", 16, 16, 3, n_in=400, n_out=100)
    # b_elem = 2 bytes, B_cim = 4 bytes/ns: load = 2*400/4 = 200, mvm = 3*50 = 150, store = 2*100/4 = 50
    assert dev.phases(op) == (ns(200), ns(150), ns(50))
    assert dev.latency(op) == ns(400)


def test_eq2_mvm_time_independent_of_groups_and_crossbars():
    dev = _puma()
    small = conv_op("s", 1, 1, 5, n_in=10, n_out=10)
    big = conv_op("b", 1000, 1000, 5, n_in=10, n_out=10, groups=4)  # 4 * 4 * 4 = 64 crossbars
    assert dev.n_crossbar(big) == 64
    # T_mvm = 5 * 100 ns for both: crossbars (and groups) work in parallel
    assert dev.phases(small)[1] == dev.phases(big)[1] == ns(500)


# --------------------------------------------------------------------------------------- CPU roofline


def test_roofline_compute_bound_bitwidth_lookup():
    cpu = _cpu()  # 2 GHz, 4 MAC/cycle at 8 bit, 2 MAC/cycle at 32 bit
    assert cpu.latency(Op("a", "Conv", macs=8000, bits=8)) == ns(1000)  # 8000 / (2 * 4) ns
    assert cpu.latency(Op("a", "Conv", macs=8000, bits=32)) == ns(2000)  # 8000 / (2 * 2)
    # 16 bit is not listed: the next wider width (32) is used
    assert cpu.latency(Op("a", "Conv", macs=8000, bits=16)) == ns(2000)
    # 4 bit: the next wider listed width is 8
    assert cpu.latency(Op("a", "Conv", macs=8000, bits=4)) == ns(1000)


def test_roofline_memory_bound():
    cpu = _cpu(mem_bandwidth_gb_s=1)  # 1 byte/ns
    # bytes = in 3000 + out 1000 + weights 2000 * 8/8 = 6000 -> 6000 ns > compute 1000/8 = 125 ns
    op8 = Op("a", "Conv", macs=1000, bits=8, in_bytes=3000, out_bytes=1000, weight_elements=2000)
    assert cpu.latency(op8) == ns(6000)
    # 32-bit weights: 2000 * 4 = 8000 bytes -> 3000 + 1000 + 8000 = 12000 ns
    op32 = Op("a", "Conv", macs=1000, bits=32, in_bytes=3000, out_bytes=1000, weight_elements=2000)
    assert cpu.latency(op32) == ns(12000)


def test_roofline_elementwise_and_overhead():
    cpu = _cpu(op_overhead_us=3)
    # no MACs: n_out / (clock * elementwise_per_cycle) = 1000 / (2 * 4) = 125 ns, + 3 us overhead
    assert cpu.latency(Op("r", "Relu", n_out=1000)) == ns(3125)
    # a compute-bound GEMM also pays it: 8000 / 8 = 1000 ns + 3000 ns
    assert cpu.latency(Op("g", "Gemm", macs=8000, bits=8)) == ns(4000)


def test_cpu_rejects_bad_config():
    with pytest.raises(ValueError):
        _cpu(macs_per_cycle={})
    with pytest.raises(ValueError):
        _cpu(macs_per_cycle={8: 0})
    with pytest.raises(ValueError):
        _cpu(latency_model="table")  # no latency_table


# ------------------------------------------------------------------------------------ latency table


def _table_platform(csv_path) -> Platform:
    return make_platform(host_extra={"latency_model": "table", "latency_table": str(csv_path)})


def test_latency_table_with_roofline_fallback(tmp_path):
    csv = tmp_path / "lat.csv"
    csv.write_text("op,latency_s,note\n# measured with ORT\na,0.001,x\nb,2e-6,y\n")
    ops = [host_op("a", 100, 0), conv_op("b", 16, 16, 10, n_in=1, n_out=1, index=1), host_op("c", 700, 2)]
    wl = Workload.from_ops("t", ops, [("a", "b", 1), ("b", "c", 1)])
    costs = CostModel(wl, _table_platform(csv))
    assert costs.latency["a"]["host"] == pytest.approx(1e-3)  # from the table
    assert costs.latency["b"]["host"] == pytest.approx(2e-6)  # from the table (not the roofline 2560 ns)
    assert costs.latency["c"]["host"] == ns(700)  # not listed: roofline, n_out / 1 per ns
    assert costs.host_fallback_ops() == ["c"]
    # the CIM latency is not affected by the host's table: 1 + 1000 + 1
    assert costs.latency["b"]["cim"] == ns(1002)


def test_roofline_platform_has_no_fallback_ops():
    wl = Workload.from_ops("t", [host_op("a", 1)], [])
    assert CostModel(wl, make_platform()).host_fallback_ops() == []


@pytest.mark.parametrize(
    "content",
    ["op,time\na,1\n", "op,latency_s\na,fast\n", "op,latency_s\na,-1\n"],
    ids=["missing-column", "not-a-number", "negative"],
)
def test_latency_table_errors(tmp_path, content):
    csv = tmp_path / "lat.csv"
    csv.write_text(content)
    wl = Workload.from_ops("t", [host_op("a", 1)], [])
    with pytest.raises(PlatformError):
        CostModel(wl, _table_platform(csv))


def test_latency_table_error_names_the_file_line(tmp_path):
    csv = tmp_path / "lat.csv"
    csv.write_text("op,latency_s\n# comment\n# comment\na,fast\n")  # the bad value is on line 4
    wl = Workload.from_ops("t", [host_op("a", 1)], [])
    with pytest.raises(PlatformError, match=r"lat\.csv:4:"):
        CostModel(wl, _table_platform(csv))


def test_latency_table_missing_file(tmp_path):
    wl = Workload.from_ops("t", [host_op("a", 1)], [])
    with pytest.raises(PlatformError, match="does not exist"):
        CostModel(wl, _table_platform(tmp_path / "nope.csv"))


# --------------------------------------------------------------------------------------- Eq. 4


def _two_op(edge_elements=500, **plat):
    wl = Workload.from_ops(
        "t", [host_op("u", 10, 0), conv_op("v", 4, 4, 1, n_in=1, n_out=1, index=1)], [("u", "v", edge_elements)]
    )
    return CostModel(wl, make_platform(**plat))


def test_eq4_transfer_time_host_cim_both_ways():
    costs = _two_op(500)  # 8-bit CIM elements, 1 GB/s bus
    assert costs.transfer_bytes("u", "v", "host", "cim") == 500  # 1 B * 500 elements
    assert costs.transfer_time("u", "v", "host", "cim") == ns(500)  # 500 B / (1 B/ns)
    assert costs.transfer_time("u", "v", "cim", "host") == ns(500)  # the CIM end sets b_elem either way


def test_eq4_uses_cim_element_bits_and_link_latency():
    costs = _two_op(500, element_bits=16, link_gb_s=2, link_latency_ns=7)
    assert costs.transfer_bytes("u", "v", "host", "cim") == 1000  # 2 B * 500
    assert costs.transfer_time("u", "v", "host", "cim") == ns(507)  # 1000 B / (2 B/ns) + 7 ns fixed


def test_eq4_same_device_and_param_edges_cost_nothing():
    costs = _two_op(500, link_latency_ns=7)
    assert costs.transfer_bytes("u", "v", "host", "host") == 0
    assert costs.transfer_time("u", "v", "host", "host") == 0.0
    costs.workload.graph.edges["u", "v"]["param"] = True
    assert costs.transfer_bytes("u", "v", "host", "cim") == 0
    assert costs.transfer_time("u", "v", "host", "cim") == 0.0  # not even the fixed latency


def test_eq4_between_cpus_uses_tensor_bytes():
    plat = Platform.model_validate(
        {
            "host": "h1",
            "devices": {
                "h1": {"kind": "cpu", "clock_ghz": 1, "macs_per_cycle": {8: 1}, "mem_bandwidth_gb_s": 1},
                "h2": {"kind": "cpu", "clock_ghz": 1, "macs_per_cycle": {8: 1}, "mem_bandwidth_gb_s": 1},
            },
            "links": {"l": {"bandwidth_gb_s": 4, "connects": ["h1", "h2"]}},
        }
    )
    wl = Workload.from_ops("t", [host_op("u", 10, 0), host_op("v", 10, 1)], [("u", "v", 100)])
    wl.graph.edges["u", "v"]["bytes"] = 400  # 100 fp32 elements
    costs = CostModel(wl, plat)
    assert costs.transfer_bytes("u", "v", "h1", "h2") == 400  # neither end has element_bits: ONNX bytes
    assert costs.transfer_time("u", "v", "h1", "h2") == ns(100)  # 400 B / (4 B/ns)


def test_transfer_without_link_raises():
    plat = make_platform().model_dump(exclude={"devices": {"__all__": {"name"}}, "links": True})
    costs = _two_op(10)
    costs = CostModel(costs.workload, Platform.model_validate(plat))
    with pytest.raises(ScheduleError, match="no link"):
        costs.transfer_time("u", "v", "host", "cim")


def test_transfer_route_prices_every_edge_as_transfer_time(yolov5n_costs):
    """CostModel.transfer_route (a device pair's link and wire format, once per pair: what the replay's plan
    prices edges with) and edge_bytes_at give each edge of YOLOv5n on puma exactly transfer_time's seconds, for
    every ordered pair of devices (parameter edges and same-device pairs priced by transfer_time as 0)."""
    from hetsim.costs import edge_bytes_at

    costs = yolov5n_costs
    devs = list(costs.platform.devices)
    g = costs.workload.graph
    moved = 0
    for src in devs:
        for dst in devs:
            route = costs.transfer_route(src, dst)
            assert (route is None) == (src == dst or costs.platform.shares_memory(src, dst))
            for u, v, data in g.edges(data=True):
                want = costs.transfer_time(u, v, src, dst)
                if route is None or data.get("param") or u in costs.folded:
                    assert want == 0.0
                    continue
                link, bits = route
                assert link.transfer_time(edge_bytes_at(data, bits)) == want  # bit for bit
                moved += 1
    assert moved > 100


def test_transfer_route_without_link_raises():
    plat = make_platform().model_dump(exclude={"devices": {"__all__": {"name"}}, "links": True})
    costs = CostModel(_two_op(10).workload, Platform.model_validate(plat))
    assert costs.transfer_route("host", "host") is None
    with pytest.raises(ScheduleError, match="no link"):
        costs.transfer_route("host", "cim")


# ------------------------------------------------------------------------------ cost model tables


def test_cost_model_tables():
    costs = _two_op(10)
    assert costs.latency["u"] == {"host": ns(10)}  # Relu: host only, n_out ns
    # v: host 4*4*1 = 16 ns; CIM 1 + 100 + 1 = 102 ns
    assert costs.latency["v"] == {"host": ns(16), "cim": ns(102)}
    assert costs.phases["v"]["cim"] == (ns(1), ns(100), ns(1))
    assert costs.need["v"] == {"cim": 1}
    assert "u" not in costs.need and "u" not in costs.phases
    assert costs.supported("v", "cim") and not costs.supported("u", "cim")
    assert costs.host == "host"


def test_unsupported_op_error():
    # the host runs only Conv (supported_ops), the CIM only Conv/Gemm/MatMul: the Relus run nowhere
    plat = make_platform(host_extra={"supported_ops": ["Conv"]})
    ops = [conv_op("conv", 4, 4, 1, n_in=1, n_out=1, index=0)] + [host_op(f"r{i}", 1, i + 1) for i in range(7)]
    wl = Workload.from_ops("t", ops, [])
    with pytest.raises(UnsupportedOpError, match=r"r0 \(Relu\).*r4 \(Relu\) and 2 more") as exc:
        CostModel(wl, plat)  # 7 unsupported ops: 5 listed, "and 2 more"
    assert isinstance(exc.value, InputError)
    assert "conv" not in str(exc.value)


def test_unsupported_op_error_cim_only_platform():
    # Platform validation wants a CPU host when none is named; build a CIM-only platform directly
    plat = Platform.model_construct(name="cim-only", description="", host="cim", devices={"cim": _puma()}, links={})
    wl = Workload.from_ops("t", [conv_op("conv", 4, 4, 1, n_in=1, n_out=1), host_op("r", 1, 1)], [])
    with pytest.raises(UnsupportedOpError, match=r"r \(Relu\)"):
        CostModel(wl, plat)


def test_host_supported_ops_restriction():
    plat = make_platform(host_extra={"supported_ops": ["Relu"]})
    wl = Workload.from_ops("t", [host_op("r", 10), conv_op("c", 4, 4, 1, n_in=1, n_out=1, index=1)], [("r", "c", 1)])
    costs = CostModel(wl, plat)
    assert costs.latency["r"] == {"host": ns(10)}
    assert costs.latency["c"] == {"cim": ns(102)}  # 1 + 1 * 100 + 1; the host may not run a Conv
    assert costs.initial_assignment() == {"r": "host", "c": "cim"}


def test_host_fallback_ops_ignores_ops_the_host_cannot_run(tmp_path):
    csv = tmp_path / "lat.csv"
    csv.write_text("op,latency_s\nr,1e-6\n")
    plat = make_platform(host_extra={"supported_ops": ["Relu"], "latency_model": "table", "latency_table": str(csv)})
    wl = Workload.from_ops("t", [host_op("r", 10), conv_op("c", 4, 4, 1, n_in=1, n_out=1, index=1)], [])
    costs = CostModel(wl, plat)
    assert "host" not in costs.latency["c"]  # c has no host latency at all ...
    assert costs.host_fallback_ops() == []  # ... so none of it comes from the roofline fallback


# ------------------------------------------------------------------------------- crossbar placement


def _check_placement(demand, placement, cores, per_core):
    used = [0] * cores
    for op, parts in placement.items():
        assert sum(n for _, n in parts) == demand[op]
        for c, n in parts:
            used[c] += n
    assert all(u <= per_core for u in used)


def test_place_first_fit_decreasing():
    demand = {"a": 3, "b": 5, "c": 2, "d": 4}
    out = place_crossbars(demand, cores=2, crossbars_per_core=8)
    # decreasing: b5 -> core0 (3 left); d4 -> core0 too small -> core1 (4 left); a3 -> core0 (0 left);
    # c2 -> core0 full -> core1 (2 left)
    assert out == {"b": [(0, 5)], "d": [(1, 4)], "a": [(0, 3)], "c": [(1, 2)]}
    _check_placement(demand, out, 2, 8)


def test_place_op_larger_than_a_core():
    demand = {"big": 20, "s": 3}
    out = place_crossbars(demand, cores=4, crossbars_per_core=8)
    # big: whole cores 0 and 1 (16), remainder 4 first-fit on core 2; s3: core 2 has 4 left -> core 2
    assert out == {"big": [(0, 8), (1, 8), (2, 4)], "s": [(2, 3)]}
    _check_placement(demand, out, 4, 8)


def test_place_fragmented_leftovers():
    demand = {"a": 3, "b": 3, "c": 3, "d": 3}
    out = place_crossbars(demand, cores=3, crossbars_per_core=4)
    # a, b, c fill cores 0, 1, 2 to 3/4 each; d (3) fits no core: 1 + 1 + 1 from the leftovers
    assert out == {"a": [(0, 3)], "b": [(1, 3)], "c": [(2, 3)], "d": [(0, 1), (1, 1), (2, 1)]}
    _check_placement(demand, out, 3, 4)


def test_place_ties_follow_order_then_name():
    # equal demands: the order list decides who comes first, else the name
    assert place_crossbars({"x": 2, "y": 2}, cores=2, crossbars_per_core=2) == {"x": [(0, 2)], "y": [(1, 2)]}
    assert place_crossbars({"x": 2, "y": 2}, cores=2, crossbars_per_core=2, order=["y", "x"]) == {
        "y": [(0, 2)],
        "x": [(1, 2)],
    }


def test_place_zero_and_exact_capacity():
    out = place_crossbars({"z": 0, "a": 4, "b": 4}, cores=2, crossbars_per_core=4)
    assert out == {"a": [(0, 4)], "b": [(1, 4)], "z": []}  # 8 of 8 used: exactly full is fine


def test_place_over_capacity_raises():
    with pytest.raises(ValueError, match="9 crossbars requested, 8 available"):  # 5 + 4 > 2 * 4
        place_crossbars({"a": 5, "b": 4}, cores=2, crossbars_per_core=4)
