"""Scenarios: each test carries its own truth: the single-run makespan, a pipeline's bottleneck, the
Pollaczek-Khinchine M/D/1 mean wait and the non-preemptive priority M/G/1 waits (Cobham's formula), the shared
resident capacity."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
from conftest import conv_op, diamond, host_op, make_platform

from hetsim.costs import CostModel
from hetsim.errors import InputError
from hetsim.mappers import get_mapper
from hetsim.scenario.run import run_scenario
from hetsim.scenario.spec import Scenario, ScenarioError, load_scenario
from hetsim.sim import simulate
from hetsim.workload import Workload


def _scenario(streams: dict, **kw) -> Scenario:
    return Scenario.model_validate({"streams": {n: {"model": "unused.onnx", **s} for n, s in streams.items()}, **kw})


@pytest.mark.parametrize("mapper", ["all-host", "greedy", "heft", "ilp", "cpsat"])
@pytest.mark.parametrize("contention", ["none", "all"])
def test_periodic_stream_slower_than_the_makespan_gives_the_single_run_latency(mapper, contention):
    plat = make_platform(host_cores=1 if mapper == "ilp" else 2, cim_cores=2, crossbars_per_core=4)
    wl = diamond()
    costs = CostModel(wl, plat)
    opts = {"time_limit_s": 5.0} if mapper in ("cpsat", "ilp") else {}
    sched = get_mapper(mapper, **opts).map(costs)
    alone = simulate(costs, sched, frozenset() if contention == "none" else frozenset({"links", "cim-bus",
                                                                                       "cim-cores"}))
    sc = _scenario({"a": {"arrival": {"process": "periodic", "period_s": 3 * alone.makespan_s + 1e-6},
                          "count": 20}}, contention=contention, mapper=mapper, mapper_options=opts)
    r = run_scenario(plat, sc, workloads={"a": wl})
    lat = r.requests["latency_s"].to_numpy()
    assert len(lat) == 20
    assert np.allclose(lat, r.models["a"].makespan_s, rtol=1e-9, atol=0)
    assert r.models["a"].makespan_s == pytest.approx(alone.makespan_s, rel=1e-12)
    assert not r.streams["saturated"].any()


def _three_op_chain() -> Workload:
    ops = [host_op("a", 2000, index=0), conv_op("b", 16, 16, 20, n_in=100, n_out=100, index=1),
           host_op("c", 800, index=2)]
    return Workload.from_ops("chain3", ops, [("a", "b", 0), ("b", "c", 0)])


def test_closed_loop_saturates_at_the_bottleneck_device_load():
    """a (host) -> b (CIM) -> c (host): with enough requests in flight the SoC finishes one request per
    bottleneck load: max(host busy per request, the CIM op's time on its own crossbars)."""
    plat = make_platform(host_cores=1, cim_cores=1, crossbars_per_core=4)
    wl = _three_op_chain()
    costs = CostModel(wl, plat)
    sched = get_mapper("heft").map(costs)
    assert sched.assignment["b"] == "cim" and sched.assignment["a"] == sched.assignment["c"] == "host"
    host = costs.latency["a"]["host"] + costs.latency["c"]["host"]
    bottleneck = max(host, costs.latency["b"]["cim"])
    for population in (1, 3):
        sc = _scenario({"loop": {"arrival": {"process": "closed", "population": population}, "count": 60}})
        r = run_scenario(plat, sc, workloads={"loop": wl})
        fin = np.sort(r.requests["finish_s"].to_numpy())
        gaps = np.diff(fin[20:50])  # the steady state: after the fill, before the drain
        if population == 1:  # one in flight: a request per makespan, no pipelining
            assert np.allclose(gaps, r.models["loop"].makespan_s, rtol=1e-9)
        else:
            assert np.allclose(gaps, bottleneck, rtol=1e-9), (gaps[:5], bottleneck)


def _one_op(name: str, n_out: int) -> Workload:
    return Workload.from_ops(name, [host_op("x", n_out)], [])


def _batch_ci(x: np.ndarray, batches: int = 20) -> tuple[float, float]:
    """Mean and the half-width of its batch-means interval (4 standard errors: the test never flakes by seed)."""
    b = x[: len(x) // batches * batches].reshape(batches, -1).mean(axis=1)
    return float(x.mean()), 4 * float(b.std(ddof=1)) / math.sqrt(batches)


@pytest.mark.parametrize("rho", [0.5, 0.8])
def test_poisson_on_one_serial_device_is_md1(rho):
    """Poisson arrivals of a one-op model on one single-core host: the mean wait is Pollaczek-Khinchine's for
    M/D/1, W = rho * D / (2 (1 - rho)), within the batch-means interval (20 batches, 4 standard errors)."""
    plat = make_platform(host_cores=1, cim_cores=1, crossbars_per_core=2)
    wl = _one_op("one", 3000)
    D = CostModel(wl, plat).latency["x"]["host"]
    n = 16_000
    sc = _scenario({"p": {"arrival": {"process": "poisson", "rate_hz": rho / D}, "count": n, "warmup": 500}},
                   seed=7, mapper="all-host")
    r = run_scenario(plat, sc, workloads={"p": wl})
    req = r.requests[~r.requests["warmup"]]
    wait = (req["start_s"] - req["arrival_s"]).to_numpy()
    mean, half = _batch_ci(wait)
    pk = rho * D / (2 * (1 - rho))
    assert abs(mean - pk) <= half, (mean, pk, half)
    assert half < 0.25 * pk  # the interval is tight enough to mean something


def test_two_priority_classes_match_the_nonpreemptive_priority_mg1():
    """Two Poisson classes of different one-op models on one host under ``priority`` dispatch: the mean waits
    are W_k = W0 / ((1 - s_{k-1}) (1 - s_k)), W0 = sum_i lambda_i E[S_i^2] / 2 (Cobham; deterministic services,
    so E[S_i^2] = D_i^2), within the batch-means intervals."""
    plat = make_platform(host_cores=1, cim_cores=1, crossbars_per_core=2)
    hi, lo = _one_op("hi", 2000), _one_op("lo", 6000)
    D1 = CostModel(hi, plat).latency["x"]["host"]
    D2 = CostModel(lo, plat).latency["x"]["host"]
    l1, l2 = 0.3 / D1, 0.4 / D2
    n = 8_000
    sc = _scenario({"hi": {"arrival": {"process": "poisson", "rate_hz": l1}, "priority": 0, "count": n,
                           "warmup": 500},
                    "lo": {"arrival": {"process": "poisson", "rate_hz": l2}, "priority": 1,
                           "count": int(n * l2 / l1), "warmup": 500}},
                   dispatch="priority", seed=3, mapper="all-host")
    r = run_scenario(plat, sc, workloads={"hi": hi, "lo": lo})
    W0 = (l1 * D1**2 + l2 * D2**2) / 2
    s1 = l1 * D1
    want = {"hi": W0 / (1 - s1), "lo": W0 / ((1 - s1) * (1 - s1 - l2 * D2))}
    end = min(r.requests[r.requests["stream"] == s]["arrival_s"].max() for s in want)
    for s, w in want.items():
        req = r.requests[(r.requests["stream"] == s) & ~r.requests["warmup"] & (r.requests["arrival_s"] < end)]
        mean, half = _batch_ci((req["start_s"] - req["arrival_s"]).to_numpy())
        assert abs(mean - w) <= half, (s, mean, w, half)


def test_two_models_that_do_not_fit_together_never_share_the_cim():
    plat = make_platform(host_cores=1, cim_cores=1, crossbars_per_core=4)
    big = Workload.from_ops("big", [conv_op("w", 48, 16, 100, n_in=100, n_out=100)], [])
    costs = CostModel(big, plat)
    assert costs.need["w"]["cim"] == 3 and costs.budget["cim"] == 4  # one fits, two do not
    sc = _scenario({"one": {"arrival": {"process": "periodic", "period_s": 1.0}, "count": 2},
                    "two": {"arrival": {"process": "periodic", "period_s": 1.0}, "count": 2}}, mapper="greedy")
    r = run_scenario(plat, sc, workloads={"one": big, "two": big})
    on_cim = [n for n, m in r.models.items() if m.schedule.assignment["w"] == "cim"]
    assert len(on_cim) == 1


def test_same_seed_same_results_and_a_saturated_stream_is_reported():
    plat = make_platform(host_cores=1, cim_cores=1, crossbars_per_core=2)
    wl = _one_op("one", 3000)
    D = CostModel(wl, plat).latency["x"]["host"]
    sc = _scenario({"p": {"arrival": {"process": "poisson", "rate_hz": 1.5 / D}, "count": 3000}}, seed=11,
                   mapper="all-host")
    a = run_scenario(plat, sc, workloads={"p": wl})
    b = run_scenario(plat, sc, workloads={"p": wl})
    assert a.requests.equals(b.requests)
    row = a.streams.iloc[0]
    assert bool(row["saturated"]) and "offered" in row["saturation"]
    assert row["throughput_hz"] == pytest.approx(1 / D, rel=0.01)  # served at the service rate


def test_scenario_file_errors_are_one_line_with_suggestions(tmp_path):
    p = tmp_path / "s.yaml"
    p.write_text("streams:\n  a:\n    model: m.onnx\n    arival: {process: poisson, rate_hz: 1}\n    count: 3\n")
    with pytest.raises(ScenarioError, match="did you mean 'arrival'"):
        load_scenario(p)
    p.write_text("streams:\n  a:\n    model: m.onnx\n    arrival: {process: poisson, rate_hz: 1}\n")
    with pytest.raises(ScenarioError, match="count"):
        load_scenario(p)
    p.write_text("dispatch: edff\nstreams:\n  a:\n    model: m.onnx\n    arrival: {process: closed}\n"
                 "    count: 3\n")
    with pytest.raises(ScenarioError, match="did you mean 'edf'"):
        load_scenario(p)
    p.write_text("streams:\n  a:\n    model: m.onnx\n    arrival: {process: periodic, perod_s: 1}\n    count: 3\n")
    with pytest.raises(ScenarioError, match=r"streams\.a\.arrival\.perod_s: unknown field; did you mean 'period_s'"):
        load_scenario(p)
    with pytest.raises(InputError):
        run_scenario(make_platform(), tmp_path / "missing.yaml")


def test_cli_runs_a_scenario_file_and_writes_requests_csv(tmp_path, capsys):
    from conftest import run_cli

    root = Path(__file__).resolve().parents[1]
    sc = tmp_path / "sc.yaml"
    sc.write_text(f"dispatch: edf\nstreams:\n  cls:\n    model: {root / 'workloads' / 'resnet20_cifar10.onnx'}\n"
                  "    arrival: {process: poisson, rate_hz: 50}\n    deadline_s: 0.5\n    count: 6\n")
    code, out, err = run_cli(capsys, "run", str(root / "platforms" / "puma.yaml"), str(sc), "--out",
                             str(tmp_path / "out"))
    assert code == 0, err
    assert "p99" in out and "cls" in out and "energy" in out
    import pandas as pd

    req = pd.read_csv(tmp_path / "out" / "requests.csv")
    assert len(req) == 6 and (req["latency_s"] > 0).all()
    assert (tmp_path / "out" / "latency_cdf.png").stat().st_size > 0
    page = (tmp_path / "out" / "report.html").read_text()  # the scenario's own page: streams, devices, figures
    assert "<h2>Streams</h2>" in page and "<h2>Devices and links</h2>" in page and "data:image/png;base64" in page
    assert "analytic bottleneck" in page and "latency_p99_s" in page
    sc.write_text("streams:\n  cls:\n    modle: x.onnx\n")
    code, out, err = run_cli(capsys, "run", str(root / "platforms" / "puma.yaml"), str(sc))
    assert code == 2 and "did you mean 'model'" in err and "Traceback" not in err


def test_summary_is_strict_json():
    import json

    plat = make_platform(host_cores=1, cim_cores=1, crossbars_per_core=2)
    sc = _scenario({"a": {"arrival": {"process": "closed"}, "count": 3},
                    "b": {"arrival": {"process": "periodic", "period_s": 1e-3}, "deadline_s": 1.0, "count": 3}})
    r = run_scenario(plat, sc, workloads={"a": _one_op("a", 10), "b": _one_op("b", 10)})
    text = json.dumps(r.summary, allow_nan=False)  # a closed loop has no offered rate: null, not NaN
    assert json.loads(text)["streams"][0]["offered_hz"] is None


def test_the_measured_requests_are_split_per_stream_once(monkeypatch):
    """The stream table and the saturation verdicts share one split of the measured requests per stream (each had
    made its own): every frame ``_by_stream`` is given is a different set of requests."""
    import hetsim.scenario.run as run_mod

    seen = []
    split = run_mod._by_stream

    def counted(req):
        seen.append((tuple(req.index), bool(req["warmup"].all()) if len(req) else None))
        return split(req)

    monkeypatch.setattr(run_mod, "_by_stream", counted)
    plat = make_platform(host_cores=1, cim_cores=1, crossbars_per_core=2)
    sc = _scenario({"a": {"arrival": {"process": "periodic", "period_s": 1e-3}, "count": 6, "warmup": 2},
                    "b": {"arrival": {"process": "poisson", "rate_hz": 500}, "count": 6, "warmup": 1}})
    r = run_scenario(plat, sc, workloads={"a": _one_op("a", 10), "b": _one_op("b", 10)})
    assert list(r.streams["measured"]) == [4, 5]
    assert len(seen) == len(set(seen)) == 2, seen  # the measured requests and the warm-up ones, once each


def test_a_throughput_run_with_its_comparison_reads_each_file_once(tmp_path, monkeypatch):
    """The comparison mapping reuses the first mapping's workloads and offered rates: the model file is loaded
    once, the arrival trace read once for the rate and once per replay (two: the objective's and the
    comparison's), and the rate weighed is the trace's (3 arrivals over 0.2 s: 10/s)."""
    import hetsim.scenario.run as run_mod

    root = Path(__file__).resolve().parents[1]
    (tmp_path / "arrivals.csv").write_text("t\n0.0\n0.1\n0.2\n")
    sc = tmp_path / "sc.yaml"
    sc.write_text(f"objective: throughput\nmapper: heft\nstreams:\n  cls:\n    model: "
                  f"{root / 'workloads' / 'resnet20_cifar10.onnx'}\n    arrival: {{process: trace, file: arrivals.csv,"
                  " column: t}\n")
    calls = {"load": 0, "trace": 0}

    def counted(name, fn):
        def wrapped(*a, **k):
            calls[name] += 1
            return fn(*a, **k)
        return wrapped

    monkeypatch.setattr(run_mod, "_load_model", counted("load", run_mod._load_model))
    monkeypatch.setattr(run_mod, "read_trace", counted("trace", run_mod.read_trace))
    r = run_scenario(root / "platforms" / "puma.yaml", sc)
    assert r.comparison is not None and set(r.comparison["objective"]) == {"latency", "throughput"}
    assert len(r.requests) == 3
    assert r.models["cls"].rate_hz == pytest.approx(10.0)
    assert calls == {"load": 1, "trace": 3}


@pytest.mark.parametrize(("arrival", "needle"), [
    ({"process": "poisson", "rate_hz": 1e12}, "duration_s 1e+09 at rate_hz 1e+12 makes about 1e+21 requests"),
    ({"process": "periodic", "period_s": 1e-12}, "duration_s 1e+09 at period_s 1e-12 makes about 1e+21 requests"),
])
def test_a_duration_of_more_requests_than_a_stream_runs_is_refused_with_the_file(tmp_path, arrival, needle):
    """1e21 arrivals had been replayed until the machine ran out of memory (the process was killed)."""
    import yaml

    p = tmp_path / "s.yaml"
    p.write_text(yaml.safe_dump({"streams": {"a": {"model": "m.onnx", "arrival": arrival, "duration_s": 1e9}}}))
    with pytest.raises(ScenarioError, match=re.escape(f"streams.a: {needle}; a stream runs at most 10,000,000")):
        load_scenario(p)
    ok = _scenario({"a": {"arrival": arrival, "duration_s": 1e-6}})  # 1e6 requests: within the bound
    assert ok.streams["a"].duration_s == 1e-6


@pytest.mark.parametrize(("population", "think_s", "count"), [(4, 3e-3, 400), (4, 3e-3, 7), (3, 0.5e-3, 50),
                                                             (8, 0.0, 41), (1, 2e-3, 9)])
def test_a_closed_loop_runs_exactly_its_count(population, think_s, count):
    """A closed loop of ``population`` users on a 1 ms server runs ``count`` requests, indices 0..count-1, however
    many users finish within one think time (each follow-up in its think time counts toward the count)."""
    plat = make_platform(host_cores=1, cim_cores=1, crossbars_per_core=2)
    sc = _scenario({"a": {"arrival": {"process": "closed", "population": population, "think_s": think_s},
                          "count": count}}, mapper="all-host")
    r = run_scenario(plat, sc, workloads={"a": _one_op("one", 1_000_000)})  # 10^6 ns on the test host
    assert r.models["a"].makespan_s == pytest.approx(1e-3, rel=1e-12)
    assert sorted(r.requests["index"]) == list(range(count))
    assert int(r.streams.loc[0, "requests"]) == count


@pytest.mark.parametrize(("population", "think_s", "warmup"), [(4, 3e-3, 2), (4, 3e-3, 0), (8, 7e-3, 3),
                                                              (3, 0.0, 1), (5, 1e-3, 9)])
def test_a_closed_loop_that_never_queues_has_throughput_population_over_its_cycle(population, think_s, warmup):
    """N users, each request alone on its own core (S = 1 ms, the host has N cores: no request ever waits), think
    time Z: every user cycles in S + Z, so the throughput is N / (S + Z) exactly (the interactive response-time
    law with no queueing), whatever the warm-up: the warm-up requests finishing inside the window are
    completions in it, as an open stream's are."""
    plat = make_platform(host_cores=population, cim_cores=1, crossbars_per_core=2)
    sc = _scenario({"a": {"arrival": {"process": "closed", "population": population, "think_s": think_s},
                          "count": 60 * population + warmup, "warmup": warmup}}, mapper="all-host")
    r = run_scenario(plat, sc, workloads={"a": _one_op("one", 1_000_000)})
    req = r.requests
    assert (req["start_s"] == req["arrival_s"]).all()  # the station never queues
    assert r.streams.loc[0, "throughput_hz"] == pytest.approx(population / (1e-3 + think_s), rel=1e-12)


def test_a_closed_loop_that_reaches_the_request_bound_stops_with_one_line(monkeypatch):
    import hetsim.scenario.run as run_mod

    monkeypatch.setattr(run_mod, "MAX_REQUESTS", 50)
    plat = make_platform(host_cores=1, cim_cores=1, crossbars_per_core=2)
    # two users: the count is not predicted at load (their requests queue), the replay's check stops it
    sc = _scenario({"a": {"arrival": {"process": "closed", "population": 2}, "duration_s": 10.0}})
    with pytest.raises(ScenarioError, match="stream 'a' reached 50 requests before its duration_s"):
        run_scenario(plat, sc, workloads={"a": _one_op("a", 10)})


def test_a_closed_loop_of_one_user_certain_to_reach_the_bound_is_refused_before_the_replay(monkeypatch):
    """One user alone on the SoC: each request takes the alone makespan (10 ns), so 10 s make 1e9 requests, far
    past the bound; refused before any request is simulated (the replay had run to the bound first; found by
    hostile-input testing). 1e-6 s, or a think time of 1 s, stay within it and run."""
    import hetsim.scenario.run as run_mod

    def no_replay(*_a, **_k):
        raise AssertionError("replayed")

    plat = make_platform(host_cores=1, cim_cores=1, crossbars_per_core=2)
    for think, needle in [(0.0, "about 1e+09 requests"), (5e-9, "about 6.67e+08 requests")]:
        sc = _scenario({"a": {"arrival": {"process": "closed", "think_s": think}, "duration_s": 10.0}})
        with monkeypatch.context() as mp:
            mp.setattr(run_mod, "_replay", no_replay)
            with pytest.raises(ScenarioError, match=re.escape(
                    f"stream 'a', a closed loop of one user, duration_s 10 at think_s {think:g} + 1e-08 s per "
                    f"request makes {needle}; a stream runs at most 10,000,000")):
                run_scenario(plat, sc, workloads={"a": _one_op("a", 10)})
    monkeypatch.setattr(run_mod, "MAX_REQUESTS", 50)  # exact: 50 requests fit 50 x 10 ns, 60 do not (> 1 %)
    ok = run_scenario(plat, _scenario({"a": {"arrival": {"process": "closed"}, "duration_s": 5e-7}}),
                      workloads={"a": _one_op("a", 10)})
    assert len(ok.requests) == 50
    with pytest.raises(ScenarioError, match="makes about 60 requests"):
        run_scenario(plat, _scenario({"a": {"arrival": {"process": "closed"}, "duration_s": 6e-7}}),
                     workloads={"a": _one_op("a", 10)})


@pytest.mark.parametrize("population", [1, 2])
def test_the_request_cap_refusal_names_the_scenario_file(tmp_path, monkeypatch, capsys, population):
    """``hetsim run PLATFORM SCENARIO.yaml``: the closed loop's refusal at run time (predicted for one user, by
    the replay's own check for two) starts with the file the user gave, as the file's load-time errors do; one
    line, exit code 2."""
    import yaml

    import hetsim.scenario.run as run_mod
    from hetsim.cli import main

    root = Path(__file__).resolve().parents[1]
    if population == 2:  # the replay's check: reached at 50 requests, not millions
        monkeypatch.setattr(run_mod, "MAX_REQUESTS", 50)
    p = tmp_path / "loop.yaml"
    p.write_text(yaml.safe_dump({"name": "loop", "mapper": "heft", "streams": {"r": {
        "model": str(root / "workloads/resnet20_cifar10.onnx"),
        "arrival": {"process": "closed", "population": population}, "duration_s": 100000.0}}}))
    assert main(["run", str(root / "platforms/puma.yaml"), str(p)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith(f"hetsim: error: {p}: stream 'r', a closed loop of one user, duration_s 100000" if
                          population == 1 else f"hetsim: error: {p}: stream 'r' reached 50 requests"), err


def test_a_jitter_above_the_period_is_refused():
    """Arrivals drawn out of order had arrived with the previous one (the replay's clock does not go back)."""
    with pytest.raises(ValueError, match=r"jitter_s \(0.2\) above period_s \(0.1\)"):
        _scenario({"a": {"arrival": {"process": "periodic", "period_s": 0.1, "jitter_s": 0.2}, "count": 5}})
    assert _scenario({"a": {"arrival": {"process": "periodic", "period_s": 0.1, "jitter_s": 0.1}, "count": 5}})
