"""Regenerate the DIANA table of docs/reproduction.md (ODiMO's baselines on its three workloads).

    python bench/reproduce_diana.py            # markdown table on stdout
    python bench/reproduce_diana.py --json     # the numbers as JSON
    python bench/reproduce_diana.py --checkpoint FILE.pth.tar   # another ODiMO checkpoint for ResNet-20

For every workload and mapper: the simulated makespan and energy (hetsim's replay: independent layers may
overlap, ops outside the accelerators are free on platforms/diana.yaml), ODiMO's layer-sequential model
(Eq. 3-4 summed over the Conv/FC layers), the share of output channels on the AIMC, each accelerator's
utilisation and the time both are busy. With torch installed, the ODiMO checkpoint published with the authors'
code (eml-eda/odimo; ``tests/data/odimo/resnet20_cifar10_minlat_max8.pth.tar``, or ``--checkpoint``) is replayed
on ResNet-20 too (``dnas-export``).

platforms/diana.yaml enforces the digital accelerator's 64 KiB weight memory per layer part; a mapper that must
put a layer there whole that does not fit is refused (the row says why). Every workload is also run with the
check off (``weight_memory_kib: null``, ODiMO's own model, which prices no weight tiling); those rows, marked
"weight memory unchecked", are listed where they differ from the enforced ones.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hetsim.analysis.metrics import summarize  # noqa: E402
from hetsim.costs import CostModel  # noqa: E402
from hetsim.errors import MappingError  # noqa: E402
from hetsim.mappers import get_mapper  # noqa: E402
from hetsim.platform import Platform, load_platform  # noqa: E402
from hetsim.sim import simulate  # noqa: E402
from hetsim.workload import load_onnx  # noqa: E402

WORKLOADS = ["resnet20_cifar10", "resnet18_tinyimagenet_int8_qdq", "mobilenet_v1_025_vww",
             "resnet18_tinyimagenet_torchvision_int8_qdq"]  # the last: torchvision stem, for comparison
MAPPERS = [("all-8bit", {}), ("all-ternary", {}), ("io8-backbone-ternary", {}),
           ("min-cost", {"objective": "latency"}), ("min-cost", {"objective": "energy"})]
CHECKPOINT = ROOT / "tests" / "data" / "odimo" / "resnet20_cifar10_minlat_max8.pth.tar"


UNCHECKED = "weight memory unchecked"
NUMBERS = ("makespan_s", "energy_j", "aimc_share", "split_layers")


def unchecked(plat: Platform) -> Platform:
    """``plat`` with every device's ``weight_memory_kib`` set to null (no weight-memory check)."""
    data = plat.model_dump(mode="json", exclude={"devices": {"__all__": {"name"}}})
    for dev in data["devices"].values():
        if "weight_memory_kib" in dev:
            dev["weight_memory_kib"] = None
    return Platform.model_validate(data)


def run(costs: CostModel, name: str, opts: dict) -> dict:
    """One row's numbers, or ``error`` (the reason, shortened) when the mapper refuses the workload."""
    try:
        s = get_mapper(name, **opts).map(costs)
    except MappingError as err:
        msg = str(err).split(". The DIANA latency model")[0]
        return {"error": re.sub(r" \[[^\]]*\]", "", msg.removeprefix(f"{name}: "))}
    res = simulate(costs, s)
    summ = summarize(costs, s, res)
    cs = summ["channel_split"]
    return {
        "makespan_s": res.makespan_s, "energy_j": summ["energy_j"],
        "layer_latency_s": cs["layer_sequential_latency_s"], "layer_energy_j": cs["layer_sequential_energy_j"],
        "aimc_share": cs["share"].get("aimc", 0.0),
        "util_digital": cs["utilisation"]["digital"], "util_aimc": cs["utilisation"]["aimc"],
        "both_busy": cs["all_busy_fraction"], "split_layers": cs["split_layers"],
        "channels": cs["total_channels"],
    }


def measure(checkpoint: Path | None = None) -> list[dict]:
    plat = load_platform(ROOT / "platforms" / "diana.yaml")
    free = unchecked(plat)
    rows = []
    for w in WORKLOADS:
        wl = load_onnx(ROOT / "workloads" / f"{w}.onnx")
        costs, costs_free = CostModel(wl, plat), CostModel(wl, free)
        runs = list(MAPPERS)
        if w == "resnet20_cifar10" and checkpoint is not None:
            try:
                import torch  # noqa: F401
            except ImportError:
                pass
            else:
                runs.append(("dnas-export", {"path": checkpoint}))
        extra = []
        for name, opts in runs:
            label = name + (f" ({opts['objective']})" if "objective" in opts else "")
            if name == "dnas-export":
                label = "dnas-export (ODiMO minlat_max8 checkpoint)"
            row = {"workload": w, "mapper": label, "weight_memory": "64 KiB", **run(costs, name, opts)}
            rows.append(row)
            alt = {"workload": w, "mapper": f"{label}, {UNCHECKED}", "weight_memory": "unchecked",
                   **run(costs_free, name, opts)}
            if "error" in row or any(row[k] != alt.get(k) for k in NUMBERS):
                extra.append(alt)
        rows += extra
    return rows


def markdown(rows: list[dict]) -> str:
    out = ["| workload | mapper | latency (ms) | energy (uJ) | layer-seq. latency (ms) | layer-seq. energy (uJ) | "
           "AIMC channels | digital busy | AIMC busy | both busy | split layers |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        if "error" in r:
            out.append(f"| {r['workload']} | {r['mapper']} | refused: {r['error']} |" + " - |" * 8)
            continue
        out.append(
            f"| {r['workload']} | {r['mapper']} | {r['makespan_s'] * 1e3:.4f} | {r['energy_j'] * 1e6:.3f} | "
            f"{r['layer_latency_s'] * 1e3:.4f} | {r['layer_energy_j'] * 1e6:.3f} | {r['aimc_share'] * 100:.1f} % | "
            f"{r['util_digital'] * 100:.1f} % | {r['util_aimc'] * 100:.1f} % | {r['both_busy'] * 100:.1f} % | "
            f"{r['split_layers']} |"
        )
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print JSON instead of a markdown table")
    ap.add_argument("--checkpoint", type=Path, default=CHECKPOINT,
                    help="ODiMO checkpoint replayed on ResNet-20 with dnas-export when torch is installed "
                    "(default: the published minlat_max8, tests/data/odimo)")
    args = ap.parse_args()
    if not args.checkpoint.is_file():
        ap.error(f"--checkpoint: {args.checkpoint} is not a file")
    rows = measure(args.checkpoint)
    print(json.dumps(rows, indent=1) if args.json else markdown(rows))


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from calibration import session  # wall, CPU, calibration and reference-core seconds of the whole run

    with session(Path(__file__).name):
        main()
