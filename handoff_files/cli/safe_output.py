"""What the CLI prints never drives the terminal: control characters from a file, a request or a bucket are escaped.

A handoff's narrative, an inbox request's reason, a key's comment: text another agent (or a cloned
repository) wrote reaches a person's terminal through ``handoff show``, ``handoff inbox list`` and
the errors that quote it. An escape sequence in it could retitle the window, hide text, move the
cursor or rewrite what was printed before; a bidirectional override could make text read other
than it is. While a command runs, stdout and stderr escape every control character but newline
and tab, and the bidirectional embeddings, overrides and isolates (U+202A to U+202E, U+2066 to U+2069,
the "Trojan Source" characters) and the zero-width space, as ``\\uXXXX`` (``\\u001b`` for ESC,
``\\u202e`` for RIGHT-TO-LEFT OVERRIDE). Every ESC is escaped: the colour codes the CLI writes
itself start with a key of this process (:data:`~handoff_files.cli.terminal.COLOUR_KEY`), turned
into ``ESC [`` here, so text cannot paint itself. The joiners and the direction marks (U+200C to
U+200F) pass: emoji and right-to-left scripts need them, and they reorder nothing.
The same escape is JSON's, and such a character can only be inside a JSON string, so output that is
JSON (``--json``, the hooks' answers) stays valid JSON meaning the same text. Bytes written to a
stream's ``buffer`` (the MCP server's protocol) are not touched.
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Iterator
from typing import Any, Final, TextIO

from handoff_files.cli.terminal import COLOUR_KEY, SGR_CODES

__all__ = ["escape_unsafe", "safe_streams"]

# C0 but tab and newline (ESC among them); DEL and C1; the zero-width space; bidi embeddings,
# overrides and isolates
_UNSAFE: Final = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b\u202a-\u202e\u2066-\u2069]")
# one of the CLI's own colour codes, as paint() writes it
_OURS: Final = re.compile(re.escape(COLOUR_KEY) + "(" + "|".join(sorted(SGR_CODES)) + ")m")


def escape_unsafe(text: str) -> str:
    """*text* with every character that could drive a terminal escaped as ``\\uXXXX``, and the CLI's own
    colour codes written as escapes (see the module's docstring)."""
    pieces = _OURS.split(text)  # text, code, text, code … text
    return "".join(
        f"\x1b[{piece}m" if index % 2 else _UNSAFE.sub(lambda found: f"\\u{ord(found.group()):04x}", piece)
        for index, piece in enumerate(pieces)
    )


class _Escaping:
    """A text stream that escapes what it is given, then writes it to the stream it wraps."""

    def __init__(self, stream: TextIO) -> None:
        self.wrapped = stream

    def write(self, text: str) -> int:
        self.wrapped.write(escape_unsafe(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:  # flush, isatty, fileno, encoding …: the wrapped stream's
        return getattr(self.wrapped, name)


@contextlib.contextmanager
def safe_streams() -> Iterator[None]:
    """Escape what is written to stdout and stderr until the block ends.

    A stream replaced meanwhile (stdout pointed at nothing after a broken pipe) is left as it was set.
    """
    out, err = sys.stdout, sys.stderr
    sys.stdout = _Escaping(out)
    sys.stderr = _Escaping(err)
    try:
        yield
    finally:
        if isinstance(sys.stdout, _Escaping) and sys.stdout.wrapped is out:
            sys.stdout = out
        if isinstance(sys.stderr, _Escaping) and sys.stderr.wrapped is err:
            sys.stderr = err
