"""A device's sleep state in the scenario replay (issue 23): hand-worked latencies and energies of two requests
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
