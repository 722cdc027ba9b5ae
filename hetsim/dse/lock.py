"""One writer per results table: the exclusive lock a sweep holds on its output for the whole run.

Two sweeps appending to one table at once would each skip only the points finished before they started, so
both compute (and append) the rest: duplicated rows, and a rewrite of one (moving rows to ``.replaced.csv``,
sorting the finished table) drops rows the other appended in between. :func:`results_lock` takes an exclusive
lock (``filelock``: ``flock`` on Unix, ``LockFileEx`` on Windows) on a hidden file beside the table,
``.<name>.lock``, before the table is read, and holds it until the sorted table is written; a second sweep on
the same table is refused at once, in one line naming the holder (its process id, host, start time and
command, from ``.<name>.lock.holder``, written by the holder and removed when it ends). The operating system
releases the lock when the holder dies, even by SIGKILL, so a killed sweep never blocks the next one.

The lock is taken on the file, not on the name the user gave: a table given through a symbolic link is resolved
to its target (:func:`resolve_table`), which the sweep then reads, appends to and rewrites (the link stays a
link), and the lock file sits beside the target, so every spelling of one file (a symlink, ``a/../t.csv``, a
symlinked folder) meets one lock file. A table that already exists is also locked itself (``flock`` on its
inode, Unix): a hard link, another name of the same inode, finds it held and is refused too.

:func:`check_output` refuses an output that cannot be a results table (a folder, a path under a file, a folder
hetsim cannot create or write in) before anything runs.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hetsim.errors import InputError


def resolve_table(out: Path) -> Path:
    """The file a results table named ``out`` is: ``out`` itself unless it (or a folder on its way) is a
    symbolic link, else the link's target (``os.path.realpath``; a link to a missing file: the file it names).

    Raises:
        InputError: ``out`` is a symbolic link loop.
    """
    real = Path(os.path.realpath(out))
    if real.is_symlink():  # realpath gives up on a loop and returns a link
        raise InputError(f"output {str(out)!r} is a symbolic link loop")
    return out if real == Path(os.path.abspath(out)) else real


def lock_paths(out: Path) -> tuple[Path, Path]:
    """``(lock file, holder file)`` of the results table ``out``."""
    return out.with_name(f".{out.name}.lock"), out.with_name(f".{out.name}.lock.holder")


def check_output(out: Path) -> None:
    """Refuse a results-table path that cannot be written, creating its folder if needed.

    Raises:
        InputError: ``out`` is a folder or not a regular file, its folder is a file or cannot be created.
    """
    if out.is_dir():
        raise InputError(f"output {str(out)!r} is a folder; give a results file, e.g. {str(out / 'results.csv')!r}")
    if out.exists() and not out.is_file():
        raise InputError(f"output {str(out)!r} is not a regular file")
    for parent in (out.parent, *out.parent.parents):
        if parent.exists():
            if not parent.is_dir():
                raise InputError(f"output {str(out)!r}: {str(parent)!r} is a file, not a folder")
            break
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise InputError(f"output {str(out)!r}: cannot create the folder {str(out.parent)!r}: "
                         f"{err.strerror or err}") from None


def _holder(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        text = ""
    return text or "a process that has not yet said who it is"


def _lock_inode(out: Path, table: Path) -> int | None:
    """An open descriptor of the existing table ``table`` holding ``flock(LOCK_EX)`` on it (``None``: no table
    yet, or no ``flock`` on this system), for :func:`results_lock`.

    Raises:
        InputError: another process holds it: a sweep writing the same file under another name (a hard link).
    """
    try:
        import fcntl
    except ImportError:  # Windows: the lock file beside the table only
        return None
    try:
        fd = os.open(table, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:  # none yet (check_output refused what is not a regular file)
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise InputError(f"{out} is the same file as a table another sweep is writing under another name (a hard "
                         "link); wait for it to end or give another output (-o)") from None
    return fd


@contextmanager
def results_lock(out: Path) -> Iterator[Path]:
    """Hold the exclusive lock on the results table ``out`` for the block (module docstring); the block gets the
    file to read and write: ``out``, or its target when ``out`` is a symbolic link (:func:`resolve_table`).

    Raises:
        InputError: another process holds it (the message names the holder), or the same file under another name
            (a hard link); ``out`` is a symbolic link loop; the lock file cannot be created in the table's folder
            (read-only folder or file system: the table could not be written either).
    """
    from filelock import FileLock, Timeout

    table = resolve_table(out)
    lock_file, holder_file = lock_paths(table)
    try:  # the folder's own refusal (read-only, no permission) in the message, not a lock timeout
        os.close(os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o644))
    except OSError as err:
        raise InputError(f"output {str(out)!r}: cannot write in the folder {str(out.parent)!r}: "
                         f"{err.strerror or err}") from None
    lock = FileLock(str(lock_file), timeout=0, thread_local=False)
    try:
        lock.acquire()
    except Timeout:
        raise InputError(f"{out} is being written by another sweep ({_holder(holder_file)}); wait for it to end "
                         "or give another output (-o)") from None
    except OSError as err:
        raise InputError(f"output {str(out)!r}: cannot write in the folder {str(out.parent)!r}: "
                         f"{err.strerror or err}") from None
    try:
        inode = _lock_inode(out, table)
    except BaseException:
        lock.release()
        raise
    try:
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime())
        command = " ".join(sys.argv) if sys.argv and sys.argv[0] else "python"
        try:
            holder_file.write_text(f"process {os.getpid()} on {socket.gethostname()}, since {started}: "
                                   f"{command[:200]}", encoding="utf-8")
        except OSError as err:
            raise InputError(f"output {str(out)!r}: cannot write in the folder {str(out.parent)!r}: "
                             f"{err.strerror or err}") from None
        yield table
    finally:
        try:
            holder_file.unlink(missing_ok=True)
        finally:
            if inode is not None:
                os.close(inode)
            lock.release()
