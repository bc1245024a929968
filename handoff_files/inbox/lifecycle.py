"""The handoff inbox: requests between agents as files under a lock, and their lifecycle (serving: ``serve.py``)."""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import re
import uuid
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Final, Unpack

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from handoff_files.compat.sw4rm import HandoffResponse, HandoffStatus
from handoff_files.format.codec import detect_format, parse, render
from handoff_files.format.loader import describe
from handoff_files.format.model import MAX_INT, MIN_INT, Id
from handoff_files.foundation.atomic import fsync_dir, read_bytes, write_durable
from handoff_files.foundation.errors import (
    HandoffError,
    HandoffNotFoundError,
    HandoffParseError,
    HandoffValidationError,
    HandoffWriteError,
    InvalidNameError,
    InvalidTransitionError,
    UnknownRequestError,
)
from handoff_files.foundation.lock import DEFAULT_LOCK_TIMEOUT, WriterLock
from handoff_files.foundation.names import check_id
from handoff_files.inbox.capabilities import CAPABILITY_PATTERN, AgentRegistry, check_capabilities
from handoff_files.transfer.descriptor import Descriptor, parse_descriptor

if TYPE_CHECKING:
    from handoff_files.inbox.serve import ServeOptions

__all__ = ["DEFAULT_PRIORITY", "REQUESTS_DIR", "HandoffInbox", "InboxRequest", "is_handoff_id"]

DEFAULT_PRIORITY: Final = 5
#: The folder, inside the inbox, holding one ``<handoff_id>.json`` per request.
REQUESTS_DIR: Final = "requests"
#: A request file is small (the context travels as a descriptor): past this it is refused unread.
MAX_REQUEST_BYTES: Final = 1024 * 1024
MAX_REASON: Final = 2000
#: The longest timeout a request may carry (about 31 years): beyond it, ``None`` says "no limit".
MAX_TIMEOUT: Final = 1e9

_HANDOFF_ID: Final = r"^[0-9a-f]{32}$"
_REQUEST_FILE: Final = re.compile(r"^[0-9a-f]{32}\.json$")
# write_durable's temp files for our request files: `.<name>.<8 random chars>.tmp`
_REQUEST_TEMP: Final = re.compile(r"^\.[0-9a-f]{32}\.json\.[a-z0-9_]{8}\.tmp$")
#: The statuses of a request someone took: what a requester waits for.
SETTLED: Final = (HandoffStatus.ACCEPTED, HandoffStatus.COMPLETED)

logger = logging.getLogger(__name__)


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
        accepted = self.status in SETTLED
        return HandoffResponse(accepted, self.handoff_id, self.rejection_reason, self.status, dict(self.metadata))

    def as_of(self, now: dt.datetime) -> InboxRequest:
        """This request as it reads at *now*: a PENDING request past ``expires_at`` reads as EXPIRED."""
        if self.status is HandoffStatus.PENDING and self.expires_at is not None and now >= self.expires_at:
            return self.model_copy(update={"status": HandoffStatus.EXPIRED})
        return self


def is_handoff_id(text: object) -> bool:
    """Whether *text* is an id this inbox makes (a uuid4 in 32 lowercase hex digits)."""
    return isinstance(text, str) and re.fullmatch(_HANDOFF_ID, text) is not None


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
        clock: Callable[[], dt.datetime] | None = None,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
    ) -> None:
        self.path = Path(directory).absolute()
        self.requests_dir = self.path / REQUESTS_DIR
        self.registry = AgentRegistry.load(registry) if isinstance(registry, str | os.PathLike) else registry
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
        limit = check_timeout(timeout, self.path)
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
        self.ensure()
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
        if not self._text(reason, "reason").strip():
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
        self.ensure()
        with self._lock.held():
            current = self._read(path)
            now = self.now()
            seen = current.as_of(now)
            if seen.status is not current.status:
                # the next writer to touch an overdue request records that it expired
                write_durable(path, self._render(seen))
            if seen.status is not allowed:
                msg = (
                    f"cannot {verb} handoff {handoff_id}: it is {seen.status.value}{_since(seen)}, not in "
                    f"{allowed.value} status; only a {allowed.value} request can become {change['status'].value}"
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
        """The PENDING, unexpired requests to *agent_id*, most urgent first (:func:`urgency`); see :attr:`problems`."""
        check_id(agent_id, "agent_id", self.path)
        return sorted(self.list_handoffs(to_agent=agent_id, status=HandoffStatus.PENDING), key=urgency)

    def list_handoffs(self, *, to_agent: str | None = None, status: HandoffStatus | None = None) -> list[InboxRequest]:
        """The readable requests (to *to_agent*, in *status*, if given), as they are now, oldest first."""
        now = self.now()
        seen = (record.as_of(now) for record in self._scan())
        wanted = [r for r in seen if to_agent in (None, r.to_agent) and status in (None, r.status)]
        return sorted(wanted, key=lambda r: (r.created_at, r.handoff_id))

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
            msg = f"handoff {path.stem} not found: no request has that id in this inbox"
            raise UnknownRequestError(path, msg) from exc
        if detect_format(data) != "json":
            msg = "not a JSON object, as every request file is (torn, emptied or overwritten?); fix or remove the file"
            raise HandoffParseError(path, msg)
        parse(data, path)  # strict first: duplicate keys, NaN and the like are damage, not taken as read
        try:
            record = InboxRequest.model_validate_json(data)
        except ValidationError as exc:
            msg = f"not a valid handoff request: {describe(exc)}; fix or remove the file"
            raise HandoffValidationError(path, msg) from exc
        if record.handoff_id != path.stem:
            msg = f"holds request {record.handoff_id}, not the {path.stem} its name says; fix or remove the file"
            raise HandoffValidationError(path, msg)
        return record

    # -- writing -------------------------------------------------------------------------------

    def ensure(self) -> None:
        """Create the inbox and ``requests/`` (0700, durably) or raise HandoffWriteError; clear dead writers' temps."""
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
        if not is_handoff_id(handoff_id):
            msg = f"handoff id {str(handoff_id)[:80]!r} is not one this inbox makes (32 lowercase hex digits)"
            raise InvalidNameError(self.path, msg)
        return str(handoff_id)

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

    def serve(self, agent_id: str, **options: Unpack[ServeOptions]) -> list[InboxRequest]:
        """Serve *agent_id*'s requests in this process until stopped: :func:`handoff_files.serve.serve`'s keywords."""
        from handoff_files.inbox.serve import serve  # noqa: PLC0415 -- serve.py imports this module

        return serve(self, agent_id, **options)


def check_timeout(timeout: object, where: Path) -> float | None:
    """*timeout* as seconds (None: no limit), or :class:`HandoffValidationError` naming *where*."""
    if timeout is None:
        return None
    # `not 0 < t`: NaN is refused too; a bool is not a number of seconds
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout <= MAX_TIMEOUT:
        msg = f"timeout must be None or seconds, more than 0 and at most {MAX_TIMEOUT:g}, not {timeout!r}"
        raise HandoffValidationError(where, msg)
    return float(timeout)


def _since(record: InboxRequest) -> str:
    # a settled status has its `<status>_at` field; an expired request's moment is expires_at
    expired = record.status is HandoffStatus.EXPIRED
    at = record.expires_at if expired else getattr(record, f"{record.status.value.lower()}_at", None)
    return "" if at is None else f" (since {at.isoformat(timespec='seconds')})"


def urgency(record: InboxRequest) -> tuple[int, dt.datetime, str]:
    """The order requests are served in: most urgent (lowest priority) first, then oldest."""
    return (record.priority, record.created_at, record.handoff_id)
