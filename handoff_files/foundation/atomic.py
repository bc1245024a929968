"""Atomic, durable file I/O: temp file in the target's directory, fsync, rename, directory fsync."""

from __future__ import annotations

import base64
import contextlib
import errno
import os
import random
import re
import stat
from pathlib import Path
from typing import Final

from handoff_files.foundation.errors import (
    HandoffError,
    HandoffNotFoundError,
    HandoffTooLargeError,
    HandoffWriteError,
    UncertainWriteError,
)
from handoff_files.foundation.swap import put_in_place

__all__ = [
    "TEMP_SUFFIX",
    "fsync_dir",
    "fsync_file",
    "is_real_dir",
    "lexists",
    "open_to_read",
    "read_bytes",
    "read_open",
    "remove_stray_temps",
    "rewrite",
    "stray_temps",
    "write_all",
    "write_durable",
]

# a generator of the library's own: drawing from the global one would move a caller's seeded sequence
_RANDOM: Final = random.Random()  # noqa: S311 -- temp names need no secret: O_EXCL refuses a name taken
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_RANDOM.seed)  # a forked child draws names of its own
_random_bits: Final = _RANDOM.getrandbits

#: Our temp files: ``.<target name>.<random>.tmp`` beside the target.
TEMP_SUFFIX: Final = ".tmp"
# only names write_durable makes in a thread: the primary, state.json, transferred.json, the
# retention record, a journal rewritten (redaction, the doctor), a history generation, a kept legacy file
_TEMP_NAME: Final = re.compile(
    r"^\.(?:handoff\.(?:json|yaml)|state\.json|transferred\.json|retention\.json|journal(?:\.1)?\.jsonl"
    r"|\d{8,}\.(?:json|yaml)|legacy-[^/]+)\.[a-z0-9_]{8}\.tmp$"
)


def fsync_dir(path: Path) -> None:
    """fsync a directory, making the renames, links and unlinks in it durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_file(path: Path) -> None:
    """fsync a file already written (a journal-first save's copies, at a checkpoint); no-op if it is gone."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of *data* to *fd*."""
    view = memoryview(data)
    while view:
        # os.write may write less than asked (a signal, a nearly full disk): loop until all is down
        written = os.write(fd, view)
        if written <= 0:
            msg = "write returned 0 bytes"
            raise OSError(msg)
        view = view[written:]


def _temp_beside(path: Path) -> tuple[int, str]:
    """Create a new temp file for *path* in its directory (mode 0600): ``(fd, name)``.

    ``tempfile.mkstemp``'s name and flags, without its per-call overhead (a third of a 1 KB save's
    time in Python): 40 random bits per try, O_EXCL, and no symlink followed. The bits need not be
    secret (O_EXCL refuses a name taken, and the next try draws again), so they come from a
    generator of the library's own, seeded anew in a forked child, without a system call.
    """
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for _ in range(100):
        token = base64.b32encode(_random_bits(40).to_bytes(5, "big")).decode("ascii").lower()
        name = os.path.join(path.parent, f".{path.name}.{token}{TEMP_SUFFIX}")  # noqa: PTH118 -- a str for os calls
        try:
            return os.open(name, flags, 0o600), name
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no unused temp file name", str(path.parent))


#: A written file as its writer left it: its size and its modification time in nanoseconds. A
#: later rewrite (a person's edit) changes them; bit rot, which changes bytes in place, does not.
Stamp = tuple[int, int]


def write_durable(path: Path, data: bytes, *, sync: bool = True, mode: int = 0o600, new: bool = False) -> Stamp:
    """Write *data* to *path* atomically and durably; return only when it is on disk.

    Temp file in the same directory (mode 0600) → write every byte → fsync → put it in place
    (an atomic exchange of names, or ``os.replace``: see :mod:`~handoff_files.foundation.swap`)
    → fsync the directory. Readers see the old file or the new one, never a mix. On failure
    the temp file is removed and the target is untouched (or, if only the final directory
    fsync failed, replaced but not known to be durable: the error says so).

    :param sync: False skips both fsyncs: still atomic for readers, but a crash may lose the
        file or leave it empty. Only for copies whose content is already durable elsewhere
        (a journal-first save's files).
    :param mode: the file's mode, set on the temp file before it is put in place (whatever the
        umask), so a reader never meets the new file unreadable: 0600 unless a group shares it.
    :param new: the name is expected not to exist (a new generation's file): put in place by a plain
        rename, which replaces a file found there all the same, with no exchange tried first.
    :returns: the file's :data:`Stamp` as written (a rename does not change it).
    :raises HandoffWriteError: on any OS error, naming the path and the errno.
    """
    try:
        fd, tmp = _temp_beside(path)
    except OSError as exc:
        msg = f"cannot create a temp file beside it: {exc.strerror or exc}"
        raise HandoffWriteError(path, msg) from exc
    replaced = False
    try:
        try:
            if mode != 0o600:
                os.fchmod(fd, mode)
            write_all(fd, data)
            # fsync the data before the rename: otherwise a crash can leave the new name on empty blocks
            if sync:
                os.fsync(fd)
            st = os.fstat(fd)
        finally:
            os.close(fd)
        if new:
            os.replace(tmp, path)
        else:
            put_in_place(tmp, path)
        replaced = True
        # fsync the directory: the rename is not durable until its entry is
        if sync:
            fsync_dir(path.parent)
    except OSError as exc:
        if replaced:
            msg = f"replaced, but the directory fsync failed, so it may not survive a crash: {exc.strerror or exc}"
            raise UncertainWriteError(path, msg) from exc
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        msg = f"write failed, the previous file is unchanged: {exc.strerror or exc}"
        raise HandoffWriteError(path, msg) from exc
    except BaseException:
        if not replaced:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise
    return (st.st_size, st.st_mtime_ns)


def rewrite(target: Path, data: bytes, *, keep_as: Path | None) -> bool:
    """Put *data* in *target*'s place, atomically and durably; what was there is kept as *keep_as* first. Writes.

    The old file is hard-linked to *keep_as* before the new one replaces it, so at every moment
    *target* holds the old bytes or the new ones, and the old ones are never lost.

    :returns: whether there was a file to keep.
    :raises HandoffWriteError: if it cannot be kept or written (*target* is then as it was).
    """
    kept = keep_as is not None and lexists(target)
    if keep_as is not None and kept:
        try:
            os.link(target, keep_as, follow_symlinks=False)  # a symbolic link is kept as a link, never followed
            if keep_as.parent != target.parent:
                fsync_dir(keep_as.parent)  # else the directory fsync of the write below makes it durable
        except OSError as exc:
            msg = f"cannot keep it before replacing it: {exc.strerror or exc}"
            raise HandoffWriteError(target, msg) from exc
    write_durable(target, data)
    return kept


def stray_temps(directory: Path) -> list[Path]:
    """List temp files a crashed writer left in *directory* (ours only, by name pattern)."""
    try:
        names = os.listdir(directory)
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as exc:
        msg = f"cannot list the directory: {exc.strerror or exc}"
        raise HandoffError(directory, msg) from exc
    return [directory / name for name in names if _TEMP_NAME.match(name)]


def remove_stray_temps(directory: Path) -> list[Path]:
    """Remove the temp files :func:`stray_temps` finds; call only while holding the writers' lock."""
    removed = stray_temps(directory)
    for temp in removed:
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()
    return removed


def read_bytes(path: Path, limit: int, *, follow_symlinks: bool = True) -> tuple[bytes, os.stat_result]:
    """Read a whole regular file of at most *limit* bytes, with the ``stat`` of what was read.

    :raises HandoffNotFoundError: if it does not exist.
    :raises HandoffTooLargeError: past *limit* (checked before reading).
    :raises HandoffError: if it is not a regular file, or on another OS error.
    """
    fd, st = open_to_read(path, limit, follow_symlinks=follow_symlinks)
    try:
        return read_open(fd, st, path, limit), st
    finally:
        # a failed close of a file only read loses nothing, and must not hide the read's own error
        with contextlib.suppress(OSError):
            os.close(fd)


def open_to_read(path: str | Path, limit: int, *, follow_symlinks: bool = True) -> tuple[int, os.stat_result]:
    """Open a regular file of at most *limit* bytes to read: its descriptor (the caller closes it) and ``stat``.

    :raises HandoffNotFoundError, HandoffTooLargeError, HandoffError: as :func:`read_bytes`.
    """
    # O_NONBLOCK: a FIFO in the file's place must not hang the reader before the regular-file check
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow_symlinks else os.O_NOFOLLOW)
    if "\0" in os.fspath(path):  # os.open raises a bare ValueError for it
        msg = "the path holds a NUL character, which no file name can"
        raise HandoffError(path, msg)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError as exc:
        msg = "no such file"
        raise HandoffNotFoundError(path, msg) from exc
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow_symlinks:
            msg = "is a symbolic link; a thread's files are never followed out of it"
            raise HandoffError(path, msg) from exc
        msg = f"cannot open: {exc.strerror or exc}"
        raise HandoffError(path, msg) from exc
    try:
        st = _opened(fd, path, limit)
    except BaseException:
        with contextlib.suppress(OSError):
            os.close(fd)
        raise
    return fd, st


def _opened(fd: int, path: str | Path, limit: int) -> os.stat_result:
    """The ``stat`` of a file opened to read, checked: a regular file of at most *limit* bytes."""
    try:
        st = os.fstat(fd)
    except OSError as exc:
        msg = f"cannot read: {exc.strerror or exc}"
        raise HandoffError(path, msg) from exc
    if not _is_regular(st):
        msg = "a folder, not a file" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        raise HandoffError(path, msg)
    if st.st_size > limit:
        msg = f"file is {st.st_size:,} bytes, over the {limit:,}-byte limit for a handoff"
        raise HandoffTooLargeError(path, msg)
    return st


def read_open(fd: int, st: os.stat_result, path: Path, limit: int) -> bytes:
    """Read the whole of a file :func:`open_to_read` opened (*st*: its ``stat``), from its start.

    :raises HandoffTooLargeError: if it grew past *limit* while being read.
    :raises HandoffError: on an OS error.
    """
    chunks = []
    total = 0
    try:
        while True:
            chunk = os.pread(fd, max(st.st_size + 1 - total, 1 << 16), total)
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                msg = f"file grew past the {limit:,}-byte limit while being read"
                raise HandoffTooLargeError(path, msg)
    except OSError as exc:
        msg = f"cannot read: {exc.strerror or exc}"
        raise HandoffError(path, msg) from exc
    return b"".join(chunks)


def _stat_or_none(path: Path, *, follow_symlinks: bool) -> os.stat_result | None:
    """``stat`` of *path*, None if it does not exist; any other error is a HandoffError naming it.

    ``Path.exists()`` and ``Path.is_dir()`` let EIO and EACCES escape as bare ``OSError``.
    """
    try:
        return path.stat(follow_symlinks=follow_symlinks)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        msg = f"cannot look at it: {exc.strerror or exc}"
        raise HandoffError(path, msg) from exc


def lexists(path: Path) -> bool:
    """Whether *path* exists (a dangling symlink counts); an error other than "no such file" is a HandoffError."""
    return _stat_or_none(path, follow_symlinks=False) is not None


def is_real_dir(path: Path, *, follow_symlinks: bool = False) -> bool:
    """Whether *path* is a directory (by default not a symlink to one); other errors as :func:`lexists`."""
    st = _stat_or_none(path, follow_symlinks=follow_symlinks)
    return st is not None and stat.S_ISDIR(st.st_mode)


def _is_regular(st: os.stat_result) -> bool:
    return stat.S_ISREG(st.st_mode)
