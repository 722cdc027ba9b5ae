"""The mobile-SoC LLM study in one phase at a time: a Llama-3.2-1B-class model (``workloads/llm/llama-3.2-1b.llm.yaml``,
int8 weights on both engines so that they read the same bytes) on ``platforms/mobile-soc.yaml``: a prefill of
P = 128 tokens and one decode step at L = 128 .. 1024, each on the CPU only (``all-host``), on the NPU only (the CPU
keeps only the ops the NPU does not run: the token embedding's Gather) and on the best mapping found (``heft``; the
exact ``cpsat`` takes minutes per point on these 550-op graphs), with the LPDDR5X bandwidth scaled by 0.5, 1 and 2
(the CPU's sustained bandwidth, the NPU's port and the memory's peak together). It prints the tables of
``docs/beyond.md`` ("Token generation on a phone"): latency, energy, the CPU/NPU ratios, and two sensitivities
(the NPU's per-op overhead at which the CPU wins the prefill; the energy when the CPU spins while the NPU works).

    python bench/mobile_llm.py [--contexts 128,256,512,1024] [--scales 0.5,1,2]
"""

from __future__ import annotations

import argparse
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _spec():
    from hetsim.llm import load_llm_spec

    spec = load_llm_spec(ROOT / "workloads" / "llm" / "llama-3.2-1b.llm.yaml")
    same = spec.precision.model_copy(update={"weights": {"host": "int8", "npu": "int8"}})
    return spec.model_copy(update={"precision": same})


def _scaled(plat, k: float):
    """``plat`` with every LPDDR5X bandwidth figure scaled by ``k``."""
    if k == 1:
        return plat
    d, m = plat.devices, plat.memories["lpddr"]
    return plat.with_overrides({
        "name": f"{plat.name} x{k:g} DRAM",
        "devices.cpu.mem_bandwidth_gb_s": d["cpu"].mem_bandwidth_gb_s * k,
        "devices.npu.bandwidth_gb_s": d["npu"].bandwidth_gb_s * k,
        "memories.lpddr.bandwidth_gb_s": m.bandwidth_gb_s * k,
        "memories.lpddr.weights_for.npu.bandwidth_gb_s": m.weights_for["npu"].bandwidth_gb_s * k,
    })


def _npu_only(plat):
    return plat.with_overrides({"name": f"{plat.name} npu-only", "devices.cpu.supported_ops": ["Gather"]})


def _point(plat, wl) -> dict[str, tuple[float, float]]:
    """Mapping -> (latency s, energy J) of ``wl`` on ``plat``."""
    from hetsim.pipeline import run

    out = {}
    for label, p, mapper in (("cpu", plat, "all-host"), ("npu", _npu_only(plat), "heft"), ("best", plat, "heft")):
        s = run(p, wl, mapper=mapper).summary
        out[label] = (s["makespan_s"], s["energy_j"])
    return out


def _row(phase: str, tokens: int, k: float, r: dict) -> str:
    (tc, ec), (tn, en), (tb, eb) = r["cpu"], r["npu"], r["best"]
    return (f"| {phase} | {tokens} | x{k:g} | {tc * 1e3:.2f} | {tn * 1e3:.2f} | {tb * 1e3:.2f} | {tc / tn:.2f} | "
            f"{ec * 1e3:.1f} | {en * 1e3:.1f} | {eb * 1e3:.1f} | {en / ec - 1:+.0%} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--contexts", default="128,256,512,1024")
    ap.add_argument("--scales", default="0.5,1,2")
    args = ap.parse_args()
    from hetsim.llm import build_graph
    from hetsim.pipeline import run
    from hetsim.platform import load_platform

    spec = _spec()
    base = load_platform(ROOT / "platforms" / "mobile-soc.yaml")
    contexts = [int(x) for x in args.contexts.split(",")]
    scales = [float(x) for x in args.scales.split(",")]
    print("| phase | P or L | DRAM | CPU ms | NPU ms | best ms | CPU/NPU time | CPU mJ | NPU mJ | best mJ "
          "| NPU vs CPU energy |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    prefill = build_graph(spec, "prefill", prompt_tokens=128)
    for k in scales:
        print(_row("prefill", 128, k, _point(_scaled(base, k), prefill)))
    for n in contexts:
        wl = build_graph(spec, "decode", context_tokens=n)
        for k in scales:
            print(_row("decode", n, k, _point(_scaled(base, k), wl)))

    # sensitivity 1: the NPU's per-op overhead at which the CPU wins the prefill (bisection on the replay)
    t_cpu = run(base, prefill, mapper="all-host").makespan_s
    lo, hi = 0.0, 2000.0
    for _ in range(14):
        mid = (lo + hi) / 2
        slow = base.with_overrides({"name": f"mobile-soc npu {mid:.3f} us", "devices.npu.op_overhead_us": mid})
        npu = _npu_only(slow)
        lo, hi = (mid, hi) if run(npu, prefill, mapper="heft").makespan_s < t_cpu else (lo, mid)
    print(f"\nprefill P=128: the NPU-only mapping loses to the CPU once the NPU's per-op overhead exceeds "
          f"{hi:.0f} us (platform: 5 us)")
    # sensitivity 2: the CPU spinning (at active power) while the NPU works, as a polling runtime does
    spin = base.with_overrides({"name": "mobile-soc cpu spins", "devices.cpu.idle_w": base.devices["cpu"].active_w})
    wl = build_graph(spec, "decode", context_tokens=128)
    r = _point(spin, wl)
    print(f"decode L=128, CPU idle at active power: energy CPU {r['cpu'][1] * 1e3:.1f} mJ, NPU-only "
          f"{r['npu'][1] * 1e3:.1f} mJ ({r['npu'][1] / r['cpu'][1] - 1:+.0%}), best {r['best'][1] * 1e3:.1f} mJ "
          f"({r['best'][1] / r['cpu'][1] - 1:+.0%})")


if __name__ == "__main__":
    main()
