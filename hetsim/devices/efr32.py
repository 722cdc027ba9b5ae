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
* range-sparse MVP affine (FP16): ``C0 + C_L * N_L + C_P * N_P`` (the form of SpikeDuet Sec. III-C) with
  ``C_P = C_write + n_out * c_elem[mem]`` (the split of ``C_P`` is hetsim's), ``N_L`` launches and ``N_P``
  columns processed. A launch covers one contiguous range of active columns; with ``merge_gaps`` (hetsim's own
  assumption, not the paper's: ``docs/models.md``) two ranges whose gap is cheaper to process than a launch
  share one launch;
* LIF update on the M33: ``C_call + n * c_neuron`` per layer and timestep; readout ``n_out * c_readout`` per
  timestep (spike-count or membrane accumulation) with ``readout_form: every-timestep`` (hetsim's default); with
  ``readout_form: once`` (SpikeDuet Sec. III-D's firmware form: a non-resetting linear readout "evaluates the
  readout once on accumulated spike counts rather than at every timestep") the last affine layer runs once, at
  the last timestep, on the counts of its input columns (the columns that fired at least once), the output
  layer has no LIF update, and the readout op adds the layer's ``n_in`` input spikes to the counts each
  timestep (``n_in * c_readout``; hetsim's cost of the accumulation, the paper gives none);
* programming the MVP, on the M33: ``N_L * c_prog`` cycles per MVP-mapped layer and timestep (``c_prog`` =
  ``mvp_launch_cycles``; the dense MVP has one launch per timestep).

The formulas are the devices' capabilities: vectorised over samples and timesteps (numpy arrays of activity
counts in, float64 cycles out), so that :class:`hetsim.snn.activity_costs.ActivityCostModel` prices every sample
of an evaluation split at once. Neither device runs ONNX operators: :meth:`latency` returns ``None`` for every
op (an SNN's unrolled ops are priced per sample by the activity cost model, from these methods).
"""

from __future__ import annotations

import math
from typing import ClassVar, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from hetsim.devices.base import DeviceBase, Peaks
from hetsim.devices.fields import MAX_BITS, MAX_CLOCK_MHZ, MAX_CYCLES, MAX_KIB, Flag, Integer, Real
from hetsim.workload.op import Op

#: What an SNN schedule runs an affine layer as (``Schedule.config["layers"][l]["engine"]``, priced by
#: :class:`hetsim.snn.activity_costs.ActivityCostModel`): the Cortex-M's event-driven sparse kernel, one MVP launch
#: over the whole matrix, or one MVP launch per range of active columns. The devices themselves are named by
#: the platform YAML.
ENGINE_M33, ENGINE_MVP_DENSE, ENGINE_MVP_RANGE = "m33", "mvp-dense", "mvp-range"
ENGINES = (ENGINE_M33, ENGINE_MVP_DENSE, ENGINE_MVP_RANGE)
MVP_ENGINES = (ENGINE_MVP_DENSE, ENGINE_MVP_RANGE)
#: Where an affine layer's weight table lives: SRAM, Flash, or Flash with its hottest columns copied to SRAM
#: (Cortex-M only: the MVP reads contiguous FP16 ranges).
RESIDENCIES = ("sram", "flash", "flash+hot")


def options(engines=ENGINES) -> list[tuple[str, str]]:
    """Every valid (engine, residency) pair, in a fixed order (7 for all three engines)."""
    return [(e, r) for e in engines for r in RESIDENCIES if not (e != ENGINE_M33 and r == "flash+hot")]


def max_merged_gap(launch_cycles: float, column_cycles: float, merge: bool = True) -> int:
    """Largest gap (inactive columns between two active ranges) that is cheaper to process than a new launch:
    merge when ``gap * C_P < C_L``. 0 when merging is off. Gap merging is hetsim's assumption (SpikeDuet counts
    ranges of active columns and describes no merging; ``docs/models.md`` argues the default).

    Example: ``C_L = 2510``, ``C_P = 100`` -> gaps of up to 25 columns are merged (25 * 100 = 2500 < 2510).
    """
    if not merge:
        return 0
    if column_cycles <= 0:  # processing a gap costs nothing: every gap merges
        return 10**9
    return max(0, math.ceil(launch_cycles / column_cycles) - 1)


#: the parts a device plays in an SNN's co-execution (:attr:`hetsim.devices.base.DeviceBase.snn_engine`)
SNN_HOST = "host"
SNN_ACCELERATOR = "accelerator"


def synaptic_peaks(hz: float, elem_cycles: float, weight_bytes: int) -> Peaks:
    """Peak of an SNN engine: ``clock / elem_cycles.sram`` weight elements per second (each a synaptic accumulate,
    counted as one MAC; the per-call and per-column terms left out), at ``8 x weight_bytes`` bits; unbounded
    (``inf``) when an element costs no cycle."""
    rate = hz / elem_cycles if elem_cycles > 0 else float("inf")
    return Peaks({f"{8 * weight_bytes}-bit": rate}, {}, hz, "clock / elem_cycles.sram")


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
        mvp_launch_cycles: cycles the core spends programming one MVP launch (range start, length, addresses,
            start), during which it does nothing else; 0 = folded into the MVP's ``launch_cycles`` (docs/models.md).
        readout_form: ``every-timestep`` (hetsim's: the last affine layer and its LIF every timestep, then the
            output accumulated) or ``once`` (SpikeDuet Sec. III-D: input counts accumulated every timestep, the
            last affine layer evaluated once on them; no output LIF).
        sram_reserved_kib: SRAM kept for the stack, neuron state, spike and MVP buffers and the runtime
            (not available to weights).
    """

    can_host: ClassVar[bool] = True
    snn_engine: ClassVar[str | None] = SNN_HOST
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
    mvp_launch_cycles: Real = Field(0.0, ge=0, le=MAX_CYCLES)
    readout_form: Literal["every-timestep", "once"] = "every-timestep"
    sram_reserved_kib: Real = Field(0.0, ge=0, le=MAX_KIB)

    @property
    def serial(self) -> bool:
        return True

    def latency(self, op: Op) -> float | None:
        return None

    @property
    def hz(self) -> float:
        """Clock, Hz."""
        return self.clock_mhz * 1e6

    def peaks(self) -> Peaks:
        """:func:`synaptic_peaks`: one weight element added (a synaptic accumulate, counted as a MAC) per
        ``elem_cycles.sram`` cycles."""
        return synaptic_peaks(self.hz, self.elem_cycles.sram, self.weight_bytes)

    def affine_cycles(self, n_out: int, active, n_sram) -> np.ndarray:
        """Sparse (event-driven) affine: ``C_call + N_act * C_col + n_out * (N_sram * c_sram + (N_act - N_sram) *
        c_flash)`` cycles (SpikeDuet Sec. III-B, III-D), where ``active`` counts the active input columns and
        ``n_sram`` those read from SRAM (all of them for an SRAM table, the active hot ones for ``flash+hot``,
        none for Flash). Arrays of any shape (e.g. ``[samples, T]``), float64."""
        act = np.asarray(active, dtype=np.float64)
        n_sram = np.asarray(n_sram, dtype=np.float64)
        return (self.affine_call_cycles + act * self.col_cycles
                + n_out * (n_sram * self.elem_cycles.sram + (act - n_sram) * self.elem_cycles.flash))

    def program_cycles(self, launches) -> np.ndarray:
        """The core's cycles to program ``launches`` MVP launches: ``N_L * mvp_launch_cycles`` (any shape)."""
        return self.mvp_launch_cycles * np.asarray(launches, dtype=np.float64)

    def lif_cycles(self, n: int) -> float:
        """LIF update of ``n`` neurons for one timestep: ``C_call + n * c_neuron`` cycles."""
        return self.lif_call_cycles + n * self.lif_neuron_cycles

    def readout_cycles(self, n_out: int) -> float:
        """Readout accumulation of ``n_out`` output neurons for one timestep, cycles."""
        return n_out * self.readout_neuron_cycles


class Mvp(DeviceBase):
    """A matrix-vector accelerator (``kind: mvp``, the EFR32MG24 MVP) running FP16 affine layers.

    Attributes:
        clock_mhz: MVP clock, MHz.
        weight_bytes: bytes per stored weight (FP16: 2).
        call_cycles: ``C0``, fixed cycles per affine layer call (program set-up).
        launch_cycles: ``C_L``, cycles per MVP launch (one contiguous column range).
        col_cycles: cycles per processed column besides its weights (the FP16 spike write of its input).
        elem_cycles: cycles per FP16 weight element processed, by the memory the weights are read from.
        merge_gaps: merge two ranges of active columns when processing the gap costs less than a launch
            (hetsim's assumption, not SpikeDuet's; false = one launch per range of active columns).
    """

    snn_engine: ClassVar[str | None] = SNN_ACCELERATOR
    workloads: ClassVar[frozenset[str]] = frozenset({"snn"})

    kind: Literal["mvp"] = "mvp"
    clock_mhz: Real = Field(gt=0, le=MAX_CLOCK_MHZ)
    weight_bytes: Integer = Field(2, ge=1, le=MAX_BITS // 8)
    call_cycles: Real = Field(ge=0, le=MAX_CYCLES)
    launch_cycles: Real = Field(ge=0, le=MAX_CYCLES)
    col_cycles: Real = Field(0.0, ge=0, le=MAX_CYCLES)
    elem_cycles: MemoryCycles
    merge_gaps: Flag = True

    @property
    def serial(self) -> bool:
        return True

    def latency(self, op: Op) -> float | None:
        return None

    def peaks(self) -> Peaks:
        """:func:`synaptic_peaks`: one FP16 weight element processed per ``elem_cycles.sram`` cycles."""
        return synaptic_peaks(self.hz, self.elem_cycles.sram, self.weight_bytes)

    def column_cycles(self, n_out: int, mem: str) -> float:
        """``C_P``: cycles to process one input column of an ``n_out``-row matrix held in ``mem``."""
        return self.col_cycles + n_out * self.elem_cycles[mem]

    @property
    def hz(self) -> float:
        """Clock, Hz."""
        return self.clock_mhz * 1e6

    def max_gap(self, n_out: int, mem: str) -> int:
        """Largest gap of inactive columns merged into one launch for an ``n_out``-row table in ``mem``
        (:func:`max_merged_gap` with ``C_L`` and ``C_P``; 0 when ``merge_gaps`` is off)."""
        return max_merged_gap(self.launch_cycles, self.column_cycles(n_out, mem), self.merge_gaps)

    def dense_cycles(self, n_in: int, n_out: int, mem: str) -> float:
        """Dense affine, one launch over the whole matrix: ``C0 + C_L + n_in * C_P`` cycles."""
        return self.call_cycles + self.launch_cycles + n_in * self.column_cycles(n_out, mem)

    def range_cycles(self, n_out: int, mem: str, launches, processed) -> np.ndarray:
        """Range-sparse affine: ``C0 + C_L * N_L + C_P * N_P`` cycles (SpikeDuet Sec. III-C), for arrays of
        launches ``N_L`` and processed columns ``N_P`` (after gap merging) of any shape, float64."""
        return (self.call_cycles + self.launch_cycles * np.asarray(launches)
                + self.column_cycles(n_out, mem) * np.asarray(processed)).astype(np.float64)
