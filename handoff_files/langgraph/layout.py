"""Where a LangGraph thread lives under the saver's root, and its pending writes beside each checkpoint.

::

    <root>/.spares/<pid>-…-<hex>      empty files a checkpoint's first writes take (handoff_files.langgraph.spares)
    <root>/<thread>/                  the thread's root namespace: a handoff thread directory
        handoff.json, state.json, journal.jsonl, history/00000001.json …   one generation per checkpoint
        writes/00000001+<checkpoint id>.jsonl   the pending writes of generation 1's checkpoint, one line each
        blobs/<digest>.json           a value too large to read inline (see handoff_files.langgraph.blobs)
        namespaces/<namespace>/       each subgraph namespace: a handoff thread directory of its own

A thread id or namespace that is a valid handoff id in lower case names its folder as it is; any
other (a namespace's ``child:…`` has a colon; ``Alice`` has capitals, which a case-insensitive
file system would fold into ``alice``'s folder) gets a readable slug and a hash of the whole id,
so two ids never share a folder. The ids themselves are recorded in every checkpoint.

A writes file is named by its checkpoint's generation and id (joined by ``+``, which no folder name
holds), so ``ls`` lists them in the order of their files in ``history/``. Writes that arrive before
their checkpoint is saved (LangGraph's async durability) go to ``writes/<checkpoint id>.jsonl`` (the
name an older release used for all), renamed once the checkpoint is saved; a reader reads both.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final, Protocol

import orjson

from handoff_files.format.codec import MAX_FILE_BYTES, parse_json
from handoff_files.format.seal import self_check
from handoff_files.foundation.atomic import is_real_dir, write_all
from handoff_files.foundation.errors import (
    HandoffError,
    HandoffNotFoundError,
    HandoffParseError,
    HandoffWriteError,
    InvalidNameError,
)
from handoff_files.foundation.names import is_folder_name
from handoff_files.foundation.safe_paths import dir_under, open_dir_under, refuse_link
from handoff_files.thread.tail import cut_torn_tail, read_whole

__all__ = [
    "MAX_WRITES_BYTES",
    "NAMESPACES_DIR",
    "SPARES_DIR",
    "WRITES_DIR",
    "SparePool",
    "append_writes",
    "folder_name",
    "name_writes",
    "namespace_dirs",
    "namespace_ready",
    "read_checkpoint_writes",
    "read_writes",
    "thread_dirs",
    "unlink_in",
    "writes_file",
    "writes_files",
    "writes_owner",
]

NAMESPACES_DIR: Final = "namespaces"
#: The folder of spare files under a saver's root (a dot name: no listing of threads sees it); see
#: :mod:`handoff_files.langgraph.spares`.
SPARES_DIR: Final = ".spares"
WRITES_DIR: Final = "writes"
_SLUG_CUT: Final = re.compile(r"[^A-Za-z0-9._-]+")
_CHECK_LEN: Final = 16
#: The largest pending-writes file: 16 lines as large as a checkpoint file may be (each line is read with that
#: limit). ``put_writes`` refuses to grow a file past it, so a larger one (a sparse or planted file) is refused unread.
MAX_WRITES_BYTES: Final = 16 * MAX_FILE_BYTES
# every line the saver writes starts so (``put_writes`` builds each record with ``task_id`` first): a last
# piece that does not is no line cut short by a crash mid-append but damage (NUL bytes, other text)
_LINE_START: Final = b'{"task_id":'


class SparePool(Protocol):
    """Where a new writes file's spare comes from: :class:`handoff_files.langgraph.spares.Spares`."""

    def take(self, spares_fd: int) -> str | None: ...
    def turn_off(self) -> None: ...


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
        missing = []
        for name in ("history", WRITES_DIR, "blobs"):
            try:
                mode = os.lstat(name, dir_fd=folder).st_mode
            except FileNotFoundError:
                missing.append(name)
                continue
            except OSError as exc:
                msg = f"cannot look at it: {exc.strerror or exc}"
                raise HandoffError(ns_dir / name, msg) from exc
            if stat.S_ISLNK(mode):
                refuse_link(ns_dir / name)
        if create and (made := [name for name in missing if name != "blobs"]):
            _make_folders(folder, ns_dir, made)
    return True


def _make_folders(folder: int, ns_dir: Path, names: list[str]) -> None:
    """Make a namespace's ``history/`` and ``writes/`` (0700) with one flush of their directory, not one each."""
    made = False
    try:
        for name in names:
            with contextlib.suppress(FileExistsError):  # there already (a link planted there is refused when opened)
                os.mkdir(name, 0o700, dir_fd=folder)
                made = True
        if made:
            os.fsync(folder)  # a new folder is durable only once its entry is
    except OSError as exc:
        msg = f"cannot create the namespace's folders: {exc.strerror or exc}"
        raise HandoffWriteError(ns_dir, msg) from exc


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


def writes_file(ns_dir: Path, checkpoint_id: str, generation: int | None = None) -> Path:
    """The file of one checkpoint's pending writes: named by its generation too, once that is known."""
    name = folder_name(checkpoint_id)
    return ns_dir / WRITES_DIR / (f"{generation:08d}+{name}.jsonl" if generation is not None else f"{name}.jsonl")


def writes_files(ns_dir: Path, checkpoint_id: str, generation: int | None) -> list[Path]:
    """Every name a checkpoint's pending writes may have: by generation and id, then by id alone."""
    named = [writes_file(ns_dir, checkpoint_id, generation)] if generation is not None else []
    return [*named, writes_file(ns_dir, checkpoint_id)]


def writes_owner(name: str) -> tuple[int | None, str]:
    """A writes file's generation (None for a name by id alone) and checkpoint folder name; ``""`` if not one."""
    stem, dot, suffix = name.rpartition(".")
    if not dot or suffix != "jsonl":
        return None, ""
    number, plus, rest = stem.partition("+")
    if plus and number.isdigit() and rest:
        return int(number), rest
    return None, stem


def read_checkpoint_writes(ns_dir: Path, checkpoint_id: str, generation: int | None) -> list[dict[str, Any]]:
    """The write records of one checkpoint under either of its names (:func:`writes_files`), in order."""
    paths = reversed(writes_files(ns_dir, checkpoint_id, generation))  # those written before the put first
    return [record for path in paths for record in read_writes(path)]


def name_writes(root: Path, ns_dir: Path, checkpoint_id: str, generation: int) -> None:
    """Rename writes that came before their checkpoint's put (by id alone) to the name with its generation.

    Call under the lock. Housekeeping: a reader reads both names, so a rename that fails (or a crash
    before it) loses nothing.
    """
    legacy, named = writes_file(ns_dir, checkpoint_id), writes_file(ns_dir, checkpoint_id, generation)
    with contextlib.suppress(OSError, HandoffError), open_dir_under(root, ns_dir / WRITES_DIR) as folder:
        if folder is not None and not _exists(named.name, folder):
            os.rename(legacy.name, named.name, src_dir_fd=folder, dst_dir_fd=folder)


def _exists(name: str, folder: int) -> bool:
    try:
        os.lstat(name, dir_fd=folder)
    except FileNotFoundError:
        return False
    return True


def _check(fields: dict[str, Any]) -> str:
    return self_check(fields)[:_CHECK_LEN]  # as a journal line checks itself


def append_writes(root: Path, path: Path, lines: list[dict[str, Any]], spares: SparePool | None = None) -> None:
    """Append write records durably: one fdatasync. Call under the lock.

    A new file takes one of *spares* (renamed into place, see :mod:`~handoff_files.langgraph.spares`);
    without one, its directory is flushed too. Each line carries its file's path under *root*
    (``"file"``), so a spare whose rename a power loss undid finds its place again.

    The file is opened in its folder, checked from *root* down with no link followed; a link or a
    file with other hard links in its place is refused, never appended to. A last line cut short by
    a crash is cut away first; one that lost only its newline (it verifies) gets it back and stays.

    :raises InvalidNameError: for a symbolic link on the way, or a file with other hard links.
    :raises HandoffWriteError: if the disk refuses, or the file would grow past :data:`MAX_WRITES_BYTES`.
    :raises HandoffParseError: if its last piece is damage, not a line (left as it is, for a person to see).
    """
    records = [{**line, "file": path.relative_to(root).as_posix()} for line in lines]
    data = b"".join(orjson.dumps({**record, "check": _check(record)}) + b"\n" for record in records)
    with open_dir_under(root, path.parent, create=True) as folder:
        assert folder is not None  # noqa: S101 -- made if missing
        spared = spares is not None and _spare_in_place(root, path, folder, spares)
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
            if st.st_size + len(data) + 1 > MAX_WRITES_BYTES:  # + 1: a newline a kept last line may need
                msg = (
                    f"{len(data):,} more bytes would grow the pending writes from {st.st_size:,} bytes past "
                    f"their {MAX_WRITES_BYTES:,}-byte limit (no reader would read them back); write less per checkpoint"
                )
                raise HandoffWriteError(path, msg)
            write_all(fd, _end_last_line(fd, path, st.st_size) + data)
            os.fdatasync(fd)
            if st.st_size == 0 and not spared:
                os.fsync(folder)  # a new file is not durable until its directory entry is
        except OSError as exc:
            msg = f"cannot write the pending writes: {exc.strerror or exc}"
            raise HandoffWriteError(path, msg) from exc
        finally:
            os.close(fd)


def _spare_in_place(root: Path, path: Path, folder: int, spares: SparePool) -> bool:
    """Rename a spare to *path* if it does not exist yet: True if one is there now (its entry made durable before)."""
    try:
        os.lstat(path.name, dir_fd=folder)
    except FileNotFoundError:
        pass
    else:
        return False  # appended to: no new entry to flush
    with contextlib.suppress(OSError, HandoffError), open_dir_under(root, root / SPARES_DIR, create=True) as fd:
        name = spares.take(fd) if fd is not None else None
        if name is not None:
            try:
                os.rename(name, path.name, src_dir_fd=fd, dst_dir_fd=folder)
            except OSError as exc:
                if exc.errno == errno.EXDEV:  # the thread is another file system (mounted): none will serve
                    spares.turn_off()
                raise
            return True
    return False  # the spares' folder or a spare could not be had: the file is made and flushed as before


def _end_last_line(fd: int, path: Path, size: int) -> bytes:
    """What goes before the next append: a newline after a last line that verifies; else nothing (a torn one is cut)."""
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return b""
    content = os.pread(fd, size, 0)  # rare (a crash, or damage), and bounded: the caller checked the size
    *complete, tail = content.split(b"\n")
    if _last_record(tail, path, len(complete) + 1) is not None:
        return b"\n"  # acknowledged once, its newline lost since: ending it keeps it
    cut_torn_tail(fd)  # a crash mid-append left a line without its newline: never acknowledged
    return b""


def read_writes(path: Path) -> list[dict[str, Any]]:
    """The write records of one checkpoint, in the order written; a torn last line (never acknowledged) is left out.

    A last line that lost only its newline but verifies is kept: ``put_writes`` returned only after
    the whole line was synced, so it is a write that was acknowledged.

    :raises HandoffTooLargeError: for a file over :data:`MAX_WRITES_BYTES` (refused before it is read).
    :raises HandoffParseError: if the last piece (after the last newline) is not the start of a line
        the saver writes (NUL bytes, other text): damage, never read as no writes.
    :raises HandoffError: if a complete line is damaged (its check fails or it does not parse), or
        the file is not a regular file or cannot be read.
    """
    try:
        data = read_whole(path, max_bytes=MAX_WRITES_BYTES)
    except HandoffNotFoundError:
        return []
    *complete, tail = data.split(b"\n")
    records = [_record(line, path, number) for number, line in enumerate(complete, start=1) if line]
    last = _last_record(tail, path, len(complete) + 1)
    return records if last is None else [*records, last]


def _record(line: bytes, path: Path, number: int) -> dict[str, Any]:
    record = parse_json(line, path)
    if not isinstance(record, dict) or record.pop("check", None) != _check(record):
        msg = f"line {number} is damaged (its check does not match)"
        raise HandoffError(path, msg)
    return record


def _last_record(tail: bytes, path: Path, number: int) -> dict[str, Any] | None:
    """The last piece of a writes file, after its last newline: a line that lost only its newline, or None.

    None for nothing, or for the start of a line cut short (a crash mid-append: never acknowledged).

    :raises HandoffParseError: for anything else: damage (NUL bytes, other text), reported by name.
    """
    if not tail:
        return None
    with contextlib.suppress(HandoffError):
        return _record(tail, path, number)
    if tail[: len(_LINE_START)] == _LINE_START[: len(tail)]:
        return None
    msg = (
        f"line {number}, the last (no newline after it), is not the start of a line the saver writes "
        f"({tail[:16]!r}, {len(tail):,} bytes): damage, not a write cut short; "
        "move the file aside to drop this checkpoint's pending writes (their tasks run again)"
    )
    raise HandoffParseError(path, msg)


def unlink_in(path: Path, folder: int | None = None) -> None:
    """Delete *path* (by its name in *folder*'s descriptor, if given); already gone is fine.

    :raises HandoffWriteError: if it cannot be deleted.
    """
    try:
        if folder is None:
            path.unlink(missing_ok=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path.name, dir_fd=folder)
    except OSError as exc:
        msg = f"cannot delete it: {exc.strerror or exc}"
        raise HandoffWriteError(path, msg) from exc
