"""``hetsim sweep``: run a design-space sweep (workloads x platforms x parameters x mappers)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from hetsim.cli._common import _add_common, _positive_int


def add_parser(sub) -> None:
    """The ``sweep`` subcommand's arguments."""
    p = sub.add_parser("sweep", help="run a design-space sweep (workloads x platforms x parameters x mappers)",
                       description="Run every point of SWEEP.yaml not yet in its results table, in parallel, "
                       "appending each finished point at once (a killed sweep resumes where it stopped). See "
                       "sweeps/cpu-cim-ilp.yaml for the format. A sweep file naming a 'scenario' grids over the "
                       "scenario's parameters (streams.NAME.arrival.rate_hz: [...]) and the platform's, one "
                       "scenario replay per point (sweeps/two-models-load.yaml); hetsim plot then draws latency "
                       "p50/p99 against the offered rate with the saturation point.")
    p.add_argument("sweep", type=Path, help="sweep YAML (e.g. sweeps/cpu-cim-ilp.yaml)")
    p.add_argument("-o", "--output", type=Path, help="results CSV (default: the sweep's 'output')")
    p.add_argument("--workers", type=_positive_int, default=None,
                   help="local worker processes (default: the available cores divided by --threads)")
    p.add_argument("--threads", type=_positive_int, default=None,
                   help="solver threads per point for cpsat and ilp (default: the available cores divided by "
                   "--workers, so workers x threads never exceeds the cores: one thread per point when there "
                   "are more points than cores; 1 on a Dask scheduler). Not a setting of the results: changing "
                   "it does not recompute finished points. Not for a scenario sweep (its scenario's mapper_options "
                   "say it)")
    p.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                   help="run the points on this Dask distributed scheduler instead of local processes (each "
                   "Dask worker thread runs one point)")
    p.add_argument("--max-points", type=int, default=None, metavar="N",
                   help="refuse a sweep of more than N points (default 100000), counted from the sweep file's "
                   "lists before any point is built")
    p.add_argument("--max-ops", type=_positive_int, default=None, metavar="N",
                   help="scenario sweeps: refuse, before the first point, one whose point would replay more than N "
                   "simulated ops (default 10000000; hetsim run's --max-ops, per point)")
    _add_common(p)


def cmd_sweep(args) -> int:
    from hetsim.dse.bounds import max_points
    from hetsim.dse.sweep import MAX_WORKERS
    from hetsim.errors import InputError

    if args.workers is not None and args.workers > MAX_WORKERS:  # before the sweep file is read
        raise InputError(f"--workers {args.workers}: at most {MAX_WORKERS} local worker processes")
    from hetsim.scenario.spec import max_ops

    with max_points(args.max_points), max_ops(args.max_ops):  # counted in load_sweep, expand_points and run_sweep
        return _sweep(args)


def _scenario_sweep(args) -> int:
    """A sweep over a scenario's parameters (:mod:`hetsim.dse.scenario_sweep`)."""
    from hetsim.dse import SweepInterrupted
    from hetsim.dse.bounds import count_points
    from hetsim.dse.scenario_sweep import load_scenario_sweep, run_scenario_sweep
    from hetsim.dse.sweep import format_progress
    from hetsim.errors import InputError

    if args.threads is not None:  # the points' solver threads are the scenario's mapper_options
        raise InputError("--threads: not for a scenario sweep; set threads in the scenario's mapper_options")
    spec = load_scenario_sweep(args.sweep)
    print(f"sweep {spec.name}: {count_points(spec)} scenario points", flush=True)
    t0 = time.perf_counter()

    def tick(done: int, total: int, row: dict) -> None:
        print(f"  {format_progress(done, total, time.perf_counter() - t0)} (last: {row['key']})", file=sys.stderr,
              flush=True)

    def say(msg: str) -> None:
        print(f"  {msg}", flush=True)

    try:
        out, ran, kept = run_scenario_sweep(spec, output=args.output, workers=args.workers, progress=tick,
                                            notify=say, scheduler=args.scheduler)
    except SweepInterrupted as stop:
        return _stopped(stop, tty=False)
    import pandas as pd

    df = pd.read_csv(out)
    print(f"  {ran} points run, {kept} already in {out}, {time.perf_counter() - t0:.1f} s")
    errors = df[df["error"].notna()] if "error" in df else df.iloc[:0]
    if len(errors):
        print(f"  {len(errors)} points failed, e.g. {errors.iloc[0]['key']}: {errors.iloc[0]['error']}")
        return 1
    return 0


def _stopped(stop, tty: bool) -> int:
    """The one line a sweep stopped by a signal ends with (on stderr); its exit code, 128 + the signal."""
    kept = f"{stop.finished} point{'' if stop.finished == 1 else 's'} finished this run"
    print(f"{chr(10) if tty else ''}hetsim: sweep stopped by {stop}: {kept}, kept in {stop.output}; run the "
          "same command to resume", file=sys.stderr)
    return 128 + stop.signum


def _sweep(args) -> int:
    from hetsim.dse import SweepInterrupted, expand_points, format_progress, load_sweep, run_sweep
    from hetsim.dse.scenario_sweep import is_scenario_sweep

    if is_scenario_sweep(args.sweep):
        return _scenario_sweep(args)
    if args.max_ops is not None:
        from hetsim.errors import InputError

        raise InputError("--max-ops applies to scenario sweeps (a sweep file naming a 'scenario'), not to this one")
    spec = load_sweep(args.sweep)
    n = len(expand_points(spec))
    if args.scheduler:
        where = f"{args.scheduler} ({args.threads or 1} solver thread(s) per point)"
    else:
        from hetsim.dse.sweep import plan_parallelism

        w, t = plan_parallelism(n, args.workers, args.threads, spec.mapper_options.get("threads"))
        where = f"{w} local worker{'s' if w != 1 else ''} x {t} solver thread{'s' if t != 1 else ''}"
    print(f"sweep {spec.name}: {n} points on {where}", flush=True)
    t0 = time.perf_counter()
    tty = sys.stderr.isatty()
    shown = [0.0]

    def tick(done: int, total: int, row: dict) -> None:  # on stderr: in place on a terminal, else every 10 s
        now = time.perf_counter()
        if tty or done in (1, total) or now - shown[0] >= 10:
            shown[0] = now
            line = (f"  {format_progress(done, total, now - t0)} "
                    f"(last: {row['workload']} {row.get('platform', '')} {row['mapper']})")
            print(f"\r{line}\x1b[K" if tty else line, end="" if tty and done < total else "\n", file=sys.stderr,
                  flush=True)

    def say(msg: str) -> None:
        print(f"  {msg}", flush=True)

    try:
        out, ran, skipped = run_sweep(spec, output=args.output, workers=args.workers, scheduler=args.scheduler,
                                      threads=args.threads, progress=tick, notify=say)
    except SweepInterrupted as stop:
        return _stopped(stop, tty)
    import pandas as pd

    df = pd.read_csv(out)
    errors = df["error"].notna().sum() if "error" in df else 0
    print(f"  {ran} points run, {skipped} already in {out}, {time.perf_counter() - t0:.1f} s")
    if "status" in df and ran:
        counts = df["status"].value_counts(dropna=True).to_dict()
        if counts:
            print("  status: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    from hetsim.report.text import no_baseline

    nobase = no_baseline(df)  # points that ran without a baseline: why their speed-up is empty
    if nobase:
        print(f"  {nobase[0]} point{'s' if nobase[0] != 1 else ''} without a baseline (no speed-up), e.g. {nobase[1]}")
    if errors:
        first = df[df["error"].notna()].iloc[0]
        print(f"  {errors} points failed, e.g. {first['workload']}: {first['error']}")
        return 1
    return 0
