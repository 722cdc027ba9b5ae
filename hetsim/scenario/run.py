"""Run a scenario: many requests of one or several models on one platform, in one SimPy replay.

Every model gets a static op -> device mapping (its stream's mapper), the models sharing the accelerators'
resident capacities (crossbars, weight SRAM): streams are mapped in priority order (then file order), each with
what the streams before it left. Requests arrive as SimPy events (:mod:`hetsim.scenario.arrivals`
processes); each request replays its model's schedule (:class:`hetsim.sim.engine.Request`) on one shared
:class:`~hetsim.sim.engine.Hardware`, whose serial devices serve waiting requests by the scenario's dispatch policy
(:mod:`hetsim.sim.dispatch`; non-preemptive at op boundaries). Within a request a serial device keeps the
schedule's order. Ours (the papers define one inference): an op on a device whose ops overlap freely (a PUMA
CIM, weight-stationary) holds its own crossbars while it runs, so two requests of one op take turns on them.

With one request the replay is exactly :func:`hetsim.sim.simulate`'s (tested for every mapper).

Memory stays flat in the number of finished requests: a finished request keeps one row (``requests.csv``);
only the first ``timeline_requests`` keep their ops' trace rows.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import simpy

from hetsim.costs import CostModel
from hetsim.errors import InputError
from hetsim.input_files import resolved_path
from hetsim.numbers import format_column, format_number, format_value
from hetsim.platform import Platform, load_platform
from hetsim.scenario.arrivals import ARRIVALS, ArrivalInputs
from hetsim.scenario.spec import (
    MAX_REQUESTS,
    Scenario,
    ScenarioError,
    Stream,
    check_ops,
    load_scenario,
    read_trace,
)
from hetsim.scenario.stats import PERCENTILES, batch_means, mean_ci, quantile_ci, t_interval
from hetsim.schedule import OBJECTIVES, Schedule
from hetsim.sim.contention import parse_contention
from hetsim.sim.dispatch import get_dispatch
from hetsim.sim.engine import TRACE_COLUMNS, Hardware, Plan, Request

__all__ = ["REQUEST_COLUMNS", "ScenarioResult", "StreamModel", "run_scenario"]

REQUEST_COLUMNS = ["stream", "index", "arrival_s", "start_s", "finish_s", "latency_s", "deadline_s",
                   "deadline_met", "energy_j", "warmup"]


@dataclass
class StreamModel:
    """One stream's model as mapped for the scenario.

    Attributes:
        name, stream: the stream's name and spec.
        costs, schedule: its cost model (with the resident budget it was mapped with) and static schedule.
        makespan_s: one request alone on the SoC (the schedule's replay without queueing).
        energy_j: energy attributed to one request: the active energy of its ops and transfers
            (``active_w`` x duration) plus the kinds' per-op and per-byte energies; idle energy is the SoC's.
        busy_s: per device and link, seconds one request keeps it busy (unit-seconds on a serial device); the
            load a stream offers is ``rate x busy_s``.
        rate_hz: the rate the stream offers (:func:`stream_rate`), as the throughput objective weighs it;
            ``None`` for a trace whose arrivals are all at one instant (no rate).
        alone: that request's replay (:class:`~hetsim.sim.engine.SimResult`), kept for the activation check
            after every stream is mapped (:func:`_check_memories`).
        activation_peak: checked memory -> ``(peak bytes, bytes available)``: one request's live activations at
            their peak (the larger of the replay's and the mapper's predicted timing) and what every stream's
            weights leave of the memory (:func:`_check_memories`; the in-flight bound, :func:`in_flight_notes`).
    """

    name: str
    stream: Stream
    costs: CostModel
    schedule: Schedule
    plan: Plan
    makespan_s: float
    energy_j: float
    busy_s: dict[str, float]
    op_j: dict[str, float]
    bytes: dict[str, float]
    rate_hz: float | None = 0.0
    alone: object = None
    activation_peak: dict = field(default_factory=dict)


@dataclass(repr=False)
class ScenarioResult:
    """What a scenario run produced.

    Attributes:
        scenario, platform: the inputs.
        models: stream name -> :class:`StreamModel`.
        requests: one row per request (:data:`REQUEST_COLUMNS`; times in seconds).
        streams: one row per stream: requests served (after warm-up), throughput, latency mean / p50 / p95 /
            p99 / max, deadline-miss rate, offered rate (``offered_note``: why there is none, a closed loop
            "closed loop, N users", "one request"), saturation verdict, ``energy_per_request_j``: the active
            energy of one request's own ops and transfers (no idle energy; ``summary["energy_per_request_j"]`` is
            the other definition: every joule over the simulated time, idle included, over every request).
        devices: one row per device and link: busy seconds, utilisation over the simulated time, energy (active,
            idle, per-op, per-byte), ``offered_load``: the open streams' offered rate x busy time per request /
            units (above 1 the device cannot keep up: the SoC saturates; closed loops and streams without a
            measured rate, ``offered_note``, offer none; NaN when no stream offers one).
        trace: the trace rows of the first ``timeline_requests`` requests, with ``stream`` and ``request``.
        summary: JSON-able headline numbers (``summary.json``), with ``objective`` and ``bottleneck`` (the
            mapping's analytic bottleneck: resource, load at the offered rates, ``max_rate_scale`` = 1 / load).
        comparison: with ``compare``: per objective (``latency``, ``throughput``) and stream, the replayed
            throughput and latency and the mapping's analytic bottleneck; else ``None``.
        loads: which streams and op types load each device and weight memory (:func:`load_breakdown`);
            ``summary["load_breakdown"]`` holds it per resource, and ``summary["relief"]`` why each saturated
            device is saturated and which of its ops another device could run (:func:`relief`).
        replications: with ``replications > 1``: one row per replication (its ``seed``) and stream, the
            statistics of :data:`REPLICATED` and whether each percentile was determined; ``summary["replications"]``
            holds their mean and t-interval (:func:`replication_summary`); else ``None``. Every other table is the
            first replication's (the scenario's seed).
    """

    scenario: Scenario
    platform: Platform
    models: dict[str, StreamModel]
    requests: pd.DataFrame
    streams: pd.DataFrame
    devices: pd.DataFrame
    trace: pd.DataFrame
    summary: dict = field(default_factory=dict)
    comparison: pd.DataFrame | None = None
    loads: pd.DataFrame | None = None
    replications: pd.DataFrame | None = None

    def __repr__(self) -> str:
        """One screen: the scenario, the platform, the requests and the simulated time, one line per stream
        (served, throughput, p50 / p99 latency, deadline misses, saturation) and the energy; the tables are the
        attributes (``streams``, ``requests``, ``devices``, ``trace``)."""
        s = self.summary
        n = s.get("requests", len(self.requests))
        head = (f"<ScenarioResult {s.get('scenario')} on {s.get('platform')}: {n:,} requests in "
                f"{format_value(s.get('simulated_s'), 's')} simulated, mapper {s.get('mapper')}, "
                f"energy {format_value(s.get('energy_j'), 'J')}")
        lines = [head]
        for row in self.streams.to_dict(orient="records")[:12]:
            p50, p99 = format_column([row.get("latency_p50_s"), row.get("latency_p99_s")], "s", each=True)
            miss = row.get("deadline_miss")
            lines.append(f"  {row['stream']}: {row['measured']:,} served, {format_number(row.get('throughput_hz'))}/s, "
                         f"p50 {p50}, p99 {p99}"
                         + ("" if miss is None or miss != miss else f", deadline missed {miss:.1%}")
                         + (", SATURATED" if row.get("saturated") else ""))
        if len(self.streams) > 12:
            lines.append(f"  ... and {len(self.streams) - 12} more streams")
        lines.append("  tables: streams, requests, devices, trace; figures: plot_latency(), plot_timeline(), "
                     "plot_occupancy()>")
        return "\n".join(lines)

    def _figure(self, draw, path):
        from hetsim.analysis.plots import save_figure

        fig = draw(self)
        if path is not None:
            save_figure(fig, path, close=False)
        return fig

    def plot_latency(self, path=None):
        """The latency CDF of each stream's measured requests, deadlines dashed
        (:func:`hetsim.scenario.figures.plot_latency_cdf`), as a matplotlib Figure; also saved to ``path`` when
        given (PNG, SVG or PDF by suffix). The figure stays open (``plt.close(fig)`` when done)."""
        from hetsim.scenario.figures import plot_latency_cdf

        return self._figure(plot_latency_cdf, path)

    def plot_timeline(self, path=None):
        """The first ``timeline_requests`` requests' ops and transfers per device and link, coloured by stream,
        each lane with its busy share (:func:`hetsim.scenario.figures.plot_timeline`), as a matplotlib Figure;
        also saved to ``path`` when given."""
        from hetsim.scenario.figures import plot_timeline

        return self._figure(plot_timeline, path)

    def plot_occupancy(self, path=None):
        """Requests in flight per stream over the simulated time and each device's utilisation
        (:func:`hetsim.scenario.figures.plot_occupancy`), as a matplotlib Figure; also saved to ``path`` when
        given."""
        from hetsim.scenario.figures import plot_occupancy

        return self._figure(plot_occupancy, path)


# ------------------------------------------------------------------------------------------------ mapping


def model_frontend(path: Path):
    """The front end that reads a stream's model file ``path`` (not read; it may not exist).

    Raises:
        ScenarioError: no front end reads it, or it is not a tensor-operator model (an SNN spec, a NIR graph).
    """
    from hetsim.workload.frontends import frontend_for
    from hetsim.workload.kinds import DAG

    try:
        fe = frontend_for(path)
    except InputError as err:
        raise ScenarioError(f"a scenario stream's model: {err}") from None
    if fe.kind != DAG:
        raise ScenarioError(f"{path}: a scenario stream's model is a tensor-operator model (.onnx, .pt2), not "
                            f"{fe.description}")
    return fe


def _load_model(path: Path):
    return model_frontend(path).read(path)


def map_streams(platform: Platform, scenario: Scenario, folder: Path, mapper: str | None = None,
                contention: frozenset[str] = frozenset(), workloads: dict | None = None,
                objective: str | None = None, rates: dict[str, float] | None = None,
                source: str | None = None) -> dict[str, StreamModel]:
    """Map every stream's model (shared resident capacities, see the module doc) and price one request.
    ``workloads``: stream name -> a :class:`~hetsim.workload.Workload` used instead of its ``model`` file.
    ``objective``: ``latency`` (each model's makespan, mapped in priority order with the capacity the streams
    before it left) or ``throughput`` (every model at once, :func:`map_throughput`); default the scenario's.
    ``rates``: stream name -> its offered rate (:attr:`StreamModel.rate_hz` of an earlier mapping), else
    :func:`stream_rate` (which reads a trace stream's file), and then, before any mapping, the scenario's work is
    checked against the bound (:func:`~hetsim.scenario.spec.check_ops`; ``source``: what its refusal names,
    default ``scenario 'NAME'``), each trace file read once for both.

    Raises:
        InputError: a model file is missing or invalid; a mapper fails or finds no mapping in the budget left.
        ScenarioError: the scenario's work past the bound.
    """
    from hetsim.mappers import get_mapper

    mapper = mapper or scenario.mapper
    objective = objective or scenario.objective
    items = sorted(enumerate(scenario.streams.items()), key=lambda x: (x[1][1].priority, x[0]))
    cache: dict[Path, object] = {}
    opts = dict(scenario.mapper_options) if mapper == scenario.mapper else {}
    opts.pop("objective", None)
    costs_of: dict[str, CostModel] = {}
    for _, (name, st) in items:
        if workloads and name in workloads:
            wl = workloads[name]
        else:
            path = resolved_path(folder / st.model, "a scenario stream's model", ScenarioError)
            wl = cache.get(path) or cache.setdefault(path, _load_model(path))
        costs_of[name] = CostModel(wl, platform)
    if rates is None:
        read = _read_once(folder)
        sizes = {name: st.arrival.requests(_inputs(st, folder, np.random.default_rng(0), read))
                 for _, (name, st) in items}
        check_ops({n: x for n, x in sizes.items() if x is not None},
                  {n: len(c.workload) for n, c in costs_of.items()}, source or f"scenario {scenario.name!r}")
        rates = {name: stream_rate(st, folder, costs_of[name], read) for _, (name, st) in items}
    out: dict[str, StreamModel] = {}
    if objective == "throughput":
        from hetsim.mappers.base import _mapper_class

        burst = next((n for n, x in rates.items() if x is None), None)
        if burst is not None:
            raise ScenarioError(f"objective throughput: stream {burst!r} offers no rate (its trace's arrivals are "
                                "all at one instant) for the throughput objective to weigh it by; map for latency")

        if getattr(_mapper_class(mapper), "throughput_method", None) is None:
            raise InputError(f"objective throughput: mapper {mapper!r} has none (cpsat solves it exactly; heft and "
                             "greedy have a heuristic)")
        scheds = map_throughput(costs_of, rates, get_mapper(mapper, **opts, objective="throughput"), contention)
        for name, sched in scheds.items():
            out[name] = _price(name, scenario.streams[name], costs_of[name], sched, platform, contention, rates[name])
        _check_memories(platform, out)
        return {n: out[n] for n in scenario.streams}
    left: dict[str, int] | None = None
    from hetsim.weights import memory_use

    mem_left = {n: m.size_bytes for n, m in platform.memories.items() if m.weights_for}
    for _, (name, st) in items:
        costs = costs_of[name]
        if left is None:
            left = dict(costs.budget)
        costs.budget.update(left)
        sched = get_mapper(mapper, **opts).map(_with_memory_left(costs, mem_left))
        bound = costs.for_schedule(sched)
        need = bound.need  # streamed and reprogrammed ops keep none (hetsim.weights)
        for mem, used in memory_use(costs, getattr(bound, "weight_steps", {})).items():
            mem_left[mem] -= used
        for v, d in sched.assignment.items():
            if d in left and v not in sched.splits:
                left[d] -= need.get(v, {}).get(d, 0)
        for v, parts in sched.splits.items():
            for d in parts:
                if d in left:
                    left[d] -= costs.need.get(v, {}).get(d, 0)
        out[name] = _price(name, st, costs, sched, platform, contention, rates[name])
    _check_memories(platform, out)
    return {n: out[n] for n in scenario.streams}


def _with_memory_left(costs: CostModel, mem_left: dict[str, int]) -> CostModel:
    """``costs``, or when streams mapped before have put weights in a memory (``mem_left``: memory -> bytes it
    still holds), a cost model of the same workload and budget on the platform with those memories shrunk to what
    is left: the mapper's weight policies then share each memory's capacity as the resident capacities are
    shared (the mapper reads a memory's ``size_bytes``)."""
    plat = costs.platform
    shrink = {f"memories.{n}.size_kib": max(b, 0) / 1024 or 1e-9 for n, b in mem_left.items()
              if b < plat.memories[n].size_bytes}
    if not shrink:
        return costs
    c = CostModel(costs.workload, plat.with_overrides(shrink, name=plat.name))
    c.budget.update(costs.budget)
    return c


def _require_activations_fit(name: str, costs: CostModel, sched: Schedule, alone, weights=None) -> dict:
    """One request of stream ``name`` alone (its replay ``alone``, and the mapper's predicted timing) fits each
    checked memory beside the weights it holds (``weights``: memory -> bytes, default the stream's own). Returns
    checked memory -> ``(peak bytes, bytes available)`` (:attr:`StreamModel.activation_peak`).

    Raises:
        MemoryCapacityError: one line naming the stream, the memory, the peak and the room (a scenario does not
            spill activations).
    """
    from hetsim.analysis.footprint import MemoryCapacityError, require_fits, run_footprints

    peaks: dict[str, tuple[int, int]] = {}
    for fp in run_footprints(costs, sched, alone, weights=weights).values():
        for mem in fp.checked:
            avail = fp.available(mem)
            if avail is not None:
                peaks[mem] = (max(fp.peak(mem)[0], peaks.get(mem, (0, 0))[0]), avail)
        try:
            require_fits(fp)
        except MemoryCapacityError as err:  # the single run's sentence, naming the stream; no --spill here
            what = str(err).partition("; map it differently")[0]
            what = what.replace("the schedule needs", f"one request of {costs.workload.name} needs", 1)
            raise MemoryCapacityError(f"stream {name!r}: {what}; a scenario does not spill activations: map it "
                                      "differently or give the memory more capacity") from None
    return peaks


def _check_memories(platform: Platform, models: dict[str, StreamModel]) -> None:
    """After every stream is mapped: refuse mappings whose streamed and reprogrammed weights exceed a memory's
    capacity together, then check one request of each stream (its replay kept on :attr:`StreamModel.alone`)
    beside the weights of every stream (:func:`_require_activations_fit`; one stream: its own).

    Raises:
        InputError: one line naming the memory, the bytes the streams need together (and each's) and its capacity.
        MemoryCapacityError: one request's live activations do not fit beside the weights.
    """
    from hetsim.weights import memory_use

    per: dict[str, dict[str, int]] = {}
    for n, m in models.items():
        for mem, used in memory_use(m.costs, getattr(m.plan.costs, "weight_steps", {})).items():
            if used:
                per.setdefault(mem, {})[n] = used
    for mem, by in per.items():
        cap = platform.memories[mem].size_bytes
        if sum(by.values()) > cap:
            each, total = ", ".join(f"{n} {b:,} B" for n, b in by.items()), sum(by.values())
            raise InputError(f"memory {mem}: the streams' streamed and reprogrammed weights need {total:,} B "
                             f"together ({each}), more than its {cap:,} B; give it more capacity or fewer streams")
    shared = {mem: sum(by.values()) for mem, by in per.items()}
    for n, m in models.items():  # each stream's activations beside every stream's weights (its own or not)
        m.activation_peak = _require_activations_fit(n, m.costs, m.schedule, m.alone, weights=shared)


def _price(name: str, st: Stream, costs: CostModel, sched: Schedule, platform: Platform,
           contention: frozenset[str], rate_hz: float | None) -> StreamModel:
    """One request of ``sched`` alone on the SoC: its makespan, energy, busy time per device and link.

    The replay is kept (:attr:`StreamModel.alone`): :func:`_check_memories` checks its live activations (the
    check a single run makes) once every stream is mapped, beside every stream's weights.
    """
    from hetsim.analysis.metrics import device_table
    from hetsim.sim import simulate

    alone = simulate(costs, sched, contention)
    dev = device_table(costs, alone).set_index("device")
    busy = dev["busy_s"].to_dict()
    active = sum(float(cfg.active_w) * busy[n] for n, cfg in [*costs.devices.items(), *platform.links.items()])
    e = active + float(dev["op_j"].sum() + dev["transfer_j"].sum())
    return StreamModel(name, st, costs, sched, Plan(costs, sched, contention), alone.makespan_s, e, busy,
                       dev["op_j"].to_dict(), dev["bytes"].to_dict(), rate_hz, alone)


def stream_rate(st: Stream, folder: Path, costs: CostModel, read=None) -> float | None:
    """The rate (requests per second) a stream offers, as the throughput objective weighs it: its arrival
    process's nominal rate (:meth:`~hetsim.scenario.arrivals.base.ArrivalProcess.nominal_rate`; ``1 / period_s``,
    ``rate_hz``, a trace's arrivals before its last over its span, a closed loop's most), drawn from
    ``default_rng(0)`` where random; ``None``: it offers none (a trace whose arrivals are all at one instant).
    ``read``: the reader of arrival-time files (:func:`_inputs`)."""
    return st.arrival.nominal_rate(_inputs(st, folder, np.random.default_rng(0), read), costs)


def map_throughput(costs_of: dict[str, CostModel], rates: dict[str, float], mapper,
                   contention: frozenset[str]) -> dict[str, Schedule]:
    """Every stream's model mapped at once for the throughput objective (:func:`hetsim.mappers._throughput.
    map_joint`: the busiest resource's load over all streams at their ``rates``, the shared capacities)."""
    from hetsim.mappers._throughput import Part, map_joint

    parts = [Part(n, costs_of[n], rates[n]) for n in costs_of]
    return map_joint(mapper, parts, contention).schedules


def analytic_loads(models: dict[str, StreamModel], rates: dict[str, float],
                   contention: frozenset[str]) -> tuple[dict[str, float], str, float]:
    """Every resource's load (:class:`hetsim.mappers._throughput.LoadModel`: rate x seconds per request / units)
    of the models' mappings at ``rates``: ``(loads by resource, the bottleneck resource, its load)``; ``1 / load``
    is the most the offered rates can be scaled by.

    The costs are the replay's: each schedule's bound cost model (:meth:`~hetsim.costs.CostModel.for_schedule`),
    so a streamed op counts ``max(read, compute)`` or ``read + compute`` and a reprogrammed one its read, writes
    and passes (:mod:`hetsim.weights`). Two resources the replay serialises across requests are added: with
    ``memory`` contention, each memory's port (``"dram port"``: it serves one weight read at a time, load = rate x
    the reads' seconds); and each device whose ops overlap (a PUMA CIM) but whose reprogrammed ops take turns on
    its time-shared crossbars (``"cim time-shared crossbars"``: rate x those ops' latencies). Without ``memory``
    contention weight reads overlap freely and no port is a resource (as in the replay)."""
    from hetsim.mappers._throughput import bottleneck

    per, label = _load_terms(models, rates, contention)
    loads: dict[tuple, float] = {}
    for part in per.values():
        for k, x in part.items():
            loads[k] = loads.get(k, 0.0) + x
    key, val = bottleneck(loads)
    return ({label(k): x for k, x in sorted(loads.items(), key=lambda kv: -kv[1])},
            label(key) if key is not None else "", val)


def stream_loads(models: dict[str, StreamModel], rates: dict[str, float],
                 contention: frozenset[str]) -> dict[str, dict[str, float]]:
    """Each stream's share of :func:`analytic_loads` (stream -> resource -> load; the shares sum to it)."""
    per, label = _load_terms(models, rates, contention)
    return {n: {label(k): x for k, x in part.items()} for n, part in per.items()}


def _load_terms(models: dict[str, StreamModel], rates: dict[str, float], contention: frozenset[str]):
    """``(stream -> resource key -> load, the keys' labeller)`` for :func:`analytic_loads`."""
    from hetsim.mappers._throughput import LoadModel, Part

    names = list(models)
    bound = {n: models[n].costs.for_schedule(models[n].schedule) for n in names}
    lm = LoadModel([Part(n, bound[n], rates[n]) for n in names], contention)
    per: dict[str, dict[tuple, float]] = {}
    labels: dict[tuple, str] = {}
    for i, n in enumerate(names):  # one model per stream (loads are additive), its op keys renumbered
        alone = LoadModel([lm.parts[i]], contention).loads([dict(models[n].schedule.assignment)])
        part = per[n] = {(k[0], i, *k[2:]) if k[0] == "own" else k: x for k, x in alone.items()}
        serial = bound[n].serial_devices()
        for st in getattr(bound[n], "weight_steps", {}).values():
            if "memory" in contention and st.read_s > 0:
                key = ("memory port", st.memory)
                part[key] = part.get(key, 0.0) + rates[n] * st.read_s
                labels[key] = f"{st.memory} port"
            if st.policy == "reprogrammed" and st.device not in serial:
                key = ("time-shared", st.device)
                part[key] = part.get(key, 0.0) + rates[n] * st.latency_s
                labels[key] = f"{st.device} time-shared crossbars"

    def label(k: tuple) -> str:
        return labels.get(k) or lm.label(k)

    return per, label


# ------------------------------------------------------------------------------------------------ arrivals


def closed_loop(st: Stream) -> bool:
    """Whether ``st``'s arrivals follow the SoC's service: its process class's rule, the registered one's
    (:attr:`~hetsim.scenario.arrivals.base.ArrivalProcess.closed_loop`)."""
    return ARRIVALS.get(st.arrival.process, type(st.arrival)).closed_loop


def _inputs(st: Stream, folder: Path, rng: np.random.Generator, read=None) -> ArrivalInputs:
    """What ``st``'s arrival process draws from: ``rng``, the stream's count and duration, and the scenario's
    reader of arrival-time files (``read``, default :func:`~hetsim.scenario.spec.read_trace`, paths relative to
    ``folder``)."""
    return ArrivalInputs(rng, read or (lambda file, column: read_trace(folder / file, column)), st.count,
                         st.duration_s)


def _read_once(folder: Path):
    """A reader of arrival-time files (as :func:`_inputs` takes it) that reads each ``(file, column)`` once."""
    seen: dict[tuple[str, str], list[float]] = {}

    def read(file: str, column: str) -> list[float]:
        if (file, column) not in seen:
            seen[(file, column)] = read_trace(folder / file, column)
        return seen[(file, column)]
    return read


def check_work(scenario: Scenario, folder: Path, source: str, models: dict | None = None, read=None) -> None:
    """Refuse, before any mapping, a scenario whose replay would pass the work bound in force
    (:func:`~hetsim.scenario.spec.check_ops`: each stream's requests known in advance x its model's ops + 1), as
    :func:`map_streams` does; for a sweep's points, checked before the first one runs. ``models``: a cache of
    op counts by resolved model path, shared between calls (each model loaded once); ``read``: a reader of
    arrival-time files (:func:`_read_once`). A stream whose requests are not known in advance (a closed loop) or
    whose model cannot be loaded is left out (its point reports the error when it runs).

    Raises:
        ScenarioError: the estimate past the bound, one line starting with ``source``.
    """
    models = {} if models is None else models
    read = read or _read_once(folder)
    sizes, ops = {}, {}
    for name, st in scenario.streams.items():
        size = st.arrival.requests(_inputs(st, folder, np.random.default_rng(0), read))
        if size is None:
            continue
        path = resolved_path(folder / st.model, "a scenario stream's model", ScenarioError)
        if path not in models:
            try:
                models[path] = len(_load_model(path))
            except InputError:
                models[path] = None
        if models[path] is not None:
            sizes[name], ops[name] = size, models[path]
    check_ops(sizes, ops, source)


def arrival_times(st: Stream, folder: Path, rng: np.random.Generator):
    """The arrival times of a stream known in advance (an iterator, seconds, non-decreasing): its process's,
    cut at its ``count`` and before its ``duration_s`` (a closed loop's: its first requests, at 0)."""
    return st.arrival.arrivals(_inputs(st, folder, rng))


# ------------------------------------------------------------------------------------------------ replay


class _Run:
    """The scenario's replay: arrival processes, requests, their rows."""

    def __init__(self, scenario: Scenario, models: dict[str, StreamModel], folder: Path,
                 contention: frozenset[str], dispatch: str | None, source: str | None = None) -> None:
        self.sc = scenario
        self.source = source or f"scenario {scenario.name!r}"  # what an error names: the file, when there is one
        self.models = models
        self.env = simpy.Environment()
        first = next(iter(models.values()))
        self.hw = Hardware(self.env, first.costs, contention, get_dispatch(dispatch or scenario.dispatch))
        self.hw.exclusive_ops = True
        from hetsim.sim.sleep import SleepState

        self.hw.sleep = {d: SleepState(cfg.sleep.idle_timeout_s, cfg.sleep.wake_latency_s)
                         for d, cfg in first.costs.devices.items() if cfg.serial and cfg.sleep is not None}
        self.rows: list[tuple] = []
        self.trace: list[tuple] = []
        self.seq = 0
        self.folder = folder
        self.keep = scenario.timeline_requests
        self.count = dict.fromkeys(models, 0)
        self.due = dict.fromkeys(models, 0)  # a closed loop's follow-ups in their think time, not yet arrived

    def start(self) -> None:
        for i, (name, m) in enumerate(self.models.items()):
            rng = np.random.default_rng([self.sc.seed, i])
            self.next_open(name, arrival_times(m.stream, self.folder, rng))

    def next_open(self, name: str, times) -> None:
        """The arrivals due now arrive (a loop: a burst of many at one time recursed once per arrival, a
        RecursionError past a thousand); the next one later is a timeout."""
        env = self.env
        while True:
            t = next(times, None)
            if t is None:
                return
            if t > env.now:
                break
            self.arrive(name)

        def fire(_event=None) -> None:
            self.arrive(name)
            self.next_open(name, times)

        env.timeout(t - env.now).callbacks.append(fire)

    def arrive(self, name: str) -> None:
        m = self.models[name]
        st = m.stream
        now = self.env.now
        idx = self.count[name]
        if idx >= MAX_REQUESTS:  # a closed loop's duration_s (or a Poisson draw) past the file's check
            raise ScenarioError(f"{self.source}: stream {name!r} reached {MAX_REQUESTS:,} requests "
                                "before its duration_s; a stream runs at most that many (a shorter duration_s, or "
                                "a count)")
        self.count[name] += 1
        req = Request(m.plan, self.hw, arrival_s=now, seq=self.seq, priority=st.priority,
                      deadline_s=None if st.deadline_s is None else now + st.deadline_s,
                      record=self.seq < self.keep, on_done=lambda r, n=name, i=idx: self.done(n, i, r))
        self.seq += 1
        req.start_all()

    def done(self, name: str, idx: int, req: Request) -> None:
        m = self.models[name]
        st = m.stream
        now = self.env.now
        start = min(req.start.values(), default=req.arrival_s)
        lat = now - req.arrival_s
        met = None if st.deadline_s is None else bool(lat <= st.deadline_s * (1 + 1e-12))
        self.rows.append((name, idx, req.arrival_s, start, now, lat, req.deadline_s, met, m.energy_j,
                          idx < st.warmup))
        if req.rows is not None:
            rid = req.seq
            self.trace += [(name, rid, *r) for r in req.rows]
        wait = st.arrival.follow_up_s()  # a closed loop's next request, think_s after this one
        if wait is not None:
            # the count holds the requests arrived and those already due (still in their think time): without
            # the latter, users finishing within one think time would each see room for one more
            more = (st.count is not None and self.count[name] + self.due[name] < st.count) or (
                st.duration_s is not None and now + wait < st.duration_s)
            if more:
                if wait > 0:
                    self.due[name] += 1
                    self.env.timeout(wait).callbacks.append(lambda _e, n=name: self.follow_up(n))
                else:
                    self.arrive(name)

    def follow_up(self, name: str) -> None:
        """A closed loop's request due after its think time arrives."""
        self.due[name] -= 1
        self.arrive(name)

    def run(self) -> float:
        was = gc.isenabled()
        gc.disable()
        try:
            self.start()
            self.env.run()
            for st in self.hw.sleep.values():
                st.close(self.env.now)
        finally:
            if was:
                gc.enable()
        return self.env.now


# ------------------------------------------------------------------------------------------------ statistics


def _stream_table(req: pd.DataFrame, models: dict[str, StreamModel],
                  measured: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per stream: requests, measured rates, latency percentiles, deadline misses (the saturation columns
    filled by :func:`_verdicts`). ``measured``: the requests after the warm-up, per stream (:func:`_by_stream`)."""
    rows = []
    empty = req.iloc[:0]
    warmups = _by_stream(req[req["warmup"]])
    counts = req.groupby("stream").size().to_dict()
    for name, m in models.items():
        st = m.stream
        sub = measured.get(name, empty)
        lat = sub["latency_s"].to_numpy()
        n = len(sub)
        closed = closed_loop(st)
        warm = warmups.get(name, empty)  # warm-up requests finishing in the window are completions in it
        offered, thr = rates_measured(sub["arrival_s"].to_numpy(), sub["finish_s"].to_numpy(), closed=closed,
                                      done_s=warm["finish_s"].to_numpy())
        pct = np.percentile(lat, PERCENTILES) if n else [None] * len(PERCENTILES)
        miss = None
        if st.deadline_s is not None and n:
            miss = float((~sub["deadline_met"].astype(bool)).mean())
        rows.append({
            "stream": name, "model": Path(st.model).name, "arrival": st.arrival.process,
            "requests": int(counts.get(name, 0)), "warmup": st.warmup, "measured": n,
            "offered_hz": offered, "offered_note": _offered_note(st, sub, offered), "throughput_hz": thr,
            "latency_mean_s": float(lat.mean()) if n else None,
            "latency_p50_s": _f(pct[0]), "latency_p95_s": _f(pct[1]), "latency_p99_s": _f(pct[2]),
            "latency_max_s": float(lat.max()) if n else None,
            "alone_s": m.makespan_s, "deadline_s": st.deadline_s, "deadline_miss": miss,
            "energy_per_request_j": m.energy_j, "saturated": False, "saturation": "",
            **latency_intervals(sub),
        })
    return pd.DataFrame(rows)


def latency_intervals(sub: pd.DataFrame) -> dict:
    """A stream's latency intervals (:mod:`hetsim.scenario.stats`, 95 %) from its measured requests ``sub``:
    ``latency_mean_ci_s`` (batch means over the requests in arrival order; ``None`` below 20 requests) and per
    percentile ``latency_pXX_ci_s`` (the order-statistic interval, ``[lo, hi]`` in seconds) with
    ``latency_pXX_determined`` (``False``, and the interval ``None``, when the sample is too small to bracket the
    quantile: :func:`~hetsim.scenario.stats.min_requests`). The point estimates stay the sample's
    (``numpy.percentile``, linear interpolation), inside their interval."""
    lat = sub.sort_values("arrival_s", kind="stable")["latency_s"].to_numpy() if len(sub) else np.zeros(0)
    ci = mean_ci(lat)
    out: dict = {"latency_mean_ci_s": None if ci is None else list(ci)}
    srt = np.sort(lat)  # sorted once for the three percentiles
    for p in PERCENTILES:
        ci = quantile_ci(srt, p / 100)
        out[f"latency_p{p}_ci_s"] = None if ci is None else list(ci)
        out[f"latency_p{p}_determined"] = ci is not None
    return out


def _offered_note(st: Stream, sub: pd.DataFrame, offered: float | None) -> str:
    """Why a stream has no offered rate (``""`` when it has one): ``"closed loop, N users"`` (it offers none: its
    rate follows the SoC's service), ``"one request"`` / ``"no measured request"`` / ``"one arrival time"`` (an
    offered rate needs two distinct measured arrival times)."""
    note = st.arrival.no_rate_note()
    if note:
        return note
    if offered is not None:
        return ""
    n = len(sub)
    return "no measured request" if n == 0 else "one request" if n == 1 else f"{n:,} requests at one arrival time"


def rates_measured(arrival_s: np.ndarray, finish_s: np.ndarray, closed: bool = False,
                   done_s: np.ndarray | None = None) -> tuple[float | None, float | None]:
    """A stream's offered rate and throughput (requests per second) from its measured requests' arrival and
    finish times (s, one per request, any order): ``(offered, throughput)``, ``None`` where undefined.

    Open streams: both over one window, from the first measured arrival ``t0`` to the last ``t1`` (ours, the
    usual operational definitions: arrivals and completions counted over the same interval)::

        offered    = #{measured arrivals in [t0, t1)} / (t1 - t0)
        throughput = #{the stream's completions in (t0, t1]} / (t1 - t0)     (warm-up requests' included)

    the operational ``X = C / T``: under saturation it is the rate the SoC serves the stream at, backlog left by
    a warm-up included; at a steady load it approaches the offered rate as the run grows, and equals it when
    every request is done before the next arrives (a periodic stream whose latency is below its period:
    exactly ``1 / period_s``); the two differ by the change of the stream's backlog over the window, divided
    by its length. Both are ``None`` with fewer than two distinct arrival times. ``done_s``: the finish times
    of the stream's warm-up requests (counted as completions, not as arrivals). Closed loops offer no rate
    (``offered`` is ``None``); their throughput is counted the same way, warm-up completions included (the
    window, from the first measured request to the last one issued, leaves out the drain at the end, when fewer
    requests are in flight): a loop of ``N`` users whose requests never wait, each taking ``S``, with think
    time ``Z``, reads exactly ``N / (S + Z)``, the interactive response-time law with no queueing.
    """
    a = np.asarray(arrival_s, dtype=float)
    f = np.asarray(finish_s, dtype=float)
    if len(a) < 2:
        return None, None
    t0, t1 = float(a.min()), float(a.max())
    if not t1 > t0:
        return None, None
    inside = a < t1
    every = f if done_s is None else np.concatenate([f, np.asarray(done_s, dtype=float)])
    thr = float(((every > t0) & (every <= t1)).sum()) / (t1 - t0)
    return (None if closed else float(inside.sum()) / (t1 - t0)), thr


def _records(df: pd.DataFrame) -> list[dict]:
    """Rows as JSON-able dicts: NumPy scalars as Python numbers, missing values (NaN) as ``None``."""
    out = []
    for row in df.to_dict(orient="records"):
        clean = {}
        for k, v in row.items():
            if hasattr(v, "item"):
                v = v.item()
            clean[k] = None if isinstance(v, float) and v != v else v
        out.append(clean)
    return out


def _f(x):
    return None if x is None else float(x)


#: the trend test's batches and one-sided significance level (ours)
TREND_BATCHES = 10
TREND_ALPHA = 1e-3
#: latency growth per second of arrival time that is an overload whatever the level it starts from (ours): a
#: queue whose arrivals outpace its service by a factor ``rho > 1`` grows its latency by ``1 - 1 / rho`` seconds
#: per second, so 0.05 is an overload of 5 %; a queue below saturation filling from empty grows far slower
TREND_SLOPE = 0.05


def backlog_trend(sub: pd.DataFrame) -> tuple[bool, str]:
    """Whether a stream's backlog grows over the run in a statistically clear way: its measured requests in
    arrival order cut into :data:`TREND_BATCHES` batches, the least-squares slope of the batch-mean latencies
    (``scipy.stats.linregress``; batch means damp the requests' autocorrelation) positive at one-sided
    significance :data:`TREND_ALPHA`, and either the fitted rise over the run at least the first batch's mean
    (latency at least doubling) or the latency growing by at least :data:`TREND_SLOPE` seconds per second of
    arrival time (an overload of that size whatever the level a long warm-up left it at). Ours: a queue that
    fills and drains (bursts) has no trend; one whose arrivals outpace its service grows linearly. Returns
    ``(growing, the evidence in words)``; fewer than 20 requests: no verdict."""
    from scipy.stats import linregress

    n = len(sub)
    if n < 2 * TREND_BATCHES:
        return False, f"{n} measured request{'' if n == 1 else 's'}: too few to judge a trend"
    order = sub.sort_values("arrival_s", kind="stable")
    lat, arr = order["latency_s"].to_numpy(), order["arrival_s"].to_numpy()
    means = batch_means(lat, TREND_BATCHES)
    if np.ptp(means) <= 1e-12 * max(float(means.max()), 1e-300):
        return False, "latency flat over the run"
    fit = linregress(np.arange(TREND_BATCHES), means)
    rise = fit.slope * (TREND_BATCHES - 1)
    p = fit.pvalue / 2 if fit.slope > 0 else 1.0
    at = batch_means(arr, TREND_BATCHES)
    per_s = linregress(at, means).slope if np.ptp(at) > 0 else 0.0  # latency seconds per second of arrivals
    grows = p < TREND_ALPHA and (rise >= means[0] or per_s >= TREND_SLOPE)
    first, last = format_column([means[0], means[-1]], "s", each=True)
    return grows, f"batch-mean latency {first} -> {last} over the run (trend p = {p:.2g})"


#: the statistics of a stream that replications average (``ScenarioResult.replications``)
REPLICATED = ("throughput_hz", "latency_mean_s", *(f"latency_p{p}_s" for p in PERCENTILES), "latency_max_s",
              "deadline_miss")


def replication_summary(table: pd.DataFrame) -> dict:
    """``summary["replications"]`` from one row per replication and stream (``ScenarioResult.replications``):
    ``count``, ``seeds``, and per stream and statistic of :data:`REPLICATED` its ``mean`` over the replications,
    ``ci`` (the t-interval of that mean, :func:`~hetsim.scenario.stats.t_interval`: ``[lo, hi]``, or ``None``
    where a replication has no value), the replications' ``values``; a percentile also ``determined``: whether
    every replication had enough requests to bracket it (else its mean averages undetermined values)."""
    seeds = [int(x) for x in dict.fromkeys(table["seed"])]
    streams: dict = {}
    for name, sub in table.groupby("stream", sort=False):
        stats: dict = {"measured": [int(x) for x in sub["measured"]]}
        for col in REPLICATED:
            vals = [None if v is None or v != v else float(v) for v in sub[col]]
            ci = t_interval(vals)
            known = [v for v in vals if v is not None]
            stats[col] = {"mean": float(np.mean(known)) if known else None, "ci": None if ci is None else list(ci),
                          "values": vals}
            det = col.removesuffix("_s") + "_determined"
            if det in sub.columns:
                stats[col]["determined"] = bool(sub[det].all())
        streams[name] = stats
    return {"count": len(seeds), "seeds": seeds, "streams": streams}


def _verdicts(streams: pd.DataFrame, req: pd.DataFrame, measured: dict[str, pd.DataFrame],
              models: dict[str, StreamModel], res: str, val: float, shares: dict[str, dict[str, float]],
              by_priority: bool = False) -> None:
    """Each stream's saturation verdict (``saturated``, ``saturation`` columns, in place). An open stream is
    saturated when a resource that carries some of its load is loaded ``>= 1`` by the open streams at their
    offered rates (no steady state exists at these rates; a closed loop's load is left out there: it takes what
    capacity is left, at most ``population`` in flight), or when its backlog grows clearly
    (:func:`backlog_trend`: a transient, or contention the analytic model leaves out). A closed loop never is.
    ``res``, ``val``: the analytic bottleneck of every stream, named in the verdicts' words. ``by_priority``
    (the ``priority`` dispatch policy, non-preemptive): a stream's resources are loaded by the open streams of
    its priority or a more urgent one only, the stability condition of a non-preemptive priority queue (a class
    is stable when its load and the more urgent classes' stay below 1: A. Cobham, "Priority assignment in
    waiting line problems", Operations Research 2(1), 1954). ``measured``: the requests after the warm-up, per
    stream, as :func:`_stream_table` got them."""
    loads = open_loads(models, shares, by_priority)
    empty = req.iloc[:0]
    sat, why = [], []
    for row in streams.to_dict(orient="records"):
        name = row["stream"]
        st = models[name].stream
        steady = st.arrival.never_saturated()
        if steady is not None:
            sat.append(False)
            why.append(steady)
            continue
        grows, trend = backlog_trend(measured.get(name, empty))
        on = loads.get(name, {})
        mine = [k for k, x in on.items() if x >= 1.0]
        over = bool(mine)
        if over:  # the stream's own most loaded resource
            res_s = max(mine, key=lambda k: on[k])
            val_s = on[res_s]
        off, thr = row["offered_hz"], row["throughput_hz"]
        served = (f"; served {format_number(thr)}/s of {format_number(off)}/s offered"
                  if off is not None and thr is not None and off == off and thr == thr else "")
        bneck = (f"the analytic bottleneck {res} at {val:.1%}" if models[name].rate_hz is not None
                 else "no offered rate (its arrivals are at one instant), no analytic load")
        if over:
            text = f"the analytic load of {res_s} at {val_s:.1%} of its capacity at the offered rates{served}"
            text += f"; {trend}" if grows else f"; {trend}: no clear trend yet (a more urgent stream may stay steady)"
        elif grows:
            text = (f"the backlog grows: {trend}{served}, although {bneck.replace(' at ', ' is at ', 1)} "
                    "(a transient, or contention the analytic loads leave out)")
        else:
            text = f"steady: {trend}; {bneck}"
        sat.append(bool(over or grows))
        why.append(text)
    streams["saturated"] = sat
    streams["saturation"] = why


def _by_stream(req: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """``req``'s rows per stream (one pass; a mask per stream costs streams x requests)."""
    return {name: sub for name, sub in req.groupby("stream", sort=False)}


def open_loads(models: dict[str, StreamModel], shares: dict[str, dict[str, float]],
               by_priority: bool = False) -> dict[str, dict[str, float]]:
    """Per open stream, the load of each resource it carries (its share ``> 0``, :func:`stream_loads`): the sum
    of the open streams' shares on it (closed loops left out); ``by_priority``: of the open streams of its
    priority or a more urgent one (a smaller ``priority``) only. Closed loops get no entry.

    Cost: O(S log S) in the number S of (stream, resource) shares: per resource, its streams sorted by priority
    and summed once (prefix sums), each stream's load a bisection (the sum over every stream for every stream
    was quadratic)."""
    import bisect

    on: dict[str, list[tuple[int, float]]] = {}  # resource -> (priority, share) of the open streams
    for n, part in shares.items():
        if closed_loop(models[n].stream):
            continue
        pr = models[n].stream.priority if by_priority else 0
        for k, x in part.items():
            on.setdefault(k, []).append((pr, x))
    prefix: dict[str, tuple[list[int], list[float]]] = {}
    for k, items in on.items():
        items.sort(key=lambda t: t[0])  # stable: file order within a priority
        acc, total = [], 0.0
        for _, x in items:
            total += x
            acc.append(total)
        prefix[k] = ([pr for pr, _ in items], acc)
    out: dict[str, dict[str, float]] = {}
    for n, part in shares.items():
        if closed_loop(models[n].stream):
            continue
        pr = models[n].stream.priority if by_priority else 0
        mine = {}
        for k, x in part.items():
            if x > 0:
                prs, acc = prefix[k]
                mine[k] = acc[bisect.bisect_right(prs, pr) - 1]
        out[n] = mine
    return out


def _device_table(platform: Platform, models: dict[str, StreamModel], req: pd.DataFrame, T: float,
                  sleep: dict | None = None) -> pd.DataFrame:
    """Per device and link over the simulated time ``T``: busy (from each request's own busy time: the ops keep
    their durations under queueing; on a device whose ops overlap, one request's union), utilisation, energy
    (ODiMO Eq. 4 generalised: ``active_w * busy + idle_w * (units * T - busy)`` + per-op + per-byte). A device
    with a sleep state (``sleep``: device -> :class:`~hetsim.sim.sleep.SleepState`) adds ``sleep_s``, ``wakes``
    and ``sleep_j``: ``active_w * (busy + wakes * wake_latency_s) + idle_w * (units * (T - sleep_s) - busy -
    wakes * wake_latency_s) + power_w * sleep_s`` (those columns only when some device sleeps)."""
    served = req.groupby("stream").size().to_dict()
    first = next(iter(models.values())).costs
    rows = []
    entries = [*first.devices.items(), *platform.links.items()]
    for name, cfg in entries:
        busy = sum(m.busy_s.get(name, 0.0) * served.get(s, 0) for s, m in models.items())
        op_j = sum(m.op_j.get(name, 0.0) * served.get(s, 0) for s, m in models.items())
        nbytes = sum(m.bytes.get(name, 0.0) * served.get(s, 0) for s, m in models.items())
        busy = min(busy, cfg.units * T) if not cfg.serial else busy
        st = (sleep or {}).get(name)
        if st is None:
            active, idle = (float(x) for x in cfg.energy_j(busy, T))
            slept = {}
        else:  # the sleep state's own time out of the idle time (hetsim.sim.sleep)
            wake = st.wakes * st.wake_s
            active = float(cfg.active_w) * (busy + wake)
            idle = float(cfg.idle_w) * max(cfg.units * (T - st.sleep_s) - busy - wake, 0.0)
            slept = {"sleep_s": st.sleep_s, "wakes": st.wakes, "sleep_j": float(cfg.sleep.power_w) * st.sleep_s}
        xfer = getattr(cfg, "energy_pj_per_byte", 0.0) * 1e-12 * nbytes
        row = {"device": name, "kind": cfg.kind, "units": cfg.units, "busy_s": busy,
               "utilisation": busy / (cfg.units * T) if T > 0 else 0.0, "active_j": active, "idle_j": idle,
               "op_j": op_j, "transfer_j": xfer, "energy_j": active + idle + op_j + xfer + slept.get("sleep_j", 0.0),
               "bytes": nbytes}
        if sleep:
            row.update({"sleep_s": 0.0, "wakes": 0, "sleep_j": 0.0, **slept})
        rows.append(row)
    from hetsim.analysis.metrics import MEMORY_KIND

    for name, mem in platform.memories.items():  # weights streamed or reprogrammed from it (hetsim.weights)
        if mem.weights_for:
            busy, op_j, nbytes = (sum(getattr(m, a).get(name, 0.0) * served.get(s, 0) for s, m in models.items())
                                  for a in ("busy_s", "op_j", "bytes"))
            # the port's busy time over the simulated time, as a single run's (hetsim.analysis.metrics.memory_rows:
            # above 100 % only when reads overlap with memory contention off, the port oversubscribed)
            row = {"device": name, "kind": MEMORY_KIND, "units": 1, "busy_s": busy,
                   "utilisation": busy / T if T > 0 else 0.0,
                   "active_j": 0.0, "idle_j": 0.0, "op_j": op_j, "transfer_j": 0.0, "energy_j": op_j, "bytes": nbytes}
            if sleep:
                row.update({"sleep_s": 0.0, "wakes": 0, "sleep_j": 0.0})
            rows.append(row)
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------------------------ what loads what

#: columns of :func:`load_breakdown`
LOAD_COLUMNS = ["resource", "stream", "type", "ops", "busy_s", "share"]


def load_breakdown(models: dict[str, StreamModel], req: pd.DataFrame) -> pd.DataFrame:
    """Which streams and op types load each device and weight memory over the scenario: per resource, stream and
    op type, ``ops`` (per request), ``busy_s`` (seconds over every replayed request: one request's busy time
    there, :func:`hetsim.analysis.breakdown.op_type_breakdown` of the stream's replay alone, times the stream's
    requests, as the device table counts them) and ``share`` (of the resource's busy time, 0-1). Rows of a
    resource in decreasing busy time, resources in platform order; links carry transfers, not ops: none."""
    from hetsim.analysis.breakdown import op_type_breakdown

    served = req.groupby("stream").size().to_dict()
    rows = []
    for name, m in models.items():
        n = served.get(name, 0)
        for r in op_type_breakdown(m.costs, m.alone).to_dict(orient="records"):
            if r["busy_s"] > 0 and n:
                rows.append({"resource": r["device"], "stream": name, "type": r["type"], "ops": r["ops"],
                             "busy_s": r["busy_s"] * n})
    df = pd.DataFrame(rows, columns=LOAD_COLUMNS[:-1])
    first = next(iter(models.values())).costs
    rank = {d: i for i, d in enumerate([*first.devices, *first.platform.memories])}
    total = df.groupby("resource")["busy_s"].transform("sum")
    df["share"] = (df["busy_s"] / total).astype("float64")
    df["_rank"] = df["resource"].map(rank)
    df = df.sort_values(["_rank", "busy_s", "stream", "type"], ascending=[True, False, True, True], kind="stable")
    return df.drop(columns="_rank").reset_index(drop=True)


#: the share of a saturated resource's busy time its named loads cover (at most :data:`RELIEF_TYPES` of them)
RELIEF_SHARE = 0.5
RELIEF_TYPES = 3


def relief(models: dict[str, StreamModel], req: pd.DataFrame, loads: dict[str, float],
           table: pd.DataFrame) -> dict[str, dict]:
    """Why each saturated device is saturated and what would relieve it: per device whose analytic load
    (:func:`analytic_loads`, at the offered rates) is at least 1, ``load``, ``top`` (its largest loads by stream
    and op type, :func:`load_breakdown`'s rows, until they cover :data:`RELIEF_SHARE` of its busy time, at most
    :data:`RELIEF_TYPES`), ``top_share`` (their share) and ``movable``: per other compute device, the ops of
    every stream on it that the other device could run (:func:`hetsim.analysis.breakdown.movable_ops`: the cost
    model's latency table, resident capacities not checked): ``ops`` and ``types`` per request, ``busy_s`` (their
    busy time on the saturated device over every request), ``share`` (of its busy time) and ``latency_s`` (their
    latency on the other device, per request); ``movable_ops`` and ``movable_share``: the ops some other device
    could run (per request) and their share of its busy time; ``load_left``: the load were they all moved,
    ``load * (1 - movable_share)`` (ours: the other devices' loads grow, not counted). Devices in decreasing
    load."""
    from hetsim.analysis.breakdown import movable_busy, movable_ops

    first = next(iter(models.values())).costs
    served = req.groupby("stream").size().to_dict()
    out = {}
    for dev, load in sorted(loads.items(), key=lambda kv: -kv[1]):
        if load < 1.0 or dev not in first.devices:
            continue
        rows = table[table["resource"] == dev]
        total = float(rows["busy_s"].sum())
        top, cover = [], 0.0
        for r in rows.to_dict(orient="records"):
            if cover >= RELIEF_SHARE or len(top) >= RELIEF_TYPES:
                break
            top.append({k: r[k] for k in ("stream", "type", "ops", "busy_s", "share")})
            cover += r["share"]
        movable: dict[str, dict] = {}
        any_ops, any_s = 0, 0.0
        for name, m in models.items():
            n = served.get(name, 0)
            k, t = movable_busy(m.costs, m.schedule, m.alone, dev)
            any_ops, any_s = any_ops + k, any_s + t * n
            for other, x in movable_ops(m.costs, m.schedule, m.alone, dev).items():
                acc = movable.setdefault(other, {"ops": 0, "types": {}, "busy_s": 0.0, "share": 0.0,
                                                 "latency_s": 0.0})
                acc["ops"] += x["ops"]
                for ty, k in x["types"].items():
                    acc["types"][ty] = acc["types"].get(ty, 0) + k
                acc["busy_s"] += x["busy_s"] * n
                acc["latency_s"] += x["latency_s"]
        for acc in movable.values():
            acc["share"] = acc["busy_s"] / total if total > 0 else 0.0
        share = any_s / total if total > 0 else 0.0
        out[dev] = {"load": load, "top": top, "top_share": cover, "movable": movable, "movable_ops": any_ops,
                    "movable_share": share, "load_left": load * (1.0 - share)}
    return out


# ------------------------------------------------------------------------------------------------ entry


def run_scenario(
    platform: Platform | str | Path,
    scenario: Scenario | str | Path,
    *,
    mapper: str | None = None,
    contention: str | None = None,
    dispatch: str | None = None,
    seed: int | None = None,
    folder: Path | None = None,
    workloads: dict | None = None,
    objective: str | None = None,
    compare: bool | None = None,
    replications: int = 1,
) -> ScenarioResult:
    """Map the scenario's models on ``platform`` and replay its requests (see the module doc).

    Args:
        platform: a Platform or its YAML path.
        scenario: a :class:`~hetsim.scenario.spec.Scenario` or its YAML path.
        mapper, contention, dispatch, seed, objective: override the scenario's (``objective``: ``latency`` or
            ``throughput``, :func:`map_streams`).
        folder: where a Scenario object's relative model paths are (default: the current folder).
        workloads: stream name -> a Workload to use instead of the stream's model file.
        compare: also map for the other objective and replay it (``ScenarioResult.comparison``); default: when
            the objective is ``throughput`` (the latency mapping is what it is compared with).
        replications: replay the requests this many times with the seeds ``seed, seed + 1, ...`` (one mapping:
            it does not depend on the seed); ``ScenarioResult.replications`` and ``summary["replications"]``
            give each stream's statistics per replication, their mean and t-interval. Default 1: one replay.

    Returns:
        :class:`ScenarioResult`.

    Raises:
        InputError: invalid files, unknown names, an infeasible mapping.
    """
    from hetsim.mappers.base import check_baseline

    plat = platform if isinstance(platform, Platform) else load_platform(platform)
    check_baseline(plat, None if isinstance(platform, Platform) else str(platform))  # a scenario has none: its name
    if isinstance(scenario, Scenario):
        sc, where = scenario, Path(folder or ".").resolve()
    else:
        sc, where = load_scenario(scenario)
    # what a refusal at run time names: the file the user gave, as the file's load-time errors do
    source = f"scenario {sc.name or 'scenario'!r}" if isinstance(scenario, Scenario) else str(scenario)
    if seed is not None:
        sc = sc.model_copy(update={"seed": seed})
    if not sc.name:
        sc = sc.model_copy(update={"name": "scenario"})
    objective = objective or sc.objective
    _check_replications(replications, sc.seed)
    if objective not in OBJECTIVES:
        raise InputError(f"unknown objective {objective!r}; known: {', '.join(OBJECTIVES)}")
    kinds = parse_contention(sc.contention if contention is None else contention)
    get_dispatch(dispatch or sc.dispatch)
    models = map_streams(plat, sc, where, mapper, kinds, workloads, objective, source=source)
    check_request_cap(sc, models, source)  # before the replay: a cap certain to be reached is refused, not simulated
    req, streams, devices, trace, T, (loads, res, val, closed) = _replay(sc, plat, models, where, kinds, dispatch,
                                                                         source)
    total = float(devices["energy_j"].sum())
    summary = {
        "scenario": sc.name, "platform": plat.name, "mapper": mapper or sc.mapper, "objective": objective,
        "dispatch": dispatch or sc.dispatch, "contention": sorted(kinds), "seed": sc.seed,
        "simulated_s": T, "requests": len(req), "energy_j": total,
        "energy_per_request_j": total / len(req),
        "bottleneck": {"resource": res, "load": val, "max_rate_scale": _scale(val, closed),
                       "loads": {k: x for k, x in list(loads.items())[:12]}, "closed_at_throughput": closed},
        "streams": _records(streams), "devices": _records(devices),
        "saturated": bool(streams["saturated"].any() or (val >= 1.0 and not closed)),
    }
    notes_of = dict(zip(streams["stream"], streams["offered_note"], strict=True))
    no_rate = {n: notes_of.get(n) or "no arrival span" for n, m in models.items() if m.rate_hz is None}
    if no_rate:  # trace streams at one instant: no nominal rate, not counted in the bottleneck's load
        summary["bottleneck"]["no_rate"] = no_rate
        if len(no_rate) == len(models):  # no stream offers a rate: no load to report (n/a), not 0 %
            summary["bottleneck"].update({"resource": None, "load": None, "max_rate_scale": None, "loads": {}})
    none = [(r["stream"], r["offered_note"]) for r in streams.to_dict(orient="records") if r["offered_note"]]
    if none:  # the device table's offered load counts the streams with a measured offered rate only
        which = "; ".join(f"{n}: {why}" for n, why in none)
        summary["offered_load_note"] = (
            f"no stream offers a measured rate ({which}): no offered load" if len(none) == len(streams)
            else f"the offered load counts the streams with a measured rate, not {which}")
    ports = [n for n, mem in plat.memories.items() if mem.weights_for]
    if ports:  # which memory ports the bottleneck counts (analytic_loads)
        summary["bottleneck"]["memory_ports"] = {"memories": ports, "counted": "memory" in kinds}
    st = next(iter(models.values())).schedule.stats
    if st.get("objective") == "throughput":  # the joint mapping's own outcome (the same on every model)
        summary["bottleneck"].update({"status": st.get("status"), "bound": st.get("bottleneck_bound"),
                                      "mip_gap": st.get("mip_gap"), "solve_time_s": st.get("solve_time_s")})
    notes = same_model_notes(sc, where, workloads) + in_flight_notes(models, req)
    if notes:
        summary["notes"] = notes
    table = load_breakdown(models, req)
    summary["load_breakdown"] = {d: _records(sub.drop(columns="resource"))
                                 for d, sub in table.groupby("resource", sort=False)}
    summary["relief"] = relief(models, req, loads, table)
    out = ScenarioResult(sc, plat, models, req, streams, devices, trace, summary, loads=table)
    if replications > 1:
        out.replications = _replicate(sc, plat, models, where, kinds, dispatch, source, streams, replications)
        summary["replications"] = replication_summary(out.replications)
    if compare if compare is not None else objective == "throughput":
        other = "latency" if objective == "throughput" else "throughput"
        # the models loaded once: the first mapping's workloads and rates
        m2 = map_streams(plat, sc, where, mapper, kinds, {n: m.costs.workload for n, m in models.items()}, other,
                         {n: m.rate_hz for n, m in models.items()})
        _, st2, _, _, _, (_, res2, val2, closed2) = _replay(sc, plat, m2, where, kinds, dispatch, source)
        rows = (_comparison(objective, streams, res, val, models, closed)
                + _comparison(other, st2, res2, val2, m2, closed2))
        out.comparison = pd.DataFrame(rows)
        summary["comparison"] = _records(out.comparison)
    return out


def _check_replications(replications, seed: int) -> None:
    """Refuse a replication count that is not a positive integer, or seeds past the largest a scenario takes.

    Raises:
        InputError: one line naming the count.
    """
    if isinstance(replications, bool) or not isinstance(replications, int | np.integer) or replications < 1:
        raise InputError(f"replications {replications!r}: give a whole number of runs, at least 1")
    if seed + replications - 1 > 2**63 - 1:
        raise InputError(f"replications {replications}: the seeds from {seed} would pass 2**63 - 1")


def _replicate(sc: Scenario, plat: Platform, models: dict[str, StreamModel], where: Path, kinds: frozenset[str],
               dispatch: str | None, source: str, first: pd.DataFrame, replications: int) -> pd.DataFrame:
    """The streams' statistics over ``replications`` replays of the same mapping, the seeds ``sc.seed, sc.seed +
    1, ...`` (``first``: the stream table of ``sc.seed``'s replay, already run): one row per replication and
    stream (``seed``, ``stream``, ``measured``, :data:`REPLICATED`, the percentiles' ``determined`` and
    ``saturated``). Each replay's requests are dropped once counted."""
    cols = ["stream", "measured", *REPLICATED, *(f"latency_p{p}_determined" for p in PERCENTILES), "saturated"]
    tables = [first[cols].assign(seed=sc.seed)]
    for k in range(1, replications):
        seed = sc.seed + k
        streams = _replay(sc.model_copy(update={"seed": seed}), plat, models, where, kinds, dispatch, source)[1]
        tables.append(streams[cols].assign(seed=seed))
    return pd.concat(tables, ignore_index=True)[["seed", *cols]]


def _bottleneck_rates(models: dict[str, StreamModel], streams: pd.DataFrame) -> tuple[dict[str, float], list[str]]:
    """The rates the analytic bottleneck is evaluated at: an open stream's nominal rate (:func:`stream_rate`); a
    closed loop's measured throughput (it offers no rate: its load follows the SoC's service, so the bottleneck
    says how busy the mapping keeps each resource at the rate it ran); 0 for a trace at one instant (no rate).
    Returns ``(rates, closed streams)``."""
    thr = dict(zip(streams["stream"], streams["throughput_hz"], strict=True))
    rates, closed = {}, []
    for n, m in models.items():
        if closed_loop(m.stream):
            closed.append(n)
            x = thr.get(n)
            rates[n] = float(x) if x is not None and x == x else 0.0
        else:  # a trace at one instant offers none (stream_rate): not counted (the summary's no_rate says so)
            rates[n] = 0.0 if m.rate_hz is None else m.rate_hz
    return rates, closed


def check_request_cap(sc: Scenario, models: dict[str, StreamModel], source: str | None = None) -> None:
    """Refuse up front a stream certain to reach :data:`~hetsim.scenario.spec.MAX_REQUESTS` before its
    ``duration_s`` (the replay would simulate the cap's ten million requests, then stop with an error), where its
    arrival process knows its count only once the model's latency is known
    (:meth:`~hetsim.scenario.arrivals.base.ArrivalProcess.size`; a periodic or Poisson stream's is checked when
    the file is read).

    Asked only where every request runs alone (ours): the scenario's one stream on a SoC without sleep states,
    each request then taking the alone replay's makespan ``M`` when none queues behind another (a closed loop of
    one user: its arrivals at ``k (think_s + M)`` while before ``duration_s``, i.e. ``duration_s / (think_s +
    M)`` requests, infinitely many when that cycle is 0). It is refused when that exceeds the cap by more than
    1 % (a margin for the float sums). Not predicted: several users or streams (requests queue behind each other;
    their latencies have no bound the load knows) or a sleeping device (a wake-up lengthens the cycle): there
    the replay's own check stops the stream at the cap. A count predicted here is then held to the bound on the
    scenario's work (:func:`~hetsim.scenario.spec.check_ops`; before the mapping it was not known).

    Raises:
        ScenarioError: one line starting with ``source`` (the scenario file's path, as its load-time errors do;
            default ``scenario 'NAME'``), naming the stream, what makes its requests (a closed loop's duration_s,
            think_s and latency) and the cap, or the work bound's (:func:`~hetsim.scenario.spec.check_ops`).
    """
    if len(models) != 1:
        return
    (name, m), = models.items()
    st = m.stream
    if st.count is not None or st.duration_s is None:
        return
    if any(d.serial and d.sleep is not None for d in m.costs.devices.values()):
        return
    size = st.arrival.size(st.duration_s, m.makespan_s)  # every request alone: one stream, no sleep state
    where = source or f"scenario {sc.name!r}"
    if size is not None and size.requests > MAX_REQUESTS * 1.01:
        raise ScenarioError(f"{where}: stream {name!r}, {size.why}; a stream runs at most {MAX_REQUESTS:,} "
                            f"({size.remedy})")
    if size is not None:  # the work bound, now that the count is known (check_ops)
        check_ops({name: size}, {name: len(m.costs.workload)}, where)


def _scale(load: float, closed: list[str]) -> float | None:
    """``1 / load``, how far the offered rates can be scaled; ``None`` with a closed stream (its rate is not an
    input) or no load."""
    return 1.0 / load if load > 0 and not closed else None


def same_model_notes(sc: Scenario, folder: Path, workloads: dict | None = None) -> list[str]:
    """One line per model file that several streams name: each stream maps it on its own, so it is mapped once
    per stream and the resident capacities (crossbars, weight memory) are split between the mappings."""
    by: dict[Path, list[str]] = {}
    for name, st in sc.streams.items():
        if not (workloads and name in workloads):
            by.setdefault(resolved_path(folder / st.model, "a scenario stream's model", ScenarioError),
                          []).append(name)
    return [f"streams {', '.join(names)} name the same model ({path.name}): it is mapped once per stream and the "
            "resident capacities are split between the mappings (one stream with their combined arrivals shares "
            "one mapping)" for path, names in by.items() if len(names) > 1]


def in_flight_notes(models: dict[str, StreamModel], req: pd.DataFrame) -> list[str]:
    """Where several requests in flight at once may overflow a checked activation memory (ours): one line per
    memory. A request holds activations from its first op's start to its finish (an arrived request waiting for
    its first op holds none here: its input waits where the arrival put it); the replay let ``k_s(t)`` requests
    of stream ``s`` be started and unfinished at once, so at ``t`` the memory holds at most
    ``sum_s k_s(t) x peak_s`` (``peak_s``: one request's peak, :attr:`StreamModel.activation_peak`). One request
    over the memory is refused before the replay (:func:`_check_memories`, certain); this bound over it is only
    possible (the requests in flight need not reach their peaks together), so it is a warning, naming the
    memory, the streams' requests in flight then, the bytes they may need and the bytes available.

    Cost: O(R log R) in the R requests (one sweep over their starts and finishes)."""
    mems = {mem: avail for m in models.values() for mem, (_, avail) in m.activation_peak.items()}
    if not mems or req.empty:
        return []
    names = list(models)
    peak = np.array([[models[n].activation_peak.get(mem, (0, 0))[0] for mem in mems] for n in names], dtype=float)
    idx = {n: i for i, n in enumerate(names)}
    s = req["stream"].map(idx).to_numpy()
    t = np.concatenate([req["start_s"].to_numpy(), req["finish_s"].to_numpy()])
    who = np.concatenate([s, s])
    step = np.concatenate([np.ones(len(s), int), -np.ones(len(s), int)])
    order = np.lexsort((step, t))  # at one time the finishes first: [start, finish) half open
    t, who, step = t[order], who[order], step[order]
    deltas = peak[who] * step[:, None]  # bytes per memory each event adds
    level = np.cumsum(deltas, axis=0)
    last = np.r_[t[1:] != t[:-1], True]  # the level after every event at one time
    out = []
    for j, (mem, avail) in enumerate(mems.items()):
        lv = np.where(last, level[:, j], -np.inf)
        k = int(np.argmax(lv))
        need = float(lv[k])
        if need <= avail:
            continue
        counts = np.bincount(who[:k + 1], weights=step[:k + 1], minlength=len(names)).astype(int)
        held = " and ".join(f"{c} request{'s' if c > 1 else ''} of {n}" for n, c in zip(names, counts, strict=True)
                            if c and peak[idx[n], j] > 0)
        out.append(f"memory {mem}: {held} in flight at once at "
                   f"{format_value(t[k], 's')} may need up to {int(need):,} B of live activations (one request's peak "
                   f"each), more than the {int(avail):,} B available beside the weights; one request fits, so "
                   "this is possible, not certain (the replay does not track the requests' buffers together)")
    return out


def _comparison(objective: str, streams: pd.DataFrame, res: str, val: float, models,
                closed: list[str] = ()) -> list[dict]:
    """Rows of the objectives' comparison: per stream, the replayed throughput and latency, and the mapping's
    analytic bottleneck."""
    rows = []
    for row in streams.to_dict(orient="records"):
        rows.append({"objective": objective, "stream": row["stream"], "offered_hz": row["offered_hz"],
                     "throughput_hz": row["throughput_hz"], "latency_p50_s": row["latency_p50_s"],
                     "latency_p99_s": row["latency_p99_s"], "latency_p50_determined": row["latency_p50_determined"],
                     "latency_p99_determined": row["latency_p99_determined"],
                     "alone_s": models[row["stream"]].makespan_s,
                     "saturated": row["saturated"], "bottleneck_resource": res, "bottleneck_load": val,
                     "max_rate_scale": _scale(val, list(closed))})
    return rows


def _replay(sc: Scenario, plat: Platform, models: dict[str, StreamModel], where: Path, kinds: frozenset[str],
            dispatch: str | None, source: str | None = None):
    """Replay the requests of ``models``: ``(requests, streams, devices, trace, simulated seconds, bottleneck)``,
    ``bottleneck`` = ``(loads, resource, load, closed streams)`` (:func:`analytic_loads` at
    :func:`_bottleneck_rates`); the streams' saturation verdicts from it (:func:`_verdicts`). ``source``: what an
    error names (the scenario file; default ``scenario 'NAME'``)."""
    source = source or f"scenario {sc.name!r}"
    run = _Run(sc, models, where, kinds, dispatch, source)
    T = run.run()
    req = pd.DataFrame(run.rows, columns=REQUEST_COLUMNS).sort_values(["arrival_s", "stream", "index"],
                                                                     kind="stable").reset_index(drop=True)
    if req.empty:
        raise InputError(f"{source}: no request arrived (check count / duration_s / the trace)")
    measured = _by_stream(req[~req["warmup"]])  # split once, for the table and the verdicts
    streams = _stream_table(req, models, measured)
    brates, closed = _bottleneck_rates(models, streams)
    loads, res, val = analytic_loads(models, brates, kinds)
    _verdicts(streams, req, measured, models, res, val, stream_loads(models, brates, kinds),
              by_priority=(dispatch or sc.dispatch) == "priority")
    devices = _device_table(plat, models, req, T, run.hw.sleep)
    rates = {n: x for n, x in zip(streams["stream"], streams["offered_hz"], strict=True)
             if x is not None and x == x}  # the streams with a measured offered rate
    # no stream offers a rate (closed loops, one-request streams): no offered load (NaN, n/a), not 0 %
    devices["offered_load"] = [
        sum(rates[n] * m.busy_s.get(d, 0.0) for n, m in models.items() if n in rates) / u if rates else float("nan")
        for d, u in zip(devices["device"], devices["units"], strict=True)]
    trace = pd.DataFrame(run.trace, columns=["stream", "request", *TRACE_COLUMNS])
    return req, streams, devices, trace, T, (loads, res, val, closed)
