"""Weight policies (hetsim/weights.py, hetsim/sim/weights.py, hetsim/mappers/_policy.py), worked by hand.

The platform is conftest's round-number one (host 1 MAC/ns; PUMA CIM of 16 x 16 crossbars, 100 ns per MVM,
1 GB/s = 1 byte/ns internal bus; NPU 4 MACs/ns, 1 KiB resident weight memory; 1 GB/s bus, all 8-bit) plus a DRAM
the NPU and the CIM read weights from:

    DRAM: 1 GB/s, 100 ns latency, 40 pJ/byte; the NPU's port 0.5 GB/s (2 ns/byte), +20 ns, +2 pJ/byte;
          the CIM's port: the DRAM's bandwidth, no extra latency or energy.

So a streamed op with ``b`` weight bytes on the NPU reads them in ``2 b + 120`` ns for ``42 b`` pJ.
"""

from __future__ import annotations

import itertools

import pytest
from conftest import NS, conv_op, make_platform, ns, random_setup, run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hetsim.analysis.metrics import device_table, op_table, summarize
from hetsim.check import check_schedule, require_feasible
from hetsim.costs import CostModel
from hetsim.errors import MappingError, ScheduleError
from hetsim.mappers import get_mapper
from hetsim.mappers._policy import build, op_options
from hetsim.platform import Platform
from hetsim.schedule import Schedule, WeightPolicy
from hetsim.sim import simulate
from hetsim.weights import weight_option_platform
from hetsim.workload import Workload

DRAM = {"size_kib": 1024, "bandwidth_gb_s": 1, "latency_ns": 100, "energy_pj_per_byte": 40,
        "weights_for": {"npu": {"bandwidth_gb_s": 0.5, "latency_ns": 20, "energy_pj_per_byte": 2}, "cim": {}}}


def platform(npu: dict | None = None, cim: dict | None = None, dram: dict | None = None,
             npu2: bool = False, host_cores: int = 1) -> Platform:
    data = make_platform(npu=npu or {}, host_cores=host_cores).model_dump(
        mode="json", exclude={"devices": {"__all__": {"name"}}})
    data["devices"]["cim"].update(cim or {})
    if npu2:
        data["devices"]["npu2"] = dict(data["devices"]["npu"])
        data["links"]["bus"]["connects"].append("npu2")
    mem = {**DRAM, **(dram or {})}
    if npu2:
        mem["weights_for"] = {**mem["weights_for"], "npu2": mem["weights_for"]["npu"]}
    data["memories"] = {"dram": mem}
    for m in data["memories"].values():
        m.pop("name", None)
    for section in ("devices", "links"):
        for v in data[section].values():
            v.pop("name", None)
    return Platform.model_validate(data)


def one(op, **kw) -> CostModel:
    return CostModel(Workload.from_ops("t", [op], []), platform(**kw))


def test_streamed_layer_costs_bytes_over_bandwidth_plus_latency():
    c = conv_op("c", 16, 16, 10, n_in=100, n_out=50)  # 256 weight bytes; NPU compute 2560 / 4 = 640 ns
    costs = one(c)
    assert costs.latency["c"]["npu"] == ns(640)
    s = Schedule("t", {"c": "npu"}, policies={"c": WeightPolicy("streamed", "dram")})
    r = simulate(costs, s)
    read = 256 * 2 + 100 + 20  # bytes / port bandwidth + memory latency + port latency
    assert r.finish_s["c"] - r.start_s["c"] == ns(read + 640)  # fetched first, then computed
    tr = r.trace.set_index("phase")
    assert tr.loc["weights", "end_s"] - tr.loc["weights", "start_s"] == ns(read)
    # the read is also a row on the DRAM's own track (its port), at the same times
    assert (tr.loc["read", "device"], tr.loc["read", "kind"]) == ("dram", "memory")
    assert (tr.loc["read", "start_s"], tr.loc["read", "end_s"]) == (tr.loc["weights", "start_s"],
                                                                    tr.loc["weights", "end_s"])
    step = r.weights["c"]
    assert step.nbytes == 256 and step.read_j == pytest.approx(256 * 42e-12)
    ops = op_table(costs, s, r).set_index("op")
    assert ops.loc["c", "weight_policy"] == "streamed" and ops.loc["c", "weight_bytes"] == 256
    assert ops.loc["c", "weight_energy_j"] == pytest.approx(256 * 42e-12)
    dram = device_table(costs, r).set_index("device").loc["dram"]
    assert dram["bytes"] == 256 and dram["energy_j"] == pytest.approx(256 * 42e-12)
    summ = summarize(costs, s, r)
    assert summ["weights"]["memories"]["dram"]["bytes"] == 256
    assert summ["weights"]["policies"] == {"resident": 0, "streamed": 1, "reprogrammed": 0}
    # the streamed op keeps none of the NPU's weight memory
    assert summ["capacities"]["npu"]["used"] == 0
    # resident, the same op costs its compute only
    assert simulate(costs, Schedule("t", {"c": "npu"})).makespan_s == ns(640)


@pytest.mark.parametrize("n_v, expect_ns", [(16, 640), (64, 64 * 16 * 2 + 120)])
def test_double_buffered_stream_is_max_of_compute_and_transfer(n_v, expect_ns):
    # 16 x 16 weights, 10 MVMs: fetch 632 ns < compute 640 ns; 16 x 64, 10 MVMs ... compute 2560 ns < fetch
    c = conv_op("c", 16, n_v, 10 if n_v == 16 else 1, n_in=10, n_out=10)
    costs = one(c, npu={"double_buffered_weights": True, "weight_memory_kib": 4})
    compute = c.macs / 4
    fetch = 16 * n_v * 2 + 120
    assert expect_ns == max(compute, fetch)
    r = simulate(costs, Schedule("t", {"c": "npu"}, policies={"c": "streamed"}))
    assert r.makespan_s == ns(expect_ns)
    assert set(r.trace["phase"]) == {"", "read"}  # the compute row, and the read under it on the DRAM's track
    (read,) = r.trace[r.trace["phase"] == "read"].itertuples()
    assert read.device == "dram" and read.end_s - read.start_s == ns(fetch)


def test_reprogramming_a_layer_bigger_than_the_array():
    # CIM: 1 core of 4 crossbars of 16 x 16, 2 of them time-shared (resident budget 2). The layer: 40 x 20
    # weights = ceil(40/16) * ceil(20/16) = 6 crossbars, more than the whole array (4).
    cim = {"reprogram_crossbars": 2, "t_write_row_ns": 1, "write_energy_pj_per_cell": 10, "endurance_writes": 1e6}
    c = conv_op("c", 40, 20, 5, n_in=10, n_out=10)
    costs = one(c, cim=cim, npu={"supported_ops": ["Gemm"]})  # the NPU runs no Conv here
    assert costs.budget["cim"] == 2 and costs.need["c"]["cim"] == 6
    res = Schedule("t", {"c": "cim"})
    with pytest.raises(ScheduleError, match="6 crossbars used, 2 available"):
        require_feasible(costs, res)
    s = Schedule("t", {"c": "cim"}, policies={"c": "reprogrammed"})
    r = simulate(costs, s)
    passes = 3                       # ceil(6 / 2)
    # a crossbar row holds one input's weights: the 20 inputs (rows), each over ceil(40 / 16) = 3 column blocks
    row_writes = 20 * 3
    cells = 40 * 20
    read = 800 + 100                 # 800 bytes at 1 byte/ns from the DRAM + its latency (CIM port adds none)
    write = row_writes * 1           # 1 ns per row
    compute = 10 + passes * 5 * 100 + 10  # load + every pass's 5 MVMs + store
    assert r.makespan_s == ns(read + write + compute)
    st = r.weights["c"]
    assert (st.passes, st.row_writes, st.cells) == (passes, row_writes, cells)
    assert st.write_j == pytest.approx(cells * 10e-12)
    rep = summarize(costs, s, r)["weights"]["reprogramming"]["cim"]
    assert rep["writes_per_cell"] == 3 and rep["lifetime_inferences"] == pytest.approx(1e6 / 3)
    assert rep["cells_written"] == 800 and rep["write_s"] == pytest.approx(60 * NS)
    # the cell writes are the CIM's energy; the read the DRAM's
    dev = device_table(costs, r).set_index("device")
    assert dev.loc["dram", "energy_j"] == pytest.approx(800 * 40e-12)
    assert dev.loc["cim", "op_j"] == pytest.approx(8e-9)
    # the host would take 40*20*5 = 4000 ns; reprogrammed 2480 ns: every mapper runs it on the CIM
    assert read + write + compute < 4000
    for name in ("greedy", "heft", "cpsat"):
        m = get_mapper(name).map(costs)
        assert (m.device_of("c"), m.policy_of("c")) == ("cim", "reprogrammed"), name
        assert check_schedule(costs, m).ok


def test_checker_knows_every_policy():
    c = conv_op("c", 16, 16, 10, n_in=10, n_out=10)
    d = conv_op("d", 16, 16, 10, n_in=10, n_out=10, index=1)
    wl = Workload.from_ops("t", [c, d], [])
    costs = CostModel(wl, platform(cim={"reprogram_crossbars": 2, "t_write_row_ns": 1}))
    bad = {
        "cannot be streamed": Schedule("t", {"c": "host", "d": "host"}, policies={"c": "streamed"}),
        "cannot be reprogrammed": Schedule("t", {"c": "npu", "d": "host"}, policies={"c": "reprogrammed"}),
        "cannot reach": Schedule("t", {"c": "npu", "d": "host"}, policies={"c": WeightPolicy("streamed", "sram")}),
        "may overlap on the time-shared crossbars": Schedule("t", {"c": "cim", "d": "cim"},
                                                             policies={"c": "reprogrammed", "d": "reprogrammed"}),
    }
    for needle, s in bad.items():
        with pytest.raises(ScheduleError, match=needle):
            require_feasible(costs, s)
    ok = Schedule("t", {"c": "cim", "d": "cim"}, policies={"c": "reprogrammed", "d": "reprogrammed"},
                  after={"d": ["c"]})
    require_feasible(costs, ok)
    r = simulate(costs, ok)
    assert r.start_s["d"] == pytest.approx(r.finish_s["c"])
    # one capacity row per memory: a DRAM of 0.25 KiB holds one op's 256 bytes, not two
    small = CostModel(wl, platform(dram={"size_kib": 0.25}))
    both = Schedule("t", {"c": "npu", "d": "npu"}, policies={"c": "streamed", "d": "streamed"})
    with pytest.raises(ScheduleError, match="memory dram: 512 B of streamed/reprogrammed weights, 256 B"):
        require_feasible(small, both)


def test_schedule_json_round_trip_and_old_files_load_resident():
    s = Schedule("t", {"c": "npu", "d": "cim"}, policies={"c": WeightPolicy("streamed", "dram"),
                                                         "d": "reprogrammed"})
    back = Schedule.from_json(s.to_json())
    assert back.policies == s.policies and back.policy_of("d") == "reprogrammed"
    old = Schedule("t", {"c": "npu"}).to_dict()
    assert "policies" not in old  # schedules without policies are written as before
    assert Schedule.from_dict(old).policy_of("c") == "resident"


def test_memory_contention_serialises_two_streamed_reads_on_one_port():
    a = conv_op("a", 16, 16, 10, n_in=10, n_out=10)
    b = conv_op("b", 16, 16, 10, n_in=10, n_out=10, index=1)
    costs = CostModel(Workload.from_ops("t", [a, b], []), platform(npu2=True))
    s = Schedule("t", {"a": "npu", "b": "npu2"}, policies={"a": "streamed", "b": "streamed"})
    read, compute = 256 * 2 + 120, 640
    free = simulate(costs, s)
    assert free.finish_s["a"] == ns(read + compute) and free.finish_s["b"] == ns(read + compute)
    busy = simulate(costs, s, contention={"memory"})
    ends = sorted([busy.finish_s["a"], busy.finish_s["b"]])
    assert ends[0] == ns(read + compute) and ends[1] == ns(2 * read + compute)  # the second read waits


def _chain(n_ops: int = 3):
    ops = [conv_op(f"c{i}", 16, 32, 4, n_in=64, n_out=64, index=i) for i in range(n_ops)]
    return Workload.from_ops("chain", ops, [(f"c{i}", f"c{i + 1}", 64) for i in range(n_ops - 1)])


def test_cpsat_device_and_policy_choice_is_optimal_by_brute_force():
    # four 16 x 32 layers (512 bytes each) in a chain; the NPU's 1 KiB holds two resident, the CIM's 2 resident
    # crossbars one (each layer needs 2), its 2 time-shared crossbars run any layer reprogrammed. Per layer:
    # host 2048 ns; NPU 512 ns resident, 512 + 1144 streamed; CIM 528 ns resident, 612 + 64 + 528 reprogrammed
    cim = {"reprogram_crossbars": 2, "t_write_row_ns": 2, "crossbars_per_core": 4}
    costs = CostModel(_chain(4), platform(cim=cim))
    opts = op_options(costs)
    topo = costs.workload.topological_order()
    best = None
    for combo in itertools.product(*(opts[v] for v in topo)):
        assignment = {v: o[0] for v, o in zip(topo, combo, strict=True)}
        choice = dict(zip(topo, combo, strict=True))
        try:
            s = build(costs, assignment, choice, "brute", {}, keep_resident=False)
        except MappingError:  # a resident capacity exceeded
            continue
        if not check_schedule(costs, s).ok:
            continue
        ms = simulate(costs, s).makespan_s
        best = ms if best is None else min(best, ms)
    got = get_mapper("cpsat").map(costs)
    assert got.stats["status"] == "optimal"
    # four layers cannot all be resident on the accelerators (2 + 1 fit): the optimum streams or reprograms one
    assert any(got.policy_of(v) != "resident" for v in topo)
    ms = simulate(costs, got).makespan_s
    assert ms <= best * (1 + 1e-6)
    assert ms == pytest.approx(best, rel=1e-6)
    # the heuristics are feasible and never better than the optimum
    for name in ("greedy", "heft"):
        h = get_mapper(name).map(costs)
        assert check_schedule(costs, h).ok and simulate(costs, h).makespan_s >= best * (1 - 1e-9)


def test_no_memory_no_policy_options():
    c = conv_op("c", 16, 16, 10, n_in=10, n_out=10)
    costs = CostModel(Workload.from_ops("t", [c], []), make_platform(npu={}))
    assert not weight_option_platform(costs.platform)
    for name in ("greedy", "heft", "cpsat"):
        s = get_mapper(name).map(costs)
        assert s.policies == {} and "policies" not in s.to_dict()
        assert "weights" not in summarize(costs, s, simulate(costs, s))
        assert "weight_policy" not in op_table(costs, s, simulate(costs, s)).columns


def test_a_dram_all_devices_reach_moves_activations_at_a_cost():
    # weights_for and activations_of do not make transfers free: only shared_by does
    p = platform()
    assert not p.shares_memory("host", "npu")
    assert p.activation_memory("npu") is None
    p2 = platform(dram={"activations_of": ["host", "npu"]})
    assert p2.activation_memory("npu") == ("dram", 1024 * 1024) and not p2.shares_memory("host", "npu")


def test_ilp_refuses_weight_policies(capsys, tmp_path):
    costs = one(conv_op("c", 16, 16, 10, n_in=10, n_out=10))
    with pytest.raises(MappingError, match="ilp: platform .* streamed/reprogrammed weights"):
        get_mapper("ilp").map(costs)
    code, _, err = run_cli(capsys, "map", "platforms/cim-npu-dram.yaml", "workloads/resnet20_cifar10.onnx",
                           "--mapper", "ilp", "-o", tmp_path / "s.json")
    assert code == 2 and "ilp: platform 'cim-npu-dram'" in err and "Traceback" not in err


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_dags_predicted_equals_replay_and_contention_only_delays(data):
    """On random DAGs with a DRAM added (conftest's random_setup): the heuristics' schedules pass the checker,
    the contention-free replay reproduces their predicted times, and memory-port contention never makes the run
    shorter."""
    setup = data.draw(random_setup(contention=False, npu=True))
    plat = setup["platform"].model_dump(mode="json", exclude_unset=True)
    plat["memories"] = {"dram": {**DRAM, "size_kib": data.draw(st.sampled_from([0.5, 1024]))}}
    plat["devices"]["cim"].update({"reprogram_crossbars": 1, "t_write_row_ns": data.draw(st.sampled_from([1, 50]))})
    plat["devices"]["npu"]["double_buffered_weights"] = data.draw(st.booleans())
    for section in ("devices", "links"):
        for v in plat[section].values():
            v.pop("name", None)
    costs = CostModel(setup["costs"].workload, Platform.model_validate(plat))
    for name in ("greedy", "heft"):
        s = get_mapper(name).map(costs)
        assert check_schedule(costs, s).ok, name
        r = simulate(costs, s)
        assert r.makespan_s == pytest.approx(s.makespan_s, rel=1e-9, abs=1e-18)
        for v, st_ in r.weights.items():
            assert r.finish_s[v] - r.start_s[v] == pytest.approx(st_.latency_s, rel=1e-9, abs=1e-18)
        assert simulate(costs, s, contention={"memory"}).makespan_s >= r.makespan_s * (1 - 1e-12)


def test_requests_take_turns_on_the_time_shared_crossbars():
    """In a scenario (several requests on one Hardware), a reprogrammed op holds its CIM's time-shared crossbars
    from its read to its end: the second request's op starts when the first's ends."""
    import simpy

    from hetsim.sim.dispatch import get_dispatch
    from hetsim.sim.engine import Hardware, Plan, Request

    c = conv_op("c", 40, 20, 5, n_in=10, n_out=10)
    costs = one(c, cim={"reprogram_crossbars": 2, "t_write_row_ns": 1}, npu={"supported_ops": ["Gemm"]})
    plan = Plan(costs, Schedule("t", {"c": "cim"}, policies={"c": "reprogrammed"}), frozenset())
    env = simpy.Environment()
    hw = Hardware(env, plan.costs, frozenset(), get_dispatch(None))
    hw.exclusive_ops = True
    reqs = [Request(plan, hw, seq=i) for i in range(2)]
    for r in reqs:
        r.start_all()
    env.run()
    one_op = 900 + 60 + 1520  # read + write + compute (test_reprogramming_a_layer_bigger_than_the_array)
    assert reqs[0].finish["c"] == ns(one_op)
    assert reqs[1].start["c"] == ns(one_op) and reqs[1].finish["c"] == ns(2 * one_op)


def test_reprogramming_writes_one_word_line_per_input_on_a_non_square_crossbar():
    """A layer that fills exactly one 8 x 4 crossbar (M = 8 outputs, N = 4 inputs: Eq. 1's names) is written in
    its N = 4 word lines, one per input, each holding that input's 8 weights; 16 outputs by 4 inputs need two
    crossbars side by side: 4 inputs x 2 output blocks = 8 lines. (The transposed count gave 8 and 4.)"""
    from hetsim.devices.puma import PumaDevice

    cim = PumaDevice(crossbar_rows=8, crossbar_cols=4, crossbars=4, crossbars_per_core=4, reprogram_crossbars=2,
                     t_write_row_ns=1, t_mvm_ns=10, internal_bandwidth_gb_s=1, element_bits=8)
    one = conv_op("one", 8, 4, 3, n_in=4, n_out=8)
    two = conv_op("two", 16, 4, 3, n_in=4, n_out=16)
    assert cim.n_crossbar(one) == 1 and cim.n_crossbar(two) == 2
    assert cim.reprogramming(one).row_writes == 4
    assert cim.reprogramming(two).row_writes == 8


# ---------------------------------------------------------------------------------------- tied weights


def _tied_model(tmp_path, tied: bool = True):
    """X[1,16] -> MatMul(W) -> Relu -> MatMul(W or V) -> Y: with ``tied``, both MatMuls read the one 16 x 16
    initializer W (256 float elements; 256 bytes at the NPU's 8 bits)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.eye(16, dtype=np.float32), "W")
    v = numpy_helper.from_array(np.eye(16, dtype=np.float32), "V")
    g = helper.make_graph(
        [helper.make_node("MatMul", ["X", "W"], ["h"], name="mm1"), helper.make_node("Relu", ["h"], ["r"], name="relu"),
         helper.make_node("MatMul", ["r", "W" if tied else "V"], ["Y"], name="mm2")],
        "tied", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 16])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 16])], [w] if tied else [w, v])
    p = tmp_path / ("tied.onnx" if tied else "untied.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), p)
    return p


@pytest.mark.parametrize("tied", [True, False])
def test_a_tied_initializer_streamed_by_two_ops_is_held_once(tmp_path, tied):
    """Two ops reading one initializer (tied weights) from the DRAM counted its 256 bytes twice in the memory's
    held weights (the capacity check, the footprint's room for activations, summary used_b); it is held once and
    read twice. Untied (two initializers), both count."""
    from hetsim.analysis.footprint import held_weights
    from hetsim.weights import memory_use
    from hetsim.workload import load_workload

    wl = load_workload(_tied_model(tmp_path, tied))
    assert wl.op("mm1").weight_tensors == (("W", 256),)
    assert wl.op("mm2").weight_tensors == ((("W" if tied else "V"), 256),)
    costs = CostModel(wl, platform(npu={"supported_ops": ["MatMul"]}))
    s = Schedule(wl.name, {"mm1": "npu", "relu": "host", "mm2": "npu"},
                 policies={v: WeightPolicy("streamed", "dram") for v in ("mm1", "mm2")})
    steps = costs.for_schedule(s).weight_steps
    assert [st.nbytes for st in steps.values()] == [256, 256]
    held = 256 if tied else 512
    assert memory_use(costs, steps) == {"dram": held}
    assert held_weights(costs, s) == {"dram": held}
    r = simulate(costs, s)
    summ = summarize(costs, s, r)["weights"]["memories"]["dram"]
    assert (summ["used_b"], summ["bytes"]) == (held, 512)  # held once, read by each op per inference
    # on a DRAM of 384 bytes the tied pair fits, the untied does not
    small = CostModel(wl, platform(npu={"supported_ops": ["MatMul"]}, dram={"size_kib": 0.375}))
    viol = small.for_schedule(s).policy_violations
    assert viol == ([] if tied else ["memory dram: 512 B of streamed/reprogrammed weights, 384 B available"])


def test_a_tied_initializer_on_two_memories_is_held_in_each(tmp_path):
    """The readers of a tied weight on devices reading different memories hold a copy each (docstring of
    memory_use): NPU from dram, NPU2 from its own sram."""
    from hetsim.weights import memory_use
    from hetsim.workload import load_workload

    wl = load_workload(_tied_model(tmp_path))
    plat = platform(npu={"supported_ops": ["MatMul"]}, npu2=True)
    data = plat.model_dump(mode="json", exclude_unset=True, exclude={"devices": {"__all__": {"name"}}})
    data["memories"]["dram"]["weights_for"].pop("npu2")
    data["memories"]["sram"] = {"size_kib": 1, "bandwidth_gb_s": 1, "weights_for": {"npu2": {}}}
    for m in data["memories"].values():
        m.pop("name", None)
    for sec in ("links",):
        for v in data[sec].values():
            v.pop("name", None)
    costs = CostModel(wl, Platform.model_validate(data))
    s = Schedule(wl.name, {"mm1": "npu", "relu": "host", "mm2": "npu2"},
                 policies={"mm1": WeightPolicy("streamed", "dram"), "mm2": WeightPolicy("streamed", "sram")})
    assert memory_use(costs, costs.for_schedule(s).weight_steps) == {"dram": 256, "sram": 256}
