"""What an arrival process of a scenario's stream answers (:class:`ArrivalProcess`), and what it is given to
draw its arrivals (:class:`ArrivalInputs`).

The scenario's code (:mod:`hetsim.scenario.spec`, :mod:`hetsim.scenario.run`, :mod:`hetsim.scenario.report`)
asks a stream's process these questions and never names a process:

* its fields, validated by Pydantic (``process``: a ``Literal`` naming it, the tag of the file's ``arrival``);
* :meth:`~ArrivalProcess.times`: its arrival times, drawn from the stream's random generator (a closed loop: its
  first requests, all at 0) and :meth:`~ArrivalProcess.follow_up_s`: whether a finished request brings the next;
* :meth:`~ArrivalProcess.nominal_rate`: the rate it offers (the throughput objective weighs the stream by it);
* :attr:`~ArrivalProcess.closed_loop` and :meth:`~ArrivalProcess.never_saturated`: its saturation rule;
* :meth:`~ArrivalProcess.size`: how many requests a ``duration_s`` makes (the up-front request cap);
* :meth:`~ArrivalProcess.files`: the files it reads (a scenario sweep hashes them);
* what the report says of a stream of it without an offered rate.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

import numpy as np
from pydantic import AfterValidator, BaseModel, ConfigDict
from pydantic_core import PydanticCustomError

from hetsim.devices.fields import Real

__all__ = ["MAX_S", "MIN_RATE_HZ", "MIN_S", "ArrivalInputs", "ArrivalProcess", "Rate", "SizeEstimate", "Span",
           "cut"]

#: the largest time (s) a scenario file gives: an arrival time, a period, a deadline, a duration
MAX_S = 1e9
#: the shortest positive period, deadline, duration or think time (s) a scenario file gives (ours): 1 ps, far
#: below any event of a SoC hetsim models (0 stays 0 where a field allows it)
MIN_S = 1e-12
#: the lowest rate (Hz) a scenario file gives: one request per :data:`MAX_S` on average (a lower one puts the
#: requests past any time a scenario gives, where a float no longer resolves a latency)
MIN_RATE_HZ = 1 / MAX_S


def _span(value: float) -> float:
    if 0 < value < MIN_S:
        raise PydanticCustomError("time_too_short", "a time below {min} s is shorter than any event hetsim models; "
                                  "give at least {min} s", {"min": f"{MIN_S:g}"})
    return value


def _rate(value: float) -> float:
    if 0 < value < MIN_RATE_HZ:
        raise PydanticCustomError("rate_too_low", "a rate below {min} Hz (one request per {max} s, the longest "
                                  "time a scenario gives) puts its requests where no latency is resolved; give at "
                                  "least {min} Hz", {"min": f"{MIN_RATE_HZ:g}", "max": f"{MAX_S:g}"})
    return value


#: a time (s) that is 0 or at least :data:`MIN_S`: add the range with ``Field(...)``
Span = Annotated[Real, AfterValidator(_span)]
#: a rate (Hz) that is 0 or at least :data:`MIN_RATE_HZ`: add the range with ``Field(...)``
Rate = Annotated[Real, AfterValidator(_rate)]


@dataclass(frozen=True)
class ArrivalInputs:
    """What a stream's process draws its arrivals from.

    Attributes:
        rng: the stream's random generator (NumPy ``default_rng([seed, stream index])`` in a replay; the nominal
            rate is drawn from ``default_rng(0)``).
        read_times: reads a CSV file of arrival times: ``(path relative to the scenario file, column) -> sorted
            times in seconds`` (:func:`hetsim.scenario.spec.read_trace`; raises its one-line ``ScenarioError``).
        count: the stream's ``count`` (requests), or ``None``.
        duration_s: the stream's ``duration_s`` (arrivals strictly before it), or ``None``.
    """

    rng: np.random.Generator
    read_times: Callable[[str, str], list[float]]
    count: int | None = None
    duration_s: float | None = None


@dataclass(frozen=True)
class SizeEstimate:
    """How many requests a stream's ``duration_s`` makes (:meth:`ArrivalProcess.size`).

    Attributes:
        requests: the number (expected, for a random process; ``inf``: endlessly many).
        why: the words that say so (``"duration_s 10 at rate_hz 1e+06 makes about 1e+07 requests"``).
        remedy: what makes fewer (``"a shorter duration_s, or a count"``).
    """

    requests: float
    why: str
    remedy: str = "a shorter duration_s, or a count"


def cut(times: Iterable[float], count: int | None, duration_s: float | None) -> Iterator[float]:
    """``times`` (seconds, non-decreasing) up to ``count`` of them and strictly before ``duration_s``, up to float
    rounding (ours: 3 x 0.3 = 0.8999999999999999 is at 0.9, not before it). Lazy: one time past the last kept one
    is drawn, none further."""
    end = None if duration_s is None else duration_s * (1 - 1e-12)
    for i, t in enumerate(times):
        if (count is not None and i >= count) or (end is not None and t >= end):
            return
        yield t


class ArrivalProcess(BaseModel, abc.ABC):
    """An arrival process: how the requests of a stream arrive (the module doc lists what it answers).

    A subclass declares ``process: Literal["NAME"] = "NAME"``, its own fields (times in seconds, rates in hertz;
    :data:`hetsim.devices.fields.Real` and ``StrictInteger`` for strict numbers) and :meth:`times` and
    :meth:`nominal_rate`; the defaults of the rest describe an open process (arrivals that do not depend on the
    SoC). It is registered with :func:`hetsim.scenario.arrivals.register_arrival`.

    Attributes:
        closed_loop: ours, a closed loop's rule (class variable): the stream's arrivals follow the SoC's service,
            so it offers no rate (no offered rate is measured; the analytic bottleneck weighs it by its measured
            throughput; it loads no resource in the other streams' saturation verdicts; the rate scale is not
            defined). Its own verdict is :meth:`never_saturated`'s when that gives one.
        ends_itself: its arrivals end by themselves (a trace at its last time): a stream may give neither
            ``count`` nor ``duration_s`` (class variable).
        no_rate_label, no_rate_reason: what the report's offered-rate column says for a stream without an
            offered rate, and why it has none (class variables).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    process: str

    closed_loop: ClassVar[bool] = False
    ends_itself: ClassVar[bool] = False
    no_rate_label: ClassVar[str] = "n/a"
    no_rate_reason: ClassVar[str] = "an offered rate needs two measured arrival times"

    @abc.abstractmethod
    def times(self, inputs: ArrivalInputs) -> Iterator[float]:
        """The arrival times (seconds, non-decreasing, possibly endless; the caller cuts them at the stream's
        ``count`` and ``duration_s``, :meth:`arrivals`), random ones drawn from ``inputs.rng`` in order."""

    @abc.abstractmethod
    def nominal_rate(self, inputs: ArrivalInputs, costs: Any) -> float | None:
        """The rate (requests per second) a stream of this process offers, as the throughput objective weighs it
        and the analytic bottleneck is evaluated at; ``None``: none (the stream is left out of the loads).
        ``costs``: the stream's :class:`~hetsim.costs.CostModel` (a closed loop's rate depends on its model)."""

    def arrivals(self, inputs: ArrivalInputs) -> Iterator[float]:
        """The arrival times a stream makes: :meth:`times` cut at its ``count`` and ``duration_s`` (:func:`cut`)."""
        return cut(self.times(inputs), inputs.count, inputs.duration_s)

    def follow_up_s(self) -> float | None:
        """Seconds from a finished request to the next arrival it brings (a closed loop's think time), while the
        stream's ``count`` and ``duration_s`` allow one; ``None``: a finished request brings none."""
        return None

    def size(self, duration_s: float, alone_s: float | None = None) -> SizeEstimate | None:
        """How many requests ``duration_s`` makes, for the up-front cap on a stream's requests; ``None``: not
        known in advance. ``alone_s``: when every request of the stream runs alone on the SoC (the scenario's one
        stream, no sleeping device), its latency then (s), else ``None`` (at load time too)."""
        return None

    def requests(self, inputs: ArrivalInputs) -> SizeEstimate | None:
        """How many requests the stream makes, as known before the replay, for the up-front bound on a scenario's
        work (:func:`hetsim.scenario.spec.check_ops`): its ``count`` (at most that many), else :meth:`size` of
        its ``duration_s``; ``None``: not known in advance."""
        if inputs.count is not None:
            return SizeEstimate(inputs.count, f"count {inputs.count:,}")
        if inputs.duration_s is not None:
            return self.size(inputs.duration_s)
        return None

    def files(self) -> dict[str, str]:
        """The files the process reads: label -> path relative to the scenario file."""
        return {}

    def no_rate_note(self) -> str:
        """Why a stream of this process never has an offered rate (``"closed loop, 2 users"``), or ``""``: it
        has one when two measured requests arrived at different times."""
        return ""

    def never_saturated(self) -> str | None:
        """The saturation verdict of a stream that is never saturated, in words (``"closed loop: at most 2 in
        flight"``); ``None``: judged by the analytic loads and the backlog's trend."""
        return None
