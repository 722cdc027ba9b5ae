"""``hetsim validate``: check a mapper's schedule and replay it against its promise."""

from __future__ import annotations

import argparse
from pathlib import Path

from hetsim.cli._common import (
    MAPPER_HELP,
    _add_common,
    _add_map_args,
    _add_snn_map_args,
    _kind,
    _map_costs,
    _mapper,
    _no_options_with_schedule,
)


def add_parser(sub) -> None:
    """The ``validate`` subcommand's arguments."""
    p = sub.add_parser("validate", epilog=MAPPER_HELP, formatter_class=argparse.RawDescriptionHelpFormatter,
                        help="check a mapper's schedule and replay it against its promise",
                       description="(a) check the schedule's feasibility (support, each device's capacity, precedence "
                       "with transfers, host capacity); (b) replay it without contention and require the makespan "
                       "the mapper predicted, to --rel-tol; (c) replay with contention (links, and the memory ports "
                       "on a platform whose devices read weights from a memory) and report the difference as the "
                       "contention-free model's error; (d) the live activations of the predicted schedule against "
                       "each memory's capacity. Exit code 0 valid, 1 invalid.")
    _add_map_args(p)
    _add_snn_map_args(p)
    p.add_argument("--schedule", type=Path, help="validate this schedule.json instead of running --mapper (only on the "
                   "platform it names, --set overrides included; a file whose \"platform\" is null "
                   "is checked wherever it fits)")
    p.add_argument("--rel-tol", type=float, default=1e-9, help="relative tolerance on times (default 1e-9)")
    _add_common(p)


def cmd_validate(args) -> int:
    """``hetsim validate``: check a schedule (a mapper's, or ``--schedule``) and replay it against its promise;
    for a spiking network, against the vectorised evaluator on one eval sample
    (:func:`hetsim.snn.evaluate.validate_snn_schedule`)."""
    from hetsim.check import require_made_for
    from hetsim.schedule import Schedule
    from hetsim.validate import validate_schedule

    _no_options_with_schedule(args)
    kind = _kind(args.model)
    costs = _map_costs(args)
    if args.schedule:
        sched = Schedule.load(args.schedule)
        require_made_for(costs, sched)
    else:
        sched = _mapper(args, kind).map(costs)
    check = kind.validate or validate_schedule  # the kind's own, else the DAG's
    rep = check(costs, sched, rel_tol=args.rel_tol)
    st = sched.stats
    print(f"hetsim validate: {costs.workload.name} on {costs.platform.name}, schedule from {sched.mapper}")
    if st:
        keys = ("status", "solve_time_s", "variables", "constraints", "incumbent_s", "bound_s", "mip_gap")
        shown = {k: st[k] for k in keys if st.get(k) is not None}
        if shown:
            print("  mapper: " + ", ".join(f"{k} {_fmt(v)}" for k, v in shown.items()))
    if rep.violations:
        print(f"  INVALID: {len(rep.violations)} feasibility violations")
        for v in rep.violations:
            print(f"    - {v}")
        return 1
    if kind.validate_words is not None:
        print(f"  (a) feasible: {kind.validate_words[0]}")
    else:
        from hetsim.validate import capacity_phrase

        print(f"  (a) feasible: operator support, {capacity_phrase(costs.platform)}, precedence with transfers "
              "(Eq. 8), host capacity (Eq. 11-12)")
    pred, rep_ms = rep.predicted_makespan_s, rep.replay_makespan_s
    if rep.divergence:
        print(f"  (b) INVALID: {rep.divergence}")
        return 1
    what = kind.validate_words[1] if kind.validate_words is not None else "predicted"
    print(f"  (b) replay without contention: {rep_ms * 1e3:.6f} ms = {what} {pred * 1e3:.6f} ms "
          f"(rel. tol {args.rel_tol:g})")
    if rep.contention_makespan_s is not None:
        kinds = "link and memory-port contention" if sched.policies else "link contention"
        print(f"  (c) replay with {kinds}: {rep.contention_makespan_s * 1e3:.6f} ms; model error "
              f"{rep.model_error * 100:+.3f} %")
    if kind.validate is None and _activation_memory(costs, sched) is False:  # (d): part of the DAG's check
        return 1
    print("  valid")
    return 0


def _activation_memory(costs, sched) -> bool | None:
    """Line (d): the live activations of the schedule's predicted times against each memory's capacity
    (:mod:`hetsim.analysis.footprint`); ``False`` when a checked memory is over capacity, ``None`` when the schedule
    predicts no times."""
    from hetsim.analysis.footprint import bytes_text, predicted_footprint, room_text, spill_target

    fp = predicted_footprint(costs, sched)
    if fp is None:
        return None
    over = fp.over_capacity()
    peaks = ", ".join(f"{m} {bytes_text(d['peak_bytes'])}" + (f" of {room_text(fp, m)}" if d["checked"] else "")
                      for m, d in fp.to_dict().items())
    if over:
        m, (peak, _) = next(iter(over.items()))
        spill = (" (hetsim run --spill charges the excess to the next memory)"
                 if spill_target(costs.platform, m) is not None else " (no larger memory to spill it to)")
        print(f"  (d) INVALID: live activations need {bytes_text(peak)} in memory {m!r}, which has room for "
              f"{room_text(fp, m)}{spill}")
        return False
    print(f"  (d) activation memory (peak live bytes, predicted): {peaks}")
    return True


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)
