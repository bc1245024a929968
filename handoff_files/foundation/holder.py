"""A lock file's holder record: who holds it, as the holder wrote itself at the file's start."""

from __future__ import annotations

import datetime as dt
import functools
import json
import os
import time
from dataclasses import dataclass
from typing import Final

from handoff_files.foundation.clock import iso_z

__all__ = ["CLEARED", "HOST", "LockHolder", "alive", "read_holder", "write_record"]

HOST: Final = os.uname().nodename
_HOST_JSON: Final = json.dumps(HOST)
# bound once: the record is advisory text whose writing is part of no operation, so it must not
# show up (or be failed) in a traced or fault-injected one
_pread: Final = os.pread
_pwrite: Final = os.pwrite
# the record: one JSON line at the start of the lock file, padded to a fixed width and blanked
# (not truncated: a truncation costs more than the rest of the lock) when the holder lets go
_RECORD_WIDTH: Final = 256
#: What a holder writes over its record when it lets go.
CLEARED: Final = b" " * (_RECORD_WIDTH - 1) + b"\n"
_READ_BYTES: Final = 1024


@dataclass(frozen=True, slots=True)
class LockHolder:
    """Who holds a lock file, as the holder recorded itself in it.

    Advisory: it names the holder for people, and the lock never relies on it.

    :param pid: the holding process's id (on *host*).
    :param host: the holder's host name.
    :param since: when it took the lock (UTC).
    """

    pid: int
    host: str
    since: dt.datetime

    def __str__(self) -> str:
        where = "" if self.host == HOST else f" on {self.host}"
        return f"pid {self.pid}{where} since {iso_z(self.since)}"


def write_record(fd: int, pid: int) -> None:
    """Write who holds the lock into the lock file *fd* (a failure changes nothing: it is advisory)."""
    second, milli = divmod(int(time.time() * 1000), 1000)
    head, tail = _record_parts(pid, second)
    try:  # noqa: SIM105 -- on the writers' hot path, and contextlib.suppress costs a quarter of a pwrite
        _pwrite(fd, head + b"%03d" % milli + tail, 0)
    except OSError:
        pass


@functools.lru_cache(maxsize=2)
def _record_parts(pid: int, second: int) -> tuple[bytes, bytes]:
    """A record's text before and after its milliseconds: formatting them is most of its cost, once a second."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
    head = f'{{"pid":{pid},"host":{_HOST_JSON},"since":"{stamp}.'.encode()
    end = b'Z"}'
    return head, end.ljust(_RECORD_WIDTH - len(head) - 3 - 1) + b"\n"


def read_holder(fd: int, *, live: bool = True) -> LockHolder | None:
    """The holder the lock file *fd* names, if it names one (the caller found the lock held).

    None for a blank, unreadable or malformed record; with *live*, None too for a stale one: a
    holder on this host whose process is gone (the kernel dropped its flock, and the next holder
    has not yet written its own record).
    """
    try:
        first = _pread(fd, _READ_BYTES, 0).split(b"\n", 1)[0].strip()
        record = json.loads(first) if first else None
        if not isinstance(record, dict):
            return None
        pid, host, since = record.get("pid"), record.get("host"), record.get("since")
        if type(pid) is not int or pid <= 0 or not isinstance(host, str) or not isinstance(since, str):
            return None
        moment = dt.datetime.fromisoformat(since)
    except (OSError, ValueError):
        return None
    if moment.tzinfo is None or (live and host == HOST and not alive(pid)):
        return None
    return LockHolder(pid, host, moment)


def alive(pid: int) -> bool:
    """Whether a process *pid* exists on this host (a zombie counts: it is not reaped yet)."""
    try:
        os.kill(pid, 0)  # signal 0: is there such a process (pid > 0: never a process group)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: it exists, under another user
        return True
    return True
