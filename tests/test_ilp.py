"""The ``ilp`` mapper (CPU-CIM ILP, Sec. IV-B, Eq. 5-14, and its k-accelerator generalisation): hand-computed
optima, the paper's size counting (Table I), brute-force references on random small DAGs (host + CIM, and host +
CIM + NPU), degenerate inputs, refused platforms, options and solver errors.

Latencies follow conftest's round-number platform: host ``T = macs ns`` (GEMM ops) or ``n_out ns``;
CIM ``T = n_in + 100 * n_mvm + n_out ns``; a cross-device transfer of ``e`` elements takes ``e ns``. The NPU of
:func:`npu_platform` runs Conv and Relu: ``T = macs / 4 ns`` (Conv) or ``n_out / 2 ns`` (Relu), weights resident
(``weight_elements`` bytes each).
"""

from __future__ import annotations

import itertools
import subprocess
import sys
import time

import networkx as nx
import numpy as np
import pytest
from conftest import NS, PLATFORMS, conv_op, diamond, host_op, make_platform, ns
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hetsim.check import check_schedule
from hetsim.costs import CostModel
from hetsim.errors import MappingError
from hetsim.mappers import MAPPERS, get_mapper
from hetsim.mappers import ilp as ilp_mod
from hetsim.mappers.ilp import Ilp, _Result, build_model, ilp_size
from hetsim.platform import Platform, load_platform
from hetsim.schedule import Schedule
from hetsim.sim import simulate
from hetsim.validate import validate_schedule
from hetsim.workload import Workload
from hetsim.workload.synthetic import layered_dag


def solve(costs: CostModel, **kw) -> Schedule:
    sched = get_mapper("ilp", **kw).map(costs)
    rep = check_schedule(costs, sched)
    assert rep.ok, rep.violations
    # replay without contention reproduces the predicted makespan exactly
    assert simulate(costs, sched).makespan_s == sched.makespan_s
    val = validate_schedule(costs, sched, contention=frozenset())
    assert val.ok, (val.violations, val.divergence)
    # the list-scheduled makespan never exceeds the solver's T (up to the solver's tolerances)
    assert sched.makespan_s <= sched.stats["solver_makespan_s"] * (1 + 1e-6)
    return sched


# ----------------------------------------------------------------------------------------- brute force


def brute_force(costs: CostModel, transfer=None) -> float:
    """Optimal makespan over every assignment within the crossbar budget and every host order consistent
    with the DAG, each evaluated as early as possible (an independent evaluator, not list_schedule).

    ``transfer(u, v, src, dst)`` is the transfer time of a cross-device edge; by default ``e ns`` for an
    edge of ``e`` elements (the conftest bus: 1 GB/s, 8-bit elements), 0 for parameter edges.
    """
    g = costs.workload.graph
    ops = list(nx.topological_sort(g))
    lat = costs.latency
    budget = costs.platform.devices["cim"].crossbars
    if transfer is None:
        def transfer(u, v, src, dst):
            e = g.edges[u, v]
            return 0.0 if src == dst or e.get("param") else e["elements"] * NS
    desc = {v: nx.descendants(g, v) for v in ops}
    acc = [v for v in ops if "cim" in lat[v]]
    best = float("inf")

    def extensions(rest: list[str], prefix: list[str]):
        """Every linear extension of ``rest`` (host ops) under the DAG's reachability."""
        if not rest:
            yield list(prefix)
            return
        for v in rest:
            if any(v in desc[w] for w in rest if w != v):
                continue  # some remaining host op must come before v
            prefix.append(v)
            yield from extensions([w for w in rest if w != v], prefix)
            prefix.pop()

    for mask in range(1 << len(acc)):
        on_cim = {acc[i] for i in range(len(acc)) if mask >> i & 1}
        if sum(costs.need[v]["cim"] for v in on_cim) > budget:
            continue
        dev = {v: "cim" if v in on_cim else "host" for v in ops}
        hosts = [v for v in ops if dev[v] == "host"]
        for seq in extensions(hosts, []):
            prev = {seq[i]: seq[i - 1] for i in range(1, len(seq))}
            # process in a topological order of DAG + host chain
            h = nx.DiGraph(g.edges)
            h.add_nodes_from(ops)
            h.add_edges_from((p, v) for v, p in prev.items())
            f: dict[str, float] = {}
            for v in nx.topological_sort(h):
                s = max((f[u] + transfer(u, v, dev[u], dev[v]) for u in g.predecessors(v)), default=0.0)
                if v in prev:
                    s = max(s, f[prev[v]])
                f[v] = s + lat[v][dev[v]]
            best = min(best, max(f.values(), default=0.0))
    return best


def _random_dag(draw, max_ops: int) -> Workload:
    """A random DAG of 1..``max_ops`` ops, about half CIM-capable Convs and half host-only Relus, each op with up to
    3 predecessors, maybe one parameter edge."""
    n = draw(st.integers(1, max_ops))
    ops = []
    for i in range(n):
        name = f"o{i}"
        if draw(st.booleans()):
            ops.append(conv_op(name, draw(st.integers(1, 32)), draw(st.integers(1, 32)), draw(st.integers(1, 30)),
                               n_in=draw(st.integers(1, 500)), n_out=draw(st.integers(1, 500)), index=i))
        else:
            ops.append(host_op(name, draw(st.integers(1, 3000)), index=i))
    edges = []
    for j in range(1, n):
        preds = draw(st.sets(st.integers(0, j - 1), max_size=min(j, 3)))
        edges += [(ops[i].name, ops[j].name, draw(st.integers(0, 400))) for i in sorted(preds)]
    wl = Workload.from_ops("random", ops, edges)
    if edges and draw(st.booleans()):
        u, v = edges[0][:2]
        wl.graph.edges[u, v]["param"] = True
    return wl


@st.composite
def small_setup(draw):
    """A random DAG of 1..7 ops (about half CIM-capable Convs of 1..4 crossbars) on a 1-core host + CIM with
    1..6 crossbars."""
    wl = _random_dag(draw, 7)
    plat = make_platform(crossbars_per_core=draw(st.integers(1, 6)))
    return CostModel(wl, plat)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_setup())
def test_ilp_matches_brute_force(costs):
    sched = solve(costs)
    ref = brute_force(costs)
    assert sched.stats["status"] == "optimal"
    assert sched.makespan_s == pytest.approx(ref, rel=1e-6)
    assert sched.stats["incumbent_s"] == pytest.approx(ref, rel=1e-6)


def test_asymmetric_transfers_use_two_z_columns():
    """Host->CIM transfers made 3x slower than CIM->host: each edge gets two z columns (same row count), and
    the optimum still equals the brute force with the same asymmetric transfer times."""
    wl = diamond()
    costs = CostModel(wl, make_platform(crossbars_per_core=1))
    sym = costs.transfer_time

    def asym(u, v, src, dst):
        t = sym(u, v, src, dst)
        return 3 * t if (src, dst) == ("host", "cim") else t

    costs.transfer_time = asym
    m = build_model(costs)
    assert m.n_cols == 4 + 1 + 4 + 4 + 1 + 2 * 4  # x, o, s, f, T, two z per edge
    assert (m.variables, m.constraints) == (5, 22)  # the paper's count does not change
    sched = solve(costs)
    assert sched.makespan_s == pytest.approx(brute_force(costs, asym), rel=1e-9)
    # c on CIM: a [0, 100], a->c 300, c [400, 2550], c->d 50 (CIM->host, unscaled) -> 2600; b on the host
    # [100, 2660]; d [2660, 2760]: the makespan does not move, the host branch is the longer one
    assert sched.makespan_s == ns(2760)


# ------------------------------------------------------------------------------------- k accelerators


def platform_data(plat: Platform) -> dict:
    """The YAML-level dict of ``plat`` (what was set, names left out), to add devices and links to."""
    return plat.model_dump(mode="json", exclude_unset=True, exclude={"devices": {"__all__": {"name"}},
                                                                     "links": {"__all__": {"name"}}})


def npu_platform(crossbars_per_core: int = 4, weight_kib: float = 1.0, cim: bool = True, cim_npu_link: bool = True,
                 npu_link_gb_s: float = 2.0, npu_link_latency_ns: float = 5.0,
                 npu_ops: tuple[str, ...] = ("Conv", "Relu")) -> Platform:
    """conftest's host + CIM platform plus an NPU (serial, resident weight memory of ``weight_kib`` KiB) that runs
    ``npu_ops``: Conv (``macs / 4 ns``) and Relu (``n_out / 2 ns``), joined to the host (and the CIM device unless
    ``cim_npu_link`` is false) by a second link: ``e / npu_link_gb_s + latency ns`` for ``e`` elements. ``cim``
    false leaves the CIM device out (host + NPU)."""
    data = platform_data(make_platform(crossbars_per_core=crossbars_per_core))
    if not cim:
        del data["devices"]["cim"], data["links"]["bus"]
    data["devices"]["npu"] = {
        "kind": "npu", "clock_mhz": 1000, "macs_per_cycle": {8: 4}, "elementwise_per_cycle": 2,
        "bandwidth_gb_s": 1e6, "weight_memory_kib": weight_kib, "element_bits": 8, "op_overhead_us": 0,
        "supported_ops": list(npu_ops), "needs_weights": False,
    }
    data["links"]["npu_bus"] = {"bandwidth_gb_s": npu_link_gb_s, "latency_ns": npu_link_latency_ns,
                                "connects": ["host", "npu"] + (["cim"] if cim and cim_npu_link else [])}
    return Platform.model_validate(data)


def brute_force_k(costs: CostModel) -> float:
    """Optimal makespan over every assignment of every op to a device that runs it, within every resident
    capacity and the links, and over every order of each serial device's ops (each a linear extension of the DAG
    restricted to them; deadlocking combinations skipped), evaluated as early as possible by an evaluator
    independent of list_schedule. Every serial device must have one unit."""
    g = costs.workload.graph
    plat = costs.platform
    ops = list(nx.topological_sort(g))
    lat = costs.latency
    serial = list(costs.serial_devices())
    assert all(u == 1 for u in costs.serial_devices().values())
    desc = {v: nx.descendants(g, v) for v in ops}
    preds = {v: list(g.predecessors(v)) for v in ops}

    def extensions(rest: list[str], prefix: list[str]):
        if not rest:
            yield list(prefix)
            return
        for v in rest:
            if any(v in desc[w] for w in rest if w != v):
                continue
            prefix.append(v)
            yield from extensions([w for w in rest if w != v], prefix)
            prefix.pop()

    best = float("inf")
    for devs in itertools.product(*(sorted(lat[v]) for v in ops)):
        dev = dict(zip(ops, devs, strict=True))
        if any(sum(costs.need[v][d] for v in ops if dev[v] == d) > cap for d, cap in costs.budget.items()):
            continue
        if any(costs.needs_transfer(u, v, dev[u], dev[v]) and plat.link_between(dev[u], dev[v]) is None
               for u, v in g.edges):
            continue
        tt = {(u, v): costs.transfer_time(u, v, dev[u], dev[v]) for u, v in g.edges}
        per_device = [list(extensions([v for v in ops if dev[v] == d], [])) for d in serial]
        for seqs in itertools.product(*per_device):
            prev = {seq[i]: seq[i - 1] for seq in seqs for i in range(1, len(seq))}
            f: dict[str, float] = {}
            pending = ops
            while pending:
                rest = []
                for v in pending:
                    if any(u not in f for u in preds[v]) or (v in prev and prev[v] not in f):
                        rest.append(v)
                        continue
                    s = max([0.0] + [f[u] + tt[u, v] for u in preds[v]] + ([f[prev[v]]] if v in prev else []))
                    f[v] = s + lat[v][dev[v]]
                if len(rest) == len(pending):
                    break  # the device orders deadlock against the DAG
                pending = rest
            if not pending:
                best = min(best, max(f.values(), default=0.0))
    return best


@st.composite
def k_setup(draw):
    """A random DAG of 1..6 ops (about half Convs of 1..4 crossbars and 1..1024 weight bytes, the rest Relus) on
    host + CIM (1..6 crossbars, not serial) + NPU (serial, 256 B..2 KiB of weights), the CIM-NPU link present or
    not, and maybe one parameter edge."""
    wl = _random_dag(draw, 6)
    plat = npu_platform(crossbars_per_core=draw(st.integers(1, 6)),
                        weight_kib=draw(st.sampled_from([0.25, 0.5, 1.0, 2.0])),
                        cim_npu_link=draw(st.booleans()))
    return CostModel(wl, plat)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(k_setup())
def test_k_accelerators_match_brute_force(costs):
    """Host + CIM + NPU: the general form's optimum equals the brute force over assignments and serial orders."""
    sched = solve(costs)
    ref = brute_force_k(costs)
    assert sched.stats["form"] == "general" and sched.stats["accelerators"] == 2
    assert sched.stats["status"] == "optimal"
    assert sched.makespan_s == pytest.approx(ref, rel=1e-6)
    assert sched.stats["incumbent_s"] == pytest.approx(ref, rel=1e-6)
    assert sched.stats["bound_s"] <= sched.stats["incumbent_s"] * (1 + 1e-6)


def test_npu_is_serial():
    """Diamond on host + NPU (k = 1, serial: the general form), the NPU running Convs only: b 2560/4 = 640,
    c 5120/4 = 1280 ns; the NPU link (1 GB/s, no latency): a->b, a->c 100, b->d, c->d 50 ns.

    * both on the NPU, one after the other: a [0,100], b [200,840], c [840,2120], d [2170,2270]  <- best;
      (were the NPU not serial, c [200,1480] and d [1530,1630]);
    * c on the NPU, b on the host: b [100,2660], c [200,1480], d [2660,2760];
    * b on the NPU, c on the host: c [100,5220]: 5320. With 256 B of weights only one Conv fits: 2760.
    """
    plat = dict(cim=False, npu_link_gb_s=1, npu_link_latency_ns=0, npu_ops=("Conv",))
    costs = CostModel(diamond(), npu_platform(weight_kib=0.5, **plat))
    sched = solve(costs)
    assert sched.stats["form"] == "general" and sched.stats["status"] == "optimal"
    assert sched.assignment == {"a": "host", "b": "npu", "c": "npu", "d": "host"}
    assert sched.makespan_s == ns(2270)
    assert sorted(sched.order["npu"]) == ["b", "c"]
    # {b, c} is the only parallel pair; host and NPU both run b and c: two Eq. 11-12 rows each
    m = build_model(costs)
    assert len(m.pairs) == 1 and m.pair_devices == [("host", "npu")]
    assert m.variables == (1 + 2 + 2 + 1) + 1  # x: a host; b, c host/npu; d host; o_bc
    small = CostModel(diamond(), npu_platform(weight_kib=0.25, **plat))
    sched = solve(small)
    assert sched.assignment == {"a": "host", "b": "host", "c": "npu", "d": "host"}
    assert sched.makespan_s == ns(2760)


def test_two_cim_devices():
    """Two PUMA devices of one crossbar each (not serial: no disjunctions on them): b on one, c on the other.
    a [0,100]; b [200,1350] -> 1400; c [200,2350] -> 2400; d [2400,2500]."""
    data = platform_data(make_platform(crossbars_per_core=1))
    data["devices"]["cim2"] = dict(data["devices"]["cim"])
    data["links"]["bus"]["connects"] = ["host", "cim", "cim2"]
    costs = CostModel(diamond(), Platform.model_validate(data))
    sched = solve(costs)
    assert sched.stats["form"] == "general"
    assert {sched.assignment["b"], sched.assignment["c"]} == {"cim", "cim2"}
    assert sched.makespan_s == ns(2500) == brute_force_k(costs)
    m = build_model(costs)
    assert m.serial == ["host"] and m.pair_devices == [("host",)]
    eq14 = [r for r, (lo, up) in enumerate(zip(m.row_lower, m.row_upper, strict=True)) if lo == -float("inf")]
    assert len(eq14) == 2 and all(m.row_upper[r] == 1.0 for r in eq14)  # one crossbar budget per CIM device


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_setup())
def test_general_form_agrees_with_the_paper_form_for_one_accelerator(costs):
    """With one CIM device the general form (x_{v,d} per device, w products) is the paper's model after
    ``x_{v,host} = x_v``, ``x_{v,cim} = 1 - x_v``: same optimum on the same random setups."""
    paper = solve(costs)
    assert paper.stats["form"] == "paper"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ilp_mod, "paper_form", lambda costs, accs: False)
        general = solve(costs)
    assert general.stats["form"] == "general" and general.stats["status"] == "optimal"
    assert general.makespan_s == pytest.approx(paper.makespan_s, rel=1e-6)


def test_missing_link_forbids_the_pair():
    """Conv k1 (32x32 weights: 4 crossbars, 1 KiB) -> Conv k2 (16x16: 1 crossbar, 256 B), 10 elements between
    them; 4 crossbars and 1 KiB of NPU weights, so neither device holds both. k1: CIM 10 + 3000 + 10 = 3020, NPU
    7680, host 30720 ns; k2: CIM 3020, NPU 1920, host 7680 ns; transfers: 10 ns on either link.

    * with a CIM-NPU link: k1 on the CIM device [0,3020], k2 on the NPU [3030,4950];
    * without: that pair is forbidden (its w fixed to 0); k1 on the CIM device, k2 on the host [3030,10710].
    """
    ops = [conv_op("k1", 32, 32, 30, n_in=10, n_out=10, index=0), conv_op("k2", 16, 16, 30, n_in=10, n_out=10,
                                                                           index=1)]
    wl = Workload.from_ops("pair", ops, [("k1", "k2", 10)])
    for link, dev, span in ((True, "npu", 4950), (False, "host", 10710)):
        costs = CostModel(wl, npu_platform(crossbars_per_core=4, weight_kib=1.0, cim_npu_link=link))
        sched = solve(costs)
        assert sched.assignment == {"k1": "cim", "k2": dev}
        assert sched.makespan_s == ns(span) == brute_force_k(costs)
        assert build_model(costs).meta["forbidden_pairs"] == (0 if link else 2)


def test_general_warm_start_and_progress():
    """Warm starts (greedy's schedule with its NPU order, an assignment, 'greedy') reach the cold optimum, with
    progress reports; a start over the NPU's weight memory (Eq. 14) is refused."""
    costs = CostModel(layered_dag(10, width=3, seed=2), npu_platform(crossbars_per_core=1200, weight_kib=512))
    cold = solve(costs)
    greedy = get_mapper("greedy").map(costs)
    assert cold.stats["status"] == "optimal" and cold.makespan_s <= greedy.makespan_s * (1 + 1e-9)
    for ws in (greedy, greedy.assignment, "greedy"):
        seen = []
        warm = solve(costs, warm_start=ws, progress=seen.append)
        assert warm.stats["status"] == "optimal"
        assert warm.makespan_s == pytest.approx(cold.makespan_s, rel=1e-6)
        assert seen and seen[-1].get("final") is True
        assert seen[-1]["incumbent_s"] == pytest.approx(warm.stats["incumbent_s"])
    small = CostModel(diamond(), npu_platform(weight_kib=0.25))
    with pytest.raises(MappingError, match=r"warm start uses 512 B of 'npu', more than its 256 \(Eq. 14\)"):
        Ilp(warm_start={"a": "host", "b": "npu", "c": "npu", "d": "host"}).map(small)
    with pytest.raises(MappingError, match="warm start"):
        Ilp(warm_start={"a": "cim", "b": "npu", "c": "host", "d": "host"}).map(small)


def assert_feasible_point(m, x: np.ndarray, tol: float = 1e-7) -> None:
    """``x`` satisfies every row and bound of the model ``m`` (to ``tol`` model units) and is integral."""
    act = np.array([m.a_value[m.a_start[r]:m.a_start[r + 1]] @ x[m.a_index[m.a_start[r]:m.a_start[r + 1]]]
                    for r in range(m.n_rows)])
    assert np.all(act >= m.row_lower - tol) and np.all(act <= m.row_upper + tol)
    assert np.all(x >= m.col_lower - tol) and np.all(x <= m.col_upper + tol)
    ints = x[m.integrality == 1]
    assert np.all(np.abs(ints - np.round(ints)) <= tol)


@pytest.mark.parametrize("which", ["paper", "general"])
def test_warm_start_point_is_feasible(which):
    """The MIP start built from greedy's schedule is a feasible point of the model, in both forms, and its T is
    greedy's makespan."""
    plat = make_platform(crossbars_per_core=3) if which == "paper" else npu_platform(crossbars_per_core=3)
    costs = CostModel(layered_dag(12, width=4, seed=5), plat)
    greedy = get_mapper("greedy").map(costs)
    m = build_model(costs)
    assert m.form == which
    x = Ilp(warm_start=greedy)._start_vector(costs, m)
    assert_feasible_point(m, x)
    assert x[m.t_col] * m.time_unit_s == pytest.approx(greedy.makespan_s, rel=1e-9)


# ------------------------------------------------------------------------------------------- by hand


def test_diamond_budget_of_one_crossbar():
    """conftest's diamond a -> {b, c} -> d with a single crossbar: only one Conv fits on the CIM device.

    host: a 100, b 16*16*10 = 2560, c 16*16*20 = 5120, d 100; CIM: b 100+1000+50 = 1150, c 100+2000+50 =
    2150; transfers a->b, a->c 100, b->d, c->d 50 ns.

    * all host: 100 + 2560 + 5120 + 100 = 7880 (b and c serial on the single core, either order);
    * b on CIM: a [0,100], c [100,5220] on the host, b [200,1350] arriving at d at 1400; d [5220,5320];
    * c on CIM: a [0,100], b [100,2660] on the host, c [200,2350] arriving at 2400; d [2660,2760]  <- best.
    """
    costs = CostModel(diamond(), make_platform(crossbars_per_core=1))
    sched = solve(costs)
    assert sched.assignment == {"a": "host", "b": "host", "c": "cim", "d": "host"}
    assert sched.makespan_s == ns(2760)
    assert sched.stats["incumbent_s"] == ns(2760)
    assert sched.order["host"] == ["a", "b", "d"]
    assert sched.start_s["c"] == ns(200) and sched.finish_s["c"] == ns(2350)
    st_ = sched.stats
    assert st_["status"] == "optimal" and st_["mip_gap"] <= 1e-6
    assert st_["bound_s"] <= st_["incumbent_s"] * (1 + 1e-9)


def test_diamond_enough_crossbars():
    """Four crossbars: both Convs on CIM. a [0,100]; c [200,2350] -> 2400 (b arrives at 1400); d [2400,2500]."""
    costs = CostModel(diamond(), make_platform(crossbars_per_core=4))
    sched = solve(costs)
    assert sched.assignment == {"a": "host", "b": "cim", "c": "cim", "d": "host"}
    assert sched.makespan_s == ns(2500)


def test_host_order_is_chosen():
    """Two independent host-only chains x1 -> x2 and y -> k, with k a CIM Conv:

    x1 1000, x2 1000, y 100 (host only); k (Conv 16x16, n_mvm 20): host 5120, CIM 10+2000+10 = 2020; edge
    y->k 10 elements. Order y, x1, x2: y [0,100], k on CIM [110,2130]; x1 [100,1100], x2 [1100,2100]:
    makespan 2130. Order x1, y, x2: y [1000,1100], k [1110,3130]: 3130. Order x1, x2, y: 4130. With k on
    the host it is at least 2200 + 5120. So y goes first and the optimum is 2130.
    """
    ops = [host_op("x1", 1000, 0), host_op("x2", 1000, 1), host_op("y", 100, 2),
           conv_op("k", 16, 16, 20, n_in=10, n_out=10, index=3)]
    wl = Workload.from_ops("chains", ops, [("x1", "x2", 5), ("y", "k", 10)])
    costs = CostModel(wl, make_platform())
    sched = solve(costs)
    assert sched.makespan_s == ns(2130)
    assert sched.order["host"] == ["y", "x1", "x2"]
    assert sched.assignment["k"] == "cim"


def test_paper_counting_by_hand():
    """The diamond a -> {b, c} -> d, counted as in the CPU-CIM ILP's Table I.

    Parallel pairs (Eq. 10): only {b, c}; |P| = 1.
    Decision variables: x_a, x_b, x_c, x_d (4, fixed ones included) + o_bc (1) = 5.
    Constraints: Eq. 7: 4 (one per op); Eq. 5 fixings: 2 (a and d are not in V_acc); Eq. 6: 1 (sink d);
    Eq. 8: 4 (one per edge); Eq. 9: 8 (two per edge); Eq. 11-12: 2 (one each for {b, c}); Eq. 14: 1. Total 22.
    Solver columns: x 4, o 1, s 4, f 4, T 1, z 4 = 18; rows = the 22 constraints.
    M (Eq. 13) = max(100, 0) + max(2560, 1150) + max(5120, 2150) + max(100, 0) + (100 + 100 + 50 + 50)
    = 7880 + 300 = 8180 ns, so the model's time unit is 1 ns (M in [1e3, 1e4) units).
    """
    costs = CostModel(diamond(), make_platform())
    assert ilp_size(costs) == (5, 22)
    m = build_model(costs)
    assert (m.n_rows, m.n_cols) == (22, 18)
    assert len(m.pairs) == 1 and {m.ops[i] for i in m.pairs[0]} == {"b", "c"}
    assert m.big_m * m.time_unit_s == ns(8180) and m.time_unit_s == pytest.approx(1e-9)
    st_ = get_mapper("ilp").map(costs).stats
    assert (st_["variables"], st_["constraints"], st_["solver_rows"], st_["solver_cols"]) == (5, 22, 22, 18)
    assert (st_["operators"], st_["edges"], st_["parallel_pairs"]) == (4, 4, 1)


def test_parallel_pairs_of_a_wide_graph():
    """Eq. 10 on a 400-op layered DAG agrees with networkx's transitive closure."""
    wl = layered_dag(400, width=8, seed=3)
    m = build_model(CostModel(wl, make_platform()))
    tc = nx.transitive_closure_dag(wl.graph)
    ops = list(wl.graph)
    ref = sum(1 for i, u in enumerate(ops) for v in ops[i + 1:] if not tc.has_edge(u, v) and not tc.has_edge(v, u))
    assert len(m.pairs) == ref
    assert m.n_rows == m.constraints


# ----------------------------------------------------------------------------- CPU-CIM ILP Table I sizes

PAPER = PLATFORMS.parent / "workloads" / "paper"
TABLE_I = {"resnet18": (38, 44, 204), "resnet50": (79, 91, 412), "mobilenet_v2": (71, 71, 331),
           "yolov5n": (251, 3041, 7035)}


def paper_costs(name: str) -> CostModel:
    from hetsim.workload import load_onnx

    path = PAPER / f"{name}_int8_ort.onnx"
    if not path.is_file():
        pytest.skip(f"{path} not available")
    try:
        wl = load_onnx(path)
    except Exception as err:  # e.g. no onnxruntime for shape recovery
        pytest.skip(f"cannot load {path.name}: {err}")
    return CostModel(wl, load_platform(PLATFORMS / "puma.yaml"))


@pytest.mark.parametrize("name", list(TABLE_I))
def test_table_i_sizes(name):
    """CPU-CIM ILP Table I: operators, decision variables and constraints (V_acc = QLinearConv + QGemm)."""
    costs = paper_costs(name)
    t0 = time.perf_counter()
    m = build_model(costs)
    assert time.perf_counter() - t0 < 1.0
    assert (len(m.ops), m.variables, m.constraints) == TABLE_I[name]
    assert m.n_rows == m.constraints


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2"])
def test_paper_graphs_solve(name):
    costs = paper_costs(name)
    sched = solve(costs, time_limit_s=20)
    assert sched.stats["status"] == "optimal"
    assert sched.makespan_s <= get_mapper("greedy").map(costs).makespan_s * (1 + 1e-9)


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2"])
def test_cim_npu_paper_graphs_agree_with_cpsat(name):
    """platforms/cim-npu.yaml (host + CIM + NPU): the general form and cpsat reach the same optimum."""
    plat = PLATFORMS / "cim-npu.yaml"
    if not plat.is_file() or "cpsat" not in MAPPERS:
        pytest.skip("needs platforms/cim-npu.yaml and the cpsat mapper")
    costs = paper_costs(name)
    costs = CostModel(costs.workload, load_platform(plat))
    sched = solve(costs, time_limit_s=30)
    assert sched.stats["form"] == "general" and sched.stats["status"] == "optimal"
    cp = get_mapper("cpsat", time_limit_s=30).map(costs)
    assert cp.stats["status"] == "optimal"
    # cpsat rounds durations up to 1 ns ticks and stops at a 1e-4 relative gap; the ILP at 1e-6
    assert sched.makespan_s == pytest.approx(cp.makespan_s, rel=1e-4)
    assert sched.makespan_s <= cp.makespan_s * (1 + 1e-9)


# ------------------------------------------------------------------------------------ degenerate inputs


def test_single_op():
    costs = CostModel(Workload.from_ops("one", [host_op("a", 100)], []), make_platform())
    sched = solve(costs)
    assert sched.assignment == {"a": "host"} and sched.makespan_s == ns(100)
    assert (sched.stats["variables"], sched.stats["constraints"]) == (1, 1 + 1 + 1 + 1)


def test_single_conv_goes_to_cim():
    costs = CostModel(Workload.from_ops("one", [conv_op("k", 16, 16, 1, 10, 10)], []), make_platform())
    sched = solve(costs)
    assert sched.assignment == {"k": "cim"} and sched.makespan_s == ns(120)


def test_no_supported_op_gives_all_host():
    ops = [host_op("a", 100, 0), host_op("b", 200, 1), host_op("c", 300, 2)]
    costs = CostModel(Workload.from_ops("host", ops, [("a", "b", 5), ("a", "c", 5)]), make_platform())
    sched = solve(costs)
    assert set(sched.assignment.values()) == {"host"} and sched.makespan_s == ns(600)


def test_budget_too_small_for_any_op():
    """One crossbar; each Conv (32x32 weights on 16x16 crossbars) needs 4: everything stays on the host."""
    ops = [conv_op("k1", 32, 32, 1, 10, 10, 0), conv_op("k2", 32, 32, 1, 10, 10, 1)]
    costs = CostModel(Workload.from_ops("big", ops, [("k1", "k2", 10)]), make_platform(crossbars_per_core=1))
    sched = solve(costs)
    assert set(sched.assignment.values()) == {"host"}
    assert sched.makespan_s == ns(2 * 32 * 32)


def test_zero_crossbars_gives_all_host():
    """C = 0 (a valid PUMA config since ``crossbars`` can be given directly): Eq. 14 keeps every op home."""
    plat = make_platform().with_overrides({"devices.cim.crossbars": 0})
    costs = CostModel(diamond(), plat)
    sched = solve(costs)
    assert set(sched.assignment.values()) == {"host"} and sched.makespan_s == ns(7880)


# ---------------------------------------------------------------------------------- platform checks


def test_multi_core_host_is_rejected():
    with pytest.raises(MappingError, match="single-core host"):
        Ilp().map(CostModel(diamond(), make_platform(host_cores=2)))


def test_multi_unit_serial_accelerator_is_rejected():
    """A second CPU with two cores as an accelerator: a serial device of two units, which Eq. 11-12 do not model."""
    data = platform_data(make_platform())
    data["devices"]["dsp"] = {"kind": "cpu", "cores": 2, "clock_ghz": 1, "macs_per_cycle": {8: 1},
                            "mem_bandwidth_gb_s": 1}
    data["links"]["bus"]["connects"] = ["host", "cim", "dsp"]
    with pytest.raises(MappingError, match=r"'dsp' runs 2 ops at once.*cpsat"):
        Ilp().map(CostModel(diamond(), Platform.model_validate(data)))


def test_channel_splitting_platform_is_rejected():
    """DIANA's two accelerators both run a Conv, which a mapping may split between them: refused, naming them."""
    ops = [host_op("a", 100, 0), conv_op("k", 16, 16, 4, n_in=64, n_out=64, index=1)]
    costs = CostModel(Workload.from_ops("w", ops, [("a", "k", 64)]), load_platform(PLATFORMS / "diana.yaml"))
    with pytest.raises(MappingError, match=r"split.*digital, aimc.*min-cost"):
        Ilp().map(costs)


def test_channel_splitting_platform_without_a_shared_op_is_solved():
    """Trivial for channel splits: no op that two splitting devices both run (only host ops), so no split exists
    and the MILP is exact (here: everything on the single host core, in sequence)."""
    ops = [host_op("a", 100, 0), host_op("b", 200, 1), host_op("c", 300, 2)]
    costs = CostModel(Workload.from_ops("w", ops, [("a", "b", 8), ("a", "c", 8)]),
                      load_platform(PLATFORMS / "diana.yaml"))
    sched = solve(costs)
    assert set(sched.assignment.values()) == {"host"} and sched.stats["status"] == "optimal"
    assert sched.makespan_s == pytest.approx(sum(costs.latency[v]["host"] for v in "abc"), rel=1e-9)


# -------------------------------------------------------------------------------------------- options


def test_registered_and_options():
    assert "ilp" in MAPPERS
    m = get_mapper("ilp", time_limit_s=5, mip_rel_gap=0.0, threads=1, seed=3, solver="highs")
    assert (m.time_limit_s, m.mip_rel_gap, m.seed) == (5.0, 0.0, 3)
    with pytest.raises(MappingError, match="unknown solver"):
        Ilp(solver="cplex")


def test_progress_and_warm_start():
    costs = CostModel(layered_dag(8, width=3, seed=1), make_platform(cim_cores=2, crossbars_per_core=8))
    seen = []
    greedy = get_mapper("greedy").map(costs)
    cold = solve(costs)
    warm = solve(costs, warm_start=greedy, progress=seen.append)
    warm2 = solve(costs, warm_start=greedy.assignment)
    warm3 = solve(costs, warm_start="greedy")
    assert warm3.makespan_s == pytest.approx(cold.makespan_s, rel=1e-6)
    assert warm.makespan_s == pytest.approx(cold.makespan_s, rel=1e-6)
    assert warm2.makespan_s == pytest.approx(cold.makespan_s, rel=1e-6)
    assert cold.makespan_s <= greedy.makespan_s * (1 + 1e-9)
    assert seen and seen[-1].get("final") is True
    assert set(seen[-1]) >= {"time_s", "incumbent_s", "bound_s", "gap"}
    assert seen[-1]["incumbent_s"] == pytest.approx(warm.stats["incumbent_s"])


def test_invalid_warm_start():
    costs = CostModel(diamond(), make_platform())
    with pytest.raises(MappingError, match="warm start"):
        Ilp(warm_start={"a": "cim", "b": "host", "c": "host", "d": "host"}).map(costs)
    with pytest.raises(MappingError, match="warm start"):
        Ilp(warm_start={"a": "host"}).map(costs)
    with pytest.raises(MappingError, match="warm_start must be"):
        Ilp(warm_start="all-host")


def test_time_limit_without_incumbent_falls_back_to_greedy(monkeypatch):
    costs = CostModel(diamond(), make_platform(crossbars_per_core=1))
    monkeypatch.setattr(Ilp, "_highs", lambda self, m, s, p: _Result("time_limit", None, None, 1.0, 0.5, "HiGHS"))
    sched = Ilp(time_limit_s=0.5).map(costs)
    assert sched.stats["status"] == "time_limit" and "greedy" in sched.stats["note"]
    assert sched.assignment == get_mapper("greedy").map(costs).assignment
    assert check_schedule(costs, sched).ok


def test_highs_banner_kept_off_stdout():
    """HiGHS prints a copyright banner to fd 1 at its first construction in a process; it must not reach
    stdout (it would corrupt ``hetsim run --json``)."""
    code = ("import sys; sys.path.insert(0, 'tests'); from conftest import diamond, make_platform; "
            "from hetsim.costs import CostModel; from hetsim.mappers.ilp import Ilp; "
            "Ilp().map(CostModel(diamond(), make_platform()))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=PLATFORMS.parent,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout == ""


# --------------------------------------------------------------------------------------------- Gurobi


def test_gurobi_missing(monkeypatch):
    monkeypatch.setitem(sys.modules, "gurobipy", None)
    with pytest.raises(MappingError, match=r"pip install 'hetsim\[gurobi\]'"):
        Ilp(solver="gurobi").map(CostModel(diamond(), make_platform()))


def test_gurobi_small_model_agrees():
    pytest.importorskip("gurobipy")
    costs = CostModel(diamond(), make_platform(crossbars_per_core=1))
    sched = solve(costs, solver="gurobi")
    assert sched.makespan_s == ns(2760)
    assert sched.stats["solver_version"].startswith("Gurobi")


def test_gurobi_size_limited_licence():
    """A model beyond 2000 columns/rows must end in a MappingError naming the licence, not a crash."""
    pytest.importorskip("gurobipy")
    costs = CostModel(layered_dag(120, width=8, seed=0), make_platform())
    m = build_model(costs)
    assert m.n_cols > 2000 and m.n_rows > 2000
    try:
        sched = Ilp(solver="gurobi", time_limit_s=5).map(costs)
    except MappingError as err:
        assert "size-limited" in str(err)
    else:  # a full licence is installed
        assert check_schedule(costs, sched).ok
