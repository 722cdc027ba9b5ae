"""The scenario file (``scenarios/*.yaml``): streams of requests of one or several models on one platform.

A scenario says what runs on the SoC over time: streams, each a model with an arrival process, an optional
relative deadline, a priority and how many requests (or how much simulated time) to run, and the run-time
dispatch policy the serial devices use between requests. Validated by Pydantic like platforms (unknown fields are
errors with the closest known name; numbers strict: integers are :data:`hetsim.devices.fields.StrictInteger`, times
and rates :data:`hetsim.devices.fields.Real`). Times in seconds, rates in hertz. Example::

    name: camera
    dispatch: priority          # static | fifo | priority | edf (hetsim.sim.dispatch)
    contention: links           # as for `hetsim run --contention`
    seed: 1                     # random arrivals (poisson, periodic jitter)
    streams:
      detect:
        model: ../workloads/yolov5n.onnx     # relative to this file
        arrival: {process: periodic, period_s: 0.0333}
        deadline_s: 0.0333
        priority: 0             # lower is more urgent
        count: 300              # requests (or duration_s: simulated seconds of arrivals)
        warmup: 10              # first requests left out of the statistics
      classify:
        model: ../workloads/mobilenet_v2_int8_qdq.onnx
        arrival: {process: poisson, rate_hz: 20}
        priority: 1
        count: 300
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from hetsim.devices.fields import StrictInteger
from hetsim.errors import InputError
from hetsim.input_files import MAX_TEXT_TABLE_BYTES, csv_rows, read_input_text
from hetsim.platform import retype_field, tagged_union
from hetsim.scenario.arrivals import ARRIVALS, on_arrivals_changed
from hetsim.scenario.arrivals.base import MAX_S, SizeEstimate, Span
from hetsim.schedule import OBJECTIVES
from hetsim.size_limit import SizeLimit

__all__ = ["MAX_OPS", "Scenario", "ScenarioError", "Stream", "check_ops", "load_scenario", "max_ops"]

MAX_REQUESTS = 10_000_000

#: most simulated ops one scenario may replay (its streams' requests x (ops per request + 1), :func:`check_ops`)
#: unless ``--max-ops`` says otherwise. Ours: the replay ran 19,000-23,000 ops/s on a loaded 2-core machine
#: (YOLOv5n on puma, contention all / none) and a one-op model 16,700 requests/s in a whole run, so 10^7 take
#: 7-10 minutes there, and fewer on a quiet one; the shipped scenarios replay 5.5e4-1.1e5 ops.
MAX_OPS = 10_000_000
_OPS = SizeLimit("hetsim_max_ops", "--max-ops", MAX_OPS)


def max_ops(n: int | None):
    """Within the block (a context manager), scenarios may replay up to ``n`` simulated ops (``None``:
    :data:`MAX_OPS`).

    Raises:
        InputError: ``n`` is not a positive integer.
    """
    return _OPS.lifted_to(n)


def ops_limit() -> int:
    """The limit in force (:func:`max_ops`)."""
    return _OPS.get()


def check_ops(sizes: dict[str, SizeEstimate], ops: dict[str, int], source: str) -> None:
    """Refuse up front a scenario whose replay would simulate more ops than :func:`ops_limit`.

    The work is ``sum over streams of requests x (ops + 1)``: ``sizes`` holds each stream's requests where they
    are known before the replay (:meth:`~hetsim.scenario.arrivals.base.ArrivalProcess.requests`; a stream whose
    count is not known is left out), ``ops`` its model's op count. The ``+ 1`` is ours: a request's arrival,
    bookkeeping and row cost about one op (measured: a one-op model's requests ran at 16,700/s in a whole run, a
    YOLOv5n's ops at 19,000-23,000/s in the replay).

    Raises:
        ScenarioError: one line starting with ``source``: the estimate, each stream's part, the limit and the
            option that lifts it.
    """
    total = sum(s.requests * (ops[n] + 1) for n, s in sizes.items())
    limit = ops_limit()
    if total > limit:
        parts = "; ".join(f"stream {n!r}: {s.why} x {ops[n] + 1:,}" for n, s in sizes.items() if s.requests > 0)
        raise ScenarioError(f"{source}: about {total:.3g} simulated ops, requests x (ops + 1) ({parts}); hetsim "
                            f"replays at most "
                            f"{limit:,} in one scenario (minutes, not hours): fewer requests, or pass --max-ops N "
                            "(max_ops(N) in Python) to lift the limit")


def _option_value(value: object) -> object:
    """A mapper option's value as the file gives it: a number, a string or a boolean (the mapper checks its own
    options' values); anything else refused in one line (a union of the four types had given four)."""
    if isinstance(value, bool | int | float | str):
        return value
    raise PydanticCustomError("option_value", "expected a number, a string or a boolean")


#: a value of ``mapper_options``: a number, a string or a boolean, kept as given
OptionValue = Annotated[Any, BeforeValidator(_option_value)]


class ScenarioError(InputError):
    """A scenario file that cannot be read or is invalid."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _arrival_union():
    """The registered arrival processes (:data:`hetsim.scenario.arrivals.ARRIVALS`) as one Pydantic union
    discriminated by ``process``."""
    return tagged_union(tuple(ARRIVALS.values()), "process")


Arrival = _arrival_union()


class Stream(_Model):
    """One stream of requests of one model.

    Attributes:
        model: the model file (ONNX), relative to the scenario file.
        arrival: the arrival process, one of the registered ones (:mod:`hetsim.scenario.arrivals`).
        deadline_s: relative deadline (a request misses it when its latency exceeds it), or none.
        priority: for the ``priority`` dispatch policy: lower values are served first (0 is the most urgent).
        count: requests to run; or ``duration_s``: arrivals up to this simulated time (one of the two; a
            process whose arrivals end by themselves may give neither: a trace runs to its end).
        warmup: the first requests left out of the statistics (still simulated: they load the SoC).
    """

    model: str
    arrival: Arrival
    deadline_s: Span | None = Field(None, gt=0, le=MAX_S)
    priority: StrictInteger = Field(0, ge=-1_000_000, le=1_000_000)
    count: StrictInteger | None = Field(None, ge=1, le=MAX_REQUESTS)
    duration_s: Span | None = Field(None, gt=0, le=MAX_S)
    warmup: StrictInteger = Field(0, ge=0, le=MAX_REQUESTS)

    @model_validator(mode="after")
    def _length(self) -> Stream:
        if self.count is not None and self.duration_s is not None:
            raise ValueError("give count or duration_s, not both")
        if self.count is None and self.duration_s is None and not self.arrival.ends_itself:
            raise ValueError("give count (requests) or duration_s (simulated seconds of arrivals)")
        if self.count is not None and self.warmup >= self.count:
            raise ValueError(f"warmup ({self.warmup}) leaves no request of count ({self.count}) to measure")
        if self.count is None and self.duration_s is not None:
            # the arrivals before duration_s (a random process's expected number), where known: at most MAX_REQUESTS
            size = self.arrival.size(self.duration_s)
            if size is not None and size.requests > MAX_REQUESTS:
                raise ValueError(f"{size.why}; a stream runs at most {MAX_REQUESTS:,} ({size.remedy})")
        return self


class Scenario(_Model):
    """A scenario: named streams on one platform (given on the command line), a dispatch policy, contention,
    the seed of the random arrivals, the mapper each model is mapped with.

    Attributes:
        name: the scenario's name (default: the file's stem).
        streams: stream name -> :class:`Stream` (at least one).
        dispatch: the serial devices' policy between requests (``hetsim.sim.dispatch``: ``static``, ``fifo``,
            ``priority``, ``edf``; non-preemptive at op boundaries).
        contention: contention kinds (``"links,cim-bus"``, ``"all"``, ``"none"``).
        seed: seed of the random arrivals (same seed, same results).
        mapper: mapper of every model (each gets a static op -> device mapping); default ``heft``.
        objective: ``latency`` (each model's makespan, mapped in priority order sharing what is left) or
            ``throughput`` (all models at once: the busiest resource's load at the streams' rates, the resident
            capacities shared; ``cpsat`` exact, ``heft``/``greedy`` a heuristic).
        mapper_options: the mapper's options (``time_limit_s: 10`` for cpsat).
        timeline_requests: requests whose ops are kept for the trace and the timeline figure (the first ones).
    """

    name: str = ""
    streams: dict[str, Stream]
    dispatch: str = "fifo"
    contention: str = "none"
    seed: StrictInteger = Field(0, ge=0, le=2**63 - 1)
    mapper: str = "heft"
    objective: Literal[OBJECTIVES] = "latency"
    mapper_options: dict[str, OptionValue] = Field(default_factory=dict)
    timeline_requests: StrictInteger = Field(20, ge=0, le=100_000)

    @field_validator("streams", mode="before")
    @classmethod
    def _streams_shape(cls, v):
        if not isinstance(v, dict) or not v:
            got = "a list" if isinstance(v, list) else "nothing" if v is None or v == {} else type(v).__name__
            raise ValueError(f"give at least one stream, a mapping of stream name -> {{model, arrival, count}} "
                             f"(got {got})")
        return v

    @model_validator(mode="after")
    def _known(self) -> Scenario:
        from hetsim.sim.dispatch import DISPATCH

        if self.dispatch not in DISPATCH:
            from hetsim.errors import did_you_mean

            raise ValueError(f"unknown dispatch policy {self.dispatch!r}{did_you_mean(self.dispatch, DISPATCH)} "
                             f"Known: {', '.join(sorted(DISPATCH))}")
        return self


def _rebuild_arrival_union() -> None:
    """Rebuild :class:`Stream` (and :class:`Scenario`, which embeds it) so its ``arrival`` accepts every
    registered process (one registered at run time included)."""
    global Arrival
    Arrival = _arrival_union()
    retype_field(Stream, "arrival", Arrival, embedding=(Scenario,))


on_arrivals_changed(_rebuild_arrival_union)


def _check_mapper(sc: Scenario, p: Path) -> None:
    """The scenario's ``mapper`` and its ``mapper_options`` as :func:`hetsim.scenario.run.map_streams` takes them
    (``objective`` is the scenario's own field there): a registered mapper that takes every option, each value in
    its range (:func:`hetsim.mappers.get_mapper`).

    Raises:
        ScenarioError: one line starting with the file's path, as the scenario's other errors do.
    """
    from hetsim.mappers import MAPPERS, get_mapper
    from hetsim.mappers.base import _mapper_class

    if sc.mapper not in MAPPERS:  # maybe a plugin's (hetsim/plugins.py)
        from hetsim.plugins import load_plugins

        load_plugins()
    try:
        _mapper_class(sc.mapper)
    except InputError as err:
        raise ScenarioError(f"{p}: mapper: {err}") from None
    try:
        get_mapper(sc.mapper, **{k: v for k, v in sc.mapper_options.items() if k != "objective"})
    except InputError as err:
        raise ScenarioError(f"{p}: mapper_options: {err}") from None


def load_scenario(path: str | Path) -> tuple[Scenario, Path]:
    """Read and validate a scenario YAML file; returns the scenario and the folder its relative paths are in.

    Raises:
        ScenarioError: missing file, YAML syntax error, or a validation error (one line per problem naming the
            field path; an unknown field gets the closest known name); an unknown mapper, or an option it does not
            take or a value out of its range (:func:`_check_mapper`).
        InputError: a plugin module cannot be imported (:func:`hetsim.plugins.load_plugins`).
    """
    from hetsim.platform import read_yaml_model
    from hetsim.plugins import load_plugins

    load_plugins()  # the arrival processes (and mappers) of plugins (hetsim/plugins.py)
    p = Path(path)
    sc = read_yaml_model(p, Scenario, ScenarioError, "scenario file", "with 'streams'")
    _check_mapper(sc, p)
    if not sc.name:
        sc = sc.model_copy(update={"name": p.stem})
    return sc, p.resolve().parent


#: the top-level keys of an SNN spec (:class:`hetsim.snn.network.SnnSpec`'s required ones): a file with one is not
#: a scenario
SNN_KEYS = frozenset({"layers", "timesteps", "weights"})


def is_scenario_file(path: str | Path) -> bool:
    """True for a YAML file that is meant as a scenario (cheap: reads the file, no validation): its top level has
    ``streams``, or, with none of an SNN spec's keys (:data:`SNN_KEYS`), another field of :class:`Scenario`
    (``dispatch``, ``mapper``, ...) or it sits in a folder named ``scenarios`` (then even an empty file or a list
    is one, and the scenario loader says what is wrong with it)."""
    p = Path(path)
    if p.suffix.lower() not in (".yaml", ".yml") or not p.is_file():
        return False
    from hetsim.platform import read_yaml

    try:  # the guarded reader (size, aliases, nesting): a hostile file is refused here too
        data = read_yaml(p, InputError, "file")
    except InputError:
        return False  # not ours to judge here: the workload's own loader reports it
    under = p.resolve().parent.name == "scenarios"
    if not isinstance(data, dict):
        return under
    if "streams" in data:
        return True
    if data.keys() & SNN_KEYS:
        return False
    return under or bool(data.keys() & (set(Scenario.model_fields) - {"name"}))


def read_trace(path: Path, column: str) -> list[float]:
    """Arrival times (seconds, sorted) from a CSV file.

    Raises:
        ScenarioError: unreadable file, no such column, more rows than :data:`MAX_REQUESTS` (counted before a time
            is parsed), a value that is not a finite non-negative number.
    """
    text = read_input_text(path, "arrival trace", MAX_TEXT_TABLE_BYTES, ScenarioError)
    lines = text.splitlines()
    if not lines:
        return []
    head = csv_rows(lines[:1], str(path), ScenarioError)[0]
    try:
        float(head[0])
        idx, first = 0, 0
    except (ValueError, IndexError):
        if column not in head:
            raise ScenarioError(f"{path}: no column {column!r} (columns: {', '.join(head)})") from None
        idx, first = head.index(column), 1
    if len(lines) - first > MAX_REQUESTS:  # counted before any time is parsed or simulated
        raise ScenarioError(f"{path}: {len(lines) - first:,} arrival rows; a stream runs at most {MAX_REQUESTS:,} "
                            "requests (split the trace into several files or streams)")
    body = csv_rows(lines[first:], str(path), ScenarioError, first + 1)
    out = []
    for i, r in enumerate(body, start=first + 1):
        if first and r and len(r) != len(head):  # a row cut off, or a ragged table: not silently read
            raise ScenarioError(f"{path}: line {i} has {len(r)} fields, the header {len(head)}")
        try:
            t = float(r[idx])
        except (ValueError, IndexError):
            raise ScenarioError(f"{path}: line {i}: not a time in seconds: {r!r}") from None
        if not (0 <= t < MAX_S):
            raise ScenarioError(f"{path}: line {i}: arrival time {t} outside [0, {MAX_S:g}) s")
        out.append(t)
    return sorted(out)
