"""SNN sweeps: synthetic grids, resume after a kill, ONNX/SNN mixing and bad synthetic fields rejected."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import assert_kill_and_resume

from hetsim.cli import main
from hetsim.dse import expand_points, load_sweep, run_sweep
from hetsim.errors import InputError
from hetsim.snn.sweep import SNN_RESULT_COLUMNS, SNN_SETTINGS_COLUMNS, snn_spec_sha256

ROOT = Path(__file__).resolve().parents[1]
TIMING = ["solve_time_s"]  # wall-clock columns differ between runs
SYNTHETIC = {"layers": [[8, 24, 24, 4]], "timesteps": [6], "density": [0.1, 0.3], "clustering": [0.0, 1.0],
             "seed": [0], "samples": 4}


def write_spec(tmp_path: Path, **over) -> Path:
    spec = {
        "name": "snn",
        "synthetic": SYNTHETIC,
        "platforms": [str(ROOT / "platforms/efr32mg24.yaml")],
        "parameters": {"devices.mvp.launch_cycles": [100, 2510]},
        "mappers": ["spikeduet"],
        "mode": "async",
        "reorder": [False],
        "output": str(tmp_path / "out.csv"),
    }
    spec.update(over)
    spec = {k: v for k, v in spec.items() if v is not None}
    p = tmp_path / "sweep.yaml"
    p.write_text(yaml.safe_dump(spec))
    return p


def table(path: Path) -> pd.DataFrame:
    return pd.read_csv(path).drop(columns=TIMING).sort_values("key").reset_index(drop=True)


def test_expansion_keys_name_the_synthetic_parameters(tmp_path):
    spec = load_sweep(write_spec(tmp_path, mappers=["spikeduet", "all-m33"]))
    assert spec.kind == "snn"
    pts = expand_points(spec)
    assert len(pts) == 2 * 2 * 2 * 2  # density x clustering x launch_cycles x mappers
    assert len({p["key"] for p in pts}) == len(pts)
    assert pts[0]["key"] == ("synthetic(layers=[8,24,24,4],timesteps=6,density=0.1,clustering=0.0,seed=0,samples=4)"
                             "|efr32mg24.yaml|devices.mvp.launch_cycles=100|spikeduet|async|reorder=false")
    # the same grid written differently (scalars, integers for floats, one network unlisted) gives the same keys
    same = load_sweep(write_spec(tmp_path, mappers=["spikeduet", "all-m33"], synthetic={
        **SYNTHETIC, "layers": [8, 24, 24, 4], "timesteps": 6, "clustering": [0, 1], "seed": 0}))
    assert [p["key"] for p in expand_points(same)] == [p["key"] for p in pts]
    # mappers default to spikeduet, mode to async, reorder to false
    bare = load_sweep(write_spec(tmp_path, mappers=None, mode=None, reorder=None))
    assert {(p["mapper"], p["mode"], p["reorder"]) for p in expand_points(bare)} == {("spikeduet", "async", False)}


def test_snn_sweep_rows(tmp_path):
    spec = load_sweep(write_spec(tmp_path, workloads=[str(ROOT / "workloads/snn/digits64.yaml")],
                                 parameters={}, mode=["async", "blocking"]))
    out, ran, skipped = run_sweep(spec, workers=1)
    assert (ran, skipped) == (10, 0)
    df = pd.read_csv(out)
    assert list(df.columns) == ["key", "workload", "platform", "mapper", "mode", "reorder", "layers", "timesteps",
                                "density", "clustering", "seed", "samples", *SNN_RESULT_COLUMNS,
                                *SNN_SETTINGS_COLUMNS]
    assert list(df["workload_sha256"][:2]) == [snn_spec_sha256(ROOT / "workloads/snn/digits64.yaml")] * 2
    assert df["workload_sha256"][2:].isna().all()  # synthetic networks: their arguments are in the key
    assert df["platform_sha256"].nunique() == 1 and df["hetsim_version"].nunique() == 1
    assert df["error"].isna().all(), df["error"].dropna().tolist()
    assert list(df["workload"][:2]) == ["digits64.yaml"] * 2
    assert list(df["layers"]) == ["64-64-10"] * 2 + ["8-24-24-4"] * 8
    assert list(df["timesteps"]) == [100] * 2 + [6] * 8
    for mode in ("async", "blocking"):
        d = df[df["mode"] == mode]
        assert (d["latency_ms"] == d[f"latency_ms_spikeduet_{mode}"]).all()
    assert df["speedup"].to_numpy() == pytest.approx((df["latency_ms_all_m33"] / df["latency_ms"]).to_numpy())
    assert (df["speedup"] >= 1 - 1e-9).all()  # the plan's search space includes all-m33
    for engines, launches, layers in zip(df["engines"], df["launches_per_t"], df["layers"], strict=True):
        n = len(layers.split("-")) - 1
        assert len(engines.split(";")) == n and len(launches.split(";")) == n
        assert all(e.split("/")[0] in ("m33", "mvp-range", "mvp-dense") for e in engines.split(";"))
    syn = df[df["workload"].str.startswith("synthetic")]
    by_density = syn.groupby("density")["density_measured"].mean()  # measured on the (untuned) eval split
    assert by_density[0.1] < by_density[0.3] and by_density.min() > 0 and by_density.max() < 1


def test_killed_snn_sweep_resumes_without_recomputing_or_duplicating(tmp_path):
    spec = load_sweep(write_spec(tmp_path))
    part = assert_kill_and_resume(spec, tmp_path, kill_at=3, torn='"[{""synthetic', expect_ran=5, table=table)
    assert run_sweep(spec, output=part, workers=1)[1:] == (0, 8)
    # a finer grid resumes too: only the new networks run
    finer = load_sweep(write_spec(tmp_path, synthetic={**SYNTHETIC, "density": [0.1, 0.2, 0.3]}))
    assert run_sweep(finer, output=part, workers=1)[1:] == (4, 8)


def test_a_retrained_network_is_recomputed(tmp_path):
    import shutil

    spec_file = tmp_path / "net.yaml"
    shutil.copy(ROOT / "workloads/snn/digits64.yaml", spec_file)
    shutil.copy(ROOT / "workloads/snn/digits_64-64-10_T100.npz", tmp_path / "digits_64-64-10_T100.npz")
    spec = load_sweep(write_spec(tmp_path, workloads=[str(spec_file)], synthetic=None, parameters={}))
    assert run_sweep(spec, workers=1)[1:] == (1, 0)
    with (tmp_path / "digits_64-64-10_T100.npz").open("ab") as f:  # the npz the spec names changes
        f.write(b"\0")
    said = []
    assert run_sweep(spec, workers=1, notify=said.append)[1:] == (1, 0)
    assert "changed workload_sha256" in said[0]


def test_local_processes_give_the_same_table(tmp_path):
    spec = load_sweep(write_spec(tmp_path))
    run_sweep(spec, output=tmp_path / "one.csv", workers=1)
    run_sweep(spec, output=tmp_path / "two.csv", workers=2)
    pd.testing.assert_frame_equal(table(tmp_path / "two.csv"), table(tmp_path / "one.csv"))
    assert list(pd.read_csv(tmp_path / "two.csv")["key"]) == [p["key"] for p in expand_points(spec)]


def _reorder_available() -> bool:
    try:
        from hetsim.snn.reorder import reorder  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.skipif(not _reorder_available(), reason="hetsim.snn.reorder.reorder is not there yet")
def test_reorder_grid(tmp_path):
    spec = load_sweep(write_spec(tmp_path, parameters={}, reorder=[False, True],
                                 synthetic={**SYNTHETIC, "density": [0.2], "clustering": [1.0]}))
    df = pd.read_csv(run_sweep(spec, workers=1)[0])
    assert list(df["reorder"]) == [False, True]
    assert df["error"].isna().all(), df["error"].dropna().tolist()
    # reordering preserves the function, so the all-M33 baseline does not get slower
    assert df["latency_ms_all_m33"].iloc[1] == pytest.approx(df["latency_ms_all_m33"].iloc[0], rel=0.05)


MIXED = "all-ONNX or all-SNN"


@pytest.mark.parametrize(
    ("over", "needle"),
    [
        ({"workloads": [str(ROOT / "workloads/paper/resnet18_int8_ort.onnx")]}, MIXED),
        ({"workloads": [str(ROOT / "workloads/paper/resnet18_int8_ort.onnx"),
                        str(ROOT / "workloads/snn/digits64.yaml")], "synthetic": None}, MIXED),
        ({"mappers": ["spikeduet", "cpsat"]}, MIXED),
        ({"mappers": ["nope"]}, "nope"),
        ({"mapper_options": {"time_limit_s": 1}}, "mapper_options"),
        ({"contention": "bus"}, "contention"),
        ({"mode": "eager"}, "eager"),
        ({"reorder": []}, "reorder"),
        ({"synthetic": None}, "workloads"),
        ({"platforms": [str(ROOT / "platforms/puma.yaml")]}, "cannot run spiking networks"),
        ({"parameters": {"devices.mvp.launch_cyclez": [1]}}, "launch_cyclez"),
    ],
)
def test_bad_snn_specs(tmp_path, over, needle):
    with pytest.raises(InputError, match=needle):
        load_sweep(write_spec(tmp_path, **over))


@pytest.mark.parametrize(
    ("synthetic", "needle"),
    [
        ({"densty": [0.1]}, "densty"),
        ({"density": [0.1, 1.5]}, "density"),
        ({"density": [[0.1, 0.2]]}, "density has 2 entries"),
        ({"clustering": []}, "clustering"),
        ({"clustering": [2.0]}, "clustering"),
        ({"layers": [[8]]}, "layers"),
        ({"timesteps": [0]}, "timesteps"),
        ({"samples": 0.5}, "samples"),
        ({"shuffle": ["yes"]}, "shuffle"),
        ({"splits": ["a"]}, "splits"),
        ({"timesteps": None}, "timesteps"),
    ],
)
def test_bad_synthetic_field_is_named(tmp_path, synthetic, needle):
    syn = {k: v for k, v in {**SYNTHETIC, **synthetic}.items() if v is not None}
    with pytest.raises(InputError, match=f"synthetic: .*{needle}"):
        load_sweep(write_spec(tmp_path, synthetic=syn))


@pytest.mark.parametrize(("over", "needle"), [({"reorder": ["maybe"]}, "reorder.0: Input should be a valid boolean"),
                                               ({"reorder": "maybe"}, "reorder.0: Input should be a valid boolean"),
                                               ({"mode": 5}, "mode.0: Input should be a valid string")])
def test_bad_mode_or_reorder_is_one_line(tmp_path, over, needle):
    # a scalar or a list: one error line (was one per member of a bool | list[bool] union)
    with pytest.raises(InputError) as e:
        load_sweep(write_spec(tmp_path, **over))
    assert needle in str(e.value) and len(str(e.value).splitlines()) == 1


def test_scalar_mode_and_reorder_are_lists_of_one(tmp_path):
    spec = load_sweep(write_spec(tmp_path, mode="blocking", reorder=True))
    assert {(p["mode"], p["reorder"]) for p in expand_points(spec)} == {("blocking", True)}


def test_onnx_sweep_rejects_snn_options(tmp_path):
    spec = write_spec(tmp_path, synthetic=None, mode=None, reorder=[True], mappers=["heft"],
                      workloads=[str(ROOT / "workloads/paper/resnet18_int8_ort.onnx")],
                      platforms=[str(ROOT / "platforms/puma.yaml")], parameters={})
    with pytest.raises(InputError, match="reorder: applies to SNN sweeps only"):
        load_sweep(spec)
    spec = write_spec(tmp_path, synthetic=None, mode=None, reorder=None, mappers=["spikeduet"],
                      workloads=[str(ROOT / "workloads/paper/resnet18_int8_ort.onnx")],
                      platforms=[str(ROOT / "platforms/puma.yaml")], parameters={})
    with pytest.raises(InputError, match=f"'spikeduet' maps spiking networks.*{MIXED}"):
        load_sweep(spec)


def test_cli_snn_sweep(tmp_path, capsys):
    spec = write_spec(tmp_path, parameters={})
    assert main(["sweep", str(spec), "--workers", "1"]) == 0
    assert "4 points run" in capsys.readouterr().out
    assert main(["sweep", str(spec), "--workers", "1"]) == 0
    assert "0 points run, 4 already in" in capsys.readouterr().out


def test_snn_speedup_plot(tmp_path):
    from hetsim.report.dse_plots import is_snn_table, plot_snn_speedup_density, snn_plot_jobs

    spec = load_sweep(write_spec(tmp_path, workloads=[str(ROOT / "workloads/snn/digits64.yaml")]))
    df = pd.read_csv(run_sweep(spec, workers=1)[0])
    assert is_snn_table(df)
    assert not is_snn_table(pd.DataFrame(columns=["key", "workload", "speedup"]))
    paths = plot_snn_speedup_density(df, tmp_path / "fig")
    assert sorted(p.name for p in paths) == ["fig.png", "fig.svg"] and all(p.stat().st_size for p in paths)
    assert [stem for stem, _ in snn_plot_jobs(df)] == ["snn_speedup_vs_density"]
    with pytest.raises(InputError, match="no synthetic"):
        plot_snn_speedup_density(df[df["workload"] == "digits64.yaml"], tmp_path / "none")
    # the command line dispatches an SNN table to this figure
    table = tmp_path / "results.csv"
    df.to_csv(table, index=False)
    assert main(["plot", str(table), "-o", str(tmp_path / "figs")]) == 0
    assert (tmp_path / "figs" / "snn_speedup_vs_density.png").stat().st_size > 0
