"""Shared helpers for the cost, simulator, mapper and platform tests.

Small platforms use round numbers so that every latency is an integer number of nanoseconds:

* host CPU: 1 GHz, 1 MAC/cycle at every width, 1 element/cycle, no dispatch overhead and a huge memory
  bandwidth, so ``T_host = macs ns`` for GEMM ops and ``n_out ns`` for the others;
* PUMA CIM: ``t_mvm = 100 ns``, internal bandwidth 1 GB/s = 1 byte/ns, 8-bit elements, 16x16 crossbars, so
  ``T_load = n_in ns``, ``T_mvm = 100 * n_mvm ns``, ``T_store = n_out ns`` (CPU-CIM ILP Eq. 2-3);
* bus: 1 GB/s, no fixed latency, so a transfer of ``e`` elements takes ``e ns`` (CPU-CIM ILP Eq. 4, 1-byte
  elements because the CIM end has ``element_bits: 8``);
* NPU (only with ``make_platform(npu=...)``): a ``kind: npu`` roofline device on the same bus, 1 GHz, 8-bit
  elements, 1 GB/s local bandwidth, so ``T = overhead + max(macs / macs_per_cycle, n_in + n_out) ns``.

Test modules import the plain helpers with ``from conftest import ...`` (pytest puts ``tests/`` on the path).
"""

from __future__ import annotations

import os
from pathlib import Path

import networkx as nx
import pytest
from hypothesis import settings
from hypothesis import strategies as st

from hetsim.costs import CostModel
from hetsim.platform import Platform, load_platform
from hetsim.workload import GemmView, Op, Workload

ROOT = Path(__file__).resolve().parent.parent
PLATFORMS = ROOT / "platforms"
NS = 1e-9
# CI (``.ci/run`` sets CI=1) draws the same Hypothesis examples on every run, so a landing is never decided by a
# fresh random draw and the suite's time does not swing with the examples drawn; a developer's run explores new
# ones (and replays any failure Hypothesis saved in .hypothesis/).
# No per-example deadline in either profile: Hypothesis's default 200 ms is a wall-clock limit, and the suite must
# pass on a loaded 2-core machine, where one example can take seconds; a test's truth is its assertions, not its time.
settings.register_profile("dev", deadline=None)
settings.register_profile("ci", derandomize=True, database=None, print_blob=True, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

#: most pytest-xdist workers ``-n auto`` (pyproject addopts) starts: each worker imports the whole stack (torch,
#: onnxruntime, OR-Tools: ~1 GB) and several tests start subprocesses or threads of their own
MAX_WORKERS = 4


def pytest_xdist_auto_num_workers(config):
    """``-n auto``: one worker per core this process may run on, at most :data:`MAX_WORKERS`."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(MAX_WORKERS, cores))


def ns(x: float):
    """``pytest.approx`` of ``x`` nanoseconds expressed in seconds."""
    return pytest.approx(x * NS, rel=1e-9, abs=1e-18)


def make_platform(
    host_cores: int = 1,
    cim_cores: int = 1,
    crossbars_per_core: int = 4,
    crossbar: int = 16,
    t_mvm_ns: float = 100,
    internal_gb_s: float = 1,
    element_bits: int = 8,
    link_gb_s: float = 1,
    link_latency_ns: float = 0,
    host_w: tuple[float, float] = (2.0, 1.0),
    cim_w: tuple[float, float] = (10.0, 0.5),
    link_w: tuple[float, float] = (1.0, 0.0),
    pj_per_byte: float = 0.0,
    host_extra: dict | None = None,
    npu: dict | None = None,
) -> Platform:
    """A host + CIM + bus platform with round numbers (see the module docstring); ``npu``: also an NPU on the
    bus, these fields over :data:`NPU_DEFAULTS`."""
    host = {
        "kind": "cpu",
        "cores": host_cores,
        "clock_ghz": 1,
        "macs_per_cycle": {8: 1, 32: 1},
        "elementwise_per_cycle": 1,
        "mem_bandwidth_gb_s": 1e12,
        "op_overhead_us": 0,
        "active_w": host_w[0],
        "idle_w": host_w[1],
    }
    host.update(host_extra or {})
    extra = {} if npu is None else {"npu": {**NPU_DEFAULTS, **npu}}
    return Platform.model_validate(
        {
            "name": "test",
            "host": "host",
            "devices": {
                "host": host,
                "cim": {
                    "kind": "puma",
                    "crossbar_rows": crossbar,
                    "crossbar_cols": crossbar,
                    "cores": cim_cores,
                    "crossbars_per_core": crossbars_per_core,
                    "t_mvm_ns": t_mvm_ns,
                    "internal_bandwidth_gb_s": internal_gb_s,
                    "element_bits": element_bits,
                    "active_w": cim_w[0],
                    "idle_w": cim_w[1],
                },
                **extra,
            },
            "links": {
                "bus": {
                    "bandwidth_gb_s": link_gb_s,
                    "latency_ns": link_latency_ns,
                    "connects": ["host", "cim", *extra],
                    "active_w": link_w[0],
                    "idle_w": link_w[1],
                    "energy_pj_per_byte": pj_per_byte,
                }
            },
        }
    )


#: the round-number NPU of ``make_platform(npu=...)``: 1 GHz, 4 int8 MACs/cycle, 1 GB/s = 1 byte/ns local bandwidth,
#: 1 KiB resident weight memory, no dispatch overhead
NPU_DEFAULTS = {
    "kind": "npu",
    "clock_mhz": 1000,
    "macs_per_cycle": {8: 4},
    "bandwidth_gb_s": 1,
    "weight_memory_kib": 1,
    "element_bits": 8,
    "op_overhead_us": 0,
    "active_w": 4.0,
    "idle_w": 0.2,
}


def host_op(name: str, n_out: int, index: int = 0, op_type: str = "Relu") -> Op:
    """A weightless elementwise op: ``n_out ns`` on the test host; no CIM device supports it."""
    return Op(name=name, op_type=op_type, index=index, n_in=n_out, n_out=n_out, bits=8)


def conv_op(name: str, m_v: int, n_v: int, n_mvm: int, n_in: int, n_out: int, index: int = 0, groups: int = 1) -> Op:
    """A CIM-capable Conv: host ``groups*m_v*n_v*n_mvm ns``; CIM ``n_in + 100*n_mvm + n_out ns``."""
    g = GemmView(m_v=m_v, n_v=n_v, n_mvm=n_mvm, groups=groups)
    return Op(
        name=name,
        op_type="Conv",
        index=index,
        n_in=n_in,
        n_out=n_out,
        macs=g.macs,
        bits=8,
        weight_shape=(groups * m_v, n_v),
        weight_elements=groups * m_v * n_v,
        gemm=g,
    )


def diamond() -> Workload:
    """a -> {b, c} -> d.

    ======  =======  ===========  =================================================
    op      type     host (ns)    CIM (ns) = load + mvm + store
    ======  =======  ===========  =================================================
    a       Relu     100          --
    b       Conv     16*16*10     100 + 10*100 + 50 = 1150   (1 crossbar of 16x16)
                     = 2560
    c       Conv     16*16*20     100 + 20*100 + 50 = 2150   (1 crossbar)
                     = 5120
    d       Add      100          --
    ======  =======  ===========  =================================================

    Edges: a->b 100, a->c 100, b->d 50, c->d 50 elements (= ns on the 1 GB/s bus with 8-bit elements).
    """
    ops = [
        host_op("a", 100, index=0),
        conv_op("b", 16, 16, 10, n_in=100, n_out=50, index=1),
        conv_op("c", 16, 16, 20, n_in=100, n_out=50, index=2),
        host_op("d", 100, index=3, op_type="Add"),
    ]
    return Workload.from_ops("diamond", ops, [("a", "b", 100), ("a", "c", 100), ("b", "d", 50), ("c", "d", 50)])


def union_length(intervals) -> float:
    """Length of the union of ``[s, e)`` intervals (independent of hetsim.analysis.metrics.union_length)."""
    total, cur_s, cur_e = 0.0, None, None
    for s, e in sorted(intervals):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return total


def max_concurrency(intervals, eps: float = 1e-15) -> int:
    """Largest number of ``[s, e)`` intervals open at one instant (an end at t closes before a start at t)."""
    events = []
    for s, e in intervals:
        if e - s > eps:
            events.append((s, 1))
            events.append((e - eps, -1))
    events.sort(key=lambda x: (x[0], x[1]))
    cur = best = 0
    for _, k in events:
        cur += k
        best = max(best, cur)
    return best


def critical_path_min(costs: CostModel) -> float:
    """Lower bound on any makespan: longest path where each op takes its fastest device and transfers 0."""
    g = costs.workload.graph
    finish: dict[str, float] = {}
    for v in nx.topological_sort(g):
        ready = max((finish[u] for u in g.predecessors(v)), default=0.0)
        finish[v] = ready + min(costs.latency[v].values())
    return max(finish.values(), default=0.0)


def yolov5n_path() -> Path | None:
    for p in (ROOT / "workloads" / "yolov5n.onnx",):
        if p.is_file():
            return p
    return None


@pytest.fixture(scope="session")
def yolov5n_costs() -> CostModel:
    """yolov5n (fp32 ONNX) on platforms/puma.yaml."""
    from hetsim.workload import load_onnx

    p = yolov5n_path()
    if p is None:
        pytest.skip("yolov5n.onnx not available")
    return CostModel(load_onnx(p), load_platform(PLATFORMS / "puma.yaml"))


# ------------------------------------------------------------------------------------ random DAG setups


@st.composite
def random_setup(draw, contention: bool = True, npu: bool = False, n_ops: tuple[int, int] = (10, 40)):
    """A random workload + platform + assignment + host order (+ contention subset).

    ``n_ops`` (default 10-40) ops with random edges ``i -> j`` (i < j); about half are CIM-capable Convs assigned
    at random to the CIM device while the crossbar budget (cores * crossbars_per_core) lasts; the host order is a random
    linear extension of the DAG restricted to host ops. ``npu``: the platform also has an NPU (random MACs
    per cycle, weight memory and dispatch cost; the Convs run there too), and Convs the CIM does not take go
    to the NPU at random while its weight memory lasts (in the same linear extension's order).

    Returns a dict with ``costs``, ``assignment``, ``order``, ``contention`` (frozenset), ``platform``.
    """
    n = draw(st.integers(*n_ops))
    ops = []
    for i in range(n):
        name = f"o{i:02d}"
        if draw(st.booleans()):
            ops.append(
                conv_op(
                    name,
                    draw(st.integers(1, 32)),
                    draw(st.integers(1, 32)),
                    draw(st.integers(1, 30)),
                    n_in=draw(st.integers(1, 500)),
                    n_out=draw(st.integers(1, 500)),
                    index=i,
                )
            )
        else:
            ops.append(host_op(name, draw(st.integers(1, 3000)), index=i))
    edges = []
    for j in range(1, n):
        preds = draw(st.sets(st.integers(0, j - 1), max_size=min(j, 3)))
        edges += [(ops[i].name, ops[j].name, draw(st.integers(0, 400))) for i in sorted(preds)]
    wl = Workload.from_ops("random", ops, edges)
    # a few parameter edges (constant producers): they order execution but move nothing
    for u, v in list(wl.graph.edges)[: draw(st.integers(0, 2))]:
        wl.graph.edges[u, v]["param"] = True
    plat = make_platform(
        host_cores=draw(st.integers(1, 3)),
        cim_cores=draw(st.integers(1, 3)),
        crossbars_per_core=draw(st.integers(2, 8)),
        link_latency_ns=draw(st.sampled_from([0, 5])),
        pj_per_byte=draw(st.sampled_from([0.0, 3.0])),
        npu=None if not npu else {
            "macs_per_cycle": {8: draw(st.sampled_from([1, 4, 16]))},
            "weight_memory_kib": draw(st.sampled_from([0.5, 1, 4])),
            "op_overhead_us": draw(st.sampled_from([0, 0.05])),
        },
    )
    costs = CostModel(wl, plat)
    budget = dict(costs.budget)
    assignment = {}
    for o in ops:
        for dev in costs.budget:
            need = costs.need.get(o.name, {}).get(dev)
            if need is not None and need <= budget[dev] and draw(st.booleans()):
                assignment[o.name] = dev
                budget[dev] -= need
                break
        else:
            assignment[o.name] = "host"
    prio = {o.name: draw(st.integers(0, 1000)) for o in ops}
    topo = list(nx.lexicographical_topological_sort(wl.graph, key=lambda v: (prio[v], v)))
    order = {d: [v for v in topo if assignment[v] == d] for d in plat.devices}
    kinds = frozenset()
    if contention:
        kinds = frozenset(k for k in ("links", "cim-bus", "cim-cores") if draw(st.booleans()))
    return {"costs": costs, "assignment": assignment, "order": order, "contention": kinds, "platform": plat}


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    """Run ``hetsim`` in-process; return (exit code, stdout, stderr)."""
    from hetsim.cli import main

    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_input_error(code: int, err: str, *needles: str) -> None:
    """A bad-input exit: code 2, one ``hetsim: error:`` line first, no traceback, every needle in the message."""
    assert code == 2, err
    lines = [ln for ln in err.strip().splitlines() if ln]
    assert lines and lines[0].startswith("hetsim: error:")
    assert "Traceback" not in err
    for n in needles:
        assert n in err, (n, err)


def assert_kill_and_resume(spec, tmp_path: Path, kill_at: int, torn: str, expect_ran: int, table):
    """Run the sweep ``spec`` in full, then again killed after ``kill_at`` points with a torn last line
    appended (``torn``, as a kill in the middle of a write leaves); resuming must run exactly ``expect_ran``
    points, each once, skip the ``kill_at`` done, and give the same table (``table(path)``) as the full run.
    Returns the resumed table's path."""
    import pandas as pd

    from hetsim.dse import run_sweep

    full = tmp_path / "full.csv"
    run_sweep(spec, output=full, workers=1)

    class Killed(Exception):
        pass

    def kill(done, total, row):
        if done == kill_at:
            raise Killed

    part = tmp_path / "part.csv"
    with pytest.raises(Killed):
        run_sweep(spec, output=part, workers=1, progress=kill)
    assert len(pd.read_csv(part)) == kill_at
    with part.open("a") as f:
        f.write(torn)
    seen = []
    _, ran, skipped = run_sweep(spec, output=part, workers=1, progress=lambda d, t, r: seen.append(r["key"]))
    assert (ran, skipped) == (expect_ran, kill_at)
    assert len(set(seen)) == expect_ran
    pd.testing.assert_frame_equal(table(part), table(full))
    return part


def pytest_sessionfinish(session, exitstatus):
    """Name every Python thread still alive when the tests are done, with where it is, on stderr.

    A thread still inside OR-Tools' CP-SAT or onnxruntime when the interpreter exits aborts the process (C++
    ``std::terminate``: "terminate called without an active exception", then faulthandler's "Fatal Python error:
    Aborted", exit 134; reproduced outside the suite with a thread solving or running a session at exit). No test
    is known to leave one inside native code (today it names dask's idle 'Dask-Offload_0', waiting in Python:
    harmless); if the suite (or an xdist worker) ever dies at exit again, the log names the thread left behind."""
    import sys
    import threading
    import traceback

    frames = sys._current_frames()
    left = [t for t in threading.enumerate() if t is not threading.main_thread() and t.is_alive()
            and not t.name.startswith(("execnet", "pytest_timeout"))]
    for t in left:
        where = "".join(traceback.format_stack(frames[t.ident])[-3:]) if t.ident in frames else "  (no frame)\n"
        sys.__stderr__.write(f"tests: thread {t.name!r} (daemon={t.daemon}) still alive at the end:\n{where}")
