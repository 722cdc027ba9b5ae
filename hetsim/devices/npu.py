"""A generic neural processing unit: a roofline accelerator with an on-chip weight memory (``kind: npu``).

This kind is the worked example of ``docs/extending.md``: one file answering the capability protocol of
:mod:`hetsim.devices.base`, plus its line in :mod:`hetsim.devices`.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from hetsim.devices.base import Capacity, DeviceBase, Peaks
from hetsim.devices.dataflow import (
    OnChipMemory,
    OnChipTraffic,
    array_cycles,
    check_array,
    loop_dims,
    onchip_traffic,
    vector_work,
)
from hetsim.devices.fields import (
    MAX_BANDWIDTH_GB_S,
    MAX_BITS,
    MAX_CLOCK_MHZ,
    MAX_COUNT,
    MAX_CYCLES,
    MAX_ENERGY_PJ,
    MAX_KIB,
    MAX_PER_CYCLE,
    MAX_TIME_US,
    Flag,
    Integer,
    RateByBits,
    Real,
)
from hetsim.devices.puma import GEMM_OP_TYPES
from hetsim.devices.zigzag_cost import ZigzagBackend, ZigzagCost
from hetsim.workload.op import Op


class Npu(DeviceBase):
    """An edge NPU (``kind: npu``): a MAC array fed from a local memory, weights resident on chip.

    Latency, per op (roofline: S. Williams, A. Waterman, D. Patterson, "Roofline: an insightful visual
    performance model for multicore architectures", CACM 52(4), 2009, plus a fixed dispatch cost)::

        T       = op_overhead + max(T_compute, bytes / bandwidth)
        T_compute = macs / (clock * macs_per_cycle[b])        if macs > 0
                  = n_out / (clock * elementwise_per_cycle)   otherwise
        bytes   = (n_in + n_out) * b / 8                      (activations streamed from/to local memory)

    with ``b = element_bits`` (the NPU computes and exchanges tensors at its own precision, e.g. int8;
    ``macs_per_cycle`` is looked up for ``b``, a width missing from the table using the next wider one).
    Weights are resident in the on-chip weight memory for the whole inference, or (weight policy ``streamed``,
    :mod:`hetsim.weights`) read from a memory of the platform for each inference, before the op computes or,
    with ``double_buffered_weights``, while it does.

    Capacity: ``weight_memory`` (``weight_memory_kib`` KiB, resident): the weights of every op placed here,
    ``weight_elements * b / 8`` bytes each, must fit together (a weight-stationary budget, the NPU's analogue
    of the CPU-CIM ILP's crossbar budget, Eq. 14).

    Energy: ``active_w`` / ``idle_w`` like every device, plus ``energy_pj_per_mac`` per MAC computed.

    Only op types in ``supported_ops`` run here (default: the GEMM-like types with a constant weight), and those
    of ``vector_ops``.

    **Dataflow model** (optional; ``docs/models.md``, "NPU dataflow model"; :mod:`hetsim.devices.dataflow`). With
    ``array`` (the MAC array's spatial unrolling, e.g. ``{K: 32, C: 32}``) an op with MACs takes
    ``array_cycles = prod over loop dims d of ceil(D_d / u_d)`` cycles instead of ``macs / macs_per_cycle``
    (ZigZag, Mei et al., IEEE TC 2021; Timeloop, Parashar et al., ISPASS 2019), and ``register_file`` and
    ``sram`` (:class:`~hetsim.devices.dataflow.OnChipMemory`) add their traffic's energy and port time::

        T = op_overhead + max(array_cycles / clock, T_port, T_rf, T_sram)
        T_port = (n_in * p_in + n_out) * b / 8 / bandwidth
        E_op  = energy_pj_per_mac * macs + e_rf * rf_bytes + e_sram * sram_bytes      (pJ)

    with ``rf_bytes``, ``sram_bytes`` from :func:`~hetsim.devices.dataflow.onchip_traffic`, ``T_rf``/``T_sram``
    their bytes over the port's ``bytes_per_cycle * clock`` and ``p_in`` = 1, or ``ceil(K / u_K)`` when the
    inputs (``n_in * b / 8`` bytes) do not fit in the ``sram``'s capacity (ours). Without ``array`` nothing of
    this applies: the roofline above, exactly.

    **ZigZag backend** (``zigzag: {accelerator, mapping}``, optional extra ``hetsim[zigzag]``): an op with a loop
    nest takes ``op_overhead + cycles / clock`` and ZigZag's energy (MACs and memories: ``energy_pj_per_mac`` and
    the on-chip fields are not added) from ZigZag's best mapping on that accelerator
    (:mod:`hetsim.devices.zigzag_cost`, cached on disk per layer).

    **Vector unit** (``vector_ops``: op type -> elements per cycle): an op of a listed type runs here on its own,
    weights or not, in ``op_overhead + max(work / (clock * rate), T_port, T_sram)`` with ``work`` its output
    elements (input elements for pooling and reductions: :func:`~hetsim.devices.dataflow.vector_work`),
    ``T_sram`` for ``(n_in + n_out) * b / 8`` bytes, and energy ``vector_energy_pj_per_element * work`` plus
    those bytes' SRAM energy (ours).
    Op types in ``fuses`` the NPU fuses into the launch of a producer it runs, each adding
    ``epilogue_cycles_per_element[type] * n_out`` cycles (:meth:`fused_epilogue_s`; ``docs/models.md``, "Fused
    operator groups"); one not in ``vector_ops`` also runs on its own at ``elementwise_per_cycle``.
    """

    kind: Literal["npu"] = "npu"
    clock_mhz: Real = Field(gt=0, le=MAX_CLOCK_MHZ, description="clock, MHz")
    macs_per_cycle: RateByBits | None = Field(
        None, description="peak MACs per cycle by bit width, e.g. {8: 512} (may be left out when array is given)")
    elementwise_per_cycle: Real = Field(16.0, gt=0, le=MAX_PER_CYCLE,
                                        description="elements per cycle for ops without MACs")
    bandwidth_gb_s: Real = Field(gt=0, le=MAX_BANDWIDTH_GB_S,
                                 description="bandwidth to the local (activation) memory, GB/s")
    weight_memory_kib: Real = Field(gt=0, le=MAX_KIB, description="on-chip weight memory, KiB (resident capacity)")
    element_bits: Integer = Field(8, ge=1, le=MAX_BITS, description="bits per weight and activation element on the NPU")
    op_overhead_us: Real = Field(0.0, ge=0, le=MAX_TIME_US, description="fixed dispatch cost per op, microseconds")
    energy_pj_per_mac: Real = Field(0.0, ge=0, le=MAX_ENERGY_PJ, description="energy per MAC beyond active power, pJ")
    supported_ops: list[str] = Field(default_factory=lambda: list(GEMM_OP_TYPES),
                                     description="op types the NPU runs")
    needs_weights: Flag = Field(True, description="run only ops with a constant weight matrix (GEMM view)")
    double_buffered_weights: Flag = Field(
        False, description="a streamed op's weights are fetched while it computes (max, not sum, of the two)")
    # dataflow model (hetsim.devices.dataflow); none of it set: the roofline, exactly
    array: dict[str, Annotated[Integer, Field(le=MAX_COUNT)]] | None = Field(
        None, description="spatial unrolling of the MAC array, loop dimension -> lanes, e.g. {K: 32, C: 32}")
    groups_on_k_lanes: Flag = Field(
        False, description="a grouped conv's groups share the array's K lanes (depthwise as on Ethos-U); ours")
    register_file: OnChipMemory | None = Field(None, description="the array's register files (needs array)")
    sram: OnChipMemory | None = Field(None, description="the local SRAM feeding the array (needs array)")
    vector_ops: dict[str, Annotated[Real, Field(gt=0, le=MAX_PER_CYCLE)]] = Field(
        default_factory=dict, description="vector unit: op type -> elements per cycle, e.g. {Softmax: 16}")
    vector_energy_pj_per_element: Real = Field(0.0, ge=0, le=MAX_ENERGY_PJ,
                                               description="vector unit energy per element processed, pJ")
    zigzag: ZigzagBackend | None = Field(
        None, description="take ops' latency and energy from ZigZag (accelerator and mapping YAML); hetsim[zigzag]")

    fuses: list[str] = Field(default_factory=list,
                             description="op types the NPU fuses into a producer's launch (an epilogue), e.g. "
                                         "[Relu, Sigmoid, Mul, Add, QuantizeLinear, DequantizeLinear]")
    epilogue_cycles_per_element: dict[str, Annotated[Real, Field(ge=0, le=MAX_CYCLES)]] = Field(
        default_factory=dict, description="extra cycles per output element of a fused op, by op type (absent: 0)")

    @field_validator("array")
    @classmethod
    def _check_array(cls, v: dict[str, int] | None) -> dict[str, int] | None:
        if v is not None:
            check_array(v)
        return v

    @model_validator(mode="after")
    def _check(self) -> Npu:
        if self.macs_per_cycle is None and self.array is None:
            raise ValueError("give macs_per_cycle (peak MACs per cycle by bit width, e.g. {8: 512}) or array "
                             "(the MAC array's unrolling, e.g. {K: 32, C: 32})")
        if self.macs_per_cycle is not None:
            if not self.macs_per_cycle:
                raise ValueError("macs_per_cycle must list at least one bit width, e.g. {8: 512}")
            if any(v <= 0 for v in self.macs_per_cycle.values()) or any(k <= 0 for k in self.macs_per_cycle):
                raise ValueError("macs_per_cycle keys (bit widths) and values (MACs/cycle) must be > 0")
        self._check_dataflow()
        extra = sorted(set(self.epilogue_cycles_per_element) - set(self.fuses))
        if extra:
            raise ValueError(f"epilogue_cycles_per_element names {extra[0]!r}, which fuses does not list")
        return self

    def _check_dataflow(self) -> None:
        """The dataflow fields agree with each other and with ``macs_per_cycle`` (ValueError, one line)."""
        if self.array is not None and self.macs_per_cycle is not None:
            lanes, rate = math.prod(self.array.values()), self._table_rate()
            if lanes != rate:
                shape = " x ".join(f"{d} {u}" for d, u in self.array.items())
                raise ValueError(f"array {shape} has {lanes} MACs per cycle, macs_per_cycle {rate:g} at "
                                 f"{self.element_bits} bits; leave macs_per_cycle out or make them agree")
        if self.groups_on_k_lanes and "G" in (self.array or {}):
            raise ValueError("groups_on_k_lanes: the array unrolls G itself; drop one of them")
        for name in ("register_file", "sram"):
            if getattr(self, name) is not None and self.array is None:
                raise ValueError(f"{name}: its traffic follows the MAC array's unrolling; give array too")
        both = sorted(set(self.vector_ops) & set(self.supported_ops))
        if both:
            raise ValueError(f"{both[0]} is in both supported_ops and vector_ops; list it in one")

    @property
    def serial(self) -> bool:
        """One op at a time, in the schedule's order: the MAC array is one resource."""
        return True

    def supports(self, op: Op) -> bool:
        """True when ``op``'s type is in ``vector_ops``, or in ``supported_ops`` (and it has a GEMM view, with
        ``needs_weights``), or is a type the NPU fuses (``fuses``: it also runs one on its own)."""
        if op.op_type in self.vector_ops or op.op_type in self.fuses:
            return True
        return op.op_type in self.supported_ops and (op.gemm is not None or not self.needs_weights)

    def _table_rate(self) -> float:
        """``macs_per_cycle`` at ``element_bits`` (or the next wider width listed, else the widest); the array's
        lane count when ``macs_per_cycle`` is not given."""
        if self.macs_per_cycle is None:
            return float(math.prod((self.array or {}).values()))
        wider = [w for w in sorted(self.macs_per_cycle) if w >= self.element_bits]
        w = wider[0] if wider else max(self.macs_per_cycle)
        return self.macs_per_cycle[w]

    def _mac_rate(self) -> float:
        return self.clock_mhz * 1e6 * self._table_rate()

    def peaks(self) -> Peaks:
        """``clock x macs_per_cycle[element_bits]`` (the ``array``'s lanes without it) MAC/s at ``element_bits``,
        the width it computes at; the activation port at ``bandwidth_gb_s``, the ``sram`` and ``register_file``
        ports at ``bytes_per_cycle x clock`` when given."""
        ports = {"activation port": self.bandwidth_gb_s * 1e9}
        for name in ("sram", "register_file"):
            mem = getattr(self, name)
            if mem is not None and mem.bytes_per_cycle is not None:
                ports[name.replace("_", " ")] = mem.bytes_per_cycle * self._clock_hz
        basis = "clock x array lanes" if self.macs_per_cycle is None else "clock x macs_per_cycle"
        return Peaks({f"{self.element_bits}-bit": self._mac_rate()}, ports, self._clock_hz, basis)

    def latency(self, op: Op) -> float | None:
        """Latency of ``op`` in seconds (class docstring: the roofline, the dataflow model with ``array``, the
        vector unit for ``vector_ops``), ``None`` when unsupported."""
        if not self.supports(op):
            return None
        if op.op_type in self.vector_ops:
            return self._vector_latency(op)
        dims = loop_dims(op) if self.array is not None or self.zigzag is not None else None
        if dims is not None and self.zigzag is not None:
            return self.op_overhead_us * 1e-6 + self._zigzag_cost(op, dims).cycles / self._clock_hz
        if dims is not None:
            return self._array_latency(op, dims)
        if op.macs > 0:
            t_compute = op.macs / self._mac_rate()
        else:
            t_compute = op.n_out / (self.clock_mhz * 1e6 * self.elementwise_per_cycle)
        t_mem = (op.n_in + op.n_out) * self.element_bits / 8 / (self.bandwidth_gb_s * 1e9)
        return self.op_overhead_us * 1e-6 + max(t_compute, t_mem)

    def capacities(self) -> dict[str, Capacity]:
        """``weight_memory`` in bytes, resident (class docstring)."""
        return {"weight_memory": Capacity("weight_memory", int(self.weight_memory_kib * 1024), "B", "resident",
                                          "weight-stationary on-chip weights (as CPU-CIM ILP, Eq. 14)")}

    def demand(self, op: Op, n_channels: int | None = None) -> dict[str, int]:
        """Weight bytes of ``op``: ``weight_elements * element_bits / 8``, rounded up."""
        return {"weight_memory": -(-op.weight_elements * self.element_bits // 8)}

    def weight_policies(self, op: Op) -> tuple[str, ...]:
        """``resident`` (in ``weight_memory``) or ``streamed`` (read from a memory per inference, needing no
        weight memory) for an op with weights; ``resident`` only for one without."""
        return ("resident", "streamed") if op.weight_elements > 0 and self.supports(op) else ("resident",)

    def weight_bytes_of(self, op: Op) -> int:
        """``weight_elements * element_bits / 8``, rounded up: :meth:`demand`'s weight bytes."""
        return self.demand(op)["weight_memory"]

    @property
    def double_buffers_weights(self) -> bool:
        """``double_buffered_weights``: fetch the next weights while computing (ours: per op, ``max``)."""
        return self.double_buffered_weights

    @property
    def wire_bits(self) -> int:
        """Tensors to and from the NPU travel at its ``element_bits``."""
        return self.element_bits

    def op_energy_j(self, op: Op, n_channels: int | None = None) -> float:
        """``energy_pj_per_mac * macs`` in joules, plus the on-chip memories' and the vector unit's energy
        (class docstring; nothing more without ``array``, ``register_file``, ``sram`` or ``vector_ops``)."""
        if op.op_type in self.vector_ops:
            return self._vector_energy_pj(op) * 1e-12
        dims = loop_dims(op) if self.zigzag is not None else None
        if dims is not None:
            return self._zigzag_cost(op, dims).energy_pj * 1e-12
        e = self.energy_pj_per_mac * 1e-12 * op.macs
        onchip = self._onchip_energy_pj(op)
        return e + onchip * 1e-12 if onchip else e

    # ------------------------------------------------------------------- dataflow model and vector unit

    @property
    def _clock_hz(self) -> float:
        return self.clock_mhz * 1e6

    def _port_s(self, n_bytes: float) -> float:
        """Seconds the activation port (``bandwidth_gb_s``) needs for ``n_bytes``."""
        return n_bytes / (self.bandwidth_gb_s * 1e9)

    def _memory_s(self, name: str, n_bytes: float) -> float:
        """Seconds on-chip memory ``name`` (``register_file``, ``sram``) needs for ``n_bytes``; 0 without it."""
        mem = getattr(self, name)
        return 0.0 if mem is None else mem.time_s(n_bytes, self._clock_hz)

    def _traffic(self, op: Op, dims: dict[str, int]) -> OnChipTraffic:
        """The op's on-chip traffic on the ``array`` (the register file's capacity bounding weight reuse)."""
        rf = self.register_file.capacity_bytes if self.register_file is not None else None
        return onchip_traffic(op, dims, self.array or {}, self.element_bits, rf)

    def _array_latency(self, op: Op, dims: dict[str, int]) -> float:
        """Dataflow latency (class docstring) of an op with loop dimensions ``dims`` on the ``array``."""
        t_compute = array_cycles(dims, self.array or {}, self.groups_on_k_lanes) / self._clock_hz
        traffic = self._traffic(op, dims)
        byte = self.element_bits / 8
        fits = self.sram is None or self.sram.capacity_bytes is None or op.n_in * byte <= self.sram.capacity_bytes
        port_bytes = (op.n_in * (1 if fits else traffic.input_passes) + op.n_out) * byte
        return self.op_overhead_us * 1e-6 + max(t_compute, self._port_s(port_bytes),
                                                self._memory_s("register_file", traffic.register_file_bytes),
                                                self._memory_s("sram", traffic.sram_bytes))

    def _onchip_energy_pj(self, op: Op) -> float:
        """pJ of the op's register-file and SRAM traffic (0 without those memories or without loop dims)."""
        if self.register_file is None and self.sram is None:
            return 0.0
        dims = loop_dims(op)
        if dims is None:
            return 0.0
        traffic = self._traffic(op, dims)
        e = 0.0
        if self.register_file is not None:
            e += self.register_file.pj_per_byte * traffic.register_file_bytes
        if self.sram is not None:
            e += self.sram.pj_per_byte * traffic.sram_bytes
        return e

    def _zigzag_cost(self, op: Op, dims: dict[str, int]) -> ZigzagCost:
        """ZigZag's cost of the op's loop nest (:mod:`hetsim.devices.zigzag_cost`; cached on disk)."""
        stride = op.gemm.stride if op.gemm is not None else ()
        return self.zigzag.cost(dims, stride, self.element_bits, op.op_type)

    def _vector_latency(self, op: Op) -> float:
        """Vector-unit latency (class docstring): elements at ``vector_ops[op_type]`` per cycle, bounded by the
        activation port and the SRAM port."""
        t_compute = vector_work(op) / (self._clock_hz * self.vector_ops[op.op_type])
        n_bytes = (op.n_in + op.n_out) * self.element_bits / 8
        return self.op_overhead_us * 1e-6 + max(t_compute, self._port_s(n_bytes), self._memory_s("sram", n_bytes))

    def _vector_energy_pj(self, op: Op) -> float:
        """pJ of a vector op: ``vector_energy_pj_per_element * work`` plus its bytes through the SRAM."""
        e = self.vector_energy_pj_per_element * vector_work(op)
        if self.sram is not None:
            e += self.sram.pj_per_byte * (op.n_in + op.n_out) * self.element_bits / 8
        return e

    def fused_epilogue_s(self, producer: Op, consumer: Op) -> float | None:
        """``epilogue_cycles_per_element[type] * n_out / clock`` for a consumer whose type is in ``fuses`` (the
        epilogue's extra cycles; an op type without an entry adds none), ``None`` otherwise. Ours: an epilogue
        unit that applies the op to the producer's output elements as they are written (as Arm Ethos-U's output
        unit applies activations and requantisation; Arm's Vela compiler fuses them into the preceding operator)."""
        if consumer.op_type not in self.fuses or not self.supports(producer):
            return None
        return self.epilogue_cycles_per_element.get(consumer.op_type, 0.0) * consumer.n_out / (self.clock_mhz * 1e6)
