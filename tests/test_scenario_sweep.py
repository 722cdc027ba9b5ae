"""Sweeps over a scenario's parameters (issue 23): one row per point, the analytic load linear in the swept
rate, resumable, bad paths refused in one line, and ``hetsim plot`` draws latency against offered load."""

from __future__ import annotations

import pandas as pd
import pytest
from conftest import ROOT, run_cli

from hetsim.dse.scenario_sweep import load_scenario_sweep, run_scenario_sweep
from hetsim.errors import InputError


def _files(tmp_path, params: str) -> object:
    sc = tmp_path / "sc.yaml"
    model = ROOT / "workloads" / "resnet20_cifar10.onnx"
    sc.write_text(f"mapper: heft\nseed: 3\nstreams:\n  cls:\n    model: {model}\n"
                  "    arrival: {process: poisson, rate_hz: 50}\n    count: 12\n")
    sw = tmp_path / "sw.yaml"
    sw.write_text(f"name: load\nscenario: sc.yaml\nplatforms: [{ROOT / 'platforms' / 'puma.yaml'}]\n"
                  f"parameters:\n{params}\noutput: out.csv\n")
    return sw


def test_a_scenario_sweep_runs_resumes_and_is_drawn(tmp_path, capsys):
    sw = _files(tmp_path, "  streams.cls.arrival.rate_hz: [100, 300]")
    spec = load_scenario_sweep(sw)
    out, ran, kept = run_scenario_sweep(spec, workers=1)
    assert (ran, kept) == (2, 0)
    df = pd.read_csv(out)
    assert list(df["streams.cls.arrival.rate_hz"]) == [100, 300]
    assert {"cls.latency_p50_s", "cls.latency_p99_s", "cls.throughput_hz", "cls.saturated", "bottleneck_load",
            "scenario_sha256", "platform_sha256"} <= set(df.columns)
    assert df["error"].isna().all()
    # the analytic load is rate x busy time per request: linear in the swept rate
    assert df["bottleneck_load"].iloc[1] == pytest.approx(3 * df["bottleneck_load"].iloc[0], rel=1e-9)
    out, ran, kept = run_scenario_sweep(spec, workers=1)
    assert (ran, kept) == (0, 2) and len(pd.read_csv(out)) == 2
    code, text, err = run_cli(capsys, "plot", str(out), "-o", str(tmp_path / "fig"))
    assert code == 0, err
    assert (tmp_path / "fig" / "latency_vs_offered_load.png").stat().st_size > 0


def test_scenario_sweep_errors_are_one_line(tmp_path, capsys):
    with pytest.raises(InputError, match="did you mean 'arrival'"):
        load_scenario_sweep(_files(tmp_path, "  streams.cls.arival.rate_hz: [1]"))
    with pytest.raises(InputError, match="rate_hz"):
        load_scenario_sweep(_files(tmp_path, "  streams.cls.arrival.rate_hz: [-1]"))
    code, _, err = run_cli(capsys, "sweep", str(_files(tmp_path, "  devices.cim.crossbarz: [10]")))
    assert code == 2 and "Traceback" not in err
