"""A per-user record beside the acknowledgement key (outside every thread): a JSON list of entries.

Two records use it: ``trusted-threads`` (the folders the hooks may brief from,
:mod:`~handoff_files.thread.trust`) and ``pinned-threads`` (the threads that accept only signed
generations, :mod:`~handoff_files.thread.pins`). Each is a file of this user's, mode 0600,
rewritten atomically under an ``flock`` of its own so two writers never lose an entry; one that is
not this user's, or that others may write, is refused (it could change whom the library trusts).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import orjson

from handoff_files.foundation.atomic import read_bytes, write_durable
from handoff_files.foundation.errors import HandoffError, HandoffNotFoundError
from handoff_files.foundation.secret import KEY_ENV, key_path

__all__ = ["locked", "read_entries", "read_private", "record_path", "write_entries"]

_LIMIT: Final = 4 << 20
_VERSION: Final = 1


#: record paths by the name and the environment that places them (found once: every restore of a pinned thread asks)
_PATHS: dict[tuple[str, str | None, str | None, str | None], Path] = {}


def record_path(name: str) -> Path:
    """The record *name*, beside the acknowledgement key (``$XDG_STATE_HOME/handoff-files/``)."""
    environ = os.environ
    placed = (name, environ.get(KEY_ENV), environ.get("XDG_STATE_HOME"), environ.get("HOME"))
    path = _PATHS.get(placed)
    if path is None:
        path = key_path().parent / name
        if len(_PATHS) >= 64:
            _PATHS.clear()
        _PATHS[placed] = path
    return path


@contextlib.contextmanager
def locked(path: Path, error: type[HandoffError]) -> Iterator[Path]:
    """Hold the record's own ``flock`` (*path*``.lock``) while it is read and rewritten.

    :raises error: if the lock file cannot be opened.
    """
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path.with_name(f"{path.name}.lock"), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    except OSError as exc:
        msg = f"cannot open the record's lock: {exc.strerror or exc}"
        raise error(path, msg) from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield path
    finally:
        os.close(fd)  # closing drops the flock


def read_entries(path: Path, field: str, error: type[HandoffError], redo: str) -> list[dict[str, Any]]:
    """The entries under *field* in the record at *path* (none if there is no record yet).

    :param redo: what a person does when the record must go (named in the error).
    :raises error: if the record is not a private file of this user's, or does not read.
    """
    data = read_private(path, _LIMIT, error, redo)
    if data is None:
        return []
    try:  # our own file, checked private above: orjson reads it (no NaN, no comments) at a tenth of the cost
        entries = orjson.loads(data)[field]
        if not isinstance(entries, list) or not all(isinstance(entry, dict) for entry in entries):
            msg = f"{field} is not a list of objects"
            raise TypeError(msg)  # noqa: TRY301 -- told with every other shape error below
    except (KeyError, TypeError, ValueError) as exc:  # orjson.JSONDecodeError is a ValueError
        msg = f"not a record of this library ({exc}): remove it and {redo}"
        raise error(path, msg) from exc
    return entries


def read_private(path: Path, limit: int, error: type[HandoffError], redo: str) -> bytes | None:
    """The bytes of the record at *path* (at most *limit*), a file of this user's no one else can write; None if none.

    :param redo: what a person does when the record must go (named in the error).
    :raises error: if it is not such a file, or cannot be read.
    """
    read = read_private_stat(path, limit, error, redo)
    return None if read is None else read[0]


def read_private_stat(
    path: Path, limit: int, error: type[HandoffError], redo: str
) -> tuple[bytes, os.stat_result] | None:
    """:func:`read_private`, with the ``stat`` of the file read (its identity, for a cache)."""
    try:
        data, st = read_bytes(path, limit, follow_symlinks=False)
    except HandoffNotFoundError:
        return None
    except HandoffError as exc:
        raise error(path, f"cannot read the record: {exc.reason}") from exc
    if st.st_uid != os.geteuid() or st.st_mode & 0o022:
        msg = (
            f"the record must be a file of yours that no one else can write (it is mode "
            f"{stat.S_IMODE(st.st_mode):04o}, owner {st.st_uid}): remove it and {redo}"
        )
        raise error(path, msg)
    return data, st


def write_entries(path: Path, field: str, entries: list[dict[str, Any]], *, sync: bool = True) -> None:
    """Rewrite the record at *path* with *entries* under *field*, atomically (and durably unless not *sync*).

    The oldest entries are dropped while the record would be past the size :func:`read_entries` reads:
    a record too large to read would hold nothing.
    """
    while True:
        data = orjson.dumps({"version": _VERSION, field: entries}, option=orjson.OPT_INDENT_2) + b"\n"
        if len(data) <= _LIMIT or not entries:
            break
        entries = entries[max(1, len(entries) // 10) :]
    write_durable(path, data, sync=sync, mode=0o600)
