"""SW4RM's HandoffContext and its wire format: compact, sorted UTF-8 JSON, read by the one strict reader."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from handoff_files.format.codec import MAX_FILE_BYTES, parse_json
from handoff_files.foundation.errors import HandoffParseError

__all__ = ["HandoffContext", "check_shape", "deserialize_context", "serialize_context"]

# the fields of a context, which are the keys of its document
_FIELDS: Final = ("conversation_history", "tool_state", "metadata")
# SW4RM's messages start with these words; code that matches on them keeps working
_SERIALIZE_FAILED: Final = "Failed to serialize HandoffContext"
_DESERIALIZE_FAILED: Final = "Failed to deserialize HandoffContext"
_WHERE: Final = "<SW4RM context>"


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
        check_shape(context)
        return context


def serialize_context(context: HandoffContext) -> bytes:
    """Encode *context* as compact UTF-8 JSON with sorted keys: equal contexts give equal bytes.

    SW4RM's ``deserialize_context`` reads the result.

    :raises ValueError: if a field has the wrong type or a value is not JSON (NaN and
        Infinity, non-string keys, lone surrogates, objects JSON has no form for, cycles), or
        the bytes would be refused by :func:`deserialize_context` (an integer past 64 bits,
        nesting past 64 levels, more than 16 MiB).
    """
    document = {name: getattr(context, name) for name in _FIELDS}
    try:
        check_shape(context)
        _check_json(document, [])
        text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except RecursionError as exc:
        msg = f"{_SERIALIZE_FAILED}: nested too deeply"
        raise ValueError(msg) from exc
    except (TypeError, ValueError) as exc:
        msg = f"{_SERIALIZE_FAILED}: {exc}"
        raise ValueError(msg) from exc
    data = text.encode("utf-8")  # cannot fail: _check_json refused lone surrogates
    try:
        # never write what our own reader refuses (integers past 64 bits, nesting past its depth,
        # past its size): the receiver reads these bytes with deserialize_context
        parse_json(data, _WHERE, limit=MAX_FILE_BYTES)
    except HandoffParseError as exc:  # HandoffTooLargeError included
        msg = f"{_SERIALIZE_FAILED}: {exc.reason}"
        raise ValueError(msg) from exc
    return data


def deserialize_context(data: bytes | bytearray | memoryview) -> HandoffContext:
    """Decode a context written by :func:`serialize_context` or by SW4RM's.

    The document must be one JSON object holding at most ``conversation_history`` (a list of
    objects), ``tool_state`` and ``metadata`` (objects). A missing one takes its empty default,
    as SW4RM's own reader does; an unknown key is refused (SW4RM drops it silently). The bytes
    are read by the package's one strict reader (:func:`~handoff_files.format.codec.parse_json`),
    so the limits of a handoff hold: at most 16 MiB, 64 levels of nesting, 64-bit integers.

    :raises ValueError: for invalid UTF-8, invalid JSON (NaN and Infinity, duplicate keys and
        lone surrogates included), or a malformed document.
    :raises TypeError: if *data* is not bytes.
    """
    if not isinstance(data, bytes | bytearray | memoryview):
        msg = f"deserialize_context takes bytes, not {type(data).__name__}"
        raise TypeError(msg)
    raw = bytes(data)
    try:
        raw.decode("utf-8")  # first, as SW4RM's reader does
    except UnicodeDecodeError as exc:
        msg = f"{_DESERIALIZE_FAILED}: not UTF-8: {exc}"
        raise ValueError(msg) from exc
    try:
        document = parse_json(raw, _WHERE, limit=MAX_FILE_BYTES)
    except HandoffParseError as exc:  # HandoffTooLargeError included
        msg = f"{_DESERIALIZE_FAILED}: {exc.reason}"
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
        check_shape(context)
    except ValueError as exc:
        msg = f"{_DESERIALIZE_FAILED}: {exc}"
        raise ValueError(msg) from exc
    return context


def check_shape(context: HandoffContext) -> None:
    """Refuse a context whose fields have the wrong types: SW4RM's contract, a ``ValueError``."""
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
                raise ValueError(msg)  # noqa: TRY004 -- SW4RM's contract: ValueError for what is not JSON
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


def _kind(value: object) -> str:
    kinds = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "a number", float: "a number"}
    return "null" if value is None else kinds.get(type(value), type(value).__name__)
