"""Step 0.8 → 1.0: rename the 0.8 keys, give plain-text decisions and todo items their 1.0 shape."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

SOURCE: Final = "0.8"
TARGET: Final = "1.0"

_KNOWN: Final = frozenset(
    {
        "schema_version",
        "session",
        "timestamp",
        "state",
        "summary",
        "decisions",
        "todo",
        "warnings",
        "checksum",
        "_notes",
    }
)


def upgrade(document: Mapping[str, Any]) -> dict[str, Any]:
    """Return the 1.0 form of a 0.8 document (pure: no I/O, input untouched)."""
    notes = list(document.get("_notes", []))
    decisions = []
    for i, text in enumerate(document.get("decisions", []), 1):
        decisions.append(
            {"decision": text, "reason": "not recorded (0.8 kept decisions as plain text)", "status": "decided"}
        )
        notes.append(f"0.8 decision {i} was plain text; read as a decided decision whose reason was not recorded")
    todo = list(document.get("todo", []))
    priorities = [{"task": task, "urgency": "first" if i == 0 else "after_primary"} for i, task in enumerate(todo)]
    if todo:
        notes.append(
            f"0.8 todo list of {len(todo)} item(s) read in order: the first given urgency 'first', "
            "the rest 'after_primary'"
        )
    result: dict[str, Any] = {
        "schema_version": TARGET,
        "session_id": document.get("session"),
        "created_at": document.get("timestamp"),
        "state": dict(document.get("state", {})),
        "narrative": document.get("summary", ""),
        "decisions": decisions,
        "priorities": priorities,
        "warnings": list(document.get("warnings", [])),
        "checksum": document.get("checksum"),
    }
    extra = {key: document[key] for key in document if key not in _KNOWN}
    if extra:
        result["legacy_extra"] = extra
        notes.append(f"0.8 keys outside its format kept as legacy_extra: {', '.join(sorted(extra))}")
    result["_notes"] = notes
    return result
