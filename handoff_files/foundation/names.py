"""Names: the rule agent and thread ids follow (they become directory names, so no path tricks)."""

from __future__ import annotations

import re
from pathlib import Path

from handoff_files.format.model import ID_PATTERN
from handoff_files.foundation.errors import InvalidNameError

__all__ = ["check_id"]

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
