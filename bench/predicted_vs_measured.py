"""hetsim's all-host prediction against a measured machine, for every shipped ONNX workload.

For each model of ``workloads/*.onnx`` and ``workloads/paper/*.onnx`` with a profile (``hetsim profile``: ONNX
Runtime, 1 thread, sequential, graph optimisations off) in one of the ``--profiles`` folders:

* measured: ONNX Runtime's whole-model median latency, timed in the same session as the profile, same settings
  (``whole_model_median_s`` of ``NAME.meta.json``);
* (a) the measured table: hetsim's all-host latency with the per-op medians as the host's latency table (one
  core, ops in sequence: the sum over the graph's ops);
* (b) the fitted roofline: hetsim's all-host latency with the ``cpu`` roofline fitted by ``hetsim calibrate`` to
  the *other* models' profiles (leave-one-model-out, so the model's own timings never enter its prediction);

each twice: **folded**, as ``hetsim run`` predicts by default (ops computed only from constants cost 0 s:
``foldable_ops``), and **not folded**, as ``hetsim run --no-fold-constants`` predicts (every op charged, as ONNX
Runtime with graph optimisations off runs them, which is how the profiles are measured) except ``Constant``
nodes, charged 0 s in both: ONNX Runtime makes a ``Constant`` node an initializer when it loads the model, even
with graph optimisations off, and never runs it (its profiler records no kernel for one: MobileNetV2's 70
``Constant`` nodes give none of its 100 kernel events per run), while ``--no-fold-constants`` charges them the
roofline's per-op cost. Then the error of each against the measurement, and the roofline's error per op type
over all models (sum of predicted vs sum of measured op medians, the fit on all profiles). Prints markdown
tables and the machine.

``--measure DIR`` profiles every workload that DIR lacks first; a model ONNX Runtime cannot run (the
transformers ship without their weights) is skipped with one line saying why.

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
    from hetsim.errors import HetsimError
    from hetsim.profile import cpu_model, profile_model, read_profile_meta
    from hetsim.workload import load_onnx
    from hetsim.workload.op import foldable_ops

    cal = Calibration(1)
    folders = list(args.profiles or [])
    if args.measure is not None:
        args.measure.mkdir(parents=True, exist_ok=True)
        for m in workloads():
            out = args.measure / f"{m.stem}.csv"
            if not out.exists():
                try:
                    profile_model(m).write(out)
                except HetsimError as err:  # e.g. a transformer shipped without its weights
                    print(f"# skipped {m.relative_to(ROOT / 'workloads')}: {err}", flush=True)
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
    print("\n| model | ops | measured, ORT whole model (ms) | (a) measured table, folded (ms) | error | "
          "(a) not folded | error | (b) fitted roofline, leave-one-out, folded (ms) | error | (b) not folded | "
          "error |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    by_type = defaultdict(lambda: [0.0, 0.0, 0])
    abs_errs: list[list[float]] = [[], [], [], []]
    dev_all = device_of(fit_all)
    for m, p in found.items():
        meta = read_profile_meta(p)
        meas = float(meta["whole_model_median_s"])
        table = read_profile(p)
        wl = load_onnx(m)
        ops = list(wl.ops.values())
        folded = foldable_ops(wl)
        # not folded: every op but a Constant node, which ONNX Runtime makes an initializer at load (docstring)
        ran = [op for op in ops if op.op_type != "Constant"]
        table_a = {op.name: table.get(op.name, 0.0) for op in ran}
        others = [s for s in specs if not s.startswith(f"{p}=")]
        dev = device_of(calibrate(others, clock_ghz=clock, lomo=False, intervals=False)[0]) if others else dev_all
        roof_b = {op.name: dev.roofline_latency(op) for op in ran}
        preds = [sum(t for n, t in table_a.items() if n not in folded), sum(table_a.values()),
                 sum(t for n, t in roof_b.items() if n not in folded), sum(roof_b.values())]
        for op in ops:
            t = table.get(op.name)
            if t:
                acc = by_type[op.op_type]
                acc[0] += t
                acc[1] += dev_all.roofline_latency(op)
                acc[2] += 1
        errs = [x / meas - 1 for x in preds]
        for k, e in enumerate(errs):
            abs_errs[k].append(abs(e))
        cells = " | ".join(f"{x * 1e3:.3f} | {e:+.1%}" for x, e in zip(preds, errs, strict=True))
        print(f"| {m.relative_to(ROOT / 'workloads')} | {len(ops)} | {meas * 1e3:.3f} | {cells} |", flush=True)
        cal.sample()
    mean = [f"{statistics.mean(e):.1%}" for e in abs_errs]
    print(f"\nmean |error|: (a) table {mean[0]} folded, {mean[1]} not folded; (b) roofline {mean[2]} folded, "
          f"{mean[3]} not folded; over {len(found)} models" + (f"; no profile for {', '.join(missing)}" if missing
                                                                 else ""))
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
