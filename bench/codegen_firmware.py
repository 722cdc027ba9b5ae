"""hetsim codegen on every shipped network: the firmware built with the Arm toolchain and run under QEMU
mps2-an505, in the trained and the reordered neuron order (the full reordering of ``hetsim codegen --reorder``).

Prints, per network and order: whether the emulated outputs equal the replay, the image's memory beside hetsim's
SRAM/Flash plan and the EFR32MG24's (the size table of docs/reproduction.md, "SpikeDuet: firmware"), the emulated
instructions per M33 op kind over predicted M33 cycles, and the wall times of planning, build and run beside a
calibration loop timed in the same run. Then, without the toolchain, where other arithmetic would differ from the
replay: FP16 MVP tables (the chip's format) and a native FP32 kernel (acc += w in column order).

    python bench/codegen_firmware.py                 # every shipped network (several minutes on 2 cores)
    python bench/codegen_firmware.py braille384
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
EFR = ROOT / "platforms" / "efr32mg24.yaml"


sys.path.insert(0, str(ROOT / "bench"))
from calibration import Calibration  # noqa: E402  (the shared loop: median of interleaved samples)


def firmware_table(names: list[str]) -> None:
    from hetsim.codegen.check import check_firmware
    from hetsim.codegen.firmware import prepare_firmware, write_firmware
    from hetsim.codegen.toolchain import build_firmware, run_firmware

    print("| network | order | outputs | weights SRAM fw / hetsim (B) | weights Flash fw / hetsim (B) | other SRAM fw "
          "/ reserved (B) | chip SRAM (B) | chip Flash (B) | fits | affine M33 insn/cycle | LIF insn/cycle | "
          "plan / build / run (s) | plan / build / run (ref-core s) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    cal = Calibration()
    for name in names:
        for reorder in (False, True):
            cal.sample()
            t0 = time.perf_counter()
            fw = prepare_firmware(EFR, ROOT / "workloads" / "snn" / f"{name}.yaml", reorder=reorder)
            t1 = time.perf_counter()
            with tempfile.TemporaryDirectory() as d:
                write_firmware(fw, Path(d) / "fw")
                b = build_firmware(Path(d) / "fw")
                r = run_firmware(Path(d) / "fw", fw.snn.layer_sizes[-1], len(fw.layers))
            chk = check_firmware(fw, b, r)
            rows = {w: (f, h) for w, f, h, _ in chk.sizes.rows}
            keys = list(rows)
            ratio = {k: [x.ratio for x in chk.instructions if x.kind == k and x.clock == "host" and x.ratio]
                     for k in ("affine", "lif")}

            def span(v):
                return "-" if not v else f"{min(v):.2f}-{max(v):.2f}" if len(v) > 1 else f"{v[0]:.2f}"

            print(f"| {name} | {'reordered' if reorder else 'trained'} | "
                  f"{'equal' if chk.outputs.ok else 'DIFFER'} | {rows[keys[0]][0]:,} / {rows[keys[0]][1]:,} | "
                  f"{rows[keys[1]][0]:,} / {rows[keys[1]][1]:,} | {rows[keys[3]][0]:,} / {rows[keys[3]][1]:,} | "
                  f"{chk.sizes.chip_sram:,} | {chk.sizes.chip_flash:,} | {'yes' if chk.sizes.fits else 'no'} | "
                  f"{span(ratio['affine'])} | {span(ratio['lif'])} | {t1 - t0:.1f} / {b.seconds:.1f} / "
                  f"{r.wall_s:.1f} | {cal.ref_s(t1 - t0):.1f} / {cal.ref_s(b.seconds):.1f} / "
                  f"{cal.ref_s(r.wall_s):.1f} |", flush=True)
    print(cal.line())


def _native_fp32(snn, x) -> np.ndarray:
    """Spikes of every layer with each affine sum accumulated in FP32 in column order (a native M33 kernel:
    for each active column j, acc += W[:, j]); the LIF as the replay's."""
    s_in = x.astype(np.float32)
    out = []
    S, T, _ = x.shape
    for li, W in enumerate(snn.weights):
        n = W.shape[0]
        u = np.zeros((S, n), np.float32)
        s_prev = np.zeros((S, n), np.float32)
        rec = np.zeros((S, T, n), bool)
        beta, thr = snn.beta[li], snn.threshold[li]
        for t in range(T):
            cur = np.zeros((S, n), np.float32)
            for j in range(W.shape[1]):      # adding 0 * w leaves a float unchanged: the sparse loop's order
                cur = cur + s_in[:, t, j:j + 1] * W[:, j]
            u = beta * u + cur - thr * s_prev
            s_prev = (u > thr).astype(np.float32)
            rec[:, t] = s_prev > 0
        out.append(rec)
        s_in = rec.astype(np.float32)
    return out


def arithmetic_table(names: list[str]) -> None:
    from hetsim.codegen.firmware import prepare_firmware
    from hetsim.snn.network import replay

    print("\nwhere other arithmetic would differ from the replay (eval split, trained order): spikes differing "
          "(of all neuron-timesteps) / predictions differing (of 100)")
    print("| network | FP16 MVP tables (the chip's format) | native FP32 column-order kernel |")
    print("|---|---|---|")
    for name in names:
        fw = prepare_firmware(EFR, ROOT / "workloads" / "snn" / f"{name}.yaml", mvp_fp16=True)
        x = fw.inputs
        ref = replay(fw.snn, x, exact_sums=True)
        f16 = fw.reference()
        nat = _native_fp32(fw.snn, x)
        total = sum(s.size for s in ref.spikes)
        d16 = sum(int((a != b).sum()) for a, b in zip(f16.spikes, ref.spikes, strict=True))
        dn = sum(int((a != b).sum()) for a, b in zip(nat, ref.spikes, strict=True))
        p16 = int((f16.prediction != ref.prediction).sum())
        pn = "-"  # the native kernel's predictions by spike count alone (its membrane sums are not kept)
        if fw.snn.readout == "spike_count":
            counts = nat[-1].sum(axis=1)
            pn = int((counts.argmax(axis=1) != ref.spikes[-1].sum(axis=1).argmax(axis=1)).sum())
        print(f"| {name} | {d16:,} of {total:,} / {p16} | {dn:,} of {total:,} / {pn} (spike counts' argmax) |",
              flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("networks", nargs="*", help="network names (default: every workloads/snn/*.yaml)")
    ap.add_argument("--no-firmware", action="store_true", help="only the arithmetic table (no toolchain)")
    args = ap.parse_args()
    names = args.networks or sorted(p.stem for p in (ROOT / "workloads" / "snn").glob("*.yaml"))
    if not args.no_firmware:
        firmware_table(names)
    arithmetic_table(names)


if __name__ == "__main__":
    main()
