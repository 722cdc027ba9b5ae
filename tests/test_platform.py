"""Tests of platform loading and validation (hetsim.platform) and of the shipped platform YAML files."""

from __future__ import annotations

import re

import pytest
import yaml
from conftest import PLATFORMS, conv_op, host_op, make_platform, ns
from pydantic import ValidationError

from hetsim.costs import CostModel
from hetsim.devices import CpuDevice, PumaDevice
from hetsim.errors import InputError, PlatformError
from hetsim.platform import Platform, load_platform
from hetsim.workload import Workload

SHIPPED = sorted(PLATFORMS.glob("*.yaml"))


def _puma_yaml() -> dict:
    return yaml.safe_load((PLATFORMS / "puma.yaml").read_text())


def _write(tmp_path, data, name="p.yaml"):
    p = tmp_path / name
    p.write_text(data if isinstance(data, str) else yaml.safe_dump(data))
    return p


# ---------------------------------------------------------------------------------- shipped files


@pytest.mark.parametrize(
    ("name", "bus_gb_s", "platform_name"), [("puma.yaml", 10.24, "puma-arm"), ("puma-x86.yaml", 20.48, "puma-x86")]
)
def test_shipped_platforms_load(name, bus_gb_s, platform_name):
    p = load_platform(PLATFORMS / name)
    assert p.name == platform_name
    assert p.host == "host"
    assert isinstance(p.host_device, CpuDevice) and p.host_device.cores == 1  # CPU-CIM ILP: single-core host
    cim = p.devices["cim"]
    assert isinstance(cim, PumaDevice)
    assert cim.crossbars == 100  # CPU-CIM ILP Sec. V: C = 100 (cores * crossbars_per_core)
    assert (cim.crossbar_rows, cim.crossbar_cols) == (256, 256)
    assert cim.element_bits == 8
    assert p.links["bus"].bandwidth_gb_s == bus_gb_s
    assert cim.internal_bandwidth_gb_s == bus_gb_s  # internal CIM bus matches the shared bus
    assert p.link_between("host", "cim") is p.links["bus"]
    assert p.link_between("cim", "host") is p.links["bus"]
    assert p.devices["host"].name == "host" and p.links["bus"].name == "bus"


def test_shipped_platform_files_exist():
    assert {p.name for p in SHIPPED} >= {"puma.yaml", "puma-x86.yaml"}


NUMBER_LINE = re.compile(r"^\s*[\w.-]+\s*:\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*(#.*)?$")


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_every_number_in_shipped_yaml_has_a_comment(path):
    bad = []
    checked = 0
    for i, line in enumerate(path.read_text().splitlines(), start=1):
        m = NUMBER_LINE.match(line)
        if m:
            checked += 1
            if not (m.group(3) or "").strip("# "):
                bad.append(f"{path.name}:{i}: {line.strip()}")
    assert checked >= 15  # the regex does find the number lines
    assert not bad, "numbers without a source/assumption comment:\n" + "\n".join(bad)


def test_number_line_regex():
    assert NUMBER_LINE.match("    t_mvm_ns: 50   # seed")
    assert NUMBER_LINE.match("      8: 8")
    assert NUMBER_LINE.match("  x: 1e9")
    assert not NUMBER_LINE.match("  name: puma-arm")
    assert not NUMBER_LINE.match("  connects: [host, cim]")


# ------------------------------------------------------------------------------------------ errors


def test_platform_error_is_input_error():
    assert issubclass(PlatformError, InputError)


def test_missing_file(tmp_path):
    with pytest.raises(PlatformError, match="does not exist"):
        load_platform(tmp_path / "nope.yaml")


def test_invalid_yaml_syntax(tmp_path):
    p = _write(tmp_path, "name: x\ndevices: [host\n  bad: {\n")
    with pytest.raises(PlatformError, match="not valid YAML"):
        load_platform(p)


def test_not_a_mapping(tmp_path):
    with pytest.raises(PlatformError, match="mapping"):
        load_platform(_write(tmp_path, "- 1\n- 2\n"))


def test_unknown_field_names_dotted_path(tmp_path):
    text = (PLATFORMS / "puma.yaml").read_text().replace("t_mvm_ns:", "t_mvm_nss:")
    with pytest.raises(PlatformError) as exc:
        load_platform(_write(tmp_path, text))
    msg = str(exc.value)
    assert "devices.cim.t_mvm_nss: unknown field" in msg
    assert "devices.cim.t_mvm_ns" in msg  # the correct name is now missing too


def test_unknown_top_level_field(tmp_path):
    d = _puma_yaml()
    d["linkz"] = {}
    with pytest.raises(PlatformError, match="linkz: unknown field"):
        load_platform(_write(tmp_path, d))


@pytest.mark.parametrize(("old", "new", "msg"), [
    ("crossbars: 100", "crossbar: 100", "devices.cim.crossbar: unknown field; did you mean 'crossbars'?"),
    ("clock_ghz:", "clock_gz:", "devices.host.clock_gz: unknown field; did you mean 'clock_ghz'?"),
    ("latency_ns: 0", "latency_n: 0", "links.bus.latency_n: unknown field; did you mean 'latency_ns'?"),
    ("links:", "linkz:", "linkz: unknown field; did you mean 'links'?"),
    ("t_mvm_ns: 50", "zzz: 50", "devices.cim.zzz: unknown field\n"),  # nothing close: no suggestion
    ("kind: puma", "kind: pmua", "devices.cim: unknown device kind 'pmua'; did you mean 'puma'? Allowed: cpu, puma, "),
    ("kind: puma", "kind: xyz", "devices.cim: unknown device kind 'xyz'; allowed: cpu, puma, "),
    ("    kind: puma\n", "", "devices.cim: no 'kind'; a device needs one of: cpu, puma, "),
])
def test_misspelt_field_or_kind_gets_the_closest_name(tmp_path, old, new, msg):
    text = (PLATFORMS / "puma.yaml").read_text()
    assert old in text
    with pytest.raises(PlatformError) as exc:
        load_platform(_write(tmp_path, text.replace(old, new, 1)))
    assert msg in str(exc.value) + "\n"  # a message ending in \n is the end of its line


def test_misspelt_field_of_a_kind_registered_at_run_time(tmp_path):
    from typing import Literal

    from hetsim.devices import DeviceBase, register_kind, unregister_kind

    class Gizmo(DeviceBase):
        kind: Literal["gizmo"] = "gizmo"
        widgets: int = 1

    register_kind(Gizmo)
    try:
        d = _puma_yaml()
        d["devices"]["g"] = {"kind": "gizmo", "widget": 3}
        with pytest.raises(PlatformError, match="devices.g.widget: unknown field; did you mean 'widgets'"):
            load_platform(_write(tmp_path, d))
        d["devices"]["g"] = {"kind": "gizmoo"}
        with pytest.raises(PlatformError, match="unknown device kind 'gizmoo'; did you mean 'gizmo'"):
            load_platform(_write(tmp_path, d))
    finally:
        unregister_kind("gizmo")


def test_read_yaml_model_suggests_fields_of_nested_models(tmp_path):
    from pydantic import BaseModel, ConfigDict

    from hetsim.platform import read_yaml_model

    class Inner(BaseModel):
        model_config = ConfigDict(extra="forbid")
        beta: float = 0.9

    class Outer(BaseModel):
        model_config = ConfigDict(extra="forbid")
        lif: Inner | None = None
        layers: list[Inner] = []
        named: dict[str, Inner] = {}

    for doc, msg in [("lif: {betta: 1}", "lif.betta: unknown field; did you mean 'beta'?"),
                     ("layers: [{}, {bta: 1}]", "layers.1.bta: unknown field; did you mean 'beta'?"),
                     ("named: {a: {beat: 1}}", "named.a.beat: unknown field; did you mean 'beta'?"),
                     ("layer: []", "layer: unknown field; did you mean 'layers'?")]:
        with pytest.raises(InputError) as exc:
            read_yaml_model(_write(tmp_path, doc), Outer, InputError, "test file", "lif")
        assert msg in str(exc.value), doc


def test_wrong_type_names_path_and_value(tmp_path):
    d = _puma_yaml()
    d["devices"]["host"]["clock_ghz"] = "fast"
    with pytest.raises(PlatformError) as exc:
        load_platform(_write(tmp_path, d))
    assert "devices.host.clock_ghz" in str(exc.value)
    assert "'fast'" in str(exc.value)


def test_out_of_range_value(tmp_path):
    d = _puma_yaml()
    d["links"]["bus"]["bandwidth_gb_s"] = -1
    with pytest.raises(PlatformError, match=r"links\.bus\.bandwidth_gb_s.*-1"):
        load_platform(_write(tmp_path, d))


def test_missing_required_field(tmp_path):
    d = _puma_yaml()
    del d["devices"]["cim"]["t_mvm_ns"]
    with pytest.raises(PlatformError, match=r"devices\.cim\.t_mvm_ns: required field is missing"):
        load_platform(_write(tmp_path, d))


def test_puma_needs_crossbars_or_cores(tmp_path):
    d = _puma_yaml()
    del d["devices"]["cim"]["crossbars"]
    with pytest.raises(PlatformError, match=r"devices\.cim: .*crossbars"):
        load_platform(_write(tmp_path, d))


def test_puma_cores_are_derived_from_crossbars_and_follow_overrides():
    p = load_platform(PLATFORMS / "puma.yaml")
    assert (p.devices["cim"].crossbars, p.devices["cim"].cores) == (100, 10)  # 100 / 10 per core
    q = p.with_overrides({"devices.cim.crossbars": 25})
    # ceil(25 / 10) = 3 cores: two full, the third holds 5
    assert (q.devices["cim"].cores, q.devices["cim"].core_capacities) == (3, [10, 10, 5])
    assert p.with_overrides({"devices.cim.crossbars": 200}).devices["cim"].cores == 20


def test_unknown_device_kind(tmp_path):
    d = _puma_yaml()
    d["devices"]["cim"]["kind"] = "gpu"
    with pytest.raises(PlatformError) as exc:
        load_platform(_write(tmp_path, d))
    msg = str(exc.value)
    assert "devices.cim" in msg and "'gpu'" in msg
    assert "cpu" in msg and "puma" in msg


def test_link_to_unknown_device(tmp_path):
    d = _puma_yaml()
    d["links"]["bus"]["connects"] = ["host", "gpu"]
    with pytest.raises(PlatformError, match=r"links\.bus\.connects.*'gpu'"):
        load_platform(_write(tmp_path, d))


def test_link_listing_a_device_twice(tmp_path):
    d = _puma_yaml()
    d["links"]["bus"]["connects"] = ["host", "host"]
    with pytest.raises(PlatformError, match="twice"):
        load_platform(_write(tmp_path, d))


def test_host_must_exist(tmp_path):
    d = _puma_yaml()
    d["host"] = "nope"
    with pytest.raises(PlatformError, match="'nope'"):
        load_platform(_write(tmp_path, d))


def test_no_cpu_and_no_host(tmp_path):
    d = _puma_yaml()
    del d["host"]
    del d["devices"]["host"]
    d["links"] = {}
    with pytest.raises(PlatformError, match="cpu"):
        load_platform(_write(tmp_path, d))


def test_host_defaults_to_first_cpu(tmp_path):
    d = _puma_yaml()
    del d["host"]
    assert load_platform(_write(tmp_path, d)).host == "host"


def test_host_must_be_a_cpu(tmp_path):
    d = _puma_yaml()
    d["host"] = "cim"
    with pytest.raises(PlatformError):
        load_platform(_write(tmp_path, d))


def test_model_validate_raises_validation_error_directly():
    with pytest.raises(ValidationError):
        Platform.model_validate({"devices": {}})


# ---------------------------------------------------------------------------------------- overrides


def test_with_overrides():
    p = load_platform(PLATFORMS / "puma.yaml")
    q = p.with_overrides({"devices.cim.t_mvm_ns": 100, "links.bus.bandwidth_gb_s": 1})
    assert q.devices["cim"].t_mvm_ns == 100
    assert q.links["bus"].bandwidth_gb_s == 1
    assert p.devices["cim"].t_mvm_ns == 50  # the original is untouched
    assert q.devices["cim"].name == "cim" and q.links["bus"].name == "bus"
    assert q.devices["host"].macs_per_cycle == p.devices["host"].macs_per_cycle  # int keys survive
    assert q.devices["cim"].crossbars == 100
    # the override changes the model: one MVM of a 1x1 conv costs 100 ns instead of 50
    wl = Workload.from_ops("t", [conv_op("c", 1, 1, 1, n_in=0, n_out=0)], [])
    assert CostModel(wl, q).phases["c"]["cim"][1] == ns(100)
    assert CostModel(wl, p).phases["c"]["cim"][1] == ns(50)


@pytest.mark.parametrize("path", ["devices.cim.nope", "devices.gpu.t_mvm_ns", "nope", "devices.cim.t_mvm_ns.x"])
def test_with_overrides_bad_path(path):
    p = load_platform(PLATFORMS / "puma.yaml")
    with pytest.raises(PlatformError, match="override"):
        p.with_overrides({path: 1})


@pytest.mark.parametrize(("path", "msg"), [
    ("devices.cim.crosbars", "override 'devices.cim.crosbars': device 'cim' (puma) has no field 'crosbars'; "
     "did you mean 'crossbars'?"),
    ("devices.cmi.crossbars", "override 'devices.cmi.crossbars': no device 'cmi'; did you mean 'cim'? "
     "(devices: host, cim)"),
    ("devices.gpu.t_mvm_ns", "override 'devices.gpu.t_mvm_ns': no device 'gpu'; devices: host, cim"),
    ("links.bsu.latency_ns", "no link 'bsu'; did you mean 'bus'? (links: bus)"),
    ("memories.l1.size_kib", "no memory 'l1'; no memories"),
    ("hots", "override 'hots': the platform has no field 'hots'; did you mean 'host'?"),
    ("nope", "the platform has no field 'nope'; fields: name, description, host, baseline, devices, links, memories"),
    ("devices.cim.t_mvm_ns.x", "devices.cim.t_mvm_ns is a value (50.0), not a mapping"),
    ("devices..x", "override 'devices..x': empty part in the dotted path"),
])
def test_with_overrides_names_the_part_that_does_not_exist(path, msg):
    p = load_platform(PLATFORMS / "puma.yaml")
    with pytest.raises(PlatformError) as exc:
        p.with_overrides({path: 1})
    assert msg in str(exc.value)


def test_with_overrides_inside_a_mapping_or_a_nested_model():
    p = load_platform(PLATFORMS / "puma.yaml")
    q = p.with_overrides({"devices.host.macs_per_cycle.8": 16, "devices.host.macs_per_cycle.16": 6})
    assert q.devices["host"].macs_per_cycle == {8: 16, 32: 4, 16: 6}  # one bit width changed, one added
    e = load_platform(PLATFORMS / "efr32mg24.yaml")
    f = e.with_overrides({"devices.mvp.elem_cycles.sram": 1})
    assert f.devices["mvp"].elem_cycles.sram == 1
    assert f.devices["mvp"].elem_cycles.flash == e.devices["mvp"].elem_cycles.flash
    with pytest.raises(PlatformError, match="devices.mvp.elem_cycles has no field 'sramm'; did you mean 'sram'"):
        e.with_overrides({"devices.mvp.elem_cycles.sramm": 1})


def test_with_overrides_bad_value():
    p = load_platform(PLATFORMS / "puma.yaml")
    with pytest.raises(PlatformError, match=r"devices\.cim\.t_mvm_ns"):
        p.with_overrides({"devices.cim.t_mvm_ns": -5})


# ------------------------------------------------------------------------------ latency table paths


def test_relative_latency_table_resolved_against_yaml_folder(tmp_path, monkeypatch):
    sub = tmp_path / "cfg"
    sub.mkdir()
    (sub / "lat.csv").write_text("op,latency_s\nr,0.5\n")
    d = _puma_yaml()
    d["devices"]["host"]["latency_model"] = "table"
    d["devices"]["host"]["latency_table"] = "lat.csv"
    p = _write(sub, d)
    monkeypatch.chdir(tmp_path)  # not the YAML's folder
    plat = load_platform(p)
    wl = Workload.from_ops("t", [host_op("r", 10), host_op("s", 10, 1)], [])
    costs = CostModel(wl, plat)
    assert costs.latency["r"]["host"] == 0.5
    assert costs.host_fallback_ops() == ["s"]


def test_make_platform_helper_is_valid():
    p = make_platform(host_cores=3, cim_cores=2, crossbars_per_core=5)
    assert p.devices["host"].units == 3
    assert p.devices["cim"].crossbars == 10


def test_an_overridden_platform_names_its_changes():
    p = load_platform(PLATFORMS / "puma.yaml")
    q = p.with_overrides({"devices.cim.crossbars": 25, "links.bus.bandwidth_gb_s": 20.48})
    assert q.name == "puma-arm with devices.cim.crossbars=25, links.bus.bandwidth_gb_s=20.48"
    assert repr(q).startswith(f"Platform(name={q.name!r}")
    assert q.with_overrides({"devices.cim.t_mvm_ns": 100}).name == f"{q.name}, devices.cim.t_mvm_ns=100"
    assert p.with_overrides({"devices.cim.crossbars": 25}, name="small").name == "small"
    assert p.with_overrides({"name": "mine", "devices.cim.crossbars": 25}).name == "mine"
    assert p.with_overrides({}).name == "puma-arm"  # nothing changed
    # the same name as the command line's --set gives
    from hetsim.cli._common import _platform

    class Args:
        platform = PLATFORMS / "puma.yaml"
        overrides = ["devices.cim.crossbars=25", "links.bus.bandwidth_gb_s=20.48"]

    assert _platform(Args).name == q.name


def test_crossbars_set_aside_for_reprogramming_without_a_weight_memory_warn():
    """A PUMA with reprogram_crossbars on a platform where no memory serves its weights: those crossbars could
    never hold a layer, and nothing said so (the trial of 2026-12-02: --set memories.dram.weights_for={} left
    80 of 100 crossbars usable silently)."""
    import warnings

    from hetsim.platform import load_platform

    base = load_platform(PLATFORMS / "cim-npu-dram.yaml")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_platform(PLATFORMS / "cim-npu-dram.yaml")  # served: no warning
    with pytest.warns(UserWarning, match=r"devices.cim: reprogram_crossbars = 20 crossbars .* no memory lists 'cim'"):
        base.with_overrides({"memories.dram.weights_for": {"npu": base.memories["dram"].weights_for["npu"]}})


# ------------------------------------------------------------------------- lax fields (trial 2026-12-02)


def _dram_text(weights_for: str | None = None, npu_extra: str = "") -> str:
    """platforms/cim-npu-dram.yaml as text, its dram's weights_for block replaced by ``weights_for`` (a YAML
    flow value) and ``npu_extra`` lines added to the NPU."""
    t = (PLATFORMS / "cim-npu-dram.yaml").read_text()
    if weights_for is not None:
        i, j = t.index("    weights_for:\n"), t.index("    activations_of")
        t = t[:i] + f"    weights_for: {weights_for}\n" + t[j:]
    if npu_extra:
        t = t.replace("    double_buffered_weights: true", npu_extra)
    return t


@pytest.mark.parametrize(("weights_for", "match"), [
    ("{npu}", r"memories\.dram\.weights_for: 'npu' has no port \(YAML's \{npu\} is \{npu: null\}\); write npu: \{\}"),
    ("[npu, cim]", r"memories\.dram\.weights_for: weights_for maps each device to its port.*not a list of names"),
    ("{host: {}}", r"memories\.dram\.weights_for names 'host', a 'cpu' device, which reads no weights from a "
                   r"memory .*kinds that do: npu, puma"),
])
def test_weights_for_as_a_set_a_list_or_naming_a_cpu_is_one_line_error(tmp_path, weights_for, match):
    """``weights_for: {host}`` (a YAML set: ``{host: null}``) was read as a port with the memory's own settings
    for the host, a CPU whose ops never read weights from a memory: an entry that changed nothing."""
    with pytest.raises(PlatformError, match=match) as err:
        load_platform(_write(tmp_path, _dram_text(weights_for)))
    assert "\n" not in str(err.value) and "(top level)" not in str(err.value)
    assert load_platform(_write(tmp_path, _dram_text("{npu: {bandwidth_gb_s: 3.75}, cim: {}}"))).weight_memories(
        "cim") == ["dram"]


@pytest.mark.parametrize("value", ["'yes'", "'true'", "'no'", "1", "0"])
def test_booleans_are_strict(tmp_path, value):
    """``double_buffered_weights: 'yes'`` (and 'no', 1, YAML 1.1's on) was coerced to a boolean: a quoted 'no'
    switched double-buffering on. Only true and false are taken (YAML 1.1 reads an unquoted on/off as them):
    the NPU's needs_weights and double_buffered_weights, the MVP's merge_gaps."""
    for field in ("double_buffered_weights", "needs_weights"):
        p = _write(tmp_path, _dram_text(npu_extra=f"    {field}: {value}"))
        with pytest.raises(PlatformError, match=rf"devices\.npu\.{field}: expected true or false"):
            load_platform(p)
    efr = (PLATFORMS / "efr32mg24.yaml").read_text().replace("merge_gaps: true", f"merge_gaps: {value}")
    with pytest.raises(PlatformError, match=r"devices\.mvp\.merge_gaps: expected true or false"):
        load_platform(_write(tmp_path, efr))
    assert load_platform(_write(tmp_path, _dram_text(npu_extra="    double_buffered_weights: false"))).devices[
        "npu"].double_buffered_weights is False


def test_shared_by_naming_no_device_is_one_line_without_top_level(tmp_path):
    t = (PLATFORMS / "diana.yaml").read_text().replace("shared_by: [host, digital, aimc]", "shared_by: [host, gpu]")
    with pytest.raises(PlatformError) as err:
        load_platform(_write(tmp_path, t))
    assert str(err.value) == (f"{tmp_path / 'p.yaml'}: memories.l1.shared_by names 'gpu', which is not a device; "
                              "devices: ['aimc', 'digital', 'host']")  # was '...p.yaml: (top level): memories...'



@pytest.mark.parametrize("path", SHIPPED, ids=[p.name for p in SHIPPED])
def test_every_shipped_platform_loads_under_the_strict_fields(path):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert load_platform(path).devices


def _without_cim_port(tmp_path):
    t = (PLATFORMS / "cim-npu-dram.yaml").read_text()
    i, j = t.index("      cim:\n        bandwidth_gb_s: 10.24"), t.index("    activations_of")
    return _write(tmp_path, t[:i] + t[j:], "nocim.yaml")


def test_set_aside_warning_is_given_once_per_load_not_per_override(tmp_path):
    """The reprogram_crossbars warning came again for every with_overrides (each --set, each sweep point) of a
    platform that had already been warned about; a copy whose override creates the condition is still warned."""
    import warnings

    p = _without_cim_port(tmp_path)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        base = load_platform(p)
        for t in (60, 70, 80):
            q = base.with_overrides({"devices.cim.t_mvm_ns": t}, name=base.name)
        q.with_overrides({"devices.cim.reprogram_crossbars": 10})
    told = [str(w.message) for w in seen if "set aside" in str(w.message)]
    assert len(told) == 1 and told[0].startswith("devices.cim: reprogram_crossbars = 20 crossbars")
    assert base.unused_set_aside() == {"cim": "reprogram_crossbars = 20 crossbars"}
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        load_platform(PLATFORMS / "cim-npu-dram.yaml").with_overrides(
            {"memories.dram.weights_for": {"npu": {"bandwidth_gb_s": 3.75}}})
    assert sum("set aside" in str(w.message) for w in seen) == 1


def test_set_aside_warning_once_on_the_command_line(tmp_path):
    import os
    import subprocess
    import sys

    p = _without_cim_port(tmp_path)
    r = subprocess.run([sys.executable, "-m", "hetsim", "validate", str(p), "workloads/resnet20_cifar10.onnx",
                        "--set", "devices.cim.t_mvm_ns=60", "--set", "links.bus.bandwidth_gb_s=20"],
                       capture_output=True, text=True, cwd=PLATFORMS.parent,
                       env={**os.environ, "PYTHONWARNINGS": "always"})  # Python's own once-per-place filter off
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("hetsim: warning: devices.cim: reprogram_crossbars = 20 crossbars") == 1, r.stderr


# ------------------------------------------------------------------ the baseline mapper (checked where runs start)
ROOT = PLATFORMS.parent


def _bad_baseline(tmp_path, baseline="all-hots", platform="puma.yaml"):
    data = yaml.safe_load((PLATFORMS / platform).read_text())
    data["baseline"] = baseline
    return _write(tmp_path, data, "bad.yaml")


@pytest.mark.parametrize("argv", [
    ("run", "{p}", ROOT / "workloads/resnet20_cifar10.onnx", "--mapper", "heft"),
    ("run", "{p}", ROOT / "scenarios/two-models-puma.yaml"),
    ("validate", "{p}", ROOT / "workloads/resnet20_cifar10.onnx"),
    ("run", PLATFORMS / "puma.yaml", ROOT / "workloads/resnet20_cifar10.onnx", "--set", "baseline=all-hots"),
])
def test_an_unknown_baseline_is_refused_before_anything_runs(tmp_path, capsys, monkeypatch, argv):
    """``baseline: all-hots`` was reported as an unknown *mapper* after the run's own mapping (the user ran heft),
    and a scenario ignored it; now one line names the field, suggests all-host and lists the known mappers, and no
    mapper runs."""
    from conftest import assert_input_error, run_cli

    import hetsim.mappers.heft

    def boom(*a, **k):
        raise AssertionError("a mapper ran")

    monkeypatch.setattr(hetsim.mappers.heft.Heft, "map", boom)
    p = _bad_baseline(tmp_path)
    code, _, err = run_cli(capsys, *(str(a).format(p=p) for a in argv))
    assert_input_error(code, err, "baseline: unknown mapper 'all-hots'; did you mean 'all-host'? Known mappers:",
                       "cpsat", "heft")
    assert len(err.strip().splitlines()) == 1, err


def test_an_unknown_or_spiking_baseline_is_refused_by_the_api(tmp_path):
    import hetsim

    with pytest.raises(InputError, match=r"bad\.yaml: baseline: unknown mapper 'all-hots'; did you mean 'all-host'"):
        hetsim.run(_bad_baseline(tmp_path), ROOT / "workloads/resnet20_cifar10.onnx", mapper="heft")
    # an SNN mapper cannot price an ONNX model: the run had shown no baseline ('-') without a word
    with pytest.raises(InputError, match="baseline: mapper 'spikeduet' maps spiking networks"):
        hetsim.run(_bad_baseline(tmp_path, "spikeduet"), ROOT / "workloads/resnet20_cifar10.onnx", mapper="heft")
    with pytest.raises(InputError, match="baseline: unknown mapper 'all-m3'; did you mean 'all-m33'"):
        hetsim.run(_bad_baseline(tmp_path, "all-m3", "efr32mg24.yaml"), ROOT / "workloads/snn/braille64.yaml")


def test_a_sweep_refuses_an_unknown_baseline_before_any_point(tmp_path, capsys):
    """The ONNX sweep had run every point into an error row (exit 1), the scenario sweep had run it silently."""
    from conftest import assert_input_error, run_cli

    bad = _bad_baseline(tmp_path)
    onnx = {"name": "o", "workloads": [str(ROOT / "workloads/resnet20_cifar10.onnx")], "platforms": [str(bad)],
            "mappers": ["heft"], "output": str(tmp_path / "o.csv")}
    scen = {"name": "s", "scenario": str(ROOT / "scenarios/two-models-puma.yaml"), "platforms": [str(bad)],
            "mappers": ["heft"], "output": str(tmp_path / "s.csv")}
    for spec in (onnx, scen, {**onnx, "platforms": [str(PLATFORMS / "puma.yaml")],
                              "parameters": {"baseline": ["all-host", "all-hots"]}}):
        path = _write(tmp_path, spec, "sweep.yaml")
        code, _, err = run_cli(capsys, "sweep", path, "--workers", "1")
        assert_input_error(code, err, "baseline: unknown mapper 'all-hots'")
        assert not (tmp_path / "o.csv").exists() and not (tmp_path / "s.csv").exists()


def test_an_snn_run_names_the_baseline_it_measures_against(tmp_path):
    """An SNN run's speed-up is over SpikeDuet's all-m33 whatever the platform's ``baseline``: the summary said the
    platform's (here all-dense-mvp) beside the all-m33 numbers."""
    import hetsim

    r = hetsim.run(_bad_baseline(tmp_path, "all-dense-mvp", "efr32mg24.yaml"), ROOT / "workloads/snn/braille64.yaml")
    assert r.summary["baseline"] == "all-m33"
    m33 = r.snn.configs["all-m33"].latency_s.mean()
    assert r.summary["baseline_makespan_s"] == pytest.approx(m33)


def test_an_onnx_model_on_an_snn_platform_is_told_so_not_about_its_baseline(tmp_path, capsys):
    """efr32mg24's baseline all-m33 maps SNNs; an ONNX model there hears that the platform runs SNNs (the cost
    model's check comes before the baseline's kind), in a single run and in a scenario."""
    from conftest import assert_input_error, run_cli

    for model in (ROOT / "workloads/resnet20_cifar10.onnx", ROOT / "scenarios/two-models-puma.yaml"):
        code, _, err = run_cli(capsys, "run", PLATFORMS / "efr32mg24.yaml", model, "--mapper", "heft")
        assert_input_error(code, err, "has a 'cortex-m' host and runs spiking networks")
        assert "baseline" not in err
