"""The one schedule checker: does a schedule fit its platform, and are its predicted times consistent?

Every path that accepts a schedule goes through here: mappers' schedules in the tests, ``hetsim validate``,
a schedule loaded from JSON, and every replay (:func:`hetsim.sim.simulate` calls :func:`require_feasible`).
What "fits" means comes from the devices' capabilities (:mod:`hetsim.devices.base`): the op runs there, its
parts cover its output channels, and no device's capacities are exceeded.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import filterfalse

from hetsim.costs import CostModel
from hetsim.errors import ScheduleError
from hetsim.schedule import Schedule


def devices_of(op: str, assignment: dict[str, str], splits: dict | None) -> list[str]:
    """The devices running ``op``: its split's devices, else its assigned device."""
    if splits and op in splits:
        return list(splits[op])
    return [assignment[op]]


def op_parts(
    costs: CostModel, op: str, assignment: dict[str, str], splits: dict | None
) -> list[tuple[str, float, int | None]]:
    """``(device, seconds, channels)`` of each part of ``op``: one part (channels ``None``) when it is not
    split, else one per device of its split with the part latency of its channel count."""
    if splits and op in splits:
        return [(d, costs.part_latency(op, d, len(ch)), len(ch)) for d, ch in splits[op].items()]
    d = assignment[op]
    return [(d, costs.latency[op][d], None)]


def fill_orders(
    costs: CostModel, assignment: dict[str, str], order: dict[str, list[str]] | None, splits: dict | None = None
) -> dict[str, list[str]]:
    """``order`` with every serial device present: a device it lacks gets its ops (those with a part on it)
    in the workload's topological order."""
    order = dict(order or {})
    topo = costs.workload.topological_order()
    for dev in costs.serial_devices():
        if dev not in order:
            order[dev] = [n for n in topo if n in assignment and dev in devices_of(n, assignment, splits)]
    return order


def split_violations(costs: CostModel, assignment: dict[str, str], splits: dict | None) -> list[str]:
    """Problems with the channel splits of a schedule (empty when they are valid).

    A split of op ``v`` must: name an op with output channels (a GEMM view) and known devices; give every
    device a non-empty part that the device can run (e.g. the DIANA AIMC runs no grouped conv); partition
    ``0..C_out-1`` exactly; keep each group of a grouped conv on one part (whole groups only); list
    ``assignment[v]`` among its devices; and exchange data with its neighbours only through shared memory: a
    channel split needs no data marshalling only when all devices involved share a memory (ODiMO Sec. III-A,
    property ii), so every pair (a part's device, a device of a DAG neighbour) that differ must share one.
    """
    out: list[str] = []
    if not splits:
        return out
    ops = costs.workload.ops
    g = costs.workload.graph
    plat = costs.platform
    for v, parts in splits.items():
        if v not in ops:
            out.append(f"the schedule splits {v!r}, which is not an op of {costs.workload.name!r}")
            continue
        c_out = costs.out_channels(v)
        if c_out is None:
            out.append(f"op {v!r} ({ops[v].op_type}) has no output channels to split (no GEMM view)")
            continue
        if not isinstance(parts, dict) or not parts:
            out.append(f"the split of {v!r} has no parts")
            continue
        seen: list[int] = []
        ok = True
        for d, ch in parts.items():
            if d not in plat.devices:
                out.append(f"the split of {v!r} names {d!r}, which is not a device of the platform")
                ok = False
            elif not ch:
                out.append(f"the split of {v!r} gives {d!r} no channels (drop the empty part)")
                ok = False
            elif any(not isinstance(c, int) or not 0 <= c < c_out for c in ch):
                bad = next(c for c in ch if not isinstance(c, int) or not 0 <= c < c_out)
                out.append(f"the split of {v!r} gives {d!r} channel {bad!r}, outside 0..{c_out - 1}")
                ok = False
            seen += list(ch)
        if not ok:
            continue
        if len(seen) != c_out or set(seen) != set(range(c_out)):
            dup = sorted({c for c in seen if seen.count(c) > 1})
            missing = sorted(set(range(c_out)) - set(seen))
            what = []
            if dup:
                what.append(f"channel(s) {dup[:5]} on several devices")
            if missing:
                what.append(f"channel(s) {missing[:5]}{' ...' if len(missing) > 5 else ''} on none")
            out.append(f"the split of {v!r} does not partition its {c_out} output channels: {'; '.join(what)}")
            continue
        for d, ch in parts.items():
            if costs.part_latency(v, d, len(ch)) is None:
                out.append(f"op {v!r} ({ops[v].op_type}, groups {ops[v].gemm.groups}): {d!r} cannot run a part of it")
        gv = ops[v].gemm
        if gv.groups > 1 and gv.m_v > 1:
            for ch in parts.values():
                mine = set(ch)
                broken = next((c // gv.m_v for c in ch
                               if not all(c // gv.m_v * gv.m_v + k in mine for k in range(gv.m_v))), None)
                if broken is not None:
                    out.append(f"the split of {v!r} cuts group {broken} ({gv.m_v} channels per group): a part of a "
                               "grouped conv must hold whole groups")
                    break
        if assignment.get(v) not in parts:
            out.append(f"op {v!r} is assigned to {assignment.get(v)!r}, which holds no part of its split; assign it "
                       "to one of " + ", ".join(repr(d) for d in parts))
        for u, w in [(u, v) for u in g.predecessors(v)] + [(v, w) for w in g.successors(v)]:
            if g.edges[u, w].get("param"):
                continue
            other = w if u == v else u
            if other not in assignment:
                continue
            for dp in parts:
                for do in devices_of(other, assignment, splits):
                    if do not in plat.devices:
                        continue
                    if dp != do and not plat.shares_memory(dp, do):
                        out.append(
                            f"split op {v!r}: its part on {dp!r} exchanges data with {other!r} on {do!r} through no "
                            "shared memory; a channel split needs all devices involved to share a memory (ODiMO "
                            "Sec. III-A, property ii)")
                        break
                else:
                    continue
                break
    return out


def fusion_heads(fused: dict[str, str]) -> dict[str, str]:
    """Each fused consumer's group head: the producer at the start of its chain (``fused``: consumer ->
    producer; a chain that loops has no head and maps to itself, :func:`fusion_violations` reports it)."""
    heads: dict[str, str] = {}
    for c in fused:
        seen, h = {c}, fused[c]
        while h in fused and h not in seen:
            seen.add(h)
            h = fused[h]
        heads[c] = c if h in seen else h
    return heads


def fusion_gates(graph, fused: dict[str, str]) -> dict[str, list[tuple[str, str]]]:
    """The inputs a fused group's launch waits for beyond its head's: head -> ``[(u, c), ...]``, every edge
    ``u -> c`` into a fused consumer ``c`` from an op outside ``c``'s group (a residual ``Add``'s other input).
    A group starts once all its members' outside inputs are there (one launch), in the graph's edge order."""
    if not fused:
        return {}
    heads = fusion_heads(fused)
    group = {v: heads.get(v, v) for v in graph}
    gates: dict[str, list[tuple[str, str]]] = {}
    for c, h in heads.items():
        for u in graph.predecessors(c):
            if group[u] != h:
                gates.setdefault(h, []).append((u, c))
    return gates


def fusion_violations(costs: CostModel, schedule: Schedule, order: dict[str, list[str]] | None = None) -> list[str]:
    """Problems with a schedule's fused operator groups (``Schedule.fused``; empty when they are valid): each
    consumer fused into a producer it reads (a data edge), both whole ops on the same device, which fuses the
    pair (:attr:`~hetsim.costs.CostModel.fusion`; none with fusion off); each producer with at most one fused
    consumer (a group is a chain); the consumer right after its producer in the device's order; and the
    groups, taken as one launch each, free of cycles (a group waits for its members' outside inputs, so an
    outside input computed from the group's own output would deadlock)."""
    fused = schedule.fused
    if not fused:
        return []
    g = costs.workload.graph
    out: list[str] = []
    taken: dict[str, str] = {}
    for c, p in fused.items():
        if c not in g or p not in g:
            out.append(f"the schedule fuses {c!r} into {p!r}, not both ops of {costs.workload.name!r}")
            continue
        if not g.has_edge(p, c):
            out.append(f"the schedule fuses {c!r} into {p!r}, which it does not read")
            continue
        if p in taken:
            out.append(f"the schedule fuses both {taken[p]!r} and {c!r} into {p!r}; a producer takes one fused "
                       "consumer (a group is a chain)")
            continue
        taken[p] = c
        if c not in schedule.parts or p not in schedule.parts:
            continue  # the assignment check reports it
        if schedule.is_split(c) or schedule.is_split(p):
            out.append(f"the schedule fuses {c!r} into {p!r}, but a channel-split op takes no part in a fused group")
            continue
        d, dp = schedule.device_of(c), schedule.device_of(p)
        if d != dp:
            out.append(f"the schedule fuses {c!r} (on {d!r}) into {p!r} on another device ({dp!r})")
            continue
        if d not in costs.fusion.get(c, {}).get(p, {}):
            why = ("fusion is off" if not costs.fusion_on else
                   f"{d!r} does not fuse {costs.workload.op(c).op_type} into {costs.workload.op(p).op_type}")
            out.append(f"the schedule fuses {c!r} into {p!r} on {d!r}, but {why}")
            continue
    if out:
        return out
    heads = fusion_heads(fused)
    loop = next((c for c, h in heads.items() if h == c), None)
    if loop is not None:
        return [f"the fused groups of the schedule loop through {loop!r}"]
    import networkx as nx

    group = {v: heads.get(v, v) for v in g}
    h = nx.DiGraph((group[u], group[v]) for u, v in g.edges if group[u] != group[v])
    if not nx.is_directed_acyclic_graph(h):
        cyc = nx.find_cycle(h)
        return [f"the fused group of {cyc[0][0]!r} waits for an input computed from its own output (through "
                f"{cyc[0][1]!r}); fuse the consumer that closes the cycle too, or none"]
    for c, p in fused.items():
        seq = (order or schedule.order).get(schedule.device_of(c))
        if seq is not None:
            i = _index(seq, p)
            if i is None or i + 1 >= len(seq) or seq[i + 1] != c:
                out.append(f"{schedule.device_of(c)}: fused {c!r} does not follow its producer {p!r} in the "
                           "device's order")
    return out


def _index(seq: list[str], v: str) -> int | None:
    try:
        return seq.index(v)
    except ValueError:
        return None


def assignment_violations(
    costs: CostModel, assignment: dict[str, str], splits: dict | None, order: dict[str, list[str]] | None = None,
    limit: int = 20,
) -> list[str]:
    """Problems with which device runs what (empty when none): every op assigned to a device of the platform
    that runs it (CPU-CIM ILP, Eq. 5), valid channel splits (:func:`split_violations`), and each serial device's
    order (when ``order`` is given) listing exactly the ops with a part on it."""
    wl = costs.workload
    g = wl.graph  # its nodes are the ops, in their order (no Workload.ops view built: O(ops) per read)
    out: list[str] = []
    missing = list(filterfalse(assignment.__contains__, g))  # one C-level pass, in the graph's order
    if missing:
        out.append(f"{len(missing)} ops are not assigned, e.g. {missing[0]!r}")
    # the assignment names len(g) - len(missing) ops of the graph: any more are not ops (only then looked for)
    extra = [n for n in assignment if n not in g] if len(assignment) != len(g) - len(missing) else []
    if extra:
        more = f" (and {len(extra) - 1} more)" if len(extra) > 1 else ""
        out.append(f"the schedule assigns {extra[0]!r}, which is not an op of {costs.workload.name!r}{more}")
    if out:
        return out
    splits = splits or {}
    devices, supported = costs.platform.devices, costs.supported
    for n, dev in assignment.items():
        if dev not in devices:
            out.append(f"op {n!r} is assigned to {dev!r}, which is not a device of the platform; devices: "
                       f"{', '.join(devices)}")
        elif n not in splits and not supported(n, dev):
            why = ("" if dev in getattr(costs, "reachable", devices) else
                   f": no link or shared memory joins it to the host {costs.platform.host!r}, and the op exchanges "
                   "tensors")
            out.append(f"op {n!r} ({wl.op(n).op_type}) is assigned to {dev!r}, which cannot run it (Eq. 5){why}")
        if len(out) >= limit:
            return out
    if out:
        return out
    out += split_violations(costs, assignment, splits)[:limit]
    if out or order is None:
        return out
    for dev in costs.serial_devices():
        seq = order.get(dev, [])
        assigned = {n for n, d in assignment.items() if d == dev and n not in splits}  # devices_of, per op
        assigned.update(n for n, parts in splits.items() if dev in parts)
        listed = set(seq)
        if len(seq) != len(listed) or listed != assigned:
            out.append(f"the order of device {dev!r} does not list exactly the {len(assigned)} ops assigned to it")
    return out


def check_assignment(
    costs: CostModel,
    assignment: dict[str, str],
    order: dict[str, list[str]],
    splits: dict[str, dict[str, list[int]]] | None = None,
) -> None:
    """Raise :class:`ScheduleError` with the first of :func:`assignment_violations` (the evaluators' guard)."""
    bad = assignment_violations(costs, assignment, splits, order, limit=1)
    if bad:
        raise ScheduleError(bad[0])


def capacity_use(costs: CostModel, assignment: dict[str, str], splits: dict | None = None) -> dict[str, int]:
    """Resident capacity used per device with one (:attr:`~hetsim.costs.CostModel.budget`): the sum over the ops
    and parts on it of what they need (a part of ``n`` channels needs the device's demand for ``n``)."""
    splits = splits or {}
    used = dict.fromkeys(costs.budget, 0)
    for v, d in assignment.items():
        if v in splits:
            for dp, ch in splits[v].items():
                if dp in used:
                    used[dp] += int(costs.demand(v, dp, len(ch)).get(costs.resident[dp].name, 0))
        elif d in used:
            used[d] += costs.need[v][d]
    return used


def capacity_violations(costs: CostModel, assignment: dict[str, str], splits: dict | None = None) -> list[str]:
    """Devices whose resident capacity the ops and parts on them exceed (the crossbar budget of the CPU-CIM
    ILP, Eq. 14, is one case), and parts exceeding a per-op capacity."""
    out = []
    for d, used in capacity_use(costs, assignment, splits).items():
        cap = costs.resident[d]
        if used > cap.amount:
            what = cap.unit if cap.unit == cap.name else f"{cap.unit} of {cap.name}"
            out.append(f"{d}: {used:,} {what} used, {cap.amount:,} available ({cap.source})")
    for v, parts in (splits or {}).items():
        for d, ch in parts.items():
            dem = costs.demand(v, d, len(ch))
            for cap in costs.per_op.get(d, []):
                if dem.get(cap.name, 0) > cap.amount:
                    out.append(f"{d}: the part of {v!r} with {len(ch)} channels needs {dem[cap.name]} {cap.unit} of "
                               f"{cap.name}, {cap.amount} available ({cap.source})")
    return out


def placement_violations(costs: CostModel, assignment: dict[str, str], splits: dict | None,
                         placement: dict[str, list[tuple[int, int]]]) -> list[str]:
    """Problems with where ops' resident capacity sits on a device's slots (a PUMA's cores): each placed op's
    amounts sum to its need, name existing slots, and no slot is overfilled. Ops without a placement are not
    checked (a placement is needed only to replay ``cim-cores`` contention)."""
    out = []
    splits = splits or {}
    for name, dev in costs.devices.items():
        slots = dev.slots
        if slots is None:
            continue
        fill = [0] * len(slots)
        for v, d in assignment.items():
            if d != name or v in splits or v not in placement:
                continue
            parts = placement[v]
            if sum(n for _, n in parts) != costs.need[v][name]:
                out.append(f"{name}: placement of {v!r} covers {sum(n for _, n in parts)}, the op needs "
                           f"{costs.need[v][name]}")
            for c, n in parts:
                if not 0 <= c < len(slots):
                    out.append(f"{name}: placement of {v!r} names core {c}, the device has {len(slots)}")
                else:
                    fill[c] += n
        for c, (n, cap) in enumerate(zip(fill, slots, strict=True)):
            if n > cap:
                out.append(f"{name}: core {c} holds {n}, it has {cap}")
    return out


def _views(schedule: Schedule, views: tuple[dict, dict] | None) -> tuple[dict, dict]:
    """``(schedule.assignment, schedule.splits)``, or ``views`` when the caller has read them already (each
    read builds a dict over all ops)."""
    return (schedule.assignment, schedule.splits) if views is None else views


def fit_violations(costs: CostModel, schedule: Schedule, limit: int = 20, *,
                   views: tuple[dict, dict] | None = None) -> list[str]:
    """Everything that keeps ``schedule`` from running on the cost model's platform (empty when it fits):
    :func:`assignment_violations` (with the orders it gives), control dependencies (``Schedule.after``) naming
    ops of the workload, the cost model's checks of the schedule's own settings
    (:meth:`~hetsim.costs.CostModel.schedule_violations`: weight policies a device offers, an SNN's weight tables
    within SRAM and Flash), then :func:`capacity_violations`."""
    if schedule.policies or schedule.fused:  # streamed, reprogrammed ops keep no resident capacity (hetsim.weights)
        costs = costs.for_schedule(schedule)
    a, splits = _views(schedule, views)
    g = costs.workload.graph  # its nodes are the ops
    # every op assigned and nothing else (as many keys as ops, each op among them)
    every = len(a) == len(g) and all(map(a.__contains__, g))
    order = fill_orders(costs, a, schedule.order, splits) if every else None
    out = assignment_violations(costs, a, splits, order, limit)
    for v, us in schedule.after.items():
        bad = [x for x in (v, *us) if x not in g]
        if bad:
            out.append(f"control dependency {v!r} after {us!r} names {bad[0]!r}, not an op of the workload")
            break
    if not out and order is not None:
        out += fusion_violations(costs, schedule, order)
    if out:
        return out[:limit]
    # the schedule's own settings first (a weight policy a device does not offer, an unreachable memory): a
    # capacity overflow is often only their consequence (the op then counted as resident)
    return (costs.schedule_violations(schedule) + capacity_violations(costs, a, splits))[:limit]


def require_feasible(costs: CostModel, schedule: Schedule, *, views: tuple[dict, dict] | None = None) -> None:
    """Refuse a schedule that does not fit the platform (:func:`fit_violations`, then
    :func:`placement_violations`: a placement naming a missing core or overfilling one). ``views``: the
    schedule's ``(assignment, splits)`` when the caller has read them (the replay), else they are read here.

    Raises:
        ScheduleError: one line naming the first problem (and how many more there are).
    """
    if schedule.policies or schedule.fused:
        costs = costs.for_schedule(schedule)
    a, splits = views = _views(schedule, views)
    bad = fit_violations(costs, schedule, views=views) or placement_violations(costs, a, splits, schedule.placement)
    if bad:
        more = f" (and {len(bad) - 1} more problem{'s' if len(bad) > 2 else ''})" if len(bad) > 1 else ""
        raise ScheduleError(f"schedule does not fit platform {costs.platform.name!r}: {bad[0]}{more}")


def made_for_violations(costs: CostModel, schedule: Schedule) -> list[str]:
    """Why ``schedule`` was made for another workload or platform than the cost model's (empty when it was made
    for them, or says nothing against them).

    Checks, in this order: the workload name (``schedule.workload``) and the platform name
    (``schedule.platform``), each when the schedule records one; then that every device the schedule names (its
    parts and its device orders) is a device of the platform. A platform changed by ``--set`` (or
    :meth:`~hetsim.platform.Platform.with_overrides`) is named after its overrides (``puma-arm with
    devices.cim.crossbars=50``), so a schedule made on 50 crossbars is refused on the unchanged file (100), and
    replays on the same file with the same overrides.

    Not checked here (ours: the schedule file carries names, no fingerprint of the platform's content): a
    platform file edited without changing its name is the same platform to this check; whether the schedule
    then fits (every op on a device that runs it, capacities, placement) is :func:`fit_violations`' and
    :func:`placement_violations`' question, asked before every replay. A schedule without names (written by
    hand, or with ``"platform": null``) is checked device by device only: the way to replay a mapping on a
    changed platform on purpose.
    """
    wl, plat = costs.workload.name, costs.platform.name
    if schedule.workload is not None and schedule.workload != wl:
        return [f"this schedule was made for workload {schedule.workload!r}, not {wl!r}"]
    if schedule.platform is not None and schedule.platform != plat:
        return [f"this schedule was made for platform {schedule.platform!r}, not {plat!r} (to replay it on this "
                f"platform on purpose, set the schedule's \"platform\" to null in its file, or to None in Python)"]
    devices = costs.platform.devices
    named = [p.device for ps in schedule.parts.values() for p in ps] + list(schedule.order)
    missing = next((d for d in named if d not in devices), None)
    if missing is not None:
        made = f"made for platform {schedule.platform!r}" if schedule.platform is not None else "of no named platform"
        return [f"this schedule ({made}) uses device {missing!r}, which platform {plat!r} does not have (devices: "
                f"{', '.join(devices)})"]
    return []


def require_made_for(costs: CostModel, schedule: Schedule) -> None:
    """Refuse a saved schedule replayed on another workload or platform (:func:`made_for_violations`): every
    path that replays a schedule it was given calls this before the replay.

    Raises:
        ScheduleError: one line naming the schedule's workload or platform and the one it is replayed on.
    """
    bad = made_for_violations(costs, schedule)
    if bad:
        raise ScheduleError(bad[0])


@dataclass
class CheckReport:
    """Outcome of :func:`check_schedule`.

    Attributes:
        violations: human-readable problems, empty when the schedule is feasible.
    """

    violations: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.violations

    def add(self, msg: str) -> None:
        self.violations.append(msg)


def check_schedule(costs: CostModel, schedule: Schedule, rel_tol: float = 1e-9, limit: int = 20) -> CheckReport:
    """Check a schedule's feasibility under the CPU-CIM ILP's timing model (no contention).

    Checks: :func:`fit_violations` (every op on a device that runs it, Eq. 5; valid channel splits; every
    device's capacities, Eq. 14 generalised; each serial device's order lists exactly its ops); the placement
    (:func:`placement_violations`); and, when the schedule carries predicted times:
    ``f_v = s_v + T_v`` (Eq. 7), precedence with transfers ``s_v >= f_u + z_uv * T_transfer`` (Eq. 8),
    host capacity (never more than ``cores`` ops at once, and the device order respected, Eq. 11-12), and
    makespan ``>=`` every finish (Eq. 6). Times compare with a relative tolerance ``rel_tol`` of the
    makespan.

    Channel splits (ODiMO): each split must partition the op's output channels over devices that can run
    the parts and share a memory with the op's neighbours (:func:`split_violations`); a split op finishes with
    its longest part, ``f_v = s_v + max_d T_(v,d)``, and each device's unit check counts the op on every device
    holding a part, busy from ``s_v`` to ``s_v + T_(v,d)``.

    Args:
        limit: stop after this many violations.

    Returns:
        :class:`CheckReport` listing the violations (empty = feasible).
    """
    rep = CheckReport()
    if schedule.policies or schedule.fused:  # each op's latency under its weight policy, fused epilogues
        costs = costs.for_schedule(schedule)
    wl = costs.workload
    g = wl.graph
    a = schedule.assignment
    splits = schedule.splits
    ops = wl.ops

    def full() -> bool:
        return len(rep.violations) >= limit

    for msg in fit_violations(costs, schedule, limit):
        rep.add(msg)
    if rep.violations:
        return rep
    for msg in placement_violations(costs, a, splits, schedule.placement)[:limit]:
        rep.add(msg)
    if rep.violations:
        return rep

    caps = costs.serial_devices()
    if not schedule.start_s:
        return rep

    s, f = schedule.start_s, schedule.finish_s
    missing = [v for v in ops if v not in s or v not in f]
    if missing:
        rep.add(f"{len(missing)} ops have no predicted start/finish, e.g. {missing[0]!r}")
        return rep
    T = schedule.makespan_s if schedule.makespan_s is not None else max(f.values(), default=0.0)
    tol = rel_tol * max(T, 1e-30)
    part_dur = {v: {d: t for d, t, _ in op_parts(costs, v, a, splits)} for v in ops}
    for v in wl.topological_order():
        dur = max(part_dur[v].values())
        if s[v] < -tol:
            rep.add(f"op {v!r} starts at {s[v]:.9g} s < 0")
        if abs(f[v] - (s[v] + dur)) > tol:
            rep.add(f"op {v!r}: finish {f[v]:.9g} s != start {s[v]:.9g} s + latency {dur:.9g} s (Eq. 7)")
        for u in g.predecessors(v):
            ready = f[u] + max(costs.transfer_time(u, v, du, dv) for du in devices_of(u, a, splits)
                               for dv in devices_of(v, a, splits))
            if s[v] < ready - tol:
                rep.add(f"op {v!r} starts at {s[v]:.9g} s before its input from {u!r} arrives at "
                        f"{ready:.9g} s (Eq. 8)")
        if f[v] > T + tol:
            rep.add(f"op {v!r} finishes at {f[v]:.9g} s, after the makespan {T:.9g} s (Eq. 6)")
        if full():
            return rep
    rep.violations += fused_time_violations(costs, schedule, tol)[:limit - len(rep.violations)]
    for dev, cap in caps.items():
        seq = schedule.order.get(dev) or [v for v in wl.topological_order() if dev in devices_of(v, a, splits)]
        for i in range(1, len(seq)):
            if s[seq[i]] < s[seq[i - 1]] - tol:
                rep.add(f"{dev}: {seq[i]!r} starts before {seq[i - 1]!r}, which precedes it in the order")
        events = sorted([(s[v] + part_dur[v][dev], 0, v) for v in seq] + [(s[v] + tol, 1, v) for v in seq])
        running = 0
        for _, kind, v in events:  # finishes sort before starts at the same time
            running += 1 if kind else -1
            if running > cap:
                rep.add(f"{dev}: more than {cap} ops run at once when {v!r} starts (host capacity, Eq. 11-12)")
                break
        if full():
            return rep
    return rep


def fused_time_violations(costs: CostModel, schedule: Schedule, tol: float) -> list[str]:
    """The predicted times of a schedule's fused groups (one launch each): a fused consumer starts when its
    producer finishes (within ``tol`` seconds), and a group's head starts after every outside input of its
    members has arrived (:func:`fusion_gates`)."""
    s, f, a, splits = schedule.start_s, schedule.finish_s, schedule.assignment, schedule.splits
    out = []
    for c, p in schedule.fused.items():
        if abs(s[c] - f[p]) > tol:
            out.append(f"fused op {c!r} starts at {s[c]:.9g} s, not when its producer {p!r} finishes ({f[p]:.9g} s)")
    for h, edges in fusion_gates(costs.workload.graph, schedule.fused).items():
        for u, c in edges:
            ready = f[u] + max(costs.transfer_time(u, c, du, a[c]) for du in devices_of(u, a, splits))
            if s[h] < ready - tol:
                out.append(f"fused group of {h!r} starts at {s[h]:.9g} s before the input of {c!r} from {u!r} "
                           f"arrives at {ready:.9g} s (one launch)")
    return out
