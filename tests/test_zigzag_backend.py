"""ZigZag as the npu's optional cost backend (hetsim/devices/zigzag_cost.py), on ZigZag's own TPU-like example
(``inputs/hardware/tpu_like.yaml``: a 32 x 32 array, output channels K on one side, input channels C on the other;
``inputs/mapping/tpu_like.yaml``), against hetsim's dataflow model (hetsim/devices/dataflow.py) on the same
unrolling, ``{K: 32, C: 32}``.

What the comparison shows, and the tests check: for every layer below, ZigZag's stall-free cycle count of its
chosen mapping (``ideal_temporal_cycle``) equals hetsim's ``prod ceil(D / u)``, i.e. the two count the spatial
unrolling's ceil effects alike; ZigZag's latency (``latency_total2``) is larger, by the data on- and off-loading
and the stalls of its memory hierarchy (a DRAM port of 64 bits), which hetsim's model leaves to its activation
port and SRAM bounds. Skipped without zigzag-dse (``pip install 'hetsim[zigzag]'``), except the refusal when it is
missing.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import NS

from hetsim.devices import zigzag_cost
from hetsim.devices.dataflow import array_cycles, loop_dims
from hetsim.errors import PlatformError
from hetsim.platform import load_platform
from hetsim.workload import GemmView, Op

DATA = Path(__file__).parent / "data"
BACKEND = {"accelerator": "zigzag:hardware/tpu_like.yaml", "mapping": "zigzag:mapping/tpu_like.yaml"}


def _platform(tmp_path: Path, **zigzag):
    data = yaml.safe_load((DATA / "npu-dataflow.yaml").read_text())
    npu = data["devices"]["npu"]
    for k in ("array", "register_file", "sram"):
        npu.pop(k)
    npu["macs_per_cycle"] = {8: 1024}
    npu["zigzag"] = {**BACKEND, "cache_dir": str(tmp_path / "cache"), **zigzag}
    p = tmp_path / "p.yaml"
    p.write_text(yaml.safe_dump(data, sort_keys=False))
    return load_platform(p)


def _conv(c_in: int, c_out: int, k: int, out: int, groups: int = 1) -> Op:
    g = GemmView(m_v=c_out // groups, n_v=c_in // groups * k * k, n_mvm=out * out, groups=groups, kernel=(k, k),
                 out_spatial=(out, out), stride=(1, 1))
    side = out + k - 1
    return Op(name="c", op_type="Conv", n_in=c_in * side * side, n_out=c_out * out * out, macs=g.macs, bits=8,
              weight_elements=c_out * c_in // groups * k * k, gemm=g)


LAYERS = {
    "fills K": _conv(16, 32, 3, 4),  # K 32 fills one side, C 16 half the other
    "first conv": _conv(3, 16, 3, 4),  # C 3 of 32
    "depthwise": _conv(8, 8, 3, 4, groups=8),  # K = C = 1 per group
    "gemm": Op(name="g", op_type="Gemm", n_in=300, n_out=200, macs=6000, bits=8, weight_elements=600,
               gemm=GemmView(m_v=20, n_v=30, n_mvm=10)),
}


def test_a_missing_zigzag_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(zigzag_cost, "zigzag_installed", lambda: False)
    with pytest.raises(PlatformError) as err:
        _platform(tmp_path)
    assert "devices.npu.zigzag: the ZigZag backend needs zigzag-dse: pip install 'hetsim[zigzag]'" in str(err.value)
    assert "\n" not in str(err.value)


def test_a_missing_accelerator_file_is_one_line(tmp_path):
    pytest.importorskip("zigzag")
    with pytest.raises(PlatformError, match=r"devices\.npu\.zigzag: accelerator: no file '.*nothing\.yaml'"):
        _platform(tmp_path, accelerator=str(tmp_path / "nothing.yaml"))


@pytest.fixture(scope="module")
def zigzag_costs(tmp_path_factory):
    """ZigZag's cost of each layer of :data:`LAYERS` through the npu, and the platform."""
    pytest.importorskip("zigzag")
    tmp = tmp_path_factory.mktemp("zz")
    npu = _platform(tmp).devices["npu"]
    return npu, {name: npu._zigzag_cost(op, loop_dims(op)) for name, op in LAYERS.items()}


@pytest.mark.parametrize("name", list(LAYERS))
def test_zigzag_counts_the_unrolling_as_hetsim_does(zigzag_costs, name):
    npu, costs = zigzag_costs
    op, zz = LAYERS[name], costs[name]
    ours = array_cycles(loop_dims(op), {"K": 32, "C": 32})
    assert zz.ideal_cycles == ours
    assert zz.cycles >= ours  # ZigZag adds on- and off-loading and memory stalls
    # the npu takes ZigZag's cycles at its clock (1 GHz) and ZigZag's energy
    assert npu.latency(op) == pytest.approx(zz.cycles * NS, rel=1e-12)
    assert npu.op_energy_j(op) == pytest.approx(zz.energy_pj * 1e-12, rel=1e-12)
    assert zz.energy_pj > 0


def test_answers_come_from_the_disk_cache_until_a_file_changes(zigzag_costs, tmp_path, monkeypatch):
    npu, costs = zigzag_costs
    calls = []

    def fake(layer, accelerator, mapping, objective):
        calls.append(layer["loop_sizes"])
        return zigzag_cost.ZigzagCost(cycles=1.0, energy_pj=2.0, ideal_cycles=1.0)

    monkeypatch.setattr(zigzag_cost, "run_zigzag", fake)
    zigzag_cost._cached.cache_clear()  # forget the in-memory copies: only the disk is left
    op = LAYERS["gemm"]
    assert npu._zigzag_cost(op, loop_dims(op)) == costs["gemm"] and calls == []
    cached = list(Path(npu.zigzag.cache_path()).glob("*.json"))
    assert len(cached) == len(LAYERS)
    # another accelerator file (the same text plus a comment): another key, ZigZag asked again
    acc = tmp_path / "tpu_like.yaml"
    acc.write_text(zigzag_cost.resolve(BACKEND["accelerator"]).read_text() + "\n# changed\n")
    other = npu.zigzag.model_copy(update={"accelerator": str(acc)})
    assert other.cost(loop_dims(op), (), 8, "Gemm").cycles == 1.0 and calls == [[1, 1, 20, 30, 1, 10, 1, 1]]
    # another precision: another key
    other.cost(loop_dims(op), (), 4, "Gemm")
    assert len(calls) == 2
