"""Where a hook writes: only in a project ``handoff install`` set up, never a folder of its own making elsewhere.

Each test runs the installed command (``python -m handoff_files hook AGENT``) on the event each agent
documents (tests/hooks/documented.py), as the agent runs it.
"""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

import pytest

from handoff_files import HandoffStore
from handoff_files.foundation.lock import WriterLock
from handoff_files.hooks.formats import AGENTS, Agent, EventKind, hook_lock_wait
from handoff_files.thread.trust import trust
from tests.hooks import documented
from tests.hooks.helpers import content, hook_lines, script, tree


def _run(agent: Agent, kind: EventKind, cwd: Path, env: dict[str, str], *args: str) -> tuple[int, str, str]:
    done = script("hook", agent, *args, env=env, stdin=json.dumps(documented.event(agent, kind, cwd)))
    assert "Traceback" not in done.stderr
    assert done.stderr.count("\n") <= 1, done.stderr
    return done.returncode, done.stdout, done.stderr


def _not_set_up(agent: Agent, reply: tuple[int, str, str]) -> None:
    """The hook did nothing, said so in one stderr line with the command that sets the project up, and exit 0."""
    code, stdout, stderr = reply
    assert code == 0, stderr
    assert stdout in ("", "{}\n")
    assert stderr.startswith(f"handoff hook {agent}: ")
    assert f"handoff install {agent}" in stderr


@pytest.mark.parametrize(
    ("agent", "kind"),
    [
        pytest.param("claude-code", "session_start", id="claude-code-start"),
        pytest.param("claude-code", "session_end", id="claude-code-end"),
        pytest.param("codex", "pre_compact", id="codex-compact"),
        pytest.param("cursor", "session_start", id="cursor-start"),
        pytest.param("cursor", "stop", id="cursor-stop"),
    ],
)
def test_a_working_directory_that_does_not_exist_is_never_created(
    agent: Agent, kind: EventKind, tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    before = tree(tmp_path)
    _not_set_up(agent, _run(agent, kind, tmp_path / "gone" / "work", subprocess_env))
    assert tree(tmp_path) == before
    assert not (tmp_path / "gone").exists()


@pytest.mark.parametrize("agent", AGENTS)
def test_a_folder_outside_any_project_gets_no_handoff_folder(
    agent: Agent, tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    loose = tmp_path / "loose"
    loose.mkdir()
    before = tree(tmp_path)
    _not_set_up(agent, _run(agent, "session_start", loose, subprocess_env))
    assert tree(tmp_path) == before


def test_a_repository_not_set_up_gets_no_thread_from_its_top_or_a_subfolder(
    repository: Path, subprocess_env: dict[str, str]
) -> None:
    (repository / "src").mkdir()
    before = tree(repository)
    for cwd in (repository, repository / "src"):
        _not_set_up("claude-code", _run("claude-code", "session_start", cwd, subprocess_env))
    assert tree(repository) == before


def test_a_handoff_folder_above_the_repository_is_not_the_projects(
    tmp_path: Path, repository: Path, subprocess_env: dict[str, str]
) -> None:
    (tmp_path / ".handoff").mkdir(mode=0o700)  # the repository is inside a folder that is set up: not inside it
    _not_set_up("codex", _run("codex", "session_start", repository, subprocess_env))
    assert list((tmp_path / ".handoff").iterdir()) == []


@pytest.mark.parametrize("agent", AGENTS)
def test_in_a_project_install_set_up_the_hook_makes_a_private_thread(
    agent: Agent, repository: Path, subprocess_env: dict[str, str]
) -> None:
    done = script("install", agent, "--project", os.fspath(repository), env=subprocess_env)
    assert done.returncode == 0, done.stderr
    (repository / "src").mkdir()
    code, _, stderr = _run(agent, "session_start", repository / "src", subprocess_env)
    assert code == 0, stderr
    thread = repository / ".handoff" / "main"
    assert len(hook_lines(thread)) == 1
    for folder in (repository / ".handoff", thread, thread / "history"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder


def test_a_thread_given_whose_folders_are_missing_gets_them_private(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    thread = tmp_path / "threads" / "team" / "api"
    code, _, stderr = _run("claude-code", "session_start", tmp_path, subprocess_env, "--thread", os.fspath(thread))
    assert code == 0, stderr
    assert len(hook_lines(thread)) == 1
    for folder in (tmp_path / "threads", tmp_path / "threads" / "team", thread):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder


@pytest.mark.parametrize(
    ("agent", "kind", "agents_timeout"),
    [
        pytest.param("claude-code", "session_end", 10, id="claude-code-end"),  # the timeout install writes
        pytest.param("codex", "session_end", 3, id="codex-end"),  # Codex caps SessionEnd hooks at 3 s
        pytest.param("cursor", "pre_compact", 30, id="cursor-compact"),
    ],
)
def test_a_held_writers_lock_ends_the_hook_in_one_line_well_inside_its_agents_timeout(
    agent: Agent, kind: EventKind, agents_timeout: float, project: Path, subprocess_env: dict[str, str]
) -> None:
    thread = project / ".handoff" / "main"
    began = time.monotonic()
    assert _run(agent, kind, project, subprocess_env)[0] == 0  # the lock free: the time a hook takes here
    free = time.monotonic() - began
    with WriterLock(thread, timeout=0).held():  # a stuck writer: another process holds the lock throughout
        began = time.monotonic()
        code, _, stderr = _run(agent, kind, project, subprocess_env)
        took = time.monotonic() - began
    assert code == 1, stderr
    assert stderr.startswith(f"handoff hook {agent}: ")
    assert ".lock" in stderr
    wait = hook_lock_wait(kind)
    assert wait <= agents_timeout / 3  # well inside: the rest is for starting Python and the answer
    assert took < free + wait + 2, (took, free)  # it waited that long, no longer (a loaded machine aside)


def test_a_session_start_behind_a_held_lock_still_briefs_and_says_so_in_one_line(
    project: Path, thread: Path, subprocess_env: dict[str, str]
) -> None:
    HandoffStore(thread).save(content())
    trust(thread)
    with WriterLock(thread, timeout=0).held():
        began = time.monotonic()
        code, stdout, stderr = _run("claude-code", "session_start", project, subprocess_env)
        took = time.monotonic() - began
    assert code == 0, stderr
    assert "build the index for step 2" in json.loads(stdout)["hookSpecificOutput"]["additionalContext"]
    assert "not journaled" in stderr
    assert ".lock" in stderr
    assert took < 20, took  # Claude Code's SessionStart timeout, as install writes it, is 30 s
