"""cpsat never hands CP-SAT a parameter set that aborts the interpreter (hetsim.mappers.cpsat, ``_solve``).

With ``use_dynamic_precedence_in_disjunctive`` on, OR-Tools 9.15's CP-SAT (2 workers, our solution hint) hit a
CHECK failure on the instance stored in ``tests/data/cpsat_abort_instance.json`` (a random host + PUMA CIM +
NPU instance of ``random_setup(npu=True)`` with a split bus, found by replaying the test suite's draws one by
one): "We currently do not support adding conflicting constraint at positive level", then SIGABRT, which killed
the pytest-xdist worker running ``test_every_mapper_on_host_cim_npu`` about once in ten full runs (the crash
named in docs/fuzzing.md). The solve runs in a subprocess, so a regression kills that subprocess, not the suite.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "cpsat_abort_instance.json"

SCRIPT = r'''
import json, sys
from hetsim.check import check_schedule
from hetsim.costs import CostModel
from hetsim.mappers import get_mapper
from hetsim.platform import Platform
from hetsim.sim import simulate
from hetsim.workload.op import Op, Workload

d = json.load(open(sys.argv[1]))
wl = Workload.from_ops("random", [Op.from_dict(o) for o in d["ops"]], [(u, v, b) for u, v, b, _ in d["edges"]])
for u, v, _, param in d["edges"]:
    wl.graph.edges[u, v]["param"] = param
costs = CostModel(wl, Platform.model_validate(d["platform"]))
sched = get_mapper("cpsat", time_limit_s=1.0).map(costs)
assert check_schedule(costs, sched).ok
assert simulate(costs, sched).makespan_s == sched.makespan_s
print("mapped", sched.stats.get("status"), sched.makespan_s)
'''


def test_cpsat_maps_the_instance_that_aborted_cp_sat():
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(DATA)], capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert "conflicting constraint" not in proc.stderr, proc.stderr[-2000:]
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    assert proc.stdout.startswith("mapped"), proc.stdout


def _instance(path: Path):
    import json

    from hetsim.costs import CostModel
    from hetsim.platform import Platform
    from hetsim.workload.op import Op, Workload

    d = json.loads(path.read_text())
    wl = Workload.from_ops("random", [Op.from_dict(o) for o in d["ops"]], [(u, v, b) for u, v, b, _ in d["edges"]])
    for u, v, _, param in d["edges"]:
        wl.graph.edges[u, v]["param"] = param
    return CostModel(wl, Platform.model_validate(d["platform"]))


def test_cpsat_on_split_bus_instances_whose_decomposition_failed():
    """Two random host + CIM + NPU instances with a split bus (no link joins the CIM and the NPU) on which the
    decomposition's refinement built a sub-problem offering an op a device its fixed neighbours cannot reach
    (``KeyError: 'cim'`` / ``'npu'`` from the model's heads) and a horizon over a transfer with no linked device
    pair (``max()`` of nothing): cpsat now maps both, its schedule passes the checker, and it is no longer than
    any heuristic's."""
    from hetsim.check import check_schedule
    from hetsim.mappers import get_mapper

    for seed in (106, 114):
        costs = _instance(ROOT / "tests" / "data" / f"cpsat_split_bus_{seed}.json")
        sched = get_mapper("cpsat", time_limit_s=1.0).map(costs)
        assert check_schedule(costs, sched).ok, seed
        for other in ("all-host", "greedy", "heft"):
            assert sched.makespan_s <= get_mapper(other).map(costs).makespan_s * (1 + 1e-9), (seed, other)


def test_cpsat_optimal_is_never_above_another_schedule_on_this_instance():
    """A random host + CIM + NPU instance (19 ops) on which cpsat (default levers) reported ``optimal`` at
    13.190 us and a bound equal to it, while the same cpsat without the ``fixing`` lever, or without
    ``decompose``, proves 12.998 us optimal (and the ilp mapper finds 12.998 us). The cause: ``fixing`` left
    op o01 the CIM and the NPU only (not the host), and the decomposition's segment knapsack counted every op
    the host cannot run on the CIM's budget (o01's 2 crossbars plus o18's 4 > 4): no budget was feasible,
    the segment's bound became infinite, its greedy schedule (42.054 us) counted as proven and the
    decomposition's bound (42.354 us, clipped to the incumbent) closed the gap. Fails on the old code."""
    from hetsim.mappers import get_mapper

    costs = _instance(ROOT / "tests" / "data" / "cpsat_wrong_optimal.json")
    plain = get_mapper("cpsat", time_limit_s=5.0, levers="none").map(costs)
    assert plain.stats.get("status") == "optimal"
    default = get_mapper("cpsat", time_limit_s=5.0).map(costs)
    assert default.makespan_s <= plain.makespan_s * (1 + 1e-4)
    pre = default.stats["presolve"]
    assert "decompose" in pre and "decompose_bound_invalid" not in pre
    optimum_s = plain.stats["objective_ticks"] * plain.stats["tick_s"]  # the rounded problem's optimum
    assert pre["decompose_bound_s"] <= optimum_s * (1 + 1e-9)
    assert default.stats["bound_s"] <= plain.makespan_s * (1 + 1e-9)


def test_cpsat_on_a_split_bus_instance_whose_host_cannot_run_every_op():
    """A random host + CIM + NPU instance (13 ops, split bus, the host cannot run its MatMuls; the hunt of
    docs/fuzzing.md) that ``levers='none'`` proves 16.027 us optimal, on which cpsat failed: with every lever a
    TypeError (no heuristic schedule, and the decomposition's, its floating ops added, over a budget: no candidate
    at all), without ``fixing`` a MappingError from a segment whose ops, its cut devices fixed, needed more NPU
    memory than there is (an infeasible segment, not an infeasible problem). Fails on the old code."""
    from hetsim.check import check_schedule
    from hetsim.mappers import get_mapper
    from hetsim.mappers.cpsat import ALL_LEVERS

    costs = _instance(ROOT / "tests" / "data" / "cpsat_split_bus_hostless.json")
    plain = get_mapper("cpsat", time_limit_s=5.0, levers="none").map(costs)
    assert plain.stats["status"] == "optimal"
    for levers in (None, [x for x in ALL_LEVERS if x != "fixing"]):
        kw = {} if levers is None else {"levers": levers}
        sched = get_mapper("cpsat", time_limit_s=5.0, **kw).map(costs)
        assert check_schedule(costs, sched).ok
        assert sched.makespan_s <= plain.makespan_s * (1 + 1e-4), levers
        assert sched.stats["bound_s"] <= plain.makespan_s * (1 + 1e-9), levers


def test_a_bound_is_what_was_proven_when_cp_sat_stops_at_its_gap():
    """CP-SAT reports OPTIMAL as soon as its gap is within ``relative_gap_limit`` (cpsat's ``mip_rel_gap``), its
    bound then below its objective. cpsat took the incumbent as the bound in that case: with ``mip_rel_gap=0.5``
    on this 29-op host + CIM instance (one worker: CP-SAT stops at its first solution, deterministic) it reported
    ``proven_exact`` and a bound of 33 us where heft finds a shorter schedule. Fails on the old code."""
    from hetsim.mappers import get_mapper

    costs = _instance(ROOT / "tests" / "data" / "cpsat_gap_bound.json")
    loose = get_mapper("cpsat", levers="none", mip_rel_gap=0.5, threads=1, time_limit_s=10.0).map(costs)
    st_ = loose.stats
    assert st_["status"] == "optimal"  # within its 50 % gap
    heft = get_mapper("heft").map(costs).makespan_s  # 26.1 us
    assert st_["bound_s"] <= heft * (1 + 1e-9)
    assert st_["proven_exact"] == (st_["bound_ticks"] == st_["objective_ticks"])
    assert st_["mip_gap"] <= 0.5
