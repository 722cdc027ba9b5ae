"""Platform = devices + links + memories, loaded from YAML and validated with Pydantic.

Example (``platforms/puma.yaml``)::

    name: puma-arm
    host: host                       # the device that runs everything no accelerator supports
    devices:
      host: {kind: cpu, cores: 1, clock_ghz: 1.5, ...}
      cim:  {kind: puma, crossbars: 100, crossbars_per_core: 10, t_mvm_ns: 50, ...}
    links:
      bus: {bandwidth_gb_s: 10.24, connects: [host, cim]}

Devices that share a memory (``memories: {l1: {size_kib: 256, shared_by: [host, digital, aimc]}}``, see
``platforms/diana.yaml``) exchange tensors through it at no cost and need no link.

Unknown fields are errors; the error message names the field's path and what was expected. Number fields take
finite numbers in a physical range, never booleans (:mod:`hetsim.devices.fields`). Device, link and memory names
are distinct. Platform files, sweep files and SNN specs are read by :func:`read_yaml`: at most 1 MiB, no repeated
key in a mapping, and bounded aliases and nesting (``YAML_MAX_*`` below).
"""

from __future__ import annotations

import contextvars
import re
import types
import warnings
from pathlib import Path
from typing import Annotated, Literal, Union, get_args, get_origin

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic.fields import FieldInfo
from pydantic_core import to_jsonable_python
from yaml.composer import Composer
from yaml.events import AliasEvent
from yaml.nodes import MappingNode, ScalarNode

from hetsim.devices import DEVICE_KINDS, DeviceBase, Link, Memory, on_kinds_changed
from hetsim.errors import InputError, PlatformError, did_you_mean
from hetsim.input_files import read_input_bytes


def tagged_union(members: tuple[type[BaseModel], ...], tag: str):
    """A registry's classes as one Pydantic union discriminated by their field ``tag`` (the device kinds by
    ``kind``, a scenario's arrival processes by ``process``); one class is itself, tagged."""
    return Annotated[members[0] if len(members) == 1 else Union[members], Field(discriminator=tag)]  # noqa: UP007


def retype_field(model: type[BaseModel], name: str, annotation, field: FieldInfo | None = None,
                 embedding: tuple[type[BaseModel], ...] = ()) -> None:
    """Give ``model``'s field ``name`` the type ``annotation`` (with ``field``'s constraints, if any) and rebuild
    it, then the models that embed it (``embedding``, innermost first: they hold its old validator): a registry's
    union rebuilt after a class is registered at run time."""
    model.model_fields[name] = (FieldInfo.from_annotation(annotation) if field is None
                                else FieldInfo.from_annotated_attribute(annotation, field))
    model.model_rebuild(force=True)
    for outer in embedding:
        outer.model_rebuild(force=True)


def _device_union():
    """The registered device kinds as one Pydantic union discriminated by ``kind``."""
    return tagged_union(tuple(DEVICE_KINDS.values()), "kind")


DeviceConfig = _device_union()

#: devices whose unused set-aside capacity was already warned about (:meth:`Platform.unused_set_aside`)
_TOLD_SET_ASIDE: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar("told_set_aside",
                                                                                 default=frozenset())


class Platform(BaseModel):
    """A heterogeneous SoC: named devices joined by links.

    Attributes:
        name: platform name.
        host: name of the host device (a ``cpu``); defaults to the first ``cpu`` device.
        baseline: the mapper speedups are measured against (default ``all-host``, the CPU alone; DIANA uses
            ``all-8bit``, as ODiMO does). Not checked here (the mapper registry sits above this module): a run,
            scenario or sweep refuses an unknown one before it maps (:func:`hetsim.mappers.base.check_baseline`);
            an SNN run measures against SpikeDuet's ``all-m33`` whatever it says.
        devices: device name -> device config (``kind`` selects the model).
        links: link name -> :class:`~hetsim.devices.link.Link`.
        memories: memory name -> :class:`~hetsim.devices.memory.Memory` (memories shared by devices).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = "platform"
    description: str = ""
    host: str | None = None
    baseline: str = Field("all-host", description="mapper whose makespan speedups are measured against")
    devices: dict[str, DeviceConfig] = Field(min_length=1)
    links: dict[str, Link] = Field(default_factory=dict)
    memories: dict[str, Memory] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _names(cls, data):
        """Copy each dict key into the entry's ``name`` so devices and links know their own names."""
        if isinstance(data, dict):
            data = dict(data)
            for key in ("devices", "links", "memories"):
                entries = data.get(key)
                if isinstance(entries, dict):
                    data[key] = {
                        k: ({**v, "name": k} if isinstance(v, dict) else v) for k, v in entries.items()
                    }
        return data

    @model_validator(mode="after")
    def _check(self) -> Platform:
        host_kinds = ", ".join(repr(k) for k, c in DEVICE_KINDS.items() if c.can_host)
        if self.host is None:
            cpus = [n for n, d in self.devices.items() if d.can_host]
            if not cpus:
                raise ValueError(f"a platform needs a host: at least one device of kind {host_kinds}")
            object.__setattr__(self, "host", cpus[0])
        elif self.host not in self.devices:
            raise ValueError(f"host {self.host!r} is not a device; devices: {sorted(self.devices)}")
        elif not self.devices[self.host].can_host:
            raise ValueError(f"host {self.host!r} is a {self.devices[self.host].kind!r} device; the host must be "
                             f"one of the kinds {host_kinds}")
        for lname in self.links:  # the trace and the reports name devices and links in one namespace
            if lname in self.devices:
                raise ValueError(f"links.{lname}: {lname!r} is also a device; a link needs a name of its own")
        for mname in self.memories:
            for section in ("devices", "links"):
                if mname in getattr(self, section):
                    raise ValueError(f"memories.{mname}: {mname!r} is also in {section}; a memory needs a name of "
                                     "its own")
        for lname, link in self.links.items():
            for d in link.connects:
                if d not in self.devices:
                    raise ValueError(
                        f"links.{lname}.connects names {d!r}, which is not a device; devices: "
                        f"{sorted(self.devices)}"
                    )
        for mname, mem in self.memories.items():
            for field, names in (("shared_by", mem.shared_by), ("weights_for", list(mem.weights_for)),
                                 ("activations_of", mem.activations_of)):
                for d in names:
                    if d not in self.devices:
                        raise ValueError(
                            f"memories.{mname}.{field} names {d!r}, which is not a device; devices: "
                            f"{sorted(self.devices)}"
                        )
            for d in mem.weights_for:
                if not type(self.devices[d]).reads_weight_memory():
                    readers = sorted(k for k, c in DEVICE_KINDS.items() if c.reads_weight_memory())
                    raise ValueError(
                        f"memories.{mname}.weights_for names {d!r}, a {self.devices[d].kind!r} device, which reads "
                        f"no weights from a memory (its ops' weights are its own); kinds that do: "
                        f"{', '.join(readers)}"
                    )
        told = _TOLD_SET_ASIDE.get()
        for name, aside in self.unused_set_aside().items():
            if name not in told:
                warnings.warn(f"devices.{name}: {aside} set aside for weights read from a memory, but no memory "
                              f"lists {name!r} in weights_for: they stay unused (set them to 0, or add {name!r} to "
                              "a memory's weights_for)", stacklevel=2)
        return self

    def unused_set_aside(self) -> dict[str, str]:
        """Devices whose configuration sets capacity aside for weights read from a memory
        (:meth:`~hetsim.devices.base.DeviceBase.set_aside_for_weight_memory`) that no memory serves
        (``weights_for``): device name -> the phrase naming what stays unused. Validation warns once for each;
        :meth:`with_overrides` does not warn again for a device its base platform was warned about."""
        served = {d for mem in self.memories.values() for d in mem.weights_for}
        out = {}
        for name, dev in self.devices.items():
            aside = dev.set_aside_for_weight_memory()
            if aside and name not in served:
                out[name] = aside
        return out

    @property
    def host_device(self) -> DeviceBase:
        return self.devices[self.host]

    def shares_memory(self, a: str, b: str) -> bool:
        """True when devices ``a`` and ``b`` (distinct) share a memory: tensors between them move for free."""
        return any(a in m.shared_by and b in m.shared_by for m in self.memories.values())

    def activation_memory(self, device: str) -> tuple[str, int] | None:
        """The memory holding ``device``'s activations and its capacity in bytes: the first memory (in YAML order)
        whose ``activations_of`` lists the device, else the first whose ``shared_by`` does, else ``None``."""
        for field in ("activations_of", "shared_by"):
            for name, m in self.memories.items():
                if device in getattr(m, field):
                    return name, m.size_bytes
        return None

    def weight_memories(self, device: str) -> list[str]:
        """Names of the memories ``device`` reads weights from (``weights_for``), in YAML order."""
        return [name for name, m in self.memories.items() if device in m.weights_for]

    def reachable_from_host(self) -> frozenset[str]:
        """The devices a tensor from the host can reach: the host, and every device joined to a reachable one by a
        link or a shared memory (breadth-first over those joins). A model's inputs start on the host (ours: the
        cost model moves none for an op without a producer), so a device outside this set can take no op: the
        cost model leaves it out of every op's candidates (:class:`hetsim.costs.CostModel`)."""
        seen, todo = {self.host}, [self.host]
        while todo:
            a = todo.pop()
            for b in self.devices:
                if b not in seen and (self.link_between(a, b) is not None or self.shares_memory(a, b)):
                    seen.add(b)
                    todo.append(b)
        return frozenset(seen)

    def link_between(self, a: str, b: str) -> Link | None:
        """The first link (in YAML order) joining devices ``a`` and ``b``, or ``None``."""
        for link in self.links.values():
            if a in link.connects and b in link.connects:
                return link
        return None

    def with_overrides(self, overrides: dict[str, object], *, name: str | None = None) -> Platform:
        """A copy with dotted-path overrides applied, e.g. ``{"devices.cim.t_mvm_ns": 100}``.

        The copy's name says what changed, as ``hetsim run --set`` does: ``puma-arm with
        devices.cim.crossbars=25`` (its ``repr``, ``summary["platform"]`` and the reports show it; overriding
        an overridden platform adds to the list). ``name`` (or a ``"name"`` key in ``overrides``) sets it
        instead; a sweep keeps the base name (its table has the parameters in columns of their own).

        Raises:
            PlatformError: the path does not exist (the message names the part that does not and suggests the
                closest device or field name) or the new value fails validation (the message names the field).
        """
        # only what was given: derived values (e.g. a PUMA's cores from its crossbars) are derived anew
        data = self.model_dump(mode="json", exclude_unset=True, exclude={"devices": {"__all__": {"name"}}})
        for path, value in overrides.items():
            keys = str(path).split(".")
            node = data
            walk = _override_walk(self, str(path))
            _check_same_kind(str(path), walk, value)
            for k, below in zip(keys[:-1], walk[:-1], strict=True):
                if k not in node:  # left at its default: dump the default so the override can go inside it
                    node[k] = (below.model_dump(mode="json", exclude_unset=True) if isinstance(below, BaseModel)
                               else to_jsonable_python(below))
                node = node[k]
            node[keys[-1]] = value
        if name is None and "name" not in overrides and overrides:
            name = override_name(self.name, overrides)
        if name is not None:
            data["name"] = name
        # the base platform's set-aside warnings were given when it was loaded: not again per --set or sweep point
        token = _TOLD_SET_ASIDE.set(_TOLD_SET_ASIDE.get() | frozenset(self.unused_set_aside()))
        try:
            return _validate(data, f"{self.name} with overrides")
        finally:
            _TOLD_SET_ASIDE.reset(token)


def _check_same_kind(path: str, walk: list, value: object) -> None:
    """Refuse an override of a device's ``kind`` (``walk``: the objects ``path`` passes through,
    :func:`_override_walk`) to another registered kind: its other fields are its kind's, so another kind would
    fail on every one of them (a Pydantic error per field).

    Raises:
        PlatformError: one line naming the device, its kind and what to do instead.
    """
    if len(walk) < 2 or not isinstance(walk[-2], DeviceBase) or path.rsplit(".", 1)[-1] != "kind":
        return
    if value == walk[-1] or not isinstance(value, str) or value not in DEVICE_KINDS:
        return  # the same kind, or none: validation names the unknown kind with the closest known one
    device = path.split(".")[1]
    raise PlatformError(f"override {path!r}: device {device!r} is a {walk[-1]!r} device and its fields are that "
                        f"kind's; an override cannot make it a {value!r} device: write a platform file with one")


def override_name(base: str, overrides: dict[str, object]) -> str:
    """The name of platform ``base`` changed by ``overrides``: ``puma-arm with devices.cim.crossbars=25,
    links.bus.bandwidth_gb_s=20.48`` (a name that already lists overrides gets these appended)."""
    given = ", ".join(f"{k}={v}" for k, v in overrides.items())
    return f"{base}, {given}" if " with " in base else f"{base} with {given}"


def _check_op_type_lists(devices: dict) -> None:
    """Every op type a device's ``supported_ops``, ``free_ops``, ``vector_ops``, ``fuses`` or
    ``epilogue_cycles_per_element`` names is an ONNX or onnxruntime
    operator type (:func:`hetsim.devices.optypes.check_op_types`: a misspelt name would match no op, and the device
    would run nothing without a word).

    Raises:
        ValueError: the first unknown name, with the closest known one.
    """
    lists = [(f"devices.{n}.{attr}", getattr(d, attr, None)) for n, d in devices.items()
             for attr in ("supported_ops", "free_ops", "vector_ops", "fuses", "epilogue_cycles_per_element")]
    lists = [(where, names) for where, names in lists if names]
    if lists:
        from hetsim.devices.optypes import check_op_types  # imports onnx.defs: only for platforms that list ops

        for where, names in lists:
            check_op_types(names, where)


#: what the entries of the platform's mappings are called in messages
_ENTRY_NOUNS = {k: ({"memories": "memory"}.get(k, k[:-1]), k) for k in ("devices", "links", "memories")}


def _override_walk(platform: Platform, path: str) -> list:
    """The objects a dotted override ``path`` passes through in ``platform`` (``None`` for a new mapping key at
    the end, e.g. another ``macs_per_cycle`` bit width).

    Raises:
        PlatformError: a part of the path names no field, device, link or memory (with the closest name), or
            the path goes on below a plain value.
    """
    keys = path.split(".")
    if not all(keys):
        raise PlatformError(f"override {path!r}: empty part in the dotted path")
    obj: object = platform
    done: list[str] = []
    objs = []
    for i, k in enumerate(keys):
        last = i == len(keys) - 1
        if isinstance(obj, BaseModel):
            fields = list(type(obj).model_fields)
            if k not in fields:
                hint = did_you_mean(k, fields)
                if isinstance(obj, Platform):
                    what = "the platform"
                elif len(done) == 2 and done[0] in _ENTRY_NOUNS:
                    noun = _ENTRY_NOUNS[done[0]][0]
                    kind = getattr(obj, "kind", None)
                    what = f"{noun} {done[1]!r}" + (f" ({kind})" if isinstance(kind, str) else "")
                else:
                    what = ".".join(done)
                raise PlatformError(f"override {path!r}: {what} has no field {k!r}"
                                    + (hint if hint else f"; fields: {', '.join(fields)}"))
            obj = getattr(obj, k)
        elif isinstance(obj, dict):
            names = {str(n): n for n in obj}
            if k not in names and not last:
                hint = did_you_mean(k, names)
                noun, nouns = _ENTRY_NOUNS.get(".".join(done), ("key", "keys"))
                listed = f"{nouns}: {', '.join(names)}" if names else f"no {nouns}"
                within = "" if ".".join(done) in _ENTRY_NOUNS else f" in {'.'.join(done)}"
                raise PlatformError(f"override {path!r}: no {noun} {k!r}{within}{hint}"
                                    f"{' (' if hint else '; '}{listed}{')' if hint else ''}")
            obj = obj[names[k]] if k in names else None
        else:
            raise PlatformError(f"override {path!r}: {'.'.join(done)} is a value ({obj!r}), not a mapping")
        done.append(k)
        objs.append(obj)
    return objs


def _rebuild_device_union() -> None:
    """Rebuild :class:`Platform` so its ``devices`` accept every registered kind (a kind registered at run
    time included)."""
    global DeviceConfig
    DeviceConfig = _device_union()
    retype_field(Platform, "devices", dict[str, DeviceConfig], Field(min_length=1))


on_kinds_changed(_rebuild_device_union)


def _below(tp, key):
    """The type one step below ``tp`` at ``key`` of a validation error's location (``None``: not known)."""
    origin = get_origin(tp)
    if origin is Annotated:
        return _below(get_args(tp)[0], key)
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        field = tp.model_fields.get(str(key))
        return field.annotation if field is not None else None
    if origin is Union or origin is types.UnionType:
        members = [a for a in get_args(tp) if a is not type(None)]
        for a in members:  # a tagged union's member: pydantic puts its tag (a device kind) in the location
            if isinstance(a, type) and issubclass(a, BaseModel) and key in (_tag_of(a), a.__name__):
                return a
        return _below(members[0], key) if len(members) == 1 else None
    if origin is dict:
        return get_args(tp)[1]
    if origin in (list, tuple, set, frozenset):
        return get_args(tp)[0]
    return None


def _tag_of(cls: type[BaseModel]) -> str | None:
    """The tag of a tagged union's member: its ``kind`` default, else the default of its first ``Literal`` field
    (a scenario's arrival ``process``), else ``None``."""
    kind = cls.model_fields.get("kind")
    if kind is not None and isinstance(kind.default, str):
        return kind.default
    for f in cls.model_fields.values():
        if get_origin(f.annotation) is Literal and f.default in get_args(f.annotation):
            return str(f.default)
    return None


def _shown_loc(model: type[BaseModel], loc) -> list[str]:
    """A validation error's location as the file spells it: the tags pydantic inserts after a tagged union's
    field (``streams.detect.arrival.periodic.period_s`` -> ``streams.detect.arrival.period_s``) left out."""
    out, tp = [], model
    for key in loc:
        inner = tp
        while get_origin(inner) is Annotated:
            inner = get_args(inner)[0]
        tagged = (get_origin(inner) in (Union, types.UnionType)
                  and any(isinstance(a, type) and issubclass(a, BaseModel) and key == _tag_of(a)
                          for a in get_args(inner)))
        if not tagged:
            out.append(str(key))
        tp = _below(tp, key) if tp is not None else None
    return out


def _fields_at(model: type[BaseModel], loc) -> list[str]:
    """The field names of the model found at ``loc`` (a validation error's location below ``model``), or ``[]``."""
    tp = model
    for key in loc:
        tp = _below(tp, key)
        if tp is None:
            return []
    while get_origin(tp) is Annotated or ((get_origin(tp) is Union or get_origin(tp) is types.UnionType)
                                          and len([a for a in get_args(tp) if a is not type(None)]) == 1):
        tp = next(a for a in get_args(tp) if a is not type(None))
    return list(tp.model_fields) if isinstance(tp, type) and issubclass(tp, BaseModel) else []


def _tags_at(model: type[BaseModel], loc) -> list[str]:
    """The tags of the tagged union found at ``loc`` below ``model`` (each member's ``Literal`` default), or
    ``[]``."""
    tp = model
    for key in loc:
        tp = _below(tp, key)
        if tp is None:
            return []
    while get_origin(tp) is Annotated:
        tp = get_args(tp)[0]
    if get_origin(tp) not in (Union, types.UnionType):
        return []
    out = []
    for a in get_args(tp):
        if isinstance(a, type) and issubclass(a, BaseModel):
            out += [str(f.default) for f in a.model_fields.values()
                    if get_origin(f.annotation) is Literal and f.default in get_args(f.annotation)][:1]
    return out


def _short_repr(value: object) -> str:
    """``repr(value)``, shortened when long (a 400-digit integer is named by its digit count)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**40:
        return f"an integer of {len(str(abs(value)))} digits"
    r = repr(value)
    return r if len(r) <= 80 else f"{r[:60]}... ({len(r)} characters)"


def _format_validation_error(err: ValidationError, where: str, model: type[BaseModel] | None = None) -> str:
    """One line per problem: ``where: dotted.field.path: message``; an unknown field or device kind gets the
    closest known name of ``model`` (default: :class:`Platform`)."""
    model = model or Platform
    lines = []
    for e in err.errors():
        raw = list(e["loc"])
        # without the union tags pydantic inserts (devices.host.cpu.clock_ghz, a scenario's arrival.periodic)
        loc = _shown_loc(model, raw)
        path = ".".join(loc) or "(top level)"
        msg = e["msg"]
        if e["type"] == "extra_forbidden":
            msg = "unknown field" + (did_you_mean(raw[-1], _fields_at(model, raw[:-1])) if raw else "")
        elif e["type"] == "missing":
            msg = "required field is missing"
        elif e["type"] == "union_tag_invalid" and loc[:1] == ["devices"]:
            if isinstance(e.get("input"), dict):
                kind = e["input"].get("kind")
                hint = did_you_mean(kind, DEVICE_KINDS)
                msg = f"unknown device kind {kind!r}{hint}{' A' if hint else '; a'}llowed: {', '.join(DEVICE_KINDS)}"
        elif e["type"] == "union_tag_invalid":  # another tagged union (a scenario's arrival process)
            ctx = e.get("ctx") or {}
            disc, tag = str(ctx.get("discriminator", "")).strip("'"), ctx.get("tag")
            tags = [t.strip().strip("'") for t in str(ctx.get("expected_tags", "")).split(",") if t.strip()]
            hint = did_you_mean(str(tag), tags)
            msg = f"unknown {disc} {tag!r}{hint}{' A' if hint else '; a'}llowed: {', '.join(tags)}"
        elif e["type"] == "union_tag_not_found" and loc[:1] == ["devices"]:
            msg = f"no 'kind'; a device needs one of: {', '.join(DEVICE_KINDS)}"
        elif e["type"] == "union_tag_not_found":
            disc = str((e.get("ctx") or {}).get("discriminator", "")).strip("'")
            tags = _tags_at(model, raw)
            msg = f"no {disc!r}; give one of: {', '.join(tags)}" if tags else f"no {disc!r} given"
        elif loc[-1:] == ["[key]"] and "input" in e:  # a mapping's key (macs_per_cycle: {true: 8})
            path = ".".join(loc[:-2]) or "(top level)"
            msg = f"key {_short_repr(e['input'])}: {msg}"
        elif e["type"] == "value_error":  # our validators' own sentences, without pydantic's prefix
            msg = msg.removeprefix("Value error, ")
        elif "input" in e:
            msg = f"{msg} (got {_short_repr(e['input'])})"
        if e["type"] == "value_error" and not loc:  # a whole-model check's sentence names its own path
            lines.append(f"{where}: {msg}")
            continue
        lines.append(f"{where}: {path}: {msg}")
    return "\n".join(lines)


def _validate(data: object, where: str) -> Platform:
    if not isinstance(data, dict):
        raise PlatformError(f"{where}: expected a YAML mapping with 'devices' (and 'links'), got "
                            f"{type(data).__name__}")
    try:
        plat = Platform.model_validate(data)
    except ValidationError as err:
        raise PlatformError(_format_validation_error(err, where)) from None
    try:
        _check_op_type_lists(plat.devices)
    except ValueError as err:
        raise PlatformError(f"{where}: {err}") from None
    return plat


#: Limits of :func:`read_yaml`: a YAML file hetsim reads is at most YAML_MAX_BYTES bytes (1 MiB), uses at most
#: YAML_MAX_ALIASES aliases (``*name``), expands (counting what its aliases repeat) to at most YAML_MAX_NODES
#: values and nests at most YAML_MAX_DEPTH levels. Real files are far inside them (the largest shipped file: 6 KB,
#: depth 5); a file past them is refused before it can exhaust memory or time ("billion laughs", deep nesting).
YAML_MAX_BYTES = 1 << 20
YAML_MAX_ALIASES = 1_000
YAML_MAX_NODES = 100_000
YAML_MAX_DEPTH = 64


class YamlLimitError(yaml.YAMLError):
    """A YAML file that exceeds a limit of :func:`read_yaml` or repeats a key (``problem`` says which)."""

    def __init__(self, problem: str, mark=None):
        super().__init__(problem)
        self.problem = problem
        self.problem_mark = mark


class _GuardedLoading(Composer):
    """Composer and constructor checks of :func:`read_yaml` (mixed into the C or the Python safe loader).

    Composition counts alias uses, the values the document expands to (an alias counts the values below the
    node it names) and the nesting depth (an alias adds the depth below its node), and refuses past the
    ``YAML_MAX_*`` limits or an alias to a node that contains it; construction refuses a key repeated in a
    mapping (YAML requires unique keys; PyYAML keeps the last one silently).
    """

    def _guard_init(self) -> None:
        self._aliases = 0
        self._nodes = 0
        self._depth = 0
        self._deepest = 0
        self._expanded: dict[int, tuple[int, int]] = {}  # id(anchored node) -> (values, depth) below it

    def compose_node(self, parent, index):
        if self.check_event(AliasEvent):
            event = self.peek_event()
            node = self.anchors.get(event.anchor)
            if node is not None:
                self._aliases += 1
                if self._aliases > YAML_MAX_ALIASES:
                    raise YamlLimitError(f"more than {YAML_MAX_ALIASES} aliases (*name); hetsim refuses YAML whose "
                                         "aliases may expand it this much", event.start_mark)
                size = self._expanded.get(id(node))
                if size is None:
                    raise YamlLimitError(f"alias *{event.anchor} refers to a node that contains it (a recursive "
                                         "structure)", event.start_mark)
                self._count(size[0], event.start_mark)
                self._deeper(self._depth + size[1], event.start_mark)
            return super().compose_node(parent, index)
        event = self.peek_event()
        self._count(1, event.start_mark)
        self._depth += 1
        self._deeper(self._depth, event.start_mark)
        outer, start = self._deepest, self._nodes
        self._deepest = self._depth
        node = super().compose_node(parent, index)
        if event.anchor is not None:
            self._expanded[id(node)] = (self._nodes - start, self._deepest - self._depth + 1)
        self._deepest = max(outer, self._deepest)
        self._depth -= 1
        return node

    def _count(self, n: int, mark) -> None:
        self._nodes += n
        if self._nodes > YAML_MAX_NODES:
            raise YamlLimitError(f"the document expands to more than {YAML_MAX_NODES} values (counting what its "
                                 "aliases repeat)", mark)

    def _deeper(self, depth: int, mark) -> None:
        self._deepest = max(self._deepest, depth)
        if depth > YAML_MAX_DEPTH:
            raise YamlLimitError(f"nested deeper than {YAML_MAX_DEPTH} levels", mark)

    def construct_yaml_int(self, node):
        try:
            return super().construct_yaml_int(node)
        except ValueError:  # past sys.get_int_max_str_digits() (4300 digits)
            raise YamlLimitError(f"an integer of {len(node.value)} characters; too long to read",
                                 node.start_mark) from None

    def construct_mapping(self, node, deep=False):
        if isinstance(node, MappingNode):
            seen: dict = {}
            for key_node, _ in node.value:
                if not isinstance(key_node, ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node)
                line = key_node.start_mark.line + 1
                try:
                    first = seen.get(key)
                except TypeError:  # unhashable: the constructor says so
                    continue
                if first is not None:
                    raise YamlLimitError(f"duplicate key {key!r} (first at line {first}); a key may appear once "
                                         "in a mapping", key_node.start_mark)
                seen[key] = line
        return super().construct_mapping(node, deep=deep)


#: ``1e9``, ``1.5E-3``: floats in YAML 1.2 (and to ``hetsim --set``), strings to YAML 1.1 without this
_EXP_FLOAT = re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$")


def _make_loader():
    """The loader class of :func:`read_yaml`: PyYAML's C parser (libyaml) when present, else its Python one,
    with :class:`_GuardedLoading`'s checks (composition runs in Python to count as it goes)."""
    try:
        from yaml._yaml import CParser
    except ImportError:  # PyYAML built without libyaml
        CParser = None

    if CParser is not None:
        class Loader(_GuardedLoading, CParser, yaml.constructor.SafeConstructor, yaml.resolver.Resolver):
            def __init__(self, stream):
                CParser.__init__(self, stream)
                Composer.__init__(self)
                yaml.constructor.SafeConstructor.__init__(self)
                yaml.resolver.Resolver.__init__(self)
                self._guard_init()
    else:
        class Loader(_GuardedLoading, yaml.SafeLoader):
            def __init__(self, stream):
                yaml.SafeLoader.__init__(self, stream)
                self._guard_init()

    Loader.add_constructor("tag:yaml.org,2002:int", Loader.construct_yaml_int)
    Loader.add_implicit_resolver("tag:yaml.org,2002:float", _EXP_FLOAT, list("-+0123456789"))
    return Loader


_YamlLoader = _make_loader()


def load_yaml_text(text: str | bytes) -> object:
    """Parse YAML text with :func:`read_yaml`'s limits and duplicate-key check (one document; ``1e9`` is a float).

    Raises:
        yaml.YAMLError: not valid YAML, or past a limit (:class:`YamlLimitError`).
    """
    loader = _YamlLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def read_yaml(path: Path, error: type[InputError], what: str) -> object:
    """Parse a YAML file for a user-facing loader (platform files, sweep files, SNN specs).

    The file must be at most :data:`YAML_MAX_BYTES` (1 MiB) of UTF-8; it may use at most
    :data:`YAML_MAX_ALIASES` aliases, expand to at most :data:`YAML_MAX_NODES` values and nest at most
    :data:`YAML_MAX_DEPTH` levels, and a mapping may not repeat a key.

    Raises:
        error: (an :class:`~hetsim.errors.InputError` subclass) the file is missing, not a regular file, too
            large, not text, not valid YAML, past a limit, or repeats a key (the message gives the line and
            column).
    """
    data = read_input_bytes(path, what, YAML_MAX_BYTES, error)  # a FIFO, a device, a folder, ...: one line
    try:
        return load_yaml_text(data.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise error(f"{path}: not a text (UTF-8 YAML) file") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        if isinstance(err, YamlLimitError):
            raise error(f"{path}{at}: {err.problem}") from None
        raise error(f"{path}: not valid YAML{at}: {getattr(err, 'problem', None) or err}") from None


def read_yaml_model(path: Path, model: type[BaseModel], error: type[InputError], what: str, expected: str):
    """Read a YAML file and validate it as ``model`` (a Pydantic model) for a user-facing loader.

    Raises:
        error: see :func:`read_yaml`; the document is not a mapping (the message says what it should hold:
            ``expected``); or a validation error, one line per problem naming the field path.
    """
    data = read_yaml(path, error, what)
    if not isinstance(data, dict):
        raise error(f"{path}: expected a YAML mapping ({expected}), got {type(data).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise error(_format_validation_error(err, str(path), model)) from None


def _resolved(p: Path) -> str:
    """``p`` resolved, or made absolute where it cannot be (a symbolic link loop: its reader says so)."""
    try:
        return str(p.resolve())
    except (OSError, RuntimeError):  # RuntimeError: Python 3.11's "Symlink loop"
        return str(p.absolute())


def load_platform(path: str | Path) -> Platform:
    """Read and validate a platform YAML file.

    Relative ``latency_table`` paths are resolved against the YAML file's folder.

    Raises:
        PlatformError: missing file, YAML syntax error, an SNN spec given as the platform, or a validation
            error (message names the field path and the expected value).
    """
    from hetsim.plugins import load_plugins

    load_plugins()  # device kinds of installed plugins (hetsim/plugins.py)
    p = Path(path)
    data = read_yaml(p, PlatformError, "platform file")
    if isinstance(data, dict) and "layers" in data and "devices" not in data:
        raise PlatformError(f"{p}: an SNN spec (it has 'layers'), not a platform file; the platform comes first, "
                            "e.g. hetsim run platforms/efr32mg24.yaml NET.yaml")
    if isinstance(data, dict) and isinstance(data.get("devices"), dict):
        for dev in data["devices"].values():
            if isinstance(dev, dict) and isinstance(dev.get("latency_table"), str) and dev["latency_table"]:
                t = Path(dev["latency_table"])  # anything but a string is left to the field's validation
                if not t.is_absolute():
                    dev["latency_table"] = _resolved(p.parent / t)
    return _validate(data, str(p))
