"""hetsim's Cortex-M33 cycle model against QEMU's instruction counts of the generated firmware, per layer and kernel.

For every shipped SNN (``workloads/snn/*.yaml``) mapped ``all-m33`` (every affine layer a sparse M33 kernel, so
every layer gives a point), ``hetsim codegen`` writes the firmware, builds it with the Arm GNU toolchain and runs
it under QEMU (``mps2-an505``, ``-icount``: one emulated instruction per tick, emulation, not the chip's timing),
twice:

* **exact**: the firmware as shipped, whose affine kernel adds each weight into a 64-bit fixed-point
  accumulator (about 20 instructions per weight; it makes the outputs equal hetsim's replay bit for bit);
* **native**: the same firmware with that kernel's inner loop replaced by ``acc[i] += col[i]`` in FP32 (the
  kernel SpikeDuet's M33 numbers come from and hetsim's ``elem_cycles`` stand for), outputs not checked.

Per layer it prints hetsim's predicted M33 cycles (summed over the eval split), the instructions of each build,
and the cycles they imply at a stated cycles-per-instruction (``--cpi``, default 1: ours, an assumed lower bound
for an in-order core that issues about one instruction per cycle; loads, taken branches and Flash wait states
add cycles on the chip). Then, per kernel, the instructions per unit of work fitted by non-negative least squares
over the SRAM-resident layers of all networks (affine: per call, per output row and call, per active column,
per weight added; LIF: per call and per neuron), beside the model's constants.

    python bench/m33_vs_qemu.py                 # all six networks, about 30 s of builds and runs
    python bench/m33_vs_qemu.py --nets braille64,digits64 --cpi 1.25
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PLATFORM = ROOT / "platforms" / "efr32mg24.yaml"
EXACT_LINE = "            acc[i] += fx_f32(f32_bits(col[i]), p->fx_exp);"
NATIVE_LINE = "            ((float *)acc)[i] += col[i];"
EXACT_OUT = "        cur[i] = (float)acc[i] * p->fx_scale;"
NATIVE_OUT = "        cur[i] = ((float *)acc)[i];"


def native(folder: Path) -> None:
    """Replace the exact fixed-point affine kernel of ``folder/runtime.c`` by an FP32 one (``acc`` reused as a
    float array: it holds twice as many bytes as the floats need, and its zeroing loop zeroes them)."""
    p = folder / "runtime.c"
    text = p.read_text()
    if EXACT_LINE not in text or EXACT_OUT not in text:
        raise SystemExit(f"{p}: the affine kernel's lines were not found; update bench/m33_vs_qemu.py")
    p.write_text(text.replace(EXACT_LINE, NATIVE_LINE).replace(EXACT_OUT, NATIVE_OUT))


def measure(fw, folder: Path, variant: str) -> dict[tuple[int, str], float]:
    """Build and run one variant; (layer, kind) -> instructions."""
    from hetsim.codegen.check import instruction_report
    from hetsim.codegen.firmware import write_firmware
    from hetsim.codegen.toolchain import build_firmware, run_firmware

    write_firmware(fw, folder, force=True)
    if variant == "native":
        native(folder)
    build_firmware(folder)
    run = run_firmware(folder, fw.snn.layer_sizes[-1], len(fw.layers))
    return {(r.layer, r.kind): r.instructions for r in instruction_report(fw, run)}


def work(fw, li: int) -> dict[str, float]:
    """Layer ``li``'s work over the eval split: calls (timesteps x samples), output rows per call, active input
    columns, weights added."""
    lc = fw.costs.layers[li]
    act = lc._when(lc.active.astype(np.float64))
    calls = float(lc._when(np.ones(lc.active.shape)).sum())
    return {"calls": calls, "rows": calls * lc.n_out, "cols": float(act.sum()), "elems": float(act.sum()) * lc.n_out}


def nnls_fit(rows: list[dict], features: list[str], target: str) -> tuple[np.ndarray, float]:
    """Non-negative least squares of ``target`` on ``features``; (coefficients, largest relative residual)."""
    from scipy.optimize import nnls

    a = np.array([[r[f] for f in features] for r in rows])
    b = np.array([r[target] for r in rows])
    scale = np.where(b > 0, b, 1.0)  # relative residuals: every layer counts, not the largest
    coef, _ = nnls(a / scale[:, None], b / scale)
    return coef, float(np.max(np.abs(a @ coef / b - 1)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nets", default=None, help="comma list of workloads/snn stems (default: all six)")
    ap.add_argument("--cpi", type=float, default=1.0, help="cycles per instruction for the derived cycles (default 1)")
    args = ap.parse_args()
    if args.cpi <= 0:
        ap.error("--cpi must be > 0")

    from hetsim.codegen.firmware import _choice, prepare_firmware
    from hetsim.codegen.toolchain import require_tools

    require_tools(run=True)
    nets = (args.nets.split(",") if args.nets else
            sorted(p.stem for p in (ROOT / "workloads" / "snn").glob("*.yaml")))
    affine, lif, table = [], [], []
    with tempfile.TemporaryDirectory(prefix="hetsim-m33-") as tmp:
        for net in nets:
            fw = prepare_firmware(PLATFORM, ROOT / "workloads" / "snn" / f"{net}.yaml", "all-m33")
            ins = {}
            for v in ("exact", "native"):
                ins[v] = measure(fw, Path(tmp) / f"{net}-{v}", v)
                shutil.rmtree(Path(tmp) / f"{net}-{v}", ignore_errors=True)
            m33 = fw.costs.m33
            for li, fl in enumerate(fw.layers):
                k = li + 1
                w = work(fw, li)
                pred = float(fw.costs.layer_cycles(li, _choice(fl)).sum())
                row = {"net": net, "layer": k, "kind": "affine", "residency": fl.residency, "pred": pred,
                       "exact": ins["exact"][(k, "affine")], "native": ins["native"][(k, "affine")], **w}
                table.append(row)
                if fl.residency == "sram":
                    affine.append(row)
                n = fw.snn.layer_sizes[k]
                lrow = {"net": net, "layer": k, "kind": "lif", "residency": "-", "calls": w["calls"],
                        "neurons": w["calls"] * n, "pred": m33.lif_cycles(n) * fw.samples * fw.snn.timesteps,
                        "exact": ins["exact"][(k, "lif")], "native": ins["native"][(k, "lif")]}
                table.append(lrow)
                lif.append(lrow)
            print(f"# {net}: built and run ({fw.samples} samples x {fw.snn.timesteps} timesteps)", flush=True)

    cpi = args.cpi
    print(f"\nPer layer, summed over the eval split; derived cycles = instructions x CPI {cpi:g} (assumed):\n")
    print("| network | layer | kernel | weights | predicted cycles | exact: instructions | derived / predicted | "
          "native: instructions | derived / predicted |")
    print("|---|---:|---|---|---:|---:|---:|---:|---:|")
    for r in table:
        print(f"| {r['net']} | {r['layer']} | {r['kind']} | {r['residency']} | {r['pred']:,.0f} | "
              f"{r['exact']:,.0f} | {r['exact'] * cpi / r['pred']:.2f} | {r['native']:,.0f} | "
              f"{r['native'] * cpi / r['pred']:.2f} |")

    m = fw.costs.m33
    print(f"\nInstructions per unit of work, fitted over the {len(affine)} SRAM-resident affine layers and the "
          f"{len(lif)} LIF layers (non-negative least squares, relative residuals), x CPI {cpi:g} = derived "
          "cycles, beside the model's constants (platforms/efr32mg24.yaml):\n")
    print("| kernel | term | model (cycles) | exact: derived | native: derived | largest residual (exact / native) |")
    print("|---|---|---:|---:|---:|---|")
    feats = ["calls", "rows", "cols", "elems"]
    model = {"calls": m.affine_call_cycles, "rows": 0.0, "cols": m.col_cycles, "elems": m.elem_cycles.sram}
    names = {"calls": "per call", "rows": "per output row and call", "cols": "per active column",
             "elems": "per weight added (SRAM)"}
    fits = {v: nnls_fit(affine, feats, v) for v in ("exact", "native")}
    for i, f in enumerate(feats):
        res = f"{fits['exact'][1]:.1%} / {fits['native'][1]:.1%}" if i == 0 else ""
        print(f"| sparse affine | {names[f]} | {model[f]:g} | {fits['exact'][0][i] * cpi:.2f} | "
              f"{fits['native'][0][i] * cpi:.2f} | {res} |")
    lfits = {v: nnls_fit(lif, ["calls", "neurons"], v) for v in ("exact", "native")}
    for i, (f, val) in enumerate((("per call", m.lif_call_cycles), ("per neuron", m.lif_neuron_cycles))):
        res = f"{lfits['exact'][1]:.1%} / {lfits['native'][1]:.1%}" if i == 0 else ""
        print(f"| LIF update | {f} | {val:g} | {lfits['exact'][0][i] * cpi:.2f} | {lfits['native'][0][i] * cpi:.2f} "
              f"| {res} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
