"""Datasets of ``hetsim search``: scikit-learn's bundled handwritten digits (default, offline) and CIFAR-10 from a
copy the user has (its python-format batches, read with numpy; nothing is downloaded).

Splits (fixed seed): digits: 1,797 8x8 images (upsampled to 16x16), stratified 60 % train / 20 % validation / 20 % test
(``sklearn.model_selection.train_test_split``, ``random_state = seed``); CIFAR-10: the 50,000 training images split
90 % train / 10 % validation (seeded permutation), the 10,000 test images as test. The test split is used only for
the final numbers. Pixels are scaled to ``[0, 1]``.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from hetsim.errors import InputError
from hetsim.input_files import MAX_MODEL_BYTES, check_input_file


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


CIFAR_DIR = "cifar-10-batches-py"
CIFAR_TRAIN = tuple(f"data_batch_{i}" for i in range(1, 6))
CIFAR_TEST = "test_batch"
_ALLOWED_GLOBALS = {("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
                    ("numpy", "ndarray"), ("numpy", "dtype"), ("numpy.core.multiarray", "scalar"),
                    ("numpy._core.multiarray", "scalar"), ("_codecs", "encode")}


class _BatchUnpickler(pickle.Unpickler):
    """CIFAR-10's batches are pickles; this reads only what they hold (dicts, lists, bytes, numpy arrays) and
    refuses any other object, so a file in their place cannot run code."""

    def find_class(self, module, name):
        if (module, name) in _ALLOWED_GLOBALS:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"{module}.{name} is not part of a CIFAR-10 batch")


def read_cifar_batch(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """One batch of CIFAR-10's python version (``data_batch_1`` ... ``test_batch``): images uint8 ``[N, 3, 32, 32]``
    (the file's rows are 3072 bytes, the red, green and blue 32x32 planes in turn) and labels int64 ``[N]``.

    Raises:
        InputError: unreadable, not a CIFAR-10 batch, or rows that are not 3072 bytes.
    """
    check_input_file(path, "CIFAR-10 batch", InputError, MAX_MODEL_BYTES)  # a FIFO, a device, a link loop
    try:
        with open(path, "rb") as f:
            d = _BatchUnpickler(f, encoding="bytes").load()
        data = d[b"data"] if b"data" in d else d["data"]
        labels = d[b"labels"] if b"labels" in d else d["labels"]
        x = np.asarray(data, dtype=np.uint8)
        y = np.asarray(labels, dtype=np.int64)
    except (OSError, pickle.UnpicklingError, EOFError, KeyError, TypeError, ValueError, AttributeError) as err:
        raise InputError(f"{path}: not a CIFAR-10 python batch ({type(err).__name__}: {err})") from None
    if x.ndim != 2 or x.shape[1] != 3 * 32 * 32 or y.shape != (x.shape[0],):
        raise InputError(f"{path}: expected images of 3072 bytes and one label each, got data {x.shape}, "
                         f"labels {y.shape}")
    if len(y) and (y.min() < 0 or y.max() > 9):
        raise InputError(f"{path}: labels outside 0..9")
    return x.reshape(-1, 3, 32, 32), y


def _cifar_files(root: str | Path) -> Path:
    """The folder holding CIFAR-10's batches: ``root/cifar-10-batches-py`` or ``root`` itself."""
    root = Path(root)
    for d in (root / CIFAR_DIR, root):
        if all((d / n).is_file() for n in (*CIFAR_TRAIN, CIFAR_TEST)):
            return d
    raise InputError(f"--data-root {str(root)!r}: no CIFAR-10 copy there (expected {CIFAR_DIR}/data_batch_1..5 and "
                     "test_batch, the python version from https://www.cs.toronto.edu/~kriz/cifar.html, unpacked)")


class _ArrayDataset:
    """Images uint8 ``[N, 3, 32, 32]`` and labels as an indexable dataset of ``(float image in [0, 1], label)``."""

    def __init__(self, x: np.ndarray, y: np.ndarray):
        self.x, self.y = x, y

    def __len__(self) -> int:
        return len(self.y)

    def __getitem__(self, i):
        return self.x[i].astype(np.float32) / 255.0, int(self.y[i])


def cifar_datasets(root: str | Path) -> tuple[_ArrayDataset, _ArrayDataset]:
    """CIFAR-10's training (the five batches) and test sets from ``root``, read with numpy."""
    d = _cifar_files(root)
    parts = [read_cifar_batch(d / n) for n in CIFAR_TRAIN]
    train = _ArrayDataset(np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]))
    return train, _ArrayDataset(*read_cifar_batch(d / CIFAR_TEST))


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
    """CIFAR-10 from ``root`` (its python version, ``root/cifar-10-batches-py/data_batch_1..5, test_batch``, the
    layout torchvision's ``CIFAR10(root)`` also reads; read with numpy, no torchvision), split as the module
    docstring says. ``datasets``: ``(train, test)`` indexable datasets of ``(image, label)`` to use instead.

    Raises:
        InputError: no ``root``, no CIFAR-10 copy under ``root``, or a batch that is not one.
    """
    if datasets is None:
        if root is None:
            raise InputError("--dataset cifar10 needs --data-root DIR (a CIFAR-10 copy; nothing is downloaded)")
        datasets = cifar_datasets(root)
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
