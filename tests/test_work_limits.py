"""Deterministic limits of the exact mappers (hetsim/mappers/_limits.py): a mapping stopped by its work limit
gives the same schedule on a quiet machine and on a loaded one whose clock runs 10x faster; the wall-clock limit
stays available; the report says which limit stopped a solve.

The load: two busy-loop processes beside the mapper (the machine's cores shared, CP-SAT's and HiGHS's own clocks
slowed against their work); the fast clock: ``time.perf_counter`` patched to run 10x faster than the real one,
so every decision of hetsim's own taken on the wall clock (a phase's share, a deadline) would move. Neither may
change the result of a work-limited run."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from hetsim.costs import CostModel
from hetsim.mappers import get_mapper
from hetsim.mappers._limits import CPSAT_WORK, Budget, ilp_nodes
from hetsim.platform import load_platform
from hetsim.report.text import solver_line
from hetsim.workload.synthetic import layered_dag

#: statistics that are times (they differ between any two runs)
TIMES = ("solve_time_s", "total_time_s", "solver_calls_s", "phases_s", "build_time_s", "fluid_time_s")


def _outcome(sched) -> dict:
    """What a run decided: the assignment, the serial devices' orders, the makespan, and every statistic that is
    not a time (status, bound, gap, the presolve record, the work used)."""
    st = {k: v for k, v in sched.stats.items() if k not in TIMES}
    pre = st.get("presolve")
    if isinstance(pre, dict):
        st["presolve"] = {k: v for k, v in pre.items() if not k.endswith("time_s")}
    return {"assignment": dict(sched.assignment), "order": {d: list(o) for d, o in sched.order.items()},
            "makespan_s": sched.makespan_s, "stats": st}


def _loaded(run, monkeypatch):
    """``run()`` beside two busy-loop processes, with ``time.perf_counter`` running 10x faster."""
    real = time.perf_counter
    base = real()
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        with monkeypatch.context() as m:
            m.setattr(time, "perf_counter", lambda: base + 10.0 * (real() - base))
            return run()
    finally:
        for p in busy:
            p.kill()
            p.wait()


@pytest.fixture(scope="module")
def costs():
    """150 ops on PUMA: neither mapper proves it within the small limits below (the tests assert so)."""
    return CostModel(layered_dag(150, seed=1), load_platform("platforms/puma.yaml"))


@pytest.fixture(scope="module")
def small():
    """20 ops on PUMA: HiGHS needs more than 3 branch-and-bound nodes (asserted below)."""
    return CostModel(layered_dag(20, seed=1), load_platform("platforms/puma.yaml"))


def test_cpsat_work_limit_same_schedule_under_load_and_fast_clock(costs, monkeypatch):
    """Two workers (CP-SAT's interleaved search), a work limit it stops at: the same schedule, bound and work."""
    def run():
        return get_mapper("cpsat", work_limit=0.05).map(costs)

    quiet = run()
    assert quiet.stats["status"] == "work_limit"  # the limit stopped it: the test can tell
    assert quiet.stats["work_limit"] == 0.05 and quiet.stats["time_limit_s"] is None
    assert quiet.stats["work_used"] > 0
    loaded = _loaded(run, monkeypatch)
    assert _outcome(loaded) == _outcome(quiet)
    assert "work limit (0.05 deterministic s)" in solver_line(quiet.stats)


def test_cpsat_one_worker_same_schedule_under_load(costs, monkeypatch):
    def run():
        return get_mapper("cpsat", work_limit=0.05, threads=1).map(costs)

    quiet = run()
    assert quiet.stats["status"] == "work_limit"
    assert _outcome(_loaded(run, monkeypatch)) == _outcome(quiet)


def test_ilp_node_limit_same_schedule_under_load(small, monkeypatch):
    def run():
        return get_mapper("ilp", work_limit=3).map(small)

    quiet = run()
    assert quiet.stats["status"] == "work_limit" and quiet.stats["nodes"] == 3
    assert _outcome(_loaded(run, monkeypatch)) == _outcome(quiet)
    assert "work limit (3 nodes)" in solver_line(quiet.stats)


def test_defaults_are_work_limits_and_a_time_limit_alone_replaces_them(small):
    """No limit given: the work budgets; ``time_limit_s`` alone: the wall clock only (as before)."""
    from hetsim.mappers.ilp import build_model

    s = get_mapper("ilp").map(small)
    assert s.stats["work_limit"] == ilp_nodes(len(build_model(small).a_value)) and s.stats["time_limit_s"] is None
    assert ilp_nodes(252) == 19_841 and ilp_nodes(10**9) == 10  # ILP_WORK // nonzeros, at least ILP_MIN_NODES
    assert get_mapper("ilp", time_limit_s=5).map(small).stats["work_limit"] is None
    assert get_mapper("ilp", time_limit_s=5, work_limit=7).map(small).stats["work_limit"] == 7
    s = get_mapper("cpsat").map(small)
    assert s.stats["work_limit"] == CPSAT_WORK and s.stats["time_limit_s"] is None
    s = get_mapper("cpsat", time_limit_s=20).map(small)
    assert s.stats["work_limit"] is None and s.stats["time_limit_s"] == 20


class _Solver:
    """The two fields :meth:`Budget.charge` reads from a CP-SAT solver."""

    def __init__(self, det: float, wall: float, max_time: float):
        self.deterministic_time, self.wall_time = det, wall
        self.parameters = type("P", (), {"max_time_in_seconds": max_time})()


def test_budget_both_limits_first_reached_stops(monkeypatch):
    """Work 2 deterministic s and 10 wall s: the clock is the further of the two shares, in deterministic
    seconds; each CP-SAT call gets the same share of both; the status names the one that stopped it."""
    now = [100.0]
    monkeypatch.setattr(time, "perf_counter", lambda: now[0])
    b = Budget(2.0, 10.0, default_work=99.0)
    assert b.left() == 2.0
    prm = type("P", (), {})()
    b.set_params(prm, 1.0)
    assert prm.max_deterministic_time == 1.0 and prm.max_time_in_seconds == 5.0
    b.charge(_Solver(0.5, 1.0, 5.0), proven=False)  # stopped by its work share, the wall far from its cap
    assert b.used() == 0.5 and b.status() == "work_limit"
    now[0] += 6.0  # 60 % of the wall clock against 25 % of the work
    assert b.used() == pytest.approx(1.2) and b.left() == pytest.approx(0.8)
    b.charge(_Solver(0.1, 4.0, 4.0), proven=False)  # its wall cap reached
    assert b.status() == "time_limit"
    only_wall = Budget(None, 10.0, default_work=99.0)
    assert only_wall.work is None and only_wall.left() == 10.0
    assert Budget(None, None, default_work=3.0).work == 3.0


def test_spikeduet_work_limit_is_deterministic_with_an_honest_gap(monkeypatch):
    """The SNN plan search stops after ``work_limit`` candidate schedules: the same plan under load and a fast
    clock, and its gap bounds the distance to the exact search's optimum."""
    from hetsim.snn.activity_costs import ActivityCostModel
    from hetsim.snn.synthetic import synthetic_snn
    from hetsim.snn.unroll import unroll

    snn = synthetic_snn([16] * 6, 8, density=0.2, samples=3, seed=1)   # 5 layers: 7^5 = 16,807 plans
    cm = ActivityCostModel(unroll(snn), load_platform("platforms/efr32mg24.yaml"), "plan")

    def run():
        return get_mapper("spikeduet", work_limit=3).map(cm)

    quick = run()
    st = quick.stats
    assert st["status"] == "work_limit" and st["evaluated"] == 3 and 0 <= st["gap"] < 1
    assert _outcome(_loaded(run, monkeypatch)) == _outcome(quick)
    exact = get_mapper("spikeduet", work_limit=10**6).map(cm)
    e, q = exact.stats["plan_mean_latency_s"], st["plan_mean_latency_s"]
    assert exact.stats["status"] == "optimal" and e <= q and e >= q * (1 - st["gap"]) - 1e-15


def test_cli_work_and_time_limits_reach_the_mapper(capsys):
    """``--work-limit`` and ``--time-limit`` set the mapper's ``work_limit`` and ``time_limit_s`` (both kept in the
    summary's stats); ``--work-limit`` is refused for a mapper without one, and must be whole for ``ilp``."""
    import json

    from conftest import assert_input_error, run_cli

    net = "workloads/resnet20_cifar10.onnx"
    code, out, err = run_cli(capsys, "run", "platforms/puma.yaml", net, "--work-limit", "0.5", "--time-limit", "60",
                             "--json")
    assert code == 0, err
    st = json.loads(out)["mapper_stats"]
    assert (st["work_limit"], st["time_limit_s"], st["work_unit"]) == (0.5, 60.0, "deterministic s")
    code, out, err = run_cli(capsys, "run", "platforms/puma.yaml", net, "--json")
    st = json.loads(out)["mapper_stats"]
    assert (st["work_limit"], st["time_limit_s"]) == (CPSAT_WORK, None)
    assert_input_error(*run_cli(capsys, "run", "platforms/puma.yaml", net, "--mapper", "heft", "--work-limit",
                                "3")[::2], "--work-limit does not apply to --mapper heft")
    assert_input_error(*run_cli(capsys, "run", "platforms/puma.yaml", net, "--mapper", "ilp", "--work-limit",
                                "2.5")[::2], "must be an integer")
