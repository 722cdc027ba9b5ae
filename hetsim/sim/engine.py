"""SimPy replay of a Schedule on resources built from the Platform (``docs/architecture.md``, "Simulation semantics").

Three parts: a :class:`Plan` (what one schedule's replay needs, checked once), the :class:`Hardware` (the
platform's SimPy resources, shared by every request on it; its serial devices are made by a dispatch policy,
:mod:`hetsim.sim.dispatch`) and a :class:`Request` (one inference: its state and the engine's steps as methods).
:func:`simulate` replays one request; a scenario (``hetsim/scenario/``) replays many on one Hardware.

An op starts when all its inputs (and their transfers) have arrived and its device grants it. Ops and transfers
are chains of callbacks on SimPy events (timeouts, serial devices' requests, the grants of contended links and
device resources: :class:`~hetsim.sim.port.Port`, in ``simpy.Resource``'s event order), not SimPy processes: an op's
chain starts when its last input arrives, asks for the resources it needs, waits for the grant, runs for its
latency and releases them. Only a channel-split op, which waits for several devices at once, is a process. This
keeps about three events per op on a serial device (request, timeout, release) and one per free-running op.

* serial devices (``cpu``: a ``simpy.Resource(capacity=cores)``; a DIANA accelerator: capacity 1): ops
  request them in the schedule's order (``ordered`` replay: an op may not start before the op preceding it in
  the order has started).
* channel splits (ODiMO): a split op waits for its predecessor in the order of every device holding one of
  its parts, then takes those devices (in platform order: a fixed lock order) and starts all parts at once;
  each device is released when its own part ends, and the op finishes with its longest part. A split op
  exchanges data with its neighbours through shared memory only (checked), so no transfer touches it.
* devices that are not serial (a PUMA CIM): an op owns the crossbars it was placed on (weight-stationary), so
  its ops overlap freely, in phases when the device has them, unless contention is switched on for a device
  that models it (``DeviceBase.contention``; the device names the resources each phase holds,
  ``DeviceBase.contended_phases``: a PUMA's internal bus and cores); a phase takes its resources one by
  one in the order the device gives, holding those it has while it waits for the rest - a fixed lock order, so
  it never deadlocks.
* control dependencies (``Schedule.after``): an op also waits for these ops to finish (SpikeDuet's blocking
  execution: the host waits for every MVP launch).
* links: a transfer holds ``bytes / bandwidth + latency`` (CPU-CIM ILP, Eq. 4); with ``links`` contention the
  link carries one transfer at a time, first come first served (requests made at the same instant are served
  in the order they were made: producers in the order they finished, each producer's consumers in graph
  order). A tensor crosses the link once per consumer edge (as the ILP's z_uv).

With every contention kind off this is exactly the CPU-CIM ILP's timing model, and the times equal
:func:`hetsim.sim.analytic.list_schedule`'s.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from operator import itemgetter

import numpy as np
import pandas as pd
import simpy

from hetsim.check import fill_orders, fusion_gates, op_parts, require_feasible
from hetsim.costs import CostModel, edge_bytes_at
from hetsim.errors import InputError, ScheduleError
from hetsim.schedule import Schedule
from hetsim.sim import weights as _weights
from hetsim.sim.contention import CONTENTION_KINDS, contention_kinds, parse_contention
from hetsim.sim.dispatch import DispatchPolicy, get_dispatch
from hetsim.sim.port import Port

__all__ = ["CONTENTION_KINDS", "TRACE_COLUMNS", "Hardware", "Plan", "Request", "SimResult", "parse_contention",
           "simulate", "trace_frame"]

TRACE_COLUMNS = ["op", "device", "kind", "phase", "start_s", "end_s", "channels"]


@dataclass
class SimResult:
    """Outcome of one replay.

    Attributes:
        trace: one row per busy interval: ``op`` (op name, or ``"u->v"`` for a transfer), ``device``
            (device or link name), ``kind`` (``compute`` | ``transfer``), ``phase`` (``load``/``mvm``/
            ``store`` for CIM ops, empty otherwise), ``start_s``, ``end_s`` (seconds), ``channels`` (the
            output channels a part of a channel-split op computes; missing (``<NA>``) for every other row).
            A replay hands over its rows; the table is built the first time it is read (pandas' fixed cost is
            then paid only by a caller that reads it).
        start_s, finish_s: per op, seconds.
        makespan_s: latest finish of any op or transfer, seconds.
        contention: the contention kinds that were on.
        assignment: op name -> device, as replayed.
        splits: the channel splits replayed (op -> {device: channel indices}).
    """

    trace: pd.DataFrame  # a property (below): the rows kept as tuples, the table built on first read
    start_s: dict[str, float]
    finish_s: dict[str, float]
    makespan_s: float
    contention: frozenset[str] = field(default_factory=frozenset)
    assignment: dict[str, str] = field(default_factory=dict)
    splits: dict[str, dict[str, list[int]]] = field(default_factory=dict)
    #: op -> :class:`hetsim.weights.WeightStep` of the streamed and reprogrammed ops (their memory traffic)
    weights: dict = field(default_factory=dict)


def _get_trace(self: SimResult) -> pd.DataFrame:
    """The trace table, built from the replay's rows on first read (:func:`trace_frame`) and kept."""
    t = self._trace
    if not isinstance(t, pd.DataFrame):
        t.sort(key=_row_key)  # stable: rows with equal keys keep the order they were recorded in
        t = self._trace = _trace(t)[0]
    return t


def _set_trace(self: SimResult, value) -> None:
    self._trace = value


# The trace is a property: a replay hands over its rows (a list of tuples, in the order they were recorded) and
# pandas' table is built only when someone reads it; a DataFrame given to the constructor is kept as it is.
SimResult.trace = property(_get_trace, _set_trace, doc=_get_trace.__doc__)

#: The trace's order: by start, end, device, op.
_row_key = itemgetter(4, 5, 1, 0)


class Plan:
    """What a replay of one schedule needs that does not change from one request to the next: checked once.

    Per op: how it runs (``mode``: on a serial device, freely, in contended phases, or as a channel split), its
    device, latency, phases and the device resources each phase holds, the op before it in its device's order,
    and its out-edges with their link and transfer time.

    Raises:
        ScheduleError: the schedule does not fit (:func:`~hetsim.check.require_feasible`), or a contention kind
            needs what the schedule lacks (:meth:`~hetsim.devices.base.DeviceBase.contended_phases`).
    """

    SERIAL, FREE, PHASES, SPLIT = range(4)

    def __init__(self, costs: CostModel, schedule: Schedule, contention: frozenset[str]) -> None:
        costs = costs.for_schedule(schedule)  # per-schedule costs (an SNN's engines and residencies), else itself
        self.costs = costs
        self.schedule = schedule
        self.contention = contention
        wl = costs.workload
        g = wl.graph
        self.graph = g
        self.topo = wl.topological_order()
        self.assignment = assignment = schedule.assignment
        self.splits = splits = schedule.splits
        self.caps = caps = costs.serial_devices()
        require_feasible(costs, schedule, views=(assignment, splits))
        order = fill_orders(costs, assignment, schedule.order, splits)
        devs = costs.devices
        self.devs = devs
        self.dev_rank = {d: i for i, d in enumerate(costs.platform.devices)}
        #: (device, split op) -> the op before it in that device's order (a whole op's is in :attr:`serial`)
        self.prev_in_order: dict[tuple[str, str], str] = {}
        prev_of: dict[str, str | None] = {}  # a whole op on a serial device -> the op before it in its order
        for dev in caps:
            seq = order[dev]
            if not splits:  # the common case: each op's predecessor is the one before it in the list
                prev_of.update(zip(seq, [None, *seq], strict=False))  # (the longer list's last unused)
                continue
            prev = None
            for v in seq:
                if v in splits:
                    if prev is not None:
                        self.prev_in_order[(dev, v)] = prev
                else:
                    prev_of[v] = prev
                prev = v
        #: op -> its weight policy's step (hetsim.weights), for streamed and reprogrammed ops
        self.steps = steps = getattr(costs, "weight_steps", {})
        # per op on a device with phases: the device resources each phase holds (None: it overlaps freely)
        self.held: dict[str, list[tuple]] = {}
        self.mode = mode = {}
        #: per op on one serial device: (its device, its latency, the op before it in that device's order, its
        #: weight step or None): what its start needs, read with one lookup
        self.serial: dict[str, tuple[str, float, str | None, object]] = {}
        serial, SERIAL = self.serial, self.SERIAL
        latency, phases_of = costs.latency, costs.phases
        for v, dv in assignment.items():  # schedule order: the first op whose contention fails is named
            if dv in caps and v not in splits:
                mode[v] = SERIAL
                serial[v] = (dv, latency[v][dv], prev_of.get(v), steps.get(v))
                continue
            if v in splits:
                mode[v] = self.SPLIT
                continue
            phases = phases_of.get(v, {}).get(dv)
            held = None
            if phases is not None:
                step = steps.get(v)
                if step is not None and step.placement:  # reprogrammed: on the time-shared crossbars
                    at, need = list(step.placement), sum(n for _, n in step.placement)
                else:
                    at, need = schedule.placement.get(v), costs.need.get(v, {}).get(dv)
                held = devs[dv].contended_phases(contention, v, at, need)
            if held is None:
                mode[v] = self.FREE
            else:
                self.held[v] = held
                mode[v] = self.PHASES
        self.indegree = indegree = dict.fromkeys(g, 0)  # counted in the pass over the edges below
        for v, us in schedule.after.items():
            self.indegree[v] += len(us)
        self.dependents: dict[str, list[str]] = {}  # Schedule.after: u -> ops waiting for u to finish
        for v, us in schedule.after.items():
            for u in us:
                self.dependents.setdefault(u, []).append(v)
        # u -> [(v, link or None, transfer seconds)]: first u's dependents (Schedule.after: arrive with nothing to
        # move, in the order they were listed), then its out-edges in graph order; priced once per plan, one pass
        # over the edges,
        # each device pair's route (CostModel.transfer_route: its link and wire format, or nothing to move) asked
        # once per plan, at the first edge between the pair that moves data
        self.out: dict[str, list[tuple]] = {}
        routes: dict[tuple[str, str], tuple | None] = {}
        route_of, folded = costs.transfer_route, costs.folded
        dependents = self.dependents
        for u, nbrs in g.adjacency():
            du = assignment[u]
            deps = dependents.get(u) if dependents else None
            edges = [(v, None, 0.0) for v in deps] if deps else []
            # split ops share memory with their neighbours (checked); a folded op's outputs move nothing
            still = u in splits or u in folded
            for v, data in nbrs.items():
                indegree[v] += 1
                dv = assignment[v]
                if still or du == dv or v in splits or data.get("param"):
                    edges.append((v, None, 0.0))
                    continue
                route = routes.get((du, dv), _UNASKED)
                if route is _UNASKED:
                    route = routes[(du, dv)] = route_of(du, dv)
                if route is None:
                    edges.append((v, None, 0.0))
                    continue
                link, bits = route
                edges.append((v, link, link.transfer_time(edge_bytes_at(data, bits))))
            self.out[u] = edges
        self._gate_fused_groups(fusion_gates(g, schedule.fused))  # none without fused groups
        #: the ops without inputs, in topological order: what a request starts when it arrives
        self.sources = [v for v in self.topo if not indegree[v]]

    def _gate_fused_groups(self, gates: dict[str, list[tuple[str, str]]]) -> None:
        """A fused group is one launch: the edges into its fused consumers from outside the group arrive at its
        head instead (the transfer still named after its consumer), so the head starts once they are all there
        and its consumers follow it without waiting (:func:`hetsim.check.fusion_gates`)."""
        indegree = self.indegree
        for h, edges in gates.items():
            for u, c in edges:
                out = self.out[u]
                i = next(i for i in range(len(out) - 1, -1, -1) if out[i][0] == c)  # the edge, after dependents
                _, link, dt = out[i]
                out[i] = (h, None if link is None else _ToGroup(link.name, c), dt)
                indegree[c] -= 1
                indegree[h] += 1


@dataclass(frozen=True, slots=True)
class _ToGroup:
    """The link of a transfer into a fused group's member: its link's name and the consumer it is for (the
    transfer arrives at the group's head, :meth:`Plan._gate_fused_groups`)."""

    name: str
    consumer: str


#: a device pair whose route the plan has not asked yet (None is an answer: nothing moves)
_UNASKED = object()


class Hardware:
    """The platform's SimPy resources, shared by every request replayed on it: one resource per serial device
    (made by the dispatch policy), one per link under ``links`` contention, and the devices' own contended
    resources (:meth:`~hetsim.devices.base.DeviceBase.contended_phases`; one single-unit resource per device
    and key, made on first use)."""

    def __init__(self, env: simpy.Environment, costs: CostModel, contention: frozenset[str],
                 dispatch: DispatchPolicy) -> None:
        self.env = env
        self.dispatch = dispatch
        self.synchronous = dispatch.synchronous
        self.serial = {dev: dispatch.resource(env, cap) for dev, cap in costs.serial_devices().items()}
        #: link name -> its :class:`~hetsim.sim.port.Port`, under ``links`` contention
        self.links = {name: Port(env) for name in costs.platform.links} if "links" in contention else {}
        #: memory name -> its port, under ``memory`` contention (one weight read at a time: hetsim.sim.weights)
        self.memories = ({name: Port(env) for name, m in costs.platform.memories.items()
                          if m.weights_for} if "memory" in contention else {})
        self.own: dict[tuple[str, object], Port] = {}
        #: serial device -> its :class:`~hetsim.sim.sleep.SleepState` (a scenario replay of devices with a
        #: ``sleep`` config); empty: no device sleeps (the default, and every single-inference replay)
        self.sleep: dict = {}
        #: an op on a device whose ops overlap freely holds its own hardware (one resource per plan and op), so
        #: that requests of one op take turns on it; off for one request (nothing to take turns with)
        self.exclusive_ops = False

    def device_resources(self, device: str, keys: tuple) -> list[Port]:
        out = []
        for k in keys:
            res = self.own.get((device, k))
            if res is None:
                res = self.own[(device, k)] = Port(self.env)
            out.append(res)
        return out


class Request:
    """One inference of a :class:`Plan` on a :class:`Hardware`: the replay's state and its steps.

    The steps are methods: :meth:`arrive` (an input is there), :meth:`run_op` (all are: start the op the way its
    device runs it), the serial grant (:meth:`ask_serial`, :meth:`grant`), :meth:`run_free`, :meth:`run_phases`,
    :meth:`run_split`, :meth:`complete` (send the outputs: :meth:`transfer`) and the releases. Every op and
    transfer is a chain of callbacks on SimPy events; only a channel split is a SimPy process.

    Attributes:
        arrival_s, seq, priority, deadline_s: what dispatch policies order requests by (the arrival time, a
            sequence number, the stream's priority, the absolute deadline or ``None``).
        rows: the trace rows ``(op, device, kind, phase, start_s, end_s, channels)`` when ``record``.
        start, finish: per op, seconds.
    """

    def __init__(self, plan: Plan, hw: Hardware, *, arrival_s: float = 0.0, seq: int = 0, priority: int = 0,
                 deadline_s: float | None = None, record: bool = True, on_done: Callable | None = None) -> None:
        self.plan = plan
        self.hw = hw
        self.env = hw.env
        self.arrival_s = arrival_s
        self.seq = seq
        self.priority = priority
        self.deadline_s = deadline_s
        self.rows: list[tuple] | None = [] if record else None
        self.start: dict[str, float] = {}
        self.finish: dict[str, float] = {}
        self.granted: set[str] = set()  # ops that hold (or held) their serial devices
        self.waiters: dict[str, list[Callable[[], object]]] = {}  # op -> what runs once it is granted
        self.remaining = dict(plan.indegree)
        self.left = len(plan.indegree)  # ops not finished yet
        self.on_done = on_done

    # ------------------------------------------------------------------------------------------ arrival

    def start_all(self) -> None:
        """The request has arrived: start every op with no inputs."""
        for v in self.plan.sources:
            self.run_op(v)

    def arrive(self, v: str) -> None:
        """One input of ``v`` is there; start ``v`` when all are."""
        n = self.remaining[v] - 1
        self.remaining[v] = n
        if not n:
            self.run_op(v)

    def run_op(self, v: str) -> None:
        """All inputs of ``v`` have arrived: run it the way its device runs ops."""
        plan = self.plan
        serial = plan.serial.get(v)
        if serial is not None:  # the common case first: one op on one serial device (the serial grant inline)
            dv, dt, prev, step = serial
            if prev is None or prev in self.granted:
                hw = self.hw
                if hw.synchronous and not hw.sleep:
                    units = hw.serial[dv]
                    if units.free:  # Units.request, serial_granted and serial_start (no sleep state) inlined
                        units.free -= 1
                        env = self.env
                        self.start[v] = t0 = env.now
                        if step is None:
                            env.timeout(dt, (self, v, dv, None, t0)).callbacks.append(_serial_done)
                        else:  # streamed: fetch the weights (hetsim.sim.weights)
                            _weights.serial(self, v, dv, None, step)
                        self.grant(v)
                        return
                self.ask_serial(v, dv)
            else:
                self.waiters.setdefault(prev, []).append(partial(self.ask_serial, v, dv))
            return
        mode = plan.mode[v]
        dv = plan.assignment[v]
        if mode == Plan.SPLIT:
            self.env.process(self.run_split(v))
        elif self.hw.exclusive_ops:  # requests of one op take turns on its own hardware (scenarios)
            # a reprogrammed op's hardware is its device's time-shared crossbars (hetsim.weights): one at a time
            step = plan.steps.get(v)
            key = "reprogram" if step is not None and step.policy == "reprogrammed" else (id(plan), v)
            own = self.hw.device_resources(dv, (key,))[0]
            own.request(lambda _event: self.run_own(v, dv, mode, own))
        elif v in plan.steps:  # reprogrammed: read and write the weights first
            _weights.prelude(self, v, dv, plan.steps[v], partial(self.run_after_prelude, v, dv, mode, None))
        elif mode == Plan.FREE:
            self.run_free(v, dv, plan.costs.phases.get(v, {}).get(dv))
        else:
            self.run_phases(v, dv)

    def run_own(self, v: str, dv: str, mode: int, own: Port) -> None:
        """``v`` holds its own hardware (a PUMA op's crossbars, ``own``) from its start to its end."""
        step = self.plan.steps.get(v)
        if step is not None:  # reprogrammed: write the weights first, holding the crossbars
            _weights.prelude(self, v, dv, step, partial(self.run_after_prelude, v, dv, mode, own))
            return
        self.run_after_prelude(v, dv, mode, own)

    def run_after_prelude(self, v: str, dv: str, mode: int, own) -> None:
        """``v`` (its weights, if reprogrammed, written) runs on a device whose ops overlap, holding ``own``."""
        if mode == Plan.FREE:
            self.run_free(v, dv, self.plan.costs.phases.get(v, {}).get(dv), own)
        else:
            self.run_phases(v, dv, own)

    # ------------------------------------------------------------------------------------------ grant

    def grant(self, v: str) -> None:
        """``v`` holds its serial device(s): the next op in each device's order may now ask for it."""
        self.granted.add(v)
        for fn in self.waiters.pop(v, ()):
            fn()

    def after_granted(self, prev: str | None, fn: Callable[[], object]) -> None:
        """Run ``fn`` now if ``prev`` (the op before in a device's order) has been granted, else once it is."""
        if prev is None or prev in self.granted:
            fn()
        else:
            self.waiters.setdefault(prev, []).append(fn)

    def take(self, ports: list[Port], then: Callable[[], None]) -> None:
        """Request ``ports`` one by one in the given order (a fixed lock order: no deadlock), holding those
        granted while waiting for the rest; call ``then()`` once all are held (at once when there are none)."""
        if not ports:
            then()
            return
        ports[0].request(_take_next, (ports, 1, then))

    # ------------------------------------------------------------------------------------------ run

    def ask_serial(self, v: str, dv: str) -> None:
        res = self.hw.serial[dv]
        if self.hw.synchronous:
            res.request(partial(self.serial_granted, v, dv))
        else:  # a SimPy request: its event is the request (the token to release)
            self.hw.dispatch.request(res, self).callbacks.append(partial(self.serial_granted, v, dv))

    def serial_granted(self, v: str, dv: str, req) -> None:
        """``v`` holds a unit of its serial device: it starts (:meth:`serial_start`), on a device with a sleep
        state (:mod:`hetsim.sim.sleep`) once the device is awake; the next op in the device's order may ask."""
        if self.hw.sleep and dv in self.hw.sleep:
            wait = self.hw.sleep[dv].start(self.env.now)
            if wait > 0:
                self.env.timeout(wait).callbacks.append(lambda _event: self.serial_start(v, dv, req))
                self.grant(v)
                return
        self.serial_start(v, dv, req)
        self.grant(v)

    def serial_start(self, v: str, dv: str, req) -> None:
        """``v`` starts on the serial device unit it holds: a streamed op fetches its weights first (or alongside,
        :func:`hetsim.sim.weights.serial`), every other op runs for its latency."""
        env = self.env
        self.start[v] = t0 = env.now
        _, dt, _, step = self.plan.serial[v]
        if step is not None:  # streamed: fetch the weights (hetsim.sim.weights)
            _weights.serial(self, v, dv, req, step)
            return
        # the op's data rides on its timeout (no closure or partial per op): _serial_done unpacks it
        env.timeout(dt, (self, v, dv, req, t0)).callbacks.append(_serial_done)

    def serial_done(self, v: str, dv: str, req, t0: float, _event=None) -> None:
        """``v``'s latency has passed: release its unit, record its row, send its outputs."""
        self.finish[v] = t1 = self.env.now
        hw = self.hw
        if hw.sleep and dv in hw.sleep:
            hw.sleep[dv].end(t1)
        hw.serial[dv].release(req)
        if self.rows is not None:
            self.rows.append((v, dv, "compute", "", t0, t1, None))
        self.complete(v)

    def run_free(self, v: str, dv: str, phases, own=None) -> None:
        """``v`` on a device whose ops overlap freely (no contended phases): it runs for its latency at once."""
        env = self.env
        t0 = env.now
        self.start.setdefault(v, t0)  # a reprogrammed op started with its weights (hetsim.sim.weights)
        step = self.plan.steps.get(v)
        dt = self.plan.costs.latency[v][dv] if step is None else step.compute_s
        env.timeout(dt, (self, v, dv, phases, t0, own)).callbacks.append(_free_done)

    def free_done(self, v: str, dv: str, phases, t0: float, own) -> None:
        """``v`` (:meth:`run_free`) ends now: its rows (one per phase, laid end to end, the op's times kept
        exact), its own hardware released, its outputs sent."""
        self.finish[v] = t1 = self.env.now
        rows = self.rows
        if rows is not None:
            if phases is None:
                rows.append((v, dv, "compute", "", t0, t1, None))
            else:
                t, last = t0, len(phases) - 1
                for i, (ph, dt) in enumerate(zip(self.plan.devs[dv].phase_names, phases, strict=True)):
                    t_end = t1 if i == last else t + dt
                    rows.append((v, dv, "compute", ph, t, t_end, None))
                    t = t_end
        if own is not None:
            own.release()
        self.complete(v)

    def run_phases(self, v: str, dv: str, own=None) -> None:
        """``v`` in its device's phases, each holding the device resources the device names for it (a PUMA's
        internal bus for load/store, its cores for the MVM) while it runs."""
        env = self.env
        plan = self.plan
        phases = plan.costs.phases[v][dv]
        names = plan.devs[dv].phase_names
        seq = [(name, dt, self.hw.device_resources(dv, keys))
               for name, dt, keys in zip(names, phases, plan.held[v], strict=True)]

        def phase(i: int) -> None:
            name, dt, resources = seq[i]

            def held() -> None:
                t0 = env.now
                if i == 0:
                    self.start.setdefault(v, t0)

                def ended(_event) -> None:
                    for r in resources:
                        r.release()
                    self.record(v, dv, name, t0, env.now)
                    nonlocal phase
                    if i + 1 < len(seq):
                        phase(i + 1)
                    else:
                        phase = None  # the recursive closure's reference cycle, broken (replays run with gc off)
                        self.finish[v] = env.now
                        if own is not None:
                            own.release()
                        self.complete(v)

                env.timeout(dt).callbacks.append(ended)

            self.take(resources, held)

        phase(0)

    def run_split(self, v: str):
        """All parts of a split op start together once every part's device is free (and each device's order
        allows it); devices are taken in platform order (a fixed lock order); each is released when its own part
        ends; the op finishes with its longest part. A SimPy process."""
        plan = self.plan
        env = self.env
        serial = self.hw.serial
        parts = sorted(op_parts(plan.costs, v, plan.assignment, plan.splits), key=lambda p: plan.dev_rank[p[0]])
        for d, _, _ in parts:
            prev = plan.prev_in_order.get((d, v))
            if prev is not None and d in serial and prev not in self.granted:
                ev = env.event()
                self.waiters.setdefault(prev, []).append(ev.succeed)
                yield ev
        reqs = {}
        for d, _, _ in parts:  # acquired in platform device order: a fixed lock order
            if d in serial:
                if self.hw.synchronous:
                    ev = env.event()
                    serial[d].request(ev.succeed)
                    reqs[d] = None
                else:
                    ev = reqs[d] = self.hw.dispatch.request(serial[d], self)
                yield ev
        self.start[v] = t0 = env.now
        for d, dt, n in parts:
            if d in reqs:
                env.timeout(dt).callbacks.append(self.release_at_end(d, reqs[d]))
            if self.rows is not None:
                self.rows.append((v, d, "compute", "", t0, t0 + dt, n))
        self.grant(v)
        yield env.timeout(max(dt for _, dt, _ in parts))
        self.finish[v] = env.now
        self.complete(v)

    # ------------------------------------------------------------------------------------------ release

    def release_at_end(self, dev: str, req):
        def cb(_event) -> None:
            self.hw.serial[dev].release(req)

        return cb

    def record(self, v: str, dv: str, phase: str, t0: float, t1: float) -> None:
        if self.rows is not None:
            self.rows.append((v, dv, "compute", phase, t0, t1, None))

    def complete(self, u: str) -> None:
        """``u`` finished: release its dependents, send its outputs (a transfer per cross-device edge); both are in
        :attr:`Plan.out`, the dependents first."""
        remaining = self.remaining
        for v, link, dt in self.plan.out[u]:
            if link is None:  # arrive(v), inlined
                n = remaining[v] - 1
                remaining[v] = n
                if not n:
                    self.run_op(v)
            else:
                self.transfer(u, v, link, dt)
        self.left -= 1
        if self.left == 0 and self.on_done is not None:
            self.on_done(self)

    # ------------------------------------------------------------------------------------------ transfer

    def transfer(self, u: str, v: str, link, dt: float) -> None:
        """``u``'s output to ``v`` over ``link`` for ``dt`` seconds; with ``links`` contention the link carries
        one transfer at a time, first come first served."""
        env = self.env
        port = self.hw.links.get(link.name)
        if port is None:
            env.timeout(dt, (self, u, v, link, env.now)).callbacks.append(_transfer_done)
            return
        port.request(_link_granted, (self, u, v, link, dt, port))


def _serial_done(event) -> None:
    req, v, dv, token, t0 = event.value
    req.serial_done(v, dv, token, t0)


def _free_done(event) -> None:
    req, v, dv, phases, t0, own = event.value
    req.free_done(v, dv, phases, t0, own)


def _take_next(event) -> None:
    """One more of :meth:`Request.take`'s ports is held: ask for the next, or go on once all are."""
    ports, i, then = event.value
    if i == len(ports):
        then()
    else:
        ports[i].request(_take_next, (ports, i + 1, then))


def _link_granted(event) -> None:
    """A contended transfer holds its link: it runs for its time."""
    req, u, v, link, dt, port = event.value
    req.env.timeout(dt, (req, u, v, link, req.env.now, port)).callbacks.append(_link_done)


def _link_done(event) -> None:
    """A contended transfer ends: the link is released, its row, and its consumer's input is there."""
    req, u, v, link, t0, port = event.value
    port.release()
    if req.rows is not None:
        req.rows.append((f"{u}->{getattr(link, 'consumer', v)}", link.name, "transfer", "", t0, req.env.now,
                         None))
    req.arrive(v)


def _transfer_done(event) -> None:
    """An uncontended transfer ends: its row, and its consumer's input is there."""
    req, u, v, link, t0 = event.value
    if req.rows is not None:
        req.rows.append((f"{u}->{getattr(link, 'consumer', v)}", link.name, "transfer", "", t0, req.env.now,
                         None))
    req.arrive(v)


#: The dtype pandas infers for a column of Python strings (``str`` from pandas 3, ``object`` before), found once:
#: the trace's text columns are built with it given, not inferred row by row (the same columns, in less time).
_TEXT = pd.Series(["op"]).dtype


def trace_frame(rows: list[tuple]) -> pd.DataFrame:
    """The trace table of :attr:`SimResult.trace` from rows ``(op, device, kind, phase, start_s, end_s,
    channels)`` already in the trace's order: built column by column (one array per column, each of its dtype
    given: text as pandas infers it for strings, times ``float64``; one DataFrame), not row by row;
    ``channels`` is ``Int64``, missing where ``None``."""
    return _trace(rows)[0]


def _trace(rows: list[tuple]) -> tuple[pd.DataFrame, float]:
    """:func:`trace_frame` and the latest ``end_s`` of the rows (0.0 without rows)."""
    if not rows:
        trace = pd.DataFrame(rows, columns=TRACE_COLUMNS)
        trace["channels"] = trace["channels"].astype("Int64")
        return trace, 0.0
    n = len(rows)
    op, device, kind, phase, start, end, channels = zip(*rows, strict=True)
    values = np.zeros(n, np.int64)
    if channels.count(None) == n:  # no channel-split part: every row's missing (one C-level count, no per-row test)
        mask = np.ones(n, bool)
    else:
        mask = np.fromiter((c is None for c in channels), bool, n)
        values[~mask] = [c for c in channels if c is not None]
    text = _TEXT
    frame = pd.DataFrame({"op": pd.array(op, dtype=text), "device": pd.array(device, dtype=text),
                          "kind": pd.array(kind, dtype=text), "phase": pd.array(phase, dtype=text),
                          "start_s": np.array(start, np.float64), "end_s": np.array(end, np.float64),
                          "channels": pd.arrays.IntegerArray(values, mask)}, copy=False)
    return frame, max(end)


def simulate(
    costs: CostModel,
    schedule: Schedule,
    contention: frozenset[str] | set[str] = frozenset(),
    dispatch: str | DispatchPolicy | None = None,
) -> SimResult:
    """Replay ``schedule`` on SimPy resources (one request).

    Runs with Python's cyclic garbage collector paused (re-enabled on return, also on an error, when it was on):
    the plan and the replay make O(ops) small objects, freed by reference counting before the collector is
    switched back on, so that it never walks them. What the replay leaves to the collector is its SimPy
    Environment's and contended ports' own reference cycles, a few dozen objects whatever the graph's size
    (measured on YOLOv5n and a 10k-op DAG: 8 objects with contention off, 44 with every kind on;
    ``tests/test_sim.py`` checks that they do not grow with the graph); the memory ``tracemalloc`` sees after 30
    YOLOv5n replays (5 of the 10k-op DAG) and a collection is within 6 kB of that after one.

    Args:
        costs: cost model of the workload on the platform.
        schedule: assignment, per-device order and crossbar placement to replay.
        contention: subset of :data:`CONTENTION_KINDS` to model.
        dispatch: a registered dispatch policy's name or instance (:mod:`hetsim.sim.dispatch`; default
            ``static``); with one request every policy gives the same times.

    Returns:
        :class:`SimResult` with the trace and per-op times.

    Raises:
        ScheduleError: the schedule does not fit the workload/platform (unassigned op, unsupported device,
            inconsistent order, a placement a device's contention needs is missing, or a deadlock).
        InputError: an unknown contention kind or dispatch policy.
    """
    contention = frozenset(contention)
    bad = contention - set(contention_kinds())
    if bad:
        raise InputError(f"unknown contention kind {sorted(bad)[0]!r}; allowed: {', '.join(contention_kinds())}")
    policy = get_dispatch(dispatch)
    # The plan and the replay allocate many small objects that die young; with the collector on, its passes over
    # them would only cost time. None of them is cyclic garbage but the Environment's bound classes and the
    # contended ports (a few dozen objects per replay, whatever its size; tests/test_sim.py checks it).
    gc_was_enabled = gc.isenabled()
    gc.disable()
    plan = env = req = rows = result = None
    try:
        plan = Plan(costs, schedule, contention)
        env = simpy.Environment()
        req = Request(plan, Hardware(env, plan.costs, contention, policy))
        req.start_all()
        env.run()
        if len(req.finish) != len(plan.graph):
            stuck = next(n for n in plan.topo if n not in req.finish)
            raise ScheduleError(f"replay deadlocked: op {stuck!r} never ran (the device order contradicts the DAG)")
        rows = req.rows
        req.rows = []  # handed to the result (the trace, built from them when read)
        makespan = max(map(itemgetter(5), rows), default=0.0)
        result = SimResult(trace=rows, start_s=req.start, finish_s=req.finish, makespan_s=makespan,
                           contention=contention, assignment=plan.assignment,  # the schedule's views: fresh dicts,
                           splits=plan.splits, weights=dict(plan.steps))  # the plan's own (it dies here): no copy
    finally:
        # the callbacks refer to each other and to the request (a cycle only the collector frees): empty the
        # large containers now rather than at its next pass
        if req is not None:
            for container in (req.rows, req.remaining, req.granted, req.waiters):
                container.clear()
        # Free the plan, the request and what they hold (O(ops) objects) by reference counting while the
        # collector is still off: re-enabled with them alive, its first pass (of the youngest generation) would
        # walk every one of them, 7-8 % of a 10k- or 100k-op replay (measured with gc.callbacks).
        plan = env = req = rows = None
        if gc_was_enabled:
            gc.enable()
    return result
