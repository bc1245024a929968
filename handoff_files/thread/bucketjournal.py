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
from handoff_files.thread.journal import Entry
from handoff_files.thread.results import Acknowledgement, HistoryEntry, Restored

__all__ = ["JOURNAL", "MAX_EVENT", "acknowledge", "events", "record", "timeline"]

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


def timeline(storage: Storage, saved: list[HistoryEntry]) -> tuple[list[Entry], list[str]]:
    """The thread's story as a folder's journal tells it: a "saved" line per generation in *saved* (from
    ``history/``: a bucket journals no saves), and each event object, in time order; what could not be read.

    An event object is input from the bucket: one whose fields are not of the kinds the library writes
    is named in the problems, not shown.
    """
    lines: list[Entry] = []
    problems: list[str] = []
    for entry in saved:
        if entry.generation is None or entry.created_at is None or entry.problem is not None:
            # damaged, renumbered or another thread's: no save of this thread to tell
            problems.append(f"{entry.where}: {entry.problem or 'not a generation'}")
            continue
        summary = f"saved generation {entry.generation}"
        lines.append(Entry("saved", iso_z(entry.created_at), entry.generation, entry.checksum, summary, {}))
    for key in storage.list(JOURNAL):
        try:
            event = orjson.loads(storage.read(key, limit=MAX_EVENT).data)
        except HandoffNotFoundError:
            continue
        except (HandoffValidationError, orjson.JSONDecodeError) as exc:
            problems.append(f"{storage.where}/{key}: not an event ({exc})")
            continue
        line = _entry(event)
        if line is None:
            problems.append(f"{storage.where}/{key}: not an event the library writes")
        else:
            lines.append(line)
    lines.sort(key=lambda line: line.at)
    return lines, problems


def _entry(event: object) -> Entry | None:
    """*event* as a journal entry, if its fields are of the kinds the library writes."""
    if not isinstance(event, dict):
        return None
    name, at, generation, seal, summary = (event.get(k) for k in ("event", "at", "generation", "seal", "summary"))
    if not (isinstance(name, str) and isinstance(at, str) and isinstance(summary, str)):
        return None
    if not (generation is None or (isinstance(generation, int) and not isinstance(generation, bool))):
        return None
    if not (seal is None or isinstance(seal, str)):
        return None
    extra = {k: v for k, v in event.items() if k not in {"event", "at", "generation", "seal", "summary"}}
    return Entry(name, at, generation, seal, summary, extra)


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
