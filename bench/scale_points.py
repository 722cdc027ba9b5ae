"""The default mapper (``cpsat``) on graphs and budgets of any size: wall time against its
time limit, status, bound, and the phases of the mapping.

    python bench/scale_points.py                     # all cases below, --time-limit 10
    python bench/scale_points.py --cases chain,fan --time-limit 5

Cases (``platforms/puma.yaml``: ARM host + PUMA CIM, 100 crossbars unless said):

* ``chain``: a 20,000-op chain (``hetsim.workload.synthetic.chain``): solved exactly by the chain DP;
* ``fan``: a 2,000-branch fan-out (``synthetic.fan_out``);
* ``dag``: a 100,000-op layered synthetic DAG (``synthetic.layered_dag``);
* ``yolo100`` / ``yolo100k``: ``workloads/yolov5n.onnx`` with 100 and with 100,000 crossbars (a budget that
  never binds must not cost time).

Prints per case: ops, cost-model time, the mapper's wall time (``stats['solve_time_s']``), status, MIP gap,
bound and makespan, and ``phases_s``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CASES = ("chain", "fan", "dag", "yolo100", "yolo100k")


def workload(case: str):
    from hetsim.workload import load_onnx
    from hetsim.workload import synthetic as S

    if case == "chain":
        return S.chain(20_000), 100
    if case == "fan":
        return S.fan_out(2_000), 100
    if case == "dag":
        return S.layered_dag(100_000), 100
    wl = load_onnx(ROOT / "workloads" / "yolov5n.onnx")
    return wl, (100 if case == "yolo100" else 100_000)


def main(argv: list[str] | None = None) -> int:
    from hetsim.costs import CostModel
    from hetsim.mappers import get_mapper
    from hetsim.platform import load_platform

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default=",".join(CASES), help=f"comma list of {','.join(CASES)}")
    ap.add_argument("--time-limit", type=float, default=10.0, help="cpsat's --time-limit, s (default 10)")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)
    base = load_platform(ROOT / "platforms" / "puma.yaml")
    print(f"# cpsat, time limit {args.time_limit} s, {args.threads} threads")
    print(f"{'case':<9} {'ops':>7} {'costs_s':>7} {'wall_s':>7} {'status':<10} {'gap':>8} {'bound_ms':>10} "
          f"{'makespan_ms':>11}  phases (s)")
    for case in args.cases.split(","):
        wl, crossbars = workload(case)
        plat = base.with_overrides({"devices.cim.crossbars": crossbars})
        t0 = time.perf_counter()
        costs = CostModel(wl, plat)
        t_costs = time.perf_counter() - t0
        t0 = time.perf_counter()
        s = get_mapper("cpsat", time_limit_s=args.time_limit, threads=args.threads).map(costs)
        wall = time.perf_counter() - t0
        st = s.stats
        phases = " ".join(f"{k.removesuffix('_s')}={v:.2f}" for k, v in st.get("phases_s", {}).items())
        print(f"{case:<9} {len(wl.graph):>7} {t_costs:7.2f} {wall:7.2f} {st['status']:<10} {st['mip_gap']:8.2e} "
              f"{st['bound_s'] * 1e3:10.3f} {s.makespan_s * 1e3:11.3f}  {phases} src={st['solution_source']}",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from calibration import session  # wall, CPU, calibration and reference-core seconds of the whole run

    with session(Path(__file__).name):
        raise SystemExit(main())
