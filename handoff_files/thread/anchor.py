"""The rollback anchor: for each pinned folder, the newest generation this user saved or restored, kept outside it.

A hash chain points backwards: it catches an edit in the middle, never the newest generations
removed (with ``state.json`` and the journal rewritten to match), and a signature does not help,
since the older generations are genuinely signed. So, as TUF keeps the newest metadata version it
saw, the user's state folder keeps, per pinned folder, the generation number and seal of the
newest trusted generation this user saved or restored there (``anchors/<folder digest>.json``,
beside the acknowledgement key). A restore that would return an older generation, or the same
number with another seal, raises :class:`~handoff_files.foundation.errors.RollbackError`
naming both, unless the caller accepts it (``restore(accept_rollback=True)``,
``handoff trust THREAD --reset``); a save that would reuse an anchored number is refused alike.

Only pinned folders are anchored: in a folder anyone may sign nothing in, whoever can write it can
forge a newer generation anyway, so an anchor would guard nothing there. The anchor never gets ahead
of the disk: a save anchors once its commit point is durable, a restore only after it has flushed
the copy it anchors (a power loss never turns into a false alarm). A thread made anew under another
thread id is a new thread, not a rollback: its pin (:mod:`~handoff_files.thread.pins`) decides.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import orjson

from handoff_files.foundation.atomic import fsync_dir, fsync_file, write_durable
from handoff_files.foundation.clock import iso_z
from handoff_files.foundation.errors import RollbackError
from handoff_files.thread.userrecord import read_private, record_path

__all__ = ["Anchor", "advance", "anchor_of", "forget", "rollback_of"]

_DIR: Final = "anchors"
_LIMIT: Final = 4096
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


def _path(folder: Path) -> Path:
    given = os.fspath(folder)
    name = _NAMES.get(given)
    if name is None:
        name = hashlib.sha256(os.fsencode(os.path.realpath(given))).hexdigest()[:32] + ".json"
        if len(_NAMES) > 1024:
            _NAMES.clear()
        _NAMES[given] = name
    return record_path(_DIR) / name


def anchor_of(folder: Path) -> Anchor | None:
    """The anchor of *folder* (by its real path), or None if it has none.

    :raises RollbackError: if the anchor file is not a private file of this user's, or cannot be read.
    """
    try:
        data = read_private(_path(folder), _LIMIT, RollbackError, _REDO)
    except RuntimeError:  # no home directory: none was ever written
        return None
    if data is None:
        return None
    try:
        raw = orjson.loads(data)
        anchor = Anchor(raw["thread_id"], raw["generation"], raw["seal"], raw["at"], raw.get("first_seal"))
    except (KeyError, TypeError, ValueError):
        return None  # our own private file, torn by a crash (it is written unflushed): anchored anew
    if not isinstance(anchor.generation, int) or not all(isinstance(v, str) for v in (anchor.thread_id, anchor.seal)):
        return None
    return anchor


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


def _same_thread(anchor: Anchor, thread_id: str, first_seal: str | None) -> bool:
    """Whether *thread_id* (with generation 1's *first_seal*, if known) is the thread *anchor* was taken for."""
    if anchor.thread_id != thread_id:
        return False
    return first_seal is None or anchor.first_seal is None or first_seal == anchor.first_seal


def advance(
    folder: Path,
    thread_id: str,
    generation: int,
    seal: str,
    *,
    first_seal: str | None = None,
    flush: Path | None = None,
    back: bool = False,
) -> None:
    """Anchor *folder* at *generation* of *thread_id* unless its anchor is already as new (another thread id: anew).

    :param flush: the file the generation was read from, made durable (with its folder) before the
        anchor is written, so that a power loss can never leave the anchor ahead of the disk.
    :param back: anchor it there even if the anchor is newer (a rollback the caller accepted).
    :raises RollbackError: if the anchor cannot be read (see :func:`anchor_of`).
    :raises HandoffWriteError: if it cannot be written.
    """
    held = anchor_of(folder)
    same = held is not None and _same_thread(held, thread_id, first_seal)
    if held is not None and same and held.generation >= generation and not back:
        return
    if first_seal is None:
        first_seal = seal if generation == 1 else (held.first_seal if held is not None and same else None)
    if flush is not None:
        try:
            fsync_file(flush)
            fsync_dir(flush.parent)
        except OSError:
            return  # not anchored now: the next restore or save tries again
    path = _path(folder)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    at = iso_z(timespec="seconds")
    body = {"thread_id": thread_id, "generation": generation, "seal": seal, "at": at, "first_seal": first_seal}
    write_durable(path, orjson.dumps(body) + b"\n", sync=False, mode=0o600)  # lost to a crash: older, never newer


def forget(folder: Path) -> bool:
    """Remove *folder*'s anchor; whether it had one."""
    _NAMES.pop(os.fspath(folder), None)
    try:
        _path(folder).unlink()
    except (FileNotFoundError, RuntimeError):
        return False
    return True
