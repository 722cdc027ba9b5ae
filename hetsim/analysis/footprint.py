"""Activation footprint: the lifetime of every tensor of a schedule, the live bytes of each memory over time,
its peak, and the check against the memory's capacity (ours, not a paper's model).

**Lifetimes** (from predicted start/finish times, or a replay's). A tensor is an op's output (all of an op's
outputs together: one buffer per op), allocated when the op *starts* (its output buffer exists while it
writes) and freed when its last consumer *finishes*; a graph output lives to the end of the schedule, a graph
input from 0 to its last reader's finish. Intervals are half open, ``[alloc, free)``: a buffer freed at ``t`` and
one allocated at ``t`` never coexist. Weights are not activations: ops computed only from constants (folded ops,
:attr:`~hetsim.costs.CostModel.folded`) and parameter edges hold none (weight residency and streaming are the
weight policies' business). While an op runs, its inputs and outputs are all live, so a memory's peak is at least
the inputs plus outputs of any op with a positive duration that it holds.

**Where a tensor lives.** In the memory of the device that produced it (its *home*), found by a resolver
``memory_of(device) -> (memory name, capacity bytes or None[, checked]) | None``; the default,
:func:`platform_memories`, takes the platform's answer (``Platform.activation_memory``: the first of
``platform.memories`` whose ``activations_of``, else ``shared_by``, lists the device), checked when the memory's
``activations_of`` lists the device. A memory found through ``shared_by`` only is *reported, not checked*: its
``size_kib`` is recorded, not enforced, and ODiMO assumes activations always fit DIANA's shared L1 (a ResNet-18 at
64x64 does not: the report says so). A device no memory lists gets a lane of its own, ``local:<device>``, with no
capacity and no check. A consumer whose device resolves to another memory reads a copy there, allocated when the
producer finishes (the transfer starts then at the earliest) and freed when the last consumer in that memory
finishes; devices of one memory share one copy.
A graph input is held in each memory its readers use, from 0.

**Sizes.** ``n_out`` elements at the producing device's element size when it has one
(:attr:`~hetsim.devices.base.DeviceBase.wire_bits`: an int8 CIM or NPU), else the op's ONNX output bytes (a
hand-built op without them: ``n_out`` at its ``bits``); a copy takes the size at the receiving device's element
size, as transfers do (:meth:`~hetsim.costs.CostModel.transfer_bytes`).

**Capacity.** A memory whose peak exceeds its capacity makes the schedule infeasible:
:func:`require_fits` raises :class:`MemoryCapacityError` (one line), unless spilling is asked for; then the excess
is *spilled* to the next memory (:func:`spill_target`: the smallest larger memory one of its devices shares, with a
bandwidth): every rise of the excess ``max(0, live - capacity)`` is written out and read back once, so the traffic
is twice the sum of those rises, costing ``traffic / bandwidth`` seconds (serialised after the schedule: an upper
bound, no overlap with compute) and ``energy_pj_per_byte`` per byte. Ours: no paper models activation memory.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from hetsim.errors import ScheduleError

#: ``memory_of(device)`` -> ``(memory name, capacity in bytes or None)`` or ``(name, capacity, checked)``, or
#: ``None`` for a local lane; a 2-tuple with a capacity is checked
MemoryResolver = Callable[[str], "tuple | None"]

#: the memory-over-time figure draws at most this many steps per memory (the peak of each bin is kept)
FIGURE_MAX_STEPS = 4000


class MemoryCapacityError(ScheduleError):
    """A schedule whose live activations exceed a memory's capacity (and spilling was not asked for)."""


def platform_memories(platform) -> MemoryResolver:
    """The default resolver (module docstring): :meth:`~hetsim.platform.Platform.activation_memory` of
    ``device`` (the first memory whose ``activations_of``, else ``shared_by``, lists it, with its capacity in
    bytes), checked when the memory's ``activations_of`` lists the device (``shared_by`` only: reported, not
    checked); ``None`` for a device no memory lists."""
    own = platform.activation_memory

    def resolve(device: str):
        got = own(device)
        if got is None or len(got) > 2:
            return got
        mem = platform.memories.get(got[0])  # checked only where the memory says it holds the activations
        return got[0], got[1], device in (getattr(mem, "activations_of", None) or ())

    return resolve


@dataclass(frozen=True)
class Buffer:
    """One live buffer: an op's output (``op``) or a graph input (``input:<name>``) in one memory.

    Attributes:
        tensor: the op whose output it is, or ``input:<graph input name>``.
        memory: the memory (lane) holding it.
        nbytes: its size, bytes.
        alloc_s, free_s: its lifetime ``[alloc_s, free_s)``, seconds.
        copy: True for a copy a consumer on another memory reads.
    """

    tensor: str
    memory: str
    nbytes: int
    alloc_s: float
    free_s: float
    copy: bool = False


@dataclass
class Footprint:
    """The live buffers of one schedule's timing and what they add up to per memory.

    Attributes:
        columns: the buffers as arrays of one entry per buffer: ``tensor`` (op name or ``input:<name>``),
            ``memory`` (index into :attr:`memories`), ``nbytes``, ``alloc_s``, ``free_s``, ``copy``
            (:attr:`buffers` gives them as :class:`Buffer` objects).
        capacity: memory -> capacity in bytes (``None``: a ``local:<device>`` lane or a memory without a size).
        devices: memory -> the devices whose tensors it holds.
        checked: the memories whose capacity is enforced (:func:`require_fits`); the others are reported only.
        weights: memory -> bytes of streamed and reprogrammed weights it holds for the whole run (a memory that
            devices read weights from, ``weights_for``): the activations have its capacity less these
            (:attr:`available`).
        timing: ``"replay"`` or ``"predicted"`` (whose start/finish times were used).
        makespan_s: the end of the schedule, seconds.
    """

    columns: dict[str, np.ndarray]
    capacity: dict[str, int | None]
    devices: dict[str, list[str]]
    checked: frozenset[str] = frozenset()
    timing: str = "replay"
    makespan_s: float = 0.0
    weights: dict[str, int] = field(default_factory=dict)
    _curves: dict = field(default_factory=dict, repr=False)

    @property
    def memories(self) -> list[str]:
        return list(self.capacity)

    def available(self, memory: str) -> int | None:
        """Bytes of ``memory`` the activations may use: its capacity less the weights it holds (:attr:`weights`);
        ``None`` without a capacity."""
        cap = self.capacity.get(memory)
        return None if cap is None else max(0, cap - self.weights.get(memory, 0))

    @property
    def buffers(self) -> list[Buffer]:
        """Every buffer as a :class:`Buffer` (built on each access: prefer :attr:`columns` on big graphs)."""
        c, names = self.columns, self.memories
        return [Buffer(str(t), names[int(m)], int(b), float(a), float(f), bool(k)) for t, m, b, a, f, k in
                zip(c["tensor"], c["memory"], c["nbytes"], c["alloc_s"], c["free_s"], c["copy"], strict=True)]

    def __len__(self) -> int:
        return len(self.columns["nbytes"])

    def curve(self, memory: str) -> tuple[np.ndarray, np.ndarray]:
        """``(times_s, live_bytes)``: the live bytes of ``memory`` from each time on (a step function; frees
        before allocations at one time, the intervals being half open)."""
        if memory not in self._curves:
            c = self.columns
            k = self.memories.index(memory)
            sel = (c["memory"] == k) & (c["free_s"] > c["alloc_s"])
            b = c["nbytes"][sel]
            t = np.concatenate([c["alloc_s"][sel], c["free_s"][sel]])
            d = np.concatenate([b, -b])
            order = np.lexsort((d, t))  # at one time the frees (negative) first
            t, d = t[order], d[order]
            live = np.cumsum(d)
            if len(t):  # one step per distinct time: the level after every event at that time
                last = np.r_[t[1:] != t[:-1], True]
                t, live = t[last], live[last]
            self._curves[memory] = (t, live)
        return self._curves[memory]

    def peak(self, memory: str) -> tuple[int, float]:
        """``(peak live bytes, first time it is reached in s)`` of ``memory`` (``(0, 0.0)`` when it holds
        nothing)."""
        t, live = self.curve(memory)
        if len(live) == 0:
            return 0, 0.0
        k = int(np.argmax(live))
        return int(live[k]), float(t[k])

    def over_capacity(self, checked_only: bool = True) -> dict[str, tuple[int, int]]:
        """Memory -> ``(peak, available)`` for every checked memory whose peak exceeds what its weights leave of
        its capacity (:meth:`available`; ``checked_only=False``: every memory with a capacity)."""
        out = {}
        for m in self.capacity:
            p, _ = self.peak(m)
            cap = self.available(m)
            if cap is not None and p > cap and (m in self.checked or not checked_only):
                out[m] = (p, cap)
        return out

    def spilled_bytes(self, memory: str) -> int:
        """Bytes written out of ``memory`` when its live bytes exceed its capacity: the sum of the rises of the
        excess ``max(0, live - available)`` (each spilled byte written out once when it no longer fits)."""
        cap = self.available(memory)
        if cap is None:
            return 0
        _, live = self.curve(memory)
        excess = np.maximum(0, live - cap)
        return int(np.maximum(0, np.diff(np.r_[0, excess])).sum())

    def to_dict(self) -> dict:
        """Per memory: ``capacity_bytes``, ``weight_bytes`` (the weights it holds, :attr:`weights`), ``checked``
        (enforced), ``devices``, ``peak_bytes``, ``peak_at_s``, ``fits`` (peak <= capacity less weights; ``None``
        without a capacity)."""
        out = {}
        for m, cap in self.capacity.items():
            p, at = self.peak(m)
            avail = self.available(m)
            out[m] = {"capacity_bytes": cap, "weight_bytes": self.weights.get(m, 0), "checked": m in self.checked,
                      "devices": self.devices[m], "peak_bytes": p, "peak_at_s": at,
                      "fits": None if avail is None else p <= avail}
        return out


def _input_bytes(meta_inputs: list[dict]) -> dict[str, int]:
    """Graph input name -> its bytes, from the ONNX importer's ``meta["inputs"]`` (a dtype without a fixed size:
    4 bytes per element)."""
    from hetsim.workload.onnx_import import dtype_bits

    out = {}
    for i in meta_inputs:
        shape = [d for d in i.get("shape", []) if isinstance(d, int)]
        bits = dtype_bits(str(i.get("dtype"))) or 32
        out[i["name"]] = -(-int(np.prod(shape, dtype=np.int64)) * bits // 8)
    return out


@dataclass
class _Structure:
    """What the footprints of one workload share, whatever the times: the ops holding activations, their sizes
    per element size, the data edges between them, the graph inputs' readers."""

    names: list[str]
    index: dict[str, int]
    keep: np.ndarray  # ops whose outputs are activations
    n_out: np.ndarray
    own_bytes: np.ndarray  # the op's output bytes at its ONNX size
    is_output: np.ndarray
    edge_u: np.ndarray  # data edges (no parameter edges), producer and consumer indices
    edge_v: np.ndarray
    inputs: list[tuple[str, int, list[int]]]  # graph input, bytes, reader indices

    @classmethod
    def of(cls, costs) -> _Structure:
        wl = costs.workload
        g = wl.graph
        folded = getattr(costs, "folded", frozenset())
        names = list(g.nodes)
        index = {v: i for i, v in enumerate(names)}
        ops = [g.nodes[v]["op"] for v in names]
        keep = np.array([v not in folded and not o.is_constant and o.n_out > 0 for v, o in zip(names, ops,
                                                                                              strict=True)], bool)
        n_out = np.array([o.n_out for o in ops], dtype=np.int64)
        own = np.array([o.out_bytes if o.out_bytes else -(-o.n_out * o.bits // 8) for o in ops], dtype=np.int64)
        outs = set(wl.meta["output_producers"].values()) if "output_producers" in wl.meta else set(wl.sinks())
        is_output = np.array([v in outs for v in names], bool)
        eu, ev = [], []
        for u, v, param in g.edges(data="param"):
            if not param:
                eu.append(index[u])
                ev.append(index[v])
        eu_a, ev_a = np.array(eu, dtype=np.int64), np.array(ev, dtype=np.int64)
        live = keep[eu_a] if len(eu_a) else np.zeros(0, bool)
        readers = wl.meta.get("input_readers")
        inputs: list[tuple[str, int, list[int]]] = []
        if readers is not None:
            nbytes = _input_bytes(wl.meta.get("inputs", []))
            inputs = [(f"input:{n}", nbytes.get(n, 0), [index[v] for v in vs]) for n, vs in readers.items()]
        else:  # a hand-built DAG: every op without predecessors reads its runtime inputs from a graph input
            inputs = [(f"input:{v}", int(o.in_bytes), [index[v]]) for v, o in zip(names, ops, strict=True)
                      if g.in_degree(v) == 0 and o.in_bytes and v not in folded]
        return cls(names, index, keep, n_out, own, is_output, eu_a[live], ev_a[live], inputs)


def footprint(costs, start_s: dict[str, float], finish_s: dict[str, float], assignment: dict[str, str],
              makespan_s: float | None = None, memory_of: MemoryResolver | None = None,
              timing: str = "replay", _structure: _Structure | None = None,
              weights: dict[str, int] | None = None) -> Footprint:
    """The live buffers of a schedule with these times (module docstring).

    Args:
        costs: the :class:`~hetsim.costs.CostModel` (workload and platform).
        start_s, finish_s: per op, seconds (a replay's, or a schedule's predicted times).
        assignment: op -> device (a split op: the device of its first part; its parts share a memory).
        makespan_s: the end of the schedule (default: the last finish).
        memory_of: the resolver (default :func:`platform_memories` of ``costs.platform``).
        timing: a label, ``"replay"`` or ``"predicted"``.
        weights: memory -> weight bytes it holds for the whole run (:func:`held_weights`), taken from its
            capacity before the activations'.

    Raises:
        ScheduleError: an op has no start or finish time.

    Cost: O(ops + edges) with numpy (the structure once per workload when :func:`run_footprints` computes both).
    """
    st = _structure or _Structure.of(costs)
    plat = costs.platform
    resolve = memory_of or platform_memories(plat)
    end = max(finish_s.values(), default=0.0) if makespan_s is None else float(makespan_s)
    capacity: dict[str, int | None] = {}
    devices: dict[str, list[str]] = {}
    lane: dict[str, int] = {}
    checked: set[str] = set()
    for d in plat.devices:
        got = resolve(d)
        name, cap = (got[0], got[1]) if got else (f"local:{d}", None)
        if got and cap is not None and (len(got) < 3 or got[2]):
            checked.add(name)
        capacity.setdefault(name, None if cap is None else int(cap))
        lane[d] = list(capacity).index(name)
        devices.setdefault(name, []).append(d)
    try:
        start = np.array([start_s[v] for v in st.names], dtype=float)
        finish = np.array([finish_s[v] for v in st.names], dtype=float)
        devs = [assignment[v] for v in st.names]
    except KeyError as e:
        raise ScheduleError(f"activation footprint: op {e.args[0]!r} has no {timing} start/finish time or "
                            "device") from None
    bits = {d: costs.devices[d].wire_bits for d in plat.devices}
    dev_ids = {d: i for i, d in enumerate(plat.devices)}
    dev_idx = np.array([dev_ids[d] for d in devs], dtype=np.int64)
    lane_of_dev = np.array([lane[d] for d in plat.devices], dtype=np.int64)
    op_lane = lane_of_dev[dev_idx]
    # an op's size at each device's element size (wire_bits), or its own ONNX size
    size_at = np.stack([st.own_bytes if bits[d] is None else -(-st.n_out * bits[d] // 8) for d in plat.devices])
    n = len(st.names)
    home_bytes = size_at[dev_idx, np.arange(n)]
    free = np.where(st.is_output, end, finish)
    eu, ev = st.edge_u, st.edge_v
    np.maximum.at(free, eu, finish[ev])
    keep = st.keep
    cols = {"tensor": [np.array(st.names, dtype=object)[keep]], "memory": [op_lane[keep]],
            "nbytes": [home_bytes[keep]], "alloc_s": [start[keep]], "free_s": [free[keep]],
            "copy": [np.zeros(int(keep.sum()), bool)]}
    remote = op_lane[eu] != op_lane[ev]  # a consumer on another memory reads a copy there
    if remote.any():
        u, v = eu[remote], ev[remote]
        m = op_lane[v]
        key = u * len(capacity) + m
        uniq, inv = np.unique(key, return_inverse=True)
        f = np.full(len(uniq), -np.inf)
        np.maximum.at(f, inv, finish[v])
        b = np.zeros(len(uniq), dtype=np.int64)
        np.maximum.at(b, inv, size_at[dev_idx[v], u])
        cu, cm = uniq // len(capacity), uniq % len(capacity)
        cols["tensor"].append(np.array(st.names, dtype=object)[cu])
        cols["memory"].append(cm)
        cols["nbytes"].append(b)
        cols["alloc_s"].append(finish[cu])
        cols["free_s"].append(f)
        cols["copy"].append(np.ones(len(uniq), bool))
    rows = []
    for name, nbytes, readers in st.inputs:
        by_mem: dict[int, float] = {}
        for r in readers:
            k = int(op_lane[r])
            by_mem[k] = max(by_mem.get(k, 0.0), float(finish[r]))
        rows += [(name, k, nbytes, 0.0, f) for k, f in by_mem.items()]
    if rows:
        t, k, b, a, f = zip(*rows, strict=True)
        for col, vals, dt in (("tensor", t, object), ("memory", k, np.int64), ("nbytes", b, np.int64),
                              ("alloc_s", a, float), ("free_s", f, float)):
            cols[col].append(np.array(vals, dtype=dt))
        cols["copy"].append(np.zeros(len(rows), bool))
    columns = {c: np.concatenate(v) for c, v in cols.items()}
    return Footprint(columns, capacity, devices, frozenset(checked), timing, end,
                     {m: int(b) for m, b in (weights or {}).items() if m in capacity and b})


def predicted_footprint(costs, schedule, memory_of: MemoryResolver | None = None,
                        _structure: _Structure | None = None, weights: dict[str, int] | None = None
                        ) -> Footprint | None:
    """The footprint of the mapper's prediction (``schedule.start_s`` / ``finish_s``), or ``None`` when the
    schedule does not predict every op's times. ``weights``: the weight bytes each memory holds (default: this
    schedule's, :func:`held_weights`)."""
    if not all(v in schedule.start_s and v in schedule.finish_s for v in costs.workload.graph.nodes):
        return None
    return footprint(costs, schedule.start_s, schedule.finish_s, schedule.assignment, schedule.makespan_s,
                     memory_of, "predicted", _structure,
                     held_weights(costs, schedule) if weights is None else weights)


def held_weights(costs, schedule) -> dict[str, int]:
    """Memory -> the bytes of streamed and reprogrammed weights the schedule keeps in it for the whole run
    (:func:`hetsim.weights.memory_use`, the checker's count); empty when no op streams or reprograms. A memory
    that holds weights and activations (a DRAM) has room for the activations only beside the weights."""
    from hetsim.weights import memory_use

    bound = costs.for_schedule(schedule)
    steps = getattr(bound, "weight_steps", None)
    return memory_use(bound, steps) if steps else {}


def run_footprints(costs, schedule, result, memory_of: MemoryResolver | None = None,
                   weights: dict[str, int] | None = None) -> dict[str, Footprint]:
    """``{"replay": ..., "predicted": ...}``: the footprint of the replay and, when the schedule predicts every
    op's times, of the mapper's prediction (:func:`predicted_footprint`). Both leave a memory's weights out of
    its capacity for activations: ``weights`` (memory -> bytes; a scenario's streams together), by default the
    schedule's own (:func:`held_weights`)."""
    st = _Structure.of(costs)
    held = held_weights(costs, schedule) if weights is None else weights
    out = {"replay": footprint(costs, result.start_s, result.finish_s, result.assignment, result.makespan_s,
                               memory_of, "replay", st, held)}
    pred = predicted_footprint(costs, schedule, memory_of, st, held)
    if pred is not None:
        out["predicted"] = pred
    return out


def spill_target(platform, memory: str):
    """The memory ``memory`` spills to: among the other memories serving a device of it (``shared_by``,
    ``activations_of``, ``weights_for``), the smallest one
    larger than it (no size: unbounded, the largest), that has a ``bandwidth_gb_s``; ``None`` if there is none."""
    mems = platform.memories
    src = mems.get(memory)
    if src is None:
        return None

    def users_of(m) -> set:
        return (set(getattr(m, "shared_by", None) or ()) | set(getattr(m, "activations_of", None) or ())
                | set(getattr(m, "weights_for", None) or ()))

    users = users_of(src)

    def cap(m) -> float:
        c = getattr(m, "capacity_bytes", None)
        if c is None and getattr(m, "size_kib", None) is not None:
            c = m.size_kib * 1024
        return float("inf") if c is None else float(c)

    cands = [(cap(m), n, m) for n, m in mems.items() if n != memory and users & users_of(m)
             and cap(m) > cap(src) and getattr(m, "bandwidth_gb_s", None)]
    return min(cands, key=lambda c: (c[0], c[1]))[1:] if cands else None


def spill_report(fp: Footprint, platform) -> dict:
    """The spills of a footprint over capacity (module docstring): per memory over its capacity, ``to`` (the next
    memory), ``peak_bytes``, ``capacity_bytes``, ``available_bytes`` (the capacity less the weights it holds),
    ``spilled_bytes``, ``traffic_bytes`` (written out and read back),
    ``time_s`` and ``energy_j``; and the totals ``time_s``, ``energy_j``.

    Raises:
        MemoryCapacityError: a memory over capacity has no larger memory with a bandwidth to spill to.
    """
    out: dict = {"memories": {}, "time_s": 0.0, "energy_j": 0.0}
    for m, (peak, cap) in fp.over_capacity().items():
        nxt = spill_target(platform, m)
        if nxt is None:
            raise MemoryCapacityError(f"memory {m!r} needs {_mb(peak)} of activations at the peak, it has room "
                                      f"for {_mb(cap)}, and no larger memory with a bandwidth shares its devices to "
                                      "spill to")
        name, target = nxt
        spilled = fp.spilled_bytes(m)
        traffic = 2 * spilled
        t = traffic / (float(target.bandwidth_gb_s) * 1e9)
        e = traffic * float(getattr(target, "energy_pj_per_byte", 0.0) or 0.0) * 1e-12
        out["memories"][m] = {"to": name, "peak_bytes": peak, "capacity_bytes": fp.capacity[m],
                              "available_bytes": cap, "spilled_bytes": spilled,
                              "traffic_bytes": traffic, "time_s": t, "energy_j": e}
        out["time_s"] += t
        out["energy_j"] += e
    return out


def _mb(b: float, scale_of: float | None = None) -> str:
    """``b`` bytes in MB (3 decimals), or in KiB below 100 kB; ``scale_of``: choose the unit by this value
    instead, so that the numbers of one sentence share a unit."""
    return f"{b / 1e6:,.3f} MB" if (b if scale_of is None else scale_of) >= 1e5 else f"{b / 1024:,.1f} KiB"


def bytes_text(b: float | None) -> str:
    """``b`` bytes with a decimal prefix, 4 significant digits: ``10.32 MB``, ``3.84 kB``, ``512 B``; ``-`` for
    None."""
    if b is None:
        return "-"
    for scale, unit in ((1e9, "GB"), (1e6, "MB"), (1e3, "kB")):
        if abs(b) >= scale:
            return f"{b / scale:.4g} {unit}"
    return f"{b:.0f} B"


def room_text(fp: Footprint, m: str) -> str:
    """The activations' room in memory ``m`` in words: ``4.295 GB``, or ``2.096 MB left by 118.2 MB of weights``
    when it holds weights (decimal prefixes, :func:`bytes_text`)."""
    held = fp.weights.get(m, 0)
    return (f"{bytes_text(fp.available(m))} left by {bytes_text(held)} of weights" if held
            else bytes_text(fp.capacity[m]))


def require_fits(fp: Footprint) -> None:
    """Refuse a footprint over a memory's capacity.

    Raises:
        MemoryCapacityError: the first memory over capacity, in one line (peak, capacity, when, and how to go on).
    """
    for m, (peak, cap) in fp.over_capacity().items():
        _, at = fp.peak(m)
        held, top = fp.weights.get(m, 0), max(peak, fp.capacity[m])
        room = (f"the {_mb(cap, top)} its {_mb(held, top)} of weights leave of its {_mb(fp.capacity[m], top)}"
                if held else f"its {_mb(cap, top)}")
        raise MemoryCapacityError(
            f"the schedule needs {_mb(peak, top)} of live activations in memory {m!r} at {at * 1e3:.6g} ms "
            f"({fp.timing} timing), more than {room}; map it differently, or pass --spill "
            "(spill=True) to spill the excess to the next memory with that traffic charged")


def summary_block(fps: dict[str, Footprint], spill: dict | None = None) -> dict:
    """The ``memory`` block of ``summary.json``: per memory its capacity, devices, the peak of the replay
    (``peak_bytes``, ``peak_at_s``, ``fits``) and of the mapper's prediction (``predicted_peak_bytes``), the number
    of buffers, and ``spill`` when spilling was asked for."""
    rep = fps["replay"]
    lanes = rep.to_dict()
    pred = fps.get("predicted")
    for m, d in lanes.items():
        d["predicted_peak_bytes"] = pred.peak(m)[0] if pred is not None else None
    out = {"memories": lanes, "buffers": len(rep)}
    if spill is not None:
        out["spill"] = spill
    return out


def downsample(t: np.ndarray, live: np.ndarray, max_steps: int = FIGURE_MAX_STEPS) -> tuple[np.ndarray, np.ndarray]:
    """A step curve cut to at most ``max_steps`` steps for drawing: ``max_steps`` equal time bins, each at the
    highest level reached in it (the peak stays visible)."""
    if len(t) <= max_steps:
        return t, live
    edges = np.linspace(t[0], t[-1], max_steps + 1)
    k = np.clip(np.searchsorted(edges, t, side="right") - 1, 0, max_steps - 1)
    top = np.full(max_steps, np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(top, k, live.astype(np.int64))
    before = np.searchsorted(t, edges[:-1], side="right") - 1  # the last event at or before each bin's start
    level = np.where(before >= 0, live[np.maximum(before, 0)], 0)
    return edges[:-1], np.maximum(level, top)


def memory_figure(fp: Footprint, title: str = "", max_steps: int = FIGURE_MAX_STEPS):
    """Live activation bytes per memory over time (one step line each, capacity dashed where there is one within
    twice the highest peak, else only in the legend), as a matplotlib Figure; at most ``max_steps`` steps per
    memory (:func:`downsample`)."""
    import matplotlib.pyplot as plt

    mems = [m for m in fp.memories if len(fp.curve(m)[0])]
    fig, ax = plt.subplots(figsize=(6.4, 3.2), layout="constrained")
    top = max([fp.peak(m)[0] for m in mems], default=1) or 1
    # a capacity far above every peak (a 4 GiB DRAM) is named in the legend, not drawn: the curves stay readable
    caps = {m: fp.available(m) for m, c in fp.capacity.items() if c and fp.available(m) <= 2 * top}
    vmax = max([top, *caps.values()])
    scale, unit = (1e6, "MB") if vmax >= 1e6 else (1e3, "kB")
    tmax = fp.makespan_s or 1.0
    tscale, tunit = (1e3, "ms") if tmax >= 1e-3 else (1e6, "µs")
    for i, m in enumerate(mems):
        t, live = downsample(*fp.curve(m), max_steps)
        colour = f"C{i % 10}"
        peak, at = fp.peak(m)
        ax.step(np.r_[t, fp.makespan_s] * tscale, np.r_[live, live[-1]] / scale, where="post", color=colour, lw=1,
                label=f"{m} (peak {bytes_text(peak)}" + (f" of {room_text(fp, m)})" if fp.capacity.get(m) else ")"))
        ax.plot([at * tscale], [peak / scale], "o", color=colour, ms=3)
        if m in caps:
            ax.axhline(caps[m] / scale, color=colour, ls="--", lw=0.8)
    ax.set_xlabel(f"time ({tunit})")
    ax.set_ylabel(f"live activations ({unit})")
    ax.set_xlim(0, tmax * tscale)
    ax.set_ylim(0, vmax * (1.0 + 0.12 * (len(mems) + 1)) / scale)  # headroom for the legend above the curves
    ax.grid(alpha=0.3, lw=0.5)
    if mems:
        ax.legend(fontsize="small", loc="upper right")
    import textwrap

    # 75 characters of a 10-point font fill the 6.4-inch figure (assumed: 0.55 em per character): a --set
    # platform's long name wraps instead of running off the edge
    ax.set_title(textwrap.fill(title or f"activation memory over time ({fp.timing})", 75, break_on_hyphens=False),
                 fontsize="medium")
    return fig
