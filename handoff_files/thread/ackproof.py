"""Acknowledgement proofs: the MAC a "resumed" line made with the briefing's code carries, and its check.

A journal line is checked by a digest anyone can recompute, so a writer of the thread's folder can
append a "resumed" line that says ``code: "right"``. The library's own line also carries ``proof``:
an HMAC-SHA256 (hex) under the per-user key of :mod:`~handoff_files.foundation.secret`, kept
outside every thread, over the event, the ids, the generation, the generation's seal (as the
acknowledgement code uses it) and the line's own time. Without the key no one can make it, and a
proof copied from another thread, another generation or another moment does not check.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import re
from typing import Final, Literal

from handoff_files.format import seal as sealing
from handoff_files.format.model import Handoff
from handoff_files.foundation.errors import HandoffError
from handoff_files.foundation.secret import ack_key
from handoff_files.thread.journal import Entry

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


def _mac(*, agent_id: str, thread_id: str, generation: int, seal: str, at: str) -> str:
    message = "\n".join((RESUMED, agent_id, thread_id, str(generation), seal, at)).encode()
    return hmac.new(ack_key(), _DOMAIN + message, hashlib.sha256).hexdigest()


def proof_fields(handoff: Handoff, at: str) -> dict[str, str]:
    """The fields a "resumed" line of *handoff*'s generation, written at *at*, carries to prove the code.

    ``agent_id`` (the generation's, which the line needs to be checked), ``proof`` (the MAC) and,
    for a generation without a seal, ``identity`` (what stands in for it).

    :raises HandoffError: if the acknowledgement key cannot be read or made.
    """
    seal = identity(handoff)
    fields = {"agent_id": handoff.agent_id}
    if handoff.seal is None:
        fields["identity"] = seal
    mac = _mac(agent_id=handoff.agent_id, thread_id=handoff.thread_id, generation=handoff.generation, seal=seal, at=at)
    return {**fields, "proof": mac}


def claim(entry: Entry, *, thread_id: str | None, since: dt.datetime | None = None) -> Claim:
    """Whether *entry* (a journal line of the thread *thread_id*) is an acknowledgement made with the code.

    Only the proof counts: a line that says ``code: "right"`` without a proof that checks under this
    user's key, this thread's id and the line's own generation, seal and time is ``forged``.

    :param thread_id: the thread's id, as a verified generation of it says (None: unknown, so nothing checks).
    :param since: when the reader began to watch (a start): a line older than that is ``replayed``.
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
    try:
        mac = _mac(agent_id=agent_id, thread_id=thread_id, generation=entry.generation, seal=seal, at=entry.at)
    except HandoffError:  # no key to check with: nothing proves the code
        return "forged"
    if not hmac.compare_digest(mac, proof):
        return "forged"
    if since is not None and not _after(entry.at, since - SLACK):
        return "replayed"
    return "proven"


def _after(at: str, moment: dt.datetime) -> bool:
    """Whether the line's time *at* is at or after *moment* (a time that does not read is not)."""
    try:
        when = dt.datetime.fromisoformat(at)
    except ValueError:
        return False
    return when.tzinfo is not None and when >= moment
