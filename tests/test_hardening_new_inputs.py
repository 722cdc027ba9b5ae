"""Scenario, sweep, schedule, SNN and ``--set`` inputs give one ``hetsim: error:`` line and exit 2 (or run),
never an internal error, a hang or an allocation the machine cannot make. One test per class of hostile input."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
from conftest import assert_input_error, run_cli

from hetsim.errors import InputError, ScheduleError, WorkloadError

ROOT = Path(__file__).resolve().parents[1]
PUMA = ROOT / "platforms" / "puma.yaml"
EFR32 = ROOT / "platforms" / "efr32mg24.yaml"
R20 = ROOT / "workloads" / "resnet20_cifar10.onnx"
SNN = ROOT / "workloads" / "snn"

# ------------------------------------------------------------------------------------------------ --set values


@pytest.mark.parametrize("value, needle", [
    ("9" * 400, "an integer of 400 digits is too large"),
    # hetsim's own depth guard, or PyYAML's (6.0.4 and newer refuse deep nesting first): one line either way
    ("[" * 3000 + "]" * 3000, "nested deeper than 64 levels|exceeded maximum nesting depth"),
    ("[&a [1,1,1,1,1,1,1,1,1], &b [*a,*a,*a,*a,*a,*a,*a,*a,*a], &c [*b,*b,*b,*b,*b,*b,*b,*b,*b], "
     "&d [*c,*c,*c,*c,*c,*c,*c,*c,*c], &e [*d,*d,*d,*d,*d,*d,*d,*d,*d], &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]]",
     "expands to more than"),
    ("x" * 20_000, "a value of 20000 characters"),
    ("[1, " + "9" * 30 + "]", "an integer of 30 digits"),
])
def test_set_values_are_read_with_the_guarded_loader(value, needle):
    from hetsim.overrides import parse_overrides

    with pytest.raises(InputError, match=needle):
        parse_overrides([f"devices.cim.crossbars={value}"])


def test_set_overflow_on_the_command_line_is_one_line(capsys):
    code, _, err = run_cli(capsys, "inspect", R20, "--platform", PUMA, "--set", f"devices.cim.crossbars={'9' * 400}")
    assert_input_error(code, err, "too large")


# ------------------------------------------------------------------------------------------------ .npz headers


def _npz_with_huge_header(path: Path) -> None:
    src = dict(np.load(SNN / "braille7_12-64-7_T100.npz"))
    head = io.BytesIO()
    np.lib.format.write_array_header_1_0(head, {"descr": "<f4", "fortran_order": False, "shape": (10**6, 10**6)})
    with zipfile.ZipFile(path, "w") as zf:
        for k, v in src.items():
            if k == "W1":
                zf.writestr("W1.npy", head.getvalue() + b"\0" * 64)  # claims 4 TB, holds 64 bytes
            else:
                buf = io.BytesIO()
                np.save(buf, v)
                zf.writestr(f"{k}.npy", buf.getvalue())


def test_an_npz_header_claiming_4_tb_is_refused_before_allocating(tmp_path, capsys):
    _npz_with_huge_header(tmp_path / "bomb.npz")
    spec = (SNN / "braille64.yaml").read_text().replace("braille7_12-64-7_T100.npz", "bomb.npz")
    (tmp_path / "bomb.yaml").write_text(spec)
    code, _, err = run_cli(capsys, "run", EFR32, tmp_path / "bomb.yaml")
    assert_input_error(code, err, "entry 'W1' declares a 1000000x1000000 float32 array (3.6 TiB)")


def test_an_npz_whose_data_is_shorter_than_its_header_is_truncated(tmp_path):
    from hetsim.snn.limits import check_npz

    head = io.BytesIO()
    np.lib.format.write_array_header_1_0(head, {"descr": "<f8", "fortran_order": False, "shape": (100,)})
    with zipfile.ZipFile(tmp_path / "t.npz", "w") as zf:
        zf.writestr("x.npy", head.getvalue() + b"\0" * 8)
    with pytest.raises(WorkloadError, match="'x' is truncated: its header declares 800 bytes"):
        check_npz(tmp_path / "t.npz", "weights")
    check_npz(SNN / "braille7_12-64-7_T100.npz", "weights")  # a real one passes


# ------------------------------------------------------------------------------------------------ schedule JSON


@pytest.fixture(scope="module")
def schedule_dict(tmp_path_factory):
    from hetsim.cli import main

    out = tmp_path_factory.mktemp("sched") / "s.json"
    assert main(["map", str(PUMA), str(R20), "--mapper", "heft", "-o", str(out)]) == 0
    return json.loads(out.read_text())


def _edited(d: dict, tmp_path: Path, edit) -> Path:
    e = json.loads(json.dumps(d))
    edit(e)
    p = tmp_path / "edited.json"
    p.write_text(json.dumps(e))
    return p


def test_schedule_json_nested_thousands_deep(schedule_dict, tmp_path, capsys):
    p = tmp_path / "deep.json"
    p.write_text(json.dumps(schedule_dict)[:-1] + ', "x": ' + "[" * 5000 + "]" * 5000 + "}")
    code, _, err = run_cli(capsys, "run", PUMA, R20, "--schedule", p)
    assert_input_error(code, err, "nested too deep")
    p.write_text(json.dumps({**schedule_dict, "stats": {"x": json.loads("[" * 100 + "]" * 100)}}))
    code, _, err = run_cli(capsys, "validate", PUMA, R20, "--schedule", p)
    assert_input_error(code, err, "nested deeper than 64 levels")


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_predicted_times_are_refused_at_load(schedule_dict, tmp_path, value):
    from hetsim.schedule import Schedule

    op = next(iter(schedule_dict["start_s"]))
    p = _edited(schedule_dict, tmp_path, lambda e: e["start_s"].__setitem__(op, value))
    with pytest.raises(ScheduleError, match="not a JSON number"):
        Schedule.load(p)
    p.write_text(p.read_text().replace("NaN", "1e999").replace("-Infinity", "1e999").replace("Infinity", "1e999"))
    with pytest.raises(ScheduleError, match="too large for a double"):
        Schedule.load(p)
    with pytest.raises(ScheduleError, match="must be finite"):
        Schedule.from_dict({**schedule_dict, "makespan_s": "nan"})


def _placed(d: dict) -> str:
    return next(iter(d["placement"]))


@pytest.mark.parametrize("entry, needle", [
    ([[99, 1]], "names core 99, the device has 10"),
    ([[10**30, 1]], "names core 1000000000000000000000000000000"),
    ([[1.5, 1]], "two non-negative integers"),
    ([[-1, 1]], "two non-negative integers"),
    ([[True, 1]], "two non-negative integers"),
    ([[1, 1, 1]], "two non-negative integers"),
])
def test_a_placement_slot_out_of_range_or_malformed(schedule_dict, tmp_path, capsys, entry, needle):
    v = _placed(schedule_dict)
    p = _edited(schedule_dict, tmp_path, lambda e: e["placement"].__setitem__(v, entry))
    code, _, err = run_cli(capsys, "run", PUMA, R20, "--schedule", p)
    assert_input_error(code, err, needle)


def test_a_placement_that_overfills_a_core_is_refused_by_the_checker(schedule_dict, tmp_path, capsys):
    def pile_on_core_0(e):
        for v, parts in e["placement"].items():
            e["placement"][v] = [[0, sum(n for _, n in parts)]]

    p = _edited(schedule_dict, tmp_path, pile_on_core_0)
    code, _, err = run_cli(capsys, "run", PUMA, R20, "--schedule", p)
    assert_input_error(code, err, "core 0 holds 38, it has 10")
    # the unedited schedule still replays
    ok = _edited(schedule_dict, tmp_path, lambda e: None)
    code, _, err = run_cli(capsys, "run", PUMA, R20, "--schedule", ok)
    assert code == 0, err


# ------------------------------------------------------------------------------------------------ sweep outputs


def _sweep_file(tmp_path: Path, crossbars=(25, 50), name="small") -> Path:
    p = tmp_path / f"{name}.yaml"
    p.write_text(f"name: {name}\nworkloads: [{R20}]\nplatforms: [{PUMA}]\n"
                 f"parameters:\n  devices.cim.crossbars: {list(crossbars)}\nmappers: [heft]\n"
                 f"output: {tmp_path / (name + '.csv')}\n")
    return p


def test_a_sweep_output_that_is_a_folder_or_under_a_file(tmp_path, capsys):
    sweep = _sweep_file(tmp_path)
    (tmp_path / "dir.csv").mkdir()
    code, _, err = run_cli(capsys, "sweep", sweep, "-o", tmp_path / "dir.csv")
    assert_input_error(code, err, "is a folder")
    (tmp_path / "afile").write_text("")
    code, _, err = run_cli(capsys, "sweep", sweep, "-o", tmp_path / "afile" / "x.csv")
    assert_input_error(code, err, "is a file, not a folder")


def test_a_sweep_into_a_folder_it_cannot_write(tmp_path, capsys, monkeypatch):
    """A read-only folder (root writes anywhere, so the refusal of the file system is simulated)."""
    import errno
    import os

    real = os.open

    def refuse(path, *a, **k):
        if str(path).startswith(str(tmp_path / "ro")):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        return real(path, *a, **k)

    (tmp_path / "ro").mkdir()
    monkeypatch.setattr(os, "open", refuse)
    code, _, err = run_cli(capsys, "sweep", _sweep_file(tmp_path), "-o", tmp_path / "ro" / "x.csv")
    assert_input_error(code, err, "cannot write in the folder", "Read-only file system")


# ------------------------------------------------------------------------------------------------ plugins


@pytest.mark.parametrize("body, needle", [
    ("import sys\nsys.exit(5)\n", "it called sys.exit(5) while importing"),
    ("raise KeyboardInterrupt\n", "it raised KeyboardInterrupt while importing"),
    ("import no_such_module_of_hetsim_tests\n", "ModuleNotFoundError"),
])
def test_a_plugin_that_exits_or_interrupts_at_import(tmp_path, monkeypatch, capsys, body, needle):
    from hetsim import plugins

    (tmp_path / "bad_plugin_25.py").write_text(body)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("HETSIM_PLUGINS", "bad_plugin_25")
    monkeypatch.setattr(plugins, "_loaded", None)
    code, _, err = run_cli(capsys, "inspect", R20)
    assert_input_error(code, err, "plugin 'bad_plugin_25'", needle)
    monkeypatch.delenv("HETSIM_PLUGINS")
    monkeypatch.setattr(plugins, "_loaded", None)


# ------------------------------------------------------------------------------------------------ hangs


def test_a_sweep_of_a_million_points_is_refused_before_expansion(tmp_path, capsys):
    p = tmp_path / "big.yaml"
    p.write_text(f"name: big\nworkloads: [{R20}]\nplatforms: [{PUMA}]\nparameters:\n"
                 f"  devices.cim.crossbars: {list(range(1, 101))}\n  devices.cim.t_mvm_ns: {list(range(1, 101))}\n"
                 f"  devices.cim.crossbars_per_core: {list(range(1, 101))}\nmappers: [heft]\n"
                 f"output: {tmp_path / 'big.csv'}\n")
    code, _, err = run_cli(capsys, "sweep", p)
    assert_input_error(code, err, "has 1,000,000 points", "at most 100,000", "--max-points")
    assert not (tmp_path / "big.csv").exists()
    code, _, err = run_cli(capsys, "sweep", p, "--max-points", "999999")
    assert_input_error(code, err, "has 1,000,000 points", "at most 999,999")


def test_the_point_count_is_the_expansion_length(tmp_path):
    from hetsim.dse.bounds import count_points
    from hetsim.dse.sweep import expand_points, load_sweep

    spec = load_sweep(_sweep_file(tmp_path, crossbars=(25, 50, 100)))
    assert count_points(spec) == len(expand_points(spec)) == 3
    snn = load_sweep(ROOT / "sweeps" / "snn_crossover.yaml")
    assert count_points(snn) == len(expand_points(snn)) == 80  # the file's own comment: 80 points


@pytest.mark.parametrize("layers", [[24, 10**6, 27], [24, 10**9, 27]])
def test_a_synthetic_network_of_a_million_or_a_billion_neurons_is_refused(tmp_path, capsys, layers):
    p = tmp_path / "snn.yaml"
    p.write_text(f"name: snnbig\nsynthetic:\n  layers: [{layers}]\n  timesteps: [51]\n  samples: 40\n"
                 f"platforms: [{EFR32}]\nmappers: [spikeduet]\noutput: {tmp_path / 'o.csv'}\n")
    code, _, err = run_cli(capsys, "sweep", p)
    assert_input_error(code, err, "of memory (our estimate)", "at most 4.0 GiB")


def test_a_synthetic_grid_of_a_million_networks_is_refused_before_validation(tmp_path, capsys):
    dens = [round(0.001 * i, 3) for i in range(1, 1000)]
    p = tmp_path / "grid.yaml"
    p.write_text(f"name: g\nsynthetic:\n  layers: [[24, 64, 27]]\n  timesteps: [51]\n  density: {dens}\n"
                 f"  clustering: {[round(0.001 * i, 3) for i in range(1000)]}\n  samples: 4\n"
                 f"platforms: [{EFR32}]\nmappers: [spikeduet]\noutput: {tmp_path / 'o.csv'}\n")
    code, _, err = run_cli(capsys, "sweep", p)
    assert_input_error(code, err, "synthetic: the grid has 999,000 points")


# ------------------------------------------------------------------------------------------------ NIR


def test_a_nir_value_past_float32_is_one_error_without_a_runtime_warning():
    """'RuntimeWarning: overflow encountered in cast' preceded a NIR error."""
    import warnings

    nir = pytest.importorskip("nir")
    from hetsim.snn.nir import snn_from_nir

    f = lambda v: np.full(1, v, np.float64)  # noqa: E731
    cell = nir.LIF(tau=f(5e-4), r=f(2.5), v_leak=f(0.0), v_threshold=f(1.0), v_reset=f(0.0))
    nodes = {"in": nir.Input(input_type={"input": np.array([1])}), "fc": nir.Linear(weight=np.array([[1e300]])),
             "cell": cell, "out": nir.Output(output_type={"output": np.array([1])})}
    g = nir.NIRGraph(nodes=nodes, edges=[("in", "fc"), ("fc", "cell"), ("cell", "out")], type_check=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(WorkloadError, match="layer 'cell': a weights value is beyond float32's range"):
            snn_from_nir(g, {"input": np.ones((1, 5, 1), bool)})


def test_nir_weights_whose_float32_replay_would_overflow_are_one_error_naming_the_file_and_layer():
    """1e38 fits float32, so the NIR check above passes it; the replay of the input raster then overflowed (a
    RuntimeWarning, then inf). Refused before the replay: one error, no warning."""
    import warnings

    nir = pytest.importorskip("nir")
    from hetsim.snn.nir import snn_from_nir

    f = lambda v: np.full(1, v, np.float64)  # noqa: E731
    cell = nir.LIF(tau=f(5e-4), r=f(2.5), v_leak=f(0.0), v_threshold=f(1.0), v_reset=f(0.0))
    nodes = {"in": nir.Input(input_type={"input": np.array([2])}),
             "fc": nir.Linear(weight=np.array([[1e38, 1e38]])), "cell": cell,
             "out": nir.Output(output_type={"output": np.array([1])})}
    g = nir.NIRGraph(nodes=nodes, edges=[("in", "fc"), ("fc", "cell"), ("cell", "out")], type_check=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(WorkloadError, match=r"^net\.nir: layer 1 \(W1\): neuron 0's .* over T = 5 timesteps "
                                                r".*float32 \(largest 3\.403e\+38\)"):
            snn_from_nir(g, {"input": np.ones((1, 5, 2), bool)}, source="net.nir")


# ------------------------------------------------------------------------------------------------ leaks


def test_nothing_precedes_the_error_but_one_line_warnings(tmp_path, capsys):
    """onnxruntime's own (coloured) error log and Python's two-line warnings reached stderr before
    hetsim's line. A custom op that onnxruntime cannot load: one warning line, then the error line."""
    import onnx
    from onnx import TensorProto, helper

    nodes = [helper.make_node("Mystery", ["x"], ["m"], name="mystery", domain="acme.ops"),
             helper.make_node("Relu", ["m"], ["y"], name="relu")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("acme.ops", 1)])
    onnx.save(model, str(tmp_path / "custom.onnx"))
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-m", "hetsim", "inspect", str(tmp_path / "custom.onnx")],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2, p.stderr
    assert len(lines) == 2 and lines[0].startswith("hetsim: warning: ") and "custom domain 'acme.ops'" in lines[0]
    assert lines[1].startswith("hetsim: error: ") and "onnxruntime 1." in lines[1]
    assert "\x1b[" not in p.stderr and "[E:onnxruntime" not in p.stderr


def test_an_snn_spec_alias_bomb_in_a_sweep_is_refused_not_expanded(tmp_path, capsys):
    bomb = ("name: b\nlayers: [12, 64, 7]\ntimesteps: 100\nweights: w.npz\nx: &a [1,1,1,1,1,1,1,1,1]\n"
            + "".join(f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True)))
    (tmp_path / "bomb.yaml").write_text(bomb)
    (tmp_path / "s.yaml").write_text(f"name: s\nworkloads: [bomb.yaml]\nplatforms: [{EFR32}]\n"
                                     f"output: {tmp_path / 'o.csv'}\n")
    import time

    t0 = time.perf_counter()
    code, _, err = run_cli(capsys, "sweep", tmp_path / "s.yaml", "--workers", "1")
    assert time.perf_counter() - t0 < 120
    assert code in (1, 2) and "Traceback" not in err  # refused, or the point's row holds the spec's error


@pytest.mark.parametrize("policies, says", [
    (None, "'policies' must be a JSON object, not null"),
    ([1], "'policies' must be a JSON object, not a list"),
    ({"a": 5}, "the weight policy of 'a' is 5; each entry is"),
    ({"a": "streamed"}, "the weight policy of 'a' is \"streamed\"; each entry is"),
    ({"a": {"policy": None, "memory": "dram"}}, "the weight policy of 'a' is"),
    ({"a": {"policy": "streamed", "memory": 3}}, "the weight policy of 'a' is"),
])
def test_a_malformed_weight_policy_names_the_field(policies, says):
    """The trial of 2026-12-02: a schedule's malformed ``policies`` gave Python's own exception text
    (``TypeError("'int' object is not subscriptable")``), naming no field."""
    from hetsim.errors import ScheduleError
    from hetsim.schedule import Schedule

    d = {"mapper": "m", "assignment": {"a": "host"}, "order": {"host": ["a"]}, "policies": policies}
    with pytest.raises(ScheduleError) as info:
        Schedule.from_dict(d)
    assert says in str(info.value) and "Error(" not in str(info.value)


@pytest.mark.parametrize("key, value", [("platform", ["puma-arm"]), ("platform", 3), ("workload", {"n": 1})])
def test_a_schedule_names_its_workload_and_platform_as_strings(schedule_dict, tmp_path, capsys, key, value):
    """The names a replay checks (hetsim.check.require_made_for) are strings or null: a list had ended up inside
    the mismatch message ("made for platform ['puma-arm']")."""
    p = _edited(schedule_dict, tmp_path, lambda e: e.__setitem__(key, value))
    code, _, err = run_cli(capsys, "run", PUMA, R20, "--schedule", p)
    assert_input_error(code, err, f"malformed schedule: {key!r} must be a string or null")
