"""Extending hetsim without editing it: a device kind defined here, registered at run time
(``hetsim.devices.register_kind``), is accepted by the platform model and served by the cost model, every mapper
that applies, the checker, the replay and the reports (docs/extending.md walks through the same steps).

The toy accelerator runs GEMM ops at ``ns_per_mac`` and keeps their weights resident in ``tiles`` tiles of
``tile_weights`` weights each (a resident capacity, like a PUMA's crossbars). The host is conftest's round-number
CPU (``macs ns`` per GEMM op, ``n_out ns`` otherwise) and the bus moves one element per ns.
"""

from __future__ import annotations

import sys
from typing import Literal

import pytest
from conftest import conv_op, host_op, ns
from pydantic import Field

from hetsim.analysis.metrics import device_table
from hetsim.check import check_schedule
from hetsim.costs import CostModel
from hetsim.devices import DEVICE_KINDS, register_kind, unregister_kind
from hetsim.devices.base import Capacity, DeviceBase
from hetsim.errors import MappingError, PlatformError
from hetsim.mappers import MAPPERS, get_mapper
from hetsim.platform import Platform, load_platform
from hetsim.sim import simulate
from hetsim.workload import Workload
from hetsim.workload.op import Op

HOST = {"kind": "cpu", "cores": 1, "clock_ghz": 1, "macs_per_cycle": {8: 1, 32: 1}, "elementwise_per_cycle": 1,
        "mem_bandwidth_gb_s": 1e12, "op_overhead_us": 0, "active_w": 2.0, "idle_w": 1.0}


@pytest.fixture
def toy():
    """The ``toy`` kind, registered for one test and removed afterwards."""

    class ToyAccel(DeviceBase):
        """A toy accelerator (``kind: toy``): GEMM ops at ``ns_per_mac``, weights resident in tiles."""

        kind: Literal["toy"] = "toy"
        ns_per_mac: float = Field(gt=0, description="seconds per MAC, in ns")
        tiles: int = Field(ge=0, description="weight tiles (a resident capacity)")
        tile_weights: int = Field(64, gt=0, description="weights per tile")
        one_at_a_time: bool = Field(False, description="serial: one op at a time, in the schedule's order")

        def latency(self, op: Op) -> float | None:
            return None if op.gemm is None else op.macs * self.ns_per_mac * 1e-9

        @property
        def serial(self) -> bool:
            return self.one_at_a_time

        def capacities(self) -> dict[str, Capacity]:
            return {"tiles": Capacity("tiles", self.tiles, "tiles", "resident", "toy: weights stay in their tiles")}

        def demand(self, op: Op, n_channels: int | None = None) -> dict[str, int]:
            return {"tiles": -(-op.weight_elements // self.tile_weights)}

        @property
        def wire_bits(self) -> int:
            return 8

    register_kind(ToyAccel)
    try:
        yield ToyAccel
    finally:
        unregister_kind("toy")


def _platform(**toy) -> Platform:
    return Platform.model_validate({
        "name": "toy-soc",
        "host": "host",
        "devices": {"host": HOST, "acc": {"kind": "toy", "ns_per_mac": 0.25, "tiles": 8, **toy}},
        "links": {"bus": {"bandwidth_gb_s": 1, "connects": ["host", "acc"]}},
    })


def _workload() -> Workload:
    """src -> {p, q, r} -> add -> s (Convs; p, q, r of 16 x 16, 16 x 32, 16 x 48 weights = 4, 8, 12 tiles)."""
    ops = [
        host_op("src", 64, 0),
        conv_op("p", 16, 16, 20, n_in=64, n_out=64, index=1),
        conv_op("q", 16, 32, 20, n_in=64, n_out=64, index=2),
        conv_op("r", 16, 48, 20, n_in=64, n_out=64, index=3),
        host_op("add", 64, 4, op_type="Add"),
        conv_op("s", 8, 8, 40, n_in=64, n_out=64, index=5),
    ]
    edges = [("src", x, 64) for x in "pqr"] + [(x, "add", 64) for x in "pqr"] + [("add", "s", 64)]
    return Workload.from_ops("toy-graph", ops, edges)


def test_a_kind_is_unknown_until_registered_and_after_unregistering(toy, tmp_path):
    assert DEVICE_KINDS["toy"] is toy
    plat = _platform()
    assert type(plat.devices["acc"]) is toy and plat.devices["acc"].name == "acc"
    # a platform YAML names it like any shipped kind
    y = tmp_path / "toy.yaml"
    y.write_text(
        "name: toy-soc\nhost: host\ndevices:\n"
        "  host: {kind: cpu, clock_ghz: 1, macs_per_cycle: {8: 1}, mem_bandwidth_gb_s: 1}\n"
        "  acc: {kind: toy, ns_per_mac: 0.5, tiles: 2}\n"
        "links:\n  bus: {bandwidth_gb_s: 1, connects: [host, acc]}\n"
    )
    assert load_platform(y).devices["acc"].tiles == 2
    unregister_kind("toy")
    with pytest.raises((PlatformError, ValueError), match="toy"):
        load_platform(y)
    register_kind(toy)  # the fixture unregisters it again


def test_cost_model_asks_the_protocol(toy):
    costs = CostModel(_workload(), _platform())
    # latency: 5120 MACs * 0.25 ns = 1280 ns for p (host: 5120 ns)
    assert costs.latency["p"] == {"host": ns(5120), "acc": ns(1280)}
    assert set(costs.latency["add"]) == {"host"}  # no GEMM view: host only
    assert costs.budget == {"acc": 8}
    assert {v: costs.need[v]["acc"] for v in "pqrs"} == {"p": 4, "q": 8, "r": 12, "s": 1}
    assert costs.serial_devices() == {"host": 1}
    assert CostModel(_workload(), _platform(one_at_a_time=True)).serial_devices() == {"host": 1, "acc": 1}


def _channel_split_mapper(name: str) -> bool:
    """ODiMO's mappers (built on hetsim.mappers._diana.diana_devices) split layers between two accelerators."""
    return getattr(sys.modules[MAPPERS[name].__module__], "diana_devices", None) is not None


#: the toy's configurations: ops overlapping (weight-stationary, like a PUMA CIM) or one at a time (like an
#: NPU), and a capacity of 1500 one-weight tiles (bytes, say: more units than cpsat's decomposition counts one
#: by one, and less than the 1600 weights of p, q, r and s together)
TOYS = {"overlapping": {}, "serial": {"one_at_a_time": True},
        "bytes": {"one_at_a_time": True, "tile_weights": 1, "tiles": 1500}}


@pytest.mark.parametrize("cfg", list(TOYS))
def test_every_mapper_that_applies_maps_checks_and_replays(toy, cfg):
    """Every registered mapper: the ones for other platforms (ODiMO's channel splits; ``ilp`` when it does not
    model the platform) refuse with MappingError; the others give schedules that pass the checker, keep the
    tiles, and replay to exactly their predicted makespan. The exact mappers agree."""
    costs = CostModel(_workload(), _platform(**TOYS[cfg]))
    cap = costs.budget["acc"]
    got, refused = {}, {}
    for name in sorted(MAPPERS):
        opts = {"time_limit_s": 5.0, "mip_rel_gap": 0.0} if name in ("cpsat", "ilp") else {}
        try:
            sched = get_mapper(name, **opts).map(costs)
        except MappingError as err:
            refused[name] = str(err)
            continue
        rep = check_schedule(costs, sched)
        assert rep.ok, (name, rep.violations)
        assert simulate(costs, sched).makespan_s == pytest.approx(sched.makespan_s, rel=1e-9, abs=1e-18), name
        assert sum(costs.need[v]["acc"] for v, d in sched.assignment.items() if d == "acc") <= cap, name
        got[name] = sched
    assert {"all-host", "greedy", "heft", "cpsat"} <= set(got), refused
    snn_mappers = {n for n in MAPPERS if "onnx" not in getattr(MAPPERS[n], "workloads", {"onnx"})}
    assert all(_channel_split_mapper(n) or n == "ilp" or n in snn_mappers for n in refused), refused
    assert all("spiking networks" in refused[n] for n in snn_mappers), refused
    # the offloads pay, and the exact mapper is at least as good as every other one
    assert got["cpsat"].stats["status"] == "optimal"
    assert set(got["cpsat"].assignment.values()) == {"host", "acc"}
    for name, s in got.items():
        assert got["cpsat"].makespan_s <= s.makespan_s * (1 + 1e-9), name
    assert got["cpsat"].makespan_s < got["all-host"].makespan_s
    if "ilp" in got and got["ilp"].stats.get("status") == "optimal":
        assert got["ilp"].makespan_s == pytest.approx(got["cpsat"].makespan_s, rel=1e-9)
    # the reports list the device with its kind
    table = device_table(costs, simulate(costs, got["cpsat"])).set_index("device")
    assert table.loc["acc", "kind"] == "toy" and table.loc["acc", "busy_s"] > 0
