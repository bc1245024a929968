"""What ``handoff install AGENT`` adds: each agent's project files, its hook entries and its MCP server entry.

Claude Code (https://code.claude.com/docs/en/hooks, https://code.claude.com/docs/en/mcp): hooks
in ``.claude/settings.json`` as ``{"hooks": {"Event": [{"hooks": [{"type": "command",
"command": …, "timeout": seconds}]}]}}`` (a group without ``matcher`` matches every source);
project MCP servers in ``.mcp.json`` as ``{"mcpServers": {"name": {"command": …, "args": […]}}}``.

Codex (https://developers.openai.com/codex/hooks, https://developers.openai.com/codex/mcp):
hooks in ``.codex/hooks.json`` in Claude Code's shape; MCP servers as ``[mcp_servers.name]``
tables (``command``, ``args``) in ``.codex/config.toml``. Codex reads a project's ``.codex/``
only in a trusted project and asks to review new hooks; hooks are on unless ``[features] hooks``
(formerly ``codex_hooks``) is false. Its ``SessionEnd`` hook gets 3 s at most (openai/codex
PR #33895), so that entry says 3.

Cursor (https://cursor.com/docs/agent/hooks, https://cursor.com/docs/context/mcp): hooks in
``.cursor/hooks.json`` as ``{"version": 1, "hooks": {"event": [{"command": …}]}}``, the ``stop``
entry with ``loop_limit: 1`` so Cursor itself sends at most one follow-up; MCP servers in
``.cursor/mcp.json`` in Claude Code's ``mcpServers`` shape.

The ``handoff`` command may be several words (``uv run handoff``, ``python -m handoff_files``):
they are split as a shell splits them (:func:`command_words`), then the hook command is those words
and ``hook AGENT`` joined back with shell quoting, and the MCP entry's ``command`` is the first word
and its ``args`` the rest followed by ``mcp``. An entry is ours if it runs one of the names the
script goes by, or exactly the words this install was given, followed by ``hook AGENT`` (``mcp``).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any, Final, Literal

from handoff_files.hooks.formats import Agent

__all__ = [
    "SERVER_NAMES",
    "HookEntry",
    "Plan",
    "command_words",
    "is_our_hook",
    "is_our_server",
    "mcp_entry",
    "plan_for",
    "thread_named",
]

#: The MCP server's name in the agents' settings, and the one taken if a user's server holds the first.
SERVER_NAMES: Final = ("handoff", "handoff-files")
#: Names the command may go by (the script, or the package run with ``python -m``).
_EXECUTABLES: Final = frozenset({"handoff", "handoff.exe", "handoff_files"})


@dataclass(frozen=True, slots=True)
class HookEntry:
    """One hook to install: the agent's event name, the shell command, and the entry's other fields."""

    event: str
    command: str
    fields: dict[str, Any] = field(default_factory=dict)

    def body(self) -> dict[str, Any]:
        """The hook's JSON object: ``type`` first where the agent has one, then ``command``, then the rest."""
        body = {key: value for key, value in self.fields.items() if key == "type"}
        body["command"] = self.command
        body.update((key, value) for key, value in self.fields.items() if key != "type")
        return body


@dataclass(frozen=True, slots=True)
class Plan:
    """One agent's install: where its hooks and MCP servers live (relative to the project) and in which shape.

    ``grouped`` hooks (Claude Code, Codex) wrap each command in a ``{"hooks": [...]}`` group;
    ``flat`` hooks (Cursor) list the commands themselves, under a ``version``.
    """

    hooks_file: PurePath
    hooks_shape: Literal["grouped", "flat"]
    hooks: tuple[HookEntry, ...]
    mcp_file: PurePath
    mcp_format: Literal["json", "toml"]
    notes: tuple[str, ...]


def command_words(executable: str) -> list[str]:
    """The words of the ``handoff`` command, as a shell splits them (``uv run handoff``: three words).

    :raises ValueError: if it has no words or does not split (an unclosed quote), saying which.
    """
    words = shlex.split(executable)  # ValueError: "No closing quotation"
    if not words:
        msg = "it is empty"
        raise ValueError(msg)
    return words


def plan_for(agent: Agent, *, executable: Sequence[str], thread: Path | None) -> Plan:
    """What to install for *agent*.

    :param executable: the words of the ``handoff`` command as the agent will run it (:func:`command_words`).
    :param thread: the thread for ``--thread``; None: the hooks' default (``.handoff/main`` of the project).
    """
    command = shlex.join([*executable, "hook", agent, *(["--thread", os.fspath(thread)] if thread else [])])
    if agent == "claude-code":
        hooks = tuple(
            HookEntry(event, command, {"type": "command", "timeout": seconds})
            for event, seconds in (("SessionStart", 30), ("Stop", 30), ("PreCompact", 30), ("SessionEnd", 10))
        )
        notes: tuple[str, ...] = (
            "Claude Code asks once to approve a project's .mcp.json servers; /hooks lists the hooks.",
        )
        return Plan(PurePath(".claude", "settings.json"), "grouped", hooks, PurePath(".mcp.json"), "json", notes)
    if agent == "codex":
        hooks = tuple(
            HookEntry(event, command, {"type": "command", "timeout": seconds})
            # Codex clamps a SessionEnd hook's timeout to 3 s (warning at every start when it says more)
            for event, seconds in (("SessionStart", 30), ("Stop", 30), ("PreCompact", 30), ("SessionEnd", 3))
        )
        notes = (
            "Codex reads a project's .codex/ only when the project is trusted, and asks to review new hooks (/hooks).",
            "Codex runs hooks unless `[features] hooks = false` (or the older `codex_hooks = false`) turns them "
            "off in config.toml; this install does not change it.",
        )
        return Plan(
            PurePath(".codex", "hooks.json"), "grouped", hooks, PurePath(".codex", "config.toml"), "toml", notes
        )
    hooks = (
        HookEntry("sessionStart", command, {"timeout": 30}),
        HookEntry("stop", command, {"timeout": 30, "loop_limit": 1}),
        HookEntry("preCompact", command, {"timeout": 30}),
        HookEntry("sessionEnd", command, {"timeout": 10}),
    )
    notes = ("Cursor loads .cursor/hooks.json when it starts; restart it or open a new agent session.",)
    return Plan(PurePath(".cursor", "hooks.json"), "flat", hooks, PurePath(".cursor", "mcp.json"), "json", notes)


def mcp_entry(executable: Sequence[str], thread: Path) -> dict[str, Any]:
    """The MCP server entry: ``handoff mcp --thread THREAD`` (the same in JSON and in TOML).

    :param executable: the words of the ``handoff`` command: the first is ``command``, the rest open ``args``.
    """
    first, *rest = executable
    return {"command": first, "args": [*rest, "mcp", "--thread", os.fspath(thread)]}


def _words(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:  # unbalanced quotes: still look at the words
        return command.split()


def _after(words: list[Any], at: int, executable: Sequence[str]) -> bool:
    """Whether the words just before *at* are *executable*'s (a command of its own name, say ``hf``)."""
    return bool(executable) and at >= len(executable) and words[at - len(executable) : at] == list(executable)


def is_our_hook(command: Any, agent: Agent, *, executable: Sequence[str] = ()) -> bool:
    """Whether *command* already runs ``handoff hook AGENT`` (however the script is named or quoted).

    :param executable: the words of the command this install writes: a hook run through them is ours too.
    """
    if not isinstance(command, str):
        return False
    words = _words(command)
    for at, word in enumerate(words[:-1]):
        if word == "hook" and words[at + 1] == agent:
            return _after(words, at, executable) or any(PurePath(before).name in _EXECUTABLES for before in words[:at])
    return False


def is_our_server(entry: Any, *, executable: Sequence[str] = ()) -> bool:
    """Whether an MCP server entry already runs ``handoff mcp`` (on whichever thread).

    :param executable: the words of the command this install writes: a server run through them is ours too.
    """
    if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
        return False
    args = entry.get("args")
    words: list[Any] = [*_words(entry["command"]), *(args if isinstance(args, list) else [])]
    return any(
        word == "mcp" and (PurePath(str(words[at - 1])).name in _EXECUTABLES or _after(words, at, executable))
        for at, word in enumerate(words)
        if at > 0
    )


def thread_named(command: Any, args: Any = None) -> str | None:
    """The ``--thread`` a hook command (or an MCP server's command and *args*) names; None when it names none."""
    words: list[Any] = [
        *(_words(command) if isinstance(command, str) else []),
        *(args if isinstance(args, list) else []),
    ]
    for at, word in enumerate(words[:-1]):
        if word == "--thread":
            return str(words[at + 1])
    return None
