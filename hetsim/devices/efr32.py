"""EFR32MG24 engines for spiking networks (SpikeDuet): the Cortex-M33 host and the Matrix Vector
Processor (MVP).

Both are cycle-cost models of one SNN layer per timestep, evaluated on spike rasters (numpy arrays), not on
ONNX operators: an SNN affine layer's cost depends on which of its input columns are active at that timestep.
The formulas (SpikeDuet Sec. III-B, III-D; constants and their calibration in ``platforms/efr32mg24.yaml`` and
``docs/models.md``, "EFR32MG24"):

* sparse M33 affine (event-driven, FP32): ``C_call + sum over active input columns j of
  (C_col + n_out * c_elem[mem(j)])`` - adding column ``j`` of ``W`` to the output costs ``c_elem`` cycles per
  element, more when the column is read from Flash than from SRAM (hot columns live in SRAM);
* dense MVP affine (FP16): ``C0 + C_L + n_in * C_P`` - one launch over the whole matrix;
* range-sparse MVP affine (FP16): ``C0 + C_L * N_L + C_P * N_P`` with ``C_P = C_write + n_out * c_elem[mem]``,
  ``N_L`` launches (contiguous ranges of active columns after merging ranges whose gap is cheaper to process
  than to launch) and ``N_P`` columns processed (SpikeDuet Sec. III-B/III-C);
* LIF update on the M33: ``C_call + n * c_neuron`` per layer and timestep; readout ``n_out * c_readout`` per
  timestep (spike-count or membrane accumulation).

Neither device runs ONNX operators: :meth:`latency` returns ``None`` for every op.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from hetsim.devices.base import DeviceBase
from hetsim.devices.fields import MAX_BITS, MAX_CLOCK_MHZ, MAX_CYCLES, MAX_KIB, Integer, Real
from hetsim.workload.op import Op

#: The two engines as resources of an SNN schedule (:mod:`hetsim.snn.schedule`; the ``device`` column of its
#: trace): the Cortex-M33 and the MVP.
M33, MVP = "m33", "mvp"
#: What an SNN plan runs an affine layer as (:mod:`hetsim.snn.costs`): the M33's event-driven sparse kernel, one
#: MVP launch over the whole matrix, or one MVP launch per range of active columns.
ENGINE_M33, ENGINE_MVP_DENSE, ENGINE_MVP_RANGE = M33, "mvp-dense", "mvp-range"


class MemoryCycles(BaseModel):
    """Cycles per weight element read, by memory (``{sram: ..., flash: ...}``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sram: Real = Field(ge=0, le=MAX_CYCLES, description="cycles per weight element read from SRAM")
    flash: Real = Field(ge=0, le=MAX_CYCLES, description="cycles per weight element read from Flash")

    def __getitem__(self, mem: str) -> float:
        return getattr(self, mem)


class CortexM(DeviceBase):
    """A Cortex-M class host core (``kind: cortex-m``) running event-driven SNN kernels in FP32.

    Attributes:
        clock_mhz: core clock, MHz (cycles -> seconds).
        weight_bytes: bytes per stored weight (FP32 tables: 4).
        affine_call_cycles: fixed cycles per sparse affine call (one layer, one timestep).
        col_cycles: cycles per active input column (index fetch, row pointer).
        elem_cycles: cycles per weight element added, by the memory the column is read from.
        lif_call_cycles, lif_neuron_cycles: LIF update per layer and timestep: call + per neuron.
        readout_neuron_cycles: readout accumulation per output neuron and timestep.
        sram_reserved_kib: SRAM kept for the stack, neuron state, spike and MVP buffers and the runtime
            (not available to weights).
    """

    can_host: ClassVar[bool] = True
    workloads: ClassVar[frozenset[str]] = frozenset({"snn"})

    kind: Literal["cortex-m"] = "cortex-m"
    clock_mhz: Real = Field(gt=0, le=MAX_CLOCK_MHZ)
    weight_bytes: Integer = Field(4, ge=1, le=MAX_BITS // 8)
    affine_call_cycles: Real = Field(ge=0, le=MAX_CYCLES)
    col_cycles: Real = Field(ge=0, le=MAX_CYCLES)
    elem_cycles: MemoryCycles
    lif_call_cycles: Real = Field(ge=0, le=MAX_CYCLES)
    lif_neuron_cycles: Real = Field(ge=0, le=MAX_CYCLES)
    readout_neuron_cycles: Real = Field(0.0, ge=0, le=MAX_CYCLES)
    sram_reserved_kib: Real = Field(0.0, ge=0, le=MAX_KIB)

    @property
    def serial(self) -> bool:
        return True

    def latency(self, op: Op) -> float | None:
        return None


class Mvp(DeviceBase):
    """A matrix-vector accelerator (``kind: mvp``, the EFR32MG24 MVP) running FP16 affine layers.

    Attributes:
        clock_mhz: MVP clock, MHz.
        weight_bytes: bytes per stored weight (FP16: 2).
        call_cycles: ``C0``, fixed cycles per affine layer call (program set-up).
        launch_cycles: ``C_L``, cycles per MVP launch (one contiguous column range).
        col_cycles: cycles per processed column besides its weights (the FP16 spike write of its input).
        elem_cycles: cycles per FP16 weight element processed, by the memory the weights are read from.
        merge_gaps: merge two ranges of active columns when processing the gap costs less than a launch.
    """

    workloads: ClassVar[frozenset[str]] = frozenset({"snn"})

    kind: Literal["mvp"] = "mvp"
    clock_mhz: Real = Field(gt=0, le=MAX_CLOCK_MHZ)
    weight_bytes: Integer = Field(2, ge=1, le=MAX_BITS // 8)
    call_cycles: Real = Field(ge=0, le=MAX_CYCLES)
    launch_cycles: Real = Field(ge=0, le=MAX_CYCLES)
    col_cycles: Real = Field(0.0, ge=0, le=MAX_CYCLES)
    elem_cycles: MemoryCycles
    merge_gaps: bool = True

    @property
    def serial(self) -> bool:
        return True

    def latency(self, op: Op) -> float | None:
        return None

    def column_cycles(self, n_out: int, mem: str) -> float:
        """``C_P``: cycles to process one input column of an ``n_out``-row matrix held in ``mem``."""
        return self.col_cycles + n_out * self.elem_cycles[mem]
