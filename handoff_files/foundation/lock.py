"""The writers' lock: an ``flock`` on the thread's ``.lock`` file (never on a data file: rename swaps those)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

from handoff_files.foundation.errors import HandoffLockedError, HandoffWriteError

__all__ = ["DEFAULT_LOCK_TIMEOUT", "LOCK_NAME", "WriterLock", "try_writer_lock", "writer_lock"]

LOCK_NAME: Final = ".lock"
#: Seconds a writer waits for another. A save holds the lock for milliseconds; a holder that
#: dies releases it at once (the kernel drops its flock), so a long wait means a live, stuck writer.
DEFAULT_LOCK_TIMEOUT: Final = 30.0
# waiting for another writer: first poll soon (a save is over in a millisecond or two), then back off
_FIRST_POLL: Final = 0.0005
_LAST_POLL: Final = 0.02
_FLAGS: Final = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
# bound once: a dropped descriptor is closed whenever the collector gets to it, which is part of
# no operation, so it must not show up (or be failed) in a traced or fault-injected one
_close: Final = os.close


class _Descriptor:
    """The lock file, held open by one thread of one process; closed when it is dropped."""

    def __init__(self, path: Path) -> None:
        self.pid = os.getpid()
        self.fd = -1
        self.depth = 0
        self.fd = os.open(path, _FLAGS, 0o600)

    def close(self) -> None:
        if self.fd >= 0 and self.pid == os.getpid():
            with contextlib.suppress(OSError):
                _close(self.fd)
        self.fd = -1

    def __del__(self) -> None:
        self.close()


class WriterLock:
    """One thread directory's writers' lock, built once and taken per save.

    The guarantees of a file lock, at the cost of one system call:

    - **held descriptor**: each thread of execution opens ``.lock`` once and keeps it open;
      taking and dropping the lock is one ``flock`` each (opening and closing the file each
      time, as a general-purpose lock does, costs a hundred times more).
    - **threads and processes exclude each other**: each thread holds its own descriptor, and
      ``flock`` locks on different open files conflict, in one process or several.
    - **re-entrant** per thread: a block that holds the lock may take it again.
    - **a dead holder frees it at once**: the kernel drops a process's ``flock`` when it dies.
    - **the file it locks is the one named ``.lock``**: if the file was removed or replaced
      while a descriptor was open, the lock is taken again on the file now there.
    - **fork-safe**: a child never believes it holds its parent's lock; it opens its own.
    """

    def __init__(self, directory: Path, *, timeout: float = DEFAULT_LOCK_TIMEOUT) -> None:
        self.directory = directory
        self.timeout = timeout
        self.path = directory / LOCK_NAME
        self._local = threading.local()

    @contextmanager
    def held(self) -> Iterator[None]:
        """Hold the lock for the duration of the block.

        :raises HandoffLockedError: if another writer held it for more than the timeout.
        :raises HandoffWriteError: if the lock file cannot be opened.
        """
        held = self._acquire()
        try:
            yield
        finally:
            held.depth -= 1
            if held.depth == 0:
                _unlock(held.fd)

    def _descriptor(self) -> _Descriptor:
        held: _Descriptor | None = getattr(self._local, "held", None)
        if held is None or held.pid != os.getpid():
            try:
                held = _Descriptor(self.path)
            except OSError as exc:
                msg = f"cannot open the lock file {LOCK_NAME}: {exc.strerror or exc}"
                raise HandoffWriteError(self.directory, msg) from exc
            self._local.held = held
        return held

    def _acquire(self) -> _Descriptor:
        held = self._descriptor()
        if held.depth:
            held.depth += 1
            return held
        deadline = time.monotonic() + self.timeout
        poll = _FIRST_POLL
        while True:
            if _try_flock(held.fd, self.directory):
                try:
                    same = _same_file(held.fd, self.path)
                except OSError as exc:
                    _unlock(held.fd)
                    msg = f"cannot check the lock file {LOCK_NAME}: {exc.strerror or exc}"
                    raise HandoffWriteError(self.directory, msg) from exc
                if same:
                    held.depth = 1
                    return held
                # .lock was removed or replaced under our descriptor: lock the file there now
                _unlock(held.fd)
                held.close()
                held = self._descriptor_anew()
                continue
            if time.monotonic() >= deadline:
                msg = (
                    f"another writer has held {LOCK_NAME} for over {self.timeout:g} s; "
                    "try again, or find the stuck process"
                )
                raise HandoffLockedError(self.directory, msg)
            time.sleep(poll)
            poll = min(poll * 2, _LAST_POLL)

    def _descriptor_anew(self) -> _Descriptor:
        self._local.held = None
        return self._descriptor()


def _try_flock(fd: int, directory: Path) -> bool:
    """Take an exclusive flock on *fd* if it is free now; whether it was taken."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError as exc:
        msg = f"cannot lock {LOCK_NAME}: {exc.strerror or exc}"
        raise HandoffWriteError(directory, msg) from exc
    return True


def _unlock(fd: int) -> None:
    # an unlock that fails leaves nothing to do: closing the descriptor (at the latest, the
    # process's exit) drops the flock
    with contextlib.suppress(OSError):
        fcntl.flock(fd, fcntl.LOCK_UN)


def _same_file(fd: int, path: Path) -> bool:
    """Whether *fd* is still the file at *path* (not removed or replaced since it was opened).

    :raises OSError: if *fd* cannot be looked at.
    """
    try:
        named = path.stat(follow_symlinks=False)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (held.st_dev, held.st_ino) == (named.st_dev, named.st_ino)


@contextmanager
def writer_lock(directory: Path, *, timeout: float = DEFAULT_LOCK_TIMEOUT) -> Iterator[None]:
    """Hold *directory*'s writers' lock for the duration of the block (see :class:`WriterLock`)."""
    with WriterLock(directory, timeout=timeout).held():
        yield


@contextmanager
def try_writer_lock(directory: Path) -> Iterator[bool]:
    """Take the writers' lock only if it is free right now; yield whether it was taken.

    For housekeeping a reader may do when no writer is live (removing a dead writer's temp
    files, telling an interrupted save from one in progress): it never waits for a writer.
    """
    try:
        fd = os.open(directory / LOCK_NAME, _FLAGS, 0o600)
    except OSError:
        yield False
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        yield True
    finally:
        # closing the only descriptor of the open file drops its flock
        os.close(fd)
