"""SIGINT and SIGTERM stop ``hetsim sweep`` within a few seconds, keep every finished point, leave no worker behind,
and the same command resumes. Real subprocesses; each point takes ~1 s (a plugin mapper that waits, then runs
heft)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
POINTS = 8
SLOW_MAPPER = '''
import time

from hetsim.mappers.base import register
from hetsim.mappers.heft import Heft


@register("slow")
class Slow:
    def __init__(self, seconds: float = 1.0):
        self.seconds = seconds

    def map(self, costs):
        time.sleep(self.seconds)
        return Heft().map(costs)
'''


def _setup(tmp_path: Path) -> tuple[Path, dict]:
    (tmp_path / "slow_mapper.py").write_text(SLOW_MAPPER)
    spec = tmp_path / "sweep.yaml"
    spec.write_text(yaml.safe_dump({
        "name": "signals", "workloads": [str(ROOT / "workloads/resnet20_cifar10.onnx")],
        "platforms": [str(ROOT / "platforms/puma.yaml")],
        "parameters": {"devices.cim.crossbars": [5 * (i + 1) for i in range(POINTS)]},
        "mappers": ["slow"], "mapper_options": {"seconds": 1}, "output": "out.csv"}))
    env = {**os.environ, "HETSIM_PLUGINS": "slow_mapper"}
    return spec, env


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (psutil when installed, else /proc)."""
    try:
        import psutil
    except ImportError:
        children: dict[int, list[int]] = {}
        for d in Path("/proc").iterdir():
            if d.name.isdigit():
                try:
                    ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
                except (OSError, IndexError, ValueError):
                    continue
                children.setdefault(ppid, []).append(int(d.name))
        out, todo = [], [pid]
        while todo:
            kids = children.get(todo.pop(), [])
            out += kids
            todo += kids
        return out
    try:
        return [c.pid for c in psutil.Process(pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def _alive(pid: int) -> bool:
    """A process that exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def _default_sigint() -> None:
    """In the child before exec: SIGINT at the default, as in a terminal. A test run started in the background by
    a non-interactive shell (``pytest &``, a CI runner) has SIGINT ignored, its children inherit that, and a
    SIGINT sent before the sweep installs its own handler was then ignored (the sweep ran to the end, exit 0)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _rows(out: Path) -> int:
    return max(0, len(out.read_bytes().splitlines()) - 1) if out.exists() else 0


def _signal_after_first_row(cmd: list[str], tmp_path: Path, env: dict, out: Path, sig) -> tuple:
    """Start the sweep ``cmd``, send ``sig`` once its first row is in ``out`` (and before its last), and return
    ``(exit code, seconds it took to stop, its stderr, the worker pids seen before the signal)``."""
    with (tmp_path / "stderr.txt").open("w") as err:
        proc = subprocess.Popen(cmd, preexec_fn=_default_sigint, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                                stderr=err)
        try:
            deadline = time.monotonic() + 120
            while _rows(out) < 1 and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            assert proc.poll() is None, "the sweep ended before it was signalled"
            assert _rows(out) < POINTS
            workers_seen = _descendants(proc.pid)
            t0 = time.monotonic()
            proc.send_signal(sig)
            rc = proc.wait(timeout=30)
            took = time.monotonic() - t0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return rc, took, (tmp_path / "stderr.txt").read_text(), workers_seen


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux)")
@pytest.mark.parametrize(("sig", "workers"), [(signal.SIGINT, 2), (signal.SIGTERM, 2), (signal.SIGTERM, 1)])
def test_a_signal_stops_the_sweep_keeps_finished_points_and_leaves_no_worker(tmp_path, sig, workers):
    spec, env = _setup(tmp_path)
    out = tmp_path / "out.csv"
    cmd = [sys.executable, "-m", "hetsim", "sweep", str(spec), "--workers", str(workers)]
    rc, took, stderr, workers_seen = _signal_after_first_row(cmd, tmp_path, env, out, sig)
    assert rc == 128 + sig, stderr
    assert took < 5, f"took {took:.1f} s to stop"
    assert "Traceback" not in stderr
    assert f"stopped by {sig.name}" in stderr and "run the same command to resume" in stderr
    assert workers_seen, "no worker process was seen"  # --workers 1 runs the points in a worker process too
    deadline = time.monotonic() + 2  # terminated workers are reaped by the sweep itself; allow for slow /proc
    while any(_alive(p) for p in workers_seen) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [p for p in workers_seen if _alive(p)], "worker processes survived the sweep"
    df = pd.read_csv(out)  # the finished rows, whole
    assert 1 <= len(df) < POINTS and df["key"].is_unique and df["error"].isna().all()
    assert df["makespan_s"].notna().all() and (df["mapper_options"] == "seconds=1").all()
    if sig == signal.SIGINT:  # the same command resumes: only the missing points run
        done = len(df)
        again = subprocess.run([sys.executable, "-m", "hetsim", "sweep", str(spec), "--workers", "2"],
                               cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert again.returncode == 0, again.stderr
        assert f"{POINTS - done} points run, {done} already in" in again.stdout
        assert "points/s" in again.stderr  # progress with rate and ETA on stderr
        full = pd.read_csv(out)
        assert len(full) == POINTS and full["key"].is_unique


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux)")
def test_sigint_stops_a_cp_sat_solve_at_once(tmp_path):
    """CP-SAT catches SIGINT in the process that solves (and leaves it at the default afterwards): the sweep
    solves in a worker it terminates, so a 20 s solve does not hold the sweep, and no truncated solve is
    recorded as if it had reached its time limit."""
    spec = tmp_path / "sweep.yaml"
    spec.write_text(yaml.safe_dump({
        "name": "cpsat", "workloads": [str(ROOT / "workloads/paper/yolov5n_int8_ort.onnx")],
        "platforms": [str(ROOT / "platforms/puma-x86.yaml")],
        "parameters": {"devices.cim.crossbars": [25, 50], "devices.cim.t_mvm_ns": [500]},
        # the bare model (no bounds, hints or decomposition): the mapper itself proves these points in seconds
        "mappers": ["cpsat"], "mapper_options": {"time_limit_s": 20, "levers": "none"}, "output": "out.csv"}))
    with (tmp_path / "stderr.txt").open("w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "hetsim", "sweep", str(spec), "--workers", "1"],
                                preexec_fn=_default_sigint,
                                cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=err)
        try:
            # loading, then solving in the worker: wait for the worker (seconds under load), then into its solve
            deadline = time.monotonic() + 60
            while not _descendants(proc.pid) and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.1)
            time.sleep(2)
            assert proc.poll() is None
            workers_seen = _descendants(proc.pid)
            t0 = time.monotonic()
            proc.send_signal(signal.SIGINT)
            rc = proc.wait(timeout=60)
            took = time.monotonic() - t0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    stderr = (tmp_path / "stderr.txt").read_text()
    assert rc == 130 and took < 5 and "Traceback" not in stderr, (rc, took, stderr)
    time.sleep(0.5)
    assert workers_seen and not [p for p in workers_seen if _alive(p)]
    out = tmp_path / "out.csv"
    if out.exists():  # a point that finished before the signal is whole
        df = pd.read_csv(out)
        assert len(df) < 2 and df["error"].isna().all()


def _before_hetsim(err: str) -> bool:
    """A ``KeyboardInterrupt`` traceback of Python's own start-up only: every frame in Python's frozen modules
    (``<frozen runpy>`` locating ``-m hetsim``, ``<frozen importlib._bootstrap_external>`` reading the package's
    file), none in a file of hetsim, whose first line holds SIGINT (``hetsim._interrupt.hold``)."""
    lines = err.strip().splitlines()
    frames = [ln for ln in lines if ln.lstrip().startswith("File ")]
    return (lines[:1] == ["Traceback (most recent call last):"] and lines[-1:] == ["KeyboardInterrupt"]
            and bool(frames) and all(f.lstrip().startswith('File "<frozen ') for f in frames))


def test_sigint_while_starting_stops_the_sweep_with_one_line(tmp_path):
    """A SIGINT in a sweep's first second (hetsim importing its libraries, reading the sweep) ends it with exit 130
    and one line: Python's own handler printed a KeyboardInterrupt traceback during the imports, or the interrupt
    was lost inside an extension module's initialisation and the sweep ran every point (exit 0; both seen before
    the CLI imported its libraries lazily; the loss is timing-dependent, the next test checks its remedy
    deterministically). A signal that lands before the interpreter has installed any handler kills it silently
    (-2, nothing printed), also accepted, as is -2 after the one line; so is one that lands before the first line
    of hetsim runs (in the site module, or while Python locates the package: its own traceback, no hetsim frame)."""
    spec = tmp_path / "sweep.yaml"
    spec.write_text(yaml.safe_dump({
        "name": "early", "workloads": [str(ROOT / "workloads/paper/yolov5n_int8_ort.onnx")],
        "platforms": [str(ROOT / "platforms/puma-x86.yaml")], "mappers": ["cpsat"],
        "mapper_options": {"time_limit_s": 20}, "output": "out.csv"}))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for delay in (0.3, 0.6, 0.9, 1.2):
        proc = subprocess.Popen([sys.executable, "-m", "hetsim", "sweep", str(spec), "--workers", "1"],
                                preexec_fn=_default_sigint,
                                cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            time.sleep(delay)
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        if proc.returncode == -signal.SIGINT and not err:
            continue
        if proc.returncode == 1 and "Fatal Python error: init_import_site" in err:
            continue  # the signal landed while the interpreter itself was starting (its site module): before hetsim
        if proc.returncode == -signal.SIGINT and _before_hetsim(err):
            continue  # the signal landed while Python located the package (runpy, importlib): before its first line
        lines = [ln for ln in err.splitlines() if ln.startswith("hetsim: ")]
        # 130 after the one line; or killed by SIGINT after it (seen once in about 15 runs with CPython 3.11: the
        # interpreter re-raises an interrupt at exit that it saw unhandled in some frame, although hetsim caught it)
        assert proc.returncode in (130, -signal.SIGINT), (delay, proc.returncode, err)
        assert "Traceback" not in err and len(lines) == 1, (delay, proc.returncode, err)
        assert lines[0] == "hetsim: interrupted" or "stopped by SIGINT" in lines[0], err


def test_a_sigint_lost_before_the_sweep_started_still_stops_it(tmp_path, monkeypatch):
    """The ``hetsim`` command records every SIGINT (hetsim._interrupt); one that arrived before the sweep's own
    handlers were installed, and whose KeyboardInterrupt an extension module's initialisation swallowed, stops
    the sweep before its first point (it ran every point and exited 0)."""
    from hetsim import _interrupt
    from hetsim.dse import load_sweep, run_sweep
    from hetsim.dse.sweep import SweepInterrupted

    spec = tmp_path / "sweep.yaml"
    spec.write_text(yaml.safe_dump({
        "name": "lost", "workloads": [str(ROOT / "workloads/paper/resnet18_int8_ort.onnx")],
        "platforms": [str(ROOT / "platforms/puma.yaml")], "mappers": ["heft"], "output": str(tmp_path / "o.csv")}))
    monkeypatch.setattr(_interrupt, "seen", [signal.SIGINT])
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(SweepInterrupted) as stop:
        run_sweep(load_sweep(spec), workers=0)
    assert stop.value.signum == signal.SIGINT and stop.value.finished == 0
    assert signal.getsignal(signal.SIGINT) is before  # handlers left as they were


def test_stopping_the_pool_leaves_no_manager_thread_to_race_the_exit_hook():
    """The failure CI caught (stop 28): after a SIGINT, concurrent.futures' exit hook wrote to the wake-up pipe of a
    pool whose manager thread was still closing it, and an ``OSError: [Errno 9] Bad file descriptor`` traceback
    followed the sweep's one line. ``_stop_pool`` returns only once the workers are reaped and the manager thread
    has ended (a thread left running is the race's precondition)."""
    from concurrent.futures import ProcessPoolExecutor

    from hetsim.dse.runner import _stop_pool, _worker_init

    pool = ProcessPoolExecutor(max_workers=2, initializer=_worker_init)
    futures = [pool.submit(time.sleep, 30) for _ in range(4)]
    deadline = time.monotonic() + 30
    while not any(f.running() for f in futures) and time.monotonic() < deadline:
        time.sleep(0.05)
    procs = list(pool._processes.values())
    manager = pool._executor_manager_thread
    assert procs and manager.is_alive()
    t0 = time.monotonic()
    _stop_pool(pool)
    assert time.monotonic() - t0 < 10
    assert not any(p.is_alive() for p in procs)
    assert not manager.is_alive()


def _scenario_setup(tmp_path: Path) -> tuple[Path, dict]:
    """A scenario sweep of :data:`POINTS` points, each ~1 s (the slow mapper maps the scenario's one stream of 3
    requests of ResNet-20)."""
    (tmp_path / "slow_mapper.py").write_text(SLOW_MAPPER)
    (tmp_path / "sc.yaml").write_text(yaml.safe_dump({
        "mapper": "slow", "mapper_options": {"seconds": 1}, "seed": 1,
        "streams": {"cls": {"model": str(ROOT / "workloads/resnet20_cifar10.onnx"),
                            "arrival": {"process": "poisson", "rate_hz": 10}, "count": 3}}}))
    spec = tmp_path / "sweep.yaml"
    spec.write_text(yaml.safe_dump({
        "name": "scenario-signals", "scenario": "sc.yaml", "platforms": [str(ROOT / "platforms/puma.yaml")],
        "parameters": {"streams.cls.arrival.rate_hz": [10 * (i + 1) for i in range(POINTS)]}, "output": "out.csv"}))
    return spec, {**os.environ, "HETSIM_PLUGINS": "slow_mapper"}


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux)")
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_stops_a_scenario_sweep_as_it_stops_a_sweep(tmp_path, sig):
    """A scenario sweep (hetsim.dse.scenario_sweep) runs on the ordinary sweep's machinery: SIGINT and SIGTERM stop
    it within seconds with one line and exit 130 / 143, no traceback (each worker printed a KeyboardInterrupt
    traceback, and SIGTERM killed the sweep without a word), no worker left, the finished rows whole; the same
    command resumes with the missing points only."""
    spec, env = _scenario_setup(tmp_path)
    out = tmp_path / "out.csv"
    cmd = [sys.executable, "-m", "hetsim", "sweep", str(spec), "--workers", "2"]
    rc, took, stderr, workers_seen = _signal_after_first_row(cmd, tmp_path, env, out, sig)
    assert rc == 128 + sig, stderr
    assert took < 5, f"took {took:.1f} s to stop: {stderr}"
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr
    lines = [ln for ln in stderr.splitlines() if ln.startswith("hetsim:")]
    assert len(lines) == 1 and f"stopped by {sig.name}" in lines[0] and "run the same command to resume" in lines[0], \
        stderr
    assert workers_seen, "no worker process was seen"
    deadline = time.monotonic() + 2
    while any(_alive(p) for p in workers_seen) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [p for p in workers_seen if _alive(p)], "worker processes survived the sweep"
    df = pd.read_csv(out)  # the finished rows, whole
    done = len(df)
    assert 1 <= done < POINTS and df["key"].is_unique and df["error"].isna().all()
    assert df["cls.latency_p99_s"].notna().all() and df["hetsim_version"].notna().all()
    assert f"{done} point{'' if done == 1 else 's'} finished this run" in lines[0]
    again = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert f"{POINTS - done} points run, {done} already in" in again.stdout
    full = pd.read_csv(out)
    assert len(full) == POINTS and full["key"].is_unique and full["error"].isna().all()
    assert list(full["streams.cls.arrival.rate_hz"]) == [10 * (i + 1) for i in range(POINTS)]  # the sweep's order


@pytest.mark.parametrize("kind", ["onnx", "scenario"])
def test_a_signal_as_a_row_is_appended_waits_for_the_row_and_its_count(tmp_path, monkeypatch, kind):
    """SIGINT while a finished row is appended: the row is in the table and counted in "N points finished this run"
    (seen under load: 2 rows kept, "1 point finished"). The sweep blocked the signals in the main thread only, so the
    kernel delivered them to another thread and Python ran the handler in the main thread between the write and the
    count. Here the signal is sent from another thread just after the write."""
    import threading

    from hetsim.dse import store, sweep
    from hetsim.dse.sweep import SweepInterrupted

    if kind == "onnx":
        spec_file = tmp_path / "sweep.yaml"
        spec_file.write_text(yaml.safe_dump({
            "name": "held", "workloads": [str(ROOT / "workloads/resnet20_cifar10.onnx")],
            "platforms": [str(ROOT / "platforms/puma.yaml")], "parameters": {"devices.cim.crossbars": [25, 50]},
            "mappers": ["heft"], "output": str(tmp_path / "out.csv")}))
        spec = sweep.load_sweep(spec_file)

        def run():
            return sweep.run_sweep(spec, workers=0)
    else:
        from hetsim.dse.scenario_sweep import load_scenario_sweep, run_scenario_sweep

        (tmp_path / "sc.yaml").write_text(yaml.safe_dump({"streams": {"cls": {
            "model": str(ROOT / "workloads/resnet20_cifar10.onnx"), "arrival": {"process": "poisson", "rate_hz": 10},
            "count": 3}}}))
        (tmp_path / "sweep.yaml").write_text(yaml.safe_dump({
            "name": "held", "scenario": "sc.yaml", "platforms": [str(ROOT / "platforms/puma.yaml")],
            "parameters": {"streams.cls.arrival.rate_hz": [10, 20]}, "output": "out.csv"}))
        spec = load_scenario_sweep(tmp_path / "sweep.yaml")

        def run():
            return run_scenario_sweep(spec, workers=0)

    real = store._append

    def append_then_signal(path, columns, row):
        real(path, columns, row)
        t = threading.Thread(target=os.kill, args=(os.getpid(), signal.SIGINT))
        t.start()
        t.join()
        time.sleep(0.1)  # Python runs the handler in the main thread meanwhile

    monkeypatch.setattr(store, "_append", append_then_signal)
    with pytest.raises(SweepInterrupted) as stop:
        run()
    assert stop.value.finished == 1 == len(pd.read_csv(tmp_path / "out.csv"))


def test_an_interrupt_wrapped_by_python_is_an_interrupt_not_an_internal_error(capsys, monkeypatch):
    """CPython wraps an exception raised in a descriptor's ``__set_name__`` in a RuntimeError; a Ctrl-C while
    pydantic built a device class at import arrived as "hetsim: internal error: RuntimeError: Error calling
    __set_name__ ..." (exit 1; seen once in eight runs of the test above under load). It is an interruption:
    one line, exit 130."""
    from hetsim.cli import _main

    def wrapped(_args):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as ki:
            raise RuntimeError("Error calling __set_name__ on 'PydanticDescriptorProxy' instance") from ki

    monkeypatch.setitem(_main.COMMANDS, "inspect", wrapped)
    assert _main.main(["inspect", str(ROOT / "workloads/resnet20_cifar10.onnx")]) == 130
    assert capsys.readouterr().err == "hetsim: interrupted\n"
    from hetsim import _interrupt

    assert not _interrupt.wrapped(RuntimeError("a bug"))  # an ordinary bug stays an internal error


def test_a_signal_held_during_an_append_that_fails_leaves_the_failure_reported():
    """A SIGINT held while a row is appended is raised when the append ends; if the append itself failed (a
    full disk), its error is the one that stops the sweep, not 'stopped by SIGINT' (reviewer)."""
    from hetsim.dse.runner import SweepInterrupted, _stop_on_signals
    from hetsim.dse.store import _signals_held

    with pytest.raises(OSError, match="disk full"), _stop_on_signals(), _signals_held():
        signal.raise_signal(signal.SIGINT)  # held: deferred until the block ends
        raise OSError("disk full")
    with pytest.raises(SweepInterrupted), _stop_on_signals(), _signals_held():
        signal.raise_signal(signal.SIGINT)  # the block ends normally: the signal is raised then


@pytest.fixture
def sigint_restored(monkeypatch):
    """The SIGINT handler, ``sys.unraisablehook`` and the interrupt record as they were, after the test."""
    from hetsim import _interrupt

    before = signal.getsignal(signal.SIGINT)
    monkeypatch.setattr(_interrupt, "seen", [])
    monkeypatch.setattr(_interrupt, "_told", [])
    monkeypatch.setattr(sys, "unraisablehook", sys.unraisablehook)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    yield _interrupt
    signal.signal(signal.SIGINT, before)


def test_an_interrupt_while_the_parser_is_built_is_one_line(sigint_restored, capsys, monkeypatch):
    """A Ctrl-C while ``main`` builds its parser (the subcommands import their modules) printed a KeyboardInterrupt
    traceback (seen under load): the command catches it around ``main`` too: one line, exit 130; a second SIGINT
    then ends the process at once instead of raising."""
    from hetsim import __main__ as entry
    from hetsim.cli import _main

    def build_parser():
        raise KeyboardInterrupt

    monkeypatch.setattr(_main, "build_parser", build_parser)
    assert entry.run() == 130
    assert capsys.readouterr().err == "hetsim: interrupted\n"
    assert signal.getsignal(signal.SIGINT) is sigint_restored._late


def test_a_sigint_at_the_start_of_the_command_is_held_until_it_can_stop(sigint_restored, capsys, monkeypatch):
    """As the hetsim command (``python -m hetsim``), the package's first line holds SIGINT (recorded, not raised
    in the middle of an import); ``run`` then stops with one line before reading the arguments. Another program
    importing hetsim keeps Python's handler."""
    from hetsim import __main__ as entry

    monkeypatch.setattr(sys, "argv", ["/usr/bin/python3"])
    assert not sigint_restored.hold() and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    monkeypatch.setattr(sys, "argv", ["-m"])
    monkeypatch.setattr(sys, "orig_argv", ["python", "-m", "other"])
    assert not sigint_restored.hold()
    monkeypatch.setattr(sys, "orig_argv", ["python", "-X", "dev", "-m", "hetsim", "sweep", "s.yaml"])
    assert sigint_restored.hold()
    signal.raise_signal(signal.SIGINT)  # recorded, not raised
    assert sigint_restored.seen == [signal.SIGINT]
    assert entry.run() == 130
    assert capsys.readouterr().err == "hetsim: interrupted\n"


@pytest.mark.parametrize(("code", "line"), [(0, True), (130, False)])
def test_a_sigint_once_the_command_is_done_exits_at_once(code, line):
    """After the command returned, SIGINT no longer raises into the interpreter's shutdown (exit handlers joining
    threads and workers printed a traceback): exit 130 at once, with the one line unless the command printed it."""
    prog = ("import signal, sys\nfrom hetsim import _interrupt\n_interrupt.install()\n"
            f"_interrupt.finishing({code})\nsignal.raise_signal(signal.SIGINT)\nprint('not reached')\n")
    proc = subprocess.run([sys.executable, "-c", prog], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, preexec_fn=_default_sigint)
    assert proc.returncode == 130 and proc.stdout == ""
    assert proc.stderr == ("hetsim: interrupted\n" if line else ""), proc.stderr
