"""One supervisor per thread: the run lock, ``.run.lock``, that a ``handoff run`` holds from its start to its end."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

from handoff_files.foundation.errors import HandoffLockedError
from handoff_files.foundation.holder import HOST, LockHolder, alive
from handoff_files.foundation.lockfile import RUN_LOCK_NAME, LockFile

__all__ = ["supervising"]

#: Seconds a refused run waits for the holder's record: a supervisor writes it just after its flock.
_RECORD_WAIT: Final = 0.5
_RECORD_POLL: Final = 0.01


@contextmanager
def supervising(directory: Path) -> Iterator[int]:
    """Hold *directory*'s run lock while the block runs; yield its descriptor, to hand to each agent.

    The run lock is not the writers' lock (``.lock``): the agent takes that one for each save, so
    the supervisor never holds it. It is never waited for: a second supervisor is refused at once.
    An agent given the descriptor holds the lock with its supervisor, so an agent left running
    after its supervisor died (where nothing killed it with its parent) still keeps the next
    ``handoff run`` off the thread; a lock whose every holder is dead is free (the kernel drops it),
    whatever record its file keeps.

    :param directory: the thread directory (it must exist).
    :raises HandoffLockedError: if another supervisor, or a process one started, holds the lock;
        the message names the supervisor (pid, host, since) when it recorded itself.
    :raises HandoffWriteError: if the lock file cannot be opened or locked.
    """
    lock = LockFile(directory, RUN_LOCK_NAME)
    deadline = time.monotonic() + _RECORD_WAIT
    while not lock.acquire():
        holder = lock.holder()
        if holder is not None or time.monotonic() >= deadline:
            raise _refusal(directory, holder)
        time.sleep(_RECORD_POLL)  # taken a moment ago: its record comes next (or it let go meanwhile)
    try:
        yield lock.fd
    finally:
        lock.release()


def _refusal(directory: Path, holder: LockHolder | None) -> HandoffLockedError:
    if holder is None:
        msg = (
            f"another handoff run supervises this thread (it left no record of itself in {RUN_LOCK_NAME}); "
            "one supervisor per thread: stop that run first, or wait for it to end"
        )
    elif holder.host == HOST and not alive(holder.pid):
        msg = (
            f"the handoff run that held it ({holder}) is gone, but a process it started still holds "
            f"{RUN_LOCK_NAME}: an agent left running; find it with `fuser -v {directory / RUN_LOCK_NAME}`, "
            "stop it, then run again"
        )
    else:
        msg = (
            f"another handoff run supervises this thread ({holder}); one supervisor per thread: "
            "stop that run first, or wait for it to end"
        )
    return HandoffLockedError(directory, msg)
