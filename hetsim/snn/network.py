"""Spiking networks: the YAML spec, the loaded network with its recorded activity, and the LIF replay.

A spec (``workloads/snn/*.yaml``)::

    name: braille7_12-384-384-7_T51
    layers: [12, 384, 384, 7]          # input width, then one width per LIF layer
    timesteps: 51
    lif: {beta: 0.9, threshold: 1.0, reset: subtract}
    readout: spike_count               # or membrane_sum
    weights: braille7_12-384-384-7_T51.npz     # W1..WL float32 [n_l, n_{l-1}]; optional b1..bL [n_l]
                                               # and per-neuron beta1..betaL, threshold1..thresholdL [n_l]
    activity: braille7_12-384-384-7_T51.npz    # spk_{split}_L{l} bool [samples, T, n_l], l = 0..L (or only
                                               # spk_{split}_L0: the other layers are then replayed);
                                               # optional labels_{split} int [samples]
    splits: {fit: train, plan: val, eval: test}
    classes: [a, b, ...]                       # optional, one name per output neuron

Paths are relative to the YAML file. Every width is >= 1; rasters have >= 1 sample and >= 1 timestep and are bool
(integer or float arrays are accepted when every value is 0 or 1); weights, biases and LIF parameters are finite
and within float32's range, with ``0 < beta <= 1`` and ``threshold > 0`` for every neuron, and the weights small
enough that the float32 replay cannot overflow (:func:`_check_magnitudes`). A split name is whatever stands
between ``spk_`` and ``_L<l>`` (it may contain underscores); other keys of the npz files are ignored, except
``W``/``b``/``beta``/``threshold`` keys numbered beyond the layers, which are an error.

Split roles: ``fit`` defaults to ``train`` and ``plan`` to ``val``; ``eval`` (the split whose latency is
reported) defaults to ``test`` when the activity has a ``test`` split, otherwise to the ``plan`` split. Roles
given under ``splits:`` are used as given (a ``splits:`` that omits ``eval`` gets the same default).

Layer ``l`` (1-based) is ``Linear(W_l) -> LIF``; its input is layer ``l-1``'s spikes (layer 0 = the input). LIF
equations (snnTorch ``Leaky`` with reset by subtraction and ``reset_delay``)::

    U_l[t] = beta * U_l[t-1] + W_l @ S_{l-1}[t] + b_l - threshold * S_l[t-1]     U_l[-1] = 0, S_l[-1] = 0
    S_l[t] = U_l[t] > threshold

(``reset: zero`` multiplies ``beta * U_l[t-1]`` by ``1 - S_l[t-1]`` instead of subtracting; ``none`` never
resets.) Readout: ``spike_count`` = argmax over classes of the output spike count summed over T (ties to the
larger summed output membrane); ``membrane_sum`` = argmax of the output membrane summed over T.
"""

from __future__ import annotations

import re
import zipfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Annotated, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from hetsim.devices.fields import MAX_COUNT, Integer, Real
from hetsim.errors import InputError, WorkloadError
from hetsim.input_files import check_input_file

#: activity keys: ``spk_<split>_L<layer>`` (the split name may contain underscores)
_SPK_KEY = re.compile(r"^spk_(?P<split>.+)_L(?P<layer>\d+)$")
#: per-layer keys of the weights file
_LAYER_KEY = re.compile(r"^(?P<kind>W|b|beta|threshold)(?P<layer>\d+)$")


#: spec numbers: finite, not booleans (hetsim.devices.fields), within these bounds (float32 parameters; T and
#: widths far above any recorded network, far below where sizes overflow)
_FLOAT32_MAX = float(np.finfo(np.float32).max)
MAX_TIMESTEPS = 10**7


class LifSpec(BaseModel):
    """LIF neuron parameters shared by every layer (per-neuron arrays may come from the weights file)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    beta: Real = Field(0.9, gt=0, le=1, description="membrane decay per timestep")
    threshold: Real = Field(1.0, gt=0, le=_FLOAT32_MAX, description="firing threshold")
    reset: Literal["subtract", "zero", "none"] = "subtract"


class SplitRoles(BaseModel):
    """Which recorded split each step uses: reordering and hot columns (``fit``), engine selection
    (``plan``), reported latency (``eval``) - SpikeDuet Sec. III-A.

    ``eval = None`` (the default) stands for ``test`` when the activity has a ``test`` split, else the ``plan``
    split; :meth:`resolve` fills it in (every :class:`SNN` holds resolved roles)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    fit: str = "train"
    plan: str = "val"
    eval: str | None = None

    def resolve(self, splits) -> SplitRoles:
        """These roles with a default ``eval`` replaced by ``test`` (when ``test`` is in ``splits``) or ``plan``."""
        if self.eval is not None:
            return self
        return self.model_copy(update={"eval": "test" if "test" in splits else self.plan})

    def name_of(self, role_or_split: str) -> str:
        """The split a role stands for (``fit``/``plan``/``eval``), or ``role_or_split`` itself when it is a
        split name."""
        return getattr(self, role_or_split) if role_or_split in ("fit", "plan", "eval") else role_or_split


class SnnSpec(BaseModel):
    """The YAML spec of a feed-forward spiking network (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    description: str = ""
    layers: list[Annotated[Integer, Field(ge=1, le=MAX_COUNT)]] = Field(
        min_length=2, description="input width, then the width of each LIF layer (each >= 1)")
    timesteps: Integer = Field(gt=0, le=MAX_TIMESTEPS, description="T, timesteps per inference")
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

    def __post_init__(self):
        self.roles = self.roles.resolve(self.activity)

    def split(self, role_or_split: str) -> list[np.ndarray]:
        """The rasters of a split, by name (``train``) or by role (``fit``/``plan``/``eval``).

        Raises:
            WorkloadError: the network has no such split.
        """
        name = self.roles.name_of(role_or_split)
        if name not in self.activity:
            have = ", ".join(sorted(self.activity)) or "none"
            raise WorkloadError(f"{self.name}: no recorded activity for split {name!r} (have: {have})")
        return self.activity[name]

    def replace(self, **changes) -> SNN:
        return replace(self, **changes)


def _float_array(value, what: str) -> np.ndarray:
    """``value`` as float32, rejecting non-numeric data and NaN/Inf (``what`` names the key in errors)."""
    a = np.asarray(value)
    if a.dtype == object or not (np.issubdtype(a.dtype, np.number) or a.dtype == bool) \
            or np.issubdtype(a.dtype, np.complexfloating):
        raise WorkloadError(f"{what}: dtype {a.dtype} is not a real number type")
    # a wider float is checked before the cast (which would turn 1e39 into inf with an overflow warning); any
    # integer and narrower float fits float32's range
    wide = np.issubdtype(a.dtype, np.floating) and a.dtype.itemsize > 4
    if not wide:
        a = a.astype(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        bad = ~np.isfinite(a) | (np.abs(a) > _FLOAT32_MAX) if wide else ~np.isfinite(a)
    if bad.any():
        at = tuple(int(i) for i in np.argwhere(bad)[0])
        x = float(a[at])
        why = "values must be finite (no NaN or Inf)" if not np.isfinite(x) else \
            f"beyond float32's range (|x| <= {_FLOAT32_MAX:.4g}), in which hetsim runs SNNs"
        raise WorkloadError(f"{what}: {x:g} at index {list(at)}; {why}")
    return a.astype(np.float32) if wide else a


def _per_neuron(value, n: int, what: str, low: float | None = None, high: float | None = None) -> np.ndarray:
    """A scalar or ``[n]`` array as float32 ``[n]``, finite and (when given) in ``(low, high]``."""
    a = _float_array(value, what)
    if a.ndim == 0:
        a = np.full(n, a, dtype=np.float32)
    elif a.shape != (n,):
        raise WorkloadError(f"{what}: shape {a.shape}, expected ({n},) or a scalar")
    if low is not None:
        bad = (a <= low) | (a > high if high is not None else False)
        if bad.any():
            i = int(np.argmax(bad))
            span = f"({low:g}, {high:g}]" if high is not None else f"> {low:g}"
            raise WorkloadError(f"{what}: neuron {i} has {float(a[i]):g}; allowed: {span}")
    return a


def _check_magnitudes(ws: list[np.ndarray], bs: list[np.ndarray], T: int, where: str) -> None:
    """Refuse weights whose float32 replay (:func:`_replay`) could overflow over ``T`` timesteps.

    Our bound, from the LIF equations (module docstring) with spikes in {0, 1} and ``0 < beta <= 1``: neuron
    ``i``'s input current is at most ``R_i = sum_j |W_ij| + |b_i|`` in magnitude. A reset happens only after a
    spike, i.e. when ``U[t-1] > threshold > 0``, and then ``|beta U[t-1] - threshold| <= U[t-1]``; without one
    ``|beta U[t-1]| <= |U[t-1]|``; so ``|U[t]| <= |U[t-1]| + R_i`` under every reset rule, and the membrane stays
    within ``T R_i`` (the threshold, float32's largest value for a layer that never fires, does not enter it). The
    readout sums the output layer's membrane over T: at most ``T`` times that again. The check asks the bound to
    stay within a quarter of float32's largest value (a margin for the threshold subtracted from a sum of that size
    before the membrane, and for rounding); weights of any trained network are tens of orders of magnitude below
    it (1e38 passed the finite check and overflowed to inf in the replay).

    Raises:
        WorkloadError: one line naming ``where`` (the file) and the layer, its largest row sum and the bound.
    """
    limit = _FLOAT32_MAX / 4
    for i, (w, b) in enumerate(zip(ws, bs, strict=True), start=1):
        row = np.abs(w).sum(axis=1, dtype=np.float64) + np.abs(b.astype(np.float64))
        reach = T * row * (T if i == len(ws) else 1)
        if reach.max() > limit:
            n = int(np.argmax(reach))
            again = " (and the readout's sum of it over T)" if i == len(ws) else ""
            raise WorkloadError(f"{where}: layer {i} (W{i}): neuron {n}'s |weights| + |bias| sum to {row[n]:.3g}, "
                                f"so over T = {T} timesteps its membrane{again} could reach {reach[n]:.3g}; hetsim "
                                f"runs SNNs in float32 (largest {_FLOAT32_MAX:.4g}) and allows at most {limit:.3g} "
                                "there (a margin for rounding); scale the weights down")


def _raster(r, key: str, layer: int, width: int, where: str) -> np.ndarray:
    """Check a spike raster ``[samples, T, width]`` and return it as bool.

    bool arrays are taken as they are; integer and float arrays only when every value is 0 or 1.
    """
    r = np.asarray(r)
    if r.ndim != 3:
        raise WorkloadError(f"{where}: {key} has shape {r.shape}; expected bool [samples, T, neurons]")
    if r.shape[2] != width:
        raise WorkloadError(f"{where}: {key} is {r.shape[2]} neurons wide but layer {layer} has {width} neurons")
    if r.shape[0] < 1 or r.shape[1] < 1:
        raise WorkloadError(f"{where}: {key} has shape {r.shape}: {r.shape[0]} samples x {r.shape[1]} timesteps; "
                            "a raster needs at least 1 sample and 1 timestep")
    if r.dtype == bool:
        return r
    if r.dtype == object or not np.issubdtype(r.dtype, np.number) or np.issubdtype(r.dtype, np.complexfloating):
        raise WorkloadError(f"{where}: {key} has dtype {r.dtype}; rasters must be bool (or integers/floats that "
                            "are all 0 or 1)")
    bad = (r != 0) & (r != 1)
    if bad.any():
        at = tuple(int(i) for i in np.argwhere(bad)[0])
        raise WorkloadError(f"{where}: {key} holds {r[at].item()!r} at {list(at)} (dtype {r.dtype}); rasters must "
                            "be bool or hold only 0 and 1")
    return r.astype(bool)


def make_snn(weights: list[np.ndarray], *, name: str = "snn", biases=None, beta=0.9, threshold=1.0,
             reset: str = "subtract", readout: str = "spike_count", activity=None, labels=None,
             roles: SplitRoles | None = None, classes=None, source: Path | None = None,
             timesteps: int | None = None) -> SNN:
    """Build and check an :class:`SNN` (the loader and the synthetic generator both use this).

    ``beta``/``threshold`` are scalars or per-layer lists of scalars or ``[n_l]`` arrays. Rasters may be bool,
    or integer/float arrays holding only 0 and 1 (cast to bool). A default ``eval`` role is resolved against
    the splits of ``activity`` (:meth:`SplitRoles.resolve`). Error messages start with ``source`` when given,
    else with ``name``. ``timesteps``: the T the network will be replayed over when ``activity`` does not say it
    (a network whose rasters are replayed from its input), for the magnitude check (:func:`_check_magnitudes`).

    Raises:
        WorkloadError: a weight matrix with a zero dimension or that does not chain with the previous layer, a
            non-finite weight, bias or neuron parameter or one beyond float32's range, weights large enough that
            the float32 replay could overflow (:func:`_check_magnitudes`), ``beta`` outside (0, 1] or
            ``threshold`` <= 0, a bias or neuron parameter of the wrong length, a raster that is empty (no
            sample or no timestep), not 0/1, or whose width does not match its layer, T or the sample count
            differing between rasters, labels that are not one integer class per sample, or ``classes`` of the
            wrong length.
    """
    where = str(source) if source is not None else name
    ws = [_float_array(w, f"{where}: W{i}") for i, w in enumerate(weights, start=1)]
    if not ws:
        raise WorkloadError(f"{where}: a network needs at least one layer")
    for i, w in enumerate(ws, start=1):
        if w.ndim != 2:
            raise WorkloadError(f"{where}: W{i} has shape {w.shape}; expected a matrix [n_{i}, n_{i - 1}]")
        if 0 in w.shape:
            raise WorkloadError(f"{where}: W{i} has shape {w.shape}; every layer needs at least 1 neuron")
        if i > 1 and w.shape[1] != ws[i - 2].shape[0]:
            raise WorkloadError(f"{where}: W{i} has {w.shape[1]} columns but layer {i - 1} has "
                                f"{ws[i - 2].shape[0]} neurons")
    sizes = [int(ws[0].shape[1])] + [int(w.shape[0]) for w in ws]

    def per_layer(v, what, low=None, high=None):
        vs = v if isinstance(v, list | tuple) else [v] * len(ws)
        if len(vs) != len(ws):
            raise WorkloadError(f"{where}: {what} has {len(vs)} entries for {len(ws)} layers")
        return [_per_neuron(x, sizes[i + 1], f"{where}: {what}{i + 1}", low, high) for i, x in enumerate(vs)]

    bs = per_layer(biases if biases is not None else 0.0, "b")
    betas = per_layer(beta, "beta", 0.0, 1.0)
    thrs = per_layer(threshold, "threshold", 0.0)
    first_t = next((np.shape(rs[0])[1] for rs in (activity or {}).values() if rs and np.ndim(rs[0]) == 3), None)
    _check_magnitudes(ws, bs, max(1, int(first_t or timesteps or 1)), where)
    if classes is not None and len(classes) != sizes[-1]:
        raise WorkloadError(f"{where}: classes has {len(classes)} names but the output layer has {sizes[-1]} "
                            "neurons; give one name per output neuron")
    acts: dict[str, list[np.ndarray]] = {}
    T = None
    for split, rasters in (activity or {}).items():
        if len(rasters) != len(sizes):
            raise WorkloadError(f"{where}: split {split!r} has rasters for {len(rasters)} layers; expected "
                                f"{len(sizes)} (input + {len(ws)} LIF layers)")
        rs = []
        for layer, r in enumerate(rasters):
            r = _raster(r, f"spk_{split}_L{layer}", layer, sizes[layer], where)
            if T is None:
                T = r.shape[1]
            if r.shape[1] != T:
                raise WorkloadError(f"{where}: spk_{split}_L{layer} has T = {r.shape[1]} timesteps but the "
                                    f"other rasters have T = {T}")
            if rs and r.shape[0] != rs[0].shape[0]:
                raise WorkloadError(f"{where}: spk_{split}_L{layer} has {r.shape[0]} samples but "
                                    f"spk_{split}_L0 has {rs[0].shape[0]}")
            rs.append(r)
        acts[split] = rs
    labs = {}
    for split, v in (labels or {}).items():
        y = np.asarray(v)
        if split not in acts:
            raise WorkloadError(f"{where}: labels_{split} given but split {split!r} has no rasters")
        n = acts[split][0].shape[0]
        if y.ndim != 1 or y.shape[0] != n:
            raise WorkloadError(f"{where}: labels_{split} has shape {y.shape}; expected one label per sample "
                                f"({n},)")
        if np.issubdtype(y.dtype, np.floating) and np.all(np.isfinite(y)) and np.all(y == np.round(y)):
            y = y.astype(np.int64)
        if y.dtype == bool or not np.issubdtype(y.dtype, np.integer):
            raise WorkloadError(f"{where}: labels_{split} has dtype {y.dtype}; labels must be integer class "
                                "indices")
        out = (y < 0) | (y >= sizes[-1])
        if out.any():
            i = int(np.argmax(out))
            raise WorkloadError(f"{where}: labels_{split}[{i}] is {int(y[i])}; class indices must be in 0.."
                                f"{sizes[-1] - 1} (one per output neuron)")
        labs[split] = y
    return SNN(name=name, weights=ws, biases=bs, beta=betas, threshold=thrs, reset=reset, readout=readout,
               timesteps=int(T or 0), activity=acts, labels=labs, roles=roles or SplitRoles(), source=source,
               classes=classes)


def _load_npz(path: Path, what: str) -> dict[str, np.ndarray]:
    if path.is_dir():
        raise WorkloadError(f"{what} {str(path)!r} is a folder, not a .npz file")
    check_input_file(path, what, WorkloadError)  # missing, a FIFO, a device, a symbolic link loop
    not_npz = f"{what} {str(path)!r} is not a .npz file (a numpy archive written by numpy.savez)"
    try:
        with open(path, "rb") as fh:
            magic = fh.read(4)
    except OSError as err:
        raise WorkloadError(f"{what} {str(path)!r} cannot be read: {err.strerror or err}") from None
    if magic not in (b"PK\x03\x04", b"PK\x05\x06"):
        raise WorkloadError(not_npz)
    from hetsim.snn.limits import check_npz

    check_npz(path, what)  # headers first: a header claiming a huge array must not be allocated
    try:
        z = np.load(path, allow_pickle=False)
    except (OSError, ValueError, zipfile.BadZipFile, EOFError):
        raise WorkloadError(not_npz) from None
    if not isinstance(z, np.lib.npyio.NpzFile):
        raise WorkloadError(not_npz)
    out = {}
    with z:
        for k in z.files:
            try:
                out[k] = z[k]
            except ValueError as err:
                why = "an object (pickled) array; only numeric arrays are allowed" \
                    if "allow_pickle" in str(err) else "not a numpy array"
                raise WorkloadError(f"{what} {str(path)!r}: entry {k!r} is {why}") from None
            except (OSError, zipfile.BadZipFile, EOFError):
                raise WorkloadError(f"{what} {str(path)!r}: entry {k!r} is truncated or corrupt") from None
    return out


def _other_snn_front_end(p: Path):
    """The front end of a spiking-network format other than the spec that reads ``p`` (``nir`` for a ``.nir``;
    :mod:`hetsim.workload.frontends`), or ``None``: ``p`` is read as a spec."""
    from hetsim.workload.frontends import frontends
    from hetsim.workload.kinds import SNN as SNN_KIND

    for fe in frontends().values():
        if fe.kind == SNN_KIND and fe.name != "snn-spec" and p.suffix.lower() in fe.suffixes:
            return fe
    return None


def load_snn(path: str | Path, spikes: str | Path | None = None) -> SNN:
    """Read an SNN spec YAML, its weights and its recorded activity; or a NIR graph (``.nir``) and the input
    raster ``spikes`` (a ``.npz``) it runs on, the rest of the activity replayed (:func:`hetsim.snn.nir.load_nir`).

    Raises:
        WorkloadError: missing or malformed YAML (the message names the field), missing, folder or non-npz
            weights/activity files, missing keys or ``W``/``b``/``beta``/``threshold`` keys beyond the layers,
            weights that do not match ``layers``, any check of :func:`make_snn` (non-finite values, neuron
            parameters out of range, empty or non-0/1 rasters, labels not one per sample), rasters whose width
            does not match their layer, T that differs between rasters or from ``timesteps``, ``classes`` of
            the wrong length, or a split role naming a split the activity does not have; ``spikes`` given for
            a spec; a platform file given as the spec; for a ``.nir`` path, whatever
            :func:`hetsim.snn.nir.load_nir` refuses.
    """
    from hetsim.platform import read_yaml, read_yaml_model

    p = Path(path)
    other = _other_snn_front_end(p)
    if other is not None:  # a NIR graph (or a plug-in's format): read by its front end
        return other.read(p, spikes=spikes).snn
    if spikes is not None:
        raise WorkloadError(f"{p}: spikes (--spikes) give the input of a NIR graph (.nir); an SNN spec names its own "
                            "activity file")
    data = read_yaml(p, WorkloadError, "SNN spec")
    if isinstance(data, dict) and "devices" in data and "layers" not in data:
        raise WorkloadError(f"{p}: a platform file (it has 'devices'), not an SNN spec; give a network such as "
                            "workloads/snn/braille384.yaml")
    if isinstance(data, dict) and "streams" in data and "layers" not in data:
        raise WorkloadError(f"{p} is a scenario (it has 'streams'); use hetsim run PLATFORM SCENARIO")
    snn_keys = ("layers", "timesteps", "weights")
    if not isinstance(data, dict) or not any(k in data for k in snn_keys):
        got = f"keys {', '.join(map(str, data))}" if isinstance(data, dict) and data else (
            "an empty mapping" if isinstance(data, dict) else type(data).__name__)
        raise WorkloadError(f"{p}: neither an SNN spec (a mapping with {', '.join(snn_keys)}) nor a scenario (a "
                            f"mapping with streams: name -> model, arrival, count, for hetsim run PLATFORM "
                            f"SCENARIO); got {got}")
    spec = read_yaml_model(p, SnnSpec, WorkloadError, "SNN spec", "name, layers, timesteps, weights, ...")
    L = len(spec.layers) - 1
    if spec.classes is not None and len(spec.classes) != spec.layers[-1]:
        raise WorkloadError(f"{p}: classes has {len(spec.classes)} names but the output layer (layers[-1]) has "
                            f"{spec.layers[-1]} neurons; give one name per output neuron")
    wfile = _load_npz(p.parent / spec.weights, f"{p}: weights")
    missing = [f"W{i}" for i in range(1, L + 1) if f"W{i}" not in wfile]
    if missing:
        raise WorkloadError(f"{p}: weights file {spec.weights!r} lacks {', '.join(missing)} (layers: {spec.layers})")
    extra = sorted((k for k in wfile if (m := _LAYER_KEY.match(k)) and not 1 <= int(m["layer"]) <= L),
                   key=lambda k: (_LAYER_KEY.match(k)["kind"], int(_LAYER_KEY.match(k)["layer"])))
    if extra:
        raise WorkloadError(f"{p}: weights file {spec.weights!r} has {', '.join(extra)} but layers {spec.layers} "
                            f"has {L} LIF layers (keys W1..W{L}, b1..b{L}, beta1..beta{L}, threshold1..threshold{L})")
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
        found: dict[str, set[int]] = {}
        for k in afile:
            if m := _SPK_KEY.match(k):
                found.setdefault(m["split"], set()).add(int(m["layer"]))
        for split in sorted(found):
            beyond = sorted(layer for layer in found[split] if layer > L)
            if beyond:
                raise WorkloadError(f"{p}: activity file has spk_{split}_L{beyond[0]} but layers {spec.layers} "
                                    f"has layers 0..{L} (input + {L} LIF layers)")
            keys = [f"spk_{split}_L{layer}" for layer in range(L + 1)]
            absent = [k for k in keys if k not in afile]
            if f"labels_{split}" in afile:
                labels[split] = afile[f"labels_{split}"]
            if absent == keys[1:]:  # only the input spikes: the other layers come from the LIF replay
                input_only[split] = afile[keys[0]]
                continue
            if absent:
                raise WorkloadError(f"{p}: activity file lacks {', '.join(absent)} (give every layer's rasters, or "
                                    f"only spk_{split}_L0 to have hetsim replay the network)")
            activity[split] = [afile[k] for k in keys]
        if not activity and not input_only:
            raise WorkloadError(f"{p}: activity file {spec.activity!r} holds no spk_<split>_L<l> rasters")
    if input_only:
        bare = make_snn(weights, name=spec.name, biases=biases, beta=beta, threshold=thr, reset=spec.lif.reset,
                        readout=spec.readout, source=p, timesteps=spec.timesteps)
        for split, x in input_only.items():
            x = _raster(x, f"spk_{split}_L0", 0, spec.layers[0], str(p))
            activity[split] = [x, *replay(bare, x).spikes]
    snn = make_snn(weights, name=spec.name, biases=biases, beta=beta, threshold=thr, reset=spec.lif.reset,
                   readout=spec.readout, activity=activity, labels=labels, roles=spec.splits,
                   classes=spec.classes, source=p)
    if activity and snn.timesteps != spec.timesteps:
        raise WorkloadError(f"{p}: timesteps is {spec.timesteps} but the recorded rasters have T = "
                            f"{snn.timesteps}")
    snn.timesteps = spec.timesteps
    for role in ("fit", "plan", "eval"):
        split = getattr(snn.roles, role)
        if activity and split not in activity:
            given = "" if role != "eval" or spec.splits.eval is not None else " (the default: test if recorded, " \
                "else the plan split)"
            raise WorkloadError(f"{p}: splits.{role} is {split!r}{given} but the activity file has only "
                                f"{', '.join(sorted(activity))}")
    return snn


def replay_mismatches(snn: SNN) -> dict[str, int]:
    """Per split, the number of spike bits (over layers ``1..L``, every sample and timestep) where the float32
    :func:`replay` of the recorded input differs from the recorded rasters: 0 everywhere when the weights
    reproduce the recorded activity. Does not raise on a mismatch (the caller decides whether to warn)."""
    out = {}
    for split, rasters in snn.activity.items():
        r = replay(snn, rasters[0])
        out[split] = int(sum(np.count_nonzero(got != want) for got, want in zip(r.spikes, rasters[1:], strict=True)))
    return out


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
    the reference replay the rasters were recorded with (the training code's ``numpy_replay``), so recorded
    rasters are reproduced bit for bit. With ``exact_sums=True`` each sum is taken in float64 and rounded once
    to float32: independent of the order of the columns (for weights whose exponents span fewer than ~29
    binades the float64 sum is exact), which is what a neuron permutation must leave unchanged.

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
    ``count + 1e-6 * tanh(sum_t U)``), so that recorded predictions are
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

    Missing parent folders of ``path`` are created.

    Raises:
        OutputExistsError: either file exists and ``force`` is false.
        InputError: the parent folder cannot be created (e.g. a file of that name is in the way).
    """
    import io

    import yaml

    from hetsim.errors import OutputExistsError
    from hetsim.files import atomic_write_bytes, atomic_write_text

    p = Path(path)
    npz = p.with_suffix(".npz")
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise InputError(f"cannot create the folder {str(p.parent)!r} for {str(p)!r}: {err.strerror or err}") \
            from None
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
