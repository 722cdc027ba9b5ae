"""Strict numbers outside platform files (issue 14, item 1): SNN specs, sweep files and mapper options refuse
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
