"""Take the words of removed generations out of the journal: their summary lines say only that they were removed.

A journal line of a save carries the generation's first sentence and next step (its summary), so
a checkpoint deleted on purpose (``delete_for_runs``, a prune) would live on in the journal. The
lines of the generations removed are rewritten with no summary and their journal-first document
lines dropped; every other line stays byte for byte. Each journal file is replaced atomically and
durably, under the writers' lock the caller holds.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Final

from handoff_files.foundation.atomic import write_durable
from handoff_files.foundation.errors import HandoffNotFoundError
from handoff_files.thread.journal import DOCUMENT, MAX_JOURNAL_BYTES, Journal
from handoff_files.thread.journal import _encode as encode_line
from handoff_files.thread.journal import _parse_line as parse_line
from handoff_files.thread.tail import read_whole

__all__ = ["REMOVED", "redact"]

#: The summary a removed generation's journal lines keep.
REMOVED: Final = "(removed: its generation was deleted)"
_WORDS: Final = ("first_sentence", "next")


def redact(journal: Journal, generations: Collection[int]) -> int:
    """Rewrite the journal lines of *generations* without their words; return how many lines changed.

    Call under the writers' lock. A damaged or torn line is left as it is (it holds nothing readable).

    :raises HandoffError: if a journal file cannot be read or replaced.
    """
    doomed = set(generations)
    changed = 0
    for path in (journal.previous, journal.path):
        changed += _redact_file(path, doomed) if doomed else 0
    return changed


def _redact_file(path: Path, doomed: set[int]) -> int:
    try:
        data = read_whole(path, max_bytes=MAX_JOURNAL_BYTES)
    except HandoffNotFoundError:
        return 0
    lines = data.split(b"\n")
    out: list[bytes] = []
    changed = 0
    for number, raw in enumerate(lines):
        last = number == len(lines) - 1
        entry = parse_line(raw) if raw and not last else None
        if entry is None or entry.generation not in doomed:
            out.append(raw)
            continue
        changed += 1
        fields = entry.fields()
        if DOCUMENT in fields:
            continue  # a journal-first save's whole document: dropped with its generation
        if fields.get("summary") == REMOVED and not any(key in fields for key in _WORDS):
            changed -= 1
            out.append(raw)
            continue
        for key in _WORDS:
            fields.pop(key, None)
        fields["summary"] = REMOVED
        out.append(encode_line(fields).rstrip(b"\n"))
    if changed:
        write_durable(path, b"\n".join(out))
    return changed
