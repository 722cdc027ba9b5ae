"""Command-line interface: ``hetsim`` / ``python -m hetsim``.

Exit codes: 0 success, 2 bad input (missing file, malformed YAML/ONNX, unsupported op, refused overwrite),
1 internal error (a bug: rerun with ``--debug`` for the traceback).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import textwrap
import time
import traceback
from pathlib import Path

from hetsim import __version__
from hetsim.errors import HetsimError, InputError, did_you_mean
from hetsim.sim.contention import CONTENTION_KINDS

# Building the parser and --help/--version import nothing heavy (onnx, pandas, networkx, numpy, pydantic,
# SimPy, matplotlib, solvers): each command imports what it uses (tests/test_cli_usage.py checks this).

DEFAULT_MAPPER = "cpsat"
#: model files that are spiking networks: SNN specs and NIR graphs (the rest are ONNX models)
SNN_MODEL_SUFFIXES = (".yaml", ".yml", ".nir")

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


def _input_shapes(args) -> dict[str, tuple[int, ...]] | None:
    """``--input-shape NAME=D1,D2,...`` options as ``{name: dims}`` (``None`` when none was given)."""
    given = getattr(args, "input_shapes", None)
    if not given:
        return None
    if args.model.suffix.lower() in SNN_MODEL_SUFFIXES:
        raise InputError("--input-shape fixes the input dims of an ONNX model, not of a spiking network (.yaml, "
                         ".nir)")
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


def _add_map_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("platform", type=Path, help="platform YAML (e.g. platforms/puma.yaml)")
    p.add_argument("model", type=Path, help="ONNX model (e.g. workloads/yolov5n.onnx) or, for run, an SNN spec "
                   "(e.g. workloads/snn/braille384.yaml) or a NIR graph (.nir, with --spikes)")
    _add_set(p)
    _add_input_shape(p)
    _add_fold(p)
    p.add_argument(
        "--mapper", default=None, metavar="MAPPER",
        help=f"mapping algorithm (default: {DEFAULT_MAPPER}; spikeduet for SNNs); see 'mappers' below",
    )
    g = p.add_argument_group("solver options (exact mappers)")
    g.add_argument("--time-limit", type=_positive_float, default=None, metavar="S",
                   help="stop the solver after S seconds and use its best schedule (default: 30); for SNNs, "
                   "each spikeduet plan search, which then reports its gap to the optimum")
    g.add_argument("--gap", type=_nonnegative_float, default=None, metavar="REL",
                   help="stop when the relative MIP gap (incumbent - bound) / incumbent is below REL")
    g.add_argument("--threads", type=_positive_int, default=None, help="solver threads / CP-SAT workers")
    g.add_argument("--seed", type=_nonnegative_int, default=None,
                   help="solver random seed; for SNNs the reordering seed (default: 0)")
    g.add_argument("--solver", default=None, help="ilp backend: highs (default) or gurobi")
    g = p.add_argument_group("DIANA mappers (ODiMO)")
    g.add_argument("--objective", choices=("latency", "energy"), default=None,
                   help="min-cost: minimise each layer's latency max(L_a, L_d) or its energy (default: latency)")
    g.add_argument("--export", type=Path, default=None, metavar="FILE",
                   help="dnas-export: the DNAS export to replay (hetsim channel-split JSON, ODiMO layer summary "
                   "JSON, or a .pth checkpoint)")


def _add_fold(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-fold-constants", dest="fold_constants", action="store_false",
                   help="charge ops computed only from constants (weight DequantizeLinear in QDQ graphs, Constant "
                   "nodes, Reshape/Slice/Concat on weights) on every inference; by default they cost nothing, as "
                   "ONNX Runtime folds them once at session creation")


def _add_contention(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--contention", default="none", metavar="KINDS",
        help=f"comma-separated contention kinds to model: {', '.join(CONTENTION_KINDS)}, or all / none "
        "(default: none = the CPU-CIM ILP's model: the shared bus, the CIM internal bus and the PUMA cores never "
        "make ops wait for each other)",
    )


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line (exit code 2), pointing at ``--help`` rather than
    printing the whole usage block."""

    def error(self, message: str):
        hint = ""
        if message.startswith("unrecognized arguments:"):
            flags = set(self._option_string_actions)
            for a in self._actions:  # and the subcommands' flags (argparse reports them at the top level)
                for sub in getattr(a, "choices", None) or {}:
                    if isinstance(a.choices, dict) and isinstance(a.choices[sub], argparse.ArgumentParser):
                        flags |= set(a.choices[sub]._option_string_actions)
            words = [w for w in message.split(":", 1)[1].split() if w.startswith("-")]
            hint = "".join(did_you_mean(w.split("=")[0], sorted(flags)) for w in words[:1])
        self.exit(2, f"{self.prog}: error: {message}{hint} (see '{self.prog} --help')\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="hetsim",
        description="Discrete-event simulation of neural-network inference on heterogeneous SoCs: map an ONNX "
        "model onto a platform (host CPU + accelerators + links), replay the schedule on SimPy resources, "
        "and report makespan, utilisation and energy.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"hetsim {__version__}")
    _add_common(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

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
    p.add_argument("--out", type=Path, help="write summary.json, ops.csv, schedule.json, trace.csv, "
                   "trace.json (Chrome trace, opens in Perfetto), timeline.png, breakdown.png and report.html "
                   "(the run in one self-contained page) here (SNNs: summary.json, layers.csv, samples.csv, "
                   "ops.csv, schedule.json, trace.csv, trace.json, timeline.png and report.html)")
    p.add_argument("--force", action="store_true", help="replace existing files in --out")
    p.add_argument("--json", action="store_true", help="print summary.json to stdout instead of the table")
    p.add_argument("-v", "--verbose", action="store_true", help="name every offloaded op and split layer "
                   "(default: the first 4 per device, the rest counted)")
    p.add_argument("--schedule", type=Path, help="replay this schedule.json instead of running a mapper")
    p.add_argument("--dispatch", default=None, metavar="POLICY",
                   help="scenarios (MODEL = scenarios/*.yaml, streams of requests): the serial devices' policy "
                   "between requests: static, fifo, priority, edf (default: the scenario's)")
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

    p = sub.add_parser("map", epilog=MAPPER_HELP, formatter_class=argparse.RawDescriptionHelpFormatter,
                        help="map a model onto a platform and write the schedule as JSON")
    _add_map_args(p)
    p.add_argument("-o", "--output", type=Path, required=True, help="schedule JSON to write")
    p.add_argument("--force", action="store_true", help="replace an existing output file")
    _add_common(p)

    p = sub.add_parser("validate", epilog=MAPPER_HELP, formatter_class=argparse.RawDescriptionHelpFormatter,
                        help="check a mapper's schedule and replay it against its promise",
                       description="(a) check the schedule's feasibility (support, each device's capacity, precedence "
                       "with transfers, host capacity); (b) replay it without contention and require the makespan "
                       "the mapper predicted, to --rel-tol; (c) replay with link contention and report the "
                       "difference as the contention-free model's error. Exit code 0 valid, 1 invalid.")
    _add_map_args(p)
    p.add_argument("--schedule", type=Path, help="validate this schedule.json instead of running --mapper")
    p.add_argument("--rel-tol", type=float, default=1e-9, help="relative tolerance on times (default 1e-9)")
    _add_common(p)

    p = sub.add_parser("profile", help="measure per-op host latencies with ONNX Runtime (a latency table)",
                       description="Measure every node of MODEL on this machine's CPU with ONNX Runtime, as the "
                       "CPU-CIM ILP paper does: 1 thread, sequential, no spinning, warm-up runs, then the median "
                       "over timed runs of each node's kernel time. The CSV is a latency table for a cpu device "
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

    p = sub.add_parser("sweep", help="run a design-space sweep (workloads x platforms x parameters x mappers)",
                       description="Run every point of SWEEP.yaml not yet in its results table, in parallel, "
                       "appending each finished point at once (a killed sweep resumes where it stopped). See "
                       "sweeps/cpu-cim-ilp.yaml for the format.")
    p.add_argument("sweep", type=Path, help="sweep YAML (e.g. sweeps/cpu-cim-ilp.yaml)")
    p.add_argument("-o", "--output", type=Path, help="results CSV (default: the sweep's 'output')")
    p.add_argument("--workers", type=_positive_int, default=None,
                   help="local worker processes (default: the available cores divided by --threads)")
    p.add_argument("--threads", type=_positive_int, default=None,
                   help="solver threads per point for cpsat and ilp (default: the available cores divided by "
                   "--workers, so workers x threads never exceeds the cores: one thread per point when there "
                   "are more points than cores; 1 on a Dask scheduler). Not a setting of the results: changing "
                   "it does not recompute finished points")
    p.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                   help="run the points on this Dask distributed scheduler instead of local processes (each "
                   "Dask worker thread runs one point)")
    p.add_argument("--max-points", type=int, default=None, metavar="N",
                   help="refuse a sweep of more than N points (default 100000), counted from the sweep file's "
                   "lists before any point is built")
    _add_common(p)

    p = sub.add_parser("plot", help="plot a sweep's results table (any sweep; CPU-CIM ILP Fig. 3, 4, 5 presets)",
                       description="From a results CSV of 'hetsim sweep': the metric (speedup) against the swept "
                       "axes you pick by column name (--x, --y, --hue, --col, --row), every axis not drawn "
                       "aggregated and named on the figure; for the CPU-CIM ILP sweep (workloads x hosts x "
                       "crossbars x MVM latency) also its Fig. 3 (speedup heatmaps), Fig. 4 (speedup per model) and "
                       "Fig. 5 (latency share per device); for an SNN sweep the speed-up vs spike density. PNG, SVG "
                       "and PDF, and a self-contained report.html.")
    from hetsim.cli_plot import add_arguments as _plot_arguments

    _plot_arguments(p)
    _add_common(p)

    p = sub.add_parser("reorder", help="reorder an SNN's hidden neurons for the range-sparse MVP (function-preserving)",
                       description="Order each hidden layer's neurons so that co-active ones are adjacent (SpikeDuet "
                       "Sec. III-C): co-activity on the training split, hierarchical clustering, local swaps "
                       "minimising C_L*N_L + C_P*N_P; permute the weights and neuron parameters together, verify "
                       "identical spikes and predictions on every recorded split, and write the permuted network "
                       "(OUT.yaml and OUT.npz).")
    p.add_argument("platform", type=Path, help="platform YAML with an MVP (platforms/efr32mg24.yaml)")
    p.add_argument("model", type=Path, help="SNN spec (workloads/snn/*.yaml) or NIR graph (.nir, with --spikes)")
    p.add_argument("-o", "--output", type=Path, required=True, help="spec YAML to write (its .npz goes beside it)")
    _add_spikes(p)
    p.add_argument("--residency", choices=("auto", "sram", "flash"), default="auto",
                   help="memory the MVP reads the weights from, which sets C_P (default auto: SRAM when the "
                   "layer's FP16 table fits the SRAM budget, else Flash)")
    p.add_argument("--seed", type=_nonnegative_int, default=0, help="refinement seed (default 0)")
    p.add_argument("--force", action="store_true", help="replace existing output files")
    _add_common(p)

    p = sub.add_parser("search", help="ODiMO's accuracy-aware channel-split search on DIANA (needs hetsim[search])",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       description=textwrap.fill(
                           "Train a network with ODiMO's DNAS (M. Risso et al., ISLPED 2023): per output "
                       "channel of every Conv/FC layer, the 8-bit digital or the ternary AIMC accelerator, trading "
                       "accuracy against hetsim's DIANA latency or energy model. Warm-up, one search per "
                       "--strength (early stopping), argmax discretisation, function-preserving reordering, "
                       "fine-tuning with the exact formats, and the baselines all-8bit, all-ternary, "
                       "io8-backbone-ternary and min-cost trained with the same recipe. Writes per point "
                       "LABEL/export.json and LABEL/model.onnx (replay: hetsim run PLATFORM LABEL/model.onnx "
                       "--mapper dnas-export --export LABEL/export.json), pareto.csv, front.png and search.json.", 100),
                       epilog="datasets: digits = scikit-learn's load_digits (bundled, 8x8 upsampled to 16x16, "
                       "stratified 60/20/20 train/val/test, seeded); cifar10 = CIFAR-10's python batches under "
                       "--data-root (read with numpy, never downloaded; 45k/5k/10k).\n"
                       "defaults follow the ODiMO authors' code: --temperature 5, no annealing, --smooth-max "
                       "softmax-mean, --normalise none (lambda on cycles or mW x cycles); hetsim's earlier choices: "
                       "--temperature 1 --smooth-max logsumexp --normalise all-8bit --strength 0.1,0.3,1,3.\n"
                       "CPU-only torch: pip install torch --index-url https://download.pytorch.org/whl/cpu\n"
                       "example:\n  hetsim search platforms/diana.yaml --dataset digits --objective energy "
                       "--out results/odimo")
    p.add_argument("platform", type=Path, help="platform YAML with DIANA's two accelerators (platforms/diana.yaml)")
    p.add_argument("--dataset", choices=("digits", "cifar10"), default="digits", help="default: digits")
    p.add_argument("--model", choices=("digits-resnet", "resnet20"), default=None,
                   help="network (default: digits-resnet for digits, resnet20 for cifar10)")
    p.add_argument("--data-root", default=None, metavar="DIR", help="CIFAR-10 copy (cifar10 only)")
    p.add_argument("--objective", choices=("latency", "energy"), default="energy",
                   help="cost the regulariser minimises: latency (ODiMO Eq. 3) or energy (Eq. 4); default energy")
    p.add_argument("--strength", default=None, metavar="L1,L2,...",
                   help="regularisation strengths lambda, comma-separated, in the units of --normalise (default: "
                   "energy 2.5e-7,7.5e-7,2.5e-6,7.5e-6 per mW x cycle, latency 6e-6,2e-5,6e-5,2e-4 per cycle; "
                   "0.1,0.3,1,3 with --normalise all-8bit; the small preset keeps the 2nd and 4th)")
    p.add_argument("--epochs", default=None, metavar="W,S,F",
                   help="maximum warm-up, search and fine-tuning epochs (default 30,20,10; small 5,3,2; baselines "
                   "train S+F)")
    p.add_argument("--preset", choices=("default", "small"), default="default",
                   help="small: about a minute of CPU (5,3,2 epochs, two strengths, baselines all-8bit and min-cost)")
    p.add_argument("--temperature", type=_number(float, 0, True), default=None, metavar="TAU",
                   help="softmax temperature of the alphas (default 5, the ODiMO code's)")
    p.add_argument("--anneal", action="store_true",
                   help="multiply the temperature by exp(-0.045) after every search epoch (the code's --anneal-temp)")
    p.add_argument("--smooth-max", choices=("softmax-mean", "logsumexp"), default=None,
                   help="smooth max of the two accelerators' costs (default softmax-mean, the code's)")
    p.add_argument("--normalise", choices=("none", "all-8bit"), default=None,
                   help="divide the cost by the all-8bit cost (all-8bit) or not (none, default, the code's)")
    p.add_argument("--seed", type=_nonnegative_int, default=0, help="seed of the split and of training (default 0)")
    p.add_argument("--threads", type=_number(int, 0, True), default=1, help="torch threads (default 1)")
    p.add_argument("--out", type=Path, default=Path("search"), help="output folder (default ./search)")
    p.add_argument("--force", action="store_true", help="replace an earlier search's outputs in --out")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    _add_common(p)

    from hetsim.calibrate import add_parser as _add_calibrate  # hetsim calibrate: its own module

    _add_common(_add_calibrate(sub))

    p = sub.add_parser("inspect", help="show a model's operator DAG: counts, op types, GEMM views (or an SNN's "
                       "layers and spike activity)")
    p.add_argument("model", type=Path, help="ONNX model, or an SNN spec (workloads/snn/*.yaml) or NIR graph (.nir, "
                   "with --spikes)")
    p.add_argument("--platform", type=Path, help="also show per-op latency on each device of this platform")
    _add_set(p)
    _add_input_shape(p)
    _add_fold(p)
    _add_spikes(p)
    p.add_argument("--ops", action="store_true", help="list every op (type, shapes, GEMM view, MACs)")
    _add_common(p)

    p = sub.add_parser("export-nir", help="write an SNN spec as a NIR graph (.nir) for other SNN tools",
                       description="Write the network of an SNN spec (weights, biases, per-neuron LIF parameters, "
                       "reset, readout) as a NIR graph (Neuromorphic Intermediate Representation): Input -> Linear/"
                       "Affine -> LIF -> ... -> Output, each LIF with tau = dt/(1 - beta) and r = tau/dt (docs/"
                       "models.md, 'NIR graphs'). Run it with: hetsim run PLATFORM.yaml OUT.nir --spikes "
                       "INPUT.npz (e.g. the spec's activity file) for the same spikes, predictions and latency.")
    p.add_argument("model", type=Path, help="SNN spec (workloads/snn/*.yaml)")
    p.add_argument("-o", "--output", type=Path, required=True, help="NIR file to write (.nir)")
    p.add_argument("--dt", type=_positive_float, default=None, metavar="S",
                   help="the time step the LIF time constants are expressed in, seconds (default: 1e-4, "
                   "snnTorch's export_to_nir constant)")
    p.add_argument("--force", action="store_true", help="replace an existing output file")
    _add_common(p)

    from hetsim.codegen.command import add_parser as add_codegen_parser

    p = add_codegen_parser(sub)
    _add_spikes(p)
    _add_common(p)
    return parser


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
            parts.append(f"incumbent {inc * 1e3:.3f} ms")
        if bnd is not None:
            parts.append(f"bound {bnd * 1e3:.3f} ms")
        if gap is not None:
            parts.append(f"gap {gap * 100:.2f} %")
        print("  ".join(parts), file=self.stream, flush=True)


#: mapper option -> the command-line flag that sets it
OPTION_FLAGS = {"time_limit_s": "--time-limit", "mip_rel_gap": "--gap", "threads": "--threads", "seed": "--seed",
                "solver": "--solver", "objective": "--objective", "path": "--export", "mode": "--mode"}


def _given_options(args) -> dict:
    """The mapper options the user set on the command line (flags left at their ``None`` default are not)."""
    opts = {"time_limit_s": args.time_limit, "mip_rel_gap": args.gap, "threads": args.threads, "seed": args.seed,
            "solver": args.solver, "objective": getattr(args, "objective", None),
            "path": getattr(args, "export", None), "mode": getattr(args, "mode", None)}
    return {k: v for k, v in opts.items() if v is not None}


def mapper_options(args, mapper: str | None = None) -> dict:
    """Options for :func:`hetsim.mappers.get_mapper` from the command line: the ones the user set, plus a
    progress printer for the mappers that take one.

    Raises:
        InputError: an unknown mapper (with the closest name), or a flag the mapper takes no option for.
    """
    mapper = mapper or args.mapper
    opts = _given_options(args)
    from hetsim.mappers import mapper_option_names

    takes = mapper_option_names(mapper)
    if takes is None:
        return opts
    bad = [OPTION_FLAGS[k] for k in opts if k not in takes]
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
    if args.schedule is not None and _given_options(args):
        flags = [OPTION_FLAGS[k] for k in _given_options(args)]
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


def _headless() -> None:
    """Draw figures without a display: the command line only writes them to files (the Python API leaves the
    backend to the user, e.g. a notebook's inline one)."""
    import matplotlib

    matplotlib.use("Agg")


def cmd_run(args) -> int:
    """``hetsim run``: one path for ONNX models and spiking networks (:func:`hetsim.pipeline.run`)."""
    from hetsim.api import run
    from hetsim.pipeline import is_snn_path
    from hetsim.report.outputs import OUTPUT_FILES, check_out_dir, write_outputs
    from hetsim.report.text import DEFAULT_NAMES, format_report
    from hetsim.scenario.spec import is_scenario_file

    if is_scenario_file(args.model):  # a scenario: streams of requests (hetsim/scenario/)
        from hetsim.scenario.cli import cmd_run_scenario

        return cmd_run_scenario(args)
    if is_snn_path(args.model):  # the SNN report draws with matplotlib: imported only for SNNs
        from hetsim.report.snn import SNN_OUTPUT_FILES, format_snn_report
    shapes = _input_shapes(args)
    snn = is_snn_path(args.model)
    seed = None
    if not snn and args.spikes is not None:
        raise InputError("--spikes gives the input raster of a NIR graph (.nir), not of an ONNX model")
    if snn:
        onnx_only = [o for o, v in (("--objective", args.objective), ("--export", args.export),
                                    ("--solver", args.solver), ("--gap", args.gap), ("--threads", args.threads),
                                    ("--no-fold-constants", not args.fold_constants)) if v not in (None, False)]
        if onnx_only:
            raise InputError(f"{', '.join(onnx_only)} {_apply(onnx_only)} to ONNX models, not to spiking networks")
        _check_not_swapped(args.platform, args.model)
        args.mapper = args.mapper or "spikeduet"
        seed, args.seed = args.seed, None  # an SNN run's --seed seeds the reordering, not the mapper
    else:
        snn_only = [o for o, v in (("--mode", args.mode), ("--reorder", args.reorder), ("--sample", args.sample))
                    if v not in (None, False)]
        if snn_only:
            raise InputError(f"{', '.join(snn_only)} {_apply(snn_only)} to spiking networks (an SNN spec .yaml or a "
                             "NIR graph .nir), not to ONNX models")
        args.mapper = args.mapper or DEFAULT_MAPPER
    _no_options_with_schedule(args)
    options = mapper_options(args) if args.schedule is None else {}
    if snn and args.schedule is None:
        options.setdefault("time_limit_s", 30.0)
    if args.out is not None:
        check_out_dir(args.out, args.force, SNN_OUTPUT_FILES if snn else OUTPUT_FILES)  # fail before the work
        _headless()
    model = args.model
    if shapes is not None:
        from hetsim.workload import load_onnx

        model = load_onnx(args.model, input_shapes=shapes)
    extra = {"reorder": args.reorder, "sample": args.sample, "seed": seed or 0, "spikes": args.spikes} if snn else {}
    r = run(_platform(args), model, mapper=args.mapper, contention=args.contention, schedule=args.schedule,
            fold_constants=args.fold_constants, **extra, **options)
    names = None if args.verbose else DEFAULT_NAMES
    text = (lambda: format_snn_report(r)) if r.snn is not None else (lambda: format_report(r, max_names=names))
    return _print_and_write(args, r.summary, text, lambda: write_outputs(r, args.out, force=args.force))


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


def cmd_reorder(args) -> int:
    from hetsim.errors import OutputExistsError
    from hetsim.platform import load_platform
    from hetsim.snn.network import load_snn, save_snn
    from hetsim.snn.reorder import format_reorder, reorder_for_platform

    out = args.output
    if out.suffix.lower() not in (".yaml", ".yml"):
        raise InputError(f"-o {str(out)!r}: give a .yaml path (the .npz is written beside it)")
    from hetsim.report.outputs import check_parent_dirs, check_writable

    check_parent_dirs(out)
    clash = [str(f) for f in (out, out.with_suffix(".npz")) if f.exists()]
    if clash and not args.force:
        raise OutputExistsError(f"{' and '.join(clash)} already exist; pass --force to replace")
    check_writable(out.parent if str(out.parent) else Path("."), out)
    snn = load_snn(args.model, spikes=args.spikes)
    r = reorder_for_platform(snn, load_platform(args.platform), residency=args.residency, seed=args.seed)
    print(format_reorder(r))
    new = r.snn.replace(name=f"{snn.name}_reordered")
    written = save_snn(new, out, force=args.force,
                       description=f"{snn.name} with hidden neurons reordered by hetsim reorder (seed {args.seed})")
    print(f"\n  wrote {', '.join(str(p) for p in written)}")
    return 0


def cmd_export_nir(args) -> int:
    from hetsim.report.outputs import check_output_file
    from hetsim.snn.network import load_snn
    from hetsim.snn.nir import DEFAULT_DT_S, save_nir

    if args.output.suffix.lower() != ".nir":
        raise InputError(f"-o {str(args.output)!r}: give a .nir path")
    if args.model.suffix.lower() not in (".yaml", ".yml"):
        raise InputError(f"{str(args.model)!r}: export-nir reads an SNN spec (.yaml), e.g. "
                         "workloads/snn/braille384.yaml")
    check_output_file(args.output, args.force)  # fail before the work, not after
    snn = load_snn(args.model)
    dt = DEFAULT_DT_S if args.dt is None else args.dt
    written = save_nir(snn, args.output, force=args.force, dt=dt)
    print(f"{snn.name}: {snn.n_layers} layers {snn.layer_sizes}, reset {snn.reset}, readout {snn.readout}, "
          f"dt {dt:g} s -> {written}")
    return 0


def _float_list(text: str, flag: str) -> list[float]:
    try:
        vals = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise InputError(f"{flag} {text!r}: give comma-separated numbers") from None
    if not vals or any(not math.isfinite(v) or v < 0 for v in vals):
        raise InputError(f"{flag} {text!r}: give finite numbers >= 0")
    return vals


def cmd_search(args) -> int:
    from hetsim.search import search
    from hetsim.search.recipe import PRESETS, Recipe  # torch-free: the settings fail before torch is needed

    strengths = None if args.strength is None else _float_list(args.strength, "--strength")
    recipe = Recipe(**PRESETS[args.preset])
    if args.epochs is not None:
        ep = _float_list(args.epochs, "--epochs")
        if len(ep) != 3 or any(e != int(e) for e in ep):
            raise InputError(f"--epochs {args.epochs!r}: give three integers W,S,F")
        recipe.warmup_epochs, recipe.search_epochs, recipe.finetune_epochs = (int(e) for e in ep)
    if args.temperature is not None:
        recipe.tau = args.temperature
    recipe.anneal = args.anneal
    if args.smooth_max is not None:
        recipe.smooth_max = args.smooth_max
    if args.normalise is not None:
        recipe.normalise = args.normalise
    r = search(args.platform, dataset=args.dataset, model=args.model, objective=args.objective, strengths=strengths,
               out=args.out, data_root=args.data_root, seed=args.seed, recipe=recipe, quiet=args.quiet,
               threads=args.threads, force=args.force, preset=args.preset)
    key = "model_latency_s" if args.objective == "latency" else "model_energy_j"
    unit, scale = ("ms", 1e3) if args.objective == "latency" else ("uJ", 1e6)
    print(f"{r['dataset']}; {r['model']}; float test accuracy {r['float_test_accuracy'] * 100:.2f} %; "
          f"{r['seconds']:.0f} s")
    print(f"{'point':<22} {'test acc':>8} {'model ' + unit:>10} {'replay lat ms':>13} {'replay uJ':>10} "
          f"{'AIMC ch':>7}  front")
    for p in r["points"]:
        print(f"{p['name']:<22} {p['test_accuracy'] * 100:>7.2f}% {p[key] * scale:>10.4f} "
              f"{p['replay_latency_s'] * 1e3:>13.5f} {p['replay_energy_j'] * 1e6:>10.4f} {p['aimc_share'] * 100:>6.1f}%"
              f"  {'*' if p['pareto'] else ''}")
    print(f"\n  wrote {args.out}/pareto.csv, front.png, search.json and per point LABEL/export.json, LABEL/model.onnx")
    return 0


def _refuse_snn(model: Path, command: str) -> None:
    if model.suffix.lower() in SNN_MODEL_SUFFIXES:
        raise InputError(f"{command} works on ONNX models; a spiking network ({model.suffix}) is planned, evaluated "
                         f"and replayed by: hetsim run PLATFORM.yaml NET{model.suffix}"
                         f"{' --spikes INPUT.npz' if model.suffix.lower() == '.nir' else ''}")


def cmd_map(args) -> int:
    from hetsim.costs import CostModel
    from hetsim.mappers import get_mapper
    from hetsim.report.export import atomic_write_text, make_dirs
    from hetsim.report.outputs import check_output_file
    from hetsim.workload import load_onnx

    _refuse_snn(args.model, "map")
    check_output_file(args.output, args.force)  # fail before the work, not after
    mapper = get_mapper(args.mapper, **mapper_options(args))
    plat = _platform(args)
    costs = CostModel(load_onnx(args.model, input_shapes=_input_shapes(args)), plat, fold_constants=args.fold_constants)
    sched = mapper.map(costs)
    make_dirs(args.output.parent, args.output)
    atomic_write_text(args.output, sched.to_json() + "\n")
    off = sum(1 for d in sched.assignment.values() if d != costs.host)
    print(f"{args.mapper}: {off} of {len(sched.assignment)} ops offloaded, predicted makespan "
          f"{sched.makespan_s * 1e3:.3f} ms -> {args.output}")
    return 0


def cmd_validate(args) -> int:
    from hetsim.costs import CostModel
    from hetsim.mappers import get_mapper
    from hetsim.schedule import Schedule
    from hetsim.validate import validate_schedule
    from hetsim.workload import load_onnx

    _refuse_snn(args.model, "validate")
    _no_options_with_schedule(args)
    plat = _platform(args)
    costs = CostModel(load_onnx(args.model, input_shapes=_input_shapes(args)), plat, fold_constants=args.fold_constants)
    if args.schedule:
        sched = Schedule.load(args.schedule)
        sched.check_made_for(costs.workload.name)
    else:
        sched = get_mapper(args.mapper, **mapper_options(args)).map(costs)
    rep = validate_schedule(costs, sched, rel_tol=args.rel_tol)
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
    from hetsim.validate import capacity_phrase

    print(f"  (a) feasible: operator support, {capacity_phrase(costs.platform)}, precedence with transfers "
          "(Eq. 8), host capacity (Eq. 11-12)")
    pred, rep_ms = rep.predicted_makespan_s, rep.replay_makespan_s
    if rep.divergence:
        print(f"  (b) INVALID: {rep.divergence}")
        return 1
    print(f"  (b) replay without contention: {rep_ms * 1e3:.6f} ms = predicted {pred * 1e3:.6f} ms "
          f"(rel. tol {args.rel_tol:g})")
    if rep.contention_makespan_s is not None:
        print(f"  (c) replay with link contention: {rep.contention_makespan_s * 1e3:.6f} ms; model error "
              f"{rep.model_error * 100:+.3f} %")
    print("  valid")
    return 0


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def cmd_profile(args) -> int:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from hetsim.profile import meta_path, profile_model
    from hetsim.report.export import make_dirs
    from hetsim.report.outputs import check_output_file

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


def cmd_sweep(args) -> int:
    from hetsim.dse.bounds import max_points

    with max_points(args.max_points):  # the grid is counted in load_sweep, expand_points and run_sweep
        return _sweep(args)


def _sweep(args) -> int:
    from hetsim.dse import SweepInterrupted, expand_points, format_progress, load_sweep, run_sweep

    spec = load_sweep(args.sweep)
    n = len(expand_points(spec))
    if args.scheduler:
        where = f"{args.scheduler} ({args.threads or 1} solver thread(s) per point)"
    else:
        from hetsim.dse.sweep import plan_parallelism

        w, t = plan_parallelism(n, args.workers, args.threads, spec.mapper_options.get("threads"))
        where = f"{w} local worker{'s' if w != 1 else ''} x {t} solver thread{'s' if t != 1 else ''}"
    print(f"sweep {spec.name}: {n} points on {where}", flush=True)
    t0 = time.perf_counter()
    tty = sys.stderr.isatty()
    shown = [0.0]

    def tick(done: int, total: int, row: dict) -> None:  # on stderr: in place on a terminal, else every 10 s
        now = time.perf_counter()
        if tty or done in (1, total) or now - shown[0] >= 10:
            shown[0] = now
            line = (f"  {format_progress(done, total, now - t0)} "
                    f"(last: {row['workload']} {row.get('platform', '')} {row['mapper']})")
            print(f"\r{line}\x1b[K" if tty else line, end="" if tty and done < total else "\n", file=sys.stderr,
                  flush=True)

    def say(msg: str) -> None:
        print(f"  {msg}", flush=True)

    try:
        out, ran, skipped = run_sweep(spec, output=args.output, workers=args.workers, scheduler=args.scheduler,
                                      threads=args.threads, progress=tick, notify=say)
    except SweepInterrupted as stop:
        kept = f"{stop.finished} point{'' if stop.finished == 1 else 's'} finished this run"
        print(f"{chr(10) if tty else ''}hetsim: sweep stopped by {stop}: {kept}, kept in {stop.output}; run the "
              "same command to resume", file=sys.stderr)
        return 128 + stop.signum
    import pandas as pd

    df = pd.read_csv(out)
    errors = df["error"].notna().sum() if "error" in df else 0
    print(f"  {ran} points run, {skipped} already in {out}, {time.perf_counter() - t0:.1f} s")
    if "status" in df and ran:
        counts = df["status"].value_counts(dropna=True).to_dict()
        if counts:
            print("  status: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    if errors:
        first = df[df["error"].notna()].iloc[0]
        print(f"  {errors} points failed, e.g. {first['workload']}: {first['error']}")
        return 1
    return 0


def cmd_plot(args) -> int:
    from hetsim.cli_plot import cmd_plot as _cmd_plot

    return _cmd_plot(args)


def cmd_inspect(args) -> int:
    from hetsim.workload import load_onnx
    from hetsim.workload.op import foldable_ops

    if args.overrides and args.platform is None:
        raise InputError("--set changes the platform: give --platform PLATFORM.yaml too")
    plat = _platform(args) if args.platform else None  # a bad platform or --set fails before any output
    if args.model.suffix.lower() in SNN_MODEL_SUFFIXES:
        from hetsim.report.snn import format_snn_costs, format_snn_inspect
        from hetsim.snn.network import load_snn

        if args.ops:
            raise InputError("--ops lists ONNX operators; for a spiking network give --platform for the per-layer "
                             "costs on each engine")
        _input_shapes(args)  # refused for an SNN
        snn = load_snn(args.model, spikes=args.spikes)
        print(format_snn_inspect(snn))
        if plat is not None:
            print(format_snn_costs(snn, plat))
        return 0

    if args.spikes is not None:
        raise InputError("--spikes gives the input raster of a NIR graph (.nir), not of an ONNX model")
    wl = load_onnx(args.model, input_shapes=_input_shapes(args))
    s = wl.summary()
    ins = ", ".join(f"{i['name']} {i.get('dtype', '')}{list(i.get('shape', []))}" for i in wl.meta.get("inputs", []))
    print(f"{s['name']}: {s['operators']} operators, {s['edges']} edges, {s['macs'] / 1e9:,.3f} GMAC, "
          f"{s['weights']:,} weight elements")
    if ins:
        print(f"  inputs: {ins}")
    print("  op types: " + ", ".join(f"{k} {v}" for k, v in s["op_types"].items()))
    costs = None
    if plat is not None:
        from hetsim.costs import CostModel

        costs = CostModel(wl, plat, fold_constants=args.fold_constants)
    folded = foldable_ops(wl) if args.fold_constants else frozenset()
    if folded:
        print(f"  folded: {len(folded)} constant ops (ONNX Runtime folds them at session creation; "
              "--no-fold-constants charges them)")
    if args.ops or costs is not None:
        devs = list(costs.platform.devices) if costs else []
        hdr = f"  {'op':<40} {'type':<16} {'bits':>4} {'M_v':>6} {'N_v':>6} {'N_mvm':>7} {'grp':>4} {'MACs':>12}"
        hdr += "".join(f" {d + ' (us)':>12}" for d in devs)
        print(hdr)
        for v in wl.topological_order():
            op = wl.op(v)
            g = op.gemm
            gv = (g.m_v, g.n_v, g.n_mvm, g.groups) if g else ("", "", "", "")
            shown = v if len(v) <= 40 else "..." + v[-37:]
            line = (f"  {shown:<40} {op.op_type:<16} {op.bits:>4} {gv[0]:>6} {gv[1]:>6} {gv[2]:>7} {gv[3]:>4} "
                    f"{op.macs:>12,}")
            if costs:
                for d in devs:
                    t = costs.latency[v].get(d)
                    line += f" {t * 1e6:>12.3f}" if t is not None else f" {'-':>12}"
            print(line + ("  folded" if v in folded else ""))
    return 0


def cmd_codegen(args) -> int:
    from hetsim.codegen.command import run

    return run(args)


COMMANDS = {"run": cmd_run, "reorder": cmd_reorder, "export-nir": cmd_export_nir, "map": cmd_map,
            "validate": cmd_validate, "profile": cmd_profile, "sweep": cmd_sweep, "plot": cmd_plot,
            "inspect": cmd_inspect, "search": cmd_search, "codegen": cmd_codegen,
            "calibrate": lambda args: __import__("hetsim.calibrate", fromlist=["cmd_calibrate"]).cmd_calibrate(args)}


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        from hetsim.plugins import load_plugins

        load_plugins()
        if args.command in ("run", "map", "validate"):
            _check_mapper_name(args)
            if args.command != "run" and args.mapper is None:
                args.mapper = DEFAULT_MAPPER
        from hetsim._warnings import one_line_warnings

        with one_line_warnings():
            return COMMANDS[args.command](args)
    except InputError as err:
        if args.debug:
            traceback.print_exc()
        print(f"hetsim: error: {err}", file=sys.stderr)
        return 2
    except HetsimError as err:
        if args.debug:
            traceback.print_exc()
        print(f"hetsim: error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("hetsim: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as err:  # a bug: one line unless --debug
        if args.debug:
            raise
        print(f"hetsim: internal error: {type(err).__name__}: {err} (rerun with --debug for the traceback)",
              file=sys.stderr)
        return 1
