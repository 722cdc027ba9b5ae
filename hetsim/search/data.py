"""Datasets of ``hetsim search``: scikit-learn's bundled handwritten digits (default, offline) and CIFAR-10 from a
copy the user has (torchvision, ``download=False``).

Splits (fixed seed): digits: 1,797 8x8 images (upsampled to 16x16), stratified 60 % train / 20 % validation / 20 % test
(``sklearn.model_selection.train_test_split``, ``random_state = seed``); CIFAR-10: the 50,000 training images split
90 % train / 10 % validation (seeded permutation), the 10,000 test images as test. The test split is used only for
the final numbers. Pixels are scaled to ``[0, 1]``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from hetsim.errors import InputError

DATASETS = ("digits", "cifar10")


@dataclass
class Splits:
    """Tensors ``x`` ``[N, C, H, W]`` float32 in ``[0, 1]`` and ``y`` ``[N]`` int64 for train, val and test."""

    name: str
    train: tuple[torch.Tensor, torch.Tensor]
    val: tuple[torch.Tensor, torch.Tensor]
    test: tuple[torch.Tensor, torch.Tensor]
    num_classes: int

    @property
    def input_shape(self) -> tuple[int, ...]:
        """``(1, C, H, W)``: one image."""
        return (1, *self.train[0].shape[1:])

    def describe(self) -> str:
        return (f"{self.name}: {len(self.train[1])} train / {len(self.val[1])} validation / {len(self.test[1])} test "
                f"images of {'x'.join(map(str, self.input_shape[1:]))}")


def _t(x: np.ndarray, y: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.as_tensor(x, dtype=torch.float32), torch.as_tensor(y, dtype=torch.long)


DIGITS_SIZE = 16
"""The digits are upsampled from 8x8 to this size (bilinear): at 8x8 the AIMC's weight loading dominates every
layer of a small CNN and all-ternary costs more than all-8bit on DIANA's models; at 16x16 the trade-off has the
shape ODiMO's benchmarks have (all-ternary about 34 % cheaper in energy)."""


def digits(seed: int = 0, limit: int | None = None, size: int = DIGITS_SIZE) -> Splits:
    """scikit-learn's ``load_digits`` (1,797 real 8x8 images, 10 classes, bundled: no download), upsampled to
    ``size`` x ``size`` (:data:`DIGITS_SIZE`), split as the module docstring says; ``limit`` keeps the first
    ``limit`` images of each split (tests)."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    d = load_digits()
    x = (d.images / 16.0).astype(np.float32)[:, None]
    if size != 8:
        x = torch.nn.functional.interpolate(torch.as_tensor(x), size=(size, size), mode="bilinear",
                                            align_corners=False).clamp(0, 1).numpy()
    y = d.target.astype(np.int64)
    x_tr, x_rest, y_tr, y_rest = train_test_split(x, y, test_size=0.4, random_state=seed, stratify=y)
    x_va, x_te, y_va, y_te = train_test_split(x_rest, y_rest, test_size=0.5, random_state=seed, stratify=y_rest)
    parts = [(x_tr, y_tr), (x_va, y_va), (x_te, y_te)]
    if limit is not None:
        parts = [(a[:limit], b[:limit]) for a, b in parts]
    return Splits("digits", *(_t(a, b) for a, b in parts), num_classes=10)


def _cifar_module():
    try:
        import torchvision
    except Exception as err:  # ImportError, or a torchvision built for another torch
        raise InputError(
            f"--dataset cifar10 needs torchvision, which does not import here ({type(err).__name__}: "
            f"{str(err).splitlines()[0] if str(err) else ''}); install the torchvision matching your torch, or use "
            "--dataset digits") from None
    return torchvision


def _to_arrays(ds, n: int | None) -> tuple[np.ndarray, np.ndarray]:
    n = len(ds) if n is None else min(n, len(ds))
    xs, ys = [], []
    for i in range(n):
        img, label = ds[i]
        xs.append(np.asarray(img, dtype=np.float32))
        ys.append(int(label))
    x = np.stack(xs)
    if x.ndim == 4 and x.shape[-1] in (1, 3):  # HWC (PIL) -> CHW
        x = x.transpose(0, 3, 1, 2)
    if x.max() > 1.0:
        x = x / 255.0
    return x.astype(np.float32), np.asarray(ys, dtype=np.int64)


def cifar10(root: str | None, seed: int = 0, limit: int | None = None, datasets=None) -> Splits:
    """CIFAR-10 from ``root`` (torchvision's ``CIFAR10(root, download=False)`` layout), split as the module
    docstring says. ``datasets``: ``(train, test)`` torch datasets to use instead (tests pass ``FakeData``).

    Raises:
        InputError: no ``root``, torchvision missing, or no CIFAR-10 copy under ``root``.
    """
    if datasets is None:
        if root is None:
            raise InputError("--dataset cifar10 needs --data-root DIR (a CIFAR-10 copy; nothing is downloaded)")
        tv = _cifar_module()
        try:
            datasets = (tv.datasets.CIFAR10(root, train=True, download=False),
                        tv.datasets.CIFAR10(root, train=False, download=False))
        except RuntimeError as err:
            raise InputError(f"--data-root {root!r}: no CIFAR-10 copy there ({str(err).splitlines()[0]})") from None
    train, test = datasets
    x, y = _to_arrays(train, None if limit is None else 2 * limit)
    perm = np.random.default_rng(seed).permutation(len(y))
    n_val = max(1, len(y) // 10)
    va, tr = perm[:n_val], perm[n_val:]
    x_te, y_te = _to_arrays(test, limit)
    parts = [(x[tr], y[tr]), (x[va], y[va]), (x_te, y_te)]
    if limit is not None:
        parts = [(a[:limit], b[:limit]) for a, b in parts]
    return Splits("cifar10", *(_t(a, b) for a, b in parts), num_classes=10)
