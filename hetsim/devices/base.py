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

    @property
    def serial(self) -> bool:
        """True when the device is a resource of ``capacity`` units that runs one op per unit at a time, in
        the schedule's per-device order (a CPU's cores, a DIANA accelerator). False when ops own their own
        hardware and overlap freely (a weight-stationary PUMA CIM: each op keeps its crossbars)."""
        return False

    def latency_channels(self, op: Op, n_channels: int) -> float | None:
        """Latency in seconds of the part of ``op`` that computes ``n_channels`` of its output channels (a
        channel split, seed 002 Fig. 1/3), or ``None`` when the device cannot run such a part. Devices that
        do not support channel splits return ``None`` (the default)."""
        return None

    def latency(self, op: Op) -> float | None:  # pragma: no cover - abstract
        """Execution latency of ``op`` in seconds, or ``None`` when the device cannot run it."""
        raise NotImplementedError
