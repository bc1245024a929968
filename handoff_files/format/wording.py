"""Validation errors in our own words: for each field, where it is, what was expected and what was found."""

from __future__ import annotations

import json
from typing import Any, Final

import pydantic

from handoff_files.format import model

__all__ = ["describe_errors"]

#: What a field of each kind must be, by pydantic's error type (those with a context are worded below).
_EXPECTED: Final = {
    "dict_type": "a mapping",
    "list_type": "a list",
    "string_type": "text",
    "int_type": "a whole number",
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "datetime_type": "a time (ISO 8601, with its zone)",
    "datetime_parsing": "a time (ISO 8601, with its zone)",
    "timezone_aware": "a time with its zone (Z or +hh:mm)",
    "string_pattern_mismatch": "text of the form the field takes",
}
#: Longest piece of a found value quoted in a message.
_QUOTE: Final = 60


def describe_errors(exc: pydantic.ValidationError, *, limit: int = 3) -> str:
    """Word a validation error: ``where: expected …, found …`` for each of its first *limit* problems.

    ``where`` is the field's dotted path (``warnings.0``); pydantic's own sentence is kept only for
    a kind of problem this module does not know.
    """
    parts = [_one(error) for error in exc.errors()[:limit]]
    more = exc.error_count() - limit
    if more > 0:
        parts.append(f"and {more} more")
    return "; ".join(parts)


def _one(error: Any) -> str:
    where = ".".join(str(part) for part in error["loc"]) or "the document"
    kind: str = error["type"]
    context: dict[str, Any] = error.get("ctx") or {}
    found = _found(error["input"])
    if kind == "missing":
        return f"{where}: expected a value (the field is required), found none"
    if kind == "signature_version":  # the model's own check across fields: its sentence says it all
        return str(error["msg"])
    if kind == "extra_forbidden":
        return f"{where}: expected no such field (is it misspelt?), found one holding {found}"
    if kind in ("model_type", "model_attributes_type"):
        expected = _mapping(context.get("class_name"))
    elif kind == "literal_error":
        expected = f"one of {context.get('expected', '?')}"
    elif kind in ("string_too_long", "too_long"):
        expected = f"at most {context.get('max_length', '?')} {'characters' if kind == 'string_too_long' else 'items'}"
    elif kind in ("string_too_short", "too_short"):
        expected = (
            f"at least {context.get('min_length', '?')} {'characters' if kind == 'string_too_short' else 'items'}"
        )
    elif kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        bound = next(iter(context.values()), "?")
        expected = f"a number {_BOUNDS[kind]} {bound}"
    elif kind in _EXPECTED:
        expected = _EXPECTED[kind]
    else:  # a kind not worded here: pydantic's sentence, and what was found
        return f"{where}: {error['msg']}, found {found}"
    return f"{where}: expected {expected}, found {found}"


_BOUNDS: Final = {
    "greater_than_equal": "of at least",
    "greater_than": "above",
    "less_than_equal": "of at most",
    "less_than": "below",
}


def _mapping(class_name: object) -> str:
    """A mapping with the fields of the model named *class_name* (a Warning: text, and optionally severity)."""
    found = getattr(model, str(class_name), None)
    if not (isinstance(found, type) and issubclass(found, pydantic.BaseModel)):
        return "a mapping"
    required = [name for name, field in found.model_fields.items() if field.is_required()]
    optional = [name for name, field in found.model_fields.items() if not field.is_required()]
    text = f"a mapping with {', '.join(required)}" if required else "a mapping"
    if optional:
        text += f" ({'and optionally' if required else 'of'} {', '.join(optional)})"
    return text


def _found(value: Any) -> str:
    """What a value is, for a person: its kind, and the value itself when it is short."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)  # null, true, false
    if isinstance(value, int | float):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the text {_cut(json.dumps(value, ensure_ascii=False))}"
    if isinstance(value, dict):
        keys = ", ".join(map(str, value)) or "no keys"
        return f"a mapping ({_cut(keys)})"
    if isinstance(value, list | tuple):
        return f"a list of {len(value)} item{'s' if len(value) != 1 else ''}"
    return type(value).__name__


def _cut(text: str) -> str:
    return text if len(text) <= _QUOTE else text[: _QUOTE - 1] + "…"
