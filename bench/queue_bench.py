"""Long dispatch queues: a burst of simultaneous arrivals on one serial device.

    python bench/queue_bench.py                                   # 10^3 .. 10^6 requests, fifo, heap queue
    python bench/queue_bench.py --requests 5000 10000 30000 --sorted-list   # the same on SimPy's sorted list

A one-op model (a ReLU on 64 floats, built with ``onnx.helper`` in a temporary folder) on platforms/puma.yaml
(its host CPU, one core), and a scenario of one stream whose arrival trace puts every request at t = 0: all but
the first wait in the host's dispatch queue, so the queue's cost is most of the replay's. Each size runs in a
fresh child process; reading the model, the mapping and pricing the one request come before and are not timed,
the replay (``_Run.run``: arrivals, dispatch, ops, the per-request rows) is.

``--sorted-list`` replays on ``simpy.PriorityResource`` (a list sorted again on every request: ``O(n)`` per
request, ``O(n^2)`` per burst) instead of hetsim's :class:`~hetsim.sim.dispatch.KeyedUnits` (a heap,
``O(log n)``, and two SimPy events per op fewer); both serve in the same order and event order
(``tests/test_dispatch_queue.py``). ``--dispatch`` picks the policy (fifo, priority, edf: the same keys for one stream).

Printed per size: wall and CPU seconds, the wall time in reference-core seconds (``bench/calibration.py``, its
calibration printed beside), microseconds per request, and the growth exponent of the wall time in the number of
requests from the size before (1.0: the same cost per request at every size; 2.0: quadratic).
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from calibration import session  # noqa: E402


def _one_op_model(folder: Path) -> Path:
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "one_relu", [x], [y])
    path = folder / "one_relu.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def child(n: int, dispatch: str, sorted_list: bool) -> dict:
    """Replay a burst of ``n`` requests at t = 0 in this process; the figures as a dict."""
    import simpy

    import hetsim.sim.dispatch as dispatch_mod
    from hetsim.platform import load_platform
    from hetsim.scenario.run import _Run, map_streams
    from hetsim.scenario.spec import Scenario
    from hetsim.workload import load_onnx

    if sorted_list:  # the queue before: SimPy's own, re-sorted on every request
        dispatch_mod.DispatchPolicy.resource = lambda _self, env, capacity: simpy.PriorityResource(env, capacity)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        wl = load_onnx(_one_op_model(folder))
        (folder / "burst.csv").write_text("arrival_s\n" + "0\n" * n)
        sc = Scenario.model_validate({"streams": {"s": {
            "model": "one_relu.onnx", "arrival": {"process": "trace", "file": "burst.csv"}}},
            "dispatch": dispatch, "timeline_requests": 5})
        plat = load_platform(ROOT / "platforms" / "puma.yaml")
        kinds = frozenset()
        models = map_streams(plat, sc, folder, None, kinds, {"s": wl})  # not timed: mapping, one request
        run = _Run(sc, models, folder, kinds, None)
        c0, t0 = time.process_time(), time.perf_counter()
        run.run()
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"requests": n, "finished": len(run.rows), "wall_s": wall, "cpu_s": cpu,
            "last_latency_s": max(r[5] for r in run.rows)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, nargs="+", default=[1_000, 10_000, 100_000, 1_000_000])
    ap.add_argument("--dispatch", default="fifo", choices=["fifo", "priority", "edf"])
    ap.add_argument("--sorted-list", action="store_true", help="SimPy's PriorityResource queue (the one before)")
    ap.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child is not None:
        print(json.dumps(child(args.child, args.dispatch, args.sorted_list)))
        return
    queue = "SimPy's sorted list" if args.sorted_list else "heap (KeyedUnits)"
    with session(f"dispatch queue: a burst at t = 0 on puma's host, one-op model, {args.dispatch}, {queue}") as cal:
        prev = None
        for n in args.requests:
            cal.sample()
            cmd = [sys.executable, __file__, "--child", str(n), "--dispatch", args.dispatch]
            out = subprocess.run(cmd + (["--sorted-list"] if args.sorted_list else []), capture_output=True,
                                 text=True, check=True)
            r = json.loads(out.stdout.strip().splitlines()[-1])
            cal.sample()
            growth = (f"{math.log(r['wall_s'] / prev[1]) / math.log(n / prev[0]):5.2f}" if prev else "    -")
            prev = (n, r["wall_s"])
            print(f"{n:>9,} requests  {r['wall_s']:9.2f} s wall  {r['cpu_s']:9.2f} s CPU  "
                  f"{cal.ref_s(r['wall_s']):9.2f} ref-core s  {r['wall_s'] / n * 1e6:8.1f} us/request  "
                  f"growth exponent {growth}  (finished {r['finished']:,}, last latency "
                  f"{r['last_latency_s'] * 1e3:.1f} ms)", flush=True)


if __name__ == "__main__":
    main()
