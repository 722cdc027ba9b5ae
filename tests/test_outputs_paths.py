"""Every writer of the command line (``run --out``, ``map -o``, ``profile -o``, ``plot -o``, ``reorder -o``, an SNN
``run --out``) with a missing parent folder (created), a location that cannot be written (``/proc``, permission
denied, a file where a folder is needed: exit 2, one line naming the path, before any work) and an existing
output (kept without ``--force``). Also the atomic writer's own refusals."""

from __future__ import annotations

import errno
import os
import sys
import tempfile
from pathlib import Path

import pytest
import yaml
from conftest import assert_input_error, run_cli

from hetsim.report.export import OutputPathError, atomic_path, atomic_write_text, make_dirs

ROOT = Path(__file__).resolve().parents[1]
PUMA = ROOT / "platforms" / "puma.yaml"
R20 = ROOT / "workloads" / "resnet20_cifar10.onnx"
EFR = ROOT / "platforms" / "efr32mg24.yaml"
NET = ROOT / "workloads" / "snn" / "braille64.yaml"
PROC = Path("/proc")
needs_proc = pytest.mark.skipif(not sys.platform.startswith("linux") or not PROC.is_dir(), reason="needs /proc")
not_root = pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes anywhere")


@pytest.fixture(scope="module")
def results_csv(tmp_path_factory) -> Path:
    """A small sweep's results table (one workload, one point, heft) for ``plot``."""
    from hetsim.cli import main

    d = tmp_path_factory.mktemp("sweep")
    spec = {"name": "t", "workloads": [str(R20)], "platforms": [str(PUMA)],
            "parameters": {"devices.cim.crossbars": [25], "devices.cim.t_mvm_ns": [50]},
            "mappers": ["heft"], "output": str(d / "out.csv")}
    (d / "sweep.yaml").write_text(yaml.safe_dump(spec))
    assert main(["sweep", str(d / "sweep.yaml"), "--workers", "1"]) == 0
    return d / "out.csv"


@pytest.fixture(scope="module")
def onnx_model(tmp_path_factory) -> Path:
    pytest.importorskip("onnxruntime")
    from test_profile import conv_relu_model

    return conv_relu_model(tmp_path_factory.mktemp("model") / "m.onnx")


#: writer -> (argv before the output, the output flag, a file name (None: the output is a folder), argv after)
WRITERS = {
    "run": (["run", PUMA, R20, "--mapper", "heft"], "--out", None, []),
    "map": (["map", PUMA, R20, "--mapper", "heft"], "-o", "s.json", []),
    "profile": (["profile", "MODEL"], "-o", "p.csv", ["--runs", "1", "--warmup", "0"]),
    "plot": (["plot", "RESULTS"], "-o", None, []),
    "reorder": (["reorder", EFR, ROOT / "workloads" / "snn" / "braille64x64.yaml"], "-o", "r.yaml", []),
    "snn-run": (["run", EFR, NET, "--mapper", "all-m33"], "--out", None, []),
}


def _argv(request, name: str, target: Path) -> list:
    before, flag, _, after = WRITERS[name]
    subst = {"MODEL": lambda: request.getfixturevalue("onnx_model"),
             "RESULTS": lambda: request.getfixturevalue("results_csv")}
    before = [subst[a]() if isinstance(a, str) and a in subst else a for a in before]
    return [*before, flag, target, *after]


def _target(name: str, folder: Path) -> Path:
    """The output argument inside ``folder``: a file for the file writers, the folder itself for the others."""
    fname = WRITERS[name][2]
    return folder / fname if fname else folder


@pytest.mark.parametrize("name", WRITERS)
def test_missing_parent_folders_are_created(request, capsys, tmp_path, name):
    target = _target(name, tmp_path / "missing" / "parent")
    code, _, err = run_cli(capsys, *_argv(request, name, target))
    assert code == 0, err
    if WRITERS[name][2]:
        assert target.is_file() and target.stat().st_size > 0
    else:
        assert target.is_dir() and any(target.iterdir())
    assert not [p for p in target.parent.rglob(".*") if ".tmp" in p.name or "probe" in p.name]


@needs_proc
@pytest.mark.parametrize("name", WRITERS)
def test_proc_is_refused_before_any_work(request, capsys, name):
    target = _target(name, PROC / "hetsim-no-such" / "x")
    code, out, err = run_cli(capsys, *_argv(request, name, target))
    assert_input_error(code, err, str(target), "cannot write")
    assert len(err.strip().splitlines()) == 1
    assert out == ""  # refused before the report, not after the work


@pytest.mark.parametrize("name", WRITERS)
def test_a_file_where_a_folder_is_needed_is_refused(request, capsys, tmp_path, name):
    (tmp_path / "afile").write_text("keep")
    target = _target(name, tmp_path / "afile" / "sub")
    code, out, err = run_cli(capsys, *_argv(request, name, target))
    assert_input_error(code, err, "is a file, not a directory")
    assert out == "" and (tmp_path / "afile").read_text() == "keep"


@pytest.mark.parametrize("name", WRITERS)
def test_an_existing_output_is_kept_without_force(request, capsys, tmp_path, name):
    target = _target(name, tmp_path / "out")
    first = _target(name, tmp_path / "out") if WRITERS[name][2] else target / "report.html"
    first.parent.mkdir(parents=True, exist_ok=True)
    if name == "plot":  # plot refuses when one of the figures it would write exists
        first = target / "fig5_breakdown_resnet20_cifar10.png"
    elif name == "snn-run":
        first = target / "summary.json"
    first.write_text("mine")
    code, out, err = run_cli(capsys, *_argv(request, name, target))
    assert_input_error(code, err, "--force")
    assert first.read_text() == "mine" and out == ""


@not_root
@pytest.mark.parametrize("name", ["run", "map", "plot"])
def test_a_folder_without_write_permission_is_refused(request, capsys, tmp_path, name):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        target = _target(name, locked / "sub")
        code, out, err = run_cli(capsys, *_argv(request, name, target))
        assert_input_error(code, err, str(target), "Permission denied")
    finally:
        locked.chmod(0o700)


def test_permission_denied_is_one_line_naming_the_path(capsys, tmp_path, monkeypatch):
    """As root nothing is denied: make every file creation fail as a non-root user's would."""
    def denied(*a, **k):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(tempfile, "mkstemp", denied)
    target = tmp_path / "s.json"
    code, out, err = run_cli(capsys, "map", PUMA, R20, "--mapper", "heft", "-o", target)
    assert_input_error(code, err, str(target), "Permission denied")
    assert out == "" and not target.exists()


def test_map_force_replaces_and_a_folder_is_no_file(capsys, tmp_path):
    target = tmp_path / "s.json"
    target.write_text("old")
    code, _, err = run_cli(capsys, "map", PUMA, R20, "--mapper", "heft", "-o", target, "--force")
    assert code == 0, err
    assert target.read_text().startswith("{")
    code, _, err = run_cli(capsys, "map", PUMA, R20, "--mapper", "heft", "-o", tmp_path)
    assert_input_error(code, err, "is a folder")


# --- the atomic writer ------------------------------------------------------------------------------------------


def test_make_dirs_refuses_clearly(tmp_path):
    (tmp_path / "f").write_text("")
    assert make_dirs(tmp_path / "a" / "b").is_dir()
    with pytest.raises(OutputPathError, match="cannot write .*x.json"):
        make_dirs(tmp_path / "f" / "sub", tmp_path / "f" / "sub" / "x.json")


def test_atomic_write_refuses_a_folder_and_a_full_disk(tmp_path):
    (tmp_path / "d").mkdir()
    with pytest.raises(OutputPathError, match="it is a folder"):
        atomic_write_text(tmp_path / "d", "x")

    def full(_tmp):
        raise OSError(errno.ENOSPC, "No space left on device")

    target = tmp_path / "t.txt"
    with pytest.raises(OutputPathError, match="No space left"), atomic_path(target) as tmp:
        full(tmp)
    assert not target.exists() and list(tmp_path.iterdir()) == [tmp_path / "d"]


def test_atomic_write_lets_an_input_error_of_the_writer_through(tmp_path):
    """A writer that fails to read some other file is not a write failure of the target."""
    with pytest.raises(FileNotFoundError), atomic_path(tmp_path / "t.txt"):
        open(tmp_path / "no-such-input.txt").close()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_force_never_replaces_a_fifo_or_a_device(capsys, tmp_path):
    """An output that names a FIFO, or (through a symbolic link, so that a failure here replaces only the link) a
    character device, is refused in one line even with --force, and is left as it was: before, ``calibrate -o
    /dev/null --force`` run as root replaced /dev/null by a regular file."""
    import stat

    from hetsim.files import atomic_write_text

    fifo = tmp_path / "out.json"
    os.mkfifo(fifo)
    dev = tmp_path / "dev.yaml"
    dev.symlink_to(os.devnull)
    code, _, err = run_cli(capsys, "map", PUMA, R20, "--mapper", "heft", "-o", fifo, "--force")
    assert_input_error(code, err, "is a FIFO (named pipe), not a regular file")
    profile = f"{ROOT / 'profiles' / 'yolov5n.csv'}={ROOT / 'workloads' / 'yolov5n.onnx'}"
    code, _, err = run_cli(capsys, "calibrate", profile, "-o", dev, "--force")
    assert_input_error(code, err, "is a character device, not a regular file")
    with pytest.raises(OutputPathError, match="is a character device"):
        atomic_write_text(dev, "x")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and dev.is_symlink()
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)
