"""Helpers for the hooks' tests: run git, save content, run a hook, read the hooks' journal lines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from handoff_files.hooks import HookReply, run_hook
from handoff_files.hooks.formats import Agent
from handoff_files.thread.journal import Entry, Journal


def git(project: Path, *args: str) -> None:
    """Run git in *project* with a fixed identity (the machine's may be unset)."""
    subprocess.run(
        ["git", "-c", "user.email=t@example.org", "-c", "user.name=t", "-C", str(project), *args],  # noqa: S607 -- git from PATH, as the hooks run it
        check=True,
        capture_output=True,
    )


def content(step: int = 1) -> dict[str, Any]:
    """Five layers a session saves: a priority and a warning the briefing must show."""
    return {
        "state": {"active_tasks": [f"migrate table {step}"], "data": {"step": step}},
        "narrative": f"Step {step} of the migration is done; the next one needs the new index.",
        "decisions": [],
        "priorities": [{"task": f"build the index for step {step + 1}", "urgency": "first"}],
        "warnings": [{"text": "the staging database is shared: do not drop tables", "severity": "high"}],
    }


def hook(agent: Agent, event: dict[str, Any] | bytes, thread: Path | None = None) -> HookReply:
    """Run the hook on *event* (a dict is sent as JSON, as the agent sends it)."""
    data = event if isinstance(event, bytes) else json.dumps(event).encode()
    return run_hook(agent, data, thread=thread)


def hook_lines(thread: Path) -> list[Entry]:
    """The journal's "hook" lines, oldest first."""
    entries, problems = Journal(thread).entries()
    assert problems == []
    return [entry for entry in entries if entry.event == "hook"]


def script(*args: str, env: dict[str, str], stdin: str = "") -> subprocess.CompletedProcess[str]:
    """Run ``python -m handoff_files ARGS`` as an agent runs the installed command (this checkout, via *env*)."""
    argv = [sys.executable, "-m", "handoff_files", *args]
    return subprocess.run(argv, input=stdin, env=env, capture_output=True, text=True, check=False, timeout=60)


def tree(root: Path) -> dict[str, int]:
    """Every path under *root* (folders too) with its mode: what a run made or changed shows."""
    return {os.fspath(path.relative_to(root)): path.lstat().st_mode for path in sorted(root.rglob("*"))}
