"""What the CLI prints never drives the terminal: control characters from a file, a request or a bucket are escaped.

A handoff's narrative, an inbox request's reason, a key's comment: text another agent (or a cloned
repository) wrote reaches a person's terminal through ``handoff show``, ``handoff inbox list`` and
the errors that quote it. An escape sequence in it could retitle the window, hide text, move the
cursor or rewrite what was printed before; a bidirectional override could make text read other
than it is. While a command runs, stdout and stderr escape every control character but newline
and tab, and those format characters, as ``\\uXXXX`` (``\\u001b`` for ESC, ``\\u202e`` for RIGHT-TO-LEFT
OVERRIDE), except the colour codes the CLI itself writes (:data:`~handoff_files.cli.terminal.SGR_CODES`).
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

from handoff_files.cli.terminal import SGR_CODES

__all__ = ["escape_unsafe", "safe_streams"]

# ESC unless it starts one of our colour codes; C0 but tab and newline; DEL and C1; the bidi and
# zero-width format characters that make text read other than it is
_OURS: Final = "|".join(sorted(SGR_CODES))
_UNSAFE: Final = re.compile(
    f"\x1b(?!\\[(?:{_OURS})m)|[\x00-\x08\x0b-\x1a\x1c-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]"
)


def escape_unsafe(text: str) -> str:
    """*text* with every character that could drive a terminal escaped as ``\\uXXXX`` (see the module's docstring)."""
    return _UNSAFE.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


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
