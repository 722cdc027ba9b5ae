"""The NPU's dataflow model (hetsim/devices/dataflow.py, the ``array``/``register_file``/``sram``/``vector_ops``
fields of hetsim/devices/npu.py), worked by hand on tests/data/npu-dataflow.yaml:

an 8 x 8 array unrolling output channels K and input channels C (64 MACs per cycle) at 1 GHz (1 cycle = 1 ns),
8-bit elements (1 byte each), a 2 KiB register file at 0.1 pJ/byte, a local SRAM moving 4 bytes per cycle at
1 pJ/byte, 0.5 pJ per MAC, a vector unit (Softmax 4, MaxPool 8, Add 16 elements per cycle; 0.25 pJ per element)
and an activation port too fast to matter.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml
from conftest import NS, PLATFORMS, ROOT
from hypothesis import given
from hypothesis import strategies as st

from hetsim.devices.dataflow import LOOP_DIMS, array_cycles, array_utilisation, loop_dims, onchip_traffic
from hetsim.errors import PlatformError
from hetsim.pipeline import load_workload
from hetsim.platform import load_platform
from hetsim.workload import GemmView, Op

DATA = Path(__file__).parent / "data"
TEST_PLATFORM = DATA / "npu-dataflow.yaml"


def _npu():
    return load_platform(TEST_PLATFORM).devices["npu"]


def _conv(name: str, c_in: int, c_out: int, k: int, out: int, groups: int = 1) -> Op:
    """A ``k x k`` stride-1 'valid' Conv, ``c_in -> c_out`` channels in ``groups`` groups, ``out x out`` output."""
    g = GemmView(m_v=c_out // groups, n_v=c_in // groups * k * k, n_mvm=out * out, groups=groups, kernel=(k, k),
                 out_spatial=(out, out), stride=(1, 1))
    side = out + k - 1
    return Op(name=name, op_type="Conv", n_in=c_in * side * side, n_out=c_out * out * out, macs=g.macs, bits=8,
              weight_shape=(c_out, c_in // groups, k, k), weight_elements=c_out * c_in // groups * k * k, gemm=g)


# three layer shapes worked by hand: one fills the 8 x 8 K x C array, two do not
FULL = _conv("full", c_in=16, c_out=32, k=3, out=4)  # K 32, C 16: every lane busy
FIRST = _conv("first", c_in=3, c_out=16, k=3, out=8)  # a 3-channel first conv: 3 of 8 C lanes
DEPTHWISE = _conv("dw", c_in=32, c_out=32, k=3, out=8, groups=32)  # K = C = 1 per group: 1 of 64 lanes


# -------------------------------------------------------------------------------- spatial unrolling, by hand


def test_utilisation_of_three_layer_shapes_by_hand():
    array = {"K": 8, "C": 8}
    # FULL: ceil(32/8) * ceil(16/8) * 3*3 * 4*4 = 4 * 2 * 9 * 16 = 1152 cycles; 32*16*9*16 = 73,728 MACs = 1152 * 64
    assert loop_dims(FULL) == {"B": 1, "G": 1, "K": 32, "C": 16, "OY": 4, "OX": 4, "FY": 3, "FX": 3}
    assert array_cycles(loop_dims(FULL), array) == 1152 and FULL.macs == 73_728
    assert array_utilisation(loop_dims(FULL), array) == 1.0
    # FIRST: ceil(16/8) * ceil(3/8) * 9 * 64 = 2 * 1 * 576 = 1152 cycles for 16*3*9*64 = 27,648 MACs: 3/8 of the array
    assert array_cycles(loop_dims(FIRST), array) == 1152
    assert array_utilisation(loop_dims(FIRST), array) == pytest.approx(3 / 8, rel=1e-12)
    # DEPTHWISE: G = 32 groups of K = C = 1: 32 * 1 * 1 * 9 * 64 = 18,432 cycles = its MACs: 1/64 of the array ...
    assert loop_dims(DEPTHWISE)["G"] == 32 and loop_dims(DEPTHWISE)["K"] == loop_dims(DEPTHWISE)["C"] == 1
    assert array_cycles(loop_dims(DEPTHWISE), array) == 18_432 == DEPTHWISE.macs
    assert array_utilisation(loop_dims(DEPTHWISE), array) == pytest.approx(1 / 64, rel=1e-12)
    # ... and with the groups on the K lanes: ceil(32/8) * 9 * 64 = 2304 cycles, 1/8 of the array
    assert array_cycles(loop_dims(DEPTHWISE), array, groups_on_k=True) == 2304
    assert array_utilisation(loop_dims(DEPTHWISE), array, groups_on_k=True) == pytest.approx(1 / 8, rel=1e-12)
    # an OX x OY array serves the 3-channel conv fully (8 x 8 outputs) and the depthwise one too
    pixels = {"OY": 8, "OX": 8}
    assert array_utilisation(loop_dims(FIRST), pixels) == 1.0
    assert array_utilisation(loop_dims(DEPTHWISE), pixels) == 1.0


_SMALL = st.integers(1, 5)


@given(dims=st.fixed_dictionaries({d: _SMALL for d in LOOP_DIMS}),
       array=st.dictionaries(st.sampled_from(list(LOOP_DIMS)), st.integers(1, 4), min_size=1, max_size=3))
def test_array_cycles_by_brute_force_on_small_nests(dims, array):
    # every MAC (a point of the loop nest) goes to the cycle of its tile indices and the lane of its remainders;
    # no two MACs share a cycle and a lane, and the cycles used are the formula's count
    import itertools

    u = [array.get(d, 1) for d in LOOP_DIMS]
    if math.prod(dims.values()) > 4000:
        dims = {**dims, "B": 1, "G": 1, "OY": 1}
    seen, cycles = set(), set()
    for point in itertools.product(*(range(dims[d]) for d in LOOP_DIMS)):
        cycle = tuple(i // k for i, k in zip(point, u, strict=True))
        lane = tuple(i % k for i, k in zip(point, u, strict=True))
        assert (cycle, lane) not in seen
        seen.add((cycle, lane))
        cycles.add(cycle)
    assert array_cycles(dims, array) == len(cycles)
    assert 0 < array_utilisation(dims, array) <= 1
    # the groups on the K lanes never take longer (an array unrolling G itself refuses groups_on_k_lanes)
    if "G" not in array:
        assert array_cycles(dims, array, groups_on_k=True) <= array_cycles(dims, array)


def test_gemm_maps_m_n_k_onto_the_conv_names():
    # Y[10, 20] = A[10, 30] B[30, 20]: K = N = 20, C = K = 30, OX = M = 10; ceil(20/8) * ceil(30/8) * 10 = 120
    g = GemmView(m_v=20, n_v=30, n_mvm=10)
    op = Op(name="g", op_type="Gemm", n_in=300, n_out=200, macs=g.macs, bits=8, weight_elements=600, gemm=g)
    dims = loop_dims(op)
    assert dims == {"B": 1, "G": 1, "K": 20, "C": 30, "OY": 1, "OX": 10, "FY": 1, "FX": 1}
    assert array_cycles(dims, {"K": 8, "C": 8}) == 3 * 4 * 10
    # a MatMul of two activations (no GEMM view): [4, 10, 30] x [4, 30, 20] -> [4, 10, 20], 24,000 MACs
    mm = Op(name="mm", op_type="MatMul", n_in=2400, n_out=800, macs=4 * 10 * 20 * 30, bits=8,
            output_shapes=((4, 10, 20),))
    assert loop_dims(mm) == {"B": 1, "G": 1, "K": 20, "C": 30, "OY": 1, "OX": 40, "FY": 1, "FX": 1}
    # no MACs: no loop nest
    assert loop_dims(Op(name="r", op_type="Relu", n_in=5, n_out=5)) is None


def test_loop_dims_of_real_convolutions_multiply_to_their_macs():
    wl = load_workload(ROOT / "workloads" / "yolov5n.onnx")
    first = wl.op("/model.0/conv/Conv")  # 6x6 stride 2, 3 -> 16 channels, 320 x 320 out
    assert loop_dims(first) == {"B": 1, "G": 1, "K": 16, "C": 3, "OY": 320, "OX": 320, "FY": 6, "FX": 6}
    for op in list(wl.ops.values()) + list(load_workload(ROOT / "workloads" / "mobilenet_v2.onnx").ops.values()):
        dims = loop_dims(op)
        if op.macs > 0:
            assert dims is not None and math.prod(dims.values()) == op.macs, op.name
            assert set(dims) == set(LOOP_DIMS)


def test_npu_latency_is_the_array_cycles_or_the_sram_port():
    npu = _npu()
    # FIRST: 1152 compute cycles; SRAM: weights 16*3*9 = 432 B once, inputs 3*10*10 = 300 B * ceil(16/8) = 600 B,
    # outputs 16*64 = 1024 B: 2056 B at 4 B/cycle = 514 cycles < 1152: compute-bound, 1152 ns
    assert npu.latency(FIRST) == pytest.approx(1152 * NS, rel=1e-12)
    # FULL: 1152 compute cycles; SRAM: weights 4608 B (one pass's 8*16*9 = 1152 B fit the 2 KiB register file) +
    # inputs 16*6*6 = 576 B * 4 passes = 2304 B + outputs 512 B = 7424 B / 4 = 1856 cycles: SRAM-bound, 1856 ns
    assert npu.latency(FULL) == pytest.approx(1856 * NS, rel=1e-12)
    # DEPTHWISE: 18,432 cycles (groups one after another)
    assert npu.latency(DEPTHWISE) == pytest.approx(18_432 * NS, rel=1e-12)
    lanes = npu.model_copy(update={"groups_on_k_lanes": True})
    # with the groups on the K lanes 2304 cycles; SRAM: weights 288 + inputs 32*100 = 3200 (1 pass) + outputs
    # 2048 = 5536 B / 4 = 1384 cycles < 2304
    assert lanes.latency(DEPTHWISE) == pytest.approx(2304 * NS, rel=1e-12)


# ------------------------------------------------------------------------------------ on-chip energy, by hand


def test_onchip_energy_of_one_conv_by_hand():
    npu = _npu()
    t = onchip_traffic(FULL, loop_dims(FULL), {"K": 8, "C": 8}, 8, register_file_bytes=2048)
    # register file: 2 operands per MAC, 1 byte each: 147,456 B
    assert t.register_file_bytes == 2 * 73_728
    # SRAM: weights 32*16*9 = 4608 B once, inputs 576 B x 4 passes, outputs 512 B
    assert (t.weight_bytes, t.input_bytes, t.output_bytes) == (4608, 2304, 512)
    assert (t.input_passes, t.weight_passes) == (4, 1)
    # 0.5 pJ x 73,728 MACs + 0.1 pJ x 147,456 B + 1 pJ x 7424 B = 36,864 + 14,745.6 + 7424 = 59,033.6 pJ
    assert npu.op_energy_j(FULL) == pytest.approx(59_033.6e-12, rel=1e-12)
    # a 512 B register file holds no pass's weights (8*16*9 = 1152 B): they are read again for every output pixel
    # tile, ceil(1/1) * ceil(4/1) * ceil(4/1) = 16 times: 73,728 B
    small = onchip_traffic(FULL, loop_dims(FULL), {"K": 8, "C": 8}, 8, register_file_bytes=512)
    assert (small.weight_passes, small.weight_bytes) == (16, 16 * 4608)
    tiny_rf = npu.model_copy(update={"register_file": npu.register_file.model_copy(update={"capacity_kib": 0.5})})
    assert tiny_rf.op_energy_j(FULL) == pytest.approx((36_864 + 14_745.6 + 73_728 + 2304 + 512) * 1e-12, rel=1e-12)
    # per access instead of per byte: 4 pJ per 4-byte word = 1 pJ per byte, the same energy
    per_access = npu.model_copy(update={"sram": npu.sram.model_validate(
        {"bytes_per_cycle": 4, "energy_pj_per_access": 4.0, "access_bytes": 4})})
    assert per_access.op_energy_j(FULL) == pytest.approx(59_033.6e-12, rel=1e-12)


def test_inputs_that_do_not_fit_the_sram_cross_the_activation_port_once_per_pass():
    # FULL on a 1 GB/s (1 byte per cycle) port with a 0.5 KiB SRAM: its 576 B of input do not fit, so they cross
    # the port once per output-channel pass: (576 * 4 + 512) B = 2816 ns > 1856 (SRAM port) > 1152 (compute)
    npu = _npu().model_copy(update={"bandwidth_gb_s": 1.0})
    small = npu.model_copy(update={"sram": npu.sram.model_copy(update={"capacity_kib": 0.5})})
    assert small.latency(FULL) == pytest.approx(2816 * NS, rel=1e-12)
    # with room for them (1 KiB), once: (576 + 512) B = 1088 ns < 1856 ns: the SRAM port bounds again
    roomy = npu.model_copy(update={"sram": npu.sram.model_copy(update={"capacity_kib": 1.0})})
    assert roomy.latency(FULL) == pytest.approx(1856 * NS, rel=1e-12)


# ----------------------------------------------------------------------------------- vector unit, by hand


def test_vector_op_latency_and_energy_by_hand():
    npu = _npu()
    softmax = Op(name="s", op_type="Softmax", n_in=1000, n_out=1000, bits=8)
    # 1000 elements at 4 per cycle = 250 ns; SRAM 2000 B / 4 = 500 ns: SRAM-bound
    assert npu.latency(softmax) == pytest.approx(500 * NS, rel=1e-12)
    # energy: 0.25 pJ x 1000 elements + 1 pJ x 2000 B = 2250 pJ
    assert npu.op_energy_j(softmax) == pytest.approx(2250e-12, rel=1e-12)
    # MaxPool 2x2 of 16 x 8 x 8 -> 16 x 4 x 4: its work is its 1024 input elements, at 8 per cycle = 128 ns;
    # SRAM (1024 + 256) / 4 = 320 ns
    pool = Op(name="p", op_type="MaxPool", n_in=1024, n_out=256, bits=8)
    assert npu.latency(pool) == pytest.approx(320 * NS, rel=1e-12)
    # without the SRAM's port width the unit's own rate shows: 128 ns, and Add's 512 outputs at 16 = 32 ns
    free = npu.model_copy(update={"sram": None})
    assert free.latency(pool) == pytest.approx(128 * NS, rel=1e-12)
    add = Op(name="a", op_type="Add", n_in=1024, n_out=512, bits=8)
    assert free.latency(add) == pytest.approx(32 * NS, rel=1e-12)
    assert free.op_energy_j(add) == pytest.approx(0.25 * 512 * 1e-12, rel=1e-12)
    # a vector op runs without weights; an op type in neither table does not run here
    assert npu.supports(softmax) and npu.latency(Op(name="r", op_type="Relu", n_in=8, n_out=8)) is None


def test_vector_ops_run_on_the_npu_in_a_whole_model():
    from hetsim.costs import CostModel

    wl = load_workload(ROOT / "workloads" / "yolov5n.onnx")
    costs = CostModel(wl, load_platform(TEST_PLATFORM))
    on_npu = {wl.op(n).op_type for n in wl.ops if "npu" in costs.latency[n]}
    assert {"Conv", "Sigmoid", "Mul", "Add", "MaxPool"} <= on_npu
    assert "Concat" not in on_npu and "Resize" not in on_npu


# ------------------------------------------------------------------------- no array: the roofline, exactly


def _roofline(npu, op: Op) -> float:
    """The NPU's roofline as it was written before the dataflow model (docs/models.md, "NPU")."""
    wider = [w for w in sorted(npu.macs_per_cycle) if w >= npu.element_bits]
    rate = npu.clock_mhz * 1e6 * npu.macs_per_cycle[wider[0] if wider else max(npu.macs_per_cycle)]
    t = op.macs / rate if op.macs > 0 else op.n_out / (npu.clock_mhz * 1e6 * npu.elementwise_per_cycle)
    return npu.op_overhead_us * 1e-6 + max(t, (op.n_in + op.n_out) * npu.element_bits / 8 / (npu.bandwidth_gb_s * 1e9))


@pytest.mark.parametrize("model", ["yolov5n", "mobilenet_v2", "resnet18_int8_qdq"])
def test_platforms_without_an_array_keep_the_roofline_exactly(model):
    wl = load_workload(ROOT / "workloads" / f"{model}.onnx")
    checked = 0
    for plat in ("cim-npu.yaml", "soc-2npu.yaml"):
        for dev in load_platform(PLATFORMS / plat).devices.values():
            if not hasattr(dev, "array"):
                continue
            assert dev.array is None and not dev.vector_ops
            for op in wl.ops.values():
                if dev.supports(op):
                    assert dev.latency(op) == _roofline(dev, op), (plat, op.name)
                    assert dev.op_energy_j(op) == dev.energy_pj_per_mac * 1e-12 * op.macs
                    checked += 1
                else:
                    assert dev.latency(op) is None
    assert checked > 0


def test_an_array_without_memories_is_the_roofline_when_every_op_fills_it():
    # macs_per_cycle 64 and array 8 x 8 agree; FULL fills the array, so both give 1152 cycles
    npu = _npu().model_copy(update={"register_file": None, "sram": None})
    roof = npu.model_copy(update={"array": None, "macs_per_cycle": {8: 64}})
    assert npu.latency(FULL) == roof.latency(FULL) == pytest.approx(1152 * NS, rel=1e-12)
    assert npu.op_energy_j(FULL) == roof.op_energy_j(FULL) == 0.5e-12 * 73_728
    # FIRST does not: 1152 cycles on the array, 27,648 / 64 = 432 on the roofline
    assert roof.latency(FIRST) == pytest.approx(432 * NS, rel=1e-12)
    assert npu.latency(FIRST) == pytest.approx(1152 * NS, rel=1e-12)


# ------------------------------------------------------------------------------ platform YAML: one line each


def _load_with(tmp_path, **npu_fields):
    data = yaml.safe_load(TEST_PLATFORM.read_text())
    for k, v in npu_fields.items():
        if v is None:
            data["devices"]["npu"].pop(k, None)
        else:
            data["devices"]["npu"][k] = v
    p = tmp_path / "p.yaml"
    p.write_text(yaml.safe_dump(data, sort_keys=False))
    return load_platform(p)


@pytest.mark.parametrize("fields, message", [
    ({"array": {"K": 8, "Ox": 8}}, "devices.npu.array: unknown loop dimension 'Ox'; did you mean 'OX'?"),
    ({"array": {"K": 0, "C": 8}}, "devices.npu.array: K is unrolled 0 times; an unroll is a whole number >= 1"),
    ({"array": {}}, "devices.npu.array: give at least one unrolled dimension"),
    ({"array": {"K": 8, "C": 8}, "macs_per_cycle": {8: 256}},
     "array K 8 x C 8 has 64 MACs per cycle, macs_per_cycle 256 at 8 bits"),
    ({"array": None, "macs_per_cycle": {8: 64}},
     "register_file: its traffic follows the MAC array's unrolling; give array too"),
    ({"vector_ops": {"Sofmax": 4}}, "devices.npu.vector_ops: unknown op type 'Sofmax'"),
    ({"vector_ops": {"Conv": 4}}, "Conv is in both supported_ops and vector_ops"),
    ({"vector_ops": {"Softmax": 0}}, "devices.npu.vector_ops.Softmax: Input should be greater than 0"),
    ({"sram": {"energy_pj_per_access": 4.0}}, "energy_pj_per_access and access_bytes go together"),
    ({"sram": {"sram_kib": 4}}, "devices.npu.sram.sram_kib: unknown field"),
    ({"array": {"G": 8, "C": 8}, "groups_on_k_lanes": True}, "groups_on_k_lanes: the array unrolls G itself"),
])
def test_bad_dataflow_fields_are_one_line(tmp_path, fields, message):
    with pytest.raises(PlatformError) as err:
        _load_with(tmp_path, **fields)
    text = str(err.value)
    assert message in text and "\n" not in text, text


def test_the_test_platform_loads_and_omits_macs_per_cycle(tmp_path):
    npu = _npu()
    assert npu.macs_per_cycle is None and npu.array == {"K": 8, "C": 8}
    assert npu.sram.pj_per_byte == 1.0 and npu.register_file.capacity_bytes == 2048
    # a platform with neither macs_per_cycle nor array is refused in one line
    with pytest.raises(PlatformError, match="give macs_per_cycle .* or array"):
        _load_with(tmp_path, array=None, register_file=None, sram=None)


def test_the_yaml_block_of_docs_extending_loads(tmp_path):
    import re

    doc = (ROOT / "docs" / "extending.md").read_text()
    section = doc.split("### Optional: the dataflow model and the vector unit", 1)[1]
    block = re.search(r"```yaml\n(.*?)```", section, re.S).group(1)
    npu = yaml.safe_load(block)["npu"]
    data = yaml.safe_load(TEST_PLATFORM.read_text())
    data["devices"]["npu"] = npu
    p = tmp_path / "p.yaml"
    p.write_text(yaml.safe_dump(data, sort_keys=False))
    dev = load_platform(p).devices["npu"]
    # its 8 x 8 array at 1 GHz, no dispatch cost: FIRST at 1152 cycles (SRAM 514, port 83 ns), as on the test platform
    assert dev.array == {"K": 8, "C": 8} and dev.latency(FIRST) == pytest.approx(1152 * NS, rel=1e-12)
