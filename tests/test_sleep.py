"""A device's sleep state in the scenario replay: hand-worked latencies and energies of two requests
separated by more (and less) than the idle timeout; no sleep config, the same numbers as before."""

from __future__ import annotations

import pytest
from conftest import host_op, make_platform

from hetsim.errors import InputError
from hetsim.platform import Platform
from hetsim.scenario.run import run_scenario
from hetsim.scenario.spec import Scenario
from hetsim.workload import Workload

SLEEP = {"power_w": 0.1, "wake_latency_s": 2e-6, "idle_timeout_s": 10e-6}


def _run(period_s: float, sleep: dict | None):
    plat = make_platform(host_cores=1, host_extra={"sleep": sleep} if sleep else None)
    wl = Workload.from_ops("one", [host_op("x", 3000)], [])  # 3 us on the test host (1 element/ns)
    sc = Scenario.model_validate({"streams": {"s": {"model": "x.onnx", "arrival": {
        "process": "periodic", "period_s": period_s}, "count": 2}}, "mapper": "all-host"})
    return run_scenario(plat, sc, workloads={"s": wl})


def test_a_request_that_finds_the_host_asleep_pays_the_wake_up():
    """Requests at 0 and 20 us, 3 us each; the host sleeps 10 us after its last op. The first runs 0-3 us (the
    host starts awake); the host falls asleep at 13 us; the second arrives at 20 us, waits 2 us for the wake-up,
    runs 22-25 us. Host energy: active 2 W x (3 + 3 + 2) us, idle 1 W x (25 - 7 - 6 - 2) us, asleep 0.1 W x 7 us."""
    r = _run(20e-6, SLEEP)
    lat = r.requests["latency_s"].to_numpy()
    assert lat[0] == pytest.approx(3e-6, rel=1e-12) and lat[1] == pytest.approx(5e-6, rel=1e-12)
    assert r.summary["simulated_s"] == pytest.approx(25e-6, rel=1e-12)
    host = r.devices.set_index("device").loc["host"]
    assert host["sleep_s"] == pytest.approx(7e-6, rel=1e-9) and host["wakes"] == 1
    assert host["active_j"] == pytest.approx(2 * 8e-6, rel=1e-9)
    assert host["idle_j"] == pytest.approx(1 * 10e-6, rel=1e-9)
    assert host["sleep_j"] == pytest.approx(0.1 * 7e-6, rel=1e-9)
    assert host["energy_j"] == pytest.approx(16e-6 + 10e-6 + 0.7e-6, rel=1e-9)


def test_no_sleep_within_the_timeout_and_no_config_changes_nothing():
    """Second request at 12 us: the host was idle 9 us < 10 us, so it is awake: every number as without a sleep
    config (whose device table has no sleep columns)."""
    a, b = _run(12e-6, SLEEP), _run(12e-6, None)
    assert a.requests.equals(b.requests)
    host = a.devices.set_index("device").loc["host"]
    assert host["wakes"] == 0 and host["sleep_s"] == 0.0
    common = [c for c in b.devices.columns]
    assert a.devices[common].equals(b.devices)
    assert "sleep_s" not in b.devices.columns
    # without a config the second request at 20 us runs at once, the host idles through the gap
    c = _run(20e-6, None)
    assert c.requests["latency_s"].to_numpy()[1] == pytest.approx(3e-6, rel=1e-12)
    assert c.devices.set_index("device").loc["host", "idle_j"] == pytest.approx(1 * (23e-6 - 6e-6), rel=1e-9)


def test_sleep_only_on_serial_devices():
    base = make_platform().model_dump()
    base["devices"]["cim"]["sleep"] = SLEEP
    with pytest.raises(ValueError, match="only a serial device"):
        Platform.model_validate(base)
    base["devices"]["cim"]["sleep"] = None
    base["devices"]["host"]["sleep"] = {"power_w": 0.1, "wake_latency_s": 1e-6}
    with pytest.raises((ValueError, InputError), match="idle_timeout_s"):
        Platform.model_validate(base)


def _replay_streamed(sleep: dict | None, gap_s: float):
    """Two requests, ``gap_s`` apart, of a workload with a streamed layer on the NPU of cim-npu-dram (not
    double-buffered: its weight read is a trace row of its own) and a reprogrammed layer on the CIM, both
    reading the DRAM at once; ``memory`` contention on, so the two reads take turns on the DRAM's port."""
    import simpy
    from conftest import PLATFORMS, conv_op

    from hetsim.costs import CostModel
    from hetsim.platform import load_platform
    from hetsim.schedule import Schedule
    from hetsim.sim.dispatch import get_dispatch
    from hetsim.sim.engine import Hardware, Plan, Request
    from hetsim.sim.sleep import SleepState

    over = {"devices.npu.double_buffered_weights": False}
    if sleep is not None:
        over["devices.npu.sleep"] = sleep
    plat = load_platform(PLATFORMS / "cim-npu-dram.yaml").with_overrides(over)
    ops = [conv_op("a", 256, 256, 100, n_in=1000, n_out=1000), conv_op("b", 256, 256, 100, n_in=1000,
                                                                           n_out=1000, index=1)]
    costs = CostModel(Workload.from_ops("two", ops, []), plat)
    sched = Schedule("two", {"a": "npu", "b": "cim"}, policies={"a": "streamed", "b": "reprogrammed"})
    plan = Plan(costs, sched, frozenset({"memory"}))
    env = simpy.Environment()
    hw = Hardware(env, plan.costs, plan.contention, get_dispatch(None))
    hw.exclusive_ops = True
    if sleep is not None:
        hw.sleep = {"npu": SleepState(sleep["idle_timeout_s"], sleep["wake_latency_s"])}
    reqs = [Request(plan, hw, arrival_s=i * gap_s, seq=i) for i in range(2)]
    reqs[0].start_all()
    env.timeout(gap_s).callbacks.append(lambda _e: reqs[1].start_all())
    env.run()
    return plan, reqs


def test_a_streamed_op_on_a_device_that_sleeps_still_reads_its_weights():
    """A device with a sleep state runs a streamed op as one without: the read (a ``weights`` row, over the
    memory's port) and then the compute, after the wake-up if the device slept. Awake (the timeout never
    passes), every row and time equals the replay without a sleep config; asleep, the second request's op starts
    after the wake-up and its weights row is then exactly the read time. Regression: the sleep path ran the op's
    whole latency as one compute row, never taking the DRAM's port (the CIM's read was not delayed by it)."""
    plan0, base = _replay_streamed(None, 1e-3)
    step = plan0.steps["a"]
    assert step.policy == "streamed" and not step.overlapped and step.nbytes == 256 * 256
    awake = {"power_w": 0.001, "wake_latency_s": 5e-6, "idle_timeout_s": 1.0}
    _, got = _replay_streamed(awake, 1e-3)
    for r0, r1 in zip(base, got, strict=True):
        assert r1.rows == r0.rows and r1.start == r0.start and r1.finish == r0.finish
    # the test's premise: the DRAM's port serves the NPU's read first, so the CIM's read waits for it
    b = plan0.steps["b"]
    program = next(r for r in base[0].rows if r[0] == "b" and r[3] == "program")
    assert program[5] == pytest.approx(step.read_s + b.read_s + b.write_s, rel=1e-12)
    a_rows = [r for r in got[0].rows if r[0] == "a" and r[2] != "memory"]  # the NPU's rows (not the port's)
    assert [r[3] for r in a_rows] == ["weights", ""]
    assert a_rows[0][5] - a_rows[0][4] >= step.read_s * (1 - 1e-12)
    # asleep: the second request (1 ms later, the timeout 10 us) waits 5 us for the wake-up, then reads, computes
    slept = {"power_w": 0.001, "wake_latency_s": 5e-6, "idle_timeout_s": 10e-6}
    _, got = _replay_streamed(slept, 1e-3)
    second = {r[3]: r for r in got[1].rows if r[0] == "a" and r[2] != "memory"}
    assert set(second) == {"weights", ""}
    assert got[1].start["a"] == pytest.approx(1e-3 + 5e-6, rel=1e-12)
    assert second[""][5] - got[1].start["a"] >= step.latency_s * (1 - 1e-12)
