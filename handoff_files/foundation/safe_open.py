"""Opening a library file safely: no link followed, never blocking, a regular file only, bounded, not hard-linked."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from typing import Final

from handoff_files.foundation.errors import (
    HandoffError,
    HandoffNotFoundError,
    HandoffParseError,
    HandoffTooLargeError,
    HandoffWriteError,
)

__all__ = ["WRITE_FLAGS", "open_regular"]

# O_NONBLOCK: opening a FIFO put in a file's place must not wait for a writer (or a reader) on
# the other end; on a regular file it changes nothing (Linux ignores it there), so it is never cleared
_ALWAYS: Final = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
#: The flags that make an open one that writes: such a file must also not be hard-linked.
WRITE_FLAGS: Final = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_TRUNC


def open_regular(
    path: str | os.PathLike[str], flags: int, *, max_bytes: int | None, mode: int = 0o600
) -> tuple[int, os.stat_result]:
    """Open one of the library's files (to read, write or append) with the checks hostile folders need.

    The file is opened with ``O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC`` added to *flags*, then
    checked with one ``fstat`` (the only extra system call): it must be a regular file (not a
    FIFO, a device, a socket or a folder); a file opened to write or append must have no other
    hard link (a link to a file outside the thread would let the library cut or overwrite it);
    and it must be at most *max_bytes* long.

    :param path: the file.
    :param flags: ``os.O_*`` flags, e.g. ``os.O_RDONLY`` or ``os.O_RDWR | os.O_APPEND | os.O_CREAT``.
    :param max_bytes: the largest size the caller will handle; None: no bound (the caller reads
        only a bounded part of it).
    :param mode: the mode of a file *flags* create.
    :returns: the open descriptor (the caller closes it) and the ``stat`` of what was opened.
    :raises HandoffNotFoundError: if it does not exist (and *flags* do not create it); a
        ``FileNotFoundError`` too.
    :raises HandoffWriteError: for a file opened to write that cannot be opened or is refused.
    :raises HandoffTooLargeError: for a file read past *max_bytes*.
    :raises HandoffParseError: for a file read that is not a regular file.
    :raises HandoffError: for a file read that cannot be opened (a symbolic link, no permission …).
    """
    writes = bool(flags & WRITE_FLAGS)
    try:
        fd = os.open(path, flags | _ALWAYS, mode)
    except FileNotFoundError as exc:
        msg = "no such file"
        raise HandoffNotFoundError(path, msg) from exc
    except OSError as exc:
        raise _refused(path, _open_reason(exc), writes=writes) from exc
    try:
        st = os.fstat(fd)
        reason = _reason(st, writes=writes, max_bytes=max_bytes)
    except OSError as exc:
        _close_quietly(fd)
        raise _refused(path, f"cannot look at it: {exc.strerror or exc}", writes=writes) from exc
    if reason is not None:
        _close_quietly(fd)
        if not writes and max_bytes is not None and st.st_size > max_bytes and stat.S_ISREG(st.st_mode):
            raise HandoffTooLargeError(path, reason)
        raise _refused(path, reason, writes=writes)
    return fd, st


def _close_quietly(fd: int) -> None:
    # a file refused, or only looked at: a failed close loses nothing, and must not hide the refusal
    with contextlib.suppress(OSError):
        os.close(fd)


def _reason(st: os.stat_result, *, writes: bool, max_bytes: int | None) -> str | None:
    """Why the file opened is refused, or None."""
    if not stat.S_ISREG(st.st_mode):
        return f"not a regular file (a {_kind(st.st_mode)}); the library reads and writes only regular files"
    if writes and st.st_nlink > 1:
        return (
            f"has {st.st_nlink} hard links: writing it would change a file outside the thread too; "
            "the library never writes a hard-linked file (copy it to a file of its own)"
        )
    if max_bytes is not None and st.st_size > max_bytes:
        return f"file is {st.st_size:,} bytes, over the {max_bytes:,}-byte limit for it; move it aside"
    return None


def _open_reason(exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "is a symbolic link; a thread's files are never followed out of it"
    if exc.errno == errno.ENXIO:  # a FIFO opened to write with no reader, a socket
        return "not a regular file (a FIFO or a socket); the library reads and writes only regular files"
    if exc.errno == errno.EISDIR:
        return "not a regular file (a folder); the library reads and writes only regular files"
    return f"cannot open: {exc.strerror or exc}"


def _refused(path: str | os.PathLike[str], reason: str, *, writes: bool) -> HandoffError:
    if writes:
        return HandoffWriteError(path, reason)
    if reason.startswith("not a regular file"):
        return HandoffParseError(path, reason)
    return HandoffError(path, reason)


def _kind(mode: int) -> str:
    kinds = ((stat.S_ISFIFO, "FIFO"), (stat.S_ISDIR, "folder"), (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "device"))
    return next((name for test, name in kinds if test(mode)), "device")
