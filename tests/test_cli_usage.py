"""Usage errors of the command line are one line with exit code 2, with the closest flag when one is misspelt."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hetsim.cli import main

ROOT = Path(__file__).resolve().parent.parent


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


#: libraries that take 0.05-0.5 s each to import: only the commands that use them may import them
HEAVY_MODULES = ("onnx", "onnxruntime", "ml_dtypes", "pandas", "networkx", "numpy", "scipy", "matplotlib",
                 "ortools", "highspy", "pydantic", "simpy", "yaml", "rich")


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["run", "--help"], ["sweep", "--help"]])
def test_help_and_version_import_no_heavy_library(argv):
    """``hetsim --help`` stays instant: building the parser imports none of the heavy libraries (checked in a
    fresh interpreter, since this test process has imported them all)."""
    code = (f"import sys\nfrom hetsim.cli import main\ntry:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
            f"print('HEAVY:' + ','.join(m for m in {HEAVY_MODULES!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert "usage: hetsim" in out.stdout or "hetsim " in out.stdout
    assert out.stdout.strip().splitlines()[-1] == "HEAVY:"


def test_an_onnx_run_imports_no_solver_nor_plotting_library():
    """``hetsim run`` with a heuristic mapper and no ``--out`` draws nothing and solves nothing: matplotlib,
    OR-Tools, HiGHS and onnxruntime (a model with static shapes) stay unimported."""
    argv = ["run", "platforms/puma.yaml", "workloads/yolov5n.onnx", "--mapper", "all-host"]
    code = (f"import sys\nfrom hetsim.cli import main\nrc = main({argv!r})\n"
            "print('RC', rc, 'LOADED:' + ','.join(m for m in ('matplotlib', 'ortools', 'highspy', 'onnxruntime') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip().splitlines()[-1] == "RC 0 LOADED:"


def test_a_flag_of_another_subcommand_is_named_as_such(capsys):
    """``hetsim run ... --platform X`` said "did you mean '--platform'?" (the flag exists, on inspect): it now
    says which subcommands have it (reviewer)."""
    import pytest

    from hetsim.cli import main

    with pytest.raises(SystemExit) as stop:
        main(["run", "platforms/puma.yaml", "workloads/yolov5n.onnx", "--platform", "x"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "--platform is an option of hetsim inspect" in err and "did you mean" not in err
