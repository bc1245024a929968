"""Acknowledgement proofs: the MAC a "resumed" line made with the briefing's code carries, and its check.

A journal line is checked by a digest anyone can recompute, so a writer of the thread's folder can
append a "resumed" line that says ``code: "right"``. The library's own line also carries ``proof``:
an HMAC-SHA256 (hex) under the per-user key of :mod:`~handoff_files.foundation.secret`, kept
outside every thread, over the event, the ids, the generation, the generation's seal (as the
acknowledgement code uses it) and the line's own time. Without the key no one can make it, and a
proof copied from another thread, another generation or another moment does not check.

A MAC proves the code to this user only. A line written by a store with a signing key also carries
``signature``: an SSHSIG signature (namespace ``handoff-files``) over the same message, so another
user, whose ``allowed_signers`` trusts the key, can check that the agent took the briefing in too
(:func:`claim` takes a MAC that checks, else a signature by a trusted key).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import re
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal

from handoff_files.format import seal as sealing
from handoff_files.format.model import Handoff
from handoff_files.foundation.errors import HandoffError
from handoff_files.foundation.secret import ack_key
from handoff_files.thread.journal import Entry
from handoff_files.thread.signatures import SignerCheck

if TYPE_CHECKING:
    from handoff_files.signing.keys import SigningKey

__all__ = ["RESUMED", "SLACK", "Claim", "claim", "identity", "proof_fields"]

#: The journal event of an acknowledgement.
RESUMED: Final = "resumed"
#: Domain separation: a proof is never mistaken for an acknowledgement code (the code's message has no prefix).
_DOMAIN: Final = b"handoff-files resumed-line proof v1\n"
_HEX: Final = re.compile(r"[0-9a-f]{64}")

#: What a "resumed" line says of the code: ``proven`` (it claims the code and its proof checks),
#: ``forged`` (it claims the code but its proof is missing or does not check), ``replayed`` (its
#: proof checks but its time is before the moment the reader watches from: a copy of an older
#: line), ``none`` (no claim).
Claim = Literal["proven", "forged", "replayed", "none"]
#: How far a line's time may lie before *since* (clocks step; ``at`` is cut to the millisecond).
SLACK: Final = dt.timedelta(seconds=1)


def identity(handoff: Handoff) -> str:
    """The generation's seal identity as the code and the proof use it: ``ALGORITHM:DIGEST``.

    An older version migrated in memory has no seal: the sha256 of its content stands in for it.
    """
    if handoff.seal is not None:
        return f"{handoff.seal.algorithm}:{handoff.seal.digest}"
    return sealing.digest(sealing.canonical(handoff.model_dump(mode="json")), "sha256")


def _message(agent_id: str, thread_id: str, generation: int, seal: str, at: str) -> bytes:
    """What the proof's MAC, and its signature, are made over (the domain first: no seal's text starts so)."""
    return _DOMAIN + "\n".join((RESUMED, agent_id, thread_id, str(generation), seal, at)).encode()


def _mac(message: bytes) -> str:
    return hmac.new(ack_key(), message, hashlib.sha256).hexdigest()


def proof_fields(handoff: Handoff, at: str, key: SigningKey | None = None) -> dict[str, str]:
    """The fields a "resumed" line of *handoff*'s generation, written at *at*, carries to prove the code.

    ``agent_id`` (the generation's, which the line needs to be checked), ``proof`` (the MAC), for a
    generation without a seal ``identity`` (what stands in for it), and with *key* ``signature``.

    :raises HandoffError: if the acknowledgement key cannot be read or made.
    """
    seal = identity(handoff)
    fields = {"agent_id": handoff.agent_id}
    if handoff.seal is None:
        fields["identity"] = seal
    message = _message(handoff.agent_id, handoff.thread_id, handoff.generation, seal, at)
    fields["proof"] = _mac(message)
    if key is not None:
        fields["signature"] = key.sign(message)
    return fields


def claim(
    entry: Entry, *, thread_id: str | None, since: dt.datetime | None = None, signers: Path | None = None
) -> Claim:
    """Whether *entry* (a journal line of the thread *thread_id*) is an acknowledgement made with the code.

    Only the proof counts: a line that says ``code: "right"`` without a proof that checks under this
    user's key, this thread's id and the line's own generation, seal and time is ``forged``.

    :param thread_id: the thread's id, as a verified generation of it says (None: unknown, so nothing checks).
    :param since: when the reader began to watch (a start): a line older than that is ``replayed``.
    :param signers: the ``allowed_signers`` that judges a signature (default: the user's), when the
        MAC does not check (a line of another user's agent): a signature by a key it trusts proves it.
    """
    extra = entry.extra
    if entry.event != RESUMED or extra.get("code") != "right":
        return "none"
    agent_id, proof = extra.get("agent_id"), extra.get("proof")
    seal = entry.seal if entry.seal is not None else extra.get("identity")
    if (
        thread_id is None
        or entry.generation is None
        or not isinstance(agent_id, str)
        or not isinstance(seal, str)
        or not isinstance(proof, str)
        or not _HEX.fullmatch(proof)
    ):
        return "forged"
    message = _message(agent_id, thread_id, entry.generation, seal, entry.at)
    try:
        mac = _mac(message)
    except HandoffError:  # no key to check with: only a signature can prove the code
        mac = ""
    if not hmac.compare_digest(mac, proof) and not _signed(extra.get("signature"), message, entry, signers):
        return "forged"
    if since is not None and not _after(entry.at, since - SLACK):
        return "replayed"
    return "proven"


def _signed(signature: object, message: bytes, entry: Entry, signers: Path | None) -> bool:
    """Whether *signature* verifies over *message* and a key *signers* trusts (at the line's time) made it."""
    if not isinstance(signature, str):
        return False
    from handoff_files.signing import sshsig  # noqa: PLC0415 -- only a signed line loads the signing layer

    try:
        sshsig.verify(signature, message, "<resumed line>")
        when = dt.datetime.fromisoformat(entry.at)
    except (HandoffError, ValueError):
        return False
    return SignerCheck(signers).signer(signature, when, "<resumed line>").trusted


def _after(at: str, moment: dt.datetime) -> bool:
    """Whether the line's time *at* is at or after *moment* (a time that does not read is not)."""
    try:
        when = dt.datetime.fromisoformat(at)
    except ValueError:
        return False
    return when.tzinfo is not None and when >= moment
