"""The firmware of a mapped spiking network: what SpikeDuet's flow hands to the EFR32MG24 (its Fig. 1), as C99.

:func:`prepare_firmware` runs hetsim's SNN path up to the plan (optional function-preserving reordering,
:func:`hetsim.snn.reorder.reorder_for_platform`; the unrolled workload; the activity cost model on the eval
split; the SNN mapper), and :func:`write_firmware` writes a folder that builds with the Arm GNU toolchain
(``make``; ``thumbv8m.main``, the M33's single-precision FPU, hard-float ABI) and runs under QEMU's
``mps2-an505`` (a Cortex-M33) with semihosting (``make run``):

* ``network.c`` / ``network.h``: the plan baked in: per affine layer its weight table as a ``const`` array,
  column-major, neurons in the plan's order (the reordered network's), placed per the plan's residency
  (``FW_SRAM_WEIGHTS``: ``.data``, copied to SRAM at boot; ``FW_FLASH_WEIGHTS``: ``.rodata`` in Flash;
  ``flash+hot``: the table in Flash and its hottest fit-split columns copied to an SRAM table at boot), the
  engine (sparse M33 loop over active columns, dense or range-sparse MVP launches with the merged gap of the
  platform's MVP), the LIF parameters, the host program (the schedule's order of the M33's ops: blocking or
  asynchronous as the plan says) and the eval split's input spikes (a separate ``.testdata`` region, not part
  of the chip's image);
* fixed sources (``hetsim/codegen/templates``): ``runtime.c`` (the inference loop, kernels, profiling),
  ``mvp.h`` (the MVP's program / launch / wait interface), ``mvp_standin.c`` (its functional stand-in in C),
  ``semihost.c``, ``startup.c``, ``mps2_an505.ld`` (the chip's 1536 KiB Flash and 256 KiB SRAM), ``Makefile``.

Arithmetic (``snn_fw.h``): the replay's (:func:`hetsim.snn.network.replay` with ``exact_sums=True``), so the
firmware's spikes equal hetsim's bit for bit whatever the neuron order (checked by
:mod:`hetsim.codegen.check`). This module's own checks: every affine layer's exact accumulator fits 63 bits.
"""

from __future__ import annotations

import math
import shutil
import tempfile
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np

from hetsim.devices.efr32 import ENGINE_M33, ENGINE_MVP_DENSE, ENGINE_MVP_RANGE
from hetsim.errors import InputError, OutputExistsError, WorkloadError

#: fixed sources copied into every firmware folder
TEMPLATES = ("Makefile", "mps2_an505.ld", "mvp.h", "mvp_standin.c", "runtime.c", "semihost.c", "semihost.h",
             "snn_fw.h", "startup.c")
#: generated sources
GENERATED = ("network.c", "network.h")
_ENGINE_C = {ENGINE_M33: "ENGINE_M33", ENGINE_MVP_DENSE: "ENGINE_MVP_DENSE", ENGINE_MVP_RANGE: "ENGINE_MVP_RANGE"}
_RES_C = {"sram": "RES_SRAM", "flash": "RES_FLASH", "flash+hot": "RES_FLASH_HOT"}
_OP_C = {"program": 0, "affine": 1, "lif": 2, "readout": 3}
_RESET_C = {"subtract": "RESET_SUBTRACT", "zero": "RESET_ZERO", "none": "RESET_NONE"}
#: largest host program (entries of 4 bytes) written as a table
MAX_HOST_OPS = 1 << 16


@dataclass
class FirmwareLayer:
    """One affine + LIF layer as the firmware stores it.

    Attributes:
        layer: 1..L; n_in, n_out: its input and output widths.
        engine, residency, hot_columns: the plan's choice (:class:`hetsim.snn.activity_costs.LayerChoice`).
        hot_cols: int ``[hot_columns]``, the columns copied to SRAM (hottest on the fit split first).
        max_gap: range-sparse MVP: the largest gap of inactive columns merged into a launch.
        elem: ``f32`` or ``f16`` (MVP tables of an ``mvp_fp16`` build).
        weights: float32 ``[n_out, n_in]`` as the firmware computes with them (FP16-rounded for ``f16``).
        fx_exp: biased FP32 exponent of the exact accumulator's unit (``2^(fx_exp - 150)``).
        accumulator_bits: bits the largest possible partial sum needs (at most 63).
    """

    layer: int
    n_in: int
    n_out: int
    engine: str
    residency: str
    hot_columns: int
    hot_cols: np.ndarray
    max_gap: int
    elem: str
    weights: np.ndarray
    fx_exp: int
    accumulator_bits: int

    @property
    def table_bytes(self) -> int:
        """Bytes of the weight table as stored (4 per FP32 element, 2 per FP16)."""
        return self.n_in * self.n_out * (2 if self.elem == "f16" else 4)


@dataclass
class Firmware:
    """A mapped spiking network ready to be written as C (:func:`prepare_firmware`).

    Attributes:
        snn: the network in the plan's neuron order (reordered when asked).
        schedule: the mapper's :class:`~hetsim.schedule.Schedule` (``config``: mode and per-layer choices).
        costs: the :class:`~hetsim.snn.activity_costs.ActivityCostModel` on the eval split (hetsim's predictions).
        layers: one :class:`FirmwareLayer` per affine layer.
        host_ops: the M33's ops in the schedule's order (:class:`~hetsim.snn.unroll.SnnStep`), without the
            empty ``program`` ops of M33 layers.
        mode: ``async`` | ``blocking``.
        inputs: bool ``[samples, T, n_0]``, the eval split's input spikes the firmware runs on.
        mvp_fp16: MVP weight tables stored as FP16 (the chip's format) instead of FP32.
        reordering: the :class:`~hetsim.snn.reorder.ReorderResult`, or ``None``.
        platform_path, network_path: what it was made from (for the README of the folder).
    """

    snn: object
    schedule: object
    costs: object
    layers: list[FirmwareLayer]
    host_ops: list
    mode: str
    inputs: np.ndarray
    mvp_fp16: bool = False
    reordering: object = None
    platform_path: str = ""
    network_path: str = ""
    settings: dict = field(default_factory=dict)

    @property
    def samples(self) -> int:
        return int(self.inputs.shape[0])

    def reference_network(self):
        """The network exactly as the firmware computes it: :attr:`snn` with the FP16-rounded MVP weights of an
        ``mvp_fp16`` build (else :attr:`snn` itself)."""
        if not self.mvp_fp16:
            return self.snn
        return self.snn.replace(weights=[fl.weights for fl in self.layers])

    def reference(self):
        """hetsim's LIF replay of :attr:`inputs` through :meth:`reference_network` with order-independent sums
        (:func:`hetsim.snn.network.replay`, ``exact_sums=True``): what the firmware must print."""
        from hetsim.snn.network import replay

        return replay(self.reference_network(), self.inputs, exact_sums=True)


def exact_accumulator(weights: np.ndarray, what: str) -> tuple[int, int]:
    """``(fx_exp, bits)`` of the firmware's exact fixed-point sum of ``weights`` float32 ``[n_out, n_in]``:
    the unit ``2^(fx_exp - 150)`` is the smallest nonzero weight's ulp scale (its biased exponent, 1 for
    subnormals), and ``bits = 24 + (largest - smallest biased exponent) + ceil(log2(n_in))`` bounds every partial
    sum of up to ``n_in`` terms (snn_fw.h, "Arithmetic").

    Raises:
        WorkloadError: the sum needs more than 63 bits (weights spanning too many binades for an exact 64-bit
            accumulator), or the smallest weight is below ``2^-103`` (the unit would be subnormal).
    """
    w = np.ascontiguousarray(weights, dtype=np.float32)
    e = ((w.view(np.uint32) >> 23) & 0xFF).astype(np.int64)
    nz = w != 0
    if not nz.any():
        return 127, 0
    e = np.maximum(e[nz], 1)
    lo, hi = int(e.min()), int(e.max())
    bits = 24 + (hi - lo) + max(0, math.ceil(math.log2(max(1, w.shape[1]))))
    if bits > 63:
        raise WorkloadError(f"{what}: the weights span {hi - lo} binades; their exact sum needs {bits} bits, more "
                            "than the firmware's 64-bit accumulator holds")
    if lo < 24:
        raise WorkloadError(f"{what}: a weight below 2^-103 ({float(np.abs(w[nz]).min()):g}); the firmware's exact "
                            "accumulator does not handle weights that small")
    return lo, bits


def _fp16_round(w: np.ndarray, what: str) -> np.ndarray:
    h = w.astype(np.float16)
    if not np.all(np.isfinite(h)):
        raise WorkloadError(f"{what}: a weight overflows FP16 (|w| > 65504); build without --mvp-fp16")
    return h.astype(np.float32)


def _prepare_layers(snn, cm, choices, mvp_fp16: bool) -> list[FirmwareLayer]:
    from hetsim.snn.activity import hot_order

    fit = snn.split("fit")
    sizes = snn.layer_sizes
    out = []
    for li, c in enumerate(choices):
        n_in, n_out = sizes[li], sizes[li + 1]
        on_mvp = c.engine != ENGINE_M33
        elem = "f16" if on_mvp and mvp_fp16 else "f32"
        w = snn.weights[li]
        if elem == "f16":
            w = _fp16_round(w, f"{snn.name}: W{li + 1}")
        fx, bits = exact_accumulator(w, f"{snn.name}: W{li + 1}")
        hot = hot_order(fit[li])[: c.hot_columns] if c.residency == "flash+hot" else np.zeros(0, np.int64)
        gap = cm.mvp.max_gap(n_out, c.residency) if c.engine == ENGINE_MVP_RANGE else 0
        out.append(FirmwareLayer(li + 1, n_in, n_out, c.engine, c.residency, int(c.hot_columns),
                                 np.asarray(hot, np.int64), int(min(gap, 0xFFFF)), elem, w, fx, bits))
    return out


def prepare_firmware(platform, network, mapper: str = "spikeduet", *, mode: str = "async", reorder: bool = False,
                     seed: int = 0, mvp_fp16: bool = False, spikes=None, time_limit_s: float | None = None,
                     ) -> Firmware:
    """Plan a spiking network as ``hetsim run`` does and collect what its firmware needs.

    Steps: load (an SNN spec ``.yaml``, a NIR graph ``.nir`` with ``spikes``, or an
    :class:`~hetsim.snn.network.SNN`); reorder hidden neurons when ``reorder`` (verified function-preserving);
    unroll; price on the eval split (:class:`~hetsim.snn.activity_costs.ActivityCostModel`); map with ``mapper`` in
    ``mode`` (planned on the plan split, SpikeDuet Sec. III).

    Args:
        platform: an EFR32MG24-like platform or its YAML path.
        network: SNN spec / NIR path or an SNN.
        mapper: ``spikeduet`` | ``all-m33`` | ``all-dense-mvp``.
        mode: ``async`` | ``blocking``.
        reorder, seed: function-preserving neuron reordering and its refinement seed.
        mvp_fp16: store MVP weight tables as FP16 (the chip's format; results then follow the FP16-rounded
            weights, see :meth:`Firmware.reference`).
        time_limit_s: the mapper's time limit.

    Raises:
        InputError: (subclasses) a bad platform, network, mapper or option; weights the exact accumulator cannot
            hold (:func:`exact_accumulator`); a host program over :data:`MAX_HOST_OPS` ops.
    """
    from hetsim.mappers.base import get_mapper
    from hetsim.mappers.spikeduet import layer_choices
    from hetsim.platform import Platform, load_platform
    from hetsim.snn.activity_costs import ActivityCostModel
    from hetsim.snn.network import SNN, load_snn
    from hetsim.snn.unroll import unroll

    plat = platform if isinstance(platform, Platform) else load_platform(platform)
    net = network if isinstance(network, SNN) else load_snn(network, spikes=spikes)
    m = get_mapper(mapper, mode=mode, time_limit_s=time_limit_s)
    if "snn" not in getattr(m, "workloads", frozenset()):
        raise InputError(f"mapper {mapper!r} maps ONNX models; firmware is generated for spiking networks "
                         "(spikeduet, all-m33, all-dense-mvp)")
    reo = None
    if reorder:
        from hetsim.snn.reorder import reorder_for_platform

        reo = reorder_for_platform(net, plat, seed=seed)
        net = reo.snn
    wl = unroll(net)
    cm = ActivityCostModel(wl, plat, "eval")
    sched = m.map(cm)
    choices = layer_choices(sched)
    host_ops = [wl.steps[name] for name in sched.order[cm.host]]
    host_ops = [s for s in host_ops if not (s.kind == "program" and choices[s.layer - 1].engine == ENGINE_M33)]
    if len(host_ops) > MAX_HOST_OPS:
        raise InputError(f"{net.name}: the host program has {len(host_ops)} ops (T = {net.timesteps}); the "
                         f"firmware's table holds at most {MAX_HOST_OPS}")
    layers = _prepare_layers(net, cm, choices, mvp_fp16)
    return Firmware(snn=net, schedule=sched, costs=cm, layers=layers, host_ops=host_ops,
                    mode=sched.config["mode"], inputs=np.asarray(net.split("eval")[0], bool), mvp_fp16=mvp_fp16,
                    reordering=reo, platform_path=str(getattr(platform, "name", platform)),
                    network_path=str(network if not isinstance(network, SNN) else net.name),
                    settings={"mapper": mapper, "mode": sched.config["mode"], "reorder": reorder, "seed": seed,
                              "mvp_fp16": mvp_fp16})


# --------------------------------------------------------------------------------------------- C emission

def _c_floats(a: np.ndarray, per_line: int = 8) -> str:
    """float32 values as C float literals (shortest strings that round-trip in FP32: exact)."""
    vals = [np.format_float_scientific(v, unique=True, trim="0") + "f" for v in np.asarray(a, np.float32).ravel()]
    vals = [v.replace(".e", ".0e") for v in vals]
    return _c_lines(vals, per_line)


def _c_ints(a, per_line: int = 16, fmt: str = "{}") -> str:
    return _c_lines([fmt.format(int(v)) for v in np.asarray(a).ravel()], per_line)


def _c_lines(vals: list[str], per_line: int) -> str:
    if not vals:
        return "    0"
    rows = [", ".join(vals[i:i + per_line]) for i in range(0, len(vals), per_line)]
    return "    " + ",\n    ".join(rows)


def _uniform(a: np.ndarray) -> bool:
    return bool(np.all(a == a[0]))


def _layer_c(fw: Firmware, fl: FirmwareLayer, last: bool, consumer_on_mvp: bool) -> tuple[list[str], str]:
    """C definitions of one layer and its ``fw_layer_t`` initialiser."""
    snn, k, li = fw.snn, fl.layer, fl.layer - 1
    out = [f"/* ---- layer {k}: Linear {fl.n_in} -> {fl.n_out} + LIF; engine {fl.engine}, weights in {fl.residency}"
           + (f" ({fl.hot_columns} hot columns in SRAM)" if fl.residency == "flash+hot" else "")
           + (f", max merged gap {fl.max_gap}" if fl.engine == ENGINE_MVP_RANGE else "") + " ---- */"]
    place = "FW_SRAM_WEIGHTS" if fl.residency == "sram" else "FW_FLASH_WEIGHTS"
    wt = np.ascontiguousarray(fl.weights.T)  # [n_in, n_out]: column j contiguous
    if fl.elem == "f16":
        bits = wt.astype(np.float16).view(np.uint16)
        out.append(f"/* W{k}^T [{fl.n_in}][{fl.n_out}], IEEE FP16 bits */")
        out.append(f"static const uint16_t W{k}[{wt.size}] {place} = {{\n{_c_ints(bits, 12, '0x{:04x}')}\n}};")
    else:
        out.append(f"/* W{k}^T [{fl.n_in}][{fl.n_out}] (column j of W{k} at j * {fl.n_out}) */")
        out.append(f"static const float W{k}[{wt.size}] {place} = {{\n{_c_floats(wt)}\n}};")
    hot = "0, 0, 0, 0"
    if fl.residency == "flash+hot":
        slot = np.full(fl.n_in, -1, np.int64)
        slot[fl.hot_cols] = np.arange(fl.hot_columns)
        out.append(f"static const uint16_t HOTCOLS{k}[{max(1, fl.hot_columns)}] = {{\n{_c_ints(fl.hot_cols)}\n}};")
        out.append(f"static const int16_t HOTSLOT{k}[{fl.n_in}] = {{\n{_c_ints(slot)}\n}};")
        out.append(f"static float HOT{k}[{max(1, fl.hot_columns * fl.n_out)}] FW_HOT_WEIGHTS;")
        hot = f"{fl.hot_columns}, HOTCOLS{k}, HOTSLOT{k}, HOT{k}"
    n = fl.n_out
    bias = snn.biases[li]
    has_b = bool(np.any(bias))
    if has_b:
        out.append(f"static const float B{k}[{n}] = {{\n{_c_floats(bias)}\n}};")
    beta, thr = snn.beta[li], snn.threshold[li]
    if not _uniform(beta):
        out.append(f"static const float BETA{k}[{n}] = {{\n{_c_floats(beta)}\n}};")
    if not _uniform(thr):
        out.append(f"static const float THR{k}[{n}] = {{\n{_c_floats(thr)}\n}};")
    out.append(f"static float U{k}[{n}];\nstatic float CUR{k}[2 * {n}];\nstatic uint8_t SPK{k}[2 * {n}];\n"
               f"static uint16_t IDX{k}[2 * {n}];\nstatic uint16_t NACT{k}[2];")
    if consumer_on_mvp:
        out.append(f"static uint16_t X16_{k}[2 * {n}];")
    if last:
        out.append(f"static float MEM{k}[2 * {n}];")
    scale = float(np.ldexp(np.float32(1), fl.fx_exp - 150))
    init = (f"    {{ {fl.n_in}, {fl.n_out}, {_ENGINE_C[fl.engine]}, {_RES_C[fl.residency]}, "
            f"{'MVP_ELEM_F16' if fl.elem == 'f16' else 'MVP_ELEM_F32'}, {fl.max_gap}, {fl.fx_exp}, "
            f"{np.format_float_scientific(np.float32(scale), unique=True)}f, W{k}, {hot},\n"
            f"      {f'B{k}' if has_b else '0'}, {'0' if _uniform(beta) else f'BETA{k}'}, "
            f"{'0' if _uniform(thr) else f'THR{k}'}, "
            f"{_c_floats(beta[:1]).strip()}, {_c_floats(thr[:1]).strip()},\n"
            f"      U{k}, CUR{k}, SPK{k}, IDX{k}, NACT{k}, {f'X16_{k}' if consumer_on_mvp else '0'}, "
            f"{f'MEM{k}' if last else '0'} }}")
    return out, init


def network_h(fw: Firmware) -> str:
    """The generated ``network.h``: the network's constants as macros."""
    snn = fw.snn
    sizes = snn.layer_sizes
    max_ranges = max([fl.n_in // 2 + 1 for fl in fw.layers] + [1])
    macros = {
        "FW_NAME": '"' + snn.name.replace('"', "'") + '"',
        "FW_SAMPLES": fw.samples, "FW_T": snn.timesteps, "FW_LAYERS": snn.n_layers,
        "FW_N_IN": sizes[0], "FW_N_OUT": sizes[-1], "FW_IN_BYTES": (sizes[0] + 7) // 8,
        "FW_MAX_N": max(sizes[1:]), "FW_MAX_RANGES": max_ranges,
        "FW_RESET": _RESET_C[snn.reset],
        "FW_READOUT": "READOUT_SPIKE_COUNT" if snn.readout == "spike_count" else "READOUT_MEMBRANE_SUM",
        "FW_ASYNC": int(fw.mode == "async"), "FW_L1_ON_MVP": int(fw.layers[0].engine != ENGINE_M33),
    }
    lines = ["/* Constants of the generated network (hetsim codegen). */", "#ifndef HETSIM_NETWORK_H",
             "#define HETSIM_NETWORK_H", ""]
    lines += [f"#define {k} {v}" for k, v in macros.items()]
    lines += ["", "#endif", ""]
    return "\n".join(lines)


def _plan_comment(fw: Firmware) -> list[str]:
    use = fw.costs.memory_use([_choice(fl) for fl in fw.layers])
    lines = ["/* Generated by hetsim codegen: do not edit.", f" * network {fw.snn.name}, layers {fw.snn.layer_sizes}, "
             f"T = {fw.snn.timesteps}, readout {fw.snn.readout}, reset {fw.snn.reset}",
             f" * platform {fw.costs.platform.name}, mapper {fw.settings.get('mapper')}, mode {fw.mode}, "
             f"reordered: {'yes' if fw.reordering is not None else 'no'}",
             f" * hetsim's weight accounting: SRAM {use['sram']} B, Flash {use['flash']} B",
             f" * test inputs: {fw.samples} samples of the eval split ({fw.snn.roles.eval})"]
    for fl in fw.layers:
        lines.append(f" *   layer {fl.layer}: {fl.engine}, {fl.residency}"
                     + (f" ({fl.hot_columns} hot)" if fl.residency == "flash+hot" else "")
                     + f", {fl.elem.upper()} table, exact accumulator {fl.accumulator_bits} bits")
    return lines + [" */"]


def _choice(fl: FirmwareLayer):
    from hetsim.snn.activity_costs import LayerChoice

    return LayerChoice(fl.engine, fl.residency, fl.hot_columns)


def network_c(fw: Firmware) -> str:
    """The generated ``network.c``: weights, neuron parameters and state, the host program, the test inputs."""
    L = len(fw.layers)
    parts = _plan_comment(fw) + ['#include "snn_fw.h"', '#include "network.h"', ""]
    inits = []
    for fl in fw.layers:
        consumer = fl.layer < L and fw.layers[fl.layer].engine != ENGINE_M33
        body, init = _layer_c(fw, fl, fl.layer == L, consumer)
        parts += body + [""]
        inits.append(init)
    parts.append(f"const fw_layer_t fw_layers[{L}] = {{\n" + ",\n".join(inits) + "\n};\n")
    enc = [(_OP_C[s.kind] << 30) | (s.layer << 24) | s.t for s in fw.host_ops]
    parts.append(f"/* the M33's ops in the schedule's order ({fw.mode}): kind << 30 | layer << 24 | t; kinds "
                 "program 0, affine 1, lif 2, readout 3 */")
    parts.append(f"const uint32_t fw_host_order[{len(enc)}] = {{\n{_c_ints(enc, 8, '0x{:08x}u')}\n}};")
    parts.append(f"const uint32_t fw_host_order_len = {len(enc)};\n")
    n0 = fw.snn.layer_sizes[0]
    packed = np.packbits(fw.inputs, axis=-1, bitorder="little")
    parts.append(f"/* eval-split input spikes [{fw.samples}][{fw.snn.timesteps}][{packed.shape[-1]}], bit j of byte "
                 "j / 8 = input column j (LSB first); test data, outside the chip image */")
    parts.append(f"const uint8_t fw_inputs[{packed.size}] FW_TESTDATA = {{\n{_c_ints(packed, 24)}\n}};")
    parts.append(f"uint16_t fw_in_idx[2 * {n0}];\nuint16_t fw_in_n[2];")
    parts.append(f"uint16_t fw_in_x16[{2 * n0 if fw.layers[0].engine != ENGINE_M33 else 1}];")
    parts.append("mvp_range_t fw_ranges[FW_MAX_RANGES];\n")
    parts.append("void fw_init_weights(void)\n{")
    for fl in fw.layers:
        if fl.residency == "flash+hot" and fl.hot_columns:
            parts.append(f"    for (uint16_t s = 0; s < {fl.hot_columns}; s++)\n"
                         f"        for (uint16_t i = 0; i < {fl.n_out}; i++)\n"
                         f"            HOT{fl.layer}[s * {fl.n_out} + i] = W{fl.layer}[HOTCOLS{fl.layer}[s] * "
                         f"{fl.n_out} + i];")
    parts.append("}\n")
    return "\n".join(parts)


def _readme(fw: Firmware) -> str:
    return (f"Firmware of {fw.snn.name} for {fw.costs.platform.name}, generated by hetsim codegen "
            f"({fw.settings}).\n\n"
            "  make        build build/fw.elf (arm-none-eabi-gcc, Cortex-M33) and build/fw.size (arm-none-eabi-size)\n"
            "  make run    run it under qemu-system-arm -M mps2-an505 with semihosting\n\n"
            "Output of a run: one line per eval sample, 'S <sample> <prediction> <output spike counts> | <output "
            "membrane sums, FP32 bits> | <spikes per layer>'; then 'R <layer> <MVP launches> <processed columns>', "
            "'C <SysTick ticks> <instructions>' (calibration) and 'P <category> <ticks, high and low word>' "
            "(QEMU -icount emulated instructions per layer and op kind: emulation, not timing).\n")


def write_firmware(fw: Firmware, out_dir: str | Path, force: bool = False) -> list[Path]:
    """Write the firmware folder (module docstring) at ``out_dir``; returns the files written.

    The folder is written beside ``out_dir`` and renamed into place, so a failed write leaves nothing half
    written; an existing ``out_dir`` is replaced only with ``force``.

    Raises:
        OutputExistsError: ``out_dir`` exists (and is not empty) without ``force``.
        InputError: ``out_dir`` is a file, or its parent cannot be created.
    """
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise InputError(f"{str(out)!r} is a file; give a folder for the firmware")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise OutputExistsError(f"{str(out)!r} exists and is not empty; pass --force to replace it")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise InputError(f"cannot create {str(out.parent)!r}: {err.strerror or err}") from None
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    except OSError as err:  # /proc, a read-only folder
        raise InputError(f"cannot write {str(out)!r}: {err.strerror or err}") from None
    try:
        src = resources.files("hetsim.codegen") / "templates"
        for name in TEMPLATES:
            (tmp / name).write_bytes((src / name).read_bytes())
        (tmp / "network.h").write_text(network_h(fw))
        (tmp / "network.c").write_text(network_c(fw))
        (tmp / "README").write_text(_readme(fw))
        if out.exists():
            old = out.with_name(f".{out.name}.old")
            if old.exists():
                shutil.rmtree(old)
            out.rename(old)
            tmp.rename(out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            tmp.rename(out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return sorted(out.iterdir())
