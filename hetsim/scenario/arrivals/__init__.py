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

from hetsim.scenario.arrivals.base import MAX_S, ArrivalInputs, ArrivalProcess, SizeEstimate, cut
from hetsim.scenario.arrivals.closed import Closed
from hetsim.scenario.arrivals.periodic import Periodic
from hetsim.scenario.arrivals.poisson import Poisson
from hetsim.scenario.arrivals.trace import TraceArrivals
from hetsim.tagged_registry import TaggedRegistry

_REGISTRY = TaggedRegistry(ArrivalProcess, "process", "arrival process", "an")
#: process name -> class, in registration order (the order error messages list them in)
ARRIVALS: dict[str, type[ArrivalProcess]] = _REGISTRY.classes
#: the name a process class declares: the default of its ``process`` field (TypeError without one)
process_name = _REGISTRY.name_of
#: make a class an arrival process of the scenario file (usable as a class decorator; TypeError, ValueError)
register_arrival = _REGISTRY.register
#: remove a process registered at run time (tests use it to clean up); unknown names are ignored
unregister_arrival = _REGISTRY.unregister
#: call a function whenever the registry changes (the scenario model rebuilds its union of processes)
on_arrivals_changed = _REGISTRY.on_change


for _cls in (Periodic, Poisson, TraceArrivals, Closed):
    register_arrival(_cls)

__all__ = ["ARRIVALS", "MAX_S", "ArrivalInputs", "ArrivalProcess", "Closed", "Periodic", "Poisson", "SizeEstimate",
           "TraceArrivals", "cut", "on_arrivals_changed", "process_name", "register_arrival",
           "unregister_arrival"]
