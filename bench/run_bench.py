"""Benchmarks: start-up, import, mapping and replay throughput (issue 13, targets 3 and 4).

    python bench/run_bench.py            # start-up; YOLOv5n fp32 and QDQ; a synthetic 100k-op DAG
    python bench/run_bench.py --quick    # 10k-op synthetic DAG instead of 100k
    python bench/run_bench.py --million  # also a 1,000,000-op DAG replay in a child process (time, peak memory)

Prints the machine and its load average (before and after: the machine may be shared), then one line per
measurement. The fast steps are repeated (``--repeat``) and the minimum wall time is reported, the figure least
disturbed by other jobs, with the CPU time of the same step (process time: what the step costs when it has a core
to itself). Start-up commands run in fresh interpreters; their CPU time is the child's user + system time.
Throughputs are ops per second of wall time. The figures are recorded in docs/performance.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ALL_CONTENTION = frozenset({"links", "cim-bus", "cim-cores"})


def timed(fn, repeat: int = 1):
    """``(min wall s, CPU s of that run, result)`` over ``repeat`` calls."""
    best, out = None, None
    for _ in range(repeat):
        c0, t0 = time.process_time(), time.perf_counter()
        out = fn()
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        if best is None or wall < best[0]:
            best = (wall, cpu)
    return best[0], best[1], out


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        info = Path("/proc/cpuinfo").read_text().splitlines()
        cpu = next(line.split(":", 1)[1].strip() for line in info if line.startswith("model name"))
        meminfo = Path("/proc/meminfo").read_text().splitlines()
        mem = next(int(line.split()[1]) for line in meminfo if line.startswith("MemTotal")) / 2**20
        cpu += f", {mem:.0f} GiB"
    except (OSError, StopIteration):
        pass
    return f"python {platform.python_version()}, {cpu}, {os.cpu_count()} cores, {sys.platform}"


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def bench_startup(repeat: int) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    cmds = {
        "hetsim --help": ["--help"],
        "hetsim --version": ["--version"],
        "hetsim run yolov5n --mapper heft": ["run", "platforms/puma.yaml", "workloads/yolov5n.onnx", "--mapper",
                                             "heft"],
    }
    for label, argv in cmds.items():
        walls, cpus = [], []
        for _ in range(repeat):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "hetsim", *argv], cwd=ROOT, env=env, check=True,
                           stdout=subprocess.DEVNULL)
            walls.append(time.perf_counter() - t0)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        i = min(range(repeat), key=walls.__getitem__)
        print(f"{'start-up':<24} {label:<34} {walls[i]:8.3f} s wall (min of {repeat}; median "
              f"{sorted(walls)[repeat // 2]:.3f})  {cpus[i]:.3f} s CPU")


def bench_workload(label, wl_fn, plat, repeat, mappers, load_label="import"):
    from hetsim.costs import CostModel
    from hetsim.mappers import get_mapper
    from hetsim.sim import list_schedule, simulate

    t_import, _, wl = timed(wl_fn, 1 if load_label == "generate" else repeat)
    print(f"{label:<24} {load_label:<17} {t_import:9.3f} s   ({len(wl)} ops, {wl.graph.number_of_edges()} edges)")
    t_cost, _, costs = timed(lambda: CostModel(wl, plat), 1 if load_label == "generate" else repeat)
    print(f"{label:<24} cost model        {t_cost:9.3f} s")
    rep = repeat if len(wl) <= 20_000 else 1
    for m in mappers:
        t_map, _, sched = timed(lambda m=m: get_mapper(m).map(costs), rep)
        off = sum(1 for d in sched.assignment.values() if d != costs.host)
        extra = f", {sched.stats.get('evaluated', 0)} candidate evaluations" if m == "greedy" else ""
        print(f"{label:<24} map {m:<13} {t_map:9.3f} s   ({off} ops offloaded{extra})")
        t_an, c_an, _ = timed(lambda s=sched: list_schedule(costs, s.assignment, s.order), rep)
        print(f"{label:<24} analytic eval     {t_an:9.3f} s   ({len(wl) / t_an:,.0f} ops/s; CPU {c_an:.3f} s)")
        for cont in (frozenset(), ALL_CONTENTION):
            t_sim, c_sim, res = timed(lambda s=sched, c=cont: simulate(costs, s, c), rep)
            tag = "replay" + (" +contention" if cont else "")
            print(f"{label:<24} {tag:<17} {t_sim:9.3f} s   ({len(wl) / t_sim:,.0f} simulated ops/s; CPU {c_sim:.3f} s "
                  f"= {len(wl) / max(c_sim, 1e-9):,.0f} ops/s; {len(res.trace)} trace rows, makespan "
                  f"{res.makespan_s * 1e3:.3f} ms)")


def million_child(n: int) -> None:
    """Replay an ``n``-op synthetic DAG mapped all on the host, contention off and on; print the times and the
    peak resident memory of this process (workload, cost model, schedule and replay together)."""
    from hetsim.costs import CostModel
    from hetsim.mappers import get_mapper
    from hetsim.platform import load_platform
    from hetsim.sim import simulate
    from hetsim.workload.synthetic import layered_dag

    def peak_gib() -> float:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20

    label = f"synthetic {n // 1000}k"
    t, _, wl = timed(lambda: layered_dag(n, seed=0))
    print(f"{label:<24} generate          {t:9.3f} s   ({len(wl)} ops, {wl.graph.number_of_edges()} edges; "
          f"peak {peak_gib():.2f} GiB)")
    t, _, costs = timed(lambda: CostModel(wl, load_platform(ROOT / "platforms" / "puma.yaml")))
    print(f"{label:<24} cost model        {t:9.3f} s   (peak {peak_gib():.2f} GiB)")
    t, _, sched = timed(lambda: get_mapper("all-host").map(costs))
    print(f"{label:<24} map all-host      {t:9.3f} s   (peak {peak_gib():.2f} GiB)")
    for cont in (frozenset(), ALL_CONTENTION):
        t, c, res = timed(lambda c=cont: simulate(costs, sched, c))
        tag = "replay" + (" +contention" if cont else "")
        print(f"{label:<24} {tag:<17} {t:9.3f} s   ({n / t:,.0f} simulated ops/s; CPU {c:.3f} s; {len(res.trace)} "
              f"trace rows; peak {peak_gib():.2f} GiB for the whole process)")
        del res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="synthetic DAG of 10k ops instead of 100k")
    ap.add_argument("--million", action="store_true", help="also replay a 1,000,000-op DAG in a child process")
    ap.add_argument("--repeat", type=int, default=5, help="repeats of the fast steps (minimum reported)")
    ap.add_argument("--synthetic-mappers", default="all-host,greedy", metavar="M1,M2",
                    help="mappers of the synthetic DAG (default: all-host,greedy)")
    ap.add_argument("--only-million", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.only_million:
        million_child(args.only_million)
        return

    print(f"# hetsim bench: {machine()}")
    print(f"# load average at start: {load()}")
    bench_startup(args.repeat)
    from hetsim.platform import load_platform
    from hetsim.workload import load_onnx
    from hetsim.workload.synthetic import layered_dag

    plat = load_platform(ROOT / "platforms" / "puma.yaml")
    for name in ("yolov5n", "yolov5n_int8_qdq"):
        bench_workload(f"{name}.onnx", lambda name=name: load_onnx(ROOT / "workloads" / f"{name}.onnx"), plat,
                       args.repeat, ("all-host", "greedy", "heft"))
    n = 10_000 if args.quick else 100_000
    bench_workload(f"synthetic {n // 1000}k", lambda: layered_dag(n, seed=0), plat, args.repeat,
                   args.synthetic_mappers.split(","), load_label="generate")
    if args.million:
        sys.stdout.flush()
        subprocess.run([sys.executable, __file__, "--only-million", "1000000"], check=True)
    print(f"# load average at end: {load()}")


if __name__ == "__main__":
    main()
