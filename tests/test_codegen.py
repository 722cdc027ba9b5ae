"""hetsim codegen without the toolchain: the firmware's arithmetic (its exact fixed-point sums, emulated in numpy,
round like the replay's), the emitted C (weights exactly, per residency and in the plan's order, the host
program in the schedule's order, hot columns), folder writing, output parsing and the command's bad inputs.
The build and the emulated runs are in test_codegen_qemu.py."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from conftest import assert_input_error, run_cli

from hetsim.codegen.firmware import exact_accumulator, network_c, network_h, prepare_firmware, write_firmware
from hetsim.codegen.toolchain import FirmwareError, category_names, parse_output
from hetsim.errors import OutputExistsError, WorkloadError
from hetsim.snn.activity import hot_order
from hetsim.snn.network import load_snn, replay

ROOT = Path(__file__).resolve().parents[1]
EFR = ROOT / "platforms" / "efr32mg24.yaml"
SNNS = sorted((ROOT / "workloads" / "snn").glob("*.yaml"))
NET = ROOT / "workloads" / "snn" / "braille64.yaml"


@pytest.fixture(scope="module")
def b64():
    return prepare_firmware(EFR, NET)


def fixed_point(w: np.ndarray, fx: int) -> np.ndarray:
    """The firmware's fx_f32 on every weight, int64 (snn_fw.h), written independently with numpy."""
    b = np.ascontiguousarray(w, np.float32).view(np.uint32).astype(np.int64)
    e, m = (b >> 23) & 0xFF, b & 0x7FFFFF
    m = np.where(e > 0, m | 0x800000, m)
    e = np.maximum(e, 1)
    v = np.where(m > 0, m << np.where(m > 0, e - fx, 0), 0)
    return np.where(b >> 31, -v, v)


@pytest.mark.parametrize("spec", SNNS, ids=lambda p: p.stem)
def test_fixed_point_sums_round_like_the_replay(spec):
    """Every affine sum of the eval split, as the firmware computes it (exact int64, rounded once to FP32),
    equals the float64 sum rounded to FP32 that replay(exact_sums=True) takes, bit for bit."""
    snn = load_snn(spec)
    rasters = snn.split("eval")
    for li, w in enumerate(snn.weights):
        fx, bits = exact_accumulator(w, "W")
        assert bits <= 63
        a = rasters[li].reshape(-1, w.shape[1])
        a = a[a.any(axis=1)][:2000]
        got = (a.astype(np.int64) @ fixed_point(w, fx).T).astype(np.float32) * np.float32(2.0 ** (fx - 150))
        want = (a.astype(np.float64) @ w.T.astype(np.float64)).astype(np.float32)
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), (spec.stem, li)


def test_exact_accumulator_by_hand():
    # 1.0 (biased exponent 127) and 0.5 (126): unit 2^(126 - 150), 24 + 1 binade + 1 bit for 2 columns
    assert exact_accumulator(np.array([[1.0, 0.5]], np.float32), "W") == (126, 26)
    assert exact_accumulator(np.zeros((2, 3), np.float32), "W") == (127, 0)
    # 384 columns: + 9 bits
    assert exact_accumulator(np.full((1, 384), 0.25, np.float32), "W") == (125, 33)
    with pytest.raises(WorkloadError, match="span 40 binades"):
        exact_accumulator(np.array([[1.0, 2.0 ** -40]], np.float32), "W")
    with pytest.raises(WorkloadError, match="below 2\\^-103"):
        exact_accumulator(np.array([[2.0 ** -110]], np.float32), "W")


def _c_array(text: str, name: str) -> list[str]:
    m = re.search(rf"\b{name}\[\d+\][^=]*= \{{(.*?)\}};", text, re.S)
    assert m, name
    return [v.strip() for v in m.group(1).replace("\n", " ").split(",") if v.strip()]


def test_emitted_c_follows_the_plan(b64):
    """braille64 (12-64-7): weights as FP32 literals that read back exactly, column-major, placed by residency;
    hot columns the fit split's hottest; the host program the schedule's order of the M33's ops."""
    fw = b64
    c = network_c(fw)
    for fl in fw.layers:
        vals = np.array([float(v.rstrip("f")) for v in _c_array(c, f"W{fl.layer}")], np.float32)
        assert np.array_equal(vals, fw.snn.weights[fl.layer - 1].T.ravel())  # exact, column j contiguous
        place = "FW_SRAM_WEIGHTS" if fl.residency == "sram" else "FW_FLASH_WEIGHTS"
        assert re.search(rf"static const float W{fl.layer}\[\d+\] {place} =", c)
        if fl.residency == "flash+hot":
            hot = [int(v) for v in _c_array(c, f"HOTCOLS{fl.layer}")]
            assert hot == hot_order(fw.snn.split("fit")[fl.layer - 1])[: fl.hot_columns].tolist()
            assert f"HOT{fl.layer}[" in c and "FW_HOT_WEIGHTS" in c
    enc = [int(v.rstrip("u"), 16) for v in _c_array(c, "fw_host_order")]
    kinds = ("program", "affine", "lif", "readout")
    decoded = [(kinds[e >> 30], (e >> 24) & 0x3F, e & 0xFFFFFF) for e in enc]
    host = fw.schedule.order[fw.costs.host]
    want = [n for n in host if not (n.startswith("program_")
                                    and fw.layers[int(n.split("_")[1].split("[")[0]) - 1].engine == "m33")]
    assert [fw.costs.workload.steps[n].name for n in want] == \
        [f"readout[{t}]" if k == "readout" else f"{k}_{layer}[{t}]" for k, layer, t in decoded]
    # T = 100 timesteps of program_1 (MVP layer), affine_2 (M33 layer), lif_1, lif_2, readout
    assert len(decoded) == 100 * 5
    h = network_h(fw)
    assert "#define FW_SAMPLES 100" in h and "#define FW_ASYNC 1" in h and "#define FW_L1_ON_MVP 1" in h
    inputs = np.array([int(v) for v in _c_array(c, "fw_inputs")], np.uint8)
    assert np.array_equal(np.unpackbits(inputs, bitorder="little").reshape(100, 100, 16)[..., :12],
                          fw.snn.split("eval")[0])


def test_reordered_firmware_stores_the_plans_order():
    fw = prepare_firmware(EFR, NET, reorder=True)
    perm = fw.reordering.perms[1]
    orig = load_snn(NET)
    assert not np.array_equal(perm, np.arange(64))
    assert np.array_equal(fw.layers[0].weights, orig.weights[0][perm, :])
    assert np.array_equal(fw.layers[1].weights, orig.weights[1][:, perm])
    ref, want = fw.reference(), replay(orig, orig.split("eval")[0], exact_sums=True)
    assert np.array_equal(ref.prediction, want.prediction)
    assert np.array_equal(ref.spikes[-1], want.spikes[-1])


def test_mvp_fp16_tables_and_reference(b64):
    fw = prepare_firmware(EFR, NET, mvp_fp16=True)
    mvp = [fl for fl in fw.layers if fl.engine != "m33"]
    assert mvp and all(fl.elem == "f16" for fl in mvp)
    c = network_c(fw)
    for fl in mvp:
        bits = np.array([int(v, 16) for v in _c_array(c, f"W{fl.layer}")], np.uint16)
        assert np.array_equal(bits.view(np.float16).astype(np.float32), fl.weights.T.ravel())
        assert np.array_equal(fl.weights, fw.snn.weights[fl.layer - 1].astype(np.float16).astype(np.float32))
    assert fw.reference_network().weights[0] is mvp[0].weights
    # the M33's tables stay FP32
    assert all(fl.elem == "f32" for fl in fw.layers if fl.engine == "m33")


def test_write_firmware_refuses_to_overwrite(b64, tmp_path):
    out = tmp_path / "fw"
    files = {p.name for p in write_firmware(b64, out)}
    assert {"Makefile", "network.c", "network.h", "mvp.h", "mvp_standin.c", "runtime.c", "startup.c",
            "mps2_an505.ld"} <= files
    (out / "mine.txt").write_text("x")
    with pytest.raises(OutputExistsError):
        write_firmware(b64, out)
    write_firmware(b64, out, force=True)
    assert not (out / "mine.txt").exists() and (out / "network.c").is_file()
    assert not list(tmp_path.glob(".fw*"))  # no temporary folder left behind


def _output(samples=2, extra=""):
    lines = ["hetsim-fw x samples 2 T 3 layers 2"]
    for s in range(samples):
        lines.append(f"S {s} 1 0 3 | 0 40400000 | 5 3")
    lines += ["R 1 0 0", "R 2 7 9", "C 512000 200000", "K 256", "P 0 0 10", "P 2 1 5", extra, "E"]
    return "\n".join(lines)


def test_parse_output():
    r = parse_output(_output(), 2, 2)
    assert r.predictions.tolist() == [1, 1] and r.counts.tolist() == [[0, 3], [0, 3]]
    assert r.msum_bits[0].view(np.float32).tolist() == [0.0, 3.0]
    assert r.layer_spikes.tolist() == [[5, 3], [5, 3]] and r.launches.tolist() == [0, 7]
    assert r.ticks[2] == 2**32 + 5 and r.stack_bytes == 256
    assert r.instructions[0] == pytest.approx(10 * 200000 / 512000)
    assert category_names(2)[2] == ("affine", 1) and len(category_names(2)) == 10
    with pytest.raises(FirmwareError, match="stopped: MVP stand-in"):
        parse_output(_output(extra="FAIL MVP stand-in: input is not a spike"), 2, 2)
    with pytest.raises(FirmwareError, match="incomplete"):
        parse_output(_output().replace("\nE", ""), 2, 2)


def test_codegen_writes_a_folder(capsys, tmp_path):
    code, out, err = run_cli(capsys, "codegen", EFR, NET, "-o", tmp_path / "fw")
    assert code == 0, err
    assert "layer 1 (12 -> 64): mvp-range, sram" in out and "make -C" in out
    assert (tmp_path / "fw" / "network.c").is_file()


def test_codegen_help_lists_it(capsys):
    with pytest.raises(SystemExit):
        run_cli(capsys, "--help")
    assert "codegen" in capsys.readouterr().out


@pytest.mark.parametrize("argv, needles", [
    (["codegen", EFR, ROOT / "workloads" / "yolov5n.onnx", "-o", "{tmp}/a"], ["spiking network", ".yaml"]),
    (["codegen", ROOT / "platforms" / "puma.yaml", NET, "-o", "{tmp}/a"], ["cortex-m"]),
    (["codegen", EFR, ROOT / "workloads" / "snn" / "missing.yaml", "-o", "{tmp}/a"], ["missing.yaml"]),
    (["codegen", EFR, NET, "-o", "{tmp}/full"], ["exists", "--force"]),
    (["codegen", EFR, NET, "-o", "{tmp}/afile"], ["is a file"]),
])
def test_codegen_bad_input(capsys, tmp_path, argv, needles):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    (tmp_path / "afile").write_text("x")
    code, _, err = run_cli(capsys, *[str(a).replace("{tmp}", str(tmp_path)) for a in argv])
    assert_input_error(code, err, *needles)


def test_codegen_without_the_toolchain_names_the_packages(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    code, _, err = run_cli(capsys, "codegen", EFR, NET, "-o", tmp_path / "fw", "--run")
    assert_input_error(code, err, "not found", "gcc-arm-none-eabi", "qemu-system-arm")
    assert not (tmp_path / "fw").exists()  # checked before any work


def test_codegen_from_a_nir_graph(capsys, tmp_path):
    """A NIR graph with its input raster gives the same firmware data as the spec it was exported from."""
    nir_path = tmp_path / "b64.nir"
    code, _, err = run_cli(capsys, "export-nir", NET, "-o", nir_path)
    assert code == 0, err
    fw = prepare_firmware(EFR, nir_path, spikes=ROOT / "workloads" / "snn" / "braille7_12-64-7_T100.npz")
    spec = prepare_firmware(EFR, NET)
    assert np.array_equal(fw.inputs, spec.inputs)
    assert [(fl.engine, fl.residency, fl.hot_columns) for fl in fw.layers] == \
        [(fl.engine, fl.residency, fl.hot_columns) for fl in spec.layers]
    for a, b in zip(fw.layers, spec.layers, strict=True):
        assert np.array_equal(a.weights, b.weights)
    assert np.array_equal(fw.reference().prediction, spec.reference().prediction)
