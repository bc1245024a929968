"""The handoff inbox: requests between agents as files under a lock, their lifecycle, and the receiving side."""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any, Final

import pydantic
from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, StringConstraints

from handoff_files.atomic import fsync_dir, read_bytes, write_durable
from handoff_files.blobs import BlobStore, sha256_hex
from handoff_files.capabilities import CAPABILITY_PATTERN, AgentRegistry, check_capabilities
from handoff_files.codec import detect_format, parse, render
from handoff_files.compat.sw4rm import HandoffResponse, HandoffStatus
from handoff_files.descriptor import Descriptor, parse_descriptor
from handoff_files.errors import (
    BlobError,
    BlobIntegrityError,
    HandoffError,
    HandoffNotFoundError,
    HandoffParseError,
    HandoffValidationError,
    HandoffWriteError,
    InvalidNameError,
    InvalidTransitionError,
    TransferRefusedError,
    UnknownRequestError,
)
from handoff_files.loader import decode, describe
from handoff_files.lock import DEFAULT_LOCK_TIMEOUT, WriterLock
from handoff_files.model import MAX_INT, MIN_INT, Id
from handoff_files.names import check_id
from handoff_files.results import SaveReceipt
from handoff_files.store import HandoffStore
from handoff_files.transfer import AdoptResult, adopt_checkpoint

__all__ = [
    "DEFAULT_PRIORITY",
    "DEFAULT_SERVE_RESCAN",
    "REQUESTS_DIR",
    "HandoffInbox",
    "InboxRequest",
    "request_handoff_with_fallback",
    "thread_id_for",
]

DEFAULT_PRIORITY: Final = 5
#: Seconds between rescans of the inbox while serving, when no file event comes.
DEFAULT_SERVE_RESCAN: Final = 2.0
#: The folder, inside the inbox, holding one ``<handoff_id>.json`` per request.
REQUESTS_DIR: Final = "requests"
#: A request file is small (the context travels as a descriptor): past this it is refused unread.
MAX_REQUEST_BYTES: Final = 1024 * 1024
MAX_REASON: Final = 2000
#: The longest timeout a request may carry (about 31 years): beyond it, ``None`` says "no limit".
MAX_TIMEOUT: Final = 1e9

_HANDOFF_ID: Final = r"^[0-9a-f]{32}$"
_REQUEST_FILE: Final = re.compile(r"^([0-9a-f]{32})\.json$")
# write_durable's temp files for our request files: `.<name>.<8 random chars>.tmp`
_REQUEST_TEMP: Final = re.compile(r"^\.[0-9a-f]{32}\.json\.[a-z0-9_]{8}\.tmp$")
_STOP_POLL: Final = 0.1  # how often a waiting serve() looks at its stop event
_SETTLED: Final = (HandoffStatus.ACCEPTED, HandoffStatus.COMPLETED)

logger = logging.getLogger(__name__)

Clock = Callable[[], dt.datetime]
OnRequest = Callable[["InboxRequest"], bool | str]
OnReceived = Callable[["InboxRequest", AdoptResult | None], None]


class InboxRequest(BaseModel):
    """One handoff request as the inbox holds it (a frozen copy: changing the inbox never changes it).

    ``priority``: lower is more urgent. ``descriptor``: the sealed checkpoint the receiver adopts
    (the context travels as a descriptor, never as inline bytes), or None. ``expires_at``: the
    request can no longer be accepted from then on (None: no limit).
    """

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    handoff_id: Annotated[str, StringConstraints(pattern=_HANDOFF_ID)]
    from_agent: Id
    to_agent: Id | None
    reason: Annotated[str, StringConstraints(max_length=MAX_REASON)]
    priority: Annotated[int, Field(ge=MIN_INT, le=MAX_INT)] = DEFAULT_PRIORITY
    capabilities_required: tuple[Annotated[str, StringConstraints(pattern=CAPABILITY_PATTERN)], ...] = ()
    descriptor: Descriptor | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: AwareDatetime
    expires_at: AwareDatetime | None = None
    status: HandoffStatus
    rejection_reason: Annotated[str, StringConstraints(max_length=MAX_REASON)] | None = None
    accepted_at: AwareDatetime | None = None
    rejected_at: AwareDatetime | None = None
    completed_at: AwareDatetime | None = None

    def to_response(self) -> HandoffResponse:
        """The request's state as SW4RM's :class:`~handoff_files.compat.sw4rm.HandoffResponse`."""
        accepted = self.status in _SETTLED
        return HandoffResponse(accepted, self.handoff_id, self.rejection_reason, self.status, dict(self.metadata))

    def as_of(self, now: dt.datetime) -> InboxRequest:
        """This request as it reads at *now*: a PENDING request past ``expires_at`` reads as EXPIRED."""
        if self.status is HandoffStatus.PENDING and self.expires_at is not None and now >= self.expires_at:
            return self.model_copy(update={"status": HandoffStatus.EXPIRED})
        return self


def thread_id_for(request: InboxRequest | str) -> str:
    """The id of the thread a request's checkpoint is adopted into: ``handoff-<handoff_id>`` (one per request)."""
    handoff_id = request if isinstance(request, str) else request.handoff_id
    return f"handoff-{handoff_id}"


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class HandoffInbox:
    """A shared inbox directory of handoff requests, safe for several processes.

    One human-readable JSON file per request, ``<directory>/requests/<handoff_id>.json``; every
    change is read, checked and written (atomically and durably) under the filelock on
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
    :raises CapabilityError: if the registry file cannot be read.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        registry: AgentRegistry | str | os.PathLike[str] | None = None,
        clock: Clock | None = None,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
    ) -> None:
        self.path = Path(directory).absolute()
        self.requests_dir = self.path / REQUESTS_DIR
        self.registry = (
            registry if registry is None or isinstance(registry, AgentRegistry) else AgentRegistry.load(registry)
        )
        self._clock = clock or _utc_now
        self._lock = WriterLock(self.path, timeout=lock_timeout)
        self._ready = False
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
        refused before anything is written: the record returned is REJECTED with the reason, is
        not stored, and reaches no one.

        :param timeout: seconds the target has to accept (``expires_at`` = now + timeout); None: no limit.
        :param metadata: a JSON object, copied.
        :raises HandoffValidationError: for malformed input (ids, priority, timeout, metadata, a
            descriptor that does not parse, no *to_agent* and no registry), naming the inbox.
        :raises HandoffError: if the request cannot be written.
        """
        check_id(from_agent, "from_agent", self.path)
        if to_agent is not None:
            check_id(to_agent, "to_agent", self.path)
        required = self._capabilities(capabilities_required)
        record = InboxRequest(
            handoff_id=uuid.uuid4().hex,
            from_agent=from_agent,
            to_agent=to_agent,
            reason=self._text(reason, "reason"),
            priority=self._priority(priority),
            capabilities_required=required,
            descriptor=self._descriptor(descriptor),
            metadata=self._metadata(metadata),
            created_at=self.now(),
            status=HandoffStatus.PENDING,
        )
        limit = _check_timeout(timeout, self.path)
        now = record.created_at
        refused = None
        if self.registry is not None:
            if to_agent is None:
                to_agent = self.registry.route(from_agent, required)
                if to_agent is None:
                    refused = self.registry.no_route_reason(from_agent, required)
            else:
                refused = self.registry.gate(from_agent, to_agent, required)
        elif to_agent is None:
            msg = "to_agent is required: this inbox has no agent registry to route requests by"
            raise HandoffValidationError(self.path, msg)
        expires_at = None if limit is None else now + dt.timedelta(seconds=limit)
        record = record.model_copy(update={"to_agent": to_agent, "expires_at": expires_at})
        if refused is not None:
            return record.model_copy(
                update={
                    "status": HandoffStatus.REJECTED,
                    "rejection_reason": f"refused by the capability gate: {refused}"[:MAX_REASON],
                    "rejected_at": now,
                }
            )
        data = self._render(record)
        self._ensure()
        with self._lock.held():
            write_durable(self._file(record.handoff_id), data)
        return record

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
        text = self._text(reason, "reason")
        if not text.strip():
            msg = "a rejection needs a reason the requester can read"
            raise HandoffValidationError(self.path, msg)
        change = {"status": HandoffStatus.REJECTED, "rejection_reason": text}
        return self._transition(handoff_id, "reject", HandoffStatus.PENDING, change)

    def complete_handoff(self, handoff_id: str) -> InboxRequest:
        """ACCEPTED → COMPLETED: the receiver has taken the work over.

        :raises InvalidTransitionError: if it is not ACCEPTED (the message names its status).
        :raises UnknownRequestError: if no request has that id.
        """
        return self._transition(handoff_id, "complete", HandoffStatus.ACCEPTED, {"status": HandoffStatus.COMPLETED})

    def expire_overdue(self) -> list[InboxRequest]:
        """Record every PENDING request past its ``expires_at`` as EXPIRED; return those it changed.

        Optional: an overdue request already reads as EXPIRED and cannot be accepted; this makes
        the files say so too. Damaged files are skipped (see :attr:`problems`).
        """
        if not self.requests_dir.is_dir():
            return []
        self._ensure()
        changed = []
        with self._lock.held():
            now = self.now()
            for record in self._scan():
                seen = record.as_of(now)
                if seen.status is not record.status:
                    write_durable(self._file(seen.handoff_id), self._render(seen))
                    changed.append(seen)
        return changed

    def _transition(self, handoff_id: str, verb: str, allowed: HandoffStatus, change: dict[str, Any]) -> InboxRequest:
        path = self._file(self._check_handoff_id(handoff_id))
        self._ensure()
        with self._lock.held():
            current = self._read(path)
            now = self.now()
            seen = current.as_of(now)
            if seen.status is not current.status:
                # the next writer to touch an overdue request records that it expired
                write_durable(path, self._render(seen))
            if seen.status is not allowed:
                msg = (
                    f"cannot {verb} handoff {handoff_id}: it is {seen.status.value}{_since(seen)}; "
                    f"only a {allowed.value} request can become {change['status'].value}"
                )
                raise InvalidTransitionError(path, msg)
            new_status: HandoffStatus = change["status"]
            updated = seen.model_copy(update={**change, f"{new_status.value.lower()}_at": now})
            write_durable(path, self._render(updated))
            return updated

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
        path = self._file(self._check_handoff_id(handoff_id))
        try:
            record = self._read(path)
        except UnknownRequestError:
            return None
        return record.as_of(self.now())

    def get_pending_handoffs(self, agent_id: str) -> list[InboxRequest]:
        """The PENDING, unexpired requests addressed to *agent_id*: most urgent (lowest priority) first, then oldest.

        Damaged files are skipped and reported (see :attr:`problems`).
        """
        check_id(agent_id, "agent_id", self.path)
        now = self.now()
        pending = [
            seen
            for seen in (record.as_of(now) for record in self._scan())
            if seen.to_agent == agent_id and seen.status is HandoffStatus.PENDING
        ]
        return sorted(pending, key=_urgency)

    def list_handoffs(self) -> list[InboxRequest]:
        """Every readable request, as it reads now, oldest first (damaged files: see :attr:`problems`)."""
        now = self.now()
        return sorted((record.as_of(now) for record in self._scan()), key=lambda r: (r.created_at, r.handoff_id))

    def _scan(self) -> list[InboxRequest]:
        try:
            names = sorted(os.listdir(self.requests_dir))
        except FileNotFoundError:
            self.problems = ()
            return []
        except OSError as exc:
            msg = f"cannot list the inbox: {exc.strerror or exc}"
            raise HandoffError(self.requests_dir, msg) from exc
        records, problems = [], []
        for name in names:
            if not _REQUEST_FILE.match(name):
                continue  # temp files of writers in flight, and anything that is not ours
            try:
                records.append(self._read(self.requests_dir / name))
            except UnknownRequestError:
                continue  # removed by hand since the listing
            except HandoffError as exc:
                problems.append(exc)
                if (exc.path, exc.reason) not in self._reported:
                    self._reported.add((exc.path, exc.reason))
                    logger.warning("handoff inbox: skipped a damaged request: %s", exc)
        self.problems = tuple(problems)
        return records

    def _read(self, path: Path) -> InboxRequest:
        try:
            data, _ = read_bytes(path, MAX_REQUEST_BYTES, follow_symlinks=False)
        except HandoffNotFoundError as exc:
            msg = f"no handoff request {path.stem} in this inbox"
            raise UnknownRequestError(path, msg) from exc
        if detect_format(data) != "json":
            msg = "not a JSON object, as every request file is (torn, emptied or overwritten?); fix or remove the file"
            raise HandoffParseError(path, msg)
        parse(data, path)  # strict first: duplicate keys, NaN and the like are damage, not taken as read
        try:
            record = InboxRequest.model_validate_json(data)
        except pydantic.ValidationError as exc:
            msg = f"not a valid handoff request: {describe(exc)}; fix or remove the file"
            raise HandoffValidationError(path, msg) from exc
        if record.handoff_id != path.stem:
            msg = f"holds request {record.handoff_id}, not the {path.stem} its name says; fix or remove the file"
            raise HandoffValidationError(path, msg)
        return record

    # -- writing -------------------------------------------------------------------------------

    def _ensure(self) -> None:
        """Create the inbox and its requests folder (0700, durably); once per inbox, clear dead writers' temps."""
        if self._ready:
            return
        try:
            if self.requests_dir.is_symlink():
                msg = "is a symbolic link; an inbox's files are never written outside it"
                raise HandoffError(self.requests_dir, msg)
            for directory in (self.path, self.requests_dir):
                if not directory.is_dir():
                    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
                    # fsync the parent: a new folder is not durable until its entry is
                    fsync_dir(directory.parent)
            with self._lock.held():
                # a writer SIGKILLed between its temp file and the rename leaves the temp: ours to clear
                for name in os.listdir(self.requests_dir):
                    if _REQUEST_TEMP.match(name):
                        (self.requests_dir / name).unlink(missing_ok=True)
        except OSError as exc:
            msg = f"cannot create or tidy the inbox: {exc.strerror or exc}"
            raise HandoffWriteError(self.path, msg) from exc
        self._ready = True

    def _render(self, record: InboxRequest) -> bytes:
        data = render(record.model_dump(mode="json"), "json")
        if len(data) > MAX_REQUEST_BYTES:
            msg = (
                f"the request would be {len(data):,} bytes, over the {MAX_REQUEST_BYTES:,}-byte limit; "
                "pass the context as a descriptor, and keep metadata small"
            )
            raise HandoffValidationError(self.path, msg)
        return data

    def _file(self, handoff_id: str) -> Path:
        return self.requests_dir / f"{handoff_id}.json"

    # -- input checks --------------------------------------------------------------------------

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
        if not isinstance(handoff_id, str) or not re.fullmatch(_HANDOFF_ID, handoff_id):
            msg = f"handoff id {str(handoff_id)[:80]!r} is not one this inbox makes (32 lowercase hex digits)"
            raise InvalidNameError(self.path, msg)
        return handoff_id

    def _text(self, value: object, what: str) -> str:
        if not isinstance(value, str) or len(value) > MAX_REASON:
            found = f"{len(value):,} characters" if isinstance(value, str) else type(value).__name__
            msg = f"{what} must be a string of at most {MAX_REASON:,} characters, not {found}"
            raise HandoffValidationError(self.path, msg)
        return value

    def _priority(self, priority: object) -> int:
        if type(priority) is not int or not MIN_INT <= priority <= MAX_INT:
            msg = f"priority must be an integer (lower is more urgent; default {DEFAULT_PRIORITY}), not {priority!r}"
            raise HandoffValidationError(self.path, msg)
        return priority

    def _capabilities(self, values: Iterable[str]) -> tuple[str, ...]:
        if isinstance(values, str | bytes) or not isinstance(values, Iterable):
            msg = f"capabilities_required must be a list of capability names, not {type(values).__name__}"
            raise HandoffValidationError(self.path, msg)
        try:
            return check_capabilities(list(values), "capabilities_required", self.path)
        except HandoffError as exc:
            raise HandoffValidationError(self.path, exc.reason) from exc

    def _descriptor(self, descriptor: Descriptor | Mapping[str, Any] | str | bytes | None) -> Descriptor | None:
        if descriptor is None:
            return None
        try:
            return parse_descriptor(descriptor)
        except HandoffError as exc:
            raise HandoffValidationError(self.path, exc.reason) from exc

    def _metadata(self, metadata: Mapping[str, Any] | None) -> dict[str, Any]:
        if metadata is None:
            return {}
        try:
            copied = json.loads(json.dumps(metadata, allow_nan=False)) if isinstance(metadata, Mapping) else None
        except (TypeError, ValueError, RecursionError) as exc:
            msg = f"metadata must be a JSON object: {exc}"
            raise HandoffValidationError(self.path, msg) from exc
        # json.dumps turns 1 into "1" and a tuple into a list: the copy must equal what was given
        if not isinstance(copied, dict) or copied != metadata:
            msg = "metadata must be a JSON object (string keys; strings, numbers, booleans, null, lists, objects)"
            raise HandoffValidationError(self.path, msg)
        return copied

    # -- the receiving side --------------------------------------------------------------------

    def serve(
        self,
        agent_id: str,
        *,
        on_handoff_request: OnRequest,
        on_handoff_received: OnReceived,
        blobs: BlobStore,
        threads_dir: str | os.PathLike[str],
        stop: threading.Event | None = None,
        rescan: float = DEFAULT_SERVE_RESCAN,
        max_requests: int | None = None,
    ) -> list[InboxRequest]:
        """Serve *agent_id*'s requests in this process until *stop* is set (or *max_requests* are settled).

        Watches ``requests/`` (watchdog; a rescan every *rescan* seconds is the net for dropped
        events) and takes the requests addressed to *agent_id* most urgent first. For each:

        1. ``on_handoff_request(request)`` decides: True accepts; a string (or False) rejects with
           that reason. A hook that raises rejects with the exception's text.
        2. On acceptance the checkpoint is verified without writing anything (blob fetched,
           sha256 and seal checked, target thread free); a failure rejects with the reason.
        3. ``accept_handoff`` claims the request. If another server won it, it is skipped quietly.
        4. The checkpoint is adopted into ``threads_dir/handoff-<handoff_id>`` (:func:`thread_id_for`).
        5. ``on_handoff_received(request, result)`` gets the ACCEPTED request and the
           :class:`AdoptResult` (None for a request without a descriptor).
        6. ``complete_handoff`` marks it COMPLETED.

        A crash before 3 leaves the request PENDING: a restarted serve() asks the hook again.
        A crash after 3 leaves it ACCEPTED: a restarted serve() resumes the ACCEPTED requests
        addressed to it first, adopting the checkpoint if its thread holds nothing yet (or
        taking the thread a crashed adoption committed), then repeats 5 and 6, so
        ``on_handoff_received`` runs at least once, possibly twice, for a request. If adoption
        or ``on_handoff_received`` fails, the error is logged and the request stays ACCEPTED
        until a later serve() resumes it.

        :param blobs: where descriptors' checkpoints are fetched from.
        :param threads_dir: the folder adopted threads are written into.
        :param stop: set it (from another thread, or a hook) to return after the current request.
        :returns: the requests this call settled (REJECTED or COMPLETED), in order.
        :raises HandoffValidationError: for a bad *agent_id*, *rescan* or *max_requests*.
        :raises HandoffError: if the inbox cannot be created, listed or watched.
        """
        from handoff_files.watch import watch_directory  # noqa: PLC0415 -- watchdog only for a serving agent

        check_id(agent_id, "agent_id", self.path)
        if max_requests is not None and (type(max_requests) is not int or max_requests < 1):
            msg = f"max_requests must be None or a positive integer, not {max_requests!r}"
            raise HandoffValidationError(self.path, msg)
        server = _Server(
            self,
            agent_id,
            on_request=on_handoff_request,
            on_received=on_handoff_received,
            blobs=blobs,
            threads=Path(threads_dir).absolute(),
        )
        stop = stop if stop is not None else threading.Event()
        wake = threading.Event()
        self._ensure()
        with watch_directory(self.requests_dir, wake.set, rescan=rescan, wanted=_is_request_file):
            # the watch exists before the first scan: a request written in between is both scanned and hinted
            while not stop.is_set():
                wake.clear()
                while not stop.is_set() and (max_requests is None or len(server.settled) < max_requests):
                    request = server.next_request()
                    if request is None:
                        break
                    server.handle(request)
                if max_requests is not None and len(server.settled) >= max_requests:
                    break
                while not wake.wait(_STOP_POLL) and not stop.is_set():
                    pass
        return server.settled


def _check_timeout(timeout: object, where: Path) -> float | None:
    if timeout is None:
        return None
    # `not 0 < t`: NaN is refused too; a bool is not a number of seconds
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout <= MAX_TIMEOUT:
        msg = f"timeout must be None or seconds, more than 0 and at most {MAX_TIMEOUT:g}, not {timeout!r}"
        raise HandoffValidationError(where, msg)
    return float(timeout)


def _is_request_file(name: str) -> bool:
    return _REQUEST_FILE.match(name) is not None


def _since(record: InboxRequest) -> str:
    at = {
        HandoffStatus.ACCEPTED: record.accepted_at,
        HandoffStatus.REJECTED: record.rejected_at,
        HandoffStatus.COMPLETED: record.completed_at,
        HandoffStatus.EXPIRED: record.expires_at,
    }.get(record.status)
    return "" if at is None else f" (since {at.isoformat(timespec='seconds')})"


def _urgency(record: InboxRequest) -> tuple[int, dt.datetime, str]:
    return (record.priority, record.created_at, record.handoff_id)


class _Server:
    """One serve() call's state: the hooks, and the requests it has tried (each at most once per call)."""

    def __init__(
        self,
        inbox: HandoffInbox,
        agent_id: str,
        *,
        on_request: OnRequest,
        on_received: OnReceived,
        blobs: BlobStore,
        threads: Path,
    ) -> None:
        self.inbox = inbox
        self.agent_id = agent_id
        self.on_request = on_request
        self.on_received = on_received
        self.blobs = blobs
        self.threads = threads
        self.tried: set[str] = set()
        self.settled: list[InboxRequest] = []

    def next_request(self) -> InboxRequest | None:
        """ACCEPTED requests left by a crashed serve() first, then the most urgent PENDING one."""
        mine = [
            record
            for record in self.inbox.list_handoffs()
            if record.to_agent == self.agent_id
            and record.handoff_id not in self.tried
            and record.status in (HandoffStatus.ACCEPTED, HandoffStatus.PENDING)
        ]
        if not mine:
            return None
        return min(mine, key=lambda r: (r.status is not HandoffStatus.ACCEPTED, *_urgency(r)))

    def handle(self, request: InboxRequest) -> None:
        self.tried.add(request.handoff_id)
        target = self.threads / thread_id_for(request)
        try:
            if request.status is HandoffStatus.PENDING:
                claimed = self._decide(request, target)
                if claimed is None:
                    return
                request = claimed
            result = self._adopt(request, target)
            try:
                self.on_received(request, result)
            except Exception:
                logger.exception("serving %s: on_handoff_received raised for %s", self.agent_id, request.handoff_id)
                return
            self.settled.append(self.inbox.complete_handoff(request.handoff_id))
        except HandoffError as exc:
            # left as it is (ACCEPTED, most often): a later serve() resumes it
            status = request.status.value
            logger.error("serving %s: handoff %s left %s: %s", self.agent_id, request.handoff_id, status, exc)  # noqa: TRY400 -- the error says it all; a traceback adds nothing

    def _decide(self, request: InboxRequest, target: Path) -> InboxRequest | None:
        """Ask the hook, verify, and claim: the ACCEPTED request, or None if rejected or lost."""
        refusal = self._ask(request)
        if refusal is None:
            try:
                _verify(request, self.blobs, target, self.agent_id)
            except HandoffError as exc:
                refusal = f"the checkpoint did not verify: {exc}"
        try:
            if refusal is not None:
                self.settled.append(self.inbox.reject_handoff(request.handoff_id, refusal[:MAX_REASON]))
                return None
            return self.inbox.accept_handoff(request.handoff_id)
        except InvalidTransitionError as exc:
            # another server settled it first, or it expired meanwhile: not ours any more
            logger.info("serving %s: %s", self.agent_id, exc)
            return None

    def _ask(self, request: InboxRequest) -> str | None:
        """The hook's answer: None to accept, else the reason to reject with."""
        try:
            answer = self.on_request(request)
        except Exception as exc:
            return f"{self.agent_id}'s on_handoff_request raised {type(exc).__name__}: {exc}"
        if answer is True:
            return None
        if isinstance(answer, str) and answer.strip():
            return answer
        if answer is False or isinstance(answer, str):
            return f"declined by {self.agent_id}"
        return f"{self.agent_id}'s on_handoff_request returned {type(answer).__name__}, not True or a reason"

    def _adopt(self, request: InboxRequest, target: Path) -> AdoptResult | None:
        descriptor = request.descriptor
        if descriptor is None:
            return None
        store = HandoffStore(target, agent_id=self.agent_id)
        if not store.holdings():
            return adopt_checkpoint(descriptor, target, blobs=self.blobs, agent_id=self.agent_id)
        # resumed: a crashed serve() got as far as committing the adoption (the thread is named
        # after this request, and step 2 refused a target already in use, so it is ours)
        restored = store.restore()
        lineage = restored.handoff.lineage.adopted_from
        if restored.generation == 1 and (lineage is None or lineage.blob_sha256 != descriptor.blob_sha256):
            msg = f"holds a thread not adopted from handoff {request.handoff_id}'s checkpoint; move it aside"
            raise TransferRefusedError(target, msg)
        handoff = restored.handoff
        receipt = SaveReceipt(restored.generation, str(handoff.seal), restored.path, handoff.created_at)
        return AdoptResult(
            descriptor.source, handoff.thread_id, descriptor.checkpoint_id, descriptor.blob_id, True, receipt
        )


def _verify(request: InboxRequest, blobs: BlobStore, target: Path, agent_id: str) -> None:
    """Check a request's checkpoint as adoption will, writing nothing.

    (Private until ``transfer.verify_checkpoint`` exists: adopt_checkpoint runs the same checks.)
    """
    descriptor = request.descriptor
    if descriptor is None:
        return
    if descriptor.to_agent not in (None, agent_id):
        msg = f"the descriptor is addressed to {descriptor.to_agent}, not {agent_id}"
        raise TransferRefusedError(target, msg)
    held = HandoffStore(target).holdings()
    if held:
        msg = f"the target thread already holds {', '.join(held)}; nothing is adopted over it"
        raise TransferRefusedError(target, msg)
    where = f"blob {descriptor.blob_id}"
    try:
        data = blobs.get(descriptor.blob_id)
    except HandoffError:
        raise
    except Exception as exc:  # a blob store of the caller's own: whatever it raises, it is not "empty"
        msg = f"the blob store failed to return it: {type(exc).__name__}: {exc}"
        raise BlobError(where, msg) from exc
    actual = sha256_hex(bytes(data))
    if actual != descriptor.blob_sha256:
        msg = f"sha256 is {actual}, but the descriptor says {descriptor.blob_sha256}"
        raise BlobIntegrityError(where, msg)
    handoff = decode(bytes(data), where)
    named = (handoff.agent_id, handoff.thread_id, handoff.generation, str(handoff.seal))
    expected = (descriptor.agent_id, descriptor.thread_id, descriptor.generation, descriptor.checkpoint_id)
    if named != expected:
        found = f"{handoff.thread_id}:{handoff.generation} sealed {handoff.seal}"
        msg = (
            f"holds {found}, not the checkpoint the descriptor names ({descriptor.source}, {descriptor.checkpoint_id})"
        )
        raise BlobIntegrityError(where, msg)


# -- the requesting side: fallback -----------------------------------------------------------


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
    e.g. ``"beta: rejected: busy; gamma: expired after 2 s; delta: refused by the capability gate: …"``.

    :param kwargs: passed to :meth:`HandoffInbox.request_handoff` (priority, capabilities_required, metadata, timeout).
    :returns: the ACCEPTED (or already COMPLETED) request, or the REJECTED summary.
    :raises HandoffValidationError: for no agents, or a bad *wait* or *poll*; as request_handoff does.
    """
    agents = [preferred_agents] if isinstance(preferred_agents, str) else list(preferred_agents)
    if not agents or not wait > 0 or not poll > 0:
        msg = f"need at least one agent, and wait and poll more than 0 s (got {agents!r}, {wait!r}, {poll!r})"
        raise HandoffValidationError(inbox.path, msg)
    timeout = _check_timeout(kwargs.pop("timeout", None), inbox.path)
    limit = wait if timeout is None else min(timeout, wait)
    reasons: list[str] = []
    for agent in agents:
        record = inbox.request_handoff(from_agent, agent, reason, descriptor=descriptor, timeout=limit, **kwargs)
        if record.status is HandoffStatus.PENDING:
            record = _await_answer(inbox, record, limit, poll)
        if record.status in _SETTLED:
            return record
        if record.status is HandoffStatus.EXPIRED:
            inbox.expire_overdue()  # let the file say so too
            reasons.append(f"{agent}: expired after {limit:g} s")
        elif record.status is HandoffStatus.PENDING:  # the inbox's clock has not reached expires_at
            reasons.append(f"{agent}: no answer in {limit:g} s")
        elif record.rejection_reason is not None and record.rejection_reason.startswith("refused by"):
            reasons.append(f"{agent}: {record.rejection_reason}")
        else:
            reasons.append(f"{agent}: rejected: {record.rejection_reason}")
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
        }
    )


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
