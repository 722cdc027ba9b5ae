"""hetsim's mappers side by side with the peers, on the same graphs and the same costs.

    pip install anrg-saga                     # SAGA's list schedulers: a bench-only dependency
    python bench/peers.py                     # rebuilt paper/ graphs on platforms/puma.yaml, 30 s limits
    python bench/peers.py --time-limit 10 --models yolov5n_int8_ort --saga HEFT,CPoP

Rows: hetsim's ``cpsat`` (exact; its optimum is the reference when proven), ``heft`` and ``greedy``; ``ilp``, the
CPU-CIM ILP's MILP on HiGHS; and SAGA's list schedulers (HEFT, CPoP, MinMin, MaxMin, ETF, MCT, MET, Sufferage,
OLB, FastestNode) when ``anrg-saga`` is installed. Columns: makespan as hetsim's evaluator scores it
(:func:`hetsim.sim.analytic.list_schedule`, the CPU-CIM ILP's timing model), relative to the reference, and the
wall time of the mapper (for SAGA: its ``schedule`` call; building its graphs is excluded and reported apart).

How the problem is handed to SAGA (SAGA models a node's run time as ``task cost / node speed`` on serial nodes
and a transfer as ``size / link speed``):

* one SAGA node per hetsim device; the host's speed is 1 and a task's cost is the op's host latency, so host
  times are exact;
* an accelerator's speed is one number for all ops: the median, over the ops it runs, of host latency / its
  latency (a SAGA node cannot run some ops 100x faster and others 2x: op-specific ratios are lost);
* a dependency's size is ``transfer time x link bandwidth`` of the edge between host and accelerator, so the
  transfer time SAGA sees is hetsim's exactly, the link's fixed latency included (exact for one link; parameter
  edges and folded ops move nothing);
* what SAGA cannot express is repaired after it schedules, then counted in the ``repaired`` column: an op on a
  device that cannot run it (SAGA has no unsupported ops) goes to the host, and while an accelerator's resident
  capacity (crossbars, CPU-CIM ILP Eq. 14; SAGA has none) is exceeded, the op saving the least host time per
  unit of capacity goes back to the host;
* SAGA's nodes run one task at a time; a PUMA CIM runs its ops in parallel (each owns its crossbars). SAGA plans
  for a serial CIM; hetsim's evaluator then replays the mapping with the CIM's real parallelism, keeping SAGA's
  order on the serial host.

Every SAGA schedule is re-scored by hetsim (``SAGA own`` is what SAGA itself predicted, in its serial model).
SAGA keeps tasks in sets, so its ties are broken in string-hash order: the script runs itself with
``PYTHONHASHSEED=0`` (unless set) so that the same inputs give the same table.
Prints a Markdown table; the figures are recorded in docs/performance.md with the machine and load.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MODELS = ["resnet18_int8_ort", "resnet50_int8_ort", "mobilenet_v2_int8_ort", "yolov5n_int8_ort"]
SAGA_SCHEDULERS = {  # SAGA name -> class name in saga.schedulers (schedulers that duplicate tasks are left out)
    "HEFT": "HeftScheduler", "CPoP": "CpopScheduler", "MinMin": "MinMinScheduler", "MaxMin": "MaxMinScheduler",
    "ETF": "ETFScheduler", "MCT": "MCTScheduler", "MET": "METScheduler", "Sufferage": "SufferageScheduler",
    "OLB": "OLBScheduler", "FastestNode": "FastestNodeScheduler",
}


def saga_problem(costs):
    """SAGA's ``(Network, TaskGraph)`` for ``costs`` (module docstring), and the accelerators' speeds."""
    import logging

    from saga import Network, TaskGraph

    logging.getLogger().setLevel(logging.ERROR)  # SAGA warns when it adds a super source / sink
    host = costs.host
    devs = list(costs.platform.devices)
    speed = {host: 1.0}
    for d in devs:
        if d == host:
            continue
        ratios = [lat[host] / lat[d] for lat in costs.latency.values() if d in lat and host in lat and lat[d] > 0]
        speed[d] = statistics.median(ratios) if ratios else 1e-9
    g = costs.workload.graph
    tasks = [(v, costs.latency[v].get(host, 0.0)) for v in costs.workload.topological_order()]
    deps, bw = [], {}
    accel = [d for d in devs if d != host]
    for d in accel:
        link = costs.platform.link_between(host, d)
        bw[d] = link.bandwidth_gb_s * 1e9 if link is not None else 0.0
    if len(accel) != 1:
        raise SystemExit("bench/peers.py encodes one host and one accelerator (one link) for SAGA")
    a = accel[0]
    for u, v in g.edges:
        t = costs.transfer_time(u, v, host, a)
        deps.append((u, v, t * bw[a]))
    nodes = [(d, speed[d]) for d in devs]
    edges = [(host, a, bw[a])]
    return Network.create(nodes=nodes, edges=edges), TaskGraph.create(tasks=tasks, dependencies=deps), speed


def from_saga(costs, saga_schedule, name: str):
    """hetsim's Schedule for a SAGA schedule: its assignment, repaired where SAGA could not know better, with the
    host running its ops in SAGA's start-time order; and the number of ops repaired."""
    from hetsim.mappers.base import make_schedule

    host = costs.host
    topo = costs.workload.topological_order()
    rank = {v: i for i, v in enumerate(topo)}
    where, begin = {}, {}
    for node, tasks in saga_schedule.mapping.items():
        for t in tasks:
            if t.name in rank and t.name not in where:
                where[t.name], begin[t.name] = node, t.start
    repaired = 0
    for v, d in where.items():
        if d not in costs.latency[v]:  # SAGA has no unsupported ops
            where[v] = host
            repaired += 1
    for d, cap in costs.budget.items():  # SAGA has no resident capacity
        ops = [v for v, dd in where.items() if dd == d]
        used = sum(costs.need[v][d] for v in ops)
        saving = {v: (costs.latency[v][host] - costs.latency[v][d]) / max(costs.need[v][d], 1) for v in ops}
        for v in sorted(ops, key=lambda v: (saving[v], rank[v])):
            if used <= cap:
                break
            if costs.need[v][d] > 0:
                where[v] = host
                used -= costs.need[v][d]
                repaired += 1
    order = {d: [] for d in costs.serial_devices()}
    for v in sorted(where, key=lambda v: (begin[v], rank[v])):
        if where[v] in order:
            order[where[v]].append(v)
    return make_schedule(costs, where, f"saga-{name}", order=order), repaired


def main() -> None:
    if "PYTHONHASHSEED" not in os.environ:  # SAGA's set iteration order, hence its tie-breaking (docstring)
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, "PYTHONHASHSEED": "0"})
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--platform", default="platforms/puma.yaml")
    ap.add_argument("--models", default=",".join(MODELS),
                    help="comma-separated ONNX files under workloads/ or workloads/paper/ (stems)")
    ap.add_argument("--time-limit", type=float, default=30.0, help="cpsat and ilp, seconds per model (default 30)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--saga", default=",".join(SAGA_SCHEDULERS), help="SAGA schedulers to run ('' for none)")
    args = ap.parse_args()

    from hetsim.costs import CostModel
    from hetsim.mappers import get_mapper
    from hetsim.platform import load_platform
    from hetsim.sim import list_schedule
    from hetsim.workload import load_onnx

    try:
        import saga.schedulers as saga_schedulers
    except ImportError:
        saga_schedulers = None
        print("# anrg-saga is not installed (pip install anrg-saga): SAGA rows skipped", file=sys.stderr)
    saga_names = [s for s in args.saga.split(",") if s] if saga_schedulers else []

    plat = load_platform(ROOT / args.platform)
    load = os.getloadavg()
    print(f"# peers on {plat.name}: python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} "
          f"cores, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; cpsat/ilp limit {args.time_limit:g} s, "
          f"{args.threads} threads")
    print("| model | ops | mapper | status | makespan (ms) | vs reference | wall (s) | repaired | SAGA own (ms) |")
    print("|---|---:|---|---|---:|---:|---:|---:|---:|")
    for stem in args.models.split(","):
        path = next((p for p in (ROOT / "workloads" / f"{stem}.onnx", ROOT / "workloads" / "paper" / f"{stem}.onnx")
                     if p.is_file()), None)
        if path is None:
            raise SystemExit(f"no workloads/{stem}.onnx nor workloads/paper/{stem}.onnx")
        wl = load_onnx(path)
        costs = CostModel(wl, plat)
        rows = []  # (mapper, status, makespan, wall, repaired, saga_own)

        def score(s, costs=costs):
            return list_schedule(costs, s.assignment, s.order, s.splits)[2]

        for m in ("cpsat", "ilp", "heft", "greedy"):
            opts = {"time_limit_s": args.time_limit, "threads": args.threads} if m in ("cpsat", "ilp") else {}
            t0 = time.perf_counter()
            s = get_mapper(m, **opts).map(costs)
            wall = time.perf_counter() - t0
            rows.append((m, s.stats.get("status", "heuristic"), score(s), wall, "", ""))
        if saga_names:
            t0 = time.perf_counter()
            network, task_graph, speed = saga_problem(costs)
            t_build = time.perf_counter() - t0
            for name in saga_names:
                sched = getattr(saga_schedulers, SAGA_SCHEDULERS[name])()
                t0 = time.perf_counter()
                out = sched.schedule(network, task_graph)
                wall = time.perf_counter() - t0
                s, repaired = from_saga(costs, out, name)
                rows.append((f"SAGA {name}", "heuristic", score(s), wall, str(repaired), f"{out.makespan * 1e3:.3f}"))
            speeds = ", ".join(f"{d} {x:.3g}" for d, x in speed.items())
            rows.append((f"(SAGA graph build; node speeds {speeds})", "", None, t_build, "", ""))
        ref_status, ref = rows[0][1], rows[0][2]
        for m, status, mk, wall, repaired, own in rows:
            rel = "" if mk is None else f"{(mk / ref - 1) * 100:+.2f} %"
            mks = "" if mk is None else f"{mk * 1e3:.3f}"
            print(f"| {stem} | {len(wl)} | {m} | {status} | {mks} | {rel} | {wall:.2f} | {repaired} | {own} |")
        if ref_status != "optimal":
            print(f"| {stem} | | (reference: cpsat's best, {ref_status}, not proven optimal) | | | | | | |")
        sys.stdout.flush()


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from calibration import session  # wall, CPU, calibration and reference-core seconds of the whole run

    with session(Path(__file__).name):
        main()
