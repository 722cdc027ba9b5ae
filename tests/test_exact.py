"""The two exact mappers agree on the optimum of the paper's real graphs (CPU-CIM ILP Table I models)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hetsim.check import check_schedule
from hetsim.costs import CostModel
from hetsim.mappers import MAPPERS, get_mapper
from hetsim.platform import load_platform
from hetsim.sim import simulate
from hetsim.workload import load_onnx

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(not {"ilp", "cpsat"} <= set(MAPPERS), reason="needs both exact mappers")


@pytest.mark.parametrize("model", ["resnet18", "mobilenet_v2", "resnet50"])
@pytest.mark.parametrize("platform", ["puma.yaml", "puma-x86.yaml"])
def test_ilp_and_cpsat_reach_the_same_optimum(model, platform):
    costs = CostModel(load_onnx(ROOT / "workloads" / "paper" / f"{model}_int8_ort.onnx"),
                      load_platform(ROOT / "platforms" / platform))
    ilp = get_mapper("ilp", time_limit_s=60).map(costs)
    cp = get_mapper("cpsat", time_limit_s=60).map(costs)
    assert ilp.stats["status"] == cp.stats["status"] == "optimal"
    # cpsat rounds durations up to 1 ns ticks and stops at a 1e-4 relative gap; the ILP at 1e-6
    assert cp.makespan_s == pytest.approx(ilp.makespan_s, rel=1e-4)
    for s in (ilp, cp):
        assert check_schedule(costs, s).ok
        assert simulate(costs, s).makespan_s == s.makespan_s
    assert cp.makespan_s <= get_mapper("heft").map(costs).makespan_s * (1 + 1e-9)
