"""The ``cpsat`` mapper (CPU-CIM ILP Sec. IV-B as a CP-SAT scheduling model): a brute-force reference on random
small DAGs, hand-computed optima (single- and two-core host), the rounding guarantee, degenerate inputs,
determinism and a real model.

Latencies follow conftest's round-number platform: host ``T = macs ns`` (GEMM ops) or ``n_out ns``; CIM
``T = n_in + 100 * n_mvm + n_out ns``; a cross-device transfer of ``e`` elements takes ``e ns`` (plus the
link latency). All of them are whole nanoseconds, so with the default 1 ns tick the rounding is exact.
"""

from __future__ import annotations

import itertools

import pytest
from conftest import NS, PLATFORMS, conv_op, diamond, host_op, make_platform, ns
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hetsim.check import check_schedule
from hetsim.costs import CostModel
from hetsim.mappers import MAPPERS, get_mapper
from hetsim.platform import load_platform
from hetsim.schedule import Schedule
from hetsim.sim import simulate
from hetsim.workload import Workload, load_onnx
from hetsim.workload.synthetic import layered_dag

TIME_KEYS = ("solve_time_s", "total_time_s", "fluid_time_s", "solver_calls_s", "phases_s")


def solve(costs: CostModel, **kw) -> Schedule:
    """cpsat with an exact proof by default; the schedule must pass the checker and replay to its own
    makespan, which never exceeds the rounded objective, and the reported bound never exceeds it."""
    kw.setdefault("time_limit_s", 20)
    kw.setdefault("mip_rel_gap", 0.0)
    sched = get_mapper("cpsat", **kw).map(costs)
    rep = check_schedule(costs, sched)
    assert rep.ok, rep.violations
    assert simulate(costs, sched).makespan_s == pytest.approx(sched.makespan_s, rel=1e-12, abs=1e-18)
    st_ = sched.stats
    assert sched.makespan_s <= st_["rounded_makespan_s"] * (1 + 1e-12) + 1e-18
    assert st_["bound_s"] <= sched.makespan_s
    assert st_["incumbent_s"] == sched.makespan_s
    return sched


# ----------------------------------------------------------------------------------------- brute force


def brute_force(costs: CostModel, link_latency_ns: float = 0.0) -> float:
    """Optimal makespan: every assignment within each CIM device's crossbars x every host order consistent
    with the DAG, each timed by an independent evaluator (ops as early as possible; a host op starts after
    the previous one in the order has started, on the earliest free core). Transfers: ``e ns`` per element
    plus the link latency between different devices, nothing on parameter edges."""
    g = costs.workload.graph
    ops = list(g.nodes)
    host = costs.platform.host
    cores = costs.platform.devices[host].cores
    cims = {n: d.crossbars for n, d in costs.platform.devices.items() if d.kind == "puma"}
    lat = costs.latency
    desc = {v: set() for v in ops}
    for v in reversed(list(costs.workload.topological_order())):
        for w in g.successors(v):
            desc[v] |= {w} | desc[w]

    def transfer(u, v, a, b):
        e = g.edges[u, v]
        if a == b or e.get("param"):
            return 0.0
        return e["elements"] * NS + link_latency_ns * NS

    def evaluate(assign, order):
        finish: dict[str, float] = {}

        def ready(v):
            return max((end(u) + transfer(u, v, assign[u], assign[v]) for u in g.predecessors(v)), default=0.0)

        def end(v):
            if v not in finish:  # only CIM ops are computed on demand; host ops are set in order below
                finish[v] = ready(v) + lat[v][assign[v]]
            return finish[v]

        free = [0.0] * cores
        prev_start = 0.0
        for v in order:
            s = max(ready(v), prev_start, min(free))
            free[free.index(min(free))] = s + lat[v][host]
            finish[v] = s + lat[v][host]
            prev_start = s
        return max(end(v) for v in ops)

    def orders(host_ops):
        """Linear extensions of the DAG restricted to the host ops."""
        if not host_ops:
            yield []
            return
        for v in host_ops:
            if not any(v in desc[u] for u in host_ops if u != v):
                rest = [u for u in host_ops if u != v]
                for tail in orders(rest):
                    yield [v, *tail]

    best = float("inf")
    choices = [list(lat[v]) for v in ops]
    for combo in itertools.product(*choices):
        assign = dict(zip(ops, combo, strict=True))
        used = {d: 0 for d in cims}
        for v, d in assign.items():
            if d in cims:
                used[d] += costs.need[v][d]
        if any(used[d] > cims[d] for d in cims):
            continue
        for order in orders([v for v in ops if assign[v] == host]):
            best = min(best, evaluate(assign, order))
    return best


@st.composite
def small_problem(draw):
    n = draw(st.integers(1, 6))
    ops = []
    for i in range(n):
        name = f"o{i}"
        if draw(st.booleans()):
            ops.append(conv_op(name, draw(st.integers(1, 32)), draw(st.integers(1, 24)), draw(st.integers(1, 12)),
                               n_in=draw(st.integers(1, 300)), n_out=draw(st.integers(1, 300)), index=i))
        else:
            ops.append(host_op(name, draw(st.integers(1, 2500)), index=i))
    edges = []
    for j in range(1, n):
        for i in sorted(draw(st.sets(st.integers(0, j - 1), max_size=min(j, 2)))):
            edges.append((ops[i].name, ops[j].name, draw(st.integers(0, 400))))
    wl = Workload.from_ops("random", ops, edges)
    if edges and draw(st.booleans()):
        u, v = edges[0][:2]
        wl.graph.edges[u, v]["param"] = True
    lat_ns = draw(st.sampled_from([0, 5]))
    plat = make_platform(host_cores=draw(st.integers(1, 2)), crossbars_per_core=draw(st.integers(1, 4)),
                         link_latency_ns=lat_ns)
    return CostModel(wl, plat), lat_ns


#: lever sets checked against the brute force: everything (heuristics and bounds usually prove these small
#: cases before CP-SAT runs), the bare CP-SAT model, and the model with its strengthening but no
#: heuristic incumbent or decomposition (CP-SAT does the search)
LEVER_SETS = ("all", "none", "heads_tails,host_load,segments,knapsack,symmetry")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_problem())
def test_matches_brute_force(problem):
    costs, lat_ns = problem
    ref = brute_force(costs, lat_ns)
    for levers in LEVER_SETS:
        sched = solve(costs, levers=levers)
        assert sched.stats["status"] == "optimal"
        # whole nanoseconds everywhere: the 1 ns tick rounds nothing
        assert sched.stats["rounding_bound_s"] <= 1e-15
        assert sched.makespan_s == pytest.approx(ref, rel=1e-9), levers
        assert sched.stats["bound_s"] <= ref * (1 + 1e-9)


def two_cim_platform(host_cores: int, cb1: int, cb2: int, t1: float, t2: float):
    """conftest's platform with a second CIM device ``cim2`` (own crossbars and MVM latency) on the bus."""
    from hetsim.platform import Platform

    data = make_platform(host_cores=host_cores, crossbars_per_core=cb1, t_mvm_ns=t1).model_dump(
        mode="json", exclude_unset=True, exclude={"devices": {"__all__": {"name"}}})
    cim2 = dict(data["devices"]["cim"])
    cim2.update({"t_mvm_ns": t2})
    for k in ("crossbars", "cores"):
        cim2.pop(k, None)
    cim2.update({"cores": 1, "crossbars_per_core": cb2})
    data["devices"]["cim2"] = cim2
    data["links"]["bus"]["connects"] = ["host", "cim", "cim2"]
    return Platform.model_validate(data)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_problem(), st.integers(1, 3), st.sampled_from([30, 100, 300]))
def test_two_cim_devices_match_brute_force(problem, cb2, t2):
    """One Boolean per (op, device) with exactly one true, a budget per CIM device, transfers between the
    two CIM devices over the shared bus."""
    base, lat_ns = problem
    plat = two_cim_platform(base.platform.devices["host"].cores, 1, cb2, 100, t2)
    plat = plat.with_overrides({"links.bus.latency_ns": lat_ns})
    costs = CostModel(base.workload, plat)
    ref = brute_force(costs, lat_ns)
    for levers in ("all", "none"):
        sched = solve(costs, levers=levers)
        assert sched.makespan_s == pytest.approx(ref, rel=1e-9), levers


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_problem(), st.integers(1, 3), st.sampled_from([30, 100, 300]))
def test_the_bound_with_every_budget_never_exceeds_the_optimum(problem, cb2, t2):
    """``multi_load_bound`` (both CIM devices' crossbars counted) never above the brute-force optimum."""
    from hetsim.mappers import _bounds as B

    base, lat_ns = problem
    plat = two_cim_platform(base.platform.devices["host"].cores, 1, cb2, 100, t2)
    costs = CostModel(base.workload, plat.with_overrides({"links.bus.latency_ns": lat_ns}))
    p = B.build_problem(costs, 1e-9)
    head, tail = B.heads_tails(p)
    mb = B.multi_load_bound(p, head, tail)
    assert mb is not None
    assert mb * 1e-9 <= brute_force(costs, lat_ns) * (1 + 1e-9)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_problem())
def test_coarse_tick_stays_within_the_rounding_bound(problem):
    """A 7 ns tick rounds almost every duration up: the schedule stays feasible in real time, its makespan
    is within ``rounding_bound_s`` of the optimum, and ``bound_s`` is still a bound of the real optimum."""
    costs, lat_ns = problem
    ref = brute_force(costs, lat_ns)
    sched = solve(costs, resolution_s=7e-9)
    st_ = sched.stats
    assert st_["tick_s"] == 7e-9
    assert ref * (1 - 1e-9) <= sched.makespan_s <= ref + st_["rounding_bound_s"] + 1e-15
    assert st_["bound_s"] <= ref * (1 + 1e-9)


# ------------------------------------------------------------------------------------------- by hand


def test_diamond_one_crossbar():
    """a -> {b, c} -> d, one crossbar. Offloading c: c runs 200..2350 (a ends at 100, its input takes
    100 ns), its output reaches the host at 2400; b runs on the host 100..2660; d 2660..2760.
    Offloading b instead: b is back at 1400 but c takes the host 100..5220, d ends at 5320.
    All on the host: 100 + 2560 + 5120 + 100 = 7880."""
    costs = CostModel(diamond(), make_platform(crossbars_per_core=1))
    sched = solve(costs)
    assert sched.assignment == {"a": "host", "b": "host", "c": "cim", "d": "host"}
    assert sched.makespan_s == ns(2760)
    assert sched.start_s["d"] == ns(2660)
    assert sched.stats["status"] == "optimal"
    assert sched.stats["mip_gap"] == pytest.approx(0.0, abs=1e-12)


def test_diamond_enough_crossbars():
    """Both convs offloaded: b 200..1350 (+50 back), c 200..2350 (+50 back), d 2400..2500."""
    costs = CostModel(diamond(), make_platform(crossbars_per_core=4))
    sched = solve(costs)
    assert sched.assignment == {"a": "host", "b": "cim", "c": "cim", "d": "host"}
    assert sched.makespan_s == ns(2500)


def _fork(host_cores: int) -> CostModel:
    """a -> {b, c, e} -> d; b, e host-only (3000, 2000 ns), c a conv (host 2560, CIM 100 + 1000 + 50 =
    1150 ns, one crossbar; a->c carries 100 elements, c->d 50); the other edges 10 elements."""
    ops = [host_op("a", 100, 0), host_op("b", 3000, 1), conv_op("c", 16, 16, 10, n_in=100, n_out=50, index=2),
           host_op("e", 2000, 3), host_op("d", 100, 4, op_type="Add")]
    edges = [("a", "b", 10), ("a", "c", 100), ("a", "e", 10), ("b", "d", 10), ("c", "d", 50), ("e", "d", 10)]
    return CostModel(Workload.from_ops("fork", ops, edges), make_platform(host_cores=host_cores, crossbars_per_core=1))


def test_two_core_host_by_hand():
    """Two cores, one crossbar. c on CIM: 200..1350, back at 1400; b and e run side by side 100..3100 and
    100..2100; d 3100..3200. All on the host the best split is {b} | {c, e}: 100 + max(3000, 4560) + 100 =
    4760. One core with c offloaded: 100 + 3000 + 2000 + 100 = 5200."""
    sched = solve(_fork(2))
    assert sched.assignment["c"] == "cim"
    assert sched.makespan_s == ns(3200)
    assert sched.start_s["d"] == ns(3100)
    single = solve(_fork(1))
    assert single.assignment["c"] == "cim"
    assert single.makespan_s == ns(5200)


def test_two_core_host_without_crossbars_splits_the_work():
    """The fork with c too big for the CIM device (4 crossbars of 16x16, budget 1; host 32*32*10 = 10240
    ns) and e of 1536 ns: all on the host, c alone on one core 100..10340, b and e on the other
    100..3100..4636; d 10340..10440. Any other split puts c with b or e: at least 100 + 10240 + 1536 + 100."""
    ops = [host_op("a", 100, 0), host_op("b", 3000, 1), conv_op("c", 32, 32, 10, n_in=100, n_out=50, index=2),
           host_op("e", 1536, 3), host_op("d", 100, 4, op_type="Add")]
    edges = [("a", "b", 10), ("a", "c", 100), ("a", "e", 10), ("b", "d", 10), ("c", "d", 50), ("e", "d", 10)]
    costs = CostModel(Workload.from_ops("fork", ops, edges), make_platform(host_cores=2, crossbars_per_core=1))
    assert costs.latency["c"]["host"] == pytest.approx(10240 * NS)
    sched = solve(costs)
    assert set(sched.assignment.values()) == {"host"}
    assert sched.makespan_s == ns(10440)


# ----------------------------------------------------------------------------------------- degenerate


def test_no_supported_op_is_all_host():
    ops = [host_op("x", 300, 0), host_op("y", 200, 1), host_op("z", 100, 2)]
    costs = CostModel(Workload.from_ops("chain", ops, [("x", "y", 5), ("y", "z", 5)]), make_platform())
    sched = solve(costs)
    assert set(sched.assignment.values()) == {"host"}
    assert sched.makespan_s == ns(600)
    assert sched.stats["status"] == "optimal"


def test_budget_too_small_for_any_op():
    """A 32x32 weight needs 4 crossbars of 16x16; the device has 2."""
    ops = [host_op("x", 100, 0), conv_op("c", 32, 32, 10, n_in=100, n_out=50, index=1)]
    costs = CostModel(Workload.from_ops("w", ops, [("x", "c", 10)]), make_platform(crossbars_per_core=2))
    assert costs.need["c"]["cim"] == 4
    sched = solve(costs)
    assert sched.assignment == {"x": "host", "c": "host"}
    assert sched.makespan_s == ns(100 + 32 * 32 * 10)
    assert sched.stats["presolve"]["too_big_removed"] == 1


def test_single_op():
    one_conv = CostModel(Workload.from_ops("one", [conv_op("c", 16, 16, 10, n_in=100, n_out=50)], []),
                         make_platform())
    sched = solve(one_conv)
    assert sched.assignment == {"c": "cim"}
    assert sched.makespan_s == ns(1150)
    one_relu = CostModel(Workload.from_ops("one", [host_op("r", 700)], []), make_platform())
    sched = solve(one_relu)
    assert sched.assignment == {"r": "host"}
    assert sched.makespan_s == ns(700)


def test_without_levers_the_plain_model_is_exact():
    costs = CostModel(diamond(), make_platform(crossbars_per_core=1))
    sched = solve(costs, levers="none")
    assert sched.makespan_s == ns(2760)
    assert sched.stats["levers"] == []


# ---------------------------------------------------------------------------------------- behaviour


def _strip(stats: dict) -> dict:
    out = {}
    for k, v in stats.items():
        if k in TIME_KEYS:
            continue
        out[k] = _strip(v) if isinstance(v, dict) else v
    return out


def test_deterministic():
    """A 60-op synthetic DAG whose proof needs a CP-SAT search with two workers (interleaved search)."""
    wl = layered_dag(60, width=6, p_conv=0.5, seed=1)
    plat = make_platform(crossbars_per_core=16, crossbar=64, internal_gb_s=10, link_gb_s=10,
                         host_extra={"macs_per_cycle": {8: 256, 32: 256}})
    costs = CostModel(wl, plat)
    a = solve(costs, threads=2)
    b = solve(costs, threads=2)
    assert a.stats["status"] == "optimal"
    assert a.stats["presolve"]["full_model_solved"]
    assert a.assignment == b.assignment
    assert a.order == b.order
    assert a.start_s == b.start_s
    assert _strip(a.stats) == _strip(b.stats)


def test_registered_stats_and_progress():
    assert "cpsat" in MAPPERS
    seen = []
    costs = CostModel(diamond(), make_platform(crossbars_per_core=1))
    sched = solve(costs, progress=seen.append, threads=1, seed=5)
    st_ = sched.stats
    for key in ("operators", "variables", "booleans", "constraints", "solve_time_s", "status", "incumbent_s",
                "bound_s", "mip_gap", "solver", "version", "tick_s", "rounding_bound_s", "presolve", "levers"):
        assert key in st_, key
    assert st_["solver"] == "cp-sat"
    assert st_["operators"] == 4
    assert st_["variables"] > 0 and st_["constraints"] > 0
    assert st_["threads"] == 1 and st_["seed"] == 5
    assert seen and set(seen[0]) == {"time_s", "incumbent_s", "bound_s", "gap"}
    assert seen[-1]["incumbent_s"] >= sched.makespan_s * (1 - 1e-12)


def test_unknown_lever_is_an_input_error():
    from hetsim.errors import InputError

    with pytest.raises(InputError):
        get_mapper("cpsat", levers="warp_drive")


# ----------------------------------------------------------------------------------------- real model


def test_resnet18_int8_qdq_proven_optimal():
    costs = CostModel(load_onnx(PLATFORMS.parent / "workloads" / "resnet18_int8_qdq.onnx"),
                      load_platform(PLATFORMS / "puma.yaml"))
    sched = solve(costs, time_limit_s=25, mip_rel_gap=1e-4)
    assert sched.stats["status"] == "optimal"
    assert sched.stats["mip_gap"] <= 1e-4
    greedy = get_mapper("greedy").map(costs)
    assert sched.makespan_s <= greedy.makespan_s


def test_bottom_levels_of_the_diamond_by_hand():
    """``_bounds.bottom_levels`` (the list schedulers' priority, shared by cpsat, its decomposition and the
    throughput objective), 1 ns ticks, b and c on the CIM: d 100; b 1150 + 50 + 100 = 1300; c 2150 + 50 + 100 =
    2300; a 100 + 100 + max(1300, 2300) = 2500 (conftest.diamond's times)."""
    from hetsim.mappers import _bounds as B

    costs = CostModel(diamond(), make_platform())
    p = B.build_problem(costs, 1e-9)
    got = B.bottom_levels(p, {"a": "host", "b": "cim", "c": "cim", "d": "host"})
    assert got == {"d": 100, "c": 2300, "b": 1300, "a": 2500}
    assert B.bottom_levels(p, dict.fromkeys("abcd", "host")) == {"d": 100, "c": 5220, "b": 2660, "a": 5320}


def test_capacity_message_names_the_devices_unit():
    """The ops only the NPU runs (the host and the CIM refused its convolutions) need more weight memory than it
    has, though each fits alone: cpsat's one-line refusal counts bytes, the NPU's unit (it had said "crossbars"
    of every device)."""
    from hetsim.errors import MappingError
    from hetsim.workload import load_onnx

    plat = load_platform(PLATFORMS / "cim-npu.yaml").with_overrides({
        "devices.host.supported_ops": ["Relu", "Add", "GlobalAveragePool", "Flatten", "Gemm", "Reshape"],
        "devices.cim.supported_ops": ["Gemm"], "devices.npu.weight_memory_kib": 200})
    costs = CostModel(load_onnx(PLATFORMS.parent / "workloads" / "resnet20_cifar10.onnx"), plat)
    with pytest.raises(MappingError, match=r"ops only 'npu' runs need 271,040 B, 204,800 B available"):
        get_mapper("cpsat", time_limit_s=5.0).map(costs)
