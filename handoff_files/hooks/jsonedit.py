"""JSON edits that keep every other byte: add a member to an object, or an item to an array, in place.

A settings file belongs to the person who wrote it: its key order, indentation, line endings and
spacing stay as they are. An edit finds the container's brackets in the text and inserts the new
member (or item) just before the closing one, indented like its neighbours; nothing else moves.
Only an empty container's inside (the whitespace between ``{`` and ``}``) is rewritten. The text
must already have passed the strict reader (:func:`handoff_files.format.codec.parse_json`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["JsonPath", "add_item", "add_member", "render_new"]

#: Keys (objects) and indexes (arrays) from the top of a document down to one value.
JsonPath = tuple[str | int, ...]

_WHITESPACE = " \t\r\n"


@dataclass(frozen=True, slots=True)
class _Node:
    """A value's place in the text: ``start`` is its first character, ``end`` one past its last."""

    kind: Literal["object", "array", "scalar"]
    start: int
    end: int
    # objects: (key, where the key's opening quote is, the value); arrays: (index, start, the item)
    children: tuple[tuple[str | int, int, _Node], ...] = field(default=())


class _Scanner:
    """Finds where each value of a (valid) JSON text begins and ends."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.at = 0

    def skip(self) -> None:
        while self.at < len(self.text) and self.text[self.at] in _WHITESPACE:
            self.at += 1

    def value(self) -> _Node:
        self.skip()
        start = self.at
        opening = self.text[start]
        if opening in "{[":
            closing = "}" if opening == "{" else "]"
            children: list[tuple[str | int, int, _Node]] = []
            self.at += 1
            self.skip()
            while self.text[self.at] != closing:
                if opening == "{":
                    key_at = self.at
                    key = json.loads(self.text[key_at : self.string_end(key_at)])
                    self.at = self.string_end(key_at)
                    self.skip()
                    self.at += 1  # the colon
                    children.append((key, key_at, self.value()))
                else:
                    item = self.value()
                    children.append((len(children), item.start, item))
                self.skip()
                if self.text[self.at] == ",":
                    self.at += 1
                    self.skip()
            self.at += 1
            return _Node("object" if opening == "{" else "array", start, self.at, tuple(children))
        if opening == '"':
            self.at = self.string_end(start)
        else:
            while self.at < len(self.text) and self.text[self.at] not in _WHITESPACE + ",]}":
                self.at += 1
        return _Node("scalar", start, self.at)

    def string_end(self, start: int) -> int:
        """One past the closing quote of the string whose opening quote is at *start*."""
        at = start + 1
        while self.text[at] != '"':
            at += 2 if self.text[at] == "\\" else 1
        return at + 1


def _find(text: str, path: JsonPath) -> _Node:
    node = _Scanner(text).value()
    for step in path:
        matches = [child for key, _, child in node.children if key == step]
        if not matches:
            msg = f"no {step!r} at this place of the document"
            raise KeyError(msg)
        node = matches[-1]
    return node


def _line_indent(text: str, at: int) -> str:
    """The whitespace that starts the line holding position *at*."""
    line_start = text.rfind("\n", 0, at) + 1
    end = line_start
    while end < len(text) and text[end] in " \t":
        end += 1
    return text[line_start:end]


def _style(text: str) -> tuple[str, str]:
    """The text's line ending and its indentation step (two spaces when it shows none)."""
    newline = "\r\n" if "\r\n" in text else "\n"
    steps = sorted(
        {line[: len(line) - len(line.lstrip(" \t"))] for line in text.splitlines() if line[:1] in (" ", "\t")},
        key=len,
    )
    return newline, steps[0] if steps else "  "


def _render(value: Any, step: str, indent: str, newline: str) -> str:
    lines = json.dumps(value, indent=step if step else None, ensure_ascii=False).split("\n")
    return (newline + indent).join(lines)


def _insert(text: str, path: JsonPath, entry: str | None, value: Any) -> str:
    """Insert *value* (as ``"entry": value`` when *entry* is a key) at the end of the container at *path*."""
    node = _find(text, path)
    newline, step = _style(text)
    compact = "\n" not in text.strip()
    head = "" if entry is None else json.dumps(entry, ensure_ascii=False) + ": "
    if compact:
        rendered = head + json.dumps(value, ensure_ascii=False)
        if not node.children:
            return text[: node.start + 1] + rendered + text[node.end - 1 :]
        last = node.children[-1][2]
        return text[: last.end] + ", " + rendered + text[last.end :]
    outer = _line_indent(text, node.start)
    if not node.children:
        inner = outer + step
        rendered = head + _render(value, step, inner, newline)
        return text[: node.start + 1] + newline + inner + rendered + newline + outer + text[node.end - 1 :]
    _, first_at, _ = node.children[0]
    inner = _line_indent(text, first_at) if "\n" in text[node.start : first_at] else outer + step
    last = node.children[-1][2]
    rendered = head + _render(value, step, inner, newline)
    return text[: last.end] + "," + newline + inner + rendered + text[last.end :]


def add_member(text: str, path: JsonPath, key: str, value: Any) -> str:
    """*text* with ``"key": value`` added as the last member of the object at *path*.

    :raises KeyError: if *path* leads nowhere.
    :raises ValueError: if the value at *path* is not an object, or already has *key*.
    """
    node = _find(text, path)
    if node.kind != "object":
        msg = f"the value at {list(path)} is not an object"
        raise ValueError(msg)
    if any(existing == key for existing, _, _ in node.children):
        msg = f"the object at {list(path)} already has {key!r}"
        raise ValueError(msg)
    return _insert(text, path, key, value)


def add_item(text: str, path: JsonPath, value: Any) -> str:
    """*text* with *value* appended to the array at *path*.

    :raises KeyError: if *path* leads nowhere.
    :raises ValueError: if the value at *path* is not an array.
    """
    if _find(text, path).kind != "array":
        msg = f"the value at {list(path)} is not an array"
        raise ValueError(msg)
    return _insert(text, path, None, value)


def render_new(document: Any) -> str:
    """A new file's text: two-space indentation and a final newline."""
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
