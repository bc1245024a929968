"""The parser of the commands for model agents: brief, acknowledge, mcp, hook, install, completion."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from handoff_files.cli.arguments import budget
from handoff_files.cli.lazy import handler

__all__ = ["Add", "add_agent_commands"]

#: ``add(name, handler, help)``: a subcommand's parser, with the options every command takes.
Add = Callable[[str, Callable[[argparse.Namespace], str], str], argparse.ArgumentParser]


def add_agent_commands(add: Add) -> None:
    """The subcommands for model agents: a briefing, its acknowledgement, the MCP server, the coding-agent hooks."""
    p = add(
        "brief",
        handler("commands_agents", "brief"),
        "the restored handoff written for a model (priorities first), within a budget, with its acknowledgement code",
    )
    p.add_argument("dir", metavar="THREAD", help="thread directory")
    p.add_argument(
        "--budget", type=budget, default=6000, metavar="N", help="most characters (default 6000, at least 1000)"
    )

    p = add(
        "acknowledge",
        handler("commands_agents", "acknowledge"),
        "record that the agent read the current briefing: CODE is the one the briefing ends with",
    )
    p.add_argument("dir", metavar="THREAD", help="thread directory")
    p.add_argument("code", metavar="CODE", help="the briefing's acknowledgement code (XXXX-XXXX)")
    signing = p.add_mutually_exclusive_group()
    signing.add_argument(
        "--sign-with",
        metavar="KEYFILE",
        help="sign the acknowledgement with this OpenSSH Ed25519 key file (default: the configured key, if any)",
    )
    signing.add_argument("--no-sign", action="store_true", help="do not sign it, even with a key configured")

    p = add(
        "mcp",
        handler("commands_agents", "mcp"),
        "serve a thread's handoffs as MCP tools over stdio (save, restore, acknowledge …); needs handoff-files[mcp]",
    )
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--thread", metavar="THREAD", help="the one thread the tools work on")
    where.add_argument(
        "--root", metavar="ROOT", help="a folder of threads, or s3://bucket/prefix: each call names its thread"
    )
    p.add_argument("--blobs", metavar="URL", help="blob store for checkpoints (default: $HANDOFF_BLOBS)")

    agents = ["claude-code", "codex", "cursor"]
    p = add(
        "hook",
        handler("commands_agents", "hook"),
        "answer a coding agent's hook event (JSON on stdin): brief a starting session, ask for a handoff at a stop",
    )
    p.add_argument("agent", choices=agents, help="whose hook format")
    p.add_argument(
        "--thread", metavar="THREAD", help="the thread (default: PROJECT/.handoff/main, from the event's cwd)"
    )

    p = add(
        "install",
        handler("commands_agents", "install"),
        "add the hooks and the MCP server to a project's settings for a coding agent, keeping what is there",
    )
    p.add_argument("agent", choices=agents, help="which coding agent")
    p.add_argument("--project", metavar="PROJECT", help="the project folder (default: the repository's top around .)")
    p.add_argument("--thread", metavar="THREAD", help="the thread (default: PROJECT/.handoff/main)")
    p.add_argument(
        "--executable",
        metavar="CMD",
        help="the command to put in (default: this handoff, by its path unless it is on PATH for good)",
    )
    p.add_argument("--dry-run", action="store_true", help="show what would change (as a diff) and write nothing")
    p.add_argument(
        "--gitignore", action="store_true", help="add .handoff/ to the project's .gitignore if git tracks it"
    )

    p = add(
        "completion",
        handler("completion", "completion"),
        'print a shell completion script: eval "$(handoff completion bash)" in ~/.bashrc (zsh: in ~/.zshrc)',
    )
    p.add_argument("shell", choices=["bash", "zsh"], help="which shell")
