"""``hetsim calibrate`` says what the data determine: on synthetic profiles made by hetsim's own cpu roofline
(:class:`hetsim.devices.cpu.CpuDevice`) from the ops of shipped models, with known parameters and lognormal noise,
every reported interval contains the true value or the parameter is flagged as not determined; a parameter no op
depends on, and a one-op profile, print no interval."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hetsim.calibrate import OpSample, fit, report
from hetsim.devices.cpu import CpuDevice, roofline_bytes
from hetsim.workload.frontends import load_workload

ROOT = Path(__file__).resolve().parent.parent
MODELS = ("resnet20_cifar10", "mobilenet_v1_025_vww", "paper/resnet18_int8_ort")  # fp32 and int8 GEMMs
NAMES = ("macs_per_cycle[8]", "macs_per_cycle[32]", "elementwise_per_cycle", "mem_bandwidth_gb_s", "op_overhead_us")


@pytest.fixture(scope="module")
def ops():
    out = []
    for m in MODELS:
        for op in load_workload(ROOT / "workloads" / f"{m}.onnx").ops.values():
            out.append(op)
    return out


def truth(m8, m32, ew, bw, ov) -> CpuDevice:
    return CpuDevice(name="truth", clock_ghz=2.0, macs_per_cycle={8: m8, 32: m32}, elementwise_per_cycle=ew,
                     mem_bandwidth_gb_s=bw, op_overhead_us=ov)


def profile(ops, dev: CpuDevice, seed: int, noise: float) -> list[OpSample]:
    """Each op's latency from ``dev``'s roofline times ``exp(N(0, noise))``."""
    rng = np.random.default_rng(seed)
    return [OpSample("m", op.name, op.op_type, float(op.macs), int(op.bits), float(op.n_out),
                     float(roofline_bytes(op)), dev.roofline_latency(op) * float(np.exp(rng.normal(0, noise))))
            for op in ops]


def true_values(dev: CpuDevice) -> dict[str, float]:
    return dict(zip(NAMES, (dev.macs_per_cycle[8], dev.macs_per_cycle[32], dev.elementwise_per_cycle,
                            dev.mem_bandwidth_gb_s, dev.op_overhead_us), strict=True))


# (0.25 element-wise ops per cycle, 5 % noise): the setting where a single start ended at a rate pushed high
# and half the bandwidth; (4 per cycle at 8 GB/s): every element-wise op memory-bound, its rate bounded below only
SETTINGS = {"ill-conditioned": (truth(32.0, 8.0, 0.25, 8.0, 10.0), 0.05),
            "elementwise memory-bound": (truth(16.0, 8.0, 4.0, 8.0, 2.0), 0.05),
            "well-conditioned": (truth(16.0, 2.0, 2.0, 20.0, 1.0), 0.02)}


@pytest.mark.parametrize("setting", sorted(SETTINGS))
def test_every_interval_contains_the_truth_or_is_flagged(ops, setting):
    dev, noise = SETTINGS[setting]
    true = true_values(dev)
    other_minima = 0
    for seed in range(3):
        f = fit(profile(ops, dev, seed, noise), clock_ghz=2.0, level=0.999)
        other_minima += f.start_rss[-1] > 2 * f.start_rss[0]
        for name, v in true.items():
            if name in f.undetermined:
                lo, hi = f.interval[name]  # a one-sided bound the data give must hold too
                assert (lo is None or lo <= v) and (hi is None or v <= hi), (setting, seed, name, lo, hi)
                continue
            lo, hi = f.interval[name]
            assert lo <= v <= hi, (setting, seed, name, f.values[name], lo, hi)
            assert lo <= f.values[name] <= hi and hi / lo < 1.5, (setting, seed, name, lo, hi)  # not vacuous
        if setting == "elementwise memory-bound":
            assert "elementwise_per_cycle" in f.undetermined and "+-" not in report(f)
        else:
            assert not f.undetermined, (setting, seed, f.undetermined)
    if setting == "ill-conditioned":
        assert other_minima >= 1  # the case is the hard one: some starts stop in another minimum


def test_95_percent_intervals_cover_about_95_percent(ops):
    """Coverage of the default level on the ill-conditioned setting: 6 seeds x 5 parameters; a binomial(30, 0.95)
    falls below 25 with probability < 0.5 %."""
    dev, noise = SETTINGS["ill-conditioned"]
    true = true_values(dev)
    hits = 0
    for seed in range(10, 16):
        f = fit(profile(ops, dev, seed, noise), clock_ghz=2.0)
        assert not f.undetermined
        hits += sum(f.interval[n][0] <= v <= f.interval[n][1] for n, v in true.items())
    assert hits >= 25


def test_a_parameter_no_op_depends_on_is_not_determined(ops):
    """Only the GEMM ops: no element-wise op is timed, so nothing depends on the element-wise rate."""
    dev = truth(16.0, 8.0, 2.0, 20.0, 1.0)
    data = [s for s in profile(ops, dev, 0, 0.02) if s.macs > 0]
    f = fit(data, clock_ghz=2.0)
    assert f.undetermined["elementwise_per_cycle"].startswith("not determined by these profiles")
    text = report(f)
    line = next(x for x in text.splitlines() if x.strip().startswith("elementwise_per_cycle"))
    assert "not determined" in line and "%" not in line
    assert "elementwise_per_cycle" in f.fragment() and "0.0%" not in text


def test_one_op_determines_nothing():
    s = OpSample("m", "conv", "Conv", 1e6, 8, 1e3, 1e4, 1e-4)
    f = fit([s], clock_ghz=2.0)
    assert sorted(f.undetermined) == ["elementwise_per_cycle", "macs_per_cycle[8]", "mem_bandwidth_gb_s",
                                      "op_overhead_us"]
    assert all(v == "cannot determine 4 parameters from 1 op" for v in f.undetermined.values())
    params = [x for x in report(f).splitlines() if x.startswith("  ")]
    assert len(params) == 4 and all(x.endswith("cannot determine 4 parameters from 1 op") for x in params)
    assert not any("%" in x for x in params)
