"""The stop rule: when an agent about to stop is asked, once, to save a handoff first.

A stop is refused (Claude Code and Codex: ``decision: block``; Cursor: a follow-up message) only
when all of these hold:

1. the agent is not already going on because of a stop hook (``stop_hook_active`` is false;
   Cursor's ``loop_count`` is 0) and, for Cursor, the turn ended ``completed``;
2. the journal holds this session's start (the ``SessionStart`` hook ran) and no refused stop
   of this session: the hooks ask at most once per session, whatever happens next;
3. no generation was saved since the session started (the newest verified generation's
   ``created_at`` is before the start, or there is none);
4. the session changed files (its working tree's digest differs from the one taken at its
   start) or has run for :data:`LONG_SESSION` or more.

The refusal is journaled before it is answered; if that line cannot be written the agent is let
go, so a hook that cannot remember asking never asks twice. The last look for an earlier refusal
and the refusal's line are made under one hold of the thread's writers' lock: two hooks for one
stop (the hook installed at user and at project level, say) that run at once ask once between
them. Whatever cannot be told (a thread that does not restore, no git) counts as "do not ask": a
stop hook errs towards letting go.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Final

from handoff_files.foundation.clock import iso_z, utc_now
from handoff_files.foundation.commandline import suggest
from handoff_files.foundation.errors import HandoffError, NoHandoffError
from handoff_files.hooks.event import HookEvent
from handoff_files.hooks.formats import hook_lock_wait
from handoff_files.hooks.sessions import read_session, record
from handoff_files.hooks.worktree import worktree_digest
from handoff_files.thread.store import HandoffStore

__all__ = ["LONG_SESSION", "stop_reason"]

#: How long a session runs before a stop asks for a handoff even when no file changed.
LONG_SESSION: Final = dt.timedelta(minutes=30)


def stop_reason(thread: Path, event: HookEvent, *, now: dt.datetime | None = None) -> str | None:
    """The reason to give the model for not stopping yet, or None to let the agent stop. Writes when it asks.

    :param thread: the thread the session saves to.
    :param event: the ``Stop`` (Cursor: ``stop``) event.
    :param now: the current time (tests pass one; default: the clock).
    :raises HandoffError: if the thread directory cannot be opened (a bad name, an unreadable folder).
    """
    if event.continuing or event.session is None:
        return None
    if event.agent == "cursor" and event.status not in (None, "completed"):
        return None  # aborted by the user, or an error: not a finished turn to follow up on
    store = HandoffStore(thread, lock_timeout=hook_lock_wait("stop"))
    log = read_session(store, event)
    if log.started is None or log.blocked:
        return None
    saved = _newest_save(store)
    if saved is None or saved >= log.started:
        return None
    return _ask(store, event, thread=thread, started=log.started, worktree=log.worktree, now=now)


def _newest_save(store: HandoffStore) -> dt.datetime | None:
    """When the newest verified generation was saved; the epoch for none; None when it cannot be told."""
    try:
        return store.restore().handoff.created_at
    except NoHandoffError:
        return dt.datetime.min.replace(tzinfo=dt.UTC)
    except HandoffError:
        return None


def _ask(
    store: HandoffStore,
    event: HookEvent,
    *,
    thread: Path,
    started: dt.datetime,
    worktree: str | None,
    now: dt.datetime | None,
) -> str | None:
    """Journal the refusal and return its reason, if the session did enough to deserve one."""
    ran = (now or utc_now()) - started
    changed = (
        worktree is not None
        and event.cwd is not None
        and worktree_digest(event.cwd, exclude=thread) not in (None, worktree)
    )
    if not changed and ran < LONG_SESSION:
        return None
    minutes = int(ran.total_seconds() // 60)
    why = "it has changed files" if changed else f"it has run for {minutes} minutes"
    try:
        # the digest (git) is taken outside the lock, which a save may be waiting for; the check
        # and the line inside it, so that of two hooks racing here only the first one asks
        with store.locked():
            if read_session(store, event).blocked:
                return None  # another hook of this session asked while this one looked
            record(
                store,
                event,
                f"{event.who} was asked to save a handoff before stopping ({why}, nothing saved since it started)",
                blocked=True,
                changed_files=changed,
                minutes=minutes,
            )
    except HandoffError:
        return None  # not remembered: asking now could mean asking again at the next stop
    return (
        f"No handoff has been saved to {thread} since this session started ({iso_z(started, timespec='seconds')}), "
        f"and {why}. Before you stop, save one with the handoff_save tool "
        f"(or {suggest('handoff', 'save', thread, 'FILE')}): "
        "the five layers — state, narrative, decisions, priorities, warnings — that whoever continues this work "
        "needs. Then stop; this session will not be asked again."
    )
