"""A sweep's results table: one CSV row per point, appended as each point finishes, resumable after a kill.

Every finished point is appended at once as one line (:func:`_append`: a single ``write`` and ``fsync``, SIGINT
and SIGTERM held meanwhile, :func:`_signals_held`); a torn last line from a kill is dropped when the table is read
again (:func:`_read_table`), and an older hetsim's JSON keys are rewritten then. :func:`_reconcile` keeps the rows
computed under today's settings, moves the others to ``<name>.replaced.csv`` and brings an older table to today's
columns (its schema migration); :func:`_sort_table` puts the finished table in the sweep's point order. One
writer per table: :mod:`hetsim.dse.lock`. Nothing here knows a workload kind: the columns, the settings columns
and the added columns come from the sweep's kind (:class:`hetsim.dse.points.SweepKind`).
"""

from __future__ import annotations

import csv
import io
import os
import signal
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from hetsim.dse.points import _key_from_json
from hetsim.errors import InputError


def _read_table(path: Path) -> tuple[list[str] | None, list[dict]]:
    """The results table's columns and rows (``None, []`` when there is none); drops a torn last line left by a
    kill, and rewrites the JSON keys of an older hetsim's table in today's form (:func:`point_key`).

    Raises:
        InputError: the table mixes JSON keys with keys that are not an older hetsim's.
    """
    if not path.exists() or path.stat().st_size == 0:
        return None, []
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        with path.open("r+b") as f:
            f.truncate(data.rfind(b"\n") + 1)
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        columns, rows = reader.fieldnames, list(reader)
    if any(r.get("key", "").startswith("[") for r in rows):
        new = [_key_from_json(r["key"]) if r.get("key", "").startswith("[") else r.get("key") for r in rows]
        bad = [r["key"] for r, k in zip(rows, new, strict=True) if k is None and r.get("key")]
        if bad:
            raise InputError(f"{path}: key {bad[0]!r} is neither a point key nor an older hetsim's JSON key; "
                             "choose another output")
        for r, k in zip(rows, new, strict=True):
            r["key"] = k
        _write_rows(path, columns, rows)
    return columns, rows


def _reconcile(path: Path, settings: list[str], columns: list[str], every: list[dict],
               notify: Callable[[str], None], added_columns: Mapping[str, Callable | None] | None = None) -> set[str]:
    """The keys of the points already in the table at ``path`` under the settings they would be computed
    under now. Rows of this sweep's points computed under other settings are taken out of the table and
    appended to ``<name>.replaced.csv`` beside it (``notify`` says how many and which settings changed), so
    they are recomputed; rows of points no longer in the sweep stay. An older hetsim's table, without the
    settings columns, gets them (its rows: settings unknown, so recomputed). ``settings``: the columns that hold
    a row's settings (:func:`settings_columns`; a scenario sweep's, :mod:`hetsim.dse.scenario_sweep`), each point
    of ``every`` has them under ``settings``. ``added_columns``: result columns added since older tables were
    written (:attr:`hetsim.dse.points.SweepKind.added_columns`): such a table gets them, and its rows are
    recomputed, unless a column's function gives the value the row implies.

    Raises:
        InputError: the table has other columns (another sweep's table; the same columns in another order are
            accepted and the table rewritten in ``columns``' order).
    """
    header, rows = _read_table(path)
    if header is None:
        return set()
    implies = dict(added_columns or {})
    added = [c for c in implies if c in columns and c not in header]  # a table from before they were added
    if header != columns:
        # an older hetsim's table: without the settings columns, or without some (fold_constants), or without
        # the result columns added since; its columns in any order (rows are read by name and written back in
        # today's order); a repeated column name is another table
        if len(set(header)) != len(header) or set(header) != {
                c for c in columns if (c not in settings and c not in added) or c in header}:
            raise InputError(f"{path} holds a results table with other columns; choose another output")
        for r in rows:  # settings not recorded: recomputed
            r.update({c: "" for c in settings if c not in header})
    want = {p["key"]: p["settings"] for p in every}
    keep, stale, changed = [], [], set()
    for r in rows:
        now = want.get(r.get("key"))
        diff = [] if now is None else [c for c in settings if (r.get(c) or "") != str(now[c])]
        if now is not None and added and not diff:
            implied = {c: implies[c](r) if implies[c] is not None else None for c in added}
            if any(v is None for v in implied.values()):
                diff = ["columns"]  # computed before the added columns existed
            else:
                r.update(implied)
        (stale if diff else keep).append(r)
        changed.update(diff)
    if stale:
        replaced = path.with_name(f"{path.stem}.replaced{path.suffix or '.csv'}")
        old_header, old = _read_table(replaced)
        _write_rows(replaced, columns, (old if old_header is not None and sorted(old_header) == sorted(columns)
                                        else []) + stale)
        _write_rows(path, columns, keep)
        unknown = all(not any(r.get(c) for c in settings) for r in stale)
        n = len(stale)
        if unknown or changed - {"columns"}:
            why = ("their settings are not recorded (an older hetsim's table)" if unknown
                   else "changed " + ", ".join(c for c in settings if c in changed))
            what = f"{n} point{'s' if n != 1 else ''} changed settings ({why})"
        else:
            what = (f"{n} point{'s' if n != 1 else ''} computed by an older hetsim, without the columns "
                    + ", ".join(added))
        notify(f"{what}: recomputed; {'their old rows are' if n != 1 else 'its old row is'} in {replaced}")
    elif header != columns:
        _write_rows(path, columns, keep)
    return {r["key"] for r in keep if r.get("key")}


def _append(path: Path, columns: list[str], row: dict) -> None:
    """Append ``row`` as one line with one ``write`` and ``fsync``; SIGINT and SIGTERM wait until it is
    written (:func:`_signals_held`)."""
    new = not path.exists() or path.stat().st_size == 0
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    if new:
        w.writeheader()
    w.writerow(row)
    with _signals_held(), path.open("a", newline="") as f:
        f.write(buf.getvalue())
        f.flush()
        os.fsync(f.fileno())


#: the main thread's :func:`_signals_held` depth, and a stop signal the sweep's handler deferred meanwhile
_held: dict = {"depth": 0, "deferred": None}


@contextmanager
def _signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM wait until the block ends (in the main thread; nested blocks hold them until the
    outermost ends). Blocking them in the main thread is not enough: the kernel then delivers them to another
    thread (a process pool's manager thread), and Python runs the handler in the main thread anyway, inside the
    block; so the sweep's handler (:func:`_stop_on_signals`) defers a signal that arrives in the block, and the
    block's end raises it again (seen: a row appended but not counted in "N points finished this run")."""
    main = threading.current_thread() is threading.main_thread()
    mask = main and hasattr(signal, "pthread_sigmask")
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS) if mask else None
    if main:
        _held["depth"] += 1
    unwinding = False
    try:
        yield
    except BaseException:
        unwinding = True  # the block's own error (a full disk) stops the sweep and is the one reported
        raise
    finally:
        if mask:  # a signal pending on this thread is handled here, still held (deferred) by the depth
            signal.pthread_sigmask(signal.SIG_SETMASK, old)
        if main:
            _held["depth"] -= 1
        if main and not _held["depth"] and _held["deferred"] is not None:
            signum, _held["deferred"] = _held["deferred"], None
            if not unwinding:
                signal.raise_signal(signum)


class _Recorder:
    """The ``record`` a sweep's runner calls with each finished row (both sweeps: this module's and
    :mod:`hetsim.dse.scenario_sweep`): appends it (:func:`_append`) and counts it in ``finished``, a signal held
    until both are done (so ``finished`` is the rows this run put in the table), then calls
    ``progress(finished, total, row)``.

    Raises:
        InputError: the row cannot be appended (disk full, the folder made read-only mid-sweep).
    """

    def __init__(self, out: Path, columns: list[str], total: int,
                 progress: Callable[[int, int, dict], None] | None) -> None:
        self.out, self.columns, self.total, self.progress = out, columns, total, progress
        self.finished = 0

    def __call__(self, row: dict) -> None:
        with _signals_held():
            try:
                _append(self.out, self.columns, row)
            except OSError as err:
                raise InputError(f"cannot append to {self.out}: {err.strerror or err}; the points finished before "
                                 "are in it") from None
            self.finished += 1
        if self.progress:
            self.progress(self.finished, self.total, row)


_STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}


def _sort_table(path: Path, order: list[str]) -> None:
    """Rewrite the finished table in the sweep's point order (atomically), so the file does not depend on
    which worker finished first."""
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        columns, rows = reader.fieldnames, list(reader)
    rank = {k: i for i, k in enumerate(order)}
    rows.sort(key=lambda r: rank.get(r["key"], len(rank)))
    _write_rows(path, columns, rows)


def _write_rows(path: Path, columns: list[str], rows: list[dict]) -> None:
    """Replace the table at ``path`` with ``rows`` (atomically)."""
    from hetsim.report.export import atomic_write_text

    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    atomic_write_text(path, buf.getvalue())
