"""Text for a terminal: its width and colour, wrapping between words, short digests and times that name their zone.

A pipe or a file is not a terminal: it gets ``Terminal()``, no wrapping (each paragraph whole on
one line, for grep) and no escape codes. Colour is kept minimal: headings and level words.
"""

from __future__ import annotations

import datetime as dt
import os
import secrets
import shutil
import sys
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, Literal, TextIO

__all__ = [
    "SHORT_DIGEST",
    "Style",
    "Terminal",
    "digest_length",
    "fit",
    "highlight",
    "moment",
    "short_digest",
    "terminal",
]

#: Hex digits of a digest shown to people, as git shows a commit's: plenty to tell a thread's generations apart.
SHORT_DIGEST: Final = 12
#: Wrapping never aims at fewer columns than this: on a narrower terminal, the terminal wraps what is left.
_MIN_WIDTH: Final = 20
#: A hanging indent (continuation lines under the text, not the label) is kept while it leaves this many columns.
_HANG_WIDTH: Final = 30

Style = Literal["heading", "good", "warn", "bad"]
# Select Graphic Rendition codes: bold headings; green, yellow and red level words. Nothing else is coloured.
_SGR: Final[dict[Style, str]] = {"heading": "1", "good": "32", "warn": "33", "bad": "31"}
#: Every colour code the CLI writes (``ESC [ code m``), the reset included: the only escapes its output holds.
SGR_CODES: Final = frozenset({*_SGR.values(), "0"})
#: Where :func:`paint` starts a colour code: a key drawn for this process, which text from a file,
#: a request or a bucket cannot know, so only the CLI's own colours reach the terminal as escapes.
COLOUR_KEY: Final = f"\ufdd0{secrets.token_hex(8)}\ufdd1"


@dataclass(frozen=True, slots=True)
class Terminal:
    """Where text for people goes: the width to wrap at (None: do not wrap) and whether to colour it.

    The default, ``Terminal()``, is a pipe or a file: no wrapping and no escape codes.
    """

    width: int | None = None
    colour: bool = False


def terminal(stream: TextIO | None = None) -> Terminal:
    """What *stream* (default: stdout) is: a terminal's width and colour, or ``Terminal()`` for a pipe or a file.

    Colour needs a terminal, an empty or unset ``NO_COLOR`` (https://no-color.org) and a ``TERM``
    other than ``dumb``; the width is ``shutil.get_terminal_size()``'s (``COLUMNS``, else the terminal's).
    """
    out = sys.stdout if stream is None else stream
    try:
        tty = out.isatty()
    except (AttributeError, ValueError):  # a replaced or closed stream is not a terminal
        tty = False
    if not tty:
        return Terminal()
    colour = not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"
    return Terminal(max(shutil.get_terminal_size().columns, _MIN_WIDTH), colour)


def paint(text: str, style: Style, term: Terminal) -> str:
    """*text* in *style* on a colour terminal; as it is anywhere else.

    Each colour code starts with :data:`COLOUR_KEY`, not ESC: the CLI's safe streams
    (:mod:`~handoff_files.cli.safe_output`) write it as ``ESC [`` and escape every ESC that text holds.
    """
    return f"{COLOUR_KEY}{_SGR[style]}m{text}{COLOUR_KEY}0m" if term.colour else text


def fit(first: str, text: str, term: Terminal, indent: str | None = None) -> list[str]:
    """*first* then *text*, wrapped between words at the terminal's width (never inside a word).

    Continuation lines start with *indent*, by default as wide as *first* (a hanging indent), or
    four spaces when that would leave fewer than ``_HANG_WIDTH`` columns. Not a terminal: one line.
    """
    if term.width is None:
        return [first + text]
    if indent is None:
        indent = " " * len(first) if term.width - len(first) >= _HANG_WIDTH else "    "
    wrapped = textwrap.wrap(
        text,
        term.width,
        initial_indent=first,
        subsequent_indent=indent,
        break_long_words=False,  # a path or a digest longer than the line stays whole
        break_on_hyphens=False,  # nor is "re-run" or "thread-1" split at its hyphen
    )
    return wrapped or [first.rstrip()]


def highlight(lines: list[str], at: int, word: str, style: Style, term: Terminal) -> list[str]:
    """*lines* with *word*, which starts the first line at column *at*, painted in *style*."""
    first = lines[0]
    if first[at : at + len(word)] == word:
        lines[0] = first[:at] + paint(word, style, term) + first[at + len(word) :]
    return lines


def short_digest(checksum: str, length: int = SHORT_DIGEST) -> str:
    """``algorithm:digest`` with the digest cut to *length* hex digits, as git shortens a commit's.

    Text for people only: ``--json`` output keeps every digest whole.
    """
    algorithm, colon, digest = checksum.partition(":")
    return f"{algorithm}:{digest[:length]}" if colon else checksum


def digest_length(checksums: Iterable[str]) -> int:
    """The fewest digits, at least ``SHORT_DIGEST``, that keep these digests apart (git's unique prefix)."""
    distinct = set(checksums)
    length = SHORT_DIGEST
    longest = max((len(c) for c in distinct), default=0)
    while length < longest and len({short_digest(c, length) for c in distinct}) < len(distinct):
        length += 1
    return length


def moment(when: dt.datetime) -> str:
    """A time for people, in UTC and saying so with ``Z``, as the journal writes it: ``2026-11-25 13:50:33Z``."""
    return f"{when.astimezone(dt.UTC):%Y-%m-%d %H:%M:%S}Z"
