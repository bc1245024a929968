"""Context trimming: the last N relevant messages and only live tool state, so a handoff stays small."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import pydantic

from handoff_files.format.loader import describe
from handoff_files.format.model import Context, Message
from handoff_files.foundation.errors import HandoffValidationError

__all__ = ["LIVE_TOOL_STATUSES", "TRIM_KEY", "trim_context"]

#: Tool-state entries whose ``status`` is one of these are kept; finished ones (completed, failed,
#: cancelled …) are dropped. An entry with no ``status`` is kept: nothing says it is over.
LIVE_TOOL_STATUSES: Final = frozenset({"active", "pending", "running", "in_progress", "waiting", "queued"})
#: Where the trimmed context records what was cut (in its ``metadata``).
TRIM_KEY: Final = "trimmed"
# always kept, whatever their age: they say who the agent is and what it may do
_PINNED_ROLES: Final = frozenset({"system"})
_WHERE: Final = "<context>"


def trim_context(
    context: Context | Mapping[str, Any], *, max_history: int = 50, keep_active_tool_state: bool = True
) -> Context:
    """Return a smaller copy of *context*: the last *max_history* relevant messages and only live tool state.

    Relevant messages: every ``system`` message, plus the newest *max_history* others; a tool
    result whose call was cut away goes with it (an answer without its question misleads). Tool
    state keeps only entries that are active or pending (see :data:`LIVE_TOOL_STATUSES`), or none
    at all when *keep_active_tool_state* is False. ``metadata["trimmed"]`` records the original
    and kept counts, so the receiver knows it holds a trimmed context. Never modifies its input.

    :raises HandoffValidationError: if *context* is not a valid context, or *max_history* is negative.
    """
    if max_history < 0:
        msg = f"max_history must be 0 or more, not {max_history}"
        raise HandoffValidationError(_WHERE, msg)
    try:
        given = context if isinstance(context, Context) else Context.model_validate(dict(context))
    except (pydantic.ValidationError, TypeError, ValueError) as exc:
        reason = describe(exc) if isinstance(exc, pydantic.ValidationError) else str(exc)
        msg = f"not a valid context: {reason}"
        raise HandoffValidationError(_WHERE, msg) from exc
    messages = _relevant(given.conversation_history, max_history)
    tools = _live(given.tool_state) if keep_active_tool_state else {}
    record = {
        "original_messages": len(given.conversation_history),
        "kept_messages": len(messages),
        "original_tool_state": len(given.tool_state),
        "kept_tool_state": len(tools),
        "max_history": max_history,
    }
    metadata = {**given.metadata, TRIM_KEY: record}
    return Context(conversation_history=messages, tool_state=tools, metadata=metadata)


def _relevant(history: list[Message], keep: int) -> list[Message]:
    others = [i for i, message in enumerate(history) if message.role not in _PINNED_ROLES]
    kept = set(others[max(0, len(others) - keep) :])
    kept |= {i for i, message in enumerate(history) if message.role in _PINNED_ROLES}
    calls = {m.tool_call_id for i, m in enumerate(history) if i in kept and m.role != "tool" and m.tool_call_id}
    # a tool result kept without the call that asked for it: drop it too
    orphans = {
        i for i in kept if history[i].role == "tool" and history[i].tool_call_id not in calls and _cut(history, i)
    }
    return [message for i, message in enumerate(history) if i in kept - orphans]


def _cut(history: list[Message], index: int) -> bool:
    """Whether the call a tool result answers was in the history before it (and so was cut, not never there)."""
    call_id = history[index].tool_call_id
    return call_id is not None and any(m.tool_call_id == call_id and m.role != "tool" for m in history[:index])


def _live(tool_state: Mapping[str, Any]) -> dict[str, Any]:
    live = {}
    for name, entry in tool_state.items():
        status = entry.get("status") if isinstance(entry, Mapping) else None
        if status is None or (isinstance(status, str) and status.lower() in LIVE_TOOL_STATUSES):
            live[name] = entry
    return live
