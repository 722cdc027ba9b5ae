"""Poisson arrivals: exponential inter-arrival times."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

from pydantic import Field

from hetsim.scenario.arrivals.base import ArrivalInputs, ArrivalProcess, Rate, SizeEstimate

__all__ = ["Poisson"]


class Poisson(ArrivalProcess):
    """Poisson arrivals: exponential inter-arrival times of mean ``1 / rate_hz`` (from the scenario's seed)."""

    process: Literal["poisson"] = "poisson"
    rate_hz: Rate = Field(gt=0, le=1e12)

    def times(self, inputs: ArrivalInputs) -> Iterator[float]:
        """Running sums of ``rng.exponential(1 / rate_hz)`` (the first arrival after 0)."""
        rng = inputs.rng
        t = 0.0
        while True:
            t += rng.exponential(1.0 / self.rate_hz)
            yield t

    def nominal_rate(self, inputs: ArrivalInputs, costs: Any) -> float:
        """``rate_hz``."""
        return self.rate_hz

    def size(self, duration_s: float, alone_s: float | None = None) -> SizeEstimate:
        """The expected arrivals before ``duration_s``: ``duration_s x rate_hz``."""
        n = duration_s * self.rate_hz
        return SizeEstimate(n, f"duration_s {duration_s:g} at rate_hz {self.rate_hz:g} makes about {n:.3g} "
                               "requests")
