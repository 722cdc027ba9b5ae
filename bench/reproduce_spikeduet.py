"""hetsim's numbers for SpikeDuet's Table I, Sec. IV-C and IV-D, on the shipped trained analogues.

For every network of ``workloads/snn`` (or those given): all sparse M33, all dense MVP, spikeduet blocking and
asynchronous, each in the trained neuron order and after reordering (mean latency on the eval split, energy,
the chosen engines); then Linear1's per-timestep cycles on the validation split (M33 vs range-sparse MVP,
launches) before and after reordering; then the SSC-128 memory-placement effect of Sec. IV-D on a synthetic
700-128-128-35 network with the paper's hidden density. Prints tables; writes nothing.

    python bench/reproduce_spikeduet.py                     # every shipped network (~2 min on 2 cores)
    python bench/reproduce_spikeduet.py braille384 braille192
    python bench/reproduce_spikeduet.py braille192 --set devices.mvp.merge_gaps=false   # hetsim's gap merging off
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def table1(names: list[str], platform) -> None:
    from hetsim.pipeline import run

    print("Table I analogue: mean end-to-end latency (ms) and energy (uJ) per inference on the eval split")
    print(f"{'network':<24} {'order':<10} {'all-M33':>8} {'dense MVP':>10} {'blocking':>9} {'async':>8} "
          f"{'speed-up':>9} {'energy':>8} {'saving':>7}  async engines")
    for name in names:
        for reorder in (False, True):
            t0 = time.perf_counter()
            r = run(platform, ROOT / "workloads" / "snn" / f"{name}.yaml", mapper_options={"mode": "async"},
                    reorder=reorder)
            c = r.summary["configs"]
            a, base = c["spikeduet-async"], c["all-m33"]
            eng = ", ".join(f"{x['engine']}/{x['residency']}" for x in a["layers"])
            print(f"{name:<24} {'reordered' if reorder else 'trained':<10} {base['mean_latency_ms']:>8.2f} "
                  f"{c['all-dense-mvp']['mean_latency_ms']:>10.2f} {c['spikeduet-blocking']['mean_latency_ms']:>9.2f} "
                  f"{a['mean_latency_ms']:>8.2f} {a['speedup_vs_all_m33']:>8.2f}x {a['mean_energy_uj']:>8.1f} "
                  f"{1 - a['mean_energy_uj'] / base['mean_energy_uj']:>7.1%}  {eng}  "
                  f"({time.perf_counter() - t0:.1f} s)")


def linear1(names: list[str], platform) -> None:
    from hetsim.snn.activity_costs import ActivityCostModel, engines_of, sram_budget_bytes
    from hetsim.snn.network import load_snn
    from hetsim.snn.reorder import mvp_residencies, reorder

    print("\nSec. IV-C analogue: Linear1 (hidden -> next layer) cycles per timestep on the validation split")
    print(f"{'network':<24} {'M33 res':<10} {'M33':>8} {'MVP res':<8} {'MVP trained':>12} {'MVP reordered':>14} "
          f"{'ratio':>13} {'launches':>14} {'raw ranges':>14}")
    mvp = engines_of(platform)[1]
    budget = sram_budget_bytes(platform)
    for name in names:
        snn = load_snn(ROOT / "workloads" / "snn" / f"{name}.yaml")
        if snn.n_layers < 2:
            continue
        res = mvp_residencies(snn, mvp, budget)
        reo = reorder(snn, mvp, residency=res, layers=[1])
        rows = []
        for net in (snn, reo.snn):
            cm = ActivityCostModel.of(net, platform, "plan")
            lc = cm.layers[1]
            m33_res = "sram" if lc.weight_bytes("m33") <= budget else "flash+hot"
            hot = min(lc.n_in, int(budget // (lc.n_out * 4))) if m33_res == "flash+hot" else 0
            m33 = float(lc.m33_cycles(m33_res, hot).mean())
            mvp_c = float(lc.mvp_range_cycles(res[1]).mean())
            from hetsim.snn.activity import range_counts

            rows.append((m33_res, m33, mvp_c, float(lc.launches[res[1]].mean()),
                         float(range_counts(net.split("plan")[1], 0)[0].mean())))
        (m33_res, m33, before, lb, rb), (_, _, after, la, ra) = rows
        print(f"{name:<24} {m33_res:<10} {m33:>8,.0f} {res[1]:<8} {before:>12,.0f} {after:>14,.0f} "
              f"{before / m33:>5.2f} -> {after / m33:>4.2f} {lb:>6.2f} -> {la:>5.2f} {rb:>6.2f} -> {ra:>5.2f}")


def ssc128_memory(platform) -> None:
    from hetsim.mappers.spikeduet import layer_choices, plan_network
    from hetsim.snn.synthetic import synthetic_snn

    print("\nSec. IV-D analogue: memory placement on a synthetic 700-128-128-35 network, T = 100 (hidden density "
          "8.8 %, input 2 %)")
    snn = synthetic_snn([700, 128, 128, 35], 100, density=[0.02, 0.088, 0.088, 0.1], clustering=0.5, samples=20,
                        seed=0, name="synthetic-ssc128")
    for mode in ("blocking", "async"):
        for mapper in ("all-m33", "spikeduet"):
            p = plan_network(snn, platform, mapper, mode)
            eng = ", ".join(f"{c.engine}/{c.residency}" for c in layer_choices(p))
            print(f"  {mode:<9} {mapper:<10} {p.stats['plan_mean_latency_s'] * 1e3:8.2f} ms  SRAM "
                  f"{p.stats['sram_bytes'] / 1024:6.1f} KiB  "
                  f"{eng}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("networks", nargs="*", help="names under workloads/snn (default: all)")
    ap.add_argument("--platform", default=str(ROOT / "platforms" / "efr32mg24.yaml"))
    ap.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                    help="platform override, as hetsim run's --set (e.g. devices.mvp.merge_gaps=false)")
    args = ap.parse_args()
    import yaml

    from hetsim.platform import load_platform

    platform = load_platform(args.platform)
    if args.set:
        platform = platform.with_overrides({k: yaml.safe_load(v) for k, v in (a.split("=", 1) for a in args.set)})
    names = args.networks or sorted(p.stem for p in (ROOT / "workloads" / "snn").glob("*.yaml"))
    table1(names, platform)
    linear1(names, platform)
    ssc128_memory(platform)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from calibration import session  # wall, CPU, calibration and reference-core seconds of the whole run

    with session(Path(__file__).name):
        main()
