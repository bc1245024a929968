"""Suggested commands: a command line a message tells a person (or a model) to run, quoted to paste as printed."""

from __future__ import annotations

import os
import shlex


def suggest(*argv: str | os.PathLike[str]) -> str:
    """The command *argv* as a shell would need it typed, in backquotes: ``suggest("chmod", "700", path)``.

    Each word is quoted only when it must be (a path with a space or a quote), so a placeholder such
    as ``FILE`` or an option such as ``--repair`` reads as written.

    :param argv: the command's words, the program first.
    :returns: the quoted line between backquotes, ready to sit in a message.
    """
    return f"`{shlex.join(os.fspath(word) for word in argv)}`"
