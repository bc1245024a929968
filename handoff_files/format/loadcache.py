"""The verified-load cache: ``load(path, cache=True)`` parses, validates and hashes an unchanged file once.

An entry is the :class:`Handoff` a load verified, kept under the path it was loaded by, with the
identity of the file it was read from: device, inode, size, and modification and change times in
nanoseconds (``fstat`` of the opened file, so what is checked is what would be read). A later
load of that path opens the file again and returns the kept object when the identity is the same.
A save replaces a file by renaming a new one over it (a new inode); a ``write`` in place changes
the change time, which nothing but the kernel sets. A file changed in place again within one tick
of the file system's clock, at the same size, keeps its times; so an entry whose file changed
shortly before it was read (:data:`RACY_NS`) keeps the bytes read too, and a hit on it reads the
file and compares them (git's "racily clean" index entries, handled the same way). What no time
shows, as git cannot either: a write through a shared memory mapping to a page already dirty.

Only what verified against its seal is kept (not a migrated older file, never an error), at most
:data:`MAX_ENTRIES` entries and :data:`MAX_BYTES` of files (their sizes, not the objects' memory),
least recently used first out.

The object returned is shared by every load that hits, which is the point (no copy is made):
treat it as read-only. Its models are frozen; its dicts and lists are not, and a change to one
would be seen by the next load of the same unchanged file. That is why the cache is asked for
(``cache=True``), never on by default.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from handoff_files.foundation.atomic import open_to_read, read_open

if TYPE_CHECKING:
    from handoff_files.format.model import Handoff

__all__ = ["CACHE", "MAX_BYTES", "MAX_ENTRIES", "RACY_NS", "LoadCache", "identity"]

#: Entries kept, and the sizes of their files summed: past either, the least recently used go.
MAX_ENTRIES: Final = 64
MAX_BYTES: Final = 64 * 1024 * 1024
#: A file whose change time is less than this before the read that filled its entry is "racy":
#: a change in the same clock tick could leave its times as they were, so its bytes are compared.
#: Far above any file system's tick (FAT's 2 s included).
RACY_NS: Final = 3_000_000_000

#: (device, inode, size, mtime ns, ctime ns) of an open file.
Identity = tuple[int, int, int, int, int]


def identity(st: os.stat_result) -> Identity:
    """The identity of a file an entry holds: any save or edit changes it (see the module's text)."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


@dataclass(frozen=True, slots=True)
class _Entry:
    identity: Identity
    handoff: Handoff
    data: bytes | None  # the bytes read, kept while the entry is racy (compared at a hit)


class LoadCache:
    """Verified handoffs by path and file identity (one per process: ``CACHE``). Thread-safe."""

    def __init__(self, max_entries: int = MAX_ENTRIES, max_bytes: int = MAX_BYTES) -> None:
        self._entries: OrderedDict[tuple[str, bool, str | None], _Entry] = OrderedDict()
        self._max_entries, self._max_bytes = max_entries, max_bytes
        self._bytes = 0
        self._lock = threading.Lock()

    def load(
        self,
        path: str,
        *,
        limit: int,
        follow_symlinks: bool,
        assume_version: str | None,
        decode: Callable[[bytes, os.stat_result], Handoff],
    ) -> Handoff:
        """The verified handoff at *path*: the kept one if its file is unchanged, else *decode* of its bytes.

        :raises HandoffError: as :func:`~handoff_files.format.loader.load` (an error is never kept).
        """
        # the path as named (links not resolved): an absolute one as it is, the cheap and usual case
        key = (path if path.startswith("/") else os.path.abspath(path), follow_symlinks, assume_version)  # noqa: PTH100
        started = time.time_ns()
        fd, st = open_to_read(path, limit, follow_symlinks=follow_symlinks)
        try:
            found = identity(st)
            with self._lock:
                entry = self._entries.get(key)
                if entry is not None and entry.identity == found:
                    self._entries.move_to_end(key)
                    if entry.data is None:
                        return entry.handoff
                else:
                    entry = None
            data = read_open(fd, st, Path(path), limit)
        finally:
            with contextlib.suppress(OSError):
                os.close(fd)
        if entry is not None and data == entry.data:
            handoff = entry.handoff  # racy, and the same bytes: kept (its bytes dropped once it is not racy)
        else:
            handoff = decode(data, st)
            if handoff.seal is None:
                return handoff  # a migrated older file (unsealed): decoded at each load
        self._keep(key, found, handoff, data if started - st.st_ctime_ns < RACY_NS else None)
        return handoff

    def _keep(self, key: tuple[str, bool, str | None], found: Identity, handoff: Handoff, data: bytes | None) -> None:
        size = found[2]
        if size > self._max_bytes:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old.identity[2]
            self._entries[key] = _Entry(found, handoff, data)
            self._bytes += size
            while len(self._entries) > self._max_entries or self._bytes > self._max_bytes:
                _, dropped = self._entries.popitem(last=False)
                self._bytes -= dropped.identity[2]

    def clear(self) -> None:
        """Forget every entry."""
        with self._lock:
            self._entries.clear()
            self._bytes = 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)


#: The process's cache, used by ``load(..., cache=True)``.
CACHE: Final = LoadCache()
