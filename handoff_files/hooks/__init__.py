"""Hooks: Claude Code, Codex and Cursor hooks that brief a starting session and ask for a handoff before a stop.

``run_hook`` answers one hook event (``handoff hook AGENT``); ``install`` merges the hook entries
and the MCP server into a project's settings (``handoff install AGENT``). The formats each agent
documents are in :mod:`~handoff_files.hooks.formats` and :mod:`~handoff_files.hooks.entries`.
"""

from __future__ import annotations

from handoff_files.hooks.formats import AGENTS, Agent
from handoff_files.hooks.install import FileChange, InstallReport, install
from handoff_files.hooks.location import DEFAULT_THREAD, default_thread
from handoff_files.hooks.run import HookReply, run_hook
from handoff_files.hooks.stop import LONG_SESSION

__all__ = [
    "AGENTS",
    "DEFAULT_THREAD",
    "LONG_SESSION",
    "Agent",
    "FileChange",
    "HookReply",
    "InstallReport",
    "default_thread",
    "install",
    "run_hook",
]
