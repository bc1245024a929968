"""Names: the rule agent and thread ids follow (they become directory names: no path tricks); generation file names."""

from __future__ import annotations

import os
import re
import unicodedata
from pathlib import Path
from typing import Final

from handoff_files.foundation.errors import InvalidNameError

__all__ = [
    "FOLDER_PATTERN",
    "GENERATION_DIGITS",
    "ID_PATTERN",
    "check_folder_name",
    "check_folder_path",
    "check_id",
    "derive_id",
    "generation_from_stem",
    "generation_stem",
    "is_folder_name",
]

#: Agent and thread ids: a letter or digit, then up to 63 letters, digits, dots, underscores or dashes.
ID_PATTERN: Final = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"

_ID = re.compile(ID_PATTERN)

#: A thread's folder under a root of threads (an MCP server's ``--root``, a LangGraph saver's root):
#: an id in lower case, since a case-insensitive file system would give "Alpha" and "alpha" one folder.
FOLDER_PATTERN: Final = r"^[a-z0-9][a-z0-9._-]{0,63}$"

_FOLDER = re.compile(FOLDER_PATTERN)

#: A generation file's name is its number zero-padded to this many digits (more only past 99999999).
GENERATION_DIGITS: Final = 8
# the largest generation: the envelope's signed 64-bit limit (format.model.MAX_INT, which this layer cannot import)
_MAX_GENERATION: Final = 2**63 - 1
_STEM = re.compile(rf"[0-9]{{{GENERATION_DIGITS},19}}")


def generation_stem(generation: int) -> str:
    """The name, without its ending, of generation *generation*'s file: ``7`` → ``"00000007"``."""
    return f"{generation:0{GENERATION_DIGITS}d}"


def generation_from_stem(stem: str) -> int | None:
    """The generation a file name stem holds, or None unless the stem is exactly :func:`generation_stem`'s.

    A stem with another width (``"0000007"``, ``"000000007"``), other digits than ASCII's, or a number
    past the 64-bit limit or below 1 is not a generation file: it is never read as one.
    """
    if not _STEM.fullmatch(stem):
        return None
    generation = int(stem)
    if not 1 <= generation <= _MAX_GENERATION or generation_stem(generation) != stem:
        return None
    return generation


def check_id(value: str, what: str, path: str | Path) -> str:
    """Return *value* if it is a valid agent or thread id.

    :param what: ``"agent_id"`` or ``"thread_id"``, named in the error.
    :raises InvalidNameError: naming the rule it breaks.
    """
    if not isinstance(value, str) or not _ID.fullmatch(value):
        msg = (
            f"{what} {value!r} is not a valid id: use 1 to 64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
        raise InvalidNameError(path, msg)
    return value


def is_folder_name(name: str) -> bool:
    """Whether *name* may be a thread's folder under a root as it is: :data:`FOLDER_PATTERN`."""
    return isinstance(name, str) and _FOLDER.fullmatch(name) is not None


def check_folder_name(name: str, what: str, path: str | Path) -> str:
    """Return *name* if it is :data:`FOLDER_PATTERN`: a thread named under a root of threads.

    :param what: what the name is (``"thread"``), named in the error.
    :raises InvalidNameError: naming the rule it breaks (and the lower-case name, for one with capitals).
    """
    if is_folder_name(name):
        return name
    hint = f" ({name.lower()!r}, say)" if isinstance(name, str) and is_folder_name(name.lower()) else ""
    msg = (
        f"{what} {name!r} is not a valid id for a folder under the root: use 1 to 64 lower-case letters, "
        f"digits, '.', '_' or '-', starting with a letter or digit{hint}; a case-insensitive file system "
        "would give 'Alpha' and 'alpha' one folder"
    )
    raise InvalidNameError(path, msg)


def derive_id(name: str) -> str | None:
    """A valid id made from a folder's *name*: accents dropped, other characters as ``-``; None if nothing is left.

    ``"Café notes"`` gives ``"Cafe-notes"``; a name that is already valid is returned as it is.
    """
    if _ID.fullmatch(name):
        return name
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", ascii_name)
    slug = re.sub(r"^[^A-Za-z0-9]+", "", slug)[:64].rstrip("-.")
    return slug if _ID.fullmatch(slug) else None


def check_folder_path(path: str | os.PathLike[str], what: str) -> None:
    """Refuse *path* as a folder if it is a URL (``s3://…``) or reads as a mistyped one (``s3:/bucket``,
    ``s3:bucket``): a folder named ``s3:`` is never made by accident.

    :param what: what takes a folder here (``"the inbox"``), named in the error.
    :raises InvalidNameError: naming the path (without any ``user:secret@``) and what to do.
    """
    text = os.fspath(path)
    if not isinstance(text, str):
        return
    scheme, sep, rest = text.partition("://")
    if sep and "@" in rest.split("/", 1)[0]:  # a credential in the URL is never shown
        text = f"{scheme}://…@{rest.split('@', 1)[1]}"
    if sep:
        msg = f"a URL, not a folder: {what} takes a folder's path here (not on object storage, yet)"
        raise InvalidNameError(text, msg)
    if text[:3].lower() == "s3:":
        msg = f"reads as a mistyped URL (s3://bucket/prefix), not a folder: {what} makes no folder named 's3:'"
        raise InvalidNameError(text, msg)
