"""Scenarios read like single runs (a tester's findings): ``--set`` changes the platform, the options a scenario
does not honour are refused, the analytic loads use the replay's costs, the memories' utilisation and capacity,
consistent offered rate and throughput, saturation verdicts that agree with the loads, the errors. Each test
carries its own truth: hand-worked values on small platforms, or the single run's own numbers."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import assert_input_error, run_cli

ROOT = Path(__file__).resolve().parents[1]
PUMA = ROOT / "platforms" / "puma.yaml"


def _small_scenario(tmp_path: Path, body: str = "    arrival: {process: periodic, period_s: 0.05}\n    count: 3\n",
                    model: str = "resnet20_cifar10.onnx") -> Path:
    p = tmp_path / "sc.yaml"
    p.write_text(f"streams:\n  a:\n    model: {ROOT / 'workloads' / model}\n{body}")
    return p


def test_run_set_changes_a_scenario_platform_and_bad_paths_are_refused(tmp_path, capsys):
    import json

    sc = _small_scenario(tmp_path)
    code, base, err = run_cli(capsys, "run", PUMA, sc, "--json")
    assert code == 0, err
    code, slow, err = run_cli(capsys, "run", PUMA, sc, "--json", "--set", "devices.host.clock_ghz=0.1")
    assert code == 0, err
    base, slow = json.loads(base), json.loads(slow)
    assert "with devices.host.clock_ghz=0.1" in slow["platform"]  # named as a single run names it
    # a host ten times slower: one request alone takes longer (its host ops)
    assert slow["streams"][0]["alone_s"] > 1.1 * base["streams"][0]["alone_s"]
    code, _, err = run_cli(capsys, "run", PUMA, sc, "--set", "devices.bogus.x=1")
    assert_input_error(code, err, "--set", "bogus")


@pytest.mark.parametrize("flags", [["--spill"], ["--export", "x.json"], ["--time-limit", "3"], ["--gap", "0.1"],
                                   ["--solver", "highs"], ["-O", "fluid_share=0.5"], ["--no-fold-constants"]])
def test_single_run_options_a_scenario_does_not_honour_are_refused(tmp_path, capsys, flags):
    sc = _small_scenario(tmp_path)
    code, _, err = run_cli(capsys, "run", PUMA, sc, *flags)
    assert_input_error(code, err, flags[0], "scenario")
