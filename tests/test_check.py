"""The one checker: a schedule that does not fit its platform is refused before every replay, with one line."""

from __future__ import annotations

import json

import pytest
from conftest import PLATFORMS, assert_input_error, run_cli

from hetsim.check import check_schedule, fit_violations, made_for_violations, require_feasible
from hetsim.costs import CostModel
from hetsim.errors import ScheduleError
from hetsim.mappers import get_mapper
from hetsim.pipeline import run
from hetsim.platform import load_platform
from hetsim.schedule import Part, Schedule
from hetsim.sim import simulate


@pytest.fixture(scope="module")
def greedy(yolov5n_costs):
    return get_mapper("greedy").map(yolov5n_costs)


def test_greedy_schedule_refused_on_a_smaller_crossbar_budget(yolov5n_costs, greedy):
    used = sum(yolov5n_costs.need[v]["cim"] for v, d in greedy.assignment.items() if d == "cim")
    assert used == 94  # the greedy offload set of YOLOv5n at 100 crossbars
    small = CostModel(yolov5n_costs.workload, yolov5n_costs.platform.with_overrides({"devices.cim.crossbars": 50}))
    assert fit_violations(small, greedy) == ["cim: 94 crossbars used, 50 available (CPU-CIM ILP, Eq. 14)"]
    with pytest.raises(ScheduleError, match="94 crossbars used, 50 available"):
        simulate(small, greedy)
    with pytest.raises(ScheduleError, match=r"made for platform 'puma-arm', not 'puma-arm with "
                                            r"devices.cim.crossbars=50'"):
        run(small.platform, small.workload, schedule=greedy)  # another platform: refused before the fit
    same_name = small.platform.with_overrides({}, name="puma-arm")  # edited, name kept: the fit check refuses it
    with pytest.raises(ScheduleError, match="94 crossbars used, 50 available"):
        run(same_name, small.workload, schedule=greedy)
    assert not check_schedule(small, greedy).ok
    require_feasible(yolov5n_costs, greedy)  # fits where it was made


def test_cli_replay_of_a_schedule_that_does_not_fit_exits_2(yolov5n_costs, greedy, tmp_path, capsys):
    s = tmp_path / "s.json"
    s.write_text(greedy.to_json())
    text = (PLATFORMS / "puma.yaml").read_text().replace("crossbars: 100 ", "crossbars: 50 ")
    assert "crossbars: 50 " in text
    plat = tmp_path / "puma50.yaml"
    plat.write_text(text)
    code, _, err = run_cli(capsys, "run", plat, yolov5n_costs.workload.source, "--schedule", s)
    assert_input_error(code, err, "does not fit platform", "94 crossbars used, 50 available")


def test_a_schedule_for_another_platform_is_refused_in_one_line(yolov5n_costs, greedy, tmp_path, capsys):
    s = tmp_path / "s.json"
    s.write_text(greedy.to_json())  # made for puma-arm (platforms/puma.yaml)
    model = yolov5n_costs.workload.source
    for cmd in ("run", "validate"):
        code, _, err = run_cli(capsys, cmd, PLATFORMS / "cim-npu.yaml", model, "--schedule", s)
        assert_input_error(code, err, "this schedule was made for platform 'puma-arm', not 'cim-npu'")
        # the same file changed by --set is another platform too (its name lists the overrides)
        code, _, err = run_cli(capsys, cmd, PLATFORMS / "puma.yaml", model, "--schedule", s,
                               "--set", "devices.cim.crossbars=200")
        assert_input_error(code, err, "made for platform 'puma-arm', not 'puma-arm with devices.cim.crossbars=200'")
    code, out, err = run_cli(capsys, "validate", PLATFORMS / "puma.yaml", model, "--schedule", s)
    assert code == 0 and "valid" in out, err  # and it still replays where it was made


def test_a_schedule_without_a_platform_name_is_checked_device_by_device(yolov5n_costs, greedy):
    cim = next(v for v, d in greedy.assignment.items() if d == "cim")
    for platform in ("puma-arm", None):
        bad = Schedule.from_dict({**greedy.to_dict(), "platform": platform})
        bad.parts[cim] = [Part("xpu")]
        with pytest.raises(ScheduleError, match=r"uses device 'xpu', which platform 'puma-arm' does not have "
                                                r"\(devices: host, cim\)"):
            run(yolov5n_costs.platform, yolov5n_costs.workload, schedule=bad)
        assert made_for_violations(yolov5n_costs, bad)
    nameless = Schedule.from_dict({**greedy.to_dict(), "platform": None})
    assert made_for_violations(yolov5n_costs, nameless) == []  # a what-if on purpose: the fit check decides
    other = CostModel(yolov5n_costs.workload, load_platform(PLATFORMS / "cim-npu.yaml"))
    assert made_for_violations(other, nameless) == []  # cim-npu has a host and a cim too
    assert made_for_violations(other, greedy)[0].startswith(
        "this schedule was made for platform 'puma-arm', not 'cim-npu' (to replay it on this platform on purpose")
    wrong = Schedule.from_dict({**greedy.to_dict(), "workload": "resnet"})
    assert made_for_violations(yolov5n_costs, wrong) == [
        f"this schedule was made for workload 'resnet', not {yolov5n_costs.workload.name!r}"]


def test_unknown_device_and_unsupported_op_are_refused(yolov5n_costs, greedy):
    relu = next(v for v, op in yolov5n_costs.workload.ops.items() if op.gemm is None)
    bad = Schedule(greedy.mapper, dict(greedy.parts), greedy.order)
    bad.parts[relu] = [Part("gpu")]
    with pytest.raises(ScheduleError, match="'gpu', which is not a device"):
        simulate(yolov5n_costs, bad)
    bad.parts[relu] = [Part("cim")]
    with pytest.raises(ScheduleError, match="cannot run it"):
        simulate(yolov5n_costs, bad)


def test_parts_round_trip_and_the_earlier_json_form_loads(yolov5n_costs, greedy):
    back = Schedule.from_json(greedy.to_json())
    assert back == greedy
    d = json.loads(greedy.to_json())
    assert all(p == [{"device": greedy.assignment[v]}] for v, p in d["parts"].items())
    old = {"mapper": "x", "assignment": greedy.assignment, "order": greedy.order,
           "splits": {}}
    assert Schedule.from_dict(old).parts == greedy.parts
    with pytest.raises(ScheduleError, match="contiguous"):
        Schedule.from_dict({"mapper": "x", "assignment": {"a": "d"}, "order": {},
                            "splits": {"a": {"d": [0, 2], "e": [1]}}})


def test_capacity_of_a_loaded_platform_is_the_checked_one():
    plat = load_platform(PLATFORMS / "puma.yaml")
    caps = plat.devices["cim"].capacities()
    assert caps["crossbars"].amount == 100 and caps["crossbars"].scope == "resident"
