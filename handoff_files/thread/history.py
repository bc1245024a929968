"""History: the generations a thread keeps, listed newest first, each verified."""

from __future__ import annotations

from pathlib import Path

from handoff_files.format.loader import load
from handoff_files.foundation.errors import HandoffError, HandoffNotFoundError
from handoff_files.thread.layout import ThreadDir
from handoff_files.thread.results import HistoryEntry

__all__ = ["list_history"]


def list_history(layout: ThreadDir, primary: Path) -> list[HistoryEntry]:
    """List the generations in ``history/``, newest first, each verified; a bad primary is listed first.

    Reads only: nothing is repaired or removed.

    :param layout: the thread directory.
    :param primary: its primary file (the generation it holds is marked current).
    :returns: one entry per generation file, with its problem if it does not verify.
    :raises HandoffError: if ``history/`` exists but cannot be listed.
    """
    entries = []
    current = None
    try:
        current = load(primary, follow_symlinks=False).generation
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
    return entries
