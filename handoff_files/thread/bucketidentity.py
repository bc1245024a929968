"""Which thread a thread on the storage seam is: so another thread's generation, copied in, is never its own.

A seal tells damage, not a copy: a sealed generation of another thread, copied into ``history/``
under a newer number, verifies. Only its id tells it apart. A folder's thread knows its ids from
``state.json`` or its oldest generation (:mod:`~handoff_files.thread.identity`); a bucket's copies
are moved by whatever a restore returns, so its id is the oldest generation's that verifies: the
first the thread still keeps, as ``handoff verify`` judges it. The oldest is read at once with the
newest a restore reads (one round trip for both), and once per listing's oldest number.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Final

from handoff_files.format.codec import MAX_FILE_BYTES
from handoff_files.format.loader import decode
from handoff_files.format.model import Handoff
from handoff_files.foundation.errors import HandoffError, StorageUnavailableError
from handoff_files.storage import Storage
from handoff_files.thread.signatures import signature_damage

__all__ = ["BucketIdentity", "generation_key"]

#: how many of the oldest listed generations are read, at most, to find one that verifies
_LOOK: Final = 8


def generation_key(generation: int) -> str:
    """The object a generation is committed as: ``history/00000042.json``."""
    return f"history/{generation:08d}.json"


class BucketIdentity:
    """The id of the thread under *storage*'s root, worked out from its oldest generation that verifies.

    :param storage: the thread's prefix.
    """

    def __init__(self, storage: Storage) -> None:
        self._storage = storage
        self._known: tuple[int, str | None] | None = None  # the oldest number listed, and its thread's id
        self._ahead: tuple[int, Future[str | None]] | None = None
        self._lock = threading.Lock()

    def ahead(self, numbers: list[int], pool: ThreadPoolExecutor) -> None:
        """Start reading the thread's id for the listing *numbers* (newest first) unless it is known: a
        restore reads the newest at the same time. Nothing to read for a thread of one generation."""
        if len(numbers) < 2:
            return
        oldest = numbers[-1]
        with self._lock:
            if (self._known is not None and self._known[0] == oldest) or (
                self._ahead is not None and self._ahead[0] == oldest
            ):
                return
            self._ahead = (oldest, pool.submit(self._read, numbers))

    def foreign(self, handoff: Handoff, numbers: list[int]) -> str | None:
        """Why *handoff* (verified, listed in *numbers*, newest first) is another thread's, or None.

        :raises StorageUnavailableError: if the store did not answer while the oldest was read.
        """
        own = self._own(numbers)
        if own is None or handoff.thread_id == own:
            return None
        return (
            f"it is generation {handoff.generation} of another thread ({handoff.agent_id!r} / "
            f"{handoff.thread_id!r}), not of this thread {own!r} (its oldest generation's): never restored or "
            "chained on, kept for a person to look at"
        )

    def _own(self, numbers: list[int]) -> str | None:
        if not numbers:
            return None
        oldest = numbers[-1]
        with self._lock:
            if self._known is not None and self._known[0] == oldest:
                return self._known[1]
            pending = self._ahead if self._ahead is not None and self._ahead[0] == oldest else None
        own = pending[1].result() if pending is not None else self._read(numbers)
        with self._lock:
            self._known = (oldest, own)
            if self._ahead is pending:
                self._ahead = None
        return own

    def _read(self, numbers: list[int]) -> str | None:
        """The thread id of the oldest of *numbers* that verifies (of the oldest few), or None."""
        for number in reversed(numbers[-_LOOK:]):
            key = generation_key(number)
            where = f"{self._storage.where}/{key}"
            try:
                handoff = decode(self._storage.read(key, limit=MAX_FILE_BYTES).data, where, origin="store")
            except StorageUnavailableError:
                raise
            except HandoffError:
                continue
            if handoff.generation == number and signature_damage(handoff, where) is None:
                return handoff.thread_id
        return None
