"""Hook formats: each coding agent's event names on stdin and the JSON it reads back on stdout.

The shapes, as each agent documents them (the tests keep a copy of each, with its address):

Claude Code (https://code.claude.com/docs/en/hooks): events ``SessionStart`` (``source``:
startup, resume, clear, compact), ``Stop`` (``stop_hook_active``), ``PreCompact`` (``trigger``),
``SessionEnd`` (``reason``); every event carries ``session_id``, ``transcript_path``, ``cwd``,
``hook_event_name``. Context goes back as ``{"hookSpecificOutput": {"hookEventName":
"SessionStart", "additionalContext": …}}``; a stop is refused with ``{"decision": "block",
"reason": …}``. Exit 0 reads stdout; 2 is a blocking error; any other code is a non-blocking
error whose stderr the user sees.

Codex (https://developers.openai.com/codex/hooks and the schemas in openai/codex
``codex-rs/hooks/schema/generated/``): the same event and field names as Claude Code for
``SessionStart`` (``source``: startup, resume, clear; compact in newer releases), ``Stop`` and
``PreCompact``, the same two output objects, and the same exit codes; ``SessionEnd``
(``reason``, as Claude Code's), whose hook Codex stops after 3 s at most (openai/codex PR #33895).

Cursor (https://cursor.com/docs/agent/hooks): camelCase events ``sessionStart``, ``stop``
(``status``, ``loop_count``), ``preCompact``, ``sessionEnd``; every event carries
``conversation_id``, ``generation_id``, ``hook_event_name`` and ``workspace_roots`` but no
``cwd``. Context goes back as ``{"additional_context": …}``; a stop is answered with
``{"followup_message": …}``, which Cursor sends as the next user message (at most
``loop_limit`` times, 5 unless the hook entry says otherwise). Exit 2 denies; any other
non-zero code is a failed hook and the agent goes on. Cursor has no ``stop_hook_active``: its
equivalent is ``loop_count`` (0 on the first stop of a turn).
"""

from __future__ import annotations

import json
from typing import Final, Literal

__all__ = [
    "AGENTS",
    "DISPLAY_NAMES",
    "ERROR_EXIT",
    "EVENT_KINDS",
    "Agent",
    "EventKind",
    "block_output",
    "context_output",
    "hook_lock_wait",
    "quiet_output",
]

#: The coding agents whose hooks ``handoff hook`` speaks.
Agent = Literal["claude-code", "codex", "cursor"]
AGENTS: Final[tuple[Agent, ...]] = ("claude-code", "codex", "cursor")
#: How the agents are named to people (in journal lines and messages).
DISPLAY_NAMES: Final[dict[Agent, str]] = {"claude-code": "Claude Code", "codex": "Codex", "cursor": "Cursor"}

#: What the hooks do something on; every other event is answered with nothing.
EventKind = Literal["session_start", "stop", "pre_compact", "session_end"]
#: Each agent's own name of each event kind, as its ``hook_event_name`` spells it.
EVENT_KINDS: Final[dict[Agent, dict[str, EventKind]]] = {
    "claude-code": {
        "SessionStart": "session_start",
        "Stop": "stop",
        "PreCompact": "pre_compact",
        "SessionEnd": "session_end",
    },
    "codex": {
        "SessionStart": "session_start",
        "Stop": "stop",
        "PreCompact": "pre_compact",
        "SessionEnd": "session_end",  # capped at 3 s by Codex: the hook's lock wait is 1 s
    },
    "cursor": {
        "sessionStart": "session_start",
        "stop": "stop",
        "preCompact": "pre_compact",
        "sessionEnd": "session_end",
    },
}

#: Seconds a hook waits for the thread's writers' lock (a save in progress takes milliseconds; a
#: writer stuck longer is reported). Well inside the agents' hook timeouts: install writes 30 s for
#: every hook but the session end's 10 s (Claude Code, Cursor), and Codex caps a SessionEnd hook at
#: 3 s, whatever its entry says; starting Python and answering need the rest.
_LOCK_WAIT: Final = 5.0
_END_LOCK_WAIT: Final = 1.0


def hook_lock_wait(kind: EventKind | None) -> float:
    """Seconds a hook of *kind* waits for the thread's writers' lock before it answers without it."""
    return _END_LOCK_WAIT if kind == "session_end" else _LOCK_WAIT


#: The exit code of a hook that could not do its work: every agent reads any code but 0 and 2 as
#: "this hook failed, carry on" and shows the stderr line; 2 would block or deny, so it is never used.
ERROR_EXIT: Final = 1


def _dumps(document: dict[str, object]) -> str:
    # one line of compact UTF-8 JSON: every agent reads stdout as one JSON document
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")) + "\n"


def context_output(agent: Agent, event_name: str, text: str) -> str:
    """The stdout that adds *text* to the model's context at the start of a session.

    :param event_name: the event as the agent named it (Claude Code and Codex repeat it back).
    """
    if agent == "cursor":
        return _dumps({"additional_context": text})
    return _dumps({"hookSpecificOutput": {"hookEventName": event_name, "additionalContext": text}})


def block_output(agent: Agent, reason: str) -> str:
    """The stdout that keeps the agent from stopping and tells the model why (Cursor: a follow-up message)."""
    if agent == "cursor":
        return _dumps({"followup_message": reason})
    return _dumps({"decision": "block", "reason": reason})


def quiet_output(agent: Agent) -> str:
    """The stdout of a hook with nothing to say: empty (Claude Code, Codex) or an empty object (Cursor reads JSON)."""
    return "{}\n" if agent == "cursor" else ""
