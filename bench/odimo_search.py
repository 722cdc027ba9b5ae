"""Time the full default ODiMO search (``hetsim search platforms/diana.yaml --dataset digits``) and print its front.

    python bench/odimo_search.py [--objective energy|latency] [--preset default|small] [--out DIR] [--threads N]
    python bench/odimo_search.py --from-json results/odimo_bench/search.json   # the table again, no training

Runs warm-up, the four default strengths (search + fine-tuning) and the four baselines, as the CLI does, and
prints: the machine (CPU, cores, load average before and after: the machine may be shared), the wall time, and
the points as a markdown table (test accuracy, model latency/energy, replayed latency/energy, AIMC share, Pareto
flag, change vs all-8bit) for docs/reproduction.md and docs/performance.md, and a machine-speed calibration
measured in the same run (a fixed pure-Python loop, median of samples before and after the search), so that wall
times from a loaded or another machine compare. Needs ``pip install 'hetsim[search]'``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hetsim.profile import cpu_model  # noqa: E402
from hetsim.search import search  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
from calibration import Calibration  # noqa: E402  (the shared loop: median of interleaved samples)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--objective", choices=("energy", "latency"), default="energy")
    ap.add_argument("--out", type=Path, default=Path("results/odimo_bench"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--preset", choices=("default", "small"), default="default")
    ap.add_argument("--from-json", type=Path, help="print the table of an earlier run's search.json (no training)")
    args = ap.parse_args()
    if args.from_json:
        table(json.loads(args.from_json.read_text()))
        return 0
    cal = Calibration(3)
    load0 = os.getloadavg()
    t0, c0 = time.perf_counter(), time.process_time()
    r = search(ROOT / "platforms" / "diana.yaml", dataset="digits", objective=args.objective,
               out=args.out, force=True, threads=args.threads, quiet=True, preset=args.preset)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    load1 = os.getloadavg()
    for _ in range(3):
        cal.sample()
    print(f"machine: {cpu_model()}, {os.cpu_count()} cores; load average (1/5/15 min) before "
          f"{'/'.join(f'{x:.2f}' for x in load0)}, after {'/'.join(f'{x:.2f}' for x in load1)}")
    print(f"preset {args.preset}, objective {args.objective}, strengths {', '.join(f'{s:g}' for s in r['strengths'])}, "
          f"{args.threads} torch thread(s): {wall:.0f} s wall, {cpu:.0f} s CPU ({r['dataset']})")
    print(f"{cal.line()} (3 samples before the search, 3 after); the search: {cal.ref_s(wall):.0f} ref-core s")
    print(f"environment: {r.get('environment', {})}")
    table(r)
    return 0


def table(r: dict) -> None:
    """The points of a search (``search.json``) as a markdown table."""
    print(f"float (warm-up) test accuracy {r['float_test_accuracy'] * 100:.2f} %, {r['seconds']:.0f} s\n")
    ref = next(p for p in r["points"] if p["name"] == "all-8bit")
    print("| point | test acc. (%) | model latency (us) | model energy (nJ) | replayed latency (us) | replayed energy "
          "(nJ) | AIMC channels | vs all-8bit: acc. / latency / energy | Pareto |")
    print("|---|---:|---:|---:|---:|---:|---:|---|---|")
    for p in r["points"]:
        d_acc = (p["test_accuracy"] - ref["test_accuracy"]) * 100
        d_lat = (p["model_latency_s"] / ref["model_latency_s"] - 1) * 100
        d_en = (p["model_energy_j"] / ref["model_energy_j"] - 1) * 100
        print(f"| {p['name']} | {p['test_accuracy'] * 100:.2f} | {p['model_latency_s'] * 1e6:.3f} | "
              f"{p['model_energy_j'] * 1e9:.2f} | {p['replay_latency_s'] * 1e6:.3f} | "
              f"{p['replay_energy_j'] * 1e9:.2f} | "
              f"{p['aimc_share'] * 100:.1f} % | {d_acc:+.2f} pt / {d_lat:+.1f} % / {d_en:+.1f} % | "
              f"{'yes' if p['pareto'] else ''} |")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from calibration import session  # wall, CPU, calibration and reference-core seconds of the whole run

    with session(Path(__file__).name):
        raise SystemExit(main())
