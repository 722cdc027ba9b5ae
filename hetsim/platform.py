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

Unknown fields are errors; the error message names the field's path and what was expected.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Union

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic.fields import FieldInfo

from hetsim.devices import DEVICE_KINDS, DeviceBase, Link, Memory, on_kinds_changed
from hetsim.errors import InputError, PlatformError


def _device_union():
    """The registered device kinds as one Pydantic union discriminated by ``kind``."""
    kinds = tuple(DEVICE_KINDS.values())
    return Annotated[kinds[0] if len(kinds) == 1 else Union[kinds], Field(discriminator="kind")]  # noqa: UP007


DeviceConfig = _device_union()


class Platform(BaseModel):
    """A heterogeneous SoC: named devices joined by links.

    Attributes:
        name: platform name.
        host: name of the host device (a ``cpu``); defaults to the first ``cpu`` device.
        baseline: the mapper speedups are measured against (default ``all-host``, the CPU alone; DIANA uses
            ``all-8bit``, as ODiMO does).
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
        for lname, link in self.links.items():
            for d in link.connects:
                if d not in self.devices:
                    raise ValueError(
                        f"links.{lname}.connects names {d!r}, which is not a device; devices: "
                        f"{sorted(self.devices)}"
                    )
        for mname, mem in self.memories.items():
            for d in mem.shared_by:
                if d not in self.devices:
                    raise ValueError(
                        f"memories.{mname}.shared_by names {d!r}, which is not a device; devices: "
                        f"{sorted(self.devices)}"
                    )
        return self

    @property
    def host_device(self) -> DeviceBase:
        return self.devices[self.host]

    def shares_memory(self, a: str, b: str) -> bool:
        """True when devices ``a`` and ``b`` (distinct) share a memory: tensors between them move for free."""
        return any(a in m.shared_by and b in m.shared_by for m in self.memories.values())

    def link_between(self, a: str, b: str) -> Link | None:
        """The first link (in YAML order) joining devices ``a`` and ``b``, or ``None``."""
        for link in self.links.values():
            if a in link.connects and b in link.connects:
                return link
        return None

    def with_overrides(self, overrides: dict[str, object]) -> Platform:
        """A copy with dotted-path overrides applied, e.g. ``{"devices.cim.t_mvm_ns": 100}``.

        Raises:
            PlatformError: the path does not exist or the new value fails validation.
        """
        # only what was given: derived values (e.g. a PUMA's cores from its crossbars) are derived anew
        data = self.model_dump(mode="json", exclude_unset=True, exclude={"devices": {"__all__": {"name"}}})
        for path, value in overrides.items():
            node = data
            keys = path.split(".")
            for k in keys[:-1]:
                if not isinstance(node, dict) or k not in node:
                    raise PlatformError(f"override {path!r}: no field {k!r}")
                node = node[k]
            if not isinstance(node, dict):
                raise PlatformError(f"override {path!r}: {keys[-2]!r} is not a mapping")
            node[keys[-1]] = value
        return _validate(data, f"{self.name} with overrides")


def _rebuild_device_union() -> None:
    """Rebuild :class:`Platform` so its ``devices`` accept every registered kind (a kind registered at run
    time included)."""
    global DeviceConfig
    DeviceConfig = _device_union()
    Platform.model_fields["devices"] = FieldInfo.from_annotated_attribute(
        dict[str, DeviceConfig], Field(min_length=1))
    Platform.model_rebuild(force=True)


on_kinds_changed(_rebuild_device_union)


def _format_validation_error(err: ValidationError, where: str) -> str:
    """One line per problem: ``where: dotted.field.path: message``."""
    lines = []
    for e in err.errors():
        loc = [str(p) for p in e["loc"]]
        # drop the union tag pydantic inserts after a device name (devices.host.cpu.clock_ghz)
        if len(loc) >= 3 and loc[0] == "devices" and loc[2] in DEVICE_KINDS:
            del loc[2]
        path = ".".join(loc) or "(top level)"
        msg = e["msg"]
        if e["type"] == "extra_forbidden":
            msg = "unknown field"
        elif e["type"] == "missing":
            msg = "required field is missing"
        elif e["type"] == "union_tag_invalid":
            if isinstance(e.get("input"), dict):
                msg = f"unknown device kind {e['input'].get('kind')!r}; allowed: {', '.join(DEVICE_KINDS)}"
        elif "input" in e and e["type"] not in ("value_error",):
            msg = f"{msg} (got {e['input']!r})"
        lines.append(f"{where}: {path}: {msg}")
    return "\n".join(lines)


def _validate(data: object, where: str) -> Platform:
    if not isinstance(data, dict):
        raise PlatformError(f"{where}: expected a YAML mapping with 'devices' (and 'links'), got "
                            f"{type(data).__name__}")
    try:
        return Platform.model_validate(data)
    except ValidationError as err:
        raise PlatformError(_format_validation_error(err, where)) from None


def read_yaml(path: Path, error: type[InputError], what: str) -> object:
    """Parse a YAML file for a user-facing loader.

    Raises:
        error: (an :class:`~hetsim.errors.InputError` subclass) the file is missing, is not text, or is not
            valid YAML (the message gives the line and column).
    """
    if path.is_dir():
        raise error(f"{what} {str(path)!r} is a folder, not a file")
    if not path.is_file():
        raise error(f"{what} {str(path)!r} does not exist")
    try:
        return yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise error(f"{path}: not valid YAML{at}: {getattr(err, 'problem', err)}") from None
    except UnicodeDecodeError:
        raise error(f"{path}: not a text (YAML) file") from None


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
        raise error(_format_validation_error(err, str(path))) from None


def load_platform(path: str | Path) -> Platform:
    """Read and validate a platform YAML file.

    Relative ``latency_table`` paths are resolved against the YAML file's folder.

    Raises:
        PlatformError: missing file, YAML syntax error, or a validation error (message names the field path
            and the expected value).
    """
    from hetsim.plugins import load_plugins

    load_plugins()  # device kinds of installed plugins (hetsim/plugins.py)
    p = Path(path)
    data = read_yaml(p, PlatformError, "platform file")
    if isinstance(data, dict) and isinstance(data.get("devices"), dict):
        for dev in data["devices"].values():
            if isinstance(dev, dict) and dev.get("latency_table"):
                t = Path(dev["latency_table"])
                if not t.is_absolute():
                    dev["latency_table"] = str((p.parent / t).resolve())
    return _validate(data, str(p))
