"""``hetsim search``: ODiMO's accuracy-aware channel-split search on DIANA (needs hetsim[search])."""

from __future__ import annotations

import argparse
import math
import textwrap
from pathlib import Path

from hetsim.cli._common import _add_common, _nonnegative_int, _number
from hetsim.errors import InputError


def add_parser(sub) -> None:
    """The ``search`` subcommand's arguments."""
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
                       "defaults follow the ODiMO authors' code: --temperature 5, no annealing (their command "
                       "line's defaults; their three shipped run scripts pass --temperature 1 --anneal-temp, here "
                       "--temperature 1 --anneal), --smooth-max "
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
                   help="softmax temperature of the alphas (default 5, the ODiMO code's command-line default; "
                   "its run scripts use 1 with --anneal)")
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
