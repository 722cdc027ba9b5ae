"""The ``cpsat`` mapper over seed 000's design-space grid (Sec. V): models x crossbars x MVM latency x host.

    python bench/cpsat_points.py                     # quick subset: YOLOv5n (int8) at 25/50 crossbars, 50/1000 ns
    python bench/cpsat_points.py --full              # all 4 models x {25,50,100,200} x {50,100,500,1000} x ARM/x86
    python bench/cpsat_points.py --models yolov5n_int8_qdq --crossbars 25 --tmvm 50 --hosts arm --levers none

Prints one line per point: model, host, C, t_mvm, status, solve time, gap (real time, seed 000 Sec. II-B),
makespan, speedup over all-host, ops offloaded, then the strengthening that fired. Crossbars C are made
as ``cores=1, crossbars_per_core=C``. ``--levers`` takes a comma list of ``hetsim.mappers.cpsat.ALL_LEVERS``
(``all``/``none``); ``--check`` also runs the schedule checker and a SimPy replay.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MODELS = ("resnet18_int8_qdq", "resnet50_int8_qdq", "mobilenet_v2_int8_qdq", "yolov5n_int8_qdq")
HOSTS = {"arm": "puma.yaml", "x86": "puma-x86.yaml"}


def _ints(s: str) -> list[int]:
    return [int(x) for x in s.split(",") if x]


def main(argv: list[str] | None = None) -> int:
    from hetsim.costs import CostModel
    from hetsim.mappers import get_mapper
    from hetsim.mappers.cpsat import ALL_LEVERS
    from hetsim.platform import load_platform
    from hetsim.workload import load_onnx

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--full", action="store_true", help="the 128-point grid of the issue")
    ap.add_argument("--models", help=f"comma list of workloads/<name>.onnx (default {','.join(MODELS)})")
    ap.add_argument("--hosts", help="comma list of arm,x86")
    ap.add_argument("--crossbars", help="comma list, e.g. 25,50,100,200")
    ap.add_argument("--tmvm", help="comma list of MVM latencies in ns, e.g. 50,100,500,1000")
    ap.add_argument("--time-limit", type=float, default=60.0, help="per-point CP-SAT limit, s (default 60)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--levers", default="all", help="comma list of levers, 'all' or 'none'")
    ap.add_argument("--check", action="store_true", help="check and replay every schedule")
    args = ap.parse_args(argv)

    if args.full:
        models, hosts, cbs, tmvms = list(MODELS), list(HOSTS), [25, 50, 100, 200], [50, 100, 500, 1000]
    else:
        models, hosts, cbs, tmvms = ["yolov5n_int8_qdq"], list(HOSTS), [25, 50], [50, 1000]
    models = args.models.split(",") if args.models else models
    hosts = args.hosts.split(",") if args.hosts else hosts
    cbs = _ints(args.crossbars) if args.crossbars else cbs
    tmvms = _ints(args.tmvm) if args.tmvm else tmvms
    levers = ALL_LEVERS if args.levers == "all" else (() if args.levers == "none" else args.levers.split(","))

    print(f"# cpsat grid: time limit {args.time_limit} s/point, {args.threads} threads, seed {args.seed}, "
          f"levers {','.join(levers) or 'none'}")
    print(f"{'model':<22} {'host':<4} {'C':>4} {'t_mvm':>5} {'status':<10} {'time_s':>7} {'gap':>8} "
          f"{'makespan_ms':>11} {'speedup':>7} {'offl':>4}  levers")
    worst = 0.0
    n_opt = n = 0
    for model in models:
        wl = load_onnx(ROOT / "workloads" / f"{model}.onnx")
        for host in hosts:
            base = load_platform(ROOT / "platforms" / HOSTS[host])
            for c in cbs:
                for t in tmvms:
                    plat = base.with_overrides({"devices.cim.cores": 1, "devices.cim.crossbars_per_core": c,
                                                "devices.cim.t_mvm_ns": t})
                    costs = CostModel(wl, plat)
                    all_host = get_mapper("all-host").map(costs).makespan_s
                    t0 = time.perf_counter()
                    s = get_mapper("cpsat", time_limit_s=args.time_limit, threads=args.threads,
                                   seed=args.seed, levers=levers).map(costs)
                    wall = time.perf_counter() - t0
                    st = s.stats
                    pre = st["presolve"]
                    fired = (f"cp={pre.get('critical_path_s', 0) * 1e3:.3f}ms "
                             f"ks={pre.get('knapsack_bound_s', 0) * 1e3:.3f}ms "
                             f"fix={pre.get('fixed_by_path', 0)}+{pre.get('fixed_by_load', 0)} "
                             f"sym={pre.get('symmetric_pairs', 0)} hint={st['hint_makespan_s'] or 0:.6g}"
                             f"({st['hint_mapper']})")
                    if args.check:
                        from hetsim.check import check_schedule
                        from hetsim.sim import simulate

                        rep = check_schedule(costs, s)
                        res = simulate(costs, s)
                        ok = rep.ok and abs(res.makespan_s - s.makespan_s) <= 1e-9 * s.makespan_s
                        fired += " check=" + ("ok" if ok else "FAIL")
                    print(f"{model:<22} {host:<4} {c:>4} {t:>5} {st['status']:<10} {wall:7.2f} "
                          f"{st['mip_gap']:8.2e} {s.makespan_s * 1e3:11.4f} {all_host / s.makespan_s:7.3f} "
                          f"{st['offloaded']:>4}  {fired}", flush=True)
                    n += 1
                    n_opt += st["status"] == "optimal"
                    worst = max(worst, wall)
    print(f"# {n_opt}/{n} proven optimal; slowest point {worst:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
