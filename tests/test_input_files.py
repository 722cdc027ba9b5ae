"""hetsim/input_files.py: the one place a user's file is opened (regular files only, a size cap, UTF-8 text)."""

from __future__ import annotations

import os
import threading

import pytest

from hetsim.errors import InputError, WorkloadError
from hetsim.input_files import check_input_file, read_input_bytes, read_input_text, refuse_special_file


def test_a_regular_file_is_read_whole_and_through_a_link(tmp_path):
    p = tmp_path / "a.csv"
    p.write_bytes(b"\xef\xbb\xbfop,latency_s\nconv,1\n")  # a byte-order mark is dropped
    (tmp_path / "link.csv").symlink_to(p)
    assert read_input_text(tmp_path / "link.csv", "profile") == "op,latency_s\nconv,1\n"
    assert read_input_bytes(p, "profile", 100) == p.read_bytes()


def test_the_size_cap_counts_bytes(tmp_path):
    p = tmp_path / "t.csv"
    p.write_bytes(b"x" * 11)
    assert read_input_bytes(p, "trace", 11) == b"x" * 11
    with pytest.raises(WorkloadError, match=r"^trace '.*t.csv' is larger than 10 bytes \(11 bytes\)"):
        read_input_bytes(p, "trace", 10, WorkloadError)
    p.write_bytes(b"x" * (2 << 20))
    with pytest.raises(InputError, match="is larger than 1 MiB"):
        check_input_file(p, "trace", max_bytes=1 << 20)


@pytest.mark.parametrize(("data", "why"), [(b"caf\xe9", "byte 3 is b'\\xe9'"), (b"a\x00b", "a NUL byte at offset 1")])
def test_text_must_be_utf8_without_nul(tmp_path, data, why):
    p = tmp_path / "t.csv"
    p.write_bytes(data)
    with pytest.raises(InputError) as info:
        read_input_text(p, "trace")
    assert why in str(info.value) and "\n" not in str(info.value)


def test_a_fifo_swapped_in_after_the_check_does_not_block(tmp_path, monkeypatch):
    """The second line of defence: the open is non-blocking and the open file is checked again."""
    import hetsim.input_files as inp

    fifo = tmp_path / "f.csv"
    os.mkfifo(fifo)
    monkeypatch.setattr(inp, "check_input_file", lambda path, *a, **k: path)  # as if it were a file at the check
    result: list = []

    def read():
        try:
            inp.read_input_bytes(fifo, "trace", 100)
        except InputError as err:
            result.append(str(err))

    t = threading.Thread(target=read, daemon=True)
    t.start()
    t.join(60)
    assert result and "is a FIFO (named pipe), not a regular file" in result[0]


def test_refuse_special_file_lets_folders_and_missing_paths_through(tmp_path):
    refuse_special_file(tmp_path, "model")  # a folder: the front end's loader says what it needs
    refuse_special_file(tmp_path / "missing.onnx", "model")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    with pytest.raises(InputError, match="is a symbolic link loop"):
        refuse_special_file(tmp_path / "loop", "model")
    with pytest.raises(InputError, match="is a character device"):
        refuse_special_file("/dev/null", "model")


PUMA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "platforms", "puma.yaml")


def _chain_scenario(tmp_path, arrival: dict, model=None) -> os.PathLike:
    import yaml
    from fuzz_helpers import chain_model

    m = tmp_path / "chain.onnx"
    m.write_bytes(chain_model().SerializeToString())
    sc = tmp_path / "sc.yaml"
    sc.write_text(yaml.safe_dump({"name": "s", "streams": {"a": {"model": str(model or m), "arrival": arrival,
                                                                 **({} if arrival["process"] == "trace"
                                                                    else {"count": 2})}}}))
    return sc


@pytest.mark.parametrize(("text", "why"), [
    ("arrival_s\n" + "1" * 200_000 + "\n", "line 2: not a CSV row: field larger than field limit"),
    ("arrival_s,x\n0,1\n0.1\n", "line 3 has 1 fields, the header 2"),  # a ragged (or cut-off) trace
])
def test_a_trace_the_csv_module_refuses_or_a_ragged_one_is_one_line(tmp_path, capsys, text, why):
    from conftest import assert_input_error, run_cli

    (tmp_path / "t.csv").write_text(text)
    sc = _chain_scenario(tmp_path, {"process": "trace", "file": "t.csv"})
    code, _, err = run_cli(capsys, "run", PUMA, sc)
    assert_input_error(code, err, why)


def test_a_latency_table_or_profile_the_csv_module_refuses_is_one_line(tmp_path, capsys):
    import yaml
    from conftest import assert_input_error, run_cli
    from fuzz_helpers import ROOT, chain_model

    m = tmp_path / "chain.onnx"
    m.write_bytes(chain_model().SerializeToString())
    long = tmp_path / "p.csv"
    long.write_text("op,op_type,latency_s\nconv,Conv," + "1" * 200_000 + "\n")
    plat = yaml.safe_load((ROOT / "platforms" / "puma-host.yaml").read_text())
    plat["devices"]["host"]["latency_table"] = str(long)
    (tmp_path / "plat.yaml").write_text(yaml.safe_dump(plat))
    code, _, err = run_cli(capsys, "run", tmp_path / "plat.yaml", m)
    assert_input_error(code, err, "not a CSV row: field larger than field limit")
    code, _, err = run_cli(capsys, "calibrate", f"{long}={m}", "-o", tmp_path / "c.yaml")
    assert_input_error(code, err, "not a CSV row: field larger than field limit")


def test_a_symlink_loop_as_a_scenario_streams_model_is_one_line(tmp_path, capsys):
    from conftest import assert_input_error, run_cli

    (tmp_path / "loop").symlink_to("loop")
    sc = _chain_scenario(tmp_path, {"process": "periodic", "period_s": 0.01}, model=tmp_path / "loop")
    code, _, err = run_cli(capsys, "run", PUMA, sc)
    assert_input_error(code, err, "is a symbolic link loop")


@pytest.mark.parametrize("field", ["scenario", "output"])
def test_a_symlink_loop_in_a_scenario_sweep_file_is_one_line(tmp_path, capsys, field):
    import yaml
    from conftest import assert_input_error, run_cli

    (tmp_path / "loop").symlink_to("loop")
    sc = _chain_scenario(tmp_path, {"process": "periodic", "period_s": 0.01})
    doc = {"name": "ss", "scenario": str(sc), "platforms": [PUMA], "parameters": {"seed": [1]}, "mappers": ["heft"],
           "output": str(tmp_path / "t.csv"), field: str(tmp_path / "loop")}
    (tmp_path / "ss.yaml").write_text(yaml.safe_dump(doc))
    code, _, err = run_cli(capsys, "sweep", tmp_path / "ss.yaml", "--workers", "1")
    assert_input_error(code, err, f"{field} '{tmp_path / 'loop'}' is a symbolic link loop")
