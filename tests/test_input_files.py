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
