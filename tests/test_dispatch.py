"""The replay's dispatch policies and device-declared contention: a policy added from outside
hetsim, the built-in ones giving one request's static times exactly, contention kinds asked of the device kinds."""

from __future__ import annotations

import pytest
from conftest import diamond, make_platform

from hetsim.costs import CostModel
from hetsim.errors import InputError
from hetsim.mappers import get_mapper
from hetsim.sim import simulate
from hetsim.sim.contention import CONTENTION_KINDS, contention_kinds
from hetsim.sim.dispatch import DISPATCH, DispatchPolicy, get_dispatch, register_dispatch


def _costs():
    return CostModel(diamond(), make_platform(host_cores=1, cim_cores=2, crossbars_per_core=4))


def test_a_policy_registered_outside_hetsim_serves_the_devices():
    calls = []

    @register_dispatch("test-latest-first")
    class LatestFirst(DispatchPolicy):
        def key(self, request):
            calls.append(request.seq)
            return -request.arrival_s, -request.seq

    try:
        costs = _costs()
        s = get_mapper("heft").map(costs)
        base = simulate(costs, s)
        got = simulate(costs, s, dispatch="test-latest-first")
        assert calls, "the policy's key was never asked"
        assert got.trace.equals(base.trace) and got.makespan_s == base.makespan_s
    finally:
        DISPATCH.pop("test-latest-first", None)


@pytest.mark.parametrize("name", ["static", "fifo", "priority", "edf"])
def test_every_builtin_policy_gives_one_request_the_static_times(name):
    costs = _costs()
    for m in ("all-host", "greedy", "heft"):
        s = get_mapper(m).map(costs)
        for kinds in (frozenset(), frozenset(CONTENTION_KINDS)):
            assert simulate(costs, s, kinds, dispatch=name).trace.equals(simulate(costs, s, kinds).trace)


def test_unknown_policy_is_one_line_with_a_suggestion():
    with pytest.raises(InputError, match="did you mean 'edf'"):
        get_dispatch("edff")


def test_contention_kinds_are_the_device_kinds_declarations():
    assert contention_kinds() == CONTENTION_KINDS


def test_the_replay_names_no_device_contention_kind():
    """The device kinds own their contended resources (DeviceBase.contended_phases); the engine asks them."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "hetsim" / "sim"
    for name in ("engine.py", "dispatch.py", "analytic.py"):
        text = (root / name).read_text()
        assert "cim-bus" not in text and "cim-cores" not in text, name
