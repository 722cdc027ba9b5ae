"""``hetsim run``: map a model onto a platform, simulate it, report."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from hetsim.cli._common import (
    MAPPER_HELP,
    _add_common,
    _add_map_args,
    _add_spikes,
    _frontend,
    _input_shapes,
    _no_options_with_schedule,
    _nonnegative_int,
    _platform,
    _positive_int,
    _refuse_model_options,
    _refuse_other_kinds_flags,
    _workload_options,
    mapper_options,
)
from hetsim.errors import InputError
from hetsim.sim.contention import CONTENTION_KINDS


def add_parser(sub) -> None:
    """The ``run`` subcommand's arguments."""
    p = sub.add_parser("run", epilog=MAPPER_HELP, formatter_class=argparse.RawDescriptionHelpFormatter,
                        help="map a model onto a platform, simulate it, report",
                       description="Load the model and platform, map with --mapper, replay on SimPy "
                       "resources, and print makespan, speedup over the platform's baseline, utilisation, energy, "
                       "offloaded ops and the crossbar placement. Given an SNN spec (.yaml) or a NIR graph (.nir) with "
                       "--spikes on an SNN platform "
                       "(platforms/efr32mg24.yaml): plan engines and weight residencies per layer, evaluate "
                       "SpikeDuet's Table I configurations sample by sample and replay one sample's timeline. "
                       "Given a scenario (scenarios/*.yaml: streams of requests of one or several models): map "
                       "every model, replay the requests with run-time dispatch, print per-stream throughput and "
                       "latency percentiles, device utilisation and energy (--out: requests.csv, figures).")
    _add_map_args(p)
    _add_contention(p)
    p.add_argument("--out", type=Path, help="write summary.json, ops.csv, breakdown.csv (busy time and "
                   "energy per device and op type), critical_path.csv (the critical path, every op's slack), "
                   "schedule.json, trace.csv, "
                   "trace.json (Chrome trace, opens in Perfetto), timeline.png, breakdown.png, memory.png (live "
                   "activations per memory over time) and report.html "
                   "(the run in one self-contained page) here (SNNs: summary.json, layers.csv, samples.csv, "
                   "ops.csv, breakdown.csv, critical_path.csv, schedule.json, trace.csv, trace.json, timeline.png and "
                   "report.html; scenarios: "
                   "summary.json, requests.csv, streams.csv, devices.csv, trace.csv, objectives.csv, the latency "
                   "CDF, timeline and occupancy figures and report.html)")
    p.add_argument("--force", action="store_true", help="replace existing files in --out")
    p.add_argument("--json", action="store_true", help="print summary.json to stdout instead of the table")
    p.add_argument("-v", "--verbose", action="store_true", help="name every offloaded op and split layer "
                   "(default: the first 4 per device, the rest counted) and every op type of the time breakdown "
                   "(default: the first 3)")
    p.add_argument("--schedule", type=Path, help="replay this schedule.json instead of running a mapper "
                   "(only on the platform it names, --set overrides included; a file whose \"platform\" is "
                   "null replays wherever it fits)")
    p.add_argument("--spill", action="store_true",
                   help="live activations beyond a memory's capacity spill to the next memory, the traffic reported "
                   "and charged, instead of the run being refused (ONNX models; docs/models.md, activation "
                   "memory)")
    p.add_argument("--dispatch", default=None, metavar="POLICY",
                   help="scenarios (MODEL = scenarios/*.yaml, streams of requests): the serial devices' policy "
                   "between requests: static, fifo, priority, edf (default: the scenario's)")
    p.add_argument("--replications", type=_positive_int, default=None, metavar="N",
                   help="scenarios: replay the requests N times with the seeds seed, seed+1, ...; the report gives "
                   "each stream's statistics as their mean and 95 %% t-interval (default: 1)")
    p.add_argument("--max-ops", type=_positive_int, default=None, metavar="N",
                   help="scenarios: refuse one whose replay would simulate more than N ops (default 10000000, "
                   "a few minutes of replay), estimated before any mapping as the streams' requests (count, or "
                   "duration_s x the arrival rate, or a trace's rows) x (their model's ops + 1)")
    g = p.add_argument_group("spiking networks (SpikeDuet; an SNN spec .yaml on platforms/efr32mg24.yaml)")
    g.add_argument("--mode", choices=("async", "blocking"), default=None,
                   help="CPU-MVP execution: async overlaps MVP affine work with M33 LIF updates of earlier "
                   "timesteps; blocking waits for every MVP launch (default: async)")
    g.add_argument("--reorder", action="store_true",
                   help="reorder hidden neurons first (function-preserving, fitted on the training split)")
    g.add_argument("--sample", type=_nonnegative_int, default=None, metavar="N",
                   help="eval-split sample whose timeline is drawn (default: the median-latency sample)")
    _add_spikes(g)
    _add_common(p)


def _add_contention(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--contention", default=None, metavar="KINDS",
        help=f"comma-separated contention kinds to model: {', '.join(CONTENTION_KINDS)}, or all / none "
        "(default: none = the CPU-CIM ILP's model: the shared bus, the CIM internal bus and the PUMA cores never "
        "make ops wait for each other; for a scenario, the scenario file's contention, which this overrides)",
    )


def _headless() -> None:
    """Draw figures without a display: the command line only writes them to files (the Python API leaves the
    backend to the user, e.g. a notebook's inline one)."""
    import matplotlib

    matplotlib.use("Agg")


def cmd_run(args) -> int:
    """``hetsim run``: one path for ONNX models and spiking networks (:func:`hetsim.pipeline.run`)."""
    from hetsim.api import run
    from hetsim.kinds import workload_kind
    from hetsim.pipeline import default_mapper
    from hetsim.report.outputs import check_out_dir, output_files, write_outputs
    from hetsim.report.text import DEFAULT_NAMES, format_report
    from hetsim.scenario.spec import is_scenario_file

    if is_scenario_file(args.model):  # a scenario: streams of requests (hetsim/scenario/)
        from hetsim.scenario.cli import cmd_run_scenario

        return cmd_run_scenario(args, lambda: _warned_platform(args))
    if getattr(args, "replications", None) is not None:
        raise InputError("--replications: for a scenario (scenarios/*.yaml, random arrivals), not for one model's run "
                         "(it has no seed to replicate over)")

    if getattr(args, "max_ops", None) is not None:
        raise InputError("--max-ops applies to scenarios (scenarios/*.yaml), not to one model's run")
    kind = workload_kind(_frontend(args.model).kind)
    shapes = _input_shapes(args)
    if args.spikes is not None:
        _refuse_model_options(args.model, ["spikes"])
    _refuse_other_kinds_flags(args, kind)
    if args.model.suffix.lower() in (".yaml", ".yml"):
        _check_not_swapped(args.platform, args.model)
    args.mapper = args.mapper or default_mapper(kind.name)
    fields = {f.name for f in dataclasses.fields(kind.options)}
    extra = {f: getattr(args, f) for f in fields if getattr(args, f, None) is not None}
    if "seed" in fields:  # the run's --seed (a spiking network's: its reordering), not the mapper's
        args.seed = None
    _no_options_with_schedule(args)
    options = mapper_options(args) if args.schedule is None else {}
    if args.out is not None:
        check_out_dir(args.out, args.force, output_files(kind.name))  # fail before the work
        _headless()
    if args.spikes is not None:
        extra["spikes"] = args.spikes
    if shapes is not None:
        extra["input_shape"] = shapes
    wopts = _workload_options(args)
    if wopts is not None:
        extra["workload_options"] = wopts
    contention = args.contention or "none"
    plat = _platform(args)
    r = run(plat, args.model, mapper=args.mapper, contention=contention, schedule=args.schedule, **extra, **options)
    _warn_once(args, plat)  # after the run: a bad input stays one line
    names = None if args.verbose else DEFAULT_NAMES
    own = workload_kind(r.workload.kind).text_report  # the kind's own report, else the operator DAG's
    text = (lambda: own(r, max_names=names)) if own is not None else (lambda: format_report(r, max_names=names))
    return _print_and_write(args, r.summary, text, lambda: write_outputs(r, args.out, force=args.force))


def _warned_platform(args):
    """The platform of ``args`` (``--set`` applied), its data-sheet warnings
    (:func:`hetsim.datasheet.platform_warnings`) printed to stderr
    the first time, one ``hetsim: warning:`` line each."""
    plat = _platform(args)
    _warn_once(args, plat)
    return plat


def _warn_once(args, plat) -> None:
    """Print the data-sheet warnings of ``plat`` (:func:`hetsim.datasheet.platform_warnings`) to stderr, one
    ``hetsim: warning:`` line each, the first time a command asks."""
    from hetsim.datasheet import platform_warnings

    if not getattr(args, "platform_warned", False):
        args.platform_warned = True
        for w in platform_warnings(plat):
            print(f"hetsim: warning: {w}", file=sys.stderr, flush=True)


def _print_and_write(args, summary: dict, text, write) -> int:
    """What ``run`` ends with: the summary as JSON (``--json``) or the ``text()`` report, then ``write()`` the
    ``--out`` files and list them."""
    print(json.dumps(summary, indent=1) if args.json else text())
    if args.out is not None:
        written = write()
        if not args.json:
            print(f"\n  wrote {', '.join(p.name for p in written)} to {args.out}/")
    return 0


def _apply(flags: list) -> str:
    """The verb for a list of flags: '--gap applies', '--gap, --solver apply'."""
    return "applies" if len(flags) == 1 else "apply"


def _check_not_swapped(platform: Path, model: Path) -> None:
    """A clear error when the platform and the SNN spec are given the wrong way round (or twice)."""
    from hetsim.platform import read_yaml

    def keys(p: Path) -> set:
        try:  # the guarded loader: size, aliases, nesting (the files' own loaders give the errors)
            d = read_yaml(p, InputError, "file") if p.is_file() else None
        except InputError:
            return set()
        return set(d) if isinstance(d, dict) else set()

    if "layers" in keys(platform) or "devices" in keys(model):
        raise InputError(f"the platform comes first, then the model: hetsim run PLATFORM.yaml NET.yaml (got "
                         f"{platform} then {model})")
