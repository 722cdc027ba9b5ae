"""A closed loop: a fixed population of requests, each finished one followed by the next after a think time."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import repeat
from typing import Any, ClassVar, Literal

from pydantic import Field

from hetsim.devices.fields import StrictInteger
from hetsim.scenario.arrivals.base import MAX_S, ArrivalInputs, ArrivalProcess, SizeEstimate, Span

__all__ = ["Closed"]


class Closed(ArrivalProcess):
    """A closed loop: ``population`` requests in flight (default 1); each finished one is followed, ``think_s``
    later, by the next (the first ``population`` arrive at 0). Its arrivals follow the SoC's service: it offers
    no rate and is never saturated (:attr:`~hetsim.scenario.arrivals.base.ArrivalProcess.closed_loop`)."""

    process: Literal["closed"] = "closed"
    think_s: Span = Field(0.0, ge=0, le=MAX_S)
    population: StrictInteger = Field(1, ge=1, le=100_000)

    closed_loop: ClassVar[bool] = True
    no_rate_label: ClassVar[str] = "closed"
    no_rate_reason: ClassVar[str] = "a closed loop's rate follows the SoC's service"

    def times(self, inputs: ArrivalInputs) -> Iterator[float]:
        """The first ``population`` requests, at 0; the rest follow finished ones (:meth:`follow_up_s`)."""
        return repeat(0.0, self.population)

    def follow_up_s(self) -> float:
        """``think_s``."""
        return self.think_s

    def nominal_rate(self, inputs: ArrivalInputs, costs: Any) -> float:
        """The most it could offer (ours): ``population`` requests per cycle of ``think_s`` plus the model's
        critical path with every op on its fastest device (1/s when that cycle is 0)."""
        g = costs.workload.graph
        fin: dict[str, float] = {}
        for v in costs.workload.topological_order():
            fin[v] = max((fin[u] for u in g.predecessors(v)), default=0.0) + min(costs.latency[v].values())
        cycle = self.think_s + max(fin.values(), default=0.0)
        return self.population / cycle if cycle > 0 else 1.0

    def size(self, duration_s: float, alone_s: float | None = None) -> SizeEstimate | None:
        """Exact only for one user whose requests run alone (ours): each takes ``alone_s``, the user's arrivals
        are at ``k (think_s + alone_s)`` while before ``duration_s``, i.e. ``duration_s / (think_s + alone_s)``
        requests (endlessly many when that cycle is 0). Several users queue behind each other (their latencies
        have no bound known in advance): ``None``, as without ``alone_s``."""
        if alone_s is None or self.population != 1:
            return None
        cycle = self.think_s + alone_s
        n = float("inf") if cycle <= 0 else duration_s / cycle
        many = "endlessly many requests at t = 0" if cycle <= 0 else f"about {n:.3g} requests"
        return SizeEstimate(n, f"a closed loop of one user, duration_s {duration_s:g} at think_s {self.think_s:g} "
                               f"+ {alone_s:.3g} s per request makes {many}",
                            "a shorter duration_s, a longer think_s, or a count")

    def no_rate_note(self) -> str:
        """``"closed loop, N users"``."""
        n = self.population
        return f"closed loop, {n} user{'' if n == 1 else 's'}"

    def never_saturated(self) -> str:
        """``"closed loop: at most N in flight"``."""
        return f"closed loop: at most {self.population} in flight"
