"""Request files: an inbox in a folder, one sealed JSON file per request under ``requests/``, written under a lock.

The bytes are :mod:`~handoff_files.inbox.request_codec`'s (sealed, signed, decoded strictly); this
module keeps them in a folder: read without a lock, written atomically and durably under the
writers' lock (an flock on ``<inbox>/.lock``), so of several processes changing one request exactly
one reads it last. Its counterpart on object storage is :mod:`~handoff_files.inbox.request_objects`.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Final

from handoff_files.foundation.atomic import fsync_dir, read_bytes
from handoff_files.foundation.errors import (
    HandoffError,
    HandoffNotFoundError,
    HandoffWriteError,
    UnknownRequestError,
)
from handoff_files.foundation.lock import LOCK_NAME, WriterLock
from handoff_files.foundation.shared_mode import check_shared, create_file, make_dir, write_durable_mode
from handoff_files.inbox.request import InboxRequest
from handoff_files.inbox.request_codec import MAX_REQUEST_BYTES, SEAL_KEY, RequestCodec

if TYPE_CHECKING:
    from handoff_files.thread.signatures import KeySource

__all__ = ["MAX_REQUEST_BYTES", "REQUESTS_DIR", "SEAL_KEY", "RequestFiles", "Scanned"]

#: The folder (or key prefix), inside the inbox, holding one ``<handoff_id>.json`` per request.
REQUESTS_DIR: Final = "requests"

_REQUEST_FILE: Final = re.compile(r"^[0-9a-f]{32}\.json$")
# write_durable's temp files for our request files: `.<name>.<8 random chars>.tmp`
_REQUEST_TEMP: Final = re.compile(r"^\.[0-9a-f]{32}\.json\.[a-z0-9_]{8}\.tmp$")

#: What a scan finds: each readable request with its version (None in a folder), and one error per damaged one.
Scanned = tuple[list[tuple[InboxRequest, str | None]], list[HandoffError]]


def request_ids(names: list[str]) -> list[str]:
    """The request ids among *names* (``<handoff_id>.json``; temp files and others' files left out), sorted."""
    return sorted(name.removesuffix(".json") for name in names if _REQUEST_FILE.match(name))


class RequestFiles(RequestCodec):
    """The files of an inbox in a folder: where each request is, how it is read and written, and the writers' lock.

    Knows bytes and paths, not the lifecycle: every check of a transition is the inbox's. A change is
    made inside :meth:`changing` (the lock held), so the version :meth:`read` returns is None: no one
    else can write in between.

    :param path: the inbox directory.
    :param lock_timeout: seconds a writer waits for the lock on ``<path>/.lock``.
    :param shared: group-shared mode (see :mod:`~handoff_files.foundation.shared_mode`): what it
        creates is 0770 with setgid (folders) or 0660 (request files, the lock file); without it,
        0700 and 0600. An existing folder or lock file narrower than that is refused, never widened.
    :param key, allowed_signers, require_signed, now: :class:`~handoff_files.inbox.request_codec.RequestCodec`'s.
    """

    #: what a lost race raises: nothing here (a change made under the lock never loses one)
    conflicts: tuple[type[HandoffError], ...] = ()

    def __init__(
        self,
        path: Path,
        *,
        lock_timeout: float,
        shared: bool = False,
        key: KeySource | None = None,
        allowed_signers: Path | None = None,
        require_signed: bool = False,
        now: Callable[[], dt.datetime] | None = None,
    ) -> None:
        super().__init__(
            os.fspath(path), key=key, allowed_signers=allowed_signers, require_signed=require_signed, now=now
        )
        self.path = path
        self.shared = shared
        self.requests_dir = path / REQUESTS_DIR
        self.lock = WriterLock(path, timeout=lock_timeout)
        self._ready = False

    def file(self, handoff_id: str) -> Path:
        """Where request *handoff_id* is kept (a checked id: nothing else may reach a path)."""
        return self.requests_dir / f"{handoff_id}.json"

    def changing(self) -> AbstractContextManager[None]:
        """Hold the writers' lock: a change read and written inside it is the only one."""
        return self.lock.held()

    def exists(self) -> bool:
        """Whether ``requests/`` is there (nothing to expire if not)."""
        return self.requests_dir.is_dir()

    def read(self, handoff_id: str) -> tuple[InboxRequest, str | None]:
        """Request *handoff_id*, checked as :meth:`~.RequestCodec.decode` checks it, and None (no version in a folder).

        :raises UnknownRequestError: if there is no such file.
        :raises HandoffError: as :meth:`~.RequestCodec.decode`, naming the file.
        """
        path = self.file(handoff_id)
        try:
            data, _ = read_bytes(path, MAX_REQUEST_BYTES, follow_symlinks=False)
        except HandoffNotFoundError as exc:
            msg = f"handoff {handoff_id} not found: no request has that id in this inbox"
            raise UnknownRequestError(path, msg) from exc
        return self.decode(data, path), None

    def ids(self) -> list[str]:
        """The id of every request file, readable or damaged, sorted (none if ``requests/`` does not exist).

        :raises HandoffError: if ``requests/`` exists but cannot be listed.
        """
        try:
            names = os.listdir(self.requests_dir)
        except FileNotFoundError:
            return []
        except OSError as exc:
            msg = f"cannot list the inbox: {exc.strerror or exc}"
            raise HandoffError(self.requests_dir, msg) from exc
        return request_ids(names)

    def scan(self) -> Scanned:
        """Every readable request, and one error (naming the file) for each damaged one.

        :raises HandoffError: if ``requests/`` exists but cannot be listed.
        """
        records: list[tuple[InboxRequest, str | None]] = []
        problems: list[HandoffError] = []
        # only our names: temp files of writers in flight, and anything that is not ours, are left alone
        for handoff_id in self.ids():
            try:
                records.append(self.read(handoff_id))
            except UnknownRequestError:
                continue  # removed by hand since the listing
            except HandoffError as exc:
                problems.append(exc)
        return records, problems

    def write(
        self, record: InboxRequest, data: bytes | None = None, *, version: str | None = None, new: bool = False
    ) -> InboxRequest:
        """Write *record* (or *data*, its :meth:`render` already made) to its file, atomically and durably.

        Call inside :meth:`changing`; *version* and *new* are the bucket's (the lock makes them moot here).

        :returns: the request as a reader now reads it (its signatures, as signed, included).
        :raises UntrustedSignerError: with :attr:`require_signed`, if this writer's file would be refused
            on reading (no key, or one ``allowed_signers`` does not trust): nothing is written.
        """
        path = self.file(record.handoff_id)
        data = self.render(record) if data is None else data
        written = self.checked(record, data, path)  # read as every reader will, before anything is written
        write_durable_mode(path, data, shared=self.shared)
        return written

    def ensure(self) -> None:
        """Create the inbox and ``requests/`` durably, or raise HandoffWriteError; clear dead writers' temps.

        Folders are 0700, or (shared) 0770 with setgid and the lock file 0660, whatever the umask.

        :raises HandoffError: if shared and an existing folder or lock file is narrower than that
            (naming it and the ``chmod`` to run).
        """
        if self._ready:
            return
        try:
            if self.requests_dir.is_symlink():
                msg = "is a symbolic link; an inbox's files are never written outside it"
                raise HandoffError(self.requests_dir, msg)
            if self.shared:
                for existing in (self.path, self.requests_dir, self.path / LOCK_NAME):
                    check_shared(existing)
            for directory in (self.path, self.requests_dir):
                if not directory.is_dir():
                    if self.shared:
                        # folders above the inbox are made as mkdir -p makes them (the umask's mode)
                        directory.parent.mkdir(parents=True, exist_ok=True)
                        make_dir(directory, shared=True)
                    else:
                        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
                    # fsync the parent: a new folder is not durable until its entry is
                    fsync_dir(directory.parent)
            if self.shared:
                # the lock opens its file 0600 (under the umask): make it first, so every member can lock
                create_file(self.path / LOCK_NAME, shared=True)
            with self.lock.held():
                # a writer SIGKILLed between its temp file and the rename leaves the temp: ours to clear
                for name in os.listdir(self.requests_dir):
                    if _REQUEST_TEMP.match(name):
                        (self.requests_dir / name).unlink(missing_ok=True)
        except OSError as exc:
            msg = f"cannot create or tidy the inbox: {exc.strerror or exc}"
            raise HandoffWriteError(self.path, msg) from exc
        self._ready = True
