"""The mirror: ``state.json``, the state layer and running totals of the generation it mirrors."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import orjson

from handoff_files.format.codec import parse_json
from handoff_files.format.seal import self_check
from handoff_files.foundation.atomic import read_bytes
from handoff_files.foundation.errors import HandoffError
from handoff_files.thread.layout import MIRROR_NAME

__all__ = ["MIRROR_NAME", "Mirror", "mirror_bytes", "read_mirror"]

_KIND: Final = "handoff-files/state"
_MAX_BYTES: Final = 16 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Mirror:
    """What ``state.json`` says: the generation and seal it mirrors, its state layer, and totals."""

    generation: int
    seal: str
    agent_id: str
    thread_id: str
    created_at: str
    state: dict[str, Any]
    saves: int
    last_restore: dict[str, Any] | None


def mirror_bytes(
    *,
    generation: int,
    seal: str,
    agent_id: str,
    thread_id: str,
    created_at: str,
    state: dict[str, Any],
    saves: int,
    last_restore: dict[str, Any] | None,
) -> bytes:
    """Render ``state.json``: readable, self-checking (sha256 over its canonical JSON without ``check``)."""
    fields: dict[str, Any] = {
        "kind": _KIND,
        "generation": generation,
        "seal": seal,
        "agent_id": agent_id,
        "thread_id": thread_id,
        "created_at": created_at,
        "tasks": {
            "active": len(state.get("active_tasks", [])),
            "blocked": len(state.get("blocked_tasks", [])),
            "completed": len(state.get("completed_tasks", [])),
        },
        "saves": saves,
        "last_restore": last_restore,
        "state": state,
    }
    fields["check"] = self_check(fields)
    return orjson.dumps(fields, option=orjson.OPT_INDENT_2) + b"\n"


def read_mirror(path: Path) -> Mirror:
    """Read and verify ``state.json``.

    :raises HandoffNotFoundError: if it is missing.
    :raises HandoffParseError: if it is not strict JSON (a duplicated key, NaN …; see
        :func:`~handoff_files.format.codec.parse_json`), or is too large.
    :raises HandoffError: if it is not a ``state.json``, or its check does not match.
    """
    data, _ = read_bytes(path, _MAX_BYTES, follow_symlinks=False)
    fields = parse_json(data, path, limit=_MAX_BYTES)
    if not isinstance(fields, dict) or fields.get("kind") != _KIND:
        msg = f"not a handoff-files {MIRROR_NAME}"
        raise HandoffError(path, msg)
    if fields.get("check") != self_check(fields):
        msg = "its check does not match its content: damaged"
        raise HandoffError(path, msg)
    try:
        return Mirror(
            int(fields["generation"]),
            str(fields["seal"]),
            str(fields["agent_id"]),
            str(fields["thread_id"]),
            str(fields["created_at"]),
            dict(fields["state"]),
            int(fields["saves"]),
            fields.get("last_restore"),
        )
    except (KeyError, TypeError, ValueError) as exc:
        msg = f"missing or malformed field: {exc}"
        raise HandoffError(path, msg) from exc
