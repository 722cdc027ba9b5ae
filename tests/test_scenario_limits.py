"""How big a scenario may be: its work (requests x (ops + 1), summed over streams) estimated and refused before
any mapping or replay, ``--max-ops`` / ``max_ops`` lifting the bound, and a trace of more rows than a stream runs
refused while it is read. Each test counts the work by hand (ResNet-20: 52 ops; the one-op test models: 1)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import assert_input_error, host_op, make_platform, run_cli

import hetsim.scenario.run as run_mod
from hetsim.scenario.run import run_scenario
from hetsim.scenario.spec import MAX_OPS, Scenario, ScenarioError, max_ops
from hetsim.workload import Workload

ROOT = Path(__file__).resolve().parents[1]
PUMA = ROOT / "platforms" / "puma.yaml"
RESNET20 = ROOT / "workloads" / "resnet20_cifar10.onnx"


def _no_work(monkeypatch):
    """Mapping or replaying after the refusal fails the test (the check comes before both)."""
    def fail(*_a, **_k):
        raise AssertionError("mapped or replayed")

    for step in ("_replay", "_with_memory_left", "map_throughput"):  # the replay, and each objective's mapping
        monkeypatch.setattr(run_mod, step, fail)


def _file(tmp_path: Path, body: str) -> Path:
    p = tmp_path / "big.yaml"
    p.write_text(f"name: big\nstreams:\n  a:\n    model: {RESNET20}\n{body}")
    return p


def _one_op(name: str) -> Workload:
    return Workload.from_ops(name, [host_op("x", 10)], [])


def _scenario(streams: dict) -> Scenario:
    return Scenario.model_validate({"streams": {n: {"model": "unused.onnx", **s} for n, s in streams.items()},
                                    "mapper": "all-host", "name": "s"})


def test_the_documented_maximum_count_is_refused_in_one_line_before_any_work(tmp_path, capsys, monkeypatch):
    """``count: 10000000`` of ResNet-20 (52 ops): 1e7 x 53 = 5.3e8 simulated ops, past the 1e7 bound; it had
    run for tens of minutes. Refused in one line, exit 2, nothing mapped or replayed."""
    assert len(run_mod._load_model(RESNET20)) == 52
    p = _file(tmp_path, "    arrival: {process: periodic, period_s: 0.05}\n    count: 10000000\n")
    _no_work(monkeypatch)
    code, _, err = run_cli(capsys, "run", PUMA, p)
    assert_input_error(code, err, f"{p}: about 5.3e+08 simulated ops, requests x (ops + 1) (stream 'a': count "
                       "10,000,000 x 53); hetsim replays at most 10,000,000 in one scenario",
                       "--max-ops N")
    assert len(err.strip().splitlines()) == 1, err


def test_max_ops_lifts_the_bound_at_its_exact_value(tmp_path, capsys):
    """3 requests of ResNet-20: 3 x 53 = 159 simulated ops; ``--max-ops 158`` refuses, 159 runs."""
    p = _file(tmp_path, "    arrival: {process: periodic, period_s: 0.05}\n    count: 3\n")
    code, _, err = run_cli(capsys, "run", PUMA, p, "--max-ops", "158")
    assert_input_error(code, err, "about 159 simulated ops", "at most 158")
    code, out, err = run_cli(capsys, "run", PUMA, p, "--max-ops", "159")
    assert code == 0, err
    code, _, err = run_cli(capsys, "run", PUMA, RESNET20, "--max-ops", "159")
    assert_input_error(code, err, "--max-ops applies to scenarios")


@pytest.mark.parametrize(("stream", "work", "why"), [
    ({"arrival": {"process": "periodic", "period_s": 1e-3}, "count": 50}, 100, "count 50"),
    # the expected number of a Poisson stream: 0.5 s x 120 /s = 60 requests
    ({"arrival": {"process": "poisson", "rate_hz": 120}, "duration_s": 0.5}, 120,
     "duration_s 0.5 at rate_hz 120 makes about 60 requests"),
    # (0.0995 - 0) / 0.001 + 1 = 100.5 periodic arrivals
    ({"arrival": {"process": "periodic", "period_s": 1e-3}, "duration_s": 0.0995}, 201,
     "duration_s 0.0995 at period_s 0.001 makes about 100 requests"),
])
def test_max_ops_in_python_and_the_estimate_of_each_process(monkeypatch, stream, work, why):
    """One-op models (2 simulated ops per request): the bound at ``work - 1`` refuses before any mapping, naming
    what makes the requests; at ``work`` it runs."""
    plat = make_platform(host_cores=1, cim_cores=1, crossbars_per_core=2)
    sc = _scenario({"a": stream})
    with monkeypatch.context() as mp:
        _no_work(mp)
        with max_ops(work - 1), pytest.raises(ScenarioError, match=re.escape(f"(stream 'a': {why} x 2)")):
            run_scenario(plat, sc, workloads={"a": _one_op("a")})
    with max_ops(work):
        r = run_scenario(plat, sc, workloads={"a": _one_op("a")})
    assert len(r.requests) > 0
    with pytest.raises(Exception, match="--max-ops must be a positive integer"), max_ops(0):
        pass


def test_the_streams_add_up(monkeypatch):
    """Two streams: 30 x 2 + 20 x 2 = 100 simulated ops; 99 refuses, naming both."""
    plat = make_platform(host_cores=1, cim_cores=1, crossbars_per_core=2)
    sc = _scenario({"a": {"arrival": {"process": "periodic", "period_s": 1e-3}, "count": 30},
                    "b": {"arrival": {"process": "periodic", "period_s": 1e-3}, "count": 20}})
    wls = {"a": _one_op("a"), "b": _one_op("b")}
    _no_work(monkeypatch)
    with max_ops(99), pytest.raises(ScenarioError, match=re.escape(
            "about 100 simulated ops, requests x (ops + 1) (stream 'a': count 30 x 2; stream 'b': count 20 x 2)")):
        run_scenario(plat, sc, workloads=wls)


def test_a_trace_stream_counts_its_arrivals_reading_the_file_once(tmp_path, monkeypatch):
    """A trace of 40 arrivals (one-op model): 80 simulated ops; 79 refuses, the file read once (for the count
    and the rate), nothing mapped; ``count: 10`` cuts it to 20."""
    (tmp_path / "t.csv").write_text("t\n" + "".join(f"{i * 1e-3}\n" for i in range(40)))
    plat = make_platform(host_cores=1, cim_cores=1, crossbars_per_core=2)
    reads = []
    read = run_mod.read_trace
    monkeypatch.setattr(run_mod, "read_trace", lambda *a: reads.append(a) or read(*a))
    with monkeypatch.context() as mp:
        _no_work(mp)
        with max_ops(79), pytest.raises(ScenarioError, match=re.escape("(stream 'a': 40 arrivals of t.csv x 2)")):
            run_scenario(plat, _scenario({"a": {"arrival": {"process": "trace", "file": "t.csv", "column": "t"}}}),
                         folder=tmp_path, workloads={"a": _one_op("a")})
        assert len(reads) == 1
        with max_ops(19), pytest.raises(ScenarioError, match=re.escape("(stream 'a': 10 arrivals of t.csv x 2)")):
            run_scenario(plat, _scenario({"a": {"arrival": {"process": "trace", "file": "t.csv", "column": "t"},
                                                "count": 10}}), folder=tmp_path, workloads={"a": _one_op("a")})
    with max_ops(80):
        r = run_scenario(plat, _scenario({"a": {"arrival": {"process": "trace", "file": "t.csv", "column": "t"}}}),
                         folder=tmp_path, workloads={"a": _one_op("a")})
    assert len(r.requests) == 40


@pytest.mark.parametrize("header", ["t\n", ""])
def test_a_trace_longer_than_a_stream_runs_is_refused_while_it_is_read(tmp_path, monkeypatch, header):
    """With the cap at 5 requests: 5 rows are read, 6 rows refused before any time is parsed (the sixth row is
    not a number: its parse error would otherwise come first) and before any replay (it had been refused only
    after simulating the cap's requests)."""
    import hetsim.scenario.spec as spec_mod

    monkeypatch.setattr(spec_mod, "MAX_REQUESTS", 5)
    ok, long = tmp_path / "ok.csv", tmp_path / "long.csv"
    ok.write_text(header + "0\n0.1\n0.2\n0.3\n0.4\n")
    long.write_text(header + "0\n0.1\n0.2\n0.3\n0.4\nnot a time\n")
    assert spec_mod.read_trace(ok, "t") == [0, 0.1, 0.2, 0.3, 0.4]
    with pytest.raises(ScenarioError, match=re.escape(f"{long}: 6 arrival rows; a stream runs at most 5 requests")):
        spec_mod.read_trace(long, "t")
    _no_work(monkeypatch)
    plat = make_platform(host_cores=1, cim_cores=1, crossbars_per_core=2)
    with pytest.raises(ScenarioError, match="6 arrival rows"):
        run_scenario(plat, _scenario({"a": {"arrival": {"process": "trace", "file": "long.csv", "column": "t"}}}),
                     folder=tmp_path, workloads={"a": _one_op("a")})


def test_a_closed_loop_of_one_user_is_held_to_the_bound_once_its_count_is_known(monkeypatch):
    """One user alone, 10 ns per request (a one-op model on the test host), duration 5e-7 s: 50 requests
    (known after the mapping, from the request's latency), 100 simulated ops; 99 refuses before the replay."""
    plat = make_platform(host_cores=1, cim_cores=1, crossbars_per_core=2)
    sc = _scenario({"a": {"arrival": {"process": "closed"}, "duration_s": 5e-7}})
    wl = Workload.from_ops("a", [host_op("x", 10)], [])

    def no_replay(*_a, **_k):
        raise AssertionError("replayed")

    with monkeypatch.context() as mp:
        mp.setattr(run_mod, "_replay", no_replay)
        with max_ops(99), pytest.raises(ScenarioError, match=re.escape(
                "stream 'a': a closed loop of one user, duration_s 5e-07 at think_s 0 + 1e-08 s per request makes "
                "about 50 requests x 2)")):
            run_scenario(plat, sc, workloads={"a": wl})
    with max_ops(100):
        assert len(run_scenario(plat, sc, workloads={"a": wl}).requests) == 50


def test_the_shipped_scenarios_are_far_within_the_default_bound():
    """Their work by hand: camera 150 x 264 + 50 x 304 = 54,800; two-models (poisson 4/s and periodic 0.1 s over
    30 s) 120 x 141 + 301 x 304 = 108,424; both under 2 % of :data:`MAX_OPS`."""
    from hetsim.scenario.spec import load_scenario

    assert MAX_OPS == 10_000_000
    for name, want in [("camera-cim-npu", 150 * 264 + 50 * 304), ("two-models-puma", 120 * 141 + 301 * 304)]:
        sc, folder = load_scenario(ROOT / "scenarios" / f"{name}.yaml")
        total = 0.0
        for st in sc.streams.values():
            n = st.arrival.requests(run_mod._inputs(st, folder, None))
            total += n.requests * (len(run_mod._load_model((folder / st.model).resolve())) + 1)
        assert total == pytest.approx(want, rel=1e-9)
        assert total < 0.02 * MAX_OPS
