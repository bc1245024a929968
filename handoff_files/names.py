"""Names: agent and thread ids, and paths that must stay inside their root."""

from __future__ import annotations

import re
from pathlib import Path

from handoff_files.errors import InvalidNameError
from handoff_files.model import ID_PATTERN

__all__ = ["check_id", "inside"]

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


def inside(root: Path, *parts: str) -> Path:
    """Join *parts* under *root* and refuse a result that escapes it.

    :raises InvalidNameError: if the resolved path is not inside the resolved root.
    """
    base = root.resolve()
    candidate = base.joinpath(*parts).resolve()
    if candidate != base and base not in candidate.parents:
        msg = f"path {'/'.join(parts)!r} escapes its root {base}"
        raise InvalidNameError(root, msg)
    return candidate
