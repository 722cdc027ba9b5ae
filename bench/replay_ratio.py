"""hetsim's replay against SimPy's own limit: a ratio that needs no calibration.

    python bench/replay_ratio.py               # YOLOv5n (heft) on puma; 10k- and 100k-op synthetic DAGs
    python bench/replay_ratio.py --quick       # YOLOv5n and the 10k-op DAG only
    python bench/replay_ratio.py --profile     # also a cProfile of one YOLOv5n replay with every contention kind
    python bench/replay_ratio.py --budget      # also the per-op budget of each step (plan, replay, trace table)

In one process, alternating (bare, replay, bare, replay, ...; ``--rounds`` of each), it times

* a bare SimPy chain of timeouts: one ``env.timeout`` per step whose callback schedules the next (the cheapest
  thing a SimPy model can do per event), in events per second;
* ``hetsim.sim.simulate`` on the workload's schedule (the checker, the replay and the trace table, all of what a
  user pays for), in simulated ops per second, with contention off and with every contention kind on;

and prints the medians and the ratio (replay ops/s) / (bare events/s): the fraction of SimPy's own rate the
replay reaches per op (goal: >= 10 % off, >= 6 % on). The trace table (pandas) is built when a caller reads
``SimResult.trace``, so it is not in ``simulate``'s time; ``--budget`` prints it apart, with the other steps:
microseconds per op for the plan (checker included), the SimPy replay and the table, beside a bare SimPy event's
microseconds and what 10 % / 6 % of the bare rate allows per op. Beside it, a calibration measured in the same run: the
median time of a fixed pure-Python loop, so that absolute figures from two machines or two loads compare.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from calibration import Calibration, load, machine, reference_loop  # noqa: E402

ALL = frozenset({"links", "cim-bus", "cim-cores"})
BARE_STEPS = 200_000


def calibration_loop() -> float:
    """Wall seconds of the shared reference loop (:func:`calibration.reference_loop`, one sample)."""
    t0 = time.perf_counter()
    reference_loop()
    return time.perf_counter() - t0


def bare_simpy(n: int = BARE_STEPS) -> float:
    """Events per second of a bare SimPy chain of ``n`` timeouts (callbacks, no process)."""
    import simpy

    env = simpy.Environment()
    left = [n]

    def step(_event) -> None:
        left[0] -= 1
        if left[0]:
            env.timeout(1.0).callbacks.append(step)

    t0 = time.perf_counter()
    env.timeout(1.0).callbacks.append(step)
    env.run()
    return n / (time.perf_counter() - t0)


def replay_rate(costs, sched, kinds) -> float:
    from hetsim.sim import simulate

    t0 = time.perf_counter()
    simulate(costs, sched, kinds)
    return len(costs.workload) / (time.perf_counter() - t0)


def cases(quick: bool):
    from hetsim.costs import CostModel
    from hetsim.mappers import get_mapper
    from hetsim.platform import load_platform
    from hetsim.workload import load_onnx
    from hetsim.workload.synthetic import layered_dag

    plat = load_platform(ROOT / "platforms" / "puma.yaml")
    costs = CostModel(load_onnx(ROOT / "workloads" / "yolov5n.onnx"), plat)
    yield "yolov5n heft", costs, get_mapper("heft").map(costs), 7
    for n in (10_000,) if quick else (10_000, 100_000):
        costs = CostModel(layered_dag(n, seed=0), plat)
        yield f"synthetic {n // 1000}k heft", costs, get_mapper("heft").map(costs), 5 if n <= 10_000 else 3


def budget(quick: bool, rounds: int = 7) -> None:
    """Per op, the medians over ``rounds`` of each step of ``simulate`` (collector off, as it runs): the plan
    (:class:`~hetsim.sim.engine.Plan`: the checker and the per-op tables), the SimPy replay
    (:class:`~hetsim.sim.engine.Request` on a :class:`~hetsim.sim.engine.Hardware`) and the trace table built from
    its rows (what reading ``SimResult.trace`` costs), beside a bare SimPy event."""
    import gc

    import simpy

    from hetsim.sim import engine as E

    for label, costs, sched, _ in cases(quick):
        n = len(costs.workload)
        for kinds in (frozenset(), ALL):
            plan_s, run_s, table_s, bare = [], [], [], []
            for _ in range(rounds):
                bare.append(bare_simpy())
                gc.disable()
                try:
                    t0 = time.perf_counter()
                    plan = E.Plan(costs, sched, kinds)
                    t1 = time.perf_counter()
                    env = simpy.Environment()
                    req = E.Request(plan, E.Hardware(env, plan.costs, kinds, E.get_dispatch(None)))
                    req.start_all()
                    env.run()
                    t2 = time.perf_counter()
                    E.trace_frame(sorted(req.rows, key=E._row_key))
                    t3 = time.perf_counter()
                finally:
                    plan = env = req = None
                    gc.enable()
                plan_s.append(t1 - t0)
                run_s.append(t2 - t1)
                table_s.append(t3 - t2)
            us = [statistics.median(x) / n * 1e6 for x in (plan_s, run_s, table_s)]
            ev = 1e6 / statistics.median(bare)
            print(f"budget {label:<20} {'every kind' if kinds else 'contention off':<14} us per op: plan {us[0]:.2f}"
                  f"  replay {us[1]:.2f}  (simulate {us[0] + us[1]:.2f})  trace table {us[2]:.2f};  bare SimPy "
                  f"event {ev:.3f} us: 10 % allows {ev * 10:.2f}, 6 % {ev / 0.06:.2f} us per op", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="YOLOv5n and the 10k-op DAG only")
    ap.add_argument("--rounds", type=int, default=None, help="alternations per case (default 7 / 5 / 3)")
    ap.add_argument("--profile", action="store_true", help="cProfile one YOLOv5n replay with every contention kind")
    ap.add_argument("--budget", action="store_true", help="per-op microseconds of each step of a replay")
    args = ap.parse_args()
    import gc

    import simpy

    print(f"# replay vs bare SimPy {simpy.__version__}: {machine()}")
    print(f"# load average at start: {load()}", flush=True)
    cal = Calibration(1)
    for label, costs, sched, rounds in cases(args.quick):
        rounds = args.rounds or rounds
        bare, off, on = [], [], []
        for _ in range(rounds):
            gc.collect()
            bare.append(bare_simpy())
            off.append(replay_rate(costs, sched, frozenset()))
            bare.append(bare_simpy())
            on.append(replay_rate(costs, sched, ALL))
            cal.sample()
        b, f, n = statistics.median(bare), statistics.median(off), statistics.median(on)
        print(f"{label:<22} {len(costs.workload):>7} ops  bare SimPy {b:>10,.0f} events/s   replay {f:>9,.0f} ops/s "
              f"= {f / b:6.1%}   +contention {n:>9,.0f} ops/s = {n / b:6.1%}   (medians of {rounds}; "
              f"{b / f:.1f} / {b / n:.1f} bare events per op; one replay "
              f"{cal.ref_s(len(costs.workload) / f) * 1e3:.2f} / {cal.ref_s(len(costs.workload) / n) * 1e3:.2f} "
              "ref-core ms)", flush=True)
    print(f"# load average at end: {load()}")
    print(cal.line())
    if args.budget:
        budget(args.quick)
    if args.profile:
        import cProfile
        import pstats

        label, costs, sched, _ = next(cases(True))
        from hetsim.sim import simulate

        pr = cProfile.Profile()
        pr.enable()
        simulate(costs, sched, ALL)
        pr.disable()
        pstats.Stats(pr).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
