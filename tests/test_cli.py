"""End-to-end tests of the command line: the happy path on a real model, and every bad-input case
(exit code 2, one line on stderr, no traceback)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import onnx
import pytest
from conftest import assert_input_error, run_cli
from onnx import TensorProto, helper

from hetsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
PUMA = ROOT / "platforms" / "puma.yaml"
YOLO = ROOT / "workloads" / "yolov5n.onnx"
R18 = ROOT / "workloads" / "resnet18_int8_qdq.onnx"


def tiny_model(path: Path, op_type: str = "Relu") -> Path:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    g = helper.make_graph([helper.make_node(op_type, ["x"], ["y"], name="n0")], "g", [x], [y])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


def test_run_yolov5n_reports_true_node_count(capsys):
    code, out, err = run_cli(capsys, "run", PUMA, YOLO)
    assert code == 0, err
    assert "operators    263" in out  # yolov5n.onnx has 263 ONNX nodes (models_stats.json)
    assert "speedup" in out and "crossbars" in out


def test_run_json_summary_is_consistent(capsys):
    code, out, _ = run_cli(capsys, "run", PUMA, R18, "--json")
    assert code == 0
    s = json.loads(out)
    assert s["operators"] == 140
    assert s["speedup"] == pytest.approx(s["baseline_makespan_s"] / s["makespan_s"])
    assert s["energy_j"] == pytest.approx(sum(d["energy_j"] for d in s["devices"]))
    used = s["crossbars"]["cim"]["used"]
    assert 0 < used <= s["crossbars"]["cim"]["available"] == 100


def test_run_out_dir_writes_every_file_and_refuses_to_overwrite(capsys, tmp_path):
    out = tmp_path / "res"
    code, _, err = run_cli(capsys, "run", PUMA, R18, "--out", out)
    assert code == 0, err
    for name in ("summary.json", "ops.csv", "schedule.json", "trace.csv", "trace.json", "timeline.png",
                 "breakdown.png"):
        assert (out / name).stat().st_size > 0, name
    trace = json.loads((out / "trace.json").read_text())
    assert any(e["ph"] == "X" for e in trace["traceEvents"])
    assert (out / "timeline.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    before = (out / "summary.json").read_bytes()
    code, _, err = run_cli(capsys, "run", PUMA, R18, "--out", out, "--mapper", "all-host")
    assert_input_error(code, err, "--force")
    assert (out / "summary.json").read_bytes() == before  # untouched
    code, _, err = run_cli(capsys, "run", PUMA, R18, "--out", out, "--mapper", "all-host", "--force")
    assert code == 0, err
    assert json.loads((out / "summary.json").read_text())["mapper"] == "all-host"


def test_schedule_round_trip_through_map_and_replay(capsys, tmp_path):
    sched = tmp_path / "s.json"
    code, _, err = run_cli(capsys, "map", PUMA, R18, "-o", sched)
    assert code == 0, err
    code, out, _ = run_cli(capsys, "run", PUMA, R18, "--schedule", sched, "--json")
    assert code == 0
    s = json.loads(out)
    assert s["makespan_s"] == s["predicted_makespan_s"]
    code, _, err = run_cli(capsys, "map", PUMA, R18, "-o", sched)
    assert_input_error(code, err, "exists")


def test_missing_paths(capsys, tmp_path):
    assert_input_error(*run_cli(capsys, "run", PUMA, tmp_path / "nope.onnx")[::2], "nope.onnx")
    assert_input_error(*run_cli(capsys, "run", tmp_path / "nope.yaml", YOLO)[::2], "nope.yaml", "does not exist")


def test_not_an_onnx_file(capsys, tmp_path):
    bad = tmp_path / "model.onnx"
    bad.write_text("this is not a protobuf\n")
    assert_input_error(*run_cli(capsys, "run", PUMA, bad)[::2], "model.onnx")


def test_yaml_unknown_field_names_the_path(capsys, tmp_path):
    y = tmp_path / "p.yaml"
    y.write_text(PUMA.read_text().replace("t_mvm_ns: 50", "t_mvm_ns: 50\n    t_mvm_us: 1"))
    assert_input_error(*run_cli(capsys, "run", y, YOLO)[::2], "devices.cim.t_mvm_us", "unknown field")


def test_yaml_wrong_type_names_path_and_expected_type(capsys, tmp_path):
    y = tmp_path / "p.yaml"
    y.write_text(PUMA.read_text().replace("clock_ghz: 1.5", "clock_ghz: fast"))
    assert_input_error(*run_cli(capsys, "run", y, YOLO)[::2], "devices.host.clock_ghz", "number", "'fast'")


def test_yaml_syntax_error(capsys, tmp_path):
    y = tmp_path / "p.yaml"
    y.write_text("devices: [unclosed\n")
    assert_input_error(*run_cli(capsys, "run", y, YOLO)[::2], "not valid YAML", "line")


def test_cyclic_graph(capsys, tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    nodes = [
        helper.make_node("Add", ["x", "b"], ["a"], name="first"),
        helper.make_node("Relu", ["a"], ["b"], name="second"),
        helper.make_node("Relu", ["a"], ["y"], name="out"),
    ]
    g = helper.make_graph(nodes, "cyc", [x], [y])
    path = tmp_path / "cyc.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    assert_input_error(*run_cli(capsys, "run", PUMA, path)[::2], "cycle")


def test_op_no_device_supports(capsys, tmp_path):
    y = tmp_path / "p.yaml"
    line = "    op_overhead_us: 2.0"
    restricted = PUMA.read_text().replace(line, line + "\n    supported_ops: [Relu]")
    y.write_text(restricted)
    model = tiny_model(tmp_path / "m.onnx", "Sigmoid")
    assert_input_error(*run_cli(capsys, "run", y, model)[::2], "no device", "Sigmoid")


def test_unknown_contention_kind_and_mapper(capsys):
    assert_input_error(*run_cli(capsys, "run", PUMA, R18, "--contention", "links,dram")[::2], "dram", "cim-bus")
    assert_input_error(*run_cli(capsys, "run", PUMA, R18, "--mapper", "nope")[::2], "unknown mapper 'nope'",
                       "cpsat")


def test_contention_never_speeds_up_a_single_host_all_host_run(capsys):
    code, out, _ = run_cli(capsys, "run", PUMA, R18, "--mapper", "all-host", "--contention", "all", "--json")
    assert code == 0
    s = json.loads(out)
    assert s["makespan_s"] == s["predicted_makespan_s"]  # nothing crosses a link, nothing on the CIM


def test_python_dash_m_exit_code_and_no_traceback(tmp_path):
    p = subprocess.run([sys.executable, "-m", "hetsim", "run", str(PUMA), str(tmp_path / "x.onnx")],
                       capture_output=True, text=True)
    assert p.returncode == 2
    assert "Traceback" not in p.stderr and p.stderr.count("\n") == 1
    p = subprocess.run([sys.executable, "-m", "hetsim", "--help"], capture_output=True, text=True)
    assert p.returncode == 0 and "run" in p.stdout


def test_inspect(capsys):
    code, out, _ = run_cli(capsys, "inspect", R18, "--platform", PUMA)
    assert code == 0
    assert "140 operators" in out
    assert "Conv" in out


@pytest.mark.parametrize("opt", [["--time-limit", "0"], ["--time-limit", "nan"], ["--threads", "0"],
                                 ["--gap", "-1"]])
def test_bad_solver_options_are_usage_errors(opt):
    with pytest.raises(SystemExit) as exc:
        main(["run", str(PUMA), str(R18), *opt])
    assert exc.value.code == 2


def test_contention_none_and_all_stand_alone(capsys):
    assert_input_error(*run_cli(capsys, "run", PUMA, R18, "--contention", "none,links")[::2], "stand alone")


def test_a_folder_is_not_a_platform_file(capsys):
    assert_input_error(*run_cli(capsys, "run", ROOT / "platforms", R18)[::2], "is a folder")


def test_a_schedule_of_another_model_is_refused_by_name(capsys, tmp_path):
    sched = tmp_path / "s.json"
    assert run_cli(capsys, "map", PUMA, R18, "-o", sched, "--mapper", "heft")[0] == 0
    assert_input_error(*run_cli(capsys, "run", PUMA, YOLO, "--schedule", sched)[::2], "resnet18_int8_qdq")
    # and by platform: puma-x86 is another platform (it had replayed without a word)
    x86 = PUMA.parent / "puma-x86.yaml"
    assert_input_error(*run_cli(capsys, "run", x86, R18, "--schedule", sched)[::2],
                       "made for platform 'puma-arm', not 'puma-x86'")
    # the what-if on purpose: a schedule that names no platform is checked device by device, and fits here
    d = json.loads(sched.read_text())
    sched.write_text(json.dumps({**d, "platform": None}))
    assert run_cli(capsys, "run", x86, R18, "--schedule", sched)[0] == 0


def test_a_mapper_beside_a_schedule_is_refused(capsys, tmp_path):
    """``--schedule`` replays the saved schedule: a ``--mapper`` beside it had been ignored without a word (the
    report named the saved schedule's mapper); without ``--mapper`` the replay runs."""
    sched = tmp_path / "s.json"
    assert run_cli(capsys, "map", PUMA, R18, "-o", sched, "--mapper", "heft")[0] == 0
    for cmd in ("run", "validate"):
        assert_input_error(*run_cli(capsys, cmd, PUMA, R18, "--schedule", sched, "--mapper", "cpsat")[::2],
                           "--mapper cpsat names a mapper to run; --schedule replays a saved schedule")
    code, out, _ = run_cli(capsys, "run", PUMA, R18, "--schedule", sched)
    assert code == 0
    # the report says the schedule and its solver line are the file's, not of a mapping made now
    assert "mapper heft (a saved schedule, replayed)" in out.splitlines()[0]
    assert "mapper heft (a saved schedule, replayed)" not in run_cli(capsys, "run", PUMA, R18, "--mapper", "heft")[1]


def test_run_shortens_the_offloaded_op_list_unless_verbose(capsys):
    code, out, err = run_cli(capsys, "run", PUMA, YOLO, "--mapper", "heft")
    assert code == 0, err
    names = json.loads(run_cli(capsys, "run", PUMA, YOLO, "--mapper", "heft", "--json")[1])[
        "ops_offloaded"]["by_device"]["cim"]["ops"]
    assert len(names) > 10
    assert f"... and {len(names) - 4} more (--verbose lists all)" in out
    assert names[3] in out and names[4] not in out.split("ops offloaded")[1]
    code, full, _ = run_cli(capsys, "run", PUMA, YOLO, "--mapper", "heft", "--verbose")
    assert code == 0 and "more (--verbose" not in full
    assert all(n in full for n in names)
    assert len(full.splitlines()) > len(out.splitlines()) + 5


def test_run_prints_small_times_and_energies_with_fitting_prefixes(capsys, tmp_path):
    code, out, err = run_cli(capsys, "run", PUMA, tiny_model(tmp_path / "t.onnx"))
    assert code == 0, err
    assert "0.000 ms" not in out and " 0.000 mJ" not in out
    assert "makespan     2.006 us" in out  # one Relu on 4 elements
    table = out.split("-----\n")[1].split("\n\n")[0].splitlines()
    for col in (-4, -1):  # busy and energy: one unit per column
        assert len({line.split()[col] for line in table if not line.endswith("not modelled")}) == 1, table
    assert table[-1].endswith("not modelled")  # the bus has no energy figure: never a measured 0
