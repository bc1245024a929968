"""SW4RM compatibility: its handoff module's names and context wire format, and import/export of a thread's context."""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import pydantic

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

if TYPE_CHECKING:
    from handoff_files.compat.sw4rm_client import HandoffClient

__all__ = [
    "EXTRA_KEY",
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
]

#: The key, in a message's ``metadata``, under which an imported message keeps what our
#: :class:`~handoff_files.format.model.Message` cannot hold as a typed field (unknown keys, explicit
#: nulls, timestamps that would not export back as the same string), so export gives it back.
EXTRA_KEY: Final = "handoff_files.sw4rm_extra"

_FIELDS: Final = ("conversation_history", "tool_state", "metadata")
_OPTIONAL: Final = ("timestamp", "tool_call_id", "name", "metadata")  # Message fields besides role and content
# SW4RM's messages start with these words; code that matches on them keeps working
_SERIALIZE_FAILED: Final = "Failed to serialize HandoffContext"
_DESERIALIZE_FAILED: Final = "Failed to deserialize HandoffContext"
_DEFAULT_SOURCE: Final = "<SW4RM context>"


@dataclass
class HandoffRequest:
    """A request to hand execution to another agent, field for field as SW4RM's.

    :ivar context_snapshot: a context as :func:`serialize_context` writes it.
    :ivar timeout: seconds the target has to accept, or ``None`` for no limit.
    """

    from_agent: str
    to_agent: str
    reason: str
    context_snapshot: bytes | None = None
    preserve_history: bool = True
    capabilities_required: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    timeout: float | None = None


@dataclass
class HandoffResponse:
    """The answer to a :class:`HandoffRequest`, field for field as SW4RM's."""

    accepted: bool
    handoff_id: str
    rejection_reason: str | None = None
    status: HandoffStatus = HandoffStatus.PENDING
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class HandoffContext:
    """What a receiving agent needs to carry on: the conversation, tool state and metadata.

    Each message is a JSON object with a string ``role`` and ``content`` and optionally
    ``timestamp``, ``tool_call_id``, ``name`` and ``metadata``.
    """

    conversation_history: list[dict[str, Any]] = field(default_factory=list)
    tool_state: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Return the three fields as a new dict (deep-copied, as ``dataclasses.asdict`` copies)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> HandoffContext:
        """Build a context from a mapping; a missing field takes its default, as SW4RM's does.

        :raises ValueError: if a field present has the wrong type.
        """
        context = cls(
            conversation_history=data.get("conversation_history", []),
            tool_state=data.get("tool_state", {}),
            metadata=data.get("metadata", {}),
        )
        _check_shape(context)
        return context


def serialize_context(context: HandoffContext) -> bytes:
    """Encode *context* as compact UTF-8 JSON with sorted keys: equal contexts give equal bytes.

    SW4RM's ``deserialize_context`` reads the result.

    :raises ValueError: if a field has the wrong type or a value is not JSON (NaN and
        Infinity, non-string keys, lone surrogates, objects JSON has no form for, cycles).
    """
    document = {name: getattr(context, name) for name in _FIELDS}
    try:
        _check_shape(context)
        _check_json(document, [])
        text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except RecursionError as exc:
        msg = f"{_SERIALIZE_FAILED}: nested too deeply"
        raise ValueError(msg) from exc
    except (TypeError, ValueError) as exc:
        msg = f"{_SERIALIZE_FAILED}: {exc}"
        raise ValueError(msg) from exc
    return text.encode("utf-8")  # cannot fail: _check_json refused lone surrogates


def deserialize_context(data: bytes | bytearray | memoryview) -> HandoffContext:
    """Decode a context written by :func:`serialize_context` or by SW4RM's.

    The document must be one JSON object holding at most ``conversation_history`` (a list of
    objects), ``tool_state`` and ``metadata`` (objects). A missing one takes its empty default,
    as SW4RM's own reader does; an unknown key is refused (SW4RM drops it silently).

    :raises ValueError: for invalid UTF-8, invalid JSON (NaN and Infinity, duplicate keys and
        lone surrogates included), or a malformed document.
    :raises TypeError: if *data* is not bytes.
    """
    if not isinstance(data, bytes | bytearray | memoryview):
        msg = f"deserialize_context takes bytes, not {type(data).__name__}"
        raise TypeError(msg)
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        msg = f"{_DESERIALIZE_FAILED}: not UTF-8: {exc}"
        raise ValueError(msg) from exc
    try:
        document = json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constant)
    except RecursionError as exc:
        msg = f"{_DESERIALIZE_FAILED}: nested too deeply"
        raise ValueError(msg) from exc
    except ValueError as exc:
        msg = f"{_DESERIALIZE_FAILED}: invalid JSON: {exc}"
        raise ValueError(msg) from exc
    if not isinstance(document, dict):
        msg = f"{_DESERIALIZE_FAILED}: expected a JSON object at the top level, found {_kind(document)}"
        raise ValueError(msg)  # noqa: TRY004 -- SW4RM's documented error for a malformed document
    unknown = sorted(set(document) - set(_FIELDS))
    if unknown:
        found = ", ".join(repr(key) for key in unknown)
        msg = f"{_DESERIALIZE_FAILED}: expected only the keys {', '.join(_FIELDS)}; found {found}"
        raise ValueError(msg)
    # a missing field takes its default, as SW4RM's reader does
    context = HandoffContext(**{name: document[name] for name in _FIELDS if name in document})
    try:
        _check_shape(context)
        _check_json(document, [])  # 1e999 parses as infinity; "\ud800" as a lone surrogate
    except RecursionError as exc:
        msg = f"{_DESERIALIZE_FAILED}: nested too deeply"
        raise ValueError(msg) from exc
    except ValueError as exc:
        msg = f"{_DESERIALIZE_FAILED}: {exc}"
        raise ValueError(msg) from exc
    return context


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
        _check_shape(context)
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


def __getattr__(name: str) -> Any:
    """``HandoffClient``, imported on first use: ``sw4rm_client`` imports this module (and the inbox, which does)."""
    if name == "HandoffClient":
        from handoff_files.compat.sw4rm_client import HandoffClient  # noqa: PLC0415 -- see the docstring

        return HandoffClient
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)


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


# -- checks --------------------------------------------------------------------------------


def _check_shape(context: HandoffContext) -> None:
    history = context.conversation_history
    if not isinstance(history, list):
        msg = f"conversation_history must be a list of message objects, found {_kind(history)}"
        raise ValueError(msg)  # noqa: TRY004 -- SW4RM's contract: ValueError for a malformed context
    for index, entry in enumerate(history):
        if not isinstance(entry, dict):
            msg = f"conversation_history[{index}] must be a message object, found {_kind(entry)}"
            raise ValueError(msg)  # noqa: TRY004 -- as above
    for name in ("tool_state", "metadata"):
        value = getattr(context, name)
        if not isinstance(value, dict):
            msg = f"{name} must be an object, found {_kind(value)}"
            raise ValueError(msg)  # noqa: TRY004 -- as above


def _check_json(value: object, path: list[str | int]) -> None:
    """Refuse what has no exact JSON form; *path* (the keys down to *value*) names the culprit."""
    if isinstance(value, str):
        _check_text(value, path)
    elif isinstance(value, float):
        if not math.isfinite(value):
            msg = f"{_where(path)}: {value} is not a JSON number (NaN and Infinity have no JSON form)"
            raise ValueError(msg)
    elif value is None or isinstance(value, int):  # bool is an int
        return
    elif isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                msg = f"{_where(path)}: object keys must be strings, found {key!r}"
                raise ValueError(msg)  # noqa: TRY004 -- as above
            path.append(key)
            _check_text(key, path)
            _check_json(item, path)
            path.pop()
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            path.append(index)
            _check_json(item, path)
            path.pop()
    else:
        msg = f"{_where(path)}: {type(value).__name__} is not JSON-serializable"
        raise ValueError(msg)


def _check_text(text: str, path: list[str | int]) -> None:
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            msg = f"{_where(path)}: text holds a lone surrogate, which UTF-8 cannot encode"
            raise ValueError(msg) from exc


def _where(path: list[str | int]) -> str:
    if not path:
        return "context"
    head, *rest = path
    return str(head) + "".join(f"[{part!r}]" for part in rest)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):  # only then look for which key came twice
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                msg = f"duplicate key {key!r}"
                raise ValueError(msg)
            seen.add(key)
    return result


def _no_constant(name: str) -> None:
    msg = f"{name} is not JSON (NaN and Infinity have no JSON form)"
    raise ValueError(msg)


def _kind(value: object) -> str:
    kinds = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "a number", float: "a number"}
    return "null" if value is None else kinds.get(type(value), type(value).__name__)
