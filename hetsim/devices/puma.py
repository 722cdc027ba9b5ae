"""PUMA-style RRAM compute-in-memory accelerator (CPU-CIM ILP, Sec. II-A and IV-A2)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, model_validator

from hetsim.devices.base import Capacity, DeviceBase, Peaks, Reprogramming
from hetsim.devices.fields import (
    MAX_BANDWIDTH_GB_S,
    MAX_BITS,
    MAX_CORES,
    MAX_COUNT,
    MAX_ENERGY_PJ,
    MAX_TIME_NS,
    Integer,
    Real,
)
from hetsim.errors import ScheduleError
from hetsim.workload.op import Op

GEMM_OP_TYPES = ("Conv", "Gemm", "MatMul", "QLinearConv", "QGemm", "QLinearMatMul", "ConvInteger", "MatMulInteger")


class PumaDevice(DeviceBase):
    """A PUMA-style CIM accelerator (``kind: puma``): ``cores`` cores of ``crossbars_per_core`` crossbars.

    Weight-stationary: an offloaded op keeps its crossbars for the whole inference, so the total crossbar
    count ``C`` (``crossbars``; default ``cores * crossbars_per_core``) bounds what can be offloaded (CPU-CIM ILP
    Eq. 14). Give ``crossbars`` or ``cores``; the other is derived (``cores = ceil(C / crossbars_per_core)``,
    the last core partly populated). Only op types in
    ``supported_ops`` with a constant weight matrix (a :class:`~hetsim.workload.op.GemmView`) run here.

    Latency, CPU-CIM ILP Eq. 2-3 (per op ``v``)::

        T_acc   = T_load + T_mvm + T_store                                   (Eq. 2)
        T_mvm   = N_mvm * t_mvm                                              (Eq. 2)
        T_load  = b_elem * N_in  / B_cim,  T_store = b_elem * N_out / B_cim  (Eq. 3)

    with ``b_elem = element_bits / 8`` bytes and ``B_cim`` the internal bandwidth. The groups of a grouped
    convolution sit on their own crossbars and run in parallel, so ``T_mvm`` does not depend on ``groups``
    (nor on the crossbar count: crossbars operate in parallel, Sec. IV-A2).
    """

    phase_names: ClassVar[tuple[str, ...]] = ("load", "mvm", "store")
    contention: ClassVar[tuple[str, ...]] = ("cim-bus", "cim-cores")

    kind: Literal["puma"] = "puma"
    crossbar_rows: Integer = Field(256, ge=1, le=MAX_COUNT, description="M: outputs per crossbar (weight-matrix rows)")
    crossbar_cols: Integer = Field(256, ge=1, le=MAX_COUNT,
                                   description="N: inputs per crossbar (weight-matrix columns)")
    crossbars: Integer | None = Field(None, ge=0, le=MAX_COUNT,
                                      description="C: crossbars available (default cores * per core)")
    crossbars_per_core: Integer = Field(ge=1, le=MAX_COUNT)
    cores: Integer | None = Field(None, ge=1, le=MAX_CORES,
                                  description="PUMA cores (default ceil(crossbars / crossbars_per_core))")
    t_mvm_ns: Real = Field(gt=0, le=MAX_TIME_NS, description="latency of one MVM on a crossbar, ns")
    internal_bandwidth_gb_s: Real = Field(gt=0, le=MAX_BANDWIDTH_GB_S,
                                          description="B_cim, internal bus bandwidth, GB/s")
    element_bits: Integer = Field(8, ge=1, le=MAX_BITS, description="b_elem of Eq. 3-4, in bits")
    supported_ops: list[str] = Field(
        default_factory=lambda: list(GEMM_OP_TYPES),
        description="op types with a constant weight matrix this device runs",
    )

    reprogram_crossbars: Integer = Field(
        0, ge=0, le=MAX_COUNT, description="crossbars time-shared by reprogrammed ops (taken from the resident budget)")
    t_write_row_ns: Real = Field(0.0, ge=0, le=MAX_TIME_NS,
                                 description="time to write (program and verify) one crossbar row, ns")
    write_energy_pj_per_cell: Real = Field(0.0, ge=0, le=MAX_ENERGY_PJ, description="energy per cell write, pJ")
    endurance_writes: Real | None = Field(None, gt=0, le=1e18, description="writes a cell survives")
    write_source: str = Field("", description="where the write and endurance figures come from")

    @model_validator(mode="after")
    def _organisation(self) -> PumaDevice:
        """Derive the missing one of ``crossbars`` and ``cores`` (derived values stay 'unset', so an override
        of ``crossbars`` in a sweep re-derives ``cores``)."""
        if self.crossbars is None and self.cores is None:
            raise ValueError("give crossbars (the total C) or cores (each with crossbars_per_core crossbars)")
        if self.crossbars is None:
            object.__setattr__(self, "crossbars", self.cores * self.crossbars_per_core)
        if self.cores is None:
            cores = max(1, -(-self.crossbars // self.crossbars_per_core))
            if cores > MAX_CORES:
                raise ValueError(f"crossbars = {self.crossbars} at {self.crossbars_per_core} per core need {cores} "
                                 f"cores; at most {MAX_CORES}: raise crossbars_per_core")
            object.__setattr__(self, "cores", cores)
        if self.crossbars > self.cores * self.crossbars_per_core:
            raise ValueError(f"crossbars = {self.crossbars} do not fit on {self.cores} cores of "
                             f"{self.crossbars_per_core}")
        if self.reprogram_crossbars > self.crossbars:
            raise ValueError(f"reprogram_crossbars = {self.reprogram_crossbars} exceeds crossbars = {self.crossbars}")
        if self.reprogram_crossbars and self.t_write_row_ns <= 0:
            raise ValueError("reprogram_crossbars needs t_write_row_ns > 0 (the time to write one crossbar row)")
        return self

    @property
    def core_capacities(self) -> list[int]:
        """Crossbars on each core: full cores first, the remainder on the last populated one."""
        per = self.crossbars_per_core
        return [max(0, min(per, self.crossbars - i * per)) for i in range(self.cores)]

    def capacities(self) -> dict[str, Capacity]:
        """``crossbars``: the budget ``C``, resident (weight-stationary; CPU-CIM ILP, Eq. 14), less the
        ``reprogram_crossbars`` set aside for reprogrammed ops."""
        return {"crossbars": Capacity("crossbars", self.crossbars - self.reprogram_crossbars, "crossbars", "resident",
                                      "CPU-CIM ILP, Eq. 14")}

    def demand(self, op: Op, n_channels: int | None = None) -> dict[str, int]:
        """``{"crossbars": N_crossbar}`` of CPU-CIM ILP Eq. 1 (per group for grouped convs)."""
        return {"crossbars": self.n_crossbar(op)}

    @property
    def slots(self) -> list[int]:
        """Crossbars on each core for resident ops (:attr:`core_capacities`, the time-shared
        ``reprogram_crossbars`` taken from the last cores)."""
        caps = self.core_capacities
        left = self.reprogram_crossbars
        for c in reversed(range(len(caps))):
            take = min(left, caps[c])
            caps[c] -= take
            left -= take
        return caps

    def _pool_placement(self) -> tuple[tuple[int, int], ...]:
        """The cores (and crossbars on each) of the time-shared ``reprogram_crossbars``."""
        full, res = self.core_capacities, self.slots
        return tuple((c, f - r) for c, (f, r) in enumerate(zip(full, res, strict=True)) if f > r)

    def set_aside_for_weight_memory(self) -> str | None:
        """The time-shared crossbars (``reprogram_crossbars``), which only reprogrammed ops use."""
        return f"reprogram_crossbars = {self.reprogram_crossbars} crossbars" if self.reprogram_crossbars else None

    def weight_policies(self, op: Op) -> tuple[str, ...]:
        """``resident`` (crossbars kept for the whole run, CPU-CIM ILP Eq. 14) and, with
        ``reprogram_crossbars``, ``reprogrammed`` for an op it runs."""
        return ("resident", "reprogrammed") if self.reprogram_crossbars and self.supports(op) else ("resident",)

    def weight_bytes_of(self, op: Op) -> int:
        """``weight_elements * element_bits / 8`` of a supported op, rounded up; 0 otherwise."""
        return -(-op.weight_elements * self.element_bits // 8) if self.supports(op) else 0

    def reprogramming(self, op: Op) -> Reprogramming | None:
        """Writing ``op``'s weight matrix into the ``reprogram_crossbars`` time-shared crossbars (ours; the
        CPU-CIM ILP keeps weights resident)::

            passes     = ceil(N_crossbar / reprogram_crossbars)      (a layer bigger than the pool: in pieces)
            row_writes = groups * n_v * ceil(m_v / M)                (each word line: one input's weights)
            cells      = groups * m_v * n_v                          (one weight per cell)
            T_write    = row_writes * t_write_row                    (rows written one after another)
            E_write    = cells * write_energy_per_cell
            T_mvm      = passes * N_mvm * t_mvm                      (every pass streams all input vectors)

        A crossbar takes each input on a word line and gives the outputs on its bit lines, so a word line holds
        one input's weights to up to ``M = crossbar_rows`` outputs (hetsim's names follow the CPU-CIM ILP's Eq. 1:
        M outputs by N = ``crossbar_cols`` inputs per crossbar) and is written in one step: the ``n_v`` inputs
        (over ``ceil(n_v / N)`` crossbars) times ``ceil(m_v / M)`` blocks of outputs. ``T_load`` and
        ``T_store`` stay as in CPU-CIM ILP Eq. 3 (inputs buffered, partial sums accumulated in the core between
        passes: ours). ``None`` when the device cannot reprogram or run ``op``.
        """
        if not self.reprogram_crossbars or not self.supports(op):
            return None
        g = op.gemm
        passes = max(1, -(-self.n_crossbar(op) // self.reprogram_crossbars))
        row_writes = g.groups * g.n_v * -(-g.m_v // self.crossbar_rows)
        cells = g.groups * g.m_v * g.n_v
        load, mvm, store = self.phases(op)
        ph = (load, passes * mvm, store)
        return Reprogramming(
            passes=passes, row_writes=row_writes, cells=cells, write_s=row_writes * self.t_write_row_ns * 1e-9,
            write_j=cells * self.write_energy_pj_per_cell * 1e-12, compute_s=ph[0] + ph[1] + ph[2],
            compute_phases=ph, placement=self._pool_placement(), endurance_writes=self.endurance_writes,
            source=self.write_source)

    def place(self, demand: dict[str, int], order: list[str] | None = None) -> dict[str, list[tuple[int, int]]]:
        """First-fit decreasing on the cores (:func:`place_crossbars`)."""
        return place_crossbars(demand, self.cores, self.crossbars_per_core, order=order,
                               capacities=self.slots)

    def contended_phases(
        self, kinds: frozenset[str], op: str, placement: list[tuple[int, int]] | None, need: int | None
    ) -> list[tuple[object, ...]] | None:
        """``cim-bus``: the load and store phases hold the internal bus (one at a time); ``cim-cores``: the MVM
        phase holds every core the op's crossbars are placed on (a core issues one MVM stream at a time),
        taken in core order. Ours, not the CPU-CIM ILP's (it models no contention inside the CIM).

        Raises:
            ScheduleError: ``cim-cores`` is on and the op has no valid placement (distinct cores of this
                device holding its ``need`` crossbars).
        """
        bus = "cim-bus" in kinds
        cores = "cim-cores" in kinds
        if not (bus or cores):
            return None
        held: tuple[object, ...] = ()
        if cores:
            ids = [c for c, _ in placement or []]
            if (not placement or any(not 0 <= c < self.cores for c in ids) or len(set(ids)) != len(ids)
                    or sum(n for _, n in placement) != need):
                raise ScheduleError(
                    f"CIM op {op!r} has no valid crossbar placement (distinct cores of {self.name!r} holding its "
                    f"{need} crossbars); 'cim-cores' contention needs one"
                )
            held = tuple(("core", c) for c in sorted(ids))
        b = ("bus",) if bus else ()
        return [b, held, b]

    @property
    def wire_bits(self) -> int:
        """``b_elem`` of CPU-CIM ILP Eq. 3-4: the CIM's element size is the wire format of its transfers."""
        return self.element_bits

    def peaks(self) -> Peaks:
        """Every crossbar doing one MVM of ``crossbar_rows x crossbar_cols`` MACs per ``t_mvm_ns`` at once
        (crossbars operate in parallel, CPU-CIM ILP Sec. IV-A2): ``crossbars x rows x cols / t_mvm`` MAC/s at
        ``element_bits``; the internal bus at ``internal_bandwidth_gb_s``. No clock: the timing is ``t_mvm``."""
        rate = self.crossbars * self.crossbar_rows * self.crossbar_cols / (self.t_mvm_ns * 1e-9)
        return Peaks({f"{self.element_bits}-bit": rate}, {"internal bus": self.internal_bandwidth_gb_s * 1e9}, None,
                     "crossbars x rows x cols / t_mvm")

    def supports(self, op: Op) -> bool:
        """True when ``op``'s type is supported and it has a constant weight matrix (GEMM view)."""
        return op.op_type in self.supported_ops and op.gemm is not None

    def n_crossbar(self, op: Op) -> int:
        """Crossbars ``op`` occupies, CPU-CIM ILP Eq. 1 (per group for grouped convs); 0 if unsupported."""
        if not self.supports(op):
            return 0
        return op.gemm.n_crossbar(self.crossbar_rows, self.crossbar_cols)

    def phases(self, op: Op) -> tuple[float, float, float] | None:
        """``(T_load, T_mvm, T_store)`` in seconds (CPU-CIM ILP Eq. 2-3), or ``None`` if unsupported."""
        if not self.supports(op):
            return None
        b_elem = self.element_bits / 8
        bw = self.internal_bandwidth_gb_s * 1e9
        return (b_elem * op.n_in / bw, op.gemm.n_mvm * self.t_mvm_ns * 1e-9, b_elem * op.n_out / bw)

    def latency(self, op: Op) -> float | None:
        """``T_acc`` (CPU-CIM ILP Eq. 2) in seconds, or ``None`` if unsupported."""
        p = self.phases(op)
        return None if p is None else p[0] + p[1] + p[2]


def place_crossbars(
    demand: dict[str, int],
    cores: int,
    crossbars_per_core: int,
    order: list[str] | None = None,
    capacities: list[int] | None = None,
) -> dict[str, list[tuple[int, int]]]:
    """Place ops' crossbars on PUMA cores by first-fit decreasing.

    Ops are taken by decreasing crossbar count (ties: their position in ``order``, else name). An op that
    fits in one core goes to the first core with enough free crossbars; an op larger than a core, or one
    that fits no single core's free space, spans several: whole free cores first, then the remainder
    first-fit, then any leftover crossbars in core order.

    Args:
        demand: op name -> crossbars needed (CPU-CIM ILP Eq. 1).
        cores, crossbars_per_core: the accelerator's organisation.
        order: tie-break order of ops (e.g. topological); optional.
        capacities: crossbars on each core (default ``crossbars_per_core`` on every core).

    Returns:
        op name -> list of ``(core index, crossbars on that core)``, summing to the op's demand.

    Raises:
        ValueError: total demand exceeds the crossbars available (CPU-CIM ILP Eq. 14 violated).
    """
    cap = list(capacities) if capacities is not None else [crossbars_per_core] * cores
    total = sum(demand.values())
    if total > sum(cap):
        raise ValueError(f"{total} crossbars requested, {sum(cap)} available")
    rank = {n: i for i, n in enumerate(order or [])}
    free = list(cap)
    out: dict[str, list[tuple[int, int]]] = {}
    for op in sorted(demand, key=lambda n: (-demand[n], rank.get(n, len(rank)), n)):
        need = demand[op]
        if need == 0:
            out[op] = []
            continue
        core = next((c for c in range(cores) if free[c] >= need), None)
        if core is not None and need <= max(cap):
            free[core] -= need
            out[op] = [(core, need)]
            continue
        parts: list[tuple[int, int]] = []
        for c in range(cores):  # whole free cores
            if 0 < cap[c] <= need and free[c] == cap[c]:
                parts.append((c, cap[c]))
                free[c] = 0
                need -= cap[c]
        if need:
            c = next((c for c in range(cores) if free[c] >= need), None)
            if c is not None:
                parts.append((c, need))
                free[c] -= need
                need = 0
        for c in range(cores):  # fragmented leftovers
            if need == 0:
                break
            take = min(free[c], need)
            if take:
                parts.append((c, take))
                free[c] -= take
                need -= take
        out[op] = sorted(parts)
    return out
