"""Request files: one sealed JSON file per request under ``requests/``, read strictly and written durably under a lock.

Every file the inbox writes carries ``seal``: a digest (:data:`~handoff_files.format.seal.DEFAULT_ALGORITHM`)
over the canonical JSON of the file without its seal, as a handoff's envelope does; every read verifies
it, so a flipped bit that leaves a valid but different request ("gen 3" for "gen 2") is refused. The
seal is a checksum, not a signature: it detects damage and careless edits, and anyone who may write
the inbox can recompute it.
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path
from typing import Any, Final

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
    UnknownRequestError,
)
from handoff_files.foundation.lock import LOCK_NAME, WriterLock
from handoff_files.foundation.shared_mode import check_shared, create_file, make_dir, write_durable_mode
from handoff_files.inbox.request import InboxRequest

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

logger = logging.getLogger(__name__)


class RequestFiles:
    """The files of an inbox: where each request is, how it is read and written, and the writers' lock.

    Knows bytes and paths, not the lifecycle: every check of a transition is the inbox's.

    :param path: the inbox directory.
    :param lock_timeout: seconds a writer waits for the lock on ``<path>/.lock``.
    :param shared: group-shared mode (see :mod:`~handoff_files.foundation.shared_mode`): what it
        creates is 0770 with setgid (folders) or 0660 (request files, the lock file); without it,
        0700 and 0600. An existing folder or lock file narrower than that is refused, never widened.
    """

    def __init__(self, path: Path, *, lock_timeout: float, shared: bool = False) -> None:
        self.path = path
        self.shared = shared
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
        try:
            document = parse_json(data, path, limit=MAX_REQUEST_BYTES)
        except HandoffParseError as exc:
            msg = f"not a request file: {exc.reason} (torn, emptied or overwritten?); {_FIX}"
            raise HandoffParseError(path, msg) from exc
        if not isinstance(document, dict):
            msg = f"not a JSON object, as every request file is (torn, emptied or overwritten?); {_FIX}"
            raise HandoffParseError(path, msg)
        if "refused_by" in document:
            # the inbox never stores it (a request the gate refuses is never written): another hand did
            msg = (
                "carries refused_by, which the inbox never writes to a request file (a request the "
                f"capability gate refuses is not stored), so it was not written by this library; {_FIX}"
            )
            raise HandoffValidationError(path, msg)
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
        elif path not in self._unsealed_seen:
            # written by a release before request files were sealed: read as it always was, said once
            self._unsealed_seen.add(path)
            logger.warning(
                "handoff inbox: %s: no seal (written before request files were sealed, or by hand): read "
                "unverified; the next change to the request seals it",
                path,
            )
        return record

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

    def write(self, record: InboxRequest, data: bytes | None = None) -> None:
        """Write *record* (or *data*, its :meth:`render` already made) to its file, atomically and durably.

        Call while holding :attr:`lock`.
        """
        write_durable_mode(
            self.file(record.handoff_id), self.render(record) if data is None else data, shared=self.shared
        )

    def render(self, record: InboxRequest) -> bytes:
        """The file's bytes for *record*: indented JSON a person can read, sealed (see the module's docstring).

        :raises HandoffValidationError: past :data:`MAX_REQUEST_BYTES`.
        """
        # refused_by is never stored (a refused request is not written): files stay as older readers know them
        document = record.model_dump(mode="json", exclude={"refused_by"})
        algorithm = sealing.DEFAULT_ALGORITHM
        # the seal goes last, so a person reading the file meets the request first
        document[SEAL_KEY] = {"algorithm": algorithm, "digest": sealing.digest(sealing.canonical(document), algorithm)}
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
