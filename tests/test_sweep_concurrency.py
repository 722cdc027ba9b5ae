"""Data safety: one writer per results table (hetsim.dse.lock), sweep workers die with the sweep
(hetsim.dse.workers), and a run folder is replaced whole or not at all (hetsim.report.run_folder)."""

from __future__ import annotations

import hashlib
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from conftest import assert_input_error, run_cli

from hetsim.report.run_folder import MANIFEST  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PUMA = ROOT / "platforms" / "puma.yaml"
R20 = ROOT / "workloads" / "resnet20_cifar10.onnx"


def _sweep_file(tmp_path: Path, crossbars=(25, 50, 100, 200)) -> Path:
    p = tmp_path / "s.yaml"
    p.write_text(f"name: s\nworkloads: [{R20}]\nplatforms: [{PUMA}]\n"
                 f"parameters:\n  devices.cim.crossbars: {list(crossbars)}\nmappers: [heft]\n"
                 f"output: {tmp_path / 'table.csv'}\n")
    return p


def _hetsim(*args) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "hetsim", *map(str, args)], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_a_second_writer_is_refused_naming_the_holder(tmp_path, capsys):
    from hetsim.dse.lock import results_lock

    sweep = _sweep_file(tmp_path, crossbars=(25,))
    out = tmp_path / "table.csv"
    with results_lock(out):  # flock is per open file: a second lock in this process conflicts as another's would
        code, _, err = run_cli(capsys, "sweep", sweep)
        assert_input_error(code, err, "is being written by another sweep", f"process {os.getpid()} on ")
    assert not out.exists()
    code, _, err = run_cli(capsys, "sweep", sweep)  # the lock is gone with its holder
    assert code == 0, err
    assert len(pd.read_csv(out)) == 1
    assert not (tmp_path / ".table.csv.lock.holder").exists()


def test_two_sweeps_at_once_neither_duplicate_nor_lose_a_row(tmp_path, capsys):
    """Two identical sweeps started together: one runs, the other is refused (or, when the first is already done,
    finds every point finished); run again, the table has every point exactly once and no point was computed
    twice."""
    sweep = _sweep_file(tmp_path, crossbars=(25, 50))
    procs = [_hetsim("sweep", sweep, "--workers", "1") for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    codes = sorted(p.returncode for p in procs)
    assert codes in ([0, 0], [0, 2]), outs
    for p, (_, err) in zip(procs, outs, strict=True):
        if p.returncode == 2:
            assert "is being written by another sweep (process " in err and "Traceback" not in err, err
    code, out3, err3 = run_cli(capsys, "sweep", sweep, "--workers", "1")
    assert code == 0, err3
    ran = [int(m.group(1)) for o, _ in [*outs, (out3, err3)] for m in re.finditer(r"(\d+) points run", o)]
    assert sum(ran) == 2, (ran, outs, out3)  # every point computed once, by whichever sweep held the table
    table = pd.read_csv(tmp_path / "table.csv")
    assert len(table) == 2 and table["key"].is_unique


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(x) for x in text.split()]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads worker pids from /proc (Linux)")
def test_sweep_workers_die_with_the_sweep_after_sigkill(tmp_path):
    sweep = _sweep_file(tmp_path, crossbars=tuple(range(10, 130, 10)))
    proc = _hetsim("sweep", sweep, "--workers", "2")
    try:
        deadline = time.monotonic() + 120
        workers: list[int] = []
        while time.monotonic() < deadline and len(workers) < 2 and proc.poll() is None:
            time.sleep(0.2)
            workers = _children(proc.pid)
        assert len(workers) == 2, "the sweep did not start its two workers"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(_alive(w) for w in workers):
            time.sleep(0.1)
        left = [w for w in workers if _alive(w)]
        for w in left:  # do not leave them to the rest of the suite
            os.kill(w, signal.SIGKILL)
        assert not left, f"workers {left} outlived the sweep"
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


# ------------------------------------------------------------------------------------------- run folders


def _digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def test_a_failed_force_run_leaves_the_earlier_folder_whole(tmp_path, capsys, monkeypatch):
    from hetsim.analysis import plots
    from hetsim.report.export import OutputPathError

    out = tmp_path / "run"
    code, _, err = run_cli(capsys, "run", PUMA, R20, "--mapper", "heft", "--out", out)
    assert code == 0, err
    (out / "notes.txt").write_text("mine")
    before = _digest(out)

    def full_disk(*_a, **_k):
        raise OutputPathError(f"cannot write {str(out / 'timeline.png')!r}: No space left on device")

    monkeypatch.setattr(plots, "plot_timeline", full_disk)  # fails after summary, ops, schedule and traces
    code, _, err = run_cli(capsys, "run", PUMA, R20, "--mapper", "heft", "--set", "devices.cim.crossbars=25",
                           "--out", out, "--force")
    assert_input_error(code, err, "No space left on device")
    assert _digest(out) == before  # not one file of the failed run
    assert [p.name for p in tmp_path.iterdir()] == ["run"]  # no staging folder left beside it
    monkeypatch.undo()
    code, _, err = run_cli(capsys, "run", PUMA, R20, "--mapper", "heft", "--set", "devices.cim.crossbars=25",
                           "--out", out, "--force")
    assert code == 0, err
    after = _digest(out)
    assert set(after) == set(before) and after["notes.txt"] == before["notes.txt"]  # the user's file stays
    assert after["summary.json"] != before["summary.json"]


def test_a_killed_run_leaves_no_partial_folder_or_empty_file(tmp_path, capsys):
    """SIGKILL at some moment of a --force run: the folder is the earlier run or the new one, whole; a staging
    folder left beside it is removed by the next run."""
    out = tmp_path / "run"
    code, _, err = run_cli(capsys, "run", PUMA, R20, "--mapper", "heft", "--out", out)
    assert code == 0, err
    before = _digest(out)
    proc = _hetsim("run", PUMA, R20, "--mapper", "heft", "--set", "devices.cim.crossbars=25", "--out", out, "--force")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None and not any(
            p.name.startswith(".run.hetsim-new-") for p in tmp_path.iterdir()):
        time.sleep(0.01)
    proc.kill()
    proc.communicate()
    now = _digest(out)
    assert set(now) == set(before) and all(os.path.getsize(out / f) > 0 for f in now)
    assert not [f for f in now if f.startswith(".") and f != MANIFEST]  # the run's list of its files only
    code, _, err = run_cli(capsys, "run", PUMA, R20, "--mapper", "heft", "--out", out, "--force")
    assert code == 0, err
    assert [p.name for p in tmp_path.iterdir()] == ["run"]


def test_force_replaces_a_run_folder_of_another_kind_whole(tmp_path, capsys):
    """A scenario run with ``--force`` into a single run's folder (and back) leaves no file of the earlier run:
    the trial of 2026-12-02 found the scenario writer wrote its files one by one over the folder, keeping the
    single run's ops.csv, schedule.json, trace.json and figures beside the scenario's summary.json. The user's
    own file stays."""
    from hetsim.report.outputs import output_files
    from hetsim.scenario.report import SCENARIO

    single_files, scenario_files = set(output_files("dag")), set(output_files(SCENARIO))

    own = {MANIFEST, "notes.txt"}

    out = tmp_path / "out"
    plat, r20 = str(ROOT / "platforms/puma.yaml"), str(ROOT / "workloads/resnet20_cifar10.onnx")
    scen = tmp_path / "s.yaml"
    scen.write_text(f"streams:\n  r: {{model: {r20}, arrival: {{process: periodic, period_s: 0.01}}, count: 3}}\n")
    assert run_cli(capsys, "run", plat, r20, "--mapper", "heft", "--out", str(out))[0] == 0
    (out / "notes.txt").write_text("mine")
    single = {p.name for p in out.iterdir()}
    assert run_cli(capsys, "run", plat, str(scen), "--out", str(out))[0] == 2  # without --force: refused
    assert run_cli(capsys, "run", plat, str(scen), "--out", str(out), "--force")[0] == 0
    now = {p.name for p in out.iterdir()}
    assert now - own <= scenario_files and "requests.csv" in now
    assert not (single & single_files) - scenario_files & now  # ops.csv, schedule.json, ... gone
    assert (out / "notes.txt").read_text() == "mine"
    assert run_cli(capsys, "run", plat, r20, "--mapper", "heft", "--out", str(out), "--force")[0] == 0
    back = {p.name for p in out.iterdir()}
    assert "requests.csv" not in back and back == single


def test_a_users_file_named_like_another_kinds_output_is_neither_refused_nor_removed(tmp_path, capsys):
    """A folder where the user keeps a devices.csv of their own (a scenario run writes one): a single run into
    it is not refused for it, and a --force rerun keeps it; a scenario run into that folder then needs --force
    (the folder holds the single run's files, listed in its .hetsim-files) and replaces only those (reviewer)."""
    out = tmp_path / "mine"
    out.mkdir()
    (out / "devices.csv").write_text("mine\n")
    plat, r20 = str(ROOT / "platforms/puma.yaml"), str(ROOT / "workloads/resnet20_cifar10.onnx")
    assert run_cli(capsys, "run", plat, r20, "--mapper", "heft", "--out", str(out))[0] == 0
    assert run_cli(capsys, "run", plat, r20, "--mapper", "heft", "--out", str(out), "--force")[0] == 0
    assert (out / "devices.csv").read_text() == "mine\n"
    assert "devices.csv" not in (out / MANIFEST).read_text().split()


class _Pools:
    """A stand-in for ProcessPoolExecutor that records ``max_workers`` and refuses more than ``allow`` (so that a
    test on code without the bound never forks them)."""

    def __init__(self, allow: int):
        import concurrent.futures

        self.real, self.allow, self.sizes = concurrent.futures.ProcessPoolExecutor, allow, []

    def __call__(self, max_workers=None, **kw):
        self.sizes.append(max_workers)
        if max_workers > self.allow:
            raise AssertionError(f"a pool of {max_workers} processes")
        return self.real(max_workers=max_workers, **kw)


def test_a_sweep_starts_no_more_workers_than_points_and_refuses_a_fork_bomb(tmp_path, capsys, monkeypatch):
    """Python's process pool forks all its workers at once: ``--workers 100000`` had forked until the machine ran
    out of processes (the sweep hung), and ``--workers 8`` forked 8 processes for 2 points."""
    import hetsim.dse.runner as runner_mod
    from hetsim.dse import load_sweep, run_sweep

    pools = _Pools(allow=4)
    monkeypatch.setattr(runner_mod, "ProcessPoolExecutor", pools)
    code, _, err = run_cli(capsys, "sweep", _sweep_file(tmp_path, (25, 50)), "--workers", "100000")
    assert_input_error(code, err, "--workers 100000: at most 1024 local worker processes")
    assert pools.sizes == [] and not (tmp_path / "table.csv").exists()
    out, ran, _ = run_sweep(load_sweep(_sweep_file(tmp_path, (25, 50))), workers=8)
    assert ran == 2 and pools.sizes == [2]
    with pytest.raises(runner_mod.InputError, match="at most 1024"):
        run_sweep(load_sweep(_sweep_file(tmp_path, (10, 20))), workers=5000)
    assert pools.sizes == [2]


def test_a_table_given_through_a_symlink_is_locked_and_written_as_its_target(tmp_path, capsys):
    """The lock is the file's, not the name's: a sweep into a symlink of a table another sweep holds is refused;
    alone, it writes through the link (the link stays a link, the rows are in its target)."""
    from hetsim.dse.lock import results_lock

    sweep = _sweep_file(tmp_path, crossbars=(25, 50))
    out = tmp_path / "table.csv"
    link = tmp_path / "alias.csv"
    link.symlink_to(out.name)
    with results_lock(out):
        code, _, err = run_cli(capsys, "sweep", sweep, "-o", link, "--workers", "1")
        assert_input_error(code, err, "is being written by another sweep", f"process {os.getpid()} on ")
    with results_lock(link) as table:
        assert table == out.resolve()
        code, _, err = run_cli(capsys, "sweep", sweep, "--workers", "1")
        assert_input_error(code, err, "is being written by another sweep")
    code, _, err = run_cli(capsys, "sweep", sweep, "-o", link, "--workers", "1")
    assert code == 0, err
    assert link.is_symlink() and os.readlink(link) == out.name  # rewritten (sorted) through the link
    assert len(pd.read_csv(out)) == 2 and not (tmp_path / ".alias.csv.lock").exists()


def test_a_table_given_through_a_hard_link_is_refused_while_another_sweep_writes_it(tmp_path, capsys):
    """Two names of one inode: the table itself is locked (flock), so a sweep through the other name is refused
    in one line while the first holds it, and runs once it is gone."""
    from hetsim.dse.lock import results_lock

    sweep = _sweep_file(tmp_path, crossbars=(25, 50))
    out = tmp_path / "table.csv"
    code, _, err = run_cli(capsys, "sweep", sweep, "--workers", "1")
    assert code == 0, err
    alias = tmp_path / "sub" / "alias.csv"
    alias.parent.mkdir()
    os.link(out, alias)
    with results_lock(out):
        code, _, err = run_cli(capsys, "sweep", sweep, "-o", alias, "--workers", "1")
        assert_input_error(code, err, "is the same file as a table another sweep is writing under another name")
    code, out2, err = run_cli(capsys, "sweep", sweep, "-o", alias, "--workers", "1")
    assert code == 0 and "0 points run" in out2, (out2, err)


def test_a_symlink_loop_as_a_sweep_table_is_one_line(tmp_path, capsys):
    sweep = _sweep_file(tmp_path, crossbars=(25,))
    loop = tmp_path / "loop.csv"
    loop.symlink_to("loop.csv")
    code, _, err = run_cli(capsys, "sweep", sweep, "-o", loop, "--workers", "1")
    assert_input_error(code, err, "is a symbolic link loop")


def test_a_run_writing_a_folder_another_run_is_writing_is_refused_in_one_line(tmp_path, capsys):
    """While one run writes DIR (its staging folder beside it), a second ``--out DIR`` is refused in one line and
    leaves the first's staging folder alone; once the first is done, the second runs and no lock file is left."""
    from hetsim.report.run_folder import staged_folder

    out = tmp_path / "run"
    with staged_folder(out, owned=["x.txt"]) as stage:
        code, _, err = run_cli(capsys, "run", PUMA, R20, "--mapper", "heft", "--out", out, "--force")
        assert_input_error(code, err, "is being written by another hetsim run at this moment")
        assert stage.is_dir()
        (stage / "x.txt").write_text("first")
    assert (out / "x.txt").read_text() == "first"
    code, _, err = run_cli(capsys, "run", PUMA, R20, "--mapper", "heft", "--out", out, "--force")
    assert code == 0, err
    assert [p.name for p in tmp_path.iterdir()] == ["run"]


@pytest.mark.parametrize("what", ["run", "scenario"])
def test_two_runs_into_one_folder_at_once_never_end_in_a_traceback(tmp_path, what):
    """Two ``hetsim run --out DIR --force`` started together: each ends with exit 0 or the one-line refusal
    (exit 2), and DIR holds one run's files whole."""
    out = tmp_path / "run"
    if what == "run":
        args = [PUMA, R20, "--mapper", "heft"]
    else:
        sc = tmp_path / "sc.yaml"
        sc.write_text(f"streams:\n  a:\n    model: {R20}\n    arrival: {{process: periodic, period_s: 0.01}}\n"
                      "    count: 5\n")
        args = [PUMA, sc]
    procs = [_hetsim("run", *args, "--out", out, "--force") for _ in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    for p, (_, err) in zip(procs, outs, strict=True):
        assert p.returncode in (0, 2) and "Traceback" not in err, err
        if p.returncode == 2:
            assert err.count("\n") == 1 and "is being written by another hetsim run" in err, err
    assert 0 in [p.returncode for p in procs]
    names = (out / MANIFEST).read_text().split()
    assert sorted([*names, MANIFEST]) == sorted(p.name for p in out.iterdir())
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".run")] == []


@pytest.mark.parametrize("what", ["run", "scenario"])
def test_a_run_finishing_into_the_folder_meanwhile_is_not_replaced_without_force(tmp_path, capsys, monkeypatch,
                                                                                what):
    """Two runs into one new ``--out DIR`` without ``--force``, one after the other's check: the first finds DIR
    missing, the second finishes into DIR while the first still simulates; the first is then refused in one line
    (DIR already holds a run) and DIR keeps the second's files, unchanged (it was replaced, without --force)."""
    import shutil

    import hetsim.report.run_folder as rf

    if what == "run":
        args = [PUMA, R20, "--mapper", "heft"]
    else:
        args = [PUMA, tmp_path / "sc.yaml"]
        args[1].write_text(f"streams:\n  a:\n    model: {R20}\n    arrival: {{process: periodic, period_s: 0.01}}\n"
                           "    count: 3\n")
    other, out = tmp_path / "other", tmp_path / "run"
    code, _, err = run_cli(capsys, "run", *args, "--out", other)
    assert code == 0, err
    before = {p.name: p.read_bytes() for p in other.iterdir()}
    real = rf._one_writer

    def other_run_finished_first(path):
        shutil.copytree(other, out)  # what the other run leaves: its folder, whole
        return real(path)

    monkeypatch.setattr(rf, "_one_writer", other_run_finished_first)
    code, _, err = run_cli(capsys, "run", *args, "--out", out)
    assert_input_error(code, err, "already holds")
    assert "pass --force" in err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
