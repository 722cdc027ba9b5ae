"""Tests of the SimPy replay (hetsim.sim.engine.simulate), the analytic evaluator (list_schedule), the
schedule checks and JSON form, and the energy accounting of hetsim.analysis.metrics.

The diamond a -> {b, c} -> d of ``conftest.diamond`` is worked out by hand for every contention kind; random
DAGs (hypothesis) check the invariants that hold for any schedule.
"""

from __future__ import annotations

import pytest
from conftest import (
    NS,
    PLATFORMS,
    conv_op,
    critical_path_min,
    diamond,
    host_op,
    make_platform,
    max_concurrency,
    ns,
    random_setup,
    union_length,
)
from hypothesis import HealthCheck, given, settings

from hetsim.analysis.metrics import device_table, summarize
from hetsim.costs import CostModel
from hetsim.errors import InputError, ScheduleError
from hetsim.mappers import get_mapper, make_schedule
from hetsim.mappers.base import place
from hetsim.platform import Platform, load_platform
from hetsim.schedule import Schedule
from hetsim.sim import CONTENTION_KINDS, list_schedule, simulate
from hetsim.sim.engine import parse_contention
from hetsim.workload import Workload

PROPS = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _costs(**plat) -> CostModel:
    return CostModel(diamond(), make_platform(**plat))


def _rows(res) -> set[tuple]:
    """Trace rows as a set of (op, device, kind, phase, start ns, end ns), times rounded to 1e-6 ns."""
    return {
        (r.op, r.device, r.kind, r.phase, round(r.start_s / NS, 6), round(r.end_s / NS, 6))
        for r in res.trace.itertuples()
    }


def _offload_bc(costs: CostModel, placement=None) -> Schedule:
    s = make_schedule(costs, {"a": "host", "b": "cim", "c": "cim", "d": "host"}, "test")
    if placement is not None:
        s.placement = placement
    return s


# --------------------------------------------------------------------------------- diamond, by hand


def test_diamond_all_host_single_core():
    costs = _costs()
    s = get_mapper("all-host").map(costs)
    res = simulate(costs, s)
    # serial: a 0-100, b 100-2660, c 2660-7780, d 7780-7880
    assert res.makespan_s == ns(7880)
    assert _rows(res) == {
        ("a", "host", "compute", "", 0, 100),
        ("b", "host", "compute", "", 100, 2660),
        ("c", "host", "compute", "", 2660, 7780),
        ("d", "host", "compute", "", 7780, 7880),
    }
    for kinds in (set(), set(CONTENTION_KINDS)):  # contention touches no host-only schedule
        assert simulate(costs, s, kinds).finish_s == res.finish_s


def test_diamond_all_host_two_cores():
    costs = _costs(host_cores=2)
    res = simulate(costs, get_mapper("all-host").map(costs))
    # a 0-100; b 100-2660 and c 100-5220 on the two cores; d waits for c: 5220-5320
    assert res.start_s == {"a": ns(0), "b": ns(100), "c": ns(100), "d": ns(5220)}
    assert res.makespan_s == ns(5320)


# Offloading b and c. With every contention kind off:
#   a 0-100 (host); transfers a->b, a->c 100 elements = 100 ns each: 100-200 in parallel
#   b: load 100 ns 200-300, mvm 10*100 = 1000 ns 300-1300, store 50 ns 1300-1350
#   c: load 200-300, mvm 20*100 = 2000 ns 300-2300, store 2300-2350
#   b->d 50 ns 1350-1400, c->d 2350-2400; d 2400-2500  -> makespan 2500 ns
DIAMOND_FREE = {
    ("a", "host", "compute", "", 0, 100),
    ("a->b", "bus", "transfer", "", 100, 200),
    ("a->c", "bus", "transfer", "", 100, 200),
    ("b", "cim", "compute", "load", 200, 300),
    ("b", "cim", "compute", "mvm", 300, 1300),
    ("b", "cim", "compute", "store", 1300, 1350),
    ("c", "cim", "compute", "load", 200, 300),
    ("c", "cim", "compute", "mvm", 300, 2300),
    ("c", "cim", "compute", "store", 2300, 2350),
    ("b->d", "bus", "transfer", "", 1350, 1400),
    ("c->d", "bus", "transfer", "", 2350, 2400),
    ("d", "host", "compute", "", 2400, 2500),
}


def test_diamond_offload_no_contention():
    costs = _costs()
    s = _offload_bc(costs)
    assert s.placement == {"b": [(0, 1)], "c": [(0, 1)]}  # 1 crossbar each, first fit: both on core 0
    assert s.makespan_s == ns(2500)  # the mapper's own (list_schedule) prediction
    res = simulate(costs, s)
    assert res.makespan_s == ns(2500)
    assert res.start_s == {"a": ns(0), "b": ns(200), "c": ns(200), "d": ns(2400)}
    assert res.finish_s == {"a": ns(100), "b": ns(1350), "c": ns(2350), "d": ns(2500)}
    assert _rows(res) == DIAMOND_FREE
    assert len(res.trace) == 12  # one row per busy interval
    # the analytic evaluator agrees exactly
    start, finish, makespan = list_schedule(costs, s.assignment, s.order)
    assert (start, finish, makespan) == (res.start_s, res.finish_s, res.makespan_s)


def test_diamond_links_contention():
    costs = _costs()
    res = simulate(costs, _offload_bc(costs), {"links"})
    # one transfer at a time on the bus, FIFO in request order (consumers in topological order: b, c):
    #   a->b 100-200, a->c 200-300; b 200-1350 (load 200-300, mvm 300-1300, store 1300-1350)
    #   c 300-2450 (load 300-400, mvm 400-2400, store 2400-2450); b->d 1350-1400; c->d 2450-2500
    #   d 2500-2600 -> makespan 2600 > 2500 without contention
    assert res.makespan_s == ns(2600)
    rows = _rows(res)
    assert ("a->b", "bus", "transfer", "", 100, 200) in rows
    assert ("a->c", "bus", "transfer", "", 200, 300) in rows
    assert ("c", "cim", "compute", "mvm", 400, 2400) in rows
    assert ("c->d", "bus", "transfer", "", 2450, 2500) in rows
    assert res.start_s["d"] == ns(2500)


def test_diamond_cim_bus_contention():
    costs = _costs()
    res = simulate(costs, _offload_bc(costs), {"cim-bus"})
    # transfers in parallel (100-200); the internal bus takes one load/store at a time:
    #   b load 200-300, c load 300-400; b mvm 300-1300, c mvm 400-2400 (no core contention)
    #   b store 1300-1350, c store 2400-2450; b->d 1350-1400, c->d 2450-2500; d 2500-2600
    assert res.makespan_s == ns(2600)
    assert _rows(res) == {
        ("a", "host", "compute", "", 0, 100),
        ("a->b", "bus", "transfer", "", 100, 200),
        ("a->c", "bus", "transfer", "", 100, 200),
        ("b", "cim", "compute", "load", 200, 300),
        ("c", "cim", "compute", "load", 300, 400),
        ("b", "cim", "compute", "mvm", 300, 1300),
        ("c", "cim", "compute", "mvm", 400, 2400),
        ("b", "cim", "compute", "store", 1300, 1350),
        ("c", "cim", "compute", "store", 2400, 2450),
        ("b->d", "bus", "transfer", "", 1350, 1400),
        ("c->d", "bus", "transfer", "", 2450, 2500),
        ("d", "host", "compute", "", 2500, 2600),
    }
    assert res.start_s["c"] == ns(300)  # a CIM op starts when its load starts
    assert res.finish_s["c"] == ns(2450)


def test_diamond_cim_cores_same_core():
    costs = _costs()
    s = _offload_bc(costs)  # b and c both on core 0
    res = simulate(costs, s, {"cim-cores"})
    # loads 200-300 in parallel; b mvm 300-1300 holds core 0; c mvm waits: 1300-3300
    # b store 1300-1350, c store 3300-3350; c->d 3350-3400; d 3400-3500
    assert res.makespan_s == ns(3500)
    rows = _rows(res)
    assert ("b", "cim", "compute", "mvm", 300, 1300) in rows
    assert ("c", "cim", "compute", "load", 200, 300) in rows
    assert ("c", "cim", "compute", "mvm", 1300, 3300) in rows
    assert ("c", "cim", "compute", "store", 3300, 3350) in rows
    assert res.start_s["c"] == ns(200) and res.finish_s["c"] == ns(3350)


def test_diamond_cim_cores_different_cores():
    costs = _costs(cim_cores=2, crossbars_per_core=1)
    s = _offload_bc(costs)
    assert s.placement == {"b": [(0, 1)], "c": [(1, 1)]}  # equal demand, topological tie-break
    res = simulate(costs, s, {"cim-cores"})
    assert res.makespan_s == ns(2500)  # nothing shared: the contention-free times
    assert _rows(res) == DIAMOND_FREE


def _wide_b(wl):
    """The diamond with b's weights twice as tall (M_v = 32: 2 crossbars of 16x16, Eq. 1); b's CIM latency
    is unchanged (it depends on N_in, N_mvm and N_out only), so the times below still hold."""
    wl.graph.nodes["b"]["op"] = conv_op("b", 32, 16, 10, n_in=100, n_out=50, index=1)
    return wl


def test_diamond_cim_cores_spanning_op_needs_all_its_cores():
    costs = CostModel(_wide_b(diamond()), make_platform(cim_cores=2, crossbars_per_core=2))
    s = _offload_bc(costs, placement={"b": [(0, 1), (1, 1)], "c": [(1, 1)]})
    res = simulate(costs, s, {"cim-cores"})
    # b spans cores 0 and 1, c sits on core 1: their MVMs serialise. Both loads end at 300, so which MVM
    # goes first is a tie; either way: 300-1300 + 1300-3300 (b first) or 300-2300 + 2300-3300 (c first),
    # the later store ends at 3350, its transfer to d at 3400, d 3400-3500.
    assert res.makespan_s == ns(3500)
    mvm = res.trace[res.trace.phase == "mvm"]
    assert max_concurrency(zip(mvm.start_s, mvm.end_s, strict=True)) == 1


def test_cim_cores_spanning_op_no_tie():
    # as the diamond, but a->c carries 150 elements: a->c 100-250, c load 250-350, so b (load 200-300)
    # asks for its cores first: b mvm 300-1300 on cores 0+1; c (core 1) mvm waits: 1300-3300;
    # c store 3300-3350, c->d 3350-3400, d 3400-3500.
    wl = _wide_b(diamond())
    wl.graph.edges["a", "c"]["elements"] = wl.graph.edges["a", "c"]["bytes"] = 150
    costs = CostModel(wl, make_platform(cim_cores=2, crossbars_per_core=2))
    s = _offload_bc(costs, placement={"b": [(0, 1), (1, 1)], "c": [(1, 1)]})
    # without contention: c load 250-350, mvm 350-2350, store 2350-2400, c->d 2400-2450, d 2450-2550
    assert simulate(costs, s).makespan_s == ns(2550)
    res = simulate(costs, s, {"cim-cores"})
    rows = _rows(res)
    assert ("b", "cim", "compute", "mvm", 300, 1300) in rows
    assert ("c", "cim", "compute", "load", 250, 350) in rows
    assert ("c", "cim", "compute", "mvm", 1300, 3300) in rows
    assert res.makespan_s == ns(3500)
    # on different cores (b on core 0 only) nothing is shared: back to 2550
    s2 = _offload_bc(costs, placement={"b": [(0, 2)], "c": [(1, 1)]})
    assert simulate(costs, s2, {"cim-cores"}).makespan_s == ns(2550)


def test_diamond_all_contention():
    costs = _costs()
    res = simulate(costs, _offload_bc(costs), set(CONTENTION_KINDS))
    # a->b 100-200, a->c 200-300 (link); b load 200-300, c load 300-400 (bus); b mvm 300-1300,
    # c mvm 1300-3300 (core 0); b store 1300-1350, c store 3300-3350; b->d 1350-1400, c->d 3350-3400;
    # d 3400-3500
    assert res.makespan_s == ns(3500)
    rows = _rows(res)
    assert ("a->c", "bus", "transfer", "", 200, 300) in rows
    assert ("c", "cim", "compute", "load", 300, 400) in rows
    assert ("c", "cim", "compute", "mvm", 1300, 3300) in rows
    assert ("d", "host", "compute", "", 3400, 3500) in rows
    assert res.contention == frozenset(CONTENTION_KINDS)


def test_diamond_param_edge_moves_nothing():
    wl = diamond()
    wl.graph.edges["a", "b"]["param"] = True
    costs = CostModel(wl, make_platform())
    res = simulate(costs, _offload_bc(costs), {"links"})
    # a->b is a parameter edge: no transfer, b loads at 100; a->c 100-200 alone on the bus
    #   b 100-1250 (100 + 1000 + 50), b->d 1250-1300; c 200-2350, c->d 2350-2400; d 2400-2500
    assert res.start_s["b"] == ns(100)
    assert not any(r.op == "a->b" for r in res.trace.itertuples())
    assert res.makespan_s == ns(2500)


# ------------------------------------------------------------------------------------ energy, by hand


def test_energy_diamond_offload():
    costs = CostModel(diamond(), make_platform(pj_per_byte=1000))
    s = _offload_bc(costs)
    res = simulate(costs, s)
    t = device_table(costs, res).set_index("device")
    # makespan 2500 ns.
    # host (2 W / 1 W): busy a + d = 200 ns -> 2*200 + 1*(2500-200) = 400 + 2300 = 2700 nJ
    assert t.loc["host", "busy_s"] == ns(200)
    assert t.loc["host", "energy_j"] == ns(2700)
    assert t.loc["host", "utilisation"] == pytest.approx(200 / 2500)
    # cim (10 W / 0.5 W): busy = union [200,1350] u [200,2350] = 2150 ns -> 21500 + 0.5*350 = 21675 nJ
    assert t.loc["cim", "busy_s"] == ns(2150)
    assert t.loc["cim", "energy_j"] == ns(21675)
    # bus (1 W / 0 W, 1000 pJ/B): busy = union of [100,200] (twice), [1350,1400], [2350,2400] = 200 ns
    #   -> 200 nJ active; bytes 100 + 100 + 50 + 50 = 300 -> 300 * 1000 pJ = 300 nJ
    assert t.loc["bus", "busy_s"] == ns(200)
    assert t.loc["bus", "bytes"] == 300
    assert t.loc["bus", "transfer_j"] == ns(300)
    assert t.loc["bus", "energy_j"] == ns(500)
    assert t.loc["bus", "ops"] == 4
    summ = summarize(costs, s, res)
    assert summ["energy_j"] == ns(2700 + 21675 + 500)  # 24875 nJ
    assert summ["crossbars"] == {"cim": {"used": 2, "available": 4}}
    assert summ["ops_offloaded"]["count"] == 2


def test_energy_two_core_host_counts_core_seconds():
    costs = _costs(host_cores=2)
    res = simulate(costs, get_mapper("all-host").map(costs))
    t = device_table(costs, res).set_index("device")
    # makespan 5320 ns; busy = 100 + 2560 + 5120 + 100 = 7880 core-ns; idle = 2*5320 - 7880 = 2760
    #   -> 2 W * 7880 + 1 W * 2760 = 18520 nJ
    assert t.loc["host", "units"] == 2
    assert t.loc["host", "busy_s"] == ns(7880)
    assert t.loc["host", "energy_j"] == ns(18520)
    # cim idle the whole time: 0.5 W * 5320 ns = 2660 nJ; the bus has idle_w 0
    assert t.loc["cim", "energy_j"] == ns(2660)
    assert t.loc["bus", "energy_j"] == 0


# ---------------------------------------------------------------------------- real model: yolov5n


def test_yolov5n_replay_equals_list_schedule(yolov5n_costs):
    costs = yolov5n_costs
    s = get_mapper("greedy").map(costs)
    res = simulate(costs, s)
    start, finish, makespan = list_schedule(costs, s.assignment, s.order)
    assert res.start_s == start
    assert res.finish_s == finish
    assert res.makespan_s == makespan == s.makespan_s
    assert any(d == "cim" for d in s.assignment.values())
    # with contention the replay still runs every op
    res_c = simulate(costs, s, set(CONTENTION_KINDS))
    assert set(res_c.finish_s) == set(costs.workload.ops)


def test_replay_leaves_the_collector_nothing_of_its_size():
    """simulate runs with the garbage collector off and frees its plan and request by reference counting before
    switching it back on: no collector pass inside the call (one walked every object of the plan when they
    were freed after it: 7-8 % of a 10k-op replay), and the cyclic garbage one replay leaves (SimPy's
    Environment, the contended ports) does not grow with the graph."""
    import gc

    from hetsim.workload.synthetic import layered_dag

    plat = load_platform(PLATFORMS / "puma.yaml")
    passes = []

    def count(phase, _info):
        if phase == "start":
            passes.append(1)

    left = {}
    for n in (100, 2000):
        costs = CostModel(layered_dag(n, seed=1), plat)
        s = get_mapper("heft").map(costs)
        assert any(d == "cim" for d in s.assignment.values())
        for kinds in (frozenset(), frozenset(CONTENTION_KINDS)):
            gc.collect()
            gc.callbacks.append(count)
            try:
                res = simulate(costs, s, kinds)
            finally:
                gc.callbacks.remove(count)
            assert gc.isenabled()
            assert not passes, f"{n} ops {sorted(kinds)}: {len(passes)} collector pass(es) inside simulate"
            assert len(res.finish_s) == n
            gc.disable()
            try:
                gc.collect()
                simulate(costs, s, kinds)
                left[n, kinds] = gc.collect()  # the unreachable cycles one replay left
            finally:
                gc.enable()
    for kinds in (frozenset(), frozenset(CONTENTION_KINDS)):
        assert left[2000, kinds] == left[100, kinds] < 100, left


# ----------------------------------------------------------------------------------- schedule errors


def _both(costs, assignment, order=None):
    """list_schedule and simulate must both reject the schedule with ScheduleError."""
    with pytest.raises(ScheduleError) as e1:
        list_schedule(costs, assignment, order)
    sched = Schedule("test", assignment, dict(order or {}))
    with pytest.raises(ScheduleError) as e2:
        simulate(costs, sched)
    return str(e1.value), str(e2.value)


def test_schedule_error_unassigned_op():
    m1, m2 = _both(_costs(), {"a": "host", "b": "host", "c": "host"})
    assert "'d'" in m1 and "'d'" in m2


def test_schedule_error_unsupported_device():
    m1, _ = _both(_costs(), {"a": "cim", "b": "host", "c": "host", "d": "host"})  # Relu on the CIM
    assert "'a'" in m1 and "cannot run" in m1


def test_schedule_error_unknown_device_and_unknown_op():
    _both(_costs(), {"a": "gpu", "b": "host", "c": "host", "d": "host"})
    _both(_costs(), {"a": "host", "b": "host", "c": "host", "d": "host", "zz": "host"})


def test_schedule_error_order_contradicts_dependencies():
    host = {v: "host" for v in "abcd"}
    _both(_costs(), host, {"host": ["b", "a", "c", "d"]})  # b needs a's output but is ordered first
    _both(_costs(host_cores=2), host, {"host": ["a", "d", "b", "c"]})  # d before its inputs, 2 cores


def test_schedule_error_order_not_matching_assignment():
    host = {v: "host" for v in "abcd"}
    _both(_costs(), host, {"host": ["a", "b", "c"]})  # d missing
    _both(_costs(), host, {"host": ["a", "b", "b", "c", "d"]})  # b twice


def test_schedule_error_cim_cores_needs_placement():
    costs = _costs()
    s = _offload_bc(costs, placement={"b": [(0, 1)]})  # c has none
    with pytest.raises(ScheduleError, match="'c'"):
        simulate(costs, s, {"cim-cores"})
    s = _offload_bc(costs, placement={"b": [(0, 1)], "c": [(5, 1)]})  # the CIM has 1 core
    with pytest.raises(ScheduleError):
        simulate(costs, s, {"cim-cores"})
    with pytest.raises(ScheduleError, match="core 5"):  # a placement naming a missing core is nonsense even when
        simulate(costs, s)                               # cim-cores is off: the one checker refuses it
    s = _offload_bc(costs, placement={"b": [(0, 1)]})
    assert simulate(costs, s).makespan_s == ns(2500)  # a missing placement is not needed without cim-cores


def test_schedule_error_no_link_between_devices():
    plat = make_platform().model_dump(exclude={"devices": {"__all__": {"name"}}, "links": True})
    costs = CostModel(diamond(), Platform.model_validate(plat))
    m1, m2 = _both(costs, {"a": "host", "b": "cim", "c": "host", "d": "host"})
    assert "no link" in m1 and "no link" in m2
    # a parameter edge needs no link
    costs.workload.graph.edges["a", "b"]["param"] = True
    costs.workload.graph.edges["b", "d"]["param"] = True
    # the cost model of the graph with those edges: an op that exchanges no tensor may run on an unlinked device
    costs = CostModel(costs.workload, costs.platform)
    s = Schedule("t", {"a": "host", "b": "cim", "c": "host", "d": "host"}, {})
    # a 0-100; b on the CIM 100-1250 (no transfer); c on the host 100-5220; d 5220-5320
    res = simulate(costs, s)
    assert res.start_s["b"] == ns(100) and res.finish_s["b"] == ns(1250)
    assert res.makespan_s == ns(5320)


def test_unknown_contention_kind():
    costs = _costs()
    with pytest.raises(InputError, match="cim-bus"):
        simulate(costs, _offload_bc(costs), {"bus"})
    with pytest.raises(InputError, match="links, cim-bus, cim-cores"):
        parse_contention("links,nope")
    assert parse_contention("links, cim-bus") == {"links", "cim-bus"}
    assert parse_contention("all") == set(CONTENTION_KINDS)
    assert parse_contention("none") == parse_contention(None) == parse_contention("") == frozenset()


def test_list_schedule_default_order_is_topological():
    costs = _costs()
    host = {v: "host" for v in "abcd"}
    start, finish, makespan = list_schedule(costs, host)  # no order: topological (index) order
    assert start == {"a": ns(0), "b": ns(100), "c": ns(2660), "d": ns(7780)}
    assert makespan == ns(7880)
    # an explicit order is followed: c before b -> a 0-100, c 100-5220, b 5220-7780, d 7780-7880
    start, _, makespan = list_schedule(costs, host, {"host": ["a", "c", "b", "d"]})
    assert start["b"] == ns(5220) and start["c"] == ns(100) and makespan == ns(7880)
    res = simulate(costs, Schedule("t", host, {"host": ["a", "c", "b", "d"]}))
    assert res.start_s == start


def test_ordered_replay_keeps_start_order_on_multi_core_host():
    # x (long) and y (short) are independent; z depends on y only. Order [x, y, z] on 2 cores:
    #   x 0-1000 core A, y 0-10 core B, z 10-20 core B. Order [z-first] is impossible (z needs y).
    ops = [host_op("x", 1000, 0), host_op("y", 10, 1), host_op("z", 10, 2)]
    wl = Workload.from_ops("t", ops, [("y", "z", 1)])
    costs = CostModel(wl, make_platform(host_cores=2))
    host = {v: "host" for v in "xyz"}
    res = simulate(costs, Schedule("t", host, {"host": ["x", "y", "z"]}))
    assert res.start_s == {"x": ns(0), "y": ns(0), "z": ns(10)}
    # single core, order [y, z, x]: y 0-10, z 10-20, x 20-1020
    costs1 = CostModel(wl, make_platform(host_cores=1))
    res = simulate(costs1, Schedule("t", host, {"host": ["y", "z", "x"]}))
    assert res.start_s == {"y": ns(0), "z": ns(10), "x": ns(20)}
    assert res.makespan_s == ns(1020)


# -------------------------------------------------------------------------------- schedule JSON


def test_schedule_json_round_trip(tmp_path):
    costs = _costs()
    s = _offload_bc(costs)
    s.stats = {"solver": "none", "gap": 0.0}
    back = Schedule.from_json(s.to_json())
    assert back == s
    assert back.placement["b"] == [(0, 1)]  # tuples again
    p = tmp_path / "s.json"
    p.write_text(s.to_json())
    assert Schedule.load(p) == s
    # replaying the loaded schedule gives the same times
    assert simulate(costs, Schedule.load(p)).finish_s == simulate(costs, s).finish_s


def test_schedule_json_errors(tmp_path):
    with pytest.raises(ScheduleError, match="not JSON"):
        Schedule.from_json("{nope")
    with pytest.raises(ScheduleError, match="malformed"):
        Schedule.from_json('{"mapper": "x"}')  # no assignment/order
    with pytest.raises(ScheduleError):
        Schedule.from_json("[1, 2]")
    with pytest.raises(ScheduleError, match="does not exist"):
        Schedule.load(tmp_path / "missing.json")


# ------------------------------------------------------------------------- properties, random DAGs


def _schedule(setup) -> Schedule:
    return Schedule("test", setup["assignment"], setup["order"], place(setup["costs"], setup["assignment"]))


@PROPS
@given(random_setup(contention=False))
def test_prop_contention_free_replay_equals_list_schedule(setup):
    costs = setup["costs"]
    s = _schedule(setup)
    res = simulate(costs, s)
    start, finish, makespan = list_schedule(costs, s.assignment, s.order)
    assert res.start_s == start
    assert res.finish_s == finish
    assert res.makespan_s == makespan
    # without contention every op takes exactly its latency
    for v, d in s.assignment.items():
        assert res.finish_s[v] - res.start_s[v] == pytest.approx(costs.latency[v][d], rel=1e-9, abs=1e-18)


ALL_SUBSETS = [frozenset(k for i, k in enumerate(CONTENTION_KINDS) if m >> i & 1) for m in range(8)]


@PROPS
@given(random_setup(contention=False))
def test_prop_replay_invariants(setup):
    s = _schedule(setup)
    for kinds in ALL_SUBSETS:  # every contention subset on the same random schedule
        _check_replay(setup, s, kinds)


def _check_replay(setup, s: Schedule, kinds: frozenset) -> None:
    costs, plat = setup["costs"], setup["platform"]
    a = s.assignment
    res = simulate(costs, s, kinds)
    tr = res.trace
    g = costs.workload.graph
    eps = 1e-15
    by_op: dict[str, list] = {}  # the trace's rows grouped by op once (a pandas filter per op dominated the test)
    for row in tr.itertuples(index=False):
        by_op.setdefault(row.op, []).append(row)

    # ---- one row per busy interval, with the right durations
    host_ops = [v for v in a if a[v] == "host"]
    cim_ops = [v for v in a if a[v] == "cim"]
    moved = [(u, v) for u, v in g.edges if a[u] != a[v] and not g.edges[u, v].get("param")]
    assert len(tr) == len(host_ops) + 3 * len(cim_ops) + len(moved)
    for v in host_ops:
        (row,) = by_op[v]
        assert (row.device, row.kind, row.phase) == ("host", "compute", "")
        assert (row.start_s, row.end_s) == (res.start_s[v], res.finish_s[v])
        assert row.end_s - row.start_s == pytest.approx(costs.latency[v]["host"], rel=1e-9, abs=1e-18)
    for v in cim_ops:
        sub = {row.phase: row for row in by_op[v]}
        assert len(by_op[v]) == 3 and sorted(sub) == ["load", "mvm", "store"]
        for k, phase in enumerate(("load", "mvm", "store")):
            dur = sub[phase].end_s - sub[phase].start_s
            assert dur == pytest.approx(costs.phases[v]["cim"][k], rel=1e-9, abs=1e-18)
        assert sub["load"].start_s == res.start_s[v]
        assert sub["store"].end_s == pytest.approx(res.finish_s[v], rel=1e-12, abs=1e-18)
        assert sub["load"].end_s <= sub["mvm"].start_s + eps
        assert sub["mvm"].end_s <= sub["store"].start_s + eps
        assert res.finish_s[v] - res.start_s[v] >= costs.latency[v]["cim"] * (1 - 1e-9)

    # ---- precedence and transfers
    moved_set = set(moved)
    for u, v in g.edges:
        if (u, v) in moved_set:
            (row,) = by_op[f"{u}->{v}"]
            assert (row.device, row.kind) == ("bus", "transfer")
            assert row.start_s >= res.finish_s[u] - eps
            assert row.end_s - row.start_s == pytest.approx(costs.transfer_time(u, v, a[u], a[v]), rel=1e-9, abs=1e-18)
            assert res.start_s[v] >= row.end_s - eps
        else:
            assert res.start_s[v] >= res.finish_s[u] - eps

    # ---- resources
    cores = plat.devices["host"].cores
    host_iv = [(res.start_s[v], res.finish_s[v]) for v in host_ops]
    assert max_concurrency(host_iv) <= cores
    seq = s.order["host"]
    assert all(res.start_s[p] <= res.start_s[n] for p, n in zip(seq, seq[1:], strict=False))  # ordered replay
    rows = [row for group in by_op.values() for row in group]
    xfer_iv = [(r.start_s, r.end_s) for r in rows if r.kind == "transfer"]
    cim_iv = [(r.start_s, r.end_s) for r in rows if r.device == "cim"]
    if "links" in kinds:
        assert max_concurrency(xfer_iv) <= 1
    if "cim-bus" in kinds:
        io = [(r.start_s, r.end_s) for r in rows if r.device == "cim" and r.phase in ("load", "store")]
        assert max_concurrency(io) <= 1
    if "cim-cores" in kinds:
        for c in range(plat.devices["cim"].cores):
            on_c = [v for v in cim_ops if any(core == c for core, _ in s.placement[v])]
            mvm = [(r.start_s, r.end_s) for v in on_c for r in by_op[v] if r.phase == "mvm"]
            assert max_concurrency(mvm) <= 1

    # ---- makespan
    assert res.makespan_s == max(res.finish_s.values())
    assert res.makespan_s >= critical_path_min(costs) * (1 - 1e-12)

    # ---- energy: E = P_active * busy + P_idle * (units * makespan - busy) per device; links add pJ/byte
    T = res.makespan_s
    table = device_table(costs, res).set_index("device")
    host_busy = sum(costs.latency[v]["host"] for v in host_ops)
    cim_busy = union_length(cim_iv)
    bus_busy = union_length(xfer_iv)
    nbytes = sum(g.edges[u, v]["elements"] for u, v in moved)  # 8-bit CIM elements: 1 byte each
    link = plat.links["bus"]
    expect = {
        "host": (2.0 * host_busy + 1.0 * (cores * T - host_busy), host_busy),
        "cim": (10.0 * cim_busy + 0.5 * (T - cim_busy), cim_busy),
        "bus": (1.0 * bus_busy + 0.0 + link.energy_pj_per_byte * 1e-12 * nbytes, bus_busy),
    }
    for dev, (energy, busy) in expect.items():
        assert table.loc[dev, "busy_s"] == pytest.approx(busy, rel=1e-9, abs=1e-18)
        assert table.loc[dev, "energy_j"] == pytest.approx(energy, rel=1e-9, abs=1e-18)
    assert table.loc["bus", "bytes"] == nbytes
    summ = summarize(costs, s, res)
    assert summ["energy_j"] == pytest.approx(float(table["energy_j"].sum()), rel=1e-12)
    assert summ["energy_j"] == pytest.approx(sum(e for e, _ in expect.values()), rel=1e-9)


@PROPS
@given(random_setup(contention=False))
def test_prop_host_only_schedule_ignores_contention(setup):
    costs = setup["costs"]
    host = {v: "host" for v in costs.workload.ops}
    order = {"host": list(costs.workload.topological_order())}
    s = Schedule("test", host, order)
    free = simulate(costs, s)
    for kinds in ALL_SUBSETS[1:]:  # contention only touches links and CIM devices: nothing changes
        busy = simulate(costs, s, kinds)
        assert busy.start_s == free.start_s and busy.makespan_s == free.makespan_s
    if setup["platform"].devices["host"].cores == 1:
        # one core, everything on it: the makespan is the sum of the host latencies
        assert free.makespan_s == pytest.approx(sum(costs.latency[v]["host"] for v in host), rel=1e-9)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_setup(contention=False, npu=True))
def test_prop_npu_runs_one_op_at_a_time_in_its_order(setup):
    """A random schedule on host + CIM + NPU: the replay (with or without contention) runs the NPU's ops one
    at a time, in the schedule's NPU order, each for exactly its latency; the contention-free replay equals
    the analytic evaluator; the NPU's per-op energy is ``energy_pj_per_mac`` per MAC."""
    costs = setup["costs"]
    s = _schedule(setup)
    npu_ops = s.order["npu"]
    start, finish, makespan = list_schedule(costs, s.assignment, s.order)
    for kinds in ALL_SUBSETS:
        res = simulate(costs, s, kinds)
        if not kinds:
            assert (res.start_s, res.finish_s, res.makespan_s) == (start, finish, makespan)
        for p, n in zip(npu_ops, npu_ops[1:], strict=False):
            assert res.finish_s[p] <= res.start_s[n] * (1 + 1e-12) + 1e-18
        for v in npu_ops:
            assert res.finish_s[v] - res.start_s[v] == pytest.approx(costs.latency[v]["npu"], rel=1e-9, abs=1e-18)
    pj = 1.5
    plat = setup["platform"].with_overrides({"devices.npu.energy_pj_per_mac": pj})
    costs2 = CostModel(costs.workload, plat)
    table = device_table(costs2, simulate(costs2, s)).set_index("device")
    macs = sum(costs.workload.op(v).macs for v in npu_ops)
    assert table.loc["npu", "op_j"] == pytest.approx(pj * 1e-12 * macs, rel=1e-12, abs=1e-24)


def test_trace_is_built_when_read_and_kept():
    """simulate hands its rows to the result; the table is built on first read (the rows sorted by start, end,
    device, op), is a DataFrame of the documented columns, and the same object on every read; a table given to
    the constructor is kept as given."""
    import pandas as pd

    from hetsim.sim.engine import TRACE_COLUMNS, SimResult

    # hand-worked (conftest.diamond on one host core, order a, b, c, d): a 0-100 ns, b 100-2660, c 2660-7780,
    # d 7780-7880
    costs = CostModel(diamond(), make_platform())
    res = simulate(costs, Schedule("s", dict.fromkeys("abcd", "host"), {"host": ["a", "b", "c", "d"]}))
    assert not isinstance(res._trace, pd.DataFrame)  # not built yet
    assert res.makespan_s == pytest.approx(7880 * NS)
    t = res.trace
    assert isinstance(t, pd.DataFrame) and list(t.columns) == TRACE_COLUMNS
    assert list(t["op"]) == ["a", "b", "c", "d"]
    assert list(t["end_s"]) == pytest.approx([100 * NS, 2660 * NS, 7780 * NS, 7880 * NS])
    assert res.trace is t
    given = pd.DataFrame(columns=TRACE_COLUMNS)
    assert SimResult(trace=given, start_s={}, finish_s={}, makespan_s=0.0).trace is given
