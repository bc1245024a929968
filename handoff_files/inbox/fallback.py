"""The requester's fallback: ask agents in turn until one accepts, and say why each one did not."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from handoff_files.foundation.errors import HandoffValidationError
from handoff_files.inbox.lifecycle import HandoffInbox
from handoff_files.inbox.request import MAX_REASON, InboxRequest, RefusedBy, check_timeout
from handoff_files.inbox.status import SETTLED, HandoffStatus
from handoff_files.transfers.descriptor import Descriptor

__all__ = ["request_handoff_with_fallback"]


def request_handoff_with_fallback(
    inbox: HandoffInbox,
    preferred_agents: Iterable[str],
    *,
    from_agent: str,
    reason: str,
    descriptor: Descriptor | Mapping[str, Any] | str | bytes | None = None,
    wait: float = 30.0,
    poll: float = 0.05,
    **kwargs: Any,
) -> InboxRequest:
    """Ask each agent in turn; return the first request accepted, or a REJECTED record giving every agent's reason.

    Each request expires after *wait* seconds (or the ``timeout`` given, if shorter), so an agent
    that answers too late can no longer accept it: at most one agent ever takes the work. The
    REJECTED record returned when nobody accepts is not stored; its ``rejection_reason`` reads
    e.g. ``"beta: rejected: busy; gamma: expired after 2 s; delta: refused by the capability gate: …"``,
    and its ``refused_by`` is set only if the capability gate refused every agent.

    :param kwargs: passed to :meth:`HandoffInbox.request_handoff` (priority, capabilities_required, metadata, timeout).
    :returns: the ACCEPTED (or already COMPLETED) request, or the REJECTED summary.
    :raises HandoffValidationError: for no agents, or a bad *wait* or *poll*; as request_handoff does.
    """
    agents = [preferred_agents] if isinstance(preferred_agents, str) else list(preferred_agents)
    if not agents or not wait > 0 or not poll > 0:
        msg = f"need at least one agent, and wait and poll more than 0 s (got {agents!r}, {wait!r}, {poll!r})"
        raise HandoffValidationError(inbox.where, msg)
    timeout = check_timeout(kwargs.pop("timeout", None), inbox.where)
    limit = wait if timeout is None else min(timeout, wait)
    reasons: list[str] = []
    refusals: set[RefusedBy | None] = set()  # who refused each agent's request (None: the agent did)
    for agent in agents:
        record = inbox.request_handoff(from_agent, agent, reason, descriptor=descriptor, timeout=limit, **kwargs)
        if record.status is HandoffStatus.PENDING:
            record = _await_answer(inbox, record, limit, poll)
        if record.status in SETTLED:
            return record
        refusals.add(record.refused_by)
        reasons.append(f"{agent}: {_why_not(inbox, record, limit)}")
    summary = "; ".join(reasons)
    return record.model_copy(
        update={
            "handoff_id": uuid.uuid4().hex,
            "to_agent": None,
            "status": HandoffStatus.REJECTED,
            "rejection_reason": summary if len(summary) <= MAX_REASON else summary[: MAX_REASON - 1] + "…",
            "rejected_at": inbox.now(),
            "accepted_at": None,
            "completed_at": None,
            "refused_by": refusals.pop() if len(refusals) == 1 else None,
        }
    )


def _why_not(inbox: HandoffInbox, record: InboxRequest, limit: float) -> str:
    """Why an agent did not take the request, as one clause of the summary."""
    if record.status is HandoffStatus.EXPIRED:
        inbox.expire_overdue()  # let the file say so too
        return f"expired after {limit:g} s"
    if record.status is HandoffStatus.PENDING:  # the inbox's clock has not reached expires_at
        return f"no answer in {limit:g} s"
    if record.refused_by is not None:  # the reason already says who refused, and why
        return str(record.rejection_reason)
    return f"rejected: {record.rejection_reason}"


def _await_answer(inbox: HandoffInbox, record: InboxRequest, limit: float, poll: float) -> InboxRequest:
    # the inbox's clock decides expiry; the monotonic bound only ends the wait if that clock stands still
    deadline = time.monotonic() + limit + max(1.0, 10 * poll)
    while True:
        current = inbox.get_handoff(record.handoff_id)
        if current is None:  # removed by hand
            return record.model_copy(update={"status": HandoffStatus.REJECTED, "rejection_reason": "request removed"})
        if current.status is not HandoffStatus.PENDING or time.monotonic() > deadline:
            return current
        time.sleep(min(poll, max(0.0, deadline - time.monotonic())))
