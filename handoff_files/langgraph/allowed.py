"""Which types a checkpoint's typed bytes may build: LangGraph's safe list and the caller's, checked before import.

LangGraph's serializer writes an object it cannot store as plain msgpack as an extension that
names a module, a callable in it and its arguments, and by default reads any such name back by
importing the module and calling it: a checkpoint file that names ``os.system`` runs a command.
So every typed value is looked through here first, without importing or calling anything: each
(module, name) it names must be on the list (LangGraph's ``SAFE_MSGPACK_TYPES`` and the types the
caller allows), or the value is refused. Pickle and LangChain's JSON constructors are never read.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

import ormsgpack
from langgraph.checkpoint.serde._msgpack import SAFE_MSGPACK_METHODS, SAFE_MSGPACK_TYPES

from handoff_files.foundation.errors import HandoffValidationError

__all__ = ["SAFE_TYPES", "TypeKey", "check_typed", "type_keys"]

#: A type as the serializer names it: (module, name).
TypeKey = tuple[str, ...]
#: What every saver reads: LangGraph's own list of safe types (datetime, date, time, timedelta,
#: timezone, UUID, Decimal, set, frozenset, deque, ip addresses, Path, ZoneInfo, re.compile,
#: LangChain's messages and Document, LangGraph's Send, Interrupt, Command …).
SAFE_TYPES: Final[frozenset[TypeKey]] = frozenset(SAFE_MSGPACK_TYPES)

#: The serializer's kinds that hold no object at all.
_PLAIN_KINDS: Final = frozenset({"null", "bytes", "bytearray"})
#: Kinds whose bytes can construct any object and that cannot be checked: never read, never written.
_NEVER: Final = {
    "pickle": "a pickle runs whatever code it names when it is read",
    "json": "LangChain's JSON constructors build objects this saver cannot check",
}
# LangGraph's msgpack extension codes (langgraph.checkpoint.serde.jsonplus)
_CONSTRUCTORS: Final = frozenset({0, 1, 2, 4, 5})  # one argument, positional, keyword, pydantic v1, v2
_METHOD: Final = 3
_NUMPY: Final = 6
_DELTA: Final = 7
_DECODE: Final = ormsgpack.OPT_NON_STR_KEYS


def type_keys(types: Iterable[type | tuple[str, str]], where: str) -> frozenset[TypeKey]:
    """The (module, name) of each type a caller allows: a class, or a ``(module, name)`` pair.

    :raises HandoffValidationError: for anything else.
    """
    keys: set[TypeKey] = set()
    for item in types:
        if isinstance(item, type):
            keys.add((item.__module__, item.__name__))  # as LangGraph's serializer names it
        elif isinstance(item, tuple) and len(item) == 2 and all(isinstance(part, str) and part for part in item):
            keys.add(item)
        else:
            msg = f"allowed_types takes classes or (module, name) pairs, not {item!r}"
            raise HandoffValidationError(where, msg)
    return frozenset(keys)


def _named(data: bytes, allowed: frozenset[TypeKey]) -> list[str]:
    """The types and calls *data* names that are not allowed, in order; nothing is imported or called.

    :raises ValueError: if the bytes are not msgpack (ormsgpack's decode error is one).
    """
    refused: list[str] = []

    def look(code: int, payload: bytes) -> None:
        inner: Any = ormsgpack.unpackb(payload, ext_hook=look, option=_DECODE)  # inner values first
        if code in (_DELTA, _NUMPY):
            return  # a wrapper of plain values (looked into above), and numpy's own array
        if code not in _CONSTRUCTORS and code != _METHOD:
            refused.append(f"msgpack extension type {code}")
            return
        if not isinstance(inner, list | tuple) or len(inner) < (4 if code == _METHOD else 3):
            refused.append(f"a malformed msgpack extension of type {code}")
            return
        module, name = inner[0], inner[1]
        if code == _METHOD:
            if (module, name, inner[3]) not in SAFE_MSGPACK_METHODS:
                refused.append(f"{module}.{name}.{inner[3]}")
        elif (module, name) not in allowed:
            refused.append(f"{module}.{name}")

    ormsgpack.unpackb(data, ext_hook=look, option=_DECODE)
    return refused


def _example(refused: list[str]) -> str:
    """The ``allowed_types`` entry to suggest: the first refused name that looks like a class, never a function."""
    for name in refused:
        module, _, last = name.rpartition(".")
        if module and " " not in name and last[:1].isupper():
            return f"({module!r}, {last!r})"
    return "YourClass"


def check_typed(kind: str, data: bytes, allowed: frozenset[TypeKey], where: str, *, writing: bool = False) -> None:
    """Refuse typed bytes that could build anything not on *allowed*; they are only looked at.

    A kind other than msgpack, the plain ones, pickle and JSON comes from a serializer of the
    caller's (LangGraph's ``EncryptedSerializer`` writes ``msgpack+aes``): what it builds is up to
    that serializer (for the encrypted one, its inner serializer's allow-list).

    :param where: the file, for errors.
    :param writing: word the refusal for a value being stored, rather than read.
    :raises HandoffValidationError: for pickle, JSON constructors, msgpack that names a type not
        allowed (the message names each and how to allow one), or bytes that are not msgpack.
    """
    if kind in _PLAIN_KINDS:
        return
    if kind in _NEVER:
        doing = "stores" if writing else "reads"
        msg = f"a value typed {kind!r}: the saver never {doing} one ({_NEVER[kind]})"
        raise HandoffValidationError(where, msg)
    if kind != "msgpack":
        return
    try:
        refused = _named(data, allowed)
    except (ValueError, TypeError, RecursionError) as exc:
        msg = f"a stored value's msgpack does not decode: {exc}"
        raise HandoffValidationError(where, msg) from exc
    if not refused:
        return
    names = ", ".join(dict.fromkeys(refused))
    allow = f"HandoffSaver(root, allowed_types=[{_example(refused)}])"
    if writing:
        msg = (
            f"a value of type {names} cannot be stored: reading it back would construct a type not on the "
            f"saver's list (LangGraph's safe types and allowed_types); if it is a class of your graph's own, "
            f"allow it: {allow}"
        )
    else:
        msg = (
            f"a stored value would construct {names}, which is not on the saver's list (LangGraph's safe "
            f"types and allowed_types): nothing was read or run; if this is your own graph's checkpoint and "
            f"that is a class of your graph's own, allow it: {allow}"
        )
    raise HandoffValidationError(where, msg)
