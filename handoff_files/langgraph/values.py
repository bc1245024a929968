"""Channel values a person can read: plain JSON and LangChain messages as JSON, the rest as typed bytes.

Every value is stored as a one-key object that says how it was stored:

* ``{"json": value}``: plain JSON (objects with string keys, arrays, strings, finite numbers
  within 64 bits, booleans, null), stored as it is;
* ``{"messages": [{"type": "human", "data": {...}}, ...]}`` (or ``{"message": {...}}`` for one):
  LangChain messages, as ``message_to_dict`` writes them;
* ``{"interrupts": [{"value": ..., "id": ...}, ...], "sequence": "tuple"}`` (or ``{"interrupt": {...}}``):
  LangGraph's ``Interrupt`` (the question a graph waits on a person for), when its value is plain JSON;
* ``{"serde": "msgpack", "base64": "..."}``: anything else, as the saver's serializer typed it.

A value is written readably only if reading it back gives an equal value; otherwise it takes the
serializer's road, so nothing is ever lost or changed by being readable. A saver given a serializer
of the caller's (LangGraph's ``EncryptedSerializer``, say) is *opaque*: every value takes the
serializer's road, so nothing of the state is ever written in clear. Typed bytes are stored and
read only if every type they name is allowed (:mod:`handoff_files.langgraph.allowed`).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any, Final, Protocol

import orjson

from handoff_files.format.model import HandoffContent
from handoff_files.foundation.errors import HandoffError, HandoffValidationError
from handoff_files.langgraph.allowed import SAFE_TYPES, TypeKey, check_typed

__all__ = ["SerdeProtocol", "decode_value", "encode_value", "layers_of_state"]

#: How deep a readable value may nest: the handoff's free-form trees stop at 48 levels, and a
#: channel value sits five levels down (``state.data.langgraph.channel_values.<name>.json``).
_MAX_NESTING: Final = 40
_TOO_DEEP: Final = b"\n" + b" " * (2 * _MAX_NESTING)


class SerdeProtocol(Protocol):
    """The part of LangGraph's ``SerializerProtocol`` the saver uses."""

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]: ...

    def loads_typed(self, data: tuple[str, bytes]) -> Any: ...


def _plain_json(value: Any) -> bool:
    """Whether *value* is JSON that reads back equal (orjson refuses what JSON cannot hold)."""
    try:
        encoded = orjson.dumps(value, option=orjson.OPT_INDENT_2)
        return _TOO_DEEP not in encoded and orjson.loads(encoded) == value and _same_types(value)
    except (TypeError, ValueError, RecursionError):
        return False


def _same_types(value: Any) -> bool:
    """Equality lets a tuple pass for a list and 1.0 for 1: JSON gives back lists and the same number types."""
    if isinstance(value, dict):
        return type(value) is dict and all(_same_types(item) for item in value.values())
    if isinstance(value, list):
        return type(value) is list and all(_same_types(item) for item in value)
    return value is None or type(value) in (str, int, float, bool)


def _messages(value: Any) -> dict[str, Any] | None:
    """LangChain messages (one, or a list of them) as readable JSON, if they read back equal."""
    try:
        from langchain_core.messages import BaseMessage, message_to_dict, messages_from_dict  # noqa: PLC0415
    except ImportError:  # pragma: no cover -- LangGraph brings langchain-core
        return None
    single = isinstance(value, BaseMessage)
    items = [value] if single else value
    if not isinstance(items, list) or not items or not all(isinstance(item, BaseMessage) for item in items):
        return None
    try:
        dicts = [message_to_dict(item) for item in items]
        if not _plain_json(dicts) or messages_from_dict(orjson.loads(orjson.dumps(dicts))) != items:
            return None
    except Exception:
        return None
    return {"message": dicts[0]} if single else {"messages": dicts}


def _interrupts(value: Any) -> dict[str, Any] | None:
    """LangGraph's interrupts (one, or a tuple or list of them) as readable JSON, if they read back equal."""
    try:
        from langgraph.types import Interrupt  # noqa: PLC0415 -- only where a saver runs, with LangGraph
    except ImportError:  # pragma: no cover -- the saver needs LangGraph
        return None
    single = isinstance(value, Interrupt)
    items = [value] if single else value
    if not isinstance(items, tuple | list) or not items or not all(type(item) is Interrupt for item in items):
        return None
    dicts = [{"value": item.value, "id": item.id, "response_schema": item.response_schema} for item in items]
    if not _plain_json(dicts):
        return None
    stored = {"interrupt": dicts[0]} if single else {"interrupts": dicts, "sequence": type(value).__name__}
    return stored if _read_interrupts(stored) == value else None


def _read_interrupts(stored: dict[str, Any]) -> Any:
    from langgraph.types import Interrupt  # noqa: PLC0415 -- as in _interrupts

    def one(fields: Any) -> Any:
        if not isinstance(fields, dict) or not isinstance(fields.get("id"), str):
            msg = f"an interrupt is not {{'value', 'id'}}: {str(fields)[:80]}"
            raise TypeError(msg)
        return Interrupt(fields.get("value"), fields["id"], response_schema=fields.get("response_schema"))

    if "interrupt" in stored:
        return one(stored["interrupt"])
    items = [one(fields) for fields in stored["interrupts"]]
    return tuple(items) if stored.get("sequence") == "tuple" else items


def encode_value(
    value: Any,
    serde: SerdeProtocol,
    *,
    allowed: frozenset[TypeKey] = SAFE_TYPES,
    where: str = ".",
    opaque: bool = False,
) -> dict[str, Any]:
    """Encode one value for a checkpoint file: readable where it reads back equal, typed bytes otherwise.

    :param allowed: the types its typed bytes may name (else it could not be read back).
    :param where: the thread's folder, for errors.
    :param opaque: every value through *serde*, none readable (the caller's serializer encrypts, say).
    :raises HandoffValidationError: if its typed bytes name a type not allowed, or are a pickle.
    """
    if not opaque:
        if _plain_json(value):
            return {"json": value}
        readable = _messages(value)
        if readable is None:
            readable = _interrupts(value)
        if readable is not None:
            return readable
    kind, data = serde.dumps_typed(value)
    check_typed(kind, data, allowed, where, writing=True)
    return {"serde": kind, "base64": base64.b64encode(data).decode("ascii")}


def decode_value(stored: Any, serde: SerdeProtocol, where: str, *, allowed: frozenset[TypeKey] = SAFE_TYPES) -> Any:
    """Decode what :func:`encode_value` wrote; typed bytes only once every type they name is found in *allowed*.

    :param where: the file, for errors.
    :param allowed: the types typed bytes may construct.
    :raises HandoffValidationError: if typed bytes name a type not allowed, are a pickle, or do not load.
    :raises HandoffError: if *stored* is not one of the three forms.
    """
    if isinstance(stored, dict) and len(stored) == 1:
        if "json" in stored:
            return stored["json"]
        if "messages" in stored or "message" in stored:
            from langchain_core.messages import messages_from_dict  # noqa: PLC0415

            if "message" in stored:
                return messages_from_dict([stored["message"]])[0]
            return messages_from_dict(stored["messages"])
    if isinstance(stored, dict) and (set(stored) == {"interrupt"} or set(stored) == {"interrupts", "sequence"}):
        try:
            return _read_interrupts(stored)
        except (TypeError, KeyError) as exc:
            msg = f"a stored interrupt is damaged: {exc}"
            raise HandoffError(where, msg) from exc
    if isinstance(stored, dict) and set(stored) == {"serde", "base64"} and isinstance(stored["serde"], str):
        try:
            data = base64.b64decode(stored["base64"], validate=True)
        except (TypeError, ValueError) as exc:
            msg = f"a channel value's base64 does not decode: {exc}"
            raise HandoffError(where, msg) from exc
        check_typed(stored["serde"], data, allowed, where)
        try:
            return serde.loads_typed((stored["serde"], data))
        except Exception as exc:  # a serializer may raise anything: none escapes the saver's API
            msg = (
                f"a stored value typed {stored['serde']!r} does not load: {type(exc).__name__}: {exc}; "
                "open the saver with the serializer (and key) it was written with"
            )
            raise HandoffValidationError(where, msg) from exc
    msg = f"a stored value is neither {{'json': …}}, messages nor {{'serde', 'base64'}}: {str(stored)[:80]}"
    raise HandoffError(where, msg)


def _valid_layer(layer: str, value: Any) -> bool:
    """Whether *value* is valid as that layer of a handoff (otherwise it stays a channel value only)."""
    try:
        HandoffContent.model_validate({layer: value})
    except ValueError:  # pydantic's ValidationError is one
        return False
    return True


def layers_of_state(values: Mapping[str, Any], layers: Mapping[str, str]) -> dict[str, Any]:
    """The five layers a graph's state carries (*layers*: layer name → state key), each only if valid as that layer."""
    found: dict[str, Any] = {}
    for layer, key in layers.items():
        readable = key in values and layer in HandoffContent.model_fields and layer not in ("state", "context")
        if readable and _valid_layer(layer, values[key]):
            found[layer] = values[key]
    return found
