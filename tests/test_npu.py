"""The ``npu`` device kind (hetsim/devices/npu.py), worked by hand, and platforms/cim-npu.yaml.

conftest's round-number platform with ``make_platform(npu=...)``: an NPU at 1 GHz with 4 int8 MACs/cycle,
1 GB/s (1 byte/ns) to its local memory and 1 KiB of resident weight memory, so with 8-bit elements

    T = op_overhead + max(macs / 4, n_in + n_out) ns

(roofline: compute-bound when ``macs / 4 > n_in + n_out``), a Conv of ``m_v x n_v`` weights needs ``m_v * n_v``
bytes of the weight memory, and a transfer of ``e`` elements to or from the NPU moves ``e`` bytes (1 ns each on
the 1 GB/s bus).
"""

from __future__ import annotations

import pytest
from conftest import NS, PLATFORMS, conv_op, diamond, host_op, make_platform, ns, yolov5n_path
from pydantic import ValidationError

from hetsim.analysis.metrics import device_table
from hetsim.check import check_schedule
from hetsim.costs import CostModel
from hetsim.errors import MappingError
from hetsim.mappers import get_mapper, make_schedule
from hetsim.platform import load_platform
from hetsim.schedule import Schedule
from hetsim.sim import list_schedule, simulate
from hetsim.workload import Workload


def _costs(ops, edges, **npu) -> CostModel:
    return CostModel(Workload.from_ops("t", ops, edges), make_platform(npu=npu))


# -------------------------------------------------------------------------------------------- latency


def test_compute_bound_and_memory_bound_latency():
    # c: 16 x 16 weights, 10 MVMs: 2560 MACs / 4 per ns = 640 ns > (100 + 50) bytes / 1 byte/ns = 150 ns
    # m: 4 x 4 weights, 1 MVM: 16 MACs / 4 = 4 ns < (3000 + 1000) bytes = 4000 ns: memory-bound
    c = conv_op("c", 16, 16, 10, n_in=100, n_out=50)
    m = conv_op("m", 4, 4, 1, n_in=3000, n_out=1000, index=1)
    costs = _costs([c, m], [], op_overhead_us=0.01)  # + 10 ns dispatch each
    assert costs.latency["c"]["npu"] == ns(10 + 640)
    assert costs.latency["m"]["npu"] == ns(10 + 4000)
    # the host (1 MAC/ns) runs both too: 2560 ns and 16 ns
    assert costs.latency["c"]["host"] == ns(2560) and costs.latency["m"]["host"] == ns(16)
    # an op without weights (a Relu) does not run on the NPU
    costs = _costs([host_op("r", 100)], [])
    assert set(costs.latency["r"]) == {"host"}


def test_macs_per_cycle_by_element_width():
    dev = make_platform(npu={"macs_per_cycle": {8: 4, 16: 2}}).devices["npu"]
    c = conv_op("c", 16, 16, 10, n_in=1, n_out=1)  # 2560 MACs, compute-bound at every width below
    assert dev.latency(c) == pytest.approx(640 * NS)  # 8-bit elements: 4 MACs/cycle
    # a width missing from the table uses the next wider one (4 bits -> the 8-bit rate) ...
    assert dev.model_copy(update={"element_bits": 4}).latency(c) == pytest.approx(640 * NS)
    # ... or the widest one when none is wider (32 bits -> the 16-bit rate, 2 MACs/cycle)
    assert dev.model_copy(update={"element_bits": 32}).latency(c) == pytest.approx(1280 * NS)


def test_bad_config_is_refused():
    with pytest.raises(ValidationError, match="macs_per_cycle must list at least one bit width"):
        make_platform(npu={"macs_per_cycle": {}})
    with pytest.raises(ValidationError, match="must be > 0"):
        make_platform(npu={"macs_per_cycle": {8: 0}})
    with pytest.raises(ValidationError, match="clock_mhz"):
        make_platform(npu={"clock_mhz": 0})


# ----------------------------------------------------------------------------------------- capacity


def test_resident_weight_memory_is_the_sum_of_the_weights():
    # five 16 x 16 Convs (256 B of int8 weights each) and a 1 KiB (1024 B) weight memory: four fit together
    ops = [conv_op(f"c{i}", 16, 16, 10, n_in=10, n_out=10, index=i) for i in range(5)]
    costs = _costs(ops, [])
    cap = costs.resident["npu"]
    assert (cap.name, cap.amount, cap.unit, cap.scope) == ("weight_memory", 1024, "B", "resident")
    assert costs.budget["npu"] == 1024
    assert all(costs.need[f"c{i}"]["npu"] == 256 for i in range(5))
    on_npu = {f"c{i}": "npu" for i in range(5)}
    with pytest.raises(MappingError, match="weight_memory exceeded"):
        make_schedule(costs, on_npu, "test")
    four = make_schedule(costs, {**on_npu, "c4": "host"}, "test")
    assert check_schedule(costs, four).ok
    # the checker names the device, the use and the capacity of a schedule over it
    bad = check_schedule(costs, Schedule("test", on_npu, {"host": [], "npu": [f"c{i}" for i in range(5)]}))
    assert "npu: 1,280 B of weight_memory used, 1,024 available" in bad.violations[0]
    # 4-bit weights take half the bytes (rounded up): 128 B each, all five fit
    costs4 = _costs(ops, [], element_bits=4)
    assert costs4.need["c0"]["npu"] == 128
    make_schedule(costs4, on_npu, "test")
    # every mapper keeps the weights within the memory
    for name in ("greedy", "heft", "cpsat"):
        s = get_mapper(name).map(costs)
        assert sum(costs.need[v]["npu"] for v, d in s.assignment.items() if d == "npu") <= 1024, name


# ---------------------------------------------------------------------------------------- transfers


def test_transfers_to_and_from_the_npu_use_its_element_bits():
    # host -> c -> host with fp32 tensors (4 bytes per element on the host side): the NPU end sets the wire
    # format (CPU-CIM ILP Eq. 4: b_elem * N_out with the accelerator's b_elem), so 100 elements move 100 bytes
    ops = [host_op("a", 100), conv_op("c", 16, 16, 10, n_in=100, n_out=50, index=1), host_op("d", 50, index=2)]
    wl = Workload.from_ops("t", ops, [("a", "c", 100), ("c", "d", 50)])
    for u, v in wl.graph.edges:
        wl.graph.edges[u, v]["bytes"] *= 4
    costs = CostModel(wl, make_platform(npu={}))
    assert costs.transfer_bytes("a", "c", "host", "npu") == 100
    assert costs.transfer_bytes("c", "d", "npu", "host") == 50
    assert costs.transfer_time("a", "c", "host", "npu") == ns(100)  # 1 GB/s bus
    assert costs.transfer_bytes("a", "c", "host", "host") == 0  # same device: nothing moves
    # a 4-bit NPU halves the wire format
    costs4 = CostModel(wl, make_platform(npu={"element_bits": 4}))
    assert costs4.transfer_bytes("a", "c", "host", "npu") == 50
    # NPU <-> CIM: both 8-bit, the destination's width (CPU-CIM ILP Eq. 4)
    assert costs.transfer_bytes("c", "d", "npu", "cim") == 50


# ------------------------------------------------------------------------------- serial device, energy


def test_diamond_on_the_npu_runs_one_op_at_a_time_and_pays_per_mac():
    """a -> {b, c} -> d with b and c on the NPU (conftest.diamond):

    b: 2560 MACs / 4 = 640 ns (> 150 bytes); c: 5120 / 4 = 1280 ns. a 0-100 on the host; a->b and a->c
    100 ns each, 100-200; b 200-840; c waits for b (one MAC array): 840-2120; b->d 840-890, c->d 2120-2170;
    d 2170-2270 ns.
    """
    costs = CostModel(diamond(), make_platform(npu={"energy_pj_per_mac": 2.0}))
    s = make_schedule(costs, {"a": "host", "b": "npu", "c": "npu", "d": "host"}, "test")
    assert s.order["npu"] == ["b", "c"]
    assert s.makespan_s == ns(2270)
    res = simulate(costs, s)
    assert res.start_s == {"a": ns(0), "b": ns(200), "c": ns(840), "d": ns(2170)}
    assert res.makespan_s == s.makespan_s
    assert list_schedule(costs, s.assignment, s.order)[2] == res.makespan_s
    assert check_schedule(costs, s).ok
    # energy: 4 W busy 640 + 1280 = 1920 ns, 0.2 W idle the other 350 ns, 2 pJ per MAC of 2560 + 5120 MACs
    row = device_table(costs, res).set_index("device").loc["npu"]
    assert row["busy_s"] == ns(1920)
    assert row["op_j"] == pytest.approx(2e-12 * 7680, rel=1e-12)
    assert row["active_j"] == pytest.approx(4.0 * 1920 * NS, rel=1e-9)
    assert row["idle_j"] == pytest.approx(0.2 * 350 * NS, rel=1e-9)
    assert row["energy_j"] == pytest.approx(4.0 * 1920 * NS + 0.2 * 350 * NS + 2e-12 * 7680, rel=1e-9)
    # the NPU order is the schedule's: c first runs 200-1480, then b 1480-2120, b->d 2120-2170, d 2170-2270
    s2 = make_schedule(costs, s.assignment, "test", order={"host": ["a", "d"], "npu": ["c", "b"]})
    assert simulate(costs, s2).start_s == {"a": ns(0), "b": ns(1480), "c": ns(200), "d": ns(2170)}


# ------------------------------------------------------------------------------ platforms/cim-npu.yaml


def test_cim_npu_platform_numbers():
    plat = load_platform(PLATFORMS / "cim-npu.yaml")
    assert list(plat.devices) == ["host", "cim", "npu"] and plat.host == "host"
    npu = plat.devices["npu"]
    assert npu.kind == "npu" and npu.serial
    assert npu.clock_mhz * 1e6 * npu.macs_per_cycle[8] == 256e9  # Ethos-U65-256 at 1 GHz: 256 GMAC/s
    assert npu.capacities()["weight_memory"].amount == 1 << 20  # 1 MiB
    assert set(plat.links["bus"].connects) == {"host", "cim", "npu"}
    # the host and the CIM are platforms/puma.yaml's
    puma = load_platform(PLATFORMS / "puma.yaml")
    for d in ("host", "cim"):
        assert plat.devices[d] == puma.devices[d], d
    assert plat.links["bus"].bandwidth_gb_s == puma.links["bus"].bandwidth_gb_s


@pytest.fixture(scope="module")
def yolo_cim_npu() -> CostModel:
    from hetsim.workload import load_onnx

    p = yolov5n_path()
    if p is None:
        pytest.skip("yolov5n.onnx not available")
    return CostModel(load_onnx(p), load_platform(PLATFORMS / "cim-npu.yaml"))


def test_yolov5n_on_cim_npu_is_proven_optimal_on_three_devices(yolo_cim_npu):
    """The default mapper (cpsat, default options: 30 s, 2 workers) proves the optimum on host + CIM + NPU
    (about 1 s: the decomposition at cut ops solves it, the NPU's weight memory relaxed per segment and checked
    on the whole), and it beats every heuristic."""
    costs = yolo_cim_npu
    s = get_mapper("cpsat").map(costs)
    assert s.stats["status"] == "optimal"
    assert s.stats["mip_gap"] <= 1e-4
    assert set(s.assignment.values()) == {"host", "cim", "npu"}
    assert check_schedule(costs, s).ok
    assert simulate(costs, s).makespan_s == pytest.approx(s.makespan_s, rel=1e-9)
    for dev, cap in costs.budget.items():
        assert sum(costs.need[v][dev] for v, d in s.assignment.items() if d == dev) <= cap
    others = {name: get_mapper(name).map(costs) for name in ("all-host", "greedy", "heft")}
    for name, o in others.items():
        assert simulate(costs, o).makespan_s == pytest.approx(o.makespan_s, rel=1e-9), name
        assert check_schedule(costs, o).ok, name
        assert s.makespan_s <= o.makespan_s * (1 + 1e-9), name
        assert s.stats["bound_s"] <= o.makespan_s, name
    assert set(others["heft"].assignment.values()) == {"host", "cim", "npu"}
    assert others["heft"].makespan_s < others["all-host"].makespan_s / 5
