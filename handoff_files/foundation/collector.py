"""Hold Python's cyclic garbage collector off while a handoff is parsed, validated or encoded.

Parsing a 1 MB handoff allocates tens of thousands of containers; in a process with a large live
heap (an agent's), that crosses the collector's thresholds and triggers full collections in the
middle of the load, which is most of its p99 (16 ms against a 2 ms median, measured with 200,000
live objects). None of the objects made there can form a cycle that needs collecting before the
block ends, so the collector waits until then; it runs normally afterwards.

Process-wide, as the collector is: the first block to enter turns it off (if it was on), the last
to leave turns it back on. A program that turns the collector off itself while a block runs gets
it back on when the block ends. A process forked while another thread is inside a block (the
child has only the forking thread) gets the collector back unless the forking thread itself is
inside one.
"""

from __future__ import annotations

import gc
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collector_paused"]

_lock = threading.Lock()
_holders: dict[int, int] = {}  # thread id -> blocks it is inside
_was_enabled = False


def _depth() -> int:
    return sum(_holders.values())


@contextmanager
def collector_paused() -> Iterator[None]:
    """Run the block with the cyclic garbage collector off (re-entrant, thread-safe, fork-safe)."""
    global _was_enabled  # noqa: PLW0603 -- the collector is process-wide
    me = threading.get_ident()
    with _lock:
        if _depth() == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _holders[me] = _holders.get(me, 0) + 1
    try:
        yield
    finally:
        with _lock:
            _holders[me] -= 1
            if not _holders[me]:
                del _holders[me]
            if _depth() == 0 and _was_enabled:
                gc.enable()


def _after_fork_in_child() -> None:
    """A forked child has only the thread that forked: forget the others' blocks, and a lock one of them held."""
    global _lock  # noqa: PLW0603 -- replaced: another thread may have held it at the fork
    _lock = threading.Lock()
    me = threading.get_ident()
    for thread in [thread for thread in _holders if thread != me]:
        del _holders[thread]
    if _depth() == 0 and _was_enabled:
        gc.enable()


os.register_at_fork(after_in_child=_after_fork_in_child)
