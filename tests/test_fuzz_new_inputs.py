"""The fuzzer over the inputs besides platform files and ONNX models: ``--set`` values, schedule JSON, sweep files,
scenario files and scenario sweep files, SNN specs with their ``.npz`` files, and NIR graphs, through the CLI in
process.

Same rule as tests/test_fuzz.py: exit 0, or exit 2 with exactly one ``hetsim: error:`` line; never a traceback,
never exit 1, never exit 0 on an input the mutation certainly made invalid (``must_fail``). Derandomised and small
in CI (``HETSIM_FUZZ_EXAMPLES=N`` for a long randomised run); docs/fuzzing.md.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import tempfile
import zipfile
from pathlib import Path

import numpy as np
import pytest
from fuzz_helpers import ROOT, chain_model, problems, run_cli
from hypothesis import assume, given
from hypothesis import strategies as st
from test_fuzz import fuzz_settings

PUMA = ROOT / "platforms" / "puma.yaml"
EFR32 = ROOT / "platforms" / "efr32mg24.yaml"
SNN = ROOT / "workloads" / "snn"


def _check(argv: list[str], must_fail: bool, desc: str) -> None:
    o = run_cli(argv)
    if argv[0] == "sweep" and o.code == 1 and "points failed, e.g." in o.stdout and "Traceback" not in o.stderr:
        return  # a sweep's points that fail are rows with their error (exit 1 by design), not a crash
    found = problems(o, must_fail)
    assert not found, f"{', '.join(found)}\n  mutation: {desc}\n  argv: hetsim {' '.join(argv)}\n" \
                      f"  exit {o.code}, stderr:\n{o.stderr[-2000:]}"


@pytest.fixture(scope="module")
def work():
    from hetsim.cli import main

    with tempfile.TemporaryDirectory(prefix="hetsim-fuzz25-") as d:
        d = Path(d)
        (d / "model.onnx").write_bytes(chain_model().SerializeToString())
        assert main(["map", str(PUMA), str(d / "model.onnx"), "--mapper", "heft", "-o", str(d / "s.json")]) == 0
        for f in ("braille64.yaml", "braille7_12-64-7_T100.npz"):
            shutil.copy(SNN / f, d / f)
        assert main(["export-nir", str(d / "braille64.yaml"), "-o", str(d / "net.nir")]) == 0
        yield d


# ---------------------------------------------------------------------------------------------- --set values

_HUGE = ["9" * 25, "-" + "9" * 400, "1e400", "-1e400", ".inf", ".nan", "1e-400", "0x" + "f" * 40]
_SHAPES = ["[" * 200 + "]" * 200, "{a: " * 100 + "1" + "}" * 100,
           "[&a [1,1,1,1,1,1,1,1], &b [*a,*a,*a,*a,*a,*a,*a,*a], &c [*b,*b,*b,*b,*b,*b,*b,*b], "
           "&d [*c,*c,*c,*c,*c,*c,*c,*c], &e [*d,*d,*d,*d,*d,*d,*d,*d], &f [*e,*e,*e,*e,*e,*e,*e,*e]]",
           "&x [*x]", "!!python/object/apply:os.system [echo]", "[Conv", "{", "'", "a: b: c", "- 1\n- 2", "\x00",
           "x" * 12_000, "true", "null", "[]", "{}", "[Conv, Gemm]", "25", "0", "-1", "1e9", "2.5"]
_PATHS = ["devices.cim.crossbars", "devices.cim.t_mvm_ns", "devices.host.cores", "name", "devices.cim.supported_ops",
          "links.0.gb_s", "devices", "baseline", "devices.cim.kind", "devices.nope"]


@fuzz_settings(ci_examples=80)
@given(path=st.sampled_from(_PATHS),
       value=st.one_of(st.sampled_from(_HUGE + _SHAPES), st.text(max_size=40),
                       st.integers(min_value=-(10**30), max_value=10**30).map(str)))
def test_fuzz_set_values(work, path, value):
    must_fail = value in _HUGE[:2] or value in _SHAPES[:4]
    _check(["inspect", str(work / "model.onnx"), "--platform", str(PUMA), "--set", f"{path}={value}"], must_fail,
           f"--set {path}={value[:80]!r}")


# ---------------------------------------------------------------------------------------------- schedule JSON

_JSON_VALUES = [None, True, -1, 0, 10**30, 1.5, -0.0, "x", [], {}, [[]], [[0]], [[0, 1, 2]], [[-1, 1]], [[99, 1]],
                [[1.5, 1]], [[True, 1]], {"a": 1}]
_BAD_TEXT = ["NaN", "Infinity", "-Infinity", "1e999", "[" * 3000 + "]" * 3000]


@st.composite
def schedule_cases(draw, base: dict):
    d = json.loads(json.dumps(base))
    kind = draw(st.sampled_from(["value", "delete", "placement", "text", "truncate"]))
    keys = sorted(d)
    if kind == "delete":
        k = draw(st.sampled_from(keys))
        del d[k]
        return json.dumps(d), k in ("parts", "order", "mapper"), f"delete {k}"
    if kind == "placement" and d.get("placement"):
        op = draw(st.sampled_from(sorted(d["placement"])))
        v = draw(st.sampled_from(_JSON_VALUES))
        d["placement"][op] = v
        return json.dumps(d), v in ([[-1, 1]], [[99, 1]], [[1.5, 1]], [[True, 1]], [[0, 1, 2]]), f"placement {v!r}"
    if kind in ("text", "truncate"):
        text = json.dumps(d)
        if kind == "truncate":
            cut = draw(st.integers(0, len(text) - 1))
            return text[:cut], True, f"truncated at {cut}"
        bad = draw(st.sampled_from(_BAD_TEXT))
        field = draw(st.sampled_from(["start_s", "finish_s", "makespan_s"]))
        if field == "makespan_s":
            d[field] = "@@"
        else:
            d[field][draw(st.sampled_from(sorted(d[field])))] = "@@"
        return json.dumps(d).replace('"@@"', bad), True, f"{field} = {bad[:20]}"
    k = draw(st.sampled_from(keys))
    v = draw(st.sampled_from(_JSON_VALUES))
    d[k] = v
    return json.dumps(d), False, f"{k} = {v!r}"


def test_fuzz_schedule_json(work):
    base = json.loads((work / "s.json").read_text())

    @fuzz_settings(ci_examples=150)
    @given(case=schedule_cases(base))
    def run(case):
        text, must_fail, desc = case
        (work / "m.json").write_text(text)
        # run, not validate: validate's exit 1 is its verdict on a readable but infeasible schedule
        _check(["run", str(PUMA), str(work / "model.onnx"), "--schedule", str(work / "m.json")], must_fail, desc)

    run()


# ---------------------------------------------------------------------------------------------- sweep files

_SWEEP_FIELDS = {
    "name": ["", 7, None, [], "x" * 300],
    "workloads": [[], ["missing.onnx"], "model.onnx", [7], None, ["s.json"]],
    "platforms": [[], ["missing.yaml"], [str(PUMA), str(PUMA)], "x"],
    "parameters": [{"devices.cim.crossbars": []}, {"devices.cim.crossbars": [0]}, {"devices.nope": [1]},
                   {"devices.cim.crossbars": list(range(1, 400)), "devices.cim.t_mvm_ns": list(range(1, 400))},
                   {"devices.cim.crossbars": "25"}, [], {"devices.cim.crossbars": [10**30]}],
    "mappers": [[], ["nope"], "heft", [None], ["spikeduet"]],
    "mapper_options": {"x": 1},
    "contention": ["nope", 7],
    "synthetic": [{"layers": [[24, 10**6, 27]], "timesteps": [51]}, {"layers": "x"}, 7],
    "output": ["", ".", "/proc/x.csv", 7],
    "extra": ["field"],
}


@fuzz_settings(ci_examples=40)
@given(field=st.sampled_from(sorted(_SWEEP_FIELDS)), data=st.data())
def test_fuzz_sweep_files(work, field, data):
    import yaml

    choices = _SWEEP_FIELDS[field]
    value = data.draw(st.sampled_from(choices if isinstance(choices, list) else [choices]))
    spec = {"name": "fz", "workloads": [str(work / "model.onnx")], "platforms": [str(PUMA)],
            "parameters": {"devices.cim.crossbars": [25]}, "mappers": ["heft"], "output": str(work / "fz.csv")}
    spec[field] = value
    (work / "fz.yaml").write_text(yaml.safe_dump(spec))
    (work / "fz.csv").unlink(missing_ok=True)
    _check(["sweep", str(work / "fz.yaml"), "--workers", "1"], False, f"{field} = {str(value)[:80]}")


# ------------------------------------------------------------------------- scenario files, scenario sweep files

_STREAM = {"model": "model.onnx", "arrival": {"process": "poisson", "rate_hz": 50}, "count": 4}


def _scenario(**over) -> dict:
    return {"mapper": "heft", "seed": 1, "streams": {"a": dict(_STREAM)}, **over}


#: scenario files that must be refused (one line, exit 2) by ``hetsim run`` and by a scenario sweep: the file, a
#: phrase of the message
_BAD_SCENARIOS = {
    "a missing model file": (_scenario(streams={"a": {**_STREAM, "model": "nope.onnx"}}), "nope.onnx"),
    "an SNN spec as a stream's model": (_scenario(streams={"a": {**_STREAM, "model": "braille64.yaml"}}),
                                        "tensor-operator model"),
    "a negative rate": (_scenario(streams={"a": {**_STREAM, "arrival": {"process": "poisson", "rate_hz": -5}}}),
                        "greater than 0"),
    "an unknown dispatch policy": (_scenario(dispatch="lifo"), "unknown dispatch policy 'lifo'"),
    "a stream naming no model": (_scenario(streams={"a": {k: v for k, v in _STREAM.items() if k != "model"}}),
                                 "streams.a.model"),
    "no streams": (_scenario(streams={}), "streams"),
    "an unknown mapper": (_scenario(mapper="nope"), "unknown mapper 'nope'"),
    "a non-mapping YAML": ("- 1\n- 2\n", "mapping"),  # run: neither an SNN spec nor a scenario (a mapping ...)
}


def _write_scenario(work: Path, data) -> Path:
    import yaml

    p = work / "scen.yaml"
    p.write_text(data if isinstance(data, str) else yaml.safe_dump(data))
    return p


def _scenario_sweep(work: Path, **over) -> Path:
    import yaml

    spec = {"name": "fzs", "scenario": "scen.yaml", "platforms": [str(PUMA)],
            "parameters": {"streams.a.arrival.rate_hz": [20, 40]}, "output": str(work / "fzs.csv"), **over}
    p = work / "fzs.yaml"
    p.write_text(yaml.safe_dump(spec))
    (work / "fzs.csv").unlink(missing_ok=True)
    return p


def _refused(argv: list[str], needle: str) -> None:
    o = run_cli(argv)
    assert o.code == 2 and not problems(o, True), (argv, o.code, o.stderr, o.stdout)
    lines = [ln for ln in o.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("hetsim: error:") and needle in lines[0], o.stderr


@pytest.mark.parametrize("case", sorted(_BAD_SCENARIOS))
def test_a_bad_scenario_file_is_one_line_to_run_and_to_sweep(work, case):
    """Every bad scenario file: one line, exit 2, from ``hetsim run`` and from a scenario sweep (a missing model, a
    model of another kind and an unknown mapper were each point's error row there, exit 1)."""
    data, needle = _BAD_SCENARIOS[case]
    _write_scenario(work, data)
    _refused(["run", str(PUMA), str(work / "scen.yaml")], needle)
    _refused(["sweep", str(_scenario_sweep(work, parameters={})), "--workers", "1"], needle)


#: scenario sweep files that must be refused (one line, exit 2), the scenario being valid: fields, a phrase
_BAD_SCENARIO_SWEEPS = {
    "a negative rate in the grid": ({"parameters": {"streams.a.arrival.rate_hz": [5, -5]}}, "greater than 0"),
    "an unknown dispatch policy in the grid": ({"parameters": {"dispatch": ["fifo", "lifo"]}},
                                               "unknown dispatch policy 'lifo'"),
    "a missing model in the grid": ({"parameters": {"streams.a.model": ["model.onnx", "nope.onnx"]}}, "nope.onnx"),
    "a stream the scenario has not": ({"parameters": {"streams.b.arrival.rate_hz": [1]}}, "'streams.b'"),
    "an empty list": ({"parameters": {"streams.a.arrival.rate_hz": []}}, "non-empty list"),
    "the mapper as a parameter": ({"parameters": {"mapper": ["heft", "greedy"]}}, "mappers list"),
    "an unknown mapper": ({"mappers": ["nope"]}, "unknown mapper 'nope'"),
    "a mapper without a throughput objective": ({"mappers": ["all-host"], "objectives": ["throughput"]},
                                                "'all-host' has no throughput objective"),
    "an SNN mapper": ({"mappers": ["spikeduet"]}, "'spikeduet' maps spiking networks"),
    "an unknown objective": ({"objectives": ["energy"]}, "'energy' is not latency or throughput"),
    "a missing scenario": ({"scenario": "missing.yaml"}, "does not exist"),
    "no platforms": ({"platforms": []}, "platforms"),
    "an unknown field": ({"colour": "red"}, "colour"),
    "an output that is a folder": ({"output": "."}, "is a folder"),
}


@pytest.mark.parametrize("case", sorted(_BAD_SCENARIO_SWEEPS))
def test_a_bad_scenario_sweep_file_is_one_line(work, case):
    over, needle = _BAD_SCENARIO_SWEEPS[case]
    _write_scenario(work, _scenario())
    sw = _scenario_sweep(work, **over)
    _refused(["sweep", str(sw), "--workers", "1"], needle)
    assert not (work / "fzs.csv").exists()


_SCENARIO_FIELDS = {
    "dispatch": ["edf", "priority", "static", "nope", 7, None],
    "seed": [-1, 2**64, "x", 0.5, None],
    "mapper": ["greedy", "cpsat", "spikeduet", "nope", 7],
    "objective": ["throughput", "energy", None],
    "contention": ["all", "links", "nope", 7],
    "timeline_requests": [0, -1, 10**9],
    "streams.a.model": ["nope.onnx", "model.onnx", "braille64.yaml", "s.json", 7, None, ""],
    "streams.a.arrival": [{"process": "periodic", "period_s": 0.01}, {"process": "periodic", "period_s": 0},
                          {"process": "closed", "population": 3}, {"process": "trace", "file": "nope.csv"},
                          {"process": "nope"}, {"process": "poisson", "rate_hz": ".inf"}, "poisson", None],
    "streams.a.count": [0, -1, 10**30, 1, "4", None],
    "streams.a.deadline_s": [0, -1, 1e-9, 1e400, "x"],
    "streams.a.warmup": [3, 4, -1],
    "streams.a.priority": [10**30, "x"],
}


@fuzz_settings(ci_examples=40)
@given(field=st.sampled_from(sorted(_SCENARIO_FIELDS)), data=st.data())
def test_fuzz_scenario_files_in_a_scenario_sweep(work, field, data):
    """Mutated scenario files through a scenario sweep (and, every fourth, ``hetsim run``): exit 0, or exit 2 with
    one line (exit 1 only as a point's recorded error)."""
    value = data.draw(st.sampled_from(_SCENARIO_FIELDS[field]))
    sc = _scenario()
    node = sc
    *path, last = field.split(".")
    for k in path:
        node = node[k]
    node[last] = value
    _write_scenario(work, sc)
    _check(["sweep", str(_scenario_sweep(work)), "--workers", "1"], False, f"{field} = {value!r}")
    if data.draw(st.integers(0, 3)) == 0:
        _check(["run", str(PUMA), str(work / "scen.yaml")], False, f"run: {field} = {value!r}")


# ---------------------------------------------------------------------------------------------- SNN specs, npz

_SPEC_VALUES = [None, 0, -1, 10**9, 10**30, 0.5, "x", [], [12], [12, 64, 7, 7], [12, 10**7, 7], {"a": 1}, True,
                ".nan", "missing.npz"]


def _npz_variant(kind: str, src: Path, dst: Path) -> None:
    arrays = dict(np.load(src))
    with zipfile.ZipFile(dst, "w") as zf:
        for k, v in arrays.items():
            buf = io.BytesIO()
            if k == "W1" and kind == "huge":
                np.lib.format.write_array_header_1_0(buf, {"descr": "<f4", "fortran_order": False,
                                                           "shape": (10**7, 10**7)})
            elif k == "W1" and kind == "object":
                np.save(buf, np.array([object()], dtype=object), allow_pickle=True)
            elif k == "W1" and kind == "shape":
                np.save(buf, v[:, :-1])
            else:
                np.save(buf, v)
            data = buf.getvalue()
            zf.writestr(f"{k}.npy", data[: len(data) // 2] if (k == "W1" and kind == "truncated") else data)


@fuzz_settings(ci_examples=60)
@given(field=st.sampled_from(["layers", "timesteps", "lif", "readout", "weights", "activity", "splits", "classes",
                              "name", "npz"]),
       value=st.sampled_from(_SPEC_VALUES), npz=st.sampled_from(["huge", "object", "truncated", "shape"]))
def test_fuzz_snn_specs(work, field, value, npz):
    import yaml

    spec = yaml.safe_load((work / "braille64.yaml").read_text())
    if field == "npz":
        _npz_variant(npz, work / "braille7_12-64-7_T100.npz", work / "mut.npz")
        spec["weights"] = spec["activity"] = "mut.npz"
        desc = f"npz {npz}"
    else:
        spec[field] = value
        desc = f"{field} = {value!r}"
    (work / "mut.yaml").write_text(yaml.safe_dump(spec))
    _check(["inspect", str(work / "mut.yaml")], field == "npz", desc)


# ---------------------------------------------------------------------------------------------- NIR graphs


@fuzz_settings(ci_examples=25)
@given(kind=st.sampled_from(["truncate", "flip", "empty", "text"]), at=st.floats(0.0, 1.0))
def test_fuzz_nir_bytes(work, kind, at):
    raw = (work / "net.nir").read_bytes()
    i = min(int(at * len(raw)), len(raw) - 1)
    data = {"truncate": raw[:i], "flip": raw[:i] + bytes([raw[i] ^ 0xFF]) + raw[i + 1:], "empty": b"",
            "text": b"not a nir file"}[kind]
    assume(data != raw)
    (work / "mut.nir").write_bytes(data)
    _check(["run", str(EFR32), str(work / "mut.nir"), "--spikes", str(work / "braille7_12-64-7_T100.npz")],
           kind in ("empty", "text"), f"{kind} at {i}")


# ---------------------------------------------------------------------------------------------- special files

#: the kinds of file no reader may open, and a phrase of the refusal (any one of them)
_SPECIAL = {"fifo": ("FIFO",), "device": ("character device",), "folder": ("folder", "directory"),
            "loop": ("symbolic link loop",)}
#: text where text is expected: Latin-1 and binary
_NOT_UTF8 = {"latin1": "op,latency_s\ncaf\xe9,1\n".encode("latin-1"), "binary": bytes(range(128, 256)) * 4}


def _special_file(d: Path, kind: str, name: str) -> Path:
    p = d / name
    if kind == "fifo":
        os.mkfifo(p)
    elif kind == "device":
        p.symlink_to("/dev/zero")  # through a symbolic link, as a downloaded file might be
    elif kind == "folder":
        p.mkdir()
    elif kind == "loop":
        p.symlink_to(p)
    else:
        p.write_bytes(_NOT_UTF8[kind])
    return p


def _input_paths(work: Path, d: Path, bad: Path) -> dict[str, list[str]]:
    """One command line per kind of input file, each reading ``bad`` as that file."""
    import yaml

    chain = str(work / "model.onnx")
    spikes = str(work / "braille7_12-64-7_T100.npz")
    scen = d / "scen.yaml"
    scen.write_text(yaml.safe_dump({"name": "s", "streams": {"a": {
        "model": chain, "arrival": {"process": "trace", "file": str(bad)}}}}))
    host = yaml.safe_load((ROOT / "platforms" / "puma-host.yaml").read_text())
    host["devices"]["host"]["latency_table"] = str(bad)
    (d / "table.yaml").write_text(yaml.safe_dump(host))
    return {
        "onnx model": ["run", str(PUMA), str(bad.with_suffix(".onnx"))],
        "pt2 program": ["inspect", str(bad.with_suffix(".pt2"))],
        "nir graph": ["run", str(EFR32), str(bad.with_suffix(".nir")), "--spikes", spikes],
        "snn spec": ["inspect", str(bad.with_suffix(".yaml"))],
        "platform": ["inspect", chain, "--platform", str(bad.with_suffix(".yaml"))],
        "schedule": ["run", str(PUMA), chain, "--schedule", str(bad.with_suffix(".json"))],
        "arrival trace": ["run", str(PUMA), str(scen)],
        "latency table": ["run", str(d / "table.yaml"), chain, "--mapper", "heft"],
        "profile": ["calibrate", str(bad.with_suffix(".csv")), "-o", str(d / "cal.yaml")],
        "results table": ["plot", str(bad.with_suffix(".csv")), "-o", str(d / "plots")],
        "sweep file": ["sweep", str(bad.with_suffix(".yaml"))],
        "spikes": ["run", str(EFR32), str(work / "net.nir"), "--spikes", str(bad.with_suffix(".npz"))],
        "dnas export": ["run", str(ROOT / "platforms" / "diana.yaml"), chain, "--mapper", "dnas-export",
                        "--export", str(bad.with_suffix(".json"))],
    }


#: the inputs that are text, refused when not UTF-8
_TEXT_INPUTS = ("platform", "schedule", "arrival trace", "latency table", "profile", "sweep file", "snn spec")


def _special_cases(work: Path, root: Path) -> dict[str, tuple[list[str], tuple[str, ...]]]:
    cases = {}
    for i, kind in enumerate((*_SPECIAL, *_NOT_UTF8)):
        d = root / f"k{i}"  # no phrase of a message in the path
        d.mkdir()
        for suffix in (".onnx", ".pt2", ".nir", ".yaml", ".json", ".csv", ".npz"):
            _special_file(d, kind, "bad" + suffix)
        _special_file(d, kind, "bad")
        for what, argv in _input_paths(work, d, d / "bad").items():
            if kind in _NOT_UTF8 and what not in _TEXT_INPUTS:
                continue
            phrases = _SPECIAL.get(kind, ("not UTF-8", "not a text"))
            if (what, kind) == ("latency table", "folder"):
                phrases = ("no profile",)  # a folder of profiles is a latency table; it lacks the workload's
            cases[f"{what}: {kind}"] = (argv, phrases)
    return cases


_DRIVER = """
import contextlib, io, json, sys
from hetsim.cli import main
out = {}
for name, argv in json.load(open(sys.argv[1])).items():
    o, e = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(o), contextlib.redirect_stderr(e):
        try:
            code = main(argv)
        except SystemExit as x:
            code = x.code if isinstance(x.code, int) else 2
    out[name] = [code, o.getvalue()[-3000:], e.getvalue()[-3000:]]
json.dump(out, open(sys.argv[2], "w"))
"""


@pytest.fixture(scope="module")
def special_outcomes(work, tmp_path_factory):
    """Every special-file case run through the CLI in one subprocess with a timeout: a FIFO that is opened instead
    of refused would block it forever, and the timeout fails the test instead of hanging the suite."""
    import subprocess
    import sys

    root = tmp_path_factory.mktemp("special")
    cases = _special_cases(work, root)
    (root / "cases.json").write_text(json.dumps({k: [str(a) for a in v[0]] for k, v in cases.items()}))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-c", _DRIVER, str(root / "cases.json"), str(root / "out.json")], env=env,
                   timeout=900, check=True, cwd=root)
    return cases, json.loads((root / "out.json").read_text())


def test_special_files_are_refused_up_front(special_outcomes):
    """A FIFO, a character device (``/dev/zero`` through a symbolic link), a folder and a symbolic link loop in
    place of every kind of input file, and Latin-1 or binary bytes where text is expected: exit 2, one line that
    says what the file is; never a hang, a traceback or an internal error."""
    cases, outcomes = special_outcomes
    failures = []
    for name, (_argv, phrases) in sorted(cases.items()):
        code, out, err = outcomes[name]
        lines = [ln for ln in err.splitlines() if ln.strip()]
        if code != 2 or len(lines) != 1 or not lines[0].startswith("hetsim: error:") \
                or not any(p in lines[0] for p in phrases) or "Traceback" in out + err:
            failures.append(f"{name}: exit {code}: {err.strip()[-300:]}")
    assert not failures, "\n".join(failures)
    assert len(cases) == 4 * 13 + 2 * len(_TEXT_INPUTS)


def test_output_paths_are_one_line(work, tmp_path):
    """``calibrate -o`` into a missing folder creates it; ``calibrate -o`` and ``codegen -o`` under ``/proc`` or
    through a symbolic link loop: one line, exit 2, before any work."""
    profile = next((ROOT / "profiles").glob("*/mobilenet_v2.csv"))
    o = run_cli(["calibrate", str(profile), "-o", str(tmp_path / "new" / "deeper" / "cal.yaml"), "--models",
                 str(ROOT / "workloads"), "--no-cross-validation"])
    assert o.code == 0 and (tmp_path / "new" / "deeper" / "cal.yaml").is_file(), o.stderr
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    snn = str(SNN / "braille64.yaml")
    for argv, phrase in (
            (["calibrate", str(profile), "-o", "/proc/hetsim-cal.yaml"], "no file can be created in '/proc'"),
            (["calibrate", str(profile), "-o", str(tmp_path / "loop")], "symbolic link loop"),
            (["codegen", str(EFR32), snn, "-o", "/proc/hetsim-fw"], "no file can be created in '/proc'"),
            (["codegen", str(EFR32), snn, "-o", str(tmp_path / "loop")], "symbolic link loop")):
        o = run_cli(argv)
        assert o.code == 2 and not problems(o, True) and phrase in o.stderr, (argv, o.stderr)


# ------------------------------------------------- the fuzzer over .pt2 archives, special files, traces and sizes

class _Stuck(Exception):
    """A case ran past its alarm: a hang (a FIFO opened, a file read without end)."""


@contextlib.contextmanager
def _alarm(seconds: int):
    """Fail a case that hangs instead of hanging the suite (SIGALRM interrupts a blocking open or read)."""
    import signal

    def stuck(*_):
        raise _Stuck(f"no answer in {seconds} s")

    old = signal.signal(signal.SIGALRM, stuck)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.fixture(scope="module")
def pt2(work):
    """A valid saved torch.export program, its members, and the marker a payload would create."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("onnxscript")
    nn = torch.nn
    m = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 8 * 8, 10)).eval()
    path = work / "good.pt2"
    torch.export.save(torch.export.export(m, (torch.zeros(1, 3, 8, 8),)), path)
    with zipfile.ZipFile(path) as z:
        members = {i.filename: z.read(i.filename) for i in z.infolist()}
    return _Archive(path.read_bytes(), members, work / "PT2-MARKER")


class _Archive(tuple):
    """(bytes, members, marker), shown short in a failing example."""

    def __new__(cls, *parts):
        return super().__new__(cls, parts)

    def __repr__(self) -> str:
        return f"<.pt2 archive of {len(self[0]):,} bytes>"


class _Payload:
    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.system, (f"touch '{self.marker}'",))


def _pt2_variant(members: dict[str, bytes], kind: str, name: str, at: float, marker: Path) -> bytes:
    import pickle

    members = dict(members)
    if kind == "drop":
        del members[name]
    elif kind == "flip":
        data = bytearray(members[name] or b"\0")
        data[int(at * (len(data) - 1))] ^= 0xFF
        members[name] = bytes(data)
    elif kind == "payload":  # a pickle that runs code, in place of any member
        members[name] = pickle.dumps(_Payload(marker), protocol=2)
    elif kind == "json":
        members[name] = json.dumps({"x": [1, {"y": None}], "z": "os.system"}).encode()
    elif kind == "empty":
        members[name] = b""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for n, b in members.items():
            z.writestr(n, b)
    return buf.getvalue()


@fuzz_settings(ci_examples=40)
@given(kind=st.sampled_from(["drop", "flip", "payload", "json", "empty", "truncate"]), member=st.integers(0, 10**6),
       at=st.floats(0.0, 1.0), command=st.sampled_from(["inspect", "run", "scenario"]))
def test_fuzz_pt2_archives(work, pt2, kind, member, at, command):
    """A saved torch.export program with one member dropped, flipped, emptied, replaced by JSON or by a pickle that
    runs code, or the archive truncated: exit 0 or one line, and the payload never runs (no marker file), through
    ``inspect``, ``run`` and a scenario stream."""
    import yaml

    whole, members, marker = pt2
    names = sorted(members)
    name = names[member % len(names)]
    data = whole[:int(at * (len(whole) - 1))] if kind == "truncate" else _pt2_variant(members, kind, name, at, marker)
    p = work / "fuzzed.pt2"
    p.write_bytes(data)
    argv = {"inspect": ["inspect", str(p)], "run": ["run", str(PUMA), str(p), "--mapper", "heft"]}.get(command)
    if argv is None:
        sc = work / "pt2-scen.yaml"
        sc.write_text(yaml.safe_dump({"name": "s", "streams": {"a": {"model": str(p), "arrival": {
            "process": "periodic", "period_s": 0.01}, "count": 2}}}))
        argv = ["run", str(PUMA), str(sc)]
    with _alarm(120):
        _check(argv, kind == "truncate", f"{kind} {name} at {at:.3f}")
    assert not marker.exists(), f"the payload ran: {kind} {name}"


#: how a special file is reached: directly or through a chain of symbolic links
_CHAIN = st.integers(0, 3)


@fuzz_settings(ci_examples=60)
@given(kind=st.sampled_from([*_SPECIAL, *_NOT_UTF8]), role=st.integers(0, 10**6), links=_CHAIN)
def test_fuzz_special_files(work, tmp_path_factory, kind, role, links):
    """A FIFO, a device, a folder, a symbolic link loop, Latin-1 or binary bytes, reached through 0-3 symbolic
    links, in place of any kind of input file: exit 2 and one line (a folder of profiles is a latency table: it
    may also be refused for lacking the workload's), never a hang."""
    d = tmp_path_factory.mktemp("sp")
    for suffix in ("", ".onnx", ".pt2", ".nir", ".yaml", ".json", ".csv", ".npz"):
        if not links:
            _special_file(d, kind, f"bad{suffix}")
            continue
        target = _special_file(d, kind, f"target{suffix}")
        for i in range(links - 1):
            (d / f"l{i}{suffix}").symlink_to(target)
            target = d / f"l{i}{suffix}"
        (d / f"bad{suffix}").symlink_to(target)
    paths = _input_paths(work, d, d / "bad")
    if kind in _NOT_UTF8:
        paths = {k: v for k, v in paths.items() if k in _TEXT_INPUTS}
    what = sorted(paths)[role % len(paths)]
    with _alarm(120):
        _check(paths[what], True, f"{what}: {kind} through {links} links")


def _trace_text(rows: list, header: str | None, ragged: bool, crlf: bool) -> str:
    lines = [header] if header is not None else []
    for i, v in enumerate(rows):
        cells = [str(v)] if header != "arrival_s,x" else [str(v), "1"]
        if ragged and i == len(rows) - 1:
            cells.append("9")
        lines.append(",".join(cells))
    return ("\r\n" if crlf else "\n").join(lines) + "\n"


_TIMES = st.one_of(st.floats(0, 10, allow_nan=False), st.sampled_from([-1, -0.0, "nan", "inf", 1e9, 1e300, "x", ""]))


@fuzz_settings(ci_examples=60)
@given(rows=st.lists(_TIMES, max_size=30), header=st.sampled_from([None, "arrival_s", "arrival_s,x", "t"]),
       ragged=st.booleans(), crlf=st.booleans(), long_field=st.booleans())
def test_fuzz_arrival_traces(work, rows, header, ragged, crlf, long_field):
    """An arrival trace of random rows (times in and out of [0, 1e9) s, NaN, text, empty cells), with or without
    a header, ragged, CRLF, a field past the CSV module's limit: exit 0 exactly when every row is a time the
    scenario accepts, else one line."""
    import yaml

    if long_field:
        rows = [*rows, "1" * 200_000]
    text = _trace_text(rows, header, ragged and header is not None, crlf)
    (work / "fz-trace.csv").write_text(text, newline="")

    def number(v) -> float | None:
        try:
            return float(v)
        except ValueError:
            return None

    def ok(v) -> bool:
        t = number(v)
        return t is not None and 0 <= t < 1e9

    # without a header, a first row that is no number is a header, one without the column arrival_s
    headless = header is None and (not rows or number(rows[0]) is None)
    must_fail = headless or header == "t" or (ragged and header is not None) or not rows \
        or not all(ok(v) for v in rows)
    sc = work / "fz-trace.yaml"
    sc.write_text(yaml.safe_dump({"name": "t", "streams": {"a": {"model": "model.onnx", "arrival": {
        "process": "trace", "file": "fz-trace.csv"}}}}))
    with _alarm(120):
        o = run_cli(["run", str(PUMA), str(sc)])
    found = problems(o, must_fail)
    if not must_fail and o.code != 0:
        found.append("refused a valid trace")
    assert not found, (found, text[:300], o.stderr[-500:])


@fuzz_settings(ci_examples=40)
@given(process=st.sampled_from(["periodic", "poisson", "closed"]), log_n=st.floats(-1, 12),
       by=st.sampled_from(["count", "duration_s"]), log_rate=st.floats(-3, 9), warmup=st.integers(0, 3))
def test_fuzz_scenario_sizes(work, process, log_n, by, log_rate, warmup):
    """A stream's size (count or duration_s) and rate drawn over many orders of magnitude, run under a work bound
    of 3,000 simulated ops: refused in one line, or run within the bound (1.5 x for Poisson's draw about its
    expected count), never for minutes."""
    from hetsim.errors import InputError
    from hetsim.scenario.run import run_scenario
    from hetsim.scenario.spec import max_ops

    arrival = {"periodic": {"process": "periodic", "period_s": 10 ** -log_rate},
               "poisson": {"process": "poisson", "rate_hz": 10 ** log_rate},
               "closed": {"process": "closed", "think_s": 10 ** -log_rate}}[process]
    size = {"count": max(1, int(10 ** log_n))} if by == "count" else {"duration_s": 10 ** log_n}
    stream = {"model": str(work / "model.onnx"), "arrival": arrival, "warmup": warmup, **size}
    ops = 4 + 1  # the chain model's ops + 1 per request (hetsim.scenario.spec.check_ops)
    with _alarm(120), max_ops(3000):
        try:
            r = run_scenario(str(PUMA), _write_yaml(work / "fz-size.yaml", {"name": "z", "streams": {"a": stream}}))
        except InputError as err:
            assert "\n" not in str(err)
            return
    assert len(r.requests) * ops <= 3000 * 1.5, (arrival, size, len(r.requests))


def _write_yaml(p: Path, data) -> Path:
    import yaml

    p.write_text(yaml.safe_dump(data))
    return p
