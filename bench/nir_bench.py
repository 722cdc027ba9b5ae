"""Speed of NIR export and import on the shipped SNNs: ``save_nir`` (graph, HDF5 write, read-back check, atomic
write) and its file size; loading the spec (``load_snn NAME.yaml``: recorded rasters) against loading the NIR
graph with the spec's activity file as input spikes (``load_snn NAME.nir, spikes=``: ``nir.read``, conversion
and the LIF replay of every split). Median of 3 runs each.

    python bench/nir_bench.py [NAME ...]        # names under workloads/snn (default: all)

Prints a table; record results in docs/performance.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def _median_s(fn, reps: int = 3) -> float:
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("networks", nargs="*")
    args = ap.parse_args()

    from hetsim.snn.network import load_snn
    from hetsim.snn.nir import save_nir

    names = args.networks or sorted(p.stem for p in (ROOT / "workloads" / "snn").glob("*.yaml"))
    print(f"{'network':<22} {'weights':>8} {'samples x T':>12} {'export s':>9} {'.nir KiB':>9} {'load yaml s':>12} "
          f"{'load nir s':>11}")
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            spec = ROOT / "workloads" / "snn" / f"{name}.yaml"
            snn = load_snn(spec)
            out = Path(tmp) / f"{name}.nir"
            t_exp = _median_s(lambda snn=snn, out=out: save_nir(snn, out, force=True))
            spikes = spec.parent / yaml.safe_load(spec.read_text())["activity"]
            t_yaml = _median_s(lambda spec=spec: load_snn(spec))
            t_nir = _median_s(lambda out=out, spikes=spikes: load_snn(out, spikes=spikes))
            n_w = sum(w.size for w in snn.weights)
            st = f"{sum(r[0].shape[0] for r in snn.activity.values())} x {snn.timesteps}"
            print(f"{name:<22} {n_w:>8,} {st:>12} {t_exp:>9.3f} {out.stat().st_size / 1024:>9.0f} {t_yaml:>12.3f} "
                  f"{t_nir:>11.3f}")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from calibration import session  # wall, CPU, calibration and reference-core seconds of the whole run

    with session(Path(__file__).name):
        main()
