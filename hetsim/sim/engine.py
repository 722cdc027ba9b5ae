"""SimPy replay of a Schedule on resources built from the Platform (``docs/architecture.md``, "Simulation semantics").

An op starts when all its inputs (and their transfers) have arrived and its device grants it. Ops and transfers
are chains of callbacks on SimPy events (``simpy.Resource`` requests and timeouts), not SimPy processes: an op's
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
  that models it (``DeviceBase.contention``): ``cim-bus`` (one load/store phase at a time on the internal bus) and
  ``cim-cores`` (a core issues one MVM stream at a time: ops placed on a common core serialise their MVM
  phases; an op spanning several cores needs all of them, and takes them one by one in core order, holding
  those it has while it waits for the rest - a fixed lock order, so it never deadlocks).
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

import pandas as pd
import simpy

from hetsim.check import fill_orders, op_parts, require_feasible
from hetsim.costs import CostModel
from hetsim.errors import InputError, ScheduleError
from hetsim.schedule import Schedule
from hetsim.sim.contention import CONTENTION_KINDS, parse_contention

__all__ = ["CONTENTION_KINDS", "TRACE_COLUMNS", "SimResult", "parse_contention", "simulate"]

TRACE_COLUMNS = ["op", "device", "kind", "phase", "start_s", "end_s", "channels"]


@dataclass
class SimResult:
    """Outcome of one replay.

    Attributes:
        trace: one row per busy interval: ``op`` (op name, or ``"u->v"`` for a transfer), ``device``
            (device or link name), ``kind`` (``compute`` | ``transfer``), ``phase`` (``load``/``mvm``/
            ``store`` for CIM ops, empty otherwise), ``start_s``, ``end_s`` (seconds), ``channels`` (the
            output channels a part of a channel-split op computes; missing (``<NA>``) for every other row).
        start_s, finish_s: per op, seconds.
        makespan_s: latest finish of any op or transfer, seconds.
        contention: the contention kinds that were on.
        assignment: op name -> device, as replayed.
        splits: the channel splits replayed (op -> {device: channel indices}).
    """

    trace: pd.DataFrame
    start_s: dict[str, float]
    finish_s: dict[str, float]
    makespan_s: float
    contention: frozenset[str] = field(default_factory=frozenset)
    assignment: dict[str, str] = field(default_factory=dict)
    splits: dict[str, dict[str, list[int]]] = field(default_factory=dict)


def _row_key(row: tuple) -> tuple:
    """The trace's order: by start, end, device, op."""
    return row[4], row[5], row[1], row[0]


def simulate(
    costs: CostModel, schedule: Schedule, contention: frozenset[str] | set[str] = frozenset()
) -> SimResult:
    """Replay ``schedule`` on SimPy resources.

    Args:
        costs: cost model of the workload on the platform.
        schedule: assignment, per-device order and crossbar placement to replay.
        contention: subset of :data:`CONTENTION_KINDS` to model.

    Returns:
        :class:`SimResult` with the trace and per-op times.

    Raises:
        ScheduleError: the schedule does not fit the workload/platform (unassigned op, unsupported device,
            inconsistent order, missing placement under ``cim-cores``, or a deadlock).
        InputError: an unknown contention kind.
    """
    contention = frozenset(contention)
    bad = contention - set(CONTENTION_KINDS)
    if bad:
        raise InputError(f"unknown contention kind {sorted(bad)[0]!r}; allowed: {', '.join(CONTENTION_KINDS)}")
    costs = costs.for_schedule(schedule)  # per-schedule costs (an SNN's engines and residencies), else itself
    wl = costs.workload
    g = wl.graph
    platform = costs.platform
    assignment = schedule.assignment
    splits = schedule.splits
    caps = costs.serial_devices()
    topo = wl.topological_order()
    require_feasible(costs, schedule)
    order = fill_orders(costs, assignment, schedule.order, splits)
    devs = costs.devices

    if "cim-cores" in contention:
        n_slots = {d: len(dev.slots) for d, dev in devs.items() if "cim-cores" in dev.contention and
                   dev.slots is not None}
        for v, dv in assignment.items():
            if dv in n_slots and v not in splits:
                placed = schedule.placement.get(v)
                cores = [c for c, _ in placed or []]
                if (not placed or any(not 0 <= c < n_slots[dv] for c in cores) or len(set(cores)) != len(cores)
                        or sum(n for _, n in placed) != costs.need[v][dv]):
                    raise ScheduleError(
                        f"CIM op {v!r} has no valid crossbar placement (distinct cores of {dv!r} holding its "
                        f"{costs.need[v][dv]} crossbars); 'cim-cores' contention needs one"
                    )

    env = simpy.Environment()
    rows: list[tuple] = []
    start: dict[str, float] = {}
    finish: dict[str, float] = {}
    granted: set[str] = set()  # ops that hold (or held) their serial devices
    waiters: dict[str, list[Callable[[], object]]] = {}  # op -> what runs once it is granted
    prev_in_order: dict[tuple[str, str], str] = {}  # (device, op) -> the op before it in the device's order
    for dev in caps:
        seq = order[dev]
        for i in range(1, len(seq)):
            prev_in_order[(dev, seq[i])] = seq[i - 1]
    dev_rank = {d: i for i, d in enumerate(platform.devices)}
    lat = costs.latency
    succ = g.succ

    serial_res = {dev: simpy.Resource(env, capacity=cap) for dev, cap in caps.items()}
    link_res = (
        {name: simpy.Resource(env, capacity=1) for name in platform.links} if "links" in contention else {}
    )
    bus_res, core_res = {}, {}
    for name, dev in devs.items():
        if "cim-bus" in contention and "cim-bus" in dev.contention:
            bus_res[name] = simpy.Resource(env, capacity=1)
        if "cim-cores" in contention and "cim-cores" in dev.contention and dev.slots is not None:
            core_res[name] = [simpy.Resource(env, capacity=1) for _ in dev.slots]

    remaining = {v: g.in_degree(v) + len(schedule.after.get(v, ())) for v in g.nodes}
    dependents: dict[str, list[str]] = {}  # control dependencies (Schedule.after): u -> ops waiting for u to finish
    for v, us in schedule.after.items():
        for u in us:
            dependents.setdefault(u, []).append(v)

    def grant(v: str) -> None:
        """``v`` holds its serial device(s): the next op in each device's order may now ask for it."""
        granted.add(v)
        for fn in waiters.pop(v, ()):
            fn()

    def after_granted(prev: str | None, fn: Callable[[], object]) -> None:
        """Run ``fn`` now if ``prev`` (the op before in a device's order) has been granted, else once it is."""
        if prev is None or prev in granted:
            fn()
        else:
            waiters.setdefault(prev, []).append(fn)

    def take(resources: list, then: Callable[[list], None]) -> None:
        """Request ``resources`` one by one in the given order (a fixed lock order: no deadlock), holding those
        granted while waiting for the rest; call ``then(requests)`` once all are held."""
        reqs: list = []

        def step(_event=None) -> None:
            if len(reqs) == len(resources):
                then(reqs)
                return
            req = resources[len(reqs)].request()
            reqs.append(req)
            req.callbacks.append(step)

        step()

    def arrive(v: str) -> None:
        """One input of ``v`` is there; start ``v`` when all are."""
        remaining[v] -= 1
        if remaining[v] == 0:
            run_op(v)

    def transfer_done(u: str, v: str, link, t0: float, res: simpy.Resource | None = None, req=None):
        def cb(_event) -> None:
            if res is not None:
                res.release(req)
            rows.append((f"{u}->{v}", link.name, "transfer", "", t0, env.now, None))
            arrive(v)

        return cb

    def contended_transfer(u: str, v: str, link, dt: float, res: simpy.Resource) -> None:
        """A transfer over a link carrying one transfer at a time (first come first served)."""
        req = res.request()

        def got(_event) -> None:
            env.timeout(dt).callbacks.append(transfer_done(u, v, link, env.now, res, req))

        req.callbacks.append(got)

    def complete(u: str) -> None:
        """``u`` finished: send its outputs (a transfer per cross-device edge) to its consumers."""
        du = assignment[u]
        for v in dependents.get(u, ()):
            arrive(v)
        for v in succ[u]:
            dv = assignment[v]
            if du == dv or u in splits or v in splits or not costs.needs_transfer(u, v, du, dv):
                arrive(v)  # split ops share memory with their neighbours (checked): nothing moves
                continue
            link = costs.link(du, dv)
            dt = link.transfer_time(costs.transfer_bytes(u, v, du, dv))
            res = link_res.get(link.name)
            if res is not None:
                contended_transfer(u, v, link, dt, res)
            else:
                env.timeout(dt).callbacks.append(transfer_done(u, v, link, env.now))

    def run_serial(v: str, dv: str) -> None:
        """``v`` on serial device ``dv``: once the op before it in ``dv``'s order holds a unit, ask for one, run
        for its latency, release it."""
        res = serial_res[dv]

        def ask() -> None:
            req = res.request()

            def got(_event) -> None:
                start[v] = t0 = env.now
                env.timeout(lat[v][dv]).callbacks.append(done(req, t0))
                grant(v)

            req.callbacks.append(got)

        def done(req, t0: float):
            def cb(_event) -> None:
                finish[v] = env.now
                res.release(req)
                rows.append((v, dv, "compute", "", t0, finish[v], None))
                complete(v)

            return cb

        after_granted(prev_in_order.get((dv, v)), ask)

    def run_free(v: str, dv: str, phases) -> None:
        """``v`` on a device whose ops overlap freely (no contended phases): it runs for its latency at once."""
        start[v] = t0 = env.now

        def done(_event) -> None:
            finish[v] = t1 = env.now
            if phases is None:
                rows.append((v, dv, "compute", "", t0, t1, None))
            else:  # phase rows laid end to end, op times kept exact
                t, names = t0, devs[dv].phase_names
                for i, (ph, dt) in enumerate(zip(names, phases, strict=True)):
                    t_end = t1 if i == len(phases) - 1 else t + dt
                    rows.append((v, dv, "compute", ph, t, t_end, None))
                    t = t_end
            complete(v)

        env.timeout(lat[v][dv]).callbacks.append(done)

    def run_phases(v: str, dv: str, phases) -> None:
        """``v`` on a CIM device with contended phases: load (internal bus), mvm (its cores), store (bus)."""
        bus = [bus_res[dv]] if dv in bus_res else []
        cores = [core_res[dv][c] for c, _ in sorted(schedule.placement[v])] if dv in core_res else []
        seq = (("load", phases[0], bus), ("mvm", phases[1], cores), ("store", phases[2], bus))

        def phase(i: int) -> None:
            name, dt, resources = seq[i]

            def held(reqs: list) -> None:
                t0 = env.now
                if i == 0:
                    start[v] = t0

                def ended(_event) -> None:
                    for r, req in zip(resources, reqs, strict=True):
                        r.release(req)
                    rows.append((v, dv, "compute", name, t0, env.now, None))
                    if i + 1 < len(seq):
                        phase(i + 1)
                    else:
                        finish[v] = env.now
                        complete(v)

                env.timeout(dt).callbacks.append(ended)

            take(resources, held)

        phase(0)

    def run_split(v: str):
        """All parts of a split op start together once every part's device is free (see the module doc)."""
        parts = sorted(op_parts(costs, v, assignment, splits), key=lambda p: dev_rank[p[0]])
        for d, _, _ in parts:
            prev = prev_in_order.get((d, v))
            if prev is not None and d in serial_res and prev not in granted:
                ev = env.event()
                waiters.setdefault(prev, []).append(ev.succeed)
                yield ev
        reqs = {}
        for d, _, _ in parts:  # acquired in platform device order: a fixed lock order
            if d in serial_res:
                reqs[d] = serial_res[d].request()
                yield reqs[d]
        start[v] = t0 = env.now
        for d, dt, n in parts:
            if d in reqs:
                env.timeout(dt).callbacks.append(release_at_end(d, reqs[d]))
            rows.append((v, d, "compute", "", t0, t0 + dt, n))
        grant(v)
        yield env.timeout(max(dt for _, dt, _ in parts))
        finish[v] = env.now
        complete(v)

    def release_at_end(dev: str, req):
        def cb(_event) -> None:
            serial_res[dev].release(req)

        return cb

    def run_op(v: str) -> None:
        """Called when all inputs of ``v`` have arrived. Only a channel-split op, which waits for several
        devices at once, is a SimPy process; every other op is a chain of callbacks on SimPy events (resource
        requests and timeouts)."""
        dv = assignment[v]
        if v in splits:
            env.process(run_split(v))
        elif dv in serial_res:
            run_serial(v, dv)
        else:
            phases = costs.phases.get(v, {}).get(dv)
            if phases is None or not (bus_res or core_res):
                run_free(v, dv, phases)
            else:
                run_phases(v, dv, phases)

    # The replay allocates many small objects that die young and make no reference cycles (SimPy drops an event's
    # callbacks once it is processed); the garbage collector's passes over them would only cost time.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for v in topo:
            if remaining[v] == 0:
                run_op(v)
        env.run()
        if len(finish) != len(g):
            stuck = next(n for n in topo if n not in finish)
            raise ScheduleError(f"replay deadlocked: op {stuck!r} never ran (the device order contradicts the DAG)")
        rows.sort(key=_row_key)  # stable: rows with equal keys keep the order they were recorded in
        trace = pd.DataFrame(rows, columns=TRACE_COLUMNS)
        trace["channels"] = trace["channels"].astype("Int64")
        makespan = max((r[5] for r in rows), default=0.0)
    finally:
        # the callbacks above refer to each other through this frame's cells (a cycle only the collector
        # frees): empty the large containers now rather than at its next pass
        for container in (rows, remaining, granted, waiters, prev_in_order):
            container.clear()
        if gc_was_enabled:
            gc.enable()
    return SimResult(trace=trace, start_s=start, finish_s=finish, makespan_s=makespan, contention=contention,
                     assignment=dict(assignment), splits={k: dict(v) for k, v in splits.items()})

