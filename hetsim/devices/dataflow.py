"""A dataflow-aware cost of a MAC array: spatial unrolling, on-chip memory traffic, a vector unit's rates.

Used by the ``npu`` kind (:mod:`hetsim.devices.npu`) when its platform entry gives an ``array``; a plug-in kind may
use the same functions. The model, in the loop-nest terms of ZigZag (L. Mei et al., "ZigZag: Enlarging Joint
Architecture-Mapping Design Space Exploration for DNN Accelerators", IEEE Trans. Computers 70(8), 2021) and
Timeloop (A. Parashar et al., "Timeloop: A Systematic Approach to DNN Accelerator Evaluation", ISPASS 2019), with
our own simplifications stated where they are made (``docs/models.md``, "NPU dataflow model"):

* An op is a loop nest over the dimensions of :data:`LOOP_DIMS` (:func:`loop_dims`): a convolution's batch ``B``,
  groups ``G``, output channels per group ``K``, input channels per group ``C``, output rows and columns ``OY``,
  ``OX`` and kernel rows and columns ``FY``, ``FX``; a GEMM ``Y[M, N] = A[M, K] B[K, N]`` is the same nest with
  ``K = N`` (output channels), ``C = K`` (the reduction) and ``OX = M`` (the input rows; ``OY = FY = FX = 1``).
* The array unrolls some dimensions in space (``array: {K: 32, C: 32}``: 32 x 32 MACs, one per output channel
  and input channel); every other dimension, and what is left of an unrolled one, runs in time, so an op takes
  ``prod over d of ceil(D_d / u_d)`` cycles (``u_d = 1`` for a dimension not unrolled) and the array's
  utilisation is ``MACs / (cycles * prod(u))`` (:func:`array_cycles`): the ceil effects of every dataflow model.
* On-chip traffic (:func:`onchip_traffic`, ours): every MAC reads one weight and one input operand from the
  register file (partial sums stay in the array's accumulators); the local SRAM sends the weights once (again for
  every tile of output pixels when one output-channel pass's weights do not fit in the register file), the input
  activations once per output-channel pass (``ceil(K / u_K)`` passes) and takes each output once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, model_validator

from hetsim.devices.fields import MAX_COUNT, MAX_ENERGY_PJ, MAX_KIB, MAX_PER_CYCLE, Real
from hetsim.errors import did_you_mean
from hetsim.workload.op import Op

#: The loop dimensions of an op on a MAC array, with their meaning (ZigZag's names; Timeloop's R/S/P/Q/N are
#: FY/FX/OY/OX/B).
LOOP_DIMS: dict[str, str] = {
    "B": "batch",
    "G": "groups (a grouped or depthwise convolution)",
    "K": "output channels per group (a GEMM's N)",
    "C": "input channels per group (a GEMM's reduction K)",
    "OY": "output rows",
    "OX": "output columns (a GEMM's M, its input rows)",
    "FY": "kernel rows",
    "FX": "kernel columns",
}

#: Op types whose vector-unit work is counted in input elements (they reduce: pooling, reductions); every other
#: vector op's work is its output elements (one result per lane per cycle).
VECTOR_WORK_IN_INPUTS: frozenset[str] = frozenset({
    "MaxPool", "AveragePool", "LpPool", "GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool", "QLinearAveragePool",
    "QLinearGlobalAveragePool", "ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
    "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare", "QLinearReduceMean", "ArgMax", "ArgMin",
})


def check_array(array: dict[str, int]) -> None:
    """Refuse an ``array`` (spatial unrolling: loop dimension -> lanes) with an unknown dimension name or an
    unroll below 1.

    Raises:
        ValueError: one line, e.g. ``"unknown loop dimension 'Ox'; did you mean 'OX'? (dimensions: B, G, K, C,
            OY, OX, FY, FX)"`` or ``"K is unrolled 0 times; an unroll is a whole number >= 1"``.
    """
    if not array:
        raise ValueError("give at least one unrolled dimension, e.g. {K: 32, C: 32}")
    for d, u in array.items():
        if d not in LOOP_DIMS:
            raise ValueError(f"unknown loop dimension {d!r}{did_you_mean(d, LOOP_DIMS)} "
                             f"(dimensions: {', '.join(LOOP_DIMS)})")
        if u < 1:
            raise ValueError(f"{d} is unrolled {u} times; an unroll is a whole number >= 1")


def loop_dims(op: Op) -> dict[str, int] | None:
    """The sizes of :data:`LOOP_DIMS` for ``op``, whose product is ``op.macs``, or ``None`` for an op with no MACs
    (or MACs that do not factor as a matrix product of its output).

    From the GEMM view (CPU-CIM ILP Eq. 1, im2col): a convolution (``out_spatial`` given) has ``G = groups``,
    ``K = m_v``, ``C = n_v / prod(kernel)``, ``OX``/``FX`` the last spatial dim of the output/kernel, ``OY``/``FY``
    the product of the others (1 for a 1-D conv; a 3-D conv's depth folds in here, ours), ``B = n_mvm /
    prod(out_spatial)``; a Gemm/MatMul has ``K = m_v`` (N), ``C = n_v`` (its K), ``OX = n_mvm`` (M). An op with MACs
    but no view (a MatMul of two activations) takes ``K`` = the output's last dim, ``OX`` = the product of the
    others and ``C = macs / (K * OX)``.
    """
    g = op.gemm
    if g is not None and g.out_spatial:
        k = math.prod(g.kernel)
        b = g.n_mvm // max(1, math.prod(g.out_spatial))
        return {"B": b, "G": g.groups, "K": g.m_v, "C": g.n_v // max(1, k), "OY": math.prod(g.out_spatial[:-1]),
                "OX": g.out_spatial[-1], "FY": math.prod(g.kernel[:-1]), "FX": g.kernel[-1] if g.kernel else 1}
    if g is not None:
        return {"B": 1, "G": g.groups, "K": g.m_v, "C": g.n_v, "OY": 1, "OX": g.n_mvm, "FY": 1, "FX": 1}
    if op.macs <= 0 or not op.output_shapes or not op.output_shapes[0]:
        return None
    out = op.output_shapes[0]
    n, m = out[-1], math.prod(out[:-1])
    if n <= 0 or m <= 0 or op.macs % (n * m):
        return None
    return {"B": 1, "G": 1, "K": n, "C": op.macs // (n * m), "OY": 1, "OX": m, "FY": 1, "FX": 1}


def _folded(dims: dict[str, int], groups_on_k: bool) -> dict[str, int]:
    """``dims`` with the groups merged into the output channels (``K * G``, ``G = 1``) when ``groups_on_k``."""
    return {**dims, "K": dims["K"] * dims["G"], "G": 1} if groups_on_k else dims


def array_cycles(dims: dict[str, int], array: dict[str, int], groups_on_k: bool = False) -> int:
    """Cycles of a loop nest on a spatially unrolled array: ``prod over d of ceil(D_d / u_d)`` (ZigZag's and
    Timeloop's temporal iteration count of a perfectly pipelined array; ``u_d = 1`` for a dimension not in
    ``array``). With ``groups_on_k`` (ours) the array's ``K`` lanes also take different groups' output channels
    (``K * G`` output channels, as Ethos-U-class NPUs run depthwise convolutions); otherwise the groups run one
    after another.

    Args:
        dims: loop dimension sizes (:func:`loop_dims`).
        array: unroll per dimension (:func:`check_array`).
        groups_on_k: fold ``G`` into ``K`` first.
    """
    d = _folded(dims, groups_on_k)
    return math.prod(-(-d[n] // array.get(n, 1)) for n in LOOP_DIMS)


def array_utilisation(dims: dict[str, int], array: dict[str, int], groups_on_k: bool = False) -> float:
    """Share of the array's MACs doing useful work: ``prod(dims) / (array_cycles * prod(array))``, in ``(0, 1]``."""
    return math.prod(dims.values()) / (array_cycles(dims, array, groups_on_k) * math.prod(array.values()))


@dataclass(frozen=True)
class OnChipTraffic:
    """Bytes an op moves between the on-chip memories and the MAC array (:func:`onchip_traffic`).

    Attributes:
        register_file_bytes: operand bytes read from the register file (two per MAC at ``bits`` each).
        weight_bytes: weight bytes the local SRAM sends (all reuse passes).
        input_bytes: input activation bytes the local SRAM sends (once per output-channel pass).
        output_bytes: output bytes written to the local SRAM (once each).
        input_passes: how many times the inputs are read, ``ceil(K / u_K)``.
        weight_passes: how many times the weights are read: 1, or the output-pixel tiles when one pass's weights
            do not fit in the register file.
    """

    register_file_bytes: float
    weight_bytes: float
    input_bytes: float
    output_bytes: float
    input_passes: int
    weight_passes: int

    @property
    def sram_bytes(self) -> float:
        """Bytes through the local SRAM's port: weights + inputs + outputs."""
        return self.weight_bytes + self.input_bytes + self.output_bytes


def onchip_traffic(op: Op, dims: dict[str, int], array: dict[str, int], bits: int,
                   register_file_bytes: float | None = None) -> OnChipTraffic:
    """The op's on-chip traffic under our reuse model (module docstring), at ``bits`` per element.

    * register file: ``2 * MACs * bits / 8`` (a weight and an input per MAC; accumulations stay in the array);
    * weights from the SRAM: ``G*K*C*FY*FX`` elements (0 for an op whose operands are both activations), once
      when one output-channel pass's weights (``min(K, u_K) * C * FY * FX`` elements) fit in
      ``register_file_bytes`` (or no capacity is given), else once per output-pixel tile
      (``ceil(B/u_B) * ceil(OY/u_OY) * ceil(OX/u_OX)``);
    * inputs from the SRAM: ``n_in * ceil(K / u_K)`` elements (the input is swept once per pass over the output
      channels of a group; the kernel window's overlap is caught in the register file);
    * outputs to the SRAM: ``n_out`` elements.

    Args:
        op: the op (``n_in``, ``n_out``, ``macs``, whether it has a GEMM view).
        dims: its loop dimensions (:func:`loop_dims`).
        array: the spatial unrolling.
        bits: bits per element of weights and activations.
        register_file_bytes: the register files' capacity in bytes, or ``None`` (unbounded).
    """
    byte = bits / 8
    u = {n: array.get(n, 1) for n in LOOP_DIMS}
    input_passes = -(-dims["K"] // u["K"])
    weights = dims["G"] * dims["K"] * dims["C"] * dims["FY"] * dims["FX"] if op.gemm is not None else 0
    pass_weights = min(dims["K"], u["K"]) * dims["C"] * dims["FY"] * dims["FX"] * byte
    weight_passes = 1
    if register_file_bytes is not None and pass_weights > register_file_bytes:
        weight_passes = math.prod(-(-dims[n] // u[n]) for n in ("B", "OY", "OX"))
    return OnChipTraffic(
        register_file_bytes=2 * op.macs * byte,
        weight_bytes=weights * weight_passes * byte,
        input_bytes=op.n_in * input_passes * byte,
        output_bytes=op.n_out * byte,
        input_passes=input_passes,
        weight_passes=weight_passes,
    )


def vector_work(op: Op) -> int:
    """Elements a vector unit processes for ``op``: its input elements for a reducing op
    (:data:`VECTOR_WORK_IN_INPUTS`), its output elements otherwise."""
    return op.n_in if op.op_type in VECTOR_WORK_IN_INPUTS else op.n_out


class OnChipMemory(BaseModel):
    """An on-chip memory of an accelerator (a register file, a local SRAM): capacity, port width, energy.

    Attributes:
        capacity_kib: capacity in KiB (1024 bytes), or ``None``: not a limit.
        bytes_per_cycle: bytes its port moves per clock cycle, or ``None``: never the bottleneck.
        energy_pj_per_byte: energy per byte read or written, pJ.
        energy_pj_per_access: energy per access of ``access_bytes`` bytes, pJ (instead of ``energy_pj_per_byte``;
            a fraction of an access is charged pro rata).
        access_bytes: bytes per access (the word width), with ``energy_pj_per_access``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    capacity_kib: Real | None = Field(None, gt=0, le=MAX_KIB, description="capacity, KiB")
    bytes_per_cycle: Real | None = Field(None, gt=0, le=MAX_PER_CYCLE, description="port width, bytes per cycle")
    energy_pj_per_byte: Real = Field(0.0, ge=0, le=MAX_ENERGY_PJ, description="energy per byte moved, pJ")
    energy_pj_per_access: Real | None = Field(None, ge=0, le=MAX_ENERGY_PJ, description="energy per access, pJ")
    access_bytes: Real | None = Field(None, gt=0, le=MAX_COUNT, description="bytes per access (word width)")

    @model_validator(mode="after")
    def _one_energy(self) -> OnChipMemory:
        if (self.energy_pj_per_access is None) != (self.access_bytes is None):
            raise ValueError("energy_pj_per_access and access_bytes go together (energy per access of so many bytes)")
        if self.energy_pj_per_access is not None and self.energy_pj_per_byte:
            raise ValueError("give energy_pj_per_byte or energy_pj_per_access, not both")
        return self

    @property
    def pj_per_byte(self) -> float:
        """Energy per byte, pJ: ``energy_pj_per_byte``, or ``energy_pj_per_access / access_bytes``."""
        if self.energy_pj_per_access is not None and self.access_bytes:
            return self.energy_pj_per_access / self.access_bytes
        return self.energy_pj_per_byte

    @property
    def capacity_bytes(self) -> float | None:
        """``capacity_kib * 1024``, or ``None``."""
        return None if self.capacity_kib is None else self.capacity_kib * 1024

    def time_s(self, n_bytes: float, clock_hz: float) -> float:
        """Seconds the port needs for ``n_bytes``: ``n_bytes / (bytes_per_cycle * clock_hz)`` (0 when the port
        width is not given)."""
        return 0.0 if self.bytes_per_cycle is None else n_bytes / (self.bytes_per_cycle * clock_hz)
