"""The Schedule: what a mapper decides and the simulator replays.

A schedule gives each op a device (or splits its output channels between devices), each device an execution
order, the crossbar placement of CIM ops, and (optionally) the start/finish times and makespan the mapper
itself predicted plus its solver statistics.
It round-trips through JSON (:meth:`Schedule.to_json` / :meth:`Schedule.from_json`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from hetsim.errors import ScheduleError


@dataclass
class Schedule:
    """A mapping of a workload onto a platform.

    Attributes:
        mapper: name of the mapper that made it.
        assignment: op name -> device name. For a split op, one of its parts' devices (by convention the one
            with the most channels), so code that ignores splits still sees a device.
        order: device name -> op names in the order the device starts them (``ordered`` replay); a split op
            appears in the order of every device holding one of its parts.
        placement: CIM op name -> list of ``(core, crossbars)`` (weight-stationary crossbar placement).
        start_s, finish_s: predicted start/finish per op, seconds (empty if the mapper predicts none).
        makespan_s: the mapper's own makespan prediction, seconds (``None`` if none).
        stats: mapper/solver statistics (variables, constraints, solve time, status, MIP gap, ...).
        splits: channel splits (seed 002): op name -> {device name: output-channel indices}. Each part runs on
            its device as its own sub-op with ``C_out`` = its channel count; all parts of an op start together
            once their inputs are there and every part's device is free, and the op finishes with its last part.
            The parts' channel lists partition ``0..C_out-1``. Overrides ``assignment`` for those ops.
        workload, platform: names of the workload and platform it was made for (``None`` if unknown).
    """

    mapper: str
    assignment: dict[str, str]
    order: dict[str, list[str]]
    placement: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    start_s: dict[str, float] = field(default_factory=dict)
    finish_s: dict[str, float] = field(default_factory=dict)
    makespan_s: float | None = None
    stats: dict = field(default_factory=dict)
    splits: dict[str, dict[str, list[int]]] = field(default_factory=dict)
    workload: str | None = None
    platform: str | None = None

    def check_made_for(self, workload: str) -> None:
        """Raise :class:`ScheduleError` when the schedule names another workload than the one it is replayed on
        (a schedule without a name is checked op by op later). Another platform is allowed: replaying a mapping
        on a changed platform is a what-if the simulator is for, and the replay checks device support."""
        if self.workload is not None and self.workload != workload:
            raise ScheduleError(f"this schedule was made for workload {self.workload!r}, not {workload!r}")

    def devices_of(self, op: str) -> list[str]:
        """The devices running ``op``: its split's devices (in the split's order), else its assigned device."""
        return list(self.splits[op]) if op in self.splits else [self.assignment[op]]

    def channel_parts(self, op: str, c_out: int) -> dict[str, int]:
        """Output channels of ``op`` (``c_out`` in all) per device: its split's part sizes, or all on its
        device."""
        if op in self.splits:
            return {d: len(ch) for d, ch in self.splits[op].items()}
        return {self.assignment[op]: c_out}

    def ops_on(self, device: str) -> list[str]:
        """Ops assigned to ``device``, in the schedule's order for it."""
        return list(self.order.get(device, []))

    def to_dict(self) -> dict:
        return {
            "mapper": self.mapper,
            "workload": self.workload,
            "platform": self.platform,
            "assignment": self.assignment,
            "order": self.order,
            "placement": {k: [list(p) for p in v] for k, v in self.placement.items()},
            "start_s": self.start_s,
            "finish_s": self.finish_s,
            "makespan_s": self.makespan_s,
            "stats": self.stats,
            "splits": self.splits,
        }

    @classmethod
    def from_dict(cls, d: dict) -> Schedule:
        """Inverse of :meth:`to_dict`.

        Raises:
            ScheduleError: a required key is missing or has the wrong type.
        """
        try:
            return cls(
                mapper=str(d["mapper"]),
                workload=d.get("workload"),
                platform=d.get("platform"),
                assignment=dict(d["assignment"]),
                order={k: list(v) for k, v in d["order"].items()},
                placement={k: [tuple(p) for p in v] for k, v in d.get("placement", {}).items()},
                start_s={k: float(v) for k, v in d.get("start_s", {}).items()},
                finish_s={k: float(v) for k, v in d.get("finish_s", {}).items()},
                makespan_s=None if d.get("makespan_s") is None else float(d["makespan_s"]),
                stats=dict(d.get("stats", {})),
                splits={k: {dev: [int(c) for c in ch] for dev, ch in v.items()}
                        for k, v in d.get("splits", {}).items()},
            )
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise ScheduleError(f"malformed schedule: {err!r}") from None

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Schedule:
        try:
            return cls.from_dict(json.loads(text))
        except json.JSONDecodeError as err:
            raise ScheduleError(f"schedule is not JSON: {err}") from None

    @classmethod
    def load(cls, path: str | Path) -> Schedule:
        p = Path(path)
        if not p.is_file():
            raise ScheduleError(f"schedule file {str(p)!r} does not exist")
        return cls.from_json(p.read_text())
