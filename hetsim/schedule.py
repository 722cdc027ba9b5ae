"""The Schedule: what a mapper decides and the simulator replays.

A schedule runs every op as one or more **parts**, each on a device; the parts of a channel-split op (ODiMO)
each compute a contiguous range of its output channels. It also gives each serial device an execution order, the
placement of ops' resident capacity on a device's slots (a PUMA's crossbars on its cores), and (optionally) the
start/finish times and makespan the mapper itself predicted plus its solver statistics. It round-trips through
JSON (:meth:`Schedule.to_json` / :meth:`Schedule.from_json`); :func:`hetsim.check.check_schedule` says whether it
fits a platform.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from hetsim.errors import ScheduleError
from hetsim.input_files import MAX_JSON_BYTES, read_input_text
from hetsim.strict_json import finite, loads_strict

#: what a mapping is made for (``objective=`` of the mappers with a throughput method,
#: :mod:`hetsim.mappers._throughput`; a scenario's ``objective``): one inference's makespan, or the busiest
#: resource's load per request. Here, low in the layers, so that the command line and the scenario files read the
#: one list without importing the mappers.
OBJECTIVES = ("latency", "throughput")


@dataclass(frozen=True, slots=True)
class Part:
    """One part of an op: the device running it and, for a channel split, the output channels it computes.

    Attributes:
        device: device name.
        channels: ``(start, stop)``, the half-open range of output channels the part computes; ``None`` for an
            op that runs whole on one device.
    """

    device: str
    channels: tuple[int, int] | None = None

    @property
    def n_channels(self) -> int | None:
        """Output channels of the part (``None`` for a whole op)."""
        return None if self.channels is None else self.channels[1] - self.channels[0]

    def to_dict(self) -> dict:
        return {"device": self.device} if self.channels is None else {"device": self.device,
                                                                      "channels": list(self.channels)}


@dataclass(frozen=True)
class WeightPolicy:
    """How an op's weights reach its accelerator, when they are not resident (:mod:`hetsim.weights`).

    Attributes:
        policy: ``streamed`` (read from ``memory`` for each inference) or ``reprogrammed`` (written into a CIM's
            time-shared crossbars for each inference, read from ``memory``).
        memory: the memory the weights are read from; ``None``: the first memory the device reads weights from.
    """

    policy: str
    memory: str | None = None

    def to_dict(self) -> dict:
        return {"policy": self.policy} if self.memory is None else {"policy": self.policy, "memory": self.memory}


def whole(device: str) -> list[Part]:
    """The parts of an op that runs whole on ``device``."""
    return [Part(device)]


def split_parts(counts: dict[str, int]) -> list[Part]:
    """Contiguous channel ranges from per-device channel counts, in the dict's order (zero counts dropped): the
    function-preserving reordering of ODiMO Fig. 3 makes each device's channels one block."""
    out, lo = [], 0
    for d, n in counts.items():
        if n:
            out.append(Part(d, (lo, lo + n)))
            lo += n
    return out


@dataclass(init=False)
class Schedule:
    """A mapping of a workload onto a platform.

    Attributes:
        mapper: name of the mapper that made it.
        parts: op name -> its :class:`Part` list: one whole part, or several channel ranges (a channel split,
            ODiMO: the parts start together once the op's inputs are there and every part's device is free, each
            device is busy for its own part, and the op finishes with its last part).
        order: device name -> op names in the order the device starts them (serial devices); a split op appears
            in the order of every device holding one of its parts.
        placement: op name -> list of ``(slot, amount)``: where its resident capacity sits on the device's slots
            (a PUMA's cores and crossbars).
        start_s, finish_s: predicted start/finish per op, seconds (empty if the mapper predicts none).
        makespan_s: the mapper's own makespan prediction, seconds (``None`` if none).
        stats: mapper/solver statistics (variables, constraints, solve time, status, MIP gap, ...).
        workload, platform: names of the workload and platform it was made for (``None`` if unknown); a replay
            refuses another (:func:`hetsim.check.require_made_for`).
        after: op name -> ops that must have *finished* before it starts, beyond its data dependencies (control
            dependencies: SpikeDuet's blocking execution, where the host waits for every MVP launch, is the
            program order as such a chain). Empty for most schedules.
        policies: op name -> :class:`WeightPolicy` for the ops whose weights are not resident (streamed from a
            memory or reprogrammed into a CIM per inference); an op absent is ``resident`` (the weights stay on
            its device for the whole run, CPU-CIM ILP Eq. 14). Empty for schedules made without weight options,
            and for schedule files written before policies existed.
        config: decisions of the mapper that the cost model reads besides the parts (an SNN's per affine layer
            kernel and weight residency, ``{"layers": [{"engine", "residency", "hot_columns"}], "mode"}``:
            :class:`hetsim.snn.activity_costs.ActivityCostModel`). Empty for ONNX schedules.
        fused: consumer op -> the producer it runs fused into (a fused operator group: the consumer runs in the
            producer's launch on the producer's device, right after it, for its epilogue's time, with no transfer
            between them; :attr:`hetsim.costs.CostModel.fusion`, :func:`hetsim.check.fusion_violations`). Empty
            for schedules made without fusion, and for schedule files written before fusion existed.

    ``parts`` may map an op to a device name, shorthand for one whole part; ``splits`` (op -> {device: output
    channel indices}, each device's one contiguous block) makes those ops' parts.

    Raises:
        ScheduleError: a split gives a device channels that are not one contiguous block.
    """

    mapper: str
    parts: dict[str, list[Part]]
    order: dict[str, list[str]]
    placement: dict[str, list[tuple[int, int]]]
    start_s: dict[str, float]
    finish_s: dict[str, float]
    makespan_s: float | None
    stats: dict
    workload: str | None
    platform: str | None
    after: dict[str, list[str]]
    config: dict
    policies: dict[str, WeightPolicy]
    fused: dict[str, str]

    def __init__(
        self,
        mapper: str,
        parts: dict[str, list[Part] | str],
        order: dict[str, list[str]] | None = None,
        placement: dict[str, list[tuple[int, int]]] | None = None,
        start_s: dict[str, float] | None = None,
        finish_s: dict[str, float] | None = None,
        makespan_s: float | None = None,
        stats: dict | None = None,
        workload: str | None = None,
        platform: str | None = None,
        *,
        splits: dict[str, dict[str, list[int]]] | None = None,
        after: dict[str, list[str]] | None = None,
        config: dict | None = None,
        policies: dict[str, WeightPolicy | str] | None = None,
        fused: dict[str, str] | None = None,
    ):
        self.mapper = mapper
        self.parts = {v: (whole(p) if isinstance(p, str) else list(p)) for v, p in parts.items()}
        for v, sp in (splits or {}).items():
            self.parts[v] = [Part(d, _block(v, d, ch) if len(ch) else (0, 0)) for d, ch in sp.items()]
        self.order = dict(order or {})
        self.placement = dict(placement or {})
        self.start_s = dict(start_s or {})
        self.finish_s = dict(finish_s or {})
        self.makespan_s = makespan_s
        self.stats = dict(stats or {})
        self.workload = workload
        self.platform = platform
        self.after = {v: list(us) for v, us in (after or {}).items() if us}
        self.config = dict(config or {})
        self.fused = {str(c): str(p) for c, p in (fused or {}).items()}
        self.policies = {}
        for v, wp in (policies or {}).items():
            wp = WeightPolicy(wp) if isinstance(wp, str) else wp
            if wp.policy != "resident":
                self.policies[v] = wp

    def policy_of(self, op: str) -> str:
        """``resident``, ``streamed`` or ``reprogrammed``: the weight policy of ``op``."""
        wp = self.policies.get(op)
        return "resident" if wp is None else wp.policy

    def __repr__(self) -> str:
        n_split = sum(1 for p in self.parts.values() if len(p) > 1)
        ms = "-" if self.makespan_s is None else f"{self.makespan_s * 1e3:.6g} ms"
        return (f"Schedule(mapper={self.mapper!r}, workload={self.workload!r}, ops={len(self.parts)}, "
                f"split={n_split}, makespan={ms})")

    @classmethod
    def from_assignment(cls, mapper: str, assignment: dict[str, str],
                        splits: dict[str, dict[str, int]] | None = None, **kw) -> Schedule:
        """A schedule from op -> device, with ``splits`` (op -> {device: channel count}) made into contiguous
        channel ranges (:func:`split_parts`) for the ops they name."""
        splits = splits or {}
        parts = {v: (split_parts(splits[v]) if v in splits else whole(d)) for v, d in assignment.items()}
        return cls(mapper=mapper, parts=parts, **kw)

    @property
    def assignment(self) -> dict[str, str]:
        """Op name -> the device of its first part (a view for code that handles whole ops; a split op's
        devices are :meth:`devices_of`).

        A new dict on every access, O(ops): read it once before a loop over the ops, or ask one op's device
        with :meth:`device_of` (O(1))."""
        return {v: p[0].device for v, p in self.parts.items()}

    @property
    def splits(self) -> dict[str, dict[str, list[int]]]:
        """The channel-split ops: op name -> {device: its output-channel indices} (a view of :attr:`parts`).

        A new dict on every access, O(ops + split channels): read it once before a loop over the ops, or ask
        one op with :meth:`is_split` and :meth:`channel_parts` (O(1))."""
        return {v: {q.device: list(range(*q.channels)) if q.channels else [] for q in p}
                for v, p in self.parts.items() if len(p) > 1 or p[0].channels is not None}

    def device_of(self, op: str) -> str:
        """The device of ``op``'s first part (``assignment[op]`` without building the view).

        Raises:
            KeyError: the schedule has no such op."""
        return self.parts[op][0].device

    def is_split(self, op: str) -> bool:
        """True when ``op`` runs as channel-range parts."""
        p = self.parts[op]
        return len(p) > 1 or p[0].channels is not None

    def devices_of(self, op: str) -> list[str]:
        """The devices running ``op``, in part order."""
        return [p.device for p in self.parts[op]]

    def channel_parts(self, op: str, c_out: int) -> dict[str, int]:
        """Output channels of ``op`` (``c_out`` in all) per device."""
        return {p.device: (c_out if p.channels is None else p.n_channels) for p in self.parts[op]}

    def to_dict(self) -> dict:
        extra = {}
        if self.after:
            extra["after"] = self.after
        if self.config:
            extra["config"] = self.config
        if self.policies:
            extra["policies"] = {v: wp.to_dict() for v, wp in self.policies.items()}
        if self.fused:
            extra["fused"] = self.fused
        return {
            **extra,
            "mapper": self.mapper,
            "workload": self.workload,
            "platform": self.platform,
            "parts": {v: [q.to_dict() for q in p] for v, p in self.parts.items()},
            "order": self.order,
            "placement": {k: [list(p) for p in v] for k, v in self.placement.items()},
            "start_s": self.start_s,
            "finish_s": self.finish_s,
            "makespan_s": self.makespan_s,
            "stats": self.stats,
        }

    @classmethod
    def from_dict(cls, d: dict) -> Schedule:
        """Inverse of :meth:`to_dict`. Also reads the earlier form with ``assignment`` (op -> device) and
        ``splits`` (op -> {device: channel indices}, each device's channels one contiguous block).

        Raises:
            ScheduleError: a required key is missing or has the wrong type.
        """
        field = "schedule"  # the key being read: named when its value has the wrong form

        def obj(key: str, required: bool = False) -> dict:
            nonlocal field
            field = key
            if key not in d:
                if required:
                    raise ScheduleError(f"malformed schedule: the key {key!r} is missing")
                return {}
            val = d[key]
            if not isinstance(val, dict):
                raise ScheduleError(f"malformed schedule: {key!r} must be a JSON object, not {_json_type(val)}")
            return val

        try:
            if "parts" in d:
                parts = {}
                for v, ps in obj("parts").items():
                    if not isinstance(ps, list) or not ps:
                        raise ScheduleError(f"malformed schedule: op {v!r} has no parts")
                    parts[str(v)] = [Part(str(q["device"]), None if q.get("channels") is None
                                          else _range(v, q["channels"])) for q in ps]
            else:
                parts = {str(v): whole(str(dev)) for v, dev in obj("assignment", required=True).items()}
                for v, sp in obj("splits").items():
                    parts[str(v)] = [Part(str(dev), _block(v, dev, ch)) for dev, ch in sp.items()]
            order = {k: list(v) for k, v in obj("order", required=True).items()}
            placement = {k: [_slot(k, p) for p in v] for k, v in obj("placement").items()}
            start_s = {k: finite(v, f"start_s of {k!r}", ScheduleError) for k, v in obj("start_s").items()}
            finish_s = {k: finite(v, f"finish_s of {k!r}", ScheduleError) for k, v in obj("finish_s").items()}
            field = "makespan_s"
            makespan = None if d.get("makespan_s") is None else finite(d["makespan_s"], "makespan_s", ScheduleError)
            stats, config = dict(obj("stats")), dict(obj("config"))
            after = {str(k): [str(u) for u in v] for k, v in obj("after").items()}
            policies = {str(k): _policy(k, p) for k, p in obj("policies").items()}
            fused = {str(k): _producer(k, p) for k, p in obj("fused").items()}
            field = "mapper"
            if not isinstance(d["mapper"], str):
                raise ScheduleError(f"malformed schedule: 'mapper' must be a string, not {_json_type(d['mapper'])}")
            for key in ("workload", "platform"):  # the names a replay checks (hetsim.check.require_made_for)
                if d.get(key) is not None and not isinstance(d[key], str):
                    raise ScheduleError(f"malformed schedule: {key!r} must be a string or null, not "
                                        f"{_json_type(d[key])}")
            return cls(mapper=d["mapper"], workload=d.get("workload"), platform=d.get("platform"), parts=parts,
                       order=order, placement=placement, start_s=start_s, finish_s=finish_s, makespan_s=makespan,
                       stats=stats, after=after, config=config, policies=policies,
                       fused=fused)
        except KeyError as err:
            where = "" if err.args[0] == field else f"an entry of {field!r} lacks "
            raise ScheduleError(f"malformed schedule: {where or 'the key '}{err.args[0]!r}"
                                f"{' is missing' if not where else ''}") from None
        except (TypeError, ValueError, AttributeError) as err:
            raise ScheduleError(f"malformed schedule: {field!r} has a value of the wrong form ({err})") from None

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Schedule:
        d = loads_strict(text, "schedule", ScheduleError)  # no NaN/Infinity, bounded nesting
        if not isinstance(d, dict):
            raise ScheduleError(f"malformed schedule: a JSON object expected, not {_json_type(d)}")
        return cls.from_dict(d)

    @classmethod
    def load(cls, path: str | Path) -> Schedule:
        return cls.from_json(read_input_text(path, "schedule file", MAX_JSON_BYTES, ScheduleError))


def _json_type(val) -> str:
    """A JSON value's type in JSON's words (``null``, ``a list``, ``a string``, ...)."""
    if val is None:
        return "null"
    names = {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list", dict: "an object"}
    return names.get(type(val), type(val).__name__)


def _policy(op, p) -> WeightPolicy:
    """One ``policies`` entry: ``{"policy": NAME, "memory": NAME or null}``."""
    if not isinstance(p, dict) or not isinstance(p.get("policy"), str) or not isinstance(p.get("memory"), str | None):
        raise ScheduleError(f"malformed schedule: the weight policy of {op!r} is {json.dumps(p)[:80]}; each entry "
                            'is {"policy": "resident" | "streamed" | "reprogrammed", "memory": NAME or null}')
    return WeightPolicy(p["policy"], p.get("memory"))


def _producer(op, p) -> str:
    """One ``fused`` entry: the producer's op name, a string."""
    if not isinstance(p, str):
        raise ScheduleError(f"malformed schedule: 'fused' maps {op!r} to {json.dumps(p)[:80]}; each entry is "
                            '"CONSUMER": "PRODUCER", two op names')
    return p


def _slot(op: str, p) -> tuple[int, int]:
    """One placement entry ``[core, amount]``: two non-negative integers (the range of ``core`` is checked
    against the platform by :func:`hetsim.check.placement_violations`)."""
    if (not isinstance(p, list | tuple) or len(p) != 2
            or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in p)):
        raise ScheduleError(f"malformed schedule: the placement of {op!r} has entry {p!r}; each entry is "
                            "[core, crossbars], two non-negative integers")
    return int(p[0]), int(p[1])


def _range(op: str, ch) -> tuple[int, int]:
    lo, hi = (int(x) for x in ch)
    if not 0 <= lo < hi:
        raise ScheduleError(f"malformed schedule: op {op!r} has a part with channel range {list(ch)}")
    return lo, hi


def _block(op: str, dev: str, ch) -> tuple[int, int]:
    ch = sorted(int(c) for c in ch)
    if not ch or ch != list(range(ch[0], ch[0] + len(ch))):
        raise ScheduleError(f"malformed schedule: the split of {op!r} gives {dev!r} channels that are not one "
                            "contiguous block; reorder the channels so each device's are contiguous (ODiMO Fig. 3)")
    return ch[0], ch[-1] + 1
