"""DIANA's two DNN accelerators: a digital 16x16 PE array and an analog in-memory-computing (AIMC) array.

DIANA (P. Houshmand et al., "DIANA: An End-to-End Hybrid DIgital and ANAlog Neural Network SoC for the Edge",
IEEE JSSC 58(1):203-215, 2023; K. Ueyoshi et al., "DIANA: An End-to-End Energy-Efficient Digital and ANAlog
Hybrid Neural Network SoC", ISSCC 2022, paper 15.6) pairs a RISC-V host with a digital accelerator (16x16 PEs,
8-bit weights, 64 kB weight memory) and an AIMC accelerator (1152x512 cells, ternary weights, 7-bit
activations); both read and write activations in a shared 256 kB L1. ODiMO (M. Risso et al., "Precision-aware
Latency and Energy Balancing on Multi-Accelerator Platforms for DNN Inference", ISLPED 2023, arXiv:2306.05060)
splits a layer's output channels between the two (Fig. 1): each accelerator computes a part of the output
channels from the whole input.

Latency models (the text of the ODiMO paper hetsim was built from lacks its equations; these are the forms of the
authors' public code, eml-eda/odimo ``models/hw_models.py``), in cycles at the clock ``F = clock_mhz`` (260 MHz), with
``ceil(x / N) = floor((x + N - 1) / N)`` and the layer's (or the part's) geometry: ``C_in``, ``C_out``
output channels, ``groups``, kernel ``f_x`` x ``f_y`` and output ``o_x`` x ``o_y``, where, as in the authors'
code (``models/profile_model.py``: ``k_x = kernel_size[0]``, ``out_x = out_shape[-2]``), ``f_x`` and ``o_x`` are
the *height* (the first spatial dim of an NCHW tensor) and ``f_y``, ``o_y`` the width::

    L_dig = ceil((C_out / groups) / 16) * C_in * ceil(o_x / 16) * o_y * f_x * f_y      (compute)
          + o_x * o_y * (C_out + C_in) / 8                                               (activation load/store)

    ox_u  = largest u in {1, 2, 4, 8} with u * C_out <= 512 and (u + f_x - 1) * max(64, C_in) * f_y <= 1152
            (1 when none fits)
    L_ana = 8 * C_in * f_x * f_y                                                         (weight loading)
          + ceil(C_out / 512) * ceil(C_in / 128) * (o_x * o_y / ox_u) * 70 ns * F      (compute)

Both are 0 when ``C_out = 0``. Cycle counts are real numbers (the load/store and compute terms are not
rounded, as in the code); latency = cycles / F. The constants are config fields (defaults = DIANA).

Geometry from an :class:`~hetsim.workload.op.Op` (:func:`layer_geometry`): a convolution's kernel and output
sizes come from its :class:`~hetsim.workload.op.GemmView` (``kernel``, ``out_spatial``, NCHW order: ``(height,
width)``); ``f_x`` = kernel height, ``f_y`` = kernel width, ``o_x`` = output height; ``C_in = groups * n_v /
prod(kernel)``, ``C_out = groups * m_v``; ``o_y = n_mvm / o_x`` (the output width; a batch > 1 multiplies it).
Gemm and MatMul are 1x1 convolutions with ``o_x = 1``, ``o_y = n_mvm`` (1 for a batch-1 FC layer). The models are
not symmetric in x and y (``ceil(o_x / 16)``, ``ox_u``), so a non-square layer's cost depends on this choice.

**One formula, two evaluators.** :func:`digital_cycles_xp` and :func:`aimc_cycles_xp` write each model once,
against an array namespace ``xp`` (:data:`NUMPY_OPS` here; ``hetsim.search`` passes a torch namespace whose
ceiling and gate have straight-through gradients, as the ODiMO code's ``FloorSTE``/``GateSTE``), so the
simulator and the search's cost regulariser, evaluated on fractional (relaxed) channel counts, use the same
expressions. At integer counts both give the same numbers.

A part of ``n`` output channels (a channel split) is the same layer with ``C_out = n``; for a grouped conv with
``m = C_out / groups`` channels per group, the part covers ``ceil(n / m)`` groups and reads their
``ceil(n / m) * C_in / groups`` input channels (a depthwise part of ``n`` channels is an ``n``-channel
depthwise conv). Splitting is not free: every part reads the whole input, and the ceilings round each part up.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, ClassVar, Literal

import numpy as np
from pydantic import Field

from hetsim.devices.base import Capacity, DeviceBase, Peaks
from hetsim.devices.fields import (
    MAX_BITS,
    MAX_CLOCK_MHZ,
    MAX_COUNT,
    MAX_CYCLES,
    MAX_KIB,
    MAX_PER_CYCLE,
    MAX_TIME_NS,
    Integer,
    Real,
)
from hetsim.devices.puma import GEMM_OP_TYPES
from hetsim.workload.op import Op


@dataclass(frozen=True)
class LayerGeometry:
    """What the DIANA models read from a layer: channels, groups, kernel and output sizes (elements)."""

    c_in: int
    c_out: int
    groups: int
    f_x: int
    f_y: int
    o_x: int
    o_y: int

    def part(self, n_channels: int) -> LayerGeometry:
        """The geometry of the part computing ``n_channels`` of the output channels (module docstring).

        Raises:
            ValueError: ``n_channels`` is not in ``[0, c_out]``.
        """
        if not 0 <= n_channels <= self.c_out:
            raise ValueError(f"a part of {n_channels} channels of a layer with {self.c_out} output channels")
        if self.groups == 1:
            return LayerGeometry(self.c_in, n_channels, 1, self.f_x, self.f_y, self.o_x, self.o_y)
        per_group = self.c_out // self.groups
        g = -(-n_channels // per_group)
        return LayerGeometry(g * (self.c_in // self.groups), n_channels, g, self.f_x, self.f_y, self.o_x, self.o_y)


def layer_geometry(op: Op) -> LayerGeometry | None:
    """The :class:`LayerGeometry` of a GEMM-capable op, or ``None`` when it has no GEMM view.

    ``f_x``/``o_x`` are the kernel/output *height* (the ODiMO code's ``kernel_size[0]`` and ``out_shape[-2]``),
    ``f_y``/``o_y`` the width. A 1-D convolution (one spatial dim) has ``f_x = o_x = 1``. Kernels or outputs with
    more than two spatial dims fold the leading ones into ``f_x`` / ``o_x``.
    """
    g = op.gemm
    if g is None:
        return None
    k, out = g.kernel, g.out_spatial
    f_x = math.prod(k[:-1]) if len(k) > 1 else 1
    f_y = k[-1] if k else 1
    o_x = math.prod(out[:-1]) if len(out) > 1 else 1
    o_y = g.n_mvm // o_x if o_x else 0
    return LayerGeometry(c_in=g.c_in, c_out=g.c_out, groups=g.groups, f_x=f_x, f_y=f_y, o_x=o_x, o_y=o_y)


class _NumpyOps:
    """The array namespace of the DIANA formulas for numbers and numpy arrays (module docstring)."""

    @staticmethod
    def ceil_div(x, n):
        """``floor((x + n - 1) / n)``: ``ceil(x / n)`` for non-negative integers (the ODiMO code's ``_floor``)."""
        return np.floor((x + n - 1) / n)

    @staticmethod
    def gate(x):
        """1 where a part exists (``x >= 1`` channels), else 0 (the ODiMO code's ``GateSTE`` forward)."""
        return (np.asarray(x) >= 1) * 1.0

    where = staticmethod(np.where)
    maximum = staticmethod(np.maximum)


NUMPY_OPS = _NumpyOps()
"""The numpy evaluator of :func:`digital_cycles_xp`, :func:`aimc_cycles_xp` and ``power_energy_j``."""


def digital_cycles_xp(xp, c_out, c_in, groups, f_x, f_y, o_x, o_y, *, pe_rows, pe_cols, load_store_bytes_per_cycle):
    """``L_dig`` in cycles (:class:`DianaDigital`), written once for every evaluator ``xp``.

    ``c_out`` may be a relaxed (fractional) channel count or an array of them; the other arguments are numbers.
    0 when ``c_out < 1`` (no part): the compute term vanishes through the ceiling, the load/store term is gated.
    Source: eml-eda/odimo ``models/hw_models.py`` ``_digital_cycles``.
    """
    compute = xp.ceil_div(c_out / groups, pe_rows) * c_in * xp.ceil_div(o_x, pe_cols) * o_y * f_x * f_y
    load_store = o_x * o_y * (c_out + c_in) / load_store_bytes_per_cycle
    return compute + xp.gate(c_out) * load_store


def aimc_cycles_xp(xp, c_out, c_in, f_x, f_y, o_x, o_y, *, array_rows, array_cols, ox_unroll, min_input_channels,
                   input_channels_per_pass, t_mvm_ns, weight_load_cycles_per_row, clock_mhz):
    """``L_ana`` in cycles (:class:`DianaAimc`, groups = 1), written once for every evaluator ``xp``.

    ``c_out`` may be relaxed (fractional) or an array; ``ox_u`` is piecewise constant in it (no gradient flows
    through it). 0 when ``c_out < 1``. Source: eml-eda/odimo ``models/hw_models.py`` ``_analog_cycles`` and
    ``ComputeOxUnrollSTE``.
    """
    ox_u = 1
    rows_in = max(min_input_channels, c_in) * f_y
    for u in sorted(ox_unroll):
        ox_u = xp.where((u * c_out <= array_cols) & ((u + f_x - 1) * rows_in <= array_rows), u, ox_u)
    weights = weight_load_cycles_per_row * c_in * f_x * f_y
    passes = xp.ceil_div(c_out, array_cols) * xp.ceil_div(c_in, input_channels_per_pass)
    activations = passes * (o_x * o_y / ox_u)
    return xp.gate(c_out) * weights + activations * t_mvm_ns * 1e-9 * clock_mhz * 1e6


class _DianaAccelerator(DeviceBase):
    """Fields and behaviour shared by the two DIANA accelerators: a serial resource (one layer or layer part
    at a time, in the schedule's order) running Conv/Gemm/MatMul ops with a constant weight, whole or as a
    channel split's part."""

    splits_channels: ClassVar[bool] = True

    clock_mhz: Real = Field(260.0, gt=0, le=MAX_CLOCK_MHZ, description="F: clock, MHz (ODiMO Sec. IV-C: 260 MHz)")
    supported_ops: list[str] = Field(
        default_factory=lambda: list(GEMM_OP_TYPES),
        description="op types with a constant weight this accelerator runs (as convolutions)",
    )

    @property
    def serial(self) -> bool:
        return True

    def supports(self, op: Op) -> bool:
        """True when ``op``'s type is listed and it has a GEMM view (a constant weight)."""
        return op.op_type in self.supported_ops and op.gemm is not None

    def cycles_geometry(self, geom: LayerGeometry) -> float | None:  # pragma: no cover - abstract
        raise NotImplementedError

    def cycles_channels(self, op: Op, n_channels: int) -> float | None:
        """Cycles of the part of ``op`` computing ``n_channels`` output channels, or ``None`` if unsupported.

        Raises:
            ValueError: ``n_channels`` is outside ``[0, C_out]``.
        """
        if not self.supports(op):
            return None
        return self.cycles_geometry(layer_geometry(op).part(n_channels))

    def cycles(self, op: Op) -> float | None:
        """Cycles of the whole ``op`` (all its output channels), or ``None`` if unsupported."""
        if not self.supports(op):
            return None
        return self.cycles_geometry(layer_geometry(op))

    def latency_channels(self, op: Op, n_channels: int) -> float | None:
        """Seconds for the part of ``op`` computing ``n_channels`` output channels: cycles / F."""
        c = self.cycles_channels(op, n_channels)
        return None if c is None else c / (self.clock_mhz * 1e6)

    def latency(self, op: Op) -> float | None:
        """Seconds for the whole ``op``: cycles / F; ``None`` if unsupported."""
        c = self.cycles(op)
        return None if c is None else c / (self.clock_mhz * 1e6)


class DianaDigital(_DianaAccelerator):
    """DIANA's digital accelerator (``kind: diana-digital``): a 16x16 PE array with 8-bit weights.

    Cycles (eml-eda/odimo ``models/hw_models.py``, ``_digital_cycles``)::

        L_dig = ceil((C_out / groups) / pe_rows) * C_in * ceil(o_x / pe_cols) * o_y * f_x * f_y
              + o_x * o_y * (C_out + C_in) / load_store_bytes_per_cycle

    ``pe_rows`` PEs work on output channels, ``pe_cols`` on output pixels along x. Runs grouped and depthwise
    convolutions (the only DIANA accelerator that does). ``activation_bits`` describes the hardware; the latency
    model does not use it.

    Capacity: ``weight_memory`` (``weight_memory_kib`` KiB, per op): the weights of the layer, or of the part of
    it, that runs must fit the weight memory, ``n_channels * (C_in / groups) * f_x * f_y * weight_bits / 8``
    bytes (ODiMO Sec. II: "a 64 kB weight memory"). The latency model, like ODiMO's, prices no weight tiling,
    so a layer whose weights do not fit is not run here rather than run at an unpriced cost. ``null`` turns
    the check off.
    """

    kind: Literal["diana-digital"] = "diana-digital"
    pe_rows: Integer = Field(16, ge=1, le=MAX_COUNT, description="PEs along output channels (the 16 of ceil(C_out/16))")
    pe_cols: Integer = Field(16, ge=1, le=MAX_COUNT, description="PEs along output pixels o_x (the 16 of ceil(o_x/16))")
    load_store_bytes_per_cycle: Real = Field(
        8.0, gt=0, le=MAX_PER_CYCLE, description="activation bytes loaded/stored per cycle (the /8 of the second term)"
    )
    weight_bits: Integer = Field(8, ge=1, le=MAX_BITS,
                                 description="weight precision, bits (sizes the weights in weight_memory)")
    activation_bits: Integer = Field(8, ge=1, le=MAX_BITS,
                                     description="activation precision, bits (not used by the model)")
    weight_memory_kib: Real | None = Field(
        64.0, gt=0, le=MAX_KIB, description="weight memory, KiB: a layer part's weights must fit (null: not checked)")

    def peaks(self) -> Peaks:
        """``pe_rows x pe_cols`` MACs per cycle at ``weight_bits`` (the compute term of ``L_dig`` with every PE
        busy); the activation load/store port at ``load_store_bytes_per_cycle x clock``."""
        hz = self.clock_mhz * 1e6
        return Peaks({f"{self.weight_bits}-bit": self.pe_rows * self.pe_cols * hz},
                     {"load/store": self.load_store_bytes_per_cycle * hz}, hz, "pe_rows x pe_cols x clock")

    @property
    def weight_precision_bits(self) -> float:
        """``weight_bits`` (8)."""
        return float(self.weight_bits)

    def capacities(self) -> dict[str, Capacity]:
        """``weight_memory`` in bytes, per op (class docstring); none when ``weight_memory_kib`` is null."""
        if self.weight_memory_kib is None:
            return {}
        return {"weight_memory": Capacity("weight_memory", int(self.weight_memory_kib * 1024), "B", "per-op",
                                          "ODiMO Sec. II (DIANA's 64 kB weight memory)")}

    def demand(self, op: Op, n_channels: int | None = None) -> dict[str, int]:
        """Weight bytes of ``op`` or of its part of ``n_channels`` output channels (class docstring)."""
        g = op.gemm
        if g is None:
            return {}
        n = g.c_out if n_channels is None else n_channels
        return {"weight_memory": -(-n * g.n_v * self.weight_bits // 8)}

    def cycles_geometry(self, geom: LayerGeometry) -> float:
        """``L_dig`` in cycles for ``geom`` (class docstring, :func:`digital_cycles_xp`); 0 when ``C_out = 0``."""
        return float(self.cycles_xp(geom))

    def cycles_xp(self, geom: LayerGeometry, c_out=None, xp=NUMPY_OPS):
        """``L_dig`` of ``geom`` with ``c_out`` (default ``geom.c_out``; may be relaxed, or a tensor of the
        namespace ``xp``) output channels, evaluated by ``xp`` (:func:`digital_cycles_xp`)."""
        return digital_cycles_xp(
            xp, geom.c_out if c_out is None else c_out, geom.c_in, geom.groups, geom.f_x, geom.f_y, geom.o_x,
            geom.o_y, pe_rows=self.pe_rows, pe_cols=self.pe_cols,
            load_store_bytes_per_cycle=self.load_store_bytes_per_cycle)


class DianaAimc(_DianaAccelerator):
    """DIANA's analog in-memory-computing accelerator (``kind: diana-aimc``): ``array_rows x array_cols``
    (1152 x 512) ternary cells, 7-bit activations; ``groups = 1`` layers only.

    Cycles (eml-eda/odimo ``models/hw_models.py``, ``_analog_cycles`` and ``ComputeOxUnrollSTE``)::

        ox_u  = largest u in ox_unroll with u * C_out <= array_cols
                and (u + f_x - 1) * max(min_input_channels, C_in) * f_y <= array_rows   (else 1)
        L_ana = weight_load_cycles_per_row * C_in * f_x * f_y
              + ceil(C_out / array_cols) * ceil(C_in / input_channels_per_pass) * (o_x * o_y / ox_u)
                * t_mvm_ns * 1e-9 * F

    The first term loads the layer's weights (``C_in * f_x * f_y`` array rows); the second counts array
    activations, each ``t_mvm_ns`` long, converted to cycles of the clock ``F``. ``ox_u`` output pixels along x
    are computed at once when their input windows fit the array rows and their outputs its columns (the
    "output unrolling" of the DIANA papers).
    """

    kind: Literal["diana-aimc"] = "diana-aimc"
    array_rows: Integer = Field(1152, ge=1, le=MAX_COUNT, description="AIMC array rows (inputs)")
    array_cols: Integer = Field(512, ge=1, le=MAX_COUNT, description="AIMC array columns (output channels)")
    ox_unroll: list[Annotated[Integer, Field(ge=1, le=MAX_COUNT)]] = Field(
        default_factory=lambda: [1, 2, 4, 8], min_length=1, description="output-x unrolling factors the array supports")
    min_input_channels: Integer = Field(64, ge=1, le=MAX_COUNT,
                                        description="input channels are unrolled to at least this many")
    input_channels_per_pass: Integer = Field(128, ge=1, le=MAX_COUNT, description="the 128 of ceil(C_in / 128)")
    t_mvm_ns: Real = Field(70.0, gt=0, le=MAX_TIME_NS, description="duration of one array activation, ns")
    weight_load_cycles_per_row: Real = Field(8.0, ge=0, le=MAX_CYCLES,
                                             description="cycles to load one array row of weights")
    weight_precision: Literal["ternary"] = "ternary"
    activation_bits: Integer = Field(7, ge=1, le=MAX_BITS,
                                     description="D/A and A/D precision, bits (not used by the model)")

    def peaks(self) -> Peaks:
        """At most ``array_rows x array_cols`` ternary MACs per array activation of ``t_mvm_ns`` (every cell used
        once per activation: the compute term of ``L_ana``); no port of its own is modelled."""
        return Peaks({"ternary": self.array_rows * self.array_cols / (self.t_mvm_ns * 1e-9)}, {},
                     self.clock_mhz * 1e6, "array_rows x array_cols / t_mvm")

    @property
    def weight_precision_bits(self) -> float:
        """Ternary weights: ``log2(3)`` bits."""
        return math.log2(3)

    def supports(self, op: Op) -> bool:
        """True for a listed op type with a GEMM view and ``groups = 1`` (no grouped/depthwise convs)."""
        return super().supports(op) and op.gemm.groups == 1

    def ox_unroll_for(self, geom: LayerGeometry) -> int:
        """``ox_u`` of the class docstring for ``geom``."""
        fits = [
            u for u in self.ox_unroll
            if u * geom.c_out <= self.array_cols
            and (u + geom.f_x - 1) * max(self.min_input_channels, geom.c_in) * geom.f_y <= self.array_rows
        ]
        return max(fits, default=1)

    def cycles_geometry(self, geom: LayerGeometry) -> float | None:
        """``L_ana`` in cycles for ``geom`` (class docstring, :func:`aimc_cycles_xp`); 0 when ``C_out = 0``;
        ``None`` for groups > 1."""
        if geom.groups != 1:
            return None
        return float(self.cycles_xp(geom))

    def cycles_xp(self, geom: LayerGeometry, c_out=None, xp=NUMPY_OPS):
        """``L_ana`` of ``geom`` (groups = 1) with ``c_out`` (default ``geom.c_out``; may be relaxed, or a tensor
        of the namespace ``xp``) output channels, evaluated by ``xp`` (:func:`aimc_cycles_xp`)."""
        return aimc_cycles_xp(
            xp, geom.c_out if c_out is None else c_out, geom.c_in, geom.f_x, geom.f_y, geom.o_x, geom.o_y,
            array_rows=self.array_rows, array_cols=self.array_cols, ox_unroll=self.ox_unroll,
            min_input_channels=self.min_input_channels, input_channels_per_pass=self.input_channels_per_pass,
            t_mvm_ns=self.t_mvm_ns, weight_load_cycles_per_row=self.weight_load_cycles_per_row,
            clock_mhz=self.clock_mhz)
