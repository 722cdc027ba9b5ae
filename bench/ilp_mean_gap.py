"""CPU-CIM ILP Table I's *mean* MIP gap and solve time, compared like with like: the paper reports, per model,
the mean over its ARM runs ("The solver often reaches the 600 timeout, yielding solutions with a mean MIP gap of
6.97" for YOLOv5n). This script solves the same ARM grid (4 crossbar counts x 4 MVM latencies,
``sweeps/cpu-cim-ilp.yaml``'s ARM half) with ``ilp`` (the paper's MILP on HiGHS) and ``cpsat`` at one time limit
and prints each model's mean gap, mean solve time and how many points hit the limit.

    python bench/ilp_mean_gap.py --time-limit 10 --models yolov5n

Timings depend on the machine and its load; a calibration (a fixed pure-Python loop, median of interleaved
measurements) is printed beside them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PAPER = {"resnet18": (0.01, 0.02), "resnet50": (0.24, 0.37), "mobilenet_v2": (0.01, 0.07), "yolov5n": (503, 6.97)}
CROSSBARS = (25, 50, 100, 200)
T_MVM_NS = (50, 100, 500, 1000)


sys.path.insert(0, str(ROOT / "bench"))
from calibration import Calibration  # noqa: E402  (the shared loop: median of interleaved samples)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--time-limit", type=float, default=10.0, help="per solve, seconds (default 10)")
    ap.add_argument("--models", default="yolov5n", help="comma-separated, of " + ", ".join(PAPER))
    ap.add_argument("--mappers", default="ilp,cpsat")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()

    from hetsim.costs import CostModel
    from hetsim.mappers import get_mapper
    from hetsim.platform import load_platform
    from hetsim.workload import load_onnx

    base = load_platform(ROOT / "platforms/puma.yaml")
    cal = Calibration()
    print(f"# ARM grid {len(CROSSBARS)}x{len(T_MVM_NS)}, time limit {args.time_limit:g} s, {args.threads} thread(s), "
          f"load average {os.getloadavg()[0]:.1f}")
    print("| model | mapper | points | hit the limit | mean gap % | max gap % | mean solve (s) | paper: mean time (s), "
          "mean gap % (Gurobi, 600 s limit) |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    for m in args.models.split(","):
        wl = load_onnx(ROOT / f"workloads/paper/{m}_int8_ort.onnx")
        for mapper in args.mappers.split(","):
            gaps, walls, limit = [], [], 0
            for xb in CROSSBARS:
                for t in T_MVM_NS:
                    plat = base.with_overrides({"devices.cim.crossbars": xb, "devices.cim.t_mvm_ns": t})
                    costs = CostModel(wl, plat)
                    t0 = time.perf_counter()
                    s = get_mapper(mapper, time_limit_s=args.time_limit, threads=args.threads).map(costs)
                    walls.append(time.perf_counter() - t0)
                    g = s.stats.get("mip_gap")
                    gaps.append(0.0 if g is None else float(g))
                    limit += s.stats.get("status") != "optimal"
                cal.sample()
            p = PAPER[m]
            print(f"| {m} | {mapper} | {len(gaps)} | {limit} | {100 * statistics.mean(gaps):.2f} | "
                  f"{100 * max(gaps):.2f} | {statistics.mean(walls):.2f} "
                  f"({cal.ref_s(statistics.mean(walls)):.2f} ref-core) | {p[0]:g}, {p[1]:g} |", flush=True)
    print(cal.line())
    print(f"# load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
