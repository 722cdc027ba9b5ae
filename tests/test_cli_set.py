"""``--set PATH=VALUE``: platform overrides on the command line (run, map, validate, inspect, and the SNN run
path), how VALUE is read, and the one-line errors (exit code 2) with the closest name for a misspelt path."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from conftest import assert_input_error, run_cli

from hetsim.cli import parse_overrides
from hetsim.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
PUMA = ROOT / "platforms" / "puma.yaml"
EFR32 = ROOT / "platforms" / "efr32mg24.yaml"
YOLO = ROOT / "workloads" / "yolov5n.onnx"
R18 = ROOT / "workloads" / "resnet18_int8_qdq.onnx"
BRAILLE = ROOT / "workloads" / "snn" / "braille64.yaml"

# ------------------------------------------------------------------------------------------- values


def test_values_are_read_as_numbers_then_yaml():
    got = parse_overrides(["a=25", "b=1e-3", "c=0.5", "d=true", "e=[Conv, Gemm]", "f={8: 16}", "g='25'", "h=",
                           "i=text", "j=nan", " k = 7 ", "a=26"])
    assert got == {"a": 26, "b": 1e-3, "c": 0.5, "d": True, "e": ["Conv", "Gemm"], "f": {8: 16}, "g": "25", "h": "",
                   "i": "text", "j": "nan", "k": 7}  # a later PATH wins; nan is not a number (YAML's is .nan)
    assert type(got["a"]) is int and type(got["b"]) is float  # PyYAML alone reads 1e-3 as a string
    assert math.isnan(parse_overrides(["x=.nan"])["x"])


@pytest.mark.parametrize("item", ["crossbars", "=25", " =25"])
def test_an_item_needs_a_path_and_an_equals_sign(item):
    with pytest.raises(InputError, match="expected PATH=VALUE"):
        parse_overrides([item])


def test_a_value_that_is_not_yaml():
    with pytest.raises(InputError, match=r"--set: value '\[Conv' is not valid YAML"):
        parse_overrides(["devices.cim.supported_ops=[Conv"])


# ---------------------------------------------------------------------------------------- the result


def _summary(capsys, *argv) -> dict:
    code, out, err = run_cli(capsys, "run", PUMA, YOLO, "--mapper", "heft", "--json", *argv)
    assert code == 0, err
    return json.loads(out)


def test_set_changes_the_result(capsys):
    base = _summary(capsys)
    few = _summary(capsys, "--set", "devices.cim.crossbars=25")
    assert few["makespan_s"] > base["makespan_s"]  # 25 crossbars hold fewer of yolov5n's weights than 100
    assert base["platform"] == "puma-arm"
    assert few["platform"] == "puma-arm with devices.cim.crossbars=25"  # the report says what was changed
    both = _summary(capsys, "--set", "devices.cim.crossbars=25", "--set", "devices.cim.t_mvm_ns=100")
    assert both["makespan_s"] > few["makespan_s"]  # repeatable: the slower MVM applies too
    assert both["platform"] == "puma-arm with devices.cim.crossbars=25, devices.cim.t_mvm_ns=100"
    # the same as writing the values into the YAML
    same = _summary(capsys, "--set", "devices.cim.crossbars=100")
    assert same["makespan_s"] == base["makespan_s"]


def test_map_and_validate_use_the_changed_platform(capsys, tmp_path):
    sched = tmp_path / "s.json"
    code, out, err = run_cli(capsys, "map", PUMA, R18, "-o", sched, "--mapper", "heft",
                             "--set", "devices.cim.crossbars=25")
    assert code == 0, err
    assert json.loads(sched.read_text())["platform"] == "puma-arm with devices.cim.crossbars=25"
    code, out, err = run_cli(capsys, "validate", PUMA, R18, "--schedule", sched, "--set", "devices.cim.crossbars=25")
    assert code == 0, err
    assert "valid" in out
    # 10 crossbars is another platform (its name lists the overrides): refused in one line, naming both
    code, out, err = run_cli(capsys, "validate", PUMA, R18, "--schedule", sched, "--set", "devices.cim.crossbars=10")
    assert_input_error(code, err, "made for platform 'puma-arm with devices.cim.crossbars=25', not "
                                  "'puma-arm with devices.cim.crossbars=10'")
    # and so is the file without the override; run refuses it too
    for cmd in ("validate", "run"):
        code, out, err = run_cli(capsys, cmd, PUMA, R18, "--schedule", sched)
        assert_input_error(code, err, "made for platform 'puma-arm with devices.cim.crossbars=25', not 'puma-arm'")


def test_inspect_shows_the_changed_latencies(capsys):
    code, slow, err = run_cli(capsys, "inspect", R18, "--platform", PUMA, "--set", "devices.cim.t_mvm_ns=1000")
    assert code == 0, err
    code, fast, err = run_cli(capsys, "inspect", R18, "--platform", PUMA)
    assert code == 0, err
    assert slow != fast and slow.splitlines()[0] == fast.splitlines()[0]


def test_the_snn_run_path_takes_set(capsys):
    code, out, err = run_cli(capsys, "run", EFR32, BRAILLE, "--mapper", "all-m33", "--json",
                             "--set", "devices.m33.clock_mhz=78")
    assert code == 0, err
    s = json.loads(out)
    assert s["platform"] == "efr32mg24 with devices.m33.clock_mhz=78"


# -------------------------------------------------------------------------------------------- errors


@pytest.mark.parametrize(("argv", "needles"), [
    (["--set", "devices.cim.crosbars=25"],
     ["--set: override 'devices.cim.crosbars': device 'cim' (puma) has no field 'crosbars'; did you mean "
      "'crossbars'?"]),
    (["--set", "devices.cmi.crossbars=25"],
     ["override 'devices.cmi.crossbars': no device 'cmi'; did you mean 'cim'? (devices: host, cim)"]),
    (["--set", "devices.gpu.crossbars=25"], ["no device 'gpu'; devices: host, cim"]),
    (["--set", "links.bsu.bandwidth_gb_s=1"], ["no link 'bsu'; did you mean 'bus'?"]),
    (["--set", "hots=cim"], ["the platform has no field 'hots'; did you mean 'host'?"]),
    (["--set", "devices.cim.t_mvm_ns.x=1"], ["devices.cim.t_mvm_ns is a value (50.0), not a mapping"]),
    (["--set", "devices.cim.t_mvm_ns=-5"], ["devices.cim.t_mvm_ns: Input should be greater than 0 (got -5)"]),
    (["--set", "devices.cim.t_mvm_ns=fast"], ["devices.cim.t_mvm_ns", "'fast'"]),
    (["--set", "devices.cim.kind=pumaa"], ["unknown device kind 'pumaa'; did you mean 'puma'?"]),
    (["--set", "devices.cim.kind=npu"], ["override 'devices.cim.kind': device 'cim' is a 'puma' device and its "
                                         "fields are that kind's; an override cannot make it a 'npu' device"]),
    (["--set", "devices.host.kind=puma", "--set", "devices.cim.crossbars=25"], ["device 'host' is a 'cpu' device"]),
    (["--set", "crossbars"], ["--set 'crossbars': expected PATH=VALUE"]),
    (["--set", "devices.cim.crossbars=25", "--set", "=25"], ["--set '=25': expected PATH=VALUE"]),
])
@pytest.mark.parametrize("command", ["run", "map", "validate"])
def test_bad_set_is_a_one_line_error(capsys, tmp_path, command, argv, needles):
    out = ["-o", tmp_path / "s.json"] if command == "map" else []
    code, _, err = run_cli(capsys, command, PUMA, YOLO, "--mapper", "heft", *out, *argv)
    assert_input_error(code, err, *needles)
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "s.json").exists()


def test_bad_set_on_inspect(capsys):
    assert_input_error(*run_cli(capsys, "inspect", YOLO, "--set", "devices.cim.crossbars=25")[::2],
                       "--set changes the platform: give --platform")
    code, out, err = run_cli(capsys, "inspect", YOLO, "--platform", PUMA, "--set", "devices.cim.crosbars=25")
    assert_input_error(code, err, "did you mean 'crossbars'?")
    assert out == ""  # it fails before printing anything


def test_bad_set_on_the_snn_run_path(capsys):
    assert_input_error(*run_cli(capsys, "run", EFR32, BRAILLE, "--set", "devices.mvp.elem_cycles.sramm=1")[::2],
                       "devices.mvp.elem_cycles has no field 'sramm'; did you mean 'sram'?")


def test_misspelt_yaml_field_and_kind_get_a_suggestion(capsys, tmp_path):
    text = PUMA.read_text()
    bad = tmp_path / "p.yaml"
    bad.write_text(text.replace("crossbars: 100", "crossbar: 100"))
    assert_input_error(*run_cli(capsys, "run", bad, YOLO)[::2],
                       "devices.cim.crossbar: unknown field; did you mean 'crossbars'?")
    bad.write_text(text.replace("kind: puma", "kind: pmua"))
    assert_input_error(*run_cli(capsys, "inspect", YOLO, "--platform", bad)[::2],
                       "devices.cim: unknown device kind 'pmua'; did you mean 'puma'? Allowed: cpu, puma")
