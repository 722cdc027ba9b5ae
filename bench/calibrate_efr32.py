"""Calibration of the EFR32MG24 cycle constants (platforms/efr32mg24.yaml) against SpikeDuet.

    python bench/calibrate_efr32.py                        # platforms/efr32mg24.yaml, reordering included
    python bench/calibrate_efr32.py --no-reorder           # skip the (slower) neuron reordering in part C

Three parts, all printed, nothing asserted:

A. Re-derives the fitted constants from the paper's measured Linear1 cycle counts (SpikeDuet Sec. IV-C, IV-D)
   under the stated assumptions (C_call, C0, c_write, and the activity of the paper's networks where the paper
   does not give it), printing every step.
B. Evaluates the platform YAML's constants on each of the paper's calibration points with that activity:
   point, paper cycles, model cycles, error.
C. hetsim's own predictions for the same layers on our trained analogues (workloads/snn/*.yaml; their activity,
   not the paper's), on the plan (validation) split, in the trained order and, if
   ``hetsim.snn.reorder.reorder`` is available, after reordering; plus the all-M33 Braille-384 end-to-end
   latency against the baseline implied by the paper.

Formulas: hetsim/devices/efr32.py and hetsim/activity_costs.py; documentation: docs/models.md, section
"EFR32MG24 (SpikeDuet)". Takes about 20 s (most of it the reordering in part C).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hetsim.mappers.spikeduet import layer_choices, makespans, plan_network  # noqa: E402
from hetsim.platform import load_platform  # noqa: E402
from hetsim.snn.activity_costs import ActivityCostModel, engines_of  # noqa: E402
from hetsim.snn.network import load_snn  # noqa: E402

# ---------------------------------------------------------------------------------------------- paper figures
# SpikeDuet = "SpikeDuet: CPU-Accelerator Co-Execution of Sparse SNNs on Commodity MCUs". All Linear1 figures
# are mean cycles per timestep on validation inputs at 39 MHz (DWT cycle counter, Sec. IV-A).
SSC_DENSITY = {64: 0.122, 128: 0.088, 192: 0.071}       # mean first-hidden-layer spike density, Sec. IV-D
SSC_M33 = {128: 5388, 192: 9698}                          # SRAM FP32, sparse M33, Sec. IV-D
SSC_MVP = {128: 5507, 192: 8088}                          # SRAM FP16, range-sparse MVP, reordered, Sec. IV-D
SSC_PRED_RATIO = {64: 1.12, 128: 0.97, 192: 0.90}         # paper's predicted MVP/M33 after reordering, IV-D
B384_M33_HOT = 36101                                      # Flash FP32 + hot columns in SRAM, Sec. IV-C
B384_MVP = {"trained": (41916, 10.1), "reordered": (31123, 5.8)}   # Flash FP16: cycles, launches/step, IV-C
B192_M33 = 5604                                           # sparse M33, Sec. IV-C (SRAM assumed: 144 KiB FP32)
B192_MVP = 7383                                           # range-sparse MVP, reordered, Sec. IV-C
B192_NL = {"trained": 3.49, "reordered": 2.19}            # ranges/timestep, Sec. IV-C
B384_ASYNC_REORDERED_MS = 66.14                           # Table I / Sec. IV-B
B384_SPEEDUP = 1.36                                       # over the hot-column sparse M33 baseline, IV-B

# ---------------------------------------------------------------------------------------------- assumptions
C_CALL = 40.0          # M33 affine call overhead (assumed)
C0 = 150.0             # MVP per-layer program set-up (assumed)
C_WRITE = 4.0          # MVP FP16 spike write per processed column (assumed)
B384_NACT = 22.0       # active Linear1 input columns/step of the paper's Braille-384 (assumed)
B384_HOT_HIT = 0.5     # fraction of those read from SRAM hot columns (assumed)
B384_NP = 30.0         # MVP processed columns/step, Braille-384 Linear1, both orders (assumed)
NP_PER_ACT = 1.3       # N_P / N_act on the reordered SRAM points (assumed)
SSC_NL = {128: 1.75, 192: 2.5}   # MVP launches/step, SSC reordered (implied by NP_PER_ACT, rounded)

SSC_NACT = {w: SSC_DENSITY[w] * w for w in (128, 192)}


def hr(title: str) -> None:
    print(f"\n{'=' * 100}\n{title}\n{'=' * 100}")


def m33_cost(n_act: float, n_out: int, c_call: float, c_col: float, c_sram: float, c_flash: float = 0.0,
             sram_frac: float = 1.0) -> float:
    """``C_call + N_act * (C_col + n_out * (f * c_sram + (1 - f) * c_flash))``, f = SRAM-read fraction."""
    return c_call + n_act * (c_col + n_out * (sram_frac * c_sram + (1 - sram_frac) * c_flash))


def mvp_cost(n_l: float, n_p: float, n_out: int, c0: float, c_l: float, c_write: float, c_elem: float) -> float:
    """``C0 + C_L * N_L + (c_write + n_out * c_elem) * N_P``."""
    return c0 + c_l * n_l + (c_write + n_out * c_elem) * n_p


# ---------------------------------------------------------------------------------------------- part A
def derive(platform) -> dict[str, float]:
    hr("A. Derivation of the fitted constants from SpikeDuet's figures (assumptions marked 'assumed')")
    print(f"assumed: C_call = {C_CALL:g}, C0 = {C0:g}, c_write = {C_WRITE:g} cycles")
    out: dict[str, float] = {}
    m33 = engines_of(platform)[0]
    col, sram = float(m33.col_cycles), float(m33.elem_cycles.sram)   # the YAML's (rounded) M33 fit, for A2/A3

    # A1: M33 C_col and c_elem_sram from the SSC pair
    print("\nA1. M33 sparse affine, SSC Linear1 (n_in = n_out = width, SRAM FP32), Sec. IV-D:")
    print("    cycles - C_call = N_act * C_col + N_act * n_out * c_sram,  N_act = density * width")
    for w in (128, 192):
        print(f"    SSC-{w}: N_act = {SSC_DENSITY[w]:.3f} * {w} = {SSC_NACT[w]:.3f};  "
              f"{SSC_M33[w]} - {C_CALL:g} = {SSC_NACT[w]:.3f} C_col + {SSC_NACT[w] * w:.2f} c_sram")
    A = np.array([[SSC_NACT[w], SSC_NACT[w] * w] for w in (128, 192)])
    for c_call in (C_CALL, 0.0):
        b = np.array([SSC_M33[w] - c_call for w in (128, 192)])
        c_col, c_sram = np.linalg.solve(A, b)
        note = "" if c_call == C_CALL else "  (sensitivity to the assumed C_call only)"
        print(f"    numpy.linalg.solve with C_call = {c_call:g}:  C_col = {c_col:.3f}, c_sram = {c_sram:.4f}{note}")
        if c_call == C_CALL:
            out["m33_col"], out["m33_sram"] = float(c_col), float(c_sram)
    print(f"    -> {platform.name}: C_col = {col:g}, c_sram = {sram:g} (the C_call = {C_CALL:g} solution, rounded); "
          "A2 and A3 use these values")

    # A2: M33 Braille-192 implied activity
    n192 = (B192_M33 - C_CALL) / (col + 192 * sram)
    print("\nA2. Braille-192 Linear1 on the M33 (192x192, SRAM), 5,604 cycles, Sec. IV-C: implied active columns")
    print(f"    N_act = (5604 - 40) / ({col:g} + 192 * {sram:g}) = {n192:.3f}  (density {n192 / 192:.1%}); "
          f"with the unrounded A1 fit: {(B192_M33 - C_CALL) / (out['m33_col'] + 192 * out['m33_sram']):.3f}")
    out["b192_nact"] = n192

    # A3: M33 c_elem_flash (consistency, not a fit)
    print("\nA3. M33 c_flash, Braille-384 Linear1 (384x384, Flash FP32 + hot columns), 36,101 cycles, Sec. IV-C:")
    print(f"    N_act and the hot-hit fraction are not in the paper; assumed N_act = {B384_NACT:g}, hit = "
          f"{B384_HOT_HIT:g}")
    for c_fl in (5.0,):
        m = m33_cost(B384_NACT, 384, C_CALL, col, sram, c_fl, B384_HOT_HIT)
        print(f"    c_flash = {c_fl}: 40 + 22 * ({col:g} + 384 * (0.5 * {sram:g} + 0.5 * {c_fl})) = {m:,.0f} "
              f"({(m / B384_M33_HOT - 1):+.1%})")
    exact = ((B384_M33_HOT - C_CALL) / B384_NACT - col) / 384
    c_fl_exact = (exact - B384_HOT_HIT * sram) / (1 - B384_HOT_HIT)
    print(f"    exact fit at N_act = 22, hit = 0.5: c_flash = {c_fl_exact:.3f}")
    print("    c_flash that fits exactly, by assumed (N_act, hit) - the point does not identify it:")
    print("          N_act:" + "".join(f"{n:>8g}" for n in (18, 20, 22, 24, 26)))
    for hit in (0.3, 0.5, 0.7):
        row = []
        for n in (18, 20, 22, 24, 26):
            per = ((B384_M33_HOT - C_CALL) / n - col) / 384
            row.append((per - hit * sram) / (1 - hit))
        print(f"      hit = {hit:.1f} " + "".join(f"{v:8.2f}" for v in row))

    # A4: MVP C_L from the Braille-384 pair
    (y_tr, nl_tr), (y_re, nl_re) = B384_MVP["trained"], B384_MVP["reordered"]
    c_l = (y_tr - y_re) / (nl_tr - nl_re)
    print("\nA4. MVP C_L, Braille-384 Linear1 (Flash FP16), trained vs reordered order, Sec. IV-C; assumes N_P "
          "equal in both orders:")
    print(f"    C_L = ({y_tr} - {y_re}) / ({nl_tr} - {nl_re}) = {y_tr - y_re} / {nl_tr - nl_re:.1f} = {c_l:.1f}")
    out["mvp_launch"] = c_l

    # A5: MVP c_elem_flash from Braille-384 reordered
    rest = y_re - C0 - nl_re * 2510
    c_p = rest / B384_NP
    c_fl = (c_p - C_WRITE) / 384
    print(f"\nA5. MVP c_flash, Braille-384 reordered: {y_re} = 150 + 5.8 * 2510 + N_P * (4 + 384 c), N_P = "
          f"{B384_NP:g} (assumed)")
    print(f"    N_P * C_P = {y_re} - 150 - {nl_re * 2510:.0f} = {rest:.0f};  C_P = {c_p:.2f};  "
          f"c_flash = ({c_p:.2f} - 4) / 384 = {c_fl:.4f}")
    np_at_14 = rest / (C_WRITE + 384 * 1.4)
    print(f"    with c_flash = 1.4: C_P = {C_WRITE + 384 * 1.4:.1f}, N_P = {np_at_14:.2f} (N_P / 22 = "
          f"{np_at_14 / B384_NACT:.2f}); merged gaps <= {int(np.ceil(2510 / (C_WRITE + 384 * 1.4))) - 1} columns")
    out["mvp_flash"] = c_fl

    # A6: MVP c_elem_sram checks
    print("\nA6. MVP c_sram = 0.5 (2 FP16 elements per cycle; Silicon Labs MVP math library: word-aligned FP16 "
          "pairs, two values per cycle).")
    print(f"    SSC reordered (SRAM, n_out = width): with N_P = {NP_PER_ACT} N_act, implied N_L = "
          "(cycles - C0 - N_P C_P) / C_L")
    for w in (128, 192):
        cp = C_WRITE + w * 0.5
        npr = NP_PER_ACT * SSC_NACT[w]
        nl = (SSC_MVP[w] - C0 - npr * cp) / 2510
        print(f"      SSC-{w}: C_P = {cp:g}, N_P = {npr:.2f}, N_L = ({SSC_MVP[w]} - 150 - {npr * cp:.0f}) / 2510 = "
              f"{nl:.2f}")
    cp = C_WRITE + 192 * 0.5
    npr = (B192_MVP - C0 - B192_NL["reordered"] * 2510) / cp
    print(f"    Braille-192 reordered, 2.19 ranges (paper) read as N_L = 2.19 launches (one per range, no merging): "
          f"N_P = (7383 - 150 - 2.19 * 2510) / {cp:g} = {npr:.2f} = {npr / n192:.2f} x the {n192:.2f} active "
          "columns implied by A2")
    top = C0 + B192_NL["reordered"] * 2510 + n192 * cp
    print(f"    gap merging makes launches fewer than ranges and each merge costs less than the launch it saves, so "
          f"at 2.19 ranges (N_P = N_act unmerged) the model gives at most {C0:g} + 2.19 * 2510 + {n192:.2f} * "
          f"{cp:g} = {top:,.0f} ({top / B192_MVP - 1:+.1%} vs {B192_MVP:,}), merged or not")
    npr13 = NP_PER_ACT * n192
    c_alt = ((B192_MVP - C0 - B192_NL["reordered"] * 2510) / npr13 - C_WRITE) / 192
    print(f"    (with N_P = 1.3 x {n192:.2f} = {npr13:.2f} instead, Braille-192 would need c_sram = {c_alt:.3f})")
    for w in (128, 192):
        cp_alt = C_WRITE + w * c_alt
        nl_alt = (SSC_MVP[w] - C0 - NP_PER_ACT * SSC_NACT[w] * cp_alt) / 2510
        print(f"      c_sram = {c_alt:.3f} on SSC-{w} with N_P = 1.3 N_act: N_L = {nl_alt:.2f} (also plausible: "
              "the SSC points do not identify c_sram)")

    # A7: power, SRAM and end-to-end arithmetic
    print("\nA7. Other arithmetic:")
    p = 33.4e-6 * 39 * 3.3
    print(f"    M33 power: 33.4 uA/MHz x 39 MHz x 3.3 V = {p * 1e3:.4f} mW")
    kib = 1024
    print(f"    SRAM for weights: 256 - 16 = 240 KiB = {240 * kib} B. SSC-128 (700-128-128-35): FP32 Linear1 "
          f"+ Linear2 = {(128 * 128 + 35 * 128) * 4 / kib:.1f} KiB, FP16 Linear0 = {700 * 128 * 2 / kib:.1f} KiB, "
          f"together {(128 * 128 + 35 * 128) * 4 / kib + 700 * 128 * 2 / kib:.1f} KiB > 240")
    print(f"      with Linear1 on the MVP (FP16): {(128 * 128 * 2 + 35 * 128 * 4 + 700 * 128 * 2) / kib:.1f} KiB <= "
          "240: Linear0 fits, as Sec. IV-D reports (any reserve <= 31.5 KiB agrees)")
    print(f"    Braille-384 Linear1: FP32 {384 * 384 * 4 / kib:.0f} KiB, FP16 {384 * 384 * 2 / kib:.0f} KiB: both > "
          f"240 -> Flash (+hot columns on the M33), as Sec. III-D; Braille-192 FP32 {192 * 192 * 4 / kib:.0f} KiB "
          "fits")
    hot = (240 - (24 * 384 + 27 * 384) * 4 / kib) / (384 * 4 / kib)
    print(f"    paper Braille-384 all-M33 hot columns (Linear0/2 FP32 in SRAM): (240 - {(24 + 27) * 384 * 4 / kib:.1f})"
          f" / 1.5 = {hot:.0f} of 384 columns")
    print(f"    implied hot-column M33 baseline: {B384_ASYNC_REORDERED_MS} ms x {B384_SPEEDUP} = "
          f"{B384_ASYNC_REORDERED_MS * B384_SPEEDUP:.2f} ms")
    return out


# ---------------------------------------------------------------------------------------------- part B
def evaluate_points(platform, b192_nact: float) -> list[tuple]:
    m33, mvp = engines_of(platform)
    hr(f"B. Platform constants ({platform.name}) on SpikeDuet's calibration points, with the activity used above")
    print(f"M33: C_call {m33.affine_call_cycles:g}, C_col {m33.col_cycles:g}, c_sram {m33.elem_cycles.sram:g}, "
          f"c_flash {m33.elem_cycles.flash:g};  MVP: C0 {mvp.call_cycles:g}, C_L {mvp.launch_cycles:g}, "
          f"c_write {mvp.col_cycles:g}, c_sram {mvp.elem_cycles.sram:g}, c_flash {mvp.elem_cycles.flash:g}")

    def m33c(n_act, n, f_sram=1.0):
        return m33_cost(n_act, n, m33.affine_call_cycles, m33.col_cycles, m33.elem_cycles.sram,
                        m33.elem_cycles.flash, f_sram)

    def mvpc(n_l, n_p, n, mem):
        return mvp.call_cycles + mvp.launch_cycles * n_l + mvp.column_cycles(n, mem) * n_p

    rows = [
        ("SSC-128 Linear1 M33 SRAM", SSC_M33[128], m33c(SSC_NACT[128], 128),
         f"N_act {SSC_NACT[128]:.2f} (paper)", "fit"),
        ("SSC-192 Linear1 M33 SRAM", SSC_M33[192], m33c(SSC_NACT[192], 192),
         f"N_act {SSC_NACT[192]:.2f} (paper)", "fit"),
        ("Braille-192 Linear1 M33 SRAM", B192_M33, m33c(b192_nact, 192), f"N_act {b192_nact:.2f} (implied, A2)",
         "by construction"),
        ("Braille-384 Linear1 M33 Flash+hot", B384_M33_HOT, m33c(B384_NACT, 384, B384_HOT_HIT),
         f"N_act {B384_NACT:g}, hit {B384_HOT_HIT:g} (assumed)", "consistency"),
        ("Braille-384 Linear1 MVP Flash, trained", B384_MVP["trained"][0], mvpc(10.1, B384_NP, 384, "flash"),
         f"N_L 10.1 (paper), N_P {B384_NP:g} (assumed)", "fit"),
        ("Braille-384 Linear1 MVP Flash, reordered", B384_MVP["reordered"][0], mvpc(5.8, B384_NP, 384, "flash"),
         f"N_L 5.8 (paper), N_P {B384_NP:g} (assumed)", "fit"),
        ("SSC-128 Linear1 MVP SRAM, reordered", SSC_MVP[128],
         mvpc(SSC_NL[128], NP_PER_ACT * SSC_NACT[128], 128, "sram"),
         f"N_L {SSC_NL[128]} (implied), N_P {NP_PER_ACT * SSC_NACT[128]:.2f} (1.3 N_act)", "implied"),
        ("SSC-192 Linear1 MVP SRAM, reordered", SSC_MVP[192],
         mvpc(SSC_NL[192], NP_PER_ACT * SSC_NACT[192], 192, "sram"),
         f"N_L {SSC_NL[192]} (implied), N_P {NP_PER_ACT * SSC_NACT[192]:.2f} (1.3 N_act)", "implied"),
        ("Braille-192 Linear1 MVP SRAM, reordered", B192_MVP, mvpc(2.19, NP_PER_ACT * b192_nact, 192, "sram"),
         f"N_L 2.19 ranges (paper), N_P {NP_PER_ACT * b192_nact:.2f} (1.3 N_act)", "check"),
    ]
    print(f"\n{'point':<43}{'paper':>8}{'model':>9}{'error':>8}  {'activity':<48}{'role'}")
    for name, paper, model, act, role in rows:
        print(f"{name:<43}{paper:>8,}{model:>9,.0f}{(model / paper - 1) * 100:>+7.1f}%  {act:<48}{role}")
    print("\nMVP/M33 ratios (paper, measured -> model):")
    for label, mvp_i, m33_i in (("Braille-384 trained", 4, 3), ("Braille-384 reordered", 5, 3),
                                ("SSC-128 reordered", 6, 0), ("SSC-192 reordered", 7, 1),
                                ("Braille-192 reordered", 8, 2)):
        pr = rows[mvp_i][1] / rows[m33_i][1]
        mr = rows[mvp_i][2] / rows[m33_i][2]
        print(f"  {label:<24}{pr:6.2f} -> {mr:5.2f}")
    return rows


# ---------------------------------------------------------------------------------------------- part C
ANALOGUES = [
    # (yaml, paper counterpart, M33 residency of the paper's Linear1 measurement, MVP residency)
    ("workloads/snn/braille384.yaml", "Braille-384", "flash+hot", "flash"),
    ("workloads/snn/braille192.yaml", "Braille-192", "sram", "sram"),
    ("workloads/snn/braille64x64.yaml", "SSC-64 class", "sram", "sram"),
]


def _layer_stats(cm: ActivityCostModel, li: int, m33_res: str, mvp_res: str, hot: int) -> dict[str, float]:
    lc = cm.layers[li]
    act = lc.active.astype(float)
    return {
        "N_act": act.mean(),
        "hit": lc.hot_cum[..., min(hot, lc.n_in)].sum() / max(act.sum(), 1) if m33_res == "flash+hot" else 1.0,
        "N_L": lc.launches[mvp_res].mean(),
        "N_P": lc.processed[mvp_res].mean(),
        "m33": lc.m33_cycles(m33_res, hot).mean(),
        "mvp": lc.mvp_range_cycles(mvp_res).mean(),
        "dense": lc.mvp_dense_cycles(mvp_res).mean(),
    }


def analogues(platform, do_reorder: bool, fit: dict[str, float]) -> None:
    hr("C. hetsim's predictions on our trained analogues (Linear1, plan = validation split; our activity)")
    reorder_fn = None
    if do_reorder:
        try:
            from hetsim.snn.reorder import reorder as reorder_fn
        except Exception as err:  # noqa: BLE001 - the module is optional here
            print(f"(reordering skipped: hetsim.snn.reorder.reorder unavailable: {type(err).__name__}: {err})")
    _, mvp = engines_of(platform)
    print(f"\n{'network':<26}{'order':<11}{'M33 res':<14}{'N_act':>7}{'hit':>6}{'M33':>9}{'MVP res':>8}"
          f"{'N_L':>7}{'N_P':>7}{'MVP rng':>9}{'dense':>9}{'MVP/M33':>8}")
    for path, paper_name, m33_res, mvp_res in ANALOGUES:
        snn = load_snn(ROOT / path)
        cm = ActivityCostModel.of(snn, platform, "plan")
        base = plan_network(snn, platform, "all-m33", "blocking", costs=cm)
        hot = layer_choices(base)[1].hot_columns if m33_res == "flash+hot" else 0
        label = f"{snn.layer_sizes[1]}x{snn.layer_sizes[2]} ({paper_name})"
        variants = [("trained", cm)]
        if reorder_fn is not None:
            t0 = time.perf_counter()
            try:
                try:
                    # only the first hidden layer (Linear1's input), with the C_P of the memory the MVP reads
                    reo = reorder_fn(snn, mvp, residency=mvp_res, layers=[1])
                except TypeError:
                    reo = reorder_fn(snn, mvp)
                snn_r = getattr(reo, "snn", reo)
                ver = getattr(getattr(reo, "verification", None), "ok", "n/a")
                variants.append(("reordered", ActivityCostModel.of(snn_r, platform, "plan")))
                print(f"  ({snn.name}: reordered for {mvp_res} in {time.perf_counter() - t0:.1f} s, outputs "
                      f"verified: {ver})")
            except Exception as err:  # noqa: BLE001
                print(f"  ({snn.name}: reordering failed, skipped: {type(err).__name__}: {err})")
        stats = []
        for order, c in variants:
            s = _layer_stats(c, 1, m33_res, mvp_res, hot)
            stats.append(s)
            res = f"{m33_res}{f' {hot}' if hot else ''}"
            print(f"{label:<26}{order:<11}{res:<14}{s['N_act']:7.2f}{s['hit']:6.2f}{s['m33']:9,.0f}{mvp_res:>8}"
                  f"{s['N_L']:7.2f}{s['N_P']:7.2f}{s['mvp']:9,.0f}{s['dense']:9,.0f}{s['mvp'] / s['m33']:8.2f}")
        if len(stats) == 2 and stats[0]["N_L"] - stats[1]["N_L"] >= 1:
            tr, re_ = stats
            print(f"  two-point C_L as in A4 (N_P assumed unchanged): ({tr['mvp']:,.0f} - {re_['mvp']:,.0f}) / "
                  f"({tr['N_L']:.2f} - {re_['N_L']:.2f}) = {(tr['mvp'] - re_['mvp']) / (tr['N_L'] - re_['N_L']):,.0f}"
                  f" (model C_L {mvp.launch_cycles:g}; N_P {tr['N_P']:.2f} -> {re_['N_P']:.2f})")
    print("paper (measured, Sec. IV-C): Braille-384 MVP/M33 1.16 trained -> 0.86 reordered (N_L 10.1 -> 5.8); "
          "Braille-192 1.32 reordered (N_L 3.49 -> 2.19)")
    print("paper (predicted, Sec. IV-D): SSC-64 1.28-1.33 trained -> 1.12 reordered")

    snn = load_snn(ROOT / ANALOGUES[0][0])
    cm_plan = ActivityCostModel.of(snn, platform, "plan")
    cm_eval = cm_plan.on_split("eval")
    base = plan_network(snn, platform, "all-m33", "blocking", costs=cm_plan)
    lat = makespans(cm_eval, layer_choices(base), "blocking").mean() * 1e3
    choice = ", ".join(f"Linear{i} {c.residency}{f' ({c.hot_columns} hot)' if c.hot_columns else ''}"
                       for i, c in enumerate(layer_choices(base)))
    print(f"\nall-M33 Braille-384 analogue, end to end: plan split {base.stats['plan_mean_latency_s'] * 1e3:.2f} ms, "
          f"eval split {lat:.2f} ms ({choice}; {base.stats['sram_bytes'] / 1024:.1f} KiB SRAM)")
    alt = platform.with_overrides({"devices.m33.col_cycles": round(fit["m33_col"], 3),
                                   "devices.m33.elem_cycles.sram": round(fit["m33_sram"], 4)})
    cm_alt = ActivityCostModel.of(snn, alt, "plan")
    base_alt = plan_network(snn, alt, "all-m33", "blocking", costs=cm_alt)
    lat_alt = makespans(cm_alt.on_split("eval"), layer_choices(base_alt), "blocking").mean() * 1e3
    print(f"  the same with the unrounded A1 fit (C_col {fit['m33_col']:.2f}, c_sram {fit['m33_sram']:.4f}): "
          f"plan split {base_alt.stats['plan_mean_latency_s'] * 1e3:.2f} ms, eval split {lat_alt:.2f} ms")
    print(f"paper's implied hot-column M33 baseline: {B384_ASYNC_REORDERED_MS} x {B384_SPEEDUP} = "
          f"{B384_ASYNC_REORDERED_MS * B384_SPEEDUP:.2f} ms (different network: 24 inputs, 27 classes)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--platform", default="platforms/efr32mg24.yaml", help="EFR32MG24 platform YAML")
    ap.add_argument("--no-reorder", action="store_true", help="skip neuron reordering in part C")
    args = ap.parse_args()
    t0 = time.perf_counter()
    path = Path(args.platform)
    platform = load_platform(path if path.exists() else ROOT / path)
    fit = derive(platform)
    evaluate_points(platform, fit["b192_nact"])
    analogues(platform, not args.no_reorder, fit)
    print(f"\n({time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from calibration import session  # wall, CPU, calibration and reference-core seconds of the whole run

    with session(Path(__file__).name):
        main()
