"""``hetsim compare``: two runs side by side, with their differences."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from hetsim.cli._common import _add_common


def add_parser(sub) -> None:
    """The ``compare`` subcommand's arguments."""
    p = sub.add_parser("compare", formatter_class=argparse.RawDescriptionHelpFormatter,
                       help="two runs side by side (folders 'hetsim run --out' wrote, or their summary.json)",
                       description="Compare run B against run A: the headline (makespan, energy, speed-up; for "
                       "scenarios requests, energy per request, the bottleneck's load), per device its busy time, "
                       "utilisation and energy, per op type its ops, summed latency and energy (from each folder's "
                       "ops.csv), and for scenarios per stream its throughput, latency mean and percentiles and "
                       "deadline misses; each with B - A and its percentage of A. Both runs must be of one kind "
                       "(two DAG runs, two spiking-network runs or two scenarios).")
    p.add_argument("run_a", type=Path, metavar="RUN_A", help="the reference run: a folder or its summary.json")
    p.add_argument("run_b", type=Path, metavar="RUN_B", help="the run compared with it")
    p.add_argument("--json", action="store_true", help="print the rows as JSON (section, item, metric, a, b, delta, "
                   "delta_pct) instead of the tables")
    _add_common(p)


def cmd_compare(args) -> int:
    """``hetsim compare``: :func:`hetsim.report.compare.compare`, printed."""
    from hetsim.report.compare import compare

    c = compare(args.run_a, args.run_b)
    if args.json:
        rows = c.frame.astype(object).where(c.frame.notna(), None).to_dict(orient="records")
        print(json.dumps({"kind": c.kind, "a": str(c.a.path), "b": str(c.b.path), "speedup": c.speedup,
                          "rows": rows}, indent=1))
    else:
        print(c.to_text())
    return 0
