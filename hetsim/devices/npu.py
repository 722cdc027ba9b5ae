"""A generic neural processing unit: a roofline accelerator with an on-chip weight memory (``kind: npu``).

This kind is the worked example of ``docs/extending.md``: one file answering the capability protocol of
:mod:`hetsim.devices.base`, plus its line in :mod:`hetsim.devices`.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from hetsim.devices.base import Capacity, DeviceBase
from hetsim.devices.fields import (
    MAX_BANDWIDTH_GB_S,
    MAX_BITS,
    MAX_CLOCK_MHZ,
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

    Only op types in ``supported_ops`` run here (default: the GEMM-like types with a constant weight), and the
    types in ``fuses``: these the NPU fuses into the launch of a producer it runs, each adding
    ``epilogue_cycles_per_element[type] * n_out`` cycles (:meth:`fused_epilogue_s`; ``docs/models.md``, "Fused
    operator groups"), and runs on their own at ``elementwise_per_cycle``.
    """

    kind: Literal["npu"] = "npu"
    clock_mhz: Real = Field(gt=0, le=MAX_CLOCK_MHZ, description="clock, MHz")
    macs_per_cycle: RateByBits = Field(description="peak MACs per cycle by bit width, e.g. {8: 512}")
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
    fuses: list[str] = Field(default_factory=list,
                             description="op types the NPU fuses into a producer's launch (an epilogue), e.g. "
                                         "[Relu, Sigmoid, Mul, Add, QuantizeLinear, DequantizeLinear]")
    epilogue_cycles_per_element: dict[str, Annotated[Real, Field(ge=0, le=MAX_CYCLES)]] = Field(
        default_factory=dict, description="extra cycles per output element of a fused op, by op type (absent: 0)")

    @model_validator(mode="after")
    def _check(self) -> Npu:
        if not self.macs_per_cycle:
            raise ValueError("macs_per_cycle must list at least one bit width, e.g. {8: 512}")
        if any(v <= 0 for v in self.macs_per_cycle.values()) or any(k <= 0 for k in self.macs_per_cycle):
            raise ValueError("macs_per_cycle keys (bit widths) and values (MACs/cycle) must be > 0")
        extra = sorted(set(self.epilogue_cycles_per_element) - set(self.fuses))
        if extra:
            raise ValueError(f"epilogue_cycles_per_element names {extra[0]!r}, which fuses does not list")
        return self

    @property
    def serial(self) -> bool:
        """One op at a time, in the schedule's order: the MAC array is one resource."""
        return True

    def supports(self, op: Op) -> bool:
        """True when ``op``'s type is listed (and it has a GEMM view, with ``needs_weights``), or is a type the NPU
        fuses (``fuses``: it also runs one on its own, at its elementwise rate)."""
        return (op.op_type in self.supported_ops and (op.gemm is not None or not self.needs_weights)
                or op.op_type in self.fuses)

    def _mac_rate(self) -> float:
        wider = [w for w in sorted(self.macs_per_cycle) if w >= self.element_bits]
        w = wider[0] if wider else max(self.macs_per_cycle)
        return self.clock_mhz * 1e6 * self.macs_per_cycle[w]

    def latency(self, op: Op) -> float | None:
        """Roofline latency of ``op`` in seconds (class docstring), ``None`` when unsupported."""
        if not self.supports(op):
            return None
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
        """``energy_pj_per_mac * macs`` in joules."""
        return self.energy_pj_per_mac * 1e-12 * op.macs

    def fused_epilogue_s(self, producer: Op, consumer: Op) -> float | None:
        """``epilogue_cycles_per_element[type] * n_out / clock`` for a consumer whose type is in ``fuses`` (the
        epilogue's extra cycles; an op type without an entry adds none), ``None`` otherwise. Ours: an epilogue
        unit that applies the op to the producer's output elements as they are written (as Arm Ethos-U's output
        unit applies activations and requantisation; Arm's Vela compiler fuses them into the preceding operator)."""
        if consumer.op_type not in self.fuses or not self.supports(producer):
            return None
        return self.epilogue_cycles_per_element.get(consumer.op_type, 0.0) * consumer.n_out / (self.clock_mhz * 1e6)
