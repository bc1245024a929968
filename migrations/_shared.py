"""Helpers the migration steps share: type checks that refuse rather than guess, and note-safe naming."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

__all__ = ["free_name", "list_of_objects", "list_of_strings", "mapping", "quote", "string"]

_QUOTE_LIMIT: Final = 200  # a note quotes at most this much of a value it names


def mapping(document: Mapping[str, Any], key: str, *, default: Any = None) -> dict[str, Any]:
    """The object under *key*, copied; a missing one is *default* (or ``{}``); any other type is refused."""
    value = document.get(key, default if default is not None else {})
    if not isinstance(value, dict):
        msg = f"{key} must be an object, found {type(value).__name__}"
        raise TypeError(msg)
    return dict(value)


def list_of_strings(document: Mapping[str, Any], key: str) -> list[str]:
    """The list of strings under *key* (missing: empty); a string or a list of other things is refused."""
    value = document.get(key, [])
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        msg = f"{key} must be a list of strings, found {quote(value)}"
        raise TypeError(msg)
    return list(value)


def list_of_objects(document: Mapping[str, Any], key: str, item: str) -> list[dict[str, Any]]:
    """The list of objects under *key* (missing: empty); anything else, or an item that is not an
    object, is refused (*item* names one in the message: "decision", "priority")."""
    value = document.get(key, [])
    if not isinstance(value, list):
        msg = f"{key} must be a list, found {quote(value)}"
        raise TypeError(msg)
    for i, entry in enumerate(value, 1):
        if not isinstance(entry, dict):
            msg = f"{item} {i} must be an object, found {quote(entry)}"
            raise TypeError(msg)
    return value


def string(document: Mapping[str, Any], key: str, *, required: bool = False) -> str | None:
    """The string under *key* (missing: None unless *required*); any other type is refused."""
    if key not in document and not required:
        return None
    value = document.get(key)
    if not isinstance(value, str):
        msg = f"{key} must be a string, found {quote(value)}"
        raise TypeError(msg)
    return value


def free_name(taken: Mapping[str, Any], key: str) -> str:
    """*key* if it is free in *taken*, else ``legacy_<key>``, ``legacy_2_<key>`` … whichever is free first."""
    if key not in taken:
        return key
    candidate, n = f"legacy_{key}", 2
    while candidate in taken:
        candidate, n = f"legacy_{n}_{key}", n + 1
    return candidate


def quote(value: Any) -> str:
    """A value as JSON text for a note, cut to a readable length (the value itself is kept elsewhere)."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=repr)
    return text if len(text) <= _QUOTE_LIMIT else f"{text[:_QUOTE_LIMIT]}… ({len(text):,} characters)"
