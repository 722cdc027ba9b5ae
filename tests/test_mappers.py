"""Tests of the mappers (all-host, greedy), the mapper registry and make_schedule.

Hand-made graphs on the round-number platform of ``conftest`` (host: macs ns; CIM: n_in + 100*n_mvm + n_out
ns; bus: elements ns).
"""

from __future__ import annotations

import inspect
import sys

import pytest
from conftest import conv_op, diamond, host_op, make_platform, ns, random_setup
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hetsim.check import check_schedule
from hetsim.costs import CostModel
from hetsim.errors import InputError, MappingError
from hetsim.mappers import MAPPERS, get_mapper, make_schedule
from hetsim.platform import Platform
from hetsim.schedule import Schedule
from hetsim.sim import list_schedule, simulate
from hetsim.workload import Workload


def _fan(budget: int = 4) -> CostModel:
    """src -> {p, q, r} -> sink, every edge 10 elements (10 ns on the bus), 16x16 crossbars.

    ====  ================  =========  =========================  ==========  ====================
    op    GEMM m_v x n_v    host (ns)  CIM (ns) load+mvm+store    crossbars   saved / crossbar
    ====  ================  =========  =========================  ==========  ====================
    src   --                10         --                         --          --
    p     16 x 32, 10 mvm   5120       10 + 1000 + 10 = 1020      1*2 = 2     (5120-1020)/2 = 2050
    q     16 x 16, 10 mvm   2560       1020                       1*1 = 1     (2560-1020)/1 = 1540
    r     16 x 48, 10 mvm   7680       1020                       1*3 = 3     (7680-1020)/3 = 2220
    sink  --                10         --                         --          --
    ====  ================  =========  =========================  ==========  ====================
    """
    ops = [
        host_op("src", 10, 0),
        conv_op("p", 16, 32, 10, n_in=10, n_out=10, index=1),
        conv_op("q", 16, 16, 10, n_in=10, n_out=10, index=2),
        conv_op("r", 16, 48, 10, n_in=10, n_out=10, index=3),
        host_op("sink", 10, 4, op_type="Add"),
    ]
    edges = [("src", x, 10) for x in "pqr"] + [(x, "sink", 10) for x in "pqr"]
    return CostModel(Workload.from_ops("fan", ops, edges), make_platform(cim_cores=1, crossbars_per_core=budget))


def test_registry():
    assert {"all-host", "greedy"} <= set(MAPPERS)
    assert get_mapper("greedy").name == "greedy"
    assert get_mapper("greedy", min_gain=0.1).min_gain == 0.1
    with pytest.raises(InputError, match="unknown mapper 'nope'.*all-host.*greedy"):
        get_mapper("nope")


# ---------------------------------------------------------------------------------------- all-host


def test_all_host_single_core_is_sum_of_host_latencies():
    costs = _fan()
    s = get_mapper("all-host").map(costs)
    assert set(s.assignment.values()) == {"host"}
    assert s.order["host"] == ["src", "p", "q", "r", "sink"]  # topological (index) order
    assert s.placement == {}
    # serial: 10 + 5120 + 2560 + 7680 + 10 = 15380 ns
    assert s.makespan_s == ns(15380)
    assert simulate(costs, s).makespan_s == ns(15380)
    assert s.mapper == "all-host"


def test_all_host_refuses_ops_the_host_cannot_run():
    wl = Workload.from_ops("t", [host_op("r", 10), conv_op("c", 4, 4, 1, n_in=1, n_out=1, index=1)], [])
    costs = CostModel(wl, make_platform(host_extra={"supported_ops": ["Relu"]}))
    with pytest.raises(MappingError, match="'c'"):
        get_mapper("all-host").map(costs)


# ------------------------------------------------------------------------------------------ greedy


def test_greedy_picks_by_saving_per_crossbar_within_budget():
    costs = _fan(budget=4)
    s = get_mapper("greedy").map(costs)
    # visit order by saved time per crossbar: r (2220), p (2050), q (1540).
    #  r: 3 crossbars fit 4; host src 0-10, p 10-5130, q 5130-7690; r on CIM 20-1040 -> sink 7690-7700:
    #     7700 < 15380, kept, 1 crossbar left
    #  p: needs 2 > 1 left: skipped
    #  q: 1 fits; host src 0-10, p 10-5130; q, r on CIM (transfers 10-20, 20-1040, 1040-1050):
    #     sink 5130-5140 < 7700, kept
    assert s.assignment == {"src": "host", "p": "host", "q": "cim", "r": "cim", "sink": "host"}
    assert s.makespan_s == ns(5140)
    assert simulate(costs, s).makespan_s == ns(5140)
    # Eq. 14: 3 + 1 = 4 <= C = 4
    assert sum(costs.need[v]["cim"] for v, d in s.assignment.items() if d == "cim") == 4
    assert s.placement == {"r": [(0, 3)], "q": [(0, 1)]}
    assert s.order["host"] == ["src", "p", "sink"] and s.order["cim"] == ["q", "r"]
    assert s.stats["offloaded"] == 2


def test_greedy_larger_budget_offloads_all_three():
    costs = _fan(budget=6)
    s = get_mapper("greedy").map(costs)
    # r (3) then p (2) then q (1) = 6 crossbars: host runs src 0-10 and sink; every conv takes
    # 10 ns transfer + 1020 + 10 ns transfer -> sink 1050-1060
    assert {v for v, d in s.assignment.items() if d == "cim"} == {"p", "q", "r"}
    assert s.makespan_s == ns(1060)


def test_greedy_tiny_budget_offloads_only_what_fits():
    costs = _fan(budget=1)
    s = get_mapper("greedy").map(costs)
    # only q (1 crossbar) fits: src 0-10, p 10-5130, r 5130-12810; q on CIM; sink 12810-12820
    assert s.assignment["q"] == "cim" and s.assignment["p"] == s.assignment["r"] == "host"
    assert s.makespan_s == ns(12820)


def test_greedy_keeps_op_on_host_when_transfers_do_not_pay():
    # src -> x -> sink with 5000-element edges: on the CIM x costs 10 + 1000 + 10 = 1020 ns instead of
    # 16*16*10 = 2560 ns on the host, but the two transfers add 2 * 5000 ns:
    #   all-host: 10 + 2560 + 10 = 2580; offloaded: 10 + 5000 + 1020 + 5000 + 10 = 11040 -> stay on the host
    ops = [host_op("src", 10, 0), conv_op("x", 16, 16, 10, n_in=10, n_out=10, index=1), host_op("sink", 10, 2)]
    costs = CostModel(Workload.from_ops("t", ops, [("src", "x", 5000), ("x", "sink", 5000)]), make_platform())
    s = get_mapper("greedy").map(costs)
    assert set(s.assignment.values()) == {"host"}
    assert s.makespan_s == ns(2580)
    assert s.stats["candidates"] == 1 and s.stats["evaluated"] == 1 and s.stats["offloaded"] == 0


def test_greedy_min_gain():
    # diamond (all-host 7880 ns). Saved per crossbar: c (5120-2150)/1 = 2970 before b (2560-1150)/1 = 1410.
    #   c: a 0-100, b 100-2660 on the host, c 200-2350 on the CIM, c->d 2350-2400; d 2660-2760 < 7880: kept
    #   b: both on the CIM: 2500 ns (test_sim's hand computation) < 2760: kept
    costs = CostModel(diamond(), make_platform())
    s = get_mapper("greedy").map(costs)
    assert s.assignment == {"a": "host", "b": "cim", "c": "cim", "d": "host"}
    assert s.makespan_s == ns(2500)
    # a required relative gain of 100% can never be met: nothing is offloaded
    s = get_mapper("greedy", min_gain=1.0).map(costs)
    assert set(s.assignment.values()) == {"host"}


def test_greedy_places_host_unsupported_ops_first():
    # the host cannot run Conv: c must go to the CIM (1 crossbar), leaving 1 of 2 crossbars for the rest
    ops = [host_op("r", 10, 0), conv_op("c", 4, 4, 1, n_in=1, n_out=1, index=1)]
    costs = CostModel(
        Workload.from_ops("t", ops, [("r", "c", 1)]),
        make_platform(crossbars_per_core=2, host_extra={"supported_ops": ["Relu"]}),
    )
    s = get_mapper("greedy").map(costs)
    assert s.assignment == {"r": "host", "c": "cim"}
    # r 0-10, r->c 1 ns 10-11, c 1 + 100 + 1 = 102 ns: 11-113
    assert s.makespan_s == ns(113)
    costs0 = CostModel(
        Workload.from_ops("t", ops + [conv_op("c2", 4, 4, 1, n_in=1, n_out=1, index=2)], []),
        make_platform(crossbars_per_core=1, host_extra={"supported_ops": ["Relu"]}),
    )
    with pytest.raises(MappingError, match="crossbars"):  # c and c2 need 2 crossbars, only 1 exists
        get_mapper("greedy").map(costs0)


def test_make_schedule_rejects_over_budget_assignment():
    costs = _fan(budget=4)
    with pytest.raises(MappingError, match="Eq. 14"):  # p + q + r = 2 + 1 + 3 = 6 > 4
        make_schedule(costs, {"src": "host", "p": "cim", "q": "cim", "r": "cim", "sink": "host"}, "x")


def test_greedy_yolov5n_respects_budget_and_replays(yolov5n_costs):
    costs = yolov5n_costs
    s = get_mapper("greedy").map(costs)
    cap = costs.platform.devices["cim"].crossbars
    assert cap == 100
    used = sum(costs.need[v]["cim"] for v, d in s.assignment.items() if d == "cim")
    assert 0 < used <= cap  # Eq. 14
    # every CIM op is placed on its crossbars, no core over its capacity
    per_core = [0] * costs.platform.devices["cim"].cores
    for v, d in s.assignment.items():
        if d == "cim":
            assert sum(n for _, n in s.placement[v]) == costs.need[v]["cim"]
            for c, n in s.placement[v]:
                per_core[c] += n
    assert max(per_core) <= costs.platform.devices["cim"].crossbars_per_core
    res = simulate(costs, s)
    assert res.makespan_s == s.makespan_s  # the replay reproduces the mapper's prediction exactly
    base = get_mapper("all-host").map(costs)
    assert s.makespan_s < base.makespan_s


# ------------------------------------------------------------------------------ properties, random DAGs


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_setup(contention=False))
def test_prop_greedy_within_budget_and_never_worse_than_all_host(setup):
    costs = setup["costs"]
    s = get_mapper("greedy").map(costs)
    base = get_mapper("all-host").map(costs)
    dev = costs.platform.devices["cim"]
    used = sum(costs.need[v]["cim"] for v, d in s.assignment.items() if d == "cim")
    assert used <= dev.crossbars  # Eq. 14
    assert s.makespan_s <= base.makespan_s
    # a single-core host runs the all-host schedule back to back
    if costs.platform.devices["host"].cores == 1:
        assert base.makespan_s == pytest.approx(sum(costs.latency[v]["host"] for v in costs.workload.ops), rel=1e-9)
    # the schedule is complete and consistent
    assert set(s.assignment) == set(costs.workload.ops)
    for v, d in s.assignment.items():
        assert d in costs.latency[v]
        if d == "cim":
            assert sum(n for _, n in s.placement[v]) == costs.need[v]["cim"]
    start, finish, makespan = list_schedule(costs, s.assignment, s.order)
    assert makespan == s.makespan_s == simulate(costs, s).makespan_s


# --------------------------------------------------------------------- every mapper, random DAGs


def _options(name: str) -> dict:
    """Short solver limits for the mappers whose constructor takes them (the rest take none of these)."""
    params = inspect.signature(MAPPERS[name]).parameters
    return {k: v for k, v in (("time_limit_s", 1.0),) if k in params}


def _refusal(name: str, costs: CostModel) -> tuple[str, str] | None:
    """Why mapper ``name`` does not apply to ``costs``' platform, and a pattern its MappingError must match
    (it must refuse, not map), or None when it applies:

    * a mapper that replays an export file (a ``path`` option, none given here): ``dnas-export``;
    * ODiMO's channel-split mappers (the ones built on ``hetsim.mappers._diana.diana_devices``) need two
      channel-splitting accelerators of different precision (DIANA's); the random platforms have none;
    * ``ilp`` (the CPU-CIM ILP's MILP) models a single-core host;
    * the SNN mappers (``workloads`` without ``onnx``: spikeduet, all-m33, all-dense-mvp) map spiking networks.
    """
    cls = MAPPERS[name]
    if "onnx" not in getattr(cls, "workloads", {"onnx"}):
        return "maps spiking networks, not ONNX workloads", "spiking networks"
    params = inspect.signature(cls).parameters
    if "path" in params and params["path"].default is None:
        return "replays an export file, and none is given", "export"
    if getattr(sys.modules[cls.__module__], "diana_devices", None) is not None:
        return "needs two channel-splitting accelerators (ODiMO, DIANA); the platform has none", "channel-splitting"
    if name == "ilp" and costs.units(costs.host) != 1:
        return "the CPU-CIM ILP models a single-core host", "single-core"
    return None


def _every_mapper(costs: CostModel) -> dict[str, Schedule]:
    """Run every registered mapper on ``costs``: the ones that do not apply must refuse with MappingError
    (:func:`_refusal`); every other schedule passes the checker (support, capacities, precedence with
    transfers, serial devices), replays (no contention) to exactly its predicted makespan, and keeps every
    resident capacity. Exact mappers reporting ``optimal`` are never worse than all-host, and any bound a
    mapper reports is below every schedule found."""
    out: dict[str, Schedule] = {}
    for name in sorted(MAPPERS):
        why = _refusal(name, costs)
        if why is not None:  # it does not apply here (why[0]) and says so
            with pytest.raises(MappingError, match=why[1]):
                get_mapper(name, **_options(name)).map(costs)
            continue
        sched = get_mapper(name, **_options(name)).map(costs)
        rep = check_schedule(costs, sched)
        assert rep.ok, (name, rep.violations[:3])
        assert simulate(costs, sched).makespan_s == sched.makespan_s, name
        for dev, cap in costs.budget.items():
            assert sum(costs.need[v][dev] for v, d in sched.assignment.items() if d == dev) <= cap, (name, dev)
        out[name] = sched
    base = out["all-host"].makespan_s
    best = min(s.makespan_s for s in out.values())
    tol = 1e-6  # the MILP solver's feasibility tolerance (cpsat is exact up to its tick rounding)
    for name, sched in out.items():
        if sched.stats.get("status") == "optimal":  # within its relative gap (1e-4) of every schedule
            slack = sched.stats.get("rounding_bound_s", 0.0) + 1e-15
            assert sched.makespan_s * (1 - 1e-4) <= min(base, best * (1 + tol)) + slack, name
        if sched.stats.get("bound_s") is not None:
            assert sched.stats["bound_s"] <= best * (1 + tol), name  # a bound is below every schedule
    return out


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(setup=random_setup(contention=False))
def test_every_mapper_gives_a_feasible_schedule_that_replays_to_its_promise(setup):
    """Every registered mapper on host + PUMA CIM (see :func:`_every_mapper`)."""
    _every_mapper(setup["costs"])


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(setup=random_setup(contention=False, npu=True), split_bus=st.booleans())
def test_every_mapper_on_host_cim_npu(setup, split_bus):
    """Every registered mapper on host + PUMA CIM + NPU (two accelerators with resident capacities, the NPU
    a serial device): the same guarantees as on one accelerator (see :func:`_every_mapper`). ``split_bus``:
    the host reaches each accelerator over its own link and no link joins the CIM and the NPU, so a tensor
    cannot go from one to the other."""
    costs = setup["costs"]
    assert set(costs.budget) == {"cim", "npu"} and set(costs.serial_devices()) == {"host", "npu"}
    if split_bus:
        data = costs.platform.model_dump(mode="json", exclude_unset=True, exclude={"devices": {"__all__": {"name"}}})
        bus = data["links"]["bus"]
        data["links"] = {"bus": {**bus, "connects": ["host", "cim"]}, "bus2": {**bus, "connects": ["host", "npu"]}}
        costs = CostModel(costs.workload, Platform.model_validate(data))
    out = _every_mapper(costs)
    g = costs.workload.graph
    moved = [(u, v) for u, v in g.edges if not g.edges[u, v]["param"]]
    for name, sched in out.items():  # without a link, nothing moves between the CIM and the NPU
        a = sched.assignment
        assert not split_bus or all({a[u], a[v]} != {"cim", "npu"} for u, v in moved), name
