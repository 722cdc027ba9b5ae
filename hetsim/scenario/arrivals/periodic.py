"""Periodic arrivals: a request every ``period_s``, optionally jittered."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

from pydantic import Field, model_validator

from hetsim.devices.fields import Real
from hetsim.scenario.arrivals.base import MAX_S, ArrivalInputs, ArrivalProcess, SizeEstimate, Span

__all__ = ["Periodic"]


class Periodic(ArrivalProcess):
    """A request every ``period_s``, the first at ``offset_s``; ``jitter_s``: each arrival moved by a uniform
    random amount in ``[0, jitter_s)`` (from the scenario's seed), at most ``period_s`` so that the arrivals stay
    in order (a larger jitter is refused: an arrival drawn before the previous one would arrive with it, not at
    its time)."""

    process: Literal["periodic"] = "periodic"
    period_s: Span = Field(gt=0, le=MAX_S)
    offset_s: Real = Field(0.0, ge=0, le=MAX_S)
    jitter_s: Real = Field(0.0, ge=0, le=MAX_S)

    @model_validator(mode="after")
    def _in_order(self) -> Periodic:
        if self.jitter_s > self.period_s:
            raise ValueError(f"jitter_s ({self.jitter_s:g}) above period_s ({self.period_s:g}) would put arrivals "
                             "out of order; give at most period_s")
        return self

    def times(self, inputs: ArrivalInputs) -> Iterator[float]:
        """``offset_s + i period_s`` for i = 0, 1, ..., each plus ``rng.uniform(0, jitter_s)`` when jittered."""
        rng = inputs.rng
        i = 0
        while True:
            t = self.offset_s + i * self.period_s
            yield t + (rng.uniform(0, self.jitter_s) if self.jitter_s > 0 else 0.0)
            i += 1

    def nominal_rate(self, inputs: ArrivalInputs, costs: Any) -> float:
        """``1 / period_s``."""
        return 1.0 / self.period_s

    def size(self, duration_s: float, alone_s: float | None = None) -> SizeEstimate:
        """The arrivals before ``duration_s``: ``(duration_s - offset_s) / period_s + 1``."""
        n = (duration_s - self.offset_s) / self.period_s + 1
        return SizeEstimate(n, f"duration_s {duration_s:g} at period_s {self.period_s:g} makes about {n:.3g} "
                               "requests")
