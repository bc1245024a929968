"""`handoff brief` and `handoff acknowledge`: the briefing a model reads, and the code that proves it did."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from handoff_files import HandoffStore
from handoff_files.cli.main import main
from handoff_files.thread.journal import Journal
from tests.cli.test_cli import CONTENT, one_error_line
from tests.conftest import ROOT


def _thread(tmp_path: Path) -> Path:
    thread = tmp_path / "t1"
    HandoffStore(thread).save(CONTENT)
    return thread


def test_brief_prints_the_briefing_and_its_code(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    thread = _thread(tmp_path)
    assert main(["brief", str(thread), "--json"]) == 0
    briefing = json.loads(capsys.readouterr().out)
    assert main(["brief", str(thread)]) == 0
    text = capsys.readouterr().out
    assert text == briefing["text"]
    assert text.index("port the rest") < text.index("dates in the old data") < text.index("Ported half")
    assert f"the code {briefing['code']}" in text


def test_brief_refuses_a_budget_too_small_and_an_empty_thread(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    thread = _thread(tmp_path)
    with pytest.raises(SystemExit) as usage:
        main(["brief", str(thread), "--budget", "10"])
    assert usage.value.code == 2
    assert "argument --budget: expected a whole number of characters, 1000 or more, not '10'" in capsys.readouterr().err
    HandoffStore(tmp_path / "empty").init()
    assert main(["brief", str(tmp_path / "empty")]) == 1
    one_error_line(capsys.readouterr().err, "nothing saved here yet")


def test_brief_of_a_path_that_does_not_exist_says_so_as_every_other_command_does(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    from tests.cli.shell import handoff

    missing = tmp_path / "nonexistent"
    done = handoff("brief", missing, env=subprocess_env)
    assert done.returncode == 1
    assert done.stderr == handoff("history", missing, env=subprocess_env).stderr
    assert "no such" in done.stderr
    assert "nothing saved here yet" not in done.stderr
    assert not missing.exists()


def test_acknowledge_takes_the_right_code_and_refuses_a_wrong_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    thread = _thread(tmp_path)
    main(["brief", str(thread), "--json"])
    code = json.loads(capsys.readouterr().out)["code"]
    assert main(["acknowledge", str(thread), "ZZZZ-ZZZZ"]) == 1
    one_error_line(capsys.readouterr().err, "'ZZZZ-ZZZZ' is not the acknowledgement code of generation 1")
    assert main(["acknowledge", str(thread), code]) == 0
    assert "acknowledged generation 1" in capsys.readouterr().out
    events = [entry.event for entry in Journal(thread).entries()[0]]
    assert events[-2:] == ["unacknowledged", "resumed"]


def _handoff_run(thread: Path, python: str, env: dict[str, str], *agent_args: str) -> subprocess.CompletedProcess[str]:
    steps_agent = str(ROOT / "samples" / "steps_agent.py")
    command = [python, "-m", "handoff_files", "run", str(thread), "--require-code", "--json", "--ack-timeout", "30"]
    return subprocess.run(
        [*command, "--", python, steps_agent, "5", *agent_args],
        env={**env, "HANDOFF_DIR": str(thread)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _primed(tmp_path: Path, python: str, env: dict[str, str]) -> Path:
    thread = tmp_path / "t1"
    HandoffStore(thread).init()
    # two steps done by an earlier start, so the run restores generation 2
    subprocess.run(
        [python, str(ROOT / "samples" / "steps_agent.py"), "2"],
        env={**env, "HANDOFF_DIR": str(thread)},
        check=True,
        capture_output=True,
    )
    return thread


def test_handoff_run_require_code_passes_an_agent_that_read_its_briefing(
    tmp_path: Path, python: str, subprocess_env: dict[str, str]
) -> None:
    thread = _primed(tmp_path, python, subprocess_env)
    done = _handoff_run(thread, python, subprocess_env)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout[done.stdout.index("{") :])  # after the agent's own lines
    assert (result["acknowledged"], result["with_code"]) == (1, 1)
    assert "resumed from generation 2 with the code" in done.stderr
    # the supervisor's story is in the journal too, so `handoff log` shows it beside the agent's saves
    runs = [entry.summary for entry in Journal(thread).entries()[0] if entry.event == "run"]
    assert runs[0].startswith("handoff run started the agent (pid ")
    assert runs[-1].startswith("handoff run ended (exit 0): the agent finished")


def test_handoff_run_require_code_catches_an_agent_that_skipped_its_briefing(
    tmp_path: Path, python: str, subprocess_env: dict[str, str]
) -> None:
    thread = _primed(tmp_path, python, subprocess_env)
    done = _handoff_run(thread, python, subprocess_env, "--skip-briefing")
    assert done.returncode == 1
    assert "without its briefing's code (did it read it?): not counted" in done.stderr


def test_handoff_hook_briefs_a_claude_code_session_through_stdin_and_stdout(
    tmp_path: Path, python: str, subprocess_env: dict[str, str]
) -> None:
    thread = tmp_path / "project" / ".handoff" / "main"
    HandoffStore(thread).save(CONTENT)
    event = {
        "session_id": "s-1",
        "transcript_path": str(tmp_path / "t.jsonl"),
        "cwd": str(tmp_path / "project"),
        "hook_event_name": "SessionStart",
        "source": "compact",
    }
    done = subprocess.run(
        [python, "-m", "handoff_files", "hook", "claude-code"],
        input=json.dumps(event),
        env=subprocess_env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    output = json.loads(done.stdout)["hookSpecificOutput"]
    assert output["hookEventName"] == "SessionStart"
    assert "port the rest" in output["additionalContext"]
    assert "Acknowledge this briefing with the code" in output["additionalContext"]
    bad = subprocess.run(
        [python, "-m", "handoff_files", "hook", "claude-code"],
        input="not json",
        env=subprocess_env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 1
    one_error_line(bad.stderr, "handoff hook claude-code")


def test_handoff_install_dry_run_writes_nothing_then_install_merges(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"model": "opus"}\n')
    assert main(["install", "claude-code", "--project", str(tmp_path), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "would update" in out
    assert "+++ " in out  # the diff
    assert settings.read_text() == '{"model": "opus"}\n'
    assert not (tmp_path / ".mcp.json").exists()
    assert main(["install", "claude-code", "--project", str(tmp_path)]) == 0
    assert json.loads(settings.read_text())["model"] == "opus"
    assert "SessionStart" in json.loads(settings.read_text())["hooks"]
    capsys.readouterr()
    assert main(["install", "claude-code", "--project", str(tmp_path)]) == 0
    assert "nothing to do" in capsys.readouterr().out
