"""The throughput objective: the busiest resource's load over every stream at its rate, the resident
capacities shared. Truth: brute force over every joint assignment of small random DAGs (loads computed here, not
by hetsim's load model), a hand-worked capacity trade between two streams, the shared capacity itself."""

from __future__ import annotations

import itertools
import random

import pytest
from conftest import ROOT, conv_op, host_op, make_platform, run_cli

from hetsim.costs import CostModel
from hetsim.errors import InputError
from hetsim.mappers import get_mapper
from hetsim.mappers._throughput import LoadModel, Part, map_joint
from hetsim.scenario.run import run_scenario
from hetsim.scenario.spec import Scenario
from hetsim.workload import Workload


def _random_dag(rng: random.Random, name: str, n: int) -> Workload:
    ops = []
    for i in range(n):
        if rng.random() < 0.6:
            ops.append(conv_op(f"{name}{i}", rng.randint(4, 16), rng.randint(4, 16), rng.randint(1, 12),
                               n_in=rng.randint(10, 300), n_out=rng.randint(10, 300), index=i))
        else:
            ops.append(host_op(f"{name}{i}", rng.randint(50, 1500), index=i))
    edges = [(ops[i].name, ops[j].name, rng.randint(0, 200)) for j in range(1, n)
             for i in rng.sample(range(j), k=min(j, rng.randint(1, 2)))]
    return Workload.from_ops(name, ops, edges)


def _loads_by_hand(parts, assigns) -> dict[str, float]:
    """Load per resource, from the cost model's numbers only: the host's ops over its cores, the NPU's ops, each
    CIM op on its own crossbars, every transfer on the bus."""
    out: dict[str, float] = {}
    for (costs, lam), a in zip(parts, assigns, strict=True):
        cores = costs.platform.devices["host"].cores
        for v, d in a.items():
            t = costs.latency[v][d]
            key = "host" if d == "host" else "npu" if d == "npu" else f"cim:{costs.workload.name}:{v}"
            out[key] = out.get(key, 0.0) + lam * t / (cores if d == "host" else 1)
        for u, v in costs.workload.graph.edges:
            out["bus"] = out.get("bus", 0.0) + lam * costs.transfer_time(u, v, a[u], a[v])
    return out


def _fits(parts, assigns) -> bool:
    used: dict[str, int] = {}
    for (costs, _), a in zip(parts, assigns, strict=True):
        for v, d in a.items():
            if d in costs.budget:
                used[d] = used.get(d, 0) + costs.need[v][d]
    return all(n <= parts[0][0].budget[d] for d, n in used.items())  # one budget, shared


@pytest.mark.parametrize("case", range(6))
def test_cpsat_bottleneck_equals_brute_force_on_two_streams(case):
    rng = random.Random(1000 + case)
    plat = make_platform(host_cores=rng.choice([1, 2]), cim_cores=1, crossbars_per_core=rng.choice([1, 2, 3]),
                         npu={"macs_per_cycle": {8: rng.choice([1, 4])}, "weight_memory_kib": 0.25})
    wls = [_random_dag(rng, "p", rng.randint(3, 5)), _random_dag(rng, "q", rng.randint(3, 5))]
    rates = [rng.choice([1.0, 3.0, 10.0]), rng.choice([1.0, 2.0, 7.0])]
    costs = [CostModel(w, plat) for w in wls]
    parts = list(zip(costs, rates, strict=True))
    choices = [[(v, list(c.latency[v])) for v in c.workload.topological_order()] for c in costs]
    best = None
    for combo in itertools.product(*[ds for ch in choices for _, ds in ch]):
        assigns, k = [], 0
        for ch in choices:
            assigns.append({v: combo[k + i] for i, (v, _) in enumerate(ch)})
            k += len(ch)
        if not _fits(parts, assigns):
            continue
        b = max(_loads_by_hand(parts, assigns).values())
        best = b if best is None else min(best, b)
    assert best is not None
    ps = [Part(f"s{i}", c, r) for i, (c, r) in enumerate(parts)]
    r = map_joint(get_mapper("cpsat", objective="throughput", time_limit_s=10, threads=1), ps)
    got = [dict(r.schedules[p.name].assignment) for p in ps]
    assert _fits(parts, got)
    true = max(_loads_by_hand(parts, got).values())
    assert true == pytest.approx(r.bottleneck, rel=1e-9)
    assert true == pytest.approx(best, rel=1e-6), (true, best)
    assert r.stats["status"] == "optimal"
    assert r.bound <= best * (1 + 1e-9) and r.bound >= best * (1 - 1e-6)
    for name in ("heft", "greedy"):  # heuristics: feasible, never below the optimum
        h = map_joint(get_mapper(name, objective="throughput"), ps)
        ha = [dict(h.schedules[p.name].assignment) for p in ps]
        assert _fits(parts, ha)
        assert max(_loads_by_hand(parts, ha).values()) >= best * (1 - 1e-9)


def _big_conv(name: str, host_units: int) -> Workload:
    """One Conv needing 3 of the CIM's 4 crossbars (48 x 16 weights on 16 x 16 crossbars); host
    ``48 * 16 * host_units`` ns."""
    return Workload.from_ops(name, [conv_op("w", 48, 16, host_units, n_in=100, n_out=100)], [])


def test_two_models_that_do_not_fit_together_never_share_the_cim_for_throughput():
    plat = make_platform(host_cores=1, cim_cores=1, crossbars_per_core=4)
    for mapper in ("cpsat", "heft", "greedy"):
        ps = [Part(n, CostModel(_big_conv(n, 100), plat), 1.0) for n in ("one", "two")]
        assert ps[0].costs.need["w"]["cim"] == 3 and ps[0].costs.budget["cim"] == 4
        r = map_joint(get_mapper(mapper, objective="throughput"), ps)
        on_cim = [n for n, s in r.schedules.items() if s.assignment["w"] == "cim"]
        assert len(on_cim) == 1, mapper  # one of them there (it pays), never both


def test_scenario_gives_the_crossbars_to_the_stream_that_loads_the_host_most():
    """Two one-Conv models, each needing 3 of 4 crossbars; ``slow`` (priority 0, 10/s) costs the host 48*16*20 ns
    = 15.36 us per request, ``fast`` (priority 1, 1000/s) 48*16*100 ns = 76.8 us. The latency objective maps in
    priority order: ``slow`` takes the CIM, the host carries ``fast``: load 1000 * 76.8e-6 = 7.68 %. The
    throughput objective gives the CIM to ``fast``: host load 10 * 15.36e-6 = 0.01536 %, the CIM's own op 1000 *
    (100 + 100 * 100 + 100) ns = 1.02 %, the bottleneck."""
    plat = make_platform(host_cores=1, cim_cores=1, crossbars_per_core=4)
    slow, fast = _big_conv("slow", 20), _big_conv("fast", 100)
    sc = Scenario.model_validate({"streams": {
        "slow": {"model": "x.onnx", "arrival": {"process": "periodic", "period_s": 0.1}, "priority": 0, "count": 20},
        "fast": {"model": "x.onnx", "arrival": {"process": "periodic", "period_s": 0.001}, "priority": 1,
                 "count": 2000}}, "mapper": "cpsat", "objective": "throughput", "contention": "links"})
    r = run_scenario(plat, sc, workloads={"slow": slow, "fast": fast})
    assert r.models["fast"].schedule.assignment["w"] == "cim"
    assert r.models["slow"].schedule.assignment["w"] == "host"
    assert r.summary["bottleneck"]["load"] == pytest.approx(1000 * 10_200e-9, rel=1e-9)
    assert r.summary["bottleneck"]["resource"].startswith("cim")
    cmp = r.comparison.set_index(["objective", "stream"])
    assert cmp.loc[("latency", "fast"), "bottleneck_load"] == pytest.approx(1000 * 76.8e-6, rel=1e-9)
    assert cmp.loc[("latency", "fast"), "bottleneck_resource"] == "host"
    assert cmp.loc[("throughput", "fast"), "max_rate_scale"] > cmp.loc[("latency", "fast"), "max_rate_scale"]
    assert not cmp["saturated"].any()
    lat = run_scenario(plat, sc, workloads={"slow": slow, "fast": fast}, objective="latency")
    assert lat.comparison is None and lat.summary["objective"] == "latency"
    assert lat.models["slow"].schedule.assignment["w"] == "cim"


def test_single_model_throughput_objective_and_the_command_line(capsys, tmp_path):
    plat = make_platform(host_cores=1, cim_cores=1, crossbars_per_core=2)
    rng = random.Random(5)
    wl = _random_dag(rng, "m", 8)
    costs = CostModel(wl, plat)
    lat = get_mapper("cpsat", time_limit_s=5).map(costs)
    thr = get_mapper("cpsat", objective="throughput", time_limit_s=5).map(costs)
    lm = LoadModel([Part("m", costs, 1.0)])
    assert max(lm.loads([dict(thr.assignment)]).values()) <= max(lm.loads([dict(lat.assignment)]).values())
    assert thr.stats["objective"] == "throughput" and thr.stats["max_throughput_hz"] == pytest.approx(
        1 / thr.stats["bottleneck_s"])
    with pytest.raises(InputError, match="did you mean 'throughput'"):
        get_mapper("heft", objective="througput")
    code, out, err = run_cli(capsys, "run", str(ROOT / "platforms" / "puma.yaml"),
                             str(ROOT / "workloads" / "resnet20_cifar10.onnx"), "--mapper", "heft", "--objective",
                             "throughput")
    assert code == 0, err
    assert "mapped for throughput: bottleneck" in out and "requests/s pipelined" in out
    code, out, err = run_cli(capsys, "run", str(ROOT / "platforms" / "puma.yaml"),
                             str(ROOT / "workloads" / "resnet20_cifar10.onnx"), "--mapper", "ilp", "--objective",
                             "throughput")
    assert code == 2 and "Traceback" not in err


def test_the_shipped_throughput_scenario_saturates_only_under_the_latency_mapping():
    """scenarios/two-models-puma-throughput.yaml (golden, analytic, heft for speed; cpsat's numbers are in
    docs/scenarios.md): the latency mapping loads the host past 100 % at the offered rates, the throughput
    mapping below it, the crossbars shared."""
    from hetsim.platform import load_platform
    from hetsim.scenario.run import analytic_loads, map_streams, stream_rate
    from hetsim.scenario.spec import load_scenario

    sc, folder = load_scenario(ROOT / "scenarios" / "two-models-puma-throughput.yaml")
    plat = load_platform(ROOT / "platforms" / "puma.yaml")
    out = {}
    for obj in ("latency", "throughput"):
        ms = map_streams(plat, sc, folder, "heft", frozenset({"links"}), None, obj)
        rates = {n: stream_rate(m.stream, folder, m.costs) for n, m in ms.items()}
        _, res, val = analytic_loads(ms, rates, frozenset({"links"}))
        used = sum(m.costs.need[v]["cim"] for m in ms.values() for v, d in m.schedule.assignment.items()
                   if d == "cim")
        assert used <= 100
        out[obj] = (res, val)
    assert out["latency"][0] == out["throughput"][0] == "host"
    assert out["latency"][1] == pytest.approx(1.0132, abs=5e-4)
    assert out["throughput"][1] == pytest.approx(0.8830, abs=5e-4)
