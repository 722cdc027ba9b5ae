"""Checks of an emulated firmware run against hetsim (:mod:`hetsim.codegen`).

* **Outputs**: per eval sample the prediction, the output spike counts, the output membrane summed over T (FP32
  bits) and every layer's spike total must equal hetsim's LIF replay (:meth:`Firmware.reference`, the
  order-independent float32 replay ``exact_sums=True``) exactly; per MVP layer the launches and processed columns
  the firmware programmed must equal the activity cost model's ``N_L`` and ``N_P`` summed over the split
  (:class:`hetsim.snn.activity_costs.LayerCosts`).
* **Memory**: the image's sections (``arm-none-eabi-size -A``, symbols by ``arm-none-eabi-nm``) beside hetsim's
  weight accounting of the plan (:meth:`hetsim.snn.activity_costs.ActivityCostModel.memory_use`, the SRAM budget
  ``memories.sram - sram_reserved_kib``) and the EFR32MG24's 256 KiB SRAM / 1536 KiB Flash.
* **Instructions**: QEMU's emulated instruction count per layer and op kind beside hetsim's predicted M33 cycles
  of the same work (:mod:`hetsim.devices.efr32`) as a ratio. QEMU counts instructions, not cycles, of its own
  translation of the code: a sanity check of the cost model's scale, not a timing measurement. The MVP
  stand-in's work is the core emulating the peripheral and is listed beside the MVP's predicted cycles only
  for reference.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from hetsim.devices.efr32 import ENGINE_M33, ENGINE_MVP_DENSE
from hetsim.report.table import text_table

#: the EFR32MG24's memories (datasheet), bytes
CHIP_SRAM_BYTES = 256 * 1024
CHIP_FLASH_BYTES = 1536 * 1024


@dataclass
class OutputCheck:
    """Mismatch counts of the emulated outputs against the replay (all 0: bit for bit)."""

    samples: int
    predictions: int = 0
    counts: int = 0
    membrane: int = 0
    layer_spikes: int = 0
    launches: int = 0
    processed: int = 0
    accuracy: float | None = None
    first: str = ""

    @property
    def ok(self) -> bool:
        return (self.predictions + self.counts + self.membrane + self.layer_spikes + self.launches
                + self.processed) == 0


def check_outputs(fw, run) -> OutputCheck:
    """Compare a :class:`~hetsim.codegen.toolchain.FirmwareRun` with :meth:`Firmware.reference`."""
    ref = fw.reference()
    S = fw.samples
    chk = OutputCheck(S)
    if run.predictions.shape[0] != S:
        chk.predictions = S
        chk.first = f"the firmware printed {run.predictions.shape[0]} samples, expected {S}"
        return chk
    counts = ref.spikes[-1].sum(axis=1)
    msum = ref.membrane_out.sum(axis=1, dtype=np.float32).view(np.uint32)
    spikes = np.stack([s.sum(axis=(1, 2)) for s in ref.spikes], axis=1)
    bad = {"predictions": run.predictions != ref.prediction, "counts": (run.counts != counts).any(axis=1),
           "membrane": (run.msum_bits != msum).any(axis=1), "layer_spikes": (run.layer_spikes != spikes).any(axis=1)}
    for k, v in bad.items():
        setattr(chk, k, int(v.sum()))
    anybad = np.flatnonzero(np.any(np.stack(list(bad.values())), axis=0))
    if len(anybad):
        s = int(anybad[0])
        chk.first = (f"sample {s}: firmware predicts {run.predictions[s]} with counts {run.counts[s].tolist()}, the "
                     f"replay {ref.prediction[s]} with {counts[s].tolist()}")
    cm = fw.costs
    for li, fl in enumerate(fw.layers):
        want_l, want_p = _mvp_counts(cm, li, fl)
        if run.launches[li] != want_l:
            chk.launches += 1
        if run.processed[li] != want_p:
            chk.processed += 1
    labels = fw.snn.labels.get(fw.snn.roles.eval)
    if labels is not None and len(labels) == S:
        chk.accuracy = float(np.mean(run.predictions == labels))
    return chk


def _mvp_counts(cm, li: int, fl) -> tuple[int, int]:
    """hetsim's launches and processed columns of affine layer ``li + 1`` summed over the split."""
    lc = cm.layers[li]
    if fl.engine == ENGINE_M33:
        return 0, 0
    if fl.engine == ENGINE_MVP_DENSE:
        n = lc.active.size
        return n, n * lc.n_in
    return int(lc.launches[fl.residency].sum()), int(lc.processed[fl.residency].sum())


# --------------------------------------------------------------------------------------------- memory

@dataclass
class SizeReport:
    """The image's memory beside hetsim's plan (bytes).

    Attributes:
        sections: ``.text``, ``.rodata``, ``.data``, ``.bss``, ``.stack`` sizes (``arm-none-eabi-size -A``).
        rows: ``(what, firmware bytes, hetsim bytes or None, note)`` lines of the comparison.
        chip_flash, chip_sram: what the image needs of the chip's Flash (``.text + .rodata + .data``'s load
            image) and SRAM (``.data + .bss + .stack``); fits: both within the EFR32MG24's.
        testdata: bytes of the test inputs (outside the chip image).
    """

    sections: dict[str, int]
    rows: list[tuple[str, int, int | None, str]]
    chip_flash: int
    chip_sram: int
    fits: bool
    testdata: int
    fit_message: str = ""

    def to_dict(self) -> dict:
        return {"sections": self.sections, "chip_flash_bytes": self.chip_flash, "chip_sram_bytes": self.chip_sram,
                "fits_efr32mg24": self.fits, "testdata_bytes": self.testdata,
                "rows": [{"what": w, "firmware_bytes": f, "hetsim_bytes": h, "note": n} for w, f, h, n in self.rows]}


def size_report(fw, build) -> SizeReport:
    """Compare a :class:`~hetsim.codegen.toolchain.Build`'s sections with hetsim's accounting of ``fw``'s plan."""
    from hetsim.codegen.firmware import _choice

    cm = fw.costs
    sec = {k: build.sections.get(k, (0, 0))[0] for k in (".text", ".rodata", ".ARM.exidx", ".data", ".bss",
                                                         ".stack", ".testdata")}
    sym = build.symbols
    use = cm.memory_use([_choice(fl) for fl in fw.layers])
    w_sram = sum(sym.get(f"W{fl.layer}", (0, ""))[0] for fl in fw.layers if fl.residency == "sram")
    w_flash = sum(sym.get(f"W{fl.layer}", (0, ""))[0] for fl in fw.layers if fl.residency != "sram")
    w_hot = sum(sym.get(f"HOT{fl.layer}", (0, ""))[0] for fl in fw.layers if fl.residency == "flash+hot"
                and fl.hot_columns)
    chip_flash = sec[".text"] + sec[".rodata"] + sec[".ARM.exidx"] + sec[".data"]
    chip_sram = sec[".data"] + sec[".bss"] + sec[".stack"]
    reserved = int(cm.m33.sram_reserved_kib * 1024)
    other_sram = chip_sram - w_sram - w_hot
    f16 = [fl for fl in fw.layers if fl.engine != ENGINE_M33 and fl.elem == "f32"]
    extra = sum(fl.table_bytes // 2 for fl in f16)
    note_mvp = f"MVP tables stored FP32 (bit-exact build), hetsim prices them FP16: +{extra} B" if f16 else ""
    rows = [
        ("weight tables in SRAM (.data) + hot columns (.bss)", w_sram + w_hot, use["sram"],
         note_mvp if any(fl.residency == "sram" for fl in f16) else ""),
        ("weight tables in Flash (.rodata)", w_flash, use["flash"],
         note_mvp if any(fl.residency != "sram" for fl in f16) else ""),
        ("Flash load image of the SRAM tables (.data)", sec[".data"], 0,
         "hetsim counts SRAM-resident tables in SRAM only; the chip needs their copy in Flash too"),
        ("other SRAM: state, buffers, runtime, stack", other_sram, reserved,
         f"{fw.costs.host}.sram_reserved_kib; stack used {getattr(build, 'stack_bytes', 0) or '?'} B of "
         f"{sec['.stack']} B"),
        ("chip SRAM (.data + .bss + .stack)", chip_sram, CHIP_SRAM_BYTES, "EFR32MG24: 256 KiB"),
        ("chip Flash (.text + .rodata + .data)", chip_flash, CHIP_FLASH_BYTES, "EFR32MG24: 1536 KiB"),
    ]
    fits = chip_sram <= CHIP_SRAM_BYTES and chip_flash <= CHIP_FLASH_BYTES
    return SizeReport({k: v for k, v in sec.items() if k != ".testdata"}, rows, chip_flash, chip_sram, fits,
                      sec[".testdata"], build.fit_message)


# --------------------------------------------------------------------------------------------- instructions

#: whose cycles an instruction row's prediction counts: the host core's or the accelerator's (the MVP stand-in rows)
HOST_CLOCK, ACCEL_CLOCK = "host", "accelerator"


@dataclass
class InstructionRow:
    layer: int
    kind: str
    engine: str
    instructions: float
    predicted_cycles: float
    clock: str = HOST_CLOCK

    @property
    def ratio(self) -> float | None:
        return self.instructions / self.predicted_cycles if self.predicted_cycles > 0 else None


def instruction_report(fw, run) -> list[InstructionRow]:
    """Per layer and op kind, QEMU's emulated instructions over the run beside hetsim's predicted cycles of the
    same ops summed over every sample and timestep (M33 cycles; ``MVP stand-in`` rows: the MVP's cycles beside
    the stand-in's instructions, ``clock`` :data:`ACCEL_CLOCK`)."""
    from hetsim.codegen.firmware import _choice
    from hetsim.codegen.toolchain import category_names

    cm = fw.costs
    S, T = fw.samples, fw.snn.timesteps
    sizes = fw.snn.layer_sizes
    insns = run.instructions
    cats = {c: i for i, c in enumerate(category_names(len(fw.layers)))}
    rows = []
    for li, fl in enumerate(fw.layers):
        k = li + 1
        c = _choice(fl)
        if fl.engine == ENGINE_M33:
            rows.append(InstructionRow(k, "affine", fl.engine, insns[cats[("affine", k)]],
                                       float(cm.layer_cycles(li, c).sum())))
        else:
            rows.append(InstructionRow(k, "program", fl.engine, insns[cats[("program", k)]],
                                       float(cm.layers[li].program_cycles(fl.engine, fl.residency).sum())))
            rows.append(InstructionRow(k, "MVP stand-in", fl.engine, insns[cats[("standin", k)]],
                                       float(cm.layer_cycles(li, c).sum()), ACCEL_CLOCK))
        rows.append(InstructionRow(k, "lif", ENGINE_M33, insns[cats[("lif", k)]],
                                   float(cm.m33.lif_cycles(sizes[k]) * S * T)))
    rows.append(InstructionRow(len(fw.layers), "readout", ENGINE_M33, insns[cats[("readout", 0)]],
                               float(cm.m33.readout_cycles(sizes[-1]) * S * T)))
    rows.append(InstructionRow(0, "other (sample loop, output)", ENGINE_M33, insns[cats[("other", 0)]], 0.0))
    return rows


# --------------------------------------------------------------------------------------------- report

@dataclass
class FirmwareCheck:
    """Everything :func:`check_firmware` found."""

    outputs: OutputCheck
    sizes: SizeReport
    instructions: list[InstructionRow]
    run_wall_s: float = 0.0
    build_s: float = 0.0
    extra: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.outputs.ok

    def to_dict(self) -> dict:
        from dataclasses import asdict

        return {"outputs": {**asdict(self.outputs), "ok": self.outputs.ok}, "sizes": self.sizes.to_dict(),
                "instructions": [{**asdict(r), "ratio": r.ratio} for r in self.instructions],
                "build_s": self.build_s, "run_wall_s": self.run_wall_s, **self.extra}


def check_firmware(fw, build, run) -> FirmwareCheck:
    """All three checks of the module docstring for one build and run of ``fw``."""
    build.stack_bytes = run.stack_bytes
    return FirmwareCheck(check_outputs(fw, run), size_report(fw, build), instruction_report(fw, run),
                         run.wall_s, build.seconds)


def _kib(b: int | None) -> str:
    return "-" if b is None else f"{b:,} B ({b / 1024:.1f} KiB)"


def format_sizes(s: SizeReport) -> str:
    """The memory comparison as text."""
    lines = ["memory (arm-none-eabi-size -A): " + ", ".join(f"{k} {v:,}" for k, v in s.sections.items())
             + f"; test inputs {s.testdata:,} B outside the image"]
    rows = [[w, _kib(f), _kib(h), "-" if h is None else f"{f - h:+,}", n] for w, f, h, n in s.rows]
    lines += ["  " + r for r in text_table(["", "firmware", "hetsim / chip", "difference", "note"], rows)]
    lines.append(f"  fits the EFR32MG24: {'yes' if s.fits else 'NO'}"
                 + (f" ({s.fit_message}; linked for the emulator only)" if s.fit_message else ""))
    return "\n".join(line.rstrip() for line in lines)


def format_check(fw, chk: FirmwareCheck) -> str:
    """The three checks as text (what ``hetsim codegen --run`` prints)."""
    o = chk.outputs
    lines = [f"emulated run (QEMU mps2-an505, Cortex-M33): {o.samples} eval samples in {chk.run_wall_s:.1f} s"]
    if o.ok:
        lines.append("  outputs: predictions, output spike counts, output membrane sums and per-layer spike totals "
                     "equal hetsim's replay on every sample; MVP launches and processed columns equal the cost "
                     "model's")
    else:
        lines.append(f"  OUTPUTS DIFFER: {o.predictions} predictions, {o.counts} count vectors, {o.membrane} membrane "
                     f"sums, {o.layer_spikes} spike totals, {o.launches} launch and {o.processed} processed-column "
                     f"totals; {o.first}")
    if o.accuracy is not None:
        lines.append(f"  accuracy on the labels: {o.accuracy:.3f}")
    lines.append(format_sizes(chk.sizes))
    lines.append("emulated instructions per layer (QEMU -icount; emulation, not timing) vs hetsim's predicted cycles:")
    rows = [[str(r.layer or "-"), r.kind, r.engine, f"{r.instructions:,.0f}",
             f"{r.predicted_cycles:,.0f}" + (" (MVP)" if r.clock == ACCEL_CLOCK else "") if r.predicted_cycles else "-",
             f"{r.ratio:.2f}" if r.ratio is not None else "-"] for r in chk.instructions]
    lines += ["  " + r for r in text_table(["layer", "ops", "engine", "instructions", "predicted cycles", "ratio"],
                                           rows)]
    lines.append("  a ratio is instructions, not cycles: what these counts can and cannot say about the cycle model "
                 "(no CPI; the exact affine kernel is not the modelled FP32 one): docs/reproduction.md, \"The M33 "
                 "cycle model against the instruction counts\"")
    return "\n".join(line.rstrip() for line in lines)
