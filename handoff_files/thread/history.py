"""History: the generations a thread keeps, listed newest first, each verified."""

from __future__ import annotations

from pathlib import Path

from handoff_files.format.loader import load
from handoff_files.foundation.errors import (
    HandoffError,
    HandoffNotFoundError,
)
from handoff_files.thread.layout import MIRROR_NAME, ThreadDir
from handoff_files.thread.mirror import primary_stamp
from handoff_files.thread.results import HistoryEntry

__all__ = ["list_history"]


def list_history(layout: ThreadDir, primary: Path) -> list[HistoryEntry]:
    """List the generations in ``history/``, newest first, each verified; a bad primary is listed first.

    A primary that verifies but has no verified copy in ``history/`` (deleted, damaged, or a
    journal-first save's copy not written yet) is listed too, in its place among the generations:
    a thread whose primary verifies never lists as empty. Reads only: nothing is repaired or removed.

    :param layout: the thread directory.
    :param primary: its primary file (the generation it holds is marked current).
    :returns: one entry per generation file, with its problem if it does not verify; an entry
        whose ``path`` is the primary and whose ``problem`` is None is a generation only the
        primary holds.
    :raises HandoffError: if ``history/`` exists but cannot be listed.
    """
    entries = []
    current = None
    head = None
    try:
        head = load(primary, follow_symlinks=False, written=primary_stamp(primary.parent / MIRROR_NAME))
        current = head.generation
    except HandoffNotFoundError:
        pass
    except HandoffError as exc:
        entries.append(HistoryEntry(None, primary, True, None, None, exc.reason))
    for generation, name in layout.generations():
        path = layout.history_dir / name
        try:
            handoff = load(path, follow_symlinks=False)
        except HandoffError as exc:
            entries.append(HistoryEntry(generation, path, False, None, None, exc.reason))
        else:
            entries.append(
                HistoryEntry(
                    handoff.generation,
                    path,
                    handoff.generation == current,
                    str(handoff.seal),
                    handoff.created_at,
                    None,
                )
            )
    if head is not None and not any(e.generation == current and e.problem is None for e in entries):
        seal = None if head.seal is None else str(head.seal)
        alone = HistoryEntry(head.generation, primary, True, seal, head.created_at, None)
        # newest first, and before a damaged copy of its own generation: the one that verifies leads
        place = (i for i, e in enumerate(entries) if e.generation is not None and e.generation <= head.generation)
        entries.insert(next(place, len(entries)), alone)
    return entries
