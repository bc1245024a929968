"""The supervisor's lock: an ``flock`` on a thread's ``.run.lock``, held for a whole ``handoff run``."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Final

from handoff_files.foundation.errors import HandoffError, HandoffWriteError
from handoff_files.foundation.holder import CLEARED, LockHolder, read_holder, write_record
from handoff_files.foundation.lock import LOCK_FLAGS, same_file, try_flock
from handoff_files.foundation.safe_open import open_regular

__all__ = ["RUN_LOCK_NAME", "LockFile"]

#: The supervisor's lock: one ``handoff run`` per thread (see :class:`LockFile`).
RUN_LOCK_NAME: Final = ".run.lock"
# bound once, as lock.py does: advisory text and a dropped descriptor are part of no operation
_close: Final = os.close
_pwrite: Final = os.pwrite


class LockFile:
    """An exclusive ``flock`` on one file of a directory, taken without waiting and held for as long as
    its holder likes: a supervisor's, for its whole run (a save takes :class:`WriterLock` instead).

    - **a dead holder frees it at once**: the kernel drops the flock when the open file's last
      descriptor closes;
    - **so a child given the descriptor holds it too**, until it closes it or exits: a supervisor
      hands it to its agent, and an agent left running after its supervisor died keeps the next
      supervisor off the thread;
    - **the holder is named**: it records itself (:class:`LockHolder`) as a writer does, and blanks
      the record when it lets go;
    - **the file it locks is the one at its name**: created 0600, never through a symbolic link,
      and taken again on the file there if it was replaced between the open and the flock.

    :param directory: the directory that holds the lock file.
    :param name: the lock file's name (e.g. :data:`RUN_LOCK_NAME`).
    """

    def __init__(self, directory: Path, name: str) -> None:
        self.directory = directory
        self.path = directory / name
        self.fd = -1  # the held descriptor, while held
        self._owner = 0

    def acquire(self) -> bool:
        """Take the lock if it is free now (never waits); whether it was taken.

        :raises HandoffWriteError: if the lock file cannot be opened or locked.
        """
        while self.fd < 0:
            try:
                fd, _ = open_regular(self.path, LOCK_FLAGS, max_bytes=None)
            except HandoffError as exc:
                msg = f"cannot open the lock file {self.path.name}: {exc.reason}"
                raise HandoffWriteError(self.directory, msg) from exc
            try:
                if not try_flock(fd, self.directory):
                    _close(fd)
                    return False
                same = same_file(fd, self.path)
            except HandoffWriteError:
                _close(fd)
                raise
            except OSError as exc:
                _close(fd)
                msg = f"cannot check the lock file {self.path.name}: {exc.strerror or exc}"
                raise HandoffWriteError(self.directory, msg) from exc
            if same:
                self.fd, self._owner = fd, os.getpid()
            else:
                _close(fd)  # replaced or removed under us: lock the file there now
        write_record(self.fd, self._owner)
        return True

    def holder(self) -> LockHolder | None:
        """Who recorded itself as the holder (alive or not: the caller found the lock held); None if nobody did."""
        try:
            # a FIFO put in the lock file's place can neither hang nor fool the reader
            fd, _ = open_regular(self.path, os.O_RDONLY, max_bytes=None)
        except HandoffError:
            return None
        try:
            return read_holder(fd, live=False)
        finally:
            _close(fd)

    def release(self) -> None:
        """Blank the record and close the descriptor: the lock is free once no child still holds it too."""
        if self.fd < 0:
            return
        if self._owner == os.getpid():  # a forked child leaving: the lock is its parent's
            with contextlib.suppress(OSError):
                _pwrite(self.fd, CLEARED, 0)
        with contextlib.suppress(OSError):
            _close(self.fd)
        self.fd = -1
