"""hetsim side by side with Stream on Stream's own example: ResNet-18 on its ``tpu_like_quad_core``.

    python bench/peers_stream.py --onnx PATH/resnet18.onnx                 # the 2 x 4 design space
    python bench/peers_stream.py --onnx PATH/resnet18.onnx --points 32x64  # one point
    python bench/peers_stream.py --onnx ... --json out.json                # also the numbers as JSON
    python bench/peers_stream.py --onnx ... --hetsim-split                 # hetsim alone, layers split 4 ways

Stream (stream-dse 2.1.1, KU Leuven MICAS; A. Symons et al., "Stream: Design Space Exploration of Layer-Fused
DNNs on Heterogeneous Dataflow Accelerators", IEEE Trans. Computers, 2024) needs Python >= 3.12 and ``six`` and
is never a dependency of hetsim: it runs in a venv of its own, as a subprocess (``--stream-python``, default
``$STREAM_PYTHON``, else ``stream-venv/bin/python`` beside this repository), made with

    python3.12 -m venv stream-venv && stream-venv/bin/pip install stream-dse==2.1.1 six

``--onnx`` is Stream's example ResNet-18 (``stream/inputs/examples/workload/resnet18.onnx`` in its repository; the
wheel ships the hardware files but no workload). The hardware is the wheel's own
``stream/inputs/examples/hardware/tpu_like_quad_core.yaml`` and ``cores/``, copied to a temporary directory per
design point with two fields changed: the TPU-like cores' ``operational_array.sizes`` (16 x 16 or 32 x 32) and the
off-chip core's port width (``offchip.yaml`` ``rw_port_1`` ``bandwidth_min``/``bandwidth_max``: 32, 64, 128 or
256 bits per cycle; its ``r_cost``/``w_cost``, 1000 pJ per 64-bit access, scaled with the width so that a bit
costs the same at every point, ours). Stream runs as its README's public API example does:
``stream.api.evaluate_mapping`` without a mapping, so its generic mapping generator proposes one (each Conv and
Gemm split over the four compute cores, pooling on the pooling core, Add on the SIMD core, its fused groups and
tiling) and its MILP allocates each fused group, with ``SolveOptions()`` defaults (OR-Tools GSCIP, 300 s per
group) except ``artifacts=False`` (no report files). Its latency is ``MappingEstimate.cycles``; its energy is the
sum over fused groups of the energy family's ``total_pj`` (the cores' ZigZag energies plus every DMA stream's).

hetsim runs ``platforms/stream-tpu-quad.yaml`` (the same accelerator in hetsim's terms, every constant traced to
Stream's files there) through :func:`hetsim.run` with the design point applied by
:meth:`~hetsim.platform.Platform.with_overrides` (``devices.npuN.array`` and ``memories.dram.bandwidth_gb_s``),
mapper ``cpsat``, contention ``memory`` (the DRAM port serves one weight read at a time). Both tools count
cycles at 1 GHz (platform's assumption), so 1 cycle = 1 ns.

Per point, alternating (Stream, then hetsim): latency and energy of both, hetsim / Stream, the busy fraction of
each core, and each tool's wall time (Stream's inside its subprocess, from ``evaluate_mapping`` called to
returned; hetsim's from ``hetsim.run`` called to returned, the platform already loaded). Then the mean |diff|
and Spearman's rank correlation of the eight points' latencies. Figures are recorded in docs/reproduction.md
with the machine and load.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PLATFORM = ROOT / "platforms" / "stream-tpu-quad.yaml"
ARRAYS = (16, 32)
PORT_BITS = (32, 64, 128, 256)
NPUS = ("npu0", "npu1", "npu2", "npu3")
STREAM_CORES = {0: "npu0", 1: "npu1", 2: "npu2", 3: "npu3", 4: "pool", 5: "simd"}  # tpu_like_quad_core.yaml ids
STREAM_DRAM_PJ_PER_BIT = 1000 / 64  # cores/offchip.yaml: r_cost = w_cost = 1000 pJ per 64-bit access


def parse_point(text: str) -> tuple[int, int]:
    """``"32x64"`` -> ``(32, 64)``: array side (MACs per side of each TPU-like core) and DRAM port bits/cycle.

    Raises:
        ValueError: not ``AxB`` with A in :data:`ARRAYS` and B in :data:`PORT_BITS`.
    """
    a, sep, b = text.strip().partition("x")
    if not sep or not a.isdigit() or not b.isdigit() or int(a) not in ARRAYS or int(b) not in PORT_BITS:
        raise ValueError(f"design point {text!r}: expected ARRAYxBITS with ARRAY in {ARRAYS} and BITS in "
                         f"{PORT_BITS}, e.g. 32x64")
    return int(a), int(b)


def hetsim_overrides(array: int, port_bits: int) -> dict[str, object]:
    """The :meth:`~hetsim.platform.Platform.with_overrides` of one design point on ``stream-tpu-quad.yaml``:
    each NPU's ``array`` ``{K: array, C: array}`` and its register file, 128 B per MAC (Stream's ``rf_128B`` is
    one per PE, so it shrinks with the array), and the DRAM's bandwidth, ``port_bits`` per 1 ns cycle in GB/s."""
    out: dict[str, object] = {}
    for n in NPUS:
        out[f"devices.{n}.array"] = {"K": array, "C": array}
        out[f"devices.{n}.register_file.capacity_kib"] = array * array * 128 / 1024
    out["memories.dram.bandwidth_gb_s"] = port_bits / 8
    return out


def split_overrides(array: int, port_bits: int) -> dict[str, object]:
    """:func:`hetsim_overrides` plus the what-if of an ideal four-way output-channel split of every layer (ours):
    ``npu0`` given the four cores' arrays side by side (``{K: 4 * array, C: array}``) and four times their register
    files, SRAM capacity, SRAM port and activation port (``platforms/stream-tpu-quad.yaml``'s values x 4)."""
    out = hetsim_overrides(array, port_bits)
    out["devices.npu0.array"] = {"K": 4 * array, "C": array}
    out["devices.npu0.register_file.capacity_kib"] = 4 * array * array * 128 / 1024
    out["devices.npu0.sram.capacity_kib"] = 4 * 2048
    out["devices.npu0.sram.bytes_per_cycle"] = 4 * 256
    out["devices.npu0.bandwidth_gb_s"] = 4 * 256
    return out


def spearman(x: list[float], y: list[float]) -> float:
    """Spearman's rank correlation of two equal-length lists (average ranks for ties; Pearson on the ranks).

    Raises:
        ValueError: lengths differ or fewer than two values.
    """
    if len(x) != len(y) or len(x) < 2:
        raise ValueError("spearman needs two lists of the same length, at least 2 values")

    def ranks(v: list[float]) -> list[float]:
        order = sorted(range(len(v)), key=v.__getitem__)
        r = [0.0] * len(v)
        i = 0
        while i < len(order):
            j = i
            while j + 1 < len(order) and v[order[j + 1]] == v[order[i]]:
                j += 1
            for k in range(i, j + 1):
                r[order[k]] = (i + j) / 2 + 1
            i = j + 1
        return r

    rx, ry = ranks(x), ranks(y)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    vx = sum((a - mx) ** 2 for a in rx)
    vy = sum((b - my) ** 2 for b in ry)
    return cov / (vx * vy) ** 0.5 if vx and vy else float("nan")


# ---- the Stream side: runs in Stream's venv (Python >= 3.12), imports nothing of hetsim ----

def _stream_hardware(tmp: str, array: int, port_bits: int) -> str:
    """Stream's example hardware copied under ``tmp`` with the design point applied; the top file's path."""
    import shutil

    import stream
    import yaml

    src = Path(stream.__file__).parent / "inputs" / "examples" / "hardware"
    dst = Path(tmp) / "hardware"
    shutil.copytree(src, dst)
    tpu = dst / "cores" / "tpu_like.yaml"
    core = yaml.safe_load(tpu.read_text())
    core["operational_array"]["sizes"] = [array, array]
    tpu.write_text(yaml.safe_dump(core, sort_keys=False))
    off = dst / "cores" / "offchip.yaml"
    dram = yaml.safe_load(off.read_text())
    mem = dram["memories"]["dram"]
    for port in mem["ports"]:
        port["bandwidth_min"] = port["bandwidth_max"] = port_bits
    mem["r_cost"] = mem["w_cost"] = STREAM_DRAM_PJ_PER_BIT * port_bits
    off.write_text(yaml.safe_dump(dram, sort_keys=False))
    return str(dst / "tpu_like_quad_core.yaml")


def _stream_core_busy(ctx) -> dict[str, float]:
    """Cycles each core computes, summed over the fused groups: a node's active cycles per steady-state iteration
    (its part on each of its cores; ``performance.nodes``) times the group's iterations (``total_pj /
    per_iteration_pj``), on every core its ``resource_allocation`` names."""
    busy: dict[str, float] = {}
    for ir in ctx.get("group_allocations").values():
        perf = (ir or {}).get("performance") or {}
        energy = perf.get("energy") or {}
        per_it = energy.get("per_iteration_pj") or 0.0
        iterations = round(energy.get("total_pj", 0.0) / per_it) if per_it else 1
        nodes = (ir or {}).get("mapping_nodes") or {}
        for name, row in (perf.get("nodes") or perf.get("per_node") or {}).items():
            alloc = (nodes.get(name) or {}).get("resource_allocation") or []
            cores = {r["id"] for group in alloc for r in group if isinstance(r, dict) and r.get("type") == "core"}
            for c in cores:
                key = STREAM_CORES.get(int(c), str(c))
                busy[key] = busy.get(key, 0.0) + float(row.get("latency_cycles") or 0.0) * iterations
    return busy


def stream_worker(onnx: str, array: int, port_bits: int) -> dict:
    """One design point in Stream (run inside Stream's venv): cycles, pJ, per-core busy cycles, wall seconds."""
    import logging
    import tempfile

    logging.disable(logging.WARNING)
    from stream.api import SolveOptions, evaluate_mapping

    with tempfile.TemporaryDirectory() as tmp:
        hw = _stream_hardware(tmp, array, port_bits)
        t0 = time.perf_counter()
        est = evaluate_mapping(hw, onnx, str(Path(tmp) / "out"), options=SolveOptions(artifacts=False))
        wall = time.perf_counter() - t0
    ctx = est.context
    groups = ctx.get("group_allocations")
    parts = [((ir or {}).get("performance") or {}).get("energy") or {} for ir in groups.values()]
    energy = sum(e.get("total_pj", 0.0) for e in parts)
    # the cores' share (ZigZag: MACs and every on-chip memory level) of each group's energy, over all iterations
    node_pj = sum(e.get("node_pj_per_iteration", 0.0) * (e.get("total_pj", 0.0) / e["per_iteration_pj"])
                  for e in parts if e.get("per_iteration_pj"))
    statuses = sorted({str(((ir or {}).get("solve") or {}).get("status")) for ir in groups.values()})
    busy = _stream_core_busy(ctx)
    return {"cycles": float(est.cycles), "energy_pj": float(energy), "node_pj": float(node_pj),
            "groups": len(est.group_cycles),
            "busy_cycles": busy, "wall_s": wall, "solve_status": statuses}


# ---- the hetsim side and the table ----

def stream_python(arg: str | None) -> Path:
    if arg:
        return Path(arg)
    if os.environ.get("STREAM_PYTHON"):
        return Path(os.environ["STREAM_PYTHON"])
    return ROOT.parent / "stream-venv" / "bin" / "python"


def run_stream(py: Path, onnx: Path, array: int, port_bits: int) -> dict:
    """One point in Stream's venv, as a subprocess; the worker's dict plus the subprocess's own wall seconds."""
    t0 = time.perf_counter()
    proc = subprocess.run([str(py), str(Path(__file__).resolve()), "--stream-worker", str(onnx),
                           f"{array}x{port_bits}"], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise RuntimeError(f"Stream failed at {array}x{port_bits}: " + " | ".join(tail))
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["process_wall_s"] = time.perf_counter() - t0
    return out


def run_hetsim(base, onnx: Path, array: int, port_bits: int, split: bool = False) -> dict:
    """One point in hetsim: makespan, energy, per-device utilisation, wall seconds of :func:`hetsim.run`
    (``split``: the what-if of :func:`split_overrides`)."""
    import hetsim

    plat = base.with_overrides((split_overrides if split else hetsim_overrides)(array, port_bits))
    t0 = time.perf_counter()
    res = hetsim.run(plat, str(onnx), "cpsat", contention="memory", timeline=False)
    wall = time.perf_counter() - t0
    dev = res.devices.set_index("device")
    return {"cycles": res.makespan_s * 1e9, "energy_pj": res.energy_j * 1e12, "wall_s": wall,
            "busy": {d: float(dev.loc[d, "utilisation"]) for d in (*NPUS, "pool", "simd")},
            "dram_j": float(dev.loc["dram", "energy_j"]) if "dram" in dev.index else 0.0}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--onnx", type=Path, help="Stream's example resnet18.onnx")
    ap.add_argument("--stream-python", help="python of Stream's venv (default $STREAM_PYTHON, else "
                                            "stream-venv/bin/python beside the repository)")
    ap.add_argument("--points", default=",".join(f"{a}x{b}" for a in ARRAYS for b in PORT_BITS),
                    help="design points ARRAYxBITS, comma-separated (default: all eight)")
    ap.add_argument("--hetsim-split", action="store_true",
                    help="hetsim alone: the what-if of an ideal four-way split of every layer (no Stream)")
    ap.add_argument("--json", type=Path, help="also write the numbers here (refused if it exists)")
    ap.add_argument("--stream-worker", nargs=2, metavar=("ONNX", "POINT"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.stream_worker:
        onnx, point = args.stream_worker
        print(json.dumps(stream_worker(onnx, *parse_point(point))))
        return 0
    if args.hetsim_split:
        return split_whatif(args, ap)
    py = stream_python(args.stream_python)
    if not py.exists():
        print(f"peers_stream: no Stream venv at {py} (python3.12 -m venv stream-venv && "
              "stream-venv/bin/pip install stream-dse==2.1.1 six; or --stream-python)", file=sys.stderr)
        return 2
    if args.onnx is None or not args.onnx.is_file():
        print("peers_stream: --onnx must name Stream's example resnet18.onnx "
              "(stream/inputs/examples/workload/resnet18.onnx in github.com/KULeuven-MICAS/stream)", file=sys.stderr)
        return 2
    if args.json is not None and args.json.exists():
        print(f"peers_stream: {args.json} exists; not overwritten", file=sys.stderr)
        return 2
    try:
        points = [parse_point(p) for p in args.points.split(",")]
    except ValueError as e:
        print(f"peers_stream: {e}", file=sys.stderr)
        return 2
    return sweep(py, args.onnx.resolve(), points, args.json)


def split_whatif(args, ap) -> int:
    """``--hetsim-split``: hetsim's makespan and energy per design point with every layer split four ways."""
    if args.onnx is None or not args.onnx.is_file():
        ap.error("--onnx must name Stream's example resnet18.onnx")
    sys.path.insert(0, str(ROOT))
    import hetsim

    base = hetsim.load_platform(PLATFORM)
    print("| array | DRAM port | hetsim ms, four-way split | hetsim mJ | npu0 busy |")
    print("|---|---|---|---|---|")
    for p in args.points.split(","):
        array, bits = parse_point(p)
        h = run_hetsim(base, args.onnx.resolve(), array, bits, split=True)
        print(f"| {array}x{array} | {bits}-bit | {h['cycles'] / 1e6:.3f} | {h['energy_pj'] / 1e9:.3f} "
              f"| {100 * h['busy']['npu0']:.0f} % |", flush=True)
    return 0


def sweep(py: Path, onnx: Path, points: list[tuple[int, int]], json_path: Path | None) -> int:
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "bench"))
    from calibration import load, machine

    import hetsim

    print(f"# machine: {machine()}; load at start: {load()}")
    base = hetsim.load_platform(PLATFORM)
    rows = []
    for array, bits in points:
        s = run_stream(py, onnx, array, bits)
        h = run_hetsim(base, onnx, array, bits)
        rows.append({"array": array, "port_bits": bits, "stream": s, "hetsim": h})
        print(f"# {array}x{array} {bits:>3}-bit: Stream {s['cycles'] / 1e6:.3f} ms {s['energy_pj'] / 1e9:.3f} mJ "
              f"({s['wall_s']:.1f} s, status {','.join(s['solve_status'])}); hetsim {h['cycles'] / 1e6:.3f} ms "
              f"{h['energy_pj'] / 1e9:.3f} mJ ({h['wall_s']:.2f} s); load {load()}", flush=True)
    print()
    print("| array | DRAM port | Stream ms | hetsim ms | hetsim / Stream | Stream mJ | hetsim mJ | hetsim / Stream "
          "| Stream core busy (npu0-3, pool, simd) | hetsim core busy | Stream wall s | hetsim wall s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        s, h = r["stream"], r["hetsim"]
        sb = s["busy_cycles"]
        s_busy = " ".join(f"{100 * sb.get(d, 0.0) / s['cycles']:.0f}" for d in (*NPUS, "pool", "simd")) if sb else "-"
        h_busy = " ".join(f"{100 * h['busy'][d]:.0f}" for d in (*NPUS, "pool", "simd"))
        print(f"| {r['array']}x{r['array']} | {r['port_bits']}-bit | {s['cycles'] / 1e6:.3f} "
              f"| {h['cycles'] / 1e6:.3f} | {h['cycles'] / s['cycles']:.2f} | {s['energy_pj'] / 1e9:.3f} "
              f"| {h['energy_pj'] / 1e9:.3f} | {h['energy_pj'] / s['energy_pj']:.2f} | {s_busy} | {h_busy} "
              f"| {s['wall_s']:.1f} | {h['wall_s']:.2f} |")
    if len(rows) >= 2:
        sl = [r["stream"]["cycles"] for r in rows]
        hl = [r["hetsim"]["cycles"] for r in rows]
        se = [r["stream"]["energy_pj"] for r in rows]
        he = [r["hetsim"]["energy_pj"] for r in rows]
        diff = sum(abs(h / s - 1) for h, s in zip(hl, sl, strict=True)) / len(rows)
        speed = sorted(r["stream"]["wall_s"] / r["hetsim"]["wall_s"] for r in rows)
        median = statistics.median(speed)
        print(f"\nlatency: mean |hetsim / Stream - 1| {100 * diff:.1f} %, Spearman {spearman(sl, hl):.2f}; "
              f"energy: Spearman {spearman(se, he):.2f}; Stream / hetsim wall time per point: "
              f"{speed[0]:.0f}x - {speed[-1]:.0f}x (median {median:.0f}x)")
    print(f"# load at end: {load()}")
    if json_path is not None:
        tmp = json_path.with_suffix(json_path.suffix + ".tmp")
        tmp.write_text(json.dumps(rows, indent=1) + "\n")
        tmp.replace(json_path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
