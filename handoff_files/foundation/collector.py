"""Hold Python's cyclic garbage collector off while a handoff is parsed, validated or encoded.

Parsing a 1 MB handoff allocates tens of thousands of containers; in a process with a large live
heap (an agent's), that crosses the collector's thresholds and triggers full collections in the
middle of the load, which is most of its p99 (16 ms against a 2 ms median, measured with 200,000
live objects). None of the objects made there can form a cycle that needs collecting before the
block ends, so the collector waits until then; it runs normally afterwards.

Process-wide, as the collector is: the first block to enter turns it off (if it was on), the last
to leave turns it back on. A program that turns the collector off itself while a block runs gets
it back on when the block ends.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collector_paused"]

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextmanager
def collector_paused() -> Iterator[None]:
    """Run the block with the cyclic garbage collector off (re-entrant, thread-safe)."""
    global _depth, _was_enabled  # noqa: PLW0603 -- the collector is process-wide
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()
