"""Request files: one sealed JSON file per request under ``requests/``, read strictly and written durably under a lock.

Every file the inbox writes carries ``seal``: a digest (:data:`~handoff_files.format.seal.DEFAULT_ALGORITHM`)
over the canonical JSON of the file without its seal, as a handoff's envelope does; every read verifies
it, so a flipped bit that leaves a valid but different request ("gen 3" for "gen 2") is refused. The
seal is a checksum, not a signature: it detects damage and careless edits, and anyone who may write
the inbox can recompute it. Signatures (who asked, who changed it last) are
:mod:`~handoff_files.inbox.signatures`'.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from pydantic import ValidationError

from handoff_files.format import seal as sealing
from handoff_files.format.codec import parse_json, render
from handoff_files.format.loader import describe
from handoff_files.foundation.atomic import fsync_dir, read_bytes
from handoff_files.foundation.errors import (
    HandoffError,
    HandoffNotFoundError,
    HandoffParseError,
    HandoffValidationError,
    HandoffWriteError,
    SealError,
    SignatureError,
    UnknownRequestError,
    UntrustedSignerError,
)
from handoff_files.foundation.lock import LOCK_NAME, WriterLock
from handoff_files.foundation.shared_mode import check_shared, create_file, make_dir, write_durable_mode
from handoff_files.inbox.request import InboxRequest
from handoff_files.inbox.signatures import SIGNATURES_KEY, read_signatures, require_trusted, sign_file

if TYPE_CHECKING:
    from handoff_files.thread.signatures import KeySource, SignerCheck

__all__ = ["MAX_REQUEST_BYTES", "REQUESTS_DIR", "SEAL_KEY", "RequestFiles"]

#: The folder, inside the inbox, holding one ``<handoff_id>.json`` per request.
REQUESTS_DIR: Final = "requests"
#: A request file is small (the context travels as a descriptor): past this it is refused unread.
MAX_REQUEST_BYTES: Final = 1024 * 1024

_REQUEST_FILE: Final = re.compile(r"^[0-9a-f]{32}\.json$")
# write_durable's temp files for our request files: `.<name>.<8 random chars>.tmp`
_REQUEST_TEMP: Final = re.compile(r"^\.[0-9a-f]{32}\.json\.[a-z0-9_]{8}\.tmp$")
_FIX: Final = "fix or remove the file"
_HEX64: Final = re.compile(r"^[0-9a-f]{64}$")
#: The key of a request file's seal (the one key the request model does not hold).
SEAL_KEY: Final = "seal"
#: What the inbox fills in when it reads a file, and never writes to one: a file holding one was not written by it.
_NEVER_STORED: Final = ("refused_by", "request_signature", "change_signature")

logger = logging.getLogger(__name__)


class RequestFiles:
    """The files of an inbox: where each request is, how it is read and written, and the writers' lock.

    Knows bytes and paths, not the lifecycle: every check of a transition is the inbox's.

    :param path: the inbox directory.
    :param lock_timeout: seconds a writer waits for the lock on ``<path>/.lock``.
    :param shared: group-shared mode (see :mod:`~handoff_files.foundation.shared_mode`): what it
        creates is 0770 with setgid (folders) or 0660 (request files, the lock file); without it,
        0700 and 0600. An existing folder or lock file narrower than that is refused, never widened.
    :param key: the key the files written are signed with (None: unsigned).
    :param allowed_signers: who is trusted (default: the user's file); read only for a signed file.
    :param require_signed: refuse a request not signed, and last changed, by a trusted key; *now*
        is the clock that confirms an expiry recorded unsigned.
    """

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
        self.path = path
        self.shared = shared
        self.key = key
        self.allowed_signers = allowed_signers
        self.require_signed = require_signed
        self._now = now
        self.requests_dir = path / REQUESTS_DIR
        self.lock = WriterLock(path, timeout=lock_timeout)
        self._ready = False
        self._unsealed_seen: set[Path] = set()

    def file(self, handoff_id: str) -> Path:
        """Where request *handoff_id* is kept (a checked id: nothing else may reach a path)."""
        return self.requests_dir / f"{handoff_id}.json"

    def read(self, path: Path) -> InboxRequest:
        """The request in *path*, read strictly (duplicate keys, NaN and the like are damage).

        :raises UnknownRequestError: if there is no such file.
        :raises HandoffParseError: if it is not one strict JSON object.
        :raises HandoffValidationError: if it is not a request, or not the one its name says.
        :raises SealError: if its seal is malformed or does not match: damaged or edited. A file with no
            seal (written before request files were sealed) is read unverified, with a warning logged once.
        """
        try:
            data, _ = read_bytes(path, MAX_REQUEST_BYTES, follow_symlinks=False)
        except HandoffNotFoundError as exc:
            msg = f"handoff {path.stem} not found: no request has that id in this inbox"
            raise UnknownRequestError(path, msg) from exc
        return self.decode(data, path)

    def decode(self, data: bytes, path: Path) -> InboxRequest:
        """The request in *data*, the bytes of the file *path*, checked as :meth:`read` checks it."""
        try:
            document = parse_json(data, path, limit=MAX_REQUEST_BYTES)
        except HandoffParseError as exc:
            msg = f"not a request file: {exc.reason} (torn, emptied or overwritten?); {_FIX}"
            raise HandoffParseError(path, msg) from exc
        if not isinstance(document, dict):
            msg = f"not a JSON object, as every request file is (torn, emptied or overwritten?); {_FIX}"
            raise HandoffParseError(path, msg)
        stored = [name for name in _NEVER_STORED if name in document]
        if stored:
            # the inbox never stores them (a refused request is never written; signers are found on reading)
            msg = (
                f"carries {stored[0]}, which the inbox never writes to a request file (it is found when a file "
                f"is read, or the request was never stored), so it was not written by this library; {_FIX}"
            )
            raise HandoffValidationError(path, msg)
        signatures = document.pop(SIGNATURES_KEY, None)
        sealed = SEAL_KEY in document
        seal = document.pop(SEAL_KEY, None)
        try:
            # parsed once: the strict reader's value is validated, the bytes are not parsed again
            record = InboxRequest.model_validate(document)
        except ValidationError as exc:
            msg = f"not a valid handoff request: {describe(exc)}; {_FIX}"
            raise HandoffValidationError(path, msg) from exc
        if record.handoff_id != path.stem:
            msg = f"holds request {record.handoff_id}, not the {path.stem} its name says; {_FIX}"
            raise HandoffValidationError(path, msg)
        if sealed:
            _verify(document, seal, path)
            if signatures is not None:
                record = read_signatures({**document, SEAL_KEY: seal}, signatures, record, path, self._checker)
        elif signatures is not None:
            msg = f"carries signatures but no seal, which the inbox never writes; {_FIX}"
            raise SignatureError(path, msg)
        elif path not in self._unsealed_seen:
            # written by a release before request files were sealed: read as it always was, said once
            self._unsealed_seen.add(path)
            logger.warning(
                "handoff inbox: %s: no seal (written before request files were sealed, or by hand): read "
                "unverified; the next change to the request seals it",
                path,
            )
        if self.require_signed:
            require_trusted(record, path, self._now() if self._now is not None else dt.datetime.now(dt.UTC))
        return record

    def _checker(self) -> SignerCheck:
        from handoff_files.thread.signatures import SignerCheck  # noqa: PLC0415 -- only a signed file needs it

        return SignerCheck(self.allowed_signers)

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
        return sorted(name.removesuffix(".json") for name in names if _REQUEST_FILE.match(name))

    def scan(self) -> tuple[list[InboxRequest], list[HandoffError]]:
        """Every readable request, and one error (naming the file) for each damaged one.

        :raises HandoffError: if ``requests/`` exists but cannot be listed.
        """
        records: list[InboxRequest] = []
        problems: list[HandoffError] = []
        # only our names: temp files of writers in flight, and anything that is not ours, are left alone
        for handoff_id in self.ids():
            try:
                records.append(self.read(self.file(handoff_id)))
            except UnknownRequestError:
                continue  # removed by hand since the listing
            except HandoffError as exc:
                problems.append(exc)
        return records, problems

    def write(self, record: InboxRequest, data: bytes | None = None) -> InboxRequest:
        """Write *record* (or *data*, its :meth:`render` already made) to its file, atomically and durably.

        Call while holding :attr:`lock`.

        :returns: the request as a reader now reads it (its signatures, as signed, included).
        :raises UntrustedSignerError: with :attr:`require_signed`, if this writer's file would be refused
            on reading (no key, or one ``allowed_signers`` does not trust): nothing is written.
        """
        path = self.file(record.handoff_id)
        data = self.render(record) if data is None else data
        try:
            written = self.decode(data, path)  # read as every reader will, before anything is written
        except UntrustedSignerError as exc:
            key = self.key.key() if self.key is not None else None
            why = "no signing key: pass --sign-with KEYFILE" if key is None else f"{key.fingerprint} is not trusted"
            msg = f"refused, nothing written: signed requests are required here, and this change cannot be ({why})"
            raise UntrustedSignerError(path, msg) from exc
        write_durable_mode(path, data, shared=self.shared)
        return written

    def render(self, record: InboxRequest, *, new: bool = False) -> bytes:
        """The file's bytes for *record*: indented JSON a person can read, sealed (see the module's docstring),
        and signed with :attr:`key` if there is one (*new*: as the requester, over what it asks).

        :raises HandoffValidationError: past :data:`MAX_REQUEST_BYTES`.
        :raises SigningKeyError: if the configured key cannot be used (never silently unsigned).
        """
        # refused_by is never stored (a refused request is not written): files stay as older readers know them
        document = record.model_dump(mode="json", exclude=set(_NEVER_STORED))
        algorithm = sealing.DEFAULT_ALGORITHM
        # the seal goes last, so a person reading the file meets the request first
        document[SEAL_KEY] = {"algorithm": algorithm, "digest": sealing.digest(sealing.canonical(document), algorithm)}
        requested = record.request_signature
        key = self.key.key() if self.key is not None else None
        sign_file(document, key, request=None if requested is None else requested.signature, new=new)
        data = render(document, "json")
        if len(data) > MAX_REQUEST_BYTES:
            msg = (
                f"the request would be {len(data):,} bytes, over the {MAX_REQUEST_BYTES:,}-byte limit; "
                "pass the context as a descriptor, and keep metadata small"
            )
            raise HandoffValidationError(self.path, msg)
        return data

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


def _verify(document: dict[str, Any], seal: object, path: Path) -> None:
    """Check *seal* against the canonical JSON of *document* (the file without its seal).

    :raises SealError: if the seal is malformed or does not match: the file was damaged or edited.
    """
    matched = False
    if isinstance(seal, dict):
        algorithm, expected = seal.get("algorithm"), seal.get("digest")
        if algorithm in sealing.ALGORITHMS and isinstance(expected, str) and _HEX64.fullmatch(expected):
            try:
                matched = sealing.matches(sealing.canonical(document), str(algorithm), expected)
            except ValueError:
                matched = False  # no canonical form: the inbox never wrote it
    if not matched:
        msg = (
            "content does not match its seal: the file was damaged or edited since the inbox wrote it (a flipped "
            f"bit, a torn write, a change by hand); {_FIX}, or ask the requester to send the request again"
        )
        raise SealError(path, msg)
