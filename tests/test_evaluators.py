"""The mappers' integer evaluators against the reference one (:func:`hetsim.sim.analytic.list_schedule`).

``int_list_schedule`` times an assignment and cpu order in integer ticks of the rounded problem (every latency and
transfer rounded up): it can only be later than ``list_schedule`` in real time, by at most the problem's
``rounding_bound_s`` (the cpsat module docstring's claim, checked here on random DAGs). ``fill_schedule`` builds an
order; timed by ``int_list_schedule`` (ASAP in that order) it is never later than the makespan ``fill_schedule``
reports (equal in about 90 % of random cases; earlier where the event-driven list scheduler left a core idle), which
is why the mappers re-time every order they keep with ``int_list_schedule``.
"""

from __future__ import annotations

import random

import pytest
from conftest import make_platform
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hetsim.costs import CostModel
from hetsim.errors import InputError, InternalError
from hetsim.mappers import _bounds as B
from hetsim.sim.analytic import list_schedule
from hetsim.workload.synthetic import layered_dag


def _case(seed: int, n_ops: int, cores: int):
    costs = CostModel(layered_dag(n_ops, width=4, p_conv=0.5, seed=seed),
                      make_platform(host_cores=cores, crossbars_per_core=8, link_latency_ns=3))
    p = B.build_problem(costs, 1e-9)
    rng = random.Random(seed)
    assign = {v: rng.choice(p.devices[v]) for v in p.ops}
    for v in p.ops:  # keep every edge on a device pair a link carries
        if not B.carried(p, assign, v, assign[v]):
            assign[v] = costs.host
    topo = list(p.ops)
    order = {c: [v for v in topo if assign[v] == c] for c in p.cpus}
    return costs, p, assign, order


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.integers(1, 40), st.integers(1, 2))
def test_ticks_never_earlier_than_real_time_and_within_the_rounding_bound(seed, n_ops, cores):
    costs, p, assign, order = _case(seed, n_ops, cores)
    _, _, real = list_schedule(costs, assign, order)
    _, ticks = B.int_list_schedule(p, assign, order)
    assert real <= ticks * p.tick * (1 + 1e-12) + 1e-18
    assert ticks * p.tick - p.rounding_bound_s <= real * (1 + 1e-12) + 1e-18


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.integers(1, 40), st.integers(1, 2))
def test_fill_schedule_orders_timed_asap_are_never_later(seed, n_ops, cores):
    costs, p, assign, _ = _case(seed, n_ops, cores)
    prio = {v: p.pos[v] for v in p.ops}
    order, ms = B.fill_schedule(p, assign, B.free_ops(costs, p), prio)
    assert sorted(v for seq in order.values() for v in seq) == sorted(v for v in p.ops if assign[v] in p.cpus)
    assert B.int_list_schedule(p, assign, order)[1] <= ms


def test_a_contradictory_order_is_an_internal_error():
    costs, p, assign, order = _case(3, 12, 1)
    host = costs.host
    order = {**order, host: [v for v in p.ops if assign[v] == host][::-1]}
    if len(order[host]) < 2:
        pytest.skip("fewer than two host ops")
    with pytest.raises(InternalError) as err:
        B.int_list_schedule(p, assign, order)
    assert not isinstance(err.value, InputError)
