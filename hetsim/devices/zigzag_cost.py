"""ZigZag as an optional cost backend of the ``npu`` kind (``zigzag:`` in its platform entry).

ZigZag (L. Mei et al., "ZigZag: Enlarging Joint Architecture-Mapping Design Space Exploration for DNN
Accelerators", IEEE Trans. Computers 70(8), 2021; ``pip install 'hetsim[zigzag]'``, zigzag-dse 3.9.1) searches a
layer's temporal mapping on an accelerator described by its own YAML files (memories, ports, operational array)
and returns the layer's latency in cycles and its energy in pJ, memory traffic included. hetsim hands it the
op's loop nest (:func:`hetsim.devices.dataflow.loop_dims`) as one ZigZag layer with ZigZag's convolution equation
``O[b][g][k][oy][ox] += W[g][k][c][fy][fx] * I[b][g][c][iy][ix]`` (``ix = stride * ox + fx``, dilation 1, no
padding: ours), weights and inputs at the NPU's ``element_bits`` and partial sums at twice that (ZigZag's ONNX
parser's default), and takes ``latency_total2`` (cycles, with ZigZag's data on- and off-loading) and
``energy_total`` (pJ) of the mapping ZigZag finds best for ``objective``.

Each answer is kept on disk, one JSON file per (layer shape, stride, precision, objective, SHA-256 of the
accelerator and mapping files, ZigZag version), under ``cache_dir`` (default ``$HETSIM_CACHE_DIR/zigzag``, else
``~/.cache/hetsim/zigzag``), so a sweep pays ZigZag's search once per distinct layer. The files are plain JSON
(no pickles) written atomically.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import tempfile
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from hetsim.devices.dataflow import LOOP_DIMS
from hetsim.errors import PlatformError

#: the ZigZag release hetsim is tested with (``hetsim[zigzag]``)
ZIGZAG_VERSION = "3.9.1"
#: a path starting with this names a file shipped with ZigZag, e.g. ``zigzag:hardware/tpu_like.yaml``
BUNDLED_PREFIX = "zigzag:"


def zigzag_installed() -> bool:
    """True when the ``zigzag`` package (zigzag-dse) can be imported."""
    return importlib.util.find_spec("zigzag") is not None


def resolve(path: str) -> Path:
    """The file ``path`` names: ``zigzag:REL`` is ``REL`` under ZigZag's bundled ``inputs/`` folder, anything else
    a path (relative to the working directory, as every path of a platform file)."""
    if path.startswith(BUNDLED_PREFIX):
        spec = importlib.util.find_spec("zigzag")
        root = Path(spec.origin).parent if spec and spec.origin else Path(".")
        return root / "inputs" / path[len(BUNDLED_PREFIX):]
    return Path(path)


@dataclass(frozen=True)
class ZigzagCost:
    """ZigZag's answer for one layer.

    Attributes:
        cycles: ``latency_total2``: cycles including data on- and off-loading and stalls.
        energy_pj: ``energy_total``: MAC and memory energy, pJ.
        ideal_cycles: ``ideal_temporal_cycle``: cycles of the chosen spatial mapping without stalls (what
            :func:`hetsim.devices.dataflow.array_cycles` computes for the same unrolling).
    """

    cycles: float
    energy_pj: float
    ideal_cycles: float


class ZigzagBackend(BaseModel):
    """A device's ZigZag inputs (``zigzag:`` in the platform YAML).

    Attributes:
        accelerator: ZigZag hardware YAML (``zigzag:hardware/tpu_like.yaml`` for one shipped with ZigZag).
        mapping: ZigZag mapping YAML (spatial mapping, memory operand links).
        objective: what ZigZag minimises over mappings: ``latency``, ``energy`` or ``EDP``.
        cache_dir: where answers are kept (module docstring for the default).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    accelerator: str = Field(min_length=1, description="ZigZag accelerator (hardware) YAML")
    mapping: str = Field(min_length=1, description="ZigZag mapping YAML")
    objective: Literal["latency", "energy", "EDP"] = "latency"
    cache_dir: str | None = None

    @model_validator(mode="after")
    def _check(self) -> ZigzagBackend:
        if not zigzag_installed():
            raise ValueError("the ZigZag backend needs zigzag-dse: pip install 'hetsim[zigzag]'")
        for what in ("accelerator", "mapping"):
            p = resolve(getattr(self, what))
            if not p.is_file():
                raise ValueError(f"{what}: no file {str(p)!r}")
        return self

    def cache_path(self) -> Path:
        """The cache folder (created on first write)."""
        if self.cache_dir:
            return Path(self.cache_dir)
        root = os.environ.get("HETSIM_CACHE_DIR")
        return Path(root) / "zigzag" if root else Path.home() / ".cache" / "hetsim" / "zigzag"

    def cost(self, dims: dict[str, int], stride: tuple[int, ...], bits: int, op_type: str) -> ZigzagCost:
        """ZigZag's cost of the layer ``dims`` (:data:`LOOP_DIMS`) with ``stride`` (conv; ``()`` otherwise) at
        ``bits``, from the disk cache when it has been asked before.

        Raises:
            PlatformError: ZigZag failed on the layer (its message, in one line).
        """
        layer = _layer(dims, stride, bits, op_type)
        acc, mapping = resolve(self.accelerator), resolve(self.mapping)
        key = hashlib.sha256(json.dumps(
            {"layer": layer, "objective": self.objective, "accelerator": _file_hash(str(acc)),
             "mapping": _file_hash(str(mapping)), "zigzag": ZIGZAG_VERSION}, sort_keys=True).encode()).hexdigest()
        return _cached(key, self.cache_path(), json.dumps(layer, sort_keys=True), str(acc), str(mapping),
                       self.objective)


def _layer(dims: dict[str, int], stride: tuple[int, ...], bits: int, op_type: str) -> dict:
    """One ZigZag layer (its workload format) of the loop nest ``dims``."""
    sx = stride[-1] if stride else 1
    sy = stride[-2] if len(stride) > 1 else 1
    return {
        "id": 0, "name": "layer", "operator_type": "Gemm" if op_type in ("Gemm", "MatMul") else "Conv",
        "equation": "O[b][g][k][oy][ox]+=W[g][k][c][fy][fx]*I[b][g][c][iy][ix]",
        "dimension_relations": [f"ix={sx}*ox+1*fx", f"iy={sy}*oy+1*fy"],
        "loop_dims": list(LOOP_DIMS), "loop_sizes": [int(dims[d]) for d in LOOP_DIMS],
        "operand_precision": {"W": bits, "I": bits, "O": 2 * bits, "O_final": bits},
        "operand_source": {"I": 0},
    }


@lru_cache(maxsize=64)
def _file_hash(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@lru_cache(maxsize=4096)
def _cached(key: str, folder: Path, layer_json: str, accelerator: str, mapping: str, objective: str) -> ZigzagCost:
    """The answer stored under ``key`` in ``folder``, else ZigZag's for the layer ``layer_json`` (then stored)."""
    path = folder / f"{key}.json"
    try:
        return ZigzagCost(**{k: float(v) for k, v in json.loads(path.read_text())["cost"].items()})
    except (OSError, ValueError, KeyError, TypeError):
        pass
    layer = json.loads(layer_json)
    cost = run_zigzag(layer, accelerator, mapping, objective)
    try:  # a cache that cannot be written costs the next run time, not this one its answer
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump({"layer": layer, "cost": asdict(cost)}, f, sort_keys=True)
        os.replace(tmp, path)
    except OSError:
        pass
    return cost


def run_zigzag(layer: dict, accelerator: str, mapping: str, objective: str) -> ZigzagCost:
    """Ask ZigZag (``get_hardware_performance_zigzag``) for one layer, its outputs in a temporary folder, its log
    silenced; the root logger's level and handlers (ZigZag calls ``logging.basicConfig``) restored afterwards.

    Raises:
        PlatformError: ZigZag raised (its message, in one line).
    """
    from zigzag.api import get_hardware_performance_zigzag

    root = logging.getLogger()
    level, handlers, disabled = root.level, list(root.handlers), logging.root.manager.disable
    logging.disable(logging.CRITICAL)
    try:
        with tempfile.TemporaryDirectory() as out:
            _, _, cmes = get_hardware_performance_zigzag(
                [layer], accelerator, mapping, opt=objective, dump_folder=out, loma_show_progress_bar=False)
    except Exception as err:  # ZigZag's own errors have no common base class
        raise PlatformError(f"ZigZag failed on layer {layer['loop_sizes']} ({accelerator}): "
                          f"{' '.join(str(err).split())}") from None
    finally:
        logging.disable(disabled)
        root.setLevel(level)
        root.handlers[:] = handlers
    cme = cmes[0][1][0][0]
    return ZigzagCost(cycles=float(cme.latency_total2), energy_pj=float(cme.energy_total),
                      ideal_cycles=float(cme.ideal_temporal_cycle))
