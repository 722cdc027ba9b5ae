"""Usage errors of the command line are one line with exit code 2, with the closest flag when one is misspelt."""

from __future__ import annotations

import pytest

from hetsim.cli import main


def _usage_error(capsys, *argv) -> list[str]:
    with pytest.raises(SystemExit) as exc:  # argparse exits
        main(list(argv))
    assert exc.value.code == 2
    out, err = capsys.readouterr()
    assert out == ""
    return err.strip().splitlines()


def test_missing_arguments_are_one_line(capsys):
    assert _usage_error(capsys, "run") == [
        "hetsim run: error: the following arguments are required: platform, model (see 'hetsim run --help')"]


def test_a_misspelt_flag_gets_the_closest_one(capsys):
    lines = _usage_error(capsys, "run", "p.yaml", "m.onnx", "--time-limt", "3")
    assert len(lines) == 1
    assert "unrecognized arguments: --time-limt 3; did you mean '--time-limit'?" in lines[0]
