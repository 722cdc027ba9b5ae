"""The search's settings (:class:`Recipe`), importable without torch (the CLI checks them before the search
imports torch, so that a bad ``--epochs`` and a missing torch are each one line).

Where ODiMO's authors' code (eml-eda/odimo, ``image_classification/*/search*.py`` and ``models/quant_module*.py``)
makes a choice that the paper's text does not state, the default follows the code and hetsim's earlier choice is
an option (``docs/reproduction.md``, "ODiMO's search"):

* softmax temperature ``tau = 5`` (the search scripts' ``--temperature`` default), annealing off; ``anneal =
  True`` multiplies it by ``exp(-0.045)`` after every search epoch, as the code's ``--anneal-temp``. All three of
  the authors' shipped run scripts (CIFAR-10 ``run_ic_fulltest.sh``, Tiny-ImageNet ``run_ic.sh``, VWW
  ``run_vww.sh``) pass ``--temperature 1 --anneal-temp``: ``tau = 1, anneal = True`` is what they ran; hetsim's
  earlier setting was ``tau = 1``, no annealing;
* smooth max ``softmax-mean``: the code's softmax-weighted mean of the two accelerators' costs, ``sum_i
  softmax(L / t)_i L_i`` with ``L`` in cycles and ``t`` = 1 cycle (for energy, the code's softmin-weighted mean
  gives the overlap ``m`` and the span is ``L_d + L_a - m``); hetsim's earlier ``logsumexp`` (``t * logsumexp(L /
  t)`` with ``t`` 2 % of the layer's all-8bit latency) is ``smooth_max = "logsumexp"``;
* cost normalisation ``none``: lambda multiplies the regulariser in the code's units (latency: cycles at the
  accelerators' clock; energy: mW x cycles, the code's ``p_hyb * t`` terms); hetsim's earlier normalisation by
  the all-8bit cost (dimensionless) is ``normalise = "all-8bit"``. The default strengths depend on it
  (:func:`default_strengths`).

Unchanged from hetsim's earlier recipe (stated, not the code's): Adam for weights (the code: SGD) and alphas
(the code: Adam, lr 0.01; here 0.05), short fixed epoch budgets, batch 64.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

ANNEAL_FACTOR = math.exp(-0.045)
"""Temperature factor per search epoch with ``anneal`` (the ODiMO code's FBNetV2-like schedule)."""
SMOOTH_MAX = ("softmax-mean", "logsumexp")
NORMALISE = ("none", "all-8bit")
PRESETS = {
    "default": {},
    # about a minute on one core: short budgets, two strengths, two baselines
    "small": {"warmup_epochs": 5, "search_epochs": 3, "finetune_epochs": 2, "patience": 2},
}
PRESET_STRENGTH_COUNT = {"default": 4, "small": 2}
PRESET_BASELINES = {"default": None, "small": ("all-8bit", "min-cost")}


@dataclass
class Recipe:
    """Training hyper-parameters (epochs are maxima: the search stops early, the fine-tuning keeps the best
    validation accuracy); ``tau``, ``anneal``, ``smooth_max``, ``normalise`` as the module docstring says."""

    warmup_epochs: int = 30
    search_epochs: int = 20
    finetune_epochs: int = 10
    patience: int = 4
    batch_size: int = 64
    lr: float = 3e-3
    alpha_lr: float = 5e-2
    alpha_optimizer: str = "adam"  # or "sgd" (momentum 0.9), whose steps scale with lambda (docs/reproduction.md)
    tau: float = 5.0
    anneal: bool = False
    smooth_max: str = "softmax-mean"
    normalise: str = "none"
    max_batches: int | None = None  # per epoch (tests)

    def check(self) -> None:
        """Raises ``InputError`` (one line) for a setting outside its range."""
        from hetsim.errors import InputError

        for name in ("warmup_epochs", "search_epochs", "finetune_epochs", "patience", "batch_size"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < (1 if name == "batch_size" else 0):
                raise InputError(f"search recipe: {name} must be an integer >= {1 if name == 'batch_size' else 0}, "
                                 f"got {v!r}")
        for name in ("lr", "alpha_lr", "tau"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise InputError(f"search recipe: {name} must be a finite number > 0, got {v!r}")
        if self.smooth_max not in SMOOTH_MAX:
            raise InputError(f"unknown smooth max {self.smooth_max!r}; allowed: {', '.join(SMOOTH_MAX)}")
        if self.normalise not in NORMALISE:
            raise InputError(f"unknown cost normalisation {self.normalise!r}; allowed: {', '.join(NORMALISE)}")
        if self.alpha_optimizer not in ("adam", "sgd"):
            raise InputError(f"unknown alpha optimizer {self.alpha_optimizer!r}; allowed: adam, sgd")


#: default strengths with the all-8bit normalisation (dimensionless)
NORMALISED_STRENGTHS = (0.1, 0.3, 1.0, 3.0)
#: default strengths in the code's units (``normalise = "none"``): about 0.1-3 times the inverse of the digits
#: network's all-8bit cost (15,829 cycles; 3.95e5 mW x cycles), so that the two defaults weigh the cost alike there
RAW_STRENGTHS = {"latency": (6e-6, 2e-5, 6e-5, 2e-4), "energy": (2.5e-7, 7.5e-7, 2.5e-6, 7.5e-6)}


def default_strengths(normalise: str = "none", objective: str = "energy", preset: str = "default") -> tuple:
    """The ``--strength`` values used when none are given."""
    vals = NORMALISED_STRENGTHS if normalise == "all-8bit" else RAW_STRENGTHS[objective]
    if PRESET_STRENGTH_COUNT.get(preset, 4) == 2:
        vals = (vals[1], vals[3])
    return tuple(vals)
