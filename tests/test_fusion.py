"""Fused operator groups: a device fuses a consumer into its producer's launch (``fuses`` on the npu kind).

Round numbers of ``make_platform(npu=...)`` (tests/conftest.py): the NPU runs at 1 GHz with 4 int8 MACs per cycle
and 1 byte/ns to its local memory; the bus moves 1 byte/ns; the host runs an elementwise op in ``n_out`` ns.
"""

from __future__ import annotations

import itertools

import networkx as nx
import pytest
from conftest import ROOT, conv_op, host_op, make_platform
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hetsim.check import check_schedule, fusion_violations
from hetsim.costs import CostModel
from hetsim.errors import ScheduleError
from hetsim.mappers import get_mapper
from hetsim.mappers.base import fuse_where_placed, fused_order, make_schedule
from hetsim.schedule import Schedule
from hetsim.sim import simulate
from hetsim.sim.analytic import list_schedule
from hetsim.workload.op import Workload

NS = 1e-9
#: an NPU that fuses SiLU's two ops and a residual Add: Sigmoid's epilogue 1 cycle per element, Mul's 0.5, Add's 0;
#: 50 ns dispatch per launch
FUSING = {"fuses": ["Sigmoid", "Mul", "Add"], "epilogue_cycles_per_element": {"Sigmoid": 1, "Mul": 0.5},
          "op_overhead_us": 0.05}


def silu() -> Workload:
    """conv -> Sigmoid -> Mul(conv, Sigmoid): a conv with a SiLU activation, 50 output elements.

    conv on the NPU: 50 ns dispatch + max(16*16*10 MACs / 4 per ns = 640 ns, (100 + 50) B / 1 B/ns) = 690 ns.
    Fused: Sigmoid 1 * 50 = 50 ns, Mul 0.5 * 50 = 25 ns. Standalone on the NPU: 50 + max(50/16, 100 B) = 150 ns
    each; on the host 50 ns each, after the conv's output crossed the bus (50 B, 50 ns): 690 + 50 + 50 + 50 ns.
    """
    ops = [conv_op("conv", 16, 16, 10, n_in=100, n_out=50, index=0), host_op("sig", 50, 1, "Sigmoid"),
           host_op("mul", 50, 2, "Mul")]
    return Workload.from_ops("silu", ops, [("conv", "sig", 50), ("sig", "mul", 50), ("conv", "mul", 50)])


def costs_of(wl: Workload, fusion: bool = True, npu: dict | None = None) -> CostModel:
    return CostModel(wl, make_platform(npu=npu or FUSING), fusion=fusion)


def test_conv_silu_fused_by_hand():
    costs = costs_of(silu())
    assert costs.fusion == {"sig": {"conv": {"npu": pytest.approx(50 * NS)}},
                            "mul": {"conv": {"npu": pytest.approx(25 * NS)},
                                    "sig": {"npu": pytest.approx(25 * NS)}}}
    assert costs.latency["sig"]["npu"] == pytest.approx(150 * NS)  # standalone: its own launch
    sched = make_schedule(costs, dict.fromkeys(costs.workload.ops, "npu"), "hand",
                          fused={"sig": "conv", "mul": "sig"})
    assert check_schedule(costs, sched).ok
    r = simulate(costs, sched)
    # one launch: the conv's 690 ns, then the epilogues (50 + 25 ns), no gap, no dispatch, no transfer
    assert r.makespan_s == pytest.approx((690 + 50 + 25) * NS)
    assert (r.trace["kind"] == "transfer").sum() == 0
    assert r.start_s["sig"] == pytest.approx(r.finish_s["conv"])
    assert r.start_s["mul"] == pytest.approx(r.finish_s["sig"])
    assert sched.makespan_s == pytest.approx(r.makespan_s)
    # unfused on the NPU: 690 + 150 + 150 ns
    plain = make_schedule(costs, dict.fromkeys(costs.workload.ops, "npu"), "hand")
    assert simulate(costs, plain).makespan_s == pytest.approx((690 + 150 + 150) * NS)


def test_no_fusion_gives_the_unfused_numbers():
    wl = silu()
    off = costs_of(wl, fusion=False)
    assert off.fusion == {} and off.fusion_offered == 2
    assert off.latency == costs_of(wl).latency
    best_on = get_mapper("greedy").map(costs_of(wl))
    best_off = get_mapper("greedy").map(off)
    assert best_off.fused == {}
    assert best_on.fused == {"sig": "conv", "mul": "sig"}
    assert best_on.makespan_s == pytest.approx(765 * NS) and best_off.makespan_s == pytest.approx(840 * NS)
    assert simulate(off, best_off).makespan_s == pytest.approx(best_off.makespan_s)
    # a schedule with fused groups is refused when fusion is off
    with pytest.raises(ScheduleError, match="fusion is off"):
        simulate(off, best_on)


def test_residual_add_waits_for_its_other_input_by_hand():
    """a (host, 100 ns) -> add; conv (NPU, 690 ns) -> add; add fused into conv (Add's epilogue: 0 cycles).

    The group is one launch: it starts when a's output has crossed the bus (100 + 100 B / 1 B/ns = 200 ns), so
    the conv runs 200..890 ns and the add ends with it."""
    ops = [host_op("a", 100, 0), conv_op("conv", 16, 16, 10, n_in=100, n_out=50, index=1),
           host_op("add", 100, 2, "Add")]
    wl = Workload.from_ops("res", ops, [("a", "add", 100), ("conv", "add", 50)])
    costs = costs_of(wl)
    sched = make_schedule(costs, {"a": "host", "conv": "npu", "add": "npu"}, "hand", fused={"add": "conv"})
    assert sched.start_s["conv"] == pytest.approx(200 * NS)
    assert sched.finish_s["add"] == pytest.approx(890 * NS)
    assert check_schedule(costs, sched).ok
    r = simulate(costs, sched)
    assert r.start_s["conv"] == pytest.approx(200 * NS) and r.makespan_s == pytest.approx(890 * NS)
    assert list(r.trace.loc[r.trace["kind"] == "transfer", "op"]) == ["a->add"]
    # the same with the times of an ungated replay is refused by the checker
    bad = Schedule.from_dict({**sched.to_dict(), "start_s": {**sched.start_s, "conv": 0.0, "add": 690 * NS},
                              "finish_s": {**sched.finish_s, "conv": 690 * NS, "add": 690 * NS}})
    assert any("one launch" in v for v in check_schedule(costs, bad).violations)


def test_producer_with_other_consumers_still_sends_its_output():
    """conv -> sig (fused) and conv -> out (host): the conv's output still crosses the bus to the host."""
    ops = [conv_op("conv", 16, 16, 10, n_in=100, n_out=50, index=0), host_op("sig", 50, 1, "Sigmoid"),
           host_op("out", 50, 2, "Relu")]
    wl = Workload.from_ops("fan", ops, [("conv", "sig", 50), ("conv", "out", 50)])
    costs = costs_of(wl)
    sched = make_schedule(costs, {"conv": "npu", "sig": "npu", "out": "host"}, "hand", fused={"sig": "conv"})
    r = simulate(costs, sched)
    assert list(r.trace.loc[r.trace["kind"] == "transfer", "op"]) == ["conv->out"]
    # out: the conv's 690 ns + 50 B over the bus (50 ns) + 50 ns on the host
    assert r.finish_s["out"] == pytest.approx(790 * NS)
    assert r.finish_s["sig"] == pytest.approx(740 * NS)


def test_schedule_json_round_trip_with_fused_groups():
    costs = costs_of(silu())
    sched = make_schedule(costs, dict.fromkeys(costs.workload.ops, "npu"), "hand", fused={"sig": "conv", "mul": "sig"})
    back = Schedule.from_json(sched.to_json())
    assert back.fused == sched.fused and back.to_dict() == sched.to_dict()
    assert simulate(costs, back).makespan_s == simulate(costs, sched).makespan_s
    assert "fused" not in make_schedule(costs, dict.fromkeys(costs.workload.ops, "npu"), "hand").to_dict()
    with pytest.raises(ScheduleError, match="fused"):
        Schedule.from_dict({**sched.to_dict(), "fused": {"sig": 3}})


def test_checker_refuses_bad_fused_groups():
    costs = costs_of(silu())
    npu = dict.fromkeys(costs.workload.ops, "npu")

    def problems(fused, assignment=npu, order=None):
        s = Schedule.from_assignment("hand", assignment, fused=fused, order=order or {})
        return fusion_violations(costs, s, order=fused_order(costs, assignment, {}) if order is None else order)

    assert problems({"sig": "conv", "mul": "sig"}) == []
    assert "another device" in problems({"sig": "conv"}, {**npu, "sig": "host"})[0]
    assert "does not read" in problems({"sig": "mul"})[0]
    assert "not both ops" in problems({"sig": "nothing"})[0]
    assert "one fused consumer" in problems({"sig": "conv", "mul": "conv"})[0]
    # Mul fused into the conv while the Sigmoid between them is not: the group would wait for its own output
    assert "waits for an input computed from its own output" in problems({"mul": "conv"})[0]
    assert "does not follow" in problems({"sig": "conv"}, order={"npu": ["conv", "mul", "sig"]})[0]


def test_device_capability_defaults_and_validation():
    from hetsim.devices.npu import Npu

    plain = make_platform(npu={})
    assert CostModel(silu(), plain).fusion == {}  # an NPU that lists no fuses fuses nothing
    with pytest.raises(ValueError, match="fuses does not list"):
        Npu(clock_mhz=1, macs_per_cycle={8: 1}, bandwidth_gb_s=1, weight_memory_kib=1,
            epilogue_cycles_per_element={"Relu": 1})


# ------------------------------------------------------------------------------ random graphs, brute force


@st.composite
def fusable_dag(draw, n_ops=(3, 5)):
    """A random DAG of Convs (host or NPU) and SiLU / Add / Relu ops (host, or NPU standalone or fused)."""
    n = draw(st.integers(*n_ops))
    ops = []
    for i in range(n):
        if i == 0 or draw(st.booleans()):
            ops.append(conv_op(f"o{i}", draw(st.integers(1, 16)), draw(st.integers(1, 16)), draw(st.integers(1, 20)),
                               n_in=draw(st.integers(1, 200)), n_out=draw(st.integers(1, 200)), index=i))
        else:
            ops.append(host_op(f"o{i}", draw(st.integers(1, 400)), i,
                               draw(st.sampled_from(["Sigmoid", "Mul", "Add", "Relu"]))))
    edges = []
    for j in range(1, n):
        preds = draw(st.sets(st.integers(0, j - 1), min_size=1, max_size=min(j, 2)))
        edges += [(ops[i].name, ops[j].name, draw(st.integers(1, 200))) for i in sorted(preds)]
    wl = Workload.from_ops("rnd", ops, edges)
    npu = {"fuses": ["Sigmoid", "Mul", "Add", "Relu"],
           "epilogue_cycles_per_element": {"Sigmoid": draw(st.sampled_from([0, 1, 4])),
                                           "Add": draw(st.sampled_from([0, 2]))},
           "op_overhead_us": draw(st.sampled_from([0, 0.05, 0.2])), "weight_memory_kib": 100}
    return CostModel(wl, make_platform(npu=npu, link_latency_ns=draw(st.sampled_from([0, 20]))))


def _fusion_choices(costs, assignment):
    """Every set of fused groups an assignment allows (each consumer fused into at most one producer on its
    device, each producer at most one consumer, no cycle among the groups), the empty one first."""
    names = list(costs.workload.ops)
    opts = [[None] + [p for p, per in costs.fusion.get(c, {}).items()
                      if assignment[p] == assignment[c] and assignment[c] in per] for c in names]
    for pick in itertools.product(*opts):
        fused = {c: p for c, p in zip(names, pick, strict=True) if p is not None}
        if len(set(fused.values())) != len(fused) or not _acyclic(costs, fused):
            continue
        s = Schedule.from_assignment("bf", assignment, fused=fused)
        assert fusion_violations(costs, s, order=fused_order(costs, assignment, fused)) == []
        yield fused


def _acyclic(costs, fused) -> bool:
    from hetsim.check import fusion_heads

    heads = fusion_heads(fused)
    group = {v: heads.get(v, v) for v in costs.workload.graph}
    h = nx.DiGraph((group[u], group[v]) for u, v in costs.workload.graph.edges if group[u] != group[v])
    h.add_nodes_from(set(group.values()))
    return nx.is_directed_acyclic_graph(h) and all(heads[c] != c for c in heads)


def _assignments(costs):
    names = list(costs.workload.ops)
    for devs in itertools.product(*(sorted(costs.latency[v]) for v in names)):
        a = dict(zip(names, devs, strict=True))
        if all(costs.need.get(v, {}).get(d, 0) <= costs.budget.get(d, 10**18) for v, d in a.items()) and \
                all(sum(costs.need[v][d] for v in names if a[v] == d) <= b for d, b in costs.budget.items()):
            yield a


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fusable_dag())
def test_fusion_never_slower_and_replay_equals_prediction(costs):
    """Over every assignment (device orders: the topological order) and every fused-group choice it allows: the
    best makespan with fusion <= the best without (it is a superset); each fused schedule passes the checker and
    its replay reproduces list_schedule's times; heft and greedy with fusion are no slower than without, and their
    schedules replay as predicted."""
    best_plain = best_fused = float("inf")
    for a in _assignments(costs):
        _, _, plain = list_schedule(costs, a)
        best_plain = min(best_plain, plain)
        for fused in _fusion_choices(costs, a):
            if not fused:
                best_fused = min(best_fused, plain)
                continue
            sched = make_schedule(costs, a, "bf", fused=fused)
            assert check_schedule(costs, sched).ok, check_schedule(costs, sched).violations
            r = simulate(costs, sched)
            assert r.makespan_s == pytest.approx(sched.makespan_s, rel=1e-9)
            for v in costs.workload.ops:
                assert r.start_s[v] == pytest.approx(sched.start_s[v], rel=1e-9, abs=1e-15)
            best_fused = min(best_fused, sched.makespan_s)
    assert best_fused <= best_plain * (1 + 1e-12)
    off = CostModel(costs.workload, costs.platform, fusion=False)
    for name in ("heft", "greedy"):
        on_s, off_s = get_mapper(name).map(costs), get_mapper(name).map(off)
        assert on_s.makespan_s <= off_s.makespan_s * (1 + 1e-12)
        assert check_schedule(costs, on_s).ok
        assert simulate(costs, on_s).makespan_s == pytest.approx(on_s.makespan_s, rel=1e-9)


def test_fuse_where_placed_forms_chains():
    costs = costs_of(silu())
    assert fuse_where_placed(costs, dict.fromkeys(costs.workload.ops, "npu")) == {"sig": "conv", "mul": "sig"}
    # Mul into the conv with the Sigmoid on the host: the group would wait for its own output, so nothing fuses
    assert fuse_where_placed(costs, {"conv": "npu", "sig": "host", "mul": "npu"}) == {}


def test_cli_no_fusion_and_report(capsys, tmp_path):
    from conftest import run_cli

    onnx = ROOT / "workloads" / "yolov5n.onnx"
    if not onnx.is_file():
        pytest.skip("yolov5n.onnx not available")
    plat = ROOT / "tests" / "data" / "fusing-npu.yaml"
    code, out, _ = run_cli(capsys, "run", str(plat), str(onnx), "--mapper", "greedy", "--out", str(tmp_path / "on"))
    assert code == 0 and "fused:" in out and "/model.0/conv/Conv + /model.0/act/Sigmoid + /model.0/act/Mul" in out
    import pandas as pd

    ops = pd.read_csv(tmp_path / "on" / "ops.csv", keep_default_na=False)
    assert ops.set_index("op").loc["/model.0/act/Sigmoid", "fused_into"] == "/model.0/conv/Conv"
    code, out_off, _ = run_cli(capsys, "run", str(plat), str(onnx), "--mapper", "greedy", "--no-fusion")
    assert code == 0 and "fusion: off (--no-fusion)" in out_off and "fused:" not in out_off


def _brute_force(costs) -> float:
    """The least makespan over every assignment, every fused-group choice it allows and every device order (the
    per-device orders of every linear extension of the DAG, fused consumers right after their producers), each
    timed as early as possible (list_schedule); orders that would deadlock are skipped."""
    best = float("inf")
    serial = costs.serial_devices()
    sorts = list(nx.all_topological_sorts(costs.workload.graph))
    for a in _assignments(costs):
        for fused in _fusion_choices(costs, a):
            for topo in sorts:
                order = {d: [v for v in topo if a[v] == d] for d in serial}
                if fused:
                    order = fused_order(costs, a, fused, order)
                try:
                    _, _, ms = list_schedule(costs, a, order, fused=fused or None)
                except ScheduleError:
                    continue
                best = min(best, ms)
    return best


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fusable_dag(n_ops=(2, 4)))
def test_cpsat_equals_brute_force_with_fusion(costs):
    """cpsat's fused model on tiny graphs: its makespan is the brute force's (a 1 ps tick: no rounding at these
    round numbers), its schedule passes the checker and replays as predicted, and it says the model is exact."""
    sched = get_mapper("cpsat", resolution_s=1e-12, mip_rel_gap=0.0, threads=1, time_limit_s=60).map(costs)
    assert sched.stats["status"] == "optimal"
    assert not costs.fusion or sched.stats["fusion"].startswith("exact")  # else cpsat's own model, no fusion
    best = _brute_force(costs)
    assert sched.makespan_s == pytest.approx(best, rel=1e-9)
    for name in ("heft", "greedy"):  # no heuristic beats the brute force
        assert get_mapper(name).map(costs).makespan_s >= best * (1 - 1e-9)
    assert check_schedule(costs, sched).ok, check_schedule(costs, sched).violations
    assert simulate(costs, sched).makespan_s == pytest.approx(sched.makespan_s, rel=1e-9)
    assert sched.stats["bound_s"] <= sched.makespan_s * (1 + 1e-12)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fusable_dag(n_ops=(2, 4)))
def test_unfused_bound_is_below_every_schedule_without_fusion(costs):
    """The bound that lets cpsat skip its search without fusion is at most the brute force's least makespan
    without fusion: a skip never loses a shorter schedule."""
    from hetsim.mappers._fused_cpsat import unfused_bound_s

    bound = unfused_bound_s(get_mapper("cpsat"), costs)
    assert 0 <= bound <= _brute_force(costs.without_fusion()) * (1 + 1e-12)


def test_cpsat_skips_the_unfused_search_only_when_it_cannot_win():
    """SiLU on the NPU: fused 690 + 50 + 25 = 765 ns (heft finds it), without fusion at best 840 ns
    (test_ilp_maps_without_fusion_and_says_so); the search without fusion is skipped exactly when its bound
    reaches the best heuristic, and the answer is 765 ns either way."""
    from hetsim.mappers._fused_cpsat import unfused_bound_s

    costs = costs_of(silu())
    m = get_mapper("cpsat", resolution_s=1e-12, mip_rel_gap=0.0, threads=1)
    sched = m.map(costs)
    assert sched.makespan_s == pytest.approx(765 * NS) and sched.stats["status"] == "optimal"
    bound = unfused_bound_s(m, costs)
    assert bound <= 840 * NS * (1 + 1e-12)
    skipped = sched.stats["unfused_candidate"].startswith("skipped")
    assert skipped == (bound >= 765 * NS * (1 - 1e-12))


def test_cpsat_fused_horizon_refused_is_solved_again(monkeypatch):
    """A horizon below the optimum (as if the hint's makespan were wrong) leaves the fused model without a
    solution; it is then solved on the serial horizon and still returns the optimum, 765 ns."""
    import hetsim.mappers._fused_cpsat as fc

    monkeypatch.setattr(fc, "_hint_makespan", lambda *a: 1)
    costs = costs_of(silu())
    sched = get_mapper("cpsat", resolution_s=1e-12, mip_rel_gap=0.0, threads=1).map(costs)
    assert sched.makespan_s == pytest.approx(765 * NS) and sched.stats["status"] == "optimal"
    assert sched.stats["horizon_ticks"].startswith("serial")


def test_cpsat_fused_is_deterministic():
    """The same fused mapping twice under the default work limit: the same assignment, groups and orders."""
    costs = costs_of(silu())
    a, b = (get_mapper("cpsat").map(costs) for _ in range(2))
    assert (a.assignment, a.fused, a.order) == (b.assignment, b.fused, b.order)
    assert a.stats["threads"] == 1


def test_ilp_maps_without_fusion_and_says_so():
    costs = costs_of(silu())
    sched = get_mapper("ilp", time_limit_s=30).map(costs)
    assert sched.fused == {} and "not modelled" in sched.stats["fusion"]
    # its optimum is that of the problem without fusion: the unfused 840 ns, not the fused 765 ns
    assert sched.makespan_s == pytest.approx(840 * NS)
    assert get_mapper("cpsat", time_limit_s=30).map(costs).makespan_s == pytest.approx(765 * NS)


def test_papers_platforms_declare_no_fusion():
    """puma*, diana, cim-npu and the rest fuse nothing: their cost models offer no fused group, so every mapper
    and number is what it was (efr32mg24 runs spiking networks: its cost model is the SNN one, without fusion)."""
    from hetsim.platform import load_platform
    from hetsim.workload import load_onnx

    onnx = ROOT / "workloads" / "yolov5n.onnx"
    if not onnx.is_file():
        pytest.skip("yolov5n.onnx not available")
    wl = load_onnx(onnx)
    for name in ("puma", "puma-host", "puma-x86", "cim-npu", "cim-npu-dram", "soc-2npu"):
        costs = CostModel(wl, load_platform(ROOT / "platforms" / f"{name}.yaml"))
        assert costs.fusion == {} and costs.fusion_offered == 0, name
    assert CostModel(wl, load_platform(ROOT / "platforms" / "edge-soc.yaml")).fusion_offered > 0


def test_edge_soc_names_its_fused_groups(capsys):
    from conftest import run_cli

    onnx = ROOT / "workloads" / "yolov5n.onnx"
    if not onnx.is_file():
        pytest.skip("yolov5n.onnx not available")
    code, out, err = run_cli(capsys, "run", str(ROOT / "platforms" / "edge-soc.yaml"), str(onnx), "--mapper", "heft")
    assert code == 0, err
    assert "fused:" in out and "npu: /model.0/conv/Conv + /model.0/act/Sigmoid + /model.0/act/Mul" in out


def test_api_fusion_off_gives_the_unfused_run():
    import hetsim

    plat = make_platform(npu=FUSING)
    on = hetsim.run(plat, silu(), mapper="greedy")
    off = hetsim.run(plat, silu(), mapper="greedy", fusion=False)
    assert on.makespan_s == pytest.approx(765 * NS) and off.makespan_s == pytest.approx(840 * NS)
    assert on.summary["fusion"]["groups"] == [{"device": "npu", "ops": ["conv", "sig", "mul"]}]
    assert off.summary["fusion"] == {"on": False, "offered": 2, "fused_ops": 0, "groups": []}
    assert list(on.ops["fused_into"]) == ["", "conv", "sig"]


def test_scenarios_refuse_no_fusion(capsys):
    from conftest import assert_input_error, run_cli

    import hetsim
    from hetsim.errors import InputError

    plat, scen = ROOT / "platforms" / "edge-soc.yaml", ROOT / "scenarios" / "camera-cim-npu.yaml"
    code, _, err = run_cli(capsys, "run", str(plat), str(scen), "--no-fusion")
    assert_input_error(code, err, "--no-fusion", "not for a scenario")
    with pytest.raises(InputError, match="not for a scenario"):
        hetsim.run(plat, scen, fusion=False)


def test_camera_scenario_on_the_edge_soc_is_steady():
    """scenarios/camera-edge-soc.yaml (docs/scenarios.md): with the NPU fusing the activations and running the
    data movement, no stream saturates, no deadline is missed and the NPU, not the host, is the busiest device."""
    import hetsim

    r = hetsim.run(ROOT / "platforms" / "edge-soc.yaml", ROOT / "scenarios" / "camera-edge-soc.yaml")
    s = r.summary
    assert not s["saturated"]
    streams = {row["stream"]: row for row in s["streams"]}
    assert streams["detect"]["deadline_miss"] == 0.0
    assert streams["classify"]["throughput_hz"] > 0
    assert s["bottleneck"]["resource"] == "npu" and s["bottleneck"]["load"] < 0.5


def test_a_misspelt_fused_op_type_is_refused(tmp_path):
    """``fuses: [..., Sigmod]`` would fuse nothing without a word: refused with the closest ONNX operator type."""
    import yaml

    from hetsim.errors import PlatformError
    from hetsim.platform import load_platform

    data = yaml.safe_load((ROOT / "platforms" / "edge-soc.yaml").read_text())
    npu = data["devices"]["npu"]
    npu["fuses"] = ["Sigmod" if t == "Sigmoid" else t for t in npu["fuses"]]
    bad = tmp_path / "misspelt.yaml"
    bad.write_text(yaml.safe_dump(data))
    with pytest.raises(PlatformError, match="Sigmoid"):
        load_platform(bad)
