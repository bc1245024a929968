"""The trust gate: a session-start hook briefs only from a thread this user made or trusts.

Real files and modes throughout: a repository someone else wrote is a git repository with a
committed ``.handoff/main``, cloned (git writes 0755 and 0644); the hook gets the SessionStart
event each agent documents (tests/hooks/documented.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from handoff_files import HandoffStore
from handoff_files.cli.main import main
from handoff_files.hooks import HookReply, install
from handoff_files.hooks.formats import AGENTS, Agent
from handoff_files.thread.trust import revoke, trust_path
from tests.hooks import documented
from tests.hooks.helpers import content, git, hook

BRIEFED = "build the index for step 2"  # a priority content() saves: it shows only in a briefing


def _start(agent: Agent, cwd: Path) -> dict[str, object]:
    return documented.event(agent, "session_start", cwd, source=documented.SESSION_START_SOURCES[agent][0])


def _context(agent: Agent, reply: HookReply) -> str:
    output = json.loads(reply.stdout)
    text = output["additional_context"] if agent == "cursor" else output["hookSpecificOutput"]["additionalContext"]
    assert isinstance(text, str)
    return text


def _refused(agent: Agent, reply: HookReply, why: str) -> str:
    """Assert *reply* carries no briefing, only one line naming *why* and the command that trusts the thread."""
    assert reply.exit_code == 0, reply.stderr
    text = _context(agent, reply)
    assert BRIEFED not in text
    assert "No briefing was given" in text
    assert why in text
    assert "handoff trust " in text
    assert text.strip().count("\n") == 0, text  # one line
    assert reply.stderr is not None
    assert "\n" not in reply.stderr.strip()
    return text


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """A repository someone else wrote, with a saved thread committed in it, cloned here as a user would."""
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    git(theirs, "init", "-q")
    HandoffStore(theirs / ".handoff" / "main").save(content())
    git(theirs, "add", "-A")
    git(theirs, "commit", "-q", "-m", "our notes")
    git(tmp_path, "clone", "-q", str(theirs), "mine")
    return tmp_path / "mine"


@pytest.mark.parametrize("agent", AGENTS)
def test_a_cloned_repositorys_thread_gives_no_briefing_only_one_line_saying_why(agent: Agent, clone: Path) -> None:
    thread = clone / ".handoff" / "main"
    assert (thread / "handoff.json").stat().st_uid == os.geteuid()  # the clone is ours: ownership alone is not trust
    _refused(agent, hook(agent, _start(agent, clone)), "you have not trusted the thread")


@pytest.mark.parametrize("agent", AGENTS)
def test_a_thread_the_library_made_here_briefs(agent: Agent, project: Path, thread: Path) -> None:
    HandoffStore(thread).save(content())
    reply = hook(agent, _start(agent, project))
    assert reply.exit_code == 0
    assert BRIEFED in _context(agent, reply)


def test_a_group_writable_thread_is_refused_even_though_trusted(project: Path, thread: Path) -> None:
    HandoffStore(thread).save(content())
    thread.chmod(0o770)
    _refused("claude-code", hook("claude-code", _start("claude-code", project)), "can be written by others (mode 0770)")


def test_a_group_writable_file_in_the_thread_is_refused(project: Path, thread: Path) -> None:
    HandoffStore(thread).save(content())
    (thread / "handoff.json").chmod(0o664)
    _refused("codex", hook("codex", _start("codex", project)), "handoff.json can be written by others")


def test_trust_is_bound_to_the_folder_not_its_path(project: Path, thread: Path, tmp_path: Path) -> None:
    """Another thread moved to a trusted path is not trusted by the path alone."""
    HandoffStore(thread).save(content())
    assert BRIEFED in _context("claude-code", hook("claude-code", _start("claude-code", project)))
    other = tmp_path / "elsewhere" / "main"
    HandoffStore(other).save(content())
    shutil.rmtree(thread)
    other.rename(thread)
    _refused("claude-code", hook("claude-code", _start("claude-code", project)), "not the one you trusted")


def test_a_fresh_thread_needs_no_trust_and_the_one_the_hook_makes_is_trusted(project: Path, thread: Path) -> None:
    reply = hook("cursor", _start("cursor", project))
    assert "No handoff has been saved" in _context("cursor", reply)
    assert thread.is_dir()  # the hook's journal line made it: this user's library made it
    HandoffStore(thread).save(content())
    assert BRIEFED in _context("cursor", hook("cursor", _start("cursor", project)))


def _handoff(*args: str | Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run the installed command as a person would."""
    argv = [sys.executable, "-m", "handoff_files", *map(str, args)]
    return subprocess.run(argv, env=env, capture_output=True, text=True, check=False)


def test_a_cloned_thread_briefs_once_the_user_runs_handoff_trust_and_not_after_revoke(
    clone: Path, subprocess_env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    thread = clone / ".handoff" / "main"
    refused = _refused("claude-code", hook("claude-code", _start("claude-code", clone)), "you have not trusted")
    assert f"handoff trust {thread}" in refused  # the line gives the command to run
    done = _handoff("trust", thread, env=subprocess_env)
    assert done.returncode == 0, done.stderr
    assert f"trusted {thread}" in done.stdout
    assert BRIEFED in _context("claude-code", hook("claude-code", _start("claude-code", clone)))
    assert main(["trust", "--list", "--json"]) == 0
    assert str(thread) in [entry["path"] for entry in json.loads(capsys.readouterr().out)]
    assert main(["trust", "--revoke", str(thread)]) == 0
    assert "no longer trusted" in capsys.readouterr().out
    _refused("claude-code", hook("claude-code", _start("claude-code", clone)), "you have not trusted the thread")


def test_handoff_trust_refuses_a_group_writable_or_missing_folder_in_one_line(
    tmp_path: Path, subprocess_env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o775)
    done = _handoff("trust", shared, env=subprocess_env)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.count("\n") == 1, done.stderr
    assert "can be written by others (mode 0775)" in done.stderr
    assert main(["trust", str(tmp_path / "nope")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "no such thread folder" in err
    with pytest.raises(SystemExit) as usage:
        main(["trust"])
    assert usage.value.code == 2


def test_a_thread_made_after_handoff_install_briefs(
    project: Path, thread: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["install", "claude-code", "--project", str(project)]) == 0
    layers = project.parent / "layers.json"
    layers.write_text(json.dumps(content()), encoding="utf-8")
    assert main(["save", str(thread), str(layers)]) == 0
    capsys.readouterr()
    assert BRIEFED in _context("claude-code", hook("claude-code", _start("claude-code", project)))


def test_a_trust_record_others_can_write_is_refused_and_said(project: Path, thread: Path) -> None:
    HandoffStore(thread).save(content())
    trust_path().chmod(0o666)
    try:
        _refused("claude-code", hook("claude-code", _start("claude-code", project)), "no one else can write")
    finally:
        trust_path().chmod(0o600)


def test_install_in_a_clone_trusts_nothing_and_says_how(clone: Path) -> None:
    thread = clone / ".handoff" / "main"
    report = install("claude-code", clone, dry_run=False)
    assert any(f"the hooks will not brief from {thread}" in note and "handoff trust" in note for note in report.notes)
    _refused("claude-code", hook("claude-code", _start("claude-code", clone)), "you have not trusted the thread")


def test_install_trusts_a_private_thread_made_before_the_record(project: Path, thread: Path) -> None:
    """A thread saved before trust was recorded (0700/0600, as the library makes them) is trusted by install."""
    HandoffStore(thread).save(content())
    assert revoke(thread)
    _refused("claude-code", hook("claude-code", _start("claude-code", project)), "you have not trusted the thread")
    report = install("claude-code", project, dry_run=False)
    assert not any("will not brief" in note for note in report.notes)
    assert BRIEFED in _context("claude-code", hook("claude-code", _start("claude-code", project)))


def test_the_installed_hook_command_refuses_a_clone_in_one_line(clone: Path, subprocess_env: dict[str, str]) -> None:
    event = json.dumps(_start("claude-code", clone))
    argv = [sys.executable, "-m", "handoff_files", "hook", "claude-code"]
    done = subprocess.run(argv, input=event, env=subprocess_env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert BRIEFED not in context
    assert context.strip().count("\n") == 0
    assert "handoff trust" in context
    assert done.stderr.count("\n") == 1
    assert "Traceback" not in done.stderr


def test_a_cloned_thread_signed_by_a_key_allowed_signers_trusts_briefs_and_an_unsigned_newer_one_does_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """How a team shares a briefing in a repository: the newest generation signed by a key in allowed_signers."""
    from handoff_files.signing.keys import allowed_signers_line, create_key

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    key = create_key(tmp_path / "alice-key")
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    git(theirs, "init", "-q")
    HandoffStore(theirs / ".handoff" / "main", signing_key=key).save(content())
    git(theirs, "add", "-A")
    git(theirs, "commit", "-q", "-m", "signed notes")
    git(tmp_path, "clone", "-q", str(theirs), "mine")
    clone = tmp_path / "mine"
    _refused("claude-code", hook("claude-code", _start("claude-code", clone)), "you have not trusted the thread")
    trust = tmp_path / "config" / "handoff-files" / "allowed_signers"
    trust.parent.mkdir(parents=True)
    trust.write_text(allowed_signers_line(key, "alice@example.com") + "\n", encoding="utf-8")
    briefed = _context("claude-code", hook("claude-code", _start("claude-code", clone)))
    assert BRIEFED in briefed
    assert "(signed by alice@example.com)" in briefed
    HandoffStore(theirs / ".handoff" / "main", signing_key=False).save(content())  # someone commits an unsigned one
    git(theirs, "add", "-A")
    git(theirs, "commit", "-q", "-m", "unsigned notes")
    git(tmp_path, "clone", "-q", str(theirs), "again")
    again = tmp_path / "again"
    _refused("claude-code", hook("claude-code", _start("claude-code", again)), "you have not trusted the thread")
