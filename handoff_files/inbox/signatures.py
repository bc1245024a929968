"""Signed requests: the requester signs what it asked, and whoever writes a request file last signs the whole file.

A request file the inbox writes with a signing key carries, after its seal, ``signatures``:

- ``request``: the requester's SSHSIG signature (namespace ``handoff-files``) over the text
  ``ALGORITHM:DIGEST`` of the *offer*: the canonical JSON of the fields the requester set
  (:data:`OFFER_FIELDS`), digested with the seal's algorithm. Those fields never change after the
  request is made, so the signature travels unchanged through every later change of the file:
  what was asked, of whom, with which descriptor, stays the requester's word.
- ``change``: the signature of whoever wrote the file last (the requester when it is made, then
  the agent that accepted, rejected or completed it, or recorded that it expired) over the file's
  seal text, which covers every field.

Both sit outside what the seal covers, as a generation's signature does. A signature that does
not verify over what it signs is damage (:class:`~handoff_files.foundation.errors.SignatureError`:
the request was edited, or its descriptor swapped, after it was signed); who signed is looked up in
``allowed_signers`` and reported (:class:`~handoff_files.inbox.request.RequestSignature`). With
``require_signed``, a request not signed by a trusted key, or last changed by one that is not, is
refused (:class:`~handoff_files.foundation.errors.UntrustedSignerError`); so is a request whose
status changed without a trusted change signature, except an expiry the reader's own clock confirms.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from handoff_files.format import seal as sealing
from handoff_files.foundation.errors import SignatureError, UntrustedSignerError
from handoff_files.inbox.request import InboxRequest, RequestSignature
from handoff_files.inbox.status import HandoffStatus

if TYPE_CHECKING:
    from handoff_files.signing.keys import SigningKey
    from handoff_files.thread.signatures import SignerCheck

__all__ = ["OFFER_FIELDS", "SIGNATURES_KEY", "offer_text", "read_signatures", "require_trusted", "sign_file"]

#: The key, after the seal, of a request file's signatures.
SIGNATURES_KEY: Final = "signatures"
#: The fields a requester sets, which never change after: what its signature covers.
OFFER_FIELDS: Final = (
    "handoff_id",
    "from_agent",
    "to_agent",
    "reason",
    "priority",
    "capabilities_required",
    "descriptor",
    "metadata",
    "created_at",
    "expires_at",
)
_ROLES: Final = ("request", "change")
_MAX_ARMORED: Final = 4096  # an Ed25519 SSHSIG armored is about 300 bytes


def offer_text(document: dict[str, Any], algorithm: str) -> str:
    """``ALGORITHM:DIGEST`` of the offer in *document* (a request file's JSON): the message the requester signs.

    A field missing from the file is missing from the offer, so removing one breaks the signature.

    :raises ValueError: if a value has no canonical JSON form.
    """
    offer: dict[str, Any] = {name: document[name] for name in OFFER_FIELDS if name in document}
    return f"{algorithm}:{sealing.digest(sealing.canonical(offer), algorithm)}"


def sign_file(document: dict[str, Any], key: SigningKey | None, *, request: str | None, new: bool) -> None:
    """Add ``signatures`` to a sealed request file's *document*, in place (nothing when there is none to add).

    :param key: the writer's key, or None (an unsigned writer: the file keeps the requester's signature only).
    :param request: the requester's signature the file already carries, kept as it is.
    :param new: the request is being made: *key* signs the offer as the requester.
    """
    seal = document["seal"]
    signatures: dict[str, str] = {}
    if new and key is not None:
        signatures["request"] = key.sign(offer_text(document, seal["algorithm"]).encode())
    elif request is not None:
        signatures["request"] = request
    if key is not None:
        signatures["change"] = key.sign(f"{seal['algorithm']}:{seal['digest']}".encode())
    if signatures:
        document[SIGNATURES_KEY] = signatures


def read_signatures(
    document: dict[str, Any],
    signatures: object,
    record: InboxRequest,
    path: str | os.PathLike[str],
    checker: Callable[[], SignerCheck],
) -> InboxRequest:
    """*record* with the file's signatures verified and their signers looked up.

    :param document: the file's JSON without its ``signatures`` (its seal already verified).
    :param checker: makes the :class:`SignerCheck` (called only when the file has a signature).
    :raises SignatureError: if ``signatures`` is malformed, or a signature does not verify over what
        it signs (the request edited, or its descriptor swapped, after it was signed).
    """
    if not isinstance(signatures, dict) or not signatures or not set(signatures) <= set(_ROLES):
        msg = f'"{SIGNATURES_KEY}" is not an object of "request" and "change" signatures; fix or remove the file'
        raise SignatureError(path, msg)
    from handoff_files.signing import sshsig  # noqa: PLC0415 -- only a signed request loads the signing layer

    seal = document["seal"]
    messages = {"request": offer_text(document, seal["algorithm"]), "change": f"{seal['algorithm']}:{seal['digest']}"}
    found: dict[str, RequestSignature] = {}
    check = checker()
    for role in _ROLES:
        armored = signatures.get(role)
        if armored is None:
            continue
        if not isinstance(armored, str) or len(armored) > _MAX_ARMORED:
            msg = f"the {role} signature is not an armored SSH signature; fix or remove the file"
            raise SignatureError(path, msg)
        try:
            sshsig.verify(armored, messages[role].encode(), path)
        except SignatureError as exc:
            what = "what was requested (edited, or its descriptor swapped, since)" if role == "request" else "the file"
            msg = f"the {role} signature does not verify over {what}: {exc.reason}"
            raise SignatureError(path, msg) from exc
        report = check.signer(armored, _signed_at(record, role), path)
        found[role] = RequestSignature(
            signature=armored, fingerprint=report.fingerprint, principal=report.principal, problem=report.problem
        )
    return record.model_copy(
        update={"request_signature": found.get("request"), "change_signature": found.get("change")}
    )


def require_trusted(record: InboxRequest, path: str | os.PathLike[str], now: dt.datetime) -> None:
    """Refuse *record* unless a trusted key signed what was asked, and every change since.

    The inbox signs every file it writes with a key (the request, then each change), so a file
    without a trusted change signature was written by an unsigned writer or by hand: refused, but
    for a request past ``expires_at`` recorded EXPIRED, which the reader's own clock confirms.

    :raises UntrustedSignerError: naming the signature missing or not trusted, and why.
    """
    if record.request_signature is None or not record.request_signature.trusted:
        why = "unsigned" if record.request_signature is None else record.request_signature.describe()
        msg = f"request {record.handoff_id} is not signed by a trusted key ({why}); signed requests are required here"
        raise UntrustedSignerError(path, msg)
    change = record.change_signature
    if change is not None and change.trusted:
        return
    expired = record.status is HandoffStatus.EXPIRED and record.expires_at is not None and now >= record.expires_at
    if expired:
        return  # anyone may record what the clock says; the requester's signature covers expires_at
    why = "unsigned" if change is None else change.describe()
    msg = (
        f"request {record.handoff_id} was last changed (to {record.status.value}) without a trusted signature "
        f"({why}); signed requests are required here"
    )
    raise UntrustedSignerError(path, msg)


def _signed_at(record: InboxRequest, role: str) -> dt.datetime:
    """The moment a signature was made, by the file: when the request was made, or its last change."""
    if role == "request":
        return record.created_at
    changes = (record.accepted_at, record.rejected_at, record.completed_at)
    return max((at for at in changes if at is not None), default=record.created_at)
