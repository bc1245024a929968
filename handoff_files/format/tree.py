"""Checking a parsed tree: what a parser let through that a handoff may not hold, walked once.

YAML's parser builds what the format cannot write (non-string keys, dates, shared nodes through
aliases), and any parser builds as deep as the bytes nest: :func:`check_tree` bounds depth,
aliases, integers and the size the tree would have written out, and gives each refusal the path of
the value (``$.state.data[3]``).
"""

from __future__ import annotations

import datetime as dt
import math
import os
from typing import Any

from handoff_files.format.bounds import MAX_YAML_ALIASES, too_deep
from handoff_files.format.model import MAX_DEPTH, MAX_UINT, MIN_INT
from handoff_files.foundation.errors import HandoffParseError

__all__ = ["check_text", "check_tree", "kind"]


def check_tree(document: Any, path: str | os.PathLike[str], *, yaml: bool, expands_to: int) -> Any:
    """Walk a parsed tree: bound depth, aliases and integers; turn YAML timestamps into strings."""
    seen: set[int] = set()
    aliases = 0
    # what the tree would weigh written out: an alias to a long string counts every time it is
    # used, so a small YAML file cannot expand into gigabytes when it is encoded and hashed
    budget = expands_to

    def walk(value: Any, depth: int, where: str) -> Any:  # noqa: PLR0911, PLR0912 -- one branch per JSON type reads best
        nonlocal aliases, budget
        budget -= len(value) + 1 if isinstance(value, str) else 1
        if budget < 0:
            msg = f"the document expands past {expands_to:,} bytes (YAML aliases?); write the values out"
            raise HandoffParseError(path, msg)
        if depth > MAX_DEPTH:
            raise HandoffParseError(path, too_deep(where))
        if isinstance(value, dict | list):
            if id(value) in seen:
                aliases += 1
                if aliases > MAX_YAML_ALIASES:
                    msg = f"more than {MAX_YAML_ALIASES} YAML aliases; write the values out"
                    raise HandoffParseError(path, msg)
            seen.add(id(value))
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            for key, item in value.items():
                if not isinstance(key, str):
                    msg = f"mapping key {key!r} at {where} is {kind(key)}; keys must be strings (quote it)"
                    raise HandoffParseError(path, msg)
                check_text(key, path, where)
                out[key] = walk(item, depth + 1, f"{where}.{key}")
            return out
        if isinstance(value, list):
            return [walk(item, depth + 1, f"{where}[{i}]") for i, item in enumerate(value)]
        if isinstance(value, str):
            return check_text(value, path, where)
        if value is None or isinstance(value, bool):
            return value
        if isinstance(value, int):
            if not MIN_INT <= value <= MAX_UINT:
                msg = f"integer at {where} does not fit in 64 bits"
                raise HandoffParseError(path, msg)
            return value
        if isinstance(value, float):
            if not math.isfinite(value):
                msg = f"{value} is not a JSON number (at {where}: only finite numbers; NaN and Infinity are refused)"
                raise HandoffParseError(path, msg)
            return value
        if yaml and isinstance(value, dt.datetime | dt.date):
            # an unquoted YAML timestamp: keep it as the ISO text a JSON file would hold
            return value.isoformat().replace("+00:00", "Z")
        msg = f"value at {where} is {kind(value)}, which has no JSON form"
        raise HandoffParseError(path, msg)

    return walk(document, 0, "$")


def check_text(text: str, path: str | os.PathLike[str], where: str) -> str:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        # a lone surrogate (JSON's "\\ud800", YAML's "\\uD800"): not text, and not encodable
        msg = f"string at {where} holds a lone surrogate (U+{ord(text[exc.start]):04X}), which is not valid Unicode"
        raise HandoffParseError(path, msg) from exc
    return text


def kind(value: object) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", type(None): "null"}.get(
        type(value), f"a {type(value).__name__}"
    )
