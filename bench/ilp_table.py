"""CPU-CIM ILP Table I, reproduced: ILP sizes and solve statistics of `ilp` (HiGHS) and `cpsat`, side by side
with the paper's Gurobi figures, plus heft's makespan against the optimum.

    python bench/ilp_table.py                      # rebuilt paper/ graphs + QDQ files, ARM setup, 60 s limit
    python bench/ilp_table.py --time-limit 10 --models paper

ARM setup = platforms/puma.yaml (100 crossbars of 256x256, 50 ns MVM, Cortex-A72 roofline host). Prints a
Markdown table; the figures are recorded in docs/performance.md with the machine they ran on.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# CPU-CIM ILP Table I (ARM setup, Gurobi): operators, decision variables, constraints, mean solve time (s),
# mean MIP gap (%)
PAPER = {
    "resnet18": (38, 44, 204, "<0.01", 0.02),
    "resnet50": (79, 91, 412, "0.24", 0.37),
    "mobilenet_v2": (71, 71, 331, "<0.01", 0.07),
    "yolov5n": (251, 3041, 7035, "503", 6.97),
}
MODELS = {
    "paper": [f"workloads/paper/{m}_int8_ort.onnx" for m in PAPER],
    "qdq": [f"workloads/{m}_int8_qdq.onnx" for m in PAPER],
}


def fmt_gap(g) -> str:
    return "-" if g is None else f"{g * 100:.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--time-limit", type=float, default=60.0, help="per solve, seconds (default 60)")
    ap.add_argument("--models", choices=["paper", "qdq", "all"], default="all")
    ap.add_argument("--platform", default="platforms/puma.yaml")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--mappers", default="ilp,cpsat")
    args = ap.parse_args()

    from hetsim.costs import CostModel
    from hetsim.mappers import MAPPERS, get_mapper
    from hetsim.mappers.ilp import ilp_size
    from hetsim.platform import load_platform
    from hetsim.sim import simulate
    from hetsim.workload import load_onnx

    plat = load_platform(ROOT / args.platform)
    files = MODELS["paper"] + MODELS["qdq"] if args.models == "all" else MODELS[args.models]
    mappers = [m for m in args.mappers.split(",") if m in MAPPERS]
    print(f"# CPU-CIM ILP Table I on {plat.name}: python {platform.python_version()}, {platform.machine()}, "
          f"time limit {args.time_limit:g} s, {args.threads} threads")
    head = ["model", "ops", "vars", "cons", "paper ops/vars/cons", "paper time (s)", "paper gap %"]
    for m in mappers:
        head += [f"{m} status", f"{m} time (s)", f"{m} gap %", f"{m} makespan (ms)"]
    head += ["speed ratio ilp/cpsat", "heft (ms)", "heft vs best"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for f in files:
        wl = load_onnx(ROOT / f)
        costs = CostModel(wl, plat)
        nvar, ncons = ilp_size(costs)
        key = next(k for k in PAPER if Path(f).name.startswith(k))
        p = PAPER[key]
        row = [Path(f).stem, str(len(wl)), f"{nvar:,}", f"{ncons:,}", f"{p[0]}/{p[1]:,}/{p[2]:,}", p[3], f"{p[4]}"]
        times, best = {}, None
        for m in mappers:
            t0 = time.perf_counter()
            s = get_mapper(m, time_limit_s=args.time_limit, threads=args.threads).map(costs)
            wall = time.perf_counter() - t0
            r = simulate(costs, s)
            assert r.makespan_s == s.makespan_s
            times[m] = wall
            best = r.makespan_s if best is None else min(best, r.makespan_s)
            row += [s.stats.get("status", "?"), f"{wall:.2f}", fmt_gap(s.stats.get("mip_gap")),
                    f"{r.makespan_s * 1e3:.3f}"]
        ratio = times["ilp"] / times["cpsat"] if "ilp" in times and "cpsat" in times else None
        h = get_mapper("heft").map(costs)
        row += ["-" if ratio is None else f"{ratio:.1f}x", f"{h.makespan_s * 1e3:.3f}",
                "-" if best is None else f"{(h.makespan_s / best - 1) * 100:+.2f} %"]
        print("| " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from calibration import session  # wall, CPU, calibration and reference-core seconds of the whole run

    with session(Path(__file__).name):
        main()
