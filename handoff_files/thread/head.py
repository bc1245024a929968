"""The head: the generation, parent seal and ids the next save chains from, found on disk or remembered."""

from __future__ import annotations

import os
from dataclasses import dataclass

from handoff_files.foundation.errors import HandoffError
from handoff_files.thread.mirror import Mirror, read_mirror
from handoff_files.thread.scan import PrimaryState, scan, vouched
from handoff_files.thread.settings import ThreadSettings

__all__ = ["Head", "HeadTracker", "find_head"]

# what identifies the disk a store wrote last: the primary's and the journal's inode, mtime and
# size, and the newest generation listed
_Key = tuple[tuple[int, int, int], tuple[int, int, int], int]


@dataclass(frozen=True, slots=True)
class Head:
    """What the next save chains from."""

    generation: int  # highest generation seen anywhere (0 for a new thread)
    parent: str | None  # seal of the newest verified generation
    agent_id: str | None
    thread_id: str | None
    primary: PrimaryState  # how the primary stood: a "bad" or "legacy" one is kept before it is replaced
    saves: int = 0  # saves so far, as state.json counts them


def find_head(thread: ThreadSettings) -> Head:
    """Work out the head from the disk: the newest verified generation, ``state.json`` and the journal.

    The number comes only from this thread's verified generations, well-formed ``history/`` names
    (another thread's file too: it is never overwritten) and the journal's save lines, and from
    ``state.json`` where one of those confirms it (:func:`~handoff_files.thread.scan.vouched`).
    The parent is the seal of this thread's newest verified generation, never another thread's.
    Call under the writers' lock, or the head may be stale before it is used.

    :param thread: the thread.
    :returns: the head the next save chains from.
    :raises HandoffError: if ``history/`` or the journal cannot be read.
    """
    found = scan(thread)
    try:
        mirror: Mirror | None = read_mirror(thread.layout.mirror)
    except HandoffError:
        mirror = None
    saves = mirror.saves if mirror else found.highest
    # a generation the journal (or a confirmed state.json) recorded was acknowledged once: never reuse its number
    highest, mirror, _ = vouched(found, mirror)
    highest = max(highest, found.taken)
    newest_sealed = found.newest.generation if found.newest and found.newest.handoff.seal else 0
    if mirror is not None and mirror.generation > newest_sealed:
        # the newest generation survives only in state.json (a rebuilt restore): chain to its seal
        return Head(highest, mirror.seal, mirror.agent_id, mirror.thread_id, found.primary, saves)
    if found.newest is None or found.newest.handoff.seal is None:
        # nothing sealed, or an older version migrated in memory: no 2.0 seal to chain to, no ids
        return Head(highest, None, None, None, found.primary, saves)
    handoff = found.newest.handoff
    return Head(highest, str(handoff.seal), handoff.agent_id, handoff.thread_id, found.primary, saves)


class HeadTracker:
    """One store's head: the one it wrote last while the primary is still that file, else the disk's.

    :param thread: the thread the store writes.
    """

    def __init__(self, thread: ThreadSettings) -> None:
        self._thread = thread
        self._cache: tuple[_Key, Head] | None = None
        #: Whether the last :meth:`current` found the files as this store left them (nobody else
        #: wrote since its own last save, so what that save checked still holds).
        self.unchanged = False

    def current(self, listing: list[tuple[int, str]]) -> Head:
        """The head the next save chains from (call under the writers' lock).

        The head this store wrote last is reused while the primary and the journal are the same
        files (inode, mtime, size) and ``history/`` holds no newer generation; otherwise the disk
        is scanned. The journal counts: a journal-first save commits there alone, and a writer
        killed just after its commit point leaves the primary and ``history/`` as they were.

        :param listing: ``history/``'s generation files, newest first (:meth:`ThreadDir.generations`).
        :returns: the head.
        :raises HandoffError: if the disk must be scanned and cannot be read.
        """
        self.unchanged = False
        if self._cache is not None:
            newest_listed = listing[0][0] if listing else 0
            if self._cache[0] == self._key(newest_listed):
                self.unchanged = True
                return self._cache[1]
        return find_head(self._thread)

    def remember(self, head: Head) -> None:
        """Keep *head*, which this store just wrote, keyed by the primary it wrote.

        :param head: the head after the save.
        """
        key = self._key(head.generation)
        # a file that cannot be seen: the save is durable; the next one just scans the disk again
        self._cache = None if key is None else (key, head)

    def _key(self, newest_listed: int) -> _Key | None:
        """The primary's and the journal's identity, with the newest generation listed (None: unseen)."""
        try:
            primary = os.lstat(self._thread.primary)
            journal = os.lstat(self._thread.layout.journal)
        except OSError:
            return None  # scan the disk, which names what is wrong
        return (
            (primary.st_ino, primary.st_mtime_ns, primary.st_size),
            (journal.st_ino, journal.st_mtime_ns, journal.st_size),
            newest_listed,
        )
