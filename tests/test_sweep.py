"""Sweeps: expansion, resume after a kill, Dask LocalCluster == local run, bad specs, plots."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import assert_kill_and_resume

from hetsim.cli import main
from hetsim.dse import expand_points, load_sweep, run_sweep
from hetsim.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
TIMING = ["solve_time_s"]  # wall-clock columns differ between runs


def write_spec(tmp_path: Path, **over) -> Path:
    spec = {
        "name": "t",
        "workloads": [str(ROOT / "workloads/paper/resnet18_int8_ort.onnx"),
                      str(ROOT / "workloads/paper/mobilenet_v2_int8_ort.onnx")],
        "platforms": [str(ROOT / "platforms/puma.yaml")],
        "parameters": {"devices.cim.crossbars": [25, 100], "devices.cim.t_mvm_ns": [50, 1000]},
        "mappers": ["heft", "greedy"],
        "output": str(tmp_path / "out.csv"),
    }
    spec.update(over)
    p = tmp_path / "sweep.yaml"
    p.write_text(yaml.safe_dump(spec))
    return p


def table(path: Path) -> pd.DataFrame:
    return pd.read_csv(path).drop(columns=TIMING).sort_values("key").reset_index(drop=True)


def test_expansion_is_the_full_grid(tmp_path):
    spec = load_sweep(write_spec(tmp_path))
    pts = expand_points(spec)
    assert len(pts) == 2 * 1 * 2 * 2 * 2  # workloads x platforms x crossbars x t_mvm x mappers
    assert len({p["key"] for p in pts}) == len(pts)


def test_killed_sweep_resumes_without_recomputing_or_duplicating(tmp_path):
    spec = load_sweep(write_spec(tmp_path))
    part = assert_kill_and_resume(spec, tmp_path, kill_at=5, torn='"[""resnet18', expect_ran=11, table=table)
    assert run_sweep(spec, output=part, workers=1)[1:] == (0, 16)  # nothing left to do


def test_local_processes_and_dask_local_cluster_give_the_same_table(tmp_path):
    distributed = pytest.importorskip("distributed")
    spec = load_sweep(write_spec(tmp_path, mappers=["heft"]))
    local = tmp_path / "local.csv"
    run_sweep(spec, output=local, workers=2)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster:
        dask_out = tmp_path / "dask.csv"
        run_sweep(spec, output=dask_out, scheduler=cluster.scheduler_address)
    pd.testing.assert_frame_equal(table(dask_out), table(local))
    # the finished table is in the sweep's point order, whoever finished first
    assert list(pd.read_csv(local)["key"]) == [p["key"] for p in expand_points(spec)]


@pytest.mark.parametrize(
    ("over", "needle"),
    [
        ({"parameters": {"devices.cim.crossbarz": [1]}}, "crossbarz"),
        ({"parameters": {"devices.cim.crossbars": []}}, "empty"),
        ({"mappers": ["nope"]}, "nope"),
        ({"workloads": ["missing.onnx"]}, "missing.onnx"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_bad_specs_name_the_field(tmp_path, over, needle):
    with pytest.raises(InputError, match=needle):
        load_sweep(write_spec(tmp_path, **over))


def test_cli_sweep_and_plot(tmp_path, capsys):
    spec = write_spec(tmp_path, mappers=["heft"])
    assert main(["sweep", str(spec), "--workers", "1"]) == 0
    assert "8 points run" in capsys.readouterr().out
    out = tmp_path / "figs"
    assert main(["plot", str(tmp_path / "out.csv"), "-o", str(out)]) == 0
    names = sorted(p.name for p in out.iterdir())
    assert "fig3_speedup_resnet18_int8_ort.png" in names and "fig4_speedup_models_50ns.svg" in names
    assert "fig5_breakdown_mobilenet_v2_int8_ort.png" in names
    assert all((out / n).stat().st_size > 0 for n in names)
    assert main(["plot", str(tmp_path / "out.csv"), "-o", str(out)]) == 2  # refuses to overwrite
