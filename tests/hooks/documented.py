"""The hook formats each agent documents, restated in our own words as example events and JSON Schemas.

Each shape names where it is documented. The tests feed the example events to ``run_hook`` and
check its stdout, and the files ``install`` writes, against these schemas: if an agent changes its
format, this file is the one place to update, with the new address.

Sources (read 2026-11):

- Claude Code hooks: https://code.claude.com/docs/en/hooks (event input fields, ``hookSpecificOutput``,
  ``decision``/``reason``, exit codes, settings ``hooks`` → event → ``[{matcher?, hooks: [...]}]``).
- Claude Code MCP: https://code.claude.com/docs/en/mcp (project servers in ``.mcp.json``, ``mcpServers``).
- Codex hooks: https://developers.openai.com/codex/hooks (hooks on by default; ``[features] hooks``
  is the canonical key to turn them off, ``codex_hooks`` a deprecated alias) and openai/codex
  ``codex-rs/hooks/schema/generated/{session-start,stop,pre-compact}.command.{input,output}.schema.json``;
  ``SessionEnd``: openai/codex PR #33895 (``SESSION_END_MAX_TIMEOUT_SEC`` = 3 in
  ``codex-rs/hooks/src/events/session_end.rs``: a longer timeout is clamped to 3 s, with a warning at
  every start). Its input is taken to be Claude Code's (``reason``); not confirmed against a generated schema.
  (the output objects forbid unknown keys; ``decision: block`` needs a non-blank ``reason``).
- Codex MCP: https://developers.openai.com/codex/mcp (``[mcp_servers.NAME]`` with ``command``, ``args``
  in ``~/.codex/config.toml`` or a trusted project's ``.codex/config.toml``).
- Cursor hooks: https://cursor.com/docs/agent/hooks (``.cursor/hooks.json`` with ``version: 1``; events
  ``sessionStart``, ``stop``, ``preCompact``, ``sessionEnd``; outputs ``additional_context`` and
  ``followup_message``; ``loop_limit`` per entry, 5 by default; ``loop_count`` on ``stop``).
- Cursor MCP: https://cursor.com/docs/context/mcp (``.cursor/mcp.json``, ``mcpServers``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

SOURCES: Final = {
    "claude-code": "https://code.claude.com/docs/en/hooks",
    "codex": "https://developers.openai.com/codex/hooks",
    "cursor": "https://cursor.com/docs/agent/hooks",
}

# -- events (stdin) ---------------------------------------------------------------------------------


def claude_event(name: str, cwd: Path, session: str = "sess-1", **fields: Any) -> dict[str, Any]:
    """A Claude Code event: the fields every event carries, then its own (``source``, ``stop_hook_active`` …)."""
    return {
        "session_id": session,
        "transcript_path": str(cwd / "transcript.jsonl"),
        "cwd": str(cwd),
        "permission_mode": "default",
        "hook_event_name": name,
        **fields,
    }


def codex_event(name: str, cwd: Path, session: str = "thread-1", **fields: Any) -> dict[str, Any]:
    """A Codex event: Claude Code's common fields plus ``model`` (and ``turn_id`` on turn-scoped events)."""
    common: dict[str, Any] = {
        "session_id": session,
        "transcript_path": None,
        "cwd": str(cwd),
        "hook_event_name": name,
        "model": "gpt-5-codex",
        "permission_mode": "default",
    }
    if name in ("Stop", "PreCompact"):
        common["turn_id"] = "turn-1"
    return {**common, **fields}


def cursor_event(name: str, root: Path, conversation: str = "conv-1", **fields: Any) -> dict[str, Any]:
    """A Cursor event: ``conversation_id``, ``generation_id``, ``workspace_roots`` … and no ``cwd``."""
    return {
        "conversation_id": conversation,
        "generation_id": "gen-1",
        "model": "claude-sonnet",
        "hook_event_name": name,
        "cursor_version": "2.0.0",
        "workspace_roots": [str(root)],
        "user_email": None,
        "transcript_path": None,
        **fields,
    }


#: Each agent's session-start event with each source it documents.
SESSION_START_SOURCES: Final = {
    "claude-code": ("startup", "resume", "clear", "compact"),
    "codex": ("startup", "resume", "clear", "compact"),  # compact: newer Codex releases
    "cursor": (None,),  # Cursor's sessionStart has no source
}


def event(agent: str, kind: str, cwd: Path, session: str = "s-1", **fields: Any) -> dict[str, Any]:
    """The documented event of *kind* (session_start, stop, pre_compact, session_end) for *agent*."""
    if agent == "cursor":
        names = {
            "session_start": "sessionStart",
            "stop": "stop",
            "pre_compact": "preCompact",
            "session_end": "sessionEnd",
        }
        defaults: dict[str, dict[str, Any]] = {
            "session_start": {"session_id": session, "is_background_agent": False, "composer_mode": "agent"},
            "stop": {"status": "completed", "loop_count": 0},
            "pre_compact": {"trigger": "auto", "context_usage_percent": 91},
            "session_end": {"session_id": session, "reason": "completed", "duration_ms": 1000},
        }
        return cursor_event(names[kind], cwd, conversation=session, **{**defaults[kind], **fields})
    names = {"session_start": "SessionStart", "stop": "Stop", "pre_compact": "PreCompact", "session_end": "SessionEnd"}
    defaults = {
        "session_start": {"source": "startup"},
        "stop": {"stop_hook_active": False, "last_assistant_message": "Done."},
        "pre_compact": {"trigger": "auto", "custom_instructions": ""},
        "session_end": {"reason": "other"},
    }
    build = claude_event if agent == "claude-code" else codex_event
    return build(names[kind], cwd, session, **{**defaults[kind], **fields})


# -- outputs (stdout) -------------------------------------------------------------------------------

_NONBLANK: Final = {"type": "string", "pattern": r"\S"}

#: What a session-start hook prints to add context, per agent.
CONTEXT_OUTPUT: Final[dict[str, dict[str, Any]]] = {
    "claude-code": {
        "type": "object",
        "required": ["hookSpecificOutput"],
        "additionalProperties": False,
        "properties": {
            "hookSpecificOutput": {
                "type": "object",
                "required": ["hookEventName", "additionalContext"],
                "additionalProperties": False,
                "properties": {"hookEventName": {"const": "SessionStart"}, "additionalContext": _NONBLANK},
            }
        },
    },
    # Codex's generated schema: continue, stopReason, suppressOutput, systemMessage, hookSpecificOutput, nothing else
    "codex": {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "continue": {"type": "boolean"},
            "stopReason": {"type": ["string", "null"]},
            "suppressOutput": {"type": "boolean"},
            "systemMessage": {"type": ["string", "null"]},
            "hookSpecificOutput": {
                "type": "object",
                "required": ["hookEventName"],
                "additionalProperties": False,
                "properties": {"hookEventName": {"const": "SessionStart"}, "additionalContext": _NONBLANK},
            },
        },
        "required": ["hookSpecificOutput"],
    },
    "cursor": {
        "type": "object",
        "required": ["additional_context"],
        "properties": {"additional_context": _NONBLANK, "env": {"type": "object"}, "continue": {"type": "boolean"}},
        "additionalProperties": False,
    },
}

#: What a stop hook prints to keep the agent going, per agent.
BLOCK_OUTPUT: Final[dict[str, dict[str, Any]]] = {
    "claude-code": {
        "type": "object",
        "required": ["decision", "reason"],
        "properties": {"decision": {"const": "block"}, "reason": _NONBLANK},
        "additionalProperties": False,
    },
    "codex": {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "continue": {"type": "boolean"},
            "decision": {"enum": ["block", None]},
            "reason": {"type": ["string", "null"]},
            "stopReason": {"type": ["string", "null"]},
            "suppressOutput": {"type": "boolean"},
            "systemMessage": {"type": ["string", "null"]},
        },
        "if": {"required": ["decision"], "properties": {"decision": {"const": "block"}}},
        "then": {"required": ["reason"], "properties": {"reason": _NONBLANK}},
    },
    "cursor": {
        "type": "object",
        "required": ["followup_message"],
        "properties": {"followup_message": _NONBLANK},
        "additionalProperties": False,
    },
}

# -- settings files ---------------------------------------------------------------------------------

_COMMAND_HOOK: Final = {
    "type": "object",
    "required": ["type", "command"],
    "properties": {"type": {"const": "command"}, "command": _NONBLANK, "timeout": {"type": "number"}},
}
_GROUPED_HOOKS: Final = {
    "type": "object",
    "additionalProperties": {
        "type": "array",
        "items": {
            "type": "object",
            "required": ["hooks"],
            "properties": {"matcher": {"type": "string"}, "hooks": {"type": "array", "items": _COMMAND_HOOK}},
        },
    },
}
_MCP_SERVERS: Final = {
    "type": "object",
    "additionalProperties": {
        "type": "object",
        "required": ["command"],
        "properties": {
            "command": _NONBLANK,
            "args": {"type": "array", "items": {"type": "string"}},
            "env": {"type": "object"},
        },
    },
}

#: The settings files each agent reads, relative to the project, with the shape of what we add there.
SETTINGS: Final[dict[str, dict[str, dict[str, Any]]]] = {
    "claude-code": {
        ".claude/settings.json": {"type": "object", "properties": {"hooks": _GROUPED_HOOKS}},
        ".mcp.json": {"type": "object", "required": ["mcpServers"], "properties": {"mcpServers": _MCP_SERVERS}},
    },
    "codex": {
        ".codex/hooks.json": {"type": "object", "required": ["hooks"], "properties": {"hooks": _GROUPED_HOOKS}},
        ".codex/config.toml": {"type": "object", "properties": {"mcp_servers": _MCP_SERVERS}},
    },
    "cursor": {
        ".cursor/hooks.json": {
            "type": "object",
            "required": ["version", "hooks"],
            "properties": {
                "version": {"const": 1},
                "hooks": {
                    "type": "object",
                    "additionalProperties": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["command"],
                            "properties": {
                                "command": _NONBLANK,
                                "type": {"enum": ["command", "prompt"]},
                                "timeout": {"type": "number"},
                                "loop_limit": {"type": ["integer", "null"]},
                                "matcher": {"type": "string"},
                                "failClosed": {"type": "boolean"},
                            },
                        },
                    },
                },
            },
        },
        ".cursor/mcp.json": {"type": "object", "required": ["mcpServers"], "properties": {"mcpServers": _MCP_SERVERS}},
    },
}

#: Seconds Codex gives a SessionEnd hook at most, whatever its entry says (openai/codex PR #33895).
CODEX_SESSION_END_CAP: Final = 3

#: The events each agent's install hooks, by the agent's own names.
INSTALLED_EVENTS: Final = {
    "claude-code": ("SessionStart", "Stop", "PreCompact", "SessionEnd"),
    "codex": ("SessionStart", "Stop", "PreCompact", "SessionEnd"),
    "cursor": ("sessionStart", "stop", "preCompact", "sessionEnd"),
}
