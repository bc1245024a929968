"""Spare writes files: a checkpoint's first pending writes cost one flush, as a SQLite commit does.

A new file is durable only once its directory entry is flushed too: two flushes for the first
``put_writes`` of every checkpoint, against SqliteSaver's one. So the saver makes empty files ahead,
in ``<root>/.spares/``, a batch at a time with one directory flush for the batch (8, doubling up to
64; one pool per saver root and process, whatever saver or thread takes them), and a checkpoint's first
writes take one: rename it to the checkpoint's writes file, append, fdatasync the file. The rename
is not flushed. A process killed after it keeps it (the kernel made it); only a power loss or an OS
crash can undo it, and then every process starts again, and each saver it opens on the root
(:func:`recover`) finds the spare holding writes and moves it to the path its lines carry
(``"file"``, under the root), under that namespace's writers' lock. A spare of a process that is
gone (its pid, start time and boot in the spare's name) is removed then if it holds no acknowledged
write, or its thread is gone.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from functools import cache
from pathlib import Path
from typing import Final

from handoff_files.foundation.errors import HandoffError, HandoffWriteError
from handoff_files.foundation.safe_paths import open_dir_under
from handoff_files.langgraph.layout import NAMESPACES_DIR, SPARES_DIR, WRITES_DIR, read_writes, writes_owner

__all__ = ["SPARES_DIR", "Spares", "recover", "spare_owner", "spares_of", "to_recover"]

_PART: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,254}")  # a folder or writes file the saver names
_IN_THREAD: Final = 3  # <thread>/writes/<file>
_IN_NAMESPACE: Final = 5  # <thread>/namespaces/<namespace>/writes/<file>
_FIRST: Final = 8
_MOST: Final = 64
_CREATE: Final = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_PID_DIGITS: Final = 10
_NAME_FIELDS: Final = 4  # <pid>-<start>-<boot>-<hex>
_POOLS: dict[str, Spares] = {}
_POOLS_LOCK = threading.Lock()


class Spares:
    """The spare files this process made under one saver root, handed out one per new writes file."""

    def __init__(self) -> None:
        self._names: list[str] = []
        self._batch = _FIRST
        self._lock = threading.Lock()
        self._off = False  # a rename across file systems failed: spares cannot serve this root
        self._pid = os.getpid()

    def take(self, spares_fd: int) -> str | None:
        """The name of an empty spare in *spares_fd* (``<root>/.spares``), made durable; None if none can be made.

        A batch made here costs one directory flush.
        """
        with self._lock:
            if self._pid != os.getpid():  # a forked child: its parent's spares are its parent's
                self._names, self._batch, self._pid = [], _FIRST, os.getpid()
            if self._off:
                return None
            if not self._names:
                self._names = _make(spares_fd, self._batch)
                self._batch = min(self._batch * 2, _MOST)
            return self._names.pop() if self._names else None

    def turn_off(self) -> None:
        """Make no more spares: a rename of one into a thread failed across file systems (a mounted thread)."""
        with self._lock:
            self._off = True


def _forked() -> None:
    """In a forked child: locks another thread of the parent held would never be let go, and its spares are its."""
    global _POOLS_LOCK  # noqa: PLW0603 -- the module's one lock, made anew in the child
    _POOLS_LOCK = threading.Lock()
    _POOLS.clear()


os.register_at_fork(after_in_child=_forked)


def spares_of(root: str | os.PathLike[str]) -> Spares:
    """This process's pool of spares for the saver root *root* (one per root, whatever saver uses it)."""
    key = str(Path(root).absolute())
    with _POOLS_LOCK:
        return _POOLS.setdefault(key, Spares())


@cache
def _boot() -> str:
    """This boot's id, shortened ("" where the system does not say): a pid of an earlier boot is no live one."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as handle:
            return handle.read().strip().replace("-", "")[:8]
    except OSError:
        return ""


def _started(pid: int) -> str:
    """When process *pid* started, in clock ticks since boot ("" if unknown): tells a reused pid apart."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rpartition(b")")[2].split()
        return fields[19].decode("ascii")  # field 22 of proc(5); the two before ")" are cut off
    except (OSError, IndexError, UnicodeDecodeError):
        return ""


def _make(spares_fd: int, count: int) -> list[str]:
    """*count* empty files, their entries flushed; none if the disk refuses (the caller then makes its own file)."""
    names: list[str] = []
    pid = os.getpid()
    owner = f"{pid}-{_started(pid) or 0}-{_boot() or 0}"
    try:
        for _ in range(count):
            name = f"{owner}-{secrets.token_hex(6)}"
            os.close(os.open(name, _CREATE, 0o600, dir_fd=spares_fd))
            names.append(name)
        os.fsync(spares_fd)
    except OSError:
        for name in names:
            with contextlib.suppress(OSError):
                os.unlink(name, dir_fd=spares_fd)
        return []
    return names


def spare_owner(path: Path) -> tuple[str, ...] | None:
    """The writes file a spare's lines name (:func:`~handoff_files.langgraph.layout.append_writes`), as parts.

    ``()`` if it holds no whole line (a first append cut short: never acknowledged); None if its
    lines name no writes file of a namespace: ``<thread>/writes/<file>`` or
    ``<thread>/namespaces/<namespace>/writes/<file>`` under the saver's root, each part a name the
    saver makes (no dot name, no NUL, no link out).

    :raises HandoffError: if its lines do not read.
    """
    records = read_writes(path)
    if not records:
        return ()
    named = records[0].get("file")
    parts = tuple(named.split("/")) if isinstance(named, str) else ()
    if not parts or not all(_PART.fullmatch(part) for part in parts) or not writes_owner(parts[-1])[1]:
        return None
    shapes = (len(parts) == _IN_THREAD and parts[1] == WRITES_DIR) or (
        len(parts) == _IN_NAMESPACE and parts[1] == NAMESPACES_DIR and parts[3] == WRITES_DIR
    )
    return parts if shapes else None


def to_recover(spares_dir: Path) -> bool:
    """Whether *spares_dir* holds a spare :func:`recover` acts on (holding lines, or a gone process's). Reads only."""
    try:
        with os.scandir(spares_dir) as listing:
            return any(_to_act_on(entry) for entry in listing)
    except OSError:
        return False  # none (the usual case), or not readable: the reader that needs it says so


def _to_act_on(entry: os.DirEntry[str]) -> bool:
    try:
        return bool(entry.stat(follow_symlinks=False).st_size) or not _alive(entry.name)
    except FileNotFoundError:
        return False  # taken by a live writer since the listing


def recover(
    root: Path,
    owner_of: Callable[[Path], tuple[str, ...] | None],
    locked: Callable[[Path], AbstractContextManager[None]],
) -> list[str]:
    """Move each spare holding writes to the file its lines name; remove the spares nothing needs.

    Call when a saver opens *root*, before any lock is held. A spare holds writes only when a power
    loss undid its rename: its lines name the file they were appended to, under the root. A spare
    holding no whole line (a crash mid-append: nothing acknowledged), one whose thread or
    namespace is gone, and an empty one of a gone process are removed. One that cannot be moved
    (its file exists meanwhile, its lines name no writes file, its lock is busy) is left, and the
    others are still looked at; ``handoff doctor`` names what is left.

    :param owner_of: reads a spare's lines and returns the path they carry, as parts under the
        root, checked (None if none; ``()`` if it holds no whole line):
        :func:`spare_owner`.
    :param locked: holds the writers' lock of the namespace folder given (briefly: a busy one is left).
    :returns: a note for each spare moved, removed or left.
    """
    try:
        with open_dir_under(root, root / SPARES_DIR) as spares_fd:
            if spares_fd is None:
                return []
            notes: list[str] = []
            for name in sorted(os.listdir(spares_fd)):
                try:
                    notes += _recover_one(root, name, spares_fd, owner_of, locked)
                except Exception as exc:
                    notes.append(f"{root / SPARES_DIR / name}: left where it is: {exc}")
            return notes
    except (OSError, HandoffError, ValueError) as exc:
        return [f"{root / SPARES_DIR}: cannot look through the spare files: {exc}"]


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
        return []  # taken by a live writer since the listing
    if st.st_size == 0:
        if not _alive(name):
            os.unlink(name, dir_fd=spares_fd)
        return []
    parts = owner_of(path)
    if parts is None:
        return [f"{path}: a spare holding lines that name no writes file; left for a person"]
    if not parts:  # a first line cut short: put_writes never returned
        os.unlink(name, dir_fd=spares_fd)
        return [f"{path}: a spare holding no whole line (never acknowledged), removed"]
    target = root.joinpath(*parts)
    with open_dir_under(root, target.parent) as writes_fd:
        if writes_fd is None:  # its thread or namespace was deleted: so were its writes
            os.unlink(name, dir_fd=spares_fd)
            return [f"{path}: a spare holding writes for {target}, whose folder is gone; removed"]
    return [_move_back(root, name, spares_fd, target, locked)]


def _move_back(
    root: Path, name: str, spares_fd: int, target: Path, locked: Callable[[Path], AbstractContextManager[None]]
) -> str:
    """Rename the spare *name* to *target* under its namespace's lock, unless something is there; say what was done."""
    path = root / SPARES_DIR / name
    with locked(target.parent.parent), open_dir_under(root, target.parent) as writes_fd:
        if writes_fd is None:
            return f"{path}: a spare holding writes for {target}, whose folder is gone; left for a person"
        try:  # a link, then the spare's name dropped: never over a file made meanwhile
            os.link(name, target.name, src_dir_fd=spares_fd, dst_dir_fd=writes_fd, follow_symlinks=False)
        except FileExistsError:
            return f"{path}: a spare holding writes for {target}, which exists too; left for a person"
        try:
            os.fsync(writes_fd)
            os.unlink(name, dir_fd=spares_fd)
        except OSError as exc:
            msg = f"cannot move the spare holding writes back to {target}: {exc.strerror or exc}"
            raise HandoffWriteError(path, msg) from exc
    return f"{path}: pending writes whose name a crash undid, moved back to {target}"


def _alive(name: str) -> bool:
    """Whether the process that made a spare (``<pid>-<start>-<boot>-<hex>``) may still hold it (unknown: alive).

    A name of an earlier release (``<pid>-<hex>``) is judged by its pid alone.
    """
    pid, start, boot, *_ = [*name.split("-"), "", "", ""]
    if not (pid.isascii() and pid.isdigit() and len(pid) <= _PID_DIGITS):
        return False
    if not (start.isascii() and start.isdigit()) or len(name.split("-")) < _NAME_FIELDS:
        start, boot = "", ""  # an earlier release's name: no start time, no boot
    if boot not in ("", "0", _boot()) and _boot():
        return False  # made in an earlier boot
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except OSError as exc:
        if exc.errno != errno.EPERM:
            return True
    except (OverflowError, ValueError):
        return False
    return start in ("", "0") or _started(int(pid)) in ("", start)  # a reused pid started at another time
