"""Wall time of the full CPU-CIM ILP sweep (sweeps/cpu-cim-ilp.yaml, 128 points, cpsat) with the runner's own split
of the cores into workers x solver threads (``auto``), on 1 and 2 local workers, and on a 2-worker Dask
LocalCluster (one solver thread per point). Each run writes a fresh table in a temporary folder. The last column
sums the points' ``solve_time_s`` (each mapper's wall time). Every run prints its wall and CPU seconds (worker
processes included) and its wall time in reference-core seconds (``bench/calibration.py``, sampled before and after
each run, 2 copies of the loop at once: the sweep's work runs on both cores).

    python bench/sweep_bench.py [--only auto,local1,local2,dask2]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from calibration import Calibration, _cpu, session  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="auto,local1,local2,dask2")
    ap.add_argument("--sweep", default=str(ROOT / "sweeps" / "cpu-cim-ilp.yaml"))
    args = ap.parse_args()
    import pandas as pd

    from hetsim.dse import load_sweep, run_sweep

    spec = load_sweep(args.sweep)
    # the sweep uses both cores (workers x solver threads): the loop is timed in 2 copies at once
    with session("sweep bench", Calibration(width=2)) as cal:
        for mode in args.only.split(","):
            _one(spec, mode, cal, pd, run_sweep)


def _one(spec, mode: str, cal, pd, run_sweep) -> None:
    """One sweep run in a fresh table; its line: points, wall, CPU, reference-core seconds, proven points."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "r.csv"
        cal.sample()
        t0, c0 = time.perf_counter(), _cpu(True)
        if mode.startswith("dask"):
            from distributed import LocalCluster

            n = int(mode[4:])
            with LocalCluster(n_workers=n, threads_per_worker=1, dashboard_address=None) as cluster:
                run_sweep(spec, output=out, scheduler=cluster.scheduler_address)
        elif mode == "auto":
            run_sweep(spec, output=out)
        else:
            run_sweep(spec, output=out, workers=int(mode[5:]))
        wall, cpu = time.perf_counter() - t0, _cpu(True) - c0
        cal.sample()
        df = pd.read_csv(out)
    print(f"{mode:<8} {len(df)} points  {wall:7.1f} s wall  {cpu:7.1f} s CPU  {cal.ref_s(wall):7.1f} ref-core s  "
          f"optimal {int((df['status'] == 'optimal').sum())}  sum of solve times {df['solve_time_s'].sum():.1f} s",
          flush=True)


if __name__ == "__main__":
    main()
