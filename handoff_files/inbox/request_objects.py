"""Request objects: an inbox on object storage, one sealed object per request, changed by compare-and-set (issue 23).

``HandoffInbox("s3://bucket/prefix")`` keeps each request as the object ``requests/<handoff_id>.json``
under the prefix, with the bytes a folder's file holds (:mod:`~handoff_files.inbox.request_codec`).
There is no lock: a request is made by creating its object only if none is there (``If-None-Match: *``),
and every change (accept, reject, complete, an expiry recorded) replaces it only if it is still at the
ETag it was read at (``If-Match``). Of two agents on two machines accepting one request, exactly one
write lands; the other's is refused with a 412, and the inbox reads the request again and says what
it is now (ACCEPTED, since when, by whom if signed).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING

from handoff_files.foundation.errors import (
    HandoffError,
    HandoffNotFoundError,
    HandoffValidationError,
    StorageConflictError,
    StorageUnavailableError,
    UnknownRequestError,
)
from handoff_files.foundation.names import check_folder_path
from handoff_files.inbox.request import InboxRequest
from handoff_files.inbox.request_codec import MAX_REQUEST_BYTES, RequestCodec
from handoff_files.inbox.request_files import REQUESTS_DIR, RequestFiles, Scanned, request_ids

if TYPE_CHECKING:
    from handoff_files.storage import Storage
    from handoff_files.thread.signatures import KeyChoice, KeySource

__all__ = ["RequestObjects", "open_requests"]


class RequestObjects(RequestCodec):
    """The objects of an inbox under a bucket prefix (or any :class:`~handoff_files.storage.Storage`).

    Offers what :class:`~handoff_files.inbox.request_files.RequestFiles` offers the inbox; a change
    is read with its ETag (:meth:`read`'s version) and written conditional on it.

    :param storage: where the objects are (``requests/<handoff_id>.json`` under its root).
    :param key, allowed_signers, require_signed, now: :class:`~handoff_files.inbox.request_codec.RequestCodec`'s.
    """

    #: what a lost race raises: the inbox reads the request again and decides anew
    conflicts: tuple[type[HandoffError], ...] = (StorageConflictError,)

    def __init__(
        self,
        storage: Storage,
        *,
        key: KeySource | None = None,
        allowed_signers: Path | None = None,
        require_signed: bool = False,
        now: Callable[[], dt.datetime] | None = None,
    ) -> None:
        super().__init__(
            storage.where, key=key, allowed_signers=allowed_signers, require_signed=require_signed, now=now
        )
        self.storage = storage

    def file(self, handoff_id: str) -> str:
        """The request's object as a person names it (``s3://bucket/prefix/requests/<id>.json``)."""
        return f"{self.where}/{_key(handoff_id)}"

    def changing(self) -> AbstractContextManager[None]:
        """No lock: each write is conditional on the version read (a lost race raises one of :attr:`conflicts`)."""
        return contextlib.nullcontext()

    def exists(self) -> bool:
        """Always worth a listing: a bucket has no folder to look for first."""
        return True

    def read(self, handoff_id: str) -> tuple[InboxRequest, str | None]:
        """Request *handoff_id*, checked as a folder's file is, and its ETag.

        :raises UnknownRequestError: if there is no such object.
        :raises StorageUnavailableError: if the store does not answer (never taken for "no such request").
        :raises HandoffError: as :meth:`~.RequestCodec.decode`, naming the object.
        """
        named = self.file(handoff_id)
        try:
            stored = self.storage.read(_key(handoff_id), limit=MAX_REQUEST_BYTES)
        except HandoffNotFoundError as exc:
            msg = f"handoff {handoff_id} not found: no request has that id in this inbox"
            raise UnknownRequestError(named, msg) from exc
        return self.decode(stored.data, named), stored.etag

    def ids(self) -> list[str]:
        """The id of every request object, readable or damaged, sorted (one listing of ``requests/``)."""
        prefix = f"{REQUESTS_DIR}/"
        names = [key[len(prefix) :] for key in self.storage.list(prefix)]
        return request_ids([name for name in names if "/" not in name])  # deeper keys are no request's

    def scan(self) -> Scanned:
        """Every readable request with its ETag, and one error (naming the object) for each damaged one."""
        records: list[tuple[InboxRequest, str | None]] = []
        problems: list[HandoffError] = []
        for handoff_id in self.ids():
            try:
                records.append(self.read(handoff_id))
            except UnknownRequestError:
                continue  # removed since the listing
            except StorageUnavailableError:
                raise  # an outage is not a damaged request: the caller hears of it
            except HandoffError as exc:
                problems.append(exc)
        return records, problems

    def write(
        self, record: InboxRequest, data: bytes | None = None, *, version: str | None = None, new: bool = False
    ) -> InboxRequest:
        """Create the request's object (*new*) or replace it if still at *version*; the request as now read.

        :raises ObjectExistsError: if *new* and an object has the id (never, for an id of 128 random bits).
        :raises ObjectChangedError: if another writer changed it since it was read at *version*.
        :raises UntrustedSignerError: as a folder's write, before anything is written.
        """
        named = self.file(record.handoff_id)
        data = self.render(record) if data is None else data
        written = self.checked(record, data, named)
        key = _key(record.handoff_id)
        if new:
            self.storage.create(key, data)
        elif version is None:
            msg = "a change to a request object needs the ETag it was read at (a bug: please report it)"
            raise HandoffError(named, msg)
        else:
            self.storage.replace(key, data, version)
        return written

    def ensure(self) -> None:
        """Nothing to make: a bucket prefix exists once an object is under it."""


def _key(handoff_id: str) -> str:
    return f"{REQUESTS_DIR}/{handoff_id}.json"


def open_requests(
    directory: str | os.PathLike[str],
    *,
    lock_timeout: float,
    shared: bool,
    signing_key: KeyChoice,
    allowed_signers: Path | None,
    require_signed: bool,
    now: Callable[[], dt.datetime],
) -> RequestFiles | RequestObjects:
    """Where an inbox keeps its requests: objects under an ``s3://bucket/prefix`` URL, else files in a folder.

    :raises HandoffError: for a URL the storage refuses (see :func:`~handoff_files.storage.open_storage`),
        or ``shared`` on a bucket (file modes are a folder's).
    :raises InvalidNameError: for a path that reads as a mistyped URL (``s3:/bucket``).
    :raises SigningKeyError: if the *signing_key* file cannot be used.
    """
    from handoff_files.storage import is_url, open_storage  # noqa: PLC0415 -- obstore only for a bucket
    from handoff_files.thread.signatures import KeySource  # noqa: PLC0415 -- as the inbox did

    if is_url(directory) or (isinstance(directory, str) and "://" in directory):  # S3://, gs://: said as such
        storage = open_storage(directory)
        if shared:
            msg = "shared= sets a folder's modes; a bucket's access is its policy's (drop --shared)"
            raise HandoffValidationError(storage.where, msg)
        return RequestObjects(
            storage,
            key=KeySource(signing_key, storage.where),
            allowed_signers=allowed_signers,
            require_signed=require_signed,
            now=now,
        )
    check_folder_path(directory, "the inbox")
    path = Path(directory).absolute()
    return RequestFiles(
        path,
        lock_timeout=lock_timeout,
        shared=shared,
        key=KeySource(signing_key, path),
        allowed_signers=allowed_signers,
        require_signed=require_signed,
        now=now,
    )
