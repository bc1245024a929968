"""The writers' lock: a filelock on the thread's ``.lock`` file (never on a data file: rename swaps those)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

import filelock

from handoff_files.foundation.errors import HandoffLockedError, HandoffWriteError

__all__ = ["DEFAULT_LOCK_TIMEOUT", "LOCK_NAME", "WriterLock", "try_writer_lock", "writer_lock"]

LOCK_NAME: Final = ".lock"
#: Seconds a writer waits for another. A save holds the lock for milliseconds; a holder that
#: dies releases it at once (the kernel drops its flock), so a long wait means a live, stuck writer.
DEFAULT_LOCK_TIMEOUT: Final = 30.0


class WriterLock:
    """One thread directory's writer lock, built once and taken per save.

    A store keeps one: building a ``filelock.FileLock`` costs about a third of taking it.
    The lock is per thread of execution (filelock's default), so threads exclude each other too.
    """

    def __init__(self, directory: Path, *, timeout: float = DEFAULT_LOCK_TIMEOUT) -> None:
        self.directory = directory
        self.timeout = timeout
        self._lock = filelock.FileLock(directory / LOCK_NAME, timeout=timeout, mode=0o600)

    @contextmanager
    def held(self) -> Iterator[None]:
        """Hold the lock for the duration of the block.

        :raises HandoffLockedError: if another writer held it for more than the timeout.
        :raises HandoffWriteError: if the lock file cannot be opened.
        """
        try:
            self._lock.acquire()
        except filelock.Timeout as exc:
            msg = (
                f"another writer has held {LOCK_NAME} for over {self.timeout:g} s; try again, or find the stuck process"
            )
            raise HandoffLockedError(self.directory, msg) from exc
        except OSError as exc:
            msg = f"cannot open the lock file {LOCK_NAME}: {exc.strerror or exc}"
            raise HandoffWriteError(self.directory, msg) from exc
        try:
            yield
        finally:
            self._lock.release()


@contextmanager
def writer_lock(directory: Path, *, timeout: float = DEFAULT_LOCK_TIMEOUT) -> Iterator[None]:
    """Hold *directory*'s writer lock for the duration of the block (see :class:`WriterLock`)."""
    with WriterLock(directory, timeout=timeout).held():
        yield


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
