"""The prioritised dispatch queue on a heap (hetsim.sim.dispatch.KeyedQueue, KeyedResource) serves exactly as
``simpy.PriorityResource``'s sorted list did: the least key first, equal keys in the order they were asked.

The truth: a reference queue written here as SimPy's is (a list stably sorted by the event's key after every
append, served from its head), and ``simpy.PriorityResource`` itself on random request programs."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from hetsim.sim.dispatch import KeyedQueue, KeyedResource, KeyedUnits, get_dispatch

POLICIES = ("fifo", "priority", "edf")


@dataclass
class _Req:
    """What the policies' keys read (hetsim.sim.engine.Request's attributes)."""

    arrival_s: float
    seq: int
    priority: int
    deadline_s: float | None


@dataclass(eq=False)
class _Event:
    """A waiting request as the queue sees it: its SimPy key ``(policy key, request time, not preempt)``."""

    key: tuple
    name: int


class _SortedList:
    """The reference: ``simpy.resources.resource.SortedQueue``'s behaviour, a list stably re-sorted on append."""

    def __init__(self) -> None:
        self.items: list[_Event] = []

    def append(self, e: _Event) -> None:
        self.items.append(e)
        self.items.sort(key=lambda x: x.key)

    def pop(self, i: int = 0) -> _Event:
        return self.items.pop(i)


# few distinct values: many ties in every key component
_times = st.sampled_from([0.0, 0.0, 1e-3, 2e-3, 0.5])
_reqs = st.builds(_Req, arrival_s=_times, seq=st.integers(0, 3), priority=st.integers(0, 2),
                  deadline_s=st.one_of(st.none(), _times))
# a program: ("put", request, request time) or ("pop",)
_step = st.one_of(st.tuples(st.just("put"), _reqs, _times), st.tuples(st.just("pop")))


@settings(max_examples=200, deadline=None)
@given(policy=st.sampled_from(POLICIES), program=st.lists(_step, max_size=60))
def test_heap_serves_in_the_sorted_lists_order_ties_included(policy, program):
    pol = get_dispatch(policy)
    heap, ref = KeyedQueue(), _SortedList()
    for n, step in enumerate(program):
        if step[0] == "put":
            _, req, now = step
            e = _Event((pol.key(req), now, False), n)
            heap.append(e)
            ref.append(e)
        elif ref.items:
            assert heap[0] is ref.items[0]
            assert heap.pop(0) is ref.pop(0)
        assert len(heap) == len(ref.items)
        assert list(heap) == ref.items
    while ref.items:
        assert heap.pop(0) is ref.pop(0)
    assert len(heap) == 0


@settings(max_examples=100, deadline=None)
@given(keys=st.lists(st.integers(0, 3), min_size=1, max_size=30), data=st.data())
def test_any_index_and_remove_keep_the_sorted_lists_order(keys, data):
    heap, ref = KeyedQueue(), _SortedList()
    for n, k in enumerate(keys):
        e = _Event((k,), n)
        heap.append(e)
        ref.append(e)
    i = data.draw(st.integers(0, len(keys) - 1))
    assert heap[i] is ref.items[i]
    assert heap.pop(i) is ref.pop(i)
    if ref.items:
        gone = ref.items[data.draw(st.integers(0, len(ref.items) - 1))]
        heap.remove(gone)
        ref.items.remove(gone)
    assert list(heap) == ref.items


def test_remove_of_a_request_not_waiting_is_a_value_error():
    q = KeyedQueue()
    q.append(_Event((0,), 0))
    with pytest.raises(ValueError):
        q.remove(_Event((0,), 1))


def _grants(resource_cls, policy: str, jobs: list[tuple[float, _Req, float]], capacity: int) -> list:
    """Replay ``jobs`` (request time, request, hold time) on a ``resource_cls`` of ``capacity`` units: the grants
    as (job, time granted), in the order they happen."""
    env = simpy.Environment()
    res = resource_cls(env, capacity=capacity)
    pol = get_dispatch(policy)
    out = []

    def job(i, at, req, hold):
        yield env.timeout(at)
        with pol.request(res, req) as r:
            yield r
            out.append((i, env.now))
            yield env.timeout(hold)

    for i, (at, req, hold) in enumerate(jobs):
        env.process(job(i, at, req, hold))
    env.run()
    return out


@settings(max_examples=100, deadline=None)
@given(policy=st.sampled_from(POLICIES), capacity=st.integers(1, 2),
       jobs=st.lists(st.tuples(_times, _reqs, st.sampled_from([0.0, 1e-3, 0.25])), max_size=40))
def test_keyed_resource_grants_as_simpys_priority_resource(policy, capacity, jobs):
    assert _grants(KeyedResource, policy, jobs, capacity) == _grants(simpy.PriorityResource, policy, jobs, capacity)


def _event_order(make, policy: str, jobs: list[tuple[float, _Req, float]], capacity: int, ticks: list[float]):
    """Replay ``jobs`` (request time, request, hold time) on ``make(env, capacity)``, requesting and releasing
    explicitly, beside marker processes that wake at ``ticks``: everything that happens, in the order it
    happens (grants, releases and markers, each with its time), so that a change in the event order shows."""
    env = simpy.Environment()
    res = make(env, capacity)
    pol = get_dispatch(policy)
    out = []

    def job(i, at, req, hold):
        yield env.timeout(at)
        r = pol.request(res, req)
        yield r
        out.append(("granted", i, env.now))
        yield env.timeout(hold)
        res.release(r)
        out.append(("released", i, env.now))

    def tick(k, at):
        yield env.timeout(at)
        out.append(("tick", k, env.now))
        yield env.timeout(0)
        out.append(("tock", k, env.now))

    for i, (at, req, hold) in enumerate(jobs):
        env.process(job(i, at, req, hold))
        if i < len(ticks):
            env.process(tick(i, ticks[i]))
    env.run()
    return out


@settings(max_examples=200, deadline=None)
@given(policy=st.sampled_from(POLICIES), capacity=st.integers(1, 3),
       jobs=st.lists(st.tuples(_times, _reqs, st.sampled_from([0.0, 1e-3, 0.25])), max_size=40),
       ticks=st.lists(_times, max_size=10))
def test_keyed_units_keep_simpys_event_order(policy, capacity, jobs, ticks):
    """KeyedUnits leaves out SimPy's request and idle release events: every grant, release and unrelated event
    still happens at the same time and in the same order as on ``simpy.PriorityResource``."""
    def simpy_res(env, cap):
        return simpy.PriorityResource(env, capacity=cap)

    assert (_event_order(KeyedUnits, policy, jobs, capacity, ticks)
            == _event_order(simpy_res, policy, jobs, capacity, ticks))


def test_keyed_units_serve_a_burst_by_key_by_hand():
    # one unit, four requests at t = 0 with keys 2, 0, 1, 0: the first is granted at once (the unit was free),
    # then 0 (asked second), 0 (asked fourth), 1; each holds 1 s
    env = simpy.Environment()
    units = KeyedUnits(env, 1)
    got = []

    def job(i, key):
        ev = units.request(key)
        yield ev
        got.append((i, env.now))
        yield env.timeout(1.0)
        units.release(ev)

    for i, key in enumerate((2, 0, 1, 0)):
        env.process(job(i, key))
    env.run()
    assert got == [(0, 0.0), (1, 1.0), (3, 2.0), (2, 3.0)]


def test_hand_built_queue_per_policy():
    # worked by hand: requests (arrival_s, seq, priority, deadline_s) all asked at t = 0 in this order
    reqs = [_Req(0.002, 0, 1, None), _Req(0.001, 1, 1, 0.5), _Req(0.001, 1, 0, 0.5), _Req(0.0, 2, 1, 0.1),
            _Req(0.001, 1, 0, None)]
    want = {"fifo": [3, 1, 2, 4, 0],       # arrival, seq; 1, 2 and 4 tie: asked order
            "priority": [2, 4, 3, 1, 0],   # priority 0 first (2, 4 tie: asked order), then arrival
            "edf": [3, 1, 2, 4, 0]}        # deadline 0.1, then 0.5 (1, 2 tie), then none by arrival
    for policy, order in want.items():
        pol, q = get_dispatch(policy), KeyedQueue()
        for n, r in enumerate(reqs):
            q.append(_Event((pol.key(r), 0.0, False), n))
        assert [q.pop(0).name for _ in reqs] == order, policy
