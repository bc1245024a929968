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
import errno
import hashlib
import os
import re
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import orjson

from handoff_files.format.codec import parse_json
from handoff_files.format.seal import self_check
from handoff_files.foundation.atomic import is_real_dir, read_bytes, write_all
from handoff_files.foundation.errors import HandoffError, HandoffNotFoundError, HandoffWriteError, InvalidNameError
from handoff_files.foundation.names import is_folder_name
from handoff_files.foundation.safe_paths import dir_under, open_dir_under, refuse_link
from handoff_files.thread.tail import cut_torn_tail

__all__ = [
    "NAMESPACES_DIR",
    "WRITES_DIR",
    "append_writes",
    "folder_name",
    "namespace_dirs",
    "namespace_ready",
    "read_writes",
    "thread_dirs",
    "writes_file",
]

NAMESPACES_DIR: Final = "namespaces"
WRITES_DIR: Final = "writes"
_SLUG_CUT: Final = re.compile(r"[^A-Za-z0-9._-]+")
_CHECK_LEN: Final = 16
_APPEND: Final = os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def folder_name(name: str) -> str:
    """The folder for a thread id or namespace: itself if a valid handoff id in lower case, else a slug and a hash.

    Lower case only (:data:`~handoff_files.foundation.names.FOLDER_PATTERN`, the rule the MCP server's
    thread names follow too): on a case-insensitive file system "Alice" and "alice" would share a folder.
    """
    if is_folder_name(name):
        return name
    slug = _SLUG_CUT.sub("-", name).strip("-._")[:40] or "id"
    return f"{slug}-{hashlib.sha256(name.encode('utf-8', 'surrogatepass')).hexdigest()[:16]}"


def thread_dirs(root: Path) -> list[Path]:
    """The thread folders under *root* (not those named with a leading dot: a thread being deleted), sorted.

    :raises InvalidNameError: for a symbolic link among them (never followed out of the root).
    :raises HandoffError: if the root cannot be listed.
    """
    try:
        entries = sorted(os.scandir(root), key=lambda item: item.name)
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as exc:
        msg = f"cannot list the saver's root: {exc.strerror or exc}"
        raise HandoffError(root, msg) from exc
    found = []
    for entry in entries:
        if entry.name.startswith("."):
            continue
        if entry.is_symlink():
            refuse_link(Path(entry.path))
        if entry.is_dir(follow_symlinks=False):
            found.append(Path(entry.path))
    return found


def namespace_ready(root: Path, ns_dir: Path, *, create: bool = False) -> bool:
    """Whether *ns_dir* exists as a real folder under *root* (made, with *create*), none of its own folders a link.

    Checked before every read and write: a link planted for the thread, ``namespaces/``, a
    namespace, ``history/`` or ``writes/`` is refused, so nothing is read or written through it.

    :raises InvalidNameError: for such a link (naming it).
    """
    with open_dir_under(root, ns_dir, create=create) as folder:
        if folder is None:
            return False
        for name in ("history", WRITES_DIR):
            try:
                mode = os.lstat(name, dir_fd=folder).st_mode
            except FileNotFoundError:
                continue
            except OSError as exc:
                msg = f"cannot look at it: {exc.strerror or exc}"
                raise HandoffError(ns_dir / name, msg) from exc
            if stat.S_ISLNK(mode):
                refuse_link(ns_dir / name)
    return True


def namespace_dirs(root: Path, thread_dir: Path) -> Iterator[Path]:
    """The thread directory (its root namespace, once it has ``history/``) and each subgraph namespace's directory.

    :raises InvalidNameError: for a symbolic link in the way (the thread, ``namespaces/``, a namespace …).
    """
    if not namespace_ready(root, thread_dir):
        return
    if is_real_dir(thread_dir / "history"):
        yield thread_dir
    if not dir_under(root, thread_dir / NAMESPACES_DIR):
        return
    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
        for entry in sorted(os.scandir(thread_dir / NAMESPACES_DIR), key=lambda item: item.name):
            if entry.is_symlink():
                refuse_link(Path(entry.path))
            if entry.is_dir(follow_symlinks=False) and namespace_ready(root, Path(entry.path)):
                yield Path(entry.path)


def writes_file(ns_dir: Path, checkpoint_id: str) -> Path:
    """The file of one checkpoint's pending writes."""
    return ns_dir / WRITES_DIR / f"{folder_name(checkpoint_id)}.jsonl"


def _check(fields: dict[str, Any]) -> str:
    return self_check(fields)[:_CHECK_LEN]  # as a journal line checks itself


def append_writes(root: Path, path: Path, lines: list[dict[str, Any]]) -> None:
    """Append write records durably (one fdatasync; the directory too when the file is new). Call under the lock.

    The file is opened in its folder, checked from *root* down with no link followed; a link or a
    file with other hard links in its place is refused, never appended to.

    :raises InvalidNameError: for a symbolic link on the way, or a file with other hard links.
    :raises HandoffWriteError: if the disk refuses.
    """
    data = b"".join(orjson.dumps({**line, "check": _check(line)}) + b"\n" for line in lines)
    with open_dir_under(root, path.parent, create=True) as folder:
        assert folder is not None  # noqa: S101 -- made if missing
        try:
            fd = os.open(path.name, _APPEND, 0o600, dir_fd=folder)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                refuse_link(path)
            msg = f"cannot open the pending writes: {exc.strerror or exc}"
            raise HandoffWriteError(path, msg) from exc
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
                msg = (
                    f"not a file of the saver's own ({st.st_nlink} hard links, or not a regular file): "
                    "appending would change what it is linked to; move it aside"
                )
                raise InvalidNameError(path, msg)
            cut_torn_tail(fd)  # a crash mid-append left a line without its newline: never acknowledged
            write_all(fd, data)
            os.fdatasync(fd)
            if st.st_size == 0:
                os.fsync(folder)  # a new file is not durable until its directory entry is
        except OSError as exc:
            msg = f"cannot write the pending writes: {exc.strerror or exc}"
            raise HandoffWriteError(path, msg) from exc
        finally:
            os.close(fd)


def read_writes(path: Path) -> list[dict[str, Any]]:
    """The write records of one checkpoint, in the order written; a torn last line (never acknowledged) is left out.

    :raises HandoffError: if a complete line is damaged (its check fails or it does not parse).
    """
    try:
        data, _ = read_bytes(path, sys.maxsize, follow_symlinks=False)
    except HandoffNotFoundError:
        return []
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
