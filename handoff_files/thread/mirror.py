"""The mirror: ``state.json``, the state layer and running totals of the generation it mirrors."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import orjson

from handoff_files.format.codec import parse_json
from handoff_files.format.seal import self_check
from handoff_files.foundation.atomic import read_bytes
from handoff_files.foundation.errors import HandoffError
from handoff_files.thread.layout import MIRROR_NAME

__all__ = ["MIRROR_NAME", "Mirror", "mirror_bytes", "primary_stamp", "read_mirror"]

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
    primary_written: tuple[int, int] | None = None  # the primary as its writer left it: size, mtime (ns)


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
    primary_written: tuple[int, int] | None = None,
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
        # the primary as the writer left it: a file that no longer has this size and mtime was
        # rewritten since (an edit); one that still has them but does not verify is corrupt
        "primary": None if primary_written is None else {"size": primary_written[0], "mtime_ns": primary_written[1]},
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
            _written(fields.get("primary")),
        )
    except (KeyError, TypeError, ValueError) as exc:
        msg = f"missing or malformed field: {exc}"
        raise HandoffError(path, msg) from exc


def _written(field: Any) -> tuple[int, int] | None:
    """The primary's stamp as ``state.json`` records it (None: not recorded, as before it was)."""
    if not isinstance(field, dict):
        return None
    size, mtime = field.get("size"), field.get("mtime_ns")
    if isinstance(size, int) and isinstance(mtime, int) and not isinstance(size, bool) and not isinstance(mtime, bool):
        return (size, mtime)
    return None


def primary_stamp(path: Path) -> Callable[[], tuple[int, int] | None]:
    """A lookup of the primary's stamp in the ``state.json`` at *path*, made only when asked.

    The loader asks only when a primary does not verify, to tell a person's edit (the file was
    rewritten: its size or mtime differs from the writer's) from corruption (it was not).
    """

    def lookup() -> tuple[int, int] | None:
        try:
            return read_mirror(path).primary_written
        except HandoffError:
            return None

    return lookup
