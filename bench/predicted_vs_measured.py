"""hetsim's all-host prediction against a measured machine, for every shipped ONNX workload.

For each model of ``workloads/*.onnx`` and ``workloads/paper/*.onnx`` with a profile (``hetsim profile``: ONNX
Runtime, 1 thread, sequential, graph optimisations off) in one of the ``--profiles`` folders:

* measured: ONNX Runtime's whole-model median latency, timed in the same session as the profile, same settings
  (``whole_model_median_s`` of ``NAME.meta.json``);
* (a) the measured table: hetsim's all-host latency with the per-op medians as the host's latency table (one
  core, ops in sequence: the sum over the graph's ops);
* (b) the fitted roofline: hetsim's all-host latency with the ``cpu`` roofline fitted by ``hetsim calibrate`` to
  the *other* models' profiles (leave-one-model-out, so the model's own timings never enter its prediction);

and the error of each against the measurement; then the roofline's error per op type over all models (sum of
predicted vs sum of measured op medians, the fit on all profiles). Prints markdown tables and the machine.

    python bench/predicted_vs_measured.py --measure results/profiles     # profile every workload, then compare
    python bench/predicted_vs_measured.py --profiles results/profiles --profiles profiles
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


sys.path.insert(0, str(ROOT / "bench"))
from calibration import Calibration  # noqa: E402  (the shared loop: median of interleaved samples)


def workloads() -> list[Path]:
    return sorted((ROOT / "workloads").glob("*.onnx")) + sorted((ROOT / "workloads" / "paper").glob("*.onnx"))


def device_of(f):
    """A ``kind: cpu`` roofline device with the fitted parameters."""
    from hetsim.devices.cpu import CpuDevice

    return CpuDevice(name="host", kind="cpu", cores=1, latency_model="roofline", clock_ghz=f.clock_ghz,
                     macs_per_cycle=f.macs_per_cycle, elementwise_per_cycle=f.elementwise_per_cycle,
                     mem_bandwidth_gb_s=f.mem_bandwidth_gb_s, op_overhead_us=f.op_overhead_us,
                     active_w=1.0, idle_w=0.0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profiles", action="append", type=Path, default=None,
                    help="folder of NAME.csv profiles, first match wins (repeatable; default: profiles)")
    ap.add_argument("--measure", type=Path, default=None, metavar="DIR",
                    help="first profile every workload that DIR lacks into DIR (hetsim profile, 20 runs)")
    ap.add_argument("--clock-ghz", type=float, default=None, help="host clock (default: /proc/cpuinfo)")
    args = ap.parse_args()

    from hetsim.calibrate import calibrate, host_clock_ghz, read_profile
    from hetsim.profile import cpu_model, profile_model, read_profile_meta
    from hetsim.workload import load_onnx

    cal = Calibration(1)
    folders = list(args.profiles or [])
    if args.measure is not None:
        args.measure.mkdir(parents=True, exist_ok=True)
        for m in workloads():
            out = args.measure / f"{m.stem}.csv"
            if not out.exists():
                profile_model(m).write(out)
            cal.sample()
        folders.insert(0, args.measure)
    folders = folders or [ROOT / "profiles"]
    found = {}
    for m in workloads():
        for d in folders:
            if (d / f"{m.stem}.csv").is_file():
                found[m] = d / f"{m.stem}.csv"
                break
    missing = [m.stem for m in workloads() if m not in found]
    specs = [f"{p}={m}" for m, p in found.items()]
    clock = args.clock_ghz or host_clock_ghz()
    fit_all, machines = calibrate(specs, clock_ghz=clock, lomo=False)
    cal.sample()
    print(f"# machine: {cpu_model()}, {os.cpu_count()} cores, clock {clock:g} GHz; profiles: "
          f"{'; '.join(sorted(set(x.split(': ', 1)[1] for x in machines)))}; load average "
          f"{'/'.join(f'{x:.1f}' for x in os.getloadavg())}")
    print("\n| model | ops | measured, ORT whole model (ms) | (a) measured table (ms) | error | "
          "(b) fitted roofline, leave-one-out (ms) | error |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    by_type = defaultdict(lambda: [0.0, 0.0, 0])
    errs_a, errs_b = [], []
    dev_all = device_of(fit_all)
    for m, p in found.items():
        meta = read_profile_meta(p)
        meas = float(meta["whole_model_median_s"])
        table = read_profile(p)
        wl = load_onnx(m)
        ops = list(wl.ops.values())
        pred_a = sum(table.get(op.name, 0.0) for op in ops)
        others = [s for s in specs if not s.startswith(f"{p}=")]
        dev = device_of(calibrate(others, clock_ghz=clock, lomo=False, intervals=False)[0]) if others else dev_all
        pred_b = sum(dev.roofline_latency(op) for op in ops)
        for op in ops:
            t = table.get(op.name)
            if t:
                acc = by_type[op.op_type]
                acc[0] += t
                acc[1] += dev_all.roofline_latency(op)
                acc[2] += 1
        ea, eb = pred_a / meas - 1, pred_b / meas - 1
        errs_a.append(abs(ea))
        errs_b.append(abs(eb))
        print(f"| {m.relative_to(ROOT / 'workloads')} | {len(ops)} | {meas * 1e3:.3f} | {pred_a * 1e3:.3f} | "
              f"{ea:+.1%} | {pred_b * 1e3:.3f} | {eb:+.1%} |", flush=True)
        cal.sample()
    print(f"\nmean |error|: (a) table {statistics.mean(errs_a):.1%}, (b) roofline {statistics.mean(errs_b):.1%}"
          f" over {len(found)} models" + (f"; no profile for {', '.join(missing)}" if missing else ""))
    print("\nRoofline fitted to all profiles: " + json.dumps(
        {"macs_per_cycle": fit_all.macs_per_cycle, "elementwise_per_cycle": round(fit_all.elementwise_per_cycle, 4),
         "mem_bandwidth_gb_s": round(fit_all.mem_bandwidth_gb_s, 3), "op_overhead_us": round(fit_all.op_overhead_us, 3),
         "interval_95": {k: fit_all.describe(k) for k in fit_all.values}}))
    print("\n| op type | ops | measured, sum of op medians (ms) | fitted roofline (ms) | error |")
    print("|---|---:|---:|---:|---:|")
    for t, (meas, pred, n) in sorted(by_type.items(), key=lambda kv: -kv[1][0]):
        print(f"| {t} | {n} | {meas * 1e3:.3f} | {pred * 1e3:.3f} | {pred / meas - 1:+.1%} |")
    print()
    print(cal.line())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
