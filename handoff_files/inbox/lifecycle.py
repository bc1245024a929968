"""The handoff inbox: requests between agents, and their lifecycle (PENDING → ACCEPTED → COMPLETED, or not)."""

from __future__ import annotations

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
    InvalidNameError,
    InvalidTransitionError,
    UnknownRequestError,
)
from handoff_files.foundation.lock import DEFAULT_LOCK_TIMEOUT
from handoff_files.foundation.names import check_folder_path, check_id
from handoff_files.inbox.capabilities import AgentRegistry
from handoff_files.inbox.ids import MIN_PREFIX, SHORT_ID, is_id_prefix, matching, shortest_prefixes
from handoff_files.inbox.request import (
    CAPABILITY_GATE,
    DEFAULT_PRIORITY,
    MAX_REASON,
    InboxRequest,
    check_descriptor,
    check_metadata,
    check_priority,
    check_required,
    check_text,
    check_timeout,
    is_handoff_id,
    problem_kind,
    since,
    urgency,
)
from handoff_files.inbox.request_files import REQUESTS_DIR, RequestFiles
from handoff_files.inbox.serve import ServeOptions, serve
from handoff_files.inbox.status import HandoffStatus
from handoff_files.thread.signatures import KeySource
from handoff_files.transfers.descriptor import Descriptor

if TYPE_CHECKING:
    from handoff_files.thread.signatures import KeyChoice

# DEFAULT_PRIORITY, REQUESTS_DIR, InboxRequest and is_handoff_id live in request.py and request_files.py;
# they are re-exported here, where the inbox's callers have always found them
__all__ = ["DEFAULT_PRIORITY", "REQUESTS_DIR", "HandoffInbox", "InboxRequest", "is_handoff_id"]

logger = logging.getLogger(__name__)

_MAX_NAMED = 10  # an ambiguous prefix's error names this many candidates, then counts the rest


class HandoffInbox:
    """A shared inbox directory of handoff requests, safe for several processes.

    One human-readable JSON file per request, ``<directory>/requests/<handoff_id>.json``, sealed
    (a digest over its canonical JSON, verified on every read, made afresh on every write: a
    checksum that catches damage, not a signature, as anyone who may write the inbox can recompute
    it; a file from before request files were sealed is read unverified, with a warning); every
    change is read, checked and written (atomically and durably) under the writers' lock (an flock) on
    ``<directory>/.lock``, so of several processes accepting one request exactly one wins. Reads
    take no lock. Every record returned is a fresh copy.

    A damaged request file (torn, edited into invalid JSON) never disappears silently: reading
    it by id raises a :class:`HandoffError` naming the file; a listing skips it, logs a warning
    once, and lists it in :attr:`problems`, so one bad file does not stop the others being served.

    :param directory: the inbox (created, 0700, on the first write).
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
        check_folder_path(directory, "the inbox")
        self.path = Path(directory).absolute()
        self._files = RequestFiles(
            self.path,
            lock_timeout=lock_timeout,
            shared=shared,
            key=KeySource(signing_key, self.path),
            allowed_signers=None if allowed_signers is None else Path(allowed_signers),
            require_signed=require_signed,
            now=self.now,
        )
        self.requests_dir = self._files.requests_dir
        self.registry = AgentRegistry.load(registry) if isinstance(registry, str | os.PathLike) else registry
        self._clock = clock or utc_now
        self._reported: set[tuple[str, str]] = set()
        #: The damaged request files the last listing skipped, one error each (naming the file).
        self.problems: tuple[HandoffError, ...] = ()

    def __repr__(self) -> str:
        return f"HandoffInbox({os.fspath(self.path)!r})"

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
        check_id(from_agent, "from_agent", self.path)
        if to_agent is not None:
            check_id(to_agent, "to_agent", self.path)
        record = InboxRequest(
            handoff_id=uuid.uuid4().hex,
            from_agent=from_agent,
            to_agent=to_agent,
            reason=check_text(reason, "reason", self.path),
            priority=check_priority(priority, self.path),
            capabilities_required=check_required(capabilities_required, self.path),
            descriptor=check_descriptor(descriptor, self.path),
            metadata=check_metadata(metadata, self.path),
            created_at=self.now(),
            status=HandoffStatus.PENDING,
        )
        limit = check_timeout(timeout, self.path)
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
        with self._files.lock.held():
            return self._files.write(record, data)

    def _gate(self, from_agent: str, to_agent: str | None, required: tuple[str, ...]) -> tuple[str | None, str | None]:
        """The target (routed, when none is named) and, if the capability gate refuses, why."""
        if self.registry is None:
            if to_agent is None:
                msg = "to_agent is required: this inbox has no agent registry to route requests by"
                raise HandoffValidationError(self.path, msg)
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
        if not check_text(reason, "reason", self.path).strip():
            msg = "a rejection needs a reason the requester can read"
            raise HandoffValidationError(self.path, msg)
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
        if not self.requests_dir.is_dir():
            return []
        self.ensure()
        changed = []
        with self._files.lock.held():
            now = self.now()
            for record in self._scan():
                seen = record.as_of(now)
                if seen.status is not record.status:
                    changed.append(self._files.write(seen))
        return changed

    def _transition(self, handoff_id: str, verb: str, allowed: HandoffStatus, change: dict[str, Any]) -> InboxRequest:
        path = self._files.file(self._check_handoff_id(handoff_id))
        self.ensure()
        with self._files.lock.held():
            current = self._files.read(path)
            now = self.now()
            seen = current.as_of(now)
            if seen.status is not current.status:
                # the next writer to touch an overdue request records that it expired
                self._files.write(seen)
            if seen.status is not allowed:
                needed = f"{'an' if allowed.value[0] in 'AEIOU' else 'a'} {allowed.value}"
                msg = (
                    f"cannot {verb} handoff {handoff_id}: it is {seen.status.value}{since(seen)}, not in "
                    f"{allowed.value} status; only {needed} request can become {change['status'].value}"
                )
                raise InvalidTransitionError(path, msg)
            new_status: HandoffStatus = change["status"]
            updated = seen.model_copy(update={**change, f"{new_status.value.lower()}_at": now})
            return self._files.write(updated)

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
        path = self._files.file(self._check_handoff_id(handoff_id))
        try:
            record = self._files.read(path)
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
            raise UnknownRequestError(self.path, msg)
        return record

    def get_pending_handoffs(self, agent_id: str) -> list[InboxRequest]:
        """The PENDING, unexpired requests to *agent_id*, most urgent first (:func:`urgency`); see :attr:`problems`."""
        check_id(agent_id, "agent_id", self.path)
        return self.list_handoffs(to_agent=agent_id, status=HandoffStatus.PENDING)

    def list_handoffs(self, *, to_agent: str | None = None, status: HandoffStatus | None = None) -> list[InboxRequest]:
        """The readable requests (to *to_agent*, in *status*, if given), as they are now; see :attr:`problems`.

        Most urgent first, as they are served (:func:`urgency`): the lowest ``priority``, then the oldest.
        """
        now = self.now()
        seen = (record.as_of(now) for record in self._scan())
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
        if not is_id_prefix(prefix):
            msg = (
                f"handoff id {str(prefix)[:80]!r} is not an id this inbox makes, nor the start of one "
                f"({MIN_PREFIX} to 32 lowercase hex digits)"
            )
            raise InvalidNameError(self.path, msg)
        if is_handoff_id(prefix):
            return prefix
        found = matching(prefix, self._files.ids())
        if not found:
            msg = f"no handoff request in this inbox has an id starting with {prefix}"
            raise UnknownRequestError(self.path, msg)
        if len(found) > 1:
            more = f" and {len(found) - _MAX_NAMED} more" if len(found) > _MAX_NAMED else ""
            named = f"{', '.join(found[:_MAX_NAMED])}{more}"
            msg = f"handoff id {prefix} is ambiguous: {len(found)} requests start with it ({named}); give more digits"
            raise UnknownRequestError(self.path, msg)
        return found[0]

    def abbreviate_ids(self) -> dict[str, str]:
        """Every request's id → the shortest prefix no other request's shares, of 8 digits or more, for people.

        :meth:`resolve_id` takes each back, while no new request comes to share it.

        :raises HandoffError: if ``requests/`` exists but cannot be listed.
        """
        return shortest_prefixes(self._files.ids(), minimum=SHORT_ID)

    def _scan(self) -> list[InboxRequest]:
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
            raise HandoffValidationError(self.path, msg)
        return now.astimezone(dt.UTC)

    def _check_handoff_id(self, handoff_id: object) -> str:
        if not is_handoff_id(handoff_id):
            msg = f"handoff id {str(handoff_id)[:80]!r} is not one this inbox makes (32 lowercase hex digits)"
            raise InvalidNameError(self.path, msg)
        return str(handoff_id)

    def serve(self, agent_id: str, **options: Unpack[ServeOptions]) -> list[InboxRequest]:
        """Serve *agent_id*'s requests in this process until stopped; the keywords are :func:`.serve.serve`'s."""
        return serve(self, agent_id, **options)
