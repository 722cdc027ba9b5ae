"""Spiking networks: the YAML spec, the loaded network with its recorded activity, and the LIF replay.

A spec (``workloads/snn/*.yaml``)::

    name: braille7_12-384-384-7_T51
    layers: [12, 384, 384, 7]          # input width, then one width per LIF layer
    timesteps: 51
    lif: {beta: 0.9, threshold: 1.0, reset: subtract}
    readout: spike_count               # or membrane_sum
    weights: braille7_12-384-384-7_T51.npz     # W1..WL float32 [n_l, n_{l-1}]; optional b1..bL [n_l]
    activity: braille7_12-384-384-7_T51.npz    # spk_{split}_L{l} bool [samples, T, n_l], l = 0..L (or only
                                               # spk_{split}_L0: the other layers are then replayed)
    splits: {fit: train, plan: val, eval: test}

Paths are relative to the YAML file. Layer ``l`` (1-based) is ``Linear(W_l) -> LIF``; its input is layer
``l-1``'s spikes (layer 0 = the input). LIF equations (snnTorch ``Leaky`` with reset by subtraction and
``reset_delay``; ``../shared/snn/README.md``)::

    U_l[t] = beta * U_l[t-1] + W_l @ S_{l-1}[t] + b_l - threshold * S_l[t-1]     U_l[-1] = 0, S_l[-1] = 0
    S_l[t] = U_l[t] > threshold

(``reset: zero`` multiplies ``beta * U_l[t-1]`` by ``1 - S_l[t-1]`` instead of subtracting; ``none`` never
resets.) Readout: ``spike_count`` = argmax over classes of the output spike count summed over T (ties to the
larger summed output membrane); ``membrane_sum`` = argmax of the output membrane summed over T.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hetsim.errors import WorkloadError

SPLITS = ("train", "val", "test")


class LifSpec(BaseModel):
    """LIF neuron parameters shared by every layer (per-neuron arrays may come from the weights file)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    beta: float = Field(0.9, gt=0, le=1, description="membrane decay per timestep")
    threshold: float = Field(1.0, gt=0, description="firing threshold")
    reset: Literal["subtract", "zero", "none"] = "subtract"


class SplitRoles(BaseModel):
    """Which recorded split each step uses: reordering and hot columns (``fit``), engine selection
    (``plan``), reported latency (``eval``) - seed 001 Sec. III-A."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    fit: str = "train"
    plan: str = "val"
    eval: str = "val"


class SnnSpec(BaseModel):
    """The YAML spec of a feed-forward spiking network (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    description: str = ""
    layers: list[int] = Field(min_length=2, description="input width, then the width of each LIF layer")
    timesteps: int = Field(gt=0, description="T, timesteps per inference")
    lif: LifSpec = Field(default_factory=LifSpec)
    readout: Literal["spike_count", "membrane_sum"] = "spike_count"
    weights: str = Field(description="npz file with W1..WL (and optional b1..bL)")
    activity: str | None = Field(None, description="npz file with spk_{split}_L{l} rasters")
    splits: SplitRoles = Field(default_factory=SplitRoles)
    classes: list[str] | None = None


@dataclass
class SNN:
    """A feed-forward LIF network with its recorded spike activity.

    Attributes:
        name: network name.
        weights: per layer ``l = 1..L``, float32 ``[n_l, n_{l-1}]`` (``I = W @ s``).
        biases: per layer, float32 ``[n_l]`` (zeros when the file has none).
        beta, threshold: per layer, float32 ``[n_l]`` (per-neuron parameters; permuted with the neurons).
        reset: ``subtract`` | ``zero`` | ``none``.
        readout: ``spike_count`` | ``membrane_sum``.
        timesteps: T.
        activity: split -> list over ``l = 0..L`` of bool ``[samples, T, n_l]`` rasters.
        labels: split -> int ``[samples]`` class labels, where recorded.
        roles: which split serves fit / plan / eval.
        source: the spec file it was loaded from (``None`` for networks built in code).
    """

    name: str
    weights: list[np.ndarray]
    biases: list[np.ndarray]
    beta: list[np.ndarray]
    threshold: list[np.ndarray]
    reset: str = "subtract"
    readout: str = "spike_count"
    timesteps: int = 0
    activity: dict[str, list[np.ndarray]] = field(default_factory=dict)
    labels: dict[str, np.ndarray] = field(default_factory=dict)
    roles: SplitRoles = field(default_factory=SplitRoles)
    source: Path | None = None
    classes: list[str] | None = None

    @property
    def layer_sizes(self) -> list[int]:
        """``[n_0, n_1, ..., n_L]``."""
        return [int(self.weights[0].shape[1])] + [int(w.shape[0]) for w in self.weights]

    @property
    def n_layers(self) -> int:
        """L, the number of affine + LIF layers."""
        return len(self.weights)

    def split(self, role_or_split: str) -> list[np.ndarray]:
        """The rasters of a split, by name (``train``) or by role (``fit``/``plan``/``eval``).

        Raises:
            WorkloadError: the network has no such split.
        """
        name = getattr(self.roles, role_or_split, role_or_split) if role_or_split in ("fit", "plan", "eval") \
            else role_or_split
        if name not in self.activity:
            have = ", ".join(sorted(self.activity)) or "none"
            raise WorkloadError(f"{self.name}: no recorded activity for split {name!r} (have: {have})")
        return self.activity[name]

    def replace(self, **changes) -> SNN:
        return replace(self, **changes)


def _per_neuron(value, n: int, what: str) -> np.ndarray:
    a = np.asarray(value, dtype=np.float32)
    if a.ndim == 0:
        return np.full(n, a, dtype=np.float32)
    if a.shape != (n,):
        raise WorkloadError(f"{what}: shape {a.shape}, expected ({n},) or a scalar")
    return a


def make_snn(weights: list[np.ndarray], *, name: str = "snn", biases=None, beta=0.9, threshold=1.0,
             reset: str = "subtract", readout: str = "spike_count", activity=None, labels=None,
             roles: SplitRoles | None = None, classes=None, source: Path | None = None) -> SNN:
    """Build and check an :class:`SNN` (the loader and the synthetic generator both use this).

    ``beta``/``threshold`` are scalars or per-layer lists of scalars or ``[n_l]`` arrays.

    Raises:
        WorkloadError: a weight matrix does not chain with the previous layer, a bias or neuron parameter has
            the wrong length, a raster's width does not match its layer, or T differs between rasters.
    """
    ws = [np.asarray(w, dtype=np.float32) for w in weights]
    if not ws:
        raise WorkloadError(f"{name}: a network needs at least one layer")
    for i, w in enumerate(ws, start=1):
        if w.ndim != 2:
            raise WorkloadError(f"{name}: W{i} has shape {w.shape}; expected a matrix [n_{i}, n_{i - 1}]")
        if i > 1 and w.shape[1] != ws[i - 2].shape[0]:
            raise WorkloadError(f"{name}: W{i} has {w.shape[1]} columns but layer {i - 1} has "
                                f"{ws[i - 2].shape[0]} neurons")
    sizes = [int(ws[0].shape[1])] + [int(w.shape[0]) for w in ws]

    def per_layer(v, what):
        vs = v if isinstance(v, list | tuple) else [v] * len(ws)
        if len(vs) != len(ws):
            raise WorkloadError(f"{name}: {what} has {len(vs)} entries for {len(ws)} layers")
        return [_per_neuron(x, sizes[i + 1], f"{name}: {what}{i + 1}") for i, x in enumerate(vs)]

    bs = per_layer(biases if biases is not None else 0.0, "b")
    snn = SNN(name=name, weights=ws, biases=bs, beta=per_layer(beta, "beta"),
              threshold=per_layer(threshold, "threshold"), reset=reset, readout=readout,
              roles=roles or SplitRoles(), source=source, classes=classes,
              labels={k: np.asarray(v) for k, v in (labels or {}).items()})
    T = None
    for split, rasters in (activity or {}).items():
        if len(rasters) != len(sizes):
            raise WorkloadError(f"{name}: split {split!r} has rasters for {len(rasters)} layers; expected "
                                f"{len(sizes)} (input + {len(ws)} LIF layers)")
        rs = []
        for layer, r in enumerate(rasters):
            r = np.asarray(r)
            if r.ndim != 3:
                raise WorkloadError(f"{name}: spk_{split}_L{layer} has shape {r.shape}; expected bool "
                                    "[samples, T, neurons]")
            if r.shape[2] != sizes[layer]:
                raise WorkloadError(f"{name}: spk_{split}_L{layer} is {r.shape[2]} neurons wide but layer "
                                    f"{layer} has {sizes[layer]} neurons")
            if T is None:
                T = r.shape[1]
            if r.shape[1] != T:
                raise WorkloadError(f"{name}: spk_{split}_L{layer} has T = {r.shape[1]} timesteps but the "
                                    f"other rasters have T = {T}")
            if r.shape[0] != rasters[0].shape[0]:
                raise WorkloadError(f"{name}: spk_{split}_L{layer} has {r.shape[0]} samples but "
                                    f"spk_{split}_L0 has {rasters[0].shape[0]}")
            rs.append(r.astype(bool))
        snn.activity[split] = rs
    snn.timesteps = int(T or 0)
    return snn


def _load_npz(path: Path, what: str) -> dict[str, np.ndarray]:
    if not path.is_file():
        raise WorkloadError(f"{what} {str(path)!r} does not exist")
    try:
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except (OSError, ValueError) as err:
        raise WorkloadError(f"{what} {str(path)!r} is not a readable .npz file: {err}") from None


def load_snn(path: str | Path) -> SNN:
    """Read an SNN spec YAML, its weights and its recorded activity.

    Raises:
        WorkloadError: missing or malformed YAML (the message names the field), missing npz files or keys,
            weights that do not match ``layers``, rasters whose width does not match their layer, T that
            differs between rasters or from ``timesteps``.
    """
    from hetsim.platform import _format_validation_error, read_yaml

    p = Path(path)
    data = read_yaml(p, WorkloadError, "SNN spec")
    if not isinstance(data, dict):
        raise WorkloadError(f"{p}: expected a YAML mapping (name, layers, timesteps, weights, ...)")
    try:
        spec = SnnSpec.model_validate(data)
    except ValidationError as err:
        raise WorkloadError(_format_validation_error(err, str(p))) from None
    wfile = _load_npz(p.parent / spec.weights, f"{p}: weights")
    L = len(spec.layers) - 1
    missing = [f"W{i}" for i in range(1, L + 1) if f"W{i}" not in wfile]
    if missing:
        raise WorkloadError(f"{p}: weights file {spec.weights!r} lacks {', '.join(missing)} (layers: {spec.layers})")
    weights = [wfile[f"W{i}"] for i in range(1, L + 1)]
    for i, w in enumerate(weights, start=1):
        want = (spec.layers[i], spec.layers[i - 1])
        if w.shape != want:
            raise WorkloadError(f"{p}: W{i} has shape {w.shape} but layers {spec.layers} need {want}")
    biases = [wfile.get(f"b{i}", 0.0) for i in range(1, L + 1)]
    beta = [wfile.get(f"beta{i}", spec.lif.beta) for i in range(1, L + 1)]
    thr = [wfile.get(f"threshold{i}", spec.lif.threshold) for i in range(1, L + 1)]
    activity, labels, input_only = {}, {}, {}
    if spec.activity is not None:
        afile = wfile if spec.activity == spec.weights else _load_npz(p.parent / spec.activity, f"{p}: activity")
        for split in sorted({k.split("_")[1] for k in afile if k.startswith("spk_")}):
            keys = [f"spk_{split}_L{layer}" for layer in range(L + 1)]
            absent = [k for k in keys if k not in afile]
            if absent == keys[1:]:  # only the input spikes: the other layers come from the LIF replay
                input_only[split] = afile[keys[0]]
                continue
            if absent:
                raise WorkloadError(f"{p}: activity file lacks {', '.join(absent)} (give every layer's rasters, or "
                                    f"only spk_{split}_L0 to have hetsim replay the network)")
            activity[split] = [afile[k] for k in keys]
            if f"labels_{split}" in afile:
                labels[split] = afile[f"labels_{split}"]
        if not activity and not input_only:
            raise WorkloadError(f"{p}: activity file {spec.activity!r} holds no spk_<split>_L<l> rasters")
    if input_only:
        bare = make_snn(weights, name=spec.name, biases=biases, beta=beta, threshold=thr, reset=spec.lif.reset,
                        readout=spec.readout)
        for split, x in input_only.items():
            x = np.asarray(x)
            if x.ndim != 3 or x.shape[2] != spec.layers[0]:
                raise WorkloadError(f"{p}: spk_{split}_L0 has shape {x.shape}; expected bool [samples, T, "
                                    f"{spec.layers[0]}]")
            activity[split] = [x.astype(bool), *replay(bare, x).spikes]
    snn = make_snn(weights, name=spec.name, biases=biases, beta=beta, threshold=thr, reset=spec.lif.reset,
                   readout=spec.readout, activity=activity, labels=labels, roles=spec.splits,
                   classes=spec.classes, source=p)
    if activity and snn.timesteps != spec.timesteps:
        raise WorkloadError(f"{p}: timesteps is {spec.timesteps} but the recorded rasters have T = "
                            f"{snn.timesteps}")
    snn.timesteps = spec.timesteps
    for role in ("fit", "plan", "eval"):
        split = getattr(spec.splits, role)
        if activity and split not in activity:
            raise WorkloadError(f"{p}: splits.{role} is {split!r} but the activity file has only "
                                f"{', '.join(sorted(activity))}")
    return snn


@dataclass
class Replay:
    """Output of :func:`replay`: per layer ``l = 1..L`` the spikes bool ``[samples, T, n_l]`` and the final
    layer's membrane float32 ``[samples, T, n_L]``; ``prediction`` int ``[samples]`` by the network's readout."""

    spikes: list[np.ndarray]
    membrane_out: np.ndarray
    prediction: np.ndarray


def replay(snn: SNN, inputs: np.ndarray, exact_sums: bool = False) -> Replay:
    """See :func:`_replay`; runs with one BLAS thread (the per-timestep products are small, and threads only
    add synchronisation: 2-10x slower on a loaded machine; the results are the same)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        return _replay(snn, inputs, exact_sums)


def _replay(snn: SNN, inputs: np.ndarray, exact_sums: bool = False) -> Replay:
    """Run the LIF equations (module docstring) in float32 on input spikes bool ``[samples, T, n_0]``.

    With ``exact_sums=False`` the affine input is ``s[:, t] @ W.T`` in float32 over the whole batch, exactly as
    the reference replay of ``../shared/snn`` (``numpy_replay``), so recorded rasters are reproduced bit for
    bit. With ``exact_sums=True`` each sum is taken in float64 and rounded once to float32: independent of
    the order of the columns (for weights whose exponents span fewer than ~29 binades the float64 sum is
    exact), which is what a neuron permutation must leave unchanged.

    Raises:
        WorkloadError: the input width or T does not fit the network.
    """
    x = np.asarray(inputs)
    if x.ndim != 3 or x.shape[2] != snn.layer_sizes[0]:
        raise WorkloadError(f"{snn.name}: input spikes have shape {x.shape}; expected [samples, T, "
                            f"{snn.layer_sizes[0]}]")
    S, T, _ = x.shape
    s_in = x.astype(np.float32)
    spikes = []
    mem = None
    for li, W in enumerate(snn.weights):
        n = W.shape[0]
        beta, thr, b = snn.beta[li], snn.threshold[li], snn.biases[li]
        has_b = bool(np.any(b))
        u = np.zeros((S, n), np.float32)
        s_prev = np.zeros((S, n), np.float32)
        rec = np.zeros((S, T, n), bool)
        last = li == len(snn.weights) - 1
        if last:
            mem = np.zeros((S, T, n), np.float32)
        Wt = W.T
        W64 = W.T.astype(np.float64) if exact_sums else None
        for t in range(T):
            cur = (s_in[:, t].astype(np.float64) @ W64).astype(np.float32) if exact_sums else s_in[:, t] @ Wt
            if has_b:
                cur = cur + b
            if snn.reset == "subtract":
                u = beta * u + cur - thr * s_prev
            elif snn.reset == "zero":
                u = beta * u * (np.float32(1) - s_prev) + cur
            else:
                u = beta * u + cur
            s_prev = (u > thr).astype(np.float32)
            rec[:, t] = s_prev > 0
            if last:
                mem[:, t] = u
        spikes.append(rec)
        s_in = rec.astype(np.float32)
    return Replay(spikes=spikes, membrane_out=mem, prediction=readout(snn, spikes[-1], mem))


def readout(snn: SNN, out_spikes: np.ndarray, out_membrane: np.ndarray) -> np.ndarray:
    """Class per sample from the output layer: int ``[samples]``.

    ``membrane_sum``: argmax of the output membrane summed over T. ``spike_count``: argmax of the spike count
    over T, ties to the larger summed membrane, computed as the reference training code does (float32
    ``count + 1e-6 * tanh(sum_t U)``, ``../shared/snn/make/train_snn.py``), so that recorded predictions are
    reproduced; where float32 cannot resolve the ``1e-6`` term (counts of 16 and more) ties go to the lower
    class index.
    """
    msum = out_membrane.sum(axis=1, dtype=np.float32)
    if snn.readout == "membrane_sum":
        return msum.argmax(axis=1)
    score = out_spikes.sum(axis=1).astype(np.float32) + np.float32(1e-6) * np.tanh(msum)
    return score.argmax(axis=1)


def save_snn(snn: SNN, path: str | Path, force: bool = False, description: str = "") -> list[Path]:
    """Write ``snn`` as a spec YAML at ``path`` plus ``<stem>.npz`` beside it (weights, biases, per-neuron
    LIF parameters when they are not uniform, every split's rasters and labels), both atomically.

    Raises:
        OutputExistsError: either file exists and ``force`` is false.
    """
    import io

    import yaml

    from hetsim.errors import OutputExistsError
    from hetsim.report.export import atomic_write_bytes, atomic_write_text

    p = Path(path)
    npz = p.with_suffix(".npz")
    clash = [str(f) for f in (p, npz) if f.exists()]
    if clash and not force:
        raise OutputExistsError(f"{', '.join(clash)} already exist(s); pass --force to replace")
    arrays: dict[str, np.ndarray] = {"layer_sizes": np.asarray(snn.layer_sizes, np.int64)}
    uniform = {}
    for i in range(1, snn.n_layers + 1):
        arrays[f"W{i}"] = snn.weights[i - 1]
        if np.any(snn.biases[i - 1]):
            arrays[f"b{i}"] = snn.biases[i - 1]
        for key, vals in (("beta", snn.beta), ("threshold", snn.threshold)):
            v = vals[i - 1]
            if np.all(v == v[0]) and uniform.get(key, v[0]) == v[0]:
                uniform[key] = v[0]
            else:
                arrays[f"{key}{i}"] = v
    for key, vals in (("beta", snn.beta), ("threshold", snn.threshold)):
        if key in uniform and any(f"{key}{i}" in arrays for i in range(1, snn.n_layers + 1)):
            for i in range(1, snn.n_layers + 1):
                arrays[f"{key}{i}"] = vals[i - 1]
    for split, rasters in snn.activity.items():
        for layer, r in enumerate(rasters):
            arrays[f"spk_{split}_L{layer}"] = r
        if split in snn.labels:
            arrays[f"labels_{split}"] = snn.labels[split]
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    atomic_write_bytes(npz, buf.getvalue())
    spec = {
        "name": snn.name,
        "description": description,
        "layers": snn.layer_sizes,
        "timesteps": snn.timesteps,
        "lif": {"beta": float(str(uniform.get("beta", np.float32(0.9)))),
                "threshold": float(str(uniform.get("threshold", np.float32(1.0)))),
                "reset": snn.reset},
        "readout": snn.readout,
        "weights": npz.name,
        "activity": npz.name if snn.activity else None,
        "splits": snn.roles.model_dump(),
    }
    if snn.classes:
        spec["classes"] = list(snn.classes)
    atomic_write_text(p, yaml.safe_dump(spec, sort_keys=False))
    return [p, npz]
