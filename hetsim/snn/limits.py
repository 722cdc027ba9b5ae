"""Bounds on a ``.npz`` archive read before NumPy allocates anything for it.

``numpy.load`` of an npz member allocates the whole array its ``.npy`` header declares before reading the data,
so a 100-byte file whose header claims a 4 TB array ends in ``MemoryError`` (or the machine swapping). This module
reads each member's header from the archive (``numpy.lib.format``: magic, version, ``shape``/``dtype``/
``fortran_order``), and refuses, in one line naming the entry, a header that is unreadable, an object dtype, an
array larger than :data:`NPZ_MAX_BYTES`, archives whose arrays add up past it, and a member whose stored data is
shorter than its header says (truncated).

The limit is ours: 2 GiB of array data per archive, some 50 times the largest shipped network's weights and
rasters (the 384-neuron Braille network's archive holds under 40 MB).
"""

from __future__ import annotations

import math
import zipfile
from pathlib import Path

import numpy as np

from hetsim.errors import WorkloadError

#: most bytes of array data hetsim reads from one ``.npz`` (the arrays together)
NPZ_MAX_BYTES = 2 * 2**30


def _fmt(n: float) -> str:
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} bytes"


def check_npz(path: Path, what: str, max_bytes: int | None = None) -> None:
    """Read the ``.npy`` header of every member of the npz ``path`` and refuse what ``numpy.load`` should not try.

    Args:
        path: the archive (already known to be a zip file).
        what: how the message names the file (``"weights"``, ``"spikes"``).
        max_bytes: the bound on the arrays' total size; :data:`NPZ_MAX_BYTES` by default.

    Raises:
        WorkloadError: an unreadable archive or member header, an object (pickled) array, arrays larger than
            the bound (the message gives the entry, its shape and both sizes), or a member whose stored data is
            shorter than its header declares.
    """
    limit = NPZ_MAX_BYTES if max_bytes is None else max_bytes
    where = f"{what} {str(path)!r}"
    total = 0
    try:
        zf = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile, ValueError, EOFError):
        raise WorkloadError(f"{where} is not a .npz file (a numpy archive written by numpy.savez)") from None
    with zf:
        for info in zf.infolist():
            if not info.filename.endswith(".npy"):
                continue
            key = info.filename[:-4]
            try:
                with zf.open(info) as fh:
                    version = np.lib.format.read_magic(fh)
                    if version == (1, 0):
                        shape, _, dtype = np.lib.format.read_array_header_1_0(fh)
                    else:
                        shape, _, dtype = np.lib.format.read_array_header_2_0(fh)
                    header_len = fh.tell()
            except (OSError, ValueError, zipfile.BadZipFile, EOFError, SyntaxError, TypeError, RuntimeError):
                raise WorkloadError(f"{where}: entry {key!r} is not a numpy array (its .npy header is "
                                    "unreadable)") from None
            if dtype.hasobject:
                raise WorkloadError(f"{where}: entry {key!r} is an object (pickled) array; only numeric arrays "
                                    "are allowed")
            nbytes = math.prod(shape) * dtype.itemsize
            total += nbytes
            if nbytes > limit or total > limit:
                raise WorkloadError(f"{where}: entry {key!r} declares a {'x'.join(map(str, shape)) or 'scalar'} "
                                    f"{dtype} array ({_fmt(nbytes)}); hetsim reads at most {_fmt(limit)} of "
                                    "arrays from one .npz")
            if info.file_size < header_len + nbytes:
                raise WorkloadError(f"{where}: entry {key!r} is truncated: its header declares "
                                    f"{_fmt(nbytes)} of data, the archive holds "
                                    f"{_fmt(max(info.file_size - header_len, 0))}")


#: most memory a synthetic network may need (our estimate, :func:`synthetic_bytes`), in bytes
SYNTHETIC_MAX_BYTES = 4 * 2**30


def synthetic_bytes(sizes: list[int], timesteps: int, samples: int, n_splits: int) -> int:
    """Our estimate of the peak memory, in bytes, of :func:`hetsim.snn.synthetic.synthetic_snn` (an assumption
    of ours, from its arrays, not a measurement): the bool rasters ``[samples, T, n_l]`` of every layer and split,
    three float32 ``[samples * T, n_l]`` arrays of the widest layer while a layer's density is tuned (input
    currents, membranes, candidate spikes), and three float64 ``[n_out, n_in]`` matrices of the largest layer
    while its weights are drawn (block, noise, their sum)."""
    rasters = n_splits * samples * timesteps * sum(sizes)
    tuning = 3 * 4 * samples * timesteps * max(sizes)
    weights = 3 * 8 * max(a * b for a, b in zip(sizes, sizes[1:], strict=False))
    return rasters + tuning + weights


def check_synthetic_size(sizes: list[int], timesteps: int, samples: int, n_splits: int) -> None:
    """Refuse a synthetic network whose estimated memory (:func:`synthetic_bytes`) is past
    :data:`SYNTHETIC_MAX_BYTES`, before anything is allocated.

    Raises:
        WorkloadError: the estimate, the limit and the sizes that drive it.
    """
    need = synthetic_bytes(sizes, timesteps, samples, n_splits)
    if need > SYNTHETIC_MAX_BYTES:
        raise WorkloadError(f"a synthetic network of layers {sizes} x {timesteps} timesteps x {samples} samples "
                            f"per split needs about {_fmt(need)} of memory (our estimate); hetsim builds "
                            f"synthetic networks of at most {_fmt(SYNTHETIC_MAX_BYTES)}: lower the widths, "
                            "timesteps or samples")
