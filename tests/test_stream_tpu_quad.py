"""platforms/stream-tpu-quad.yaml (Stream's example tpu_like_quad_core in hetsim's terms) and the pure functions of
bench/peers_stream.py; none of this needs Stream.

The layer worked by hand is a ResNet-18 layer1 3x3 conv, 64 -> 64 channels, 56 x 56 outputs (a 58 x 58 input:
'valid' padding here), on one TPU-like core: 1 GHz, a 32 x 32 K x C array, a 128 KiB register file at 0.0475 pJ/B,
a 2 MiB SRAM of 256 B/cycle at 1.6256 pJ/B, 0.04 pJ/MAC, a 256 GB/s activation port.
"""

from __future__ import annotations

import math
import sys

import pytest
from conftest import PLATFORMS, ROOT

from hetsim.platform import load_platform
from hetsim.workload import GemmView, Op

sys.path.insert(0, str(ROOT / "bench"))
import peers_stream  # noqa: E402

PATH = PLATFORMS / "stream-tpu-quad.yaml"

MACS = 64 * 64 * 9 * 56 * 56  # 115,605,504
N_IN = 64 * 58 * 58  # 215,296
N_OUT = 64 * 56 * 56  # 200,704


def _layer1_conv() -> Op:
    g = GemmView(m_v=64, n_v=64 * 9, n_mvm=56 * 56, groups=1, kernel=(3, 3), out_spatial=(56, 56), stride=(1, 1))
    return Op(name="layer1_conv", op_type="Conv", n_in=N_IN, n_out=N_OUT, macs=g.macs, bits=8,
              weight_shape=(64, 64, 3, 3), weight_elements=64 * 64 * 9, gemm=g)


def test_four_identical_tpu_like_cores():
    p = load_platform(PATH)
    npus = [p.devices[f"npu{i}"] for i in range(4)]
    assert all(n.model_dump(exclude={"name"}) == npus[0].model_dump(exclude={"name"}) for n in npus)
    assert p.memories["dram"].bandwidth_gb_s == 8  # offchip.yaml: 64 bits per 1 ns cycle


def test_layer1_conv_by_hand():
    op = _layer1_conv()
    assert op.macs == MACS
    npu = load_platform(PATH).devices["npu0"]
    # compute: ceil(64/32) * ceil(64/32) * 3*3 * 56*56 = 2 * 2 * 9 * 3136 = 112,896 cycles = 112.896 us;
    # SRAM: weights 36,864 B once (a pass's 32*64*9 = 18,432 B fit the 128 KiB register file) + the input swept
    # ceil(64/32) = 2 times (430,592 B) + the output once (200,704 B) = 668,160 B / 256 B/cycle = 2,610 cycles;
    # port: (215,296 + 200,704) B / 256 GB/s = 1,625 ns. Compute-bound.
    assert npu.latency(op) == pytest.approx(112_896e-9, rel=1e-12)
    sram = 36_864 + 2 * N_IN + N_OUT
    assert sram == 668_160
    e_pj = 0.04 * MACS + 0.0475 * 2 * MACS + 1.6256 * sram  # MACs, register file (2 B per MAC), SRAM
    assert npu.op_energy_j(op) == pytest.approx(e_pj * 1e-12, rel=1e-9)


def test_design_point_16x16_by_hand():
    base = load_platform(PATH)
    p = base.with_overrides(peers_stream.hetsim_overrides(16, 256))
    npu = p.devices["npu3"]
    assert npu.register_file.capacity_kib == 32  # 16 * 16 PEs x 128 B (Stream's rf_128B per PE)
    assert p.memories["dram"].bandwidth_gb_s == 32
    # ceil(64/16)^2 * 9 * 3136 = 451,584 cycles
    assert npu.latency(_layer1_conv()) == pytest.approx(451_584e-9, rel=1e-12)


def test_parse_point():
    assert peers_stream.parse_point("32x64") == (32, 64)
    assert peers_stream.parse_point(" 16x256 ") == (16, 256)
    for bad in ("32x48", "8x64", "32", "x64", "32x", "axb"):
        with pytest.raises(ValueError, match="design point"):
            peers_stream.parse_point(bad)


def test_spearman_by_hand():
    # one swap in four: d^2 = 1 + 1, rho = 1 - 6 * 2 / (4 * 15) = 0.8
    assert peers_stream.spearman([1, 2, 3, 4], [10, 30, 20, 40]) == pytest.approx(0.8)
    assert peers_stream.spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    # ties take the average rank: ranks (1.5, 1.5, 3) against (1, 2, 3), deviations (-0.5, -0.5, 1) and
    # (-1, 0, 1): covariance 1.5, variances 1.5 and 2, Pearson = 1.5 / sqrt(1.5 * 2)
    assert peers_stream.spearman([5, 5, 7], [1, 2, 3]) == pytest.approx(1.5 / math.sqrt(1.5 * 2))
    with pytest.raises(ValueError):
        peers_stream.spearman([1], [1])
