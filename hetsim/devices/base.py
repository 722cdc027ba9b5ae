"""Fields and behaviour shared by every device kind."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from hetsim.workload.op import Op


class DeviceBase(BaseModel):
    """Common device config. Unknown YAML fields are errors (``extra="forbid"``).

    Attributes:
        name: set from the key under ``devices:`` in the platform YAML.
        active_w: power while executing, W (whole device).
        idle_w: power while powered but idle, W. Energy model: DESIGN.md / seed 002 Eq. 4,
            ``E = active_w * busy + idle_w * (makespan - busy)``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = ""
    description: str = ""
    active_w: float = Field(0.0, ge=0)
    idle_w: float = Field(0.0, ge=0)

    @property
    def capacity(self) -> int:
        """How many ops the device executes at once in the simulator's resource model."""
        return 1

    def latency(self, op: Op) -> float | None:  # pragma: no cover - abstract
        """Execution latency of ``op`` in seconds, or ``None`` when the device cannot run it."""
        raise NotImplementedError
