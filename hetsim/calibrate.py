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

Reported: each parameter with its 1-sigma relative uncertainty (from the Jacobian at the solution,
``cov = s^2 (J^T J)^-1`` with ``s^2`` the residual variance), the per-op error (median and 90th percentile of
``|pred / meas - 1|``), and the **leave-one-model-out** error: the fit repeated without each profile's model,
that model's all-host latency (the sum over its ops, one core) predicted and compared with its measured sum.
The result is written as a platform fragment (a ``devices:`` entry) to drop into a platform YAML.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from pathlib import Path

from hetsim.errors import InputError
from hetsim.input_files import MAX_TEXT_TABLE_BYTES, check_input_file, read_input_text

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
    """A fitted roofline: parameters, their 1-sigma relative uncertainties, and the errors."""

    clock_ghz: float
    macs_per_cycle: dict[int, float]
    elementwise_per_cycle: float
    mem_bandwidth_gb_s: float
    op_overhead_us: float
    rel_sigma: dict[str, float] = field(default_factory=dict)
    op_error_median: float = math.nan
    op_error_p90: float = math.nan
    n_ops: int = 0
    models: list[str] = field(default_factory=list)
    lomo: dict[str, dict] = field(default_factory=dict)  # model -> {measured_s, predicted_s, error}

    def predict(self, s: OpSample) -> float:
        """The roofline latency (s) of one op under these parameters."""
        return _predict_one(self, s.macs, s.bits, s.n_out, s.nbytes)

    def fragment(self, name: str = "host", sources: list[str] | None = None) -> str:
        """The platform fragment (YAML text): a ``devices:`` entry with the fitted roofline."""
        lines = [f"# Fitted by hetsim calibrate from {len(self.models)} profile(s) ({self.n_ops} ops): "
                 + ", ".join(self.models),
                 "# cpu roofline (hetsim/devices/cpu.py), least squares on log latencies; +- = 1-sigma relative.",
                 f"# per-op error |pred/meas - 1|: median {self.op_error_median:.1%}, 90th percentile "
                 f"{self.op_error_p90:.1%}",
                 ]
        if self.lomo:
            lines.append("# leave-one-model-out, all-host latency (sum of ops): " + ", ".join(
                f"{m} {v['error']:+.1%}" for m, v in self.lomo.items()))
        if sources:
            lines.append("# measured on: " + "; ".join(sources))
        lines += ["devices:", f"  {name}:", "    kind: cpu", "    cores: 1", "    latency_model: roofline",
                  f"    clock_ghz: {self.clock_ghz:.6g}                # fixed, not fitted (rates are per cycle)",
                  "    macs_per_cycle:"]
        for b, v in sorted(self.macs_per_cycle.items()):
            lines.append(f"      {b}: {v:.6g}                # +- {self.rel_sigma.get(f'macs_per_cycle[{b}]', 0):.1%}")
        lines += [f"    elementwise_per_cycle: {self.elementwise_per_cycle:.6g}   # +- "
                  f"{self.rel_sigma.get('elementwise_per_cycle', 0):.1%}",
                  f"    mem_bandwidth_gb_s: {self.mem_bandwidth_gb_s:.6g}      # +- "
                  f"{self.rel_sigma.get('mem_bandwidth_gb_s', 0):.1%}",
                  f"    op_overhead_us: {self.op_overhead_us:.6g}          # +- "
                  f"{self.rel_sigma.get('op_overhead_us', 0):.1%}",
                  "    active_w: 5.0                 # assumed (not fitted: profiles hold no power)",
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
    rows = list(csv.DictReader(line for line in text.splitlines() if line.strip() and not line.startswith("#")))
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


def fit(data: list[OpSample], clock_ghz: float = _DEFAULT_CLOCK_GHZ) -> Fit:
    """Least-squares fit of the roofline to ``data`` (module docstring).

    Raises:
        InputError: no data, or a clock that is not a positive number.
    """
    import numpy as np
    from scipy.optimize import least_squares

    if not data:
        raise InputError("hetsim calibrate: no measured ops to fit")
    if not (math.isfinite(clock_ghz) and clock_ghz > 0):
        raise InputError(f"--clock-ghz must be a positive number, got {clock_ghz}")
    widths = sorted({s.bits for s in data if s.macs > 0}) or [32]
    names = _names(widths)
    macs = np.array([s.macs for s in data])
    bits = np.array([s.bits for s in data])
    n_out = np.array([s.n_out for s in data])
    nbytes = np.array([s.nbytes for s in data])
    y = np.log(np.array([s.latency_s for s in data]))
    clock = clock_ghz * 1e9
    # each op's MAC rate is the one of the narrowest fitted width >= its bits (as CpuDevice._mac_rate)
    col = np.array([next((i for i, w in enumerate(widths) if w >= b), len(widths) - 1) for b in bits])
    is_mac = macs > 0
    nw = len(widths)

    def model(theta):
        p = np.exp(theta)
        rate = np.where(is_mac, p[np.minimum(col, nw - 1)], p[nw])
        work = np.where(is_mac, macs, n_out)
        t_c = work / (clock * rate)
        t_m = nbytes / (p[nw + 1] * 1e9)
        return p[nw + 2] * 1e-6 + np.maximum(t_c, t_m)

    def resid(theta):
        return np.log(model(theta)) - y

    x0 = np.log(np.array([16.0] * nw + [4.0, 10.0, 1.0]))
    lo = np.log(np.array([1e-3] * nw + [1e-3, 1e-2, 1e-4]))
    hi = np.log(np.array([1e5] * nw + [1e5, 1e4, 1e5]))
    best = None
    for start in (x0, x0 - 1.5):  # two starts: the max() makes the objective piecewise
        r = least_squares(resid, np.clip(start, lo + 1e-9, hi - 1e-9), bounds=(lo, hi), method="trf",
                          x_scale="jac")
        if best is None or r.cost < best.cost:
            best = r
    theta = best.x
    p = np.exp(theta)
    res = best.fun
    dof = max(1, len(y) - len(theta))
    s2 = float(res @ res) / dof
    J = best.jac
    try:
        cov = np.linalg.pinv(J.T @ J) * s2
        sig = np.sqrt(np.clip(np.diag(cov), 0, None))
    except np.linalg.LinAlgError:
        sig = np.full(len(theta), np.nan)
    rel = {n: float(math.expm1(s)) if math.isfinite(s) else math.nan for n, s in zip(names, sig, strict=True)}
    err = np.abs(np.exp(res) - 1)
    return Fit(clock_ghz, {w: float(p[i]) for i, w in enumerate(widths)}, float(p[nw]), float(p[nw + 1]),
               float(p[nw + 2]), rel, float(np.median(err)), float(np.percentile(err, 90)), len(data),
               sorted({s.model for s in data}))


def leave_one_model_out(data: list[OpSample], clock_ghz: float) -> dict[str, dict]:
    """For every model: fit without it, predict its all-host latency (sum over its ops), compare with the
    measured sum. ``{model: {measured_s, predicted_s, error}}``; empty with a single model."""
    models = sorted({s.model for s in data})
    out = {}
    if len(models) < 2:
        return out
    for m in models:
        f = fit([s for s in data if s.model != m], clock_ghz)
        held = [s for s in data if s.model == m]
        meas = sum(s.latency_s for s in held)
        pred = sum(f.predict(s) for s in held)
        out[m] = {"measured_s": meas, "predicted_s": pred, "error": pred / meas - 1}
    return out


def calibrate(profiles: list[str], models: list[str] | None = None, clock_ghz: float | None = None,
              lomo: bool = True) -> tuple[Fit, list[str]]:
    """Read ``profiles`` (``PROFILE.csv`` or ``PROFILE.csv=MODEL.onnx``), fit, and (``lomo``) cross-validate.

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
    f = fit(data, clock_ghz)
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
    """The fit as lines of text (parameters with uncertainty, errors, leave-one-model-out)."""
    lines = [f"cpu roofline fitted to {f.n_ops} ops of {len(f.models)} model(s) at clock {f.clock_ghz:g} GHz "
             "(fixed):"]
    for b, v in sorted(f.macs_per_cycle.items()):
        lines.append(f"  macs_per_cycle[{b}]     {v:10.4g}  +- {f.rel_sigma.get(f'macs_per_cycle[{b}]', 0):.1%}")
    lines += [f"  elementwise_per_cycle  {f.elementwise_per_cycle:10.4g}  +- "
              f"{f.rel_sigma['elementwise_per_cycle']:.1%}",
              f"  mem_bandwidth_gb_s     {f.mem_bandwidth_gb_s:10.4g}  +- {f.rel_sigma['mem_bandwidth_gb_s']:.1%}",
              f"  op_overhead_us         {f.op_overhead_us:10.4g}  +- {f.rel_sigma['op_overhead_us']:.1%}",
              f"per-op error |pred/meas - 1|: median {f.op_error_median:.1%}, 90th percentile {f.op_error_p90:.1%}"]
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
    f, machines = calibrate(args.profiles, args.models, args.clock_ghz, lomo=not args.no_cross_validation)
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
                       "by scipy least squares on log latencies; print each parameter with its 1-sigma "
                       "uncertainty, the per-op error and the leave-one-model-out error of the all-host latency, "
                       "and write a platform fragment (a devices: entry).",
                       epilog="example:\n  hetsim calibrate profiles/*.csv -o host.yaml")
    p.add_argument("profiles", nargs="+", metavar="PROFILE.csv[=MODEL.onnx]",
                   help="profiles of 'hetsim profile'; the model is found from NAME.meta.json in --models")
    p.add_argument("-o", "--output", type=Path, required=True, help="platform fragment (YAML) to write")
    p.add_argument("--models", action="append", default=None, metavar="DIR",
                   help="folders holding the profiled ONNX models (default: workloads, workloads/paper)")
    p.add_argument("--clock-ghz", type=float, default=None,
                   help="the host's clock (default: this machine's, /proc/cpuinfo); rates are per cycle")
    p.add_argument("--name", default="host", help="the device's name in the fragment (default host)")
    p.add_argument("--no-cross-validation", action="store_true", help="skip the leave-one-model-out fits")
    p.add_argument("--force", action="store_true", help="replace an existing output file")
    return p
