"""A contended resource of the replay (a link, a memory's port, a PUMA's internal bus or core, an op's own
crossbars): one holder at a time, first come first served, with exactly the event order of a
``simpy.Resource(capacity=1)`` and a fraction of its cost.

What ``simpy.Resource(capacity=1)`` does (SimPy 4, ``simpy/resources``), and :class:`Port` with it:

* a request finding the resource free and nobody waiting is granted at once: its event is scheduled now
  (priority ``NORMAL``), and what waits for the grant runs when that event is processed. A :class:`Port`
  schedules a ``Timeout(0)`` there: the same place in the event queue (now, ``NORMAL``, the next event id).
* a request finding it held is queued.
* a release frees the resource and schedules a ``Release`` event; only when that event is processed is the
  first waiter granted (its event scheduled then). A :class:`Port` schedules its hand-over event at the same
  point, and only when someone waits: with nobody waiting SimPy's ``Release`` event finds nothing to do when it
  is processed (a request made in between was granted when made, and its own grant event comes after the
  ``Release`` event, so nobody can have released again), so leaving it out changes the relative order of no
  other two events.
* a request made while the resource is free but the first waiter has not yet been handed it (between a release
  and its ``Release`` event) grants that first waiter at once and queues itself behind the others (SimPy's
  ``_trigger_put`` serves the head of the queue first, and one request per call).

Dropping events that do nothing keeps every other event's place relative to the rest (the queue is ordered by
time, priority, then the order events were scheduled in), so a replay on ports gives the same grants, at the
same instants, in the same order as on SimPy resources: the same times to the last bit.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

__all__ = ["Port"]


class Port:
    """One holder at a time, first come first served, in ``simpy.Resource(capacity=1)``'s event order (see the
    module's docstring).

    :meth:`request` takes ``granted``, a SimPy event callback, and ``value``: once the port is granted,
    ``granted`` runs as a callback of an event whose ``value`` is ``value`` (scheduled where SimPy schedules
    the request's event). The holder calls :meth:`release` once.
    """

    __slots__ = ("_handover", "busy", "env", "queue")

    def __init__(self, env) -> None:
        self.env = env
        self.busy = False  # held, or promised to a grant event already scheduled
        self.queue: deque[tuple[Callable, object]] = deque()
        self._handover = self.handover

    def request(self, granted: Callable, value: object = None) -> None:
        """Ask for the port; ``granted(event)`` runs once it is held (``event.value`` is ``value``)."""
        if self.busy:
            self.queue.append((granted, value))
            return
        self.busy = True
        queue = self.queue
        if queue:  # free, but its first waiter not yet handed it: that one is granted now, this one waits
            fn, val = queue.popleft()
            self.env.timeout(0, val).callbacks.append(fn)
            queue.append((granted, value))
        else:
            self.env.timeout(0, value).callbacks.append(granted)

    def release(self) -> None:
        """The holder is done: the first waiter is handed the port when the hand-over event (SimPy's
        ``Release``) is processed."""
        self.busy = False
        if self.queue:
            self.env.timeout(0).callbacks.append(self._handover)

    def handover(self, _event=None) -> None:
        if not self.busy and self.queue:
            self.busy = True
            fn, val = self.queue.popleft()
            self.env.timeout(0, val).callbacks.append(fn)
