"""Serving: the receiving side of the handoff inbox (decide, verify, claim, adopt, complete), request by request."""

from __future__ import annotations

import datetime as dt
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final, NotRequired, Protocol, TypedDict

from handoff_files.foundation.errors import (
    HandoffError,
    HandoffValidationError,
    InvalidTransitionError,
    StorageUnavailableError,
    TransferRefusedError,
)
from handoff_files.foundation.names import check_id
from handoff_files.inbox.request import MAX_REASON, InboxRequest, is_handoff_id, urgency
from handoff_files.inbox.status import HandoffStatus
from handoff_files.thread.results import SaveReceipt
from handoff_files.thread.store import HandoffStore
from handoff_files.transfers.adopt import AdoptResult, adopt_checkpoint, verify_checkpoint
from handoff_files.transfers.blobs import BlobStore

__all__ = [
    "DEFAULT_SERVE_RESCAN",
    "OnReceived",
    "OnRequest",
    "ServeOptions",
    "ServedInbox",
    "serve",
    "thread_id_for",
]

#: Seconds between rescans of the inbox while serving, when no file event comes.
DEFAULT_SERVE_RESCAN: Final = 2.0
#: Seconds an ACCEPTED request is left to the serve() that accepted it before another resumes it.
DEFAULT_RESUME_AFTER: Final = 30.0
_STOP_POLL: Final = 0.1  # how often a waiting serve() looks at its stop event

logger = logging.getLogger(__name__)

#: ``on_handoff_request(request)``: True accepts; a string (or False) rejects with that reason.
OnRequest = Callable[[InboxRequest], bool | str]
#: ``on_handoff_received(request, result)``: the ACCEPTED request and its adoption (None: no descriptor).
OnReceived = Callable[[InboxRequest, AdoptResult | None], None]


class ServedInbox(Protocol):
    """What :func:`serve` asks of an inbox: :class:`~handoff_files.inbox.lifecycle.HandoffInbox` is one.

    A protocol, so the inbox can offer ``serve`` as a method without the two modules importing each other.
    """

    @property
    def where(self) -> str: ...
    @property
    def requests_dir(self) -> Path: ...
    def ensure(self) -> None: ...
    def list_handoffs(
        self, *, to_agent: str | None = None, status: HandoffStatus | None = None
    ) -> list[InboxRequest]: ...
    def now(self) -> dt.datetime: ...
    def accept_handoff(self, handoff_id: str) -> InboxRequest: ...
    def reject_handoff(self, handoff_id: str, reason: str) -> InboxRequest: ...
    def complete_handoff(self, handoff_id: str) -> InboxRequest: ...


class ServeOptions(TypedDict):
    """The keywords of :meth:`~handoff_files.inbox.lifecycle.HandoffInbox.serve`, which are :func:`serve`'s."""

    on_handoff_request: OnRequest
    on_handoff_received: OnReceived
    blobs: BlobStore
    threads_dir: str | os.PathLike[str]
    stop: NotRequired[threading.Event | None]
    rescan: NotRequired[float]
    resume_after: NotRequired[float]
    max_requests: NotRequired[int | None]


def thread_id_for(request: InboxRequest | str) -> str:
    """The id of the thread a request's checkpoint is adopted into: ``handoff-<handoff_id>`` (one per request)."""
    handoff_id = request if isinstance(request, str) else request.handoff_id
    return f"handoff-{handoff_id}"


def serve(
    inbox: ServedInbox,
    agent_id: str,
    *,
    on_handoff_request: OnRequest,
    on_handoff_received: OnReceived,
    blobs: BlobStore,
    threads_dir: str | os.PathLike[str],
    stop: threading.Event | None = None,
    rescan: float = DEFAULT_SERVE_RESCAN,
    resume_after: float = DEFAULT_RESUME_AFTER,
    max_requests: int | None = None,
) -> list[InboxRequest]:
    """Serve *agent_id*'s requests in *inbox* in this process until *stop* is set (or *max_requests* are settled).

    Watches ``requests/`` (watchdog; a rescan every *rescan* seconds is the net for dropped
    events; an inbox on a bucket sends no events and is listed every *rescan* seconds) and takes
    the requests addressed to *agent_id* most urgent first. For each:

    1. ``on_handoff_request(request)`` decides: True accepts; a string (or False) rejects with
       that reason. A hook that raises rejects with the exception's text.
    2. On acceptance the checkpoint is verified without writing anything
       (:func:`~handoff_files.transfers.adopt.verify_checkpoint`: blob fetched, sha256 and seal checked;
       and the target thread free, the descriptor addressed to *agent_id* or to anyone); a
       failure rejects with the reason.
    3. ``accept_handoff`` claims the request. If another server won it, it is skipped quietly.
    4. The checkpoint is adopted into ``threads_dir/handoff-<handoff_id>`` (:func:`thread_id_for`).
    5. ``on_handoff_received(request, result)`` gets the ACCEPTED request and the
       :class:`AdoptResult` (None for a request without a descriptor).
    6. ``complete_handoff`` marks it COMPLETED.

    A crash before 3 leaves the request PENDING: a restarted serve() asks the hook again.
    A crash after 3 leaves it ACCEPTED: a serve() resumes the ACCEPTED requests addressed to
    it first, once they have been ACCEPTED for *resume_after* seconds (by the inbox's clock;
    until then they are the live server's that accepted them), adopting the checkpoint if its
    thread holds nothing yet (or taking the thread a crashed adoption committed), then repeats
    5 and 6, so ``on_handoff_received`` runs at least once, possibly twice, for a request. If
    adoption or ``on_handoff_received`` fails, the error is logged and the request stays
    ACCEPTED until a later serve() resumes it. Several serve() calls for one agent (on several
    machines) each take a request once: set *resume_after* above the longest time adoption and
    ``on_handoff_received`` take, or a slow one's request is resumed by another as if it had crashed.

    :param blobs: where descriptors' checkpoints are fetched from.
    :param threads_dir: the folder adopted threads are written into.
    :param stop: set it (from another thread, or a hook) to return after the current request.
    :param resume_after: seconds (0 or more) before an ACCEPTED request is taken as left by a crashed serve().
    :returns: the requests this call settled (REJECTED or COMPLETED), in order.
    :raises HandoffValidationError: for a bad *agent_id*, *rescan* or *max_requests*.
    :raises HandoffError: if the inbox cannot be created, listed or watched.
    """
    from handoff_files.watchers.directory import watch_directory  # noqa: PLC0415 -- watchdog only for a serving agent

    check_id(agent_id, "agent_id", inbox.where)
    if not (isinstance(resume_after, int | float) and resume_after >= 0):  # `not >=`: NaN is refused too
        raise HandoffValidationError(inbox.where, f"resume_after must be 0 or more seconds, not {resume_after!r}")
    if max_requests is not None and (type(max_requests) is not int or max_requests < 1):
        msg = f"max_requests must be None or a positive integer, not {max_requests!r}"
        raise HandoffValidationError(inbox.where, msg)
    server = _Server(
        inbox,
        agent_id,
        on_request=on_handoff_request,
        on_received=on_handoff_received,
        blobs=blobs,
        threads=Path(threads_dir).absolute(),
        resume_after=dt.timedelta(seconds=resume_after),
    )
    stop = stop if stop is not None else threading.Event()
    wake = threading.Event()
    inbox.ensure()
    if inbox.where.startswith("s3://"):  # a bucket sends no events: its requests are listed every *rescan* seconds
        if not (isinstance(rescan, int | float) and rescan > 0):  # `not >`: NaN is refused too
            raise HandoffValidationError(inbox.where, f"rescan must be more than 0 seconds, not {rescan!r}")
        server.run(stop, wake, max_requests, every=rescan)
        return server.settled
    with watch_directory(inbox.requests_dir, wake.set, rescan=rescan, wanted=_is_request_file):
        # the watch exists before the first scan: a request written in between is both scanned and hinted
        server.run(stop, wake, max_requests)
    return server.settled


def _is_request_file(name: str) -> bool:
    # `<handoff_id>.json`: not the temp files writers rename into place
    return name.endswith(".json") and is_handoff_id(name.removesuffix(".json"))


class _Server:
    """One serve() call's state: the hooks, and the requests it has tried (each at most once per call)."""

    def __init__(
        self,
        inbox: ServedInbox,
        agent_id: str,
        *,
        on_request: OnRequest,
        on_received: OnReceived,
        blobs: BlobStore,
        threads: Path,
        resume_after: dt.timedelta,
    ) -> None:
        self.inbox = inbox
        self.resume_after = resume_after
        self.agent_id = agent_id
        self.on_request = on_request
        self.on_received = on_received
        self.blobs = blobs
        self.threads = threads
        self.tried: set[str] = set()
        self.settled: list[InboxRequest] = []

    def run(
        self, stop: threading.Event, wake: threading.Event, max_requests: int | None, every: float | None = None
    ) -> None:
        """Take requests until *stop* is set or *max_requests* are settled, waiting for *wake* (or *every*
        seconds, when given) when none is left."""
        while not stop.is_set():
            wake.clear()
            while not stop.is_set() and (max_requests is None or len(self.settled) < max_requests):
                try:
                    request = self.next_request()
                except StorageUnavailableError as exc:
                    if every is None:
                        raise
                    # a bucket that does not answer now may at the next listing: the server waits, as for none
                    again = "serving %s: the inbox was not listed (again in %g s): %s"
                    logger.warning(again, self.agent_id, every, exc)
                    break
                if request is None:
                    break
                self.handle(request)
            if max_requests is not None and len(self.settled) >= max_requests:
                return
            deadline = None if every is None else time.monotonic() + every
            while not wake.wait(_STOP_POLL) and not stop.is_set():
                if deadline is not None and time.monotonic() >= deadline:
                    break

    def next_request(self) -> InboxRequest | None:
        """ACCEPTED requests left by a crashed serve() first, then the most urgent PENDING one."""
        left = self.inbox.now() - self.resume_after  # accepted before this: no live server is on it
        mine = [
            record
            for record in self.inbox.list_handoffs(to_agent=self.agent_id)
            if record.handoff_id not in self.tried
            and (
                record.status is HandoffStatus.PENDING
                or (record.status is HandoffStatus.ACCEPTED and (record.accepted_at or left) <= left)
            )
        ]
        if not mine:
            return None
        return min(mine, key=lambda r: (r.status is not HandoffStatus.ACCEPTED, *urgency(r)))

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
        except InvalidTransitionError as exc:  # another server settled it meanwhile (it took it as left)
            logger.warning(
                "serving %s: handoff %s was settled by another server: %s", self.agent_id, request.handoff_id, exc
            )
        except HandoffError as exc:
            # left as it is (ACCEPTED, most often): a later serve() resumes it
            status = request.status.value
            logger.error("serving %s: handoff %s left %s: %s", self.agent_id, request.handoff_id, status, exc)  # noqa: TRY400 -- the error says it all; a traceback adds nothing

    def _decide(self, request: InboxRequest, target: Path) -> InboxRequest | None:
        """Ask the hook, verify, and claim: the ACCEPTED request, or None if rejected or lost."""
        refusal = self._ask(request)
        if refusal is None:
            try:
                self._verify(request, target)
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

    def _verify(self, request: InboxRequest, target: Path) -> None:
        """Check, writing nothing, what adoption would refuse: a request that cannot be taken is rejected unclaimed."""
        descriptor = request.descriptor
        if descriptor is None:
            return
        if descriptor.to_agent not in (None, self.agent_id):
            msg = f"the descriptor is addressed to {descriptor.to_agent}, not {self.agent_id}"
            raise TransferRefusedError(target, msg)
        held = HandoffStore(target).holdings()
        if held:
            msg = f"the target thread already holds {', '.join(held)}; nothing is adopted over it"
            raise TransferRefusedError(target, msg)
        verify_checkpoint(descriptor, blobs=self.blobs)

    def _adopt(self, request: InboxRequest, target: Path) -> AdoptResult | None:
        descriptor = request.descriptor
        if descriptor is None:
            return None
        store = HandoffStore(target, agent_id=self.agent_id)
        if not store.holdings():
            return adopt_checkpoint(descriptor, target, blobs=self.blobs, agent_id=self.agent_id)
        # resumed: a crashed serve() got as far as committing the adoption (the thread is named
        # after this request, and _verify refused a target already in use, so it is ours)
        restored = store.restore()
        lineage = restored.handoff.lineage.adopted_from
        if restored.generation == 1 and (lineage is None or lineage.blob_sha256 != descriptor.blob_sha256):
            msg = f"holds a thread not adopted from handoff {request.handoff_id}'s checkpoint; move it aside"
            raise TransferRefusedError(target, msg)
        handoff = restored.handoff
        receipt = SaveReceipt(restored.generation, str(handoff.seal), restored.path, handoff.created_at)
        return AdoptResult(
            descriptor.source,
            handoff.thread_id,
            descriptor.checkpoint_id,
            descriptor.blob_id,
            True,
            receipt,
            to_agent=descriptor.to_agent,
        )
