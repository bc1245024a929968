"""A line file read safely: complete lines read back from the end, its first line, a torn last line told and cut."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, Final

from handoff_files.foundation.errors import HandoffError, HandoffTooLargeError
from handoff_files.foundation.safe_open import open_regular

__all__ = ["cut_torn_tail", "first_line", "lines_backwards", "read_backwards", "read_whole", "torn"]

# read a block at a time: a journal-first line (a whole document) can be megabytes long
_TAIL_BLOCK: Final = 64 * 1024


def torn(path: Path) -> bool:
    """Whether the file's last byte is not a newline (a line cut short).

    :param path: the line file; one that is missing, unreadable or not a regular file is not torn.
    :returns: True if its last line has no newline after it.
    """
    try:
        fd, st = open_regular(path, os.O_RDONLY, max_bytes=None)
    except HandoffError:
        return False
    try:
        return st.st_size > 0 and os.pread(fd, 1, st.st_size - 1) != b"\n"
    except OSError:
        return False
    finally:
        with contextlib.suppress(OSError):  # only read: a failed close loses nothing
            os.close(fd)


def read_backwards(path: Path, *, max_bytes: int, max_line: int) -> Iterator[bytes]:
    """Open *path* safely (:func:`open_regular`) and yield its lines newest first (:func:`lines_backwards`).

    The file is opened (and refused) now, before the first line is asked for.

    :raises HandoffNotFoundError: if it does not exist.
    :raises HandoffError: if it is not a regular file, is over *max_bytes*, or cannot be read.
    """
    fd, _ = open_regular(path, os.O_RDONLY, max_bytes=max_bytes)
    try:
        handle = os.fdopen(fd, "rb")
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.close(fd)
        msg = f"cannot read it: {exc.strerror or exc}"
        raise HandoffError(path, msg) from exc
    return _lines_of(path, handle, max_line)


def _lines_of(path: Path, handle: BinaryIO, max_line: int) -> Iterator[bytes]:
    try:
        with handle:
            yield from lines_backwards(handle, max_line=max_line)
    except OSError as exc:
        msg = f"cannot read it: {exc.strerror or exc}"
        raise HandoffError(path, msg) from exc


def read_whole(path: Path, *, max_bytes: int) -> bytes:
    """The bytes of a regular file of at most *max_bytes*, opened safely (:func:`open_regular`).

    :raises HandoffNotFoundError: if it does not exist.
    :raises HandoffError: if it is not a regular file, is over *max_bytes*, or cannot be read.
    """
    fd, st = open_regular(path, os.O_RDONLY, max_bytes=max_bytes)
    try:
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        msg = f"cannot read it: {exc.strerror or exc}"
        raise HandoffError(path, msg) from exc
    if len(data) > max_bytes:
        msg = f"grew past the {max_bytes:,}-byte limit while being read (it was {st.st_size:,} bytes)"
        raise HandoffTooLargeError(path, msg)
    return data


def first_line(path: Path, limit: int) -> bytes | None:
    """The file's first line (without its newline) if it ends within *limit* bytes; None if not, or unreadable."""
    try:
        fd, _ = open_regular(path, os.O_RDONLY, max_bytes=None)
    except HandoffError:
        return None
    try:
        head = os.read(fd, limit)
    except OSError:
        return None
    finally:
        with contextlib.suppress(OSError):  # only read: a failed close loses nothing
            os.close(fd)
    raw, newline, _ = head.partition(b"\n")
    return raw if newline else None


def cut_torn_tail(fd: int, size: int | None = None) -> bool:
    """Truncate a last line with no newline (a crash mid-append) so the next line starts clean.

    Writes, without syncing: the caller syncs (an append with the line it writes next).

    :param fd: the file, open for reading and writing.
    :param size: its size, if the caller has just looked (else ``fstat`` tells).
    :returns: whether there was a torn line to cut.
    :raises OSError: if the file cannot be read or truncated.
    """
    if size is None:
        size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return False
    end = size
    while end > 0:
        start = max(0, end - _TAIL_BLOCK)
        cut = os.pread(fd, end - start, start).rfind(b"\n")
        if cut >= 0:
            os.ftruncate(fd, start + cut + 1)
            return True
        end = start
    os.ftruncate(fd, 0)
    return True


def lines_backwards(handle: BinaryIO, *, max_line: int | None = None) -> Iterator[bytes]:
    """Yield complete lines from the end of a file, newest first, reading a block at a time.

    A torn last line (no newline after it) is not a line yet and is not yielded.

    :param handle: the file, open for binary reading.
    :param max_line: the longest line worth gathering: a longer one (no line this long was ever
        written whole: a sparse or planted file) is yielded cut to its first block, which no
        reader parses, so memory stays bounded by it. None: no bound.
    :returns: an iterator of the lines, without their newlines (empty lines are skipped).
    """
    handle.seek(0, os.SEEK_END)
    position = handle.tell()
    end = 0
    while position > 0:  # the logical end: just past the last newline
        size = min(_TAIL_BLOCK, position)
        position -= size
        handle.seek(position)
        found = handle.read(size).rfind(b"\n")
        if found >= 0:
            end = position + found + 1
            break
    # a line longer than a block (a journal-first document) is gathered in pieces and joined once
    pieces: list[bytes] = []
    position, gathered = end, 0
    while position > 0:
        size = min(_TAIL_BLOCK, position)
        position -= size
        handle.seek(position)
        lines = handle.read(size).split(b"\n")
        if len(lines) == 1:
            gathered += len(lines[0])
            # past the bound keep only the newest piece read (the line's start, once found): cut, not parsed
            pieces = [lines[0]] if max_line is not None and gathered > max_line else [*pieces, lines[0]]
            continue
        tail = b"".join([lines[-1], *reversed(pieces)])
        pieces, gathered = [lines[0]], len(lines[0])
        for raw in (tail, *reversed(lines[1:-1])):
            if raw:
                yield raw
    rest = b"".join(reversed(pieces))
    if rest:
        yield rest
