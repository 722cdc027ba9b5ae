"""Hostile and broken YAML: the YAML loader's limits and duplicate keys, and the number
fields of the platform. Every case is refused with one line and exit code 2 through the CLI, fast."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest
import yaml
from conftest import PLATFORMS, ROOT, assert_input_error, run_cli

from hetsim.errors import PlatformError, WorkloadError
from hetsim.platform import (
    YAML_MAX_ALIASES,
    YAML_MAX_BYTES,
    YAML_MAX_DEPTH,
    Platform,
    load_platform,
    load_yaml_text,
    read_yaml,
)

MODEL = ROOT / "workloads" / "yolov5n.onnx"
PUMA = (PLATFORMS / "puma.yaml").read_text()


def _write(tmp_path, text: str, name: str = "bad.yaml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def _run_bad(capsys, path, *needles: str, limit_s: float | None = None) -> str:
    """``hetsim run PATH yolov5n.onnx``: exit 2, one line naming every needle. With ``limit_s``, loading the
    platform alone must be refused within ``limit_s`` seconds (the CLI call, whose first run in a process imports
    modules, within 5 s: no hang)."""
    t0 = time.perf_counter()
    code, _, err = run_cli(capsys, "run", path, MODEL)
    elapsed = time.perf_counter() - t0
    assert_input_error(code, err, *needles)
    assert len(err.strip().splitlines()) == 1, err
    if limit_s is not None:
        assert elapsed < 5, f"the CLI took {elapsed:.2f} s"
        t0 = time.perf_counter()
        with pytest.raises(PlatformError):
            load_platform(path)
        elapsed = time.perf_counter() - t0
        assert elapsed < limit_s, f"took {elapsed:.2f} s"
    return err


def _puma_with(old: str, new: str) -> str:
    assert PUMA.count(old) == 1, old
    return PUMA.replace(old, new)


# ------------------------------------------------------------------------------------------- YAML loader


def _laughs(levels: int = 10, width: int = 9) -> str:
    """The "billion laughs": each anchor lists ``width`` aliases of the previous one (9**10 values)."""
    lines = ["name: lol", f"l0: &a0 [{', '.join(['lol'] * width)}]"]
    lines += [f"l{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def test_billion_laughs_refused_fast(tmp_path, capsys):
    _run_bad(capsys, _write(tmp_path, _laughs()), "bad.yaml", "expands to more than", limit_s=0.5)


def test_many_aliases_refused(tmp_path, capsys):
    text = "name: x\na: &a 1\nb: [" + ", ".join(["*a"] * (YAML_MAX_ALIASES + 1)) + "]\n"
    _run_bad(capsys, _write(tmp_path, text), f"more than {YAML_MAX_ALIASES} aliases", "line 3", limit_s=0.5)


def test_aliases_within_the_limits_load():
    text = "a: &a {x: 1}\nb: [" + ", ".join(["*a"] * YAML_MAX_ALIASES) + "]\n"
    data = load_yaml_text(text)
    assert len(data["b"]) == YAML_MAX_ALIASES and data["b"][0] == {"x": 1}


def test_recursive_alias_refused(tmp_path, capsys):
    _run_bad(capsys, _write(tmp_path, "name: x\ndevices: &d {host: *d}\n"), "alias *d", "recursive", "line 2")


@pytest.mark.parametrize("text", ["[" * 100_000, "a:\n" + "".join(" " * i + "b:\n" for i in range(1, 200))],
                         ids=["flow", "block"])
def test_deep_nesting_refused_fast(tmp_path, capsys, text):
    err = _run_bad(capsys, _write(tmp_path, text), "line 1" if text.startswith("[") else "line", limit_s=0.5)
    # hetsim's own depth check, or (PyYAML >= 6.0.3 with libyaml) the C parser's own limit, reached first on a
    # flow sequence 100,000 deep: either is one line, exit 2
    assert f"nested deeper than {YAML_MAX_DEPTH} levels" in err or "maximum nesting depth" in err, err


def test_depth_limit_counts_what_an_alias_adds():
    nest = YAML_MAX_DEPTH - 3  # root mapping, b's list, then nest - 1 lists, then *a: [1] (2 levels)
    ok = "a: &a [1]\nb: " + "[" * nest + "*a" + "]" * nest
    assert load_yaml_text(ok)["a"] == [1]
    with pytest.raises(yaml.YAMLError, match="nested deeper"):
        load_yaml_text("a: &a [1]\nb: " + "[" * (nest + 1) + "*a" + "]" * (nest + 1))


def test_merge_keys_still_work():
    data = load_yaml_text("base: &b {x: 1, y: 2}\nd: {<<: *b, x: 3}\n")
    assert data["d"] == {"x": 3, "y": 2}


def test_duplicate_key_names_key_and_lines(tmp_path, capsys):
    text = _puma_with("    crossbars: 100 ", "    crossbars: 50\n    crossbars: 100 ")
    line = text.splitlines().index("    crossbars: 50") + 1
    _run_bad(capsys, _write(tmp_path, text), "duplicate key 'crossbars'", f"first at line {line}",
             f"line {line + 1}")


def test_duplicate_device_refused(tmp_path, capsys):
    text = PUMA + "\n" + "devices:\n  host: {kind: cpu, clock_ghz: 1, macs_per_cycle: {8: 1}, mem_bandwidth_gb_s: 1}\n"
    _run_bad(capsys, _write(tmp_path, text), "duplicate key 'devices'")
    text = ("devices:\n  cpu: {kind: cpu, clock_ghz: 1, macs_per_cycle: {8: 1}, mem_bandwidth_gb_s: 1}\n"
            "  cpu: {kind: cpu, clock_ghz: 2, macs_per_cycle: {8: 1}, mem_bandwidth_gb_s: 1}\n")
    _run_bad(capsys, _write(tmp_path, text), "duplicate key 'cpu'", "first at line 2", "line 3")


def test_duplicate_key_in_a_flow_mapping_on_one_line():
    with pytest.raises(yaml.YAMLError, match="duplicate key 'a'"):
        load_yaml_text("{a: 1, b: 2, a: 3}")


def test_file_over_the_size_limit_refused_before_reading(tmp_path, capsys):
    p = tmp_path / "huge.yaml"
    with p.open("w") as f:  # 10 MB of comments: valid YAML, too large
        f.write(PUMA)
        f.write(("# " + "x" * 98 + "\n") * 100_000)
    assert p.stat().st_size > YAML_MAX_BYTES
    _run_bad(capsys, p, "huge.yaml", "larger than 1 MiB", limit_s=0.5)


def test_file_just_under_the_size_limit_loads(tmp_path):
    pad = YAML_MAX_BYTES - len(PUMA.encode()) - 10
    p = _write(tmp_path, PUMA + "#" * pad + "\n", "padded.yaml")
    assert load_platform(p).devices["cim"].crossbars == 100


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_fifo_refused_without_reading(tmp_path, capsys):
    p = tmp_path / "pipe.yaml"
    os.mkfifo(p)
    _run_bad(capsys, p, "not a regular file", limit_s=0.5)


def test_integer_too_long_to_read_refused(tmp_path, capsys):
    _run_bad(capsys, _write(tmp_path, _puma_with("crossbars: 100 ", "crossbars: " + "9" * 5000 + " ")),
             "integer of 5000 characters", "line ")


def test_not_utf8_refused(tmp_path, capsys):
    p = tmp_path / "bin.yaml"
    p.write_bytes(b"name: \xff\xfe\x00\n")
    _run_bad(capsys, p, "not a text")


@pytest.mark.parametrize("error", [WorkloadError, PlatformError])
def test_every_read_yaml_caller_gets_the_limits(tmp_path, error):
    """Sweep files and SNN specs are read by the same function (with their own error type)."""
    with pytest.raises(error, match="expands to more than"):
        read_yaml(_write(tmp_path, _laughs()), error, "SNN spec")


def test_exponent_floats_are_numbers():
    """``1e9`` is a float (YAML 1.2, and ``hetsim --set``), not the string YAML 1.1 makes of it; quoted, a string."""
    assert load_yaml_text("a: 1e9\nb: 1.5E-3\nc: -2e+5\nd: '1e9'\ne: 12") == {
        "a": 1e9, "b": 1.5e-3, "c": -2e5, "d": "1e9", "e": 12}


# ------------------------------------------------------------------------------------------- number fields


@pytest.mark.parametrize(
    ("old", "new", "needles"),
    [
        ("crossbars: 100 ", "crossbars: 1e400 ", ["devices.cim.crossbars", "finite"]),
        ("crossbars: 100 ", "crossbars: .inf ", ["devices.cim.crossbars", "finite"]),
        ("crossbars: 100 ", "crossbars: .nan ", ["devices.cim.crossbars", "finite"]),
        ("crossbars: 100 ", "crossbars: " + "9" * 400 + " ", ["devices.cim.crossbars", "less than or equal",
                                                             "integer of 400 digits"]),
        ("crossbars: 100 ", "crossbars: true ", ["devices.cim.crossbars", "not a boolean"]),
        ("crossbars: 100 ", "crossbars: '100' ", ["devices.cim.crossbars", "expected an integer"]),
        ("crossbars: 100 ", "crossbars: 10.5 ", ["devices.cim.crossbars", "expected an integer"]),
        ("crossbars: 100 ", "crossbars: 2000000000 ", ["devices.cim.crossbars", "less than or equal"]),
        ("crossbars: 100 ", "crossbars: -1 ", ["devices.cim.crossbars", "greater than or equal"]),
        ("t_mvm_ns: 50 ", "t_mvm_ns: yes ", ["devices.cim.t_mvm_ns", "not a boolean"]),
        ("t_mvm_ns: 50 ", "t_mvm_ns: " + "9" * 400 + " ", ["devices.cim.t_mvm_ns", "too large"]),
        ("t_mvm_ns: 50 ", "t_mvm_ns: 0 ", ["devices.cim.t_mvm_ns", "greater than 0"]),
        ("clock_ghz: 1.5 ", "clock_ghz: .nan ", ["devices.host.clock_ghz", "finite"]),
        ("cores: 1 ", "cores: 1e9 ", ["devices.host.cores", "less than or equal"]),
        ("      8: 8 ", "      true: 8 ", ["devices.host.macs_per_cycle: key True: expected an integer, not a "
                                              "boolean"]),
        ("      8: 8 ", "      8.5: 8 ", ["devices.host.macs_per_cycle: key 8.5: expected an integer"]),
        ("      8: 8 ", "      8: .inf ", ["devices.host.macs_per_cycle.8", "finite"]),
        ("      8: 8 ", "      8: false ", ["devices.host.macs_per_cycle.8", "not a boolean"]),
        ("active_w: 1.2 ", "active_w: [1] ", ["devices.host.active_w", "expected a number"]),
        ("    bandwidth_gb_s: 10.24 ", "    bandwidth_gb_s: .inf ", ["links.bus.bandwidth_gb_s", "finite"]),
        ("    latency_ns: 0 ", "    latency_ns: true ", ["links.bus.latency_ns", "not a boolean"]),
    ],
)
def test_bad_numbers_refused_with_the_field_path(tmp_path, capsys, old, new, needles):
    _run_bad(capsys, _write(tmp_path, _puma_with(old, new)), *needles)


def test_memory_bandwidth_and_size_checked(tmp_path, capsys):
    text = (PLATFORMS / "diana.yaml").read_text()
    assert text.count("    size_kib: 256 ") == 1
    _run_bad(capsys, _write(tmp_path, text.replace("    size_kib: 256 ", "    size_kib: .inf ")),
             "memories.l1.size_kib", "finite")
    _run_bad(capsys, _write(tmp_path, text.replace("mem_bandwidth_gb_s: 1.04 ", "mem_bandwidth_gb_s: .inf ")),
             "devices.host.mem_bandwidth_gb_s", "finite")
    _run_bad(capsys, _write(tmp_path, text.replace("ox_unroll: [1, 2, 4, 8]", "ox_unroll: [1, 0]")),
             "devices.aimc.ox_unroll.1", "greater than or equal to 1")


def test_derived_cores_bounded(tmp_path, capsys):
    text = _puma_with("crossbars: 100 ", "crossbars: 1000000000 ").replace("crossbars_per_core: 10 ",
                                                                            "crossbars_per_core: 1 ")
    _run_bad(capsys, _write(tmp_path, text), "devices.cim", "raise crossbars_per_core")


def test_integral_floats_and_ints_still_accepted(tmp_path):
    text = _puma_with("crossbars: 100 ", "crossbars: 100.0 ").replace("t_mvm_ns: 50 ", "t_mvm_ns: 5e1 ")
    p = load_platform(_write(tmp_path, text, "ok.yaml"))
    cim = p.devices["cim"]
    assert cim.crossbars == 100 and isinstance(cim.crossbars, int)
    assert cim.t_mvm_ns == 50.0 and isinstance(cim.t_mvm_ns, float)
    assert isinstance(p.links["bus"].latency_ns, float)  # an int where a float belongs: stored as a float


def test_numpy_numbers_accepted():
    data = yaml.safe_load(PUMA)
    data["devices"]["cim"]["crossbars"] = np.int64(50)
    data["devices"]["cim"]["t_mvm_ns"] = np.float64(100.0)
    cim = Platform.model_validate(data).devices["cim"]
    assert cim.crossbars == 50 and cim.t_mvm_ns == 100.0


def test_override_with_a_boolean_refused():
    p = load_platform(PLATFORMS / "puma.yaml")
    with pytest.raises(PlatformError, match=r"devices\.cim\.crossbars: expected an integer, not a boolean"):
        p.with_overrides({"devices.cim.crossbars": True})
    assert p.with_overrides({"devices.cim.crossbars": 25}).devices["cim"].crossbars == 25


@pytest.mark.parametrize("path", sorted(PLATFORMS.glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_platforms_unchanged_by_the_strict_loader(path):
    """Every shipped file reads the same through the guarded loader as through PyYAML's safe loader."""
    assert load_yaml_text(path.read_text()) == yaml.safe_load(path.read_text())
    load_platform(path)


# ------------------------------------------------------------------------------------------------- names


def test_link_named_like_a_device_refused(tmp_path, capsys):
    text = PUMA.replace("\n  bus:\n", "\n  cim:\n")
    assert text != PUMA
    _run_bad(capsys, _write(tmp_path, text), "links.cim", "also a device")


def test_memory_named_like_a_device_refused(tmp_path, capsys):
    text = (PLATFORMS / "diana.yaml").read_text().replace("\n  l1:\n", "\n  aimc:\n")
    _run_bad(capsys, _write(tmp_path, text), "memories.aimc", "also in devices")


def test_python_loader_has_the_same_checks(monkeypatch):
    """Without libyaml (PyYAML built without it) the pure-Python loader applies the same limits."""
    import sys

    from hetsim import platform

    monkeypatch.setitem(sys.modules, "yaml._yaml", None)
    loader = platform._make_loader()
    assert "CParser" not in [c.__name__ for c in loader.__mro__]

    def load(text):
        ld = loader(text)
        try:
            return ld.get_single_data()
        finally:
            ld.dispose()

    assert load("a: 1e9\nb: [1, 2]") == {"a": 1e9, "b": [1, 2]}
    for text, match in [(_laughs(), "expands to more than"), ("[" * 1000, "nested deeper"),
                        ("a: 1\na: 2", "duplicate key 'a'")]:
        with pytest.raises(yaml.YAMLError, match=match):
            load(text)
