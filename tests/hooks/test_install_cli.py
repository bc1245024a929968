"""``handoff install`` run as a user runs it: the installed script in a subprocess, on real settings files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from handoff_files.hooks.formats import Agent


def handoff(*args: str, env: dict[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``python -m handoff_files ARGS`` as a user would (this checkout, via *env*)."""
    argv = [sys.executable, "-m", "handoff_files", *args]
    return subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, check=False, timeout=60)


def _snapshot(project: Path) -> dict[str, bytes]:
    return {
        os.fspath(path.relative_to(project)): path.read_bytes()
        for path in sorted(project.rglob("*"))
        if path.is_file() and ".git" not in path.parts
    }


@pytest.mark.parametrize(
    ("agent", "name", "text"),
    [
        pytest.param("claude-code", ".claude/settings.json", '{"hooks": null}\n', id="claude-hooks-null"),
        pytest.param("codex", ".codex/hooks.json", '{"hooks": null}\n', id="codex-hooks-null"),
        pytest.param("cursor", ".cursor/hooks.json", '{"version": null, "hooks": {}}\n', id="cursor-version-null"),
        pytest.param("claude-code", ".mcp.json", '{"mcpServers": null}\n', id="servers-null"),
    ],
)
def test_a_null_where_an_entry_goes_is_refused_in_one_line_naming_the_file(
    agent: Agent, name: str, text: str, project: Path, subprocess_env: dict[str, str]
) -> None:
    path = project / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    before = _snapshot(project)
    done = handoff("install", agent, "--project", os.fspath(project), env=subprocess_env)
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert os.fspath(path) in done.stderr
    assert "null" in done.stderr
    assert _snapshot(project) == before
    assert json.loads(path.read_text()) == json.loads(text)
