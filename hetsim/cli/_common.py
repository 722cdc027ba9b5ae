"""What the commands of ``hetsim`` share: argument types and groups, ``--set`` and mapper options, the front
end of a model path, the solver progress printer."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from hetsim.errors import InputError, did_you_mean
from hetsim.numbers import format_value
from hetsim.schedule import OBJECTIVES

DEFAULT_MAPPER = "cpsat"


MAPPER_HELP = """mappers:
  all-host  every op on the host CPU: the baseline of every speedup
  greedy    offload the ops saving the most host time per share of an accelerator's capacity while it pays
  heft      HEFT list scheduling (upward rank, earliest finish time) within every device's capacity
  ilp       the CPU-CIM ILP's MILP (Eq. 5-14), for k accelerators; HiGHS (or --solver gurobi); exact
  cpsat     the same problem as a CP-SAT scheduling model; exact, the fastest prover
DIANA (ODiMO; platforms/diana.yaml), per Conv/FC layer:
  all-8bit              every layer on the digital accelerator
  all-ternary           every groups=1 layer on the AIMC, depthwise on the digital accelerator
  io8-backbone-ternary  first and last layer digital, the rest AIMC
  min-cost              per layer the channel split minimising --objective latency|energy (exact)
  dnas-export           the channel split of a DNAS search read from --export FILE (hetsim JSON, ODiMO summary
                        JSON, or an ODiMO/PLiNIO checkpoint with torch installed)
spiking networks (SpikeDuet; platforms/efr32mg24.yaml, workloads/snn/*.yaml), per affine layer:
  spikeduet      engine (sparse M33 / dense MVP / range-sparse MVP) and weight residency (SRAM / Flash / Flash
                 with hot columns in SRAM) minimising mean latency on the validation split; exact (default)
  all-m33        every layer on the sparse Cortex-M33 (best residency): the baseline of SNN speed-ups
  all-dense-mvp  every layer dense on the MVP
"""


EPILOG = MAPPER_HELP + """
examples:
  hetsim run platforms/puma.yaml workloads/yolov5n.onnx
  hetsim run platforms/puma-x86.yaml workloads/resnet18_int8_qdq.onnx --mapper all-host
  hetsim run platforms/puma.yaml workloads/yolov5n.onnx --contention links,cim-bus --out results/yolo
  hetsim run platforms/puma.yaml workloads/yolov5n.onnx --set devices.cim.crossbars=25 --set devices.cim.t_mvm_ns=100
  hetsim inspect workloads/mobilenet_v2.onnx --platform platforms/puma.yaml
  hetsim run platforms/diana.yaml workloads/resnet20_cifar10.onnx --mapper min-cost --objective energy
  hetsim run platforms/efr32mg24.yaml workloads/snn/braille384.yaml --reorder --out results/braille384
  hetsim export-nir workloads/snn/braille64.yaml -o results/braille64.nir
  hetsim run platforms/efr32mg24.yaml results/braille64.nir --spikes workloads/snn/braille7_12-64-7_T100.npz
  hetsim search platforms/diana.yaml --dataset digits --objective energy --out results/odimo
  hetsim calibrate profiles/*.csv -o results/host.yaml
  hetsim check platforms/cim-npu.yaml
  hetsim compare results/yolo results/yolo-links
"""


def _add_spikes(p: argparse.ArgumentParser) -> None:
    p.add_argument("--spikes", type=Path, default=None, metavar="INPUT.npz",
                   help="for a NIR graph (.nir): the input raster, bool [samples, T, inputs] under the key 'spikes' "
                   "or one spk_<split>_L0 per split (train/val/test); the other layers are replayed")


def _number(kind: type, low: float, strict: bool):
    """An argparse type: a finite ``kind`` (int or float) ``> low`` (``strict``) or ``>= low``."""
    rel = ">" if strict else ">="

    def parse(text: str):
        try:
            v = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {'an integer' if kind is int else 'a number'}") from None
        if not math.isfinite(v) or (v <= low if strict else v < low):
            what = "an integer" if kind is int else "a finite number"
            raise argparse.ArgumentTypeError(f"must be {what} {rel} {low:g}, got {text}")
        return v

    return parse


_positive_float = _number(float, 0, strict=True)


_nonnegative_float = _number(float, 0, strict=False)


_positive_int = _number(int, 1, strict=False)


_nonnegative_int = _number(int, 0, strict=False)


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--debug", action="store_true", help="show the full traceback on errors")


def _add_set(p: argparse.ArgumentParser) -> None:
    p.add_argument("--set", action="append", dest="overrides", metavar="PATH=VALUE",
                   help="change one platform field for this run, by its dotted path in the YAML (repeatable), e.g. "
                   "--set devices.cim.crossbars=25 --set devices.cim.t_mvm_ns=100; VALUE is read as YAML "
                   "(a number, true, [Conv, Gemm], ...)")


def _add_input_shape(p: argparse.ArgumentParser) -> None:
    p.add_argument("--input-shape", action="append", dest="input_shapes", metavar="NAME=D1,D2,...",
                   help="fix the dynamic dims of ONNX graph input NAME (repeatable), e.g. --input-shape "
                   "x=1,3,224,224; dims the model fixes must agree")


def _add_llm_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("LLM descriptions (a decoder-only transformer, workloads/llm/*.llm.yaml)")
    g.add_argument("--phase", choices=("prefill", "decode"), default=None,
                   help="the graph to build: a prefill of --prompt-tokens tokens, or one decode step at "
                   "--context-tokens (default: decode, or prefill when only --prompt-tokens is given)")
    g.add_argument("--prompt-tokens", type=_positive_int, default=None, metavar="P",
                   help="prefill: the prompt's tokens (default 128)")
    g.add_argument("--context-tokens", type=_positive_int, default=None, metavar="L",
                   help="decode: the tokens already in the KV cache; the step decodes token L+1 (default 128)")


def _workload_options(args) -> dict[str, object] | None:
    """``--phase``, ``--prompt-tokens``, ``--context-tokens`` as front-end loader options (``None`` when none was
    given); refused, as flags, for a model whose front end does not take them."""
    given = {k: getattr(args, k, None) for k in ("phase", "prompt_tokens", "context_tokens")}
    given = {k: v for k, v in given.items() if v is not None}
    if not given:
        return None
    _refuse_model_options(args.model, list(given))
    return given


def _input_shapes(args) -> dict[str, tuple[int, ...]] | None:
    """``--input-shape NAME=D1,D2,...`` options as ``{name: dims}`` (``None`` when none was given)."""
    given = getattr(args, "input_shapes", None)
    if not given:
        return None
    _refuse_model_options(args.model, ["input_shape"])
    shapes: dict[str, tuple[int, ...]] = {}
    for text in given:
        name, eq, dims = text.rpartition("=")
        try:
            shape = tuple(int(d) for d in dims.split(","))
        except ValueError:
            shape = ()
        if not eq or not name or not shape or any(d <= 0 for d in shape):
            raise InputError(f"--input-shape {text!r}: give NAME=D1,D2,... with positive integer dims, e.g. "
                             "--input-shape x=1,3,224,224")
        if name in shapes:
            raise InputError(f"--input-shape gives input {name!r} twice")
        shapes[name] = shape
    return shapes


def _frontend(model: Path):
    """The front end that reads ``model`` (:mod:`hetsim.workload.frontends`, by its suffix).

    Raises:
        WorkloadError: no front end reads that suffix.
    """
    from hetsim.workload.frontends import frontend_for

    return frontend_for(model)


def _kind(model: Path):
    """The workload kind (:class:`hetsim.kinds.WorkloadKind`) of ``model``, by its front end.

    Raises:
        WorkloadError: no front end reads that suffix.
    """
    from hetsim.kinds import workload_kind

    return workload_kind(_frontend(model).kind)


def _refuse_other_kinds_flags(args, kind) -> None:
    """Refuse the flags only other workload kinds take (:attr:`hetsim.kinds.WorkloadKind.cli_flags`).

    Raises:
        InputError: one line naming them, the models they apply to and the model given.
    """
    from hetsim.kinds import workload_kind, workload_kinds

    mine = {flag for flag, _, _ in kind.cli_flags}
    for other in map(workload_kind, workload_kinds()):
        if other is kind:
            continue
        given = [flag for flag, attr, unset in other.cli_flags
                 if flag not in mine and getattr(args, attr, unset) not in (unset, None)]
        if given:
            verb = "applies" if len(given) == 1 else "apply"
            raise InputError(f"{', '.join(given)} {verb} to {other.cli_noun or other.description}, not to "
                             f"{(kind.cli_noun or kind.description).split(' (')[0]}")


def _refuse_model_options(model: Path, options: list[str]) -> None:
    """Refuse, as flags, the loader options in ``options`` that ``model``'s front end does not take.

    Raises:
        InputError: the first of them (``--spikes gives the input raster of a NIR graph (.nir), not of an ONNX
            model``).
    """
    from hetsim.workload.frontends import refuse_options

    refuse_options(_frontend(model), options, flags=True)


def _add_map_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("platform", type=Path, help="platform YAML (e.g. platforms/puma.yaml)")
    p.add_argument("model", type=Path, help="ONNX model (e.g. workloads/yolov5n.onnx), a saved torch.export "
                   "program (.pt2, needs hetsim[torch]), an SNN spec (e.g. workloads/snn/braille384.yaml) or a NIR "
                   "graph (.nir, with --spikes): whatever a front end reads (docs/architecture.md)")
    _add_set(p)
    _add_input_shape(p)
    _add_llm_options(p)
    _add_fold(p)
    p.add_argument(
        "--mapper", default=None, metavar="MAPPER",
        help=f"mapping algorithm (default: {DEFAULT_MAPPER}; spikeduet for SNNs); see 'mappers' below",
    )
    g = p.add_argument_group("solver options (exact mappers)")
    g.add_argument("--time-limit", type=_positive_float, default=None, metavar="S",
                   help="a wall-clock limit: stop the solver after S seconds and use its best schedule (default: "
                   "none; the result then depends on the machine's speed and load); alone it replaces the default "
                   "work limit, with --work-limit the first reached stops; for SNNs, each spikeduet plan search "
                   "(default: a work limit of 1,000 candidate schedules), which then reports its gap to the optimum")
    g.add_argument("--work-limit", type=_positive_float, default=None, metavar="W",
                   help="a deterministic limit, the same result on any machine (the default): cpsat, W deterministic "
                   "seconds of CP-SAT work (default 2); ilp, W branch-and-bound nodes (default: 5,000,000 divided "
                   "by the model's nonzeros, at least 10)")
    g.add_argument("--gap", type=_nonnegative_float, default=None, metavar="REL",
                   help="stop when the relative MIP gap (incumbent - bound) / incumbent is below REL")
    g.add_argument("--threads", type=_positive_int, default=None, help="solver threads / CP-SAT workers")
    g.add_argument("--seed", type=_nonnegative_int, default=None,
                   help="solver random seed; for SNNs the reordering seed (default: 0)")
    g.add_argument("--solver", default=None, help="ilp backend: highs (default) or gurobi")
    g.add_argument("-O", "--mapper-option", action="append", dest="mapper_options", metavar="NAME=VALUE",
                   help="any keyword option of the mapper's constructor, e.g. -O fluid_share=0.5 (repeatable); "
                   "VALUE is read by the option's type (a plugin mapper's options too)")
    g.add_argument("--objective", choices=(*OBJECTIVES, "energy"), default=None,  # energy: min-cost's (DIANA)
                   help="cpsat, heft, greedy: latency (one inference's makespan, the default) or throughput (the "
                   "busiest device's or link's load per request: the pipelined frame rate; cpsat exact with bound "
                   "and MIP gap, heft/greedy a local search; a scenario maps all its models at once at their "
                   "rates, sharing the capacities); min-cost (DIANA): each layer's latency max(L_a, L_d) or its "
                   "energy")
    g = p.add_argument_group("DIANA mappers (ODiMO)")
    g.add_argument("--export", type=Path, default=None, metavar="FILE",
                   help="dnas-export: the DNAS export to replay (hetsim channel-split JSON, ODiMO layer summary "
                   "JSON, or a .pth checkpoint)")


def _add_snn_map_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("spiking networks (SpikeDuet; an SNN spec .yaml or a NIR graph .nir)")
    g.add_argument("--mode", choices=("async", "blocking"), default=None,
                   help="CPU-MVP execution mode of the schedule (default: async)")
    _add_spikes(g)


def _add_fold(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-fold-constants", dest="fold_constants", action="store_false",
                   help="charge ops computed only from constants (weight DequantizeLinear in QDQ graphs, Constant "
                   "nodes, Reshape/Slice/Concat on weights) on every inference; by default they cost nothing, as "
                   "ONNX Runtime folds them once at session creation")
    p.add_argument("--no-fusion", dest="fusion", action="store_false",
                   help="run every op on its own launch; by default a device that fuses ops into a producer (an "
                   "NPU's activation and requantisation epilogue: 'fuses' in the platform) may run them fused")


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line (exit code 2), pointing at ``--help`` rather than
    printing the whole usage block."""

    def error(self, message: str):
        hint = ""
        if message.startswith("unrecognized arguments:"):
            flags = set(self._option_string_actions)
            owners: dict[str, list[str]] = {}  # a subcommand's flag -> the subcommands that have it
            for a in self._actions:  # and the subcommands' flags (argparse reports them at the top level)
                for sub in getattr(a, "choices", None) or {}:
                    if isinstance(a.choices, dict) and isinstance(a.choices[sub], argparse.ArgumentParser):
                        for f in a.choices[sub]._option_string_actions:
                            flags.add(f)
                            owners.setdefault(f, []).append(sub)
            words = [w.split("=")[0] for w in message.split(":", 1)[1].split() if w.startswith("-")]
            if words and words[0] in owners:  # a real flag, of other subcommands than this one
                hint = f"; {words[0]} is an option of {', '.join(f'hetsim {c}' for c in owners[words[0]])}"
            else:
                hint = "".join(did_you_mean(w, sorted(flags)) for w in words[:1])
        self.exit(2, f"{self.prog}: error: {message}{hint} (see '{self.prog} --help')\n")


class SolverProgress:
    """Prints a long solve's progress (incumbent, bound, gap) to stderr: nothing for the first ``after_s``
    seconds, then at most once every ``every_s`` seconds, and the final state if anything was printed."""

    def __init__(self, stream=sys.stderr, every_s: float = 1.0, after_s: float = 2.0):
        self.stream, self.every_s, self.after_s = stream, every_s, after_s
        self._last, self._printed = -1e9, False

    def __call__(self, p: dict) -> None:
        t = p.get("time_s", 0.0)
        final = bool(p.get("final"))
        if (final and not self._printed) or (not final and (t < self.after_s or t - self._last < self.every_s)):
            return
        self._last, self._printed = t, True
        inc, bnd, gap = p.get("incumbent_s"), p.get("bound_s"), p.get("gap")
        parts = [f"  [{t:6.1f} s]"]
        if inc is not None:
            parts.append(f"incumbent {format_value(inc, 's')}")
        if bnd is not None:
            parts.append(f"bound {format_value(bnd, 's')}")
        if gap is not None:
            parts.append(f"gap {gap * 100:.2f} %")
        print("  ".join(parts), file=self.stream, flush=True)


#: mapper option -> the command-line flag that sets it
OPTION_FLAGS = {"time_limit_s": "--time-limit", "work_limit": "--work-limit", "mip_rel_gap": "--gap",
                "threads": "--threads", "seed": "--seed",
                "solver": "--solver", "objective": "--objective", "path": "--export", "mode": "--mode"}


def _given_options(args) -> dict:
    """The mapper options the user set on the command line (flags left at their ``None`` default are not); a
    ``--mapper-option NAME=VALUE`` as its raw text (:func:`mapper_options` reads it by the mapper's signature).

    Raises:
        InputError: a ``--mapper-option`` without ``NAME=``, or one that a flag of its own also sets.
    """
    opts = {"time_limit_s": args.time_limit, "work_limit": getattr(args, "work_limit", None),
            "mip_rel_gap": args.gap, "threads": args.threads, "seed": args.seed,
            "solver": args.solver, "objective": getattr(args, "objective", None),
            "path": getattr(args, "export", None), "mode": getattr(args, "mode", None)}
    opts = {k: v for k, v in opts.items() if v is not None}
    for item in getattr(args, "mapper_options", None) or ():
        name, eq, text = item.partition("=")
        name = name.strip()
        if not eq or not name.isidentifier():
            raise InputError(f"--mapper-option {item!r}: give NAME=VALUE, e.g. -O fluid_share=0.5")
        if name in opts:
            flag = OPTION_FLAGS.get(name)
            raise InputError(f"--mapper-option sets {name!r} twice" + (f" (also set by {flag})" if flag else ""))
        opts[name] = _RawOption(text.strip())
    return opts


class _RawOption(str):
    """A ``--mapper-option`` value not yet read by the mapper's signature."""


def mapper_options(args, mapper: str | None = None) -> dict:
    """Options for :func:`hetsim.mappers.get_mapper` from the command line: the ones the user set, plus a
    progress printer for the mappers that take one.

    Raises:
        InputError: an unknown mapper (with the closest name), or a flag the mapper takes no option for.
    """
    mapper = mapper or args.mapper
    opts = _given_options(args)
    from hetsim.mappers import mapper_option_names
    from hetsim.mappers.base import parse_mapper_option

    opts = {k: parse_mapper_option(mapper, k, v) if isinstance(v, _RawOption) else v for k, v in opts.items()}
    takes = mapper_option_names(mapper)
    if takes is None:
        return opts
    bad = [OPTION_FLAGS.get(k, f"--mapper-option {k}") for k in opts if k not in takes]
    if bad:
        flags = [OPTION_FLAGS[k] for k in takes if k in OPTION_FLAGS]
        its = f"its options: {', '.join(flags)}" if flags else "it takes none on the command line"
        raise InputError(f"{', '.join(bad)} {'does' if len(bad) == 1 else 'do'} not apply to --mapper {mapper} "
                         f"({its})")
    if "progress" in takes:
        opts["progress"] = SolverProgress()
    return opts


def _check_mapper_name(args) -> None:
    """An unknown ``--mapper`` (a typo): suggest the closest name. A known mapper of the wrong kind (ONNX or SNN)
    is refused later, with its own message."""
    from hetsim.mappers import MAPPERS

    known = sorted(MAPPERS)
    if args.mapper is not None and args.mapper not in known:
        hint = did_you_mean(args.mapper, known)
        raise InputError(f"--mapper: unknown mapper {args.mapper!r}{hint}{' A' if hint else '; a'}vailable: "
                         f"{', '.join(known)}")


def _no_options_with_schedule(args) -> None:
    """Refuse mapper settings beside ``--schedule`` (a saved schedule is replayed, no mapper runs): ``--mapper``
    as the user gave it (``args.mapper_given``, set before a default fills ``args.mapper``) and every mapper
    option flag.

    Raises:
        InputError: one line naming the flags.
    """
    if args.schedule is not None and getattr(args, "mapper_given", False):
        raise InputError(f"--mapper {args.mapper} names a mapper to run; --schedule replays a saved schedule (the "
                         "mapper that made it is in the file), no mapper runs")
    if args.schedule is not None and _given_options(args):
        flags = [OPTION_FLAGS.get(k, f"--mapper-option {k}") for k in _given_options(args)]
        raise InputError(f"{', '.join(flags)} {'sets a mapper option' if len(flags) == 1 else 'set mapper options'}"
                         "; --schedule replays a saved schedule, no mapper runs")


def parse_overrides(items: list[str] | None) -> dict[str, object]:
    """``--set PATH=VALUE`` arguments as a dict (:func:`hetsim.overrides.parse_overrides`, the guarded reader)."""
    from hetsim.overrides import parse_overrides as parse

    return parse(items)


def _platform(args):
    """The ``args.platform`` YAML, loaded, with the ``--set`` overrides applied (its name says which).

    Raises:
        PlatformError: a bad file, or a ``--set`` path that does not exist or a value that fails validation.
    """
    from hetsim.errors import PlatformError
    from hetsim.platform import load_platform

    plat = load_platform(args.platform)
    overrides = parse_overrides(getattr(args, "overrides", None))
    if overrides:
        given = ", ".join(f"{k}={v}" for k, v in overrides.items())
        try:
            plat = plat.with_overrides({"name": f"{plat.name} with {given}", **overrides})
        except PlatformError as err:
            raise PlatformError(f"--set: {err}") from None
    return plat


def _map_costs(args):
    """``map``'s and ``validate``'s first steps, the pipeline's (:func:`hetsim.pipeline.cost_model`): the
    platform with ``--set``, the model read by its front end, their cost model (an SNN's: on its eval split)."""
    from hetsim.pipeline import cost_model

    return cost_model(_platform(args), args.model, fold_constants=args.fold_constants,
                      input_shape=_input_shapes(args), spikes=args.spikes, fusion=getattr(args, "fusion", True),
                      workload_options=_workload_options(args))


def _mapper(args, kind):
    """The ``--mapper`` with the options set on the command line (an SNN plan search: its mapper's default work limit),
    for a workload of ``kind`` (a :class:`hetsim.kinds.WorkloadKind`).

    Raises:
        InputError: a flag of another workload kind, an option the mapper does not take, or a mapper of another
            workload kind.
    """
    from hetsim.mappers.base import mapper_or_schedule
    from hetsim.workload.kinds import describe

    if args.spikes is not None:
        _refuse_model_options(args.model, ["spikes"])
    _refuse_other_kinds_flags(args, kind)
    options = mapper_options(args)  # an SNN plan search's default limit is its mapper's (a work limit)
    return mapper_or_schedule(args.mapper, options, None, kind.name, f"does not map {describe(kind.name)}")[0]
