"""The scenario replay at scale: YOLOv5n requests on platforms/puma.yaml, every contention kind on.

    python bench/scenario_bench.py                          # 1,000, 3,000 and 10,000 requests (10k: ~2.6 M ops)
    python bench/scenario_bench.py --requests 10000         # one size

Each size runs in a fresh child process (so its memory figures are its own): a closed loop of 4 YOLOv5n
requests in flight (heft mapping, ``fifo`` dispatch, links + cim-bus + cim-cores contention) replayed; loading
the model, the mapping and the one-request pricing come before and are not timed. Printed per size:

* simulated ops per second of wall time and the ratio to a bare SimPy chain of timeouts timed in the same
  process just before and after (events per second; the ratio needs no calibration; goal >= 6 %);
* memory: the resident set before the replay, its growth at each tenth of the finished requests (read from
  ``/proc/self/status`` while the replay runs) and the process's peak (``ru_maxrss``). Memory that does not grow
  with the finished requests shows as a growth that stays flat from the first tenth to the last, and the same
  peak at 1k, 3k and 10k requests.

Beside them, the calibration of ``bench/calibration.py`` (the reference loop's median, sampled between the
children) and each size's wall time in reference-core seconds.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from calibration import session  # noqa: E402
from replay_ratio import bare_simpy  # noqa: E402


def _rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def child(n: int) -> dict:
    """One size in this process: map, then time the replay of ``n`` requests; the figures as a dict."""
    from hetsim.platform import load_platform
    from hetsim.scenario.run import _Run, map_streams
    from hetsim.scenario.spec import Scenario
    from hetsim.workload import load_onnx

    plat = load_platform(ROOT / "platforms" / "puma.yaml")
    wl = load_onnx(ROOT / "workloads" / "yolov5n.onnx")
    sc = Scenario.model_validate({"streams": {"detect": {
        "model": "yolov5n.onnx", "arrival": {"process": "closed", "population": 4}, "count": n}},
        "dispatch": "fifo", "contention": "all", "timeline_requests": 5})
    kinds = frozenset({"links", "cim-bus", "cim-cores"})
    models = map_streams(plat, sc, ROOT, None, kinds, {"detect": wl})  # not timed: mapping, one request
    run = _Run(sc, models, ROOT, kinds, None)
    samples: list[tuple[int, float]] = []
    step = max(1, n // 10)
    done = run.done

    def counted(name, idx, req):  # the RSS at every tenth of the finished requests
        done(name, idx, req)
        if len(run.rows) % step == 0:
            samples.append((len(run.rows), _rss_mib()))

    run.done = counted
    b0 = bare_simpy()
    rss0 = _rss_mib()
    c0, t0 = time.process_time(), time.perf_counter()
    run.run()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    b1 = bare_simpy()
    lat = sorted(r[5] for r in run.rows)
    return {"requests": n, "ops": n * len(wl), "wall_s": wall, "cpu_s": cpu, "bare_events_s": statistics.mean([b0, b1]),
            "rss_before_mib": rss0, "rss_samples": samples,
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "p99_ms": lat[int(0.99 * (len(lat) - 1))] * 1e3, "finished": len(run.rows)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, nargs="+", default=[1_000, 3_000, 10_000])
    ap.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child is not None:
        print(json.dumps(child(args.child)))
        return
    with session("scenario replay: YOLOv5n on puma, closed loop of 4, fifo, contention all") as cal:
        for n in args.requests:
            cal.sample()
            out = subprocess.run([sys.executable, __file__, "--child", str(n)], capture_output=True, text=True,
                                 check=True)
            r = json.loads(out.stdout.strip().splitlines()[-1])
            cal.sample()
            rate = r["ops"] / r["wall_s"]
            growth = [f"{k}:{rss - r['rss_before_mib']:+.1f}" for k, rss in r["rss_samples"]]
            print(f"{n:>7} requests {r['ops']:>10,} ops  {r['wall_s']:8.2f} s wall  {r['cpu_s']:8.2f} s CPU  "
                  f"{cal.ref_s(r['wall_s']):8.2f} ref-core s  {rate:>9,.0f} ops/s  bare SimPy "
                  f"{r['bare_events_s']:>10,.0f} events/s  ratio {rate / r['bare_events_s']:6.2%}  p99 "
                  f"{r['p99_ms']:.2f} ms", flush=True)
            print(f"        memory: RSS before the replay {r['rss_before_mib']:.1f} MiB, peak {r['peak_rss_mib']:.1f} "
                  f"MiB; growth (MiB) at finished requests {' '.join(growth)}", flush=True)


if __name__ == "__main__":
    main()
