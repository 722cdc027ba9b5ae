"""Speed of the SNN path on the shipped networks: cost-model build, exact planning (plans evaluated, pruned,
solve time), the numpy evaluator (op-samples per second), the SimPy replay (ops per second) and reordering.

    python bench/snn_bench.py [NAME ...]        # names under workloads/snn (default: all)

Prints a table; record results in docs/performance.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("networks", nargs="*")
    ap.add_argument("--no-reorder", action="store_true", help="skip timing the reordering")
    args = ap.parse_args()

    from hetsim.mappers.spikeduet import dependencies, layer_choices, on_mvp, plan_network, snn_schedule
    from hetsim.platform import load_platform
    from hetsim.sim import simulate
    from hetsim.sim.analytic import evaluate_batch
    from hetsim.snn.activity_costs import ActivityCostModel, engines_of, sram_budget_bytes
    from hetsim.snn.network import load_snn
    from hetsim.snn.reorder import mvp_residencies, reorder

    plat = load_platform(ROOT / "platforms" / "efr32mg24.yaml")
    names = args.networks or sorted(p.stem for p in (ROOT / "workloads" / "snn").glob("*.yaml"))
    print(f"{'network':<22} {'ops':>5} {'build s':>8} {'mode':<9} {'plans':>6} {'fit':>5} {'evaluated':>9} "
          f"{'plan s':>7} {'eval Mop-samples/s':>19} {'SimPy kops/s':>13} {'reorder s':>10}")
    for name in names:
        snn = load_snn(ROOT / "workloads" / "snn" / f"{name}.yaml")
        t0 = time.perf_counter()
        cm = ActivityCostModel.of(snn, plat, "plan")
        build = time.perf_counter() - t0
        t_reo = ""
        if not args.no_reorder and snn.n_layers > 1:
            mvp = engines_of(plat)[1]
            t0 = time.perf_counter()
            reorder(snn, mvp, residency=mvp_residencies(snn, mvp, sram_budget_bytes(plat)))
            t_reo = f"{time.perf_counter() - t0:.1f}"
        for mode in ("blocking", "async"):
            p = plan_network(snn, plat, "spikeduet", mode, costs=cm)
            choices = layer_choices(p)
            steps, preds = dependencies(snn.n_layers, snn.timesteps, on_mvp([c.engine for c in choices]), "async")
            costs = cm.step_costs(steps, choices)
            reps = 5
            t0 = time.perf_counter()
            for _ in range(reps):
                evaluate_batch(preds, costs)
            ev = reps * costs.size / (time.perf_counter() - t0)
            sched = snn_schedule(cm, choices, "async", "spikeduet")
            t0 = time.perf_counter()
            for s in range(5):
                simulate(cm.at_sample(s % cm.samples), sched)
            sp = 5 * len(steps) / (time.perf_counter() - t0)
            st = p.stats
            print(f"{name:<22} {len(steps):>5} {build:>8.2f} {mode:<9} {st['plans']:>6} {st['fit']:>5} "
                  f"{st['evaluated']:>9} {st['solve_time_s']:>7.2f} {ev / 1e6:>19.2f} {sp / 1e3:>13.1f} "
                  f"{t_reo if mode == 'async' else '':>10}")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from calibration import session  # wall, CPU, calibration and reference-core seconds of the whole run

    with session(Path(__file__).name):
        main()
