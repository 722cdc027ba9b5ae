"""Device kinds. One module per kind: its Pydantic config and its latency/energy model.

Adding a device kind = adding one module here and one entry in :data:`DEVICE_KINDS` /
:data:`hetsim.platform.DeviceConfig`.
"""

from hetsim.devices.cpu import CpuDevice
from hetsim.devices.diana import DianaAimc, DianaDigital
from hetsim.devices.efr32 import CortexM, Mvp
from hetsim.devices.link import Link
from hetsim.devices.memory import Memory
from hetsim.devices.puma import PumaDevice

DEVICE_KINDS = {"cpu": CpuDevice, "puma": PumaDevice, "diana-digital": DianaDigital, "diana-aimc": DianaAimc,
                "cortex-m": CortexM, "mvp": Mvp}

__all__ = ["CpuDevice", "PumaDevice", "DianaDigital", "DianaAimc", "CortexM", "Mvp", "Link", "Memory",
           "DEVICE_KINDS"]
