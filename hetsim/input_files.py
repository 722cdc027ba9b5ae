"""Opening a file the user named, safely: one place that refuses what is not a regular file before it is opened.

A path may name a FIFO (reading waits forever for a writer), a character device (``/dev/zero`` never ends), a
folder, a socket, a symbolic link that loops, or a file far larger than any input of its kind. Every user-facing
reader of hetsim goes through :func:`check_input_file` (for a library that opens the path itself: ONNX Runtime,
pandas, h5py, numpy) or reads through :func:`read_input_bytes` / :func:`read_input_text`, which also hold the
size to a cap per kind of file and, for text, require UTF-8.

The checks follow symbolic links (a link to a regular file is that file); the file is opened non-blocking and
checked again on the open descriptor, so a path swapped for a FIFO between the check and the open cannot hang.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from hetsim.errors import InputError

KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30

#: caps per kind of input file (bytes): far above any real input of the kind, far below what exhausts memory
MAX_TEXT_TABLE_BYTES = 256 * MIB  # CSV tables: arrival traces (10^7 rows), latency tables, profiles, results
MAX_JSON_BYTES = 256 * MIB  # schedules, channel-split exports, profiler traces
MAX_MODEL_BYTES = 2 * GIB  # ONNX models (protobuf's own limit), .pt2 programs, PyTorch checkpoints, NIR graphs


def _kind(mode: int) -> str | None:
    """What a file that is not a regular file is, in words (``None`` for a regular file)."""
    if stat.S_ISREG(mode):
        return None
    for test, words in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                        (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                        (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return words
    return "a special file"


def _size(n: int) -> str:
    """``n`` bytes in words: ``1 MiB``, ``2 GiB``, ``1,000 bytes``."""
    for unit, name in ((GIB, "GiB"), (MIB, "MiB"), (KIB, "KiB")):
        if n >= unit and n % unit == 0:
            return f"{n // unit} {name}"
    return f"{n:,} bytes"


def _refusal(path: Path, what: str, why: str) -> str:
    return f"{what} {str(path)!r} {why}"


def check_input_file(path: str | os.PathLike, what: str, error: type[InputError] = InputError,
                     max_bytes: int | None = None) -> Path:
    """Check that ``path`` names a regular file (after following symbolic links) of at most ``max_bytes``.

    Args:
        path: the file the user named.
        what: what it is, for the message (``"arrival trace"``, ``"ONNX model"``).
        error: the :class:`~hetsim.errors.InputError` subclass raised.
        max_bytes: the size cap (``None``: none).

    Returns:
        ``path`` as a :class:`~pathlib.Path` (not resolved: messages keep the user's spelling).

    Raises:
        error: the path does not exist, is a symbolic link loop, is a folder, a FIFO, a device or a socket, cannot
            be examined (permissions), or is larger than ``max_bytes``; one line naming the path.
    """
    p = Path(path)
    st = _stat(p, what, error)
    kind = _kind(st.st_mode)
    if kind is not None:
        raise error(_refusal(p, what, f"is {kind}, not a regular file"))
    if max_bytes is not None and st.st_size > max_bytes:
        raise error(_refusal(p, what, f"is larger than {_size(max_bytes)} ({st.st_size:,} bytes), the most hetsim "
                                      f"reads of a {what}"))
    return p


def refuse_special_file(path: str | os.PathLike, what: str, error: type[InputError] = InputError) -> None:
    """Refuse a path that names a FIFO, a device, a socket or a symbolic link loop: what no reader may open.

    For a generic step that hands a path on to a reader that may take a folder or report a missing file in its
    own words (a front end): a missing path and a folder pass.

    Raises:
        error: the path is a FIFO, a character or block device, a socket, or a symbolic link loop.
    """
    p = Path(path)
    try:
        st = os.stat(p)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise error(_refusal(p, what, _stat_failure(err))) from None
        return
    kind = _kind(st.st_mode)
    if kind is not None and not stat.S_ISDIR(st.st_mode):
        raise error(_refusal(p, what, f"is {kind}, not a regular file"))


def _stat(p: Path, what: str, error: type[InputError]) -> os.stat_result:
    try:
        return os.stat(p)
    except OSError as err:
        raise error(_refusal(p, what, _stat_failure(err))) from None


def _stat_failure(err: OSError) -> str:
    if err.errno == errno.ENOENT:
        return "does not exist"
    if err.errno == errno.ELOOP:
        return "is a symbolic link loop"
    if err.errno == errno.ENOTDIR:
        return "does not exist (a part of the path is not a folder)"
    if err.errno == errno.ENAMETOOLONG:
        return "is too long a path"
    return f"cannot be read: {err.strerror or err}"


def read_input_bytes(path: str | os.PathLike, what: str, max_bytes: int,
                     error: type[InputError] = InputError) -> bytes:
    """The bytes of the regular file ``path``, at most ``max_bytes`` of them.

    The path is checked (:func:`check_input_file`), opened non-blocking (a FIFO swapped in after the check does not
    hang the open) and checked again on the open file, and at most ``max_bytes + 1`` bytes are read (a file that
    grew past the cap is refused, not read to its end).

    Raises:
        error: see :func:`check_input_file`; the file cannot be opened or read; it is larger than ``max_bytes``.
    """
    p = check_input_file(path, what, error, max_bytes)
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as err:
        raise error(_refusal(p, what, _stat_failure(err))) from None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        kind = _kind(st.st_mode)
        if kind is not None:
            raise error(_refusal(p, what, f"is {kind}, not a regular file"))
        try:
            data = _read_at_most(f, max_bytes + 1, st.st_size)
        except OSError as err:
            raise error(_refusal(p, what, f"cannot be read: {err.strerror or err}")) from None
    if len(data) > max_bytes:
        raise error(_refusal(p, what, f"is larger than {_size(max_bytes)}, the most hetsim reads of a {what}"))
    return data


def _read_at_most(f, limit: int, size: int) -> bytes:
    """At most ``limit`` bytes of ``f``, whose size was ``size`` when opened (a buffer of its size, not of the cap;
    then in 1 MiB chunks if it grew)."""
    parts = [f.read(min(limit, size + 1))]
    total = len(parts[0])
    while total < limit:
        chunk = f.read(min(MIB, limit - total))
        if not chunk:
            break
        parts.append(chunk)
        total += len(chunk)
    return b"".join(parts) if len(parts) > 1 else parts[0]


def read_input_text(path: str | os.PathLike, what: str, max_bytes: int = MAX_TEXT_TABLE_BYTES,
                    error: type[InputError] = InputError) -> str:
    """The text of the regular file ``path``: UTF-8 (a byte-order mark is dropped), at most ``max_bytes``.

    Raises:
        error: see :func:`read_input_bytes`; the bytes are not UTF-8 text (binary, or another encoding such as
            Latin-1: the message gives the offset of the first bad byte), or hold a NUL byte.
    """
    data = read_input_bytes(path, what, max_bytes, error)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        bad = data[err.start:err.start + 1]
        raise error(_refusal(Path(path), what, f"is not UTF-8 text (byte {err.start} is {bad!r}: binary, or another "
                                               "encoding such as Latin-1; save it as UTF-8)")) from None
    if "\x00" in text:
        raise error(_refusal(Path(path), what, f"is not text (a NUL byte at offset {text.index(chr(0))})"))
    return text


def resolved_path(path: str | os.PathLike, what: str, error: type[InputError] = InputError) -> Path:
    """``path`` made absolute with its symbolic links followed (:meth:`pathlib.Path.resolve`, not strict: a
    missing file is left for its reader to report).

    Raises:
        error: ``path`` is a symbolic link loop (``Path.resolve`` raises ``RuntimeError`` for one before Python
            3.13, ``OSError`` after), one line naming it.
    """
    p = Path(path)
    try:
        return p.resolve()
    except (RuntimeError, OSError):
        raise error(_refusal(p, what, "is a symbolic link loop")) from None


def csv_rows(lines, where: str, error: type[InputError] = InputError, first_line: int | None = 1,
             reader=None) -> list:
    """The rows of CSV text (``lines``: an iterable of its lines) by :func:`csv.reader` (or ``reader``, e.g.
    :class:`csv.DictReader`).

    Raises:
        error: the CSV module refuses a line (a field longer than its limit of 131,072 characters), one line
            naming ``where`` and the line number (``first_line``: the number of the first line given; ``None``
            when the lines given are not the file's own, some left out: no number).
    """
    import csv

    rows = (reader or csv.reader)(lines)
    try:
        return list(rows)
    except csv.Error as err:
        at = "" if first_line is None else f"line {first_line + rows.line_num - 1}: "
        raise error(f"{where}: {at}not a CSV row: {err}") from None
