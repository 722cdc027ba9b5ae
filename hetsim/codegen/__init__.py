"""Firmware for a mapped spiking network (SpikeDuet's last step, its Fig. 1): C99 for the EFR32MG24's Cortex-M33
and MVP, built with the Arm GNU toolchain and checked under QEMU's ``mps2-an505`` (a Cortex-M33) against hetsim's
own LIF replay, memory accounting and cycle predictions.

* :mod:`hetsim.codegen.firmware`: :func:`prepare_firmware` (plan the network as ``hetsim run`` does) and
  :func:`write_firmware` (the C sources, the MVP interface and its stand-in, startup, linker script, Makefile);
* :mod:`hetsim.codegen.toolchain`: build (``make``), ``arm-none-eabi-size``, run under QEMU with semihosting;
* :mod:`hetsim.codegen.check`: the emulated outputs against the replay, the image's sections against hetsim's
  SRAM/Flash plan, QEMU's instruction counts against the predicted M33 cycles (emulation, not timing).

``hetsim codegen PLATFORM NET.yaml --mapper spikeduet [--reorder] -o DIR [--run]`` is the command.
"""

from hetsim._lazy import attach

_NAMES = {
    "Firmware": "hetsim.codegen.firmware", "prepare_firmware": "hetsim.codegen.firmware",
    "write_firmware": "hetsim.codegen.firmware", "build_firmware": "hetsim.codegen.toolchain",
    "run_firmware": "hetsim.codegen.toolchain", "check_firmware": "hetsim.codegen.check",
}
__all__ = sorted(_NAMES)
__getattr__, __dir__ = attach(__name__, _NAMES, __all__)
