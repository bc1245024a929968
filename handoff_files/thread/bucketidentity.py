"""Which thread a thread on the storage seam is: so another thread's generation, copied in, is never its own.

A seal tells damage, not a copy: a sealed generation of another thread, copied into ``history/``
(under a newer number, or into a number retention freed), verifies. Only its id tells it apart.
The thread's id is, first to last: the id the store last saved or restored; the id in the
retention record the writers leave before they prune (``retention.json``); the id in
``state.json``, which every save writes; else the id of its oldest generation that verifies (the
first it still keeps). An object planted in ``history/`` therefore never outranks what the writers
wrote. The record and ``state.json`` are read at once with the newest a restore reads (one round
trip for all), and again only when the listing's oldest number moves; the oldest generation only
when neither says.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Final

from handoff_files.format.codec import MAX_FILE_BYTES
from handoff_files.format.loader import decode
from handoff_files.format.model import Handoff
from handoff_files.foundation.errors import HandoffError, StorageUnavailableError
from handoff_files.foundation.names import generation_from_stem, generation_stem
from handoff_files.storage import Storage
from handoff_files.thread.bucketretention import read_bucket_record
from handoff_files.thread.mirror import mirror_of
from handoff_files.thread.signatures import signature_damage

__all__ = ["BucketIdentity", "Known", "generation_key", "generation_of"]

#: how many of the oldest listed generations are read, at most, to find one that verifies
_LOOK: Final = 8
MIRROR: Final = "state.json"

#: a thread's id and where it was learnt (``"its retention record's"``)
Known = tuple[str, str]


def generation_key(generation: int) -> str:
    """The object a generation is committed as: ``history/00000042.json`` (a folder's file name, under ``history/``)."""
    return f"history/{generation_stem(generation)}.json"


def generation_of(key: str) -> int | None:
    """The generation *key* names, or None unless it is exactly :func:`generation_key`'s (as a folder's names)."""
    if not key.startswith("history/") or not key.endswith(".json"):
        return None
    return generation_from_stem(key.removeprefix("history/").removesuffix(".json"))


class BucketIdentity:
    """The id of the thread under *storage*'s root, when the store itself does not know it.

    :param storage: the thread's prefix.
    """

    def __init__(self, storage: Storage) -> None:
        self._storage = storage
        self._known: tuple[int, Known | None] | None = None  # the oldest number listed, and the thread's id
        self._ahead: tuple[int, Future[Known | None], Future[Known | None]] | None = None
        self._lock = threading.Lock()

    def ahead(self, numbers: list[int], pool: ThreadPoolExecutor) -> None:
        """Start reading the retention record and ``state.json`` for the listing *numbers* (newest first) unless
        known: a restore reads the newest at the same time."""
        if not numbers:
            return
        oldest = numbers[-1]
        with self._lock:
            if (self._known is not None and self._known[0] == oldest) or (
                self._ahead is not None and self._ahead[0] == oldest
            ):
                return
            self._ahead = (oldest, pool.submit(self._record), pool.submit(self._copy))

    def foreign(self, handoff: Handoff, numbers: list[int], known: Known | None = None) -> str | None:
        """Why *handoff* (verified, listed in *numbers*, newest first) is another thread's, or None.

        :param known: the thread's id as the store knows it, and from where; read from the store if None.
        :raises StorageUnavailableError: if the store did not answer while the record or the oldest was read.
        """
        own = known if known is not None else self.own(numbers)
        if own is None or handoff.thread_id == own[0]:
            return None
        return (
            f"it is generation {handoff.generation} of another thread ({handoff.agent_id!r} / "
            f"{handoff.thread_id!r}), not of this thread {own[0]!r} ({own[1]}): never restored or "
            "chained on, kept for a person to look at"
        )

    def own(self, numbers: list[int]) -> Known | None:
        """The thread's id for the listing *numbers* (newest first), and where it was learnt; None if nothing says.

        :raises StorageUnavailableError: if the store did not answer while the record or the copies were read.
        """
        if not numbers:
            return None
        oldest = numbers[-1]
        with self._lock:
            if self._known is not None and self._known[0] == oldest:
                return self._known[1]
            pending = self._ahead if self._ahead is not None and self._ahead[0] == oldest else None
        said = (pending[1].result(), pending[2].result()) if pending is not None else (self._record(), self._copy())
        own = said[0] or said[1]
        if own is None and len(numbers) > 1:
            own = self._oldest(numbers)
        with self._lock:
            self._known = (oldest, own)
            if self._ahead is pending:
                self._ahead = None
        return own

    def _record(self) -> Known | None:
        """The thread id the retention record names, or None (no record, or one that cannot be read)."""
        try:
            record = read_bucket_record(self._storage)
        except StorageUnavailableError:
            raise
        except HandoffError:
            return None
        return None if record is None else (record.thread_id, "its retention record's")

    def _copy(self) -> Known | None:
        """The thread id ``state.json`` names, or None (none, or one that does not verify)."""
        where = f"{self._storage.where}/{MIRROR}"
        try:
            return (
                mirror_of(self._storage.read(MIRROR, limit=MAX_FILE_BYTES).data, where).thread_id,
                "its state.json's",
            )
        except StorageUnavailableError:
            raise
        except HandoffError:
            return None

    def _oldest(self, numbers: list[int]) -> Known | None:
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
                return (handoff.thread_id, "its oldest generation's")
        return None
