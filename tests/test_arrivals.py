"""Arrival processes are plug-ins (hetsim/scenario/arrivals/): a process defined here, outside hetsim, is
registered, read from a scenario file and replayed, its arrival times and latencies worked out by hand; the
built-in processes' hooks on hand-worked cases; the generic scenario code names no process."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
import pytest
from conftest import host_op, make_platform
from pydantic import Field

from hetsim.devices.fields import Real, StrictInteger
from hetsim.scenario.arrivals import (
    ARRIVALS,
    ArrivalInputs,
    ArrivalProcess,
    Closed,
    Periodic,
    Poisson,
    TraceArrivals,
    register_arrival,
    unregister_arrival,
)
from hetsim.scenario.run import run_scenario
from hetsim.scenario.spec import Scenario, ScenarioError, load_scenario
from hetsim.workload import Workload

ROOT = Path(__file__).resolve().parents[1]


class Burst(ArrivalProcess):
    """``k`` requests at once every ``period_s``, the first burst at 0 (a throw-away process of this test)."""

    process: Literal["burst"] = "burst"
    k: StrictInteger = Field(ge=1, le=1000)
    period_s: Real = Field(gt=0)

    def times(self, inputs: ArrivalInputs) -> Iterator[float]:
        i = 0
        while True:
            for _ in range(self.k):
                yield i * self.period_s
            i += 1

    def nominal_rate(self, inputs: ArrivalInputs, costs: Any) -> float:
        return self.k / self.period_s


@pytest.fixture
def burst():
    register_arrival(Burst)
    try:
        yield Burst
    finally:
        unregister_arrival("burst")


def _one_op() -> Workload:
    return Workload.from_ops("one", [host_op("x", 10)], [])


def test_a_process_added_from_outside_runs_with_the_arrival_times_and_latencies_worked_by_hand(burst):
    """Bursts of 3 every 1 ms on one single-core host, a one-op model of service time ``t`` (far below 1 ms): the
    arrivals are 0, 0, 0, 1 ms, 1 ms, 1 ms, 2 ms (count 7); a burst's requests are served one after another
    (FIFO), so their latencies are t, 2t, 3t; the offered rate 6 arrivals in [0, 2 ms) is 3000/s, the nominal
    rate k / period_s."""
    plat = make_platform(host_cores=1, cim_cores=1, crossbars_per_core=4)
    sc = Scenario.model_validate({"streams": {"b": {"model": "unused.onnx", "count": 7,
                                                    "arrival": {"process": "burst", "k": 3, "period_s": 1e-3}}}})
    r = run_scenario(plat, sc, workloads={"b": _one_op()})
    req = r.requests.sort_values("index")
    assert req["arrival_s"].tolist() == [0.0, 0.0, 0.0, 1e-3, 1e-3, 1e-3, 2e-3]
    t = r.models["b"].makespan_s
    assert 0 < 3 * t < 1e-3
    assert np.allclose(req["latency_s"], [t, 2 * t, 3 * t, t, 2 * t, 3 * t, t], rtol=1e-9, atol=0)
    assert r.models["b"].rate_hz == pytest.approx(3000.0)
    row = r.streams.iloc[0]
    assert row["arrival"] == "burst" and row["offered_hz"] == pytest.approx(3000.0)
    assert not row["saturated"]
    # duration_s cuts it strictly before 2 ms: the first two bursts
    sc2 = sc.model_copy(update={"streams": {"b": sc.streams["b"].model_copy(update={"count": None,
                                                                                     "duration_s": 2e-3})}})
    r2 = run_scenario(plat, sc2, workloads={"b": _one_op()})
    assert sorted(r2.requests["arrival_s"]) == [0.0, 0.0, 0.0, 1e-3, 1e-3, 1e-3]


def test_a_process_added_from_outside_is_read_from_a_file_and_named_in_its_errors(burst, tmp_path):
    p = tmp_path / "s.yaml"
    p.write_text("streams:\n  b:\n    model: m.onnx\n    arrival: {process: burst, k: 2, period_s: 0.5}\n"
                 "    count: 4\n")
    sc, _ = load_scenario(p)
    assert sc.streams["b"].arrival == Burst(k=2, period_s=0.5)
    p.write_text("streams:\n  b:\n    model: m.onnx\n    arrival: {process: brust, k: 2}\n    count: 4\n")
    with pytest.raises(ScenarioError, match=re.escape("streams.b.arrival: unknown process 'brust'; did you mean "
                                                      "'burst'? Allowed: periodic, poisson, trace, closed, burst")):
        load_scenario(p)
    p.write_text("streams:\n  b:\n    model: m.onnx\n    arrival: {process: burst, k: 0, period_s: 1}\n"
                 "    count: 4\n")
    with pytest.raises(ScenarioError, match=re.escape("streams.b.arrival.k: ")):
        load_scenario(p)


def test_an_unregistered_process_is_refused_again(tmp_path):
    register_arrival(Burst)
    unregister_arrival("burst")
    p = tmp_path / "s.yaml"
    p.write_text("streams:\n  b:\n    model: m.onnx\n    arrival: {process: burst, k: 2, period_s: 0.5}\n"
                 "    count: 4\n")
    with pytest.raises(ScenarioError, match=re.escape("unknown process 'burst'; allowed: periodic, poisson, "
                                                      "trace, closed")):
        load_scenario(p)


def test_the_registry_refuses_what_is_not_a_process_and_a_name_taken():
    with pytest.raises(TypeError, match="must subclass"):
        register_arrival(dict)

    class Other(Burst):
        process: Literal["periodic"] = "periodic"

    with pytest.raises(ValueError, match="'periodic' is already registered by Periodic"):
        register_arrival(Other)
    assert ARRIVALS["periodic"] is Periodic
    assert list(ARRIVALS)[:4] == ["periodic", "poisson", "trace", "closed"]


def _inputs(count=None, duration_s=None, files=None, seed=0) -> ArrivalInputs:
    return ArrivalInputs(np.random.default_rng(seed), lambda f, c: (files or {})[(f, c)], count, duration_s)


def test_the_built_in_processes_answer_by_hand():
    # periodic: offset + i period; 3 x 0.3 = 0.8999999999999999 counts as at 0.9, so duration 0.9 keeps 3
    assert list(Periodic(period_s=2.0, offset_s=0.5).arrivals(_inputs(count=3))) == [0.5, 2.5, 4.5]
    assert len(list(Periodic(period_s=0.3).arrivals(_inputs(duration_s=0.9)))) == 3
    assert Periodic(period_s=0.25).nominal_rate(_inputs(), None) == 4.0
    assert Periodic(period_s=0.5, offset_s=1.0).size(10.0).requests == 19.0  # (10 - 1) / 0.5 + 1
    # jitter: each arrival moved by the stream generator's uniform draw in [0, jitter_s)
    u = np.random.default_rng(3).uniform(0, 0.1, size=2)
    got = list(Periodic(period_s=1.0, jitter_s=0.1).arrivals(_inputs(count=2, seed=3)))
    assert got == [0.0 + u[0], 1.0 + u[1]]
    # poisson: running sums of the generator's exponential draws
    e = np.random.default_rng(5).exponential(0.5, size=3)
    got = list(Poisson(rate_hz=2.0).arrivals(_inputs(count=3, seed=5)))
    assert got == [e[0], e[0] + e[1], e[0] + e[1] + e[2]]
    assert Poisson(rate_hz=5.0).size(2.0).requests == 10.0
    # trace: the file's times (read through the scenario's reader); rate 2 arrivals before the last over 0.4 s
    tr = TraceArrivals(file="a.csv", column="t")
    files = {("a.csv", "t"): [0.1, 0.3, 0.5]}
    assert list(tr.arrivals(_inputs(files=files))) == [0.1, 0.3, 0.5]
    assert tr.nominal_rate(_inputs(files=files), None) == pytest.approx(2 / 0.4)
    assert tr.nominal_rate(_inputs(files={("a.csv", "t"): [0.2, 0.2]}), None) is None
    assert tr.files() == {"trace": "a.csv"} and tr.ends_itself and tr.size(1.0) is None
    # closed: its population at 0, one more think_s after each finish; one user alone: duration / (think + alone)
    cl = Closed(population=3, think_s=0.25)
    assert list(cl.arrivals(_inputs(count=2))) == [0.0, 0.0]
    assert cl.follow_up_s() == 0.25 and cl.closed_loop
    assert cl.size(1.0, alone_s=0.25) is None  # three users queue: not known in advance
    one = Closed(think_s=0.1)
    assert one.size(1.0) is None and one.size(1.0, alone_s=0.4).requests == pytest.approx(2.0)
    assert one.size(1.0, alone_s=0.0).why.endswith("makes about 10 requests")
    assert Closed(think_s=0.0).size(1.0, alone_s=0.0).requests == float("inf")
    assert (one.no_rate_note(), cl.no_rate_note()) == ("closed loop, 1 user", "closed loop, 3 users")
    assert cl.never_saturated() == "closed loop: at most 3 in flight"
    assert Periodic(period_s=1.0).never_saturated() is None and not Periodic(period_s=1.0).no_rate_note()


def test_the_generic_scenario_code_names_no_process():
    """Outside hetsim/scenario/arrivals/, nothing compares a process's name or reads a process's own fields (a
    scenario file's path, ``streams.NAME.arrival.rate_hz`` in a sweep's docs, is not a read)."""
    name = re.compile(r"[\"'](periodic|poisson|closed)[\"']|\.process\s*(==|!=|in\b)|process\s*(==|!=)\s*[\"']")
    own = "period_s|offset_s|jitter_s|rate_hz|file|column|think_s|population"
    fields = re.compile(rf"[\w.<>]*\barrival\.(\w+\.)?({own})\b")
    hits = []
    for p in sorted((ROOT / "hetsim").rglob("*.py")):
        if (ROOT / "hetsim" / "scenario" / "arrivals") in p.parents:
            continue
        for i, line in enumerate(p.read_text().splitlines(), start=1):
            reads = [m for m in fields.finditer(line) if not m.group(0).startswith("streams.")]
            if name.search(line) or reads:
                hits.append(f"{p.relative_to(ROOT)}:{i}: {line.strip()}")
    assert hits == [], "\n".join(hits)


PLUGIN = '''
from typing import Literal

from hetsim.scenario.arrivals import ArrivalProcess, register_arrival


@register_arrival
class Pair(ArrivalProcess):
    """Two requests at once every period_s."""

    process: Literal["pair"] = "pair"
    period_s: float

    def times(self, inputs):
        i = 0
        while True:
            yield i * self.period_s
            yield i * self.period_s
            i += 1

    def nominal_rate(self, inputs, costs):
        return 2 / self.period_s
'''


def test_a_process_from_a_plugin_runs_on_the_command_line(tmp_path):
    """A plugin module (HETSIM_PLUGINS) registers a process; ``hetsim run`` replays a scenario naming it: arrivals
    0, 0, 0.5, 0.5 s (count 4). Without the plugin the file is refused in one line, exit code 2."""
    (tmp_path / "pair_plugin.py").write_text(PLUGIN)
    (tmp_path / "s.yaml").write_text(f"streams:\n  p:\n    model: {ROOT / 'workloads' / 'resnet20_cifar10.onnx'}\n"
                                     "    arrival: {process: pair, period_s: 0.5}\n    count: 4\n")
    env = {k: v for k, v in os.environ.items() if k != "HETSIM_PLUGINS"}

    def run(*args, plugin):
        e = {**env, "HETSIM_PLUGINS": "pair_plugin"} if plugin else env
        e["PYTHONPATH"] = os.pathsep.join([str(tmp_path), e.get("PYTHONPATH", "")])
        return subprocess.run([sys.executable, "-m", "hetsim", "run", str(ROOT / "platforms" / "puma.yaml"),
                               "s.yaml", *args], cwd=tmp_path, env=e, capture_output=True, text=True, timeout=300)

    out = run("--out", "o", plugin=True)
    assert out.returncode == 0, out.stderr
    req = pd.read_csv(tmp_path / "o" / "requests.csv").sort_values("index")
    assert req["arrival_s"].tolist() == [0.0, 0.0, 0.5, 0.5]
    missing = run(plugin=False)
    assert missing.returncode == 2 and "unknown process 'pair'" in missing.stderr, missing.stderr
    assert "Traceback" not in missing.stderr
