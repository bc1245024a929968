"""Running a hook: one agent event on stdin in, the agent's documented answer out (``handoff hook AGENT``).

What each event does:

- session start (every source: startup, resume, clear, compact): journal the start (with the
  working tree's digest), then add the thread's briefing — ending with the instruction to
  acknowledge it with its code — to the model's context, but only from a thread this user
  trusts (:mod:`~handoff_files.thread.trust`): from any other that holds saves (a repository
  someone else wrote, say) the context gets one line saying why not and how to trust it. A
  thread with nothing saved yet gets a short note saying so and asking for a save before the
  session stops; a thread that does not restore gets a note naming the problem, never an empty
  context. A damaged acknowledgement key does not hide the briefing: it is given without a code
  (it says so), and stderr says so too.
- stop: see :mod:`~handoff_files.hooks.stop` (refused at most once per session, never while a
  stop hook is already keeping the agent going).
- pre-compact and session end: journal the event; nothing is said to the agent.
- any other event: nothing.

Without ``--thread``, the thread is ``.handoff/main`` of the project install set up around the
event's working directory (:mod:`~handoff_files.hooks.location`); where there is none the hook
makes nothing, answers as if it had nothing to say, and says why in one stderr line (exit 0: a
project not set up is no failure of the agent's). A thread given by name gets its missing folders,
each 0700.

Nothing raises: a body that is not a JSON event gives exit code 1 (every agent's "this hook
failed, carry on") and one line on stderr. So does a thread that cannot be used, whatever the
system says of it (a working directory that is a file, a name too long): every ``HandoffError``,
``OSError`` and ``ValueError`` becomes that line.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from handoff_files.foundation.commandline import suggest
from handoff_files.foundation.errors import HandoffError
from handoff_files.hooks.event import HookEvent, parse_event
from handoff_files.hooks.formats import (
    AGENTS,
    ERROR_EXIT,
    Agent,
    block_output,
    context_output,
    hook_lock_wait,
    quiet_output,
)
from handoff_files.hooks.location import HANDOFF_DIR, default_thread
from handoff_files.hooks.sessions import read_session, record
from handoff_files.hooks.stop import stop_reason
from handoff_files.hooks.worktree import worktree_digest
from handoff_files.thread.notes import ever_saved
from handoff_files.thread.store import HandoffStore
from handoff_files.thread.trust import why_untrusted

__all__ = ["HookReply", "run_hook"]

#: What a hook turns into one stderr line: the library's errors, and the system's (a path it
#: refuses, a folder that is a file) wherever they come from; a hook never prints a traceback.
_FAILURES: Final = (HandoffError, OSError, ValueError)


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
    :returns: the reply; never raises for bad input or a thread that cannot be used (see :data:`_FAILURES`).
    """
    if agent not in AGENTS:
        return HookReply("", ERROR_EXIT, f"handoff hook: unknown agent {agent!r}; use one of {', '.join(AGENTS)}")
    try:
        parsed = parse_event(agent, event)
    except HandoffError as exc:
        return HookReply("", ERROR_EXIT, _line(f"handoff hook {agent}: {exc}"))
    if parsed.kind is None:
        return HookReply(quiet_output(agent), 0)
    try:
        where = _thread(parsed, thread)
        return where if isinstance(where, HookReply) else _answer(parsed, where)
    except _FAILURES as exc:
        return HookReply("", ERROR_EXIT, _line(f"handoff hook {agent}: {exc}"))


def _thread(event: HookEvent, given: Path | None) -> Path | HookReply:
    """The thread *event* goes to, or the reply when it goes to none (no working directory, no project).

    A thread found from the working directory is in a project install set up (its ``.handoff`` is
    there); a thread given by name gets its missing folders made, private. Nothing else is made.
    """
    if given is not None:
        if event.kind != "stop":  # a stop only ever writes to a thread its session's start made
            _make_parents(given)
        return given
    if event.cwd is None:
        why = f"the {event.who} event names no working directory; pass --thread DIR"
        return HookReply("", ERROR_EXIT, f"handoff hook {event.agent}: {why}")
    found = default_thread(event.cwd)
    if found is None:
        return HookReply(quiet_output(event.agent), 0, _line(f"handoff hook {event.agent}: {_not_set_up(event)}"))
    return found


def _not_set_up(event: HookEvent) -> str:
    """Why a hook without ``--thread`` did nothing: the event's working directory is in no project set up."""
    return (
        f"nothing done: {event.cwd} is in no project set up for handoff (no {HANDOFF_DIR} folder from there "
        f"up to its repository's top); to use one, run `handoff install {event.agent}` in the project, "
        "or give the hook --thread"
    )


def _make_parents(thread: Path) -> None:
    """Make the missing folders above a thread given by name, each private (0700), as the thread itself is.

    :raises OSError: if one cannot be made (the caller reports it in one line).
    """
    missing = [folder for folder in thread.absolute().parents if not folder.is_dir()]
    for folder in reversed(missing):
        folder.mkdir(mode=0o700)  # mkdir(parents=True) would make every folder above the last one 0755


def _answer(event: HookEvent, thread: Path) -> HookReply:
    store = HandoffStore(thread, lock_timeout=hook_lock_wait(event.kind))
    if event.kind == "session_start":
        return _session_start(store, event, thread)
    if event.kind == "stop":
        reason = stop_reason(thread, event)
        untaken = _uptake_missing(store, event, thread)
        if reason and untaken:
            reason += f" Also acknowledge the briefing you were given at the start: {untaken}"
        output = block_output(event.agent, reason) if reason else quiet_output(event.agent)
        return HookReply(output, 0, _line(f"handoff hook {event.agent}: {untaken}") if untaken else None)
    what = "is about to compact its conversation" if event.kind == "pre_compact" else "session ended"
    record(store, event, f"{event.who} {what} ({event.detail or 'no detail given'})")
    untaken = _uptake_missing(store, event, thread) if event.kind == "session_end" else None
    return HookReply(quiet_output(event.agent), 0, _line(f"handoff hook {event.agent}: {untaken}") if untaken else None)


def _uptake_missing(store: HandoffStore, event: HookEvent, thread: Path) -> str | None:
    """Say (once a session, journaled) that it was briefed but never acknowledged the briefing's code.

    An agent that restores but never reads its briefing is what the code is there to catch: the
    journal gets a "hook" line with ``unacknowledged`` (the generation), the person a stderr line.
    """
    log = read_session(store, event)
    if log.briefed is None or log.acknowledged or log.reported:
        return None
    told = (
        f"the session never acknowledged its briefing of generation {log.briefed} with the code it ended with "
        f"(the handoff_acknowledge tool, or {suggest('handoff', 'acknowledge', thread, 'CODE')}): "
        "did the model read it?"
    )
    record(store, event, f"{event.who} session did not acknowledge its briefing of generation {log.briefed}",
           unacknowledged=log.briefed)  # fmt: skip
    return told


def _session_start(store: HandoffStore, event: HookEvent, thread: Path) -> HookReply:
    worktree = worktree_digest(event.cwd, exclude=thread) if event.cwd is not None else None
    problems: list[str] = []
    text, untold, briefed = _context(thread)
    if untold is not None:
        problems.append(untold)
    try:
        summary = f"{event.who} session started ({event.detail or 'no source given'})"
        record(store, event, summary, worktree=worktree, briefed=briefed)
    except _FAILURES as exc:  # the briefing matters more than the journal line: give it anyway
        problems.insert(0, f"the session start was not journaled: {exc}")
    problem = _line(f"handoff hook {event.agent}: {'; '.join(problems)}") if problems else None
    return HookReply(context_output(event.agent, event.name, text), 0, problem)


def _context(thread: Path) -> tuple[str, str | None, int | None]:
    """The briefing of *thread*'s newest generation, or a note saying why there is none; what the
    person must be told as well (None: nothing); and the generation briefed with a code (None: none).

    :raises OSError, ValueError: if the thread's folder cannot be used at all (the caller reports it).
    """
    from handoff_files.uptake.briefing import briefing_for  # noqa: PLC0415 -- only a session start briefs

    refused = _untrusted(thread)
    if refused is not None:
        return refused + "\n", refused, None
    try:
        briefing = briefing_for(thread)  # None only when nothing was ever saved there (ever_saved's rule)
    except HandoffError as exc:
        return _unrestorable(thread, exc), None, None
    if briefing is None:
        fresh = (
            f"No handoff has been saved to {thread} yet: nothing was left for this session. Before you stop, save "
            f"one with the handoff_save tool (or {suggest('handoff', 'save', thread, 'FILE')}): "
            "the five layers — state, "
            "narrative, decisions, priorities, warnings — that whoever continues this work needs.\n"
        )
        return fresh, None, None
    if briefing.code is None:  # the key is damaged: the briefing says so, and only the person can mend it
        return (
            briefing.text,
            (
                f"the briefing was given without an acknowledgement code: the acknowledgement key is damaged "
                f"({suggest('handoff', 'brief', thread)} says why)"
            ),
            None,
        )
    return briefing.text, None, briefing.generation


def _untrusted(thread: Path) -> str | None:
    """The one line said instead of a briefing when *thread* holds saves this user has not trusted; else None.

    A thread with nothing saved yet needs no trust: there is nothing in it to brief (see
    :mod:`~handoff_files.thread.trust` for what makes a thread trusted).
    """
    try:
        saved = ever_saved(HandoffStore(thread).layout)
    except HandoffError:
        saved = True  # something is there that cannot be read: it is no fresh start either
    if not saved:
        return None
    try:
        why = why_untrusted(thread)
    except HandoffError as exc:
        why = str(exc)
    if why is None or _signed_by_a_trusted_key(thread):
        return None
    return _line(
        f"No briefing was given from {thread}: {why}. If you trust it, run `handoff trust {shlex.quote(str(thread))}`."
    )


def _signed_by_a_trusted_key(thread: Path) -> bool:
    """Whether the generation a restore returns is signed by a key this user's ``allowed_signers`` trusts.

    That is how a team shares a briefing inside a repository: each person's key in a reviewed
    ``allowed_signers``, and the thread's newest generation signed by one of them. A newer unsigned
    or untrusted generation (someone else's commit) is not: the gate holds.
    """
    try:
        signed = HandoffStore(thread, signing_key=False).restore().signature
    except HandoffError:
        return False
    return signed is not None and signed.trusted


def _unrestorable(thread: Path, exc: HandoffError) -> str:
    return (
        f"The handoff thread {thread} holds a previous session's work, but it could not be restored: "
        f"{_line(str(exc))}. Do not start as if nothing was done before: tell the user, and run "
        f"{suggest('handoff', 'doctor', thread)} to see what can be recovered.\n"
    )


def _line(text: str) -> str:
    """*text* on one line (stderr gets one line per problem)."""
    return " ".join(text.split())
