"""The handoff inbox: requests between agents, and their lifecycle (PENDING → ACCEPTED → COMPLETED, or not)."""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import os
import uuid
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from handoff_files.foundation.clock import utc_now
from handoff_files.foundation.errors import (
    HandoffError,
    HandoffValidationError,
    InvalidTransitionError,
    StorageConflictError,
    UnknownRequestError,
)
from handoff_files.foundation.lock import DEFAULT_LOCK_TIMEOUT
from handoff_files.foundation.names import check_id
from handoff_files.inbox.capabilities import AgentRegistry
from handoff_files.inbox.ids import SHORT_ID, resolve, shortest_prefixes
from handoff_files.inbox.request import (
    CAPABILITY_GATE,
    DEFAULT_PRIORITY,
    MAX_REASON,
    InboxRequest,
    check_descriptor,
    check_handoff_id,
    check_metadata,
    check_priority,
    check_required,
    check_text,
    check_timeout,
    is_handoff_id,
    problem_kind,
    refusal,
    urgency,
)
from handoff_files.inbox.request_files import REQUESTS_DIR, RequestFiles
from handoff_files.inbox.request_objects import open_requests
from handoff_files.inbox.serve import ServeOptions, serve
from handoff_files.inbox.status import HandoffStatus
from handoff_files.transfers.descriptor import Descriptor

if TYPE_CHECKING:
    from handoff_files.thread.signatures import KeyChoice

# DEFAULT_PRIORITY, REQUESTS_DIR, InboxRequest and is_handoff_id live in request.py and request_files.py;
# they are re-exported here, where the inbox's callers have always found them
__all__ = ["DEFAULT_PRIORITY", "REQUESTS_DIR", "HandoffInbox", "InboxRequest", "is_handoff_id"]

logger = logging.getLogger(__name__)

#: how many times a change on a bucket reads the request again after another agent's write beat it
CHANGE_TRIES = 8


class HandoffInbox:
    """A shared inbox of handoff requests, in a folder or on object storage, safe for several processes.

    One human-readable JSON file per request, ``requests/<handoff_id>.json``, sealed (a checksum
    over its canonical JSON, verified on every read: it catches damage, not a forger; signatures do
    that). In a folder, every change is read, checked and written (atomically, durably) under the
    writers' lock (an flock on ``.lock``); under an ``s3://bucket/prefix`` URL a request is an object
    created only if absent and changed only if still at the ETag it was read at (a lost race is read
    again), :mod:`~handoff_files.inbox.request_objects`. Either way, of several agents accepting one
    request exactly one wins. Reads take no lock. Every record returned is a fresh copy.

    A damaged request file never disappears silently: reading it by id raises a :class:`HandoffError`
    naming it; a listing skips it, logs a warning once, and lists it in :attr:`problems`.

    :param directory: the inbox's folder (created, 0700, on the first write) or ``s3://bucket/prefix``.
    :param registry: the capability gate: an :class:`AgentRegistry` or the path of its file
        (read once, here). With one, a request with no ``to_agent`` is routed to a capable agent.
    :param clock: returns the current time as an aware datetime (default: the system's, in UTC);
        every process sharing the inbox must agree on it, as expiry is judged by it.
    :param lock_timeout: seconds a change waits for the lock.
    :param shared: group-shared mode, for agents running as different users in one group: what the
        inbox creates is 0770 with setgid (folders, so files take the folder's group) and 0660 (request
        files, ``.lock``), whatever the umask. It applies to what is created: an existing folder or
        ``.lock`` narrower than that is refused on the first write, naming it and the ``chmod`` to run.
        Default: private, 0700 and 0600; modes are never widened unasked.
    :param signing_key: the key this agent signs its requests and changes with (a key file's path or
        a ``SigningKey``; None: the configured one, if any; False: none; :mod:`.signatures`).
    :param allowed_signers: who is trusted (default: the user's ``allowed_signers``).
    :param require_signed: refuse a request not signed, or last changed, by a trusted key (an
        :class:`UntrustedSignerError`; a listing skips it into :attr:`problems`), and a change this
        agent cannot sign so, before anything is written.
    :raises CapabilityError: if the registry file cannot be read.
    :raises SigningKeyError: if the *signing_key* file cannot be used.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        registry: AgentRegistry | str | os.PathLike[str] | None = None,
        clock: Callable[[], dt.datetime] | None = None,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        shared: bool = False,
        signing_key: KeyChoice = None,
        allowed_signers: str | os.PathLike[str] | None = None,
        require_signed: bool = False,
    ) -> None:
        self._files = open_requests(
            directory,
            lock_timeout=lock_timeout,
            shared=shared,
            signing_key=signing_key,
            allowed_signers=None if allowed_signers is None else Path(allowed_signers),
            require_signed=require_signed,
            now=self.now,
        )
        self.registry = AgentRegistry.load(registry) if isinstance(registry, str | os.PathLike) else registry
        self._clock = clock or utc_now
        self._reported: set[tuple[str, str]] = set()
        #: The damaged request files the last listing skipped, one error each (naming the file).
        self.problems: tuple[HandoffError, ...] = ()

    def __repr__(self) -> str:
        return f"HandoffInbox({self.where!r})"

    @property
    def where(self) -> str:
        """The inbox as a person names it: its folder's path, or ``s3://bucket/prefix``."""
        return self._files.where

    @property
    def path(self) -> Path:
        """The inbox's folder (absolute). On object storage there is none: :attr:`where` names it."""
        return self._folder().path

    @property
    def requests_dir(self) -> Path:
        """``<path>/requests``, one file per request (a folder's only)."""
        return self._folder().requests_dir

    def _folder(self) -> RequestFiles:
        if not isinstance(self._files, RequestFiles):
            raise HandoffError(self.where, "on object storage: no folder (requests are objects under requests/)")
        return self._files

    # -- requesting ----------------------------------------------------------------------------

    def request_handoff(
        self,
        from_agent: str,
        to_agent: str | None = None,
        reason: str = "",
        *,
        descriptor: Descriptor | Mapping[str, Any] | str | bytes | None = None,
        priority: int = DEFAULT_PRIORITY,
        timeout: float | None = None,
        capabilities_required: Iterable[str] = (),
        metadata: Mapping[str, Any] | None = None,
    ) -> InboxRequest:
        """Put a PENDING request in the inbox for *to_agent* and return it.

        With a registry, a request with no *to_agent* is routed to a capable agent, and a request
        that fails the gate (``capabilities_required`` ⊆ capabilities(target) ∩ scope(source)) is
        refused before anything is written: the record returned is REJECTED with the reason and
        ``refused_by`` set to :data:`~handoff_files.inbox.request.CAPABILITY_GATE`, is not stored,
        and reaches no one.

        :param timeout: seconds the target has to accept (``expires_at`` = now + timeout); None: no limit.
        :param metadata: a JSON object, copied.
        :raises HandoffValidationError: for malformed input (ids, priority, timeout, metadata, a
            descriptor that does not parse, no *to_agent* and no registry), naming the inbox.
        :raises HandoffError: if the request cannot be written.
        """
        check_id(from_agent, "from_agent", self.where)
        if to_agent is not None:
            check_id(to_agent, "to_agent", self.where)
        record = InboxRequest(
            handoff_id=uuid.uuid4().hex,
            from_agent=from_agent,
            to_agent=to_agent,
            reason=check_text(reason, "reason", self.where),
            priority=check_priority(priority, self.where),
            capabilities_required=check_required(capabilities_required, self.where),
            descriptor=check_descriptor(descriptor, self.where),
            metadata=check_metadata(metadata, self.where),
            created_at=self.now(),
            status=HandoffStatus.PENDING,
        )
        limit = check_timeout(timeout, self.where)
        now = record.created_at
        to_agent, refused = self._gate(from_agent, to_agent, record.capabilities_required)
        expires_at = None if limit is None else now + dt.timedelta(seconds=limit)
        record = record.model_copy(update={"to_agent": to_agent, "expires_at": expires_at})
        if refused is not None:
            return record.model_copy(
                update={
                    "status": HandoffStatus.REJECTED,
                    "rejection_reason": f"refused by the capability gate: {refused}"[:MAX_REASON],
                    "rejected_at": now,
                    "refused_by": CAPABILITY_GATE,
                }
            )
        data = self._files.render(record, new=True)  # too large is refused before anything is created
        self.ensure()
        with self._files.changing():
            return self._files.write(record, data, new=True)

    def _gate(self, from_agent: str, to_agent: str | None, required: tuple[str, ...]) -> tuple[str | None, str | None]:
        """The target (routed, when none is named) and, if the capability gate refuses, why."""
        if self.registry is None:
            if to_agent is None:
                msg = "to_agent is required: this inbox has no agent registry to route requests by"
                raise HandoffValidationError(self.where, msg)
            return to_agent, None
        if to_agent is not None:
            return to_agent, self.registry.gate(from_agent, to_agent, required)
        routed = self.registry.route(from_agent, required)
        return routed, self.registry.no_route_reason(from_agent, required) if routed is None else None

    # -- transitions ---------------------------------------------------------------------------

    def accept_handoff(self, handoff_id: str) -> InboxRequest:
        """PENDING → ACCEPTED: claim the request (of racing acceptors, exactly one succeeds).

        :raises InvalidTransitionError: if it is not PENDING (the message names its status), or
            has expired (it is then recorded as EXPIRED).
        :raises UnknownRequestError: if no request has that id.
        """
        return self._transition(handoff_id, "accept", HandoffStatus.PENDING, {"status": HandoffStatus.ACCEPTED})

    def reject_handoff(self, handoff_id: str, reason: str) -> InboxRequest:
        """PENDING → REJECTED, with the reason the requester will read.

        :raises InvalidTransitionError, UnknownRequestError: as :meth:`accept_handoff`.
        :raises HandoffValidationError: if *reason* is empty, not a string, or too long.
        """
        if not check_text(reason, "reason", self.where).strip():
            msg = "a rejection needs a reason the requester can read"
            raise HandoffValidationError(self.where, msg)
        change = {"status": HandoffStatus.REJECTED, "rejection_reason": reason}
        return self._transition(handoff_id, "reject", HandoffStatus.PENDING, change)

    def complete_handoff(self, handoff_id: str) -> InboxRequest:
        """ACCEPTED → COMPLETED: the receiver has taken the work over.

        :raises InvalidTransitionError, UnknownRequestError: if it is not ACCEPTED (named), or unknown.
        """
        return self._transition(handoff_id, "complete", HandoffStatus.ACCEPTED, {"status": HandoffStatus.COMPLETED})

    def expire_overdue(self) -> list[InboxRequest]:
        """Record every PENDING request past its ``expires_at`` as EXPIRED; return those it changed.

        Optional: reads already say EXPIRED; this makes the files say so too (damaged ones skipped).
        """
        if not self._files.exists():
            return []
        self.ensure()
        changed = []
        with self._files.changing():
            now = self.now()
            for record, version in self._scan():
                seen = record.as_of(now)
                if seen.status is not record.status:
                    # on a bucket, a request another writer changed since the scan is theirs to record
                    with contextlib.suppress(*self._files.conflicts):
                        changed.append(self._files.write(seen, version=version))
        return changed

    def _transition(self, handoff_id: str, verb: str, allowed: HandoffStatus, change: dict[str, Any]) -> InboxRequest:
        checked = check_handoff_id(handoff_id, self.where)
        self.ensure()
        for _ in range(CHANGE_TRIES):
            with self._files.changing():
                current, version = self._files.read(checked)
                now = self.now()
                seen = current.as_of(now)
                try:
                    if seen.status is not current.status:
                        # the next writer to touch an overdue request records that it expired
                        self._files.write(seen, version=version)
                    if seen.status is not allowed:
                        raise InvalidTransitionError(self._files.file(checked), refusal(seen, verb, allowed, change))
                    new_status: HandoffStatus = change["status"]
                    updated = seen.model_copy(update={**change, f"{new_status.value.lower()}_at": now})
                    return self._files.write(updated, version=version)
                except self._files.conflicts:
                    continue  # another agent changed it since it was read (a bucket's 412): read it again
        msg = f"cannot {verb} handoff {checked}: other agents changed it {CHANGE_TRIES} times as it was read; try again"
        raise StorageConflictError(self._files.file(checked), msg)

    # -- reading -------------------------------------------------------------------------------

    def get_handoff_status(self, handoff_id: str) -> HandoffStatus | None:
        """The request's status (an overdue PENDING one reads EXPIRED), or None if no request has that id.

        :raises InvalidNameError: if *handoff_id* is not 32 lowercase hex digits.
        :raises HandoffError: if the request's file is damaged (naming the file).
        """
        record = self.get_handoff(handoff_id)
        return None if record is None else record.status

    def get_handoff(self, handoff_id: str) -> InboxRequest | None:
        """The whole request as it reads now, or None if no request has that id.

        :raises InvalidNameError, HandoffError: as :meth:`get_handoff_status`.
        """
        try:
            record, _ = self._files.read(check_handoff_id(handoff_id, self.where))
        except UnknownRequestError:
            return None
        return record.as_of(self.now())

    def require_handoff(self, handoff_id: str) -> InboxRequest:
        """The whole request as it reads now.

        :raises UnknownRequestError: if no request has that id.
        :raises InvalidNameError, HandoffError: as :meth:`get_handoff_status`.
        """
        record = self.get_handoff(handoff_id)
        if record is None:
            msg = f"no handoff request {handoff_id} in this inbox"
            raise UnknownRequestError(self.where, msg)
        return record

    def get_pending_handoffs(self, agent_id: str) -> list[InboxRequest]:
        """The PENDING, unexpired requests to *agent_id*, most urgent first (:func:`urgency`); see :attr:`problems`."""
        check_id(agent_id, "agent_id", self.where)
        return self.list_handoffs(to_agent=agent_id, status=HandoffStatus.PENDING)

    def list_handoffs(self, *, to_agent: str | None = None, status: HandoffStatus | None = None) -> list[InboxRequest]:
        """The readable requests (to *to_agent*, in *status*, if given), as they are now; see :attr:`problems`.

        Most urgent first, as they are served (:func:`urgency`): the lowest ``priority``, then the oldest.
        """
        now = self.now()
        seen = (record.as_of(now) for record, _ in self._scan())
        wanted = [r for r in seen if to_agent in (None, r.to_agent) and status in (None, r.status)]
        return sorted(wanted, key=urgency)

    # -- ids as people type them -----------------------------------------------------------------

    def resolve_id(self, prefix: str) -> str:
        """The full id of the one request whose id starts with *prefix* (git-style, at least 4 hex digits).

        A full id (32 digits) is returned as it is, as ``git rev-parse`` returns a full hash: the
        call that takes it says whether a request has it. A damaged request file still counts, so
        reading it says what is wrong with it.

        :raises InvalidNameError: if *prefix* is not 4 to 32 lowercase hex digits.
        :raises UnknownRequestError: if no request's id starts with *prefix*, or several do (the
            message names each, and asks for more digits).
        """
        return resolve(prefix, self._files.ids, self.where)

    def abbreviate_ids(self) -> dict[str, str]:
        """Every request's id → the shortest prefix no other request's shares, of 8 digits or more, for people.

        :meth:`resolve_id` takes each back, while no new request comes to share it.

        :raises HandoffError: if ``requests/`` exists but cannot be listed.
        """
        return shortest_prefixes(self._files.ids(), minimum=SHORT_ID)

    def _scan(self) -> list[tuple[InboxRequest, str | None]]:
        records, problems = self._files.scan()
        for problem in problems:
            if (problem.path, problem.reason) not in self._reported:
                self._reported.add((problem.path, problem.reason))
                logger.warning("handoff inbox: skipped %s request: %s", problem_kind(problem), problem)
        self.problems = tuple(problems)
        return records

    # -- the inbox itself ------------------------------------------------------------------------

    def ensure(self) -> None:
        """Create the inbox and ``requests/`` durably (0700, or shared 2770); clear dead writers' temps.

        :raises HandoffWriteError: if they cannot be created.
        :raises HandoffError: if shared and an existing folder is narrower (naming the ``chmod`` to run).
        """
        self._files.ensure()

    def now(self) -> dt.datetime:
        """The inbox's current time, by its clock, in UTC: what expiry is judged by.

        :raises HandoffValidationError: if the clock returns something other than an aware datetime.
        """
        now = self._clock()
        if not isinstance(now, dt.datetime) or now.utcoffset() is None:
            msg = f"the inbox's clock returned {now!r}, not an aware datetime"
            raise HandoffValidationError(self.where, msg)
        return now.astimezone(dt.UTC)

    def serve(self, agent_id: str, **options: Unpack[ServeOptions]) -> list[InboxRequest]:
        """Serve *agent_id*'s requests in this process until stopped; the keywords are :func:`.serve.serve`'s."""
        return serve(self, agent_id, **options)
