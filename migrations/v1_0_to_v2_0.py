"""Step 1.0 → 2.0: add the envelope, make times timezone-aware, give warnings and state their 2.0 shape."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from handoff_files.migrations._shared import free_name, list_of_objects, list_of_strings, mapping, quote, string

from handoff_files.format.versions import EXTRA, NOTES

SOURCE: Final = "1.0"
TARGET: Final = "2.0"

#: 1.0 records no agent or thread; a store that migrates a file gives it the thread's own ids.
LEGACY_ID: Final = "legacy"

_STATE_FIELDS: Final = frozenset(
    {
        "session_id",
        "timestamp",
        "active_tasks",
        "completed_tasks",
        "blocked_tasks",
        "environment",
        "error_count",
        "energy_level",
        "data",
    }
)
_TOP_LEVEL: Final = frozenset(
    {
        "schema_version",
        "session_id",
        "created_at",
        "state",
        "narrative",
        "decisions",
        "priorities",
        "warnings",
        "checksum",
    }
)
_DECISION_FIELDS: Final = frozenset({"decision", "reason", "alternatives_considered", "reversible", "status"})
_URGENCIES: Final = ("first", "primary", "after_primary", "if_time_permits")
_STATUSES: Final = ("decided", "deferred", "reversed")


def _named(value: Any, names: tuple[str, ...]) -> str | None:
    """The 2.0 name *value* spells in any case (1.0 writers wrote ``DEFERRED`` as often as ``deferred``), or None."""
    if isinstance(value, str) and value.lower() in names:
        return value.lower()
    return None


def _aware(value: Any, what: str, notes: list[str]) -> str:
    """A naive ISO timestamp is read as UTC (the 1.0 writers used local time and did not say which)."""
    if not isinstance(value, str) or len(value) < 10:
        msg = f"{what} must be an ISO-8601 date-time string, found {quote(value)}"
        raise TypeError(msg)
    tail = value[10:]
    if value.endswith("Z") or "+" in tail or "-" in tail:
        return value
    notes.append(f"{what} {value!r} had no timezone; read as UTC")
    return value + "Z"


def _state(document: Mapping[Any, Any], session_id: Any, notes: list[str]) -> dict[str, Any]:
    state = mapping(document, "state")
    result = {key: state[key] for key in state if key in _STATE_FIELDS and key != "data"}
    data = mapping(state, "data") if "data" in state else {}
    for key in sorted(set(state) - _STATE_FIELDS):
        target = free_name(data, key)
        data[target] = state[key]
        notes.append(f"1.0 state field {key!r} has no 2.0 field; kept as state.data.{target}")
    if "timestamp" in result and result["timestamp"] is not None:
        result["timestamp"] = _aware(result["timestamp"], "state.timestamp", notes)
    environment = result.get("environment")
    if environment is not None:
        if not isinstance(environment, dict):
            msg = f"state.environment must be an object, found {quote(environment)}"
            raise TypeError(msg)
        converted = {}
        for key, value in environment.items():
            converted[key] = value if isinstance(value, str) else json.dumps(value)
            if not isinstance(value, str):
                notes.append(
                    f"state.environment.{key} was {quote(value)}; 2.0 environment values are strings, kept as JSON text"
                )
        result["environment"] = converted
    if "session_id" not in result:
        result["session_id"] = session_id
        notes.append("state had no session_id; took the document's session_id")
    elif result["session_id"] != session_id:
        target = free_name(data, "document_session_id")
        data[target] = session_id
        notes.append(
            f"document session_id {session_id!r} differs from state.session_id {result['session_id']!r}; "
            f"kept the state's, the document's as state.data.{target}"
        )
    result["data"] = data
    return result


def _kept(data: dict[str, Any], name: str, value: Any, what: str, notes: list[str]) -> None:
    """Keep a value 2.0 has no field for in state.data under a free name, and say where."""
    target = free_name(data, name)
    data[target] = value
    notes.append(f"{what} has no 2.0 field; kept as state.data.{target}: {quote(value)}")


def _unnamed(data: dict[str, Any], name: str, value: Any) -> str:
    """Keep *value*, which 2.0 has no name for, in state.data under a free *name*; return where it went."""
    target = free_name(data, name)
    data[target] = value
    return f"state.data.{target}"


def _decisions(document: Mapping[Any, Any], data: dict[str, Any], notes: list[str]) -> list[Any]:
    result = []
    for i, decision in enumerate(list_of_objects(document, "decisions", "decision"), 1):
        extra = {key: decision[key] for key in decision if key not in _DECISION_FIELDS}
        if extra:
            _kept(data, f"decision_{i}_fields", extra, f"decision {i}'s extra fields", notes)
        kept = {key: decision[key] for key in decision if key in _DECISION_FIELDS}
        if "status" in kept:
            status = _named(kept["status"], _STATUSES)
            if status is None:
                where = _unnamed(data, f"decision_{i}_status", kept.pop("status"))
                notes.append(
                    f"decision {i} had status {quote(decision['status'])}, not a 2.0 status; kept as "
                    f"{where}, and the decision reads as 'decided'"
                )
            else:
                kept["status"] = status
        result.append(kept)
    return result


def _priorities(document: Mapping[Any, Any], data: dict[str, Any], notes: list[str]) -> list[Any]:
    result = []
    for i, priority in enumerate(list_of_objects(document, "priorities", "priority"), 1):
        urgency = _named(priority.get("urgency"), _URGENCIES)
        if urgency is None:
            given = priority.get("urgency")
            kept = "" if given is None else f", and the value as {_unnamed(data, f'priority_{i}_urgency', given)}"
            notes.append(
                f"priority {i} had urgency {quote(given)}, not a 2.0 urgency; kept its place "
                f"in the order with urgency 'primary'{kept}"
            )
            urgency = "primary"
        extra = {key: priority[key] for key in priority if key not in ("task", "urgency")}
        if extra:
            _kept(data, f"priority_{i}_fields", extra, f"priority {i}'s extra fields", notes)
        result.append({"task": priority.get("task"), "urgency": urgency})
    return result


def upgrade(document: Mapping[Any, Any]) -> dict[Any, Any]:
    """Return the 2.0 form of a 1.0 document (pure: no I/O, input untouched; unsealed).

    :raises TypeError: for a field of the wrong type (a string where a list belongs, …).
    """
    notes: list[str] = list(document.get(NOTES, []))
    notes.append(
        "the old seal covered only state (the 16-hex sha256 checksum of 0.8 and 1.0); "
        "narrative, decisions, priorities and warnings were not covered by it"
    )
    session_id = document.get("session_id")
    if not isinstance(session_id, int) or isinstance(session_id, bool):
        msg = f"session_id must be an integer, found {quote(session_id)}"
        raise TypeError(msg)
    state = _state(document, session_id, notes)
    data = state["data"]
    extra = dict(document.get(EXTRA, {}))
    extra.update({key: document[key] for key in document if isinstance(key, str) and key not in _TOP_LEVEL})
    if extra:
        legacy = mapping(data, "legacy") if "legacy" in data else {}
        for key in sorted(extra):
            target = free_name(legacy, key)
            legacy[target] = extra[key]
            notes.append(f"top-level key {key!r} is outside the format; kept as state.data.legacy.{target}")
        data["legacy"] = legacy
    generation = max(session_id, 1)
    if generation != session_id:
        notes.append(f"session_id {session_id} is not a positive integer; generation set to 1")
    else:
        notes.append(f"generation taken from session_id {session_id}")
    # true both where it is read (in memory, the ids are LEGACY_ID) and where `handoff migrate` writes it
    notes.append(
        f"1.0 records no agent or thread: agent_id and thread_id read as {LEGACY_ID!r} until "
        "`handoff migrate` seals it, which gives it the ids of the thread it is sealed in"
    )
    decisions = _decisions(document, data, notes)
    priorities = _priorities(document, data, notes)
    return {
        "schema_version": TARGET,
        "agent_id": LEGACY_ID,
        "thread_id": LEGACY_ID,
        "generation": generation,
        "created_at": _aware(document.get("created_at"), "created_at", notes),
        "parent": None,
        "lineage": {"adopted_from": None, "migrated_from": None},
        "narrative": string(document, "narrative") or "",
        "warnings": [{"text": text} for text in list_of_strings(document, "warnings")],
        "priorities": priorities,
        "state": state,
        "decisions": decisions,
        NOTES: notes,
    }
