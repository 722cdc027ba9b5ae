"""The scenario replay at scale (issue 23, bench): YOLOv5n requests on platforms/puma.yaml, every contention kind on.

    python bench/scenario_bench.py                       # 10,000 requests (about 2.6 M ops)
    python bench/scenario_bench.py --requests 1000 4000  # several sizes: peak memory must not grow with them

For each size, in one process: a closed loop of 4 YOLOv5n requests in flight (heft mapping, ``fifo``
dispatch, links + cim-bus + cim-cores contention) replayed; the mapping and the one-request pricing before it
are not timed. Printed: simulated ops per second of wall time; the ratio to a bare SimPy chain of timeouts timed
just before and after (events per second; the ratio needs no calibration; goal >= 6 %); the process's peak
resident memory after the size (``ru_maxrss``; sizes run smallest first, so a peak that stays flat while the
requests grow is memory that does not grow with the finished requests). Beside them, the calibration (a fixed
pure-Python loop, median of the runs).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from replay_ratio import bare_simpy, calibration_loop  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, nargs="+", default=[10_000])
    args = ap.parse_args()
    from hetsim.platform import load_platform
    from hetsim.scenario.run import _Run, map_streams
    from hetsim.scenario.spec import Scenario
    from hetsim.workload import load_onnx

    plat = load_platform(ROOT / "platforms" / "puma.yaml")
    wl = load_onnx(ROOT / "workloads" / "yolov5n.onnx")
    cal = [calibration_loop()]
    print(f"# scenario replay: YOLOv5n ({len(wl)} ops) on puma, closed loop of 4, fifo, contention all")
    for n in sorted(args.requests):
        sc = Scenario.model_validate({"streams": {"detect": {
            "model": "yolov5n.onnx", "arrival": {"process": "closed", "population": 4}, "count": n}},
            "dispatch": "fifo", "contention": "all", "timeline_requests": 5})
        kinds = frozenset({"links", "cim-bus", "cim-cores"})
        models = map_streams(plat, sc, ROOT, None, kinds, {"detect": wl})  # not timed: mapping, one request
        b0 = bare_simpy()
        t0 = time.perf_counter()
        run = _Run(sc, models, ROOT, kinds, None)
        run.run()
        wall = time.perf_counter() - t0
        b1 = bare_simpy()
        cal.append(calibration_loop())
        ops = n * len(wl)
        bare = statistics.mean([b0, b1])
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10
        lat = sorted(r[5] for r in run.rows)
        print(f"{n:>7} requests {ops:>10,} ops  {wall:8.2f} s wall (replay)  {ops / wall:>9,.0f} ops/s  "
              f"bare SimPy {bare:>10,.0f} events/s  ratio {ops / wall / bare:6.2%}  peak RSS {peak:7.0f} MiB  "
              f"p99 latency {lat[int(0.99 * (len(lat) - 1))] * 1e3:.2f} ms", flush=True)
        del run
    print(f"# calibration: fixed pure-Python loop {statistics.median(cal):.3f} s (median of {len(cal)})")


if __name__ == "__main__":
    main()
