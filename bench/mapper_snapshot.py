"""Snapshot of what the mappers return, to prove that a refactoring changed nothing.

    python bench/mapper_snapshot.py --write before.json          # every shipped ONNX workload x platform x mapper
    python bench/mapper_snapshot.py --write before.json --grid   # ... plus a CPU-CIM ILP grid subset
    python bench/mapper_snapshot.py --compare before.json        # run again, print every point that differs

Per point (workload, platform, mapper, grid parameters): the makespan, the bound and status in
``Schedule.stats``, and a hash of the schedule (assignment, per-device order, channel splits). A point whose two
runs both ended by proof (``status`` optimal, or a heuristic) must match exactly; a ``time_limit`` run of CP-SAT or
HiGHS (run with a 10 s limit, :data:`OPTIONS`) may differ (the wall clock cut it; see the cpsat module
docstring, Determinism) and is listed apart.
Platforms whose devices cannot run a workload (``MappingError``) are recorded as such.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

PLATFORMS = ("puma.yaml", "puma-host.yaml", "puma-x86.yaml", "cim-npu.yaml")
MAPPERS = ("greedy", "heft", "ilp", "cpsat")
#: options per mapper (HiGHS to 10 s: a run it cuts is compared loosely anyway, see the module docstring)
OPTIONS = {"ilp": {"time_limit_s": 10.0}}
#: the CPU-CIM ILP grid subset: two models x 4 crossbar counts x 2 MVM latencies x 2 hosts
GRID = (("resnet18", "yolov5n"), (25, 50, 100, 200), (50, 1000), ("arm", "x86"))


def schedule_hash(s) -> str:
    """SHA-256 (first 16 hex digits) of the schedule's assignment, per-device order and channel splits."""
    body = {"assignment": sorted(s.assignment.items()), "order": {d: list(o) for d, o in sorted(s.order.items())},
            "splits": {v: {d: list(ch) for d, ch in p.items()} for v, p in sorted(s.splits.items())}}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]


def record(costs, mapper: str, **opts) -> dict:
    from hetsim.errors import MappingError
    from hetsim.mappers import get_mapper

    t0 = time.perf_counter()
    try:
        s = get_mapper(mapper, **opts).map(costs)
    except MappingError as err:
        return {"error": str(err)}
    st = s.stats
    return {"makespan_s": s.makespan_s, "bound_s": st.get("bound_s"), "status": st.get("status"),
            "hash": schedule_hash(s), "wall_s": round(time.perf_counter() - t0, 2)}


def points(grid: bool):
    """(key, costs, mapper) for every point, in a fixed order."""
    from cpsat_points import HOSTS, load_model, with_budget

    from hetsim.costs import CostModel
    from hetsim.errors import InputError
    from hetsim.platform import load_platform
    from hetsim.workload import load_onnx

    files = sorted((ROOT / "workloads").glob("*.onnx")) + sorted((ROOT / "workloads" / "paper").glob("*.onnx"))
    plats = {p: load_platform(ROOT / "platforms" / p) for p in PLATFORMS}
    for f in files:
        wl = load_onnx(f)
        for pname, plat in plats.items():
            try:
                costs = CostModel(wl, plat)
            except InputError:  # e.g. puma-host.yaml has measured profiles of some workloads only
                continue
            for m in MAPPERS:
                yield f"{f.relative_to(ROOT / 'workloads')}|{pname}|{m}", costs, m
    if grid:
        models, cbs, tmvms, hosts = GRID
        for name in models:
            wl, model = load_model(name)
            for host in hosts:
                base = load_platform(ROOT / "platforms" / HOSTS[host])
                for c in cbs:
                    for t in tmvms:
                        yield f"grid|{model}|{host}|C={c}|t={t}|cpsat", CostModel(wl, with_budget(base, c, t)), "cpsat"


def exact(rec: dict) -> bool:
    return "error" in rec or rec.get("status") in ("optimal", "heuristic", None)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--write", type=Path, help="write the snapshot here (JSON)")
    g.add_argument("--compare", type=Path, help="compare a fresh run with this snapshot")
    ap.add_argument("--grid", action="store_true", help="add the CPU-CIM ILP grid subset (cpsat)")
    ap.add_argument("--only", help="substring a point's key must contain")
    args = ap.parse_args(argv)
    old = json.loads(args.compare.read_text()) if args.compare else None
    grid = args.grid or bool(old and any(k.startswith("grid|") for k in old))
    out: dict[str, dict] = {}
    same = differ = loose = 0
    for key, costs, m in points(grid):
        if args.only and args.only not in key:
            continue
        rec = record(costs, m, **OPTIONS.get(m, {}))
        out[key] = rec
        if old is None:
            print(key, rec, flush=True)
            continue
        was = old.get(key)
        keys = ("makespan_s", "bound_s", "status", "hash", "error")
        if was is not None and all(was.get(k) == rec.get(k) for k in keys):
            same += 1
        elif was is not None and not (exact(was) and exact(rec)):
            loose += 1
            print("time-limited, differs:", key, was, rec, flush=True)
        else:
            differ += 1
            print("DIFFERS:", key, was, rec, flush=True)
    if args.write:
        tmp = args.write.with_suffix(".tmp")
        tmp.write_text(json.dumps(out, indent=1, sort_keys=True))
        tmp.replace(args.write)
        print(f"# {len(out)} points written to {args.write}")
    else:
        print(f"# {same} same, {differ} differ, {loose} time-limited runs differ")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
