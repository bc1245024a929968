"""The head: the generation, parent seal and ids the next save chains from, found on disk or remembered."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Final

from handoff_files.foundation.errors import HandoffError
from handoff_files.foundation.names import generation_stem
from handoff_files.thread.layout import EXTENSIONS
from handoff_files.thread.mirror import Mirror, read_mirror
from handoff_files.thread.scan import PrimaryState, scan, vouched
from handoff_files.thread.settings import ThreadSettings

__all__ = ["Head", "HeadTracker", "find_head"]

# what identifies the disk a store wrote last: the primary's and the journal's inode, mtime and
# size, and whether history/ holds a file of the generation after the head (either format)
_Key = tuple[tuple[int, int, int], tuple[int, int, int], bool]
#: The saves a store's own listing of ``history/`` is kept through before it lists the folder again
#: (a file another process added under an older number, say by a repair, is seen by then).
RELIST_EVERY: Final = 64
# the names a generation's file in history/ may have (either format: a store opened with the other one may write)
_ENDINGS: Final = tuple(EXTENSIONS.values())


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
        # nothing sealed, or an older version migrated in memory: no seal to chain to, no ids
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
        # history/ as this store's last save left it, and the saves since it was last listed
        self._listing: list[tuple[int, str]] | None = None
        self._kept_for = 0
        self._as_left: bool | None = None  # what listing() found, for the current() that follows it
        self._paths: tuple[str, str, str] | None = None  # the primary, the journal, history/ (see _key)
        #: Whether the last :meth:`current` found the files as this store left them (nobody else
        #: wrote since its own last save, so what that save checked still holds).
        self.unchanged = False

    def listing(self) -> list[tuple[int, str]]:
        """``history/``'s generation files, newest first (call under the writers' lock).

        As this store's last save left them while the files are as it left them (see
        :meth:`current`), for up to :data:`RELIST_EVERY` saves; else listed: a thread that keeps
        every generation (a LangGraph saver's) would otherwise list thousands of names per save.

        :raises HandoffError: if ``history/`` exists but cannot be listed.
        """
        self._as_left = self._is_as_left()  # current() right after uses it: one look at the files per save
        if self._listing is not None and self._kept_for < RELIST_EVERY and self._as_left:
            return self._listing
        self._listing = None
        return self._thread.layout.generations()

    def current(self, listing: list[tuple[int, str]]) -> Head:
        """The head the next save chains from (call under the writers' lock).

        The head this store wrote last is reused while the primary and the journal are the same
        files (inode, mtime, size) and ``history/`` holds no file of the generation after it;
        otherwise the disk is scanned. The journal counts: a journal-first save commits there
        alone, and a writer killed just after its commit point leaves the primary and ``history/``
        as they were; a full save killed after its commit point leaves that next file.

        :param listing: ``history/``'s generation files, newest first (:meth:`listing`).
        :returns: the head.
        :raises HandoffError: if the disk must be scanned and cannot be read.
        """
        as_left = self._is_as_left() if self._as_left is None else self._as_left
        self._as_left = None
        newest_listed = listing[0][0] if listing else 0
        self.unchanged = self._cache is not None and as_left and newest_listed <= self._cache[1].generation
        if self._cache is not None and self.unchanged:
            return self._cache[1]
        return find_head(self._thread)

    def remember(self, head: Head, before: list[tuple[int, str]] | None = None) -> None:
        """Keep *head*, which this store just wrote, keyed by the primary it wrote.

        :param head: the head after the save.
        :param before: ``history/``'s listing the save was given, when the save wrote only its own
            generation's file there (and pruned past ``keep``): kept as the next save's listing.
        """
        # no file of the generation after it is looked for: this store holds the lock, and the next
        # save's look finds one a person put there meanwhile (the keys differ, so the disk is scanned)
        key = self._key(head.generation, probe=False)
        # a file that cannot be seen: the save is durable; the next one just scans the disk again
        self._cache = None if key is None else (key, head)
        if before is None or key is None:
            self._listing = None
            return
        name = self._thread.layout.generation_file(head.generation, self._thread.format).name
        self._kept_for = self._kept_for + 1 if self._listing is not None else 1
        self._listing = [(head.generation, name), *before][: self._thread.keep]

    def _is_as_left(self) -> bool:
        """Whether the primary, the journal and ``history/``'s next name are as this store's last save left them."""
        return self._cache is not None and self._cache[0] == self._key(self._cache[1].generation)

    def _key(self, generation: int, *, probe: bool = True) -> _Key | None:
        """The primary's and the journal's identity, and whether a file of the generation after *generation* exists.

        :param probe: look for that file (else taken as absent: see :meth:`remember`).
        """
        if self._paths is None:  # strings, made once: two per save, this is on the hot path
            layout = self._thread.layout
            self._paths = (os.fspath(self._thread.primary), os.fspath(layout.journal), os.fspath(layout.history_dir))
        primary_path, journal_path, history = self._paths
        try:
            primary = os.lstat(primary_path)
            journal = os.lstat(journal_path)
        except OSError:
            return None  # scan the disk, which names what is wrong
        # faccessat, not lstat: a missing name (the usual case) raises nothing; any other failure to
        # see it reads as absent, and the save that follows meets that failure and names it
        stem = f"{history}/{generation_stem(generation + 1)}"
        after = probe and any(os.access(stem + ending, os.F_OK, follow_symlinks=False) for ending in _ENDINGS)
        return (
            (primary.st_ino, primary.st_mtime_ns, primary.st_size),
            (journal.st_ino, journal.st_mtime_ns, journal.st_size),
            after,
        )
