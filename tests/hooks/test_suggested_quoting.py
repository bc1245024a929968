"""Commands the hooks tell a model to run quote their paths: pasted as printed, they work in a folder with a space."""

from __future__ import annotations

import shlex
from pathlib import Path

from tests.hooks import documented
from tests.hooks.helpers import git, hook


def test_a_fresh_sessions_save_command_quotes_a_thread_path_with_a_space(tmp_path: Path) -> None:
    project = tmp_path / "my project"
    project.mkdir()
    git(project, "init", "-q")
    (project / ".handoff").mkdir(mode=0o700)  # set up, as handoff install sets a project up
    reply = hook("claude-code", documented.event("claude-code", "session_start", project))
    told = reply.stdout
    thread = project / ".handoff" / "main"
    assert shlex.join(["handoff", "save", str(thread), "FILE"]) in told, told
    assert f"handoff save {thread} FILE" not in told, told
