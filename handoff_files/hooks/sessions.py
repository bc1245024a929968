"""Sessions: what the hooks remember of an agent's sessions, kept as "hook" lines in the thread's journal.

Every hook event the hooks act on is one journal line (``HandoffStore.note``): event ``hook``, with
``agent`` (``claude-code``, ``codex``, ``cursor``), ``hook_event`` (the agent's own event name) and
``session_id``, plus the event's detail: a start's ``source`` as ``start_source`` (``source`` is
the library's own field, a restore's, which notes may not set; lines written before kept it as
``source`` and still read), a compaction's ``trigger``, an end's ``reason``. A session start also
records ``worktree`` (see :mod:`~handoff_files.hooks.worktree`); a stop the hooks refused records
``blocked: true``. The journal is the only memory: a hook is a new process every time.

A session began at its newest start line, except that a start after a compaction (source
``compact``) continues the session it compacted rather than starting a new one.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, Final

from handoff_files.foundation.errors import HandoffError
from handoff_files.hooks.event import HookEvent
from handoff_files.hooks.formats import EVENT_KINDS, EventKind
from handoff_files.thread.ackproof import RESUMED, claim
from handoff_files.thread.journal import Entry
from handoff_files.thread.mirror import read_mirror
from handoff_files.thread.store import HandoffStore

__all__ = ["HOOK_EVENT", "SessionLog", "read_session", "record"]

#: The journal event of every line the hooks write.
HOOK_EVENT: Final = "hook"
#: The field each kind of event keeps its detail under, as the agents name it.
_DETAIL_FIELD: Final[dict[EventKind, str]] = {
    "session_start": "start_source",
    "pre_compact": "trigger",
    "session_end": "reason",
}


@dataclass(frozen=True, slots=True)
class SessionLog:
    """What the journal says of one session: when it started (None: no start line), its working
    tree's digest then, and whether a stop was already refused in it."""

    started: dt.datetime | None
    worktree: str | None
    blocked: bool
    briefed: int | None = None  # the generation its start's briefing showed, with a code
    acknowledged: bool = False  # a "resumed" line with the briefing's code since it started
    reported: bool = False  # a missing acknowledgement was already journaled for it


def record(store: HandoffStore, event: HookEvent, summary: str, **fields: Any) -> None:
    """Journal *event* as one "hook" line (under the writers' lock, which it takes again if held). Writes.

    :raises HandoffError: if the line cannot be written (the lock, the disk).
    """
    named = _DETAIL_FIELD.get(event.kind) if event.kind is not None else None
    detail = {named: event.detail} if named is not None else {}
    store.note(
        HOOK_EVENT,
        summary,
        agent=event.agent,
        hook_event=event.name,
        session_id=event.session,
        **detail,
        **fields,
    )


def read_session(store: HandoffStore, event: HookEvent) -> SessionLog:
    """Find *event*'s session in the journal: its start and whether a stop was refused in it.

    Damaged journal lines are passed over (the journal reports them elsewhere). Under the
    writers' lock (:meth:`HandoffStore.locked`), no other hook's line lands until it is let go.
    """
    entries, _ = store.journal.entries()
    kinds = EVENT_KINDS[event.agent]
    start: tuple[str, dict[str, Any]] | None = None
    blocked = reported = False
    claimed: list[Entry] = []  # "resumed" lines that say they were made with the code (their proofs say if so)
    for entry in entries:
        extra = entry.extra
        if entry.event == RESUMED and extra.get("code") == "right" and entry.generation is not None:
            claimed.append(entry)
        if entry.event != HOOK_EVENT or extra.get("agent") != event.agent or extra.get("session_id") != event.session:
            continue
        reported = reported or "unacknowledged" in extra
        kind = kinds.get(str(extra.get("hook_event")))
        if kind == "session_start" and (start is None or extra.get("start_source", extra.get("source")) != "compact"):
            start = (entry.at, extra)
        elif kind == "stop" and extra.get("blocked") is True:
            blocked = True
    if start is None:
        return SessionLog(None, None, blocked)
    at, extra = start
    worktree = extra.get("worktree")
    briefed = extra.get("briefed") if isinstance(extra.get("briefed"), int) else None
    began = _moment(at)
    since = [entry for entry in claimed if _answers(entry, began, briefed)]
    # only a proof that checks counts: a line saying "right" is what any writer of the folder can append
    thread_id = _thread_id(store) if since else None
    acknowledged = any(claim(entry, thread_id=thread_id) == "proven" for entry in since)
    return SessionLog(began, worktree if isinstance(worktree, str) else None, blocked, briefed, acknowledged, reported)


def _answers(entry: Entry, began: dt.datetime | None, briefed: int | None) -> bool:
    """Whether *entry* acknowledges the briefing of generation *briefed* shown at *began* (or a newer one)."""
    when = _moment(entry.at)
    if briefed is None or began is None or when is None or entry.generation is None:
        return False
    return when >= began and entry.generation >= briefed


def _thread_id(store: HandoffStore) -> str | None:
    """The thread's id, which no save changes: as state.json says, else the newest verified generation
    (None: neither reads, so no proof checks).
    """
    try:
        return read_mirror(store.mirror_path).thread_id
    except HandoffError:
        pass  # missing or damaged: the generations still tell
    try:
        return store.restore().handoff.thread_id
    except HandoffError:
        return None


def _moment(text: str) -> dt.datetime | None:
    """A journal line's ``at`` as an aware time; None if it does not read as one."""
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None
