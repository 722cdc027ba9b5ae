"""Cost model: latency of every op on every device and of every cross-device transfer.

Mappers and the simulator read costs only from here, so a schedule's prediction and its replay use the same
numbers.
"""

from __future__ import annotations

import copy
from functools import cached_property

import numpy as np

from hetsim.devices.base import Capacity, DeviceBase
from hetsim.errors import PlatformError, ScheduleError, UnsupportedOpError
from hetsim.platform import Platform
from hetsim.workload.kinds import DAG, kinds_of
from hetsim.workload.op import Op, Workload, foldable_ops


def check_runs_dags(platform: Platform) -> None:
    """Refuse a platform whose host runs no DAG of tensor operators (an SNN platform, platforms/efr32mg24.yaml):
    the cost model's first check, and the ONNX sweep loader's for every platform and point.

    Raises:
        PlatformError: one line naming the platform and its host's kind.
    """
    host_dev = platform.devices[platform.host]
    if DAG not in kinds_of(host_dev):
        raise PlatformError(f"platform {platform.name!r} has a {host_dev.kind!r} host and runs spiking networks "
                            "(workloads/snn/*.yaml), not ONNX models")


class CostModel:
    """Per-(op, device) latencies, capacity demands and per-edge transfer times for one workload on one platform.

    Every number comes from the devices' capability protocol (:mod:`hetsim.devices.base`); nothing here knows a
    device kind by name.

    Attributes:
        latency: op name -> {device name: seconds} for the devices that run the op. A device runs an op when its
            kind supports it, the op fits each of the device's ``per-op`` capacities, and a tensor from the host
            can reach it (:meth:`~hetsim.platform.Platform.reachable_from_host`: a device no chain of links or
            shared memories joins to the host takes no op, since the model's inputs start on the host; ours: except
            an op whose every input and output edge is a parameter, which exchanges no tensor).
        reachable: the devices a tensor from the host can reach (the candidates of every op).
        phases: op name -> {device name: phase durations} for devices that run ops in phases (a PUMA CIM's
            load, MVM, store: CPU-CIM ILP, Eq. 2-3).
        need: op name -> {device name: amount} of the device's resident capacity the op occupies (crossbars,
            CPU-CIM ILP Eq. 1; weight bytes), for devices with one.
        budget: device name -> amount of its resident capacity (the C of CPU-CIM ILP Eq. 14, generalised).
        folded: ops computed only from constants (:func:`~hetsim.workload.op.foldable_ops`), which ONNX Runtime
            folds once at session creation: with ``fold_constants`` (the default) they cost 0 s on every device
            that runs them (on the host when none does), need no resident capacity, and their output edges move
            nothing; with ``fold_constants=False`` they are charged like any op and ``folded`` is empty.
        fusion: consumer -> {producer -> {device: seconds}}: the fused operator groups the devices offer
            (:meth:`~hetsim.devices.base.DeviceBase.fused_epilogue_s`): ``consumer`` may run fused into the launch
            of ``producer`` (a data edge ``producer -> consumer``) on ``device``, a serial device of one unit that
            runs both ops, and then lasts the epilogue's seconds instead of its own latency (no launch, no
            transfer; a schedule's ``fused``, :func:`hetsim.check.fusion_violations`). Folded ops and parameter
            edges take no part. Empty with ``fusion=False`` (``fusion_on`` false) or when no device fuses;
            ``fusion_offered`` counts the consumers the devices could fuse either way.

    Raises:
        PlatformError: the platform's host does not run this kind of workload, or a device declares more than
            one resident capacity.
        UnsupportedOpError: some op is supported by no device (the message lists them).
    """

    def __init__(self, workload: Workload, platform: Platform, fold_constants: bool = True, fusion: bool = True):
        check_runs_dags(platform)
        self.workload = workload
        self.platform = platform
        self.fold_constants = bool(fold_constants)
        self.fusion_on = bool(fusion)
        self.folded: frozenset[str] = foldable_ops(workload) if self.fold_constants else frozenset()
        self.latency: dict[str, dict[str, float]] = {}
        self.phases: dict[str, dict[str, tuple[float, ...]]] = {}
        self.need: dict[str, dict[str, int]] = {}
        # a cpu whose latency table is a folder of profiles takes this workload's
        self.devices = {n: d.for_workload(workload.name) for n, d in platform.devices.items()}
        self.resident: dict[str, Capacity] = {}
        self.per_op: dict[str, list[Capacity]] = {}
        for n, d in self.devices.items():
            caps = d.capacities()
            res = [c for c in caps.values() if c.scope == "resident"]
            if len(res) > 1:
                raise PlatformError(f"device {n!r} ({d.kind}) declares {len(res)} resident capacities; the mappers "
                                    "handle one per device")
            if res:
                self.resident[n] = res[0]
            self.per_op[n] = [c for c in caps.values() if c.scope == "per-op"]
        self.budget: dict[str, int] = {n: c.amount for n, c in self.resident.items()}
        self.reachable: frozenset[str] = platform.reachable_from_host()
        devices = [d for n, d in self.devices.items() if n in self.reachable]
        cut_off = [d for n, d in self.devices.items() if n not in self.reachable]
        g = workload.graph
        unsupported = []
        for name, op in workload.ops.items():
            lat: dict[str, float] = {}
            # a device the host cannot reach runs only an op that exchanges no tensor (every edge a parameter)
            isolated = cut_off and g.in_degree(name) > 0 and all(
                d.get("param") for *_, d in (*g.in_edges(name, data=True), *g.out_edges(name, data=True)))
            for dev in (devices + cut_off if isolated else devices):
                t = dev.latency(op)
                if t is None or not self._fits_per_op(dev, op, None):
                    continue
                lat[dev.name] = t
                ph = dev.phases(op)
                if ph is not None:
                    self.phases.setdefault(name, {})[dev.name] = ph
                res = self.resident.get(dev.name)
                if res is not None:
                    self.need.setdefault(name, {})[dev.name] = int(dev.demand(op).get(res.name, 0))
            if name in self.folded:  # computed once at session creation: nothing at run time
                lat = dict.fromkeys(lat or [platform.host], 0.0)
                for dev_name, ph in self.phases.get(name, {}).items():
                    self.phases[name][dev_name] = tuple(0.0 for _ in ph)
                for dev_name in self.need.get(name, {}):
                    self.need[name][dev_name] = 0
            if not lat:
                unsupported.append(f"{name} ({op.op_type})")
            self.latency[name] = lat
        if unsupported:
            more = f" and {len(unsupported) - 5} more" if len(unsupported) > 5 else ""
            names = ", ".join(d.name for d in cut_off)
            why = (f" (not counted: {names}, which no link or shared memory joins to the host {platform.host!r})"
                   if cut_off else "")
            raise UnsupportedOpError(
                f"no device of platform {platform.name!r} supports {', '.join(unsupported[:5])}{more}{why}"
            )
        offered = self._fusion()
        #: how many ops the devices could run fused into a producer (also with fusion off: the report says so)
        self.fusion_offered = len(offered)
        self.fusion: dict[str, dict[str, dict[str, float]]] = offered if self.fusion_on else {}

    def _fusion(self) -> dict[str, dict[str, dict[str, float]]]:
        """:attr:`fusion`: every data edge ``p -> c`` (neither op folded, not a parameter edge) and every serial
        device of one unit that runs both, where ``p`` takes time and the device fuses ``c`` into ``p``."""
        fusing = [n for n, d in self.devices.items()
                  if d.serial and d.units == 1 and type(d).fused_epilogue_s is not DeviceBase.fused_epilogue_s]
        out: dict[str, dict[str, dict[str, float]]] = {}
        if not fusing:
            return out
        ops, folded, lat = self.workload.ops, self.folded, self.latency
        for p, c, data in self.workload.graph.edges(data=True):
            if data.get("param") or p in folded or c in folded:
                continue
            for d in fusing:
                if lat[p].get(d, 0.0) <= 0.0 or d not in lat[c]:
                    continue
                t = self.devices[d].fused_epilogue_s(ops[p], ops[c])
                if t is not None:
                    out.setdefault(c, {}).setdefault(p, {})[d] = float(t)
        return out

    def without_fusion(self) -> CostModel:
        """This cost model with no fused operator groups (:attr:`fusion` empty, ``fusion_on`` false): a shallow copy,
        for a mapper that does not model fusion (``self`` when there is nothing to fuse)."""
        if not self.fusion:
            return self
        b = copy.copy(self)
        b.fusion, b.fusion_on = {}, False
        return b

    def with_fusion(self, fused: dict[str, str]) -> CostModel:
        """The cost model of a schedule's fused groups (``fused``: consumer -> producer): a shallow copy whose
        ``latency`` gives each fused consumer its epilogue's seconds on the devices that fuse it into its
        producer (:attr:`fusion`); ``self`` when ``fused`` is empty. A pair the cost model does not offer keeps
        its latency (the checker reports it: :func:`hetsim.check.fusion_violations`)."""
        if getattr(self, "fused_with", None) == fused:
            return self
        src = getattr(self, "unfused", self)  # the latencies before any fusion
        if not fused:
            return src
        b = copy.copy(src)
        b.unfused = src
        if not hasattr(b, "unbound"):
            b.unbound = src
        b.fused_with = dict(fused)
        b.latency = dict(src.latency)
        for c, p in fused.items():
            epi = src.fusion.get(c, {}).get(p)
            if epi and c in b.latency:
                b.latency[c] = {**b.latency[c], **epi}
        return b

    def for_schedule(self, schedule) -> CostModel:
        """The cost model a replay of ``schedule`` uses: this one when every op's weights are resident, else
        one whose streamed and reprogrammed ops carry their policies' costs (:func:`hetsim.weights.bind`) and
        whose fused consumers last their epilogues (:meth:`with_fusion`, the schedule's ``fused``); a cost
        model whose costs depend on decisions a schedule carries in ``config``, an SNN's, returns one bound to
        them."""
        fused = getattr(schedule, "fused", None)
        if not getattr(schedule, "policies", None):
            base = getattr(self, "unbound", self)  # a bound copy's resident costs
        else:
            from hetsim.weights import bind

            base = bind(self, schedule)
        return base.with_fusion(fused) if fused else base

    def schedule_violations(self, schedule) -> list[str]:
        """Problems with the decisions a schedule carries beyond parts, orders and placement (its ``config``);
        for ONNX workloads, the problems of its weight policies (:func:`hetsim.weights.bind`: a policy the device
        does not offer, a memory it cannot reach, a memory over capacity, overlapping reprogrammed ops; an SNN's
        weight memories: :class:`hetsim.snn.activity_costs.ActivityCostModel`)."""
        return list(getattr(self.for_schedule(schedule), "policy_violations", ()))

    def _fits_per_op(self, dev: DeviceBase, op: Op, n_channels: int | None) -> bool:
        caps = self.per_op[dev.name]
        if not caps:
            return True
        dem = dev.demand(op, n_channels)
        return all(dem.get(c.name, 0) <= c.amount for c in caps)

    def demand(self, op: str, device: str, n_channels: int | None = None) -> dict[str, int]:
        """What ``op`` (or its part of ``n_channels`` output channels) needs of each capacity of ``device``."""
        return self.devices[device].demand(self.workload.op(op), n_channels)

    def units(self, device: str) -> int:
        """How many ops ``device`` runs at once (a CPU's cores)."""
        return self.devices[device].units

    def serial_devices(self) -> dict[str, int]:
        """Devices whose ops run one per unit in the schedule's order, with their units (a CPU's cores, a DIANA
        accelerator, an NPU). A PUMA CIM is not among them: its ops own their crossbars and overlap freely."""
        return {n: d.units for n, d in self.devices.items() if d.serial}

    @property
    def host(self) -> str:
        return self.platform.host

    def supported(self, op: str, device: str) -> bool:
        return device in self.latency[op]

    def host_fallback_ops(self) -> list[str]:
        """Ops whose host latency comes from the roofline because the host's latency table lacks them (folded ops
        among them, although they cost nothing: the count says what the table lacks)."""
        dev = self.devices[self.host]
        return [n for n, op in self.workload.ops.items() if dev.uses_fallback(op)]

    def transfer_bytes(self, u: str, v: str, src: str, dst: str) -> float:
        """Bytes moved for edge ``u -> v`` when ``u`` runs on ``src`` and ``v`` on ``dst``.

        ``b_elem * N_out`` as in CPU-CIM ILP Eq. 4: when either end is a device with its own element size
        (:attr:`~hetsim.devices.base.DeviceBase.wire_bits`: a CIM accelerator, an NPU; the destination wins),
        that size is the wire format (the host converts as part of its own op); between devices without one,
        the tensor's ONNX element size.
        Parameter edges (constant producers), same-device edges and edges between devices that share a memory
        (the consumer reads the producer's output where it was written: ODiMO "we do not count activation
        transfers", Sec. III-C) move nothing.
        """
        if not self.needs_transfer(u, v, src, dst):
            return 0.0
        return self.edge_bytes(self.workload.graph.edges[u, v], src, dst)

    def edge_bytes(self, data: dict, src: str, dst: str) -> float:
        """Bytes an edge whose graph attributes are ``data`` moves from ``src`` to ``dst`` when it moves at all
        (:meth:`transfer_bytes` without the lookups: for a caller that walks the graph's adjacency)."""
        return edge_bytes_at(data, self.wire_bits(src, dst))

    def wire_bits(self, src: str, dst: str) -> int | None:
        """The element size in bits of what moves from ``src`` to ``dst``: the destination's wire format
        (:attr:`~hetsim.devices.base.DeviceBase.wire_bits`), else the source's, else ``None`` (the tensor's ONNX
        element size; :meth:`transfer_bytes`)."""
        for d in (dst, src):
            bits = self.devices[d].wire_bits
            if bits is not None:
                return bits
        return None

    def transfer_route(self, src: str, dst: str) -> tuple | None:
        """How an edge that moves data (not a parameter edge nor a folded op's output) goes from ``src`` to
        ``dst``: ``None`` when nothing moves between the two (the same device, or devices sharing a memory),
        else ``(link, bits)``: the link joining them and the :meth:`wire_bits` of what it carries; its time is
        ``link.transfer_time(edge_bytes_at(data, bits))``, what :meth:`transfer_time` gives. For a caller that
        prices many edges (the replay's plan: once per device pair, not per edge).

        Raises:
            ScheduleError: the devices share no memory and no link joins them.
        """
        if src == dst or self._shares(src, dst):
            return None
        return self.link(src, dst), self.wire_bits(src, dst)

    def link(self, src: str, dst: str):
        """The link joining ``src`` and ``dst``.

        Raises:
            ScheduleError: the platform has no link between them.
        """
        link = self._links.get((src, dst))
        if link is None:
            link = self.platform.link_between(src, dst)
            if link is None:
                raise ScheduleError(f"platform {self.platform.name!r} has no link between {src!r} and {dst!r}")
            self._links[(src, dst)] = link
        return link

    @cached_property
    def _links(self) -> dict:
        return {}

    @cached_property
    def _part_latency(self) -> dict:
        return {}

    def carried(self, u: str, v: str, src: str, dst: str) -> bool:
        """True when edge ``u -> v`` can be carried with ``u`` on ``src`` and ``v`` on ``dst``: nothing moves
        (:meth:`needs_transfer` is false) or a link joins the two devices."""
        return not self.needs_transfer(u, v, src, dst) or self.platform.link_between(src, dst) is not None

    def needs_transfer(self, u: str, v: str, src: str, dst: str) -> bool:
        """True when edge ``u -> v`` with ``u`` on ``src`` and ``v`` on ``dst`` moves data over a link: the
        devices differ, share no memory, and the edge is not a parameter edge (nor the output of a folded op)."""
        if src == dst:
            return False
        return self.edge_moves(u, self.workload.graph.edges[u, v], src, dst)

    def edge_moves(self, u: str, data: dict, src: str, dst: str) -> bool:
        """:meth:`needs_transfer` for an edge out of ``u`` whose graph attributes are ``data`` (no graph lookup;
        whether two devices share a memory is asked of the platform once per pair)."""
        if src == dst or u in self.folded or data.get("param"):
            return False
        return not self._shares(src, dst)

    def _shares(self, src: str, dst: str) -> bool:
        """Whether ``src`` and ``dst`` share a memory, asked of the platform once per pair."""
        shared = self._shares_memory.get((src, dst))
        if shared is None:
            shared = self._shares_memory[(src, dst)] = self.platform.shares_memory(src, dst)
        return shared

    @cached_property
    def _shares_memory(self) -> dict:
        return {}

    def transfer_time(self, u: str, v: str, src: str, dst: str) -> float:
        """Seconds to move edge ``u -> v`` from ``src`` to ``dst`` (CPU-CIM ILP, Eq. 4); 0 when nothing moves
        (:meth:`needs_transfer` is false)."""
        if not self.needs_transfer(u, v, src, dst):
            return 0.0
        return self.link(src, dst).transfer_time(self.transfer_bytes(u, v, src, dst))

    def out_channels(self, op: str) -> int | None:
        """Output channels ``C_out = groups * m_v`` of an op with a GEMM view (what a channel split divides),
        else ``None``."""
        g = self.workload.op(op).gemm
        return None if g is None else g.c_out

    def splits_channels(self, device: str) -> bool:
        """True when ``device`` can run channel-split parts of ops (its kind's ``splits_channels``)."""
        return self.devices[device].splits_channels

    def split_devices(self) -> list[str]:
        """Devices that run channel-split parts (:meth:`splits_channels`), in platform order."""
        return [d for d in self.platform.devices if self.splits_channels(d)]

    def layer_energy(self, part_s: dict[str, float], span_s=None, xp=np) -> float:
        """Energy in joules of one layer run alone with its parts in parallel, ODiMO Eq. 4 per layer.

        ``part_s`` maps devices to the seconds of their part (absent or 0 = no part). The layer lasts
        ``M = span_s`` (default ``max(part_s)``); every channel-splitting device ``d`` (:meth:`split_devices`)
        draws ``active_w * L_d + idle_w * (M - L_d)``. With ``platforms/diana.yaml`` this equals the ODiMO code's
        ``42.39 mW * min(L_a, L_d) + 28.74 mW * (L_a - min) + 24.96 mW * (L_d - min)``. ``xp`` evaluates it
        (numpy; ``hetsim.search`` passes torch tensors and a torch namespace, for the energy regulariser).
        """
        m = max(part_s.values(), default=0.0) if span_s is None else span_s
        e = 0.0
        for d in self.split_devices():
            dev = self.platform.devices[d]
            t = part_s.get(d, 0.0)
            active, idle = dev.energy_j(t, m, xp)
            e = e + (active + idle)
        return e

    def part_latency(self, op: str, device: str, n_channels: int) -> float | None:
        """Seconds for the part of ``op`` computing ``n_channels`` of its output channels on ``device`` (a
        channel split, ODiMO), or ``None`` when the device cannot run such a part (the host cannot reach it, it
        supports no channel splits, or not this op). ``n_channels = C_out`` gives the op's whole latency on a
        device that splits.

        Raises:
            ValueError: ``n_channels`` is outside ``[0, C_out]``.
        """
        key = (op, device, n_channels)
        if key not in self._part_latency:
            dev, o = self.devices[device], self.workload.op(op)
            t = dev.latency_channels(o, n_channels) if device in self.reachable else None
            if t is not None and op in self.folded:
                t = 0.0
            self._part_latency[key] = t if t is None or self._fits_per_op(dev, o, n_channels) else None
        return self._part_latency[key]

    def initial_assignment(self) -> dict[str, str]:
        """Every op on the host, except ops the host cannot run, which go to the first device (in platform
        order) that can. The starting point of the heuristics; ``all-host`` refuses such workloads."""
        devs = list(self.platform.devices)
        return {v: self.host if self.host in lat else next(d for d in devs if d in lat)
                for v, lat in self.latency.items()}


def edge_bytes_at(data: dict, bits: int | None) -> float:
    """Bytes an edge whose graph attributes are ``data`` moves at ``bits`` per element (``b_elem * N_out``,
    CPU-CIM ILP Eq. 4), or its tensor's ONNX bytes when ``bits`` is ``None`` (:meth:`CostModel.wire_bits`)."""
    if bits is None:
        return float(data["bytes"])
    return data["elements"] * bits / 8
