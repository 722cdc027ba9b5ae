"""The scenario replay at scale: YOLOv5n requests on platforms/puma.yaml, every contention kind on.

    python bench/scenario_bench.py                          # 1,000, 3,000 and 10,000 requests (10k: ~2.6 M ops)
    python bench/scenario_bench.py --requests 10000         # one size

Each size runs in a fresh child process (so its memory figures are its own): a closed loop of 4 YOLOv5n
requests in flight (heft mapping, ``fifo`` dispatch, links + cim-bus + cim-cores contention) replayed; loading
the model, the mapping and the one-request pricing come before and are not timed. Printed per size:

* simulated ops per second of wall time and the ratio to a bare SimPy chain of timeouts timed in the same
  process just before and after (events per second; the ratio needs no calibration; goal >= 6 %);
* memory: the resident set before the replay, its growth at each tenth of the finished requests (read from
  ``/proc/self/status`` while the replay runs) and the process's peak (``ru_maxrss``). Memory that does not grow
  with the finished requests shows as a growth that stays flat from the first tenth to the last, and the same
  peak at 1k, 3k and 10k requests.

Beside them, the calibration of ``bench/calibration.py`` (the reference loop's median, sampled between the
children) and each size's wall time in reference-core seconds.

    python bench/scenario_bench.py --md1                    # M/D/1 beside bare SimPy and ciw (fifo, static)
    python bench/scenario_bench.py --md1 --md1-requests 20000 --rounds 5

``--md1``: the queue every DES user knows, an M/D/1 at load 0.8 (Poisson arrivals at ``0.8 / S``, one server,
service ``S`` fixed), replayed by hetsim and by ciw (ciw 3.2.7, V. Palmer et al., "Ciw: An open-source discrete
event simulation library", J. Simulation 2019; a bench-only dependency, ``pip install -e .[bench]``), in this one
process, alternating (bare SimPy, hetsim fifo, ciw, bare SimPy, hetsim static, ciw, ...; ``--rounds`` of each).
hetsim's side is a scenario of one Poisson stream (``count`` requests) of a one-op model (a ReLU on 64 floats,
built with ``onnx.helper``) on platforms/puma.yaml's host (one core; ``S`` is its latency for that op); reading
the model, the mapping and pricing the one request come before and are not timed; the replay (``_Run``: the
arrivals, dispatch, the op, the per-request rows) is. ciw's side is ``ciw.create_network`` with
``Exponential(0.8 / S)`` arrivals and ``Deterministic(S)`` service, ``Simulation`` and
``simulate_until_max_customers(count, method="Finish")``, all timed. Printed: the medians of requests per second,
hetsim / ciw, hetsim's ops per second over the bare SimPy chain's events per second, and the mean waiting time of
each tool beside the Pollaczek-Khinchine value ``rho S / (2 (1 - rho))`` (a check that both ran the same queue).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from calibration import session  # noqa: E402
from replay_ratio import bare_simpy  # noqa: E402


def _rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def child(n: int) -> dict:
    """One size in this process: map, then time the replay of ``n`` requests; the figures as a dict."""
    from hetsim.platform import load_platform
    from hetsim.scenario.run import _Run, map_streams
    from hetsim.scenario.spec import Scenario
    from hetsim.workload import load_onnx

    plat = load_platform(ROOT / "platforms" / "puma.yaml")
    wl = load_onnx(ROOT / "workloads" / "yolov5n.onnx")
    sc = Scenario.model_validate({"streams": {"detect": {
        "model": "yolov5n.onnx", "arrival": {"process": "closed", "population": 4}, "count": n}},
        "dispatch": "fifo", "contention": "all", "timeline_requests": 5})
    kinds = frozenset({"links", "cim-bus", "cim-cores"})
    models = map_streams(plat, sc, ROOT, None, kinds, {"detect": wl})  # not timed: mapping, one request
    run = _Run(sc, models, ROOT, kinds, None)
    samples: list[tuple[int, float]] = []
    step = max(1, n // 10)
    done = run.done

    def counted(name, idx, req):  # the RSS at every tenth of the finished requests
        done(name, idx, req)
        if len(run.rows) % step == 0:
            samples.append((len(run.rows), _rss_mib()))

    run.done = counted
    b0 = bare_simpy()
    rss0 = _rss_mib()
    c0, t0 = time.process_time(), time.perf_counter()
    run.run()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    b1 = bare_simpy()
    lat = sorted(r[5] for r in run.rows)
    return {"requests": n, "ops": n * len(wl), "wall_s": wall, "cpu_s": cpu, "bare_events_s": statistics.mean([b0, b1]),
            "rss_before_mib": rss0, "rss_samples": samples,
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "p99_ms": lat[int(0.99 * (len(lat) - 1))] * 1e3, "finished": len(run.rows)}


def _one_op_model(folder: Path) -> Path:
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "one_relu", [x], [y])
    path = folder / "one_relu.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


RHO = 0.8


class MD1:
    """hetsim's M/D/1: the one-op model mapped once; :meth:`replay` times one replay under a dispatch policy."""

    def __init__(self, folder: Path, count: int) -> None:
        from hetsim.platform import load_platform
        from hetsim.scenario.run import map_streams
        from hetsim.scenario.spec import Scenario
        from hetsim.workload import load_onnx

        self.folder = folder
        wl = load_onnx(_one_op_model(folder))
        plat = load_platform(ROOT / "platforms" / "puma.yaml")
        probe = Scenario.model_validate({"streams": {"s": {"model": "one_relu.onnx", "arrival": {
            "process": "poisson", "rate_hz": 1.0}, "count": 1}}})
        m = map_streams(plat, probe, folder, None, frozenset(), {"s": wl})
        self.service_s = m["s"].makespan_s
        self.scenarios = {}
        for dispatch in ("fifo", "static"):
            sc = Scenario.model_validate({"streams": {"s": {"model": "one_relu.onnx", "arrival": {
                "process": "poisson", "rate_hz": RHO / self.service_s}, "count": count}},
                "dispatch": dispatch, "timeline_requests": 0, "seed": 0})
            self.scenarios[dispatch] = (sc, map_streams(plat, sc, folder, None, frozenset(), {"s": wl}))

    def replay(self, dispatch: str) -> tuple[float, float, int]:
        """``(wall seconds, mean waiting seconds, requests)`` of one timed replay."""
        from hetsim.scenario.run import _Run

        sc, models = self.scenarios[dispatch]
        t0 = time.perf_counter()
        run = _Run(sc, models, self.folder, frozenset(), None)
        run.run()
        wall = time.perf_counter() - t0
        wait = statistics.fmean(r[3] - r[2] for r in run.rows)
        return wall, wait, len(run.rows)


def ciw_md1(service_s: float, count: int, seed: int = 0) -> tuple[float, float, int]:
    """ciw's M/D/1 of the same rates: ``(wall seconds, mean waiting seconds, customers)``, network built and
    simulated in the timed span."""
    import ciw

    t0 = time.perf_counter()
    net = ciw.create_network(arrival_distributions=[ciw.dists.Exponential(rate=RHO / service_s)],
                             service_distributions=[ciw.dists.Deterministic(value=service_s)],
                             number_of_servers=[1])
    ciw.seed(seed)
    sim = ciw.Simulation(net)
    sim.simulate_until_max_customers(count, method="Finish")
    wall = time.perf_counter() - t0
    recs = sim.get_all_records()
    return wall, statistics.fmean(r.waiting_time for r in recs), len(recs)


def md1(count: int, rounds: int) -> None:
    import tempfile

    import ciw
    import simpy
    from calibration import Calibration, load, machine

    print(f"# M/D/1 at load {RHO}, {count:,} requests: hetsim vs bare SimPy {simpy.__version__} and ciw "
          f"{ciw.__version__}: {machine()}")
    print(f"# load average at start: {load()}", flush=True)
    cal = Calibration(1)
    with tempfile.TemporaryDirectory() as tmp:
        q = MD1(Path(tmp), count)
        S = q.service_s
        pk = RHO * S / (2 * (1 - RHO))
        for dispatch in ("fifo", "static"):
            bare, het, peer = [], [], []
            for _ in range(rounds):
                bare.append(bare_simpy())
                het.append(q.replay(dispatch))
                peer.append(ciw_md1(S, count))
                cal.sample()
            b = statistics.median(bare)
            h = statistics.median(w for w, _, _ in het)
            c = statistics.median(w for w, _, _ in peer)
            n = het[0][2]
            print(f"{dispatch:<7} hetsim {n / h:>9,.0f} requests/s ({h:6.3f} s)  ciw {peer[0][2] / c:>9,.0f} "
                  f"requests/s ({c:6.3f} s)  hetsim / ciw {c / h * peer[0][2] / n:5.2f}x  bare SimPy {b:>10,.0f} "
                  f"events/s  hetsim ops/s / bare {n / h / b:6.2%}  (medians of {rounds}; mean wait hetsim "
                  f"{het[0][1] * 1e6:.2f} us, ciw {peer[0][1] * 1e6:.2f} us, P-K {pk * 1e6:.2f} us; S = "
                  f"{S * 1e6:.3f} us)", flush=True)
    print(f"# load average at end: {load()}")
    print(cal.line())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, nargs="+", default=[1_000, 3_000, 10_000])
    ap.add_argument("--md1", action="store_true", help="M/D/1 beside bare SimPy and ciw instead of the sizes")
    ap.add_argument("--md1-requests", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=5, help="--md1: alternations per policy")
    ap.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child is not None:
        print(json.dumps(child(args.child)))
        return
    if args.md1:
        md1(args.md1_requests, args.rounds)
        return
    with session("scenario replay: YOLOv5n on puma, closed loop of 4, fifo, contention all") as cal:
        for n in args.requests:
            cal.sample()
            out = subprocess.run([sys.executable, __file__, "--child", str(n)], capture_output=True, text=True,
                                 check=True)
            r = json.loads(out.stdout.strip().splitlines()[-1])
            cal.sample()
            rate = r["ops"] / r["wall_s"]
            growth = [f"{k}:{rss - r['rss_before_mib']:+.1f}" for k, rss in r["rss_samples"]]
            print(f"{n:>7} requests {r['ops']:>10,} ops  {r['wall_s']:8.2f} s wall  {r['cpu_s']:8.2f} s CPU  "
                  f"{cal.ref_s(r['wall_s']):8.2f} ref-core s  {rate:>9,.0f} ops/s  bare SimPy "
                  f"{r['bare_events_s']:>10,.0f} events/s  ratio {rate / r['bare_events_s']:6.2%}  p99 "
                  f"{r['p99_ms']:.2f} ms", flush=True)
            print(f"        memory: RSS before the replay {r['rss_before_mib']:.1f} MiB, peak {r['peak_rss_mib']:.1f} "
                  f"MiB; growth (MiB) at finished requests {' '.join(growth)}", flush=True)


if __name__ == "__main__":
    main()
