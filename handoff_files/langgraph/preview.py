"""Short, readable previews of a checkpoint's stored values, read as plain JSON: typed bytes are never decoded.

A value is stored in one of three forms (see :mod:`handoff_files.langgraph.values`); each preview
is one line of at most :data:`PREVIEW_CHARS` characters, with the stored value's full size:

* ``{"json": value}``: the value as compact JSON;
* ``{"messages": [...]}`` / ``{"message": {...}}``: each message as its type and first words
  (LangChain's message dicts, read as dicts: nothing of LangChain is imported);
* ``{"serde": kind, "base64": ...}``: ``<typed msgpack, N bytes>``, its size counted from the
  base64 text. Nothing is decoded: no type it names is imported or constructed.

Nothing here imports LangGraph or LangChain: ``handoff show`` reads a saver's thread without them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["PREVIEW_CHARS", "Preview", "interrupt_questions", "message_line", "preview"]

#: The longest preview (a renderer cuts it to its width); the size of the whole value is given beside it.
PREVIEW_CHARS: Final = 240
#: Words of a message's content shown in its line.
_MESSAGE_CHARS: Final = 72
#: Messages of a list shown one per line (the newest: where the conversation stands).
_LAST_MESSAGES: Final = 3


@dataclass(frozen=True, slots=True)
class Preview:
    """One stored value as a person reads it.

    :ivar form: ``json``, ``messages``, ``typed`` (the serializer's bytes, not decoded), ``blob`` (a large
        value in ``blobs/``, not read), ``interrupts`` (the questions an ``interrupt()`` asks), or ``unknown``.
    :ivar text: one line, at most :data:`PREVIEW_CHARS` characters, ending in ``…`` if cut.
    :ivar size: bytes of the whole value: its compact JSON, or its typed bytes.
    :ivar cut: whether *text* is shorter than the whole value.
    :ivar lines: for messages, the newest few, one line each (type and first words).
    :ivar count: for messages, how many there are.
    """

    form: str
    text: str
    size: int
    cut: bool
    lines: tuple[str, ...] = ()
    count: int | None = None

    def brief(self) -> dict[str, Any]:
        """The preview as JSON-ready data."""
        out: dict[str, Any] = {"form": self.form, "text": self.text, "size": self.size, "cut": self.cut}
        if self.form == "messages":
            out |= {"count": self.count, "last": list(self.lines)}
        return out


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _cut(text: str, limit: int) -> tuple[str, bool]:
    """*text* on one line, at most *limit* characters, ending in an ellipsis if cut."""
    flat = " ".join(text.split()) if ("\n" in text or "\r" in text or "\t" in text) else text
    if len(flat) <= limit:
        return flat, False
    return flat[: limit - 1] + "…", True


def _typed_size(encoded: Any) -> int:
    """The bytes a base64 text holds, counted from its length: it is never decoded here."""
    if not isinstance(encoded, str):
        return 0
    stripped = encoded.rstrip("=")
    return len(stripped) * 3 // 4


def _content_text(content: Any) -> str:
    """A message's content as text: a string, or the text parts of a list of content blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and isinstance(block.get("text"), str):
                parts.append(block["text"])
            elif isinstance(block, dict):
                parts.append(f"[{block.get('type', 'block')}]")
        return " ".join(parts)
    return "" if content is None else _compact(content)


def message_line(message: Any) -> str:
    """One message (LangChain's ``message_to_dict`` form) as ``type: first words``, with its tool calls named."""
    if not isinstance(message, dict):
        return _cut(_compact(message), _MESSAGE_CHARS)[0]
    raw = message.get("data")
    data: dict[str, Any] = raw if isinstance(raw, dict) else {}
    kind = str(message.get("type") or data.get("type") or "message")
    if kind == "tool" and data.get("name"):
        kind = f"tool {data['name']}"
    text = _content_text(data.get("content"))
    calls = data.get("tool_calls")
    if isinstance(calls, list) and calls:
        names = ", ".join(str(call.get("name", "?")) if isinstance(call, dict) else "?" for call in calls)
        text = f"{text} [calls {names}]" if text else f"[calls {names}]"
    return f"{kind}: {_cut(text, _MESSAGE_CHARS)[0]}" if text else f"{kind}: (empty)"


def _messages(items: list[Any], size: int) -> Preview:
    lines = tuple(message_line(item) for item in items[-_LAST_MESSAGES:])
    count = len(items)
    text = f"{count} message{'s' if count != 1 else ''}"
    cut = count > len(lines) or any(line.endswith("…") for line in lines)
    return Preview("messages", text, size, cut, lines=lines, count=count)


def _unread(stored: Any) -> Preview | None:
    """A value show never reads: a large one in ``blobs/`` (by digest and size), typed bytes (by kind and size)."""
    if isinstance(stored, dict) and set(stored) == {"blob", "bytes"}:
        size = stored["bytes"] if isinstance(stored["bytes"], int) else 0
        return Preview("blob", f"<in blobs/{str(stored['blob'])[:12]}…, {size:,} bytes>", size, cut=False)
    if isinstance(stored, dict) and set(stored) == {"serde", "base64"}:
        size = _typed_size(stored["base64"])
        return Preview("typed", f"<typed {stored['serde']}, {size:,} bytes>", size, cut=False)
    return None


def interrupt_questions(stored: Any) -> list[Any] | None:
    """The values (questions) of the saver's interrupt form (``{"interrupts": [...]}`` or ``{"interrupt": {...}}``)."""
    if not isinstance(stored, dict):
        return None
    if set(stored) == {"interrupt"}:
        items = [stored["interrupt"]]
    elif set(stored) == {"interrupts", "sequence"} and isinstance(stored["interrupts"], list):
        items = stored["interrupts"]
    else:
        return None
    return [item.get("value") if isinstance(item, dict) else item for item in items]


def preview(stored: Any) -> Preview:
    """A preview of one stored value, in any of the three forms; anything else is shown as it is, as ``unknown``."""
    unread = _unread(stored)
    if unread is not None:
        return unread
    whole = _compact(stored)
    size = len(whole.encode("utf-8"))
    if isinstance(stored, dict) and len(stored) == 1:
        if "json" in stored:
            value = _compact(stored["json"])
            text, cut = _cut(value, PREVIEW_CHARS)
            return Preview("json", text, len(value.encode("utf-8")), cut)
        if "messages" in stored and isinstance(stored["messages"], list):
            return _messages(stored["messages"], size)
        if "message" in stored:
            return _messages([stored["message"]], size)
    questions = interrupt_questions(stored)
    if questions is not None:
        text, cut = _cut(_compact(questions[0] if len(questions) == 1 else questions), PREVIEW_CHARS)
        return Preview("interrupts", text, size, cut)
    text, cut = _cut(whole, PREVIEW_CHARS)
    return Preview("unknown", text, size, cut)
