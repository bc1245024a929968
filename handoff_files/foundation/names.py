"""Names: the rule agent and thread ids follow (they become directory names, so no path tricks)."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path
from typing import Final

from handoff_files.foundation.errors import InvalidNameError

__all__ = ["ID_PATTERN", "check_id", "derive_id"]

#: Agent and thread ids: a letter or digit, then up to 63 letters, digits, dots, underscores or dashes.
ID_PATTERN: Final = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"

_ID = re.compile(ID_PATTERN)


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
