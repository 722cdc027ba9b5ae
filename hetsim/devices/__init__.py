"""Device kinds and their registry.

A device kind is one module here: a Pydantic config class derived from
:class:`~hetsim.devices.base.DeviceBase` whose ``kind`` field is a ``Literal`` naming the kind, answering the
capability protocol (``docs/extending.md`` walks through adding one). Adding a kind = its module plus one
:func:`register_kind` line below; the platform YAML accepts it from then on. A kind defined elsewhere (a user's
package, a test) is registered the same way at run time.
"""

from __future__ import annotations

from hetsim.devices.base import WEIGHT_POLICIES, Capacity, DeviceBase, Peaks, Reprogramming
from hetsim.devices.cpu import CpuDevice
from hetsim.devices.diana import DianaAimc, DianaDigital
from hetsim.devices.efr32 import CortexM, Mvp
from hetsim.devices.link import Link
from hetsim.devices.memory import Memory, WeightPort
from hetsim.devices.npu import Npu
from hetsim.devices.puma import PumaDevice
from hetsim.tagged_registry import TaggedRegistry

_REGISTRY = TaggedRegistry(DeviceBase, "kind", "device kind")
#: kind name -> config class, in registration order (the order error messages list them in).
DEVICE_KINDS: dict[str, type[DeviceBase]] = _REGISTRY.classes
#: the kind a config class declares: the default of its ``kind`` field (TypeError without one)
kind_name = _REGISTRY.name_of
#: make a class a device kind of the platform YAML (usable as a class decorator; TypeError, ValueError)
register_kind = _REGISTRY.register
#: remove a kind registered at run time (tests use it to clean up); unknown names are ignored
unregister_kind = _REGISTRY.unregister
#: call a function whenever the registry changes (the platform model rebuilds its device union)
on_kinds_changed = _REGISTRY.on_change


for _cls in (CpuDevice, PumaDevice, DianaDigital, DianaAimc, Npu, CortexM, Mvp):
    register_kind(_cls)

__all__ = ["Capacity", "DeviceBase", "Peaks", "CpuDevice", "PumaDevice", "DianaDigital", "DianaAimc", "Npu", "CortexM",
           "Mvp", "Link", "Memory", "WeightPort", "WEIGHT_POLICIES",
           "Reprogramming", "DEVICE_KINDS", "register_kind", "unregister_kind", "kind_name"]
