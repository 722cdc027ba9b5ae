"""Replay identity check: snapshot every replay the shipped inputs give, then prove a changed engine identical.

    python bench/replay_identity.py --write /tmp/replays.json     # with the engine before the change
    python bench/replay_identity.py --check /tmp/replays.json     # with the engine after it

What is snapshotted, for every shipped ONNX workload (``workloads/*.onnx``, the paper graphs included) on every
shipped platform with every fast mapper that can map it (and ``cpsat`` with a short time limit), and for every
contention subset the platform has (``none``, each kind alone, all): the schedule (as JSON, so the check replays
exactly the same schedule even where a mapper is time-limited), a SHA-256 of the trace rows (every float by its
``repr``), the per-op start and finish times, the makespan and the device table (busy time and energy per device).
The spiking networks (``workloads/snn/*.yaml`` on ``platforms/efr32mg24.yaml``) go through ``pipeline.run`` with
the three SpikeDuet configurations; and 150 random DAGs from the property tests' generator
(``tests/conftest.py``: ``random_setup``, derandomised) with and without an NPU, under all 8 contention subsets.
``--check`` prints the first difference and exits 1, or prints the count of identical replays.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from itertools import combinations
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

KINDS = ("links", "cim-bus", "cim-cores")
SUBSETS = [frozenset(c) for n in range(len(KINDS) + 1) for c in combinations(KINDS, n)]
FAST_MAPPERS = ("all-host", "greedy", "heft", "min-cost", "all-8bit", "all-ternary", "io8-backbone-ternary")


def digest(costs, result) -> dict:
    from hetsim.analysis.metrics import device_table

    rows = repr([tuple(r) for r in result.trace.itertuples(index=False)])
    dev = device_table(costs, result)
    return {
        "trace_sha256": hashlib.sha256(rows.encode()).hexdigest(),
        "rows": len(result.trace),
        "times": hashlib.sha256(repr((sorted(result.start_s.items()), sorted(result.finish_s.items())))
                                .encode()).hexdigest(),
        "makespan_s": repr(result.makespan_s),
        "devices": hashlib.sha256(repr(dev.to_dict(orient="records")).encode()).hexdigest(),
        "energy_j": repr(float(dev["energy_j"].sum())),
    }


def onnx_cases():
    """(key, costs, schedule JSON or None, mapper) for the ONNX grid."""
    from hetsim.costs import CostModel
    from hetsim.errors import HetsimError
    from hetsim.platform import load_platform
    from hetsim.workload import load_onnx

    plats = {p.name: load_platform(p) for p in sorted((ROOT / "platforms").glob("*.yaml")) if "efr32" not in p.name}
    for w in sorted((ROOT / "workloads").glob("**/*.onnx")):
        try:
            wl = load_onnx(w)
        except HetsimError:
            continue
        for pname, plat in plats.items():
            try:
                costs = CostModel(wl, plat)
            except HetsimError:
                continue
            for m in (*FAST_MAPPERS, "cpsat"):
                yield f"{w.relative_to(ROOT)} @ {pname} / {m}", costs, m


def random_cases():
    from conftest import random_setup
    from hypothesis import HealthCheck, given, settings

    from hetsim.mappers.base import place
    from hetsim.schedule import Schedule

    out = []
    for npu in (False, True):
        @settings(max_examples=75, derandomize=True, database=None, deadline=None,
                  suppress_health_check=list(HealthCheck))
        @given(random_setup(contention=False, npu=npu))
        def collect(setup):
            out.append(setup)

        collect()
    for i, setup in enumerate(out):
        costs = setup["costs"]
        yield f"random #{i}", costs, Schedule("test", setup["assignment"], setup["order"],
                                              place(costs, setup["assignment"]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--write", type=Path)
    g.add_argument("--check", type=Path)
    args = ap.parse_args()
    from hetsim.errors import HetsimError
    from hetsim.mappers import get_mapper
    from hetsim.schedule import Schedule
    from hetsim.sim import simulate

    snap = {} if args.write else json.loads(args.check.read_text())
    got: dict[str, dict] = {}

    def record(key, costs, sched):
        for kinds in SUBSETS:
            k = f"{key} [{','.join(sorted(kinds)) or 'none'}]"
            try:
                got[k] = digest(costs, simulate(costs, sched, kinds))
            except HetsimError as e:
                got[k] = {"error": f"{type(e).__name__}: {e}"}
            if args.check and got[k] != snap.get(k):
                print(f"DIFFERENT: {k}\n  before {snap.get(k)}\n  after  {got[k]}")
                sys.exit(1)

    for key, costs, m in onnx_cases():
        if args.write:
            try:
                opts = {"time_limit_s": 2.0} if m == "cpsat" else {}
                sched = get_mapper(m, **opts).map(costs)
            except HetsimError:
                continue
            snap[key] = {"schedule": sched.to_json()}
        elif key not in snap:
            continue
        sched = Schedule.from_json(snap[key]["schedule"])
        record(key, costs, sched)
        print(key, flush=True)
    for key, costs, sched in random_cases():
        record(key, costs, sched)
    from hetsim.pipeline import run

    for spec in sorted((ROOT / "workloads" / "snn").glob("*.yaml")):
        for m in ("spikeduet", "all-m33", "all-dense-mvp"):
            key = f"{spec.name} @ efr32mg24 / {m}"
            r = run(ROOT / "platforms" / "efr32mg24.yaml", spec, mapper=m)
            got[key] = {**digest(r.costs, r.result), "mean_makespan_s": repr(r.summary["makespan_s"]),
                        "mean_energy_j": repr(r.summary["energy_j"])}
            if args.check and got[key] != snap.get(key):
                print(f"DIFFERENT: {key}\n  before {snap.get(key)}\n  after  {got[key]}")
                sys.exit(1)
            print(key, flush=True)
    if args.write:
        for k, v in got.items():
            snap.setdefault(k, v)
        args.write.write_text(json.dumps(snap, indent=0, sort_keys=True))
        print(f"wrote {len(got)} replays to {args.write}")
    else:
        missing = [k for k in snap if k not in got and "schedule" not in snap[k]]
        if missing:
            print(f"MISSING: {missing[:5]}")
            sys.exit(1)
        print(f"all {len(got)} replays identical (trace rows, op times, makespan, device energy)")


if __name__ == "__main__":
    main()
