"""Scenario identity check: snapshot every shipped scenario's outputs, then prove a changed engine identical.

    python bench/scenario_identity.py --write /tmp/scenarios.json     # with the engine before the change
    python bench/scenario_identity.py --check /tmp/scenarios.json     # with the engine after it

Every ``scenarios/*.yaml`` on the platform its header names (``hetsim run platforms/X.yaml scenarios/Y.yaml``),
under every dispatch policy (``static``, ``fifo``, ``priority``, ``edf``) and with contention ``none`` and
``all``: a SHA-256 of each output table (requests, streams, devices, trace: every float by its ``repr``) and of
the summary (JSON, sorted keys; without the throughput mapper's solve time, a wall time). ``--check`` prints
the first difference and exits 1, or the count of identical
runs. The companion of ``bench/replay_identity.py`` (the single replays).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DISPATCH = ("static", "fifo", "priority", "edf")
CONTENTION = ("none", "all")


def _sha(obj) -> str:
    return hashlib.sha256(repr(obj).encode()).hexdigest()


def digest(res) -> dict:
    tables = {"requests": res.requests, "streams": res.streams, "devices": res.devices, "trace": res.trace}
    out = {k: _sha([tuple(r) for r in t.itertuples(index=False)]) for k, t in tables.items()}
    out["rows"] = {k: len(t) for k, t in tables.items()}
    summary = json.loads(json.dumps(res.summary, default=repr))
    summary.get("bottleneck", {}).pop("solve_time_s", None)  # the solver's wall time: not a replay's output
    out["summary"] = hashlib.sha256(json.dumps(summary, sort_keys=True).encode()).hexdigest()
    return out


def cases():
    for path in sorted((ROOT / "scenarios").glob("*.yaml")):
        m = re.search(r"hetsim run (platforms/\S+\.yaml) scenarios/", path.read_text())
        if m is None:
            continue
        for d in DISPATCH:
            for c in CONTENTION:
                yield f"{path.name} @ {m.group(1)} [{d}, {c}]", ROOT / m.group(1), path, d, c


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--write", type=Path)
    g.add_argument("--check", type=Path)
    args = ap.parse_args()
    from hetsim.errors import HetsimError
    from hetsim.scenario.run import run_scenario

    snap = {} if args.write else json.loads(args.check.read_text())
    got = {}
    for key, plat, path, d, c in cases():
        try:
            got[key] = digest(run_scenario(plat, path, dispatch=d, contention=c))
        except HetsimError as e:
            got[key] = {"error": f"{type(e).__name__}: {e}"}
        if args.check and got[key] != snap.get(key):
            print(f"DIFFERENT: {key}\n  before {snap.get(key)}\n  after  {got[key]}")
            sys.exit(1)
        print(key, flush=True)
    if args.write:
        args.write.write_text(json.dumps(got, indent=0, sort_keys=True))
        print(f"wrote {len(got)} scenario runs to {args.write}")
    else:
        missing = [k for k in snap if k not in got]
        if missing:
            print(f"MISSING: {missing[:5]}")
            sys.exit(1)
        print(f"all {len(got)} scenario runs identical (requests, streams, devices, trace, summary)")


if __name__ == "__main__":
    main()
