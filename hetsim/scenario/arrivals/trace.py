"""Arrivals read from a file: a CSV column of arrival times."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar, Literal

import numpy as np

from hetsim.scenario.arrivals.base import ArrivalInputs, ArrivalProcess, SizeEstimate

__all__ = ["TraceArrivals"]


class TraceArrivals(ArrivalProcess):
    """Arrival times read from a CSV file (``file``, relative to the scenario): one time in seconds per row, in
    the column ``column`` (default ``arrival_s``) or the first column when there is no header. A stream of it
    runs to the trace's end unless ``count`` or ``duration_s`` cut it."""

    process: Literal["trace"] = "trace"
    file: str
    column: str = "arrival_s"

    ends_itself: ClassVar[bool] = True

    def times(self, inputs: ArrivalInputs) -> Iterator[float]:
        """The file's times, sorted (read when called: a missing or bad file raises here, in one line)."""
        return iter(inputs.read_times(self.file, self.column))

    def nominal_rate(self, inputs: ArrivalInputs, costs: Any) -> float | None:
        """The arrivals the stream makes (``count`` and ``duration_s`` cut) before its last, over their span (as
        :func:`hetsim.scenario.run.rates_measured` counts the offered rate); ``None`` when they are all at one
        instant (an instantaneous burst, or one arrival: no span, no rate)."""
        t = np.fromiter(self.arrivals(inputs), dtype=float)
        # arrivals in [first, last) over that span, as the measured offered rate (rates_measured)
        return float(np.count_nonzero(t < t[-1])) / (t[-1] - t[0]) if len(t) > 1 and t[-1] > t[0] else None

    def requests(self, inputs: ArrivalInputs) -> SizeEstimate:
        """The arrivals the stream makes, counted: the file's times cut at ``count`` and ``duration_s`` (the file
        is read; a file of more rows than a stream runs is refused while it is read)."""
        n = sum(1 for _ in self.arrivals(inputs))
        return SizeEstimate(n, f"{n:,} arrivals of {self.file}", "a shorter trace, or a count")

    def files(self) -> dict[str, str]:
        """``{"trace": file}``."""
        return {"trace": self.file}
