"""SimPy replay of a Schedule on resources built from the Platform (``docs/architecture.md``, "Simulation semantics").

One SimPy process per op and one per cross-device transfer. An op starts when all its inputs (and their
transfers) have arrived and its device grants it:

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
  link carries one transfer at a time, first come first served (ties in the order the consumers' processes
  were started: topological). A tensor crosses the link once per consumer edge (as the ILP's z_uv).

With every contention kind off this is exactly the CPU-CIM ILP's timing model, and the times equal
:func:`hetsim.sim.analytic.list_schedule`'s.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import pandas as pd
import simpy

from hetsim.check import fill_orders, op_parts, require_feasible
from hetsim.costs import CostModel
from hetsim.errors import InputError, ScheduleError
from hetsim.schedule import Schedule

CONTENTION_KINDS = ("links", "cim-bus", "cim-cores")
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


def parse_contention(spec: str | Iterable[str] | None) -> frozenset[str]:
    """``"links,cim-bus"`` -> ``{"links", "cim-bus"}``; ``"all"``/``"none"`` accepted; so is a set, list or
    tuple of kinds (``{"links", "cim-bus"}``, ``[]``), or ``None`` (none).

    Raises:
        InputError: an unknown kind (the message suggests the closest one and lists the allowed ones), or
            'all'/'none' inside a list.
    """
    if spec is None:
        return frozenset()
    if isinstance(spec, str):
        if spec.strip() in ("", "none"):
            return frozenset()
        if spec.strip() == "all":
            return frozenset(CONTENTION_KINDS)
        kinds = {k.strip() for k in spec.split(",") if k.strip()}
        if not kinds or kinds == {"none"}:
            return frozenset()
    else:
        try:
            kinds = set(spec)
        except TypeError:
            raise InputError(f"contention {spec!r}: give a string ('links,cim-bus', 'all', 'none') or a set of "
                             f"kinds ({', '.join(CONTENTION_KINDS)})") from None
        if any(not isinstance(k, str) for k in kinds):
            raise InputError(f"contention {spec!r}: kinds are strings: {', '.join(CONTENTION_KINDS)}")
        kinds = {k.strip() for k in kinds}
    if kinds & {"all", "none"}:
        raise InputError(f"contention {spec!r}: 'all' and 'none' stand alone, not in a list")
    bad = kinds - set(CONTENTION_KINDS)
    if bad:
        import difflib

        k = sorted(bad)[0]
        close = difflib.get_close_matches(k, CONTENTION_KINDS, n=1)
        allowed = f"{', '.join(CONTENTION_KINDS)}, all, none"
        raise InputError(f"unknown contention kind {k!r}; did you mean {close[0]!r}? Allowed: {allowed}" if close
                         else f"unknown contention kind {k!r}; allowed: {allowed}")
    return frozenset(kinds)


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
        for v, dv in assignment.items():
            dev = devs[dv]
            if "cim-cores" in dev.contention and dev.slots is not None and v not in splits:
                placed = schedule.placement.get(v)
                cores = [c for c, _ in placed or []]
                if (not placed or any(not 0 <= c < len(dev.slots) for c in cores) or len(set(cores)) != len(cores)
                        or sum(n for _, n in placed) != costs.need[v][dv]):
                    raise ScheduleError(
                        f"CIM op {v!r} has no valid crossbar placement (distinct cores of {dv!r} holding its "
                        f"{costs.need[v][dv]} crossbars); 'cim-cores' contention needs one"
                    )

    env = simpy.Environment()
    rows: list[tuple] = []
    start: dict[str, float] = {}
    finish: dict[str, float] = {}
    granted = {n: env.event() for n in g.nodes}
    prev_in_order: dict[tuple[str, str], str] = {}  # (device, op) -> the op before it in the device's order
    for dev in caps:
        seq = order[dev]
        for i in range(1, len(seq)):
            prev_in_order[(dev, seq[i])] = seq[i - 1]
    dev_rank = {d: i for i, d in enumerate(platform.devices)}

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
    waiters: dict[str, list[str]] = {}  # control dependencies (Schedule.after): u -> ops waiting for u to finish
    for v, us in schedule.after.items():
        for u in us:
            waiters.setdefault(u, []).append(v)

    def arrive(v: str) -> None:
        """One input of ``v`` is there; start ``v``'s process when all are."""
        remaining[v] -= 1
        if remaining[v] == 0:
            env.process(run_op(v))

    def transfer(u: str, v: str, src: str, dst: str, link, dt: float, res: simpy.Resource):
        with res.request() as req:
            yield req
            t0 = env.now
            yield env.timeout(dt)
        rows.append((f"{u}->{v}", link.name, "transfer", "", t0, env.now, None))
        arrive(v)

    def transfer_done(u: str, v: str, link, t0: float):
        def cb(_event) -> None:
            rows.append((f"{u}->{v}", link.name, "transfer", "", t0, env.now, None))
            arrive(v)

        return cb

    def complete(u: str) -> None:
        """``u`` finished: send its outputs (a transfer per cross-device edge) to its consumers."""
        du = assignment[u]
        for v in waiters.get(u, ()):
            arrive(v)
        for v in g.successors(u):
            dv = assignment[v]
            if u in splits or v in splits or not costs.needs_transfer(u, v, du, dv):
                arrive(v)  # split ops share memory with their neighbours (checked): nothing moves
                continue
            link = costs.link(du, dv)
            dt = link.transfer_time(costs.transfer_bytes(u, v, du, dv))
            res = link_res.get(link.name)
            if res is not None:
                env.process(transfer(u, v, du, dv, link, dt, res))
            else:
                env.timeout(dt).callbacks.append(transfer_done(u, v, link, env.now))

    def cim_phase(name: str, phase: str, dt: float, resources: list):
        reqs = []
        for r in resources:  # acquired in a fixed (ascending core) order: no deadlock
            req = r.request()
            reqs.append((r, req))
            yield req
        t0 = env.now
        yield env.timeout(dt)
        for r, req in reqs:
            r.release(req)
        rows.append((name, assignment[name], "compute", phase, t0, env.now, None))

    def release_at_end(dev: str, req):
        def cb(_event) -> None:
            serial_res[dev].release(req)

        return cb

    def run_split(v: str):
        """All parts of a split op start together once every part's device is free (see the module doc)."""
        parts = sorted(op_parts(costs, v, assignment, splits), key=lambda p: dev_rank[p[0]])
        for d, _, _ in parts:
            prev = prev_in_order.get((d, v))
            if prev is not None and d in serial_res:
                yield granted[prev]
        reqs = {}
        for d, _, _ in parts:  # acquired in platform device order: a fixed lock order
            if d in serial_res:
                reqs[d] = serial_res[d].request()
                yield reqs[d]
        granted[v].succeed()
        start[v] = t0 = env.now
        for d, dt, n in parts:
            if d in reqs:
                env.timeout(dt).callbacks.append(release_at_end(d, reqs[d]))
            rows.append((v, d, "compute", "", t0, t0 + dt, n))
        yield env.timeout(max(dt for _, dt, _ in parts))
        finish[v] = env.now

    def run_op(v: str):
        """Started when all inputs of ``v`` have arrived."""
        dv = assignment[v]
        if v in splits:
            yield from run_split(v)
        elif dv in serial_res:
            prev = prev_in_order.get((dv, v))
            if prev is not None:
                yield granted[prev]
            res = serial_res[dv]
            with res.request() as req:
                yield req
                granted[v].succeed()
                start[v] = env.now
                yield env.timeout(costs.latency[v][dv])
                finish[v] = env.now
            rows.append((v, dv, "compute", "", start[v], finish[v], None))
        else:
            phases = costs.phases.get(v, {}).get(dv)
            start[v] = env.now
            granted[v].succeed()
            if phases is None or not (bus_res or core_res):
                yield env.timeout(costs.latency[v][dv])
                finish[v] = env.now
                if phases is None:
                    rows.append((v, dv, "compute", "", start[v], finish[v], None))
                else:  # phase rows laid end to end, op times kept exact
                    t0, names = start[v], devs[dv].phase_names
                    for i, (ph, dt) in enumerate(zip(names, phases, strict=True)):
                        t1 = finish[v] if i == len(phases) - 1 else t0 + dt
                        rows.append((v, dv, "compute", ph, t0, t1, None))
                        t0 = t1
            else:
                bus = [bus_res[dv]] if dv in bus_res else []
                cores = []
                if dv in core_res:
                    cores = [core_res[dv][c] for c, _ in sorted(schedule.placement[v])]
                yield from cim_phase(v, "load", phases[0], bus)
                start[v] = rows[-1][4]
                yield from cim_phase(v, "mvm", phases[1], cores)
                yield from cim_phase(v, "store", phases[2], bus)
                finish[v] = env.now
        complete(v)

    for v in topo:
        if remaining[v] == 0:
            env.process(run_op(v))
    env.run()
    if len(finish) != len(g):
        stuck = next(n for n in topo if n not in finish)
        raise ScheduleError(f"replay deadlocked: op {stuck!r} never ran (the device order contradicts the DAG)")
    trace = pd.DataFrame(rows, columns=TRACE_COLUMNS)
    trace["channels"] = trace["channels"].astype("Int64")
    trace = trace.sort_values(["start_s", "end_s", "device", "op"], kind="stable").reset_index(drop=True)
    makespan = float(trace["end_s"].max()) if len(trace) else 0.0
    return SimResult(trace=trace, start_s=start, finish_s=finish, makespan_s=makespan, contention=contention,
                     assignment=dict(assignment), splits={k: dict(v) for k, v in splits.items()})

