"""Weight policies on platforms/cim-npu-dram.yaml: each mapper's makespan, policy mix, DRAM traffic and time to
map ResNet-50 (int8 QDQ, 25.5 M weights), with the machine's calibration (``bench/calibration.py``) beside every
timing.

    python bench/weights_bench.py [--time-limit 30]
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from calibration import Calibration, session  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=30.0, help="cpsat's time limit, s")
    ap.add_argument("--model", default=str(ROOT / "workloads" / "resnet50_int8_qdq.onnx"))
    args = ap.parse_args()
    from hetsim.analysis.metrics import summarize
    from hetsim.costs import CostModel
    from hetsim.mappers import get_mapper
    from hetsim.pipeline import load_workload
    from hetsim.platform import load_platform
    from hetsim.sim import simulate

    with session("weights_bench"):
        cal = Calibration()
        costs = CostModel(load_workload(args.model), load_platform(ROOT / "platforms" / "cim-npu-dram.yaml"))
        host = simulate(costs, get_mapper("all-host").map(costs)).makespan_s
        print(f"{costs.workload.name} on {costs.platform.name}: all-host {host * 1e3:.3f} ms")
        for name, opts in (("greedy", {}), ("heft", {}), ("cpsat", {"time_limit_s": args.time_limit})):
            t = cal.timed(lambda name=name, opts=opts: get_mapper(name, **opts).map(costs))
            s = t.result
            r = simulate(costs, s)
            w = summarize(costs, s, r)["weights"]
            mix = Counter(f"{s.device_of(v)}/{s.policy_of(v)}" for v in s.parts if s.device_of(v) != costs.host)
            dram = w["memories"]["dram"]
            print(f"{name:7s} makespan {r.makespan_s * 1e3:8.3f} ms  speedup {host / r.makespan_s:5.2f}x  "
                  f"DRAM {dram['bytes'] / 1e6:7.3f} MB {dram['energy_j'] * 1e3:6.3f} mJ"
                  f"  status {s.stats.get('status')}  {dict(sorted(mix.items()))}")
            print("   ", cal.figure(f"map ({name})", t))
        print(cal.line())


if __name__ == "__main__":
    main()
