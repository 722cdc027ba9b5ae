"""Speed of the SNN path on the shipped networks: cost-model build, exact planning (plans evaluated, pruned,
solve time), the numpy evaluator (op-samples per second), the SimPy replay (ops per second) and reordering.

    python bench/snn_bench.py [NAME ...]        # names under workloads/snn (default: all)

Prints a table; record results in docs/performance.md.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("networks", nargs="*")
    ap.add_argument("--no-reorder", action="store_true", help="skip timing the reordering")
    args = ap.parse_args()

    from hetsim.platform import load_platform
    from hetsim.snn.network import load_snn
    from hetsim.snn.planner import SnnCostModel, engines_of, plan, sram_budget_bytes
    from hetsim.snn.reorder import mvp_residencies, reorder
    from hetsim.snn.schedule import evaluate, on_mvp, simulate_sample, unroll

    plat = load_platform(ROOT / "platforms" / "efr32mg24.yaml")
    names = args.networks or sorted(p.stem for p in (ROOT / "workloads" / "snn").glob("*.yaml"))
    print(f"{'network':<22} {'ops':>5} {'build s':>8} {'mode':<9} {'plans':>6} {'fit':>5} {'evaluated':>9} "
          f"{'plan s':>7} {'eval Mop-samples/s':>19} {'SimPy kops/s':>13} {'reorder s':>10}")
    for name in names:
        snn = load_snn(ROOT / "workloads" / "snn" / f"{name}.yaml")
        t0 = time.perf_counter()
        cm = SnnCostModel(snn, plat, "plan")
        build = time.perf_counter() - t0
        t_reo = ""
        if not args.no_reorder and snn.n_layers > 1:
            mvp = engines_of(plat)[1]
            t0 = time.perf_counter()
            reorder(snn, mvp, residency=mvp_residencies(snn, mvp, sram_budget_bytes(plat)))
            t_reo = f"{time.perf_counter() - t0:.1f}"
        for mode in ("blocking", "async"):
            p = plan(snn, plat, "spikeduet", mode, costs=cm)
            u = unroll(snn.n_layers, snn.timesteps, on_mvp([c.engine for c in p.layers]), "async")
            costs = cm.op_costs(u, p.layers)
            reps = 5
            t0 = time.perf_counter()
            for _ in range(reps):
                evaluate(u, costs)
            ev = reps * costs.size / (time.perf_counter() - t0)
            t0 = time.perf_counter()
            for s in range(5):
                simulate_sample(u, costs[:, s], "async")
            sp = 5 * len(u.ops) / (time.perf_counter() - t0)
            st = p.stats
            print(f"{name:<22} {len(u.ops):>5} {build:>8.2f} {mode:<9} {st['plans']:>6} {st['fit']:>5} "
                  f"{st['evaluated']:>9} {st['solve_time_s']:>7.2f} {ev / 1e6:>19.2f} {sp / 1e3:>13.1f} "
                  f"{t_reo if mode == 'async' else '':>10}")


if __name__ == "__main__":
    main()
