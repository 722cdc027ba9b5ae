"""The numbers of ``docs/beyond.md``: transformers on a platform whose weights live off chip.

For GPT-2-small prefill and decode and ViT-B/16 (``workloads/``, shipped without their weights) on a platform (default
``platforms/cim-npu-dram.yaml``: the CPU-CIM ILP's host and PUMA CIM, an Ethos-U65-class NPU, and an LPDDR4 DRAM
holding the weights): how many ops run on each device, under which weight policy, the DRAM weight traffic and its
energy, the peak activation memory, and the makespan against all-host; one markdown row per workload and mapper.

Run: ``python bench/beyond.py [PLATFORM] [--mappers cpsat,heft]`` from the repository root. ``cpsat`` proves these
graphs at its root bounds in a second or two on cim-npu-dram (a MIP gap is printed when it stops at its limit);
the machine and a calibration loop are printed first, as in every bench script, although nothing here is a timing
figure except the solve times.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

WORKLOADS = ("gpt2_small_prefill", "gpt2_small_decode", "vit_b16")


def row(r) -> str:
    """One markdown row of a run (``hetsim.run``'s result)."""
    from hetsim.analysis.footprint import bytes_text

    s = r.summary
    by = s["ops_offloaded"]["by_device"]
    where = ", ".join([f"host {s['operators'] - s['ops_offloaded']['count']}"]
                      + [f"{d} {v['count']}" for d, v in by.items()])
    w = s.get("weights") or {}
    pol = w.get("policies", {})
    kinds = ("resident", "streamed", "reprogrammed")
    policies = ", ".join(f"{k} {pol.get(k, 0)}" for k in kinds) if pol else "resident"
    mems = w.get("memories", {})
    traffic = sum(m["bytes"] for m in mems.values())
    energy = sum(m["energy_j"] for m in mems.values())
    rep = w.get("reprogramming", {})
    writes = "; ".join(f"{d}: {x['writes_per_cell']} writes/cell/inference" for d, x in rep.items() if x.get("ops"))
    peak = max((m["peak_bytes"] for m in s["memory"]["memories"].values()), default=0)
    st = s.get("mapper_stats") or {}
    status = st.get("status", "")
    if st.get("mip_gap") is not None and status != "optimal":
        status += f" (gap {st['mip_gap'] * 100:.2g} %)"
    return (f"| {s['workload']} | {s['mapper']} {status} | {where} | {policies} | {traffic / 1e6:,.1f} MB, "
            f"{energy * 1e3:.3g} mJ{'; ' + writes if writes else ''} | {bytes_text(peak)} | "
            f"{s['makespan_s'] * 1e3:,.2f} ms | {s['baseline_makespan_s'] * 1e3:,.2f} ms | {s['speedup']:.2f}x |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("platform", nargs="?", default=str(ROOT / "platforms" / "cim-npu-dram.yaml"))
    ap.add_argument("--mappers", default="cpsat,heft")
    args = ap.parse_args(argv)
    from calibration import session

    import hetsim

    with session("beyond") as cal:
        table(hetsim, args, cal)
    return 0


def table(hetsim, args, cal) -> None:
    print("\n| workload | mapper | ops per device | weight policies (offloaded ops) | DRAM weight traffic and energy "
          "per inference | peak activations | makespan | all-host | speed-up |")
    print("|---|---|---|---|---|---|---|---|---|")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the weights are absent, on purpose
        for wl in WORKLOADS:
            for m in args.mappers.split(","):
                t = cal.timed(lambda wl=wl, m=m: hetsim.run(args.platform, ROOT / "workloads" / f"{wl}.onnx",
                                                              mapper=m))
                print(row(t.result), flush=True)
                print(f"# {cal.figure(f'{wl} {m} (whole run)', t)}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
