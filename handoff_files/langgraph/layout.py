"""Where a LangGraph thread lives under the saver's root, and its pending writes beside each checkpoint.

::

    <root>/<thread>/                  the thread's root namespace: a handoff thread directory
        handoff.json, state.json, journal.jsonl, history/00000001.json …   one generation per checkpoint
        writes/<checkpoint id>.jsonl  the pending writes of that checkpoint, one line each
        namespaces/<namespace>/       each subgraph namespace: a handoff thread directory of its own

A thread id or namespace that is a valid handoff id in lower case names its folder as it is; any
other (a namespace's ``child:…`` has a colon; ``Alice`` has capitals, which a case-insensitive
file system would fold into ``alice``'s folder) gets a readable slug and a hash of the whole id,
so two ids never share a folder. The ids themselves are recorded in every checkpoint.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import orjson

from handoff_files.format.codec import parse_json
from handoff_files.format.seal import self_check
from handoff_files.foundation.atomic import fsync_dir, write_all
from handoff_files.foundation.errors import HandoffError, HandoffWriteError
from handoff_files.foundation.names import ID_PATTERN
from handoff_files.thread.tail import cut_torn_tail

__all__ = [
    "NAMESPACES_DIR",
    "WRITES_DIR",
    "append_writes",
    "folder_name",
    "namespace_dirs",
    "private_dirs",
    "read_writes",
    "writes_file",
]

NAMESPACES_DIR: Final = "namespaces"
WRITES_DIR: Final = "writes"
_ID: Final = re.compile(ID_PATTERN)
_SLUG_CUT: Final = re.compile(r"[^A-Za-z0-9._-]+")
_CHECK_LEN: Final = 16


def folder_name(name: str) -> str:
    """The folder for a thread id or namespace: itself if a valid handoff id in lower case, else a slug and a hash.

    Lower case only: on a case-insensitive file system "Alice" and "alice" would share a folder.
    """
    if _ID.fullmatch(name) and name == name.lower():
        return name
    slug = _SLUG_CUT.sub("-", name).strip("-._")[:40] or "id"
    return f"{slug}-{hashlib.sha256(name.encode('utf-8', 'surrogatepass')).hexdigest()[:16]}"


def private_dirs(root: Path, path: Path) -> None:
    """Create *path* and each missing folder from *root* down to it, mode 0700 (a thread's files are private)."""
    if not root.exists():
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
    missing = [folder for folder in (path, *path.parents) if root in folder.parents and not folder.exists()]
    for folder in reversed(missing):
        folder.mkdir(mode=0o700, exist_ok=True)


def namespace_dirs(thread_dir: Path) -> Iterator[Path]:
    """The thread directory (its root namespace, once it has ``history/``) and each subgraph namespace's directory."""
    if (thread_dir / "history").is_dir():
        yield thread_dir
    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
        for entry in sorted(os.scandir(thread_dir / NAMESPACES_DIR), key=lambda item: item.name):
            if entry.is_dir(follow_symlinks=False):
                yield Path(entry.path)


def writes_file(ns_dir: Path, checkpoint_id: str) -> Path:
    """The file of one checkpoint's pending writes."""
    return ns_dir / WRITES_DIR / f"{folder_name(checkpoint_id)}.jsonl"


def _check(fields: dict[str, Any]) -> str:
    return self_check(fields)[:_CHECK_LEN]  # as a journal line checks itself


def append_writes(path: Path, lines: list[dict[str, Any]]) -> None:
    """Append write records durably (one fdatasync; the directory too when the file is new). Call under the lock.

    :raises HandoffWriteError: if the disk refuses.
    """
    data = b"".join(orjson.dumps({**line, "check": _check(line)}) + b"\n" for line in lines)
    try:
        path.parent.mkdir(mode=0o700, exist_ok=True)
        created = not path.exists()
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
        try:
            cut_torn_tail(fd)  # a crash mid-append left a line without its newline: never acknowledged
            write_all(fd, data)
            os.fdatasync(fd)
        finally:
            os.close(fd)
        if created:
            fsync_dir(path.parent)
    except OSError as exc:
        msg = f"cannot write the pending writes: {exc.strerror or exc}"
        raise HandoffWriteError(path, msg) from exc


def read_writes(path: Path) -> list[dict[str, Any]]:
    """The write records of one checkpoint, in the order written; a torn last line (never acknowledged) is left out.

    :raises HandoffError: if a complete line is damaged (its check fails or it does not parse).
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    except OSError as exc:
        msg = f"cannot read the pending writes: {exc.strerror or exc}"
        raise HandoffError(path, msg) from exc
    lines = data.split(b"\n")
    records = []
    for number, line in enumerate(lines[:-1], start=1):  # the last piece has no newline: torn, or empty
        if not line:
            continue
        record = parse_json(line, path)
        if not isinstance(record, dict) or record.pop("check", None) != _check(record):
            msg = f"line {number} is damaged (its check does not match)"
            raise HandoffError(path, msg)
        records.append(record)
    return records
