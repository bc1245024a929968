"""SW4RM's client in memory, as SW4RM's own: one store per process, guarded by a lock, expiry enforced."""

from __future__ import annotations

import copy
import dataclasses
import datetime as dt
import threading
import uuid
from collections import defaultdict
from typing import Final

from handoff_files.compat.sw4rm_types import HandoffRequest, HandoffResponse, sw4rm_time, with_id
from handoff_files.foundation.clock import utc_now
from handoff_files.foundation.errors import HandoffError, InvalidTransitionError, UnknownRequestError
from handoff_files.inbox.request import check_timeout
from handoff_files.inbox.status import HandoffStatus

__all__ = ["MEMORY", "MemoryBackend", "clear_memory"]

#: What errors name in memory mode: there is no file.
MEMORY: Final = "<in-memory handoffs>"


@dataclasses.dataclass
class _Entry:
    request: HandoffRequest
    response: HandoffResponse
    expires_at: dt.datetime | None


# one store for every client in the process, as SW4RM's: an agent's client sees what another's requested
_handoffs: dict[str, _Entry] = {}
_pending_by_agent: defaultdict[str, list[str]] = defaultdict(list)
_lock = threading.Lock()


def clear_memory() -> None:
    """Forget every in-memory handoff of this process."""
    with _lock:
        _handoffs.clear()
        _pending_by_agent.clear()


class MemoryBackend:
    """The client's operations on the process's in-memory store: copies in, copies out."""

    problems: tuple[HandoffError, ...] = ()

    def request(self, request: HandoffRequest) -> HandoffResponse:
        """Store a PENDING request; its id is ``str(uuid4())``, as SW4RM's."""
        limit = check_timeout(request.timeout, MEMORY)
        now = utc_now()
        handoff_id = str(uuid.uuid4())
        expires_at = None if limit is None else now + dt.timedelta(seconds=limit)
        times = {"created_at": sw4rm_time(now)}
        if expires_at is not None:
            times["expires_at"] = sw4rm_time(expires_at)
        response = HandoffResponse(True, handoff_id, None, HandoffStatus.PENDING, times)
        # copies in, copies out: nobody else holds the stored objects, so only these methods change them
        entry = _Entry(copy.deepcopy(request), response, expires_at)
        with _lock:
            _handoffs[handoff_id] = entry
            _pending_by_agent[request.to_agent].append(handoff_id)
            return copy.deepcopy(response)

    def accept(self, handoff_id: str) -> HandoffResponse:
        """PENDING → ACCEPTED."""
        return self._change(handoff_id, HandoffStatus.PENDING, HandoffStatus.ACCEPTED)

    def reject(self, handoff_id: str, reason: str) -> HandoffResponse:
        """PENDING → REJECTED, with *reason*."""
        return self._change(handoff_id, HandoffStatus.PENDING, HandoffStatus.REJECTED, reason)

    def complete(self, handoff_id: str) -> HandoffResponse:
        """ACCEPTED → COMPLETED."""
        return self._change(handoff_id, HandoffStatus.ACCEPTED, HandoffStatus.COMPLETED)

    def pending(self, agent_id: str) -> list[HandoffRequest]:
        """Copies of the requests waiting for *agent_id*, oldest first, each with its id in its metadata."""
        with _lock:
            now = utc_now()
            waiting = []
            for handoff_id in list(_pending_by_agent.get(agent_id, [])):
                entry = _handoffs[handoff_id]
                if _expire(handoff_id, entry, now) is HandoffStatus.PENDING:
                    waiting.append(with_id(copy.deepcopy(entry.request), handoff_id))
            return waiting

    def status(self, handoff_id: str) -> HandoffResponse | None:
        """A copy of the request's current response, or None."""
        with _lock:
            entry = _handoffs.get(handoff_id)
            if entry is None:
                return None
            _expire(handoff_id, entry, utc_now())
            return copy.deepcopy(entry.response)

    def _change(
        self, handoff_id: str, allowed: HandoffStatus, new: HandoffStatus, reason: str | None = None
    ) -> HandoffResponse:
        with _lock:
            entry = _handoffs.get(handoff_id)
            if entry is None:
                msg = f"Handoff {handoff_id} not found"
                raise UnknownRequestError(MEMORY, msg)
            now = utc_now()
            current = _expire(handoff_id, entry, now)
            if current is not allowed:
                msg = f"Handoff {handoff_id} is not in {allowed.value} status (current: {current.value})"
                raise InvalidTransitionError(MEMORY, msg)
            response = entry.response
            response.status = new
            response.metadata[f"{new.value.lower()}_at"] = sw4rm_time(now)
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
