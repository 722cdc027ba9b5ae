"""``hetsim search``: ODiMO's accuracy-aware channel-split search (M. Risso et al., ISLPED 2023), trained with torch,
costed with hetsim's own DIANA models, exported and replayed by hetsim.

Install: ``pip install 'hetsim[search]'`` (torch, scikit-learn); for torch's CPU-only wheels (about 200 MB
instead of several GB of CUDA libraries) install torch first from PyTorch's CPU index: ``pip install torch
--index-url https://download.pytorch.org/whl/cpu``, then ``pip install 'hetsim[search]'``. torch is imported only
when a search runs; CIFAR-10 is read from its own python-format batches with numpy (no torchvision).

Settings that ODiMO's text leaves open follow the authors' code by default (softmax temperature 5, optional
annealing, the softmax-weighted mean as smooth max, lambda on the un-normalised cost): :mod:`hetsim.search.recipe`.

Method (ODiMO Sec. III; ``hetsim/search/nets.py``, ``cost.py``, ``run.py``):

1. **Warm-up**: the network trains in floating point with BatchNorm (ODiMO starts from a pre-trained network);
   BatchNorm is then folded into the weights (DIANA has none).
2. **Search**, once per strength ``lambda``: every Conv/FC layer computes with ``sum_i softmax(alpha_c / tau)_i *
   Q_i(W_c)`` per output channel ``c`` (Eq. 1), ``Q_0`` 8-bit and ``Q_1`` ternary fake quantisation with trainable
   scales (Eq. 5), activations on 7 bits; the loss is ``CE + lambda * L_R`` (Eq. 2) with ``L_R`` the sum over
   layers of the smooth max of the two accelerators' latencies (Eq. 3) or of their energy with active and idle
   power (Eq. 4), from hetsim's DIANA models on the relaxed channel counts (``hetsim/search/cost.py``).
   Weights and alphas train together (Adam); the search stops early when the validation loss has not improved
   for ``patience`` epochs.
3. **Discretisation**: each channel on the accelerator of its largest alpha; **reordering** (Fig. 3) of the
   producer -> consumer chains so that each accelerator's channels are contiguous; layers whose outputs join a
   residual sum keep their channel order (the export lists their channels as they are; ``dnas-export`` makes each
   device's part one block, which changes no cost).
4. **Fine-tuning** with the exact formats (8-bit activations, the AIMC channels' inputs and outputs on 7 bits),
   task loss only, keeping the best validation accuracy.
5. **Baselines** all-8bit, all-ternary, io8-backbone-ternary and min-cost (hetsim's mappers on the same network)
   fine-tuned with the same recipe from the same warm-up.

Depthwise/grouped layers stay digital (DIANA). Outputs in ``--out DIR``: per point ``<label>/export.json``
(hetsim's channel-split JSON) and ``<label>/model.onnx`` (the trained network with its exact-format weights as
constants, activations as Clip); ``pareto.csv``; ``front.png`` (ODiMO Fig. 4 analogue); ``search.json`` (settings,
split, timings, every point); ``network/model.onnx`` (the folded network the cost model reads). Every export
replays with ``hetsim run PLATFORM <label>/model.onnx --mapper dnas-export --export <label>/export.json``.
"""

from __future__ import annotations

from pathlib import Path

from hetsim.errors import InputError

DEFAULT_STRENGTHS = (0.1, 0.3, 1.0, 3.0)
"""The strengths of ``normalise = "all-8bit"`` (hetsim's earlier default); the defaults of each setting are
:func:`hetsim.search.recipe.default_strengths`."""
OBJECTIVES = ("latency", "energy")
DEFAULT_MODELS = {"digits": "digits-resnet", "cifar10": "resnet20"}
OUTPUTS = ("pareto.csv", "search.json", "front.png", "network")
"""What a search writes in ``out`` besides its per-point folders (an earlier search is not replaced without
``force``)."""


def _need_torch():
    try:
        import sklearn  # noqa: F401
        import torch
    except ImportError as err:
        raise InputError(f"hetsim search needs torch and scikit-learn ({err.name} is missing): "
                         "pip install 'hetsim[search]'") from None
    return torch


def search(platform, dataset: str = "digits", model: str | None = None, objective: str = "energy",
           strengths=None, out: str | Path = "search", data_root: str | None = None, seed: int = 0,
           recipe=None, baselines=None, quiet: bool = False, threads: int = 1, limit: int | None = None,
           datasets=None, force: bool = False, preset: str = "default") -> dict:
    """Run ODiMO's search (module docstring) and write its outputs to ``out``.

    Args:
        platform: a :class:`~hetsim.platform.Platform` or a YAML path with DIANA's two accelerators.
        dataset: ``digits`` (scikit-learn, bundled) or ``cifar10`` (``data_root``: CIFAR-10's python batches).
        model: a name of :data:`hetsim.search.nets.NETS` (default: per dataset, :data:`DEFAULT_MODELS`).
        objective: ``latency`` (Eq. 3) or ``energy`` (Eq. 4).
        strengths: the ``lambda`` values, one search each (default :func:`~hetsim.search.recipe.default_strengths`
            of the recipe's normalisation, the objective and the preset).
        recipe: a :class:`hetsim.search.recipe.Recipe` (epochs, learning rates, temperature, smooth max,
            normalisation; default: the preset's); ``baselines``: names (default all four; the small preset two).
        preset: ``default`` or ``small`` (about a minute: shorter epochs, two strengths, two baselines).
        threads: torch intra-op threads. ``limit``: keep only this many images per split (tests);
        ``datasets``: ``(train, test)`` torch datasets for ``cifar10`` (tests pass FakeData).
        force: replace the outputs of an earlier search in ``out``.

    Returns:
        the content of ``search.json``: settings, dataset split, seconds, and per point (label, kind, strength,
        validation and test accuracy, model latency (s) and energy (J), replayed latency and energy, AIMC share,
        Pareto flag, export paths).

    Raises:
        InputError: torch or scikit-learn missing, unknown dataset/model/objective, a strength that is not a
            finite number >= 0, two strengths sharing a label (``lambda_{s:g}``), ``data_root`` with a dataset
            other than cifar10, ``out`` holds an earlier search and ``force`` is false, CIFAR-10 not found.
        PlatformError, MappingError: the platform is unreadable or has no DIANA digital + AIMC pair.
    """
    import math

    from hetsim.platform import Platform, load_platform
    from hetsim.search.recipe import PRESET_BASELINES, PRESETS, Recipe, default_strengths

    if objective not in OBJECTIVES:
        raise InputError(f"unknown objective {objective!r}; allowed: {', '.join(OBJECTIVES)}")
    if preset not in PRESETS:
        raise InputError(f"unknown preset {preset!r}; allowed: {', '.join(PRESETS)}")
    recipe = recipe if recipe is not None else Recipe(**PRESETS[preset])
    recipe.check()
    if strengths is None:
        strengths = default_strengths(recipe.normalise, objective, preset)
    if baselines is None:
        baselines = PRESET_BASELINES[preset]
    if dataset not in DEFAULT_MODELS:
        raise InputError(f"unknown dataset {dataset!r}; allowed: {', '.join(DEFAULT_MODELS)}")
    strengths = [float(s) for s in strengths]
    if not strengths or any(not math.isfinite(s) or s < 0 for s in strengths):
        raise InputError(f"strengths must be finite numbers >= 0, got {strengths}")
    labels = [f"lambda_{s:g}" for s in strengths]  # each point's folder (run_search's label)
    dup = sorted({lab for lab in labels if labels.count(lab) > 1})
    if dup:
        raise InputError(f"strengths {strengths}: each needs its own output folder, but {', '.join(dup)} "
                         "would be written more than once; give distinct values")
    if data_root is not None and dataset != "cifar10":
        raise InputError(f"--data-root {str(data_root)!r} is for --dataset cifar10; {dataset} is bundled "
                         "(drop --data-root)")
    out = Path(out)
    clash = [n for n in OUTPUTS if (out / n).exists()]
    if clash and not force:
        raise InputError(f"--out {str(out)!r} already holds a search ({', '.join(clash)}); pass --force to replace it")
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {str(out)!r} is a file, not a folder")
    plat = platform if isinstance(platform, Platform) else load_platform(platform)
    # fail before training when the platform has no pair of channel-splitting accelerators
    split = [n for n, d in plat.devices.items() if getattr(d, "splits_channels", False)]
    if len(split) != 2:
        raise InputError(f"hetsim search: platform {plat.name!r} has {len(split)} channel-splitting accelerators; "
                         "it needs DIANA's two (e.g. platforms/diana.yaml)")
    torch = _need_torch()
    from hetsim.search import data as data_mod
    from hetsim.search.nets import NETS, build
    from hetsim.search.run import BASELINES, Recipe, run_search

    model = model or DEFAULT_MODELS[dataset]
    if model not in NETS:
        raise InputError(f"unknown model {model!r}; allowed: {', '.join(NETS)}")
    torch.set_num_threads(max(1, int(threads)))
    # the same numbers on every run of one machine and torch build (docs/reproduction.md says what varies across)
    torch.use_deterministic_algorithms(True, warn_only=True)
    splits = (data_mod.digits(seed, limit) if dataset == "digits"
              else data_mod.cifar10(data_root, seed, limit, datasets))
    torch.manual_seed(seed)  # the initial weights
    net = build(model, in_ch=splits.input_shape[1], num_classes=splits.num_classes)
    return run_search(plat, net, splits, objective, strengths, out, recipe, seed,
                      tuple(BASELINES if baselines is None else baselines), quiet, model,
                      environment=environment(torch, threads))


def environment(torch, threads: int) -> dict:
    """What a search's numbers depend on besides its inputs and seed (recorded in ``search.json``): torch's
    version and CPU kernels (float sums in another order round differently, and training amplifies it), the
    thread count, numpy's and Python's versions, the CPU."""
    import platform as pf

    import numpy as np

    from hetsim.profile import cpu_model

    try:
        isa = torch.backends.cpu.get_cpu_capability()
    except Exception:  # older torch
        isa = "unknown"
    return {"torch": torch.__version__, "torch_cpu_capability": isa, "torch_threads": int(threads),
            "numpy": np.__version__, "python": pf.python_version(), "cpu_model": cpu_model(), "machine": pf.machine()}
