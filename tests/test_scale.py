"""Correctness of what makes the exact mapper and the sweep scale: the chain DP, the knapsack tables and
bounds against brute force, HEFT's gap search, the synthetic chain and fan-out, and the sweep's split of the cores.
No timings here (they are measured by ``bench/`` and recorded in docs/performance.md)."""

from __future__ import annotations

import bisect
import itertools

import pytest
from conftest import conv_op, host_op, make_platform
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_cpsat import brute_force, small_problem

from hetsim.costs import CostModel
from hetsim.dse.sweep import plan_parallelism
from hetsim.mappers import _bounds as B
from hetsim.mappers import get_mapper
from hetsim.mappers._chain import is_chain, solve_chain
from hetsim.mappers.cpsat import ALL_LEVERS
from hetsim.mappers.heft import _Core
from hetsim.sim import simulate
from hetsim.workload import Workload
from hetsim.workload.synthetic import chain, fan_out

NO_CHAIN = [x for x in ALL_LEVERS if x != "chain"]


# ------------------------------------------------------------------------------------------- chain DP
@st.composite
def small_chain(draw):
    n = draw(st.integers(1, 7))
    ops = []
    for i in range(n):
        if draw(st.booleans()):
            ops.append(conv_op(f"o{i}", draw(st.integers(1, 32)), draw(st.integers(1, 24)), draw(st.integers(1, 12)),
                               n_in=draw(st.integers(1, 300)), n_out=draw(st.integers(1, 300)), index=i))
        else:
            ops.append(host_op(f"o{i}", draw(st.integers(1, 2500)), index=i))
    edges = [(ops[i - 1].name, ops[i].name, draw(st.integers(0, 400))) for i in range(1, n)]
    lat_ns = draw(st.sampled_from([0, 5]))
    plat = make_platform(host_cores=draw(st.integers(1, 2)), crossbars_per_core=draw(st.integers(1, 4)),
                         link_latency_ns=lat_ns)
    return CostModel(Workload.from_ops("chain", ops, edges), plat), lat_ns


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_chain())
def test_chain_dp_matches_brute_force_and_cpsat(problem):
    costs, lat_ns = problem
    ref = brute_force(costs, lat_ns)
    s = get_mapper("cpsat", time_limit_s=20).map(costs)
    assert s.stats["solution_source"] == "chain" and s.stats["status"] == "optimal"
    assert s.makespan_s == pytest.approx(ref, rel=1e-9)
    assert s.stats["bound_s"] <= ref * (1 + 1e-9)
    general = get_mapper("cpsat", time_limit_s=20, levers=NO_CHAIN, mip_rel_gap=0).map(costs)
    assert general.stats["solution_source"] != "chain"
    assert general.makespan_s == pytest.approx(s.makespan_s, rel=1e-9)
    assert simulate(costs, s).makespan_s == pytest.approx(s.makespan_s, rel=1e-9)


def test_chain_dp_by_hand():
    """a (Relu 100 ns) -> b (Conv: host 2560, CIM 1150, 1 crossbar) -> c (Conv: host 5120, CIM 2150, 1 crossbar),
    1 crossbar, transfers 1 ns per element: b's output is 50 elements, a's 100.
    All host: 100 + 2560 + 5120 = 7780. c on CIM: 100 + 2560 + 50 (b's output moves) + 2150 = 4860.
    b on CIM: 100 + 100 (a's output) + 1150 + 50 + 5120 = 6520. Optimum: c on CIM, 4860 ns."""
    ops = [host_op("a", 100, 0), conv_op("b", 16, 16, 10, 100, 50, 1), conv_op("c", 16, 16, 20, 100, 50, 2)]
    wl = Workload.from_ops("chain", ops, [("a", "b", 100), ("b", "c", 50)])
    costs = CostModel(wl, make_platform(crossbars_per_core=1))
    p = B.build_problem(costs, 1e-9)
    assert is_chain(p)
    assign, ticks = solve_chain(p)
    assert ticks == 4860 and assign == {"a": "host", "b": "host", "c": "cim"}


def test_is_chain_refuses_a_fork():
    wl = Workload.from_ops("fork", [host_op("a", 1, 0), host_op("b", 1, 1), host_op("c", 1, 2)],
                           [("a", "b", 1), ("a", "c", 1)])
    p = B.build_problem(CostModel(wl, make_platform()), 1e-9)
    assert not is_chain(p) and solve_chain(p) is None


# ------------------------------------------------------------------------------------------- bounds
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_problem())
def test_root_bounds_never_exceed_the_brute_force_optimum(problem):
    costs, lat_ns = problem
    ref_ticks = round(brute_force(costs, lat_ns) / 1e-9)
    p = B.build_problem(costs, 1e-9)
    head, tail = B.heads_tails(p)
    assert B.critical_path(p, head, tail) <= ref_ticks
    lb = B.load_bound(p, head, tail)
    if lb is not None:
        assert lb.bound() <= ref_ticks
        for stay, go in lb.per_op().values():
            assert min(stay, go) <= ref_ticks  # each op either stays or goes in the optimum


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(-3, 20)), max_size=7), st.integers(0, 12))
def test_knapsack_table_is_the_brute_force_knapsack(items, cap):
    tab = B.knapsack_table(items, cap)
    for c in range(cap + 1):
        best = max(sum(v for _, v in sub) for k in range(len(items) + 1) for sub in itertools.combinations(items, k)
                   if sum(w for w, _ in sub) <= c and all(v > 0 for _, v in sub)) if items else 0
        assert tab[c] == best


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(1, 20)), max_size=7), st.integers(0, 12))
def test_knapsack_rows_and_pick_are_the_brute_force_knapsack(items, cap):
    """The row-by-row table (the host-load bound's prefix/suffix tables) and the picked set (the decomposition's
    knapsack move) against brute force: the pick fits, and its value is the optimum."""
    rows = B.knapsack_rows(items, cap)
    assert len(rows) == len(items) + 1
    best = max(sum(v for _, v in sub) for k in range(len(items) + 1) for sub in itertools.combinations(items, k)
               if sum(w for w, _ in sub) <= cap)
    assert rows[-1][cap] == best
    pick = B.knapsack_pick(items, cap)
    assert sum(items[i][0] for i in pick) <= cap and sum(items[i][1] for i in pick) == best


# ------------------------------------------------------------------------------------------- HEFT gaps
def _scan(intervals, ready, dur):
    """Reference: first gap of the sorted busy intervals that fits (HEFT's insertion policy)."""
    t = ready
    for s, e in intervals:
        if e <= t:
            continue
        if s - t >= dur:
            return t
        t = max(t, e)
    return t


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 60), st.integers(1, 15)), max_size=20))
def test_heft_gap_search_equals_the_interval_scan(requests):
    core, busy = _Core(), []
    for ready, dur in requests:
        s = core.earliest(float(ready), float(dur))
        assert s == _scan(busy, ready, dur)
        core.insert(s, s + dur)
        bisect.insort(busy, (s, s + dur))


# ------------------------------------------------------------------------------------------- synthetic
def test_synthetic_chain_and_fan_out():
    c = chain(50, seed=3)
    assert len(c.graph) == 50 and c.graph.number_of_edges() == 49
    assert all(c.graph.in_degree(v) <= 1 and c.graph.out_degree(v) <= 1 for v in c.graph)
    assert [o.op_type for o in map(c.op, c.graph)] == [o.op_type for o in map(chain(50, seed=3).op, c.graph)]
    f = fan_out(30)
    assert len(f.graph) == 32 and f.graph.out_degree("src") == 30 and f.graph.in_degree("sink") == 30
    with pytest.raises(ValueError):
        chain(0)


# ------------------------------------------------------------------------------------------- sweep
@given(st.integers(1, 300), st.one_of(st.none(), st.integers(1, 8)), st.one_of(st.none(), st.integers(1, 8)),
       st.integers(1, 16))
def test_sweep_never_oversubscribes_the_cores_by_default(n, workers, threads, cores):
    w, t = plan_parallelism(n, workers, threads, cores=cores)
    assert w >= 1 and t >= 1
    if workers and threads:
        assert (w, t) == (workers, threads)  # the user's override
    elif workers:
        assert w == workers and (t == 1 or w * t <= cores)
    elif threads:
        assert t == threads and (w == 1 or w * t <= cores)
    else:
        assert w * t <= cores and w <= n
        assert w == min(n, cores)  # one point per core while there are points enough


def test_reported_bound_is_never_below_the_trivial_bounds():
    """With every lever off and a time limit too short for a proof, the bound still counts the critical path and
    the host-load (knapsack) bound: a fan-out of 40 branches, whose host work dominates."""
    costs = CostModel(fan_out(40, seed=1), make_platform(crossbars_per_core=2, crossbar=64))
    s = get_mapper("cpsat", time_limit_s=0.5, levers="none").map(costs)
    p = B.build_problem(costs, s.stats["tick_s"])
    head, tail = B.heads_tails(p)
    trivial = max(B.critical_path(p, head, tail), B.load_bound(p, head, tail).bound())
    assert trivial > 0
    assert s.stats["presolve"]["root_bound_s"] == pytest.approx(trivial * p.tick)  # before any CP-SAT call
    assert s.stats["bound_s"] >= min(trivial * p.tick - p.rounding_bound_s, s.makespan_s) - 1e-12
