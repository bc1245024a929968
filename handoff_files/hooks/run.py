"""Running a hook: one agent event on stdin in, the agent's documented answer out (``handoff hook AGENT``).

What each event does:

- session start (every source: startup, resume, clear, compact): journal the start (with the
  working tree's digest), then add the thread's briefing — ending with the instruction to
  acknowledge it with its code — to the model's context. A thread with nothing saved yet gets
  a short note saying so and asking for a save before the session stops; a thread that does
  not restore gets a note naming the problem, never an empty context.
- stop: see :mod:`~handoff_files.hooks.stop` (refused at most once per session, never while a
  stop hook is already keeping the agent going).
- pre-compact and session end: journal the event; nothing is said to the agent.
- any other event: nothing.

Bad input never raises: a body that is not a JSON event gives exit code 1 (every agent's
"this hook failed, carry on") and one line on stderr. So does a thread that cannot be written.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from handoff_files.foundation.errors import HandoffError, NoHandoffError
from handoff_files.hooks.event import HookEvent, parse_event
from handoff_files.hooks.formats import (
    AGENTS,
    ERROR_EXIT,
    Agent,
    block_output,
    context_output,
    quiet_output,
)
from handoff_files.hooks.location import default_thread
from handoff_files.hooks.sessions import record
from handoff_files.hooks.stop import stop_reason
from handoff_files.hooks.worktree import worktree_digest
from handoff_files.thread.journal import SAVE_EVENTS
from handoff_files.thread.layout import JOURNAL_NAME, PREVIOUS_JOURNAL_NAME
from handoff_files.thread.store import HandoffStore

__all__ = ["HookReply", "run_hook"]


@dataclass(frozen=True, slots=True)
class HookReply:
    """What ``handoff hook`` prints and returns: ``stdout`` as is, ``stderr`` (one line, or None), ``exit_code``."""

    stdout: str
    exit_code: int
    stderr: str | None = None


def run_hook(agent: Agent, event: bytes, *, thread: Path | None) -> HookReply:
    """Answer one hook event of *agent* (the bytes its hook got on stdin). Writes journal lines.

    :param agent: ``"claude-code"``, ``"codex"`` or ``"cursor"``.
    :param event: the event's JSON, as read from stdin.
    :param thread: the thread directory; None: ``.handoff/main`` in the project of the event's
        working directory (see :mod:`~handoff_files.hooks.location`).
    :returns: the reply; never raises for bad input or a thread that cannot be used.
    """
    if agent not in AGENTS:
        return HookReply("", ERROR_EXIT, f"handoff hook: unknown agent {agent!r}; use one of {', '.join(AGENTS)}")
    try:
        parsed = parse_event(agent, event)
    except HandoffError as exc:
        return HookReply("", ERROR_EXIT, _line(f"handoff hook {agent}: {exc}"))
    if parsed.kind is None:
        return HookReply(quiet_output(agent), 0)
    if thread is None:
        if parsed.cwd is None:
            why = f"the {parsed.who} event names no working directory; pass --thread DIR"
            return HookReply("", ERROR_EXIT, f"handoff hook {agent}: {why}")
        thread = default_thread(parsed.cwd)
    try:
        return _answer(parsed, thread)
    except HandoffError as exc:
        return HookReply("", ERROR_EXIT, _line(f"handoff hook {agent}: {exc}"))


def _answer(event: HookEvent, thread: Path) -> HookReply:
    store = HandoffStore(thread)
    if event.kind == "session_start":
        return _session_start(store, event, thread)
    if event.kind == "stop":
        reason = stop_reason(thread, event)
        return HookReply(block_output(event.agent, reason) if reason else quiet_output(event.agent), 0)
    what = "is about to compact its conversation" if event.kind == "pre_compact" else "session ended"
    record(store, event, f"{event.who} {what} ({event.detail or 'no detail given'})")
    return HookReply(quiet_output(event.agent), 0)


def _session_start(store: HandoffStore, event: HookEvent, thread: Path) -> HookReply:
    worktree = worktree_digest(event.cwd, exclude=thread) if event.cwd is not None else None
    problem = None
    try:
        record(store, event, f"{event.who} session started ({event.detail or 'no source given'})", worktree=worktree)
    except HandoffError as exc:  # the briefing matters more than the journal line: give it anyway
        problem = _line(f"handoff hook {event.agent}: the session start was not journaled: {exc}")
    return HookReply(context_output(event.agent, event.name, _briefing_text(thread)), 0, problem)


def _briefing_text(thread: Path) -> str:
    """The briefing of *thread*'s newest generation, or a note saying why there is none."""
    from handoff_files.uptake.briefing import briefing_for  # noqa: PLC0415 -- only a session start briefs

    try:
        briefing = briefing_for(thread)
    except NoHandoffError as exc:
        if not _nothing_saved(thread):
            return _unrestorable(thread, exc)
        briefing = None
    except HandoffError as exc:
        return _unrestorable(thread, exc)
    if briefing is not None:
        return briefing.text
    return (
        f"No handoff has been saved to {thread} yet: nothing was left for this session. Before you stop, save one "
        f"with the handoff_save tool (or `handoff save {thread} FILE`): the five layers — state, narrative, "
        "decisions, priorities, warnings — that whoever continues this work needs.\n"
    )


def _unrestorable(thread: Path, exc: HandoffError) -> str:
    return (
        f"The handoff thread {thread} holds a previous session's work, but it could not be restored: "
        f"{_line(str(exc))}. Do not start as if nothing was done before: tell the user, and run "
        f"`handoff doctor {thread}` to see what can be recovered.\n"
    )


def _nothing_saved(thread: Path) -> bool:
    """Whether *thread* holds only the hooks' own journal lines (no generation, no save ever journaled)."""
    store = HandoffStore(thread)
    if set(store.holdings()) - {JOURNAL_NAME, PREVIOUS_JOURNAL_NAME}:
        return False
    if store.history_dir.is_dir() and any(store.history_dir.iterdir()):
        return False  # a displaced or legacy copy: something was kept, so something was there
    entries, problems = store.journal.entries()
    return not problems and not any(entry.event in (*SAVE_EVENTS, "document") for entry in entries)


def _line(text: str) -> str:
    """*text* on one line (stderr gets one line per problem)."""
    return " ".join(text.split())
