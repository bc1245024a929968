"""The command line's own reading of arguments: ids named for what they are, and the usage of the command typed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.shell import handoff


@pytest.mark.parametrize(
    ("flag", "what"),
    [pytest.param("--thread-id", "thread id", id="thread"), pytest.param("--agent-id", "agent id", id="agent")],
)
def test_a_bad_id_is_named_for_what_it_is(tmp_path: Path, subprocess_env: dict[str, str], flag: str, what: str) -> None:
    done = handoff("save", tmp_path / "t1", flag, "bad id", stdin='{"narrative": "x"}', env=subprocess_env)
    assert done.returncode == 2
    assert f"argument {flag}: 'bad id' is not a valid {what}:" in done.stderr, done.stderr
    other = "agent id" if what == "thread id" else "thread id"
    assert other not in done.stderr


def test_run_without_dashes_before_an_agent_command_with_options_says_so_in_runs_usage(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    done = handoff("run", tmp_path / "t1", "python", "-c", "print(1)", env=subprocess_env)
    assert done.returncode == 2
    assert done.stderr.startswith("usage: handoff run "), done.stderr
    assert "handoff run: error: " in done.stderr
    assert "-c print(1)" in done.stderr
    assert "--" in done.stderr.splitlines()[-1]
    assert f"handoff run {tmp_path / 't1'} -- python -c" in done.stderr, "it shows the command line that works"
    assert not (tmp_path / "t1").exists()


def test_an_unknown_option_is_reported_in_the_usage_of_the_command_typed(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    done = handoff("show", tmp_path, "--bogus", env=subprocess_env)
    assert done.returncode == 2
    assert done.stderr.startswith("usage: handoff show "), done.stderr
    assert "handoff show: error: unrecognized arguments: --bogus" in done.stderr
