"""The stop rule: a busy session that saved nothing since its start is asked once to save, never in a loop."""

from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
import time
from pathlib import Path

import jsonschema
import pytest

from handoff_files import HandoffStore
from handoff_files.foundation.errors import ChecksumMismatchError, HandoffWriteError
from handoff_files.hooks import LONG_SESSION
from handoff_files.hooks.event import parse_event
from handoff_files.hooks.formats import AGENTS, Agent
from handoff_files.hooks.stop import stop_reason
from handoff_files.hooks.worktree import worktree_digest
from tests.hooks import documented
from tests.hooks.helpers import content, git, hook, hook_lines


def _start(agent: Agent, project: Path, session: str = "s-1", *, acknowledge: bool = True, **fields: object) -> None:
    """A session start; the model then acknowledges its briefing with the code, as the briefing asks
    (unless *acknowledge* is False: a model that never read it)."""
    reply = hook(agent, documented.event(agent, "session_start", project, session, **fields))
    assert reply.exit_code == 0
    code = re.search(r"with the code ([A-Z2-7]{4}-[A-Z2-7]{4})", reply.stdout)
    if acknowledge and code is not None:
        HandoffStore(project / ".handoff" / "main").acknowledge(code=code.group(1))


def _stop(agent: Agent, project: Path, session: str = "s-1", **fields: object) -> str:
    reply = hook(agent, documented.event(agent, "stop", project, session, **fields))
    assert (reply.exit_code, reply.stderr) == (0, None)
    return reply.stdout


def _blocked(agent: Agent, stdout: str) -> bool:
    if stdout in ("", "{}\n"):
        return False
    jsonschema.validate(json.loads(stdout), documented.BLOCK_OUTPUT[agent])
    return True


def _blocks_in_journal(thread: Path) -> int:
    return sum(1 for line in hook_lines(thread) if line.extra.get("blocked") is True)


@pytest.mark.parametrize("agent", AGENTS)
def test_a_session_that_changed_files_and_saved_nothing_is_asked_once_in_the_documented_shape(
    agent: Agent, project: Path, thread: Path
) -> None:
    _start(agent, project)
    (project / "app.py").write_text("print('changed')\n")
    first = _stop(agent, project)
    assert _blocked(agent, first)
    assert "handoff_save" in first
    assert "it has changed files" in first
    for _ in range(3):  # the agent answered but did not save: it is let go, every time after
        assert not _blocked(agent, _stop(agent, project))
    assert _blocks_in_journal(thread) == 1


@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_stop_hook_active_is_never_blocked(agent: Agent, project: Path, thread: Path) -> None:
    _start(agent, project)
    (project / "app.py").write_text("print('changed')\n")
    assert not _blocked(agent, _stop(agent, project, stop_hook_active=True))
    assert _blocks_in_journal(thread) == 0


def test_cursor_never_follows_up_a_stop_that_is_already_a_follow_up(project: Path, thread: Path) -> None:
    _start("cursor", project)
    (project / "app.py").write_text("print('changed')\n")
    for loops in (1, 2, 5):
        assert _stop("cursor", project, loop_count=loops) == "{}\n"
    assert _blocks_in_journal(thread) == 0


@pytest.mark.parametrize("status", ["aborted", "error"])
def test_cursor_does_not_follow_up_a_turn_that_did_not_complete(status: str, project: Path, thread: Path) -> None:
    _start("cursor", project)
    (project / "app.py").write_text("print('changed')\n")
    assert _stop("cursor", project, status=status) == "{}\n"
    assert _blocks_in_journal(thread) == 0


@pytest.mark.parametrize("agent", AGENTS)
def test_a_save_since_the_session_started_lets_it_stop(agent: Agent, project: Path, thread: Path) -> None:
    _start(agent, project)
    (project / "app.py").write_text("print('changed')\n")
    HandoffStore(thread).save(content())
    assert not _blocked(agent, _stop(agent, project))


@pytest.mark.parametrize("agent", AGENTS)
def test_a_save_before_the_session_started_does_not_count(agent: Agent, project: Path, thread: Path) -> None:
    HandoffStore(thread).save(content())
    _start(agent, project)
    (project / "app.py").write_text("print('changed')\n")
    assert _blocked(agent, _stop(agent, project))


@pytest.mark.parametrize("agent", AGENTS)
def test_a_short_session_that_changed_nothing_may_stop(agent: Agent, project: Path, thread: Path) -> None:
    _start(agent, project)
    assert not _blocked(agent, _stop(agent, project))
    assert _blocks_in_journal(thread) == 0


@pytest.mark.parametrize("agent", AGENTS)
def test_a_long_session_is_asked_even_when_no_file_changed(agent: Agent, project: Path, thread: Path) -> None:
    _start(agent, project)
    event = parse_event(agent, json.dumps(documented.event(agent, "stop", project)).encode())
    soon = dt.datetime.now(dt.UTC) + LONG_SESSION - dt.timedelta(minutes=1)
    assert stop_reason(thread, event, now=soon) is None
    later = dt.datetime.now(dt.UTC) + LONG_SESSION + dt.timedelta(minutes=1)
    reason = stop_reason(thread, event, now=later)
    assert reason is not None
    assert f"it has run for {int(LONG_SESSION.total_seconds() // 60) + 1} minutes" in reason
    assert stop_reason(thread, event, now=later) is None  # asked once


@pytest.mark.parametrize("agent", AGENTS)
def test_a_session_whose_start_was_not_seen_is_never_blocked(agent: Agent, project: Path, thread: Path) -> None:
    (project / "app.py").write_text("print('changed')\n")
    assert not _blocked(agent, _stop(agent, project))
    _start(agent, project, session="another")
    assert not _blocked(agent, _stop(agent, project))  # "s-1" never started here


def test_sessions_are_told_apart_by_agent_and_id(project: Path, thread: Path) -> None:
    _start("claude-code", project, session="a")
    _start("claude-code", project, session="b")
    _start("codex", project, session="a")
    (project / "app.py").write_text("print('changed')\n")
    assert _blocked("claude-code", _stop("claude-code", project, session="a"))
    assert _blocked("claude-code", _stop("claude-code", project, session="b"))
    assert _blocked("codex", _stop("codex", project, session="a"))
    assert not _blocked("claude-code", _stop("claude-code", project, session="a"))
    assert _blocks_in_journal(thread) == 3


def test_a_compaction_continues_the_session_it_compacted(project: Path, thread: Path) -> None:
    _start("claude-code", project, source="startup")
    HandoffStore(thread).save(content())  # saved during the session ...
    _start("claude-code", project, source="compact")  # ... which then compacted
    (project / "app.py").write_text("print('changed')\n")
    assert not _blocked("claude-code", _stop("claude-code", project))


def test_a_resumed_session_starts_again(project: Path, thread: Path) -> None:
    _start("claude-code", project, source="startup")
    HandoffStore(thread).save(content())
    _start("claude-code", project, source="resume")  # days later, say: the save was the last run's
    (project / "app.py").write_text("print('changed')\n")
    assert _blocked("claude-code", _stop("claude-code", project))


def test_an_edit_to_a_file_already_changed_at_the_start_counts(project: Path, thread: Path) -> None:
    (project / "app.py").write_text("print('dirty before the session')\n")
    _start("claude-code", project)
    assert not _blocked("claude-code", _stop("claude-code", project, session="s-1"))  # nothing changed yet
    (project / "app.py").write_text("print('and changed in it, longer')\n")
    assert _blocked("claude-code", _stop("claude-code", project))


def test_a_commit_made_in_the_session_counts_as_a_change(project: Path, thread: Path) -> None:
    _start("codex", project)
    (project / "new.py").write_text("x = 1\n")
    git(project, "add", "new.py")
    git(project, "commit", "-q", "-m", "work")
    assert _blocked("codex", _stop("codex", project))


def test_the_threads_own_files_do_not_count_as_changes(project: Path, thread: Path) -> None:
    _start("claude-code", project)
    before = worktree_digest(project, exclude=thread)
    HandoffStore(thread).save(content())  # writes under .handoff/main, untracked
    assert worktree_digest(project, exclude=thread) == before
    assert before is not None


def test_outside_a_repository_only_the_length_counts(tmp_path: Path) -> None:
    folder = tmp_path / "loose"
    (folder / ".handoff").mkdir(parents=True)  # set up as install sets a project up, without git
    _start("claude-code", folder)
    (folder / "notes.txt").write_text("changed")
    assert not _blocked("claude-code", _stop("claude-code", folder))


def test_a_stop_that_cannot_be_journaled_lets_the_agent_go(
    project: Path, thread: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _start("claude-code", project)
    (project / "app.py").write_text("print('changed')\n")

    def full(*_: object, **__: object) -> None:
        raise HandoffWriteError(thread / "journal.jsonl", "no space left on device")

    monkeypatch.setattr(HandoffStore, "note", full)
    assert not _blocked("claude-code", _stop("claude-code", project))


def test_a_thread_that_does_not_restore_at_the_stop_lets_the_agent_go(
    project: Path, thread: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    HandoffStore(thread).save(content())
    _start("claude-code", project)
    (project / "app.py").write_text("print('changed')\n")

    def corrupt(*_: object, **__: object) -> None:
        raise ChecksumMismatchError(thread / "handoff.json", "the seal does not match")

    monkeypatch.setattr(HandoffStore, "restore", corrupt)  # whether a save happened cannot be told
    assert not _blocked("claude-code", _stop("claude-code", project))


# a stop hook in a process of its own: it reads its event, says it is ready, then waits for the go
_RACER = """
import sys, time
from pathlib import Path
from handoff_files.hooks import run_hook
event, ready, go = (Path(arg) for arg in sys.argv[1:])
data = event.read_bytes()
ready.touch()
while not go.exists():
    time.sleep(0.001)
reply = run_hook("claude-code", data, thread=None)
sys.stdout.write(reply.stdout)
sys.stderr.write(reply.stderr or "")
"""


def test_stop_hooks_racing_in_separate_processes_ask_once(
    project: Path, thread: Path, tmp_path: Path, python: str, subprocess_env: dict[str, str]
) -> None:
    """Two hooks for one stop (installed at user and project level, say) run at once: one of them asks."""
    _start("claude-code", project)
    (project / "app.py").write_text("print('changed')\n")
    event = tmp_path / "stop.json"
    event.write_text(json.dumps(documented.event("claude-code", "stop", project)))
    go = tmp_path / "go"
    ready = [tmp_path / f"ready-{n}" for n in range(8)]
    racers = [
        subprocess.Popen(
            [python, "-c", _RACER, str(event), str(flag), str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=subprocess_env,
        )
        for flag in ready
    ]
    deadline = time.monotonic() + 60
    while not all(flag.exists() for flag in ready) and time.monotonic() < deadline:
        time.sleep(0.01)
    go.touch()  # all of them at once, each past its imports
    outputs = [racer.communicate(timeout=60) for racer in racers]
    assert [(racer.returncode, err) for racer, (_, err) in zip(racers, outputs, strict=True)] == [(0, "")] * 8
    assert sum(_blocked("claude-code", out) for out, _ in outputs) == 1
    assert _blocks_in_journal(thread) == 1


# -- proof of uptake: a session briefed but never acknowledged is reported -----------------------


@pytest.mark.parametrize("agent", AGENTS)
def test_a_session_that_never_acknowledged_its_briefing_is_reported_once(agent: Agent, project: Path) -> None:
    HandoffStore(project / ".handoff" / "main").save(content(1))
    _start(agent, project, acknowledge=False)
    first = hook(agent, documented.event(agent, "stop", project, "s-1"))
    assert first.exit_code == 0
    assert first.stderr is not None
    assert "never acknowledged its briefing of generation 1" in first.stderr
    noted = [line for line in hook_lines(project / ".handoff" / "main") if "unacknowledged" in line.extra]
    assert [line.extra["unacknowledged"] for line in noted] == [1]
    again = hook(agent, documented.event(agent, "stop", project, "s-1"))
    assert again.stderr is None  # said once a session


@pytest.mark.parametrize("agent", AGENTS)
def test_a_session_that_acknowledged_with_the_code_is_not_reported(agent: Agent, project: Path) -> None:
    HandoffStore(project / ".handoff" / "main").save(content(1))
    _start(agent, project)
    reply = hook(agent, documented.event(agent, "stop", project, "s-1"))
    assert (reply.exit_code, reply.stderr) == (0, None)
    assert not [line for line in hook_lines(project / ".handoff" / "main") if "unacknowledged" in line.extra]
