"""Memories shared between devices (``memories:`` in the platform YAML)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from hetsim.devices.fields import MAX_KIB, Real


class Memory(BaseModel):
    """A memory that several devices read and write directly, e.g. DIANA's 256 kB L1 shared by the RISC-V host
    and both accelerators (ODiMO Sec. II-A).

    Devices that share a memory exchange tensors through it: an edge between two of them moves no data over a
    link and costs nothing (:meth:`hetsim.costs.CostModel.transfer_time`), as ODiMO assumes ("we do not
    count activation transfers, because we assume that they are always stored in the shared L1"). This is
    also what lets a layer's output channels be split between devices with no data-marshalling cost (ODiMO
    Sec. III-A, property ii). ``size_kib`` is recorded; hetsim does not model tiling against it.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = ""
    description: str = ""
    size_kib: Real = Field(gt=0, le=MAX_KIB, description="capacity, KiB (recorded, not enforced)")
    shared_by: list[str] = Field(min_length=2, description="names of the devices that share this memory")

    @field_validator("shared_by")
    @classmethod
    def _distinct(cls, v: list[str]) -> list[str]:
        if len(set(v)) != len(v):
            raise ValueError("shared_by lists a device twice")
        return v
