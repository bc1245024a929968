"""Notes: journal lines others write (a coding agent's hooks), and whether a folder holds more than notes."""

from __future__ import annotations

import os
from typing import Any, Final

from handoff_files.foundation.errors import HandoffValidationError
from handoff_files.thread.journal import DOCUMENT, EVENTS, SAVE_EVENTS, Journal
from handoff_files.thread.layout import ThreadDir

__all__ = ["check_note", "ever_saved"]

# the fields every line has, and those the library's own lines give meaning to
_RESERVED_FIELDS: Final = frozenset(
    {"at", "event", "generation", "seal", "summary", "check", DOCUMENT, "durability", "code", "source"}
)
_NOTE_EVENTS: Final = frozenset({"hook"})


def check_note(path: str | os.PathLike[str], event: str, fields: dict[str, Any]) -> None:
    """Refuse a note that would pose as the library's own line: one of its events, or one of its fields.

    :raises HandoffValidationError: naming the event or the fields.
    """
    if event in EVENTS - _NOTE_EVENTS or not event or not isinstance(event, str):
        msg = f"{event!r} is an event the library writes itself; give a note another name (e.g. 'hook')"
        raise HandoffValidationError(path, msg)
    if taken := sorted(_RESERVED_FIELDS & set(fields)):
        msg = f"a note cannot set {', '.join(taken)}: every journal line has them, or the library's own lines use them"
        raise HandoffValidationError(path, msg)


def ever_saved(layout: ThreadDir) -> bool:
    """Whether a save ever wrote here: :meth:`ThreadDir.holds_anything`, except that a journal whose
    lines record no save (a hook's notes on a thread not saved yet) is a fresh thread.

    A damaged journal line might have been a save's: it counts as one.

    :raises HandoffError: if the directory or the journal cannot be read.
    """
    if not layout.holds_anything():
        return False
    journals = {layout.journal.name, layout.previous_journal.name}
    if set(layout.holdings()) - journals or (layout.history_dir.is_dir() and any(layout.history_dir.iterdir())):
        return True
    entries, problems = Journal(layout).check()
    return bool(problems) or any(entry.event in (*SAVE_EVENTS, DOCUMENT) for entry in entries)
