"""``hetsim map``: map a model onto a platform and write the schedule as JSON."""

from __future__ import annotations

import argparse
from pathlib import Path

from hetsim.cli._common import MAPPER_HELP, _add_common, _add_map_args, _add_snn_map_args, _kind, _map_costs, _mapper


def add_parser(sub) -> None:
    """The ``map`` subcommand's arguments."""
    p = sub.add_parser("map", epilog=MAPPER_HELP, formatter_class=argparse.RawDescriptionHelpFormatter,
                        help="map a model onto a platform and write the schedule as JSON")
    _add_map_args(p)
    _add_snn_map_args(p)
    p.add_argument("-o", "--output", type=Path, required=True, help="schedule JSON to write")
    p.add_argument("--force", action="store_true", help="replace an existing output file")
    _add_common(p)


def cmd_map(args) -> int:
    """``hetsim map``: the pipeline's cost model and mapper, the schedule written as JSON (ONNX models and
    spiking networks)."""
    from hetsim.files import atomic_write_text, check_output_file, make_dirs
    from hetsim.numbers import format_value

    check_output_file(args.output, args.force)  # fail before the work, not after
    mapper = _mapper(args, _kind(args.model))
    costs = _map_costs(args)
    sched = mapper.map(costs)
    make_dirs(args.output.parent, args.output)
    atomic_write_text(args.output, sched.to_json() + "\n")
    if sched.makespan_s is None:  # an SNN schedule: its latency depends on the sample
        layers = ", ".join(f"{x['engine']}/{x['residency']}" for x in sched.config.get("layers", []))
        plan = sched.stats.get("plan_mean_latency_s")
        mean = f", mean latency {format_value(plan, 's')} on the {sched.stats.get('split')} split" if plan else ""
        print(f"{args.mapper}: {sched.config.get('mode')} execution, layers {layers}{mean} -> {args.output}")
        return 0
    off = sum(1 for d in sched.assignment.values() if d != costs.host)
    print(f"{args.mapper}: {off} of {len(sched.assignment)} ops offloaded, predicted makespan "
          f"{format_value(sched.makespan_s, 's')} -> {args.output}")
    _warn_if_activations_overflow(costs, sched)
    return 0


def _warn_if_activations_overflow(costs, sched) -> None:
    """One warning line when the schedule's predicted live activations exceed a memory (``hetsim run`` would
    refuse the schedule without ``--spill``; the mappers do not model activation memory)."""
    import warnings

    from hetsim.analysis.footprint import bytes_text, predicted_footprint, room_text, spill_target

    fp = predicted_footprint(costs, sched)
    over = next(iter(fp.over_capacity().items()), None) if fp is not None else None
    if over is not None:
        (m, (peak, _)), plat = over, costs.platform
        then = ("hetsim run refuses it without --spill" if spill_target(plat, m) is not None
                else "hetsim run refuses it (no larger memory to spill to)")
        warnings.warn(f"the schedule's live activations reach {bytes_text(peak)} in memory {m!r} (predicted "
                      f"timing), more than its room, {room_text(fp, m)}: {then}", stacklevel=2)
