"""Dispatch policies: which waiting op a serial device serves next (``docs/architecture.md``, "Simulation
semantics").

Within one request (one inference of one model) a serial device always runs its ops in the schedule's order:
the order is the mapper's decision, and an op asks for the device only once the op before it in that order has
been granted. Between requests (a scenario's streams, ``hetsim/scenario/``) the device's policy picks, each time
a unit frees, which waiting request's op it serves. It is non-preemptive at op boundaries: an op that holds a
unit keeps it until it ends. With one request every policy gives the static schedule's times exactly.

A policy is a class registered by name with :func:`register_dispatch`; it makes the SimPy resource of a serial
device and the request an op puts to it:

* ``static`` (the default): ``simpy.Resource``; requests are served in the order they are made (first come,
  first served at the device).
* ``fifo``: a :class:`KeyedUnits` (a ``simpy.PriorityResource``'s grants and event order, its waiting requests
  on a heap, without its request and idle release events) keyed by the request's arrival time (then its sequence
  number).
* ``priority``: keyed by the stream's priority (lower values first: 0 is the most urgent), then arrival.
* ``edf``: earliest absolute deadline first (requests without a deadline last), then arrival.

A prioritised device's waiting requests are a binary heap (:class:`KeyedUnits`; :class:`KeyedQueue` puts
``simpy.PriorityResource``'s own on one, :class:`KeyedResource`): a request costs ``O(log n)``
with ``n`` waiting, where ``simpy.PriorityResource``'s list, sorted again on every request, costs ``O(n)`` (a
burst of ``n`` simultaneous arrivals ``O(n^2)``). The order served is the same, ties included.

The per-request attributes the keys read (``arrival_s``, ``seq``, ``priority``, ``deadline_s``) are those of
:class:`hetsim.sim.engine.Request`.
"""

from __future__ import annotations

import heapq
import itertools
import math
from typing import ClassVar

import simpy

from hetsim.errors import InputError

__all__ = ["DISPATCH", "DispatchPolicy", "KeyedQueue", "KeyedResource", "KeyedUnits", "get_dispatch",
           "register_dispatch"]

#: name -> policy class
DISPATCH: dict[str, type[DispatchPolicy]] = {}


def register_dispatch(name: str):
    """Class decorator: register a :class:`DispatchPolicy` under ``name`` (replacing one of that name)."""

    def deco(cls: type[DispatchPolicy]) -> type[DispatchPolicy]:
        cls.name = name
        DISPATCH[name] = cls
        return cls

    return deco


def get_dispatch(name: str | DispatchPolicy | None) -> DispatchPolicy:
    """The policy registered as ``name`` (an instance passes through; ``None`` is ``static``).

    Raises:
        InputError: no policy of that name (the message suggests the closest and lists them).
    """
    if name is None:
        name = "static"
    if isinstance(name, DispatchPolicy):
        return name
    cls = DISPATCH.get(name)
    if cls is None:
        import difflib

        close = difflib.get_close_matches(str(name), DISPATCH, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise InputError(f"unknown dispatch policy {name!r}{hint} Known: {', '.join(sorted(DISPATCH))}")
    return cls()


class DispatchPolicy:
    """How a serial device arbitrates between requests. Subclass, override :meth:`key` (and set
    ``prioritised = False`` to keep a plain first-come-first-served ``simpy.Resource``), register.
    """

    name: ClassVar[str] = ""
    #: ``True``: the device is a :class:`KeyedUnits` served in increasing :meth:`key`.
    prioritised: ClassVar[bool] = True
    #: ``True``: :meth:`resource` returns a :class:`Units` (grants are calls, not SimPy events).
    synchronous: ClassVar[bool] = False

    def resource(self, env: simpy.Environment, capacity: int) -> simpy.Resource | KeyedUnits:
        """The resource of a serial device of ``capacity`` units: a :class:`KeyedUnits` when prioritised (the
        event order of a ``simpy.PriorityResource``, with fewer events), else a ``simpy.Resource``."""
        if self.prioritised:
            return KeyedUnits(env, capacity)
        return simpy.Resource(env, capacity=capacity)

    def key(self, request) -> object:  # pragma: no cover - abstract
        """The priority of ``request``'s ops at every device (any comparable; smaller is served first; SimPy
        serves equal keys in the order they were asked)."""
        raise NotImplementedError

    def request(self, res: simpy.Resource, request):
        """The SimPy request event an op of ``request`` puts to the device's resource ``res``."""
        if isinstance(res, KeyedUnits):
            return res.request(self.key(request))
        if self.prioritised:
            return res.request(priority=self.key(request))
        return res.request()


class KeyedQueue:
    """The waiting requests of a :class:`KeyedResource`: a binary heap (``heapq``) of ``(event.key, n, event)``,
    ``n`` counting the requests appended. It serves in ``simpy.PriorityResource``'s order: that queue is a list
    stably sorted by ``event.key`` after every append (``simpy.resources.resource.SortedQueue``), so its head is
    the least key and, among equal keys, the earliest appended: the least ``(key, n)``, the heap's head.

    The interface SimPy's ``BaseResource._trigger_put`` and ``Put.cancel`` use: ``append``, ``len``, ``[i]``,
    ``pop(i)``, ``remove``. Appending and taking the head (``pop(0)``) cost ``O(log n)``; any other index and
    :meth:`remove` ``O(n log n)`` (SimPy's ``Resource`` only ever reads and takes the head; a cancelled request,
    which hetsim never makes, removes itself). Iterating gives the waiting requests in serving order.
    """

    __slots__ = ("_count", "_heap")

    def __init__(self) -> None:
        self._heap: list[tuple[object, int, simpy.Event]] = []
        self._count = itertools.count()

    def append(self, event) -> None:
        heapq.heappush(self._heap, (event.key, next(self._count), event))

    def __len__(self) -> int:
        return len(self._heap)

    def __getitem__(self, i: int):
        if i == 0:
            return self._heap[0][2]
        return sorted(self._heap)[i][2]

    def __iter__(self):
        return (e for _, _, e in sorted(self._heap))

    def pop(self, i: int = 0):
        """Take the ``i``-th request in serving order (the head by default; ``IndexError`` when there is none)."""
        heap = self._heap
        if i == 0:
            return heapq.heappop(heap)[2]
        entry = sorted(heap)[i]
        heap.remove(entry)
        heapq.heapify(heap)
        return entry[2]

    def remove(self, event) -> None:
        """Take ``event`` out of the queue (``ValueError`` when it is not waiting)."""
        heap = self._heap
        for j, entry in enumerate(heap):
            if entry[2] is event:
                heap[j] = heap[-1]
                heap.pop()
                heapq.heapify(heap)
                return
        raise ValueError("request not in the queue")


class KeyedResource(simpy.PriorityResource):
    """``simpy.PriorityResource`` with its waiting requests on a :class:`KeyedQueue`: the same requests, grants
    and events in the same order, at ``O(log n)`` per request instead of ``O(n)`` with ``n`` waiting."""

    PutQueue = KeyedQueue


class KeyedUnits:
    """A prioritised serial device's units: the grants of a ``simpy.PriorityResource`` (served in increasing key,
    equal keys in the order asked), in the same event order, with two of its four events per op left out.

    What ``simpy.PriorityResource`` does (SimPy 4, ``simpy/resources/resource.py``), and this class with it:

    * a request is an event; a request finding a unit free and nobody waiting is granted at once (its event
      scheduled now). :meth:`request` returns a plain ``simpy.Event`` and succeeds it there: the same place in
      the event queue (now, ``NORMAL``, the next event id).
    * a request finding every unit held waits; SimPy orders its waiting list by ``(key, time asked)``, then the
      order asked (a stable sort): here a heap of ``(key, time asked, n, event)``, ``n`` counting the requests.
    * a release frees the unit and schedules a ``Release`` event; only when that event is processed is the head
      of the waiting list granted. Here the hand-over event is scheduled at the same point, and only when
      someone waits (with nobody waiting SimPy's ``Release`` event does nothing when processed, so leaving it
      out changes the relative order of no other two events: :mod:`hetsim.sim.port` argues the same for links).
    * a request made while a unit is free but the head not yet handed it grants the head of the waiting list,
      the new request included (SimPy's ``_trigger_put`` serves the head, one request per call).

    SimPy's request events, which carry ``usage_since`` and a ``Put`` machinery, are not made: a request costs
    one ``simpy.Event`` and ``O(log n)`` with ``n`` waiting. :meth:`release` takes the request's event (the
    token, as ``simpy.Resource.release`` takes the request) and ignores it.
    """

    __slots__ = ("_count", "_handover", "env", "free", "heap")

    def __init__(self, env: simpy.Environment, capacity: int) -> None:
        self.env = env
        self.free = capacity
        self.heap: list[tuple] = []
        self._count = itertools.count()
        self._handover = self.handover

    def request(self, key: object) -> simpy.Event:
        """Ask for a unit with priority ``key`` (smaller first); the event returned succeeds once it is held."""
        env = self.env
        ev = simpy.Event(env)
        heap = self.heap
        if not self.free:
            heapq.heappush(heap, (key, env._now, next(self._count), ev))
            return ev
        self.free -= 1
        if heap:  # a unit free, its head not yet handed it: the head of the list (this request included) is served
            ev2 = heapq.heappushpop(heap, (key, env._now, next(self._count), ev))[3]
            ev2.succeed()
        else:
            ev.succeed()
        return ev

    def release(self, _token=None) -> None:
        """A holder is done: the head of the waiting list is handed the unit when the hand-over event (SimPy's
        ``Release``) is processed."""
        self.free += 1
        if self.heap:
            self.env.timeout(0).callbacks.append(self._handover)

    def handover(self, _event=None) -> None:
        if self.free and self.heap:
            self.free -= 1
            heapq.heappop(self.heap)[3].succeed()

    def __len__(self) -> int:
        """The requests waiting."""
        return len(self.heap)


class Units:
    """A serial device's units served first come, first served, granted synchronously: the static policy's
    device. What ``simpy.Resource`` does for it, without its request and release events (an op on a serial
    device then costs one SimPy event, its timeout, instead of three); the grants and their times are the same.

    :meth:`request` takes a callable run (with ``None``) when a unit is granted and returns a token for
    :meth:`release`.
    """

    __slots__ = ("free", "queue")

    def __init__(self, capacity: int) -> None:
        from collections import deque

        self.free = capacity
        self.queue = deque()

    def request(self, granted) -> None:
        if self.free:
            self.free -= 1
            granted(None)
        else:
            self.queue.append(granted)

    def release(self, _token=None) -> None:
        if self.queue:
            self.queue.popleft()(None)
        else:
            self.free += 1


@register_dispatch("static")
class Static(DispatchPolicy):
    """First come, first served at each device; within a request, the schedule's order. The device is a
    :class:`Units` (synchronous grants; the same times as a ``simpy.Resource``)."""

    prioritised = False
    synchronous = True

    def resource(self, env: simpy.Environment, capacity: int) -> Units:
        return Units(capacity)


@register_dispatch("fifo")
class Fifo(DispatchPolicy):
    """The earliest-arrived request first."""

    def key(self, request) -> object:
        return request.arrival_s, request.seq


@register_dispatch("priority")
class Priority(DispatchPolicy):
    """The stream's priority first (lower values first: 0 is the most urgent), then arrival."""

    def key(self, request) -> object:
        return request.priority, request.arrival_s, request.seq


@register_dispatch("edf")
class EarliestDeadline(DispatchPolicy):
    """The earliest absolute deadline first (requests without a deadline after every one with), then arrival."""

    def key(self, request) -> object:
        d = request.deadline_s
        return (math.inf if d is None else d), request.arrival_s, request.seq
