"""A bucket thread's journal: each event its own object, created only if absent, named so a listing orders them.

A folder's journal is one file appended to under the writers' lock; a bucket has no append and no
lock, so each event (``resumed``, ``unacknowledged``, a caller's note …) is an object
``journal/<time in ns, 20 digits>-<8 random hex>.json`` holding one JSON line: writers on several
machines never overwrite one another's, and the listing's name order is the time order (to the
clocks' agreement). Each object is bounded (64 KiB) when written and when read.
"""

from __future__ import annotations

import hmac
import secrets
import time
from typing import Any, Final

import orjson

from handoff_files.foundation.clock import iso_z
from handoff_files.foundation.errors import HandoffNotFoundError, HandoffValidationError, WrongCodeError
from handoff_files.storage import Storage
from handoff_files.thread.ackcode import code_for, normalized
from handoff_files.thread.results import Acknowledgement, Restored

__all__ = ["JOURNAL", "MAX_EVENT", "acknowledge", "events", "record"]

JOURNAL: Final = "journal/"
#: the largest event object written or read
MAX_EVENT: Final = 64 * 1024


def record(storage: Storage, event: str, fields: dict[str, Any]) -> str:
    """Write *event* with *fields* (and the time) as a new object under ``journal/``; its key.

    :raises HandoffValidationError: if it is over :data:`MAX_EVENT` bytes.
    :raises HandoffError: if the store refuses it.
    """
    data = orjson.dumps({"event": event, "at": iso_z(), **fields}) + b"\n"
    if len(data) > MAX_EVENT:
        raise HandoffValidationError(storage.where, f"a journal event of {len(data):,} bytes: over {MAX_EVENT:,}")
    key = f"{JOURNAL}{time.time_ns():020d}-{secrets.token_hex(4)}.json"
    storage.create(key, data)
    return key


def events(storage: Storage) -> list[dict[str, Any]]:
    """The events, oldest first; an object gone meanwhile, too large or not a JSON object is passed over."""
    found = []
    for key in storage.list(JOURNAL):
        try:
            event = orjson.loads(storage.read(key, limit=MAX_EVENT).data)
        except (HandoffNotFoundError, HandoffValidationError, orjson.JSONDecodeError):
            continue
        if isinstance(event, dict):
            found.append(event)
    return found


def acknowledge(storage: Storage, restored: Restored, code: str | None) -> Acknowledgement:
    """Record that the agent took *restored* in ("resumed"), or refuse a wrong or empty *code* ("unacknowledged").

    :raises WrongCodeError: if *code* is not the generation's code (recorded first).
    """
    seal = str(restored.handoff.seal) if restored.handoff.seal else None
    generation = restored.generation
    if code is not None:
        given = normalized(code)
        if not given or not hmac.compare_digest(given, normalized(code_for(restored.handoff))):
            why = "wrong" if given else "missing"
            summary = f"a {why} acknowledgement code for generation {generation}: not acknowledged"
            record(storage, "unacknowledged", {"generation": generation, "seal": seal, "summary": summary, "code": why})
            shown = "an empty code" if not given else repr(code)
            msg = (
                f"{shown} is not the acknowledgement code of generation {generation}; take the code from that "
                "generation's briefing (a newer save changes it)"
            )
            raise WrongCodeError(storage.where, msg)
    how = "acknowledged with the briefing's code" if code is not None else "acknowledged without a code"
    summary = f"resumed from generation {generation} ({restored.source}), {how}"
    fields = {"generation": generation, "seal": seal, "summary": summary, "source": restored.source}
    record(storage, "resumed", {**fields, "code": "right" if code is not None else "missing"})
    return Acknowledgement(generation, restored.source, with_code=code is not None)
