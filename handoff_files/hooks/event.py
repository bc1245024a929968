"""The hook event: one agent's JSON from stdin, read strictly into the few fields the hooks use."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from handoff_files.format.codec import parse_json
from handoff_files.foundation.errors import HandoffValidationError
from handoff_files.hooks.formats import DISPLAY_NAMES, EVENT_KINDS, Agent, EventKind

__all__ = ["STDIN", "HookEvent", "parse_event"]

#: How errors name the event's source.
STDIN: Final = "<stdin>"
#: The most bytes read as one event (a Stop event carries the last assistant message).
_EVENT_LIMIT: Final = 16 << 20


@dataclass(frozen=True, slots=True)
class HookEvent:
    """One hook event, as far as the hooks read it.

    ``name`` is the agent's own event name and ``kind`` what it means here (None: an event the hooks
    do nothing on). ``session`` is the agent's id of the session: ``session_id`` for Claude Code and
    Codex, ``conversation_id`` (else ``session_id``) for Cursor. ``cwd`` is the event's working
    directory (Cursor: its first workspace root). ``detail`` is the event's ``source``, ``trigger``
    or ``reason``, whichever it has. ``continuing`` is True when the agent is already going on
    because a stop hook asked it to (``stop_hook_active``, or Cursor's ``loop_count`` above 0).
    ``status`` is Cursor's stop status (``completed``, ``aborted``, ``error``).
    """

    agent: Agent
    name: str
    kind: EventKind | None
    session: str | None
    cwd: Path | None
    detail: str | None
    continuing: bool
    status: str | None

    @property
    def who(self) -> str:
        """The agent's name for people (``Claude Code``)."""
        return DISPLAY_NAMES[self.agent]


def parse_event(agent: Agent, data: bytes) -> HookEvent:
    """Read one hook event of *agent* from the bytes its hook got on stdin.

    :raises HandoffParseError: if the bytes are not one strict JSON value.
    :raises HandoffValidationError: if it is not an object with a ``hook_event_name`` string, a
        field the hooks read has the wrong type, or the working directory holds a NUL byte.
    """
    document = parse_json(data, STDIN, limit=_EVENT_LIMIT)
    if not isinstance(document, dict):
        msg = f"a {DISPLAY_NAMES[agent]} hook event is a JSON object, not {type(document).__name__}"
        raise HandoffValidationError(STDIN, msg)
    name = _text(document, "hook_event_name")
    if name is None:
        msg = f"the event has no hook_event_name; is this a {DISPLAY_NAMES[agent]} hook event?"
        raise HandoffValidationError(STDIN, msg)
    if agent == "cursor":
        session = _text(document, "conversation_id") or _text(document, "session_id")
        roots = document.get("workspace_roots")
        if roots is not None and not (isinstance(roots, list) and all(isinstance(root, str) for root in roots)):
            msg = "workspace_roots must be a list of paths"
            raise HandoffValidationError(STDIN, msg)
        cwd = roots[0] if roots else _text(document, "cwd")
        loops = document.get("loop_count", 0)
        if not isinstance(loops, int) or isinstance(loops, bool):
            msg = f"loop_count must be an integer, not {loops!r}"
            raise HandoffValidationError(STDIN, msg)
        continuing = loops > 0
    else:
        session = _text(document, "session_id")
        cwd = _text(document, "cwd")
        active = document.get("stop_hook_active", False)
        if not isinstance(active, bool):
            msg = f"stop_hook_active must be true or false, not {active!r}"
            raise HandoffValidationError(STDIN, msg)
        continuing = active
    if cwd is not None and "\0" in cwd:
        msg = f"the working directory {cwd!r} holds a NUL byte, which no path can"
        raise HandoffValidationError(STDIN, msg)
    detail = _text(document, "source") or _text(document, "trigger") or _text(document, "reason")
    return HookEvent(
        agent,
        name,
        EVENT_KINDS[agent].get(name),
        session or None,
        Path(cwd) if cwd else None,
        detail,
        continuing,
        _text(document, "status"),
    )


def _text(document: dict[str, Any], key: str) -> str | None:
    """The string at *key*; None when it is absent or null; an error when it is something else."""
    value = document.get(key)
    if value is None or isinstance(value, str):
        return value
    msg = f"{key} must be a string, not {type(value).__name__}"
    raise HandoffValidationError(STDIN, msg)
