"""``hetsim check`` and the platform's data sheet (hetsim/datasheet.py, ``DeviceBase.peaks``): derived peaks worked
out by hand from the shipped platforms' fields, each warning triggered by tests/data/check-warnings.yaml, and
``hetsim run`` printing the warnings once and "not modelled" for a device without an energy figure."""

from __future__ import annotations

import pytest
from conftest import ROOT, assert_input_error, run_cli

from hetsim.datasheet import platform_warnings
from hetsim.platform import load_platform
from hetsim.report.units import eng

PLATFORMS = ROOT / "platforms"
WARN = ROOT / "tests" / "data" / "check-warnings.yaml"


def peaks(platform: str, device: str):
    return load_platform(PLATFORMS / platform).devices[device].peaks()


@pytest.mark.parametrize(("platform", "device", "precision", "macs_per_s"), [
    # cim-npu's NPU: 256 MAC/cycle x 1 GHz = 2.56e11 MAC/s = 0.512 TOPS at 2 operations per MAC
    ("cim-npu.yaml", "npu", "8-bit", 256 * 1e9),
    # the Cortex-A72 host: 1 core x 1.5 GHz x 8 int8 MAC/cycle, and 4 fp32 FMA/cycle
    ("cim-npu.yaml", "host", "8-bit", 1 * 1.5e9 * 8),
    ("cim-npu.yaml", "host", "32-bit", 1 * 1.5e9 * 4),
    # soc-2npu: two A55 cores x 1.7 GHz x 16 int8 MAC/cycle; the U55-128 at 500 MHz
    ("soc-2npu.yaml", "host", "8-bit", 2 * 1.7e9 * 16),
    ("soc-2npu.yaml", "npu_small", "8-bit", 128 * 500e6),
    # PUMA: 100 crossbars of 256 x 256 MACs, all in parallel, one MVM per 50 ns
    ("puma.yaml", "cim", "8-bit", 100 * 256 * 256 / 50e-9),
    # DIANA: 16 x 16 PEs at 260 MHz; the AIMC's 1152 x 512 cells per 70 ns activation
    ("diana.yaml", "digital", "8-bit", 16 * 16 * 260e6),
    ("diana.yaml", "aimc", "ternary", 1152 * 512 / 70e-9),
    # EFR32MG24: one FP32 weight element per 3.65 cycles on the M33, one FP16 element per 0.5 cycle on the MVP
    ("efr32mg24.yaml", "m33", "32-bit", 39e6 / 3.65),
    ("efr32mg24.yaml", "mvp", "16-bit", 39e6 / 0.5),
])
def test_peaks_of_the_shipped_devices_by_hand(platform, device, precision, macs_per_s):
    p = peaks(platform, device)
    assert p.macs_per_s[precision] == pytest.approx(macs_per_s, rel=1e-12)
    assert p.tops(precision) == pytest.approx(2 * macs_per_s / 1e12, rel=1e-12)


def test_npu_peak_is_0_512_tops_and_an_array_gives_its_lanes():
    assert peaks("cim-npu.yaml", "npu").tops("8-bit") == pytest.approx(0.512)
    # tests/data/npu-dataflow.yaml: array {K: 8, C: 8} at 1 GHz = 64 GMAC/s; its SRAM port 4 B/cycle = 4 GB/s
    npu = load_platform(ROOT / "tests" / "data" / "npu-dataflow.yaml").devices["npu"].peaks()
    assert npu.macs_per_s == {"8-bit": pytest.approx(64e9)}
    assert npu.ports_b_s["sram"] == pytest.approx(4e9)


def test_ports_and_clocks_by_hand():
    host = peaks("puma.yaml", "host")
    assert host.ports_b_s == {"memory": pytest.approx(5.5e9)} and host.clock_hz == pytest.approx(1.5e9)
    cim = peaks("puma.yaml", "cim")
    assert cim.clock_hz is None and cim.ports_b_s == {"internal bus": pytest.approx(10.24e9)}
    assert peaks("diana.yaml", "digital").ports_b_s == {"load/store": pytest.approx(8 * 260e6)}


def test_shipped_platforms_warn_only_about_dianas_host():
    for path in sorted(PLATFORMS.glob("*.yaml")):
        got = platform_warnings(load_platform(path))
        if path.name == "diana.yaml":  # ODiMO's energy model counts the accelerators only
            assert got == ["devices.host (cpu): no power figure (active_w and idle_w are 0): its energy is not "
                           "modelled (reported as such, not as 0 J)"]
        elif path.name == "stream-tpu-quad.yaml":  # Stream's cost model: energy per operation, no static power
            cores = ("npu0", "npu1", "npu2", "npu3", "pool", "simd")
            assert got == ["devices.ctrl (cpu): no power figure (active_w and idle_w are 0): its energy is not "
                           "modelled (reported as such, not as 0 J)"] + [
                f"devices.{c} (npu): no power figure (active_w and idle_w are 0): only its energy per operation "
                "is counted, no static or active power" for c in cores]
        else:
            assert got == [], (path.name, got)


def test_each_warning_on_the_warnings_platform():
    got = platform_warnings(load_platform(WARN))
    assert len(got) == 5, got
    assert got[0].startswith("devices.cim (puma): active_w 400 W per unit is outside the plausible 1 uW - 300 W")
    assert got[1].startswith("devices.slow (npu): clock 800 kHz is outside the plausible 1 MHz - 5 GHz")
    assert got[2].startswith("devices.island (npu): no link joins it to the host 'host'")
    assert got[2].endswith("so its ops exchange tensors with no other device")
    assert got[3].startswith("devices.island (npu): no power figure") and "not modelled" in got[3]
    assert got[4] == "devices.hot (npu): idle_w 500 mW is above active_w 100 mW"


def test_a_shared_memory_joins_a_device_to_the_host():
    # DIANA has no links: its accelerators reach the host through the shared L1, so nothing warns of reach
    assert not any("no link" in w for w in platform_warnings(load_platform(PLATFORMS / "diana.yaml")))


def test_check_command_prints_the_sheet_and_the_warnings(capsys):
    code, out, err = run_cli(capsys, "check", PLATFORMS / "cim-npu.yaml")
    assert code == 0, err
    npu = out.split("    npu (npu, clock 1 GHz)")[1]
    assert "peak 8-bit        256 GMAC/s      512 GOPS" in npu.splitlines()[1]
    assert "port activation port  16 GB/s" in npu and "capacity weight_memory 1 MiB (resident)" in npu
    assert "power 100 mW active, 10 mW idle" in npu
    assert "bus: 10.24 GB/s, latency 0 s, joins host, cim, npu; energy not modelled" in out
    assert out.rstrip().endswith("no warnings")
    code, out, err = run_cli(capsys, "check", WARN)
    assert code == 0, err  # warnings are advice: exit 0
    assert "5 warnings:" in out and out.count("    warning: devices.") == 5
    assert "      power not modelled" in out.split("    island (npu")[1]


def test_check_takes_set_and_refuses_an_invalid_platform(capsys, tmp_path):
    code, out, err = run_cli(capsys, "check", PLATFORMS / "puma.yaml", "--set", "devices.host.clock_ghz=9")
    assert code == 0, err
    assert "devices.host (cpu): clock 9 GHz is outside the plausible 1 MHz - 5 GHz" in out
    assert "peak 8-bit         72 GMAC/s" in out  # 1 core x 9 GHz x 8 MAC/cycle
    bad = tmp_path / "bad.yaml"
    bad.write_text("devices: {host: {kind: cpu, clock_ghz: 1}}\n")
    code, out, err = run_cli(capsys, "check", bad)
    assert_input_error(code, err, "macs_per_cycle")
    code, _, err = run_cli(capsys, "check", tmp_path / "missing.yaml")
    assert_input_error(code, err, "does not exist")


def test_run_warns_once_and_reports_energy_not_modelled(capsys):
    code, out, err = run_cli(capsys, "run", PLATFORMS / "diana.yaml", ROOT / "workloads" / "resnet20_cifar10.onnx",
                             "--mapper", "all-8bit")
    assert code == 0, err
    assert err.count("hetsim: warning: devices.host (cpu): no power figure") == 1, err
    host = next(line for line in out.splitlines() if line.startswith("  host "))
    assert host.endswith("not modelled") and "0.000" not in host.split("%")[1]
    digital = next(line for line in out.splitlines() if line.startswith("  digital "))
    assert digital.endswith(" uJ")  # a device with power figures keeps its number


def test_eng_format():
    assert eng(2.56e11, "MAC/s") == "256 GMAC/s"
    assert eng(0.0042986, "W") == "4.299 mW"
    assert eng(999.96, "W") == "1 kW"
    assert eng(1e-6, "W") == "1 uW"
    assert eng(0, "W") == "0 W" and eng(None, "W") == "-"


def test_default_peaks_read_the_generic_fields():
    """A kind that does not override ``peaks`` (a plug-in's) gets them from its fields by their units."""
    from typing import Literal

    from hetsim.devices.base import DeviceBase

    class Dsp(DeviceBase):
        kind: Literal["dsp-test"] = "dsp-test"
        clock_mhz: float = 200.0
        macs_per_cycle: dict[int, float] = {16: 4, 8: 8}
        dma_bandwidth_gb_s: float = 2.0

        def latency(self, op):
            return None

    p = Dsp()
    pk = p.peaks()
    assert pk.clock_hz == 200e6
    assert pk.macs_per_s == {"8-bit": pytest.approx(200e6 * 8), "16-bit": pytest.approx(200e6 * 4)}
    assert pk.ports_b_s == {"dma bandwidth": pytest.approx(2e9)}
    assert not p.energy_modelled and Dsp(active_w=0.1).energy_modelled


def test_a_scenario_run_warns_once(capsys, tmp_path):
    scenario = tmp_path / "tiny.yaml"
    scenario.write_text(f"name: tiny\nstreams:\n  a:\n    model: {ROOT / 'workloads' / 'resnet20_cifar10.onnx'}\n"
                        "    arrival: {process: periodic, period_s: 0.01}\n    count: 3\n")
    code, out, err = run_cli(capsys, "run", PLATFORMS / "puma.yaml", scenario, "--set", "devices.host.active_w=0",
                             "--set", "devices.host.idle_w=0")
    assert code == 0, err
    assert err.count("hetsim: warning: devices.host (cpu): no power figure") == 1, err
    host = next(line for line in out.splitlines() if line.startswith("  host "))
    assert host.endswith("not modelled")


def test_the_devices_a_tensor_from_the_host_reaches(tmp_path):
    """By hand: check-warnings.yaml's bus joins host, cim, slow and hot; island has no link and no memory. A device
    joined only through another accelerator (island over a second link from slow) is reached, through slow."""
    plat = load_platform(WARN)
    assert plat.reachable_from_host() == {"host", "cim", "slow", "hot"}
    chained = plat.with_overrides({"links.bus.connects": ["host", "cim", "slow"],
                                   "links.side": {"bandwidth_gb_s": 1, "connects": ["slow", "island"]}})
    assert chained.reachable_from_host() == {"host", "cim", "slow", "island"}  # hot is joined to nothing now


@pytest.mark.parametrize(("mapper", "options"), [("heft", {}), ("greedy", {}), ("ilp", {}),
                                                 ("cpsat", {"work_limit": 0.5})])
def test_no_mapper_puts_an_op_on_a_device_the_host_cannot_reach(mapper, options):
    """The island NPU runs ResNet-20's convolutions (it is a candidate for 22 ops once the bus joins it), but no
    link brings the model's inputs to it: it is no op's candidate, every mapper maps without it and the replay
    runs (heft had put the first Conv there, its graph input needing no transfer, then found no link for the
    next op)."""
    from hetsim.costs import CostModel
    from hetsim.mappers import get_mapper
    from hetsim.sim import simulate
    from hetsim.workload import load_onnx

    plat = load_platform(WARN)
    wl = load_onnx(ROOT / "workloads" / "resnet20_cifar10.onnx")
    joined = CostModel(wl, plat.with_overrides({"links.bus.connects": ["host", "cim", "slow", "hot", "island"]}))
    assert sum("island" in lat for lat in joined.latency.values()) == 22
    costs = CostModel(wl, plat)
    assert not any("island" in lat for lat in costs.latency.values())
    sched = get_mapper(mapper, **options).map(costs)
    assert "island" not in set(sched.assignment.values())
    assert not sched.splits
    r = simulate(costs, sched)
    assert r.makespan_s > 0
    assert set(r.trace["device"]) <= {"host", "cim", "slow", "hot"} | set(plat.links)


def test_heft_runs_on_a_platform_with_an_unreachable_device(capsys):
    """``hetsim run`` with heft on check-warnings.yaml: exit 0, the island's row with 0 ops, the warning once."""
    code, out, err = run_cli(capsys, "run", WARN, ROOT / "workloads" / "resnet20_cifar10.onnx", "--mapper", "heft")
    assert code == 0, err
    assert err.count("devices.island (npu): no link joins it to the host") == 1, err
    island = next(line for line in out.splitlines() if line.startswith("  island "))
    assert island.split()[2] == "0", island



def test_a_bandwidth_far_below_any_bus_or_memory_is_warned_about(capsys):
    """bandwidth_gb_s 1e-300 validates (it is positive) and means nothing: a warning per link, memory and weight
    port below 1 kB/s, naming the field and its value; 1e-6 GB/s (1 kB/s) itself passes."""
    code, out, err = run_cli(capsys, "check", PLATFORMS / "cim-npu-dram.yaml",
                             "--set", "memories.dram.bandwidth_gb_s=1e-300", "--set", "links.bus.bandwidth_gb_s=1e-6",
                             "--set", "memories.dram.weights_for.npu.bandwidth_gb_s=9e-7")
    assert code == 0, err
    found = [ln.strip() for ln in out.splitlines() if "below the plausible" in ln]
    assert found == ["warning: memories.dram: bandwidth_gb_s 1e-300 is below the plausible 1e-06 GB/s (1 kB/s; a "
                     "unit slip? the field is in GB/s)",
                     "warning: memories.dram.weights_for.npu: bandwidth_gb_s 9e-07 is below the plausible 1e-06 GB/s "
                     "(1 kB/s; a unit slip? the field is in GB/s)"], out
