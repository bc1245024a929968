"""In-process gates: threads of one process waiting for the same lock file wait on a lock, not a poll.

``flock`` makes threads and processes exclude each other, but a thread that finds it taken can
only poll, and a poll sleeps past the moment the holder lets go (a graph's ``put_writes`` waiting
for its ``put`` lost milliseconds a step so). Each lock file has one gate per process, keyed by
the file's identity (device, inode): a thread takes its gate before it tries the ``flock``, so a
thread of the same process holding the lock wakes it the moment it lets go. The ``flock`` still
decides between processes; the gate only orders the threads of one.
"""

from __future__ import annotations

import os
import threading
import weakref

__all__ = ["Gate", "gate_of"]


class Gate:
    """One lock file's gate in this process; which thread holds it, so a thread never waits for itself."""

    __slots__ = ("__weakref__", "_lock", "owner")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.owner = 0  # the holding thread's ident, 0 when free

    def enter(self, timeout: float) -> bool | None:
        """Take the gate, waiting at most *timeout* seconds.

        :returns: True if taken; False if the wait timed out; None if this thread holds it already
            (another of its lock objects for the same file, or a reused inode): then the caller
            goes on without it, and its ``flock`` decides as before.
        """
        me = threading.get_ident()
        if self.owner == me:
            return None
        if not self._lock.acquire(timeout=max(timeout, 0.0)):
            return False
        self.owner = me
        return True

    def leave(self) -> None:
        """Let the gate go (only the thread that took it calls this)."""
        self.owner = 0
        self._lock.release()


# weak: a gate lives as long as a descriptor of its file holds it
_gates: weakref.WeakValueDictionary[tuple[int, int], Gate] = weakref.WeakValueDictionary()
_guard: threading.Lock = threading.Lock()


def gate_of(fd: int) -> Gate:
    """The gate of the file *fd* is open on (made on first use).

    :raises OSError: if *fd* cannot be looked at.
    """
    info = os.fstat(fd)
    key = (info.st_dev, info.st_ino)
    with _guard:
        gate = _gates.get(key)
        if gate is None:
            gate = _gates[key] = Gate()
        return gate


def _after_fork() -> None:
    # a gate held by a thread of the parent would never be let go in the child: start anew
    global _gates, _guard  # noqa: PLW0603 -- module state, replaced whole in a forked child
    _gates = weakref.WeakValueDictionary()
    _guard = threading.Lock()


os.register_at_fork(after_in_child=_after_fork)
