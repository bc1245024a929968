"""A request file's bytes: rendered sealed (and signed), decoded strictly, wherever the file is kept.

Every file the inbox writes carries ``seal``: a digest (:data:`~handoff_files.format.seal.DEFAULT_ALGORITHM`)
over the canonical JSON of the file without its seal, as a handoff's envelope does; every read verifies
it, so a flipped bit that leaves a valid but different request ("gen 3" for "gen 2") is refused. The
seal is a checksum, not a signature: it detects damage and careless edits, and anyone who may write
the inbox can recompute it. Signatures (who asked, who changed it last) are
:mod:`~handoff_files.inbox.signatures`'. Where the bytes are kept, a folder or a bucket, is
:mod:`~handoff_files.inbox.request_files`' or :mod:`~handoff_files.inbox.request_objects`'.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import re
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Final

from pydantic import ValidationError

from handoff_files.format import seal as sealing
from handoff_files.format.codec import parse_json, render
from handoff_files.format.loader import describe
from handoff_files.foundation.errors import (
    HandoffParseError,
    HandoffValidationError,
    SealError,
    SignatureError,
    UntrustedSignerError,
)
from handoff_files.inbox.request import InboxRequest
from handoff_files.inbox.signatures import SIGNATURES_KEY, read_signatures, require_trusted, sign_file

if TYPE_CHECKING:
    from handoff_files.thread.signatures import KeySource, SignerCheck

__all__ = ["MAX_REQUEST_BYTES", "SEAL_KEY", "RequestCodec"]

#: A request file is small (the context travels as a descriptor): past this it is refused unread.
MAX_REQUEST_BYTES: Final = 1024 * 1024
#: The key of a request file's seal (the one key the request model does not hold).
SEAL_KEY: Final = "seal"

_FIX: Final = "fix or remove the file"
_HEX64: Final = re.compile(r"^[0-9a-f]{64}$")
#: What the inbox fills in when it reads a file, and never writes to one: a file holding one was not written by it.
_NEVER_STORED: Final = ("refused_by", "request_signature", "change_signature")

logger = logging.getLogger(__name__)


class RequestCodec:
    """How a request is turned into a file's bytes and back, checked, for one inbox.

    :param where: the inbox as a person names it (a folder's path, or ``s3://bucket/prefix``).
    :param key: the key the files written are signed with (None: unsigned).
    :param allowed_signers: who is trusted (default: the user's file); read only for a signed file.
    :param require_signed: refuse a request not signed, and last changed, by a trusted key; *now*
        is the clock that confirms an expiry recorded unsigned.
    """

    def __init__(
        self,
        where: str,
        *,
        key: KeySource | None = None,
        allowed_signers: Path | None = None,
        require_signed: bool = False,
        now: Callable[[], dt.datetime] | None = None,
    ) -> None:
        self.where = where
        self.key = key
        self.allowed_signers = allowed_signers
        self.require_signed = require_signed
        self._now = now
        self._unsealed_seen: set[str] = set()

    def decode(self, data: bytes, path: str | os.PathLike[str]) -> InboxRequest:
        """The request in *data*, the bytes of the file (or object) *path*, read strictly.

        :raises HandoffParseError: if it is not one strict JSON object (duplicate keys, NaN and the like are damage).
        :raises HandoffValidationError: if it is not a request, or not the one its name says.
        :raises SealError: if its seal is malformed or does not match: damaged or edited. A file with no
            seal (written before request files were sealed) is read unverified, with a warning logged once.
        :raises SignatureError, UntrustedSignerError: as :mod:`~handoff_files.inbox.signatures` checks it.
        """
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
        stem = PurePosixPath(os.fspath(path)).stem  # a URL's last part too
        if record.handoff_id != stem:
            msg = f"holds request {record.handoff_id}, not the {stem} its name says; {_FIX}"
            raise HandoffValidationError(path, msg)
        if sealed:
            _verify(document, seal, path)
            if signatures is not None:
                record = read_signatures({**document, SEAL_KEY: seal}, signatures, record, path, self._checker)
        elif signatures is not None:
            msg = f"carries signatures but no seal, which the inbox never writes; {_FIX}"
            raise SignatureError(path, msg)
        elif os.fspath(path) not in self._unsealed_seen:
            # written by a release before request files were sealed: read as it always was, said once
            self._unsealed_seen.add(os.fspath(path))
            logger.warning(
                "handoff inbox: %s: no seal (written before request files were sealed, or by hand): read "
                "unverified; the next change to the request seals it",
                path,
            )
        if self.require_signed:
            require_trusted(record, path, self._now() if self._now is not None else dt.datetime.now(dt.UTC))
        return record

    def checked(self, record: InboxRequest, data: bytes, path: str | os.PathLike[str]) -> InboxRequest:
        """*data* decoded as every reader will decode it, before it is written anywhere.

        :raises UntrustedSignerError: with :attr:`require_signed`, if this writer's file would be refused
            on reading (no key, or one ``allowed_signers`` does not trust): nothing is to be written.
        """
        try:
            return self.decode(data, path)
        except UntrustedSignerError as exc:
            key = self.key.key() if self.key is not None else None
            why = "no signing key: pass --sign-with KEYFILE" if key is None else f"{key.fingerprint} is not trusted"
            msg = f"refused, nothing written: signed requests are required here, and this change cannot be ({why})"
            raise UntrustedSignerError(path, msg) from exc

    def _checker(self) -> SignerCheck:
        from handoff_files.thread.signatures import SignerCheck  # noqa: PLC0415 -- only a signed file needs it

        return SignerCheck(self.allowed_signers)

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
            raise HandoffValidationError(self.where, msg)
        return data


def _verify(document: dict[str, Any], seal: object, path: str | os.PathLike[str]) -> None:
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
