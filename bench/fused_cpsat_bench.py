"""The whole ``hetsim run`` command with the default mapper (``cpsat``) on a SoC whose NPU fuses ops.

    python bench/fused_cpsat_bench.py                    # the three commands below, once each
    python bench/fused_cpsat_bench.py --repeat 3         # each three times (the run of median wall time)
    python bench/fused_cpsat_bench.py --root DIR         # time the hetsim checkout in DIR (e.g. an older one)

The commands, each in a fresh interpreter as a user runs it (CPU time: the child's user + system time, CP-SAT's
threads included):

* ``hetsim run platforms/edge-soc.yaml workloads/yolov5n.onnx`` (fused operator groups: ``cpsat``'s fused model,
  ``hetsim/mappers/_fused_cpsat.py``);
* ``hetsim run platforms/edge-soc.yaml workloads/llm/gpt2-small.llm.yaml --phase decode --context-tokens 128``;
* ``hetsim run platforms/puma.yaml workloads/yolov5n.onnx`` (no fusion: the reference, golden 92.165 ms).

Each line: wall and CPU seconds, the wall time in reference-core seconds, the makespan and the solver line of the
report (status, work used, gap). Calibration (``bench/calibration.py``): the fixed pure-Python loop timed before
and after every command in 2 copies at once (``Calibration(width=2)``: CP-SAT runs 2 workers), its median beside
each figure. The figures are recorded in docs/performance.md.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from calibration import Calibration, session  # noqa: E402

COMMANDS = {
    "yolov5n edge-soc": ["platforms/edge-soc.yaml", "workloads/yolov5n.onnx"],
    "gpt2 decode L=128 edge-soc": ["platforms/edge-soc.yaml", "workloads/llm/gpt2-small.llm.yaml", "--phase",
                                   "decode", "--context-tokens", "128"],
    "yolov5n puma (reference)": ["platforms/puma.yaml", "workloads/yolov5n.onnx"],
}


def run_command(root: Path, argv: list[str]) -> str:
    """``python -m hetsim run ARGV`` in ``root`` with ``root`` first on the path; returns its standard output."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    out = subprocess.run([sys.executable, "-m", "hetsim", "run", *argv], cwd=root, env=env, check=True,
                         capture_output=True, text=True)
    return out.stdout


def summary(out: str) -> str:
    """The makespan and the solver line of a run's report."""
    ms = re.search(r"^\s*makespan\s+(.+)$", out, re.M)
    solver = re.search(r"^\s*solver\s+(.+)$", out, re.M)
    return f"makespan {ms.group(1).strip() if ms else '?'}; {solver.group(1).strip() if solver else ''}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=ROOT, help="the hetsim checkout to time (default: this one)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per command (the median is reported)")
    ap.add_argument("--only", nargs="*", choices=sorted(COMMANDS), help="these commands only")
    args = ap.parse_args(argv)
    cal = Calibration(width=2)
    with session("fused_cpsat_bench", cal):
        print(f"# hetsim checkout: {args.root.resolve()}")
        for label, cmd in COMMANDS.items():
            if args.only and label not in args.only:
                continue
            t = cal.timed(lambda cmd=cmd: run_command(args.root.resolve(), cmd), args.repeat, children=True)
            print(f"{cal.figure(label, t, width=28)}  (calibration median so far {cal.median_s:.3f} s)  "
                  f"{summary(t.result)}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
