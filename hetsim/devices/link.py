"""Interconnect between devices (CPU-CIM ILP, Sec. IV-A3)."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from hetsim.devices.base import power_energy_j
from hetsim.devices.fields import MAX_BANDWIDTH_GB_S, MAX_ENERGY_PJ, MAX_POWER_W, MAX_TIME_NS, Real

#: The ``kind`` the reports give links (device tables, traces), beside the device kinds.
LINK_KIND = "link"


class Link(BaseModel):
    """A bus joining two or more devices (``links:`` in the platform YAML).

    Transfer latency, CPU-CIM ILP, Eq. 4 plus a fixed per-transfer latency::

        T_transfer(u, v) = b_elem * N_out,u / B_shared + latency

    ``b_elem`` is chosen by :meth:`hetsim.costs.CostModel.transfer_bytes`. With ``links`` contention on, the
    link carries one transfer at a time. Energy: ``energy_pj_per_byte`` per byte moved, plus
    ``active_w``/``idle_w`` like a device.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: ClassVar[str] = LINK_KIND
    units: ClassVar[int] = 1
    serial: ClassVar[bool] = False  # transfers on a link overlap unless 'links' contention is on

    name: str = ""
    description: str = ""
    bandwidth_gb_s: Real = Field(gt=0, le=MAX_BANDWIDTH_GB_S, description="B_shared, GB/s (1e9 B/s)")
    latency_ns: Real = Field(0.0, ge=0, le=MAX_TIME_NS, description="fixed latency per transfer, ns")
    connects: list[str] = Field(min_length=2, description="names of the devices this link joins")
    energy_pj_per_byte: Real = Field(0.0, ge=0, le=MAX_ENERGY_PJ)
    active_w: Real = Field(0.0, ge=0, le=MAX_POWER_W)
    idle_w: Real = Field(0.0, ge=0, le=MAX_POWER_W)

    @field_validator("connects")
    @classmethod
    def _distinct(cls, v: list[str]) -> list[str]:
        if len(set(v)) != len(v):
            raise ValueError("connects lists a device twice")
        return v

    @property
    def energy_modelled(self) -> bool:
        """True when the link has an energy figure (``active_w``, ``idle_w`` or ``energy_pj_per_byte`` above 0);
        False: its energy is reported as not modelled, not as 0 J."""
        return self.active_w > 0 or self.idle_w > 0 or self.energy_pj_per_byte > 0

    def energy_j(self, busy_s, span_s):
        """``(active, idle)`` energy in joules (:func:`~hetsim.devices.base.power_energy_j`)."""
        return power_energy_j(self.active_w, self.idle_w, self.units, busy_s, span_s)

    def transfer_time(self, nbytes: float) -> float:
        """Seconds to move ``nbytes`` bytes (CPU-CIM ILP, Eq. 4 + fixed latency)."""
        return nbytes / (self.bandwidth_gb_s * 1e9) + self.latency_ns * 1e-9
