"""Arrival processes of a scenario's streams, and their registry.

An arrival process is one module here: a Pydantic model derived from
:class:`~hetsim.scenario.arrivals.base.ArrivalProcess` whose ``process`` field is a ``Literal`` naming it,
answering how its arrivals are drawn, the rate it offers, its saturation rule, how many requests a duration makes
and what the report says of it (:mod:`hetsim.scenario.arrivals.base`). Adding one = its module plus one
:func:`register_arrival` line below; a scenario file's ``arrival: {process: NAME, ...}`` accepts it from then on
(the scenario's union of processes is rebuilt, :func:`on_arrivals_changed`). A process defined elsewhere (a
user's package, a plugin, a test) is registered the same way at run time.
"""

from __future__ import annotations

from collections.abc import Callable

from hetsim.scenario.arrivals.base import MAX_S, ArrivalInputs, ArrivalProcess, SizeEstimate, cut
from hetsim.scenario.arrivals.closed import Closed
from hetsim.scenario.arrivals.periodic import Periodic
from hetsim.scenario.arrivals.poisson import Poisson
from hetsim.scenario.arrivals.trace import TraceArrivals

#: process name -> class, in registration order (the order error messages list them in)
ARRIVALS: dict[str, type[ArrivalProcess]] = {}
_listeners: list[Callable[[], None]] = []


def process_name(cls: type[ArrivalProcess]) -> str:
    """The name a process class declares: the default of its ``process`` field.

    Raises:
        TypeError: the class has no ``process`` field with a default.
    """
    field = cls.model_fields.get("process")
    if field is None or not isinstance(field.default, str):
        raise TypeError(f"{cls.__name__} needs a field process: Literal['NAME'] = 'NAME'")
    return field.default


def register_arrival(cls: type[ArrivalProcess]) -> type[ArrivalProcess]:
    """Make ``cls`` an arrival process of the scenario file (usable as a class decorator).

    Raises:
        TypeError: ``cls`` is not an :class:`ArrivalProcess` with a ``process`` field.
        ValueError: another class already holds its name.
    """
    if not (isinstance(cls, type) and issubclass(cls, ArrivalProcess)):
        raise TypeError(f"an arrival process must subclass hetsim.scenario.arrivals.base.ArrivalProcess, got {cls!r}")
    name = process_name(cls)
    if ARRIVALS.get(name, cls) is not cls:
        raise ValueError(f"arrival process {name!r} is already registered by {ARRIVALS[name].__name__}")
    ARRIVALS[name] = cls
    for fn in _listeners:
        fn()
    return cls


def unregister_arrival(name: str) -> None:
    """Remove a process registered at run time (tests use it to clean up). Unknown names are ignored."""
    if ARRIVALS.pop(name, None) is not None:
        for fn in _listeners:
            fn()


def on_arrivals_changed(fn: Callable[[], None]) -> None:
    """Call ``fn`` whenever the registry changes (the scenario model rebuilds its union of processes)."""
    _listeners.append(fn)


for _cls in (Periodic, Poisson, TraceArrivals, Closed):
    register_arrival(_cls)

__all__ = ["ARRIVALS", "MAX_S", "ArrivalInputs", "ArrivalProcess", "Closed", "Periodic", "Poisson", "SizeEstimate",
           "TraceArrivals", "cut", "on_arrivals_changed", "process_name", "register_arrival",
           "unregister_arrival"]
