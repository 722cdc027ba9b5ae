"""A run folder's files are registered output stages (hetsim.report.outputs): each declares its files, the runs
it serves and a write function; the writers of every run and the ``--force`` guard read the one registry. A
stage added from outside hetsim by one call is written into the run folder atomically, guarded by ``--force``,
and gone again once removed."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from conftest import assert_input_error, run_cli

from hetsim.report.export import atomic_write_text
from hetsim.report.outputs import (
    OutputStage,
    output_files,
    output_stages,
    register_output,
    registered_output,
    unregister_output,
    write_outputs,
)
from hetsim.report.run_folder import MANIFEST
from hetsim.scenario.report import SCENARIO

ROOT = Path(__file__).resolve().parents[1]
PUMA = ROOT / "platforms" / "puma.yaml"
R20 = ROOT / "workloads" / "resnet20_cifar10.onnx"


def _hello(r, folder) -> None:
    """A throw-away output: the run's makespan, as written in summary.json."""
    atomic_write_text(folder / "hello.txt", f"{r.makespan_s!r}\n")


HELLO = OutputStage("hello", ("hello.txt",), runs="dag", write=_hello)


def _leftovers(out: Path) -> list[str]:
    """Staging folders left beside ``out``."""
    return [p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.hetsim-")]


def test_each_run_writes_the_files_it_always_wrote_in_order():
    assert output_files("dag") == ("summary.json", "ops.csv", "breakdown.csv", "critical_path.csv",
                                   "schedule.json", "trace.csv", "trace.json", "timeline.png", "breakdown.png",
                                   "memory.png", "report.html")
    assert output_files("onnx") == output_files("dag")  # the older spelling of the kind
    assert output_files("snn") == ("summary.json", "layers.csv", "samples.csv", "ops.csv", "breakdown.csv",
                                   "critical_path.csv", "schedule.json", "trace.csv", "trace.json", "timeline.png",
                                   "report.html")
    assert output_files(SCENARIO) == ("summary.json", "requests.csv", "streams.csv", "devices.csv", "trace.csv",
                                      "objectives.csv", "latency_cdf.png", "timeline.png", "occupancy.png",
                                      "report.html")
    assert output_files("no-such-run") == ()


def test_a_stage_runs_only_when_the_result_has_what_it_needs():
    names = {s.name for s in output_stages(SCENARIO, SimpleNamespace(comparison=None))}
    assert "objectives" not in names and "requests" in names
    with_comparison = {s.name for s in output_stages(SCENARIO, SimpleNamespace(comparison=pd.DataFrame()))}
    assert with_comparison - names == {"objectives"}
    no_figures = {s.name for s in output_stages(SCENARIO, SimpleNamespace(comparison=None), figures=False)}
    assert names - no_figures == {"latency-cdf", "scenario-timeline", "occupancy", "scenario-report"}


def test_the_registry_refuses_a_second_stage_of_a_name_or_of_a_file():
    with registered_output(HELLO):
        with pytest.raises(ValueError, match="named 'hello'"):
            register_output(HELLO)
        with pytest.raises(ValueError, match="hello.txt already written by 'hello' for dag runs"):
            register_output(OutputStage("hello-again", ("hello.txt",), runs=("dag", "snn"), write=_hello))
        # the same file name for another run is another stage's business (summary.json is written by three)
        with registered_output(OutputStage("snn-hello", ("hello.txt",), runs="snn", write=_hello)):
            assert "hello.txt" in output_files("snn")
        assert "hello.txt" not in output_files("snn")
    assert "hello.txt" not in output_files("dag")
    unregister_output("hello")  # a no-op once removed


def test_a_stage_added_from_outside_is_written_guarded_and_removed(tmp_path, capsys):
    out = tmp_path / "run"
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "hello.txt").write_text("the user's own\n")
    with registered_output(HELLO):
        assert output_files("dag")[-1] == "hello.txt" and "hello.txt" not in output_files("snn")
        code, stdout, err = run_cli(capsys, "run", PUMA, R20, "--mapper", "heft", "--out", out)
        assert code == 0, err
        assert "report.html, hello.txt to" in stdout  # written after the stages registered before it
        summary = json.loads((out / "summary.json").read_text())
        assert (out / "hello.txt").read_text() == f"{summary['makespan_s']!r}\n"
        assert "hello.txt" in (out / MANIFEST).read_text().split()  # part of the run: replaced whole by the next
        assert not _leftovers(out)
        # guarded: a folder holding a hello.txt is refused before any work, and replaced with --force
        code, _, err = run_cli(capsys, "run", PUMA, R20, "--mapper", "heft", "--out", mine)
        assert_input_error(code, err, "hello.txt", "--force")
        assert sorted(p.name for p in mine.iterdir()) == ["hello.txt"]
        assert run_cli(capsys, "run", PUMA, R20, "--mapper", "heft", "--out", mine, "--force")[0] == 0
        assert (mine / "hello.txt").read_text() == (out / "hello.txt").read_text()
    # removed: a user's hello.txt is no output any more, so neither refused nor replaced
    assert "hello.txt" not in output_files("dag")
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    (fresh / "hello.txt").write_text("the user's own\n")
    assert run_cli(capsys, "run", PUMA, R20, "--mapper", "heft", "--out", fresh)[0] == 0
    assert (fresh / "hello.txt").read_text() == "the user's own\n"
    assert "hello.txt" not in (fresh / MANIFEST).read_text().split()


def test_a_failing_stage_leaves_the_earlier_folder_as_it_was(tmp_path):
    from hetsim.api import load_platform, run

    r = run(load_platform(PUMA), R20, mapper="heft")
    out = tmp_path / "run"
    write_outputs(r, out)
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def half(r, folder):
        (folder / "half.txt").write_text("half")
        raise RuntimeError("the stage failed")

    with (registered_output(OutputStage("half", ("half.txt",), runs="dag", write=half)),
          pytest.raises(RuntimeError, match="the stage failed")):
        write_outputs(r, out, force=True)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert not _leftovers(out)
