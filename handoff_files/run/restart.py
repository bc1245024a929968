"""Restarting an agent on its thread: the restore it resumes from (or why not), and its acknowledgement."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable

from handoff_files.foundation.errors import HandoffError, NoHandoffError
from handoff_files.thread.journal import Entry, Journal
from handoff_files.thread.layout import HISTORY_DIR, MIRROR_NAME, ThreadDir
from handoff_files.thread.notes import ever_saved
from handoff_files.thread.results import Restored
from handoff_files.thread.store import HandoffStore

__all__ = ["AckWatch", "Unrestorable", "restore_or_reason", "restore_story"]


@dataclasses.dataclass(frozen=True, slots=True)
class Unrestorable:
    """Why a thread gives the next start nothing to resume from; its ``str()`` says it in plain words.

    ``lost`` is True when the thread holds files a save writes but none of them verifies: an agent
    started now would start without its context, the failure a restart exists to prevent.
    """

    error: HandoffError
    lost: bool

    def __str__(self) -> str:
        if self.lost:
            return f"not starting the agent without its context: {self.error.reason} (see `handoff doctor`)"
        return f"cannot restore the thread, so not starting the agent: {self.error}"


def restore_or_reason(thread: HandoffStore | str | os.PathLike[str]) -> Restored | Unrestorable | None:
    """Restore *thread* for the next start: the verified generation, None for a fresh thread, or why not.

    A thread with nothing saved yet (no directory, or none of the files a save writes) is a fresh
    start. Never raises a :class:`HandoffError`: every failure is the reason returned.

    :param thread: a store, or a thread directory to open a fresh store on, as a restarted agent does
        (a directory that does not open is a reason too).
    :returns: the restore, None for a fresh start, or :class:`Unrestorable` saying why there is none.
    """
    try:
        store = thread if isinstance(thread, HandoffStore) else HandoffStore(thread)
    except HandoffError as exc:
        return Unrestorable(exc, lost=False)
    try:
        return store.restore()
    except NoHandoffError as exc:
        return Unrestorable(exc, lost=True) if _holds_anything(ThreadDir(store.path)) else None
    except HandoffError as exc:
        return Unrestorable(exc, lost=False)


def _holds_anything(layout: ThreadDir) -> bool:
    """Whether the thread has any file a save writes (a fresh thread has none, or only empty folders)."""
    try:
        return ever_saved(layout)
    except HandoffError:
        return True  # cannot look: assume there is something to lose


def restore_story(restored: Restored) -> list[str]:
    """The restore a start resumes from, in plain words: where it came from, then each problem met."""
    where = {
        "primary": f"the primary ({restored.path.name})",
        "history": f"{HISTORY_DIR}/{restored.path.name} (not the primary)",
        "journal": f"the journal ({restored.path.name}): its files were lost after the commit",
        "rebuilt": f"{MIRROR_NAME} and the journal (rebuilt: the handoff files were lost)",
        "file": str(restored.path),
    }[restored.source]
    edited = ", a person's unsealed edit" if restored.edited else ""
    told = [f"restored generation {restored.generation} from {where}{edited}"]
    return told + [f"restore of generation {restored.generation}: {problem}" for problem in restored.problems]


Tell = Callable[[HandoffError], None]


class AckWatch:
    """Spots a started agent's acknowledgement: a journal "resumed" line new since the start.

    Made before the start, it notes the newest "resumed" line then; :meth:`new_line` hands back a
    newer one once the agent wrote it. The journal is read from its end (:meth:`Journal.last`), and
    only when ``journal.jsonl`` changed (inode, size, mtime), so waiting costs a ``stat`` per look.
    A line counts as new when it differs from the one noted before the start: the line holds its
    time to the millisecond, so the agent's own line can only equal an older one if it was written
    in the same millisecond about the same generation, which the start of a process rules out.
    Counting lines would read the whole journal, and its count drops when the journal rotates.
    Which generation the line must name is the caller's judgement.

    :param journal: the thread's journal, before the agent starts.
    :param on_error: called with a read failure, which then counts as no line (default: it is raised).
    :raises HandoffError: if the journal cannot be read and there is no *on_error*.
    """

    def __init__(self, journal: Journal, *, on_error: Tell | None = None) -> None:
        self.journal = journal
        self.on_error = on_error
        self.seen = self._stat()
        self.before = self._last_resumed()

    def _stat(self) -> tuple[int, int, int] | None:
        try:
            st = self.journal.path.stat()
        except OSError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns)

    def _last_resumed(self) -> Entry | None:
        try:
            entry, _ = self.journal.last("resumed")
        except HandoffError as exc:
            if self.on_error is None:
                raise
            self.on_error(exc)
            return None
        return entry

    def new_line(self) -> Entry | None:
        """The newest "resumed" line if it is new since the start and the journal changed since the last look.

        :returns: the line, or None (none new, or nothing changed since the last look).
        :raises HandoffError: if the journal cannot be read and there is no *on_error*.
        """
        now = self._stat()
        if now == self.seen:
            return None
        self.seen = now
        entry = self._last_resumed()
        return None if entry is None or entry == self.before else entry
