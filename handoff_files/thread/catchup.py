"""Catching up: a generation only the journal holds (its journal-first writer killed after its commit) gets its copy."""

from __future__ import annotations

from handoff_files.format.codec import Format
from handoff_files.foundation.errors import HandoffError
from handoff_files.thread.copyback import copy_back
from handoff_files.thread.journal import SAVE_EVENTS, Journal
from handoff_files.thread.layout import ThreadDir

__all__ = ["catch_up", "journal_ahead"]


def journal_ahead(layout: ThreadDir) -> bool:
    """Whether the journal's last save names a generation newer than every file in ``history/``. Reads only.

    True after a journal-first writer was killed between its commit point and its ``history/`` copy
    (or after files were removed by hand); reads the journal's last lines and lists ``history/``.
    """
    try:
        last, _ = Journal(layout).last(*SAVE_EVENTS)
        listing = layout.generations()
    except HandoffError:
        return False  # what cannot be read is reported by the reader that needs it
    return last is not None and last.generation is not None and last.generation > (listing[0][0] if listing else 0)


def catch_up(layout: ThreadDir, fmt: Format | None = None) -> list[str]:
    """Write the ``history/`` copy of each generation only the journal holds. Call under the writers' lock.

    :returns: a note for each copy written.
    :raises HandoffWriteError: if a copy cannot be written.
    """
    journal = Journal(layout)
    saves = ((entry.generation, entry.seal, document) for entry, document in journal.committed_documents())
    return copy_back(saves, journal.path, layout, fmt)
