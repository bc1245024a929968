"""SW4RM's handoff request and response, field for field, and the one reading of an inbox request as a response."""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass, field
from typing import Any, Final

from handoff_files.inbox.request import InboxRequest
from handoff_files.inbox.status import HandoffStatus

__all__ = ["HANDOFF_ID_KEY", "HandoffRequest", "HandoffResponse", "sw4rm_time", "to_response", "with_id"]

#: The key, in the metadata of each request ``HandoffClient.get_pending_handoffs`` returns, holding its id.
HANDOFF_ID_KEY: Final = "handoff_id"
# what SW4RM's client answers `accepted` for: everything but a refusal and an expiry
_TAKEN: Final = (HandoffStatus.PENDING, HandoffStatus.ACCEPTED, HandoffStatus.COMPLETED)


@dataclass
class HandoffRequest:
    """A request to hand execution to another agent, field for field as SW4RM's.

    :ivar context_snapshot: a context as :func:`~handoff_files.compat.sw4rm_context.serialize_context` writes it.
    :ivar timeout: seconds the target has to accept, or ``None`` for no limit.
    """

    from_agent: str
    to_agent: str
    reason: str
    context_snapshot: bytes | None = None
    preserve_history: bool = True
    capabilities_required: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    timeout: float | None = None


@dataclass
class HandoffResponse:
    """The answer to a :class:`HandoffRequest`, field for field as SW4RM's."""

    accepted: bool
    handoff_id: str
    rejection_reason: str | None = None
    status: HandoffStatus = HandoffStatus.PENDING
    metadata: dict[str, Any] = field(default_factory=dict)


def sw4rm_time(moment: dt.datetime) -> str:
    """*moment* as SW4RM writes times in a response's metadata: ``datetime.isoformat()`` of an aware UTC time."""
    return moment.isoformat()


def with_id(request: HandoffRequest, handoff_id: str, **extra: Any) -> HandoffRequest:
    """A copy of *request* whose metadata carries *extra* and, under :data:`HANDOFF_ID_KEY`, its id."""
    return dataclasses.replace(request, metadata={**request.metadata, **extra, HANDOFF_ID_KEY: handoff_id})


def to_response(record: InboxRequest) -> HandoffResponse:
    """An inbox request as SW4RM's client answers for it: the one conversion from the inbox to SW4RM.

    ``accepted`` is True unless the request was rejected or expired (a PENDING request reads
    True, as SW4RM's ``request_handoff`` answers); ``metadata`` holds the request's times
    (``created_at``, ``expires_at``, ``accepted_at``, ``rejected_at``, ``completed_at``, those
    that are set) as :func:`sw4rm_time` writes them.
    """
    moments = {
        "created_at": record.created_at,
        "expires_at": record.expires_at,
        "accepted_at": record.accepted_at,
        "rejected_at": record.rejected_at,
        "completed_at": record.completed_at,
    }
    times = {name: sw4rm_time(moment) for name, moment in moments.items() if moment is not None}
    accepted = record.status in _TAKEN
    return HandoffResponse(accepted, record.handoff_id, record.rejection_reason, record.status, times)
