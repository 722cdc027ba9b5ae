"""Weight policies: what an op on an accelerator costs when its weights are resident, streamed from a memory for
each inference, or written into a CIM's time-shared crossbars for each inference (ours; the CPU-CIM ILP keeps
every offloaded op's weights resident, Eq. 14).

A schedule names the ops that are not resident (:attr:`hetsim.schedule.Schedule.policies`: op ->
:class:`~hetsim.schedule.WeightPolicy`); :func:`bind` (:meth:`hetsim.costs.CostModel.for_schedule`) gives the
cost model of that schedule, in which each such op has its policy's latency and needs none of its device's
resident capacity, so the one checker, the contention-free evaluation and the replay all read the same numbers.

Per op ``v`` on device ``d`` with ``b`` bytes of weights (:meth:`~hetsim.devices.base.DeviceBase.weight_bytes_of`)
read from memory ``m`` over ``d``'s port (:class:`~hetsim.devices.memory.WeightPort`)::

    T_read    = b / min(B_m, B_port) + latency_m + latency_port
    streamed:      T = T_read + T_compute            (the device fetches, then computes)
                   T = max(T_read, T_compute)        (a device that double-buffers weights)
    reprogrammed:  T = T_read + T_write + T_compute' (:class:`~hetsim.devices.base.Reprogramming`: rows written
                                                     one after another; T_compute' counts every pass)
    E_read    = b * (e_m + e_port)                   (pJ per byte)

With ``memory`` contention on, a memory's port serves one weight read at a time (the replay,
:mod:`hetsim.sim.weights`). The reprogrammed ops of one device share its time-shared crossbars, so they must
run one after another: the schedule chains them with control dependencies (``Schedule.after``), which the
checker requires.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from fractions import Fraction

import networkx as nx

from hetsim.devices.base import WEIGHT_POLICIES
from hetsim.schedule import WeightPolicy

__all__ = ["WEIGHT_POLICIES", "WeightStep", "bind", "options", "policy_step", "weight_option_platform"]


@dataclass(frozen=True)
class WeightStep:
    """What one op's weight policy costs per inference (:func:`policy_step`).

    Attributes:
        op, device, policy, memory: the op, its device, ``streamed`` | ``reprogrammed``, the memory read.
        nbytes: weight bytes read from the memory.
        read_s: seconds the memory port is busy with them (``T_read``).
        write_s: seconds writing them into crossbars (reprogrammed; 0 otherwise).
        overlapped: the read runs alongside the compute (a double-buffering device).
        compute_s: the op's compute latency once its weights are there.
        compute_phases: its phases (a CIM's load, MVM, store), or ``None``.
        latency_s: the op's whole latency under the policy (module docstring).
        read_j, write_j: joules of the read (memory and port) and of the writes.
        passes, cells, row_writes: reprogramming counts (0 when streamed).
        placement: the slots of the time-shared crossbars (reprogrammed), else ``()``.
        endurance_writes: writes a cell survives (reprogrammed; ``None``: not stated).
    """

    op: str
    device: str
    policy: str
    memory: str
    nbytes: int
    read_s: float
    write_s: float
    overlapped: bool
    compute_s: float
    compute_phases: tuple[float, ...] | None
    latency_s: float
    read_j: float
    write_j: float
    passes: int = 0
    cells: int = 0
    row_writes: int = 0
    placement: tuple[tuple[int, int], ...] = ()
    endurance_writes: float | None = None

    @property
    def energy_j(self) -> float:
        """``read_j + write_j``."""
        return self.read_j + self.write_j


def weight_option_platform(platform) -> bool:
    """True when some device of ``platform`` reads weights from a memory (``weights_for``): only then can an op
    be streamed or reprogrammed. Mappers keep today's resident-only search otherwise."""
    return any(m.weights_for for m in platform.memories.values())


def options(costs, op: str, device: str) -> list[tuple[str, str | None]]:
    """The weight options of ``op`` on ``device``: ``("resident", None)`` and, for every memory the device reads
    weights from, ``(policy, memory)`` for each further policy the device offers for the op (its
    :meth:`~hetsim.devices.base.DeviceBase.weight_policies`). Folded ops and ops the device does not run are
    resident only."""
    if device not in costs.latency[op] or op in costs.folded:
        return [("resident", None)]
    dev = costs.devices[device]
    o = costs.workload.op(op)
    pols = [p for p in dev.weight_policies(o) if p != "resident"]
    if not pols or dev.weight_bytes_of(o) <= 0:
        return [("resident", None)]
    mems = costs.platform.weight_memories(device)
    return [("resident", None)] + [(p, m) for p in pols for m in mems]


def policy_step(costs, op: str, device: str, policy: str, memory: str | None) -> WeightStep | str:
    """The :class:`WeightStep` of ``op`` on ``device`` under ``policy`` reading ``memory`` (``None``: the first
    memory the device reads weights from), or a one-line reason why it cannot run so."""
    dev = costs.devices[device]
    o = costs.workload.op(op)
    offered = dev.weight_policies(o)
    if policy not in WEIGHT_POLICIES:
        return f"op {op!r} has weight policy {policy!r}; policies: {', '.join(WEIGHT_POLICIES)}"
    if policy not in offered:
        return (f"op {op!r} on {device!r} ({dev.kind}) cannot be {policy}; the device offers "
                f"{', '.join(offered)} for it")
    mems = costs.platform.weight_memories(device)
    if memory is None:
        if not mems:
            return (f"{policy} op {op!r} needs a memory {device!r} reads weights from (weights_for in the "
                    "platform's memories); there is none")
        memory = mems[0]
    if memory not in mems:
        return (f"{policy} op {op!r} reads weights from {memory!r}, which {device!r} cannot reach (memories "
                f"it reads weights from: {', '.join(mems) or 'none'})")
    mem = costs.platform.memories[memory]
    nbytes = dev.weight_bytes_of(o)
    read_s = mem.read_time_s(device, nbytes)
    read_j = mem.read_energy_j(device, nbytes)
    base = costs.latency[op][device]
    phases = costs.phases.get(op, {}).get(device)
    if policy == "streamed":
        over = dev.double_buffers_weights
        total = max(read_s, base) if over else read_s + base
        return WeightStep(op, device, policy, memory, nbytes, read_s, 0.0, over, base, phases, total, read_j, 0.0)
    rp = dev.reprogramming(o)
    if rp is None:
        return f"op {op!r} on {device!r} ({dev.kind}) cannot be reprogrammed"
    return WeightStep(op, device, policy, memory, nbytes, read_s, rp.write_s, False, rp.compute_s, rp.compute_phases,
                      read_s + rp.write_s + rp.compute_s, read_j, rp.write_j, rp.passes, rp.cells, rp.row_writes,
                      rp.placement, rp.endurance_writes)


def bind(costs, schedule):
    """The cost model of ``schedule``'s weight policies: ``costs`` itself when every op is resident, else a
    shallow copy whose ``latency`` (and ``phases``) give each streamed or reprogrammed op its policy's latency,
    whose ``need`` is 0 for it (it keeps no resident capacity), with ``weight_steps`` (op ->
    :class:`WeightStep`) and ``policy_violations`` (what the checker reports: :func:`violations`)."""
    pols = schedule.policies
    if getattr(costs, "bound_to", None) is schedule:
        return costs
    costs = getattr(costs, "unbound", costs)  # bind the resident costs, never a bound copy's
    if not pols:
        return costs
    b = copy.copy(costs)
    b.unbound = costs
    b.bound_to = schedule
    b.latency = dict(costs.latency)
    b.need = dict(costs.need)
    b.phases = dict(costs.phases)
    b.weight_steps = steps = {}
    bad: list[str] = []
    ops = costs.workload.ops
    for v, wp in pols.items():
        if v not in ops:
            bad.append(f"the schedule gives a weight policy to {v!r}, which is not an op of {costs.workload.name!r}")
            continue
        if v not in schedule.parts:
            continue
        if schedule.is_split(v):
            bad.append(f"op {v!r} is channel-split; a split op's weights are resident")
            continue
        d = schedule.device_of(v)
        if d not in costs.latency[v]:
            continue  # the assignment check reports it
        st = policy_step(costs, v, d, wp.policy, wp.memory)
        if isinstance(st, str):
            bad.append(st)
            continue
        steps[v] = st
        b.latency[v] = {**b.latency[v], d: st.latency_s}
        if d in b.need.get(v, {}):
            b.need[v] = {**b.need[v], d: 0}
        if st.compute_phases is not None and d in b.phases.get(v, {}):
            b.phases[v] = {**b.phases[v], d: st.compute_phases}
    bad += memory_violations(costs, steps) + chain_violations(costs, schedule, steps)
    b.policy_violations = bad
    return b


def memory_use(costs, steps: dict[str, WeightStep]) -> dict[str, int]:
    """Weight bytes held per memory that devices read weights from: the streamed and reprogrammed ops'.

    A constant tensor read by several of these ops (one ONNX initializer used by two ops: tied weights,
    :attr:`hetsim.workload.op.Op.weight_tensors`) is held **once per memory** when its readers keep it there in one
    format (the same bytes per element): the second reader's share of its bytes is not counted again. Readers on
    devices that read it from different memories, or in different formats (an 8-bit NPU beside a 4-bit CIM),
    hold a copy each, in their own memory. Only the space is shared: each op still reads its weights over its
    port per inference (:class:`WeightStep`). A tied weight kept resident on a device counts in that device's
    resident capacity once per op (the capacities are per op, :meth:`~hetsim.devices.base.DeviceBase.demand`),
    and a tensor a constant op makes from another (GPT-2's ``Transpose`` of its embedding for the LM head) is a
    tensor of its own, as ONNX Runtime's constant folding materialises it.
    """
    use = {n: 0 for n, m in costs.platform.memories.items() if m.weights_for}
    held: set[tuple[str, str, Fraction]] = set()
    for st in steps.values():
        nbytes = st.nbytes
        o = costs.workload.op(st.op)
        if o.weight_elements > 0:
            per_element = Fraction(st.nbytes, o.weight_elements)
            for tensor, elements in o.weight_tensors:
                key = (st.memory, tensor, per_element)
                if key in held:
                    nbytes -= st.nbytes * elements // o.weight_elements  # its share, rounded down
                held.add(key)
        use[st.memory] = use.get(st.memory, 0) + nbytes
    return use


def memory_violations(costs, steps: dict[str, WeightStep]) -> list[str]:
    """Memories whose streamed and reprogrammed weights exceed their capacity (one row per memory)."""
    out = []
    for name, used in memory_use(costs, steps).items():
        cap = costs.platform.memories[name].size_bytes
        if used > cap:
            out.append(f"memory {name}: {used:,} B of streamed/reprogrammed weights, {cap:,} B available")
    return out


def chain_violations(costs, schedule, steps: dict[str, WeightStep]) -> list[str]:
    """Reprogrammed ops of one device that may overlap: they share its time-shared crossbars, so each must wait
    (a data edge or ``Schedule.after``) for the one before it; together they must form one chain."""
    g = costs.workload.graph
    by_dev: dict[str, list[str]] = {}
    for v, st in steps.items():
        if st.policy == "reprogrammed":
            by_dev.setdefault(st.device, []).append(v)
    out = []
    for d, vs in by_dev.items():
        if len(vs) < 2:
            continue
        members = set(vs)
        h = nx.DiGraph()
        h.add_nodes_from(vs)
        for v in vs:
            for u in set(g.predecessors(v)) | set(schedule.after.get(v, ())):
                if u in members:
                    h.add_edge(u, v)
        try:
            seq = list(nx.topological_sort(h))
        except nx.NetworkXUnfeasible:
            out.append(f"{d}: the reprogrammed ops wait for each other in a cycle")
            continue
        gap = next(((a, c) for a, c in zip(seq, seq[1:], strict=False) if not h.has_edge(a, c)), None)
        if gap is not None:
            out.append(f"{d}: reprogrammed ops {gap[0]!r} and {gap[1]!r} may overlap on the time-shared crossbars; "
                       f"{gap[1]!r} must wait for {gap[0]!r} (Schedule.after)")
    return out


def reprogram_chain(costs, steps: dict[str, WeightStep], order: list[str]) -> dict[str, list[str]]:
    """Control dependencies chaining each device's reprogrammed ops in ``order`` (each waits for the one before
    it): what a mapper adds to ``Schedule.after``."""
    last: dict[str, str] = {}
    after: dict[str, list[str]] = {}
    for v in order:
        st = steps.get(v)
        if st is None or st.policy != "reprogrammed":
            continue
        if st.device in last:
            after[v] = [last[st.device]]
        last[st.device] = v
    return after


def as_policies(choice: dict[str, tuple[str, str | None]]) -> dict[str, WeightPolicy]:
    """``{op: (policy, memory)}`` -> the schedule's policies (resident entries dropped)."""
    return {v: WeightPolicy(p, m) for v, (p, m) in choice.items() if p != "resident"}
