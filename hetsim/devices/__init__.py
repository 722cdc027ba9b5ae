"""Device kinds and their registry.

A device kind is one module here: a Pydantic config class derived from
:class:`~hetsim.devices.base.DeviceBase` whose ``kind`` field is a ``Literal`` naming the kind, answering the
capability protocol (``docs/extending.md`` walks through adding one). Adding a kind = its module plus one
:func:`register_kind` line below; the platform YAML accepts it from then on. A kind defined elsewhere (a user's
package, a test) is registered the same way at run time.
"""

from __future__ import annotations

from collections.abc import Callable

from hetsim.devices.base import WEIGHT_POLICIES, Capacity, DeviceBase, Peaks, Reprogramming
from hetsim.devices.cpu import CpuDevice
from hetsim.devices.diana import DianaAimc, DianaDigital
from hetsim.devices.efr32 import CortexM, Mvp
from hetsim.devices.link import Link
from hetsim.devices.memory import Memory, WeightPort
from hetsim.devices.npu import Npu
from hetsim.devices.puma import PumaDevice

#: kind name -> config class, in registration order (the order error messages list them in).
DEVICE_KINDS: dict[str, type[DeviceBase]] = {}
_listeners: list[Callable[[], None]] = []


def kind_name(cls: type[DeviceBase]) -> str:
    """The kind a config class declares: the default of its ``kind`` field.

    Raises:
        TypeError: the class has no ``kind`` field with a default.
    """
    field = cls.model_fields.get("kind")
    if field is None or not isinstance(field.default, str):
        raise TypeError(f"{cls.__name__} needs a field kind: Literal['NAME'] = 'NAME'")
    return field.default


def register_kind(cls: type[DeviceBase]) -> type[DeviceBase]:
    """Make ``cls`` a device kind of the platform YAML (usable as a class decorator).

    Raises:
        TypeError: ``cls`` is not a :class:`DeviceBase` with a ``kind`` field.
        ValueError: another class already holds its kind name.
    """
    if not (isinstance(cls, type) and issubclass(cls, DeviceBase)):
        raise TypeError(f"a device kind must subclass hetsim.devices.base.DeviceBase, got {cls!r}")
    name = kind_name(cls)
    if DEVICE_KINDS.get(name, cls) is not cls:
        raise ValueError(f"device kind {name!r} is already registered by {DEVICE_KINDS[name].__name__}")
    DEVICE_KINDS[name] = cls
    for fn in _listeners:
        fn()
    return cls


def unregister_kind(name: str) -> None:
    """Remove a kind registered at run time (tests use it to clean up). Unknown names are ignored."""
    if DEVICE_KINDS.pop(name, None) is not None:
        for fn in _listeners:
            fn()


def on_kinds_changed(fn: Callable[[], None]) -> None:
    """Call ``fn`` whenever the registry changes (the platform model rebuilds its device union)."""
    _listeners.append(fn)


for _cls in (CpuDevice, PumaDevice, DianaDigital, DianaAimc, Npu, CortexM, Mvp):
    register_kind(_cls)

__all__ = ["Capacity", "DeviceBase", "Peaks", "CpuDevice", "PumaDevice", "DianaDigital", "DianaAimc", "Npu", "CortexM",
           "Mvp", "Link", "Memory", "WeightPort", "WEIGHT_POLICIES",
           "Reprogramming", "DEVICE_KINDS", "register_kind", "unregister_kind", "kind_name"]
