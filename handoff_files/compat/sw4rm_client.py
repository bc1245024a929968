"""SW4RM's HandoffClient: its request lifecycle in memory, as SW4RM's own, or persisted in a handoff inbox."""

from __future__ import annotations

import copy
import dataclasses
import datetime as dt
import logging
import os
import threading
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Annotated, Any, Final, Protocol

from pydantic import BaseModel, ConfigDict, StringConstraints, ValidationError

from handoff_files.compat.sw4rm import HandoffRequest, HandoffResponse, HandoffStatus
from handoff_files.format.codec import MAX_FILE_BYTES
from handoff_files.format.loader import describe
from handoff_files.foundation.errors import (
    BlobError,
    BlobIntegrityError,
    HandoffError,
    HandoffTooLargeError,
    HandoffValidationError,
    InvalidTransitionError,
    UnknownRequestError,
)
from handoff_files.inbox.lifecycle import HandoffInbox, InboxRequest, check_timeout, is_handoff_id
from handoff_files.transfer.blobs import BlobStore, LocalBlobStore, open_blobs, sha256_hex

__all__ = ["BLOBS_DIR", "HANDOFF_ID_KEY", "INBOX_ENV", "SW4RM_KEY", "HandoffClient"]

#: The environment variable naming the inbox a :class:`HandoffClient` made without ``inbox=`` uses.
INBOX_ENV: Final = "HANDOFF_INBOX"
#: Where, inside the inbox, context snapshots are kept when no ``blobs=`` is given.
BLOBS_DIR: Final = "blobs"
#: The key, in the metadata of each request :meth:`HandoffClient.get_pending_handoffs` returns, holding its id.
HANDOFF_ID_KEY: Final = "handoff_id"
#: The key, in an inbox request's metadata, under which the client keeps what SW4RM's request
#: carries and the inbox has no field for: ``preserve_history`` and the context snapshot's blob.
SW4RM_KEY: Final = "handoff_files.sw4rm"

_MEMORY: Final = "<in-memory handoffs>"  # what errors name in memory mode: there is no file
_SHA256: Final = r"^[0-9a-f]{64}$"
_TAKEN: Final = (HandoffStatus.PENDING, HandoffStatus.ACCEPTED, HandoffStatus.COMPLETED)

logger = logging.getLogger(__name__)


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
            self._backend: _Backend = _MemoryBackend()
            return
        self.inbox = inbox if isinstance(inbox, HandoffInbox) else HandoffInbox(inbox)
        if blobs is None:
            store: BlobStore = LocalBlobStore(self.inbox.path / BLOBS_DIR)
        else:
            store = open_blobs(blobs) if isinstance(blobs, str | os.PathLike) else blobs
        self._backend = _InboxBackend(self.inbox, store)

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
        with _lock:
            _handoffs.clear()
            _pending_by_agent.clear()


class _Backend(Protocol):
    problems: tuple[HandoffError, ...]

    def request(self, request: HandoffRequest) -> HandoffResponse: ...
    def accept(self, handoff_id: str) -> HandoffResponse: ...
    def reject(self, handoff_id: str, reason: str) -> HandoffResponse: ...
    def complete(self, handoff_id: str) -> HandoffResponse: ...
    def pending(self, agent_id: str) -> list[HandoffRequest]: ...
    def status(self, handoff_id: str) -> HandoffResponse | None: ...


def _iso(moment: dt.datetime) -> str:
    return moment.isoformat()  # SW4RM's form: datetime.isoformat() of an aware UTC time


def _with_id(request: HandoffRequest, handoff_id: str, **extra: Any) -> HandoffRequest:
    return dataclasses.replace(request, metadata={**request.metadata, **extra, HANDOFF_ID_KEY: handoff_id})


# -- in memory, as SW4RM's client ----------------------------------------------------------


@dataclasses.dataclass
class _Entry:
    request: HandoffRequest
    response: HandoffResponse
    expires_at: dt.datetime | None


# one store for every client in the process, as SW4RM's: an agent's client sees what another's requested
_handoffs: dict[str, _Entry] = {}
_pending_by_agent: defaultdict[str, list[str]] = defaultdict(list)
_lock = threading.Lock()


class _MemoryBackend:
    problems: tuple[HandoffError, ...] = ()

    def request(self, request: HandoffRequest) -> HandoffResponse:
        limit = check_timeout(request.timeout, Path(_MEMORY))
        now = dt.datetime.now(dt.UTC)
        handoff_id = str(uuid.uuid4())
        expires_at = None if limit is None else now + dt.timedelta(seconds=limit)
        times = {"created_at": _iso(now)} | ({} if expires_at is None else {"expires_at": _iso(expires_at)})
        response = HandoffResponse(True, handoff_id, None, HandoffStatus.PENDING, times)
        # copies in, copies out: nobody else holds the stored objects, so only these methods change them
        entry = _Entry(copy.deepcopy(request), response, expires_at)
        with _lock:
            _handoffs[handoff_id] = entry
            _pending_by_agent[request.to_agent].append(handoff_id)
            return copy.deepcopy(response)

    def accept(self, handoff_id: str) -> HandoffResponse:
        return self._change(handoff_id, HandoffStatus.PENDING, HandoffStatus.ACCEPTED)

    def reject(self, handoff_id: str, reason: str) -> HandoffResponse:
        return self._change(handoff_id, HandoffStatus.PENDING, HandoffStatus.REJECTED, reason)

    def complete(self, handoff_id: str) -> HandoffResponse:
        return self._change(handoff_id, HandoffStatus.ACCEPTED, HandoffStatus.COMPLETED)

    def pending(self, agent_id: str) -> list[HandoffRequest]:
        with _lock:
            now = dt.datetime.now(dt.UTC)
            waiting = []
            for handoff_id in list(_pending_by_agent.get(agent_id, [])):
                entry = _handoffs[handoff_id]
                if _expire(handoff_id, entry, now) is HandoffStatus.PENDING:
                    waiting.append(_with_id(copy.deepcopy(entry.request), handoff_id))
            return waiting

    def status(self, handoff_id: str) -> HandoffResponse | None:
        with _lock:
            entry = _handoffs.get(handoff_id)
            if entry is None:
                return None
            _expire(handoff_id, entry, dt.datetime.now(dt.UTC))
            return copy.deepcopy(entry.response)

    def _change(
        self, handoff_id: str, allowed: HandoffStatus, new: HandoffStatus, reason: str | None = None
    ) -> HandoffResponse:
        with _lock:
            entry = _handoffs.get(handoff_id)
            if entry is None:
                msg = f"Handoff {handoff_id} not found"
                raise UnknownRequestError(_MEMORY, msg)
            now = dt.datetime.now(dt.UTC)
            current = _expire(handoff_id, entry, now)
            if current is not allowed:
                msg = f"Handoff {handoff_id} is not in {allowed.value} status (current: {current.value})"
                raise InvalidTransitionError(_MEMORY, msg)
            response = entry.response
            response.status = new
            response.metadata[f"{new.value.lower()}_at"] = _iso(now)
            if new is HandoffStatus.REJECTED:
                response.accepted = False
                response.rejection_reason = reason
            elif new is HandoffStatus.ACCEPTED:
                response.accepted = True
            _unlist(handoff_id, entry)
            return copy.deepcopy(response)


def _expire(handoff_id: str, entry: _Entry, now: dt.datetime) -> HandoffStatus:
    """The entry's status at *now*, recording EXPIRED first if its timeout has passed unaccepted (under _lock)."""
    response = entry.response
    if response.status is HandoffStatus.PENDING and entry.expires_at is not None and now >= entry.expires_at:
        response.status = HandoffStatus.EXPIRED
        response.accepted = False
        _unlist(handoff_id, entry)
    return response.status


def _unlist(handoff_id: str, entry: _Entry) -> None:
    waiting = _pending_by_agent.get(entry.request.to_agent)
    if waiting is not None and handoff_id in waiting:
        waiting.remove(handoff_id)


# -- in an inbox -----------------------------------------------------------------------------


class _ContextRef(BaseModel):
    """Where a request's context snapshot is: its blob, and the sha256 its bytes must have."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    blob_id: str
    sha256: Annotated[str, StringConstraints(pattern=_SHA256)]
    size: int


class _Extra(BaseModel):
    """What the client keeps under :data:`SW4RM_KEY` in an inbox request's metadata."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    preserve_history: bool = True
    context: _ContextRef | None = None


class _InboxBackend:
    def __init__(self, inbox: HandoffInbox, blobs: BlobStore) -> None:
        self.inbox = inbox
        self.blobs = blobs
        self.problems: tuple[HandoffError, ...] = ()
        self._reported: set[tuple[str, str]] = set()

    def request(self, request: HandoffRequest) -> HandoffResponse:
        metadata = request.metadata
        if not isinstance(metadata, dict) or SW4RM_KEY in metadata:
            msg = f"metadata must be a dict without the key {SW4RM_KEY!r}, which the client keeps for itself"
            raise HandoffValidationError(self.inbox.path, msg)
        extra = _Extra(preserve_history=bool(request.preserve_history), context=self._put(request))
        record = self.inbox.request_handoff(
            request.from_agent,
            request.to_agent,
            request.reason,
            timeout=request.timeout,
            capabilities_required=request.capabilities_required,
            metadata={**metadata, SW4RM_KEY: extra.model_dump(mode="json")},
        )
        return _response(record)

    def _put(self, request: HandoffRequest) -> _ContextRef | None:
        """Store the context snapshot, if any, before the request naming it: no request names a missing blob."""
        data = request.context_snapshot
        if data is None:
            return None
        if not isinstance(data, bytes | bytearray | memoryview):
            msg = f"context_snapshot must be bytes (serialize_context's output), not {type(data).__name__}"
            raise HandoffValidationError(self.inbox.path, msg)
        data = bytes(data)
        if len(data) > MAX_FILE_BYTES:
            msg = f"context_snapshot is {len(data):,} bytes, over the {MAX_FILE_BYTES:,}-byte limit for a handoff"
            raise HandoffTooLargeError(self.inbox.path, msg)
        try:
            blob_id = self.blobs.put(data)
        except HandoffError:
            raise
        except Exception as exc:  # a blob store of the caller's own: whatever it raises, say where
            msg = f"the blob store failed to store the context snapshot: {type(exc).__name__}: {exc}"
            raise BlobError(repr(self.blobs), msg) from exc
        return _ContextRef(blob_id=blob_id, sha256=sha256_hex(data), size=len(data))

    def accept(self, handoff_id: str) -> HandoffResponse:
        return _response(self.inbox.accept_handoff(self._known(handoff_id)))

    def reject(self, handoff_id: str, reason: str) -> HandoffResponse:
        return _response(self.inbox.reject_handoff(self._known(handoff_id), reason))

    def complete(self, handoff_id: str) -> HandoffResponse:
        return _response(self.inbox.complete_handoff(self._known(handoff_id)))

    def pending(self, agent_id: str) -> list[HandoffRequest]:
        records = self.inbox.get_pending_handoffs(agent_id)
        problems = list(self.inbox.problems)
        requests = []
        for record in records:
            try:
                requests.append(self._request(record))
            except HandoffError as exc:
                # as the inbox does with a damaged file: skipped, warned once, listed; never handed out contextless
                problems.append(exc)
                if (exc.path, exc.reason) not in self._reported:
                    self._reported.add((exc.path, exc.reason))
                    logger.warning("handoff client: skipped request %s: %s", record.handoff_id, exc)
        self.problems = tuple(problems)
        return requests

    def status(self, handoff_id: str) -> HandoffResponse | None:
        if not is_handoff_id(handoff_id):
            return None  # as SW4RM answers for an id it never made
        record = self.inbox.get_handoff(handoff_id)
        return None if record is None else _response(record)

    def _known(self, handoff_id: str) -> str:
        if not is_handoff_id(handoff_id):
            msg = f"Handoff {handoff_id!r} not found: this inbox's ids are 32 lowercase hex digits"
            raise UnknownRequestError(self.inbox.path, msg)
        return handoff_id

    def _request(self, record: InboxRequest) -> HandoffRequest:
        where = self.inbox.requests_dir / f"{record.handoff_id}.json"
        metadata = dict(record.metadata)
        try:
            extra = _Extra.model_validate(metadata.pop(SW4RM_KEY, {}))
        except ValidationError as exc:
            msg = f"its {SW4RM_KEY!r} metadata is not the client's: {describe(exc)}"
            raise HandoffValidationError(where, msg) from exc
        timeout = None if record.expires_at is None else (record.expires_at - record.created_at).total_seconds()
        request = HandoffRequest(
            from_agent=record.from_agent,
            to_agent=record.to_agent or "",
            reason=record.reason,
            context_snapshot=None if extra.context is None else self._get(extra.context),
            preserve_history=extra.preserve_history,
            capabilities_required=list(record.capabilities_required),
            metadata=metadata,
            timeout=timeout,
        )
        descriptor = {} if record.descriptor is None else {"descriptor": record.descriptor.model_dump(mode="json")}
        return _with_id(request, record.handoff_id, **descriptor)

    def _get(self, ref: _ContextRef) -> bytes:
        where = f"context blob {ref.blob_id}"
        try:
            data = self.blobs.get(ref.blob_id)
        except HandoffError:
            raise
        except Exception as exc:  # never taken as "no context": an unreadable store is an error
            msg = f"the blob store failed to return it: {type(exc).__name__}: {exc}"
            raise BlobError(where, msg) from exc
        actual = sha256_hex(bytes(data))
        if actual != ref.sha256:
            msg = f"sha256 is {actual}, but the request says {ref.sha256}"
            raise BlobIntegrityError(where, msg)
        return bytes(data)


def _response(record: InboxRequest) -> HandoffResponse:
    """An inbox record as SW4RM's client answers: ``accepted`` unless rejected or expired; the times in ``metadata``."""
    moments = {
        "created_at": record.created_at,
        "expires_at": record.expires_at,
        "accepted_at": record.accepted_at,
        "rejected_at": record.rejected_at,
        "completed_at": record.completed_at,
    }
    times = {name: _iso(moment) for name, moment in moments.items() if moment is not None}
    accepted = record.status in _TAKEN
    return HandoffResponse(accepted, record.handoff_id, record.rejection_reason, record.status, times)
