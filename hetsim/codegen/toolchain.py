"""Build a generated firmware folder with the Arm GNU toolchain and run it under QEMU (:mod:`hetsim.codegen`).

Tools (Debian packages ``gcc-arm-none-eabi``, ``libnewlib-arm-none-eabi``, ``qemu-system-arm``, ``make``):
``make`` drives ``arm-none-eabi-gcc`` (the folder's ``Makefile``: Cortex-M33, ``-mfpu=fpv5-sp-d16
-mfloat-abi=hard``); ``arm-none-eabi-size -A`` and ``arm-none-eabi-nm`` read the image's sections and symbols;
``qemu-system-arm -M mps2-an505`` runs it with semihosting and ``-icount shift=7`` (QEMU's clock advances 128 ns
per emulated instruction, so SysTick, read by the firmware at every op, counts instructions: emulation, not
the chip's timing).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from hetsim.errors import HetsimError, InputError

#: executables the build and the run need, and the Debian packages that provide them
TOOLS = {"make": "make", "arm-none-eabi-gcc": "gcc-arm-none-eabi", "arm-none-eabi-size": "binutils-arm-none-eabi",
         "arm-none-eabi-nm": "binutils-arm-none-eabi", "qemu-system-arm": "qemu-system-arm"}
#: a file newlib's Debian package installs (the C library the firmware links against)
NEWLIB_PROBE = "/usr/lib/arm-none-eabi/newlib"
QEMU_ARGS = ("-M", "mps2-an505", "-nographic", "-monitor", "none", "-serial", "none",
             "-semihosting-config", "enable=on,target=native", "-icount", "shift=7")


class FirmwareError(HetsimError):
    """The firmware failed to build or to run (a defect of the generated code or the toolchain, not of the
    user's input); the message carries the tool's last lines."""


def missing_tools(run: bool = True) -> list[str]:
    """The tools of :data:`TOOLS` not on ``PATH`` (``run=False``: only those the build needs)."""
    need = [t for t in TOOLS if run or t != "qemu-system-arm"]
    return [t for t in need if shutil.which(t) is None]


def require_tools(run: bool = True) -> None:
    """Raises: InputError: a tool is missing (the message names the Debian packages to install)."""
    miss = missing_tools(run)
    if miss:
        pkgs = {TOOLS[t] for t in miss}
        if "arm-none-eabi-gcc" in miss:
            pkgs.add("libnewlib-arm-none-eabi")
        pkgs = sorted(pkgs)
        raise InputError(f"{', '.join(miss)} not found; install the Arm toolchain and QEMU (Debian: apt-get install "
                         f"{' '.join(pkgs)})")


@dataclass
class Build:
    """A built firmware image.

    Attributes:
        elf: ``build/fw.elf``.
        sections: section name -> ``(bytes, address)`` (``arm-none-eabi-size -A``; debug sections dropped).
        symbols: symbol name -> ``(bytes, section)`` for the data and code objects (``arm-none-eabi-nm -S``).
        fits_chip: whether the link passed the chip's 256 KiB SRAM / 1536 KiB Flash checks; ``False``: it was
            linked for the emulator only (``make CHIP_FIT=0``) and ``fit_message`` says why.
        seconds: wall time of ``make``.
    """

    elf: Path
    sections: dict[str, tuple[int, int]]
    symbols: dict[str, tuple[int, str]]
    fits_chip: bool = True
    fit_message: str = ""
    seconds: float = 0.0


def _tail(text: str, n: int = 6) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return " | ".join(lines[-n:])


def _make(folder: Path, args: list[str], timeout: float) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["make", "-C", str(folder), *args], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise FirmwareError(f"make in {folder} did not finish in {timeout:g} s") from None


def build_firmware(folder: str | Path, jobs: int = 2, timeout: float = 600.0) -> Build:
    """``make`` the firmware folder; when the image does not fit the chip, link it for the emulator only
    (``CHIP_FIT=0``) and say so in :attr:`Build.fit_message`.

    Raises:
        InputError: the toolchain is missing (:func:`require_tools`).
        FirmwareError: the compile or link fails for another reason.
    """
    require_tools(run=False)
    folder = Path(folder)
    t0 = time.perf_counter()
    r = _make(folder, [f"-j{max(1, jobs)}"], timeout)
    fits, why = True, ""
    if r.returncode != 0:
        msg = r.stdout + r.stderr
        m = re.search(r"does not fit the EFR32MG24's [^(]*", msg)
        if not m:
            raise FirmwareError(f"building the firmware in {folder} failed: {_tail(msg)}")
        fits, why = False, m.group(0).strip()
        r = _make(folder, [f"-j{max(1, jobs)}", "CHIP_FIT=0"], timeout)
        if r.returncode != 0:
            raise FirmwareError(f"building the firmware in {folder} failed: {_tail(r.stdout + r.stderr)}")
    elf = folder / "build" / "fw.elf"
    secs = section_sizes(elf)
    return Build(elf, secs, symbol_sizes(elf, secs), fits, why, time.perf_counter() - t0)


def section_sizes(elf: Path) -> dict[str, tuple[int, int]]:
    """Allocated sections of ``elf``: name -> ``(bytes, address)`` (``arm-none-eabi-size -A``)."""
    out = subprocess.run(["arm-none-eabi-size", "-A", str(elf)], capture_output=True, text=True, check=True).stdout
    secs = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0].startswith(".") and parts[1].isdigit() and int(parts[2]) > 0:
            secs[parts[0]] = (int(parts[1]), int(parts[2]))
    return secs


def symbol_sizes(elf: Path, sections: dict[str, tuple[int, int]]) -> dict[str, tuple[int, str]]:
    """Sized symbols of ``elf``: name -> ``(bytes, section)`` (``arm-none-eabi-nm -S``; the section found from
    the address)."""
    out = subprocess.run(["arm-none-eabi-nm", "-S", "-t", "d", str(elf)], capture_output=True, text=True,
                         check=True).stdout
    syms = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) != 4:
            continue
        addr, size, name = int(parts[0]), int(parts[1]), parts[3]
        sec = next((s for s, (n, a) in sections.items() if a <= addr < a + n), "")
        syms[name] = (size, sec)
    return syms


@dataclass
class FirmwareRun:
    """What the emulated firmware printed (one run over every test sample).

    Attributes:
        predictions: int ``[samples]``; counts: int ``[samples, n_out]`` output spike counts;
        msum_bits: uint32 ``[samples, n_out]`` FP32 bits of the output membrane summed over T;
        layer_spikes: int ``[samples, L]`` spikes per layer (all neurons, all timesteps).
        launches, processed: int ``[L]`` MVP launches and processed columns over the run (0 for M33 layers).
        calibration: ``(SysTick ticks, instructions)`` of a known loop; ``ticks``: per profiling category
            (:func:`category_names`), SysTick ticks over the run.
        stack_bytes: deepest stack use. wall_s: the emulator's wall time. stdout: the raw output.
    """

    predictions: np.ndarray
    counts: np.ndarray
    msum_bits: np.ndarray
    layer_spikes: np.ndarray
    launches: np.ndarray
    processed: np.ndarray
    calibration: tuple[int, int]
    ticks: np.ndarray
    stack_bytes: int = 0
    wall_s: float = 0.0
    stdout: str = field(default="", repr=False)

    @property
    def instructions(self) -> np.ndarray:
        """Emulated instructions per profiling category (ticks scaled by the calibration loop), float."""
        ticks, insns = self.calibration
        return self.ticks * (insns / ticks)


def category_names(n_layers: int) -> list[tuple[str, int]]:
    """The firmware's profiling categories in index order (``snn_fw.h``'s ``PROF_*``): ``(kind, layer)``, kind
    ``other`` | ``readout`` | ``affine`` | ``program`` | ``lif`` | ``standin`` (the MVP stand-in's work), layer 0
    for the first two."""
    out = [("other", 0), ("readout", 0)]
    for layer in range(1, n_layers + 1):
        out += [("affine", layer), ("program", layer), ("lif", layer), ("standin", layer)]
    return out


def parse_output(text: str, n_out: int, n_layers: int) -> FirmwareRun:
    """Parse a run's output (format in ``runtime.c``).

    Raises:
        FirmwareError: the firmware reported a failure, or the output is incomplete.
    """
    fail = re.search(r"^FAIL (.*)$", text, re.M)
    if fail:
        raise FirmwareError(f"the firmware stopped: {fail.group(1)}")
    if not re.search(r"^E$", text, re.M):
        raise FirmwareError(f"the firmware's output is incomplete: {_tail(text, 3) or 'nothing printed'}")
    preds, counts, msums, spikes = [], [], [], []
    launches, processed = np.zeros(n_layers, np.int64), np.zeros(n_layers, np.int64)
    ticks = np.zeros(2 + 4 * n_layers, np.float64)
    cal, stack = (1, 1), 0
    for line in text.splitlines():
        p = line.split()
        if not p:
            continue
        if p[0] == "S":
            head, ms, sp = line.split("|")
            h = head.split()
            preds.append(int(h[2]))
            counts.append([int(x) for x in h[3:3 + n_out]])
            msums.append([int(x, 16) for x in ms.split()])
            spikes.append([int(x) for x in sp.split()])
        elif p[0] == "R":
            launches[int(p[1]) - 1], processed[int(p[1]) - 1] = int(p[2]), int(p[3])
        elif p[0] == "C":
            cal = (int(p[1]), int(p[2]))
        elif p[0] == "P":
            ticks[int(p[1])] = (int(p[2]) << 32) + int(p[3])
        elif p[0] == "K":
            stack = int(p[1])
    return FirmwareRun(np.array(preds, np.int64), np.array(counts, np.int64).reshape(-1, n_out),
                       np.array(msums, np.uint32).reshape(-1, n_out), np.array(spikes, np.int64).reshape(-1, n_layers),
                       launches, processed, cal, ticks, stack, stdout=text)


def run_firmware(folder: str | Path, n_out: int, n_layers: int, timeout: float = 600.0) -> FirmwareRun:
    """Run ``folder/build/fw.elf`` under ``qemu-system-arm -M mps2-an505`` (:data:`QEMU_ARGS`) and parse what it
    prints (:func:`parse_output`).

    Raises:
        InputError: QEMU is missing.
        FirmwareError: the run fails, times out or prints a failure.
    """
    require_tools(run=True)
    elf = Path(folder) / "build" / "fw.elf"
    if not elf.is_file():
        raise FirmwareError(f"{elf} does not exist; build the firmware first")
    t0 = time.perf_counter()
    try:
        r = subprocess.run(["qemu-system-arm", *QEMU_ARGS, "-kernel", str(elf)], capture_output=True, text=True,
                           timeout=timeout, env={**os.environ, "QEMU_AUDIO_DRV": "none"})
    except subprocess.TimeoutExpired:
        raise FirmwareError(f"the firmware did not finish under QEMU in {timeout:g} s") from None
    text = r.stdout + "\n" + r.stderr  # QEMU 7's semihosting console is its stderr (8's its stdout)
    if r.returncode != 0 and "FAIL" not in text:
        raise FirmwareError(f"QEMU exited with {r.returncode}: {_tail(text)}")
    run = parse_output(text, n_out, n_layers)
    run.wall_s = time.perf_counter() - t0
    return run
