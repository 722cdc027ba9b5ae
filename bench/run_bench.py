"""Benchmarks: the whole command a user runs, start-up, import, mapping and replay throughput.

    python bench/run_bench.py            # whole command at 1k/10k/100k ops; start-up; YOLOv5n; a 100k-op DAG
    python bench/run_bench.py --quick    # whole command at 1k/10k only; 10k-op synthetic DAG instead of 100k
    python bench/run_bench.py --only whole   # only the whole-command growth (or: startup, steps)
    python bench/run_bench.py --million  # also a 1,000,000-op DAG replay in a child process (time, peak memory)

Prints the machine and its load average (before and after: the machine may be shared) and a machine-speed
calibration (``bench/calibration.py``: a fixed pure-Python loop timed between the steps, its median), then one
line per measurement with its wall and CPU seconds and the wall time in reference-core seconds (wall x the
reference core's loop time / this run's loop median), so that runs on other machines or under other loads
compare. Repeated steps (``--repeat``) report the run of median wall time with its CPU time (process time: what
the step costs when it has a core to itself).

**Whole command**: ``hetsim run platforms/puma.yaml G.onnx`` with and without ``--out DIR`` (every output file:
summary, op table, schedule, traces, figures, report.html), each a fresh interpreter as a user runs it (its CPU
time is the child's user + system time), on ONNX graphs made by ``bench/onnx_graphs.py`` at 1,000, 10,000 and
100,000 ops: a ``Relu`` chain with the default mapper (the chain DP) and a DAG of crossing lanes (1x1 convs,
adds, ReLUs) with ``--dag-mapper`` (default ``default``: no ``--mapper`` flag, the mapper a user gets, ``cpsat``;
on graphs past its closure limit it skips greedy and heft and offloads by host time saved per unit of budget,
then searches until its time limit; ``all-host`` times import, cost model, replay and outputs without a search).
Printed: each time, the ratio with/without ``--out`` (goal <= 2) and the growth exponent ``k`` of time ~ ops^k
(least squares over the sizes, on CPU time; goal <= 1.1). The figures are recorded in docs/performance.md.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from calibration import Calibration, Timing, load, machine  # noqa: E402

CAL: Calibration | None = None

ALL_CONTENTION = frozenset({"links", "cim-bus", "cim-cores"})


def timed(fn, repeat: int = 1):
    """``(wall s, CPU s, result)`` of the run of median wall time over ``repeat`` calls, calibration samples
    interleaved (:meth:`calibration.Calibration.timed`)."""
    t = CAL.timed(fn, repeat)
    return t.wall_s, t.cpu_s, t.result


def ref(wall_s: float) -> str:
    """``wall_s`` in reference-core seconds, for a line."""
    return f"{CAL.ref_s(wall_s):.3f} ref-core s"


def _child(argv: list[str], cwd: Path = ROOT) -> Timing:
    """Run ``python -m hetsim ARGV`` in a fresh interpreter: its wall and CPU (user + system) seconds."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "hetsim", *argv], cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return Timing(wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)


def bench_startup(repeat: int) -> None:
    cmds = {
        "hetsim --help": ["--help"],
        "hetsim --version": ["--version"],
        "hetsim run yolov5n --mapper heft": ["run", "platforms/puma.yaml", "workloads/yolov5n.onnx", "--mapper",
                                             "heft"],
    }
    for label, argv in cmds.items():
        runs = []
        for _ in range(repeat):
            CAL.sample()
            runs.append(_child(argv))
        CAL.sample()
        runs.sort(key=lambda r: r.wall_s)
        med = runs[(repeat - 1) // 2]
        print(CAL.figure(f"start-up  {label}", med) + f"   (median of {repeat}; min {runs[0].wall_s:.3f} s wall)")


def growth_exponent(sizes: list[int], seconds: list[float]) -> float:
    """``k`` of ``seconds ~ c * sizes^k``: the least-squares slope of log(seconds) on log(sizes)."""
    import numpy as np

    x, y = np.log(np.asarray(sizes, float)), np.log(np.asarray(seconds, float))
    return float(np.polyfit(x, y, 1)[0])


def bench_whole(sizes: list[int], dag_mapper: str, repeat: int, graphs: tuple[str, ...] = ("chain", "dag")) -> None:
    """``hetsim run`` with and without ``--out`` on the chain and the DAG at each size (module docstring)."""
    import tempfile

    from onnx_graphs import ladder_dag, relu_chain

    with tempfile.TemporaryDirectory(prefix="hetsim-bench-") as tmp:
        tmp = Path(tmp)
        dag_flag = None if dag_mapper == "default" else dag_mapper
        for key, graph, make, mapper in (("chain", "relu chain", relu_chain, None),
                                         ("dag", "lane DAG", ladder_dag, dag_flag)):
            if key not in graphs:
                continue
            cpu = {"run": [], "run --out": []}
            for n in sizes:
                model = make(n, tmp / f"g{n}.onnx")
                base = ["run", "platforms/puma.yaml", str(model), *(["--mapper", mapper] if mapper else [])]
                rows = {}
                for tag, argv in (("run", base), ("run --out", [*base, "--out", str(tmp / "out"), "--force"])):
                    runs = []
                    for _ in range(repeat if n < 100_000 else 1):
                        CAL.sample()
                        runs.append(_child(argv))
                    CAL.sample()
                    rows[tag] = sorted(runs, key=lambda r: r.wall_s)[(len(runs) - 1) // 2]
                    cpu[tag].append(rows[tag].cpu_s)
                    label = f"whole  {graph} {n:,} ops  {tag}" + (f" (--mapper {mapper})" if mapper else "")
                    print(CAL.figure(label, rows[tag], width=58), flush=True)
                out_mb = sum(f.stat().st_size for f in (tmp / "out").iterdir()) / 1e6
                print(f"{'':<58} --out / no --out: {rows['run --out'].cpu_s / rows['run'].cpu_s:.2f}x CPU, "
                      f"{rows['run --out'].wall_s / rows['run'].wall_s:.2f}x wall; outputs {out_mb:.1f} MB", flush=True)
                (tmp / f"g{n}.onnx").unlink()
            for tag, secs in cpu.items() if len(sizes) > 1 else ():
                over = ", ".join(f"{n:,}" for n in sizes)
                print(f"whole  {graph}: growth exponent of `hetsim {tag}` CPU time over {over} ops: "
                      f"{growth_exponent(sizes, secs):.3f} (goal <= 1.1)" + (
                          f"; between the two largest: {growth_exponent(sizes[-2:], secs[-2:]):.3f} (the start-up, "
                          "constant, weighs less there)" if len(sizes) > 2 else ""), flush=True)


def bench_workload(label, wl_fn, plat, repeat, mappers, load_label="import"):
    from hetsim.costs import CostModel
    from hetsim.mappers import get_mapper
    from hetsim.sim import list_schedule, simulate

    t_import, _, wl = timed(wl_fn, 1 if load_label == "generate" else repeat)
    print(f"{label:<24} {load_label:<17} {t_import:9.3f} s = {ref(t_import)}   ({len(wl)} ops, "
          f"{wl.graph.number_of_edges()} edges)")
    t_cost, _, costs = timed(lambda: CostModel(wl, plat), 1 if load_label == "generate" else repeat)
    print(f"{label:<24} cost model        {t_cost:9.3f} s = {ref(t_cost)}")
    rep = repeat if len(wl) <= 20_000 else 1
    for m in mappers:
        t_map, _, sched = timed(lambda m=m: get_mapper(m).map(costs), rep)
        off = sum(1 for d in sched.assignment.values() if d != costs.host)
        extra = f", {sched.stats.get('evaluated', 0)} candidate evaluations" if m == "greedy" else ""
        print(f"{label:<24} map {m:<13} {t_map:9.3f} s = {ref(t_map)}   ({off} ops offloaded{extra})")
        t_an, c_an, _ = timed(lambda s=sched: list_schedule(costs, s.assignment, s.order), rep)
        print(f"{label:<24} analytic eval     {t_an:9.3f} s = {ref(t_an)}   ({len(wl) / t_an:,.0f} ops/s; CPU "
              f"{c_an:.3f} s)")
        for cont in (frozenset(), ALL_CONTENTION):
            t_sim, c_sim, res = timed(lambda s=sched, c=cont: simulate(costs, s, c), rep)
            tag = "replay" + (" +contention" if cont else "")
            print(f"{label:<24} {tag:<17} {t_sim:9.3f} s = {ref(t_sim)}   ({len(wl) / t_sim:,.0f} simulated ops/s; "
                  f"CPU {c_sim:.3f} s "
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
    global CAL
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="whole command at 1k and 10k ops only; synthetic DAG of "
                    "10k ops instead of 100k")
    ap.add_argument("--only", choices=("whole", "startup", "steps"), action="append",
                    help="run only these parts (repeatable; default all)")
    ap.add_argument("--million", action="store_true", help="also replay a 1,000,000-op DAG in a child process")
    ap.add_argument("--repeat", type=int, default=5, help="repeats of the fast steps (median reported)")
    ap.add_argument("--synthetic-mappers", default="all-host,greedy", metavar="M1,M2",
                    help="mappers of the synthetic DAG (default: all-host,greedy)")
    ap.add_argument("--dag-mapper", default="default",
                    help="mapper of the whole-command DAG (default: 'default', no --mapper flag: what a user gets)")
    ap.add_argument("--whole-repeat", type=int, default=3, help="repeats of each whole command under 100k ops")
    ap.add_argument("--sizes", help="comma list of whole-command graph sizes (default 1000,10000,100000)")
    ap.add_argument("--graphs", default="chain,dag", help="whole-command graphs: chain, dag or both (default)")
    ap.add_argument("--only-million", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    CAL = Calibration()
    if args.only_million:
        million_child(args.only_million)
        return
    parts = set(args.only or ("whole", "startup", "steps"))

    print(f"# hetsim bench: {machine()}")
    print(f"# load average at start: {load()}")
    print(CAL.line(), flush=True)
    if "whole" in parts:
        sizes = [1_000, 10_000] if args.quick else [1_000, 10_000, 100_000]
        if args.sizes:
            sizes = [int(x) for x in args.sizes.split(",")]
        bench_whole(sizes, args.dag_mapper, args.whole_repeat, tuple(args.graphs.split(",")))
    if "startup" in parts:
        bench_startup(args.repeat)
    if "steps" in parts:
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
    print(CAL.line())


if __name__ == "__main__":
    main()
