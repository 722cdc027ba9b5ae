"""Benchmarks: import time, mapping time and replay throughput.

    python bench/run_bench.py            # YOLOv5n + a synthetic 100k-op DAG
    python bench/run_bench.py --quick    # 10k-op synthetic DAG instead of 100k

Prints one line per measurement; the figures are recorded in docs/performance.md. Timings are wall-clock
seconds (median of --repeat runs for the fast steps).
"""

from __future__ import annotations

import argparse
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def timed(fn, repeat: int = 1):
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def bench_workload(label, wl_fn, plat, repeat, mappers=("all-host", "greedy", "heft"), load="import"):
    from hetsim.costs import CostModel
    from hetsim.mappers import get_mapper
    from hetsim.sim import list_schedule, simulate

    t_import, wl = timed(wl_fn, repeat)
    print(f"{label:<24} {load:<17} {t_import:9.3f} s   ({len(wl)} ops, {wl.graph.number_of_edges()} edges)")
    t_cost, costs = timed(lambda: CostModel(wl, plat), repeat)
    print(f"{label:<24} cost model        {t_cost:9.3f} s")
    for m in mappers:
        t_map, sched = timed(lambda m=m: get_mapper(m).map(costs), repeat if m == "all-host" else 1)
        off = sum(1 for d in sched.assignment.values() if d != costs.host)
        extra = f", {sched.stats.get('evaluated', 0)} candidate evaluations" if m == "greedy" else ""
        print(f"{label:<24} map {m:<13} {t_map:9.3f} s   ({off} ops offloaded{extra})")
        t_an, _ = timed(lambda s=sched: list_schedule(costs, s.assignment, s.order), repeat)
        print(f"{label:<24} analytic eval     {t_an:9.3f} s   ({len(wl) / t_an:,.0f} ops/s)")
        for cont in (frozenset(), frozenset({"links", "cim-bus", "cim-cores"})):
            t_sim, res = timed(lambda s=sched, c=cont: simulate(costs, s, c), repeat)
            tag = "replay" + (" +contention" if cont else "")
            print(f"{label:<24} {tag:<17} {t_sim:9.3f} s   ({len(wl) / t_sim:,.0f} simulated ops/s, "
                  f"{len(res.trace)} trace rows, makespan {res.makespan_s * 1e3:.3f} ms)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="synthetic DAG of 10k ops instead of 100k")
    ap.add_argument("--repeat", type=int, default=3, help="repeats of the fast steps (median reported)")
    args = ap.parse_args()

    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import hetsim.cli"], check=True, cwd=ROOT)
    t_cli = time.perf_counter() - t0
    from hetsim.platform import load_platform
    from hetsim.workload import load_onnx
    from hetsim.workload.synthetic import layered_dag

    cpu = platform.processor() or platform.machine()
    print(f"# hetsim bench: python {platform.python_version()}, {cpu}, {sys.platform}")
    print(f"{'cli':<24} cold import       {t_cli:9.3f} s   (python -c 'import hetsim.cli', incl. interpreter start)")
    plat = load_platform(ROOT / "platforms" / "puma.yaml")
    bench_workload("yolov5n.onnx", lambda: load_onnx(ROOT / "workloads" / "yolov5n.onnx"), plat, args.repeat)
    bench_workload("yolov5n_int8_qdq.onnx", lambda: load_onnx(ROOT / "workloads" / "yolov5n_int8_qdq.onnx"),
                   plat, args.repeat)
    n = 10_000 if args.quick else 100_000
    bench_workload(f"synthetic {n // 1000}k", lambda: layered_dag(n, seed=0), plat, 1, load="generate")


if __name__ == "__main__":
    main()
