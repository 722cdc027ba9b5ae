"""The device capability protocol: every question hetsim asks of a device kind, with the defaults a kind
inherits.

A device kind is one module under ``hetsim/devices/``: a Pydantic config class derived from :class:`DeviceBase`
(its ``kind`` field a ``Literal`` naming the kind) that answers, for an :class:`~hetsim.workload.op.Op`:

* which ops it runs and how long one takes (:meth:`DeviceBase.latency`), in which phases
  (:meth:`DeviceBase.phases`), and how long a part computing some of its output channels takes
  (:meth:`DeviceBase.latency_channels`, for kinds that run channel splits);
* how many ops it runs at once (:attr:`DeviceBase.units`) and whether they run one per unit in the schedule's
  order (:attr:`DeviceBase.serial`);
* which **capacities** it offers (:meth:`DeviceBase.capacities`: crossbars, weight memory in bytes, SRAM ...)
  and how much of each an op, or a part of one, needs (:meth:`DeviceBase.demand`);
* its power (``active_w``, ``idle_w``) and any energy per op (:meth:`DeviceBase.op_energy_j`);
* which consumers it fuses into a producer's launch, and at what extra time (:meth:`DeviceBase.fused_epilogue_s`).

Mappers, the cost model, the checker, the simulator and the reports ask these questions and never test a kind
by name. Registering the class (:func:`hetsim.devices.register_kind`) adds the kind to the platform YAML.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from hetsim.devices.fields import MAX_POWER_W, Real
from hetsim.workload.op import Op

Scope = Literal["resident", "per-op"]


def power_energy_j(active_w: float, idle_w: float, units: int, busy_s, span_s, xp=np):
    """``(active, idle)`` energy in joules of a device busy ``busy_s`` unit-seconds over ``span_s`` seconds:
    ``active_w * busy`` and ``idle_w * (units * span - busy)`` (clamped at 0 against rounding). ODiMO Eq. 4,
    generalised from its two accelerators to every device and link; the one energy formula of hetsim (the
    report, ODiMO's per-layer cost, the SNN engines and the search's energy regulariser all use it). Works on
    floats and numpy arrays; ``xp`` is any namespace with a ``maximum`` (``hetsim.search`` passes a torch one)."""
    return active_w * busy_s, idle_w * xp.maximum(units * span_s - busy_s, 0.0)


#: Weight policies an op on an accelerator may run under (:mod:`hetsim.weights`): ``resident`` (the weights stay on
#: the device for the whole run and count against its resident capacity: CPU-CIM ILP Eq. 14), ``streamed`` (read
#: from a memory for each inference) and ``reprogrammed`` (written into a CIM's time-shared crossbars for each
#: inference).
WEIGHT_POLICIES = ("resident", "streamed", "reprogrammed")


@dataclass(frozen=True)
class Reprogramming:
    """What running an op with its weights written into a CIM's time-shared crossbars costs, per inference
    (:meth:`DeviceBase.reprogramming`).

    Attributes:
        passes: how many times the op's weights are written, a share of at most the crossbars the device
            time-shares each time (``ceil(N_crossbar / pool)``).
        row_writes: crossbar rows written per inference.
        cells: cells written per inference (one weight per cell).
        write_s: seconds spent writing (the rows one after another).
        write_j: joules the writes cost.
        compute_s: the op's latency with its passes (the MVMs of every pass), replacing its resident latency.
        compute_phases: its phases with its passes (the device's :attr:`DeviceBase.phase_names` order), or
            ``None``.
        placement: the slots the time-shared crossbars sit on (``[(slot, crossbars), ...]``).
        endurance_writes: writes a cell survives (``None``: not stated).
        source: where the write and endurance figures come from.
    """

    passes: int
    row_writes: int
    cells: int
    write_s: float
    write_j: float
    compute_s: float
    compute_phases: tuple[float, ...] | None
    placement: tuple[tuple[int, int], ...]
    endurance_writes: float | None
    source: str = ""


@dataclass(frozen=True)
class Capacity:
    """A finite resource of a device that ops occupy.

    Attributes:
        name: what it is (``crossbars``, ``weight_memory``); an op's :meth:`DeviceBase.demand` uses the same key.
        amount: how much the device has, in ``unit`` (an integer: crossbars, bytes).
        unit: ``"crossbars"``, ``"B"`` ...
        scope: ``"resident"``: ops keep what they need for the whole inference (weight-stationary), so the sum
            over every op (and part of an op) placed on the device must fit (the crossbar budget of the CPU-CIM
            ILP, Eq. 14); ``"per-op"``: what one op or part needs must fit while it runs (a layer's weights
            in a weight buffer the layers take turns in).
        source: where the constraint comes from (a paper and equation, or a data sheet).
    """

    name: str
    amount: int
    unit: str
    scope: Scope
    source: str = ""


@dataclass(frozen=True)
class Peaks:
    """A device's peak rates, derived from its configuration (``hetsim check``): the most its cost model lets it do
    per second, not a measurement.

    Attributes:
        macs_per_s: precision (``"8-bit"``, ``"ternary"`` ...) -> MAC/s of the whole device (every unit).
        ports_b_s: port or memory path -> bytes/s (``"memory"``, ``"activation port"`` ...).
        clock_hz: the clock, Hz, or ``None`` when the kind's timing has no clock (a PUMA crossbar's ``t_mvm``).
        basis: how ``macs_per_s`` follows from the fields, in words (``"cores x clock x macs_per_cycle"``).

    TOPS (:meth:`tops`) count two operations per MAC (a multiply and an add), the convention of accelerator
    data sheets.
    """

    macs_per_s: dict[str, float]
    ports_b_s: dict[str, float]
    clock_hz: float | None
    basis: str = ""

    def tops(self, precision: str) -> float:
        """Tera-operations per second at ``precision``: ``2 * macs_per_s / 1e12`` (two operations per MAC)."""
        return 2.0 * self.macs_per_s[precision] / 1e12


def _clock_hz(dev: BaseModel) -> float | None:
    """The clock of a device config in Hz from a field carrying its unit (``clock_hz``, ``clock_mhz``,
    ``clock_ghz``), or ``None``."""
    for name, scale in (("clock_hz", 1.0), ("clock_mhz", 1e6), ("clock_ghz", 1e9)):
        v = getattr(dev, name, None)
        if isinstance(v, int | float) and not isinstance(v, bool):
            return float(v) * scale
    return None


def _energy_fields(model: BaseModel) -> bool:
    """True when a field of ``model`` (or of a config nested in it) named ``energy_...`` or ``..._energy_...``
    holds a positive number: an energy per MAC, byte, element or cell write."""
    for name in type(model).model_fields:
        v = getattr(model, name, None)
        if isinstance(v, BaseModel) and _energy_fields(v):
            return True
        if ("energy_" in name and isinstance(v, int | float) and not isinstance(v, bool) and v > 0):
            return True
    return False


class SleepConfig(BaseModel):
    """A device's sleep state (ours; the scenario replay, :mod:`hetsim.sim.sleep`): after ``idle_timeout_s`` of
    idleness (every unit) the device sleeps at ``power_w`` (the whole device) instead of ``idle_w`` per unit; the
    next op waits ``wake_latency_s`` for it to wake, drawing ``active_w`` meanwhile."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    power_w: Real = Field(ge=0, le=MAX_POWER_W)
    wake_latency_s: Real = Field(ge=0, le=1e6)
    idle_timeout_s: Real = Field(ge=0, le=1e9)


class DeviceBase(BaseModel):
    """Common device config and the capability protocol's defaults. Unknown YAML fields are errors.

    Attributes:
        name: set from the key under ``devices:`` in the platform YAML.
        active_w: power while executing, W (per unit: a CPU core).
        idle_w: power while powered but idle, W (per unit). Energy (ODiMO, Eq. 4, generalised):
            ``E = active_w * busy + idle_w * (units * makespan - busy) + sum of op_energy_j``.
        sleep: optional :class:`SleepConfig` (power, wake-up latency, idle timeout) of a serial device, used by
            the scenario replay; none by default (the device idles at ``idle_w``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: The device can be the platform's host: it runs the ops no accelerator runs (a CPU).
    can_host: ClassVar[bool] = False
    #: Workload kinds the device runs (:mod:`hetsim.workload.kinds`): ``"dag"`` (tensor-operator DAGs) or
    #: ``"snn"`` (spiking networks); the older spelling ``"onnx"`` is read as ``"dag"``.
    workloads: ClassVar[frozenset[str]] = frozenset({"dag"})
    #: The device's part in a spiking network's CPU-accelerator co-execution (SpikeDuet), or ``None``: ``"host"``
    #: (a core that runs sparse affine layers, the LIF updates and the readout, and programs the accelerator: it
    #: answers the ``cortex-m`` kind's SNN cost questions, :class:`hetsim.devices.efr32.CortexM`) or
    #: ``"accelerator"`` (an engine that runs affine layers dense or on input ranges, as the ``mvp`` kind does).
    #: :mod:`hetsim.snn.activity_costs` and :mod:`hetsim.snn.reorder` find the engines by this, never by class.
    snn_engine: ClassVar[str | None] = None
    #: Contention kinds (``hetsim.sim.CONTENTION_KINDS``) the device's own resources model; the resources
    #: themselves are named by :meth:`contended_phases`.
    contention: ClassVar[tuple[str, ...]] = ()

    name: str = ""
    description: str = ""
    active_w: Real = Field(0.0, ge=0, le=MAX_POWER_W)
    idle_w: Real = Field(0.0, ge=0, le=MAX_POWER_W)
    #: optional sleep state of a serial device (:class:`SleepConfig`; scenario replays only)
    sleep: SleepConfig | None = None

    @model_validator(mode="after")
    def _sleep_serial(self):
        if self.sleep is not None and not self.serial:
            raise ValueError("sleep: only a serial device (a CPU, an NPU) has a sleep state here; this kind's ops "
                             "own their hardware and overlap")
        return self

    # -------------------------------------------------------------------------------------------- ops, latency

    def latency(self, op: Op) -> float | None:  # pragma: no cover - abstract
        """Execution latency of ``op`` in seconds, or ``None`` when the device cannot run it."""
        raise NotImplementedError

    def phases(self, op: Op) -> tuple[float, ...] | None:
        """The durations (seconds) of the op's phases, in the order of :attr:`phase_names`, summing to
        :meth:`latency`; ``None`` when the device runs ops in one piece (the default) or cannot run ``op``."""
        return None

    #: Names of the phases :meth:`phases` returns (e.g. ``("load", "mvm", "store")``).
    phase_names: ClassVar[tuple[str, ...]] = ()

    def contended_phases(
        self, kinds: frozenset[str], op: str, placement: list[tuple[int, int]] | None, need: int | None
    ) -> list[tuple[object, ...]] | None:
        """The device's own shared resources each phase of ``op`` holds while it runs, under the contention
        ``kinds`` switched on: one tuple per phase (in :attr:`phase_names` order) of resource keys (any
        hashable: the replay makes one single-unit SimPy resource per device and key, and takes a phase's keys
        in the order given, a fixed lock order), or ``None`` when no kind of :attr:`contention` is on (the op
        then overlaps freely). Only called for ops with :meth:`phases`. The default: ``None``.

        Args:
            kinds: the contention kinds of the replay (a subset of ``hetsim.sim.CONTENTION_KINDS``).
            op: the op's name (for error messages).
            placement: the op's placement on :attr:`slots` (``[(slot, amount), ...]``) or ``None``.
            need: the op's resident demand on this device (``CostModel.need``), or ``None``.

        Raises:
            ScheduleError: a kind needs something the schedule lacks (a PUMA core placement).
        """
        return None

    #: The kind runs parts of an op that compute some of its output channels (a channel split, ODiMO).
    splits_channels: ClassVar[bool] = False

    def latency_channels(self, op: Op, n_channels: int) -> float | None:
        """Latency in seconds of the part of ``op`` that computes ``n_channels`` of its output channels (a
        channel split, ODiMO Fig. 1), or ``None`` when the device cannot run such a part (the default).

        Raises:
            ValueError: ``n_channels`` is outside ``[0, C_out]``.
        """
        return None

    # --------------------------------------------------------------------------------------------- units

    @property
    def units(self) -> int:
        """How many ops the device runs at once (a CPU's cores; 1 otherwise). Power fields are per unit."""
        return 1

    @property
    def serial(self) -> bool:
        """True when the device is a resource of :attr:`units` units that runs one op per unit at a time, in
        the schedule's per-device order (a CPU's cores, a DIANA accelerator). False when ops own their own
        hardware and overlap freely (a weight-stationary PUMA CIM: each op keeps its crossbars)."""
        return False

    # ------------------------------------------------------------------------------------------ capacities

    def capacities(self) -> dict[str, Capacity]:
        """The device's capacities by name (none by default)."""
        return {}

    def demand(self, op: Op, n_channels: int | None = None) -> dict[str, int]:
        """How much of each capacity ``op`` needs on this device (the part computing ``n_channels`` output
        channels, when given). Keys are names of :meth:`capacities`; a missing key needs nothing."""
        return {}

    @property
    def slots(self) -> list[int] | None:
        """Sizes of the units a resident capacity is laid out on (a PUMA's cores, in crossbars), when the
        device places ops' capacity on them (:meth:`place`); ``None`` otherwise."""
        return None

    def place(self, demand: dict[str, int], order: list[str] | None = None) -> dict[str, list[tuple[int, int]]]:
        """Lay ops' resident demand out on :attr:`slots`: op -> ``[(slot, amount), ...]``. The default places
        nothing (``{}``).

        Raises:
            ValueError: the demand does not fit.
        """
        return {}

    @property
    def weight_precision_bits(self) -> float | None:
        """Information per stored weight in bits (8 for int8, log2(3) for ternary), for mappers that trade
        precision for speed (ODiMO); ``None`` when the kind does not say."""
        return None

    # ----------------------------------------------------------------------------------------- transfers

    @property
    def wire_bits(self) -> int | None:
        """Bits per element of the tensors the device sends and receives (``None``: the tensor's own type)."""
        return None

    # ------------------------------------------------------------------------------------- weight policies

    def weight_policies(self, op: Op) -> tuple[str, ...]:
        """The weight policies (:data:`WEIGHT_POLICIES`) the device offers for ``op``: ``("resident",)`` by
        default (a host reads weights as part of its own op). ``streamed`` and ``reprogrammed`` also need a
        memory the device reads weights from (``weights_for`` in the platform's ``memories``)."""
        return ("resident",)

    @classmethod
    def reads_weight_memory(cls) -> bool:
        """True when the kind can read weights from a memory (``weights_for``): it offers a weight policy
        beyond ``resident`` for some op (its class overrides :meth:`weight_policies`). A platform that lists a
        device of another kind in a memory's ``weights_for`` is refused: the entry would change nothing."""
        return cls.weight_policies is not DeviceBase.weight_policies

    def weight_bytes_of(self, op: Op) -> int:
        """Bytes of ``op``'s weights in the device's format (what a streamed or reprogrammed op reads from a
        memory per inference); 0 by default."""
        return 0

    @property
    def double_buffers_weights(self) -> bool:
        """True when the device fetches a streamed op's weights while it computes (the op lasts
        ``max(compute, fetch)``); False: it fetches them first (``fetch + compute``)."""
        return False

    def reprogramming(self, op: Op) -> Reprogramming | None:
        """The cost of running ``op`` with its weights written into time-shared crossbars for each inference
        (:class:`Reprogramming`), or ``None`` when the device cannot (the default)."""
        return None

    def set_aside_for_weight_memory(self) -> str | None:
        """What the device's configuration sets aside for weights read from a memory (``weights_for``), in a
        phrase naming the field (``"reprogram_crossbars = 20 crossbars"``), or ``None`` when it sets nothing
        aside (the default). A platform where no memory serves the device's weights warns that it stays idle."""
        return None

    # ------------------------------------------------------------------------------------ fused operator groups

    def fused_epilogue_s(self, producer: Op, consumer: Op) -> float | None:
        """Seconds ``consumer`` adds when it runs fused into ``producer``'s launch on this device (an activation,
        a bias or residual add, a requantisation applied to the producer's output as it is written: the
        epilogue's extra cycles), or ``None`` when the device does not fuse ``consumer`` into ``producer`` (the
        default: it fuses nothing). The fused consumer then has no launch, no op overhead and no transfer of its
        own; the cost model offers the option only on a serial device of one unit that runs both ops
        (:attr:`hetsim.costs.CostModel.fusion`, ``docs/models.md`` "Fused operator groups")."""
        return None

    # -------------------------------------------------------------------------------------------- energy

    def energy_j(self, busy_s, span_s, xp=np):
        """``(active, idle)`` energy in joules over ``span_s`` seconds with ``busy_s`` unit-seconds busy
        (:func:`power_energy_j` with this device's power and units, evaluated by ``xp``)."""
        return power_energy_j(self.active_w, self.idle_w, self.units, busy_s, span_s, xp)

    def op_energy_j(self, op: Op, n_channels: int | None = None) -> float:
        """Energy in joules an op (or a part of ``n_channels`` channels) costs beyond the device's power
        (e.g. per MAC); 0 by default."""
        return 0.0

    @property
    def energy_modelled(self) -> bool:
        """True when the device has an energy figure: ``active_w`` or ``idle_w`` above 0, or a positive energy
        field (``energy_pj_per_mac``, a memory's ``energy_pj_per_byte`` ...). False: its energy is reported as
        not modelled, not as 0 J (DIANA's host: ODiMO's energy model counts the accelerators only)."""
        return self.active_w > 0 or self.idle_w > 0 or _energy_fields(self)

    def peaks(self) -> Peaks:
        """The device's peak rates (:class:`Peaks`). The default reads the generic fields: the clock from
        ``clock_hz`` / ``clock_mhz`` / ``clock_ghz``, ``units x clock x macs_per_cycle[bits]`` per bit width when
        the kind has ``macs_per_cycle``, and every ``..._gb_s`` field as a port; a kind overrides it where its
        model says more."""
        clock = _clock_hz(self)
        table = getattr(self, "macs_per_cycle", None)
        macs = ({f"{b}-bit": self.units * clock * r for b, r in sorted(table.items())}
                if isinstance(table, dict) and clock else {})
        ports = {name.removesuffix("_gb_s").replace("_", " "): float(v) * 1e9
                 for name in type(self).model_fields if name.endswith("_gb_s")
                 for v in [getattr(self, name)] if isinstance(v, int | float) and not isinstance(v, bool)}
        return Peaks(macs, ports, clock, "units x clock x macs_per_cycle" if macs else "")

    # ------------------------------------------------------------------------------ workload-specific data

    def for_workload(self, workload: str) -> DeviceBase:
        """This device specialised for ``workload`` (e.g. a CPU picks the workload's measured profile)."""
        return self

    def uses_fallback(self, op: Op) -> bool:
        """True when the latency of ``op`` is an estimate standing in for a missing measurement."""
        return False
