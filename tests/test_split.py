"""Channel splits in the core (ODiMO): Schedule.splits, the SimPy replay, list_schedule, the checker, the
trace/report, and hypothesis invariants on random DAGs with random splits.

Semantics under test: the parts of a split op start together once its inputs are there and every part's
device is free (and each device's order allows it); each device is busy for its own part only; the op
finishes with its longest part, and its successors wait for that.
"""

from __future__ import annotations

import re

import pandas as pd
import pytest
from conftest import max_concurrency
from diana_helpers import F, conv, cyc, diana, elementwise, random_split_setup, split_platform
from hypothesis import HealthCheck, given, settings

from hetsim.analysis.metrics import device_table, op_table, summarize
from hetsim.analysis.plots import plot_timeline
from hetsim.check import check_schedule
from hetsim.costs import CostModel
from hetsim.errors import ScheduleError
from hetsim.mappers import make_schedule
from hetsim.platform import Platform
from hetsim.report.export import chrome_trace
from hetsim.schedule import Schedule
from hetsim.sim import list_schedule, simulate
from hetsim.workload import Workload

PROPS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Hand example on platforms/diana.yaml (cycles at 260 MHz):
#   a: 3x3 conv 16 -> 16 at 32x32, split 4 digital / 12 AIMC
#      digital, 4 ch:  ceil(4/16)=1 * 16 * ceil(32/16)=2 * 32 * 9 = 9216; + 1024*(4+16)/8 = 2560 -> 11776
#      AIMC, 12 ch:    ox_u = 4 ((4+2)*64*3 = 1152 <= 1152); 8*16*9 = 1152; + 1*1*(1024/4)*18.2 = 4659.2 -> 5811.2
#   z: 1x1 conv 32 -> 64 at 16x16 on the AIMC, no inputs: ox_u = 8; 8*32 = 256 + (256/8)*18.2 = 582.4 -> 838.4
#   b: 1x1 conv 16 -> 32 at 32x32 on the AIMC, after a: ox_u = 8; 8*16 = 128 + (1024/8)*18.2 = 2329.6 -> 2457.6
# AIMC order [a, z, b], digital order [a].
#   a starts at 0 on both; its AIMC part ends at 5811.2, its digital part (and a) at 11776
#   z may start once a has started and the AIMC is free: 5811.2 -> 6649.6
#   b waits for a to finish: 11776 -> 14233.6 = makespan
A_D, A_A, Z, B = 11776, 5811.2, 838.4, 2457.6
SPLIT_A = {"digital": [0, 1, 2, 3], "aimc": list(range(4, 16))}


def _hand_costs() -> CostModel:
    ops = [conv("a", 16, 16, 3, 32, index=0), conv("z", 32, 64, 1, 16, index=1), conv("b", 16, 32, 1, 32, index=2)]
    return CostModel(Workload.from_ops("hand", ops, [("a", "b", 16 * 1024)]), diana())


def _hand_schedule(costs) -> Schedule:
    return make_schedule(costs, {"a": "aimc", "z": "aimc", "b": "aimc"}, "hand", splits={"a": dict(SPLIT_A)},
                         order={"aimc": ["a", "z", "b"]})


def test_hand_example_times_and_trace():
    costs = _hand_costs()
    s = _hand_schedule(costs)
    assert s.order["digital"] == ["a"] and s.order["aimc"] == ["a", "z", "b"]
    res = simulate(costs, s)
    assert res.start_s == {"a": cyc(0), "z": cyc(A_A), "b": cyc(A_D)}
    assert res.finish_s == {"a": cyc(A_D), "z": cyc(A_A + Z), "b": cyc(A_D + B)}
    assert res.makespan_s == cyc(A_D + B) == s.makespan_s
    assert (res.start_s, res.finish_s, res.makespan_s) == list_schedule(costs, s.assignment, s.order, s.splits)
    rows = {(r.op, r.device, None if pd.isna(r.channels) else int(r.channels)): (r.start_s * F, r.end_s * F)
            for r in res.trace.itertuples()}
    assert rows.keys() == {("a", "digital", 4), ("a", "aimc", 12), ("z", "aimc", None), ("b", "aimc", None)}
    assert rows[("a", "digital", 4)] == pytest.approx((0, A_D))
    assert rows[("a", "aimc", 12)] == pytest.approx((0, A_A))
    assert str(res.trace["channels"].dtype) == "Int64"
    assert not check_schedule(costs, s).violations


def test_hand_example_report():
    costs = _hand_costs()
    s = _hand_schedule(costs)
    res = simulate(costs, s)
    t = device_table(costs, res).set_index("device")
    T = A_D + B
    # busy: digital 11776; AIMC 5811.2 + 838.4 + 2457.6 = 9107.2 cycles
    assert t.loc["digital", "busy_s"] == cyc(A_D)
    assert t.loc["aimc", "busy_s"] == cyc(A_A + Z + B)
    # energy (mW.cycles): digital 19.305*11776 + 5.655*(14233.6 - 11776); AIMC 23.085*9107.2 + 5.655*(14233.6 - 9107.2)
    e = 19.305 * A_D + 5.655 * (T - A_D) + 23.085 * (A_A + Z + B) + 5.655 * (T - A_A - Z - B)
    assert float(t["energy_j"].sum()) == pytest.approx(e * 1e-3 / F, rel=1e-12)
    cs = summarize(costs, s, res)["channel_split"]
    # channels: a 4 digital + 12 AIMC, z 64 AIMC, b 32 AIMC -> 4 / 112 of 112 + 4 = 116
    assert cs["channels"] == {"digital": 4, "aimc": 108} and cs["total_channels"] == 112
    assert cs["share"]["aimc"] == pytest.approx(108 / 112)
    assert cs["layers"][0] == {"op": "a", "c_out": 16, "channels": {"digital": 4, "aimc": 12},
                               "share": {"digital": 0.25, "aimc": 0.75}}
    assert cs["utilisation"] == {"digital": pytest.approx(A_D / T), "aimc": pytest.approx((A_A + Z + B) / T)}
    # both busy: [0, 6649.6] (AIMC: a's part then z) inside [0, 11776] (digital) -> 6649.6 cycles
    assert cs["all_busy_fraction"] == pytest.approx((A_A + Z) / T)
    # layer-sequential model: max(11776, 5811.2) + 838.4 + 2457.6 (+ the energy of each layer alone)
    assert cs["layer_sequential_latency_s"] == cyc(A_D + Z + B)
    assert cs["split_layers"] == 1
    ops = op_table(costs, s, res).set_index("op")
    assert ops.loc["a", "channels"] == "digital:4;aimc:12" and ops.loc["z", "channels"] == ""
    ev = [e for e in chrome_trace(res.trace)["traceEvents"] if e["ph"] == "X" and e["name"] == "a"]
    assert sorted(e["args"]["channels"] for e in ev) == [4, 12]
    assert "channels" not in next(e for e in chrome_trace(res.trace)["traceEvents"] if e.get("name") == "z")["args"]


def test_timeline_draws_split_parts(tmp_path):
    costs = _hand_costs()
    res = simulate(costs, _hand_schedule(costs))
    (p,) = plot_timeline(res.trace, tmp_path / "t.png")
    assert p.stat().st_size > 0


def test_schedule_json_round_trip_with_splits():
    costs = _hand_costs()
    s = _hand_schedule(costs)
    back = Schedule.from_json(s.to_json())
    assert back == s and back.splits == {"a": SPLIT_A}
    assert sorted(back.devices_of("a")) == ["aimc", "digital"] and back.devices_of("z") == ["aimc"]
    assert Schedule.from_dict({"mapper": "x", "assignment": {}, "order": {}}).splits == {}


def _bad(costs, splits, assignment=None, match=""):
    a = assignment or {"a": "aimc", "z": "aimc", "b": "aimc"}
    with pytest.raises(ScheduleError, match=match):
        list_schedule(costs, a, None, splits)
    with pytest.raises(ScheduleError, match=match):
        simulate(costs, Schedule("t", a, {}, splits=splits))
    rep = check_schedule(costs, Schedule("t", a, {}, splits=splits))
    assert rep.violations and any(re.search(match, v) for v in rep.violations)


def test_invalid_splits_are_rejected_everywhere():
    costs = _hand_costs()
    _bad(costs, {"a": {"digital": [0, 1, 2], "aimc": list(range(4, 16))}}, match=r"channel\(s\) \[3\] on none")
    _bad(costs, {"a": {"digital": [0, 1, 2, 3, 4], "aimc": list(range(3, 16))}},
         match=r"\[3, 4\] on several devices")
    _bad(costs, {"a": {"digital": [15, 16], "aimc": list(range(15))}}, match="channel 16, outside 0..15")
    _bad(costs, {"a": {"digital": [], "aimc": list(range(16))}}, match="no channels")
    _bad(costs, {"a": {"gpu": [0], "aimc": list(range(1, 16))}}, match="'gpu', which is not a device")
    _bad(costs, {"a": {"host": [0], "aimc": list(range(1, 16))}}, match="'host' cannot run a part")
    with pytest.raises(ScheduleError, match="contiguous"):  # parts are channel ranges (ODiMO Fig. 3 reordering)
        Schedule("t", {"a": "aimc"}, {}, splits={"a": {"digital": [0, 1, 4], "aimc": [2, 3, *range(5, 16)]}})
    _bad(costs, {"zz": {"aimc": [0]}}, match="not an op")


def test_split_of_depthwise_and_grouped_convs():
    plat = split_platform()
    ops = [conv("dw", 8, 8, 3, 4, groups=8), conv("g", 4, 8, 3, 4, groups=2, index=1)]
    costs = CostModel(Workload.from_ops("t", ops, [("dw", "g", 1)]), plat)
    a = {"dw": "digital", "g": "digital"}
    ok = {"dw": {"digital": [0, 1, 2], "digital2": [3, 4, 5, 6, 7]},  # depthwise: any channel set
          "g": {"digital": [4, 5, 6, 7], "digital2": [0, 1, 2, 3]}}  # groups of 4 channels, whole
    res = simulate(costs, Schedule("t", a, {}, splits=ok))
    # dw parts: 3-channel and 5-channel depthwise 3x3 convs at 4x4:
    #   digital  1*3*1*4*9 = 108 + 16*(3+3)/8 = 12 -> 120;  digital2 1*5*1*4*9 = 180 + 16*10/8 = 20 -> 200
    # g parts: one group each (C_in 2 -> C_out 4): 1*2*1*4*9 = 72 + 16*(4+2)/8 = 12 -> 84
    assert res.finish_s["dw"] == cyc(200) and res.makespan_s == cyc(284)
    cut = {"g": {"digital": [0, 1, 2, 4], "digital2": [3, 5, 6, 7]}}
    with pytest.raises(ScheduleError, match="cuts group 0"):
        list_schedule(costs, a, None, cut)
    with pytest.raises(ScheduleError, match="'aimc' cannot run a part"):
        list_schedule(costs, a, None, {"dw": {"digital": [0], "aimc": list(range(1, 8))}})


def test_split_needs_shared_memory_with_its_neighbours():
    data = diana().model_dump(mode="json", exclude={"devices": {"__all__": {"name"}}})
    data["memories"] = {"l1": {"size_kib": 256, "shared_by": ["digital", "aimc"]}}  # the host is outside
    data["links"] = {"bus": {"bandwidth_gb_s": 1, "connects": ["host", "digital", "aimc"]}}
    plat = Platform.model_validate(data)
    ops = [elementwise("x", 100), conv("c", 16, 16, 3, 8, index=1), elementwise("y", 100, index=2)]
    costs = CostModel(Workload.from_ops("t", ops, [("x", "c", 1024), ("c", "y", 1024)]), plat)
    split = {"c": {"digital": list(range(8)), "aimc": list(range(8, 16))}}
    with pytest.raises(ScheduleError, match=r"exchanges data with 'x' on 'host' through no shared memory"):
        list_schedule(costs, {"x": "host", "c": "aimc", "y": "host"}, None, split)
    # unsplit, the same edges go over the bus: 1024 bytes at 1 GB/s = 1024 ns each way
    start, finish, _ = list_schedule(costs, {"x": "host", "c": "aimc", "y": "host"})
    assert start["c"] == pytest.approx(finish["x"] + 1024e-9)
    res = simulate(costs, Schedule("t", {"x": "host", "c": "aimc", "y": "host"}, {}))
    assert len(res.trace[res.trace.kind == "transfer"]) == 2


def test_inconsistent_orders_of_split_ops_are_rejected():
    ops = [conv("p", 8, 8, 3, 4), conv("q", 8, 8, 3, 4, index=1)]
    costs = CostModel(Workload.from_ops("t", ops, []), diana())
    sp = {v: {"digital": [0, 1, 2, 3], "aimc": [4, 5, 6, 7]} for v in "pq"}
    order = {"digital": ["p", "q"], "aimc": ["q", "p"]}
    with pytest.raises(ScheduleError, match="contradicts"):
        list_schedule(costs, {"p": "aimc", "q": "aimc"}, order, sp)
    with pytest.raises(ScheduleError, match="deadlock"):
        simulate(costs, Schedule("t", {"p": "aimc", "q": "aimc"}, order, splits=sp))


def test_checker_catches_wrong_split_times():
    costs = _hand_costs()
    s = _hand_schedule(costs)
    bad = Schedule.from_json(s.to_json())
    bad.finish_s["a"] = A_A / F  # the AIMC part's end, not the op's
    assert any("Eq. 7" in v for v in check_schedule(costs, bad).violations)
    bad = Schedule.from_json(s.to_json())
    bad.start_s["z"] = (A_A - 100) / F  # z on the AIMC while a's AIMC part still runs
    bad.finish_s["z"] = (A_A - 100 + Z) / F
    assert any("more than 1 ops run at once" in v for v in check_schedule(costs, bad).violations)


# ------------------------------------------------------------------------------------- random DAGs


@PROPS
@given(random_split_setup())
def test_prop_split_replay_equals_list_schedule_and_keeps_invariants(setup):
    costs, a, splits, order = setup["costs"], setup["assignment"], setup["splits"], setup["order"]
    s = make_schedule(costs, a, "random", order=order, splits=splits)
    assert not check_schedule(costs, s).violations
    res = simulate(costs, s)
    assert (res.start_s, res.finish_s, res.makespan_s) == (s.start_s, s.finish_s, s.makespan_s)
    tr = res.trace
    g = costs.workload.graph
    eps = 1e-15
    # one row per part, of the part's latency, all parts of an op starting together
    for v in costs.workload.ops:
        rows = tr[tr.op == v]
        devs = s.devices_of(v)
        assert sorted(rows.device) == sorted(devs)
        for r in rows.itertuples():
            n = len(splits[v][r.device]) if v in splits else None
            dur = costs.part_latency(v, r.device, n) if n is not None else costs.latency[v][r.device]
            assert r.start_s == res.start_s[v]
            assert r.end_s - r.start_s == pytest.approx(dur, rel=1e-9, abs=1e-18)
            assert (r.channels if v in splits else None) == n
        assert res.finish_s[v] == pytest.approx(rows.end_s.max(), rel=1e-12, abs=1e-18)
    # precedence: successors wait for every part (shared memory: no transfers)
    assert not (tr.kind == "transfer").any()
    for u, v in g.edges:
        assert res.start_s[v] >= res.finish_s[u] - eps
    # capacity: each accelerator runs one part at a time, in its order; the host its cores
    for d, cap in (("digital", 1), ("digital2", 1), ("aimc", 1),
                   ("host", costs.platform.devices["host"].cores)):
        sub = tr[tr.device == d]
        assert max_concurrency(zip(sub.start_s, sub.end_s, strict=True)) <= cap
        seq = s.order[d]
        assert all(res.start_s[p] <= res.start_s[n] for p, n in zip(seq, seq[1:], strict=False))
    # energy: sum over devices of P_act * busy + P_idle * (units * makespan - busy)
    T = res.makespan_s
    table = device_table(costs, res).set_index("device")
    for d, dev in costs.platform.devices.items():
        busy = float((tr[tr.device == d].end_s - tr[tr.device == d].start_s).sum())
        units = dev.cores if dev.kind == "cpu" else 1
        assert table.loc[d, "energy_j"] == pytest.approx(dev.active_w * busy + dev.idle_w * (units * T - busy),
                                                         rel=1e-9, abs=1e-18)
    # the channel-split summary counts every channel once
    cs = summarize(costs, s, res)["channel_split"]
    assert cs["total_channels"] == sum(costs.out_channels(v) for v in costs.workload.ops if costs.out_channels(v))
    assert 0 <= cs["all_busy_fraction"] <= min(cs["utilisation"].values()) + 1e-12
