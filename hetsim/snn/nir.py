"""NIR (Neuromorphic Intermediate Representation, the ``nir`` package) graphs in and out of hetsim's :class:`SNN`.

Reading (:func:`load_nir`, reached through :func:`hetsim.snn.network.load_snn` for a ``.nir`` path): the graph
must be a chain ``Input [-> Flatten] -> (Affine | Linear) -> neuron -> ... -> (Affine | Linear) -> neuron ->
Output`` (``Identity`` nodes anywhere are skipped), the feed-forward LIF network of :mod:`hetsim.snn.network`
(SpikeDuet's flow: one affine layer then one layer of first-order neurons, repeated). Neuron nodes: ``LIF``,
``IF``, ``CubaLIF`` whose synaptic time constant equals ``dt`` (an instantaneous synapse), and ``LI`` /
``CubaLI`` as the last layer only (a membrane readout). Anything else (convolutions, pooling, ``Scale``,
``Delay``, ``Threshold``, subgraphs such as snnTorch's recurrent ``RLeaky``/``RSynaptic``, cycles, branches,
merges) is refused with a :class:`~hetsim.errors.WorkloadError` naming the node.

Discretisation (``docs/models.md``, "NIR graphs"): NIR's neurons are continuous-time ODEs; hetsim steps them with
the forward-Euler step ``dt`` that snnTorch's ``export_to_nir``/``import_from_nir`` use, the input of timestep
``t`` entering the membrane at ``t``. A ``LIF`` node ``tau dv/dt = (v_leak - v) + r I`` with ``I = W s + b``
becomes, per neuron, with ``k = dt / tau``::

    v[t] = (1 - k) v[t-1] + k r (W s[t] + b) + k v_leak       spike: v[t] > v_threshold

i.e. hetsim's layer with ``beta = 1 - k``, weights ``k r W``, bias ``k r b + k v_leak`` (computed in float64,
then rounded once to float32; a gain ``k r`` within 4 float32 ulps of 1 is taken as exactly 1, which is what an
exporter that stores ``tau`` and ``r`` in float32, such as snnTorch's, means). After a spike NIR sets
``v = v_reset``: ``v_reset = 0`` is hetsim's ``reset: zero``; any other ``v_reset`` is refused. A neuron node's
metadata ``{"reset": "subtract" | "zero" | "none"}`` (written by :func:`snn_to_nir`) overrides that, so the
subtractive reset of hetsim's shipped networks survives the round trip. ``IF`` (``dv/dt = r I``, no time
constant) adds ``r (W s[t] + b)`` per timestep (``beta = 1``), as snnTorch's importer reads it. ``CubaLIF``:
``tau_syn dI/dt = -I + w_in (W s + b)`` stepped with ``dt = tau_syn`` gives ``I[t] = w_in (W s[t] + b)``, then
the ``LIF`` step with ``r``; another ``tau_syn`` is a second state that hetsim's model does not have (refused).
``LI``/``CubaLI`` never fire: the layer gets the largest float32 threshold and the readout ``membrane_sum``.

``dt`` (seconds) is, in order: the ``dt=`` argument, the graph's metadata ``dt`` (written by :func:`snn_to_nir`),
else :data:`DEFAULT_DT_S` (1e-4 s, the constant of snnTorch's exporter and importer).

The input raster comes from a ``.npz`` (:func:`load_input_spikes`); the hidden and output activity is replayed
(:func:`hetsim.snn.network.replay`), as for a spec that gives only ``spk_<split>_L0``.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np

from hetsim.errors import HetsimError, InputError, OutputExistsError, WorkloadError
from hetsim.input_files import MAX_MODEL_BYTES, check_input_file
from hetsim.snn.network import SNN, SplitRoles, _load_npz, _raster, make_snn, replay

#: forward-Euler step when neither the caller nor the graph gives one: snnTorch's export_to_nir constant, s
DEFAULT_DT_S = 1e-4
#: a gain ``k r`` (and CubaLIF's ``dt / tau_syn``) this close to 1, in float32 ulps, is read as exactly 1
_SNAP_ULPS = 4
_EPS32 = float(np.finfo(np.float32).eps)
#: the threshold of a layer that never fires (LI, CubaLI)
NEVER_FIRES = float(np.finfo(np.float32).max)
RESETS = ("subtract", "zero", "none")
#: the parameters each neuron node must have; :data:`_OPTIONAL` ones default to 0 (v_reset) and 1 (w_in)
_FIELDS = {"LIF": ("tau", "r", "v_leak", "v_threshold"), "IF": ("r", "v_threshold"),
           "CubaLIF": ("tau_syn", "tau_mem", "r", "v_leak", "v_threshold"), "LI": ("tau", "r", "v_leak"),
           "CubaLI": ("tau_syn", "tau_mem", "r", "v_leak")}
_OPTIONAL = {"v_reset": ("LIF", "IF", "CubaLIF"), "w_in": ("CubaLIF", "CubaLI")}
_SPK0 = re.compile(r"^spk_(?P<split>.+)_L0$")


def _nir():
    import nir

    return nir


def read_nir_graph(path: str | Path):
    """Read a ``.nir`` file with :func:`nir.read` (without NIR's own type check: hetsim checks the shapes it uses).

    Raises:
        WorkloadError: the file is missing, a folder, or not a NIR graph NIR can read.
    """
    nir = _nir()
    p = Path(path)
    if p.is_dir():
        raise WorkloadError(f"NIR graph {str(p)!r} is a folder, not a .nir file")
    check_input_file(p, "NIR graph", WorkloadError, MAX_MODEL_BYTES)  # missing, a FIFO, a device, a link loop
    try:
        graph = nir.read(p, type_check=False)
    except Exception as err:  # h5py/NIR raise OSError, KeyError, ValueError, TypeError, AssertionError, ...
        why = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise WorkloadError(f"{p}: not a NIR graph that the nir package can read ({why})") from None
    if not isinstance(graph, nir.NIRGraph):
        raise WorkloadError(f"{p}: holds a single {type(graph).__name__} node, not a NIR graph")
    return graph


def _meta(node) -> dict:
    m = getattr(node, "metadata", None)
    return m if isinstance(m, dict) else {}


def _real(where: str, field: str, value) -> np.ndarray:
    """``value`` as a float64 array, finite.

    Raises:
        WorkloadError: missing, non-numeric (strings, objects, complex) or non-finite values.
    """
    if value is None:
        raise WorkloadError(f"{where}: {field} is missing")
    a = np.asarray(value)
    if a.dtype == object or not (np.issubdtype(a.dtype, np.number) or a.dtype == bool) \
            or np.issubdtype(a.dtype, np.complexfloating):
        raise WorkloadError(f"{where}: {field} has dtype {a.dtype}; expected real numbers")
    a = a.astype(np.float64)
    if not np.all(np.isfinite(a)):
        raise WorkloadError(f"{where}: {field} holds a non-finite value ({a[~np.isfinite(a)][0]})")
    return a


def _param(where: str, field: str, value, n: int) -> np.ndarray:
    """A neuron parameter as float64 ``[n]``: a scalar (or one value) is broadcast; it must be finite."""
    a = _real(where, field, value)
    if a.size == 1:
        a = np.full(n, a.reshape(()).item())
    elif a.shape != (n,):
        raise WorkloadError(f"{where}: {field} has shape {a.shape}; expected ({n},) or a scalar")
    return a


def _snap_one(x: np.ndarray) -> np.ndarray:
    """``x`` with entries within :data:`_SNAP_ULPS` float32 ulps of 1 set to exactly 1."""
    return np.where(np.abs(x - 1.0) <= _SNAP_ULPS * _EPS32, 1.0, x)


def _neuron(name: str, node, n: int, dt: float, last: bool, reset: str | None) -> dict:
    """hetsim's per-neuron parameters of one NIR neuron node of width ``n`` (module docstring):
    ``gain`` (multiplies W and b), ``beta``, ``leak`` (added to the bias), ``threshold`` (float64 ``[n]``),
    ``reset`` and whether the layer fires."""
    nir = _nir()
    kind = type(node).__name__
    where = f"{kind} node {name!r}"
    fields = _FIELDS[kind]
    p = {f: _param(where, f, getattr(node, f, None), n) for f in fields}
    for f, default in (("v_reset", 0.0), ("w_in", 1.0)):
        if f not in p and kind in _OPTIONAL[f]:
            v = getattr(node, f, None)
            p[f] = np.full(n, default) if v is None else _param(where, f, v, n)
    if isinstance(node, nir.LI | nir.CubaLI) and not last:
        raise WorkloadError(f"{where}: a leaky integrator (no spikes) can only be the last layer, read as a "
                            "membrane readout; hetsim's hidden layers pass spikes")
    out = {"leak": np.zeros(n), "fires": not isinstance(node, nir.LI | nir.CubaLI)}
    if isinstance(node, nir.IF):
        out.update(gain=p["r"], beta=np.ones(n))
    else:
        tau = p["tau"] if "tau" in p else p["tau_mem"]
        field = "tau" if "tau" in p else "tau_mem"
        if np.any(tau <= dt):
            i = int(np.argmax(tau <= dt))
            raise WorkloadError(f"{where}: {field} = {tau[i]:g} s (neuron {i}) is not longer than dt = {dt:g} s; "
                                "hetsim's decay beta = 1 - dt/tau must be in (0, 1] (give the step the graph was "
                                "made with: dt=... in Python, or metadata dt in the graph)")
        k = dt / tau
        gain = k * p["r"]
        if "tau_syn" in p:
            a = _snap_one(dt / p["tau_syn"])
            if np.any(a != 1.0):
                i = int(np.argmax(a != 1.0))
                raise WorkloadError(f"{where}: tau_syn = {p['tau_syn'][i]:g} s (neuron {i}) differs from dt = "
                                    f"{dt:g} s: a synaptic current with its own decay is a second state that "
                                    "hetsim's first-order LIF model (snnTorch Leaky) does not cover")
            gain = gain * p["w_in"]
        out.update(gain=_snap_one(gain), beta=1.0 - k, leak=k * p["v_leak"])
    if out["fires"]:
        thr = p["v_threshold"]
        if np.any(thr <= 0):
            i = int(np.argmax(thr <= 0))
            raise WorkloadError(f"{where}: v_threshold = {thr[i]:g} (neuron {i}); hetsim needs a threshold > 0")
        out["threshold"] = thr
        given = reset or _meta(node).get("reset")
        if given is not None and given not in RESETS:
            raise WorkloadError(f"{where}: metadata reset is {given!r}; allowed: {', '.join(RESETS)}")
        if given is None:
            vr = p.get("v_reset", np.zeros(n))
            if np.any(vr != 0):
                i = int(np.argmax(vr != 0))
                raise WorkloadError(f"{where}: v_reset = {vr[i]:g} (neuron {i}); hetsim's LIF resets to 0 (or, "
                                    "with metadata reset: subtract, subtracts the threshold)")
            given = "zero"
        out["reset"] = given
    else:
        out["threshold"] = np.full(n, NEVER_FIRES)
        out["reset"] = None
    return out


def _chain(graph, where: str) -> list[str]:
    """The node names from the Input to the Output node, Identity nodes dropped.

    Raises:
        WorkloadError: unsupported node types, not exactly one Input and one Output, a branch, a merge, a cycle
            (recurrent edge) or a node off the Input-Output path.
    """
    nir = _nir()
    supported = (nir.Input, nir.Output, nir.Affine, nir.Linear, nir.LIF, nir.IF, nir.CubaLIF, nir.LI,
                 nir.CubaLI, nir.Flatten, *_identity())
    for name, node in graph.nodes.items():
        if isinstance(node, nir.NIRGraph):
            raise WorkloadError(f"{where}: node {name!r} is a subgraph (NIRGraph; snnTorch writes its recurrent "
                                "RLeaky/RSynaptic layers so): recurrent layers are not covered by hetsim's "
                                "feed-forward LIF model")
        if not isinstance(node, supported):
            raise WorkloadError(f"{where}: node {name!r} is a {type(node).__name__}; hetsim reads chains of "
                                "Affine/Linear layers and LIF/IF/CubaLIF neurons (LI/CubaLI last)")
    ins = [k for k, v in graph.nodes.items() if isinstance(v, nir.Input)]
    outs = [k for k, v in graph.nodes.items() if isinstance(v, nir.Output)]
    if len(ins) != 1 or len(outs) != 1:
        raise WorkloadError(f"{where}: {len(ins)} Input and {len(outs)} Output nodes; hetsim reads graphs with "
                            "one of each")
    succ: dict[str, list[str]] = {k: [] for k in graph.nodes}
    pred: dict[str, list[str]] = {k: [] for k in graph.nodes}
    for edge in graph.edges:
        a, b = (str(x) for x in edge)
        for x in (a, b):
            if x not in graph.nodes:
                raise WorkloadError(f"{where}: an edge names node {x!r}, which the graph does not have")
        if b not in succ[a]:
            succ[a].append(b)
            pred[b].append(a)
    for name in graph.nodes:
        if len(succ[name]) > 1:
            raise WorkloadError(f"{where}: node {name!r} feeds {len(succ[name])} nodes ({', '.join(succ[name])}); "
                                "hetsim reads a chain Input -> Affine -> LIF -> ... -> Output")
        if len(pred[name]) > 1:
            raise WorkloadError(f"{where}: node {name!r} has {len(pred[name])} inputs ({', '.join(pred[name])}): "
                                "a merge or a recurrent edge, which hetsim's feed-forward model does not cover")
    path, seen, at = [], set(), ins[0]
    while True:
        if at in seen:
            raise WorkloadError(f"{where}: node {at!r} is reached again (a recurrent edge); hetsim's model is "
                                "feed-forward")
        seen.add(at)
        path.append(at)
        if at == outs[0]:
            break
        if not succ[at]:
            raise WorkloadError(f"{where}: node {at!r} leads nowhere; the chain from {ins[0]!r} never reaches the "
                                f"Output {outs[0]!r}")
        at = succ[at][0]
    off = [k for k in graph.nodes if k not in seen]
    if off:
        raise WorkloadError(f"{where}: node {off[0]!r} is not on the path from {ins[0]!r} to {outs[0]!r}")
    return [k for k in path if not isinstance(graph.nodes[k], _identity())]


def _identity() -> tuple[type, ...]:
    """NIR's Identity node class (not exported at the top level of every nir release)."""
    from nir.ir import graph

    return (graph.Identity,) if hasattr(graph, "Identity") else ()


def _shape(node, key: str) -> tuple[int, ...] | None:
    t = getattr(node, f"{key}_type", None)
    v = next(iter(t.values()), None) if isinstance(t, dict) and t else None
    if v is None:
        return None
    try:
        return tuple(int(d) for d in np.asarray(v).reshape(-1))
    except (TypeError, ValueError):
        return None


def snn_from_nir(graph, inputs: dict[str, np.ndarray], *, labels: dict[str, np.ndarray] | None = None,
                 name: str = "nir", dt: float | None = None, reset: str | None = None,
                 roles: SplitRoles | None = None, source: Path | None = None) -> SNN:
    """Convert a NIR graph to an :class:`SNN` and replay its activity on ``inputs`` (split -> bool
    ``[samples, T, n_0]``, or ``[samples, T, *input_shape]``, flattened in C order).

    Args:
        graph: a ``nir.NIRGraph`` (module docstring for what it may hold).
        inputs: the input raster per split (at least one split).
        labels: split -> int ``[samples]`` class labels (optional).
        name: the network's name.
        dt: forward-Euler step, s (default: graph metadata ``dt``, else :data:`DEFAULT_DT_S`).
        reset: ``subtract`` | ``zero`` | ``none`` for every layer, overriding the graph.
        roles: split roles (default: :func:`default_roles` of the splits of ``inputs``).
        source: the file it came from (error messages start with it).

    Raises:
        WorkloadError: anything :func:`_chain`/:func:`_neuron` refuse, weights that are not matrices or do not
            chain, neuron parameters whose width differs from their affine layer, layers with different resets,
            an input raster of the wrong width, or any check of :func:`~hetsim.snn.network.make_snn`.
    """
    nir = _nir()
    where = str(source) if source is not None else name
    meta = _meta(graph)
    if dt is None:
        dt = meta.get("dt", DEFAULT_DT_S)
    try:
        dt = float(np.asarray(dt, dtype=np.float64).reshape(()))
    except (TypeError, ValueError):
        raise WorkloadError(f"{where}: dt = {dt!r}; the time step must be one number of seconds > 0") from None
    if not (np.isfinite(dt) and dt > 0):
        raise WorkloadError(f"{where}: dt = {dt!r}; the time step must be a finite number of seconds > 0")
    if reset is not None and reset not in RESETS:
        raise InputError(f"reset {reset!r}: allowed: {', '.join(RESETS)}")
    chain = _chain(graph, where)
    input_shape = _shape(graph.nodes[chain[0]], "input")
    body = chain[1:-1]
    while body and isinstance(graph.nodes[body[0]], nir.Flatten):
        body = body[1:]
    weights, biases, layers = [], [], []
    pending = None
    for i, key in enumerate(body):
        node = graph.nodes[key]
        kind = type(node).__name__
        if isinstance(node, nir.Affine | nir.Linear):
            if pending is not None:
                raise WorkloadError(f"{where}: {kind} node {key!r} follows {pending[0]!r} with no neuron layer "
                                    "between; hetsim's layers are one affine node then one neuron node")
            w = _real(f"{where}: {kind} node {key!r}", "weight", getattr(node, "weight", None))
            if w.ndim != 2 or 0 in w.shape:
                raise WorkloadError(f"{where}: {kind} node {key!r} has weight shape {w.shape}; hetsim reads "
                                    "matrices [outputs, inputs]")
            b = _real(f"{where}: Affine node {key!r}", "bias", getattr(node, "bias", None)) \
                if isinstance(node, nir.Affine) else np.zeros(w.shape[0])
            if b.size == 1:
                b = np.full(w.shape[0], b.reshape(()).item())
            if b.shape != (w.shape[0],):
                raise WorkloadError(f"{where}: Affine node {key!r} has bias shape {b.shape} for {w.shape[0]} "
                                    "outputs")
            if weights and w.shape[1] != weights[-1].shape[0]:
                raise WorkloadError(f"{where}: {kind} node {key!r} takes {w.shape[1]} inputs but the layer before "
                                    f"has {weights[-1].shape[0]} neurons")
            pending = (key, w, b)
        elif isinstance(node, nir.Flatten):
            raise WorkloadError(f"{where}: Flatten node {key!r} inside the network; hetsim reads a Flatten only "
                                "right after the Input")
        else:
            if pending is None:
                raise WorkloadError(f"{where}: {kind} node {key!r} has no Affine/Linear node before it; hetsim's "
                                    "layers are one affine node then one neuron node")
            _, w, b = pending
            nrn = _neuron(key, node, w.shape[0], dt, last=i == len(body) - 1, reset=reset)
            weights.append(w)
            biases.append(b)
            layers.append((key, nrn))
            pending = None
    if pending is not None:
        raise WorkloadError(f"{where}: the graph ends with {type(graph.nodes[pending[0]]).__name__} node "
                            f"{pending[0]!r}; hetsim's last layer is a neuron layer (LIF/IF/CubaLIF, or LI for a "
                            "membrane readout)")
    if not layers:
        raise WorkloadError(f"{where}: the graph has no Affine/Linear + neuron layer")
    resets = {k: nrn["reset"] for k, nrn in layers if nrn["reset"] is not None}
    if len(set(resets.values())) > 1:
        (k0, r0), *rest = resets.items()
        k1, r1 = next((k, r) for k, r in rest if r != r0)
        raise WorkloadError(f"{where}: node {k0!r} resets by {r0!r} but node {k1!r} by {r1!r}; hetsim's network "
                            "has one reset for every layer")
    n0 = int(weights[0].shape[1])
    if input_shape is not None and len(input_shape) and int(np.prod(input_shape)) != n0:
        raise WorkloadError(f"{where}: the Input node has shape {list(input_shape)} but the first layer takes {n0} "
                            "inputs")
    ws, bs, betas, thrs = [], [], [], []
    for (key, nrn), w, b in zip(layers, weights, biases, strict=True):
        g, leak = nrn["gain"], nrn["leak"]
        with np.errstate(over="ignore", invalid="ignore"):  # a value past float32's range: refused below
            if np.all(g == 1.0):  # no float64 detour: the weights are taken bit for bit
                ws.append(np.asarray(w, dtype=np.float32))
                bs.append((b + leak).astype(np.float32))
            else:
                ws.append((g[:, None] * np.asarray(w, dtype=np.float64)).astype(np.float32))
                bs.append((g * b + leak).astype(np.float32))
            betas.append(nrn["beta"].astype(np.float32))
            thrs.append(nrn["threshold"].astype(np.float32))
        for field, a in (("weights", ws[-1]), ("bias", bs[-1]), ("beta", betas[-1]), ("threshold", thrs[-1])):
            if not np.all(np.isfinite(a)):
                raise WorkloadError(f"{where}: layer {key!r}: a {field} value is beyond float32's range "
                                    f"(|x| > {NEVER_FIRES:.4g}); hetsim runs SNNs in float32")
    readout = meta.get("readout")
    if not layers[-1][1]["fires"]:
        readout = "membrane_sum"
    if readout is None:
        readout = "spike_count"
    if readout not in ("spike_count", "membrane_sum"):
        raise WorkloadError(f"{where}: metadata readout is {readout!r}; allowed: spike_count, membrane_sum")
    net_reset = next(iter(resets.values()), "zero")
    if not inputs:
        raise WorkloadError(f"{where}: no input raster given")
    longest = max((np.shape(x)[1] for x in inputs.values() if np.ndim(x) >= 2), default=None)
    bare = make_snn(ws, name=name, biases=bs, beta=betas, threshold=thrs, reset=net_reset, readout=readout,
                    source=source, timesteps=longest)  # T for the magnitude check, before the replay
    activity = {}
    for split, x in inputs.items():
        x = np.asarray(x)
        if x.ndim > 3 and int(np.prod(x.shape[2:])) == n0:
            x = x.reshape(*x.shape[:2], n0)
        x = _raster(x, f"spikes {split!r}", 0, n0, where)
        activity[split] = [x, *replay(bare, x).spikes]
    return make_snn(ws, name=name, biases=bs, beta=betas, threshold=thrs, reset=net_reset, readout=readout,
                    activity=activity, labels=labels, roles=roles or default_roles(activity), source=source)


def default_roles(splits) -> SplitRoles:
    """Split roles for the splits of an input-spikes file: ``plan`` is ``val`` if given, else ``test``, else the
    first split by name; ``fit`` is ``train`` if given, else the plan split; ``eval`` is ``test`` if given, else
    the plan split (a file with one raster uses it for all three)."""
    names = sorted(splits)
    plan = "val" if "val" in splits else ("test" if "test" in splits else names[0])
    return SplitRoles(fit="train" if "train" in splits else plan, plan=plan).resolve(splits)


def load_input_spikes(path: str | Path) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The input rasters (and labels) of a ``.npz``: every ``spk_<split>_L0`` with its ``labels_<split>`` (the
    layout of hetsim's activity files; other layers' rasters are ignored: they are replayed), else one raster
    under the key ``spikes`` (split ``input``; labels under ``labels``). Rasters are bool (or 0/1)
    ``[samples, T, inputs]``; they are checked against the network by :func:`snn_from_nir`.

    Raises:
        WorkloadError: a missing, folder or non-npz file, or one with neither kind of key.
    """
    p = Path(path)
    data = _load_npz(p, "spikes")
    inputs, labels = {}, {}
    for k in sorted(data):
        if m := _SPK0.match(k):
            inputs[m["split"]] = data[k]
            if f"labels_{m['split']}" in data:
                labels[m["split"]] = data[f"labels_{m['split']}"]
    if not inputs and "spikes" in data:
        inputs["input"] = data["spikes"]
        if "labels" in data:
            labels["input"] = data["labels"]
    if not inputs:
        keys = ", ".join(sorted(data)[:6]) or "none"
        raise WorkloadError(f"spikes {str(p)!r} holds no input raster (keys: {keys}); give bool [samples, T, "
                            "inputs] under 'spikes', or one spk_<split>_L0 per split")
    return inputs, labels


def load_nir(path: str | Path, spikes: str | Path | None, *, dt: float | None = None,
             reset: str | None = None) -> SNN:
    """Read a NIR graph and the input raster it runs on (:func:`load_input_spikes`), and replay the rest of the
    activity: an :class:`SNN` as :func:`hetsim.snn.network.load_snn` returns for a spec. The name is the
    graph's metadata ``name``, else the file's stem.

    Raises:
        WorkloadError: no ``spikes`` given (a NIR graph holds none), or anything :func:`read_nir_graph`,
            :func:`load_input_spikes` or :func:`snn_from_nir` refuse.
    """
    p = Path(path)
    if spikes is None:
        raise WorkloadError(f"{p}: a NIR graph holds no spikes; give the input raster [samples, T, inputs] "
                            "(hetsim run ... --spikes INPUT.npz; spikes= in Python)")
    graph = read_nir_graph(p)
    inputs, labels = load_input_spikes(spikes)
    name = _meta(graph).get("name")
    return snn_from_nir(graph, inputs, labels=labels, name=str(name) if name else p.stem, dt=dt, reset=reset,
                        source=p)


def snn_to_nir(snn: SNN, dt: float = DEFAULT_DT_S):
    """``snn`` as a NIR graph: ``input -> linear1 -> lif1 -> ... -> linearL -> lifL -> output``.

    Each affine layer is a ``Linear`` node (``Affine`` when it has a bias) holding the float32 weights as they
    are; each neuron layer a ``LIF`` with ``tau = dt / (1 - beta)``, ``r = tau / dt`` (unit gain),
    ``v_leak = 0``, ``v_threshold = threshold``, ``v_reset = 0``, or an ``IF`` (``r = 1``) when every
    ``beta`` of the layer is 1. hetsim's reset goes into each neuron node's metadata (``reset``) unless it is
    ``zero`` (NIR's own meaning); ``dt``, ``readout``, ``name`` and ``timesteps`` into the graph's.
    :func:`snn_from_nir` reads back the same float32 parameters.

    Raises:
        InputError: ``dt`` is not a finite positive number, or a layer mixes ``beta = 1`` with ``beta < 1``
            (neither one LIF nor one IF node).
    """
    nir = _nir()
    if not (np.isfinite(dt) and dt > 0):
        raise InputError(f"dt = {dt!r}; the time step must be a finite number of seconds > 0")
    nodes = {"input": nir.Input(input_type={"input": np.array([snn.layer_sizes[0]])})}
    edges, prev = [], "input"
    for i in range(snn.n_layers):
        w, b, beta, thr = snn.weights[i], snn.biases[i], snn.beta[i], snn.threshold[i]
        lin, neu = f"linear{i + 1}", f"lif{i + 1}"
        nodes[lin] = nir.Affine(weight=w, bias=b) if np.any(b) else nir.Linear(weight=w)
        meta = {} if snn.reset == "zero" else {"reset": snn.reset}
        zeros = np.zeros(len(beta), np.float32)
        if np.all(beta == 1):
            nodes[neu] = nir.IF(r=np.ones(len(beta), np.float32), v_threshold=thr.copy(), v_reset=zeros,
                                metadata=meta)
        elif np.any(beta == 1):
            raise InputError(f"{snn.name}: layer {i + 1} mixes beta = 1 with beta < 1; NIR has no one node for it")
        else:
            tau = dt / (1.0 - beta.astype(np.float64))
            nodes[neu] = nir.LIF(tau=tau, r=tau / dt, v_leak=np.zeros(len(beta)), v_threshold=thr.copy(),
                                 v_reset=zeros, metadata=meta)
        edges += [(prev, lin), (lin, neu)]
        prev = neu
    nodes["output"] = nir.Output(output_type={"output": np.array([snn.layer_sizes[-1]])})
    edges.append((prev, "output"))
    meta = {"dt": float(dt), "readout": snn.readout, "name": snn.name, "timesteps": int(snn.timesteps),
            "written_by": "hetsim export-nir"}
    return nir.NIRGraph(nodes=nodes, edges=edges, metadata=meta, type_check=False)


def save_nir(snn: SNN, path: str | Path, force: bool = False, dt: float = DEFAULT_DT_S) -> Path:
    """Write ``snn`` as a ``.nir`` file (:func:`snn_to_nir`), atomically; the graph is read back first and must
    give the same float32 weights, biases, ``beta`` and thresholds, and the same reset and readout.

    Raises:
        OutputExistsError: ``path`` exists and ``force`` is false.
        InputError: see :func:`snn_to_nir`; the folder cannot be written.
        HetsimError: the graph does not read back to the same network (a bug).
    """
    from hetsim.files import atomic_write_bytes, make_dirs

    nir = _nir()
    p = Path(path)
    if p.exists() and not force:
        raise OutputExistsError(f"{str(p)!r} exists; pass --force to replace it")
    graph = snn_to_nir(snn, dt)
    buf = io.BytesIO()
    nir.write(buf, graph)
    data = buf.getvalue()
    back = nir.read(io.BytesIO(data), type_check=False)
    x = {"check": np.zeros((1, 1, snn.layer_sizes[0]), bool)}
    got = snn_from_nir(back, x, name=snn.name)
    same = (got.reset == snn.reset and got.readout == snn.readout and all(
        np.array_equal(a, b) for field in ("weights", "biases", "beta", "threshold")
        for a, b in zip(getattr(got, field), getattr(snn, field), strict=True)))
    if not same:
        raise HetsimError(f"{snn.name}: the NIR graph does not read back to the same network (a bug)")
    make_dirs(p.parent if str(p.parent) else Path("."), p)
    return atomic_write_bytes(p, data)

