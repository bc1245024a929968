"""Step 1.0 → 2.0: add the envelope, make times timezone-aware, give warnings and state their 2.0 shape."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

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
        "legacy_extra",
        "_notes",
    }
)
_DECISION_FIELDS: Final = frozenset({"decision", "reason", "alternatives_considered", "reversible", "status"})
_URGENCIES: Final = ("first", "primary", "after_primary", "if_time_permits")


def _aware(value: Any, what: str, notes: list[str]) -> Any:
    """A naive ISO timestamp is read as UTC (the 1.0 writers used local time and did not say which)."""
    if not isinstance(value, str) or not value:
        return value
    tail = value[10:]
    if value.endswith("Z") or "+" in tail or "-" in tail:
        return value
    notes.append(f"{what} {value!r} had no timezone; read as UTC")
    return value + "Z"


def _state(state: Mapping[str, Any], session_id: Any, notes: list[str]) -> dict[str, Any]:
    result = {key: state[key] for key in state if key in _STATE_FIELDS}
    data = dict(result.get("data") or {}) if isinstance(result.get("data"), dict) else {}
    if "data" in result and not isinstance(result["data"], dict):
        data["legacy_data"] = result["data"]
        notes.append("1.0 state.data was not an object; kept as state.data.legacy_data")
    for key in sorted(set(state) - _STATE_FIELDS):
        target = key if key not in data else f"legacy_{key}"
        data[target] = state[key]
        notes.append(f"1.0 state field {key!r} has no 2.0 field; kept as state.data.{target}")
    result["data"] = data
    if "timestamp" in result:
        result["timestamp"] = _aware(result["timestamp"], "state.timestamp", notes)
    environment = result.get("environment")
    if isinstance(environment, dict):
        converted = {}
        for key, value in environment.items():
            if isinstance(value, str):
                converted[key] = value
            else:
                converted[key] = json.dumps(value)
                notes.append(
                    f"state.environment.{key} was {value!r}; 2.0 environment values are strings, kept as JSON text"
                )
        result["environment"] = converted
    if "session_id" not in result and session_id is not None:
        result["session_id"] = session_id
        notes.append("state had no session_id; took the document's session_id")
    elif session_id is not None and result.get("session_id") != session_id:
        data.setdefault("legacy_document_session_id", session_id)
        notes.append(
            f"document session_id {session_id!r} differs from state.session_id {result.get('session_id')!r}; "
            "kept the state's, the document's as state.data.legacy_document_session_id"
        )
    return result


def _decisions(decisions: list[Any], notes: list[str]) -> list[Any]:
    result = []
    for i, decision in enumerate(decisions, 1):
        if not isinstance(decision, dict):
            result.append(decision)  # left for validation to refuse with its own message
            continue
        extra = {key: decision[key] for key in decision if key not in _DECISION_FIELDS}
        if extra:
            notes.append(
                f"decision {i} had fields 2.0 does not keep: {json.dumps(extra, sort_keys=True, ensure_ascii=False)}"
            )
        result.append({key: decision[key] for key in decision if key in _DECISION_FIELDS})
    return result


def _priorities(priorities: list[Any], notes: list[str]) -> list[Any]:
    result = []
    for i, priority in enumerate(priorities, 1):
        if not isinstance(priority, dict):
            result.append(priority)  # left for validation to refuse with its own message
            continue
        urgency = priority.get("urgency")
        if urgency not in _URGENCIES:
            notes.append(
                f"priority {i} had urgency {urgency!r}, not a 2.0 urgency; kept its place in the order "
                "with urgency 'primary'"
            )
            urgency = "primary"
        extra = {key: priority[key] for key in priority if key not in ("task", "urgency")}
        if extra:
            notes.append(
                f"priority {i} had fields 2.0 does not keep: {json.dumps(extra, sort_keys=True, ensure_ascii=False)}"
            )
        result.append({"task": priority.get("task"), "urgency": urgency})
    return result


def upgrade(document: Mapping[str, Any]) -> dict[str, Any]:
    """Return the 2.0 form of a 1.0 document (pure: no I/O, input untouched; unsealed)."""
    notes = list(document.get("_notes", []))
    notes.append(
        "the old seal covered only state (the 16-hex sha256 checksum of 0.8 and 1.0); "
        "narrative, decisions, priorities and warnings were not covered by it"
    )
    session_id = document.get("session_id")
    state = _state(document.get("state") or {}, session_id, notes)
    extra = dict(document.get("legacy_extra") or {})
    extra.update({key: document[key] for key in document if key not in _TOP_LEVEL})
    if extra:
        state["data"].setdefault("legacy", {}).update(extra)
        notes.append(f"top-level keys outside the format kept in state.data.legacy: {', '.join(sorted(extra))}")
    positive = isinstance(session_id, int) and not isinstance(session_id, bool) and session_id >= 1
    generation = session_id if positive else 1
    if generation != session_id:
        notes.append(f"session_id {session_id!r} is not a positive integer; generation set to 1")
    else:
        notes.append(f"generation taken from session_id {session_id}")
    notes.append(f"1.0 records no agent or thread; agent_id and thread_id set to {LEGACY_ID!r}")
    warnings = []
    for warning in document.get("warnings") or []:
        warnings.append({"text": warning} if isinstance(warning, str) else warning)
    return {
        "schema_version": TARGET,
        "agent_id": LEGACY_ID,
        "thread_id": LEGACY_ID,
        "generation": generation,
        "created_at": _aware(document.get("created_at"), "created_at", notes),
        "parent": None,
        "lineage": {"adopted_from": None, "migrated_from": None},
        "narrative": document.get("narrative", ""),
        "warnings": warnings,
        "priorities": _priorities(list(document.get("priorities") or []), notes),
        "state": state,
        "decisions": _decisions(list(document.get("decisions") or []), notes),
        "_notes": notes,
    }
