"""``hetsim profile``: measure per-op host latencies with ONNX Runtime (a latency table)."""

from __future__ import annotations

from pathlib import Path

from hetsim.cli._common import _add_common, _positive_int


def add_parser(sub) -> None:
    """The ``profile`` subcommand's arguments."""
    p = sub.add_parser("profile", help="measure per-op host latencies with ONNX Runtime (a latency table)",
                       description="Measure every node of MODEL on this machine's CPU with ONNX Runtime: warm-up "
                       "runs, then the median over timed runs of each node's kernel time, as the CPU-CIM ILP paper "
                       "does (Sec. IV-A1); 1 thread, sequential, no spinning and graph optimisations off are "
                       "hetsim's settings (the paper does not state them). The CSV is a latency table for a cpu device "
                       "(latency_model: table). Profiles are machine-specific.")
    p.add_argument("model", type=Path, help="ONNX model")
    p.add_argument("-o", "--output", type=Path, required=True, help="CSV to write (e.g. profiles/yolov5n.csv); "
                   "the machine, ORT version and settings go to NAME.meta.json beside it")
    p.add_argument("--runs", type=_positive_int, default=20, help="timed runs (default 20)")
    p.add_argument("--warmup", type=int, default=5, help="untimed warm-up runs (default 5)")
    p.add_argument("--optimize", action="store_true",
                   help="measure ORT's optimised graph; fused kernels are split over the ops they absorbed by MACs")
    p.add_argument("--seed", type=int, default=0, help="seed of the random input (default 0)")
    p.add_argument("--force", action="store_true", help="replace an existing output file")
    _add_common(p)


def cmd_profile(args) -> int:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from hetsim.files import check_output_file, make_dirs
    from hetsim.profile import meta_path, profile_model

    for target in (args.output, meta_path(args.output)):
        check_output_file(target, args.force)
    with Progress(TextColumn("profiling {task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), transient=True) as bar:
        task = bar.add_task(args.model.name, total=None)
        prof = profile_model(args.model, warmup=args.warmup, runs=args.runs, optimize=args.optimize,
                             seed=args.seed, progress=lambda d, t: bar.update(task, completed=d, total=t))
    make_dirs(args.output.parent, args.output)
    written = prof.write(args.output)
    missing = sum(1 for r in prof.rows if r["source"] == "missing")
    fused = sum(1 for r in prof.rows if r["source"] == "fused")
    diff = prof.per_op_sum_s - prof.whole_model_s
    print(f"{args.model.name}: {len(prof.rows)} ops on {prof.meta['machine']} (onnxruntime "
          f"{prof.meta['onnxruntime']}, 1 thread, graph optimisations {prof.meta['graph_optimizations']})")
    print(f"  whole model   {prof.whole_model_s * 1e3:10.3f} ms (median of {args.runs} runs)")
    print(f"  sum of ops    {prof.per_op_sum_s * 1e3:10.3f} ms ({diff * 1e3:+.3f} ms, "
          f"{diff / prof.whole_model_s * 100:+.1f} % of the whole run: ORT's per-run work outside the kernels, "
          "profiler overhead and run-to-run noise)")
    if fused:
        print(f"  {fused} ops share fused kernels (time split by MACs)")
    if missing:
        print(f"  {missing} ops have no kernel in the profile (latency 0)")
    print(f"  wrote {' and '.join(map(str, written))}")
    return 0
