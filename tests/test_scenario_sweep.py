"""Sweeps over a scenario's parameters: one row per point, the analytic load linear in the swept
rate, resumable, bad paths refused in one line, and ``hetsim plot`` draws latency against offered load."""

from __future__ import annotations

import pandas as pd
import pytest
from conftest import ROOT, assert_input_error, run_cli

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


# ---------------------------------------------------------------------------- the ordinary sweep's guarantees
# (hetsim.dse.sweep's machinery: bounds, one writer per table, resume with a torn line, settings; signals are in
# tests/test_sweep_signals.py)


def _rates(tmp_path, n: int) -> object:
    return _files(tmp_path, f"  streams.cls.arrival.rate_hz: {[100 * (i + 1) for i in range(n)]}")


def test_a_grid_of_a_million_points_is_refused_before_it_is_built(tmp_path, capsys):
    import time

    sw = _files(tmp_path, f"  streams.cls.arrival.rate_hz: {list(range(1, 101))}\n  seed: {list(range(100))}\n"
                          f"  devices.cim.crossbars: {list(range(1, 101))}")
    t0 = time.perf_counter()
    with pytest.raises(InputError, match=r"has 1,000,000 points; hetsim runs at most 100,000"):
        load_scenario_sweep(sw)
    assert time.perf_counter() - t0 < 5
    code, _, err = run_cli(capsys, "sweep", sw, "--max-points", "999999")
    assert_input_error(code, err, "has 1,000,000 points", "at most 999,999", "--max-points")
    assert not (tmp_path / "out.csv").exists()


def test_the_point_count_is_the_number_of_points(tmp_path):
    from hetsim.dse.bounds import count_points
    from hetsim.dse.scenario_sweep import scenario_points

    spec = load_scenario_sweep(_rates(tmp_path, 3))
    spec.objectives = ["latency", "throughput"]
    assert count_points(spec) == len(scenario_points(spec)) == 6
    spec.objectives = None  # the scenario's own
    assert count_points(spec) == len(scenario_points(spec)) == 3


def test_an_output_that_is_a_folder_or_in_a_folder_it_cannot_write(tmp_path, capsys, monkeypatch):
    import errno
    import os

    sw = _rates(tmp_path, 1)
    (tmp_path / "dir.csv").mkdir()
    code, _, err = run_cli(capsys, "sweep", sw, "-o", tmp_path / "dir.csv")
    assert_input_error(code, err, "is a folder")
    real = os.open

    def refuse(path, *a, **k):  # root writes anywhere: the file system's refusal is simulated
        if str(path).startswith(str(tmp_path / "ro")):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        return real(path, *a, **k)

    (tmp_path / "ro").mkdir()
    monkeypatch.setattr(os, "open", refuse)
    code, _, err = run_cli(capsys, "sweep", sw, "-o", tmp_path / "ro" / "x.csv")
    assert_input_error(code, err, "cannot write in the folder", "Read-only file system")
    assert not list((tmp_path / "ro").iterdir())


def test_a_second_scenario_sweep_on_the_table_is_refused_and_the_table_stays_whole(tmp_path):
    """Two processes: a scenario sweep holds the table; a second one into it is refused in one line naming the first
    (both ran every point, appending to one table), and the first finishes with every row once."""
    import os
    import subprocess
    import sys
    import time

    go = tmp_path / "go"  # the first sweep's points wait for it (at most 60 s): the second starts while it runs
    (tmp_path / "slow_mapper.py").write_text(
        "import time\nfrom pathlib import Path\nfrom hetsim.mappers.base import register\n"
        "from hetsim.mappers.heft import Heft\n\n\n"
        "@register('slow')\nclass Slow:\n    def map(self, costs):\n"
        f"        t = time.monotonic()\n        while not Path({str(go)!r}).exists() and time.monotonic() - t < 60:\n"
        "            time.sleep(0.05)\n        return Heft().map(costs)\n")
    sw = _rates(tmp_path, 4)
    sw.write_text(sw.read_text() + "mappers: [slow]\n")
    env = {**os.environ, "HETSIM_PLUGINS": "slow_mapper", "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}"}
    first = subprocess.Popen([sys.executable, "-m", "hetsim", "sweep", str(sw), "--workers", "1"], cwd=tmp_path,
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        holder = tmp_path / ".out.csv.lock.holder"
        deadline = time.monotonic() + 60
        while not holder.exists() and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert first.poll() is None, first.communicate()
        second = subprocess.run([sys.executable, "-m", "hetsim", "sweep", str(sw), "--workers", "1"], cwd=tmp_path,
                                env=env, capture_output=True, text=True, timeout=120)
        assert_input_error(second.returncode, second.stderr, "is being written by another sweep",
                           f"process {first.pid} on ")
        assert len(second.stderr.strip().splitlines()) == 1, second.stderr
        go.touch()
        out, err1 = first.communicate(timeout=120)
    finally:
        if first.poll() is None:
            first.kill()
            first.communicate()
    assert first.returncode == 0, err1
    assert "4 points run, 0 already in" in out
    df = pd.read_csv(tmp_path / "out.csv")
    assert len(df) == 4 and df["key"].is_unique and df["error"].isna().all()
    assert not holder.exists()


def test_a_torn_last_line_is_dropped_and_its_point_run_again(tmp_path):
    """A kill in the middle of a row's write leaves a torn last line; the resumed sweep drops it (the next row was
    appended to it, and the table kept a row with a mangled key) and runs that point again."""
    spec = load_scenario_sweep(_rates(tmp_path, 3))
    full, _, _ = run_scenario_sweep(spec, output=tmp_path / "full.csv", workers=0)
    lines = full.read_bytes().splitlines(keepends=True)
    part = tmp_path / "part.csv"
    part.write_bytes(b"".join(lines[:3]) + lines[3][:40])  # header, two rows, 40 bytes of the third
    seen = []
    _, ran, kept = run_scenario_sweep(spec, output=part, workers=0, progress=lambda d, t, r: seen.append(r["key"]))
    assert (ran, kept) == (1, 2) and len(seen) == 1
    assert part.read_bytes() == full.read_bytes()


def test_a_changed_scenario_recomputes_its_rows_and_keeps_the_old_ones_aside(tmp_path):
    spec = load_scenario_sweep(_rates(tmp_path, 2))
    out, _, _ = run_scenario_sweep(spec, workers=0)
    before = pd.read_csv(out)
    sc = tmp_path / "sc.yaml"
    sc.write_text(sc.read_text().replace("count: 12", "count: 13"))
    said = []
    _, ran, kept = run_scenario_sweep(load_scenario_sweep(tmp_path / "sw.yaml"), workers=0, notify=said.append)
    assert (ran, kept) == (2, 0)
    assert len(said) == 1 and "2 points changed settings (changed scenario_sha256)" in said[0]
    after = pd.read_csv(out)
    assert len(after) == 2 and (after["scenario_sha256"] != before["scenario_sha256"]).all()
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "out.replaced.csv"), before)


def test_a_resumed_sweep_loads_each_platform_once(tmp_path, monkeypatch):
    """The settings of the finished rows are checked with the platform loaded once (it was loaded again for every
    finished point)."""
    import hetsim.platform
    from hetsim.dse import points

    spec = load_scenario_sweep(_rates(tmp_path, 4))
    run_scenario_sweep(spec, workers=0)
    loads = []
    real = hetsim.platform.load_platform
    monkeypatch.setattr(hetsim.platform, "load_platform", lambda *a, **k: loads.append(a) or real(*a, **k))
    points._platform_at.cache_clear()
    assert run_scenario_sweep(spec, workers=0)[1:] == (0, 4)
    assert len(loads) == 1


def test_an_edited_model_recomputes_the_rows_that_use_it(tmp_path):
    """A row's ``scenario_sha256`` covers the stream's model file: replacing the model recomputes the rows (they were
    kept, computed on the old model); an untouched scenario and model keep them."""
    import shutil

    shutil.copy(ROOT / "workloads" / "resnet20_cifar10.onnx", tmp_path / "m.onnx")
    sw = _rates(tmp_path, 2)
    sc = tmp_path / "sc.yaml"
    sc.write_text(sc.read_text().replace(str(ROOT / "workloads" / "resnet20_cifar10.onnx"), "m.onnx"))
    spec = load_scenario_sweep(sw)
    out, _, _ = run_scenario_sweep(spec, workers=0)
    before = pd.read_csv(out)
    assert run_scenario_sweep(spec, workers=0)[1:] == (0, 2)
    shutil.copy(ROOT / "workloads" / "mobilenet_v1_025_vww.onnx", tmp_path / "m.onnx")
    said = []
    assert run_scenario_sweep(spec, workers=0, notify=said.append)[1:] == (2, 0)
    assert "changed scenario_sha256" in said[0]
    after = pd.read_csv(out)
    assert (after["cls.latency_p50_s"] != before["cls.latency_p50_s"]).all()


def test_a_dask_cluster_gives_the_local_table(tmp_path, capsys):
    """``--scheduler`` runs a scenario sweep's points on Dask (as an ONNX sweep's; it was ignored); ``--threads``,
    which a scenario sweep has no use for (the scenario's mapper_options say it), is refused (it was ignored)."""
    distributed = pytest.importorskip("distributed")
    spec = load_scenario_sweep(_rates(tmp_path, 3))
    local, _, _ = run_scenario_sweep(spec, output=tmp_path / "local.csv", workers=2)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster:
        dask_out, ran, _ = run_scenario_sweep(spec, output=tmp_path / "dask.csv", scheduler=cluster.scheduler_address)
    assert ran == 3 and dask_out.read_bytes() == local.read_bytes()
    code, _, err = run_cli(capsys, "sweep", tmp_path / "sw.yaml", "--threads", "2")
    assert_input_error(code, err, "--threads: not for a scenario sweep")


def test_a_parameter_that_replaces_the_streams_keeps_their_results(tmp_path):
    """``parameters: {streams: [{cam: {...}}]}`` gives points whose only stream is ``cam``: the table has its
    columns and its cells (reviewer: the columns came from the base scenario's streams, so cam's results were
    dropped and the row looked complete)."""
    model = str(ROOT / "workloads" / "resnet20_cifar10.onnx")
    (tmp_path / "sc.yaml").write_text(f"mapper: heft\nseed: 3\nstreams:\n  cls: {{model: {model}, arrival: "
                                      "{process: poisson, rate_hz: 50}, count: 6}\n")
    (tmp_path / "sw.yaml").write_text(
        f"name: s\nscenario: sc.yaml\nplatforms: [{ROOT / 'platforms/puma.yaml'}]\noutput: out.csv\nparameters:\n"
        f"  streams:\n    - {{cam: {{model: {model}, arrival: {{process: poisson, rate_hz: 50}}, count: 6}}}}\n")
    out, ran, _ = run_scenario_sweep(load_scenario_sweep(tmp_path / "sw.yaml"), output=tmp_path / "out.csv",
                                     workers=1)
    row = pd.read_csv(out).iloc[0]
    assert ran == 1 and pd.isna(row["error"])
    assert row["cam.offered_hz"] > 0 and row["cam.latency_p50_s"] > 0


def test_a_table_with_its_columns_in_another_order_is_resumed_and_one_with_other_columns_refused(tmp_path):
    """A results table holding this sweep's columns in another order (an older hetsim wrote the settings first)
    is read by name: nothing is recomputed and it is rewritten in today's order, rows unchanged (it was refused
    as 'other columns'); a table with a column more or less is still refused."""
    spec = load_scenario_sweep(_rates(tmp_path, 2))
    out, _, _ = run_scenario_sweep(spec, workers=0)
    before = pd.read_csv(out, dtype=str, keep_default_na=False)
    cols = list(before.columns)
    shuffled = cols[-3:] + cols[:-3][::-1]
    before[shuffled].to_csv(out, index=False)
    said = []
    _, ran, kept = run_scenario_sweep(spec, workers=0, notify=said.append)
    assert (ran, kept) == (0, 2) and said == []
    after = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert list(after.columns) == cols
    pd.testing.assert_frame_equal(after, before)
    for bad in (before.assign(extra="x"), before.drop(columns=[cols[-4]])):
        bad.to_csv(out, index=False)
        with pytest.raises(InputError, match="other columns"):
            run_scenario_sweep(spec, workers=0)


def test_a_point_past_the_work_bound_refuses_the_sweep_before_any_point_runs(tmp_path, capsys):
    """The scenario's work (requests x (ops + 1), hetsim.scenario.spec.check_ops) estimated for every point
    before the first one runs: a count of 10^7 refuses the sweep in one line with the estimate, the point and the
    option; --max-ops N lifts it, and a bound just below a point's work refuses it."""
    import hetsim

    ops = len(hetsim.load_workload(ROOT / "workloads" / "resnet20_cifar10.onnx"))
    sw = _files(tmp_path, "  streams.cls.count: [12, 10000000]")
    code, _, err = run_cli(capsys, "sweep", str(sw), "--workers", "1")
    assert_input_error(code, err, f"point sc.yaml|puma.yaml|streams.cls.count=10000000|heft|latency: about "
                                  f"{10_000_000 * (ops + 1):.3g} simulated ops", "pass --max-ops N")
    assert not (tmp_path / "out.csv").exists() or len(pd.read_csv(tmp_path / "out.csv")) == 0
    sw = _files(tmp_path, "  streams.cls.count: [12]")
    code, _, err = run_cli(capsys, "sweep", str(sw), "--workers", "1", "--max-ops", str(12 * (ops + 1) - 1))
    assert_input_error(code, err, f"about {12 * (ops + 1)} simulated ops")
    code, out, err = run_cli(capsys, "sweep", str(sw), "--workers", "1", "--max-ops", str(12 * (ops + 1)))
    assert code == 0 and "1 points run" in out, err


def test_a_point_runs_under_the_sweeps_work_bound_in_its_worker(tmp_path):
    """A point carries the bound it was checked against (a worker process would have the default)."""
    from hetsim.dse.scenario_sweep import _check_work, run_scenario_point, scenario_points
    from hetsim.scenario.spec import max_ops

    spec = load_scenario_sweep(_files(tmp_path, "  streams.cls.count: [12]"))
    points = scenario_points(spec)
    with max_ops(10**9):
        _check_work(spec, points)
    assert points[0]["max_ops"] == 10**9
    points[0]["max_ops"] = 5
    row = run_scenario_point(points[0])
    assert "hetsim replays at most 5 in one scenario" in row["error"]


def test_max_ops_is_for_scenario_sweeps(capsys):
    code, _, err = run_cli(capsys, "sweep", str(ROOT / "sweeps" / "cpu-cim-ilp.yaml"), "--max-ops", "5")
    assert_input_error(code, err, "--max-ops applies to scenario sweeps")
