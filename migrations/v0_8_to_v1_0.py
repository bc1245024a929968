"""Step 0.8 → 1.0: rename the 0.8 keys, give plain-text decisions and todo items their 1.0 shape."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from handoff_files.migrations._shared import list_of_strings, mapping, string

from handoff_files.format.versions import EXTRA, NOTES

SOURCE: Final = "0.8"
TARGET: Final = "1.0"

_KNOWN: Final = frozenset(
    {"schema_version", "session", "timestamp", "state", "summary", "decisions", "todo", "warnings", "checksum"}
)


def upgrade(document: Mapping[Any, Any]) -> dict[Any, Any]:
    """Return the 1.0 form of a 0.8 document (pure: no I/O, input untouched).

    :raises TypeError: for a field of the wrong type (a string where a list belongs, …).
    """
    notes: list[str] = list(document.get(NOTES, []))
    session = document.get("session")
    if not isinstance(session, int) or isinstance(session, bool):
        msg = f"session must be an integer, found {session!r}"
        raise TypeError(msg)
    decisions = []
    for i, text in enumerate(list_of_strings(document, "decisions"), 1):
        decisions.append(
            {"decision": text, "reason": "not recorded (0.8 kept decisions as plain text)", "status": "decided"}
        )
        notes.append(f"0.8 decision {i} was plain text; read as a decided decision whose reason was not recorded")
    todo = list_of_strings(document, "todo")
    priorities = [{"task": task, "urgency": "first" if i == 0 else "after_primary"} for i, task in enumerate(todo)]
    if todo:
        notes.append(
            f"0.8 todo list of {len(todo)} item(s) read in order: the first given urgency 'first', "
            "the rest 'after_primary'"
        )
    result: dict[Any, Any] = {
        "schema_version": TARGET,
        "session_id": session,
        "created_at": string(document, "timestamp", required=True),
        "state": mapping(document, "state"),
        "narrative": string(document, "summary") or "",
        "decisions": decisions,
        "priorities": priorities,
        "warnings": list_of_strings(document, "warnings"),
        "checksum": document.get("checksum"),
    }
    extra = {key: document[key] for key in document if isinstance(key, str) and key not in _KNOWN}
    if extra:
        result[EXTRA] = extra  # the 1.0 step files these with 1.0's own unknown keys
        notes.append(f"0.8 keys outside its format carried forward: {', '.join(sorted(extra))}")
    result[NOTES] = notes
    return result
