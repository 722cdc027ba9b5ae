"""Strict numbers outside platform files: SNN specs, sweep files and mapper options refuse
booleans, non-finite and out-of-range values with the field path, one line, exit 2."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from conftest import assert_input_error, run_cli

import hetsim
from hetsim.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
SNN = ROOT / "workloads/snn/braille64.yaml"
BIG = 10**400


@pytest.fixture(scope="module")
def snn_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("snn")
    shutil.copy(ROOT / "workloads/snn/braille7_12-64-7_T100.npz", d)
    return d


@pytest.mark.parametrize(
    ("change", "needles"),
    [
        ({"timesteps": True}, ["timesteps:", "not a boolean"]),
        ({"timesteps": float("inf")}, ["timesteps:", "finite"]),
        ({"timesteps": 10**40}, ["timesteps:", "less than or equal to 10000000"]),
        ({"timesteps": 0}, ["timesteps:", "greater than 0"]),
        ({"layers": [True, 64, 7]}, ["layers.0:", "not a boolean"]),
        ({"layers": [12.5, 64, 7]}, ["layers.0:", "integer"]),
        ({"lif": {"beta": float("nan")}}, ["lif.beta:", "finite"]),
        ({"lif": {"beta": 1.5}}, ["lif.beta:", "less than or equal to 1"]),
        ({"lif": {"threshold": True}}, ["lif.threshold:", "not a boolean"]),
        ({"lif": {"threshold": float("inf")}}, ["lif.threshold:", "finite"]),
        ({"lif": {"threshold": 1e39}}, ["lif.threshold:", "less than or equal to"]),
    ],
)
def test_snn_spec_numbers(snn_dir, capsys, change, needles):
    spec = yaml.safe_load(SNN.read_text())
    spec.update(change)
    path = snn_dir / "net.yaml"
    path.write_text(yaml.safe_dump(spec))
    code, _, err = run_cli(capsys, "inspect", path)
    assert_input_error(code, err, *needles)
    assert len(err.strip().splitlines()) == 1, err


def _sweep(tmp_path: Path, snn: bool, **over) -> Path:
    if snn:
        spec = {"name": "s", "synthetic": {"layers": [[24, 32, 27]], "timesteps": [11], "density": [0.1],
                                           "clustering": [0.0], "seed": [0], "samples": 4},
                "platforms": [str(ROOT / "platforms/efr32mg24.yaml")], "mappers": ["spikeduet"]}
    else:
        spec = {"name": "o", "workloads": [str(ROOT / "workloads/paper/resnet18_int8_ort.onnx")],
                "platforms": [str(ROOT / "platforms/puma.yaml")], "mappers": ["cpsat"]}
    for k, v in over.items():
        if k in ("timesteps", "seed", "samples", "layers"):
            spec["synthetic"][k] = v
        else:
            spec[k] = v
    spec["output"] = str(tmp_path / "out.csv")
    p = tmp_path / "sweep.yaml"
    p.write_text(yaml.safe_dump(spec))
    return p


@pytest.mark.parametrize(
    ("snn", "over", "needles"),
    [
        (True, {"timesteps": [10**40]}, ["synthetic: timesteps", "integer of 41 digits"]),
        (True, {"seed": [True]}, ["synthetic: seed", "True"]),
        (True, {"seed": [-1]}, ["synthetic: seed"]),
        (True, {"samples": 10**9}, ["synthetic: samples", "[1, 1000000]"]),
        (True, {"layers": [[24, 10**12, 27]]}, ["synthetic: layers"]),
        (True, {"reorder": 1}, ["reorder.0:", "valid boolean"]),
        (True, {"mode": 5}, ["mode.0:", "valid string"]),
        (False, {"fold_constants": 1}, ["fold_constants:", "boolean"]),
        (False, {"fold_constants": "yes"}, ["fold_constants:", "boolean"]),
        (False, {"mapper_options": {"time_limit_s": float("nan")}}, ["mapper_options:", "'time_limit_s'", "finite"]),
        (False, {"mapper_options": {"time_limit_s": True}}, ["mapper_options:", "'time_limit_s'", "not True"]),
        (False, {"mapper_options": {"threads": 2.5}}, ["mapper_options:", "'threads'", "integer"]),
        (False, {"parameters": {"devices.cim.crossbars": [25, True]}}, ["devices.cim.crossbars", "boolean"]),
        (False, {"parameters": {"devices.cim.crossbars": [25, float("inf")]}}, ["devices.cim.crossbars", "finite"]),
    ],
)
def test_sweep_numbers(tmp_path, capsys, snn, over, needles):
    code, _, err = run_cli(capsys, "sweep", _sweep(tmp_path, snn, **over), "--workers", "1")
    assert_input_error(code, err, *needles)
    assert len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "out.csv").exists()  # refused before any point ran


@pytest.mark.parametrize(
    ("options", "needle"),
    [
        ({"time_limit_s": True}, "must be a number, not True"),
        ({"time_limit_s": float("inf")}, "finite"),
        ({"time_limit_s": BIG}, "finite"),
        ({"time_limit_s": -1}, "allowed: [0, 1e+07]"),
        ({"time_limit_s": "10"}, "must be a number, not '10'"),
        ({"threads": 0}, "allowed: [1, 1024]"),
        ({"mip_rel_gap": 2.0}, "allowed: [0, 1]"),
        ({"deterministic": 1}, "true or false"),
    ],
)
def test_mapper_option_values(options, needle):
    with pytest.raises(InputError) as e:
        hetsim.run(ROOT / "platforms/puma.yaml", ROOT / "workloads/paper/resnet18_int8_ort.onnx", mapper="cpsat",
                   **options)
    assert needle in str(e.value) and "\n" not in str(e.value)


def _scenario_file(tmp_path: Path, where: str, value) -> Path:
    """scenarios/camera-cim-npu.yaml (its models named by absolute path) with ``where`` (a dotted path) set to
    ``value``; a ``closed`` arrival for the paths under ``streams.detect.arrival`` it does not have."""
    spec = yaml.safe_load((ROOT / "scenarios/camera-cim-npu.yaml").read_text())
    for st in spec["streams"].values():
        st["model"] = str((ROOT / "scenarios" / st["model"]).resolve())
    keys = where.split(".")
    if keys[-1] in ("think_s", "population"):
        spec["streams"]["detect"]["arrival"] = {"process": "closed"}
    node = spec
    for k in keys[:-1]:
        node = node[k]
    node[keys[-1]] = value
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


SCENARIO_INTS = ["streams.detect.count", "streams.detect.priority", "streams.detect.warmup", "seed",
                 "timeline_requests", "streams.detect.arrival.population"]
SCENARIO_FLOATS = ["streams.detect.arrival.period_s", "streams.detect.arrival.offset_s",
                   "streams.detect.arrival.jitter_s", "streams.classify.arrival.rate_hz", "streams.detect.deadline_s",
                   "streams.classify.duration_s", "streams.detect.arrival.think_s"]


@pytest.mark.parametrize(
    ("where", "value", "needle"),
    [(w, v, n) for w in SCENARIO_INTS
     for v, n in ((True, "not a boolean"), ("5", "expected an integer (got '5')"), (5.0, "decimal point"))]
    + [(w, v, n) for w in SCENARIO_FLOATS
       for v, n in ((True, "not a boolean"), ("0.5", "expected a number (got '0.5')"),
                    (float("inf"), "finite"))],
)
def test_scenario_numbers_are_strict(tmp_path, capsys, where, value, needle):
    """Every number of a scenario file: integers refuse booleans (``count: true`` was 1 request), floats and
    strings; floats take integers but refuse booleans, strings and infinities; the message names the field path
    as the file spells it (no arrival process tag in it)."""
    code, _, err = run_cli(capsys, "run", ROOT / "platforms/cim-npu.yaml", _scenario_file(tmp_path, where, value))
    assert_input_error(code, err, f"bad.yaml: {where}: ", needle)
    assert len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("where", SCENARIO_FLOATS)
def test_scenario_floats_take_integers(tmp_path, where):
    from hetsim.scenario.spec import load_scenario

    v = 0 if where.endswith("jitter_s") else 2  # a jitter is at most the period (0.033 s)
    sc, _ = load_scenario(_scenario_file(tmp_path, where, v))
    node = sc
    for k in where.split("."):
        node = node[k] if isinstance(node, dict) else getattr(node, k)
    assert node == float(v) and type(node) is float


@pytest.mark.parametrize("value", [True, "4"])
def test_scenario_sweep_parameters_are_strict(tmp_path, capsys, value):
    spec = {"name": "t", "scenario": str(ROOT / "scenarios/two-models-puma.yaml"),
            "platforms": [str(ROOT / "platforms/puma.yaml")], "mappers": ["heft"],
            "parameters": {"streams.resnet.arrival.rate_hz": [2, value]}, "output": str(tmp_path / "out.csv")}
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(spec))
    code, _, err = run_cli(capsys, "sweep", path, "--workers", "1")
    assert_input_error(code, err, "streams.resnet.arrival.rate_hz: expected a number")
    assert len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "out.csv").exists()
