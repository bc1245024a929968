"""Trusted threads: the per-user record of the thread folders whose handoffs may brief a model.

A session-start hook finds ``.handoff/main`` above wherever the agent starts, including in a
repository someone else wrote; a briefing from there would put a stranger's text into the
model's context as if it were the user's own notes. So the hooks brief only from a thread that
this user trusts, as direnv runs only an ``.envrc`` that was allowed:

- the folder and every file in it (and in ``history/``) is this user's, and none is writable by
  the group or others;
- and the record ``trusted-threads``, beside the acknowledgement key (outside every thread:
  ``$XDG_STATE_HOME/handoff-files/``, see :mod:`~handoff_files.foundation.secret`), holds the
  folder's real path with its identity on disk (device and inode). A folder replaced by another
  at the same path (a clone, a copy, another thread moved there) is another folder: not trusted.

A thread folder this user's library creates is trusted at once (:func:`remember_created`);
``handoff trust THREAD`` trusts one explicitly (:func:`trust`), ``--revoke`` forgets it.
The record is JSON, mode 0600, rewritten atomically under an ``flock`` of its own (without an
fsync for a folder the library creates: a crash may lose that entry, and the hooks then say how
to trust it); a record that is not this user's, or is writable by others, is refused (it could
make any folder trusted).
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from handoff_files.foundation.clock import iso_z
from handoff_files.foundation.errors import HandoffError, HandoffNotFoundError
from handoff_files.thread.userrecord import locked, read_entries, record_path, write_entries

__all__ = [
    "TRUST_NAME",
    "ThreadTrustError",
    "TrustedThread",
    "is_private",
    "remember_created",
    "revoke",
    "trust",
    "trust_path",
    "trusted_threads",
    "why_untrusted",
]

#: The record's file name, beside the acknowledgement key.
TRUST_NAME: Final = "trusted-threads"


class ThreadTrustError(HandoffError):
    """A thread cannot be trusted (not yours, writable by others), or the trust record cannot be used."""


@dataclass(frozen=True, slots=True)
class TrustedThread:
    """One trusted thread folder: its real path (as text), its identity on disk, when and how it was trusted."""

    path: str
    device: int
    inode: int
    trusted_at: str
    how: str

    def to_json(self) -> dict[str, Any]:
        """The entry as a JSON object (the record's shape, and ``handoff trust --list --json``)."""
        return {
            "path": self.path,
            "device": self.device,
            "inode": self.inode,
            "trusted_at": self.trusted_at,
            "how": self.how,
        }


def trust_path() -> Path:
    """Where the record lives: beside the acknowledgement key (see the module's docstring)."""
    return record_path(TRUST_NAME)


def trusted_threads() -> list[TrustedThread]:
    """Every entry of the record, in the order they were made (none if there is no record yet).

    :raises ThreadTrustError: if the record is not a private file of this user's, or does not read.
    """
    return _read(trust_path())


def why_untrusted(thread: str | os.PathLike[str]) -> str | None:
    """Why the hooks must not brief from *thread*; None if they may. Reads only.

    :returns: one clause for a person (it is printed after "no briefing was given: ").
    :raises ThreadTrustError: if the record cannot be read.
    """
    folder = Path(os.path.realpath(thread))
    problem = _ownership_problem(folder)
    if problem is not None:
        return problem
    st = folder.stat()
    for entry in trusted_threads():
        if entry.path == os.fspath(folder):
            if (entry.device, entry.inode) == (st.st_dev, st.st_ino):
                return None
            return (
                f"the folder at {folder} is not the one you trusted on {entry.trusted_at} (it was replaced, "
                "perhaps by a clone or a copy)"
            )
    return f"you have not trusted the thread {folder} (it was not made here by handoff-files)"


def is_private(thread: str | os.PathLike[str]) -> bool:
    """Whether *thread* and its files are this user's and no one else may even read them (0700 / 0600).

    That is how the library makes a thread; a git checkout never does (it writes 0755 and 0644).
    """
    folder = Path(os.path.realpath(thread))
    return all(
        st.st_uid == os.geteuid() and (stat.S_ISLNK(st.st_mode) or not st.st_mode & 0o077) for _, st in _entries(folder)
    )


def trust(
    thread: str | os.PathLike[str], *, how: str = "trusted with handoff trust", sync: bool = True
) -> TrustedThread:
    """Record that this user trusts the thread folder *thread* as it is now. Writes the record.

    :param sync: False skips the fsyncs (still atomic): for a trust a crash may lose, since the hooks
        then only say the thread is not trusted, and how to trust it.

    :raises HandoffNotFoundError: if there is no such folder.
    :raises ThreadTrustError: if it is not this user's, is writable by others, or the record cannot be written.
    """
    folder = Path(os.path.realpath(thread))
    if not folder.is_dir():
        msg = "no such thread folder: only a folder that exists can be trusted"
        raise HandoffNotFoundError(folder, msg)
    problem = _ownership_problem(folder)
    if problem is not None:
        msg = f"cannot be trusted: {problem}"
        raise ThreadTrustError(folder, msg)
    st = folder.stat()
    entry = TrustedThread(os.fspath(folder), st.st_dev, st.st_ino, iso_z(timespec="seconds"), how)
    with _locked() as path:
        kept = [old for old in _read(path) if old.path != entry.path and _still_there(old)]
        _write(path, [*kept, entry], sync=sync)
    return entry


def revoke(thread: str | os.PathLike[str]) -> bool:
    """Forget *thread* (its real path) in the record. Writes the record.

    :returns: whether it was trusted.
    :raises ThreadTrustError: if the record cannot be read or written.
    """
    folder = os.path.realpath(thread)
    with _locked() as path:
        entries = _read(path)
        kept = [old for old in entries if old.path != folder]
        if len(kept) == len(entries):
            return False
        _write(path, kept)
    return True


def remember_created(thread: str | os.PathLike[str]) -> None:
    """Trust a thread folder the library has just created for this user; never raises.

    A record that cannot be written (no home, a read-only state folder) must not fail the save
    that made the folder: the hooks will then say the thread is not trusted, and how to trust it.
    """
    with contextlib.suppress(HandoffError, OSError):
        trust(thread, how="created by handoff-files", sync=False)  # a first save pays no extra fsync


def _ownership_problem(folder: Path) -> str | None:
    """Why *folder*'s owner or modes rule it out (None: they do not), naming the first file at fault."""
    try:
        entries = list(_entries(folder))
    except OSError as exc:
        return f"the thread {folder} cannot be looked at: {exc.strerror or exc}"
    for path, st in entries:
        if st.st_uid != os.geteuid():
            return f"{path} belongs to user {st.st_uid}, not to you"
        if not stat.S_ISLNK(st.st_mode) and st.st_mode & 0o022:
            mode = stat.S_IMODE(st.st_mode)
            return f"{path} can be written by others (mode {mode:04o}); remove that with chmod go-w"
    return None


def _entries(folder: Path) -> Iterator[tuple[Path, os.stat_result]]:
    """The folder, what it holds, and what its ``history/`` holds, each with its ``lstat``."""
    yield folder, folder.stat()
    history = folder / "history"
    for directory in (folder, history):
        if directory is history and not history.is_dir():
            return
        with os.scandir(directory) as listing:
            for item in listing:
                yield Path(item.path), item.stat(follow_symlinks=False)


def _still_there(entry: TrustedThread) -> bool:
    """Whether *entry*'s folder is still the one trusted (a record of gone folders is pruned as it is written)."""
    try:
        st = os.stat(entry.path)  # noqa: PTH116 -- the text as stored: a Path per entry costs more than the stat
    except OSError:
        return False
    return (st.st_dev, st.st_ino) == (entry.device, entry.inode)


def _locked() -> contextlib.AbstractContextManager[Path]:
    """Hold the record's own ``flock`` (``trusted-threads.lock``): two writers never lose an entry."""
    return locked(trust_path(), ThreadTrustError)


def _read(path: Path) -> list[TrustedThread]:
    entries = read_entries(path, "threads", ThreadTrustError, "trust your threads again (`handoff trust THREAD`)")
    try:
        return [_entry(item) for item in entries]
    except (KeyError, TypeError) as exc:
        msg = f"not a trust record ({exc}): remove it and trust your threads again (`handoff trust THREAD`)"
        raise ThreadTrustError(path, msg) from exc


def _entry(item: dict[str, Any]) -> TrustedThread:
    fields = (item["path"], item["device"], item["inode"], item["trusted_at"], item["how"])
    if not all(isinstance(value, str) for value in (fields[0], fields[3], fields[4])):
        msg = "path, trusted_at and how are strings"
        raise TypeError(msg)
    if not all(isinstance(value, int) and not isinstance(value, bool) for value in fields[1:3]):
        msg = "device and inode are integers"
        raise TypeError(msg)
    return TrustedThread(fields[0], fields[1], fields[2], fields[3], fields[4])  # no Path: a thousand cost 25 ms


def _write(path: Path, entries: list[TrustedThread], *, sync: bool = True) -> None:
    write_entries(path, "threads", [entry.to_json() for entry in entries], sync=sync)
