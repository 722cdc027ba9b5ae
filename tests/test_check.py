"""The one checker: a schedule that does not fit its platform is refused before every replay, with one line."""

from __future__ import annotations

import json

import pytest
from conftest import PLATFORMS, assert_input_error, run_cli

from hetsim.check import check_schedule, fit_violations, require_feasible
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
    with pytest.raises(ScheduleError, match="94 crossbars used, 50 available"):
        run(small.platform, small.workload, schedule=greedy)
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
