"""A whole run with weight policies: platforms/cim-npu-dram.yaml (shrunk so that ResNet-20 does not fit on chip)
maps with ops on every device, some streamed, and the run's outputs show each op's policy and traffic, agreeing
with each other (the DRAM's bytes are the streamed ops' weight bytes, the run's energy is the sum of the rows)."""

from __future__ import annotations

import pytest
from conftest import PLATFORMS, ROOT

import hetsim
from hetsim.check import check_schedule
from hetsim.platform import load_platform
from hetsim.schedule import Schedule


@pytest.fixture(scope="module")
def run():
    plat = load_platform(PLATFORMS / "cim-npu-dram.yaml").with_overrides(
        {"devices.npu.weight_memory_kib": 16, "devices.cim.crossbars": 30})
    return hetsim.run(plat, ROOT / "workloads" / "resnet20_cifar10.onnx", mapper="heft")


def test_ops_on_every_device_some_streamed(run):
    s, ops = run.summary, run.ops
    assert set(ops["device"]) == {"host", "cim", "npu"}
    assert (ops["weight_policy"] == "streamed").any() and (ops["weight_policy"] == "resident").any()
    assert s["weights"]["by_device"]["npu"]["streamed"] == int((ops["weight_policy"] == "streamed").sum())
    assert check_schedule(run.costs, run.schedule).ok
    # the checker's capacity rows count resident ops only
    assert s["capacities"]["npu"]["used"] <= s["capacities"]["npu"]["available"]


def test_traffic_agrees_across_outputs(run):
    s, ops = run.summary, run.ops
    streamed = ops[ops["weight_policy"] != "resident"]
    assert (streamed["weight_memory"] == "dram").all() and (streamed["weight_bytes"] > 0).all()
    assert s["weights"]["memories"]["dram"]["bytes"] == streamed["weight_bytes"].sum()
    assert s["weights"]["memories"]["dram"]["energy_j"] == pytest.approx(streamed["weight_energy_j"].sum())
    dram = next(d for d in s["devices"] if d["device"] == "dram")
    assert dram["kind"] == "memory" and dram["bytes"] == streamed["weight_bytes"].sum()
    # the port's utilisation is its busy time (the reads) over the makespan
    assert dram["busy_s"] == pytest.approx(s["weights"]["memories"]["dram"]["read_s"]) and dram["busy_s"] > 0
    assert dram["utilisation"] == pytest.approx(dram["busy_s"] / s["makespan_s"])
    assert s["energy_j"] == pytest.approx(sum(d["energy_j"] for d in s["devices"]))
    # a streamed NPU op lasts max(fetch, compute) (double-buffered): never less than its resident latency
    for _, r in streamed.iterrows():
        assert r["latency_s"] >= r["latency_npu_s"] * (1 - 1e-12)


def test_schedule_file_round_trip_replays_the_same(run, tmp_path):
    path = tmp_path / "s.json"
    path.write_text(run.schedule.to_json())
    again = hetsim.run(run.costs.platform, run.costs.workload, schedule=Schedule.load(path))
    assert again.summary["makespan_s"] == run.summary["makespan_s"]
    assert again.schedule.policies == run.schedule.policies


def test_a_memory_without_weights_for_changes_no_schedule():
    """Every mapper keeps today's resident-only search unless a device reads weights from a memory: an
    activation memory (activations_of) added to cim-npu.yaml leaves heft's and greedy's schedules as they were."""
    from hetsim.costs import CostModel
    from hetsim.mappers import get_mapper
    from hetsim.pipeline import load_workload

    base = load_platform(PLATFORMS / "cim-npu.yaml")
    data = base.model_dump(mode="json", exclude_unset=True)
    data["memories"] = {"dram": {"size_kib": 1 << 22, "activations_of": ["host", "npu", "cim"]}}
    for section in ("devices", "links"):
        for v in data[section].values():
            v.pop("name", None)
    other = type(base).model_validate(data)
    wl = load_workload(ROOT / "workloads" / "resnet20_cifar10.onnx")
    for name in ("heft", "greedy"):
        a = get_mapper(name).map(CostModel(wl, base)).to_dict()
        b = get_mapper(name).map(CostModel(wl, other)).to_dict()
        for d in (a, b):
            d["stats"].pop("solve_time_s", None)
        assert a == b, name


def test_a_bad_weight_policy_is_named_before_the_overflow_it_causes():
    """The trial of 2026-12-02: a policy the NPU does not offer made the op count as resident, and the replay's
    refusal named the resulting weight-memory overflow first ("(and 1 more problems)"), the cause second."""
    from hetsim.costs import CostModel
    from hetsim.errors import ScheduleError
    from hetsim.sim import simulate
    from hetsim.workload import load_onnx

    plat = load_platform(PLATFORMS / "cim-npu-dram.yaml")
    costs = CostModel(load_onnx(ROOT / "workloads" / "resnet18_int8_qdq.onnx"), plat)
    sched = hetsim.run(plat, costs.workload, mapper="heft").schedule
    d = sched.to_dict()
    streamed = "/layer4/layer4.0/conv1/Conv"  # 1.18 MB of weights: more than the NPU's 1 MiB if resident
    assert d["policies"][streamed]["policy"] == "streamed"
    d["policies"][streamed]["policy"] = "cached"
    with pytest.raises(ScheduleError) as info:
        simulate(costs, Schedule.from_dict(d))
    msg = str(info.value)
    assert f"op {streamed!r} has weight policy 'cached'" in msg.split(":", 1)[1].split("(and")[0]
    assert msg.endswith("(and 1 more problem)")  # the overflow it causes, counted in the singular
