"""Acknowledgement codes: a short code tied to one generation, known only to whoever read its briefing.

The code is an HMAC of the generation's identity (ids, number, seal) under the per-user key of
:mod:`~handoff_files.foundation.secret`, which is kept outside the thread directory. A model shown
the briefing repeats the code; a process that read only the thread's files cannot produce it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from typing import Final

from handoff_files.format.model import Handoff
from handoff_files.foundation.commandline import suggest
from handoff_files.foundation.errors import WrongCodeError
from handoff_files.foundation.secret import ack_key
from handoff_files.thread import recovery
from handoff_files.thread.ackproof import identity
from handoff_files.thread.results import Acknowledgement, Restored
from handoff_files.thread.settings import ThreadSettings

__all__ = ["accept", "code_for", "normalized"]

_LENGTH: Final = 8  # 40 bits: a guess is right once in a trillion tries


def code_for(handoff: Handoff) -> str:
    """The acknowledgement code of *handoff*'s generation, as ``XXXX-XXXX``.

    :raises HandoffError: if the acknowledgement key cannot be read or made.
    """
    message = f"{handoff.agent_id}\n{handoff.thread_id}\n{handoff.generation}\n{identity(handoff)}".encode()
    mac = hmac.new(ack_key(), message, hashlib.sha256).digest()
    text = base64.b32encode(mac).decode("ascii")[:_LENGTH]
    return f"{text[:4]}-{text[4:]}"


def normalized(code: str) -> str:
    """*code* as compared: upper case, without spaces or dashes (a model may retype it loosely)."""
    return "".join(code.split()).replace("-", "").upper()


def accept(thread: ThreadSettings, restored: Restored, code: str | None) -> Acknowledgement:
    """Acknowledge *restored*: journal "resumed", or refuse a wrong or empty code. Writes (under the lock).

    :param code: the code the agent gave; None for an agent that gives none (journaled as such).
    :raises WrongCodeError: if *code* is not *restored*'s generation's code (journaled first).
    """
    if code is not None:
        given = normalized(code)
        if not given or not hmac.compare_digest(given, normalized(code_for(restored.handoff))):
            why = "wrong" if given else "missing"
            recovery.refuse_acknowledgement(thread, restored, why=why)
            msg = (
                f"{'an empty code' if not given else repr(code)} is not the acknowledgement code of generation "
                f"{restored.generation}; take the code from that generation's briefing "
                f"({suggest('handoff', 'brief', thread.path)} "
                "or the handoff_restore tool) — a newer save changes it"
            )
            raise WrongCodeError(thread.path, msg)
    recovery.acknowledge(thread, restored, with_code=code is not None)
    return Acknowledgement(restored.generation, restored.source, with_code=code is not None)
