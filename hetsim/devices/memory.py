"""Memories of a platform (``memories:`` in the platform YAML): shared on-chip memories, and memories that hold
weights (an off-chip DRAM, an on-chip SRAM) which accelerators read per inference.

A memory plays up to three parts, each by a field of its own, so that one never implies another:

* ``shared_by`` (ODiMO's shared L1): the devices listed exchange activations through it for free
  (:meth:`hetsim.platform.Platform.shares_memory`); DIANA's L1 and the EFR32MG24's SRAM rely on it. A DRAM that
  every device can reach does **not** list them here, or host <-> accelerator transfers would cost nothing.
* ``weights_for`` (ours): the devices that read weights from it, each over a **port** (path bandwidth and
  latency), for ops whose weight policy is ``streamed`` (read per inference) or ``reprogrammed`` (written into
  a CIM's crossbars per inference) (:mod:`hetsim.weights`).
* ``activations_of`` (ours): the devices whose activations (tensors) live in it, for the activation footprint
  (:meth:`hetsim.platform.Platform.activation_memory`). Nothing moves for free because of it.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from hetsim.devices.fields import MAX_BANDWIDTH_GB_S, MAX_ENERGY_PJ, MAX_KIB, MAX_TIME_NS, Real


class WeightPort(BaseModel):
    """How one device reads weights from a memory (``memories.M.weights_for.DEVICE``).

    Per weight read of ``b`` bytes (ours: a fixed latency plus bytes over the path bandwidth, the same form as a
    link's transfer, CPU-CIM ILP Eq. 4 plus a fixed term)::

        T = b / min(B_memory, B_port) + latency_memory + latency_port
        E = b * (energy_memory + energy_port)        (pJ per byte each)

    Attributes:
        bandwidth_gb_s: the port's (path's) bandwidth, GB/s; ``None``: the memory's own.
        latency_ns: latency the path adds per read, ns.
        energy_pj_per_byte: energy the path adds per byte (an interconnect), pJ.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    description: str = ""
    bandwidth_gb_s: Real | None = Field(None, gt=0, le=MAX_BANDWIDTH_GB_S,
                                        description="path bandwidth, GB/s (default: the memory's)")
    latency_ns: Real = Field(0.0, ge=0, le=MAX_TIME_NS, description="latency the path adds per read, ns")
    energy_pj_per_byte: Real = Field(0.0, ge=0, le=MAX_ENERGY_PJ, description="energy the path adds per byte, pJ")


class Memory(BaseModel):
    """A memory of the platform: shared by devices (DIANA's 256 kB L1, which its two accelerators share, ODiMO
    Sec. II-A; ``platforms/diana.yaml`` lists the host too, assumed), holding weights that devices read
    (``weights_for``), and/or holding some devices' activations (``activations_of``).

    Devices that share a memory (``shared_by``) exchange tensors through it: an edge between two of them moves
    no data over a link and costs nothing (:meth:`hetsim.costs.CostModel.transfer_time`), as ODiMO assumes ("we
    do not count activation transfers, because we assume that they are always stored in the shared L1"). This is
    also what lets a layer's output channels be split between devices with no data-marshalling cost (ODiMO
    Sec. III-A, property ii).

    Capacity: ``size_kib``; the weights of every op streamed or reprogrammed from the memory must fit together
    (the checker's capacity row per memory). Without ``weights_for`` it is recorded, not enforced.

    Raises (validation):
        ValueError: ``weights_for`` is a list or gives a device no port (``{npu}`` in YAML);
            ``shared_by`` lists one device or a device twice; a memory with none of ``shared_by``,
            ``weights_for`` and ``activations_of``; ``weights_for`` without a ``bandwidth_gb_s`` on the memory
            or on every port.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = ""
    description: str = ""
    size_kib: Real = Field(gt=0, le=MAX_KIB, description="capacity, KiB")
    shared_by: list[str] = Field(default_factory=list,
                                 description="devices that exchange activations through this memory for free")
    bandwidth_gb_s: Real | None = Field(None, gt=0, le=MAX_BANDWIDTH_GB_S,
                                        description="peak bandwidth of the memory's port, GB/s")
    latency_ns: Real = Field(0.0, ge=0, le=MAX_TIME_NS, description="access latency per weight read, ns")
    energy_pj_per_byte: Real = Field(0.0, ge=0, le=MAX_ENERGY_PJ, description="access energy per byte read, pJ")
    weights_for: dict[str, WeightPort] = Field(
        default_factory=dict, description="devices that read weights from this memory, each over its port")
    activations_of: list[str] = Field(default_factory=list,
                                      description="devices whose activations live in this memory")

    @field_validator("weights_for", mode="before")
    @classmethod
    def _ports(cls, v):
        # YAML's {npu} (a set) and a list of names are the likely slips: say what the mapping holds
        if isinstance(v, list | tuple | set | frozenset):
            raise ValueError("weights_for maps each device to its port, e.g. {npu: {bandwidth_gb_s: 3.75}} "
                             "({npu: {}}: the memory's own bandwidth), not a list of names")
        if isinstance(v, dict):
            for d, port in v.items():
                if port is None:
                    raise ValueError(f"{d!r} has no port (YAML's {{{d}}} is {{{d}: null}}); write "
                                     f"{d}: {{}} for the memory's own bandwidth and latency, or the port's fields")
        return v

    @field_validator("shared_by", "activations_of")
    @classmethod
    def _distinct(cls, v: list[str], info) -> list[str]:
        if len(set(v)) != len(v):
            raise ValueError(f"{info.field_name} lists a device twice")
        return v

    @model_validator(mode="after")
    def _check(self) -> Memory:
        if len(self.shared_by) == 1:
            raise ValueError("shared_by lists one device; a shared memory joins at least two (or leave it out)")
        if not (self.shared_by or self.weights_for or self.activations_of):
            raise ValueError("a memory needs shared_by (devices exchanging activations through it), weights_for "
                             "(devices reading weights from it) or activations_of")
        for d, port in self.weights_for.items():
            if self.bandwidth_gb_s is None and port.bandwidth_gb_s is None:
                raise ValueError(f"weights_for.{d}: no bandwidth; give the memory's bandwidth_gb_s or the port's")
        return self

    @property
    def size_bytes(self) -> int:
        """Capacity in bytes."""
        return int(self.size_kib * 1024)

    def path_bandwidth_b_s(self, device: str) -> float:
        """Bytes per second ``device`` reads weights at: ``min(memory, port)`` bandwidth.

        Raises:
            KeyError: ``device`` reads no weights from this memory."""
        port = self.weights_for[device]
        bws = [b for b in (self.bandwidth_gb_s, port.bandwidth_gb_s) if b is not None]
        return min(bws) * 1e9

    def read_time_s(self, device: str, nbytes: float) -> float:
        """Seconds for ``device`` to read ``nbytes`` bytes of weights (:class:`WeightPort`)."""
        port = self.weights_for[device]
        return nbytes / self.path_bandwidth_b_s(device) + (self.latency_ns + port.latency_ns) * 1e-9

    def read_energy_j(self, device: str, nbytes: float) -> float:
        """Joules for ``device`` to read ``nbytes`` bytes of weights (:class:`WeightPort`)."""
        return nbytes * (self.energy_pj_per_byte + self.weights_for[device].energy_pj_per_byte) * 1e-12
