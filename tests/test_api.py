"""The Python API (``import hetsim``): the README's example runs as written; did-you-mean errors in the API, the
CLI and sweep files; contention as a string or a set; plots return Figures; the result's repr; platform
overrides; a strict ``get_mapper``; ``import hetsim`` stays cheap."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import assert_input_error, run_cli

import hetsim
from hetsim.errors import InputError
from hetsim.mappers import get_mapper, mapper_option_names
from hetsim.numbers import format_value
from hetsim.sim.engine import CONTENTION_KINDS

ROOT = Path(__file__).resolve().parents[1]
PUMA = ROOT / "platforms" / "puma.yaml"
YOLO = ROOT / "workloads" / "yolov5n.onnx"
R18 = ROOT / "workloads" / "resnet18_int8_qdq.onnx"
SNN = ROOT / "workloads" / "snn" / "braille64.yaml"


@pytest.fixture(scope="module")
def yolo():
    return hetsim.load_workload(YOLO)


@pytest.fixture(scope="module")
def puma():
    return hetsim.load_platform(PUMA)


@pytest.fixture(scope="module")
def greedy_run(puma, yolo):
    return hetsim.run(puma, yolo, mapper="greedy")


@pytest.fixture
def close_figures():
    import matplotlib.pyplot as plt

    yield
    plt.close("all")


def _readme_example(i: int = 0) -> str:
    text = (ROOT / "README.md").read_text()
    section = text.split("\n## Python API\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert len(blocks) == 2, "the Python API section has two python code blocks (ONNX, then spiking networks)"
    return blocks[i]


# ------------------------------------------------------------------------------------------------- README


def test_readme_python_api_example_runs_as_written(monkeypatch, capsys, close_figures):
    from matplotlib.figure import Figure

    monkeypatch.chdir(ROOT)  # the example's paths are relative to the repository, as in the CLI examples
    before = set(ROOT.iterdir())
    scope: dict = {}
    exec(compile(_readme_example(), "README.md (Python API)", "exec"), scope)
    out = capsys.readouterr().out
    r = scope["r"]
    assert isinstance(r, hetsim.RunResult) and r.schedule.mapper == "cpsat"
    assert r.schedule.stats["status"] == "optimal"  # 10 s is plenty: it proves optimal in about a second
    assert "<RunResult yolov5n on puma-arm, mapper cpsat: makespan 92.17 ms" in out  # as the comment says
    # the changed platform is named by its change, as --set names it
    assert "<RunResult yolov5n on puma-arm with devices.cim.crossbars=25, mapper greedy" in out and "'cpsat':" in out
    assert isinstance(scope["fig"], Figure)
    assert scope["small"].devices["cim"].crossbars == 25
    assert set(ROOT.iterdir()) == before  # it writes nothing


def test_readme_snn_example_runs_as_written(monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    scope: dict = {"hetsim": hetsim}
    exec(compile(_readme_example(1), "README.md (Python API, SNN)", "exec"), scope)
    out = capsys.readouterr().out
    r = scope["r"]
    assert "<RunResult braille7_12-384-384-7_T51 on efr32mg24, mapper spikeduet: makespan 74.52 ms" in out
    assert r.makespan_s == pytest.approx(r.snn.configs["spikeduet-async"].latency_s.mean(), rel=1e-15)
    assert list(r.snn.layers["engine"]) == ["mvp-range", "m33", "mvp-range"]


# ------------------------------------------------------------------------------------------- the result


def test_result_numbers_tables_and_repr(greedy_run):
    r = greedy_run
    s = r.summary
    assert r.makespan_s == s["makespan_s"] == r.result.makespan_s
    assert r.energy_j == s["energy_j"] and r.speedup == s["speedup"]
    assert len(r.ops) == s["operators"] == len(r.workload.graph)
    assert {"op", "device"} <= set(r.ops.columns)
    assert set(r.devices["device"]) >= {"host", "cim", "bus"}
    assert list(r.trace.columns)[:4] == ["op", "device", "kind", "phase"]
    json.dumps(s)  # what summary.json holds
    assert repr(r) == (f"<RunResult yolov5n on puma-arm, mapper greedy: makespan {format_value(s['makespan_s'], 's')}, "
                       f"energy {format_value(s['energy_j'], 'J')}, speedup {s['speedup']:.2f}x>")
    assert format_value(s["makespan_s"], "s") == f"{s['makespan_s'] * 1e3:.2f} ms"  # 4 significant digits


def test_plots_return_figures_and_write_only_when_asked(greedy_run, tmp_path, monkeypatch, close_figures):
    from matplotlib.figure import Figure

    monkeypatch.chdir(tmp_path)
    t, b = greedy_run.plot_timeline(), greedy_run.plot_breakdown(title="mine")
    assert isinstance(t, Figure) and isinstance(b, Figure)
    assert b.axes[0].get_title(loc="left") == "mine"
    assert list(tmp_path.iterdir()) == []
    t2 = greedy_run.plot_timeline(path="t.svg")
    b2 = greedy_run.plot_breakdown(path=tmp_path / "b")  # a stem: PNG and SVG
    assert isinstance(t2, Figure) and isinstance(b2, Figure)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.png", "b.svg", "t.svg"]
    configs = list(dict.fromkeys(greedy_run.breakdown_table()["config"]))
    assert configs == ["all-host", "greedy"]


def test_only_the_cli_selects_a_backend(tmp_path):
    """Importing the plotting modules leaves the backend alone (here the one MPLBACKEND names); the CLI
    selects Agg before it draws."""
    env = {**os.environ, "MPLBACKEND": "pdf"}
    code = ("import hetsim.analysis.plots, hetsim.report.dse_plots, hetsim.snn.report, matplotlib;"
            "print(matplotlib.get_backend())")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "pdf"
    code = ("import sys, matplotlib; from hetsim.cli import main;"
            f"rc = main(['run', {str(PUMA)!r}, {str(YOLO)!r}, '--mapper', 'all-host', '--out', {str(tmp_path)!r}]);"
            "print(rc, matplotlib.get_backend())")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1].lower() == "0 agg"
    assert (tmp_path / "timeline.png").is_file() and (tmp_path / "breakdown.png").is_file()


# ----------------------------------------------------------------------------------------------- inputs


def test_contention_as_string_or_set_gives_the_same_run(puma, yolo):
    from hetsim.pipeline import run

    runs = [hetsim.run(puma, yolo, mapper="greedy", contention=c)
            for c in ("links,cim-bus", {"cim-bus", "links"}, ["links", "cim-bus"], frozenset({"links", "cim-bus"}))]
    runs.append(run(puma, yolo, mapper="greedy", contention="cim-bus, links"))  # the pipeline takes them too
    for r in runs:
        assert r.summary["contention"] == ["cim-bus", "links"]
        assert r.makespan_s == runs[0].makespan_s
        assert r.trace.equals(runs[0].trace)
    everything = hetsim.run(puma, yolo, mapper="greedy", contention="all")
    assert everything.trace.equals(hetsim.run(puma, yolo, mapper="greedy", contention=set(CONTENTION_KINDS)).trace)
    none = [hetsim.run(puma, yolo, mapper="greedy", contention=c).makespan_s for c in ("none", set(), None, "")]
    assert len(set(none)) == 1
    with pytest.raises(InputError, match="unknown contention kind 'link'; did you mean 'links'"):
        hetsim.run(puma, yolo, mapper="greedy", contention={"link"})
    with pytest.raises(InputError, match="stand alone"):
        hetsim.run(puma, yolo, mapper="greedy", contention=["all"])


def test_platform_overrides_and_loaded_or_path_inputs(puma, yolo):
    small = hetsim.load_platform(PUMA).with_overrides({"devices.cim.crossbars": 25})
    assert small.devices["cim"].crossbars == 25 and puma.devices["cim"].crossbars == 100
    r = hetsim.run(small, YOLO, mapper="greedy")
    assert r.summary["crossbars"]["cim"]["available"] == 25
    assert r.summary["crossbars"]["cim"]["used"] <= 25
    assert hetsim.run(PUMA, str(YOLO), mapper="greedy").makespan_s == hetsim.run(puma, yolo, "greedy").makespan_s
    with pytest.raises(InputError, match="crossbarz"):
        puma.with_overrides({"devices.cim.crossbarz": 25})


def test_snn_specs_run_through_the_one_pipeline(tmp_path, capsys):
    """The one pipeline for SNNs: ``hetsim run ... NET.yaml --out D`` and ``hetsim.run`` give the same makespan_s
    (the mean latency over the eval split), and the trace names the devices as the platform YAML does."""
    import json

    import yaml

    from hetsim.cli import main

    efr = ROOT / "platforms" / "efr32mg24.yaml"
    r = hetsim.run(efr, SNN)
    assert isinstance(r, hetsim.RunResult) and r.snn is not None
    assert r.makespan_s == pytest.approx(r.snn.result.latency_s.mean(), rel=1e-15)
    assert r.energy_j == pytest.approx(r.snn.result.energy_j.mean(), rel=1e-15)
    assert r.schedule.mapper == "spikeduet" and r.summary["mode"] == "async"
    assert set(r.trace["device"]) <= {"m33", "mvp"} and len(r.ops) == len(r.workload)
    assert main(["run", str(efr), str(SNN), "--out", str(tmp_path / "d")]) == 0
    capsys.readouterr()
    s = json.loads((tmp_path / "d" / "summary.json").read_text())
    assert s["makespan_s"] == r.makespan_s
    # the same platform with its devices renamed: same numbers, the trace uses the new names
    data = yaml.safe_load(efr.read_text())
    data["devices"] = {"core": data["devices"]["m33"], "matvec": data["devices"]["mvp"]}
    data["host"] = "core"
    for mem in data["memories"].values():
        mem["shared_by"] = ["core", "matvec"]
    (tmp_path / "renamed.yaml").write_text(yaml.safe_dump(data))
    r2 = hetsim.run(tmp_path / "renamed.yaml", SNN)
    assert r2.makespan_s == r.makespan_s
    assert set(r2.trace["device"]) == {"core", "matvec"} == set(r2.schedule.order)
    assert set(r2.snn.traces["blocking"]["device"]) <= {"core", "matvec"}
    # the wrong kind of mapper, either way round, is one clear error
    with pytest.raises(InputError, match="maps ONNX models"):
        hetsim.run(efr, SNN, mapper="greedy")
    with pytest.raises(InputError, match="maps spiking networks"):
        hetsim.run(PUMA, YOLO, mapper="spikeduet")
    with pytest.raises(InputError, match="unknown option 'threads' for mapper 'spikeduet'"):
        hetsim.run(efr, SNN, threads=2)
    from hetsim.snn.unroll import SnnWorkload

    wl = hetsim.load_workload(SNN)  # the unrolled operator DAG
    assert isinstance(wl, SnnWorkload) and len(wl) == len(r.workload) and wl.name == r.workload.name


def test_replaying_a_schedule_takes_no_mapper_options(greedy_run, puma, yolo, tmp_path):
    p = tmp_path / "s.json"
    p.write_text(greedy_run.schedule.to_json())
    again = hetsim.run(puma, yolo, schedule=p)
    assert again.makespan_s == greedy_run.makespan_s and again.schedule.mapper == "greedy"
    with pytest.raises(InputError, match=r"mapper options \(time_limit_s\)"):
        hetsim.run(puma, yolo, schedule=greedy_run.schedule, time_limit_s=5)


def test_mappers_listing():
    listing = hetsim.mappers()
    assert {"all-host", "greedy", "heft", "ilp", "cpsat", "min-cost"} <= set(listing)
    assert all(isinstance(v, str) and v for v in listing.values())
    assert hetsim.mappers() == hetsim.mappers.available()  # the package of the mappers, callable
    assert "cpsat" in hetsim.mappers.MAPPERS


# ---------------------------------------------------------------------------------------- did you mean


def test_api_unknown_option_and_mapper_suggest_the_closest(tmp_path):
    missing = tmp_path / "nope.onnx"  # the options are checked before the model is read
    with pytest.raises(InputError) as err:
        hetsim.run(PUMA, missing, mapper="cpsat", time_limt_s=10)
    assert str(err.value).startswith("unknown option 'time_limt_s' for mapper 'cpsat'; did you mean "
                                     "'time_limit_s'? (cpsat takes: time_limit_s, ")
    with pytest.raises(InputError, match="unknown mapper 'cpsta'; did you mean 'cpsat'"):
        hetsim.run(PUMA, missing, mapper="cpsta")
    with pytest.raises(InputError, match=r"unknown option 'time_limit_s' for mapper 'greedy' \(greedy takes: "
                                         r"min_gain, objective\)"):
        hetsim.run(PUMA, missing, mapper="greedy", time_limit_s=10)


def test_get_mapper_is_strict():
    assert get_mapper("greedy", min_gain=0.5).min_gain == 0.5
    assert get_mapper("cpsat", time_limit_s=3, threads=1).time_limit_s == 3
    with pytest.raises(InputError, match=r"unknown option 'min_gian' for mapper 'greedy'; did you mean 'min_gain'"):
        get_mapper("greedy", min_gian=0.5)
    with pytest.raises(InputError, match=r"unknown option 'seed' for mapper 'all-host' \(all-host takes no options"):
        get_mapper("all-host", seed=0)
    with pytest.raises(InputError, match="unknown mapper 'gredy'; did you mean 'greedy'"):
        get_mapper("gredy")
    assert mapper_option_names("greedy") == ("min_gain", "objective")
    assert "time_limit_s" in mapper_option_names("ilp")


def test_cli_misspelt_mapper_and_options_that_do_not_apply(capsys, tmp_path):
    for cmd in (["run"], ["map", "-o", str(tmp_path / "s.json")], ["validate"]):
        assert_input_error(*run_cli(capsys, *cmd, PUMA, YOLO, "--mapper", "cpsta")[::2],
                           "unknown mapper 'cpsta'; did you mean 'cpsat'?")
    assert_input_error(*run_cli(capsys, "run", PUMA, YOLO, "--mapper", "greedy", "--time-limit", "5")[::2],
                       "--time-limit does not apply to --mapper greedy", "its options: --objective")
    assert_input_error(*run_cli(capsys, "run", PUMA, YOLO, "--mapper", "all-host", "--time-limit", "5")[::2],
                       "--time-limit does not apply to --mapper all-host", "it takes none on the command line")
    assert_input_error(*run_cli(capsys, "run", PUMA, YOLO, "--mapper", "min-cost", "--seed", "1",
                                "--gap", "0.1")[::2], "--gap, --seed do not apply to --mapper min-cost",
                       "its options: --objective")
    assert_input_error(*run_cli(capsys, "run", PUMA, YOLO, "--contention", "linkz")[::2],
                       "did you mean 'links'?")
    # a mapper without options runs when none is given: nothing is passed that the user did not set
    code, out, err = run_cli(capsys, "run", PUMA, YOLO, "--mapper", "greedy", "--json")
    assert code == 0, err
    assert json.loads(out)["mapper"] == "greedy"


def test_cli_schedule_replay_refuses_mapper_options(capsys, tmp_path):
    s = tmp_path / "s.json"
    assert run_cli(capsys, "map", PUMA, YOLO, "--mapper", "greedy", "-o", s)[0] == 0
    assert_input_error(*run_cli(capsys, "run", PUMA, YOLO, "--schedule", s, "--time-limit", "5")[::2],
                       "--time-limit sets a mapper option; --schedule replays a saved schedule")
    assert run_cli(capsys, "run", PUMA, YOLO, "--schedule", s, "--json")[0] == 0


def _sweep(tmp_path: Path, **fields) -> Path:
    import yaml

    doc = {"name": "t", "workloads": [str(YOLO)], "platforms": [str(PUMA)], "output": str(tmp_path / "t.csv"),
           **fields}
    p = tmp_path / "sweep.yaml"
    p.write_text(yaml.safe_dump(doc))
    return p


def test_sweep_mapper_options_are_checked_when_the_file_is_read(tmp_path):
    from hetsim.dse import load_sweep

    with pytest.raises(InputError) as err:
        load_sweep(_sweep(tmp_path, mappers=["cpsat"], mapper_options={"time_limt_s": 1}))
    assert ("mapper_options: no mapper of this sweep (cpsat) takes option 'time_limt_s'; did you mean "
            "'time_limit_s'?") in str(err.value)
    # each mapper gets the options it takes: greedy runs without the time limit cpsat takes
    spec = load_sweep(_sweep(tmp_path, mappers=["cpsat", "greedy"], mapper_options={"time_limit_s": 1}))
    from hetsim.dse.sweep import expand_points

    opts = {p["mapper"]: p["mapper_options"] for p in expand_points(spec)}
    assert opts == {"cpsat": {"time_limit_s": 1}, "greedy": {}}
    with pytest.raises(InputError, match="mapper_options: .*levers"):  # a value the mapper refuses
        load_sweep(_sweep(tmp_path, mappers=["cpsat"], mapper_options={"levers": "warp_drive"}))
    spec = load_sweep(_sweep(tmp_path, mappers=["cpsat", "ilp"], mapper_options={"time_limit_s": 1, "threads": 1}))
    assert spec.mapper_options == {"time_limit_s": 1, "threads": 1}


# ------------------------------------------------------------------------------------------ import cost


def test_import_hetsim_is_cheap():
    code = ("import sys, hetsim; heavy = [m for m in ('onnx', 'pandas', 'matplotlib', 'numpy', 'simpy', 'pydantic',"
            " 'ortools') if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"
