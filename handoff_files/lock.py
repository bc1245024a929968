"""The writers' lock: a filelock on the thread's ``.lock`` file (never on a data file: rename swaps those)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

import filelock

from handoff_files.errors import HandoffLockedError

__all__ = ["DEFAULT_LOCK_TIMEOUT", "LOCK_NAME", "try_writer_lock", "writer_lock"]

LOCK_NAME: Final = ".lock"
#: Seconds a writer waits for another. A save holds the lock for milliseconds; a holder that
#: dies releases it at once (the kernel drops its flock), so a long wait means a live, stuck writer.
DEFAULT_LOCK_TIMEOUT: Final = 30.0


@contextmanager
def writer_lock(directory: Path, *, timeout: float = DEFAULT_LOCK_TIMEOUT) -> Iterator[None]:
    """Hold the thread's writer lock for the duration of the block.

    :raises HandoffLockedError: if another writer held it for more than *timeout* seconds.
    """
    lock = filelock.FileLock(directory / LOCK_NAME, timeout=timeout, mode=0o600)
    try:
        lock.acquire()
    except filelock.Timeout as exc:
        msg = f"another writer has held {LOCK_NAME} for over {timeout:g} s; try again, or find the stuck process"
        raise HandoffLockedError(directory, msg) from exc
    try:
        yield
    finally:
        lock.release()


@contextmanager
def try_writer_lock(directory: Path) -> Iterator[bool]:
    """Take the writer lock only if it is free right now; yield whether it was taken.

    For housekeeping a reader may do when no writer is live (removing a dead writer's temp
    files, telling an interrupted save from one in progress): it never waits for a writer.
    """
    lock = filelock.FileLock(directory / LOCK_NAME, timeout=0, mode=0o600)
    try:
        lock.acquire()
    except (filelock.Timeout, OSError):
        yield False
        return
    try:
        yield True
    finally:
        lock.release()
