"""The writers' lock: a filelock on the thread's ``.lock`` file (never on a data file: rename swaps those)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

import filelock

from handoff_files.errors import HandoffLockedError

__all__ = ["DEFAULT_LOCK_TIMEOUT", "LOCK_NAME", "writer_lock"]

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
