"""Hook I/O: each agent's documented events in, its documented answers out (see documented.py for the shapes)."""

from __future__ import annotations

import errno
import json
import shutil
from pathlib import Path

import jsonschema
import pytest

from handoff_files import HandoffStore
from handoff_files.hooks import HookReply, run_hook
from handoff_files.hooks.formats import AGENTS, Agent
from handoff_files.hooks.location import project_of
from handoff_files.thread.trust import trust
from handoff_files.uptake.briefing import briefing_for
from tests.hooks import documented
from tests.hooks.helpers import content, hook, hook_lines

SOURCES = [
    pytest.param(agent, source, id=f"{agent}-{source or 'no-source'}")
    for agent in AGENTS
    for source in documented.SESSION_START_SOURCES[agent]
]


def _start(agent: Agent, project: Path, source: str | None, session: str = "s-1") -> dict[str, object]:
    fields = {} if source is None else {"source": source}
    return documented.event(agent, "session_start", project, session, **fields)


@pytest.mark.parametrize(("agent", "source"), SOURCES)
def test_a_session_start_adds_the_briefing_with_its_code_in_the_documented_shape(
    agent: Agent, source: str | None, project: Path, thread: Path
) -> None:
    HandoffStore(thread).save(content())
    reply = hook(agent, _start(agent, project, source))
    assert (reply.exit_code, reply.stderr) == (0, None)
    output = json.loads(reply.stdout)
    jsonschema.validate(output, documented.CONTEXT_OUTPUT[agent])
    context = output["additional_context"] if agent == "cursor" else output["hookSpecificOutput"]["additionalContext"]
    briefing = briefing_for(thread)
    assert briefing is not None
    assert briefing.code is not None
    assert context == briefing.text
    assert briefing.code in context
    assert "build the index for step 2" in context


@pytest.mark.parametrize(("agent", "source"), SOURCES)
def test_a_session_start_is_journaled_with_the_agent_event_session_and_source(
    agent: Agent, source: str | None, project: Path, thread: Path
) -> None:
    hook(agent, _start(agent, project, source, session="abc-123"))
    [line] = hook_lines(thread)
    assert line.extra["agent"] == agent
    assert line.extra["hook_event"] == ("sessionStart" if agent == "cursor" else "SessionStart")
    assert line.extra["session_id"] == "abc-123"
    assert line.extra["start_source"] == source  # "source" is the library's own field (a restore's)
    assert isinstance(line.extra["worktree"], str)  # the project is a git repository


@pytest.mark.parametrize("agent", AGENTS)
def test_a_thread_with_nothing_saved_gets_a_note_asking_for_a_save_not_an_empty_context(
    agent: Agent, project: Path, thread: Path
) -> None:
    for _ in range(2):  # the second start finds the first one's journal line, and still nothing saved
        reply = hook(agent, _start(agent, project, documented.SESSION_START_SOURCES[agent][0]))
        output = json.loads(reply.stdout)
        jsonschema.validate(output, documented.CONTEXT_OUTPUT[agent])
        assert reply.exit_code == 0
        assert "No handoff has been saved" in reply.stdout
        assert "handoff_save" in reply.stdout
    assert len(hook_lines(thread)) == 2


@pytest.mark.parametrize("agent", AGENTS)
def test_a_thread_that_does_not_restore_is_named_in_the_context_never_briefed_as_new(
    agent: Agent, project: Path, thread: Path
) -> None:
    store = HandoffStore(thread)
    store.save(content())
    for name in ("handoff.json", "state.json", "journal.jsonl"):
        (thread / name).write_text("garbage")
    shutil.rmtree(thread / "history")
    reply = hook(agent, _start(agent, project, documented.SESSION_START_SOURCES[agent][0]))
    assert reply.exit_code == 0
    jsonschema.validate(json.loads(reply.stdout), documented.CONTEXT_OUTPUT[agent])
    assert "could not be restored" in reply.stdout
    assert "handoff doctor" in reply.stdout


@pytest.mark.parametrize("agent", AGENTS)
@pytest.mark.parametrize("kind", ["pre_compact", "session_end"])
def test_pre_compact_and_session_end_are_journaled_and_say_nothing_to_the_agent(
    agent: Agent, kind: str, project: Path, thread: Path
) -> None:
    reply = hook(agent, documented.event(agent, kind, project, "sess-9"))
    assert reply.exit_code == 0
    assert reply.stdout == ("{}\n" if agent == "cursor" else "")
    [line] = hook_lines(thread)
    assert line.extra["session_id"] == "sess-9"
    detail = "trigger" if kind == "pre_compact" else "reason"
    assert line.extra[detail] == documented.event(agent, kind, project)[detail]


@pytest.mark.parametrize("agent", AGENTS)
def test_an_event_the_hooks_do_not_handle_is_answered_with_nothing(agent: Agent, project: Path, thread: Path) -> None:
    name = "beforeSubmitPrompt" if agent == "cursor" else "UserPromptSubmit"
    body = documented.event(agent, "stop", project)
    body["hook_event_name"] = name
    reply = hook(agent, body)
    assert (reply.exit_code, reply.stderr) == (0, None)
    assert not thread.exists()


_EVERY = frozenset(AGENTS)
_CLAUDE_AND_CODEX = frozenset({"claude-code", "codex"})
_BAD_INPUT = [
    (b"", "empty", _EVERY),
    (b"{not json", "not-json", _EVERY),
    (b"\xff\xfe{}", "not-utf8", _EVERY),
    (b"[1, 2]", "an-array", _EVERY),
    (b'{"session_id": "s"}', "no-event-name", _EVERY),
    (b'{"hook_event_name": 7}', "event-name-not-a-string", _EVERY),
    (b'{"hook_event_name": "Stop", "stop_hook_active": NaN}', "nan", _EVERY),
    (b'{"hook_event_name": "Stop", "stop_hook_active": "yes", "cwd": "/tmp"}', "bad-stop-flag", _CLAUDE_AND_CODEX),
    (b'{"hook_event_name": "Stop", "session_id": 5, "cwd": "/tmp"}', "session-not-a-string", _CLAUDE_AND_CODEX),
    (b'{"hook_event_name": "stop", "loop_count": "1", "workspace_roots": ["/tmp"]}', "bad-loop-count", {"cursor"}),
    (b'{"hook_event_name": "stop", "workspace_roots": "/tmp"}', "roots-not-a-list", {"cursor"}),
]
BAD_INPUT = [
    pytest.param(agent, data, id=f"{agent}-{name}") for data, name, agents in _BAD_INPUT for agent in sorted(agents)
]


@pytest.mark.parametrize(("agent", "data"), BAD_INPUT)
def test_bad_input_gives_one_stderr_line_and_a_non_blocking_exit_code(agent: Agent, data: bytes) -> None:
    reply = run_hook(agent, data, thread=None)
    assert reply.exit_code == 1  # every agent's "the hook failed, carry on"; never 2, which blocks
    assert reply.stdout == ""
    assert reply.stderr is not None
    assert "\n" not in reply.stderr
    assert reply.stderr.startswith(f"handoff hook {agent}: ")


@pytest.mark.parametrize("agent", AGENTS)
def test_an_event_without_a_working_directory_needs_thread(agent: Agent, tmp_path: Path) -> None:
    body = documented.event(agent, "session_start", tmp_path)
    body.pop("cwd", None)
    body.pop("workspace_roots", None)
    reply = hook(agent, body)
    assert reply.exit_code == 1
    assert reply.stderr is not None
    assert "--thread" in reply.stderr
    given = tmp_path / "mine"
    reply = hook(agent, body, thread=given)
    assert reply.exit_code == 0
    assert len(hook_lines(given)) == 1


def test_a_thread_given_is_used_instead_of_the_projects(project: Path, thread: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    HandoffStore(elsewhere).save(content(7))
    reply = hook("claude-code", documented.event("claude-code", "session_start", project), thread=elsewhere)
    assert "step 8" in reply.stdout
    assert not thread.exists()


def test_the_default_thread_is_at_the_top_of_the_repository_from_a_subfolder(project: Path, thread: Path) -> None:
    sub = project / "src" / "deep"
    sub.mkdir(parents=True)
    hook("codex", documented.event("codex", "session_start", sub))
    assert len(hook_lines(thread)) == 1


def test_an_existing_handoff_folder_marks_the_project_inside_a_larger_repository(project: Path) -> None:
    inner = project / "packages" / "api"
    (inner / ".handoff").mkdir(parents=True)
    hook("claude-code", documented.event("claude-code", "session_start", inner / "src"))
    assert len(hook_lines(inner / ".handoff" / "main")) == 1


def test_without_a_repository_a_folder_set_up_is_the_project(tmp_path: Path) -> None:
    folder = tmp_path / "loose"
    (folder / ".handoff").mkdir(parents=True)
    reply = hook("cursor", documented.event("cursor", "session_start", folder))
    assert reply.exit_code == 0
    [line] = hook_lines(folder / ".handoff" / "main")
    assert line.extra.get("worktree") is None  # no git: no digest, only the session's length will count


def test_cursor_takes_its_project_from_the_first_workspace_root(project: Path, thread: Path, tmp_path: Path) -> None:
    body = documented.event("cursor", "session_start", project)
    body["workspace_roots"] = [str(project), str(tmp_path / "other")]
    hook("cursor", body)
    assert len(hook_lines(thread)) == 1


def test_a_session_start_that_cannot_be_journaled_still_briefs(
    project: Path, thread: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from handoff_files.foundation.errors import HandoffLockedError

    HandoffStore(thread).save(content())

    def locked(*_: object, **__: object) -> None:
        raise HandoffLockedError(thread, "held by another writer")

    monkeypatch.setattr(HandoffStore, "note", locked)
    reply = hook("claude-code", documented.event("claude-code", "session_start", project))
    assert reply.exit_code == 0
    assert "build the index for step 2" in reply.stdout
    assert reply.stderr is not None
    assert "not journaled" in reply.stderr


def _one_line(reply: HookReply, agent: Agent) -> None:
    assert reply.stderr is not None
    assert "\n" not in reply.stderr
    assert reply.stderr.startswith(f"handoff hook {agent}: ")


def _cwd(kind: str, tmp_path: Path) -> Path:
    if kind == "a-file":  # the thread would be FILE/.handoff/main: every path under it is ENOTDIR
        (tmp_path / "notes.txt").write_text("not a folder")
        return tmp_path / "notes.txt"
    if kind == "name-too-long":  # ENAMETOOLONG, which Path.is_dir() raises on Python 3.11
        return tmp_path / ("a" * 300) / "src"
    return tmp_path / "a\0b"  # a NUL byte: no system call takes the path (ValueError)


@pytest.mark.parametrize("agent", AGENTS)
@pytest.mark.parametrize("kind", ["session_start", "stop", "pre_compact", "session_end"])
@pytest.mark.parametrize("cwd", ["a-file", "name-too-long", "nul-byte"])
def test_a_working_directory_that_cannot_be_used_is_one_stderr_line_never_an_exception(
    agent: Agent, kind: str, cwd: str, tmp_path: Path
) -> None:
    reply = hook(agent, documented.event(agent, kind, _cwd(cwd, tmp_path)))
    if cwd == "nul-byte":  # refused as the event is read
        assert (reply.exit_code, reply.stdout) == (1, "")
        _one_line(reply, agent)
        assert "NUL" in str(reply.stderr)
    elif reply.exit_code != 0:
        assert (reply.exit_code, reply.stdout) == (1, "")
        _one_line(reply, agent)
    elif reply.stderr is not None:
        _one_line(reply, agent)


def test_a_name_too_long_is_not_a_project_marker(tmp_path: Path) -> None:
    deep = tmp_path / ("a" * 300) / "src"
    assert project_of(deep) is None  # no folder on the way up holds .handoff


@pytest.mark.parametrize(
    "error",
    [
        pytest.param(OSError(errno.EIO, "Input/output error"), id="oserror"),
        pytest.param(ValueError("embedded null byte"), id="valueerror"),
    ],
)
@pytest.mark.parametrize("kind", ["session_start", "stop", "pre_compact"])
def test_an_os_or_value_error_inside_a_hook_is_one_stderr_line(
    error: Exception, kind: str, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail(*_: object, **__: object) -> None:
        raise error

    hook("codex", documented.event("codex", "session_start", project, source="startup"))
    (project / "app.py").write_text("print('changed')\n")  # so that the stop goes on to look for a save
    monkeypatch.setattr(HandoffStore, "restore", fail)
    monkeypatch.setattr(HandoffStore, "note", fail)
    reply = hook("codex", documented.event("codex", kind, project))
    assert reply.exit_code in (0, 1)
    _one_line(reply, "codex")
    assert str(error) in str(reply.stderr)


def test_the_session_start_follows_the_librarys_one_rule_for_nothing_saved_yet(
    project: Path, thread: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whether a thread that does not restore is new is ``ever_saved``'s call, not a second rule's."""
    hook("claude-code", _start("claude-code", project, "startup"))  # the hooks' own line: nothing saved
    monkeypatch.setattr("handoff_files.uptake.briefing.ever_saved", lambda _layout: True)
    reply = hook("claude-code", _start("claude-code", project, "startup"))
    assert "could not be restored" in reply.stdout
    assert "No handoff has been saved" not in reply.stdout


@pytest.mark.parametrize("agent", AGENTS)
def test_a_damaged_acknowledgement_key_still_gives_the_briefing_without_a_code(
    agent: Agent, project: Path, thread: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    HandoffStore(thread).save(content())
    key = tmp_path / "bad.key"
    key.write_text("not hex\n")
    key.chmod(0o600)
    monkeypatch.setenv("HANDOFF_FILES_KEY", str(key))
    trust(thread)  # the trust record lives beside the key: the thread is trusted in the new key's folder too
    reply = hook(agent, _start(agent, project, documented.SESSION_START_SOURCES[agent][0]))
    assert reply.exit_code == 0
    output = json.loads(reply.stdout)
    jsonschema.validate(output, documented.CONTEXT_OUTPUT[agent])
    context = output["additional_context"] if agent == "cursor" else output["hookSpecificOutput"]["additionalContext"]
    assert "build the index for step 2" in context
    assert "could not be restored" not in context
    assert "No acknowledgement code" in context
    _one_line(reply, agent)  # the person is told too: the key needs mending
    assert "acknowledgement code" in str(reply.stderr)
