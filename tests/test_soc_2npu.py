"""platforms/soc-2npu.yaml: the user-style three-accelerator platform of the three-device grid."""

from __future__ import annotations

import re

from conftest import PLATFORMS, ROOT

from hetsim.check import check_schedule
from hetsim.costs import CostModel
from hetsim.mappers import get_mapper
from hetsim.platform import load_platform
from hetsim.workload import load_onnx

PATH = PLATFORMS / "soc-2npu.yaml"


def test_shape_of_the_platform():
    plat = load_platform(PATH)
    kinds = sorted(d.kind for d in plat.devices.values())
    assert kinds == ["cpu", "npu", "npu", "puma"]
    assert plat.devices[plat.host].cores == 2
    assert plat.devices["cim"].crossbars == 64
    assert len(plat.links) == 1 and set(next(iter(plat.links.values())).connects) == set(plat.devices)


def test_every_constant_has_a_source_or_says_assumed():
    """Each ``key: value`` line of a device or link carries a comment (a source, or "assumed")."""
    body = PATH.read_text().split("\ndevices:\n", 1)[1]
    bare = [ln for ln in body.splitlines()
            if re.match(r"\s+\w+:\s*\S", ln) and "#" not in ln and not re.match(r"\s+(kind|connects):", ln)]
    assert bare == []


def test_resnet20_maps_optimally_and_passes_the_checker():
    costs = CostModel(load_onnx(ROOT / "workloads" / "resnet20_cifar10.onnx"), load_platform(PATH))
    sched = get_mapper("cpsat").map(costs)
    assert check_schedule(costs, sched).ok
    assert sched.stats["status"] == "optimal"
    assert sched.makespan_s <= get_mapper("heft").map(costs).makespan_s * (1 + 1e-9)
