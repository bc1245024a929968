"""SW4RM compatibility: its handoff module's names in one place; a thread's context imported from or exported to it.

SW4RM's types live in :mod:`~handoff_files.compat.sw4rm_types` (request, response),
:mod:`~handoff_files.compat.sw4rm_context` (the context and its wire format),
:mod:`~handoff_files.compat.sw4rm_client` (the client) and :mod:`~handoff_files.compat.sw4rm_agent`
(SW4RM's ``Agent``: its lifecycle from :mod:`~handoff_files.compat.sw4rm_lifecycle`, its handoffs on the
inbox); they are re-exported here, under the names SW4RM gives them.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Final

import pydantic

from handoff_files.compat.sw4rm_agent import Agent, AgentState
from handoff_files.compat.sw4rm_client import HandoffClient
from handoff_files.compat.sw4rm_context import HandoffContext, check_shape, deserialize_context, serialize_context
from handoff_files.compat.sw4rm_types import HandoffRequest, HandoffResponse, to_response
from handoff_files.format.codec import MAX_FILE_BYTES
from handoff_files.format.loader import describe
from handoff_files.format.model import Context, HandoffContent, Message
from handoff_files.foundation.errors import (
    HandoffParseError,
    HandoffTooLargeError,
    HandoffValidationError,
    NoHandoffError,
)
from handoff_files.inbox.status import HandoffStatus
from handoff_files.thread.locate import open_handoff
from handoff_files.thread.results import Restored, SaveReceipt
from handoff_files.thread.store import HandoffStore

__all__ = [
    "EXTRA_KEY",
    "Agent",
    "AgentState",
    "HandoffClient",
    "HandoffContext",
    "HandoffRequest",
    "HandoffResponse",
    "HandoffStatus",
    "deserialize_context",
    "export_context",
    "from_model",
    "import_context",
    "serialize_context",
    "to_model",
    "to_response",
]

#: The key, in a message's ``metadata``, under which an imported message keeps what our
#: :class:`~handoff_files.format.model.Message` cannot hold as a typed field (unknown keys, explicit
#: nulls, timestamps that would not export back as the same string), so export gives it back.
EXTRA_KEY: Final = "handoff_files.sw4rm_extra"

_OPTIONAL: Final = ("timestamp", "tool_call_id", "name", "metadata")  # Message fields besides role and content
_DEFAULT_SOURCE: Final = "<SW4RM context>"


def to_model(context: HandoffContext, *, source: str | os.PathLike[str] = _DEFAULT_SOURCE) -> Context:
    """Turn an SW4RM context into a handoff's ``context`` block; :func:`from_model` gives it back equal.

    A message's ``role`` and ``content`` must be strings (and fit the model's limits). Its
    ``timestamp``, ``tool_call_id``, ``name`` and ``metadata`` become typed fields when they
    export back unchanged; anything else (other keys, explicit nulls, a timestamp written
    differently) is kept in the message's ``metadata`` under :data:`EXTRA_KEY`.

    :param source: named in errors.
    :raises HandoffValidationError: if the context does not fit the model.
    """
    try:
        check_shape(context)
    except ValueError as exc:
        raise HandoffValidationError(source, str(exc)) from exc
    block = {
        "conversation_history": [_message_in(entry) for entry in context.conversation_history],
        "tool_state": context.tool_state,
        "metadata": context.metadata,
    }
    try:
        return Context.model_validate(block)
    except pydantic.ValidationError as exc:
        msg = f"this SW4RM context does not fit a handoff's context block: {describe(exc)}"
        raise HandoffValidationError(source, msg) from exc


def from_model(context: Context | None) -> HandoffContext:
    """Turn a handoff's ``context`` block (or ``None``: an empty context) into an SW4RM context."""
    if context is None:
        return HandoffContext()
    data = context.model_dump(mode="json")
    return HandoffContext(
        conversation_history=[_message_out(message) for message in data["conversation_history"]],
        tool_state=data["tool_state"],
        metadata=data["metadata"],
    )


def import_context(
    data: bytes,
    thread_dir: str | os.PathLike[str],
    *,
    source: str | os.PathLike[str] = _DEFAULT_SOURCE,
    **store_kwargs: Any,
) -> SaveReceipt:
    """Save SW4RM context bytes as the next generation of a thread, in its ``context`` block.

    A thread with a restorable handoff keeps its layers and has only its context replaced; a
    new (or empty) thread gets a one-line narrative saying where the context came from and
    default layers. A thread whose files exist but none verifies is refused, not started over.

    :param data: bytes as SW4RM's ``serialize_context`` writes them.
    :param thread_dir: the thread directory.
    :param source: where the bytes came from, named in errors.
    :param store_kwargs: passed to :class:`~handoff_files.thread.store.HandoffStore`.
    :returns: the save's receipt; its ``problems`` include any the restore met.
    :raises HandoffParseError: if *data* is not an SW4RM context.
    :raises HandoffValidationError: if the context does not fit the model.
    :raises NoHandoffError: if the thread holds handoff files none of which verifies.
    """
    if len(data) > MAX_FILE_BYTES:
        msg = f"context is {len(data):,} bytes, over the {MAX_FILE_BYTES:,}-byte limit for a handoff"
        raise HandoffTooLargeError(source, msg)
    try:
        context = deserialize_context(data)
    except ValueError as exc:
        raise HandoffParseError(source, str(exc)) from exc
    block = to_model(context, source=source)
    store = HandoffStore(thread_dir, **store_kwargs)
    problems: tuple[str, ...] = ()

    def with_context(restored: Restored | None) -> HandoffContent:
        nonlocal problems
        if restored is None:
            if store.primary.exists() or store.history():
                msg = "nothing here verifies; import keeps a thread's layers, so restore or move these files first"
                raise NoHandoffError(store.path, msg)
            return HandoffContent(narrative=_narrative(context), context=block)
        problems = restored.problems
        return restored.handoff.content().model_copy(update={"context": block})

    receipt = store.update(with_context)
    return dataclasses.replace(receipt, problems=(*problems, *receipt.problems))


def export_context(path: str | os.PathLike[str]) -> bytes:
    """Return the ``context`` block of a thread's newest verified handoff as SW4RM context bytes.

    A handoff without a context block exports an empty context.

    :param path: a thread directory (restored) or a handoff file (loaded and verified).
    :raises HandoffError: as :meth:`~handoff_files.thread.store.HandoffStore.restore` does.
    """
    return serialize_context(from_model(open_handoff(path).handoff.context))


# -- messages ------------------------------------------------------------------------------


def _message_in(entry: dict[str, Any]) -> dict[str, Any]:
    """Map one SW4RM message to :class:`Message` fields, keeping what does not fit under EXTRA_KEY."""
    fields: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for key, value in entry.items():
        if key in ("role", "content") or (key in _OPTIONAL and _survives(key, value)):
            fields[key] = value  # role and content are required: the model refuses a bad one, never moves it
        else:
            extra[key] = value
    if extra:
        # the whole metadata goes with the extras, so export never has to tell the two apart
        if "metadata" in fields:
            extra["metadata"] = fields.pop("metadata")
        fields["metadata"] = {EXTRA_KEY: extra}
    return fields


def _survives(key: str, value: Any) -> bool:
    """Whether *value*, held in Message's typed field *key*, exports back as exactly *value*."""
    if value is None or (key == "metadata" and isinstance(value, dict) and EXTRA_KEY in value):
        return False  # export leaves None fields out, and reads EXTRA_KEY as ours
    try:
        message = Message.model_validate({"role": "-", "content": "", key: value})
    except pydantic.ValidationError:
        return False
    dumped = message.model_dump(mode="json")[key]
    return type(dumped) is type(value) and dumped == value


def _message_out(data: dict[str, Any]) -> dict[str, Any]:
    """Map one JSON-mode :class:`Message` back to an SW4RM message (the inverse of ``_message_in``)."""
    entry = {key: value for key, value in data.items() if value is not None}
    metadata = entry.get("metadata")
    if isinstance(metadata, dict) and len(metadata) == 1 and isinstance(metadata.get(EXTRA_KEY), dict):
        extra = entry.pop("metadata")[EXTRA_KEY]
        entry = {**extra, **entry}
    return entry


def _narrative(context: HandoffContext) -> str:
    return (
        f"Imported from an SW4RM HandoffContext: {len(context.conversation_history)} message(s), "
        f"{len(context.tool_state)} tool_state key(s), {len(context.metadata)} metadata key(s)."
    )
