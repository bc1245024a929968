"""Watching a thread on object storage: polling ``handoff.json`` with conditional ``GET``s (ETag, 304).

A bucket sends no file events, so :func:`~handoff_files.watchers.watcher.watch` given an
``s3://`` URL polls: every *rescan* seconds one ``GET`` of ``handoff.json`` with ``If-None-Match``
at the etag last seen, which the store answers 304 without a body while nothing changed. When it
did change, the thread is restored (its newest verified generation in ``history/``, seal and
signature checked, the pin applied) and delivered if it is newer than the last one delivered:
``handoff.json`` is only a hint, never what is delivered. A missed hint (a copy a killed writer left
behind) is caught by a full restore every :data:`FULL_EVERY` polls.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Final

from handoff_files.format.codec import MAX_FILE_BYTES
from handoff_files.foundation.errors import HandoffError, HandoffNotFoundError, NoHandoffError, StorageUnavailableError
from handoff_files.storage import Storage, Stored
from handoff_files.thread.results import Restored
from handoff_files.thread.store import HandoffStore
from handoff_files.watchers.watcher import Watcher

__all__ = ["FULL_EVERY", "BucketWatcher"]

#: a full restore every this many polls, whatever ``handoff.json`` says (it may lag a killed writer's commit)
FULL_EVERY: Final = 10
_HINT: Final = "handoff.json"


class BucketWatcher(Watcher):
    """A running watch over a thread on object storage; made by :func:`~handoff_files.watchers.watcher.watch`."""

    def __init__(
        self,
        store: HandoffStore,
        on_change: Callable[[Restored], None],
        on_error: Callable[[HandoffError], None] | None,
        rescan: float,
    ) -> None:
        super().__init__(store, on_change, on_error, 0.0, rescan)
        self._etag: str | None = None
        self._polls = 0
        self._down = False  # an outage is reported once (each failed request's message differs: its timing)

    def _start(self) -> None:
        try:  # the hint's etag first, then the restore: a save landing in between changes it, and is read again
            self._etag = self._storage().read(_HINT, limit=MAX_FILE_BYTES).etag
        except HandoffNotFoundError:
            self._etag = None
        try:
            initial: Restored | None = self._store.restore()
        except NoHandoffError:
            initial = None
        if initial is not None:
            self._deliver(initial)
        self._worker = threading.Thread(target=self._run, name=f"handoff-watch {self.where}", daemon=True)
        self._worker.start()

    def _storage(self) -> Storage:
        """The store's own seam (a bucket's storage), which the poll reads through."""
        return self._store.storage  # type: ignore[attr-defined, no-any-return]  # a BucketThreadStore's

    def _refresh(self) -> None:
        """One poll: a conditional ``GET`` of the hint; on a change (or every few polls) a restore."""
        self._polls += 1
        storage = self._storage()
        changed: Stored | None
        try:
            if self._etag is None:
                changed = storage.read(_HINT, limit=MAX_FILE_BYTES)
            else:
                changed = storage.read_changed(_HINT, self._etag, limit=MAX_FILE_BYTES)
        except HandoffNotFoundError:
            changed = None  # nothing saved yet, or the copy is behind: the full restore below finds a commit
        except StorageUnavailableError as exc:
            if not self._down:
                self._down = True
                self._report(exc)
            return
        except HandoffError as exc:
            self._report(exc)
            return
        self._down = False
        if changed is None and self._polls % FULL_EVERY:
            return
        if changed is not None:
            self._etag = changed.etag
        try:
            restored = self._store.restore()
        except NoHandoffError:
            return
        except HandoffError as exc:
            self._report(exc)
            return
        self._error = None
        if restored.generation > self._sealed[0]:
            self._deliver(restored)
