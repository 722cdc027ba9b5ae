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


def cmd_run_scenario(args, platform) -> int:
    """Run the scenario ``args.model`` on ``args.platform``; print the report (or ``--json``), write ``--out``.

    ``--mapper``, ``--contention`` (``none`` included), ``--dispatch``, ``--seed`` and ``--objective`` (or ``-O
    objective=...``) override the scenario's; ``--replications N`` replays it with the seeds ``seed, seed + 1,
    ...`` (their means and spread in the report); ``--verbose`` adds the streams' 95 % intervals.
    ``platform()``: the platform with ``--set PATH=VALUE`` applied as for a single run (the command line's loader:
    :meth:`~hetsim.platform.Platform.with_overrides`, named in the report's header), called once the options are
    checked.
    Options of single-model runs that a scenario does not honour (the model's, the solver's, ``--spill``,
    ``--export``) are refused with one line.

    Raises:
        InputError: such an option; a bad ``--set`` path or value; whatever :func:`run_scenario` raises.
    """
    from hetsim.scenario.report import SCENARIO, format_scenario_report, write_scenario_outputs
    from hetsim.scenario.run import run_scenario

    model_flags = [o for o, v in (("--schedule", "schedule"), ("--mode", "mode"), ("--reorder", "reorder"),
                                  ("--sample", "sample"), ("--spikes", "spikes"), ("--input-shape", "input_shapes"),
                                  ("--export", "export"))
                   if getattr(args, v, None) not in (None, False, [])]
    if not getattr(args, "fold_constants", True):
        model_flags.append("--no-fold-constants")
    if not getattr(args, "fusion", True):
        model_flags.append("--no-fusion")
    if model_flags:
        raise InputError(f"{', '.join(model_flags)}: not for a scenario (its streams name their models)")
    other = [o for o, v in (("--spill", "spill"), ("--time-limit", "time_limit"),
                            ("--work-limit", "work_limit"), ("--gap", "gap"),
                            ("--threads", "threads"), ("--solver", "solver"))
             if getattr(args, v, None) not in (None, False, [])]
    other += [f"-O {item.partition('=')[0].strip()}" for item in getattr(args, "mapper_options", None) or ()
              if item.partition("=")[0].strip() != "objective"]
    if other:
        raise InputError(f"{', '.join(other)}: not for a scenario (a scenario file gives its mapper's options in "
                         "mapper_options; activation spilling is not modelled for scenarios)")
    plat = platform()  # --set: the platform changed as for a single run (a bad path: one line, exit 2)
    if args.out is not None:
        from hetsim.report.outputs import check_out_dir, output_files

        check_out_dir(args.out, args.force, output_files(SCENARIO))
        import matplotlib

        matplotlib.use("Agg")
    from hetsim.scenario.spec import max_ops

    with max_ops(getattr(args, "max_ops", None)):  # the work bound (hetsim.scenario.spec.check_ops)
        r = run_scenario(plat, args.model, mapper=args.mapper, contention=args.contention,  # None: the file's
                         dispatch=getattr(args, "dispatch", None), seed=getattr(args, "seed", None),
                         objective=_objective(args), replications=getattr(args, "replications", None) or 1)
    print(json.dumps(r.summary, indent=1, default=str) if args.json
          else format_scenario_report(r, verbose=getattr(args, "verbose", False)))
    if args.out is not None:
        written = write_scenario_outputs(r, args.out, force=args.force)
        if not args.json:
            print(f"\n  wrote {', '.join(p.name for p in written)} to {args.out}/")
    return 0
