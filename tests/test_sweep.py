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


def small_spec(tmp_path: Path, platform: Path | None = None, workload: Path | None = None, **over) -> Path:
    return write_spec(tmp_path, workloads=[str(workload or ROOT / "workloads/resnet20_cifar10.onnx")],
                      platforms=[str(platform or ROOT / "platforms/puma.yaml")],
                      parameters={"devices.cim.crossbars": [25, 100]}, mappers=["greedy"], **over)


def rerun(tmp_path: Path, **over) -> tuple[int, int, list[str]]:
    said: list[str] = []
    _, ran, skipped = run_sweep(load_sweep(small_spec(tmp_path, **over)), workers=1, notify=said.append)
    return ran, skipped, said


def test_rows_hold_the_settings_they_were_computed_under(tmp_path):
    from hetsim import __version__
    from hetsim.dag.sweep import SETTINGS_COLUMNS
    from hetsim.dse.sweep import file_sha256

    assert rerun(tmp_path, contention="links,cim-bus", mapper_options={"min_gain": 0.5}) == (2, 0, [])
    df = pd.read_csv(tmp_path / "out.csv")
    assert list(df.columns[-len(SETTINGS_COLUMNS):]) == SETTINGS_COLUMNS
    assert (df["workload_sha256"] == file_sha256(ROOT / "workloads/resnet20_cifar10.onnx")).all()
    assert df["platform_sha256"].nunique() == 2  # one per crossbar count: the platform after the overrides
    assert (df["mapper_options"] == "min_gain=0.5").all() and (df["contention"] == "cim-bus,links").all()
    assert (df["hetsim_version"] == __version__).all()
    # the same settings written differently: nothing to do
    assert rerun(tmp_path, contention="cim-bus,links", mapper_options={"min_gain": 0.5}) == (0, 2, [])


@pytest.mark.parametrize("change", ["contention", "mapper_options", "platform_sha256", "workload_sha256",
                                    "fold_constants", "hetsim_version"])
def test_a_row_computed_under_other_settings_is_recomputed(tmp_path, monkeypatch, change):
    import onnx

    plat, model = tmp_path / "puma.yaml", tmp_path / "r20.onnx"
    plat.write_text((ROOT / "platforms/puma.yaml").read_text())
    model.write_bytes((ROOT / "workloads/resnet20_cifar10.onnx").read_bytes())
    assert rerun(tmp_path, platform=plat, workload=model) == (2, 0, [])
    before = pd.read_csv(tmp_path / "out.csv")
    over = {}
    if change == "contention":
        over["contention"] = "all"
    elif change == "mapper_options":
        over["mapper_options"] = {"min_gain": 0.5}
    elif change == "fold_constants":
        over["fold_constants"] = False
    elif change == "platform_sha256":  # the file's contents, not its name, and not a swept field
        plat.write_text(plat.read_text().replace("bandwidth_gb_s: 10.24", "bandwidth_gb_s: 1.0"))
    elif change == "workload_sha256":
        m = onnx.load(model)
        m.doc_string = "edited"
        onnx.save(m, model)
    else:
        monkeypatch.setattr("hetsim.__version__", "99.0")
    ran, skipped, said = rerun(tmp_path, platform=plat, workload=model, **over)
    assert (ran, skipped) == (2, 0)
    assert said == [f"2 points changed settings (changed {change}): recomputed; their old rows are in "
                    f"{tmp_path / 'out.replaced.csv'}"]
    after = pd.read_csv(tmp_path / "out.csv")
    assert after["key"].tolist() == before["key"].tolist()  # one row per point, in the sweep's order
    assert (after[change].astype(str) != before[change].astype(str)).all()
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "out.replaced.csv"), before)  # nothing computed is lost
    if change == "platform_sha256":  # a slower bus: the recomputed rows say so
        assert (after["makespan_s"] >= before["makespan_s"]).all()
        assert (after["makespan_s"] > before["makespan_s"]).any()
    assert rerun(tmp_path, platform=plat, workload=model, **over)[:2] == (0, 2)


def test_only_the_changed_points_are_recomputed_and_the_cli_says_so(tmp_path, capsys):
    spec = small_spec(tmp_path)
    assert main(["sweep", str(spec), "--workers", "1"]) == 0
    capsys.readouterr()
    out = tmp_path / "out.csv"
    # another hetsim version computed the first point
    text = out.read_text().splitlines()
    text[1] = text[1].rsplit(",", 1)[0] + ",0.0.1"
    out.write_text("\n".join(text) + "\n")
    assert main(["sweep", str(spec), "--workers", "1"]) == 0
    cap = capsys.readouterr()
    assert "1 point changed settings (changed hetsim_version): recomputed; its old row is in" in cap.out
    assert "1 points run, 1 already in" in cap.out
    assert "1/1 points" in cap.err and "points/s" in cap.err  # progress: rate, on stderr


def test_a_table_without_settings_columns_is_recomputed(tmp_path):
    from hetsim.dag.sweep import SETTINGS_COLUMNS

    assert rerun(tmp_path)[:2] == (2, 0)
    out = tmp_path / "out.csv"
    old = pd.read_csv(out).drop(columns=SETTINGS_COLUMNS)
    old.loc[len(old)] = old.iloc[0]
    old.loc[len(old) - 1, "key"] = "gone.onnx|puma.yaml|devices.cim.crossbars=25|greedy"  # no longer in the sweep
    old.to_csv(out, index=False)
    ran, skipped, said = rerun(tmp_path)
    assert (ran, skipped) == (2, 0) and "not recorded (an older hetsim's table)" in said[0]
    df = pd.read_csv(out)
    assert list(df.columns[-len(SETTINGS_COLUMNS):]) == SETTINGS_COLUMNS
    assert len(df) == 3 and df["key"].iloc[-1].startswith("gone.onnx")  # a point not in the sweep stays


def test_a_table_without_the_memory_columns_is_recomputed(tmp_path):
    from hetsim.dag.sweep import ADDED_RESULT_COLUMNS

    assert rerun(tmp_path)[:2] == (2, 0)
    out = tmp_path / "out.csv"
    old = pd.read_csv(out, dtype=str, keep_default_na=False)  # the cells as written
    old.drop(columns=ADDED_RESULT_COLUMNS).to_csv(out, index=False)  # as written before the columns existed
    ran, skipped, said = rerun(tmp_path)
    assert (ran, skipped) == (2, 0)
    assert said == [f"2 points computed by an older hetsim, without the columns {', '.join(ADDED_RESULT_COLUMNS)}: "
                    f"recomputed; their old rows are in {tmp_path / 'out.replaced.csv'}"]
    df = pd.read_csv(out)
    assert set(ADDED_RESULT_COLUMNS) <= set(df.columns) and df["peak_activation_bytes"].notna().all()
    assert rerun(tmp_path)[:2] == (0, 2)  # now current


def test_memory_columns_match_the_run_summary(tmp_path):
    """A sweep row's memory figures are the run's: the largest activation peak of any memory, whether the
    memories with a capacity hold theirs, and the weight traffic where devices read weights off-chip."""
    import hetsim
    from hetsim.platform import load_platform

    wl = ROOT / "workloads/resnet18_int8_qdq.onnx"
    for plat, has_weights in (("puma.yaml", False), ("cim-npu-dram.yaml", True)):
        spec = write_spec(tmp_path, workloads=[str(wl)], platforms=[str(ROOT / "platforms" / plat)],
                          mappers=["heft"], parameters={}, output=str(tmp_path / f"{plat}.csv"))
        run_sweep(load_sweep(spec), workers=0)
        row = pd.read_csv(tmp_path / f"{plat}.csv").iloc[0]
        s = hetsim.run(load_platform(ROOT / "platforms" / plat), wl, mapper="heft").summary
        mems = s["memory"]["memories"]
        assert row["peak_activation_bytes"] == max(m["peak_bytes"] for m in mems.values())
        checked = [m["fits"] for m in mems.values() if m["checked"]]
        assert (pd.isna(row["activation_fits"]) if not checked else bool(row["activation_fits"]) == all(checked))
        if has_weights:
            assert row["ops_streamed"] == s["weights"]["policies"]["streamed"] > 0
            assert row["weight_read_bytes"] == sum(m["bytes"] for m in s["weights"]["memories"].values()) > 0
        else:
            assert pd.isna(row["ops_streamed"]) and pd.isna(row["weight_read_bytes"])


def test_progress_line():
    from hetsim.dse import format_progress

    assert format_progress(12, 128, 15.0) == "12/128 points, 0.8 points/s, ETA 2m25s"
    assert format_progress(0, 10, 0.0) == "0/10 points"
    assert format_progress(10, 10, 5.0) == "10/10 points, 2 points/s, done"
    assert format_progress(3, 1000, 600.0) == "3/1000 points, 0.3 points/min, ETA 55h23m"


def test_a_point_whose_activations_do_not_fit_says_so(tmp_path):
    """activation_fits is false (not empty) on a point refused because its live activations do not fit."""
    import yaml as _yaml

    spec = _yaml.safe_load((ROOT / "platforms/cim-npu-dram.yaml").read_text())
    spec["memories"]["dram"]["size_kib"] = 1024  # 1 MiB: resnet18's 4 MB of activations do not fit
    plat = tmp_path / "small-dram.yaml"
    plat.write_text(_yaml.safe_dump(spec, sort_keys=False))
    sw = write_spec(tmp_path, workloads=[str(ROOT / "workloads/resnet18_int8_qdq.onnx")], platforms=[str(plat)],
                    mappers=["heft"], parameters={})
    run_sweep(load_sweep(sw), workers=0)
    row = pd.read_csv(tmp_path / "out.csv").iloc[0]
    assert row["error"].startswith("MemoryCapacityError") and row["activation_fits"] == False  # noqa: E712


def test_two_platform_files_of_one_name_are_refused_not_merged(tmp_path):
    """Keys name files by their base name: a/puma.yaml and b/puma.yaml gave their points one key, so one row was
    moved aside as 'changed settings' on every resume and the other point never computed (reviewer)."""
    import shutil

    for d in "ab":
        (tmp_path / d).mkdir()
        shutil.copy(ROOT / "platforms/puma.yaml", tmp_path / d / "puma.yaml")
    spec = write_spec(tmp_path, platforms=[str(tmp_path / "a/puma.yaml"), str(tmp_path / "b/puma.yaml")],
                      parameters={}, mappers=["heft"])
    with pytest.raises(InputError, match=r"two points have the key .*a/puma.yaml and .*b/puma.yaml: files of one "
                                         r"name in different folders"):
        expand_points(load_sweep(spec))


@pytest.mark.parametrize("name", ["../../x", "a/b", "..", "", "a\\b"])
def test_a_sweep_name_that_is_not_a_file_name_cannot_make_the_default_output(tmp_path, name):
    """``name: ../../x`` without ``output`` had written the table outside the project (results/../../x.csv)."""
    from hetsim.dse.scenario_sweep import load_scenario_sweep

    onnx = {"name": name, "workloads": [str(ROOT / "workloads/resnet20_cifar10.onnx")],
            "platforms": [str(ROOT / "platforms/puma.yaml")], "mappers": ["heft"]}
    scen = {"name": name, "scenario": str(ROOT / "scenarios/two-models-puma.yaml"),
            "platforms": [str(ROOT / "platforms/puma.yaml")]}
    for spec, load in ((onnx, load_sweep), (scen, load_scenario_sweep)):
        p = tmp_path / "s.yaml"
        p.write_text(yaml.safe_dump(spec))
        with pytest.raises(InputError, match=r"names the default output results/<name>\.csv: give a plain name"):
            load(p)
        p.write_text(yaml.safe_dump({**spec, "output": str(tmp_path / "t.csv")}))  # with an output, any name
        assert load(p).output == tmp_path / "t.csv"


def test_an_onnx_sweep_on_an_snn_platform_is_refused_at_load(tmp_path, capsys):
    """platforms/efr32mg24.yaml has a Cortex-M33 host that runs spiking networks only: an ONNX sweep over it is
    refused before any point, in one line, exit 2 (every point had failed into an error row; found by
    hostile-input testing), with the message a single run gives."""
    from conftest import assert_input_error

    efr = str(ROOT / "platforms/efr32mg24.yaml")
    spec = write_spec(tmp_path, platforms=[str(ROOT / "platforms/puma.yaml"), efr], parameters={},
                      mappers=["heft"])
    with pytest.raises(InputError, match=r"platforms: .*efr32mg24.yaml: platform 'efr32mg24' has a 'cortex-m' "
                                         r"host and runs spiking networks .*not ONNX models"):
        load_sweep(spec)
    code = main(["sweep", str(spec)])
    assert_input_error(code, capsys.readouterr().err, "efr32mg24", "not ONNX models")
    assert not (tmp_path / "out.csv").exists()


def diana_spec(tmp_path: Path) -> Path:
    """resnet18 on DIANA, whose baseline all-8bit refuses layers over the 64 KiB digital weight memory, and
    resnet20, whose layers all fit."""
    return write_spec(tmp_path, workloads=[str(ROOT / "workloads/resnet18_int8_qdq.onnx"),
                                           str(ROOT / "workloads/resnet20_cifar10.onnx")],
                      platforms=[str(ROOT / "platforms/diana.yaml")], parameters={}, mappers=["min-cost"])


def test_a_point_without_a_baseline_says_why_as_the_run_does(tmp_path, capsys):
    from hetsim.pipeline import run
    from hetsim.platform import load_platform
    from hetsim.report.html import sweep_report_html

    assert main(["sweep", str(diana_spec(tmp_path)), "--workers", "1"]) == 0
    said = capsys.readouterr().out
    df = pd.read_csv(tmp_path / "out.csv", dtype=str, keep_default_na=False).set_index("workload")
    # the run behind the row: its summary's refusal, verbatim, in the row's baseline_error
    single = run(load_platform(ROOT / "platforms/diana.yaml"), str(ROOT / "workloads/resnet18_int8_qdq.onnx"),
                 mapper="min-cost").summary["baseline_error"]
    assert single.startswith("all-8bit: layer '/layer2/layer2.0/conv1/Conv' (Conv, 128 output channels) needs 72.0 KiB")
    no_base, based = df.loc["resnet18_int8_qdq.onnx"], df.loc["resnet20_cifar10.onnx"]
    assert (no_base["speedup"], no_base["error"], no_base["baseline_error"]) == ("", "", single)
    assert based["speedup"] != "" and based["baseline_error"] == ""
    # the new column is the last result column: the columns before it keep their order, the settings stay last
    cols = list(pd.read_csv(tmp_path / "out.csv", nrows=0).columns)
    assert cols[cols.index("error") + 1] == "baseline_error" and cols[-1] == "hetsim_version"
    line = next(ln for ln in said.splitlines() if "without a baseline" in ln)
    assert line.startswith("  1 point without a baseline (no speed-up), e.g. resnet18_int8_qdq.onnx: all-8bit: layer")
    assert len(line) < 240
    page = sweep_report_html(pd.read_csv(tmp_path / "out.csv"))
    assert "no baseline</th><td>1 point, e.g. resnet18_int8_qdq.onnx: all-8bit: layer &#x27;/layer2" in page


def test_a_table_without_baseline_error_recomputes_only_the_points_without_a_speedup(tmp_path):
    spec = load_sweep(diana_spec(tmp_path))
    out = tmp_path / "out.csv"
    run_sweep(spec, workers=1)
    new = pd.read_csv(out, dtype=str, keep_default_na=False)
    new.drop(columns=["baseline_error"]).to_csv(out, index=False)  # as written before the column existed
    said: list[str] = []
    # resnet20's row has its speed-up, so no baseline_error: kept; resnet18's has none, so its reason is computed
    assert run_sweep(spec, workers=1, notify=said.append)[1:] == (1, 1)
    assert said == [f"1 point computed by an older hetsim, without the columns baseline_error: recomputed; "
                    f"its old row is in {tmp_path / 'out.replaced.csv'}"]
    again = pd.read_csv(out, dtype=str, keep_default_na=False)
    pd.testing.assert_frame_equal(again.drop(columns=TIMING), new.drop(columns=TIMING))
