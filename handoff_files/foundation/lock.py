"""The writers' lock: an ``flock`` on a thread's ``.lock``, never on a data file (a supervisor's: ``lockfile``)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from handoff_files.foundation.errors import HandoffError, HandoffLockedError, HandoffWriteError
from handoff_files.foundation.gate import Gate, gate_of
from handoff_files.foundation.holder import CLEARED, LockHolder, read_holder, write_record
from handoff_files.foundation.safe_open import open_regular

__all__ = [
    "DEFAULT_LOCK_TIMEOUT",
    "LOCK_NAME",
    "WAIT_REPORT_SECONDS",
    "LockHolder",
    "LockWait",
    "OnLockWait",
    "WriterLock",
    "lock_holder",
    "try_writer_lock",
    "writer_lock",
]

LOCK_NAME: Final = ".lock"
#: Seconds a writer waits for another. A save holds the lock for milliseconds; a holder that
#: dies releases it at once (the kernel drops its flock), so a long wait means a live, stuck writer.
DEFAULT_LOCK_TIMEOUT: Final = 30.0
#: A waiter's ``on_wait`` is called when its wait begins, then every this many seconds.
WAIT_REPORT_SECONDS: Final = 5.0
# waiting for another writer: first poll soon (a save is over in a millisecond or two), then back off
_FIRST_POLL: Final = 0.0005
_LAST_POLL: Final = 0.02
# opened by open_regular (no link followed, never blocking, regular and not hard-linked: the
# holder's record is written into it, and must never land in a file outside the thread)
LOCK_FLAGS: Final = os.O_RDWR | os.O_CREAT
# bound once: a dropped descriptor is closed whenever the collector gets to it, which is part of
# no operation, so it must not show up (or be failed) in a traced or fault-injected one; nor must
# the blanking of the holder's record, advisory text whose failure changes nothing
_close: Final = os.close
_pwrite: Final = os.pwrite


@dataclass(frozen=True, slots=True)
class LockWait:
    """A writer waiting for the lock, as its ``on_wait`` callback is told.

    :param directory: the thread directory whose lock it waits for.
    :param holder: who holds the lock, or None if the holder left no live record of itself.
    :param waited: seconds waited so far.
    :param timeout: seconds it waits in all before it gives up.
    """

    directory: Path
    holder: LockHolder | None
    waited: float
    timeout: float


#: Called when a writer starts to wait for the lock, then every :data:`WAIT_REPORT_SECONDS`.
OnLockWait = Callable[[LockWait], None]


class _Descriptor:
    """The lock file, held open by one thread of one process; closed when it is dropped."""

    def __init__(self, path: Path) -> None:
        self.pid = os.getpid()
        self.fd = -1
        self.depth = 0
        self.fd, _ = open_regular(path, LOCK_FLAGS, max_bytes=None)
        self.gate: Gate = gate_of(self.fd)  # this process's threads queue here (see gate.py)
        self.gated = False  # whether the holding thread took the gate

    def close(self, getpid: Callable[[], int] = os.getpid, close: Callable[[int], None] = _close) -> None:
        # the calls are bound as defaults: __del__ may run while the interpreter clears this
        # module's names at exit, and a lookup then finds None ("'NoneType' object is not callable")
        if self.fd >= 0 and self.pid == getpid():
            try:  # noqa: SIM105 -- contextlib may be cleared at exit too
                close(self.fd)
            except OSError:
                pass
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
    - **fork-safe**: a child never believes it holds its parent's lock; it opens its own, and
      leaving a block it inherited holding the lock does not release the parent's.
    - **the holder is named**: it writes who it is (:class:`LockHolder`) into ``.lock`` when it
      takes the lock and blanks it before it drops it (one ``pwrite`` each), so a waiter can
      say whom it waits for; :func:`lock_holder` reads it.

    :param directory: the thread directory (the lock file is ``directory/.lock``).
    :param timeout: seconds to wait for another writer; 0 (or less): fail at once if it is held.
    :param on_wait: called when a wait begins (with the holder), then every :data:`WAIT_REPORT_SECONDS`;
        what it raises ends the wait and propagates. None: wait silently.
    """

    def __init__(
        self, directory: Path, *, timeout: float = DEFAULT_LOCK_TIMEOUT, on_wait: OnLockWait | None = None
    ) -> None:
        self.directory = directory
        self.timeout = timeout
        self.on_wait = on_wait
        self.path = directory / LOCK_NAME
        self._local = threading.local()

    @contextmanager
    def held(self) -> Iterator[None]:
        """Hold the lock for the duration of the block.

        :raises HandoffLockedError: if another writer held it for more than the timeout (it names
            the holder when the holder recorded itself).
        :raises HandoffWriteError: if the lock file cannot be opened.
        """
        held = self._acquire()
        try:
            yield
        finally:
            held.depth -= 1
            # a forked child leaving its parent's block: the flock is the parent's, not its to drop
            if held.depth == 0 and held.pid == os.getpid():
                _release(held.fd)
                if held.gated:
                    held.gated = False
                    held.gate.leave()

    def _descriptor(self) -> _Descriptor:
        held: _Descriptor | None = getattr(self._local, "held", None)
        if held is None or held.pid != os.getpid():
            try:
                held = _Descriptor(self.path)
            except HandoffError as exc:  # a link, a FIFO, a hard link to a file outside …
                msg = f"cannot open the lock file {LOCK_NAME}: {exc.reason}"
                raise HandoffWriteError(self.directory, msg) from exc
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
        wait = _Wait(self, time.monotonic())
        while True:
            entered = wait.enter(held)  # the threads of this process, in turn
            try:
                same = wait.flock(held)  # then the other processes
            except BaseException:
                if entered:
                    held.gate.leave()
                raise
            if same:
                held.depth, held.gated = 1, bool(entered)
                write_record(held.fd, held.pid)
                return held
            # .lock was removed or replaced under our descriptor: lock the file there now
            _unlock(held.fd)
            if entered:
                held.gate.leave()
            held.close()
            held = self._descriptor_anew()

    def _timed_out(self, holder: LockHolder | None) -> HandoffLockedError:
        who = "it did not record who it is" if holder is None else holder
        if self.timeout > 0:
            msg = (
                f"another writer has held {LOCK_NAME} for over {self.timeout:g} s ({who}); "
                "try again, or find the stuck process"
            )
        else:
            msg = f"another writer has held {LOCK_NAME} ({who}), and no wait was asked for; try again"
        return HandoffLockedError(self.directory, msg)

    def _descriptor_anew(self) -> _Descriptor:
        self._local.held = None
        return self._descriptor()


class _Wait:
    """One wait for the lock: its deadline, and when its waiter is next told (``on_wait``)."""

    def __init__(self, lock: WriterLock, start: float) -> None:
        self.lock, self.start = lock, start
        self.deadline = start + lock.timeout
        self.report = start  # when on_wait is next due

    def enter(self, held: _Descriptor) -> bool | None:
        """Take the gate (see :meth:`Gate.enter`), telling ``on_wait`` while it waits."""
        while True:
            now = time.monotonic()
            slice_ = self.deadline - now
            if self.lock.on_wait is not None:
                slice_ = min(slice_, max(self.report - now, 0.0))
            entered = held.gate.enter(slice_)
            if entered is not False:
                return entered
            self.waited(held)

    def flock(self, held: _Descriptor) -> bool:
        """Take the flock, polling; whether *held* is still the file named ``.lock`` (unlocked if it is not)."""
        poll = _FIRST_POLL
        while not try_flock(held.fd, self.lock.directory):
            self.waited(held)
            time.sleep(poll)
            poll = min(poll * 2, _LAST_POLL)
        try:
            return same_file(held.fd, self.lock.path)
        except OSError as exc:
            _unlock(held.fd)
            msg = f"cannot check the lock file {LOCK_NAME}: {exc.strerror or exc}"
            raise HandoffWriteError(self.lock.directory, msg) from exc

    def waited(self, held: _Descriptor) -> None:
        """Raise if the deadline has passed; tell ``on_wait`` when it is due."""
        now = time.monotonic()
        if now >= self.deadline:
            raise self.lock._timed_out(read_holder(held.fd))
        if self.lock.on_wait is not None and now >= self.report:
            lock = self.lock
            self.lock.on_wait(LockWait(lock.directory, read_holder(held.fd), now - self.start, lock.timeout))
            self.report = now + WAIT_REPORT_SECONDS


def try_flock(fd: int, directory: Path) -> bool:
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


def _release(fd: int) -> None:
    """Blank the holder's record, then drop the flock (the record is written only under the lock)."""
    try:  # noqa: SIM105 -- on the hot path, and contextlib.suppress costs a quarter of a pwrite
        _pwrite(fd, CLEARED, 0)
    except OSError:
        pass  # advisory: a record left behind is told from a live one by the flock
    _unlock(fd)


def lock_holder(directory: Path) -> LockHolder | None:
    """Who holds *directory*'s writers' lock now, as it recorded itself; never waits for the lock.

    :returns: the holder; None if the lock is free (whatever the file says: a killed holder leaves
        its record behind), if its holder is a process on this host that is gone, or if the
        holder left no record (a version of this library that wrote none). Advisory: by the time
        it returns, the holder may have let go.
    """
    try:
        fd, _ = open_regular(directory / LOCK_NAME, os.O_RDONLY, max_bytes=None)
    except HandoffError:
        return None
    try:
        holder = read_holder(fd)
        if holder is None:
            return None
        try:  # a shared flock taken (and dropped) in passing: taken means no writer holds it
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return holder
        except OSError:
            return None
        return None
    finally:
        _close(fd)


def same_file(fd: int, path: Path) -> bool:
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
def writer_lock(
    directory: Path, *, timeout: float = DEFAULT_LOCK_TIMEOUT, on_wait: OnLockWait | None = None
) -> Iterator[None]:
    """Hold *directory*'s writers' lock for the duration of the block (see :class:`WriterLock`)."""
    with WriterLock(directory, timeout=timeout, on_wait=on_wait).held():
        yield


@contextmanager
def try_writer_lock(directory: Path) -> Iterator[bool]:
    """Take the writers' lock only if it is free right now; yield whether it was taken.

    For housekeeping a reader may do when no writer is live (removing a dead writer's temp
    files, telling an interrupted save from one in progress): it never waits for a writer.
    While it holds the lock it names itself in ``.lock``, as a writer does.
    """
    try:
        fd, _ = open_regular(directory / LOCK_NAME, LOCK_FLAGS, max_bytes=None)
    except HandoffError:  # not a file a writer could lock either: nothing to tidy now
        yield False
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        owner = os.getpid()
        write_record(fd, owner)
        try:
            yield True
        finally:
            if os.getpid() == owner:  # a forked child leaving the block: the record is its parent's
                with contextlib.suppress(OSError):
                    _pwrite(fd, CLEARED, 0)
    finally:
        # closing the only descriptor of the open file drops its flock
        os.close(fd)
