"""A run's output folder written whole or not at all.

``hetsim run --out DIR`` writes eight files. Written one by one into ``DIR``, a run that fails midway (a full
disk, an error in a figure) or is killed leaves a folder describing two runs (the new files beside the earlier
run's) or a partial set with nothing marking it incomplete. :func:`staged_folder` has the writers fill a
temporary sibling folder, ``.DIR.hetsim-new-XXXX`` beside ``DIR``, and only when every file is written swaps it
in:

* ``DIR`` missing: one :func:`os.rename` of the staging folder;
* ``DIR`` present (``--force``): the files of ``DIR`` that no run writes (the user's own notes, say) are
  hard-linked (copied where links fail) into the staging folder, then
  the two folders are exchanged in one step (Linux ``renameat2(RENAME_EXCHANGE)``); where that call is missing,
  ``DIR`` is renamed aside to ``.DIR.hetsim-old-XXXX`` and the staging folder renamed in its place (two renames:
  a crash between them leaves the earlier run whole under the aside name). The earlier folder is then removed.

On an error or a signal (``BaseException``) in the block the staging folder is removed and ``DIR`` is untouched.
A ``kill -9`` leaves at most a hidden ``.DIR.hetsim-new-*`` folder beside ``DIR`` (never a file inside it), which
the next run into ``DIR`` removes.

One run writes ``DIR`` at a time: :func:`staged_folder` holds an exclusive ``flock`` on ``.DIR.hetsim-lock``
beside it (removed when it is done; the operating system releases it when its holder dies) from before it removes
stale staging folders until the swap is done, so a second run writing ``DIR`` meanwhile is refused in one line
instead of removing the first's staging folder as stale.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from hetsim.files import OutputPathError

_NEW, _OLD, _LOCK = ".hetsim-new-", ".hetsim-old-", ".hetsim-lock"
#: the hidden list, in a run folder, of the files that run wrote (one name per line)
MANIFEST = ".hetsim-files"
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _libc():
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        return libc.renameat2
    except (OSError, AttributeError):
        return None


def _exchange(a: Path, b: Path) -> bool:
    """Swap the names ``a`` and ``b`` atomically (Linux ``renameat2``); False where the call is missing."""
    fn = _libc()
    if fn is None:
        return False
    r = fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    if r == 0:
        return True
    err = ctypes.get_errno()
    if err in (22, 38, 95):  # EINVAL, ENOSYS, EOPNOTSUPP: the file system or kernel cannot exchange
        return False
    raise OSError(err, os.strerror(err), str(b))


def _carry_over(old: Path, new: Path, owned: set[str]) -> None:
    """Link (or copy) into ``new`` every entry of ``old`` that ``new`` does not have and a run does not own."""
    for entry in old.iterdir():
        dst = new / entry.name
        if entry.name in owned or dst.exists() or dst.is_symlink():
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.copytree(entry, dst, symlinks=True, copy_function=_link_or_copy)
        else:
            _link_or_copy(entry, dst)


def _link_or_copy(src, dst) -> None:
    try:
        os.link(src, dst, follow_symlinks=False)
    except OSError:
        shutil.copy2(src, dst, follow_symlinks=False)


def _remove_stale(out: Path) -> None:
    """Staging folders a killed run left beside ``out``."""
    with contextlib.suppress(OSError):
        for entry in out.parent.iterdir():
            if entry.name.startswith(f".{out.name}{_NEW}") or entry.name.startswith(f".{out.name}{_OLD}"):
                shutil.rmtree(entry, ignore_errors=True)


@contextlib.contextmanager
def _one_writer(out: Path) -> Iterator[None]:
    """Hold the exclusive lock on writing the run folder ``out`` for the block (module docstring); where
    ``flock`` is missing (Windows), none.

    Raises:
        OutputPathError: another process holds it, or the lock file cannot be created beside ``out``.
    """
    try:
        import fcntl
    except ImportError:
        yield
        return
    path = out.parent / f".{out.name}{_LOCK}"
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as err:
            raise OutputPathError(f"cannot write {str(out)!r}: {err.strerror or err}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise OutputPathError(f"{str(out)!r} is being written by another hetsim run at this moment; wait for "
                                  "it to end or give another --out") from None
        try:  # the lock file is still the one at ``path`` (its last holder removes it when done)
            held = os.path.samestat(os.fstat(fd), os.stat(path))
        except OSError:
            held = False
        if held:
            break
        os.close(fd)
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
        os.close(fd)


def _mode_for(out: Path) -> int:
    if out.is_dir():
        return out.stat().st_mode & 0o7777
    umask = os.umask(0)
    os.umask(umask)
    return 0o777 & ~umask


def earlier_run_files(out: Path, legacy: Iterable[str] = ()) -> set[str]:
    """The files the run in folder ``out`` wrote: the names its :data:`MANIFEST` lists; for a folder an older
    hetsim wrote (a ``summary.json``, no list), those of ``legacy`` it holds; none in a folder no run wrote."""
    try:
        return {n for n in (out / MANIFEST).read_text(encoding="utf-8").splitlines() if n and "/" not in n}
    except (OSError, UnicodeDecodeError):
        pass
    if (out / "summary.json").is_file():
        return {n for n in legacy if (out / n).exists()}
    return set()


@contextlib.contextmanager
def staged_folder(out: str | os.PathLike, owned: Iterable[str] = (), legacy: Iterable[str] = (),
                  check: Callable[[], None] | None = None) -> Iterator[Path]:
    """Yield an empty staging folder beside ``out``; when the block succeeds, swap it in as ``out`` whole
    (module docstring), else remove it and leave ``out`` as it was. ``owned``: the names of the files this run
    writes; they and the earlier run's files (:func:`earlier_run_files`, with ``legacy`` for a folder without
    the list) are not carried over, so the folder never mixes two runs, while the user's own files are. The
    staging folder gets the list of what the block wrote (:data:`MANIFEST`). ``check`` is called once the
    lock on ``out`` is held, before anything is staged: a caller's refusal to replace an earlier run (without
    ``--force``) then also holds against a run that finished into ``out`` after the caller first looked.

    Raises:
        OutputPathError: the staging folder cannot be created, or the swap fails (permission, full disk); ``out``
            is then as it was before. Another run is writing ``out`` at this moment (:func:`_one_writer`).
        Whatever ``check`` raises.
    """
    out = Path(out)
    parent = out.parent if str(out.parent) else Path(".")
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise OutputPathError(f"cannot write {str(out)!r}: {err.strerror or err}") from None
    with _one_writer(out):  # a staging folder beside out is then no other run's
        if check is not None:
            check()
        _remove_stale(out)
        try:
            stage = Path(tempfile.mkdtemp(prefix=f".{out.name}{_NEW}", dir=parent))
        except OSError as err:
            raise OutputPathError(f"cannot write {str(out)!r}: {err.strerror or err}") from None
        try:
            yield stage
            (stage / MANIFEST).write_text("".join(f"{p.name}\n" for p in sorted(stage.iterdir())),
                                          encoding="utf-8")
            os.chmod(stage, _mode_for(out))
            _swap_in(stage, out, set(owned) | earlier_run_files(out, legacy) | {MANIFEST})
        except BaseException:
            shutil.rmtree(stage, ignore_errors=True)
            raise


def _swap_in(stage: Path, out: Path, owned: set[str]) -> None:
    try:
        if not out.exists():
            with contextlib.suppress(FileExistsError, OSError):
                os.rename(stage, out)  # fails when out appeared meanwhile: exchanged below
            if not stage.exists():
                return
        _carry_over(out, stage, owned)
        if _exchange(stage, out):
            shutil.rmtree(stage, ignore_errors=True)  # the earlier run, now under the staging name
            return
        aside = Path(tempfile.mkdtemp(prefix=f".{out.name}{_OLD}", dir=out.parent))
        os.rmdir(aside)
        os.rename(out, aside)
        try:
            os.rename(stage, out)
        except OSError:
            os.rename(aside, out)  # put the earlier run back
            raise
        shutil.rmtree(aside, ignore_errors=True)
    except OSError as err:
        raise OutputPathError(f"cannot write {str(out)!r}: {err.strerror or err}; the folder holds the "
                              "earlier run's files, unchanged") from None
