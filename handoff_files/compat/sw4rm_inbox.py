"""SW4RM's client on a handoff inbox: its requests as inbox requests, its context snapshots as checked blobs."""

from __future__ import annotations

import logging
from typing import Annotated, Final

from pydantic import BaseModel, ConfigDict, StringConstraints, ValidationError

from handoff_files.compat.sw4rm_types import HandoffRequest, HandoffResponse, to_response, with_id
from handoff_files.format.codec import MAX_FILE_BYTES
from handoff_files.format.loader import describe
from handoff_files.foundation.errors import (
    BlobError,
    BlobIntegrityError,
    HandoffError,
    HandoffTooLargeError,
    HandoffValidationError,
    UnknownRequestError,
)
from handoff_files.inbox.lifecycle import HandoffInbox
from handoff_files.inbox.request import InboxRequest, is_handoff_id
from handoff_files.transfers.blob_layout import sha256_hex
from handoff_files.transfers.blobs import BlobStore

__all__ = ["SW4RM_KEY", "InboxBackend"]

#: The key, in an inbox request's metadata, under which the client keeps what SW4RM's request
#: carries and the inbox has no field for: ``preserve_history`` and the context snapshot's blob.
SW4RM_KEY: Final = "handoff_files.sw4rm"

_SHA256: Final = r"^[0-9a-f]{64}$"

logger = logging.getLogger(__name__)


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


class InboxBackend:
    """The client's operations as :class:`~handoff_files.inbox.lifecycle.HandoffInbox` calls.

    :param inbox: where the requests are.
    :param blobs: where context snapshots are put, and fetched from (checked against their sha256).
    """

    def __init__(self, inbox: HandoffInbox, blobs: BlobStore) -> None:
        self.inbox = inbox
        self.blobs = blobs
        #: What the last :meth:`pending` skipped: damaged files, and contexts missing or altered.
        self.problems: tuple[HandoffError, ...] = ()
        self._reported: set[tuple[str, str]] = set()

    def request(self, request: HandoffRequest) -> HandoffResponse:
        """Put the context snapshot in the blob store, then the request in the inbox."""
        metadata = request.metadata
        if not isinstance(metadata, dict) or SW4RM_KEY in metadata:
            msg = f"metadata must be a dict without the key {SW4RM_KEY!r}, which the client keeps for itself"
            raise HandoffValidationError(self.inbox.where, msg)
        extra = _Extra(preserve_history=bool(request.preserve_history), context=self._put(request))
        record = self.inbox.request_handoff(
            request.from_agent,
            request.to_agent,
            request.reason,
            timeout=request.timeout,
            capabilities_required=request.capabilities_required,
            metadata={**metadata, SW4RM_KEY: extra.model_dump(mode="json")},
        )
        return to_response(record)

    def _put(self, request: HandoffRequest) -> _ContextRef | None:
        """Store the context snapshot, if any, before the request naming it: no request names a missing blob."""
        data = request.context_snapshot
        if data is None:
            return None
        if not isinstance(data, bytes | bytearray | memoryview):
            msg = f"context_snapshot must be bytes (serialize_context's output), not {type(data).__name__}"
            raise HandoffValidationError(self.inbox.where, msg)
        data = bytes(data)
        if len(data) > MAX_FILE_BYTES:
            msg = f"context_snapshot is {len(data):,} bytes, over the {MAX_FILE_BYTES:,}-byte limit for a handoff"
            raise HandoffTooLargeError(self.inbox.where, msg)
        try:
            blob_id = self.blobs.put(data)
        except HandoffError:
            raise
        except Exception as exc:  # a blob store of the caller's own: whatever it raises, say where
            msg = f"the blob store failed to store the context snapshot: {type(exc).__name__}: {exc}"
            raise BlobError(repr(self.blobs), msg) from exc
        return _ContextRef(blob_id=blob_id, sha256=sha256_hex(data), size=len(data))

    def accept(self, handoff_id: str) -> HandoffResponse:
        """PENDING → ACCEPTED."""
        return to_response(self.inbox.accept_handoff(self._known(handoff_id)))

    def reject(self, handoff_id: str, reason: str) -> HandoffResponse:
        """PENDING → REJECTED, with *reason*."""
        return to_response(self.inbox.reject_handoff(self._known(handoff_id), reason))

    def complete(self, handoff_id: str) -> HandoffResponse:
        """ACCEPTED → COMPLETED."""
        return to_response(self.inbox.complete_handoff(self._known(handoff_id)))

    def pending(self, agent_id: str) -> list[HandoffRequest]:
        """The requests waiting for *agent_id*, each with its context; see :attr:`problems`."""
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
        """The request's response, or None (an id this inbox never makes included, as SW4RM answers)."""
        if not is_handoff_id(handoff_id):
            return None
        record = self.inbox.get_handoff(handoff_id)
        return None if record is None else to_response(record)

    def _known(self, handoff_id: str) -> str:
        if not is_handoff_id(handoff_id):
            msg = f"Handoff {handoff_id!r} not found: this inbox's ids are 32 lowercase hex digits"
            raise UnknownRequestError(self.inbox.where, msg)
        return handoff_id

    def _request(self, record: InboxRequest) -> HandoffRequest:
        where = f"{self.inbox.where}/requests/{record.handoff_id}.json"
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
        return with_id(request, record.handoff_id, **descriptor)

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
