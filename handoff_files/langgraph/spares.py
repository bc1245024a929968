"""Spare writes files: a checkpoint's first pending writes cost one flush, as a SQLite commit does.

A new file is durable only once its directory entry is flushed too: two flushes for the first
``put_writes`` of every checkpoint, against SqliteSaver's one. So the saver makes empty files ahead,
in ``<root>/.spares/``, a batch at a time with one directory flush for the batch (8, doubling up to
64; one pool per saver root and process, whatever thread takes them), and a checkpoint's first
writes take one: rename it to the checkpoint's writes file, append, fdatasync the file. The rename
is not flushed. A process killed after it keeps it (the kernel made it); only a power loss or an OS
crash can undo it, and then every process starts again, and each one's first use of the root
(:func:`recover`) finds the spare holding writes and moves it to the path its lines carry
(``"file"``, under the root), under that namespace's writers' lock. An empty spare of a process
that is gone is removed then too.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Final

from handoff_files.foundation.errors import HandoffError, HandoffWriteError
from handoff_files.foundation.safe_paths import open_dir_under

__all__ = ["SPARES_DIR", "Spares", "recover", "to_recover"]

#: The folder of spare files under a saver's root (a dot name: no listing of threads sees it).
SPARES_DIR: Final = ".spares"
_FIRST: Final = 8
_MOST: Final = 64
_CREATE: Final = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class Spares:
    """The spare files this process made under one saver root, handed out one per new writes file."""

    def __init__(self) -> None:
        self._names: list[str] = []
        self._batch = _FIRST
        self._lock = threading.Lock()

    def take(self, spares_fd: int) -> str | None:
        """The name of an empty spare in *spares_fd* (``<root>/.spares``), made durable; None if none can be made.

        A batch made here costs one directory flush.
        """
        with self._lock:
            if not self._names:
                self._names = _make(spares_fd, self._batch)
                self._batch = min(self._batch * 2, _MOST)
            return self._names.pop() if self._names else None


def _make(spares_fd: int, count: int) -> list[str]:
    """*count* empty files, their entries flushed; none if the disk refuses (the caller then makes its own file)."""
    names: list[str] = []
    try:
        for _ in range(count):
            name = f"{os.getpid()}-{secrets.token_hex(6)}"
            os.close(os.open(name, _CREATE, 0o600, dir_fd=spares_fd))
            names.append(name)
        os.fsync(spares_fd)
    except OSError:
        for name in names:
            with contextlib.suppress(OSError):
                os.unlink(name, dir_fd=spares_fd)
        return []
    return names


def to_recover(spares_dir: Path) -> bool:
    """Whether *spares_dir* holds a spare :func:`recover` acts on (holding writes, or a gone process's). Reads only."""
    try:
        with os.scandir(spares_dir) as listing:
            return any(entry.stat(follow_symlinks=False).st_size or not _alive(entry.name) for entry in listing)
    except OSError:
        return False  # none (the usual case), or not readable: the reader that needs it says so


def recover(
    root: Path,
    owner_of: Callable[[Path], tuple[str, ...] | None],
    locked: Callable[[Path], AbstractContextManager[None]],
) -> list[str]:
    """Move each spare holding writes to the file its lines name; remove the empty spares of processes that are gone.

    Call at a process's first use of a saver's *root*. A spare holds writes only when a power loss
    undid its rename: its lines name the file they were appended to, under the root. One whose
    file exists meanwhile, or whose lines name none, is left for a person (``handoff doctor``
    names it) and named in the notes returned.

    :param owner_of: reads a spare's lines and returns the path they carry, as parts under the
        root, checked (None if none): :func:`handoff_files.langgraph.layout.spare_owner`.
    :param locked: holds the writers' lock of the namespace folder given.
    :returns: a note for each spare moved or left.
    """
    notes: list[str] = []
    try:
        with open_dir_under(root, root / SPARES_DIR) as spares_fd:
            if spares_fd is None:
                return notes
            for name in sorted(os.listdir(spares_fd)):
                notes += _recover_one(root, name, spares_fd, owner_of, locked)
    except (OSError, HandoffError) as exc:
        notes.append(f"{root / SPARES_DIR}: cannot look through the spare files: {exc}")
    return notes


def _recover_one(
    root: Path,
    name: str,
    spares_fd: int,
    owner_of: Callable[[Path], tuple[str, ...] | None],
    locked: Callable[[Path], AbstractContextManager[None]],
) -> list[str]:
    path = root / SPARES_DIR / name
    try:
        st = os.lstat(name, dir_fd=spares_fd)
    except FileNotFoundError:
        return []
    if st.st_size == 0:
        if not _alive(name):
            with contextlib.suppress(OSError):
                os.unlink(name, dir_fd=spares_fd)
        return []
    try:
        parts = owner_of(path)
    except HandoffError as exc:
        return [f"{path}: a spare holding writes that do not read ({exc.reason}); left for a person"]
    if parts is None:
        return [f"{path}: a spare holding no whole line naming its file; left for a person"]
    return [_move_back(root, name, spares_fd, root.joinpath(*parts), locked)]


def _move_back(
    root: Path, name: str, spares_fd: int, target: Path, locked: Callable[[Path], AbstractContextManager[None]]
) -> str:
    """Rename the spare *name* to *target* under its namespace's lock, unless something is there; say what was done."""
    path = root / SPARES_DIR / name
    with locked(target.parent.parent), open_dir_under(root, target.parent) as writes_fd:
        if writes_fd is None:
            return f"{path}: a spare holding writes for {target}, whose folder is gone; left for a person"
        try:
            os.lstat(target.name, dir_fd=writes_fd)
        except FileNotFoundError:
            pass
        else:
            return f"{path}: a spare holding writes for {target}, which exists too; left for a person"
        try:
            os.rename(name, target.name, src_dir_fd=spares_fd, dst_dir_fd=writes_fd)
            os.fsync(writes_fd)
        except OSError as exc:
            msg = f"cannot move the spare holding writes back to {target}: {exc.strerror or exc}"
            raise HandoffWriteError(path, msg) from exc
    return f"{path}: pending writes whose name a crash undid, moved back to {target}"


def _alive(name: str) -> bool:
    """Whether the process whose pid starts a spare's name may still hold it (unknown counts as alive)."""
    pid, _, _ = name.partition("-")
    if not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except OSError as exc:
        return exc.errno == errno.EPERM
    return True
