"""``hetsim run PLATFORM SCENARIO.yaml``: the scenario branch of the run command (a hook in ``hetsim/cli/run.py``)."""

from __future__ import annotations

import json

from hetsim.errors import InputError
from hetsim.schedule import OBJECTIVES

__all__ = ["cmd_run_scenario"]


def _objective(args) -> str | None:
    """``--objective`` or ``-O objective=...`` (the scenario's when neither is given).

    Raises:
        InputError: an objective a scenario has no meaning for (``energy``: min-cost's, per layer).
    """
    obj = getattr(args, "objective", None)
    for item in getattr(args, "mapper_options", None) or ():
        name, _, text = item.partition("=")
        if name.strip() == "objective":
            obj = text.strip()
    if obj is not None and obj not in OBJECTIVES:
        from hetsim.errors import did_you_mean

        raise InputError(f"objective {obj!r}: a scenario maps for {' or '.join(OBJECTIVES)}"
                         f"{did_you_mean(obj, OBJECTIVES)}")
    return obj


def cmd_run_scenario(args) -> int:
    """Run the scenario ``args.model`` on ``args.platform``; print the report (or ``--json``), write ``--out``.

    ``--mapper``, ``--contention`` (when not ``none``), ``--dispatch``, ``--seed`` and ``--objective`` (or ``-O
    objective=...``) override the scenario's.
    Options of single-model runs that have no meaning here are refused with one line.
    """
    from hetsim.scenario.report import format_scenario_report, write_scenario_outputs
    from hetsim.scenario.run import run_scenario

    bad = [o for o, v in (("--schedule", getattr(args, "schedule", None)), ("--mode", getattr(args, "mode", None)),
                          ("--reorder", getattr(args, "reorder", False)), ("--sample", getattr(args, "sample", None)),
                          ("--spikes", getattr(args, "spikes", None)),
                          ("--input-shape", getattr(args, "input_shape", None))) if v not in (None, False, [])]
    if bad:
        raise InputError(f"{', '.join(bad)}: not for a scenario (its streams name their models)")
    if args.out is not None:
        from hetsim.report.outputs import check_out_dir

        check_out_dir(args.out, args.force)
        import matplotlib

        matplotlib.use("Agg")
    cont = args.contention if args.contention not in (None, "none") else None
    r = run_scenario(args.platform, args.model, mapper=args.mapper, contention=cont,
                     dispatch=getattr(args, "dispatch", None), seed=getattr(args, "seed", None),
                     objective=_objective(args))
    print(json.dumps(r.summary, indent=1, default=str) if args.json else format_scenario_report(r))
    if args.out is not None:
        written = write_scenario_outputs(r, args.out, force=args.force)
        if not args.json:
            print(f"\n  wrote {', '.join(p.name for p in written)} to {args.out}/")
    return 0
