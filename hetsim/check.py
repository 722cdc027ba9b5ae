"""The schedule checker: is a schedule feasible on its platform, and does its replay keep its promise?

Used by ``hetsim validate`` and by the test suite on every mapper.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hetsim.costs import CostModel
from hetsim.schedule import Schedule
from hetsim.sim.analytic import devices_of, op_parts, ordered_devices, split_violations


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
    """Check a schedule's feasibility under seed 000's model (no contention).

    Checks: every op assigned exactly once to a device that supports it (Eq. 5); each CIM device's
    crossbar budget (Eq. 14) and that the placement covers each CIM op's crossbars without overfilling a
    core; each ordered device's order lists exactly its ops; and, when the schedule carries predicted times:
    ``f_v = s_v + T_v`` (Eq. 7), precedence with transfers ``s_v >= f_u + z_uv * T_transfer`` (Eq. 8),
    host capacity (never more than ``cores`` ops at once, and the device order respected, Eq. 11-12), and
    makespan ``>=`` every finish (Eq. 6). Times compare with a relative tolerance ``rel_tol`` of the
    makespan.

    Channel splits (seed 002): each split must partition the op's output channels over devices that can run
    the parts and share a memory with the op's neighbours (:func:`~hetsim.sim.analytic.split_violations`); a
    split op finishes with its longest part, ``f_v = s_v + max_d T_(v,d)``, and each device's capacity check
    counts the op on every device holding a part, busy from ``s_v`` to ``s_v + T_(v,d)``.

    Args:
        limit: stop after this many violations.

    Returns:
        :class:`CheckReport` listing the violations (empty = feasible).
    """
    rep = CheckReport()
    wl = costs.workload
    g = wl.graph
    a = schedule.assignment
    ops = wl.ops

    def full() -> bool:
        return len(rep.violations) >= limit

    for v in ops:
        if v not in a:
            rep.add(f"op {v!r} is not assigned")
        elif a[v] not in costs.platform.devices:
            rep.add(f"op {v!r} is assigned to unknown device {a[v]!r}")
        elif v not in schedule.splits and not costs.supported(v, a[v]):
            rep.add(f"op {v!r} ({ops[v].op_type}) is on {a[v]!r}, which does not support it (Eq. 5)")
        if full():
            return rep
    for v in a:
        if v not in ops:
            rep.add(f"the schedule assigns {v!r}, which is not an op of {wl.name!r}")
    if rep.violations:
        return rep
    splits = schedule.splits
    for msg in split_violations(costs, a, splits)[:limit]:
        rep.add(msg)
    if rep.violations:
        return rep

    for name, dev in costs.platform.devices.items():
        if dev.kind != "puma":
            continue
        mine = [v for v in ops if a[v] == name and v not in splits]
        used = sum(costs.n_crossbar[v][name] for v in mine)
        if used > dev.crossbars:
            rep.add(f"{name}: {used} crossbars used, {dev.crossbars} available (Eq. 14)")
        per_core = [0] * dev.cores
        for v in mine:
            parts = schedule.placement.get(v)
            if parts is None:
                continue  # placement is optional unless cim-cores contention is replayed
            if sum(n for _, n in parts) != costs.n_crossbar[v][name]:
                rep.add(f"{name}: placement of {v!r} covers {sum(n for _, n in parts)} crossbars, "
                        f"the op needs {costs.n_crossbar[v][name]}")
            for c, n in parts:
                if not 0 <= c < dev.cores:
                    rep.add(f"{name}: placement of {v!r} names core {c}, the device has {dev.cores}")
                else:
                    per_core[c] += n
        for c, (n, cap) in enumerate(zip(per_core, dev.core_capacities, strict=True)):
            if n > cap:
                rep.add(f"{name}: core {c} holds {n} crossbars, it has {cap}")

    caps = ordered_devices(costs)
    for dev in caps:
        seq = schedule.order.get(dev)
        if seq is None:
            continue
        mine = {v for v in ops if dev in devices_of(v, a, splits)}
        if len(seq) != len(set(seq)) or set(seq) != mine:
            rep.add(f"the order of {dev!r} does not list exactly the {len(mine)} ops assigned to it")
    if rep.violations or not schedule.start_s:
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
