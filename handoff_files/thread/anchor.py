"""The rollback anchor: for each pinned folder, the newest generation this user saved or restored, kept outside it.

A hash chain points backwards: it catches an edit in the middle, never the newest generations
removed (with ``state.json`` and the journal rewritten to match), and a signature does not help,
since the older generations are genuinely signed. So, as TUF keeps the newest metadata version it
saw, the user's state folder keeps, per pinned folder, the generation number and seal of the
newest trusted generation this user saved or restored there (``anchors/<folder digest>.json``,
beside the acknowledgement key: each move appends a JSON line, the last whole one counts). A restore
that would return an older generation, or the same number with another seal, raises
:class:`~handoff_files.foundation.errors.RollbackError`
naming both, unless the caller accepts it (``restore(accept_rollback=True)``,
``handoff trust THREAD --reset``); a save that would reuse an anchored number is refused alike.

Only pinned folders are anchored: in a folder anyone may sign nothing in, whoever can write it can
forge a newer generation anyway, so an anchor would guard nothing there. The anchor never gets ahead
of the disk: a save anchors once its commit point is durable, a restore only after it has flushed
the copy it anchors (a power loss never turns into a false alarm). A thread made anew under another
thread id is a new thread, not a rollback: its pin (:mod:`~handoff_files.thread.pins`) decides.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

import orjson

from handoff_files.foundation.atomic import fsync_dir, fsync_file, write_durable
from handoff_files.foundation.clock import iso_z
from handoff_files.foundation.errors import HandoffWriteError, RollbackError
from handoff_files.thread.userrecord import read_private_stat, record_path

__all__ = ["Anchor", "advance", "anchor_of", "forget", "rollback_of"]

_DIR: Final = "anchors"
_LIMIT: Final = 16384
#: an anchor file past this size is written anew at its next move (one line) rather than appended to
_COMPACT: Final = 4096
_REDO: Final = "restore the thread to anchor it again"


@dataclass(frozen=True, slots=True)
class Anchor:
    """The newest generation of a folder's thread this user saved or restored, and when."""

    thread_id: str
    generation: int
    seal: str
    at: str
    first_seal: str | None = None  # generation 1's, when known: another one is a thread made anew


#: the anchor's file name by the folder as named (its real path, digested once per process: a save looks it up)
_NAMES: dict[str, str] = {}
#: the anchor last read or written, by its file: that file's identity then (device, inode, size, mtime and
#: ctime in ns, mode, owner) and what it held. Every move appends (the size grows) or puts a new file in
#: place (a new inode), a chmod or chown changes ctime: while the identity is the same, it is not read again.
_SEEN: dict[Path, tuple[tuple[int, ...], Anchor | None]] = {}
_FOLDERS: set[Path] = set()  # the anchors folders made (or found) by this process
_PATHS: dict[tuple[Path, str], Path] = {}  # the anchor file by its folder and name: a save looks it up twice


#: a folder's real path by the path given, worked out once per process (as its anchor's name is): a
#: pinned folder is held by its path as given too, so one replaced by a link later is held all the same
_REAL: dict[str, str] = {}


def thread_name(thread: str | os.PathLike[str]) -> str:
    """The name a thread's pin and anchor are kept under: a folder's real path, a bucket thread's URL as given
    (with ``AWS_ENDPOINT_URL`` when one is set)."""
    given = os.fspath(thread)
    if not given.startswith("s3://"):
        real = _REAL.get(given)
        if real is None:
            real = os.path.realpath(given)
            if len(_REAL) > 1024:
                _REAL.clear()
            _REAL[given] = real
        return real
    endpoint = os.environ.get("AWS_ENDPOINT_URL")  # one URL on two stores is two threads
    return f"{given} at {endpoint}" if endpoint else given


def _path(folder: str | os.PathLike[str]) -> Path:
    given = os.fspath(folder)
    name = _NAMES.get(given)
    if name is None:
        name = hashlib.sha256(os.fsencode(thread_name(given))).hexdigest()[:32] + ".json"
        if len(_NAMES) > 1024:
            _NAMES.clear()
        _NAMES[given] = name
    place = record_path(_DIR)
    path = _PATHS.get((place, name))
    if path is None:
        path = place / name
        if len(_PATHS) > 1024:
            _PATHS.clear()
        _PATHS[place, name] = path
    return path


def anchor_of(folder: str | os.PathLike[str]) -> Anchor | None:
    """The anchor of *folder* (by its real path), or None if it has none.

    :raises RollbackError: if the anchor file is not a private file of this user's, or cannot be read.
    """
    try:
        path = _path(folder)
    except RuntimeError:  # no home directory: none was ever written
        return None
    seen = _SEEN.get(path)
    if seen is not None:
        try:
            if _identity(os.lstat(path)) == seen[0]:
                return seen[1]
        except OSError:
            pass  # gone, or not to be looked at: read as if never seen
    read = read_private_stat(path, _LIMIT, RollbackError, _REDO)
    if read is None:
        return None
    data, st = read
    anchor = _anchor(data)
    _remember(path, st, anchor)
    return anchor


def _anchor(data: bytes) -> Anchor | None:
    """The anchor the file's last whole line holds (each move appends one); None if none reads.

    A line torn by a crash (the file is written unflushed) is passed over for the one before it
    (an anchor a crash loses is the user's to move again: a restore anchors anew). Only a line
    ending in a newline counts, so a half-written append never stands for a whole one.
    """
    lines = data.split(b"\n")
    for line in reversed(lines[:-1]):  # what follows the last newline is not a whole line
        try:
            raw = orjson.loads(line)
            anchor = Anchor(raw["thread_id"], raw["generation"], raw["seal"], raw["at"], raw.get("first_seal"))
        except (KeyError, TypeError, ValueError):
            continue  # our own private file, torn by a crash: the line before it
        if isinstance(anchor.generation, int) and all(isinstance(v, str) for v in (anchor.thread_id, anchor.seal)):
            return anchor
    return None


def _identity(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode, st.st_uid)


def _remember(path: Path, st: os.stat_result, anchor: Anchor | None) -> None:
    if len(_SEEN) >= 1024:
        _SEEN.clear()
    _SEEN[path] = (_identity(st), anchor)


def rollback_of(
    anchor: Anchor | None, thread_id: str, generation: int, seal: str | None, first_seal: str | None = None
) -> str | None:
    """Why *generation* (with *seal*) of *thread_id* rolls the thread back from *anchor*; None if it does not.

    Another thread id, or another generation 1 (*first_seal*, when both are known), is a thread made anew.
    """
    if anchor is None or not _same_thread(anchor, thread_id, first_seal) or generation > anchor.generation:
        return None
    if generation == anchor.generation and seal == anchor.seal:
        return None
    if generation == anchor.generation:
        return (
            f"generation {generation} here has seal {seal}, but the one you saved or restored on {anchor.at} "
            f"had {anchor.seal}: the generation was replaced"
        )
    return (
        f"the newest trusted generation here is {generation}, but you saved or restored generation "
        f"{anchor.generation} (seal {anchor.seal}) on {anchor.at}: the newer generations were removed"
    )


def rollback_refused(thread: str | os.PathLike[str], why: str) -> RollbackError:
    """The error for a restore of *thread* that would roll it back unseen (*why*), saying how to accept it."""
    msg = (
        f"{why}; restoring would roll the thread back unseen. If you rolled it back yourself, accept it: "
        f"`handoff show {os.fspath(thread)} --accept-rollback` (Python: restore(accept_rollback=True)) anchors it "
        f"there, `handoff trust {os.fspath(thread)} --reset` forgets the pin and the anchor"
    )
    return RollbackError(thread, msg)


def _same_thread(anchor: Anchor, thread_id: str, first_seal: str | None) -> bool:
    """Whether *thread_id* (with generation 1's *first_seal*, if known) is the thread *anchor* was taken for."""
    if anchor.thread_id != thread_id:
        return False
    return first_seal is None or anchor.first_seal is None or first_seal == anchor.first_seal


def advance(
    folder: str | os.PathLike[str],
    thread_id: str,
    generation: int,
    seal: str,
    *,
    first_seal: str | None = None,
    flush: Path | None = None,
    back: bool = False,
    saved: bool = False,
) -> None:
    """Anchor *folder* at *generation* of *thread_id* unless its anchor is already as new (another thread id: anew).

    :param flush: the file the generation was read from, made durable (with its folder) before the
        anchor is written, so that a power loss can never leave the anchor ahead of the disk.
    :param back: anchor it there even if the anchor is newer (a rollback the caller accepted).
    :param saved: the caller just saved *generation* (it is newer, but for a race): look only under the lock.
    :raises RollbackError: if the anchor cannot be read (see :func:`anchor_of`).
    :raises HandoffWriteError: if it cannot be written.
    """
    if not saved and _as_new(anchor_of(folder), thread_id, generation, first_seal) and not back:
        return  # the usual restore: nothing to move (checked again under the lock below)
    if flush is not None:
        try:
            fsync_file(flush)
            fsync_dir(flush.parent)
        except OSError:
            return  # not anchored now: the next restore or save tries again
    path = _path(folder)
    if path.parent not in _FOLDERS:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        _FOLDERS.add(path.parent)
    with _locked(path.parent):  # read, decide and write as one: a move never lands behind another's newer one
        held = anchor_of(folder)
        if _as_new(held, thread_id, generation, first_seal) and not back:
            return
        if first_seal is None and generation == 1:
            first_seal = seal
        elif first_seal is None and held is not None and _same_thread(held, thread_id, None):
            first_seal = held.first_seal
        _write(path, Anchor(thread_id, generation, seal, iso_z(timespec="seconds"), first_seal))


def _as_new(held: Anchor | None, thread_id: str, generation: int, first_seal: str | None) -> bool:
    """Whether *held* already anchors this thread at *generation* or later."""
    return held is not None and _same_thread(held, thread_id, first_seal) and held.generation >= generation


@contextlib.contextmanager
def _locked(anchors: Path) -> Iterator[None]:
    """Hold the ``flock`` of the anchors folder itself: every mover of this user's anchors, any process or thread."""
    try:
        fd = os.open(anchors, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        msg = f"cannot open the anchors folder to lock it: {exc.strerror or exc}"
        raise HandoffWriteError(anchors, msg) from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing drops the flock


def _write(path: Path, anchor: Anchor) -> None:
    """Append *anchor* to its file (under :func:`_locked`), or write the file anew holding it alone."""
    body = {
        "thread_id": anchor.thread_id,
        "generation": anchor.generation,
        "seal": anchor.seal,
        "at": anchor.at,
        "first_seal": anchor.first_seal,
    }
    line = orjson.dumps(body) + b"\n"
    _SEEN.pop(path, None)  # read again when next looked up, unless the append below knows it is the last
    appended = _append(path, line)
    if appended is not None:
        if appended:
            _remember(path, appended, anchor)
        return
    try:  # none yet, or full: a new file holding this line alone (lost to a crash with the lines before)
        write_durable(path, line, sync=False, mode=0o600)
    except HandoffWriteError:
        _FOLDERS.discard(path.parent)  # removed since it was made? made again, then written again
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        write_durable(path, line, sync=False, mode=0o600)
        _FOLDERS.add(path.parent)


def _append(path: Path, line: bytes) -> os.stat_result | Literal[False] | None:
    """Append *line* to the anchor file at *path*, one ``write`` (as the journal appends); None if there is
    no such file, or it has no room left (:data:`_COMPACT`), or is not this user's private file, or its
    last line is torn (a line appended to a torn one would be lost with it): then it is written anew.
    An append costs a tenth of putting a new file in place, which a signed save does each time.

    :returns: the file's ``stat`` after the append when *line* is known to be its last (nothing was
        appended between this one's ``fstat`` before and after), else False (appended, but another
        writer's line may follow: read again when next looked up).
    """
    try:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None  # none yet (the usual first move), or a link or something else there: written anew
    try:
        st = os.fstat(fd)
        if (
            not stat.S_ISREG(st.st_mode)
            or st.st_uid != os.geteuid()
            or st.st_mode & 0o077
            or st.st_size + len(line) > _COMPACT
            or (st.st_size and os.pread(fd, 1, st.st_size - 1) != b"\n")  # torn by a crash: not glued onto
        ):
            return None
        if os.write(fd, line) != len(line):
            return None  # a short write leaves a torn last line: passed over, and the file written anew
        after = os.fstat(fd)
        return after if after.st_size == st.st_size + len(line) else False
    except OSError:
        return None
    finally:
        os.close(fd)


def forget(folder: str | os.PathLike[str]) -> bool:
    """Remove *folder*'s anchor; whether it had one."""
    _NAMES.pop(os.fspath(folder), None)
    _REAL.pop(os.fspath(folder), None)
    try:
        path = _path(folder)
        _SEEN.pop(path, None)
        with _locked(path.parent):
            path.unlink()
    except (FileNotFoundError, RuntimeError, HandoffWriteError):
        return False
    return True
