"""Pinned threads: once this user has read or written a thread signed by a key it trusts, only signed generations count.

Trust on first use, as ssh's ``known_hosts``: before the pin, an unsigned generation is read as
it always was; after it, a generation that is unsigned or whose signer ``allowed_signers`` does
not trust is refused, and a restore returns the newest generation a trusted key signed, naming
the ones it refused (:meth:`~handoff_files.thread.store.HandoffStore.restore`). Someone who can
write the thread folder can no longer slip an unsigned generation in front of a signed one.

The record ``pinned-threads`` lives beside the acknowledgement key, outside every thread
(:mod:`~handoff_files.thread.userrecord`). A pin is kept for the thread folder's real path, as
``known_hosts`` keeps a key for a host name: it names the thread id and the seal of generation 1
(when known) it was taken for, and a folder that now holds another thread (deleted and made anew,
or another thread id) is still held to signed generations, and told so, until a trusted key signs
the new thread (which moves the pin to it) or the user forgets the pin: ``handoff trust THREAD
--reset`` (:func:`unpin`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from handoff_files.foundation.clock import iso_z
from handoff_files.foundation.errors import HandoffError
from handoff_files.thread.anchor import forget, thread_name
from handoff_files.thread.userrecord import locked, read_entries, record_path, write_entries

__all__ = ["PIN_NAME", "Pin", "PinRecordError", "pin", "pin_of", "pinned_threads", "pins_path", "unpin"]

#: The record's file name, beside the acknowledgement key.
PIN_NAME: Final = "pinned-threads"
_REDO: Final = "restore your signed threads again (each pins itself when read)"
#: the record last read in this process: its identity on disk, and its pins by folder
_SEEN: tuple[tuple[Any, ...], dict[str, Pin]] | None = None
#: the most entries the record keeps (the oldest go first: a record past the read limit would hold none)
MAX_PINS: Final = 10_000


class PinRecordError(HandoffError):
    """The record of pinned threads cannot be read or written (not yours, writable by others, damaged)."""


@dataclass(frozen=True, slots=True)
class Pin:
    """One pinned thread: its folder's real path, its thread id, generation 1's seal if known, when and how."""

    path: str
    thread_id: str
    first_seal: str | None
    pinned_at: str
    how: str

    def to_json(self) -> dict[str, Any]:
        """The entry as a JSON object (the record's shape)."""
        return {
            "path": self.path,
            "thread_id": self.thread_id,
            "first_seal": self.first_seal,
            "pinned_at": self.pinned_at,
            "how": self.how,
        }


def pins_path() -> Path:
    """Where the record lives: beside the acknowledgement key."""
    return record_path(PIN_NAME)


def pinned_threads() -> list[Pin]:
    """Every pin, in the order they were made (none if there is no record yet).

    :raises PinRecordError: if the record is not a private file of this user's, or does not read.
    """
    return _read(pins_path())


def pin_of(thread: str | os.PathLike[str]) -> Pin | None:
    """The pin on the folder *thread*, whatever thread it holds now, or None. Reads only.

    The folder is looked up by its real path and by its path as given: a pinned folder replaced by a
    symbolic link to another is still held.

    :raises PinRecordError: as :func:`pinned_threads`.
    """
    global _SEEN  # noqa: PLW0603 -- one reference, swapped whole: threads never see it half made
    try:
        record = pins_path()
    except RuntimeError:  # no home directory: no state folder, so no pin was ever recorded
        return None
    try:
        st = os.lstat(record)
    except (FileNotFoundError, PermissionError):  # the usual case (one stat, nothing parsed); or not this user's
        return None
    except OSError as exc:
        raise PinRecordError(record, f"cannot look at the record: {exc.strerror or exc}") from exc
    # every write renames a new file into place (a new inode), a chmod changes ctime: unchanged, nothing to read again
    seen = (os.fspath(record), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode)
    cached = _SEEN
    if cached is None or cached[0] != seen:
        cached = (seen, {entry.path: entry for entry in _read(record)})  # the newest entry of a path wins
        _SEEN = cached
    by_path = cached[1]
    for name in _names(thread):
        if name in by_path:
            return by_path[name]
    return None


def pin(thread: str | os.PathLike[str], thread_id: str, first_seal: str | None, *, how: str) -> Pin:
    """Pin the folder *thread*, holding *thread_id*: from now on only generations a trusted key signed count.

    Replaces any pin the folder had. Writes the record.

    :param first_seal: the seal of the thread's generation 1, if known (it tells a thread made anew).
    :raises PinRecordError: if the record cannot be read or written.
    """
    names = _names(thread)
    entries = [Pin(name, thread_id, first_seal, iso_z(timespec="seconds"), how) for name in names]
    with locked(pins_path(), PinRecordError) as path:
        kept = [old for old in _read(path) if old.path not in names]
        kept = [*kept, *entries][-MAX_PINS:]
        write_entries(path, "threads", [old.to_json() for old in kept])
    return entries[0]


def unpin(thread: str | os.PathLike[str]) -> bool:
    """Forget every pin on *thread* (its real path). Writes the record.

    Its rollback anchor (:mod:`~handoff_files.thread.anchor`) goes too: the next restore anchors it anew.

    :returns: whether it was pinned.
    :raises PinRecordError: if the record cannot be read or written.
    """
    forget(thread)
    names = _names(thread)
    with locked(pins_path(), PinRecordError) as path:
        entries = _read(path)
        kept = [old for old in entries if old.path not in names]
        if len(kept) == len(entries):
            return False
        write_entries(path, "threads", [old.to_json() for old in kept])
    return True


def _names(thread: str | os.PathLike[str]) -> tuple[str, ...]:
    """A folder's real path, then its path as given (a folder replaced by a link stays held); a bucket's URL."""
    name = thread_name(thread)
    if name.startswith("s3://"):
        return (name,)
    return tuple(dict.fromkeys((name, os.path.abspath(thread))))  # noqa: PTH100 -- the name as given


def _read(path: Path) -> list[Pin]:
    entries = read_entries(path, "threads", PinRecordError, _REDO)
    try:
        return [_entry(item) for item in entries]
    except (KeyError, TypeError) as exc:
        msg = f"not a record of pinned threads ({exc}): remove it and {_REDO}"
        raise PinRecordError(path, msg) from exc


def _entry(item: dict[str, Any]) -> Pin:
    fields = (item["path"], item["thread_id"], item["pinned_at"], item["how"])
    first = item["first_seal"]
    if not all(isinstance(value, str) for value in fields) or not (first is None or isinstance(first, str)):
        msg = "path, thread_id, pinned_at and how are strings; first_seal a string or null"
        raise TypeError(msg)
    return Pin(fields[0], fields[1], first, fields[2], fields[3])
