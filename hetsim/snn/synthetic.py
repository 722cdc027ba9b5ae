"""Seeded synthetic spiking networks with controlled spike density and clustering, for design-space sweeps.

SpikeDuet shows that the accelerator's cost depends on how many neurons fire per timestep *and* on
how clustered (adjacent in neuron index) they are. :func:`synthetic_snn` builds a feed-forward LIF network
(same semantics as :mod:`hetsim.snn.network`) whose recorded rasters have a requested density per layer and a
tunable amount of group structure:

* **Groups.** The neurons of every layer are cut into contiguous groups of about ``group_size`` neurons
  (default ``round(sqrt(n))``). ``clustering = c`` in ``[0, 1]`` is the pairwise correlation inside a group.
* **Input (layer 0).** Per sample, timestep and input group a latent ``z ~ Bernoulli(p0)``; each channel copies
  its group's latent with probability ``sqrt(c)`` and otherwise draws its own ``Bernoulli(p0)``. The marginal
  density is exactly ``p0`` and two channels of a group are correlated by ``c``: ``c = 0`` gives independent
  channels, ``c = 1`` channels that fire in contiguous groups.
* **Weights.** ``W_l = g_l * (sqrt(c) * B[group(i), group(j)] + sqrt(1 - c) * N[i, j] + mu_l) / sqrt(n_in * p_in)``
  with ``B`` and ``N`` standard normal: the rows of two neurons of a group are correlated by ``c`` (at
  ``c = 1`` they are identical, so the neurons receive the same current and fire together). The output layer's
  rows are not grouped (one group per class) so that its neurons stay distinct.
* **Shuffle.** With ``shuffle`` every hidden layer is randomly permuted (rows of ``W_l`` and columns of
  ``W_{l+1}``, which preserves the function), so the natural order is unclustered, as in trained networks, and a
  reorderer has the groups to find. The permutations are drawn even when ``shuffle`` is false, so both settings
  give the same network up to the neuron order.
* **Density.** The gain ``g_l`` is tuned per layer, from the first to the last, by a bracketed search in
  ``log g`` on the LIF replay of the fit split until the layer's density is within 2 % of its target. The
  weights have zero mean (``mu_l = 0``) unless the target is above what a balanced layer can reach (about 0.5);
  then ``mu_l`` is raised (0.25, 0.5, 1, 2, 4, 8 weight standard deviations) until it is reachable.

Every split's rasters are produced by :func:`~hetsim.snn.network.replay` of the final network, so they are
exactly what it computes; the labels are the replay's readout prediction.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from numbers import Integral, Real

import numpy as np

from hetsim.errors import WorkloadError
from hetsim.snn.network import SNN, SplitRoles, make_snn, replay

#: relative density error at which the gain search stops, and the largest one accepted at the end
_STOP_REL = 0.02
_ACCEPT_REL = 0.20
#: weight offsets (in weight standard deviations) tried in turn when a target density is out of reach
_OFFSETS = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
_MAX_LOG2_GAIN = 16.0
_MIN_LOG2_GAIN = -40.0


def _groups(n: int, group_size: int | None) -> np.ndarray:
    """Group index of each of ``n`` neurons: int ``[n]``, contiguous groups of about ``group_size``."""
    g = max(1, round(math.sqrt(n))) if group_size is None else min(group_size, n)
    k = max(1, round(n / g))
    return (np.arange(n) * k) // n


def _check_int(value, what: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral) or value < low:
        raise WorkloadError(f"{what} must be an integer >= {low}, got {value!r}")
    return int(value)


def _check_real(value, what: str, low: float, high: float, closed: bool) -> float:
    ok = isinstance(value, Real) and not isinstance(value, bool)
    v = float(value) if ok else math.nan
    inside = (low <= v <= high) if closed else (low < v < high)
    if not inside:
        span = f"[{low:g}, {high:g}]" if closed else f"({low:g}, {high:g})"
        raise WorkloadError(f"{what} must be a number in {span}, got {value!r}")
    return v


def _validate(layers, timesteps, density, clustering, samples, splits, beta, threshold, group_size):
    if isinstance(layers, np.ndarray) and layers.ndim == 1:
        layers = layers.tolist()
    if isinstance(density, np.ndarray) and density.ndim == 1:
        density = density.tolist()
    if isinstance(layers, str | bytes) or not isinstance(layers, Sequence) or len(layers) < 2:
        raise WorkloadError(f"layers must be a list of at least 2 positive widths (input, then one per LIF "
                            f"layer), got {layers!r}")
    sizes = [_check_int(n, f"layers[{i}]", 1) for i, n in enumerate(layers)]
    T = _check_int(timesteps, "timesteps", 1)
    if isinstance(density, Sequence) and not isinstance(density, str | bytes):
        if len(density) != len(sizes):
            raise WorkloadError(f"density has {len(density)} entries but layers has {len(sizes)}: give one "
                                "value per layer (input included) or a single number")
        dens = [_check_real(d, f"density[{i}]", 0.0, 1.0, closed=False) for i, d in enumerate(density)]
    else:
        dens = [_check_real(density, "density", 0.0, 1.0, closed=False)] * len(sizes)
    c = _check_real(clustering, "clustering", 0.0, 1.0, closed=True)
    S = _check_int(samples, "samples", 1)
    if isinstance(splits, str | bytes) or not isinstance(splits, Sequence) or not splits:
        raise WorkloadError(f"splits must be a non-empty list of split names, got {splits!r}")
    for s in splits:
        if not isinstance(s, str) or not re.fullmatch(r"[A-Za-z0-9]+", s):
            raise WorkloadError(f"split names must be non-empty and alphanumeric (they become npz keys "
                                f"spk_<split>_L<l>), got {s!r}")
    if len(set(splits)) != len(splits):
        raise WorkloadError(f"splits must be distinct, got {list(splits)!r}")
    b = _check_real(beta, "beta", 0.0, 1.0, closed=True)
    if b == 0.0:
        raise WorkloadError(f"beta must be a number in (0, 1], got {beta!r}")
    thr = _check_real(threshold, "threshold", 0.0, math.inf, closed=False)
    gs = None if group_size is None else _check_int(group_size, "group_size", 1)
    from hetsim.snn.limits import check_synthetic_size

    check_synthetic_size(sizes, T, S, len(splits))  # before any array is allocated
    return sizes, T, dens, c, S, list(splits), b, thr, gs


def _roles(splits: list[str]) -> SplitRoles:
    fit = "train" if "train" in splits else splits[0]
    plan = "val" if "val" in splits else (splits[1] if len(splits) > 1 else fit)
    ev = "test" if "test" in splits else (splits[2] if len(splits) > 2 else plan)
    return SplitRoles(fit=fit, plan=plan, eval=ev)


def _input_spikes(rng: np.random.Generator, S: int, T: int, n: int, p: float, c: float,
                  group_size: int | None) -> np.ndarray:
    """Input rasters bool ``[S, T, n]``: Bernoulli(``p``) channels correlated by ``c`` inside each group."""
    grp = _groups(n, group_size)
    latent = rng.random((S, T, int(grp[-1]) + 1)) < p
    copy = rng.random((S, T, n)) < math.sqrt(c)
    own = rng.random((S, T, n)) < p
    return np.where(copy, latent[..., grp], own)


class _LayerTuner:
    """Density of one LIF layer as a function of its gain, on a fixed input raster (the fit split).

    The affine input of the base weights is computed once (one matrix product over every sample and timestep,
    float32 ``[T, samples, n_out]``); a gain only scales it, so each density evaluation is an element-wise LIF
    loop. This equals the replay of the scaled float32 weights up to rounding (a spike exactly at the threshold
    may differ), so the caller checks the tuned layer with :func:`~hetsim.snn.network.replay`.
    """

    def __init__(self, base: np.ndarray, inputs: np.ndarray, beta: float, threshold: float):
        self.base, self.beta, self.threshold = base, np.float32(beta), np.float32(threshold)
        S, T, n_in = inputs.shape
        x = inputs.transpose(1, 0, 2).reshape(T * S, n_in).astype(np.float32)
        self.current = (x @ base.T.astype(np.float32)).reshape(T, S, base.shape[0])

    def weights(self, log2_gain: float) -> np.ndarray:
        return (self.base * 2.0 ** log2_gain).astype(np.float32)

    def density(self, log2_gain: float) -> float:
        g = np.float32(2.0 ** log2_gain)
        u = np.zeros(self.current.shape[1:], np.float32)
        s = np.zeros_like(u)
        count = 0
        for cur in self.current:
            u = self.beta * u + g * cur - self.threshold * s
            fired = u > self.threshold
            count += int(np.count_nonzero(fired))
            s = fired.astype(np.float32)
        return count / self.current.size


def _tune(make_base, inputs: np.ndarray, target: float, beta: float,
          threshold: float) -> tuple[np.ndarray, float, float]:
    """Find the offset and gain that give ``target`` density.

    ``make_base(mu)`` returns the float64 base matrix for weight offset ``mu``. Returns the float32 weights
    closest to the target, their estimated density, and the highest density seen (for the error message).
    """
    best = (math.inf, None, 0.0)  # (relative error, weights, density)

    def note(tuner, x, d):
        nonlocal best
        err = abs(d / target - 1.0)
        if err < best[0]:
            best = (err, tuner.weights(x), d)
        return err <= _STOP_REL

    d_top = 0.0
    for mu in _OFFSETS:
        tuner = _LayerTuner(make_base(mu), inputs, beta, threshold)
        x = 0.0
        d = tuner.density(x)
        if note(tuner, x, d):
            return best[1], best[2], best[2]
        step = 2.0 if d < target else -2.0
        lo = hi = None  # (log2 gain, density) with density below / above the target
        if d < target:
            lo = (x, d)
        else:
            hi = (x, d)
        while lo is None or hi is None:
            x += step
            if not _MIN_LOG2_GAIN <= x <= _MAX_LOG2_GAIN:
                break
            d = tuner.density(x)
            if note(tuner, x, d):
                return best[1], best[2], best[2]
            if d < target:
                lo = (x, d)
            else:
                hi = (x, d)
        if lo is None or hi is None:
            d_top = max(d_top, d)
            if step > 0:
                continue  # out of reach from below: a larger excitatory offset
            break
        # Illinois regula falsi on density(log2 gain) between the bracket ends (lo below, hi above the target)
        kept = 0  # +1: lo kept last time, -1: hi kept last time
        for _ in range(40):
            fl, fh = lo[1] - target, hi[1] - target
            x = (lo[0] * fh - hi[0] * fl) / (fh - fl) if fh != fl else 0.5 * (lo[0] + hi[0])
            if not min(lo[0], hi[0]) < x < max(lo[0], hi[0]):
                x = 0.5 * (lo[0] + hi[0])
            d = tuner.density(x)
            if note(tuner, x, d) or abs(hi[0] - lo[0]) < 1e-6:
                break
            if d < target:
                lo = (x, d)
                if kept == -1:  # hi retained twice: halve its residual so the next step moves it
                    hi = (hi[0], target + 0.5 * (hi[1] - target))
                kept = -1
            else:
                hi = (x, d)
                if kept == 1:
                    lo = (lo[0], target + 0.5 * (lo[1] - target))
                kept = 1
        break
    return best[1], best[2], max(d_top, best[2])


def synthetic_snn(layers: list[int], timesteps: int, *, density: float | list[float] = 0.1,
                  clustering: float = 0.5, samples: int = 100, splits=("train", "val", "test"), beta=0.9,
                  threshold=1.0, shuffle: bool = True, seed: int = 0, name: str | None = None,
                  group_size: int | None = None) -> SNN:
    """A random feed-forward LIF network with recorded activity of a given density and clustering.

    See the module docstring for the model. Same arguments, same network and rasters (one
    ``numpy.random.default_rng(seed)``; draws in a fixed order: input spikes split by split, then per layer the
    permutation, the block matrix and the noise matrix).

    Args:
        layers: ``[n_0, n_1, ..., n_L]``, the input width then the width of every LIF layer (>= 2 entries, >= 1).
        timesteps: T (>= 1).
        density: target spike density (spikes per neuron and timestep, in (0, 1)): one value for every layer or
            one per layer, input included (``len == len(layers)``). Layer 0's is the Bernoulli rate of the input;
            the others are met on the fit split within 2 % relative (a :class:`WorkloadError` when not within
            20 %); the other splits follow the same statistics but are not tuned.
        clustering: in [0, 1], pairwise correlation of input channels and of weight rows inside a group.
        samples: samples per split (>= 1).
        splits: split names (distinct, alphanumeric); the rasters are ``[samples, T, n_l]`` per split. Roles:
            fit = ``train``, plan = ``val``, eval = ``test`` when present, otherwise the 1st, 2nd, 3rd split.
        beta, threshold: LIF decay in (0, 1] and firing threshold > 0, the same for every neuron.
        shuffle: randomly permute the hidden neurons (so the natural order is unclustered).
        seed: seed of the random generator (an integer >= 0).
        name: network name (default ``synthetic_<layers>_T<T>_c<clustering>_s<seed>``).
        group_size: neurons per group in every grouped layer (default ``round(sqrt(n_l))`` per layer).

    Returns:
        An :class:`SNN` with float32 weights, zero biases, ``reset = subtract``, ``readout = spike_count``,
        rasters bool ``[samples, T, n_l]`` for ``l = 0..L`` for every split and labels int ``[samples]``.

    Raises:
        WorkloadError: an argument out of range (the message names it and the allowed range), or a target
            density that the layer cannot reach from its input.
    """
    sizes, T, dens, c, S, splits, beta, threshold, group_size = _validate(
        layers, timesteps, density, clustering, samples, splits, beta, threshold, group_size)
    seed = _check_int(seed, "seed", 0)
    rng = np.random.default_rng(seed)
    roles = _roles(splits)
    name = name or f"synthetic_{'-'.join(map(str, sizes))}_T{T}_c{c:g}_s{seed}"
    inputs = {s: _input_spikes(rng, S, T, sizes[0], dens[0], c, group_size) for s in splits}
    L = len(sizes) - 1
    weights = []
    fit_in = inputs[roles.fit]
    perm_prev = np.arange(sizes[0])
    for li in range(1, L + 1):
        n_in, n_out = sizes[li - 1], sizes[li]
        last = li == L
        perm = np.arange(n_out) if last else rng.permutation(n_out)
        g_in = _groups(n_in, group_size)
        g_out = np.arange(n_out) if last else _groups(n_out, group_size)
        block = rng.standard_normal((int(g_out[-1]) + 1, int(g_in[-1]) + 1))
        noise = rng.standard_normal((n_out, n_in))
        structured = math.sqrt(c) * block[np.ix_(g_out, g_in)] + math.sqrt(1.0 - c) * noise
        if li > 1:
            structured = structured[:, perm_prev]  # the previous layer's neurons are in shuffled order
        if shuffle and not last:
            structured = structured[perm]
        p_in = float(fit_in.mean())
        scale = 1.0 / math.sqrt(n_in * (p_in if p_in > 0 else 1.0))

        def make_base(mu, structured=structured, scale=scale):
            return (structured + mu) * scale

        W, _, d_top = _tune(make_base, fit_in, dens[li], beta, threshold)
        out = replay(make_snn([W], beta=beta, threshold=threshold), fit_in).spikes[0]
        got = float(out.mean())
        if abs(got / dens[li] - 1.0) > _ACCEPT_REL:
            raise WorkloadError(f"layer {li}: density {dens[li]:g} is out of reach (closest {got:.4g}, highest "
                                f"{max(d_top, got):.4g}) from an input of density {p_in:.4g} on {S} samples x "
                                f"{T} timesteps; lower density[{li}] or raise density[{li - 1}]")
        weights.append(W)
        fit_in = out
        perm_prev = perm if shuffle else np.arange(n_out)
    net = make_snn(weights, name=name, beta=beta, threshold=threshold, roles=roles)
    activity, labels = {}, {}
    for s in splits:
        r = replay(net, inputs[s])
        activity[s] = [inputs[s]] + r.spikes
        labels[s] = r.prediction.astype(np.int64)
    return make_snn(weights, name=name, beta=beta, threshold=threshold, activity=activity, labels=labels,
                    roles=roles)
