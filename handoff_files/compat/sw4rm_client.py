"""SW4RM's HandoffClient: its request lifecycle in memory, as SW4RM's own, or persisted in a handoff inbox."""

from __future__ import annotations

import os
from typing import Any, Final, Protocol

from handoff_files.compat.sw4rm_inbox import SW4RM_KEY, InboxBackend
from handoff_files.compat.sw4rm_memory import MemoryBackend, clear_memory
from handoff_files.compat.sw4rm_types import HANDOFF_ID_KEY, HandoffRequest, HandoffResponse
from handoff_files.foundation.errors import HandoffError
from handoff_files.inbox.lifecycle import HandoffInbox
from handoff_files.transfers.blobs import BlobStore, LocalBlobStore, open_blobs

# HANDOFF_ID_KEY and SW4RM_KEY live in sw4rm_types.py and sw4rm_inbox.py; re-exported where callers find them
__all__ = ["BLOBS_DIR", "HANDOFF_ID_KEY", "INBOX_ENV", "SW4RM_KEY", "HandoffClient"]

#: The environment variable naming the inbox a :class:`HandoffClient` made without ``inbox=`` uses.
INBOX_ENV: Final = "HANDOFF_INBOX"
#: Where, inside the inbox, context snapshots are kept when no ``blobs=`` is given.
BLOBS_DIR: Final = "blobs"


class _Backend(Protocol):
    """Where the client's requests live: in memory (:mod:`.sw4rm_memory`) or in an inbox (:mod:`.sw4rm_inbox`)."""

    problems: tuple[HandoffError, ...]

    def request(self, request: HandoffRequest) -> HandoffResponse: ...
    def accept(self, handoff_id: str) -> HandoffResponse: ...
    def reject(self, handoff_id: str, reason: str) -> HandoffResponse: ...
    def complete(self, handoff_id: str) -> HandoffResponse: ...
    def pending(self, agent_id: str) -> list[HandoffRequest]: ...
    def status(self, handoff_id: str) -> HandoffResponse | None: ...


class HandoffClient:
    """SW4RM's handoff client: request, accept, reject and complete handoffs, and list an agent's pending ones.

    **In memory** (no inbox given, ``HANDOFF_INBOX`` unset): as SW4RM's own client, one store
    shared by every client in the process, guarded by a lock, and emptied by
    :meth:`clear_all_handoffs`; ids are ``str(uuid4())``; errors carry SW4RM's wording. Two things
    differ, both on purpose: callers get copies, never the store's live objects (changing a
    returned request or response changes nothing else), and a request's ``timeout`` is enforced:
    once it has passed unaccepted, the request reads EXPIRED and can no longer be accepted.

    **In an inbox** (``inbox=`` a directory or a :class:`~handoff_files.inbox.lifecycle.HandoffInbox`, or
    the ``HANDOFF_INBOX`` environment variable): every operation is a
    :class:`~handoff_files.inbox.lifecycle.HandoffInbox` call, so requests survive restarts and are shared
    by every process using that directory; ids are 32 hex digits; expiry follows the inbox's
    clock. What SW4RM would take but a request file cannot hold (agent ids that are not names,
    metadata that is not JSON, a reason over 2,000 characters, a rejection without a reason)
    raises :class:`~handoff_files.foundation.errors.HandoffValidationError`.
    A request's ``context_snapshot`` travels by reference: its bytes are put in a blob store
    (``blobs=``, default ``<inbox>/blobs``) and the request file names the blob and its sha256,
    under the metadata key :data:`SW4RM_KEY` (with ``preserve_history``); a reader gets the bytes
    back, checked against that sha256.

    In both modes, each request :meth:`get_pending_handoffs` returns carries its id in
    ``metadata["handoff_id"]`` (:data:`HANDOFF_ID_KEY`; in the copy only, over any value the
    sender put there; a request with a checkpoint descriptor carries it in
    ``metadata["descriptor"]``); responses' ``metadata`` holds the ISO 8601 times ``created_at``,
    ``accepted_at``, ``rejected_at``, ``completed_at`` as they happen (and ``expires_at`` for a
    request with a timeout); and the lifecycle's errors are ``ValueError`` subclasses, as SW4RM's:
    :class:`~handoff_files.foundation.errors.UnknownRequestError` ("Handoff … not found") and
    :class:`~handoff_files.foundation.errors.InvalidTransitionError` ("… not in PENDING status …").

    :param channel: kept, as SW4RM keeps it; SW4RM has no service behind it yet, and neither do we.
    :param inbox: the inbox: a :class:`~handoff_files.inbox.lifecycle.HandoffInbox` or its directory
        (default: ``$HANDOFF_INBOX``; unset or empty: in memory).
    :param blobs: inbox mode only: where context snapshots go: a blob store, a folder or an fsspec URL.
    """

    def __init__(
        self,
        channel: Any | None = None,
        *,
        inbox: HandoffInbox | str | os.PathLike[str] | None = None,
        blobs: BlobStore | str | os.PathLike[str] | None = None,
    ) -> None:
        self._channel = channel
        self._stub = None  # SW4RM's placeholder for a gRPC stub: code that checks for it finds none
        if inbox is None:
            inbox = os.environ.get(INBOX_ENV) or None
        if inbox is None:
            self.inbox: HandoffInbox | None = None
            self._backend: _Backend = MemoryBackend()
            return
        self.inbox = inbox if isinstance(inbox, HandoffInbox) else HandoffInbox(inbox)
        if blobs is None and "://" in self.inbox.where:  # an inbox in a bucket: its blobs beside it there
            store: BlobStore = open_blobs(f"{self.inbox.where.rstrip('/')}/{BLOBS_DIR}")
        elif blobs is None:
            store = LocalBlobStore(self.inbox.path / BLOBS_DIR)
        else:
            store = open_blobs(blobs) if isinstance(blobs, str | os.PathLike) else blobs
        self._backend = InboxBackend(self.inbox, store)

    def __repr__(self) -> str:
        return f"HandoffClient(inbox={self.inbox!r})"

    @property
    def problems(self) -> tuple[HandoffError, ...]:
        """What the last :meth:`get_pending_handoffs` skipped, one error each (always empty in memory).

        A damaged request file, or a context blob missing or altered: such a request is never
        handed out without its context; it can still be answered by id.
        """
        return self._backend.problems

    def request_handoff(self, request: HandoffRequest) -> HandoffResponse:
        """Ask ``request.to_agent`` to take the work over; the answer is PENDING (``accepted`` True, as SW4RM's).

        :raises HandoffValidationError: for a ``timeout`` that is not a positive number of seconds;
            in an inbox, also for what a request file cannot hold.
        :raises HandoffError: in an inbox, if the request or its context cannot be written.
        """
        return self._backend.request(request)

    def accept_handoff(self, handoff_id: str) -> HandoffResponse:
        """PENDING → ACCEPTED.

        :raises UnknownRequestError: if no request has that id.
        :raises InvalidTransitionError: if it is not PENDING (expired included).
        """
        return self._backend.accept(handoff_id)

    def reject_handoff(self, handoff_id: str, reason: str) -> HandoffResponse:
        """PENDING → REJECTED, with *reason* (an inbox refuses an empty one).

        :raises UnknownRequestError, InvalidTransitionError: as :meth:`accept_handoff`.
        """
        return self._backend.reject(handoff_id, reason)

    def complete_handoff(self, handoff_id: str) -> HandoffResponse:
        """ACCEPTED → COMPLETED: the receiver has taken over.

        :raises UnknownRequestError: if no request has that id.
        :raises InvalidTransitionError: if it is not ACCEPTED.
        """
        return self._backend.complete(handoff_id)

    def get_pending_handoffs(self, agent_id: str) -> list[HandoffRequest]:
        """The requests waiting for *agent_id* (PENDING and not expired), as copies, oldest first.

        Each carries its id in ``metadata["handoff_id"]``.
        """
        return self._backend.pending(agent_id)

    def get_handoff_status(self, handoff_id: str) -> HandoffResponse | None:
        """The request's current response, or None if no request has that id."""
        return self._backend.status(handoff_id)

    @staticmethod
    def clear_all_handoffs() -> None:
        """Forget every in-memory handoff (for tests, as SW4RM's). An inbox on disk is never touched."""
        clear_memory()
