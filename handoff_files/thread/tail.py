"""A line file's tail: complete lines read back from the end, and a torn last line told and cut."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, Final

__all__ = ["cut_torn_tail", "lines_backwards", "torn"]

# read a block at a time: a journal-first line (a whole document) can be megabytes long
_TAIL_BLOCK: Final = 64 * 1024


def torn(path: Path) -> bool:
    """Whether the file's last byte is not a newline (a line cut short).

    :param path: the line file; one that is missing or unreadable is not torn.
    :returns: True if its last line has no newline after it.
    """
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            if handle.tell() == 0:
                return False
            handle.seek(-1, os.SEEK_END)
            return handle.read(1) != b"\n"
    except OSError:
        return False


def cut_torn_tail(fd: int) -> bool:
    """Truncate a last line with no newline (a crash mid-append) so the next line starts clean.

    Writes, without syncing: the caller syncs (an append with the line it writes next).

    :param fd: the file, open for reading and writing.
    :returns: whether there was a torn line to cut.
    :raises OSError: if the file cannot be read or truncated.
    """
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


def lines_backwards(handle: BinaryIO) -> Iterator[bytes]:
    """Yield complete lines from the end of a file, newest first, reading a block at a time.

    A torn last line (no newline after it) is not a line yet and is not yielded.

    :param handle: the file, open for binary reading.
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
    position, pieces = end, []
    while position > 0:
        size = min(_TAIL_BLOCK, position)
        position -= size
        handle.seek(position)
        lines = handle.read(size).split(b"\n")
        if len(lines) == 1:
            pieces.append(lines[0])
            continue
        tail = b"".join([lines[-1], *reversed(pieces)])
        pieces = [lines[0]]
        for raw in (tail, *reversed(lines[1:-1])):
            if raw:
                yield raw
    rest = b"".join(reversed(pieces))
    if rest:
        yield rest
