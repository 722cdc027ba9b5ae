"""Running a sweep: its points in worker processes (or on a Dask scheduler), each row appended to the results
table as it finishes (:mod:`hetsim.dse.store`), SIGINT and SIGTERM stopping it within seconds with the finished
rows kept (:class:`SweepInterrupted`), the parallelism planned from the cores (:func:`plan_parallelism`).

:func:`run_point` hands a point to its workload kind (:meth:`hetsim.dse.points.SweepKind.run_point`); nothing
here knows a kind.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import threading
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from pathlib import Path

from hetsim.dse.points import SweepSpec, _takes_threads, expand_points, result_columns, settings_columns
from hetsim.dse.store import _STOP_SIGNALS, _held, _reconcile, _Recorder, _sort_table
from hetsim.errors import InputError

#: most local worker processes a sweep starts (our bound: Python's process pool forks them all at once, so
#: ``--workers 100000`` had forked until the machine ran out of processes)
MAX_WORKERS = 1024


class SweepInterrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM stopped a sweep: the finished points are in ``output``, no worker is left running."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.output: Path | None = None
        self.finished = 0


@contextmanager
def _stop_on_signals() -> Iterator[None]:
    """While the block runs (in the main thread), SIGINT and SIGTERM raise :class:`SweepInterrupted`, once:
    a second signal while the sweep stops its workers is ignored; one that arrives while a finished row is appended
    and counted is raised when that is done (:func:`_signals_held`)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    from hetsim import _interrupt

    if _interrupt.seen:  # a SIGINT before this point that an extension module's import may have swallowed
        raise SweepInterrupted(_interrupt.seen[0])
    hit = []
    _held["deferred"] = None

    def handler(signum, _frame):
        if hit:
            return
        if _held["depth"]:  # a row being appended and counted (_signals_held): raised again at its end
            _held["deferred"] = signum
            return
        hit.append(signum)
        raise SweepInterrupted(signum)

    old = {s: signal.signal(s, handler) for s in _STOP_SIGNALS}
    _handlers.append(handler)
    try:
        yield
    finally:
        _handlers.pop()
        for s, h in old.items():
            signal.signal(s, h)


_handlers: list = []


def _restore_handlers() -> None:
    """Install the running sweep's handler again: ortools' CP-SAT, run in this process, leaves SIGINT at the
    operating system's default after each solve, which would kill the process without a word."""
    if _handlers and threading.current_thread() is threading.main_thread():
        for s in _STOP_SIGNALS:
            signal.signal(s, _handlers[-1])


def _worker_init(parent: int | None = None) -> None:
    """A local worker leaves SIGINT to the sweep process (which stops it), dies on SIGTERM, and dies with the
    sweep process ``parent`` even when that is killed outright (:mod:`hetsim.dse.workers`)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if parent is not None:
        from hetsim.dse.workers import die_with_parent

        die_with_parent(parent)


def _stop_pool(pool: ProcessPoolExecutor) -> None:
    """Cancel the points not started, terminate the workers (killing any that does not stop within 2 s) and
    reap them."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    manager = getattr(pool, "_executor_manager_thread", None)  # shutdown() forgets it
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in procs:
        if proc.is_alive():
            proc.terminate()
    for proc in procs:
        proc.join(timeout=2)
        if proc.is_alive():
            proc.kill()
            proc.join(timeout=2)
    # The pool's manager thread sees its workers die and closes its wake-up pipe. Left running, it races
    # concurrent.futures' exit hook, which writes to that pipe without the pool's lock (CPython 3.11): the closed
    # pipe's "OSError: [Errno 9] Bad file descriptor" traceback then follows the sweep's one-line message.
    if manager is not None:
        manager.join(timeout=5)


def available_cores() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one, else the CPU count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


def plan_parallelism(n_points: int, workers: int | None = None, threads: int | None = None,
                     spec_threads: int | None = None, cores: int | None = None) -> tuple[int, int]:
    """``(worker processes, solver threads per point)`` for a local sweep of ``n_points`` points.

    The runner keeps ``workers * threads`` within the ``cores`` (default :func:`available_cores`): points are
    independent, so by default every core runs its own point with one solver thread (two CP-SAT workers per
    point on top of two processes oversubscribed a 2-core machine, measured: +50 % solve time); with fewer
    points than cores the spare cores become threads. Given either number, the other is the cores divided by
    it; given both (``--workers`` and ``--threads``), they are used as given. ``spec_threads`` is a ``threads``
    set in the sweep file's ``mapper_options`` (it then counts as ``threads``)."""
    cores = cores or available_cores()
    threads = threads or spec_threads
    if workers and threads:
        return workers, threads
    if threads:
        return max(1, min(cores // threads, n_points)), threads
    if workers:
        return workers, max(1, cores // workers)
    w = max(1, min(cores, n_points))
    return w, max(1, cores // w)


def run_sweep(
    spec: SweepSpec,
    output: Path | None = None,
    workers: int | None = None,
    scheduler: str | None = None,
    threads: int | None = None,
    progress: Callable[[int, int, dict], None] | None = None,
    notify: Callable[[str], None] | None = None,
    max_points: int | None = None,
) -> tuple[Path, int, int]:
    """Run the points of ``spec`` not yet in ``output`` under today's settings, appending each result as it
    finishes. A point whose row was computed under other settings (module docstring, "Settings") is recomputed
    and its old row moved to ``<output name>.replaced.csv``.

    Args:
        output: results CSV (default: ``spec.output``).
        workers: local worker processes (default: :func:`plan_parallelism`, the available cores); 0 runs the
            points in this process, which a signal then stops only between points (and a CP-SAT solve in
            progress catches SIGINT itself, ending as at its time limit), so the command line always uses worker
            processes.
        scheduler: address of a Dask distributed scheduler (``tcp://HOST:PORT``) to run the points on instead;
            each point then uses ``threads`` solver threads (default 1: every Dask worker thread runs one point,
            so the sweep scales with the cluster's threads).
        threads: solver threads per point for mappers that take a ``threads`` option (``cpsat``, ``ilp``) and
            whose sweep file does not set one (default: :func:`plan_parallelism`). A runtime choice, like
            ``workers``: not one of a row's settings, so changing it does not recompute finished points.
        progress: called with (done, total, row) after each point.
        notify: called with a message when points are recomputed because their settings changed (default: a
            :class:`UserWarning`).
        max_points: refuse a sweep of more points (default :data:`hetsim.dse.bounds.MAX_POINTS`).

    Returns:
        ``(output path, points run now, points skipped because already done under the same settings)``.

    Raises:
        InputError: the output table exists with other columns (another sweep's table), is a folder or cannot
            be written, or another sweep is writing it (:mod:`hetsim.dse.lock`).
        SweepInterrupted: SIGINT or SIGTERM (when run in the main thread): the points finished so far are in the
            table, the points not finished are dropped, local workers are terminated, a Dask client is closed.
    """
    from hetsim.dse import bounds
    from hetsim.dse.lock import check_output, results_lock

    out = Path(output or spec.output)
    with bounds.max_points(max_points):
        bounds.check_count(bounds.count_points(spec), f"sweep {spec.name!r}")
    check_output(out)
    with results_lock(out) as table, bounds.max_points(max_points):  # one writer per file (hetsim.dse.lock)
        return out, *_run_sweep_locked(spec, table, workers, scheduler, threads, progress, notify)[1:]


def _run_sweep_locked(spec: SweepSpec, out: Path, workers: int | None, scheduler: str | None,
                      threads: int | None, progress: Callable[[int, int, dict], None] | None,
                      notify: Callable[[str], None] | None) -> tuple[Path, int, int]:
    """:func:`run_sweep`'s work, with the lock on ``out`` held."""
    kind = spec.sweep_kind
    columns = result_columns(spec)
    every = expand_points(spec)
    done = _reconcile(out, settings_columns(spec), columns, every,
                      notify or (lambda msg: warnings.warn(msg, stacklevel=3)), kind.added_columns)
    points = [p for p in every if p["key"] not in done]
    skipped = len(every) - len(points)
    total = len(points)
    record = _Recorder(out, columns, total, progress)
    if not points:
        return out, 0, skipped
    if scheduler:
        n_threads = threads or spec.mapper_options.get("threads") or 1
    elif workers == 0:
        n_threads = threads or spec.mapper_options.get("threads") or available_cores()
    else:
        workers, n_threads = plan_parallelism(len(points), workers, threads, spec.mapper_options.get("threads"))
    for p in points:
        if kind.solver_threads and "threads" not in p.get("mapper_options", {}) and _takes_threads(p["mapper"]):
            p["threads"] = int(n_threads)
    try:
        with _stop_on_signals():
            _run_points(points, record, workers, scheduler)
    except SweepInterrupted as stop:
        stop.output, stop.finished = out, record.finished
        raise
    _sort_table(out, [p["key"] for p in every])
    return out, total, skipped


def _run_points(points: list[dict], record: Callable[[dict], None], workers: int | None,
                scheduler: str | None, run: Callable[[dict], dict] | None = None) -> None:
    """Run ``points`` here (``workers`` 0), on local processes or on a Dask scheduler, calling ``record`` with each
    row; ``run`` (a module-level function, default :func:`run_point`) makes a point's row. Each point has a
    ``key`` and ``settings`` (the Dask task's key). Local processes: at most one per point.

    Raises:
        InputError: more than :data:`MAX_WORKERS` workers; no Dask (or no scheduler at the address).
    """
    run = run or run_point
    if workers is not None and workers > MAX_WORKERS:
        raise InputError(f"--workers {workers}: at most {MAX_WORKERS} local worker processes")
    if scheduler:
        try:
            from distributed import Client
            from distributed import as_completed as dask_completed
        except ImportError:
            raise InputError("--scheduler needs dask.distributed: pip install 'hetsim[dask]'") from None
        try:
            client = Client(scheduler, timeout="10s")
        except OSError as err:
            raise InputError(f"cannot reach the Dask scheduler at {scheduler}: {err}") from None
        with client:
            keys = [f"hetsim-{hashlib.sha1(json.dumps([p['key'], p['settings']]).encode()).hexdigest()[:16]}"
                    for p in points]
            futures = client.map(run, points, key=keys)
            try:
                for fut in dask_completed(futures):
                    record(fut.result())
            except BaseException:
                client.cancel(futures)
                raise
    elif workers == 0:
        for p in points:
            row = run(p)
            _restore_handlers()  # a CP-SAT solve resets SIGINT to the default (ortools' SigintHandler)
            record(row)
    else:
        pool = ProcessPoolExecutor(max_workers=max(1, min(workers or os.cpu_count() or 1, len(points))),
                                   initializer=_worker_init, initargs=(os.getpid(),))
        try:
            futures = [pool.submit(run, p) for p in points]
            for fut in as_completed(futures):
                record(fut.result())
        except BaseException:
            _stop_pool(pool)
            raise
        pool.shutdown()


def run_point(point: dict) -> dict:
    """Run one design point the way its workload kind runs points (:meth:`hetsim.dse.points.SweepKind.run_point`:
    through :func:`hetsim.pipeline.run`, the function behind ``hetsim run``); returns its result row (``error``
    set, numbers empty, when it failed)."""
    from hetsim.kinds import workload_kind

    return workload_kind(point["kind"]).sweep.run_point(point)


def _duration(s: float) -> str:
    s = round(s)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def format_progress(done: int, total: int, elapsed_s: float) -> str:
    """``12/128 points, 0.8 points/s, ETA 2m25s`` (the rate so far; no rate or ETA before the first point)."""
    line = f"{done}/{total} points"
    if done and elapsed_s > 0:
        rate = done / elapsed_s
        shown = f"{rate:.2g} points/s" if rate >= 0.1 else f"{rate * 60:.2g} points/min"
        line += f", {shown}, " + ("done" if done >= total else f"ETA {_duration((total - done) / rate)}")
    return line
