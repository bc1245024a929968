"""TOML edits that keep every other byte: a new table appended at the end of the file (Codex's ``config.toml``).

The standard library reads TOML but does not write it; a table appended at the end is the one
edit that needs no writer and leaves the rest of the file as it was. The result is read back, so
a file where the table cannot go at the end (the parent is an inline table, say) is refused
rather than broken.
"""

from __future__ import annotations

import json
import tomllib
from typing import Any

__all__ = ["append_table", "loads"]


def loads(text: str) -> dict[str, Any]:
    """The TOML document in *text*.

    :raises ValueError: if it is not TOML (``tomllib.TOMLDecodeError`` is a ``ValueError``).
    """
    return tomllib.loads(text)


def _value(value: Any) -> str:
    # a JSON string is a TOML basic string (the same escapes); lists of strings are the same too
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return "[" + ", ".join(json.dumps(item, ensure_ascii=False) for item in value) + "]"
    msg = f"only strings and lists of strings are written here, not {value!r}"
    raise TypeError(msg)


def append_table(text: str, dotted: tuple[str, ...], table: dict[str, Any]) -> str:
    """*text* with ``[a.b]`` and *table*'s keys appended, separated from what is there by a blank line.

    :param dotted: the table's name, as bare keys (``("mcp_servers", "handoff")``).
    :raises ValueError: if the file with the table does not read back as TOML holding it.
    """
    newline = "\r\n" if "\r\n" in text else "\n"
    lines = [f"[{'.'.join(dotted)}]", *(f"{key} = {_value(value)}" for key, value in table.items())]
    block = newline.join(lines) + newline
    if text and not text.endswith(("\n", "\r\n")):
        text += newline
    result = text + (newline if text.strip() else "") + block
    found: Any = loads(result)
    for key in dotted:
        found = found.get(key) if isinstance(found, dict) else None
    if found != table:
        msg = f"[{'.'.join(dotted)}] does not read back as written"
        raise ValueError(msg)
    return result
