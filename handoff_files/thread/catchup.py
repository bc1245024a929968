"""Catching up: a generation only the journal holds (its journal-first writer killed after its commit) gets its copy."""

from __future__ import annotations

import os

from handoff_files.format.codec import Format
from handoff_files.foundation.errors import HandoffError
from handoff_files.thread.copyback import copy_back
from handoff_files.thread.journal import SAVE_EVENTS, Journal
from handoff_files.thread.layout import ThreadDir

__all__ = ["catch_up", "journal_ahead"]


def journal_ahead(layout: ThreadDir, fmt: Format = "json") -> bool:
    """Whether the journal's last save names a generation ``history/`` has no file of. Reads only.

    True after a journal-first writer was killed between its commit point and its ``history/`` copy
    (or after a person removed that file): reads the journal's last lines and looks up one name,
    never a listing of ``history/`` (a saver's thread may keep thousands of files).
    """
    try:
        last, _ = Journal(layout).last(*SAVE_EVENTS)
    except HandoffError:
        return False  # what cannot be read is reported by the reader that needs it
    if last is None or last.generation is None:
        return False
    return not os.path.lexists(layout.generation_file(last.generation, fmt))


def catch_up(layout: ThreadDir, fmt: Format | None = None) -> list[str]:
    """Write the ``history/`` copy of each generation only the journal holds. Call under the writers' lock.

    :returns: a note for each copy written.
    :raises HandoffWriteError: if a copy cannot be written.
    """
    journal = Journal(layout)
    saves = ((entry.generation, entry.seal, document) for entry, document in journal.committed_documents())
    return copy_back(saves, journal.path, layout, fmt)
