"""The readable copies of a thread on the storage seam: ``handoff.json`` and ``state.json``, moved on after each commit.

A generation is committed by its ``history/`` object (:mod:`~handoff_files.thread.objects`); the
copies a person opens follow it, each replaced on the etag it was read at and only by a newer
generation, so an older writer never moves one back. A writer remembers the etag it left each copy
at: while no other writer moved it, the next save replaces it at that etag without reading it
first (an etag that changed is a conflict, and the copy is read then). The two copies and the
retention of old generations go out at once, with the listing that tells a stale commit
(:meth:`~handoff_files.thread.objects.ObjectThread.save`): none depends on another.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Final

import orjson

from handoff_files.format.codec import MAX_FILE_BYTES
from handoff_files.foundation.errors import HandoffError, HandoffNotFoundError, ObjectChangedError, ObjectExistsError
from handoff_files.storage import Storage
from handoff_files.thread.mirror import mirror_bytes, state_message

if TYPE_CHECKING:
    from handoff_files.signing.keys import SigningKey

__all__ = ["MIRROR", "PRIMARY", "ReadableCopies"]

PRIMARY: Final = "handoff.json"
MIRROR: Final = "state.json"
#: how many times a readable copy is read again when another writer moved it meanwhile
_COPY_TRIES: Final = 8


class ReadableCopies:
    """``handoff.json`` and ``state.json`` under *storage*'s root, as one writer moves them on."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage
        self._etags: dict[str, tuple[str, int]] = {}  # key → the etag and generation this writer left it at
        self._pool: ThreadPoolExecutor | None = None
        self._pool_pid = 0  # a pool's threads do not survive fork(): a child makes its own

    def follow(
        self,
        document: dict[str, Any],
        seal_text: str,
        data: bytes,
        signing_key: SigningKey | None,
        prune: Callable[[], list[str]],
        *,
        keys: Collection[str] = (PRIMARY, MIRROR),
    ) -> list[str]:
        """Move the copies (*keys*: both) on to the committed generation *document* (its bytes *data*) and run
        *prune*, at once; what did not happen, one line each (the generation is committed whatever they say)."""
        saved = {
            "generation": document["generation"],
            "seal": seal_text,
            "agent_id": document["agent_id"],
            "thread_id": document["thread_id"],
            "created_at": document["created_at"],
            "state": document["state"],
        }
        signature = None if signing_key is None else signing_key.sign(state_message(**saved))
        mirror = mirror_bytes(
            **saved, saves=document["generation"], last_restore=None, primary_written=None, signature=signature
        )
        pool = self.pool()
        generation = document["generation"]
        bodies = ((PRIMARY, data), (MIRROR, mirror))
        copies = [pool.submit(self.advance, key, body, generation) for key, body in bodies if key in keys]
        pruned = pool.submit(prune)
        problems = [said for said in (copy.result() for copy in copies) if said is not None]
        return problems + pruned.result()

    def pool(self) -> ThreadPoolExecutor:
        """The threads the requests after a commit go out on at once (the copies, retention, a listing)."""
        if self._pool is None or self._pool_pid != os.getpid():
            self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="handoff-copies")
            self._pool_pid = os.getpid()
        return self._pool

    def advance(self, key: str, body: bytes, generation: int) -> str | None:
        """Put *body* (of *generation*) at *key* unless a newer generation is already there; why not, or None."""
        left = self._etags.pop(key, None)
        if left is not None and left[1] < generation:  # as this writer left it: no read, unless another moved it
            try:
                self._etags[key] = (self.storage.replace(key, body, left[0]), generation)
            except ObjectChangedError:
                pass  # read it below
            except HandoffError as exc:
                return f"{key} not moved on to generation {generation} (it is in history/): {exc.reason}"
            else:
                return None
        return self._by_reading(key, body, generation)

    def _by_reading(self, key: str, body: bytes, generation: int) -> str | None:
        for _ in range(_COPY_TRIES):
            try:
                try:
                    stored = self.storage.read(key, limit=MAX_FILE_BYTES)
                except HandoffNotFoundError:
                    self._etags[key] = (self.storage.create(key, body), generation)
                    return None
                there = _generation_of(stored.data)
                if there >= generation:
                    return f"{key} holds generation {there} already (a newer writer's): left as it is"
                self._etags[key] = (self.storage.replace(key, body, stored.etag), generation)
            except (ObjectExistsError, ObjectChangedError):
                continue  # another writer moved it meanwhile: read it again
            except HandoffError as exc:
                return f"{key} not moved on to generation {generation} (it is in history/): {exc.reason}"
            return None
        return f"{key} not moved on to generation {generation}: other writers kept moving it ({_COPY_TRIES} tries)"


def _generation_of(data: bytes) -> int:
    """The generation a readable copy says it holds; 0 if it says none (damaged: replaced by a newer one)."""
    try:
        number = orjson.loads(data).get("generation")
    except (orjson.JSONDecodeError, AttributeError):
        return 0
    return number if isinstance(number, int) and not isinstance(number, bool) else 0
