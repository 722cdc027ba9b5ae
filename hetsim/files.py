"""Writing files atomically, and the checks before a run that writes some.

Every artefact hetsim writes is written atomically (:func:`atomic_path`, :func:`atomic_write_text`,
:func:`atomic_write_bytes`): to a temporary file in the target's directory, flushed to disk (``fsync``), then
renamed over the target with :func:`os.replace`. A reader never sees a half-written file and a failing writer
leaves the target as it was. A folder of several files is swapped in whole by :mod:`hetsim.report.run_folder`.
:func:`check_output_file` and :func:`check_writable` refuse, before any work, an output that could not be
written or would replace a file without ``--force``. A base module: it imports nothing of hetsim but its errors.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from hetsim.errors import InputError, OutputExistsError


class OutputPathError(InputError):
    """An output location that cannot be written (permission denied, a read-only or virtual file system such as
    ``/proc``, a file where a folder is needed, a full disk). CLI exit code 2, one line naming the path."""


#: errno values of a write that fails because of where it goes (not a bug in the writer)
LOCATION_ERRNOS = frozenset(getattr(errno, n) for n in (
    "EACCES", "EPERM", "EROFS", "ENOSPC", "EDQUOT", "ENOENT", "ENOTDIR", "EISDIR", "EEXIST", "ENAMETOOLONG",
    "ELOOP", "EXDEV", "EFBIG", "EINVAL") if hasattr(errno, n))


def output_error(path: str | os.PathLike, err: OSError) -> OutputPathError:
    """The one-line refusal for an :class:`OSError` met while writing ``path``."""
    why = err.strerror or str(err)
    where = f" ({err.filename})" if err.filename and str(err.filename) != str(path) \
        and not Path(str(err.filename)).name.startswith(f".{Path(path).name}.") else ""
    return OutputPathError(f"cannot write {str(path)!r}: {why}{where}")


def make_dirs(directory: str | os.PathLike, for_path: str | os.PathLike | None = None) -> Path:
    """Create ``directory`` and its missing parents (a no-op when it exists).

    Raises:
        OutputPathError: it cannot be created (a file on the way, permission denied, ``/proc``, ...); the
            message names ``for_path`` (default ``directory``).
    """
    d = Path(directory)
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise output_error(for_path if for_path is not None else d, err) from None
    return d


def _fsync_dir(directory: Path) -> None:
    """Best-effort fsync of a directory so that a rename in it is durable (no-op where unsupported)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _target_mode(path: Path) -> int:
    """Permission bits for the new file: the existing target's, else ``0o666`` minus the umask."""
    try:
        return path.stat().st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def refuse_special_output(path: Path, flag: str = "cannot write") -> None:
    """Refuse an output path that names a FIFO, a device or a socket (also through a symbolic link): a write
    with ``--force`` would replace it by a regular file (``/dev/null`` itself, for a run as root).

    Raises:
        OutputPathError: one line naming the path and what it is.
    """
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return
    kind = ("a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "a character device" if stat.S_ISCHR(mode)
            else "a block device" if stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode) else "a special file")
    raise OutputPathError(f"{flag} {str(path)!r}: it is {kind}, not a regular file; hetsim writes and replaces only "
                          "regular files")


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; on success move it into place atomically.

    The temporary file lives in the same directory and ends with the same suffix as ``path`` (so writers that
    pick a format from the suffix, such as ``fig.savefig``, behave as for ``path``). Hand it to any writer
    (``fig.savefig(tmp)``, ``df.to_csv(tmp)``). When the ``with`` block finishes without an exception the
    file is fsynced, given the target's permissions (or the umask default for a new file) and renamed over
    ``path`` with :func:`os.replace`. On an exception the temporary file is removed, ``path`` is untouched and
    the exception propagates. The folder must exist (writers create it first with :func:`make_dirs`).

    Raises:
        FileNotFoundError: the directory of ``path`` does not exist.
        OutputPathError: the location cannot be written: permission denied, a read-only or virtual file system,
            ``path`` is a folder, a FIFO, a device or a socket (:func:`refuse_special_output`), the disk is full
            (also when the writer in the ``with`` block meets one of these
            on the temporary file).
    """
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    if not directory.is_dir():
        raise FileNotFoundError(errno.ENOENT, "no such folder", str(directory))
    if target.is_dir():
        raise OutputPathError(f"cannot write {str(target)!r}: it is a folder")
    refuse_special_output(target)
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=f".tmp{target.suffix}", dir=directory)
    except OSError as err:
        raise output_error(target, err) from None
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.chmod(tmp, _target_mode(target))
        os.replace(tmp, target)
    except OSError as err:
        with contextlib.suppress(OSError):
            tmp.unlink()
        ours = err.filename is None or os.fspath(err.filename) in (tmp_name, str(tmp), str(target))
        if err.errno in LOCATION_ERRNOS and ours:  # not an input file the writer failed to read
            raise output_error(target, err) from None
        raise
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    _fsync_dir(directory)


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (temp file in the same directory, fsync, :func:`os.replace`).

    Returns:
        ``path`` as a :class:`~pathlib.Path`.
    """
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
    return Path(path)


def atomic_write_text(path: str | os.PathLike, text: str, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` atomically, encoded with ``encoding`` (UTF-8 by default).

    Returns:
        ``path`` as a :class:`~pathlib.Path`.
    """
    return atomic_write_bytes(path, text.encode(encoding))


def check_parent_dirs(path: Path) -> None:
    """Refuse a path whose existing ancestor is a file (it could never be created).

    Raises:
        OutputExistsError: an ancestor of ``path`` exists and is not a directory.
    """
    for parent in Path(path).absolute().parents:
        if parent.exists():
            if not parent.is_dir():
                raise OutputExistsError(f"cannot write {str(path)!r}: {str(parent)!r} is a file, not a directory")
            return


def check_writable(folder: Path, for_path: Path | None = None) -> None:
    """Refuse, before any work, a ``folder`` that cannot receive files: probe it (or, when it is missing, its
    nearest existing ancestor, where the missing folders would be created) by creating and removing a temporary
    file. Catches permission denied, read-only and virtual file systems (``/proc``, ``/sys``) alike.

    Raises:
        OutputExistsError: an existing ancestor is a file (:func:`check_parent_dirs`).
        OutputPathError: no file can be created there, or ``folder`` or ``for_path`` is a symbolic link loop; the
            message names ``for_path`` (default ``folder``).
    """
    for_path = Path(folder) if for_path is None else Path(for_path)
    for p in (for_path, Path(folder)):
        try:
            os.stat(p)
        except OSError as err:
            if err.errno == errno.ELOOP:
                raise OutputPathError(f"cannot write {str(for_path)!r}: {str(p)!r} is a symbolic link loop") from None
    check_parent_dirs(for_path)
    d = Path(folder).absolute()
    while not d.exists() and d != d.parent:
        d = d.parent
    try:
        fd, name = tempfile.mkstemp(prefix=".hetsim-probe.", dir=d)
    except OSError as err:
        raise OutputPathError(f"cannot write {str(for_path)!r}: no file can be created in {str(d)!r} "
                              f"({err.strerror or err})") from None
    os.close(fd)
    os.unlink(name)


def check_output_file(path: Path, force: bool, flag: str = "-o") -> None:
    """Refuse, before any work, an output file ``path`` that exists (without ``force``), is a folder, or whose
    folder cannot be created or written (:func:`check_writable`). Missing parent folders are created when the
    file is written (:func:`atomic_path`).

    Raises:
        OutputExistsError: ``path`` exists and ``force`` is false, or an ancestor is a file.
        OutputPathError: ``path`` is a folder, a FIFO, a device or a socket, or its folder cannot receive files.
    """
    path = Path(path)
    if path.is_dir():
        raise OutputPathError(f"{flag} {str(path)!r} is a folder; give a file path")
    refuse_special_output(path, flag)
    if path.exists() and not force:
        raise OutputExistsError(f"{str(path)!r} exists; pass --force to replace it")
    check_writable(path.parent if str(path.parent) else Path("."), path)
