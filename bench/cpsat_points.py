"""The ``cpsat`` mapper over the CPU-CIM ILP design-space grid (Sec. V): models x crossbars x MVM latency x host.

    python bench/cpsat_points.py                  # quick subset: YOLOv5n, 25/50 crossbars, 50/1000 ns, ARM/x86
    python bench/cpsat_points.py --full           # 4 models x {25,50,100,200} x {50,100,500,1000} x ARM/x86
    python bench/cpsat_points.py --models yolov5n --crossbars 25 --tmvm 50 --hosts arm --levers none
    python bench/cpsat_points.py --models yolov5n --qdq         # workloads/yolov5n_int8_qdq.onnx instead
    python bench/cpsat_points.py --three-devices  # every shipped ONNX workload on cim-npu.yaml and soc-2npu.yaml

``--three-devices`` runs cpsat with its defaults (30 s limit) on every ``workloads/*.onnx`` and
``workloads/paper/*.onnx`` on ``platforms/cim-npu.yaml`` (host + CIM + NPU) and ``platforms/soc-2npu.yaml`` (two-core
host + two NPUs + CIM): per point the status, the gap at the end beside the bound, the wall time and the same
time in reference-core seconds (below).

Calibration (``bench/calibration.py``, shared by every bench script): the fixed pure-Python loop is timed
between points (before every point with ``--three-devices``), as many copies at once as the solver has workers
(``--threads``, default 2: a 2-worker solve slows with the machine's other jobs as 2 loops do, not as one); each
line shows the median of the measurements so far, and the times divided by it and multiplied by
:data:`REF_LOOP_S` are "reference-core seconds" (the loop's time on the reference core, our definition), so runs
on machines or loads of different speed compare.

Models are hetsim's rebuilt graphs of the CPU-CIM ILP paper's networks ``workloads/paper/<model>_int8_ort.onnx``
(onnxruntime's fused QLinear graphs of seeded random weights, whose node counts equal Table I's; not the
authors' files, ``workloads/README.md``) when they load, else ``workloads/<model>_int8_qdq.onnx``.
Prints one line per point: model, host, C, t_mvm, status, wall time, gap (real time, CPU-CIM ILP Sec. II-B),
wall time in reference-core seconds (``bench/calibration.py``: wall x the reference core's loop time / this
run's loop median so far) and CPU seconds (CP-SAT's threads included), makespan, speedup over all-host, ops
offloaded, then what the strengthening did (bounds as fractions of the
makespan, ops fixed, decomposition solves, where the schedule came from). Crossbars C are set with
``devices.cim.crossbars`` (or ``cores=1, crossbars_per_core=C`` on the older platform schema). ``--levers``
takes a comma list of ``hetsim.mappers.cpsat.ALL_LEVERS`` (``all``/``none``); ``--check`` also runs the
schedule checker and a SimPy replay; ``--nondeterministic`` lets CP-SAT's workers run freely (faster, not
reproducible).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from calibration import REFERENCE_LOOP_S, Calibration, load, machine  # noqa: E402

CALIBRATE_EVERY_S = 20.0
"""A calibration sample after a point when this long has passed since the last one (interleaved, not per point:
a sample costs a few tenths of a second, more under load)."""

MODELS = ("resnet18", "resnet50", "mobilenet_v2", "yolov5n")
THREE_DEVICE_PLATFORMS = ("cim-npu.yaml", "soc-2npu.yaml")
#: seconds the reference core takes for the reference loop: the one definition of ``bench/calibration.py``
REF_LOOP_S = REFERENCE_LOOP_S




HOSTS = {"arm": "puma.yaml", "x86": "puma-x86.yaml"}


def with_budget(base, crossbars: int, t_mvm_ns: float):
    """``base`` with ``C = crossbars`` on the CIM device and the given MVM latency (``devices.cim.crossbars``
    when the platform schema has it, else one core of ``C`` crossbars)."""
    from hetsim.errors import PlatformError

    try:
        return base.with_overrides({"devices.cim.crossbars": crossbars, "devices.cim.t_mvm_ns": t_mvm_ns})
    except PlatformError:
        return base.with_overrides({"devices.cim.cores": 1, "devices.cim.crossbars_per_core": crossbars,
                                    "devices.cim.t_mvm_ns": t_mvm_ns})


def load_model(name: str, qdq: bool = False):
    """``name``: a path to an ``.onnx`` file (e.g. ``workloads/yolov5n.onnx``, the fp32 export), a file stem in
    ``workloads/`` (e.g. ``yolov5n_int8_qdq``), or a short name of :data:`MODELS`: hetsim's rebuilt graph of the
    CPU-CIM ILP paper's network ``workloads/paper/<name>_int8_ort.onnx`` (onnxruntime's fused QLinear graphs, node
    counts equal to Table I's) when it loads, else ``workloads/<name>_int8_qdq.onnx`` (``qdq=True`` forces the
    latter)."""
    from hetsim.errors import InputError
    from hetsim.workload import load_onnx

    p = Path(name)
    if p.suffix == ".onnx":
        return load_onnx(p), p.stem
    if name not in MODELS:
        return load_onnx(ROOT / "workloads" / f"{name}.onnx"), name
    paper = ROOT / "workloads" / "paper" / f"{name}_int8_ort.onnx"
    if not qdq and paper.is_file():
        try:
            return load_onnx(paper), f"paper/{name}"
        except InputError:
            pass
    return load_onnx(ROOT / "workloads" / f"{name}_int8_qdq.onnx"), f"{name}_int8_qdq"


def _levers_summary(st: dict, makespan: float) -> str:
    """What the strengthening did, relative to the final makespan: bound of each lever as a fraction of it,
    ops fixed, where the schedule came from."""
    pre = st["presolve"]

    def rel(key):
        v = pre.get(key)
        return "-" if v is None else f"{v / makespan:.4f}"

    out = (f"heur={rel('heuristic_makespan_s')}({pre.get('heuristic_source')}) cp={rel('critical_path_s')} "
           f"ks={rel('knapsack_bound_s')} root={rel('root_bound_s')} "
           f"fix={pre.get('fixed_by_path', 0)}+{pre.get('fixed_by_load', 0)} sym={pre.get('symmetric_pairs', 0)}")
    dec = pre.get("decompose")
    if dec:
        out += (f" dec={rel('decompose_bound_s')}(cuts={dec['cuts']},max={dec['largest_segment']},"
                f"solves={dec['solves']},rounds={dec['rounds']})")
    if pre.get("full_model_solved"):
        out += f" full(seg={pre.get('segment_constraints', 0)})"
    if "fluid_bound_s" in pre:
        out += f" fluid={rel('fluid_bound_s')}({pre.get('fluid_status')},{pre.get('fluid_time_s', 0):.1f}s)"
    return out + f" src={st['solution_source']}"


def _ints(s: str) -> list[int]:
    return [int(x) for x in s.split(",") if x]


def main(argv: list[str] | None = None) -> int:
    from hetsim.costs import CostModel
    from hetsim.mappers import get_mapper
    from hetsim.mappers.cpsat import ALL_LEVERS
    from hetsim.platform import load_platform

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--full", action="store_true", help="the 128-point CPU-CIM grid of sweeps/cpu-cim-ilp.yaml")
    ap.add_argument("--models", help=f"comma list of workloads/<name>.onnx (default {','.join(MODELS)})")
    ap.add_argument("--hosts", help="comma list of arm,x86")
    ap.add_argument("--crossbars", help="comma list, e.g. 25,50,100,200")
    ap.add_argument("--tmvm", help="comma list of MVM latencies in ns, e.g. 50,100,500,1000")
    ap.add_argument("--time-limit", type=float, default=60.0, help="per-point CP-SAT limit, s (default 60)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--levers", default="all", help="comma list of levers, 'all' or 'none'")
    ap.add_argument("--check", action="store_true", help="check and replay every schedule")
    ap.add_argument("--qdq", action="store_true",
                    help="use workloads/<model>_int8_qdq.onnx, not the rebuilt paper/ graph")
    ap.add_argument("--gap", type=float, default=1e-4, help="mip_rel_gap (default 1e-4; 0 = exact proof)")
    ap.add_argument("--nondeterministic", action="store_true", help="no interleaved search (faster)")
    ap.add_argument("--three-devices", action="store_true",
                    help="every shipped ONNX workload on cim-npu.yaml and soc-2npu.yaml, cpsat defaults, calibrated")
    ap.add_argument("--reference-limit", type=float,
                    help="the time limit in reference-core seconds (each point's wall limit is this x the calibration "
                         "median / REF_LOOP_S; replaces --time-limit), so a loaded machine gets the same work")
    ap.add_argument("--platforms", help="with --three-devices: comma list of platform files (default both)")
    args = ap.parse_args(argv)
    if args.three_devices:
        return three_devices(args)

    if args.full:
        models, hosts, cbs, tmvms = list(MODELS), list(HOSTS), [25, 50, 100, 200], [50, 100, 500, 1000]
    else:
        models, hosts, cbs, tmvms = ["yolov5n"], list(HOSTS), [25, 50], [50, 1000]
    models = args.models.split(",") if args.models else models
    hosts = args.hosts.split(",") if args.hosts else hosts
    cbs = _ints(args.crossbars) if args.crossbars else cbs
    tmvms = _ints(args.tmvm) if args.tmvm else tmvms
    levers = ALL_LEVERS if args.levers == "all" else (() if args.levers == "none" else args.levers.split(","))

    cal = Calibration(width=args.threads)  # the solver's workers: the loop as wide as they are
    print(f"# {machine()}; load average at start {load()}")
    print(cal.line())
    what = f"{args.reference_limit} reference-core s" if args.reference_limit else f"{args.time_limit} s"
    print(f"# cpsat grid: time limit {what}/point, {args.threads} threads, seed {args.seed}, "
          f"gap {args.gap}, {'non' if args.nondeterministic else ''}deterministic, levers {','.join(levers) or 'none'}")
    print(f"{'model':<22} {'host':<4} {'C':>4} {'t_mvm':>5} {'status':<10} {'time_s':>7} {'ref_s':>7} {'cpu_s':>7} "
          f"{'gap':>8} {'makespan_ms':>11} {'speedup':>7} {'offl':>4}  levers")
    worst = worst_ref = total = 0.0
    last_sample = time.perf_counter()
    n_opt = n = 0
    for name in models:
        wl, model = load_model(name, args.qdq)
        for host in hosts:
            base = load_platform(ROOT / "platforms" / HOSTS[host])
            for c in cbs:
                for t in tmvms:
                    plat = with_budget(base, c, t)
                    costs = CostModel(wl, plat)
                    all_host = get_mapper("all-host").map(costs).makespan_s
                    t0, c0 = time.perf_counter(), time.process_time()
                    limit = args.time_limit if not args.reference_limit else args.reference_limit / cal.scale
                    s = get_mapper("cpsat", time_limit_s=limit, threads=args.threads,
                                   seed=args.seed, levers=levers, mip_rel_gap=args.gap,
                                   deterministic=not args.nondeterministic).map(costs)
                    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
                    if time.perf_counter() - last_sample > CALIBRATE_EVERY_S:
                        cal.sample()
                        last_sample = time.perf_counter()
                    st = s.stats
                    fired = _levers_summary(st, s.makespan_s)
                    if args.check:
                        from hetsim.check import check_schedule
                        from hetsim.sim import simulate

                        rep = check_schedule(costs, s)
                        res = simulate(costs, s)
                        ok = rep.ok and abs(res.makespan_s - s.makespan_s) <= 1e-9 * s.makespan_s
                        fired += " check=" + ("ok" if ok else "FAIL")
                    print(f"{model:<22} {host:<4} {c:>4} {t:>5} {st['status']:<10} {wall:7.2f} "
                          f"{cal.ref_s(wall):7.2f} {cpu:7.2f} {st['mip_gap']:8.2e} {s.makespan_s * 1e3:11.4f} "
                          f"{all_host / s.makespan_s:7.3f} "
                          f"{st['offloaded']:>4}  {fired}", flush=True)
                    n += 1
                    n_opt += st["status"] == "optimal"
                    worst, total = max(worst, wall), total + wall
                    worst_ref = max(worst_ref, cal.ref_s(wall))
    cal.sample()
    print(f"# load average at end {load()}")
    print(cal.line())
    print(f"# {n_opt}/{n} proven optimal; slowest point {worst:.2f} s wall = {cal.ref_s(worst):.2f} ref-core s at the "
          f"run's median calibration ({worst_ref:.2f} at the calibration of its time); sum of points {total:.1f} s "
          f"wall = {cal.ref_s(total):.1f} ref-core s")
    return 0


def three_devices(args) -> int:
    """The three-device grid (module docstring): one line per workload x platform."""
    from hetsim.costs import CostModel
    from hetsim.mappers import get_mapper
    from hetsim.platform import load_platform
    from hetsim.workload import load_onnx

    files = sorted((ROOT / "workloads").glob("*.onnx")) + sorted((ROOT / "workloads" / "paper").glob("*.onnx"))
    if args.models:
        files = [f for f in files if any(m in f.name for m in args.models.split(","))]
    limit = 30.0 if args.time_limit == 60.0 else args.time_limit  # cpsat's own default unless set
    plats = args.platforms.split(",") if args.platforms else THREE_DEVICE_PLATFORMS
    what = (f"{args.reference_limit} reference-core s" if args.reference_limit else f"{limit} s")
    print(f"# {machine()}; load average at start {load()}")
    print(f"# three-device grid: cpsat time limit {what}, {args.threads} threads, seed {args.seed}, "
          f"gap {args.gap}; ref_s = wall / calibration median * {REF_LOOP_S} (reference-core seconds)")
    print(f"{'workload':<44} {'platform':<9} {'status':<10} {'gap':>8} {'bound_ms':>10} {'makespan_ms':>11} "
          f"{'wall_s':>7} {'ref_s':>7} {'calib_s':>7}  devices used")
    cal = Calibration(0, width=args.threads)  # sampled before every point, as wide as the solver's workers
    n = n_opt = 0
    worst = 0.0
    for pname in plats:
        plat = load_platform(ROOT / "platforms" / pname)
        for f in files:
            costs = CostModel(load_onnx(f), plat)
            cal.sample()
            if args.reference_limit:
                limit = args.reference_limit / cal.scale
            t0 = time.perf_counter()
            s = get_mapper("cpsat", time_limit_s=limit, threads=args.threads, seed=args.seed,
                           mip_rel_gap=args.gap).map(costs)
            wall = time.perf_counter() - t0
            med = cal.median_s
            ref = wall / med * REF_LOOP_S
            st = s.stats
            used = {}
            for d in s.assignment.values():
                used[d] = used.get(d, 0) + 1
            name = str(f.relative_to(ROOT / "workloads"))
            print(f"{name:<44} {pname.removesuffix('.yaml'):<9} {st['status']:<10} {st['mip_gap']:8.2e} "
                  f"{st['bound_s'] * 1e3:10.4f} {s.makespan_s * 1e3:11.4f} {wall:7.2f} {ref:7.2f} {med:7.3f}  "
                  + ",".join(f"{d}={k}" for d, k in sorted(used.items())), flush=True)
            n += 1
            n_opt += st["status"] == "optimal"
            worst = max(worst, ref)
    cal.sample()
    print(f"# load average at end {load()}")
    print(f"# {n_opt}/{n} proven optimal; slowest point {worst:.2f} reference-core s; calibration loop median "
          f"{cal.median_s:.3f} s (min {min(cal.walls):.3f}, max {max(cal.walls):.3f}, {len(cal.walls)} runs, "
          f"{cal.width} copies at once)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
