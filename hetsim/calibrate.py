"""``hetsim calibrate``: fit the ``cpu`` roofline's parameters to measured per-op profiles (``hetsim profile``).

The model fitted is the ``kind: cpu`` roofline of :class:`hetsim.devices.cpu.CpuDevice` (hetsim's own host
model, ``docs/models.md``), per op ``v``::

    T_v = op_overhead + max(T_compute, bytes_v / mem_bandwidth)
    T_compute = macs_v / (clock * macs_per_cycle[bits_v])      if macs_v > 0
              = n_out_v / (clock * elementwise_per_cycle)       otherwise
    bytes_v   = hetsim.devices.cpu.roofline_bytes(v)            (the device's own count, a Gather's table read capped)

with the clock fixed (``clock_ghz``: the rates are per cycle) and the parameters ``macs_per_cycle[b]`` for every
bit width ``b`` the profiled GEMM ops use, ``elementwise_per_cycle``, ``mem_bandwidth_gb_s`` and
``op_overhead_us`` fitted by ``scipy.optimize.least_squares`` (trust-region reflective, bounded, on the
logarithms of the parameters so they stay positive) to the logarithms of the measured medians: every op counts
by its relative error, whatever its size. Ops of a type in the device's ``free_ops`` (shape-only ops) and ops
the profile did not time are left out.

The max() makes the cost piecewise, with several minima (a rate pushed so high that its ops all turn
memory-bound is one), so the fit runs from ``N_STARTS`` deterministic starting points (the centre of a plausible
box and a seeded scrambled Sobol draw in it, ``scipy.stats.qmc``) and keeps the lowest cost; the report says how
many starts ended there and warns when only one did or a parameter sits at the fit's bound.

What the data determine, per parameter: a parameter in the numerical null space of the Jacobian at the optimum
(no op's latency depends on it, or only in a combination the others can undo) is **not determined by these
profiles**; so is every parameter when there are no more ops than parameters (no residual variance left). For
the others the interval is the **profile-likelihood** interval (the "profile t" of Bates & Watts, *Nonlinear
Regression Analysis and Its Applications*, Wiley 1988, ch. 6): the parameter is moved, the others re-fitted,
until the residual sum of squares has grown by ``s^2 t(n-p)^2`` (``s^2`` the residual variance, ``t`` Student's
quantile at the chosen level, 95 % by default): unlike the covariance ``s^2 (J^T J)^-1`` it follows the max()'s
kinks. A parameter whose profile reaches the fit's bound on one side is also not determined, and the report
gives the one-sided bound the data do give (e.g. only ``>= 1.8`` for an element-wise rate whose ops are all
memory-bound). Also reported: the per-op error (median and 90th percentile of ``|pred / meas - 1|``), and the
**leave-one-model-out** error: the fit repeated without each profile's model, that model's all-host latency
(the sum over its ops, one core) predicted and compared with its measured sum.
The result is written as a platform fragment (a ``devices:`` entry) to drop into a platform YAML.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from pathlib import Path

from hetsim.errors import InputError
from hetsim.input_files import MAX_TEXT_TABLE_BYTES, check_input_file, csv_rows, read_input_text

_DEFAULT_CLOCK_GHZ = 1.0


@dataclass
class OpSample:
    """One measured op: its features for the roofline and the measured median latency (s)."""

    model: str
    op: str
    op_type: str
    macs: float
    bits: int
    n_out: float
    nbytes: float
    latency_s: float


@dataclass
class Fit:
    """A fitted roofline: parameters, what the data determine of them, and the errors.

    ``interval[name]`` is ``(lo, hi)`` in the parameter's unit, the profile-likelihood interval at ``level``;
    a parameter in ``undetermined`` (name -> why) has no interval: ``lo`` or ``hi`` is then a one-sided bound
    the data give, or ``None``. ``warnings`` are the optimiser's (starts ending at different costs, a
    parameter at the fit's bound); ``start_rss`` the residual sum of squares each start ended at, sorted."""

    clock_ghz: float
    macs_per_cycle: dict[int, float]
    elementwise_per_cycle: float
    mem_bandwidth_gb_s: float
    op_overhead_us: float
    op_error_median: float = math.nan
    op_error_p90: float = math.nan
    n_ops: int = 0
    models: list[str] = field(default_factory=list)
    lomo: dict[str, dict] = field(default_factory=dict)  # model -> {measured_s, predicted_s, error}
    level: float = 0.95
    values: dict[str, float] = field(default_factory=dict)
    interval: dict[str, tuple[float | None, float | None]] = field(default_factory=dict)
    undetermined: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    start_rss: list[float] = field(default_factory=list)

    def predict(self, s: OpSample) -> float:
        """The roofline latency (s) of one op under these parameters."""
        return _predict_one(self, s.macs, s.bits, s.n_out, s.nbytes)

    def starts_line(self) -> str:
        """One line: how many of the optimiser's starts ended at the lowest cost, and where the others did."""
        if not self.start_rss:
            return "optimiser: no starts recorded"
        best = self.start_rss[0]
        same = sum(1 for c in self.start_rss if c <= best * _SAME_COST + 1e-15)
        line = f"optimiser: {same} of {len(self.start_rss)} starts ended at the lowest cost"
        if same < len(self.start_rss):
            line += (f", the others at {self.start_rss[same] / max(best, 1e-300):.3g}-"
                     f"{self.start_rss[-1] / max(best, 1e-300):.3g} times it (other minima)")
        return line

    def describe(self, name: str) -> str:
        """What the data say of parameter ``name``: its interval, or why it is not determined."""
        if name in self.undetermined:
            return self.undetermined[name]
        if name not in self.interval:
            return "interval not computed"
        lo, hi = self.interval[name]
        v = self.values[name]
        return f"{self.level:.0%} interval {lo:.4g} - {hi:.4g} ({lo / v - 1:+.1%}, {hi / v - 1:+.1%})"

    def fragment(self, name: str = "host", sources: list[str] | None = None) -> str:
        """The platform fragment (YAML text): a ``devices:`` entry with the fitted roofline."""
        lines = [f"# Fitted by hetsim calibrate from {len(self.models)} profile(s) ({self.n_ops} ops): "
                 + ", ".join(self.models),
                 "# cpu roofline (hetsim/devices/cpu.py), least squares on log latencies from "
                 f"{len(self.start_rss)} starts; intervals: profile likelihood.",
                 f"# per-op error |pred/meas - 1|: median {self.op_error_median:.1%}, 90th percentile "
                 f"{self.op_error_p90:.1%}",
                 ]
        lines += [f"# {self.starts_line()}"] + [f"# warning: {w}" for w in self.warnings]
        if self.lomo:
            lines.append("# leave-one-model-out, all-host latency (sum of ops): " + ", ".join(
                f"{m} {v['error']:+.1%}" for m, v in self.lomo.items()))
        if sources:
            lines.append("# measured on: " + "; ".join(sources))
        lines += ["devices:", f"  {name}:", "    kind: cpu", "    cores: 1", "    latency_model: roofline",
                  f"    clock_ghz: {self.clock_ghz:.6g}                # fixed, not fitted (rates are per cycle)",
                  "    macs_per_cycle:"]
        for b, v in sorted(self.macs_per_cycle.items()):
            lines.append(f"      {b}: {v:.6g}                # {self.describe(f'macs_per_cycle[{b}]')}")
        for key in ("elementwise_per_cycle", "mem_bandwidth_gb_s", "op_overhead_us"):
            lines.append(f"    {key}: {getattr(self, key):.6g}   # {self.describe(key)}")
        lines += ["    active_w: 5.0                 # assumed (not fitted: profiles hold no power)",
                  "    idle_w: 1.0                   # assumed"]
        return "\n".join(lines) + "\n"


def _predict_one(p: Fit, macs: float, bits: int, n_out: float, nbytes: float) -> float:
    clock = p.clock_ghz * 1e9
    if macs > 0:
        widths = sorted(p.macs_per_cycle)
        wider = [w for w in widths if w >= bits]
        w = wider[0] if wider else widths[-1]
        t_c = macs / (clock * p.macs_per_cycle[w])
    else:
        t_c = n_out / (clock * p.elementwise_per_cycle)
    return p.op_overhead_us * 1e-6 + max(t_c, nbytes / (p.mem_bandwidth_gb_s * 1e9))


# ------------------------------------------------------------------------------------------------ reading


def read_profile(csv_path: Path) -> dict[str, float]:
    """``op -> latency_s`` of a ``hetsim profile`` CSV, measured rows only (``source`` = measured when present).

    Raises:
        InputError: unreadable, or without the ``op`` and ``latency_s`` columns, or a bad number.
    """
    text = read_input_text(csv_path, "profile", MAX_TEXT_TABLE_BYTES, InputError)
    rows = csv_rows((line for line in text.splitlines() if line.strip() and not line.startswith("#")), str(csv_path),
                    InputError, None, csv.DictReader)
    if not rows or "op" not in rows[0] or "latency_s" not in rows[0]:
        raise InputError(f"{csv_path}: not a hetsim profile (needs columns op, latency_s)")
    out = {}
    for i, r in enumerate(rows, start=2):
        if r.get("source", "measured") not in ("measured", None, ""):
            continue
        try:
            v = float(r["latency_s"])
        except (TypeError, ValueError):
            raise InputError(f"{csv_path}:{i}: latency_s {r['latency_s']!r} is not a number") from None
        if not (math.isfinite(v) and v >= 0):
            raise InputError(f"{csv_path}:{i}: latency_s must be a finite number >= 0, got {r['latency_s']}")
        out[r["op"]] = v
    return out


def find_model(csv_path: Path, model_dirs: list[Path]) -> Path:
    """The ONNX model a profile was measured on: the ``model`` of its ``NAME.meta.json`` (or ``NAME.onnx``)
    looked up in ``model_dirs``.

    Raises:
        InputError: not found.
    """
    from hetsim.profile import read_profile_meta

    try:
        meta = read_profile_meta(csv_path)
    except Exception:  # no or unreadable meta: fall back on the file name
        meta = {}
    name = str(meta.get("model") or f"{Path(csv_path).stem}.onnx")
    name = Path(name).name
    for d in model_dirs:
        if (Path(d) / name).is_file():
            return Path(d) / name
    raise InputError(f"{csv_path}: its model {name} is in none of {', '.join(map(str, model_dirs))}; give "
                     f"PROFILE.csv=MODEL.onnx or --models DIR")


def samples(csv_path: Path, model_path: Path, free_ops: frozenset[str] | None = None) -> list[OpSample]:
    """The measured ops of one profile with their roofline features from the model's operator graph."""
    from hetsim.devices.cpu import roofline_bytes
    from hetsim.workload.frontends import load_workload

    free_ops = free_ops or frozenset()  # the cpu device's free_ops default is empty
    meas = read_profile(csv_path)
    wl = load_workload(model_path)
    out = []
    for op in wl.ops.values():
        t = meas.get(op.name)
        if t is None or t <= 0 or op.op_type in free_ops:
            continue
        out.append(OpSample(model_path.stem, op.name, op.op_type, float(op.macs), int(op.bits), float(op.n_out),
                            float(roofline_bytes(op)), t))
    if not out:
        raise InputError(f"{csv_path}: no measured op of the profile matches an op of {model_path}")
    return out


# ------------------------------------------------------------------------------------------------ fitting


def _names(widths) -> list[str]:
    return [f"macs_per_cycle[{b}]" for b in widths] + ["elementwise_per_cycle", "mem_bandwidth_gb_s", "op_overhead_us"]


class _Problem:
    """The least-squares problem on ``theta = log(parameters)``: residuals ``log T_v(theta) - log meas_v`` and
    their Jacobian (analytic: ``d log T / d log p`` is minus the share of ``T`` the parameter's term holds)."""

    def __init__(self, data: list[OpSample], clock_ghz: float):
        import numpy as np

        self.widths = sorted({s.bits for s in data if s.macs > 0}) or [32]
        self.names = _names(self.widths)
        nw = self.nw = len(self.widths)
        macs = np.array([s.macs for s in data])
        self.is_mac = macs > 0
        self.work = np.where(self.is_mac, macs, np.array([s.n_out for s in data])) / (clock_ghz * 1e9)
        self.nbytes = np.array([s.nbytes for s in data]) / 1e9
        self.y = np.log(np.array([s.latency_s for s in data]))
        # each op's MAC rate is the one of the narrowest fitted width >= its bits (as CpuDevice._mac_rate)
        col = np.array([next((i for i, w in enumerate(self.widths) if w >= s.bits), nw - 1) for s in data])
        self.rate_idx = np.where(self.is_mac, col, nw)
        self.lo = np.log(np.array([1e-3] * nw + [1e-3, 1e-2, 1e-4]))
        self.hi = np.log(np.array([1e5] * nw + [1e5, 1e4, 1e5]))

    def _terms(self, theta):
        import numpy as np

        p = np.exp(theta)
        t_c = self.work / p[self.rate_idx]
        t_m = self.nbytes / p[self.nw + 1]
        t_o = p[self.nw + 2] * 1e-6
        return t_c, t_m, t_o, t_o + np.maximum(t_c, t_m)

    def resid(self, theta):
        import numpy as np

        return np.log(self._terms(theta)[3]) - self.y

    def jac(self, theta):
        import numpy as np

        t_c, t_m, t_o, t = self._terms(theta)
        J = np.zeros((len(t), len(theta)))
        rows = np.arange(len(t))
        compute = t_c >= t_m
        J[rows[compute], self.rate_idx[compute]] = -t_c[compute] / t[compute]
        J[~compute, self.nw + 1] = -t_m[~compute] / t[~compute]
        J[:, self.nw + 2] = t_o / t
        return J

    def solve(self, start, fixed: int | None = None, value: float = 0.0):
        """``least_squares`` from ``start``; with ``fixed``, that parameter held at ``value`` (a profile point).
        Returns ``(theta, rss)``."""
        import numpy as np
        from scipy.optimize import least_squares

        free = np.ones(len(self.lo), bool)
        if fixed is not None:
            free[fixed] = False

        def full(phi):
            th = np.empty(len(self.lo))
            th[free] = phi
            if fixed is not None:
                th[fixed] = value
            return th

        lo, hi = self.lo[free], self.hi[free]
        r = least_squares(lambda phi: self.resid(full(phi)), np.clip(start[free], lo + 1e-9, hi - 1e-9),
                          jac=lambda phi: self.jac(full(phi))[:, free], bounds=(lo, hi), method="trf",
                          x_scale="jac")
        return full(r.x), 2 * float(r.cost)


#: the plausible box the multi-start draws from (log-uniform; ours): rates 0.05-500 per cycle, 0.5-500 GB/s,
#: 0.05-100 us of overhead; the fit's bounds are wider (1e-3-1e5 per cycle, 1e-2-1e4 GB/s, 1e-4-1e5 us)
_START_BOX = ((0.05, 500.0), (0.05, 500.0), (0.5, 500.0), (0.05, 100.0))
N_STARTS = 9
#: a median per-op error above this is a model that misfits, not noise (ours: repeated profiles of one machine
#: agree to a few per cent)
_MISFIT = 0.10
#: a start "reached the lowest cost" when its residual sum of squares is within this factor of the best (ours)
_SAME_COST = 1.01


def _starts(nw: int):
    """``N_STARTS`` deterministic starting points: the box's log-centre and 8 points of a scrambled Sobol
    sequence (``scipy.stats.qmc``, seed 0) in ``_START_BOX``."""
    import numpy as np
    from scipy.stats import qmc

    box = [_START_BOX[0]] * nw + list(_START_BOX[1:])
    lo = np.log([b[0] for b in box])
    hi = np.log([b[1] for b in box])
    u = qmc.Sobol(len(box), scramble=True, seed=0).random(N_STARTS - 1)
    return [(lo + hi) / 2] + [lo + (hi - lo) * row for row in u]


def _t_quantile(level: float, dof: int) -> float:
    from scipy.stats import t

    return float(t.ppf(0.5 + level / 2, dof))


def _jacobian_null(J) -> list[bool]:
    """Per parameter: does it lie in the Jacobian's (numerical) null space, i.e. can some change of it be
    undone by the others, or by nothing at all, without moving any residual? Singular values below 1e-6 of the
    largest count as zero (ours); a parameter whose squared loading on their right singular vectors exceeds
    0.01 (ours) is in the null space."""
    import numpy as np

    _, s, vt = np.linalg.svd(J, full_matrices=True)
    s_full = np.zeros(vt.shape[0])
    s_full[:len(s)] = s
    null = vt[s_full <= 1e-6 * max(s_full.max(), 1e-300)]
    load = (null ** 2).sum(axis=0) if len(null) else np.zeros(vt.shape[0])
    return [bool(x > 0.01) for x in load]


def _profile_side(prob, theta, k, sign, rss_min, d_rss, step):
    """How far ``theta[k]`` moves in direction ``sign`` before the profile RSS (the others re-fitted) exceeds
    ``rss_min + d_rss``: the distance in log units, or ``None`` when the bound is reached first. Also returns
    the lowest profile RSS seen (below ``rss_min`` means the fit was not at its minimum)."""
    from scipy.optimize import brentq

    limit = (prob.hi[k] - theta[k]) if sign > 0 else (theta[k] - prob.lo[k])
    warm = {0.0: theta}
    lowest = [rss_min]

    def g(d):
        near = warm[min(warm, key=lambda x: abs(x - d))]
        th, rss = prob.solve(near, k, theta[k] + sign * d)
        warm[d] = th
        lowest[0] = min(lowest[0], rss)
        return rss - rss_min - d_rss

    if limit <= 1e-9:
        return None, lowest[0]
    d = min(max(step, 1e-4), limit)
    while g(d) < 0:
        if d >= limit:
            return None, lowest[0]
        d = min(d * 4, limit)
    a = max([x for x in warm if x < d], default=0.0)
    return float(brentq(g, a, d, xtol=0.02 * d)), lowest[0]


def _intervals(prob, theta, rss_min, dof, level):
    """Per parameter: ``(lo, hi, reason)`` in the parameter's units; ``reason`` is ``None`` for a determined
    parameter, else why not (``lo``/``hi`` then hold what one-sided bound the data give, or ``None``)."""
    import numpy as np

    n_par = len(theta)
    if dof <= 0:
        why = f"cannot determine {n_par} parameters from {len(prob.y)} op{'s' if len(prob.y) != 1 else ''}"
        return [(None, None, why)] * n_par, []
    J = prob.jac(theta)
    null = _jacobian_null(J)
    s2 = max(rss_min / dof, 1e-12)  # floor: a relative error of 1e-6 per op (ours), for noise-free data
    tq = _t_quantile(level, dof)
    d_rss = s2 * tq ** 2  # profile t: |tau| = sqrt(delta RSS) / s <= t(dof) (Bates & Watts 1988, ch. 6)
    cov = np.linalg.pinv(J.T @ J) * s2
    out, notes = [], []
    for k in range(n_par):
        if null[k]:
            out.append((None, None, "not determined by these profiles (no op's latency depends on it alone)"))
            continue
        step = tq * math.sqrt(max(cov[k, k], 0.0))
        ends = []
        for sign in (-1, 1):
            d, low = _profile_side(prob, theta, k, sign, rss_min, d_rss, step)
            if low < rss_min * (1 - 1e-6) - 1e-15:
                notes.append(f"profiling {prob.names[k]} found a lower cost than the fit's: the fit is not at "
                             "its minimum")
            ends.append(None if d is None else math.exp(theta[k] + sign * d))
        lo, hi = ends
        if lo is None or hi is None:
            bound = f">= {lo:.4g}" if lo is not None else (f"<= {hi:.4g}" if hi is not None else "")
            why = "not determined by these profiles" + (f" (they only say {bound})" if bound else "")
            out.append((lo, hi, why))
        else:
            out.append((lo, hi, None))
    return out, notes


def fit(data: list[OpSample], clock_ghz: float = _DEFAULT_CLOCK_GHZ, level: float = 0.95,
        intervals: bool = True) -> Fit:
    """Least-squares fit of the roofline to ``data`` (module docstring): multi-start, then per parameter
    whether the data determine it and its profile-likelihood interval at ``level`` (``intervals=False``
    skips that step: values only, as the leave-one-model-out fits need).

    Raises:
        InputError: no data, a clock that is not a positive number, or a level outside (0, 1).
    """
    import numpy as np

    if not data:
        raise InputError("hetsim calibrate: no measured ops to fit")
    if not (math.isfinite(clock_ghz) and clock_ghz > 0):
        raise InputError(f"--clock-ghz must be a positive number, got {clock_ghz}")
    if not (0 < level < 1):
        raise InputError(f"--confidence must be between 0 and 1, got {level}")
    prob = _Problem(data, clock_ghz)
    nw = prob.nw
    runs = [prob.solve(x0) for x0 in _starts(nw)]
    theta, rss_min = min(runs, key=lambda r: r[1])
    rss = sorted(r[1] for r in runs)
    warnings = []
    same = sum(1 for c in rss if c <= rss_min * _SAME_COST + 1e-15)
    if same < 2:
        warnings.append(f"only 1 of the optimiser's {len(rss)} starts ended at the lowest cost, the others at up to "
                        f"{rss[-1] / max(rss_min, 1e-300):.3g} times it: a lower minimum may exist")
    at_bound = [n for n, x, a, b in zip(prob.names, theta, prob.lo, prob.hi, strict=True)
                if x - a < 1e-6 or b - x < 1e-6]
    if at_bound:
        warnings.append(f"{', '.join(at_bound)} at the fit's bound: the profiles do not fix "
                        f"{'it' if len(at_bound) == 1 else 'them'}")
    p = np.exp(theta)
    res = prob.resid(theta)
    err = np.abs(np.exp(res) - 1)
    if np.median(err) > _MISFIT:
        warnings.append(f"the per-op error (median {np.median(err):.0%}) is far above a measurement's noise: the "
                        "roofline does not describe these ops closely, so the intervals say how well the profiles "
                        "fix its parameters, not how well it predicts (the leave-one-model-out errors do)")
    f = Fit(clock_ghz, {w: float(p[i]) for i, w in enumerate(prob.widths)}, float(p[nw]), float(p[nw + 1]),
            float(p[nw + 2]), op_error_median=float(np.median(err)), op_error_p90=float(np.percentile(err, 90)),
            n_ops=len(data), models=sorted({s.model for s in data}), level=level, warnings=warnings,
            start_rss=rss)
    f.values = dict(zip(prob.names, (float(x) for x in p), strict=True))
    if intervals:
        ivs, notes = _intervals(prob, theta, rss_min, len(data) - len(theta), level)
        f.warnings += notes
        for name, (lo, hi, why) in zip(prob.names, ivs, strict=True):
            if name in at_bound and why is None:
                why = "not determined by these profiles (at the fit's bound)"
            f.interval[name] = (lo, hi)
            if why:
                f.undetermined[name] = why
    return f


def leave_one_model_out(data: list[OpSample], clock_ghz: float) -> dict[str, dict]:
    """For every model: fit without it, predict its all-host latency (sum over its ops), compare with the
    measured sum. ``{model: {measured_s, predicted_s, error}}``; empty with a single model."""
    models = sorted({s.model for s in data})
    out = {}
    if len(models) < 2:
        return out
    for m in models:
        f = fit([s for s in data if s.model != m], clock_ghz, intervals=False)
        held = [s for s in data if s.model == m]
        meas = sum(s.latency_s for s in held)
        pred = sum(f.predict(s) for s in held)
        out[m] = {"measured_s": meas, "predicted_s": pred, "error": pred / meas - 1}
    return out


def calibrate(profiles: list[str], models: list[str] | None = None, clock_ghz: float | None = None,
              lomo: bool = True, level: float = 0.95, intervals: bool = True) -> tuple[Fit, list[str]]:
    """Read ``profiles`` (``PROFILE.csv`` or ``PROFILE.csv=MODEL.onnx``), fit (intervals at ``level``, unless
    ``intervals`` is false), and (``lomo``) cross-validate.

    Returns the :class:`Fit` and a line per profile naming the machine it was measured on (from its meta).

    Raises:
        InputError: a profile or model missing or unreadable, or nothing to fit.
    """
    from hetsim.profile import read_profile_meta

    dirs = [Path(d) for d in (models or [])] or [Path("workloads"), Path("workloads/paper")]
    data, machines = [], []
    for spec in profiles:
        csv_path, _, model = spec.partition("=")
        csv_path = Path(csv_path)
        if not csv_path.exists() and not csv_path.is_symlink():
            raise InputError(f"{csv_path}: no such profile (make one with 'hetsim profile MODEL.onnx -o {csv_path}')")
        check_input_file(csv_path, "profile", InputError, MAX_TEXT_TABLE_BYTES)  # a FIFO, a device, a link loop
        read_profile(csv_path)  # a bad profile is named before its model is looked for
        model_path = Path(model) if model else find_model(csv_path, dirs)
        if not model_path.is_file():
            raise InputError(f"{model_path}: no such model")
        data += samples(csv_path, model_path)
        try:
            meta = read_profile_meta(csv_path)
            machines.append(f"{csv_path.name}: {meta.get('machine', '?')}, onnxruntime {meta.get('onnxruntime', '?')}, "
                            f"{meta.get('threads', '?')} thread(s)")
        except Exception:
            machines.append(f"{csv_path.name}: machine not recorded")
    if clock_ghz is None:
        clock_ghz = host_clock_ghz()
    f = fit(data, clock_ghz, level, intervals)
    if lomo:
        f.lomo = leave_one_model_out(data, clock_ghz)
    return f, machines


def host_clock_ghz() -> float:
    """This machine's clock from ``/proc/cpuinfo`` (``cpu MHz``), else 1 GHz (the fitted rates are per cycle, so
    the clock only scales them)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("cpu mhz"):
                return round(float(line.split(":")[1]) / 1000, 3)
    except (OSError, ValueError, IndexError):
        pass
    return _DEFAULT_CLOCK_GHZ


def report(f: Fit) -> str:
    """The fit as lines of text (each parameter with its interval or why it is not determined, the optimiser's
    warnings, the errors, leave-one-model-out)."""
    lines = [f"cpu roofline fitted to {f.n_ops} ops of {len(f.models)} model(s) at clock {f.clock_ghz:g} GHz "
             f"(fixed), {len(f.start_rss)} starts; intervals: profile likelihood at {f.level:.0%}:"]
    for name, v in f.values.items():
        lines.append(f"  {name:<22} {v:10.4g}  {f.describe(name)}")
    lines.append(f.starts_line())
    lines += [f"warning: {w}" for w in f.warnings]
    lines.append(f"per-op error |pred/meas - 1|: median {f.op_error_median:.1%}, 90th percentile {f.op_error_p90:.1%}")
    if f.lomo:
        lines.append("leave-one-model-out (fit without the model, its all-host latency = sum of its ops):")
        for m, v in f.lomo.items():
            lines.append(f"  {m:<40} measured {v['measured_s'] * 1e3:9.3f} ms  predicted "
                         f"{v['predicted_s'] * 1e3:9.3f} ms  {v['error']:+.1%}")
    return "\n".join(lines)


def cmd_calibrate(args) -> int:
    """``hetsim calibrate``'s body (the parser hook is ``hetsim/cli/calibrate.py``)."""
    from hetsim.files import atomic_write_text, check_output_file, make_dirs

    out = Path(args.output)
    check_output_file(out, args.force)  # exists, a folder, a folder that cannot be made or written: before the fit
    f, machines = calibrate(args.profiles, args.models, args.clock_ghz, lomo=not args.no_cross_validation,
                            level=args.confidence)
    print(report(f))
    make_dirs(out.parent, out)  # a missing folder is created, as for every other output
    atomic_write_text(out, f.fragment(args.name, machines))
    print(f"\n  wrote {out} (a devices: entry; paste it into a platform YAML, or merge with --set)")
    return 0


def add_parser(sub) -> None:
    """The ``calibrate`` sub-command's arguments (called by ``hetsim/cli/calibrate.py``)."""
    p = sub.add_parser("calibrate", help="fit the cpu roofline's parameters to measured profiles (least squares)",
                       description="Fit the kind: cpu roofline (MACs per cycle per bit width, element-wise "
                       "throughput, memory bandwidth, per-op overhead) to per-op profiles from 'hetsim profile' "
                       "by scipy least squares on log latencies from several starts; print each parameter with "
                       "its profile-likelihood interval, or 'not determined by these profiles' when the data do "
                       "not fix it, the per-op error and the leave-one-model-out error of the all-host latency, "
                       "and write a platform fragment (a devices: entry).",
                       epilog="example:\n  hetsim calibrate profiles/*.csv -o host.yaml")
    p.add_argument("profiles", nargs="+", metavar="PROFILE.csv[=MODEL.onnx]",
                   help="profiles of 'hetsim profile'; the model is found from NAME.meta.json in --models")
    p.add_argument("-o", "--output", type=Path, required=True, help="platform fragment (YAML) to write")
    p.add_argument("--models", action="append", default=None, metavar="DIR",
                   help="folders holding the profiled ONNX models (default: workloads, workloads/paper)")
    p.add_argument("--clock-ghz", type=float, default=None,
                   help="the host's clock (default: this machine's, /proc/cpuinfo); rates are per cycle")
    p.add_argument("--confidence", type=float, default=0.95, metavar="LEVEL",
                   help="the intervals' confidence level, between 0 and 1 (default 0.95)")
    p.add_argument("--name", default="host", help="the device's name in the fragment (default host)")
    p.add_argument("--no-cross-validation", action="store_true", help="skip the leave-one-model-out fits")
    p.add_argument("--force", action="store_true", help="replace an existing output file")
    return p
